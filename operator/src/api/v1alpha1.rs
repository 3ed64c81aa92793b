//! `apps.olmpack.dev/v1alpha1`: the first version (release 0.1.0). Deprecated from 0.3.0,
//! no longer served from 1.0.0.

// kube-derive takes repeated `printcolumn(...)` arguments, which this lint mistakes for duplicates.
#![allow(clippy::duplicated_attributes)]

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ResourceRequests, WebAppStatus};

/// The desired state of a WebApp.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.olmpack.dev",
    version = "v1alpha1",
    kind = "WebApp",
    plural = "webapps",
    shortname = "wa",
    namespaced,
    status = "WebAppStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "A web application: a Deployment and a Service (v1alpha1, deprecated).",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(name = "Image", type_ = "string", json_path = ".spec.image"),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct WebAppSpec {
    /// Container image of the web application.
    #[schemars(length(min = 1, max = 512), regex(pattern = r"^[^\s]+$"))]
    pub image: String,
    /// Number of replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub replicas: Option<i32>,
    /// Port the container listens on (renamed to `containerPort` in v1beta1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<i32>,
    /// Name of a Secret holding the database URL under the key `url` (moved to
    /// `database.secretName` in v1beta1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub database_secret: Option<String>,
    /// CPU and memory per replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequests>,
    /// Verbose logging in the application.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug: Option<bool>,
}
