//! `olmpack upgrade olm`: the real OLM — OLM v0 by Subscription ([`v0`]), or OLM v1 by
//! ClusterExtension ([`v1`]) — installs every release of a catalog and upgrades along the
//! edges it would take, and reports what OLM said.
//!
//! Contract:
//! - The cases come from the catalog alone ([`plan_cases`]): per package and per channel, one
//!   case per entry: install it (Subscription with `startingCSV`, manual approval) and, when
//!   OLM v0 has a successor for it ([`crate::catalog::upgrade::v0_successor`]), approve the
//!   next InstallPlan and expect exactly that successor. Channels whose entries are identical
//!   share their cases (OLM resolves them identically); the report names every channel.
//! - The OperatorGroup follows the starting bundle's supported install modes (AllNamespaces,
//!   else OwnNamespace, else SingleNamespace, else MultiNamespace), or each mode asked for.
//! - A step is done when OLM has finished it: the InstallPlan `Complete`, the CSV `Succeeded`
//!   and the CRDs it converts with a webhook set so, held for a settle period; what OLM did on
//!   the way (a CSV leaving `Succeeded`, a CRD's conversion reset) is reported with the step,
//!   and a CSV that leaves `Succeeded` after its step fails the case as OLM's doing.
//! - OLM is served the catalog with every bundle's image cleared ([`inline_catalog`]), so
//!   that it installs the `olm.bundle.object` manifests inline instead of unpacking bundle
//!   images with a Job (no kubelet, no registry here).
//! - Each OLM is a [`driver::Driver`]: [`v0`] (an environment per case, from an [`EnvPool`],
//!   up to `jobs` at once) and [`v1`] (one environment, one case after another). The steps
//!   of a case, their order and what each records are the run loop's ([`driver`]), the
//!   same for every OLM; cases never see each other's objects.
//! - Between install and upgrade, every `alm-examples` object of the installed CSV is created
//!   as a user of that install would (`kubectl create -n` a namespace the operator serves);
//!   after the upgrade each must still be readable. When webhooks cannot be served (no
//!   `--webhook-command`, no usable address) and the bundle declares webhooks, the example
//!   checks are "not run" with the reason — never passed; reading back needs only the
//!   conversion webhook, so admission webhooks alone never stop it.
//! - Examples are read back at the apiVersion they were written at, or at a served version
//!   of their kind when that one is no longer served
//!   ([`olmpack_envtest::olm::read_back_resource`]).
//! - A case passes when every step OLM took ended `Succeeded`, OLM picked the predicted
//!   successor, and every example was created and read back. Each failure names who is to
//!   blame, as an error finding of its own rule family ([`blamed`]): OLM (quoted;
//!   refused by OLM v0 or v1), or the examples (the apiserver's or webhook's words; refused by
//!   kube-apiserver).
//! - While a step waits, what OLM is doing is told to [`RunOptions::steps`] whenever it
//!   changes (the Subscription, the InstallPlan's phase and steps, the CSV's phase, reason and
//!   message, the pods refused; see [`olmpack_envtest::olm::progress`]), and what is awaited
//!   after 20 s without news, so a run is never silent for long; an InstallPlan step of a
//!   kind the cluster does not serve names the `--cluster-crd` that would serve it.
//! - Calls to the test apiserver that fail in transport (or with a 5xx) are retried within a
//!   bound and listed ([`CaseReport::retried`]). When the test environment fails all the
//!   same, the case is reported as not finished ([`CaseReport::environment`]), with what it
//!   found until then: every case gets a report.
#![warn(missing_docs)]

mod cases;
mod driver;
mod log;
pub mod platform;
mod report;
pub mod shard;
pub mod v0;
pub mod v1;

use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use olmpack_envtest::olm::{Timeouts, WebhookCommand};

pub use cases::{
    Case, OlmVersion, load_cases, load_cases_for, load_cases_of, plan_cases, preferred_mode,
};
pub use log::StepLog;
pub use report::{CaseReport, EXAMPLE_RULES, OLM_RULES, blamed, describe, junit, markdown, text};
pub use v0::{EnvPool, inline_catalog};

use platform::Platform;

/// Failure to run the cases (not a verdict about the operator).
#[derive(Debug, thiserror::Error)]
pub enum OlmRunError {
    /// The catalog directory cannot be loaded.
    #[error("failed to read the catalog {dir}")]
    Load {
        /// The catalog directory.
        dir: PathBuf,
        /// The loader's error.
        #[source]
        source: crate::catalog::load::LoadError,
    },
    /// The catalog fails validation, so running OLM on it would say nothing useful.
    #[error("the catalog {dir} is invalid ({first}); run `olmpack catalog validate` on it")]
    Invalid {
        /// The catalog directory.
        dir: PathBuf,
        /// The first error finding.
        first: String,
    },
    /// The catalog has no package of the requested name.
    #[error("the catalog {dir} has no package {package}")]
    NoPackage {
        /// The catalog directory.
        dir: PathBuf,
        /// The package asked for.
        package: String,
    },
    /// Starting or driving the test control plane with OLM (v0 or v1, or the registry OLM
    /// v1 pulls from) failed.
    #[error("the OLM test environment failed")]
    Env(#[from] olmpack_envtest::olm::OlmError),
    /// A bundle carries no manifests in the catalog, so the test cluster (which has no kubelet) cannot unpack it.
    #[error(
        "bundle {bundle} has no olm.bundle.object properties: OLM would unpack its image with a Job, which needs a kubelet; render the catalog with `olmpack generate` or `opm render` (without --migrate-level)"
    )]
    NoObjects {
        /// The bundle name.
        bundle: String,
    },
    /// Writing the catalog that `opm serve` gives to OLM failed.
    #[error("failed to write the catalog served to OLM to {path}")]
    Write {
        /// The file being written.
        path: PathBuf,
        /// The I/O error from the file system.
        #[source]
        source: std::io::Error,
    },
    /// Printing the catalog that `opm serve` gives to OLM failed.
    #[error("failed to serialise the catalog served to OLM")]
    Serialize(#[from] crate::catalog::serialize::SerializeError),
    /// A bundle of the catalog cannot be served to OLM v1 as it is.
    #[error("bundle {bundle}: {problem}")]
    Bundle {
        /// The bundle name.
        bundle: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Building an image OLM v1 pulls failed.
    #[error("failed to build {what} served to OLM v1")]
    BuildImage {
        /// Which image.
        what: String,
        /// The image builder's error.
        #[source]
        source: Box<crate::image::build::BuildError>,
    },
    /// Pushing an image OLM v1 pulls to the local registry failed.
    #[error("failed to push {target} for OLM v1")]
    PushImage {
        /// Where it was pushed.
        target: String,
        /// The registry client's error.
        #[source]
        source: Box<olmpack_oci::image::push::PushError>,
    },
}

/// A catalog olmpack refuses (its reader's or validation's answer), or an image input;
/// everything else is the run failing (exit 2).
impl crate::refusal::Refusal for OlmRunError {
    fn refuses_input(&self) -> bool {
        use OlmRunError as E;
        match self {
            E::Load { source, .. } => source.refuses_input(),
            E::BuildImage { source, .. } => source.refuses_input(),
            E::PushImage { source, .. } => source.refuses_input(),
            // `catalog validate` refuses it: README's table says exit 1.
            E::Invalid { .. } => true,
            E::NoPackage { .. }
            | E::Env(_)
            | E::NoObjects { .. }
            | E::Write { .. }
            | E::Serialize(_)
            | E::Bundle { .. } => false,
        }
    }
}

impl OlmRunError {
    /// Whether the failure is one case's, reported as that case not finished: its test
    /// environment failed, or its bundle cannot be served as it is. Any other failure (the
    /// catalog, the images served) ends the run.
    fn is_one_case(&self) -> bool {
        matches!(self, OlmRunError::Env(_) | OlmRunError::Bundle { .. })
    }
}

/// How to run the cases.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Command run for the operator's webhook Deployments, when the bundle has webhooks; none skips them.
    pub webhook_command: Option<WebhookCommand>,
    /// How long each wait for OLM may take.
    pub timeouts: Timeouts,
    /// Cases run at once (each has its own control plane and OLM).
    pub jobs: usize,
    /// Environments kept between cases and reset for the next one; `None` starts a fresh
    /// one for every case.
    pub envs: Option<EnvPool>,
    /// CRDs the cluster has before OLM installs anything, as another operator installed
    /// them (e.g. prometheus-operator's, for a bundle that ships a ServiceMonitor: OLM
    /// cannot create an object whose kind the cluster does not serve).
    pub cluster_crds: Vec<CustomResourceDefinition>,
    /// The cluster the operator is installed on (`--platform`): on OpenShift the control
    /// plane plays its service-ca and a single-node OpenShift's node, and reports say what
    /// OpenShift's OLM does about the installed bundles' `olm.maxOpenShiftVersion`
    /// ([`Platform::upgrade_gate`]). Its API kinds are given in `cluster_crds`.
    pub platform: Platform,
    /// Told each step of each case as it happens (the CLI prints them on stderr).
    pub steps: StepLog,
    /// How much of the catalog is read at most (the command line's `--max-*` flags).
    pub limits: olmpack_oci::input::Limits,
    /// The OLM that runs the cases ([`v1`] for OLM v1).
    pub olm: OlmVersion,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            webhook_command: None,
            timeouts: Timeouts::default(),
            jobs: 1,
            envs: None,
            cluster_crds: Vec::new(),
            platform: Platform::kubernetes(),
            steps: StepLog::silent(),
            limits: olmpack_oci::input::Limits::default(),
            olm: OlmVersion::V0,
        }
    }
}

/// Runs every case under the OLM of `options.olm` (up to `options.jobs` at once under OLM
/// v0; under OLM v1 one after another, see [`v1`]); reports in case order.
pub async fn run(
    catalog: &Path,
    cases: &[Case],
    options: &RunOptions,
) -> Result<Vec<CaseReport>, OlmRunError> {
    match options.olm {
        OlmVersion::V0 => Box::pin(driver::run::<v0::OlmV0>(catalog, cases, options)).await,
        OlmVersion::V1 => Box::pin(driver::run::<v1::OlmV1>(catalog, cases, options)).await,
    }
}
