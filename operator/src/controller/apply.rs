//! A WebApp's children — Deployment and Service — as pure functions of its spec, the check
//! whether the live object already holds them, and their server-side apply.
//!
//! Idempotence: children have stable names (the WebApp's), a controller owner reference, and
//! are applied under one field manager ([`FIELD_MANAGER`]). An apply is sent only when the
//! live object does not already contain every field we set ([`contains`]), so a converged
//! WebApp costs no writes. Every child carries [`HASH_ANNOTATION`], a digest of what was
//! applied: a field we stop setting (for example `spec.resources` removed) changes the digest,
//! so the apply that removes it is not skipped.

use std::collections::BTreeMap;

use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

use crate::api::v1;

/// The one field manager of every write the operator makes.
pub const FIELD_MANAGER: &str = "webapp-operator";
/// Label that marks objects the operator manages (its watches select on it).
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "webapp-operator");
/// Annotation with the digest of the applied object (without this annotation).
pub const HASH_ANNOTATION: &str = "apps.olmpack.dev/applied-hash";
/// Port of the Service in front of every WebApp.
pub const SERVICE_PORT: i32 = 80;

/// Labels of a WebApp's pods, used as the selector.
pub fn selector(app: &v1::WebApp) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), "webapp".to_owned()),
        ("app.kubernetes.io/instance".to_owned(), app.name_any()),
    ])
}

/// The selector in the string form of `status.selector`.
pub fn selector_string(app: &v1::WebApp) -> String {
    selector(app)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn labels(app: &v1::WebApp) -> BTreeMap<String, String> {
    let mut labels = selector(app);
    labels.insert(MANAGED_BY.0.to_owned(), MANAGED_BY.1.to_owned());
    labels
}

fn metadata(app: &v1::WebApp) -> Value {
    json!({
        "name": app.name_any(),
        "namespace": app.namespace(),
        "labels": labels(app),
        "ownerReferences": [{
            "apiVersion": v1::WebApp::api_version(&()),
            "kind": v1::WebApp::kind(&()),
            "name": app.name_any(),
            "uid": app.uid(),
            "controller": true,
            "blockOwnerDeletion": true,
        }],
    })
}

/// Adds [`HASH_ANNOTATION`] to `object`: the SHA-256 (first 16 hex digits) of its JSON.
fn with_hash(mut object: Value) -> Value {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(object.to_string().as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    object["metadata"]["annotations"] = json!({HASH_ANNOTATION: hex});
    object
}

/// The Deployment of `app` as applied.
pub fn deployment(app: &v1::WebApp) -> Value {
    let spec = &app.spec;
    let port = spec.container_port.unwrap_or(8080);
    let mut env = vec![json!({"name": "LOG_LEVEL", "value": spec.effective_log_level().as_str()})];
    if let Some(db) = &spec.database {
        env.push(json!({
            "name": "DATABASE_URL",
            "valueFrom": {"secretKeyRef": {"name": db.secret_name, "key": db.key.as_deref().unwrap_or("url")}},
        }));
    }
    let mut container = json!({
        "name": "web",
        "image": spec.image,
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
        "env": env,
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "runAsNonRoot": true,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    });
    if let Some(resources) = &spec.resources {
        let mut amounts = serde_json::Map::new();
        if let Some(cpu) = &resources.cpu {
            amounts.insert("cpu".to_owned(), json!(cpu));
        }
        if let Some(memory) = &resources.memory {
            amounts.insert("memory".to_owned(), json!(memory));
        }
        if !amounts.is_empty() {
            container["resources"] = json!({"requests": amounts, "limits": amounts});
        }
    }
    with_hash(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(app),
        "spec": {
            "replicas": spec.replicas.unwrap_or(1),
            "selector": {"matchLabels": selector(app)},
            "template": {
                "metadata": {"labels": labels(app)},
                "spec": {"containers": [container]},
            },
        },
    }))
}

/// The Service of `app` as applied.
pub fn service(app: &v1::WebApp) -> Value {
    with_hash(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(app),
        "spec": {
            "selector": selector(app),
            "ports": [{"name": "http", "port": SERVICE_PORT, "targetPort": "http", "protocol": "TCP"}],
        },
    }))
}

/// The value of a Kubernetes quantity (`500m`, `1Gi`, `0.5`), for comparing the form we
/// sent with the canonical form the apiserver stores.
fn quantity(s: &str) -> Option<f64> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(number * factor)
}

/// Whether `live` already holds every field of `desired`: objects by key (extra live keys,
/// such as defaults, are fine), arrays element by element with equal length, scalars equal
/// (quantities by value).
pub fn contains(live: &Value, desired: &Value) -> bool {
    match (live, desired) {
        (Value::Object(l), Value::Object(d)) => d
            .iter()
            .all(|(k, dv)| l.get(k).is_some_and(|lv| contains(lv, dv))),
        (Value::Array(l), Value::Array(d)) => {
            l.len() == d.len() && l.iter().zip(d).all(|(lv, dv)| contains(lv, dv))
        }
        (Value::String(l), Value::String(d)) => {
            l == d
                || matches!((quantity(l), quantity(d)), (Some(a), Some(b)) if (a - b).abs() < 1e-9)
        }
        (l, d) => l == d,
    }
}

/// Whether `desired` must be applied over `live` (absent, or missing a field we set).
pub fn needs_apply<K: serde::Serialize>(live: Option<&K>, desired: &Value) -> bool {
    match live {
        None => true,
        Some(live) => {
            let as_json = serde_json::to_value(live).unwrap_or(Value::Null);
            !contains(&as_json, desired)
        }
    }
}

/// Server-side applies `desired` with [`FIELD_MANAGER`] (forcing ownership of its fields).
pub async fn apply<K>(api: &Api<K>, desired: &Value) -> Result<K, kube::Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let name = desired["metadata"]["name"].as_str().unwrap_or_default();
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(name, &params, &Patch::Apply(desired)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_ignores_defaults_and_compares_quantities() {
        let desired = json!({"a": {"cpu": "1000m", "list": [{"x": 1}]}});
        let live = json!({"a": {"cpu": "1", "list": [{"x": 1, "default": true}]}, "b": 2});
        assert!(contains(&live, &desired));
        assert!(!contains(
            &json!({"a": {"cpu": "2", "list": [{"x": 1}]}}),
            &desired
        ));
        assert!(!contains(&json!({"a": {"cpu": "1", "list": []}}), &desired));
        assert_eq!(quantity("128Mi"), Some(134_217_728.0));
        assert_eq!(quantity("0.5"), Some(0.5));
        assert_eq!(quantity("x"), None);
    }

    #[test]
    fn removing_a_field_forces_an_apply() {
        let mut app: v1::WebApp = serde_json::from_value(json!({
            "apiVersion": "apps.olmpack.dev/v1", "kind": "WebApp",
            "metadata": {"name": "a", "namespace": "n", "uid": "u"},
            "spec": {"image": "i:1", "resources": {"cpu": "1"}},
        }))
        .unwrap();
        let applied = deployment(&app);
        assert!(
            !needs_apply(Some(&applied), &deployment(&app)),
            "same spec: no apply"
        );
        app.spec.resources = None;
        let desired = deployment(&app);
        assert!(
            desired["spec"]["template"]["spec"]["containers"][0]
                .get("resources")
                .is_none()
        );
        assert!(
            needs_apply(Some(&applied), &desired),
            "removed resources: apply"
        );
    }
}
