//! What OLM v0 is doing while a step waits, in the words of the shared
//! [`crate::olm::progress`]: one-line summaries of the InstallPlan, the CSV and the pods,
//! and each InstallPlan step whose kind the apiserver does not serve.

use std::collections::BTreeMap;
use std::time::Instant;

use super::resources::{InstallPlanStatus, InstallPlanStep};
use crate::olm::progress::{Event, Tracker};

/// Tells `tracker` once of each kind (group and kind) a step of InstallPlan `plan` creates
/// that is not served.
pub(super) fn not_served(
    tracker: &mut Tracker<'_>,
    plan: &str,
    steps: &[&InstallPlanStep],
    now: Instant,
) {
    for step in steps {
        let r = &step.resource;
        let event = Event::NotServed {
            plan: plan.to_owned(),
            group: r.group.clone(),
            version: r.version.clone(),
            kind: r.kind.clone(),
            name: r.name.clone(),
        };
        tracker.tell_once((r.group.clone(), r.kind.clone()), event, now);
    }
}

/// `InstallPlan NAME: PHASE (N/M steps Created, K WaitingForApi)`: the plan's phase and how
/// many of its steps are in each status, the most common first.
pub(super) fn plan_summary(name: &str, plan: &InstallPlanStatus) -> String {
    let phase = match plan.phase.as_str() {
        "" => "no phase yet",
        phase => phase,
    };
    if plan.plan.is_empty() {
        return format!("InstallPlan {name}: {phase}");
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for step in &plan.plan {
        let status = match step.status.as_str() {
            "" => "Unknown",
            status => status,
        };
        *counts.entry(status).or_default() += 1;
    }
    let mut counts: Vec<(&str, usize)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let parts: Vec<String> = counts
        .iter()
        .enumerate()
        .map(|(i, (status, n))| match i {
            0 => format!("{n}/{} steps {status}", plan.plan.len()),
            _ => format!("{n} {status}"),
        })
        .collect();
    format!("InstallPlan {name}: {phase} ({})", parts.join(", "))
}

/// `ClusterServiceVersion NAME: PHASE (REASON: MESSAGE)`, or that OLM has not made it yet.
pub(super) fn csv_summary(name: &str, phase: &str, reason: &str, message: &str) -> String {
    match (phase, reason, message) {
        ("", _, _) => format!("ClusterServiceVersion {name}: not created yet"),
        (phase, "", "") => format!("ClusterServiceVersion {name}: {phase}"),
        (phase, reason, "") => format!("ClusterServiceVersion {name}: {phase} ({reason})"),
        (phase, reason, message) => {
            format!("ClusterServiceVersion {name}: {phase} ({reason}: {message})")
        }
    }
}

/// `; pods waiting: P1: WHY; P2: WHY`, or nothing when no pod is refused.
pub(super) fn pods_summary(pods: &[String]) -> String {
    match pods {
        [] => String::new(),
        pods => format!("; pods waiting: {}", pods.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_install_plan_is_summarised_by_the_statuses_of_its_steps() {
        let status = |steps: serde_json::Value| -> InstallPlanStatus {
            serde_json::from_value(json!({"phase": "Installing", "plan": steps})).unwrap()
        };
        let step = |kind: &str, s: &str| {
            json!({"resolving": "x.v1", "status": s,
                   "resource": {"group": "", "version": "v1", "kind": kind, "name": "n"}})
        };
        let cases = [
            (json!([]), "InstallPlan install-abc: Installing"),
            (
                json!([
                    step("CustomResourceDefinition", "Created"),
                    step("ServiceMonitor", "WaitingForApi"),
                    step("ServiceAccount", "Created"),
                    step("ClusterServiceVersion", "Present"),
                    step("Service", ""),
                ]),
                "InstallPlan install-abc: Installing (2/5 steps Created, 1 Present, 1 Unknown, 1 WaitingForApi)",
            ),
        ];
        for (steps, want) in cases {
            assert_eq!(plan_summary("install-abc", &status(steps)), want);
        }
    }

    #[test]
    fn a_csv_is_summarised_by_phase_reason_and_message() {
        let cases = [
            (("", "", ""), "ClusterServiceVersion x.v1: not created yet"),
            (("Pending", "", ""), "ClusterServiceVersion x.v1: Pending"),
            (
                ("Installing", "InstallWaiting", "waiting for deployment x"),
                "ClusterServiceVersion x.v1: Installing (InstallWaiting: waiting for deployment x)",
            ),
        ];
        for ((phase, reason, message), want) in cases {
            assert_eq!(csv_summary("x.v1", phase, reason, message), want);
        }
    }
}
