//! What OLM v0 and OLM v1 share, and each OLM's environment: [`v0::OlmEnv`] runs the real
//! OLM v0 (Subscription, InstallPlan, CSV), [`v1::OlmV1Env`] the real OLM v1
//! (ClusterCatalog, ClusterExtension), each on a [`crate::control_plane::TestEnv`] without a
//! cluster, a kubelet or a container runtime.
//!
//! This module itself holds only what both use:
//! - `step.rs`: what a step ends as ([`Outcome`], [`InstallStep`]), how long OLM may take
//!   ([`Timeouts`]), what is installed after it ([`Installed`]);
//! - `examples.rs`: the `alm-examples` objects created and read back ([`Example`]);
//! - [`progress`]: what OLM is doing while a step waits, told to an [`Observer`];
//! - [`webhooks`]: the processes standing in for an install's pods ([`WebhookCommand`]);
//! - `uninstall.rs`: letting a CRD's objects go before it is deleted;
//! - [`OlmError`]: failure to start or drive either environment.

mod examples;
pub mod progress;
mod step;
mod uninstall;
pub mod v0;
pub mod v1;
pub mod webhooks;

pub use examples::{Example, read_back_resource};
pub use progress::{Event, Observer, Progress};
pub use step::{InstallStep, Installed, Outcome, StillSucceeded, Timeouts};
pub use webhooks::WebhookCommand;

use std::path::PathBuf;
use std::time::Duration;

use crate::binaries::ToolNotFound;
use crate::control_plane::EnvError;
use crate::process::ProcessError;

/// Failure to start or drive the test environment of either OLM ([`v0::OlmEnv`],
/// [`v1::OlmV1Env`]). (What OLM does with an operator is an [`Outcome`] or, under OLM v1,
/// its conditions — not an error.)
#[derive(Debug, thiserror::Error)]
pub enum OlmError {
    #[error(transparent)]
    ToolNotFound(#[from] ToolNotFound),
    #[error(transparent)]
    Env(#[from] EnvError),
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error("failed to read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("failed to pick a free port")]
    Port(#[source] std::io::Error),
    #[error("the Kubernetes API refused to {action}")]
    Api {
        action: String,
        #[source]
        source: kube::Error,
    },
    /// A call failed transiently ([`v0::transient::transient`]) for longer than
    /// [`v0::transient::RETRY_FOR`]: the test control plane's apiserver could not be reached
    /// reliably, which says nothing about the operator.
    #[error(
        "the test control plane's apiserver could not be reached to {action}: {cause}, still after {waited:.0?} of retries"
    )]
    Unreachable {
        action: String,
        cause: String,
        waited: Duration,
    },
    #[error("{what} after {waited:?}")]
    Timeout { what: String, waited: Duration },
    /// Something the environment waits for did not happen: what was last seen of it, and
    /// the last lines of the processes that should have made it happen.
    #[error("{what} did not happen within {waited:?}; last seen: {last}\n{logs}")]
    Stalled {
        what: String,
        waited: Duration,
        last: String,
        logs: String,
    },
    /// The certificates of the environment (its CA, OpenShift's service CA, catalogd's
    /// serving certificate) could not be made.
    #[error("failed to make the test environment's certificates")]
    Pki(#[from] crate::pki::PkiError),
}

impl OlmError {
    fn api(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let action = action.into();
        move |source| OlmError::Api { action, source }
    }
}
