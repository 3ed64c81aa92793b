//! When an install or upgrade step is done: OLM's two operators work concurrently, so a CSV
//! in phase `Succeeded` does not yet mean OLM has finished. A step is done when the
//! InstallPlan is `Complete`, the CSV is `Succeeded` and every CRD its `ConversionWebhook`
//! definitions name converts through the webhook — all together, for
//! [`super::Timeouts::settle`] without a break. What OLM does on the way (the CSV leaving
//! `Succeeded`, a CRD's conversion reset) is kept as evidence for the report.

use std::collections::BTreeSet;
use std::time::Instant;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::Api;
use serde_json::Value;

use super::install::{Outcome, POLL, Timeouts};
use super::operator_group::OPERATOR_NAMESPACE;
use super::resources::{self, Csv, InstallPlan, InstallPlanStatus, RequirementStatus};
use super::{OlmEnv, OlmError, kubelet};

/// What one look at the step showed.
struct Look {
    plan: InstallPlanStatus,
    phase: String,
    reason: String,
    message: String,
    /// CRDs whose conversion is not what the CSV asks, with the evidence.
    conversions: Vec<(String, String)>,
}

impl Look {
    fn settled(&self) -> bool {
        self.phase == "Succeeded" && self.plan.phase == "Complete" && self.conversions.is_empty()
    }
}

/// What happened while waiting, for [`super::Step::observed`].
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

/// How long a step has stood still with pods refused ([`super::Timeouts::stuck`]).
#[derive(Default)]
struct Stillness {
    /// What was last seen, and since when.
    seen: Option<(Still, Instant)>,
}

/// The CSV's phase, reason and message, and the pods' refusals.
#[derive(PartialEq)]
struct Still {
    csv: (String, String, String),
    pods: Vec<String>,
}

impl Stillness {
    /// Takes one look and the refusals then; how long both have been as they are now (zero
    /// while no pod is refused).
    fn note(&mut self, look: &Look, pods: Vec<String>, now: Instant) -> std::time::Duration {
        if pods.is_empty() {
            self.seen = None;
            return std::time::Duration::ZERO;
        }
        let csv = (
            look.phase.clone(),
            look.reason.clone(),
            look.message.clone(),
        );
        let current = Still { csv, pods };
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
    ) -> Result<(Outcome, Vec<String>), OlmError> {
        let mut record = Record::default();
        let mut stable_since: Option<Instant> = None;
        let mut stillness = Stillness::default();
        loop {
            let look = self.look(plan_name, csv_name).await?;
            let now = Instant::now();
            record.note(csv_name, &look, now);
            if let Some(refused) = refusal(plan_name, csv_name, &look, now >= deadline) {
                return Ok((refused, record.observed));
            }
            if look.settled() {
                let since = *stable_since.get_or_insert(now);
                if now.duration_since(since) >= timeouts.settle {
                    let csv = csv_name.to_owned();
                    return Ok((Outcome::Succeeded { csv }, record.observed));
                }
            } else {
                stable_since = None;
                // The pods' refusals, read only while the step is not done.
                let pods = kubelet::complaints(&self.client(), OPERATOR_NAMESPACE).await;
                let still = stillness.note(&look, pods.clone(), now);
                // Only once OLM has applied everything: an InstallPlan it still retries ends
                // on its own (refused or done).
                let applied = look.plan.phase == "Complete";
                if applied && look.phase != "Succeeded" && still >= timeouts.stuck {
                    return Ok((stuck(csv_name, look, pods, timeouts), record.observed));
                }
            }
            if now >= deadline {
                let outcome = self.timed_out(csv_name, look, timeouts).await;
                return Ok((outcome, record.observed));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn look(&self, plan_name: &str, csv_name: &str) -> Result<Look, OlmError> {
        let plans: Api<InstallPlan> = Api::namespaced_with(
            self.client(),
            OPERATOR_NAMESPACE,
            &resources::install_plan(),
        );
        let csvs: Api<Csv> =
            Api::namespaced_with(self.client(), OPERATOR_NAMESPACE, &resources::csv());
        let plan = plans
            .get(plan_name)
            .await
            .map_err(OlmError::api(format!("read InstallPlan {plan_name}")))?;
        let csv = csvs.get_opt(csv_name).await.map_err(OlmError::api(format!(
            "read ClusterServiceVersion {csv_name}"
        )))?;
        let conversions = match &csv {
            Some(csv) => self.conversions_not_as_asked(&csv.spec).await?,
            None => Vec::new(),
        };
        let status = csv.and_then(|c| c.status).unwrap_or_default();
        let unmet = unmet(&status.requirement_status);
        let message = if status.reason == "RequirementsNotMet" && !unmet.is_empty() {
            format!("{}; not met: {}", status.message, unmet.join("; "))
        } else {
            status.message
        };
        Ok(Look {
            plan: plan.status.unwrap_or_default(),
            phase: status.phase,
            reason: status.reason,
            message,
            conversions,
        })
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
            let Some(crd) = api.get_opt(&name).await.map_err(OlmError::api(format!(
                "read CustomResourceDefinition {name}"
            )))?
            else {
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

    async fn timed_out(&self, csv_name: &str, look: Look, timeouts: Timeouts) -> Outcome {
        let waited = timeouts.step;
        let pods = kubelet::complaints(&self.client(), OPERATOR_NAMESPACE).await;
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

/// The outcome of a step that stood still for [`Timeouts::stuck`] with pods refused: OLM
/// waits for pods that cannot start here.
fn stuck(csv_name: &str, look: Look, pods: Vec<String>, timeouts: Timeouts) -> Outcome {
    Outcome::TimedOut {
        waiting_for: format!(
            "ClusterServiceVersion {csv_name} (stuck: nothing changed for {:.0} s while pods \
             were refused; on the test control plane nothing creates what they lack)",
            timeouts.stuck.as_secs_f64()
        ),
        phase: look.phase,
        reason: look.reason,
        message: look.message,
        pods,
    }
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
    let mut names: Vec<String> = spec["webhookdefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["type"] == "ConversionWebhook")
        .flat_map(|d| d["conversionCRDs"].as_array().into_iter().flatten())
        .filter_map(|n| n.as_str().map(str::to_owned))
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

/// The requirements OLM lists as not met, in its words: `Kind name: status (message)`, with
/// a ServiceAccount's unmet permissions after it.
fn unmet(requirements: &[RequirementStatus]) -> Vec<String> {
    requirements
        .iter()
        .filter(|r| r.status != "Present")
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
            conversions: Vec::new(),
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
        for (what, message, pods, when, want) in steps {
            let got = still.note(&look(message), pods, at(when));
            assert_eq!(got, Duration::from_secs(want), "{what}");
        }
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
            unmet(&status.requirement_status),
            [
                "ServiceAccount runner: PresentNotSatisfied (Service account does not meet permission requirements) [cluster rule:{\"verbs\":[\"create\"]}]",
                "CustomResourceDefinition b.example.com: NotPresent",
            ]
        );
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
}
