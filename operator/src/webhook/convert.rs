//! `/convert`: the ConversionReview (`apiextensions.k8s.io/v1`) protocol around
//! [`crate::conversion::convert_object`].
//!
//! Keeps every rule the apiserver enforces: the response echoes `request.uid`, returns the
//! objects in the same number and order, each at `desiredAPIVersion` and with its `kind`,
//! `metadata` untouched except annotations. Any problem — a body that is not JSON, a wrong
//! review version, an unknown `desiredAPIVersion`, an object that does not convert — gives a
//! `Failure` result whose message names the problem (and the object), with the uid when the
//! request had one. Conversion is all-or-nothing per review, as the apiserver treats it.
//!
//! The review is checked field by field first (so every problem is named in our words, and the
//! uid is echoed even when the rest is wrong), then read into kube-core's
//! [`ConversionReview`]/[`ConversionRequest`] and answered with a [`ConversionResponse`].

use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde_json::{Map, Value};

use crate::api::Version;
use crate::conversion::convert_object;

/// The review version this endpoint speaks (`conversionReviewVersions: ["v1"]`).
pub const REVIEW_API_VERSION: &str = "apiextensions.k8s.io/v1";

/// Failure to handle a review; becomes the `result.message` of a `Failure` response.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("the request body is not JSON: {0}")]
    NotJson(String),
    #[error("expected a ConversionReview of {REVIEW_API_VERSION}, got {api_version} {kind}")]
    WrongReview { api_version: String, kind: String },
    #[error("the ConversionReview has no request")]
    NoRequest,
    #[error("request.uid is missing or not a string")]
    NoUid,
    #[error("request.desiredAPIVersion {0:?} is not a WebApp version")]
    UnknownDesired(String),
    #[error("request.objects is missing or not a list")]
    NoObjects,
    #[error("the ConversionReview is malformed: {0}")]
    Malformed(String),
    #[error(transparent)]
    Conversion(#[from] crate::conversion::ConversionError),
}

/// Outcome of one review, for metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Failure,
}

/// Answers a ConversionReview request body with a ConversionReview response body.
pub fn handle(body: &[u8]) -> (Vec<u8>, Outcome) {
    let (response, outcome) = match request(body) {
        Ok(mut request) => {
            let objects = std::mem::take(&mut request.objects);
            let converted = Version::from_api_version(&request.desired_api_version)
                .ok_or_else(|| ReviewError::UnknownDesired(request.desired_api_version.clone()))
                .and_then(|desired| convert_all(objects, desired));
            let response = ConversionResponse::for_request(request);
            match converted {
                Ok(converted) => (response.success(converted), Outcome::Success),
                Err(err) => (response.failure(failure(&err)), Outcome::Failure),
            }
        }
        Err((uid, err)) => {
            let mut response = ConversionResponse::invalid(failure(&err));
            response.uid = uid;
            (response, Outcome::Failure)
        }
    };
    // A review of JSON values with string keys always serialises; fall back to a fixed body
    // regardless.
    let bytes = serde_json::to_vec(&response.into_review()).unwrap_or_else(|_| {
        br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"","result":{"status":"Failure","message":"failed to encode the response"}}}"#.to_vec()
    });
    (bytes, outcome)
}

/// The `Failure` status of a review that could not be answered.
fn failure(err: &ReviewError) -> Status {
    Status::failure(&err.to_string(), "BadRequest").with_code(400)
}

/// Converts every object to `desired`, all or nothing.
fn convert_all(objects: Vec<Value>, desired: Version) -> Result<Vec<Value>, ReviewError> {
    objects
        .into_iter()
        .enumerate()
        .map(|(index, object)| convert_object(object, desired, index).map_err(Into::into))
        .collect()
}

fn take_str(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Reads and checks the review; on failure, the request's uid (when it had one) and why.
fn request(body: &[u8]) -> Result<ConversionRequest, (String, ReviewError)> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|err| (String::new(), ReviewError::NotJson(err.to_string())))?;
    let Value::Object(mut top) = value else {
        return Err((
            String::new(),
            ReviewError::NotJson("not a JSON object".to_owned()),
        ));
    };
    // Take the uid first so that even a wrong review version is answered with it.
    let uid = match top.get("request") {
        Some(Value::Object(request)) => take_str(request, "uid").unwrap_or_default(),
        _ => String::new(),
    };
    check(&top, &uid).map_err(|err| (uid.clone(), err))?;
    // A request carries no response; whatever is there is not ours to read.
    top.remove("response");
    let review: ConversionReview = serde_json::from_value(Value::Object(top))
        .map_err(|err| (uid.clone(), ReviewError::Malformed(err.to_string())))?;
    ConversionRequest::try_from(review).map_err(|_| (uid, ReviewError::NoRequest))
}

/// The checks of [`request`], in the order their messages are given.
fn check(top: &Map<String, Value>, uid: &str) -> Result<(), ReviewError> {
    let api_version = take_str(top, "apiVersion").unwrap_or_default();
    let kind = take_str(top, "kind").unwrap_or_default();
    if api_version != REVIEW_API_VERSION || kind != "ConversionReview" {
        return Err(ReviewError::WrongReview { api_version, kind });
    }
    let Some(Value::Object(request)) = top.get("request") else {
        return Err(ReviewError::NoRequest);
    };
    if uid.is_empty() {
        return Err(ReviewError::NoUid);
    }
    let desired = take_str(request, "desiredAPIVersion").unwrap_or_default();
    if Version::from_api_version(&desired).is_none() {
        return Err(ReviewError::UnknownDesired(desired));
    }
    if !matches!(request.get("objects"), Some(Value::Array(_))) {
        return Err(ReviewError::NoObjects);
    }
    Ok(())
}
