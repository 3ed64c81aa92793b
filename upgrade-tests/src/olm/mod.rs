//! [`OlmEnv`]: the real OLM v0 on a [`crate::control_plane::TestEnv`], installing and upgrading operators by
//! Subscription — without a cluster, a kubelet or a container runtime.
//!
//! What runs (all real binaries, pinned in `tools.toml`): etcd, kube-apiserver (with
//! `--enable-aggregator-routing=true`, so webhook calls go to EndpointSlice addresses),
//! kube-controller-manager (Deployments, ReplicaSets, garbage collection), kube-scheduler,
//! kwok (one fake node; pods become Running and Ready), OLM's olm-operator and
//! catalog-operator with OLM's CRDs, and `opm serve` for each catalog (a CatalogSource with
//! `spec.address`, so no catalog pod is needed; bundles carry `olm.bundle.object`, so no
//! unpack Job is needed).
//!
//! Webhooks OLM wires must answer: pods are fake, so a [`WebhookCommand`] is started as the
//! process of every Deployment OLM created a webhook serving certificate for, with that
//! certificate, and an EndpointSlice of OLM's webhook Service points at it (see [`webhooks`]).
//! EndpointSlices may not hold loopback addresses (the apiserver refuses them), so the slice
//! names this machine's own non-loopback IPv4 address, where a forwarder relays to the
//! command on 127.0.0.1. Without such an address webhooks cannot be served, and
//! [`OlmEnv::webhooks_available`] says so.
//!
//! Guarantees: every process dies with the [`OlmEnv`] (and with the test process); every file
//! lives in the [`crate::control_plane::TestEnv`]'s directory, removed on drop.

mod env;
mod install;
pub mod kubelet;
pub mod operator_group;
pub mod progress;
pub(crate) mod reset;
pub mod resources;
mod settle;
pub mod transient;
pub mod v1;
pub mod webhooks;

pub use env::{Catalog, OlmEnv, OlmEnvOptions};
pub(crate) use install::create_example;
pub use install::{
    Example, InstallStep, Installed, Outcome, StillSucceeded, Timeouts, read_back_resource,
};
pub use progress::{Event, Observer, Progress};
pub use webhooks::WebhookCommand;

use std::path::PathBuf;
use std::time::Duration;

use crate::binaries::ToolNotFound;
use crate::control_plane::EnvError;
use crate::process::ProcessError;

/// Failure to start or drive the test environment of either OLM ([`OlmEnv`],
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
    /// A call failed transiently ([`transient::transient`]) for longer than
    /// [`transient::RETRY_FOR`]: the test control plane's apiserver could not be reached
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
