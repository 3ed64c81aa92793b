//! The `WebApp` CRD of one release: the versions it lists (with `served`, `storage` and
//! deprecation from [`crate::releases`]) and, when it lists more than one, the conversion
//! webhook stanza.

use k8s_openapi::ByteString;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, ServiceReference, WebhookClientConfig,
    WebhookConversion,
};
use kube::CustomResourceExt;

use crate::api::{Version, v1, v1alpha1, v1beta1};
use crate::releases::OperatorRelease;

/// Path of the conversion endpoint on the webhook server.
pub const CONVERT_PATH: &str = "/convert";

/// Failure to build a release's CRD.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    #[error("failed to merge the per-version CRDs of release {release}")]
    Merge {
        release: &'static str,
        #[source]
        source: kube::core::crd::MergeError,
    },
}

/// Where the apiserver reaches the conversion webhook.
#[derive(Clone, Debug)]
pub enum WebhookTarget {
    /// A Service (deployments; OLM rewrites this stanza and injects its CA).
    Service {
        namespace: String,
        name: String,
        port: i32,
    },
    /// A URL and CA bundle (PEM) — for tests that run the webhook outside the cluster.
    Url { url: String, ca_pem: String },
}

fn single(version: Version) -> CustomResourceDefinition {
    match version {
        Version::V1alpha1 => v1alpha1::WebApp::crd(),
        Version::V1beta1 => v1beta1::WebApp::crd(),
        Version::V1 => v1::WebApp::crd(),
    }
}

/// The CRD of `release`, with the conversion webhook at `target` when it has more than one
/// version. Deterministic: versions are listed oldest first.
pub fn crd(
    release: &OperatorRelease,
    target: &WebhookTarget,
) -> Result<CustomResourceDefinition, CrdError> {
    let storage = release.storage_version();
    let parts = release
        .crd_versions
        .iter()
        .map(|e| single(e.version))
        .collect();
    let mut crd =
        kube::core::crd::merge_crds(parts, storage.name()).map_err(|source| CrdError::Merge {
            release: release.version,
            source,
        })?;
    let rank = |name: &str| {
        release
            .crd_versions
            .iter()
            .position(|e| e.version.name() == name)
    };
    crd.spec.versions.sort_by_key(|v| rank(&v.name));
    for version in crd.spec.versions.iter_mut() {
        let Some(entry) = release
            .crd_versions
            .iter()
            .find(|e| e.version.name() == version.name)
        else {
            continue;
        };
        version.served = entry.served;
        version.storage = entry.storage;
        version.deprecated = entry.deprecation.map(|_| true);
        version.deprecation_warning = entry.deprecation.map(str::to_owned);
    }
    if release.needs_conversion_webhook() {
        let client_config = match target {
            WebhookTarget::Service {
                namespace,
                name,
                port,
            } => WebhookClientConfig {
                service: Some(ServiceReference {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    path: Some(CONVERT_PATH.to_owned()),
                    port: Some(*port),
                }),
                ..Default::default()
            },
            WebhookTarget::Url { url, ca_pem } => WebhookClientConfig {
                url: Some(format!("{url}{CONVERT_PATH}")),
                ca_bundle: Some(ByteString(ca_pem.as_bytes().to_vec())),
                ..Default::default()
            },
        };
        crd.spec.conversion = Some(CustomResourceConversion {
            strategy: "Webhook".to_owned(),
            webhook: Some(WebhookConversion {
                conversion_review_versions: vec!["v1".to_owned()],
                client_config: Some(client_config),
            }),
        });
    }
    Ok(crd)
}
