//! `/validate` and `/mutate`: AdmissionReview (`admission.k8s.io/v1`) handlers for WebApps.
//!
//! Both accept a WebApp at any version: validation converts it to the hub first, so the
//! rules are written once; defaulting patches the fields by their name at the request's
//! version (`port` at v1alpha1, `containerPort` later). A request that cannot be understood
//! is denied with a message (for `/mutate` too: admitting an object we could not default
//! would be silently wrong). The response always echoes the request's uid.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::api::{Version, v1};
use crate::conversion::convert_object;

/// The review version this endpoint speaks.
pub const REVIEW_API_VERSION: &str = "admission.k8s.io/v1";
/// `spec.replicas` when unset.
pub const DEFAULT_REPLICAS: i32 = 1;
/// `spec.containerPort` (`spec.port` at v1alpha1) when unset.
pub const DEFAULT_PORT: i32 = 8080;

/// Why a request is denied.
#[derive(Debug, thiserror::Error)]
pub enum AdmissionError {
    #[error("the request body is not an AdmissionReview of {REVIEW_API_VERSION}")]
    NotAReview,
    #[error("the AdmissionReview has no request.object")]
    NoObject,
    #[error("{0}")]
    Conversion(#[from] crate::conversion::ConversionError),
    #[error("the object does not match the v1 schema: {0}")]
    Schema(String),
    #[error("spec.image {0:?} must name a tag or a digest (for example shop:1.4.2)")]
    UnpinnedImage(String),
    #[error(
        "spec.debug is deprecated and cannot be combined with spec.logLevel; set logLevel only"
    )]
    DebugWithLogLevel,
}

/// The problems of a WebApp at the hub version, in a fixed order; empty when it is valid.
pub fn validate(spec: &v1::WebAppSpec) -> Vec<AdmissionError> {
    let mut problems = Vec::new();
    let last = spec.image.rsplit('/').next().unwrap_or_default();
    if !last.contains(':') && !spec.image.contains('@') {
        problems.push(AdmissionError::UnpinnedImage(spec.image.clone()));
    }
    if spec.debug.is_some() && spec.log_level.is_some() {
        problems.push(AdmissionError::DebugWithLogLevel);
    }
    problems
}

struct Parsed {
    object: Value,
}

fn parse(body: &[u8]) -> (String, Result<Parsed, AdmissionError>) {
    let Ok(Value::Object(mut top)) = serde_json::from_slice::<Value>(body) else {
        return (String::new(), Err(AdmissionError::NotAReview));
    };
    let Some(Value::Object(mut request)) = top.remove("request") else {
        return (String::new(), Err(AdmissionError::NotAReview));
    };
    let uid = request
        .get("uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if top.get("apiVersion").and_then(Value::as_str) != Some(REVIEW_API_VERSION) {
        return (uid, Err(AdmissionError::NotAReview));
    }
    let result = match request.remove("object") {
        Some(object @ Value::Object(_)) => Ok(Parsed { object }),
        _ => Err(AdmissionError::NoObject),
    };
    (uid, result)
}

fn respond(uid: &str, outcome: Result<Option<Vec<Value>>, Vec<AdmissionError>>) -> Vec<u8> {
    let response = match outcome {
        Ok(None) => json!({"uid": uid, "allowed": true}),
        Ok(Some(patch)) => {
            let patch = serde_json::to_vec(&patch).unwrap_or_default();
            json!({
                "uid": uid,
                "allowed": true,
                "patchType": "JSONPatch",
                "patch": base64::engine::general_purpose::STANDARD.encode(patch),
            })
        }
        Err(problems) => {
            let message = problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            json!({
                "uid": uid,
                "allowed": false,
                "status": {"code": 422, "reason": "Invalid", "message": message},
            })
        }
    };
    serde_json::to_vec(&json!({
        "apiVersion": REVIEW_API_VERSION,
        "kind": "AdmissionReview",
        "response": response,
    }))
    .unwrap_or_default()
}

fn to_hub(object: Value) -> Result<v1::WebApp, AdmissionError> {
    let hub = convert_object(object, Version::V1, 0)?;
    serde_json::from_value(hub).map_err(|err| AdmissionError::Schema(err.to_string()))
}

/// Answers a validating AdmissionReview; returns the body and whether the object was allowed.
pub fn handle_validate(body: &[u8]) -> (Vec<u8>, bool) {
    let (uid, parsed) = parse(body);
    let outcome = parsed
        .and_then(|p| to_hub(p.object))
        .map_err(|e| vec![e])
        .and_then(|hub| {
            let problems = validate(&hub.spec);
            if problems.is_empty() {
                Ok(None)
            } else {
                Err(problems)
            }
        });
    let allowed = outcome.is_ok();
    (respond(&uid, outcome), allowed)
}

/// The JSON patch that sets unset defaults on `object` (at its own version).
pub fn defaults_patch(object: &Value) -> Vec<Value> {
    let version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(Version::from_api_version);
    let Some(spec) = object.get("spec").and_then(Value::as_object) else {
        return Vec::new();
    };
    let port_field = match version {
        Some(Version::V1alpha1) => "port",
        _ => "containerPort",
    };
    let mut patch = Vec::new();
    if spec.get("replicas").is_none_or(Value::is_null) {
        patch.push(json!({"op": "add", "path": "/spec/replicas", "value": DEFAULT_REPLICAS}));
    }
    if spec.get(port_field).is_none_or(Value::is_null) {
        patch.push(
            json!({"op": "add", "path": format!("/spec/{port_field}"), "value": DEFAULT_PORT}),
        );
    }
    patch
}

/// Answers a mutating AdmissionReview with the defaulting patch.
pub fn handle_mutate(body: &[u8]) -> (Vec<u8>, bool) {
    let (uid, parsed) = parse(body);
    let outcome = match parsed {
        Ok(p) => {
            let patch = defaults_patch(&p.object);
            Ok((!patch.is_empty()).then_some(patch))
        }
        Err(err) => Err(vec![err]),
    };
    let allowed = outcome.is_ok();
    (respond(&uid, outcome), allowed)
}
