//! `apps.olmpack.dev/v1beta1` (release 0.2.0): `port` renamed to `containerPort`, the database
//! Secret moved into `database`, which gains `key`.

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
    version = "v1beta1",
    kind = "WebApp",
    plural = "webapps",
    shortname = "wa",
    namespaced,
    status = "WebAppStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "A web application: a Deployment and a Service (v1beta1).",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(name = "Image", type_ = "string", json_path = ".spec.image"),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(name = "Ready", type_ = "integer", json_path = ".status.readyReplicas"),
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
    /// Port the container listens on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub container_port: Option<i32>,
    /// The database the application connects to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<DatabaseRef>,
    /// CPU and memory per replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequests>,
    /// Verbose logging in the application.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug: Option<bool>,
}

/// A Secret in the WebApp's namespace that holds the database URL.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseRef {
    /// Name of the Secret.
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub secret_name: String,
    /// Key of the URL in the Secret; `url` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253), regex(pattern = r"^[-._a-zA-Z0-9]+$"))]
    pub key: Option<String>,
}
