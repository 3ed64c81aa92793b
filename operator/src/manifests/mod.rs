//! A release's deploy manifests, built from code: the CRD, RBAC, ServiceAccount,
//! Deployment, Service and webhook configurations.
//!
//! Guarantees: [`to_yaml`] is pure and deterministic (byte-identical output for the same
//! release and namespace); the output is a plain multi-document YAML stream, one object per
//! document, in a fixed order (CRD first, webhook configurations last).

pub mod crd;
pub mod deployment;
pub mod rbac;
pub mod webhooks;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::releases::OperatorRelease;

/// Name of the operator's ServiceAccount, roles, bindings and Deployment.
pub const NAME: &str = "webapp-operator";
/// Name of the webhook Service.
pub const SERVICE_NAME: &str = "webapp-operator-webhook";
/// Namespace the manifests target unless told otherwise.
pub const DEFAULT_NAMESPACE: &str = "webapp-operator-system";
/// Container port of the HTTPS webhook server.
pub const WEBHOOK_PORT: i32 = 9443;
/// Container port of `/metrics`, `/healthz` and `/readyz` (plain HTTP).
pub const METRICS_PORT: i32 = 8080;
/// Directory of the serving certificate (`apiserver.crt`, `apiserver.key`), as OLM mounts it.
pub const CERT_DIR: &str = "/apiserver.local.config/certificates";

/// Failure to build manifests.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("failed to build the CRD")]
    Crd(#[from] crd::CrdError),
    #[error("failed to encode {what} as YAML")]
    Yaml {
        what: &'static str,
        #[source]
        source: serde_saphyr::SerializeError,
    },
    #[error("failed to encode {what} as JSON")]
    Json {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

/// Labels on every object of `version`.
pub fn labels(version: &str) -> BTreeMap<String, String> {
    let mut labels = selector_labels();
    labels.insert("app.kubernetes.io/version".to_owned(), version.to_owned());
    labels.insert("app.kubernetes.io/part-of".to_owned(), "olmpack".to_owned());
    labels
}

/// Labels that select the operator's pods.
pub fn selector_labels() -> BTreeMap<String, String> {
    BTreeMap::from([("app.kubernetes.io/name".to_owned(), NAME.to_owned())])
}

/// Every object of `release` for `namespace`, in the order they are printed.
pub fn objects(release: &OperatorRelease, namespace: &str) -> Result<Vec<Value>, ManifestError> {
    let target = crd::WebhookTarget::Service {
        namespace: namespace.to_owned(),
        name: SERVICE_NAME.to_owned(),
        port: 443,
    };
    let mut crd = json("CustomResourceDefinition", &crd::crd(release, &target)?)?;
    crd["apiVersion"] = "apiextensions.k8s.io/v1".into();
    crd["kind"] = "CustomResourceDefinition".into();
    let v = release.version;
    Ok(vec![
        crd,
        typed("ServiceAccount", &rbac::service_account(namespace, v))?,
        typed("ClusterRole", &rbac::cluster_role(v))?,
        typed(
            "ClusterRoleBinding",
            &rbac::cluster_role_binding(namespace, v),
        )?,
        typed("Role", &rbac::role(namespace, v))?,
        typed("RoleBinding", &rbac::role_binding(namespace, v))?,
        deployment::service(release, namespace),
        deployment::deployment(release, namespace),
        webhooks::validating(release, namespace),
        webhooks::mutating(release, namespace),
    ])
}

fn json<T: Serialize>(what: &'static str, value: &T) -> Result<Value, ManifestError> {
    serde_json::to_value(value).map_err(|source| ManifestError::Json { what, source })
}

/// k8s-openapi resources serialise with `apiVersion` and `kind`.
fn typed<T: Serialize + k8s_openapi::Resource>(
    what: &'static str,
    value: &T,
) -> Result<Value, ManifestError> {
    let mut v = json(what, value)?;
    v["apiVersion"] = T::API_VERSION.into();
    v["kind"] = T::KIND.into();
    Ok(v)
}

/// The multi-document YAML stream of `release` for `namespace`.
pub fn to_yaml(release: &OperatorRelease, namespace: &str) -> Result<String, ManifestError> {
    let mut out = String::new();
    for object in objects(release, namespace)? {
        let what = "a manifest";
        let yaml = serde_saphyr::to_string(&object)
            .map_err(|source| ManifestError::Yaml { what, source })?;
        out.push_str("---\n");
        out.push_str(&yaml);
        if !yaml.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}
