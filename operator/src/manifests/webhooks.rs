//! The validating and mutating (defaulting) admission webhook configurations.
//!
//! Each registers one version, the release's storage version, with `matchPolicy: Equivalent`:
//! the apiserver converts requests at other versions before calling the webhook. The handler
//! accepts every version anyway (see [`crate::webhook::admission`]).

use serde_json::{Value, json};

use super::{SERVICE_NAME, labels};
use crate::api::{GROUP, PLURAL};
use crate::releases::OperatorRelease;

/// Path of the validating webhook.
pub const VALIDATE_PATH: &str = "/validate";
/// Path of the defaulting webhook.
pub const MUTATE_PATH: &str = "/mutate";

fn webhook(name: &str, path: &str, release: &OperatorRelease, namespace: &str) -> Value {
    json!({
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "timeoutSeconds": 10,
        "clientConfig": {
            "service": {"namespace": namespace, "name": SERVICE_NAME, "path": path, "port": 443},
        },
        "rules": [{
            "apiGroups": [GROUP],
            "apiVersions": [release.storage_version().name()],
            "operations": ["CREATE", "UPDATE"],
            "resources": [PLURAL],
            "scope": "Namespaced",
        }],
    })
}

/// `ValidatingWebhookConfiguration` `webapp-operator-validating`.
pub fn validating(release: &OperatorRelease, namespace: &str) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "webapp-operator-validating", "labels": labels(release.version)},
        "webhooks": [webhook("vwebapp.apps.olmpack.dev", VALIDATE_PATH, release, namespace)],
    })
}

/// `MutatingWebhookConfiguration` `webapp-operator-defaulting`.
pub fn mutating(release: &OperatorRelease, namespace: &str) -> Value {
    let mut hook = webhook("mwebapp.apps.olmpack.dev", MUTATE_PATH, release, namespace);
    hook["reinvocationPolicy"] = json!("Never");
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "webapp-operator-defaulting", "labels": labels(release.version)},
        "webhooks": [hook],
    })
}
