//! When an install or upgrade step is done: OLM's two operators work concurrently, so a CSV
//! in phase `Succeeded` does not yet mean OLM has finished. A step is done when the
//! InstallPlan is `Complete`, the CSV is `Succeeded` and every CRD its `ConversionWebhook`
//! definitions name converts through the webhook — all together, for
//! [`crate::olm::Timeouts::settle`] without a break. What OLM does on the way (the CSV leaving
//! `Succeeded`, a CRD's conversion reset) is kept as evidence for the report.

use std::collections::BTreeSet;
use std::time::Instant;

use k8s_openapi::api::core::v1::{Pod, Service, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{Api, ListParams};
use serde_json::Value;

use super::install::POLL;
use super::progress;
use super::resources::{
    self, Csv, InstallPlan, InstallPlanStatus, InstallPlanStep, RequirementStatus, StepResource,
};
use super::{OlmEnv, OlmError, kubelet};
use crate::control_plane::crd_condition_true;
use crate::olm::progress::Tracker;
use crate::olm::step::{Outcome, Timeouts};
use crate::olm::webhooks;
use crate::service_ca;

/// What one look at the step showed.
struct Look {
    plan: InstallPlanStatus,
    phase: String,
    reason: String,
    message: String,
    /// The CSV's requirements OLM reports not met.
    unmet: Vec<RequirementStatus>,
    /// CRDs whose conversion is not what the CSV asks, with the evidence.
    conversions: Vec<(String, String)>,
}

impl Look {
    fn settled(&self) -> bool {
        self.phase == "Succeeded" && self.plan.phase == "Complete" && self.conversions.is_empty()
    }
}

/// What happened while waiting, for [`crate::olm::InstallStep::observed`].
#[derive(Default)]
struct Record {
    succeeded_at: Option<Instant>,
    last_phase: String,
    reset_seen: BTreeSet<String>,
    observed: Vec<String>,
}

impl Record {
    fn note(&mut self, csv: &str, look: &Look, now: Instant) {
        if look.phase == "Succeeded" && self.succeeded_at.is_none() {
            self.succeeded_at = Some(now);
        }
        if let Some(at) = self.succeeded_at {
            let after = now.duration_since(at).as_secs_f64();
            if look.phase != "Succeeded" && look.phase != self.last_phase {
                self.observed.push(format!(
                    "ClusterServiceVersion {csv} left Succeeded for {} ({}: {}) {after:.1} s after reaching it",
                    look.phase, look.reason, look.message
                ));
            }
            for (crd, evidence) in &look.conversions {
                if self.reset_seen.insert(crd.clone()) {
                    self.observed.push(format!(
                        "OLM changed CustomResourceDefinition {crd} after the CSV succeeded ({after:.1} s later): {evidence}"
                    ));
                }
            }
        }
        self.last_phase.clone_from(&look.phase);
    }
}

/// How long a step has stood still with pods refused ([`crate::olm::Timeouts::stuck`]).
#[derive(Default)]
struct Stillness {
    /// What was last seen, and since when.
    seen: Option<(Still, Instant)>,
}

/// The CSV's phase, reason and message, and what blocks the step.
#[derive(PartialEq)]
struct Still {
    csv: (String, String, String),
    blocks: Blocks,
}

/// What nothing on the test control plane can unblock: pods the kubelet or the scheduler
/// refuses, and requirements OLM reports not met that nothing here will meet.
#[derive(Clone, Default, PartialEq)]
struct Blocks {
    pods: Vec<String>,
    requirements: Vec<String>,
    /// What another platform would have made for the refused pods (see
    /// [`OlmEnv::made_elsewhere`]).
    made_elsewhere: Vec<String>,
}

impl Blocks {
    fn is_empty(&self) -> bool {
        self.pods.is_empty() && self.requirements.is_empty()
    }
}

impl Stillness {
    /// Takes one look and what blocked the step then; how long both have been as they are
    /// now (zero while nothing blocks).
    fn note(&mut self, look: &Look, blocks: Blocks, now: Instant) -> std::time::Duration {
        if blocks.is_empty() {
            self.seen = None;
            return std::time::Duration::ZERO;
        }
        let csv = (
            look.phase.clone(),
            look.reason.clone(),
            look.message.clone(),
        );
        let current = Still { csv, blocks };
        match &self.seen {
            Some((seen, since)) if *seen == current => now.duration_since(*since),
            _ => {
                self.seen = Some((current, now));
                std::time::Duration::ZERO
            }
        }
    }
}

impl OlmEnv {
    /// Waits until the step of InstallPlan `plan_name` (CSV `csv_name`) is done, refused, or
    /// `deadline` passes; also returns what was observed on the way.
    pub(super) async fn wait_for_csv(
        &self,
        plan_name: &str,
        csv_name: &str,
        deadline: Instant,
        timeouts: Timeouts,
        tracker: &mut Tracker<'_>,
    ) -> Result<(Outcome, Vec<String>), OlmError> {
        let mut record = Record::default();
        let mut stable_since: Option<Instant> = None;
        let mut stillness = Stillness::default();
        let mut kinds_checked: Option<Instant> = None;
        loop {
            let look = self.look(plan_name, csv_name).await?;
            let now = Instant::now();
            record.note(csv_name, &look, now);
            if let Some(refused) = refusal(plan_name, csv_name, &look, now >= deadline) {
                return Ok((refused, record.observed));
            }
            let awaited = format!(
                "InstallPlan {plan_name} Complete and ClusterServiceVersion {csv_name} Succeeded"
            );
            if look.settled() {
                tracker.saw(state(plan_name, csv_name, &look, &[]), &awaited, now);
                let since = *stable_since.get_or_insert(now);
                if now.duration_since(since) >= timeouts.settle {
                    let csv = csv_name.to_owned();
                    return Ok((Outcome::Succeeded { csv }, record.observed));
                }
            } else {
                stable_since = None;
                // What blocks the step, read only while it is not done.
                let pods = kubelet::complaints(&self.client(), self.operator_namespace()).await;
                let blocks = Blocks {
                    made_elsewhere: self.made_elsewhere(&pods).await?,
                    pods,
                    requirements: self.held(&look.unmet).await?,
                };
                tracker.saw(
                    state(plan_name, csv_name, &look, &blocks.pods),
                    &awaited,
                    now,
                );
                if kinds_checked.is_none_or(|at| now.duration_since(at) >= KINDS_CHECKED_EVERY) {
                    kinds_checked = Some(now);
                    let missing = self.steps_not_served(&look.plan).await?;
                    progress::not_served(tracker, plan_name, &missing, now);
                }
                let still = stillness.note(&look, blocks.clone(), now);
                // Only once OLM has applied everything: an InstallPlan it still retries ends
                // on its own (refused or done).
                let applied = look.plan.phase == "Complete";
                if applied && look.phase != "Succeeded" && still >= timeouts.stuck {
                    return Ok((stuck(csv_name, look, blocks, timeouts), record.observed));
                }
            }
            if now >= deadline {
                let outcome = self.timed_out(plan_name, csv_name, look, timeouts).await;
                return Ok((outcome, record.observed));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn look(&self, plan_name: &str, csv_name: &str) -> Result<Look, OlmError> {
        let plans: Api<InstallPlan> = Api::namespaced_with(
            self.client(),
            self.operator_namespace(),
            &resources::install_plan(),
        );
        let csvs: Api<Csv> =
            Api::namespaced_with(self.client(), self.operator_namespace(), &resources::csv());
        let plan = self
            .call(format!("read InstallPlan {plan_name}"), || {
                plans.get(plan_name)
            })
            .await?;
        let csv = self
            .call(format!("read ClusterServiceVersion {csv_name}"), || {
                csvs.get_opt(csv_name)
            })
            .await?;
        let conversions = match &csv {
            Some(csv) => self.conversions_not_as_asked(&csv.spec).await?,
            None => Vec::new(),
        };
        let status = csv.and_then(|c| c.status).unwrap_or_default();
        let met_now = match status.reason == "RequirementsNotMet" {
            true => self.met_now(&status.requirement_status).await?,
            false => BTreeSet::new(),
        };
        let message = csv_message(&status, &met_now);
        let unmet = unmet(status.requirement_status)
            .into_iter()
            .filter(|r| !met_now.contains(&(r.kind.clone(), r.name.clone())))
            .collect();
        Ok(Look {
            plan: plan.status.unwrap_or_default(),
            phase: status.phase,
            reason: status.reason,
            message,
            unmet,
            conversions,
        })
    }

    /// The requirements OLM's `requirementStatus` says are not met that are met now, as
    /// `(kind, name)`: a ServiceAccount or CRD `NotPresent` that the apiserver has, a CRD
    /// `PresentNotAvailable` that it has established. OLM's status is stale for those.
    async fn met_now(
        &self,
        requirements: &[RequirementStatus],
    ) -> Result<BTreeSet<(String, String)>, OlmError> {
        let accounts: Api<ServiceAccount> =
            Api::namespaced(self.client(), self.operator_namespace());
        let crds: Api<CustomResourceDefinition> = Api::all(self.client());
        let mut out = BTreeSet::new();
        for r in requirements {
            let action = format!("read {} {}", r.kind, r.name);
            let exists = match (r.kind.as_str(), r.status.as_str()) {
                ("ServiceAccount", "NotPresent") => {
                    let found = self.call(action, || accounts.get_opt(&r.name)).await?;
                    found.is_some()
                }
                ("CustomResourceDefinition", "NotPresent") => {
                    let found = self.call(action, || crds.get_opt(&r.name)).await?;
                    found.is_some()
                }
                ("CustomResourceDefinition", "PresentNotAvailable") => {
                    let found = self.call(action, || crds.get_opt(&r.name)).await?;
                    found.is_some_and(|crd| not_established(&crd).is_none())
                }
                _ => false,
            };
            if exists {
                out.insert((r.kind.clone(), r.name.clone()));
            }
        }
        Ok(out)
    }

    /// The requirements among `unmet` that nothing on the test control plane will meet, with
    /// the evidence: the CSV's own (a `minKubeVersion` OLM cannot read or the cluster does not
    /// reach: neither changes here), and a CRD OLM finds present but not available that the
    /// apiserver really has not established (its conditions say why). A CRD OLM merely has
    /// not looked at again since it was established is not one of them.
    async fn held(&self, unmet: &[RequirementStatus]) -> Result<Vec<String>, OlmError> {
        let crds: Api<CustomResourceDefinition> = Api::all(self.client());
        let mut held = Vec::new();
        for r in unmet {
            match (r.kind.as_str(), r.status.as_str()) {
                ("ClusterServiceVersion", _) => {
                    held.push(format!(
                        "ClusterServiceVersion {}: {} ({})",
                        r.name, r.status, r.message
                    ));
                }
                (_, "NotPresent") if r.message == NATIVE_API_MISSING => {
                    held.push(native_api_missing(r));
                }
                ("CustomResourceDefinition", "PresentNotAvailable") => {
                    let action = format!("read CustomResourceDefinition {}", r.name);
                    let crd = self.call(action, || crds.get_opt(&r.name)).await?;
                    if let Some(why) = crd.as_ref().and_then(not_established) {
                        held.push(format!("CustomResourceDefinition {}: {why}", r.name));
                    }
                }
                _ => {}
            }
        }
        Ok(held)
    }

    /// The steps of `plan` OLM has not created whose kind the apiserver does not serve and
    /// no CRD of the cluster defines, once every CRD step of the plan is created (a kind
    /// whose CRD the plan itself creates is served once the apiserver establishes it).
    async fn steps_not_served<'p>(
        &self,
        plan: &'p InstallPlanStatus,
    ) -> Result<Vec<&'p InstallPlanStep>, OlmError> {
        let done = |s: &InstallPlanStep| s.status == "Created" || s.status == "Present";
        let pending: Vec<&InstallPlanStep> = plan.plan.iter().filter(|s| !done(s)).collect();
        if pending.is_empty()
            || pending
                .iter()
                .any(|s| s.resource.kind == "CustomResourceDefinition")
        {
            return Ok(Vec::new());
        }
        let crds: Api<CustomResourceDefinition> = Api::all(self.client());
        let action = "list CustomResourceDefinitions";
        let list = self
            .call(action.to_owned(), || {
                let crds = crds.clone();
                async move { crds.list(&ListParams::default()).await }
            })
            .await?;
        let defined = |r: &StepResource| {
            list.items
                .iter()
                .any(|c| c.spec.group == r.group && c.spec.names.kind == r.kind)
        };
        let mut out = Vec::new();
        for step in pending.into_iter().filter(|s| !defined(&s.resource)) {
            let r = &step.resource;
            if r.group.is_empty() {
                continue; // the core group's kinds are always served
            }
            let gvk = kube::core::GroupVersionKind::gvk(&r.group, &r.version, &r.kind);
            match kube::discovery::pinned_kind(&self.client(), &gvk).await {
                Err(kube::Error::Api(status)) if status.code == 404 => out.push(step),
                Err(kube::Error::Discovery(_)) => out.push(step),
                _ => {}
            }
        }
        Ok(out)
    }

    /// What OpenShift would give the refused `pods`: the Secrets its service-ca makes and
    /// the master nodes they select.
    async fn made_elsewhere(&self, pods: &[String]) -> Result<Vec<String>, OlmError> {
        let mut out = self.service_ca_secrets(pods).await?;
        out.extend(self.masters_selected(pods).await?);
        Ok(out)
    }

    /// Every object of kind `K` (`what`, plural, for the error) in the operator namespace.
    async fn operator_namespace_list<K>(&self, what: &str) -> Result<Vec<K>, OlmError>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::namespaced(self.client(), self.operator_namespace());
        let action = format!("list the {what} of the operator namespace");
        let list = self
            .call(action, || {
                let api = api.clone();
                async move { api.list(&ListParams::default()).await }
            })
            .await?;
        Ok(list.items)
    }

    /// The pods refused a node because they select masters, when the node is not one: the
    /// label `node-role.kubernetes.io/master` only OpenShift's nodes carry (Kubernetes
    /// 1.24+ labels its control plane `…/control-plane`).
    async fn masters_selected(&self, pods: &[String]) -> Result<Vec<String>, OlmError> {
        const UNSCHEDULED: &str = "didn't match Pod's node affinity/selector";
        let is_master = self.options().node_roles.iter().any(|r| r == "master");
        if is_master || !pods.iter().any(|p| p.contains(UNSCHEDULED)) {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for pod in self.operator_namespace_list::<Pod>("pods").await? {
            let name = pod.metadata.name.clone().unwrap_or_default();
            if selects_master(&pod) && pods.iter().any(|p| p.contains(&name)) {
                out.push(format!(
                    "Pod {name} selects nodes labelled {MASTER_ROLE}, which only OpenShift's \
                     nodes carry: run with --platform openshift"
                ));
            }
        }
        Ok(out)
    }

    /// The Secrets the refused `pods` lack that OpenShift's service-ca would make: each
    /// named by a Service of the operator namespace annotated for a serving certificate.
    async fn service_ca_secrets(&self, pods: &[String]) -> Result<Vec<String>, OlmError> {
        if pods.is_empty() || self.options().service_ca {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for service in self.operator_namespace_list::<Service>("Services").await? {
            let Some(serving) = service_ca::serving_secret_of(&service.metadata) else {
                continue;
            };
            let (secret, key) = (serving.secret, serving.annotation);
            let missing = format!("secret \"{secret}\" not found");
            if pods.iter().any(|p| p.contains(&missing)) {
                let name = service.metadata.name.unwrap_or_default();
                out.push(format!(
                    "Secret {secret} is made by OpenShift's service-ca for Service {name} \
                     (annotated {key}): run with --platform openshift"
                ));
            }
        }
        Ok(out)
    }

    /// Every CRD a `ConversionWebhook` definition of the CSV names whose `spec.conversion`
    /// is not `Webhook`, with who last wrote it and when (its managed fields).
    async fn conversions_not_as_asked(
        &self,
        spec: &Value,
    ) -> Result<Vec<(String, String)>, OlmError> {
        let api: Api<CustomResourceDefinition> = Api::all(self.client());
        let mut out = Vec::new();
        for name in conversion_crds(spec) {
            let action = format!("read CustomResourceDefinition {name}");
            let Some(crd) = self.call(action, || api.get_opt(&name)).await? else {
                continue;
            };
            let strategy = crd
                .spec
                .conversion
                .as_ref()
                .map_or("None", |c| c.strategy.as_str());
            if strategy != "Webhook" {
                let writer = last_conversion_writer(crd.metadata.managed_fields.as_deref());
                out.push((
                    name,
                    format!("spec.conversion.strategy is {strategy}, not the Webhook the CSV asks for{writer}"),
                ));
            }
        }
        Ok(out)
    }

    async fn timed_out(
        &self,
        plan_name: &str,
        csv_name: &str,
        look: Look,
        timeouts: Timeouts,
    ) -> Outcome {
        let waited = timeouts.step;
        let pods = kubelet::complaints(&self.client(), self.operator_namespace()).await;
        if look.plan.phase == "RequiresApproval" {
            // Approved before the wait began: OLM never acted on the approval. What the
            // catalog-operator last did with the plan is the only evidence of why.
            let mut evidence = vec![look.plan.message];
            evidence.extend(self.catalog_operator_lines_about(plan_name));
            evidence.retain(|e| !e.is_empty());
            return Outcome::TimedOut {
                waiting_for: format!(
                    "OLM to act on the approved InstallPlan {plan_name} ({waited:?})"
                ),
                phase: format!("InstallPlan {}", look.plan.phase),
                reason: String::new(),
                message: evidence.join("; "),
                pods,
            };
        }
        if look.phase == "Succeeded" {
            let mut still = Vec::new();
            if look.plan.phase != "Complete" {
                still.push(format!("InstallPlan phase {}", look.plan.phase));
            }
            still.extend(
                look.conversions
                    .iter()
                    .map(|(crd, e)| format!("CustomResourceDefinition {crd}: {e}")),
            );
            return Outcome::TimedOut {
                waiting_for: format!(
                    "OLM to finish installing ClusterServiceVersion {csv_name} ({waited:?})"
                ),
                phase: look.phase,
                reason: look.reason,
                message: still.join("; "),
                pods,
            };
        }
        let (phase, reason, message) = if look.phase.is_empty() {
            (
                format!("InstallPlan {}", look.plan.phase),
                String::new(),
                look.plan.message,
            )
        } else {
            (look.phase, look.reason, look.message)
        };
        Outcome::TimedOut {
            waiting_for: format!("ClusterServiceVersion {csv_name} ({waited:?})"),
            phase,
            reason,
            message,
            pods,
        }
    }
}

/// How often a waiting step's InstallPlan is checked for kinds the apiserver does not serve.
const KINDS_CHECKED_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// The state of a step in one line, for the observer: the InstallPlan, the CSV, the pods
/// refused.
fn state(plan_name: &str, csv_name: &str, look: &Look, pods: &[String]) -> String {
    format!(
        "{}; {}{}",
        progress::plan_summary(plan_name, &look.plan),
        progress::csv_summary(csv_name, &look.phase, &look.reason, &look.message),
        progress::pods_summary(pods)
    )
}

/// OLM's message for a `nativeAPIs` entry the apiserver does not serve (OLM v0's
/// requirements check); nothing on the test control plane will start serving it mid-step.
const NATIVE_API_MISSING: &str = "Native API does not exist";

/// A native API the apiserver does not serve, and who would serve it: an
/// `*.openshift.io` group is OpenShift's own (`--platform openshift`); any other kind
/// comes from a CRD the cluster would have installed (`--cluster-crd`).
fn native_api_missing(r: &RequirementStatus) -> String {
    let api = match r.group.as_str() {
        "" => format!("{} {}", r.kind, r.version),
        group => format!("{} {group}/{}", r.kind, r.version),
    };
    let who = if r.group == "openshift.io" || r.group.ends_with(".openshift.io") {
        "OpenShift serves it: run with --platform openshift"
    } else {
        "give the test control plane its CRD with --cluster-crd"
    };
    format!("native API {api} is not served ({NATIVE_API_MISSING}; {who})")
}

/// The node label of OpenShift's masters.
const MASTER_ROLE: &str = "node-role.kubernetes.io/master";

/// Whether `pod` requires a node labelled [`MASTER_ROLE`] (by node selector or required
/// node affinity).
fn selects_master(pod: &Pod) -> bool {
    let Some(spec) = &pod.spec else {
        return false;
    };
    let by_selector = spec
        .node_selector
        .as_ref()
        .is_some_and(|s| s.contains_key(MASTER_ROLE));
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    let by_affinity = required.is_some_and(|r| {
        r.node_selector_terms.iter().any(|t| {
            t.match_expressions
                .iter()
                .flatten()
                .any(|e| e.key == MASTER_ROLE && e.operator != "DoesNotExist")
        })
    });
    by_selector || by_affinity
}

/// The outcome of a step that stood still for [`Timeouts::stuck`] with pods refused or a
/// requirement nothing meets: OLM waits for what cannot happen here.
fn stuck(csv_name: &str, look: Look, blocks: Blocks, timeouts: Timeouts) -> Outcome {
    let seconds = timeouts.stuck.as_secs_f64();
    let waiting_for = if blocks.pods.is_empty() {
        format!(
            "ClusterServiceVersion {csv_name} (stuck: nothing changed for {seconds:.0} s while \
             OLM waited for requirements nothing on the test control plane meets: {})",
            blocks.requirements.join("; ")
        )
    } else if blocks.made_elsewhere.is_empty() {
        format!(
            "ClusterServiceVersion {csv_name} (stuck: nothing changed for {seconds:.0} s while \
             pods were refused; on the test control plane nothing creates what they lack)"
        )
    } else {
        format!(
            "ClusterServiceVersion {csv_name} (stuck: nothing changed for {seconds:.0} s while \
             pods were refused: {})",
            blocks.made_elsewhere.join("; ")
        )
    };
    Outcome::TimedOut {
        waiting_for,
        phase: look.phase,
        reason: look.reason,
        message: look.message,
        pods: blocks.pods,
    }
}

/// Why the apiserver has not established `crd` (its `Established` and `NamesAccepted`
/// conditions that are not `True`, in its words); `None` when it has.
fn not_established(crd: &CustomResourceDefinition) -> Option<String> {
    let conditions = crd
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    if crd_condition_true(crd, "Established") && crd_condition_true(crd, "NamesAccepted") {
        return None;
    }
    let said: Vec<String> = conditions
        .iter()
        .filter(|c| c.status != "True")
        .map(|c| {
            let reason = c.reason.as_deref().unwrap_or_default();
            let message = c.message.as_deref().unwrap_or_default();
            format!("{}={} {reason}: {message}", c.type_, c.status)
        })
        .collect();
    Some(match said.is_empty() {
        true => "the apiserver has not established it (no condition says why)".to_owned(),
        false => format!("the apiserver has not established it ({})", said.join("; ")),
    })
}

/// OLM's refusal, if this look shows one: the InstallPlan `Failed`, or the CSV `Failed` for
/// a reason OLM does not retry by itself (or at the deadline).
fn refusal(plan_name: &str, csv_name: &str, look: &Look, at_deadline: bool) -> Option<Outcome> {
    if look.plan.phase == "Failed" {
        let failed = look.plan.conditions.iter().find(|c| c.status == "False");
        return Some(Outcome::Refused {
            by: format!("InstallPlan {plan_name}"),
            reason: failed.map(|c| c.reason.clone()).unwrap_or_default(),
            message: failed
                .map(|c| c.message.clone())
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| look.plan.message.clone()),
        });
    }
    if look.phase == "Failed" && (!olm_retries(&look.reason) || at_deadline) {
        return Some(Outcome::Refused {
            by: format!("ClusterServiceVersion {csv_name}"),
            reason: look.reason.clone(),
            message: look.message.clone(),
        });
    }
    None
}

/// The CRD names of a CSV spec's `ConversionWebhook` definitions.
fn conversion_crds(spec: &Value) -> Vec<String> {
    let spec = webhooks::csv_spec(spec);
    let mut names: Vec<String> = spec
        .webhookdefinitions
        .iter()
        .flatten()
        .filter(|d| d.type_.as_deref() == Some("ConversionWebhook"))
        .flat_map(|d| d.conversion_crds.iter().flatten().cloned())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// ` (last written by MANAGER, OPERATION at TIME)` for the newest managed-fields entry that
/// owns `spec.conversion`; empty when none says so.
fn last_conversion_writer(entries: Option<&[ManagedFieldsEntry]>) -> String {
    let owns = |e: &&ManagedFieldsEntry| {
        e.fields_v1
            .as_ref()
            .is_some_and(|f| f.0.pointer("/f:spec/f:conversion").is_some())
    };
    entries
        .unwrap_or_default()
        .iter()
        .filter(owns)
        .max_by_key(|e| e.time.as_ref().map(|t| t.0))
        .map(|e| {
            format!(
                " (last written by {}, {} at {})",
                e.manager.as_deref().unwrap_or("an unnamed manager"),
                e.operation.as_deref().unwrap_or("a write"),
                e.time
                    .as_ref()
                    .map(|t| t.0.to_string())
                    .unwrap_or_else(|| "an unknown time".to_owned())
            )
        })
        .unwrap_or_default()
}

/// The CSV's message as the report quotes it: OLM's own, and when OLM says
/// `RequirementsNotMet`, the requirements not met; those `met_now` (`(kind, name)`) names,
/// met now whatever OLM's `requirementStatus` still says, are not quoted as unmet but said
/// to be stale.
fn csv_message(status: &resources::CsvStatus, met_now: &BTreeSet<(String, String)>) -> String {
    if status.reason != "RequirementsNotMet" {
        return status.message.clone();
    }
    let (stale, unmet): (Vec<RequirementStatus>, Vec<RequirementStatus>) =
        unmet(status.requirement_status.clone())
            .into_iter()
            .partition(|r| met_now.contains(&(r.kind.clone(), r.name.clone())));
    let mut message = status.message.clone();
    let lines = unmet_lines(&unmet);
    if !lines.is_empty() {
        message.push_str(&format!("; not met: {}", lines.join("; ")));
    }
    if !stale.is_empty() {
        let said: Vec<String> = stale
            .iter()
            .map(|r| format!("{} {}: {}", r.kind, r.name, r.status))
            .collect();
        message.push_str(&format!(
            "; stale in OLM's requirementStatus (met now): {}",
            said.join(", ")
        ));
    }
    message
}

/// The requirements OLM lists as not met: every status but `Present`.
fn unmet(requirements: Vec<RequirementStatus>) -> Vec<RequirementStatus> {
    requirements
        .into_iter()
        .filter(|r| r.status != "Present")
        .collect()
}

/// The [`unmet`] requirements in OLM's words: `Kind name: status (message)`, with a
/// ServiceAccount's unmet permissions after it.
fn unmet_lines(unmet: &[RequirementStatus]) -> Vec<String> {
    unmet
        .iter()
        .map(|r| {
            let mut line = format!("{} {}: {}", r.kind, r.name, r.status);
            if !r.message.is_empty() {
                line.push_str(&format!(" ({})", r.message));
            }
            let missing: Vec<&str> = r
                .dependents
                .iter()
                .filter(|d| d.status != "Satisfied")
                .map(|d| d.message.as_str())
                .filter(|m| !m.is_empty())
                .collect();
            if !missing.is_empty() {
                line.push_str(&format!(" [{}]", missing.join(", ")));
            }
            line
        })
        .collect()
}

/// Whether OLM v0 leaves a `Failed` CSV with this reason by itself: a CSV that had met its
/// requirements fails with `RequirementsNotMet` ("requirements no longer met") when a re-check
/// misses one for a moment — during an upgrade, say, while the new CRDs are being applied — and
/// OLM re-checks a failed CSV's requirements and moves it on when they are met. So it is only
/// the outcome when it lasts until the deadline.
fn olm_retries(reason: &str) -> bool {
    reason == "RequirementsNotMet"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn look(message: &str) -> Look {
        Look {
            plan: InstallPlanStatus::default(),
            phase: "Installing".into(),
            reason: "InstallWaiting".into(),
            message: message.into(),
            unmet: Vec::new(),
            conversions: Vec::new(),
        }
    }

    fn pods(refusals: Vec<String>) -> Blocks {
        Blocks {
            pods: refusals,
            ..Blocks::default()
        }
    }

    #[test]
    fn a_step_stands_still_only_while_pods_are_refused_and_nothing_changes() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let refused = || vec!["op-1: FailedMount: secret \"certs\" not found".to_owned()];
        let mut still = Stillness::default();
        let waiting = look("waiting for deployment op to become ready");
        let steps = [
            (
                "no pod refused: never still",
                waiting.message.as_str(),
                vec![],
                0,
                0,
            ),
            (
                "first refusal starts the clock",
                &waiting.message,
                refused(),
                1,
                0,
            ),
            (
                "unchanged: the clock runs",
                &waiting.message,
                refused(),
                15,
                14,
            ),
            (
                "OLM's message changes: again",
                "installing: deployment op",
                refused(),
                16,
                0,
            ),
            (
                "unchanged from there",
                "installing: deployment op",
                refused(),
                40,
                24,
            ),
            (
                "the pod admitted: reset",
                "installing: deployment op",
                vec![],
                41,
                0,
            ),
        ];
        for (what, message, refusals, when, want) in steps {
            let got = still.note(&look(message), pods(refusals), at(when));
            assert_eq!(got, Duration::from_secs(want), "{what}");
        }
    }

    #[test]
    fn a_step_stands_still_while_a_requirement_nothing_meets_stays_unmet() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let held = |what: &str| Blocks {
            requirements: vec![what.to_owned()],
            ..Blocks::default()
        };
        let crd = "CustomResourceDefinition a.example.com: the apiserver has not established it";
        let mut still = Stillness::default();
        let pending = look("one or more requirements couldn't be found");
        assert_eq!(still.note(&pending, held(crd), at(1)), Duration::ZERO);
        assert_eq!(
            still.note(&pending, held(crd), at(21)),
            Duration::from_secs(20)
        );
        // The evidence changes (another condition): the clock starts again.
        let other = "CustomResourceDefinition a.example.com: NamesAccepted=False";
        assert_eq!(still.note(&pending, held(other), at(22)), Duration::ZERO);
        // Established at last: nothing blocks any more.
        assert_eq!(
            still.note(&pending, Blocks::default(), at(23)),
            Duration::ZERO
        );
    }

    #[test]
    fn a_crd_not_established_is_quoted_in_the_apiservers_words() {
        let crd = |conditions: serde_json::Value| -> CustomResourceDefinition {
            serde_json::from_value(json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "as.example.com"},
                "spec": {"group": "example.com", "scope": "Namespaced",
                         "names": {"plural": "as", "kind": "A"}, "versions": []},
                "status": {"conditions": conditions},
            }))
            .unwrap()
        };
        let established = crd(json!([
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
        ]));
        assert_eq!(not_established(&established), None);
        let conflict = crd(json!([
            {"type": "NamesAccepted", "status": "False", "reason": "KindConflict", "message": "\"A\" is already in use"},
            {"type": "Established", "status": "False", "reason": "NotAccepted", "message": "not all names are accepted"},
        ]));
        assert_eq!(
            not_established(&conflict).as_deref(),
            Some(
                "the apiserver has not established it (NamesAccepted=False KindConflict: \"A\" is already in use; Established=False NotAccepted: not all names are accepted)"
            )
        );
        assert_eq!(
            not_established(&crd(json!([]))).as_deref(),
            Some("the apiserver has not established it (no condition says why)")
        );
    }

    /// What a step stuck on `blocks` was waiting for, and the pods it names.
    fn stuck_on(blocks: Blocks) -> (String, Vec<String>) {
        match stuck("x.v1", look("m"), blocks, Timeouts::default()) {
            Outcome::TimedOut {
                waiting_for, pods, ..
            } => (waiting_for, pods),
            other => panic!("stuck is a time-out: {other:?}"),
        }
    }

    #[test]
    fn a_stuck_step_says_what_blocked_it() {
        let held = Blocks {
            requirements: vec![
                "ClusterServiceVersion x.v1: PresentNotSatisfied (CSV version parsing error)"
                    .into(),
            ],
            ..Blocks::default()
        };
        let (waiting_for, pods) = stuck_on(held);
        assert_eq!(
            waiting_for,
            "ClusterServiceVersion x.v1 (stuck: nothing changed for 20 s while OLM waited for requirements nothing on the test control plane meets: ClusterServiceVersion x.v1: PresentNotSatisfied (CSV version parsing error))"
        );
        assert!(pods.is_empty());
        let (waiting_for, pods) = stuck_on(pods_blocked());
        assert!(
            waiting_for.ends_with(
                "while pods were refused; on the test control plane nothing creates what they lack)"
            ),
            "{waiting_for}"
        );
        assert_eq!(pods, ["op-1: FailedMount: secret \"certs\" not found"]);
        let elsewhere = Blocks {
            made_elsewhere: vec!["Secret certs is made by OpenShift's service-ca".into()],
            ..pods_blocked()
        };
        let (waiting_for, _) = stuck_on(elsewhere);
        assert!(
            waiting_for.ends_with(
                "while pods were refused: Secret certs is made by OpenShift's service-ca)"
            ),
            "{waiting_for}"
        );
    }

    #[test]
    fn a_missing_native_api_names_who_serves_it() {
        let native = |group: &str, version: &str, kind: &str| RequirementStatus {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            name: format!("{version}.{group}"),
            status: "NotPresent".into(),
            message: NATIVE_API_MISSING.into(),
            ..RequirementStatus::default()
        };
        let cases = [
            (
                native("route.openshift.io", "v1", "Route"),
                "native API Route route.openshift.io/v1 is not served (Native API does not exist; OpenShift serves it: run with --platform openshift)",
            ),
            (
                native("monitoring.coreos.com", "v1", "ServiceMonitor"),
                "native API ServiceMonitor monitoring.coreos.com/v1 is not served (Native API does not exist; give the test control plane its CRD with --cluster-crd)",
            ),
            (
                native("", "v1", "Widget"),
                "native API Widget v1 is not served (Native API does not exist; give the test control plane its CRD with --cluster-crd)",
            ),
        ];
        for (requirement, said) in cases {
            assert_eq!(native_api_missing(&requirement), said);
        }
    }

    fn pods_blocked() -> Blocks {
        pods(vec![
            "op-1: FailedMount: secret \"certs\" not found".to_owned(),
        ])
    }

    #[test]
    fn conversion_crds_are_those_of_conversion_webhooks_only() {
        let spec = json!({"webhookdefinitions": [
            {"type": "ValidatingAdmissionWebhook", "conversionCRDs": ["ignored.example.com"]},
            {"type": "ConversionWebhook", "conversionCRDs": ["b.example.com", "a.example.com"]},
            {"type": "ConversionWebhook", "conversionCRDs": ["a.example.com"]},
        ]});
        assert_eq!(conversion_crds(&spec), ["a.example.com", "b.example.com"]);
        assert!(conversion_crds(&json!({})).is_empty());
    }

    #[test]
    fn unmet_requirements_are_listed_in_olms_words() {
        let status: resources::CsvStatus = serde_json::from_value(json!({
            "phase": "Pending",
            "reason": "RequirementsNotMet",
            "requirementStatus": [
                {"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition",
                 "name": "a.example.com", "status": "Present", "message": "CRD is present and Established condition is true"},
                {"group": "", "version": "v1", "kind": "ServiceAccount", "name": "runner",
                 "status": "PresentNotSatisfied", "message": "Service account does not meet permission requirements",
                 "dependents": [
                    {"kind": "ClusterPolicyRule", "status": "Satisfied", "message": "cluster rule:{\"verbs\":[\"get\"]}"},
                    {"kind": "ClusterPolicyRule", "status": "NotSatisfied", "message": "cluster rule:{\"verbs\":[\"create\"]}"}
                 ]},
                {"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition",
                 "name": "b.example.com", "status": "NotPresent"}
            ]
        }))
        .unwrap();
        assert_eq!(
            unmet_lines(&unmet(status.requirement_status)),
            [
                "ServiceAccount runner: PresentNotSatisfied (Service account does not meet permission requirements) [cluster rule:{\"verbs\":[\"create\"]}]",
                "CustomResourceDefinition b.example.com: NotPresent",
            ]
        );
    }

    #[test]
    fn a_stale_not_present_requirement_is_not_quoted_as_unmet() {
        let csv: Csv = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": "op.v1", "namespace": "operators"},
            "spec": {},
            "status": {
                "phase": "Pending",
                "reason": "RequirementsNotMet",
                "message": "one or more requirements couldn't be found",
                "requirementStatus": [
                    {"group": "", "version": "v1", "kind": "ServiceAccount", "name": "op-controller",
                     "status": "NotPresent", "message": "Service account does not exist"},
                    {"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition",
                     "name": "as.example.com", "status": "NotPresent"},
                    {"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition",
                     "name": "bs.example.com", "status": "Present"},
                    {"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition",
                     "name": "cs.example.com", "status": "PresentNotAvailable",
                     "message": "CRD is present but the Established condition is False (not available)"}
                ]
            }
        }))
        .unwrap();
        let status = csv.status.unwrap();
        let exists = |names: &[(&str, &str)]| -> BTreeSet<(String, String)> {
            names
                .iter()
                .map(|(k, n)| ((*k).to_owned(), (*n).to_owned()))
                .collect()
        };
        let cases = [
            (
                "nothing exists: OLM's words stand",
                exists(&[]),
                "one or more requirements couldn't be found; not met: ServiceAccount op-controller: NotPresent (Service account does not exist); CustomResourceDefinition as.example.com: NotPresent; CustomResourceDefinition cs.example.com: PresentNotAvailable (CRD is present but the Established condition is False (not available))",
            ),
            (
                "the ServiceAccount exists now",
                exists(&[("ServiceAccount", "op-controller")]),
                "one or more requirements couldn't be found; not met: CustomResourceDefinition as.example.com: NotPresent; CustomResourceDefinition cs.example.com: PresentNotAvailable (CRD is present but the Established condition is False (not available)); stale in OLM's requirementStatus (met now): ServiceAccount op-controller: NotPresent",
            ),
            (
                "all exist now, the CRD established",
                exists(&[
                    ("ServiceAccount", "op-controller"),
                    ("CustomResourceDefinition", "as.example.com"),
                    ("CustomResourceDefinition", "cs.example.com"),
                ]),
                "one or more requirements couldn't be found; stale in OLM's requirementStatus (met now): ServiceAccount op-controller: NotPresent, CustomResourceDefinition as.example.com: NotPresent, CustomResourceDefinition cs.example.com: PresentNotAvailable",
            ),
        ];
        for (what, met_now, want) in cases {
            assert_eq!(csv_message(&status, &met_now), want, "{what}");
        }
    }

    #[test]
    fn the_newest_writer_of_spec_conversion_is_named() {
        let entries: Vec<ManagedFieldsEntry> = serde_json::from_value(json!([
            {"manager": "olm", "operation": "Update", "time": "2026-12-01T10:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:conversion": {"f:strategy": {}}}}},
            {"manager": "catalog", "operation": "Update", "time": "2026-12-01T10:00:01Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:conversion": {".": {}}}}},
            {"manager": "kube-apiserver", "operation": "Update", "time": "2026-12-01T10:00:05Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}},
        ]))
        .unwrap();
        assert_eq!(
            last_conversion_writer(Some(&entries)),
            " (last written by catalog, Update at 2026-12-01T10:00:01Z)"
        );
        assert_eq!(last_conversion_writer(None), "");
    }

    #[test]
    fn pods_that_require_a_master_node_are_told_apart() {
        let pod = |spec: Value| -> Pod { serde_json::from_value(json!({"spec": spec})).unwrap() };
        let term = |operator: &str| {
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": MASTER_ROLE, "operator": operator}]}]}}}})
        };
        let table = [
            (json!({"nodeSelector": {MASTER_ROLE: ""}}), true),
            (
                json!({"nodeSelector": {"node-role.kubernetes.io/worker": ""}}),
                false,
            ),
            (term("Exists"), true),
            (term("DoesNotExist"), false),
            (json!({"containers": []}), false),
        ];
        for (spec, want) in table {
            assert_eq!(selects_master(&pod(spec.clone())), want, "{spec}");
        }
    }
}
