//! `/convert`: the ConversionReview (`apiextensions.k8s.io/v1`) protocol around
//! [`crate::conversion::convert_object`].
//!
//! Keeps every rule the apiserver enforces: the response echoes `request.uid`, returns the
//! objects in the same number and order, each at `desiredAPIVersion` and with its `kind`,
//! `metadata` untouched except annotations. Any problem — a body that is not JSON, a wrong
//! review version, an unknown `desiredAPIVersion`, an object that does not convert — gives a
//! `Failed` result whose message names the problem (and the object), with the uid when the
//! request had one. Conversion is all-or-nothing per review, as the apiserver treats it.

use serde_json::{Map, Value, json};

use crate::api::Version;
use crate::conversion::convert_object;

/// The review version this endpoint speaks (`conversionReviewVersions: ["v1"]`).
pub const REVIEW_API_VERSION: &str = "apiextensions.k8s.io/v1";

/// Failure to handle a review; becomes the `result.message` of a `Failed` response.
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
    let mut uid = String::new();
    let result = review(body, &mut uid);
    let (response, outcome) = match result {
        Ok(objects) => {
            // Built by hand: `json!` would deep-copy the objects through serialisation.
            let mut response = Map::with_capacity(3);
            response.insert("uid".to_owned(), Value::String(uid));
            response.insert("result".to_owned(), json!({"status": "Success"}));
            response.insert("convertedObjects".to_owned(), Value::Array(objects));
            (Value::Object(response), Outcome::Success)
        }
        Err(err) => (
            json!({
                "uid": uid,
                "result": {"status": "Failed", "message": err.to_string(), "reason": "BadRequest", "code": 400},
                "convertedObjects": [],
            }),
            Outcome::Failure,
        ),
    };
    let mut review = Map::with_capacity(3);
    review.insert(
        "apiVersion".to_owned(),
        Value::String(REVIEW_API_VERSION.to_owned()),
    );
    review.insert(
        "kind".to_owned(),
        Value::String("ConversionReview".to_owned()),
    );
    review.insert("response".to_owned(), response);
    let review = Value::Object(review);
    // A Value with string keys always serialises; fall back to a fixed body regardless.
    let bytes = serde_json::to_vec(&review).unwrap_or_else(|_| {
        br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"","result":{"status":"Failed","message":"failed to encode the response"}}}"#.to_vec()
    });
    (bytes, outcome)
}

fn take_str(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn review(body: &[u8], uid: &mut String) -> Result<Vec<Value>, ReviewError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|err| ReviewError::NotJson(err.to_string()))?;
    let Value::Object(mut top) = value else {
        return Err(ReviewError::NotJson("not a JSON object".to_owned()));
    };
    // Take the uid first so that even a wrong review version is answered with it.
    let mut request = match top.remove("request") {
        Some(Value::Object(request)) => Some(request),
        _ => None,
    };
    if let Some(r) = &request {
        *uid = take_str(r, "uid").unwrap_or_default();
    }
    let api_version = take_str(&top, "apiVersion").unwrap_or_default();
    let kind = take_str(&top, "kind").unwrap_or_default();
    if api_version != REVIEW_API_VERSION || kind != "ConversionReview" {
        return Err(ReviewError::WrongReview { api_version, kind });
    }
    let request = request.as_mut().ok_or(ReviewError::NoRequest)?;
    if uid.is_empty() {
        return Err(ReviewError::NoUid);
    }
    let desired = take_str(request, "desiredAPIVersion").unwrap_or_default();
    let desired =
        Version::from_api_version(&desired).ok_or(ReviewError::UnknownDesired(desired))?;
    let Some(Value::Array(objects)) = request.remove("objects") else {
        return Err(ReviewError::NoObjects);
    };
    objects
        .into_iter()
        .enumerate()
        .map(|(index, object)| convert_object(object, desired, index).map_err(Into::into))
        .collect()
}
