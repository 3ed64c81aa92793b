//! Live upgrade and rollback tests across CRD versions, on a real apiserver with each
//! release's real conversion webhook.
//!
//! [`run_edge`] runs one upgrade edge `from → to`:
//! 1. installs `from`'s CRDs and serves `from`'s conversion webhook (CA injected into each
//!    CRD's `spec.conversion.webhook.clientConfig`, as OLM does);
//! 2. checks `from`'s own conversions: for every CRD serving several versions, each of its
//!    examples created at every served version, read and written back at every other and
//!    read again (a stub or lossy conversion is found in the release it appears in; see
//!    `edge/conversions.rs`); then creates every example object at every version it is
//!    written in (when `from` serves it) and reads each back at every served version;
//! 3. replaces the webhook with `to`'s and applies `to`'s CRDs the way OLM v0 does: first its
//!    checks (`status.storedVersions` ⊆ `to`'s versions; every existing object valid under
//!    `to`'s schema, by a server-side dry-run create at every served version), then the
//!    update, which the apiserver may refuse;
//! 4. reads every object at every served version and compares it field by field with what was
//!    read before the upgrade, then writes each object back unchanged at every served version
//!    and reads all of them again (lossless = equal after a round trip through any version);
//!    then checks `to`'s own conversions as step 2 does `from`'s (a kind new in `to` too);
//! 5. tries `to`'s successor that drops every version but the storage version — refused by
//!    the apiserver while `status.storedVersions` lists an old version — migrates storage with
//!    [`crd_migrate::migrate`], and installs the successor again, which must now succeed;
//! 6. stops the webhook: reads at a non-storage version fail as the apiserver fails them,
//!    reads at the storage version still work; after a restart everything reads back intact;
//! 7. rolls back (applies `from`'s CRDs again, with `from`'s webhook) and reports whether the
//!    apiserver refused it (with its message) or every object is intact at every version.
//!
//! Everything a consumer refuses, and every lost field, is a [`Finding`] in the edge's
//! [`EdgeReport`]; a [`LiveError`] means the test itself could not run.

pub mod admission;
pub mod api;
pub mod compare;
mod edge;
pub mod identity;
pub mod lease;
pub mod webhook;

use std::path::PathBuf;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use olmpack_model::report::{Consumer, Finding, Severity};
use olmpack_model::upgrade::{Edge, Verdict};
use serde::Serialize;
use serde_json::Value;

pub use edge::run_edge;
pub use identity::OperatorIdentity;
pub use webhook::Webhook;

/// One release as the live test sees it.
#[derive(Clone, Debug)]
pub struct ReleaseUnderTest {
    /// How reports name it (bundle name or version).
    pub name: String,
    pub crds: Vec<CustomResourceDefinition>,
    /// Example objects (CSV `alm-examples`, plan samples), each at the version it is written
    /// in; objects of other kinds are ignored.
    pub examples: Vec<Value>,
    /// Serves the conversion webhook; required when a CRD converts through a webhook. A
    /// command is the operator's process and runs for every release (see [`webhook`]).
    pub webhook: Option<Webhook>,
    /// The CSV's Deployment, its ServiceAccount and permissions: what a webhook command
    /// runs as. `None`: a ServiceAccount `default` with no permissions.
    pub operator: Option<OperatorIdentity>,
    /// The CSV's admission webhooks, registered while a webhook command of this release
    /// runs (see [`admission`]).
    pub admission: Vec<admission::AdmissionWebhook>,
}

/// How to run an edge.
#[derive(Clone, Debug)]
pub struct EdgeOptions {
    /// Copies of every example object (the benchmark uses 100).
    pub copies: usize,
    /// Namespace of the objects of namespaced CRDs (created when missing).
    pub namespace: String,
    /// The address the apiserver reaches the webhook at (127.0.0.1 for a local apiserver).
    pub webhook_host: String,
    /// Where webhook logs and certificates go (a temp directory per edge inside it).
    pub work_dir: PathBuf,
    /// Delete the CRDs (and so every object) when the edge is done; a throw-away test
    /// environment skips it.
    pub cleanup: bool,
    /// An admin kubeconfig of the cluster: a webhook command gets a copy that acts as the
    /// operator's ServiceAccount as `KUBECONFIG` (none: no `KUBECONFIG`).
    pub kubeconfig: Option<PathBuf>,
}

impl Default for EdgeOptions {
    fn default() -> Self {
        Self {
            copies: 1,
            namespace: "olmpack-upgrade-test".to_owned(),
            webhook_host: "127.0.0.1".to_owned(),
            work_dir: std::env::temp_dir(),
            cleanup: true,
            kubeconfig: None,
        }
    }
}

/// A live run's error that a consumer refuses: [`Finding`] with its consumer, the one finding
/// type of every upgrade answer.
fn refused(rule: &str, by: Consumer, message: impl Into<String>) -> Finding {
    Finding::error(rule, message).consumer(by)
}

/// One step of an edge and what came of it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepRecord {
    pub step: &'static str,
    pub outcome: String,
    /// Wall-clock time since the previous step ended.
    pub seconds: f64,
}

/// What happened when the edge was rolled back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome", content = "detail")]
pub enum Rollback {
    /// Not attempted (the upgrade itself was refused).
    NotRun,
    /// The apiserver refused `from`'s CRDs; its message.
    Refused(String),
    /// Accepted, every object intact at every version `from` serves.
    Intact,
    /// Accepted, but objects lost data (see the findings).
    DataLost,
}

/// The result of one edge.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EdgeReport {
    /// The upgrade run, written as its ends `from` and `to` (the live run knows the releases
    /// by name only: a caller that knows the package, channels and ways sets them).
    #[serde(flatten, serialize_with = "ends")]
    pub edge: Edge,
    /// Passed, refused, data lost or failed (never not run: a run that cannot finish is a
    /// [`LiveError`]).
    pub verdict: Verdict,
    /// How many objects were created.
    pub objects: usize,
    pub steps: Vec<StepRecord>,
    pub findings: Vec<Finding>,
    pub rollback: Rollback,
    /// Wall-clock time of the edge.
    pub seconds: f64,
    /// The end of each webhook process's output, in start order; kept only when the edge
    /// did not pass.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<ProcessLog>,
}

/// The end of one webhook process's output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProcessLog {
    /// The release whose process it was.
    pub release: String,
    /// Its last 4 KiB of output.
    pub tail: String,
}

impl ProcessLog {
    /// The end of the log file at `path` of `release`'s process.
    pub fn of(release: &str, path: &std::path::Path) -> Self {
        Self {
            release: release.to_owned(),
            tail: crate::process::log_tail_of(path),
        }
    }
}

/// An edge as a live report writes it: its ends `from` and `to`.
fn ends<S: serde::Serializer>(edge: &Edge, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct as _;
    let mut ends = serializer.serialize_struct("Ends", 2)?;
    ends.serialize_field("from", &edge.from)?;
    ends.serialize_field("to", &edge.to)?;
    ends.end()
}

impl EdgeReport {
    /// The report of the edge from release `from` to release `to`, before anything ran.
    fn new(from: &str, to: &str) -> Self {
        Self {
            edge: Edge::new("", from, to),
            verdict: Verdict::Passed,
            objects: 0,
            steps: Vec::new(),
            findings: Vec::new(),
            rollback: Rollback::NotRun,
            seconds: 0.0,
            processes: Vec::new(),
        }
    }

    /// The verdict the findings imply: a refusal wins over data loss over other errors.
    fn judge(&self) -> Verdict {
        let errors = || {
            self.findings
                .iter()
                .filter(|f| f.severity == Severity::Error)
        };
        if errors().any(|f| f.consumer.is_some()) {
            Verdict::Refused
        } else if errors().any(|f| DATA_RULES.contains(&f.rule.as_str())) {
            Verdict::DataLost
        } else if errors().next().is_some() {
            Verdict::Failed
        } else {
            Verdict::Passed
        }
    }

    /// The error-level findings.
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
    }
}

/// Rules that mean data was lost.
const DATA_RULES: &[&str] = &[
    rules::DATA_LOST,
    rules::LOSSY_CONVERSION,
    rules::RELEASE_CONVERSION_LOSSY,
    rules::OBJECT_LOST,
];

/// The rule ids of live findings.
pub mod rules {
    /// OLM v0 and the apiserver refuse: a stored version is missing from `to`'s versions.
    pub const STORED_VERSION_REMOVED: &str = "live/stored-version-removed";
    /// The apiserver refused `to`'s CRD for another reason.
    pub const CRD_REFUSED: &str = "live/crd-refused";
    /// An existing object is invalid under `to`'s schema: `live/` + the shared rule
    /// [`olmpack_model::upgrade::EXISTING_OBJECT_INVALID`] (OLM v0 refuses the upgrade, or
    /// only warns when `to`'s CRD converts through a webhook).
    pub const EXISTING_OBJECT_INVALID: &str = "live/existing-object-invalid";
    /// A field read before the upgrade is gone or changed after it.
    pub const DATA_LOST: &str = "live/data-lost";
    /// A write at one version and a read at another lost or changed a field.
    pub const LOSSY_CONVERSION: &str = "live/lossy-conversion";
    /// A release's own conversion, between two versions it serves, lost or changed a field
    /// of one of its examples, or returned an object its own CRD refuses.
    pub const RELEASE_CONVERSION_LOSSY: &str = "live/release-conversion-lossy";
    /// An object cannot be read at all (conversion failed) or disappeared.
    pub const OBJECT_LOST: &str = "live/object-lost";
    /// A read failed with the apiserver's error (e.g. the conversion webhook failed).
    pub const READ_FAILED: &str = "live/read-failed";
    /// A version clients wrote objects at is no longer served.
    pub const VERSION_NOT_SERVED: &str = "live/version-no-longer-served";
    /// An example object was refused by `from`'s CRD.
    pub const EXAMPLE_REFUSED: &str = "live/example-refused";
    /// The storage migration failed.
    pub const MIGRATION_FAILED: &str = "live/migration-failed";
    /// The successor that drops old versions was refused after the migration.
    pub const SUCCESSOR_REFUSED: &str = "live/successor-refused";
    /// The webhook outage did not behave as the apiserver should.
    pub const OUTAGE: &str = "live/outage";
    /// The rollback was refused (information, not an error).
    pub const ROLLBACK_REFUSED: &str = "live/rollback-refused";
    /// The rollback was accepted but objects lost data.
    pub const ROLLBACK_DATA_LOST: &str = "live/rollback-data-lost";
    /// The release's pod would not run: the kubelet refuses its container, or it exits
    /// again after every restart (crash-loops).
    pub const POD_CANNOT_START: &str = "live/pod-cannot-start";
    /// The next release's process did not take the leader-election Lease the stopped one
    /// held: its controllers may not have run while their writes were compared.
    pub const LEASE_NOT_TAKEN: &str = "live/lease-not-taken";
}

/// The live test could not run (not a finding about the release).
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("failed to create a working directory in {path}")]
    WorkDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to create the webhook's certificate")]
    Pki(#[from] crate::pki::PkiError),
    #[error("failed to pick a port for the webhook")]
    Port(#[source] std::io::Error),
    #[error(transparent)]
    Webhook(#[from] webhook::WebhookError),
    #[error(transparent)]
    Kubeconfig(#[from] identity::KubeconfigError),
    #[error(transparent)]
    Container(#[from] crate::container::ContainerError),
    #[error("release {release} converts {crd} through a webhook, but no webhook command was given")]
    NoWebhook { release: String, crd: String },
    #[error(
        "CustomResourceDefinition {crd} already exists on the cluster; the live test needs a cluster without it"
    )]
    CrdExists { crd: String },
    #[error("failed to {action}")]
    Kube {
        action: String,
        #[source]
        source: kube::Error,
    },
}
