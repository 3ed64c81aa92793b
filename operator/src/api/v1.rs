//! `apps.olmpack.dev/v1` (release 0.3.0): the hub of conversion and the storage version.
//! Adds `logLevel`; `debug` stays for compatibility but is deprecated.

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
    version = "v1",
    kind = "WebApp",
    plural = "webapps",
    shortname = "wa",
    namespaced,
    status = "WebAppStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "A web application: a Deployment and a Service.",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(name = "Image", type_ = "string", json_path = ".spec.image"),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(name = "Ready", type_ = "integer", json_path = ".status.readyReplicas"),
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].reason"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!has(self.debug) || !has(self.logLevel)",
        "message": "debug is deprecated and cannot be combined with logLevel; set logLevel only",
        "fieldPath": ".debug",
        "reason": "FieldValueForbidden"
    }
]))]
pub struct WebAppSpec {
    /// Container image of the web application.
    #[schemars(length(min = 1, max = 512), regex(pattern = r"^[^\s]+$"))]
    pub image: String,
    /// Number of replicas; 1 when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub replicas: Option<i32>,
    /// Port the container listens on; 8080 when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub container_port: Option<i32>,
    /// The database the application connects to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<DatabaseRef>,
    /// CPU and memory per replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequests>,
    /// Deprecated: use `logLevel`. `true` means `logLevel: Debug`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug: Option<bool>,
    /// Log level of the application; `Info` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<LogLevel>,
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

/// How much the application logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
}

impl LogLevel {
    /// The value passed to the container in `LOG_LEVEL`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
        }
    }
}

impl WebAppSpec {
    /// The log level in effect: `logLevel`, else `Debug` when the deprecated `debug` is true,
    /// else `Info`.
    pub fn effective_log_level(&self) -> LogLevel {
        match (self.log_level, self.debug) {
            (Some(level), _) => level,
            (None, Some(true)) => LogLevel::Debug,
            (None, _) => LogLevel::Info,
        }
    }
}
