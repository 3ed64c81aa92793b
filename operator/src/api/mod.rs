//! The `WebApp` API (`apps.olmpack.dev`) at every version the operator has ever served.
//!
//! `v1` is the hub and the storage version; `v1alpha1` and `v1beta1` are spokes that
//! [`crate::conversion`] maps to and from it. Types shared by every version (status, resource
//! requests) live here so that they are identical by construction.
//!
//! Schema evolution between versions:
//! - renamed: `v1alpha1.spec.port` → `spec.containerPort` (v1beta1, v1);
//! - moved into a nested struct: `v1alpha1.spec.databaseSecret` → `spec.database.secretName`;
//! - only in newer versions: `spec.database.key` (v1beta1, v1) and `spec.logLevel` (v1);
//! - deprecated: `spec.debug` (v1 keeps it for compatibility; `logLevel` replaces it and a CEL
//!   rule forbids setting both).

pub mod v1;
pub mod v1alpha1;
pub mod v1beta1;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// API group of every version.
pub const GROUP: &str = "apps.olmpack.dev";
/// Kind of the resource.
pub const KIND: &str = "WebApp";
/// Plural resource name.
pub const PLURAL: &str = "webapps";
/// Name of the CustomResourceDefinition.
pub const CRD_NAME: &str = "webapps.apps.olmpack.dev";

/// A served (or once served) version of the `WebApp` API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Version {
    V1alpha1,
    V1beta1,
    V1,
}

impl Version {
    /// Every version, oldest first.
    pub const ALL: [Version; 3] = [Version::V1alpha1, Version::V1beta1, Version::V1];

    /// The version name, e.g. `v1beta1`.
    pub fn name(self) -> &'static str {
        match self {
            Version::V1alpha1 => "v1alpha1",
            Version::V1beta1 => "v1beta1",
            Version::V1 => "v1",
        }
    }

    /// `apps.olmpack.dev/<version>`.
    pub fn api_version(self) -> String {
        format!("{GROUP}/{}", self.name())
    }

    /// Parses `apps.olmpack.dev/<version>`; `None` for any other group or version.
    pub fn from_api_version(api_version: &str) -> Option<Self> {
        let version = api_version.strip_prefix(GROUP)?.strip_prefix('/')?;
        Self::ALL.into_iter().find(|v| v.name() == version)
    }
}

/// CPU and memory requested by every replica (Kubernetes quantities). Used as requests and
/// limits of the web container.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRequests {
    /// CPU quantity, e.g. `250m` or `1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9]+(\.[0-9]+)?m?$"), length(max = 32))]
    pub cpu: Option<String>,
    /// Memory quantity, e.g. `128Mi`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        regex(pattern = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|K|M|G|T)?$"),
        length(max = 32)
    )]
    pub memory: Option<String>,
}

/// The observed state of a `WebApp`; identical in every version.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebAppStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Replicas of the Deployment (the scale subresource reads it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Replicas that are ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// Label selector of the pods, in string form (the scale subresource reads it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// `Ready`, `Progressing` and `Degraded`, each with a stable reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}
