//! What one install or upgrade step ends as under either OLM ([`super::v0::OlmEnv`],
//! [`super::v1::OlmV1Env`]), how long OLM may take, and what is installed after a step: the
//! step types both OLMs' drivers report with.

use std::time::Duration;

use serde::Serialize;

/// OLM v0's own `--install-plan-retry-timeout` default.
pub const OLM_INSTALL_PLAN_RETRY: Duration = Duration::from_secs(60);

/// How long OLM may take (OLM v1's driver uses only [`Timeouts::step`]).
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    /// From the Subscription (or the previous step) to the CSV's final phase.
    pub step: Duration,
    /// How long a step must hold still to be done: the InstallPlan `Complete`, the CSV
    /// `Succeeded` and every CRD it converts with a webhook set to `Webhook` conversion, all
    /// at once and throughout. OLM's operators work concurrently: the catalog-operator may
    /// still be applying the bundle's objects (and resetting a CRD's conversion) after the
    /// olm-operator has marked the CSV `Succeeded`.
    pub settle: Duration,
    /// How long OLM's catalog-operator retries an InstallPlan step that fails (an object the
    /// apiserver refuses, existing objects invalid under a new CRD) before it fails the
    /// plan: its `--install-plan-retry-timeout`, one minute unless set. The refusal is the
    /// same with a shorter time; only a fault that heals itself within the minute (none
    /// does on the test control plane, where every API is there from the start) would read
    /// differently.
    pub install_plan_retry: Duration,
    /// How long a step may stand still, blocked by what nothing on the test control plane
    /// can unblock, before the step ends early as stuck: pods of the operator namespace the
    /// kubelet refuses (a missing Secret or ConfigMap) or the scheduler cannot place ("no
    /// node fits") — kwok runs no container, so no pod creates what is missing, and the
    /// nodes never change — or a requirement OLM reports not met that nothing here meets (a
    /// CRD the apiserver has not established, the CSV's own `minKubeVersion`). OLM itself
    /// would wait until the step's time runs out. Standing still means the CSV's phase,
    /// reason and message and what blocks it all unchanged, with the InstallPlan complete.
    pub stuck: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            step: Duration::from_secs(180),
            settle: Duration::from_secs(3),
            install_plan_retry: OLM_INSTALL_PLAN_RETRY,
            stuck: Duration::from_secs(20),
        }
    }
}

/// What OLM did with one install or upgrade step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "camelCase")]
pub enum Outcome {
    /// The CSV reached phase `Succeeded`.
    Succeeded { csv: String },
    /// OLM refused: `by` names the object whose status says so, `message` is OLM's own.
    Refused {
        by: String,
        reason: String,
        message: String,
    },
    /// No final phase in time: the CSV's (or InstallPlan's) phase and reason then, and what
    /// the kubelet stand-in reported about the pods.
    TimedOut {
        waiting_for: String,
        phase: String,
        reason: String,
        message: String,
        pods: Vec<String>,
    },
    /// OLM's verdict is unknown: the step did not finish because the test environment
    /// failed first (`why`, in olmpack's words); says nothing about the operator.
    Unfinished { why: String },
}

/// One step: the CSV OLM's InstallPlan proposed, and how it ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InstallStep {
    /// The CSV the approved InstallPlan installs (`None` when OLM proposed none).
    pub csv: Option<String>,
    pub outcome: Outcome,
    /// What OLM did on the way that a reader of the outcome should know: the CSV leaving
    /// `Succeeded` for a while, OLM resetting a CRD's conversion (with who and when).
    pub observed: Vec<String>,
    #[serde(skip)]
    pub elapsed: Duration,
}

impl InstallStep {
    /// A step not yet finished ([`Outcome::Unfinished`], with no reason yet).
    pub fn unfinished() -> Self {
        Self {
            csv: None,
            outcome: Outcome::Unfinished { why: String::new() },
            observed: Vec::new(),
            elapsed: Duration::ZERO,
        }
    }
}

/// Whether a CSV whose step was done is still `Succeeded` ([`super::v0::OlmEnv::left_succeeded`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StillSucceeded {
    /// It is.
    Yes,
    /// It left `Succeeded` for an install OLM started again by itself and came back; what
    /// was seen.
    Recovered(String),
    /// It is not: OLM's status.
    Left(String),
}

/// What is installed in the cluster after a step, to compare with the bundle: every served
/// version of every CRD but OLM's own (`name/version`), and the Deployments of the operator
/// namespace, each sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Installed {
    pub crds: Vec<String>,
    pub deployments: Vec<String>,
}

impl Installed {
    /// Adds every served version of `crd` (`name/version`), as both OLMs' environments list
    /// them.
    pub(crate) fn add_crd(
        &mut self,
        crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    ) {
        let name = crd.metadata.name.as_deref().unwrap_or_default();
        let served = crd.spec.versions.iter().filter(|v| v.served);
        self.crds
            .extend(served.map(|v| format!("{name}/{}", v.name)));
    }
}
