//! The status a WebApp should have, computed from its spec and its Deployment: pure.
//!
//! Conditions and their stable reasons:
//!
//! | type | status | reason |
//! |---|---|---|
//! | `Ready` | True | `AllReplicasReady` |
//! | `Ready` | False | `ReplicasNotReady`, `InvalidSpec` |
//! | `Progressing` | True | `RollingOut` |
//! | `Progressing` | False | `RolloutComplete`, `InvalidSpec` |
//! | `Degraded` | True | `InvalidSpec` |
//! | `Degraded` | False | `AsExpected` |
//!
//! A condition keeps its `lastTransitionTime` while its status is unchanged, so an unchanged
//! world gives an identical status and the reconcile writes nothing.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::api::WebAppStatus;

/// What the reconcile observed.
#[derive(Clone, Debug)]
pub enum Observed<'a> {
    /// The spec is invalid; the message says why.
    InvalidSpec(String),
    /// The Deployment as it is now.
    Deployment(&'a Deployment),
}

fn condition(type_: &str, status: bool, reason: &str, message: String) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: if status { "True" } else { "False" }.to_owned(),
        reason: reason.to_owned(),
        message,
        observed_generation: None,
        last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
    }
}

/// The desired status. `previous` supplies unchanged transition times; `now` stamps changed
/// conditions; `selector` is the pods' label selector.
pub fn desired(
    generation: Option<i64>,
    previous: Option<&WebAppStatus>,
    observed: &Observed<'_>,
    selector: String,
    now: Time,
) -> WebAppStatus {
    let Observation {
        conditions,
        replicas,
        ready,
    } = match observed {
        Observed::InvalidSpec(message) => Observation {
            conditions: vec![
                condition("Ready", false, "InvalidSpec", message.clone()),
                condition("Progressing", false, "InvalidSpec", message.clone()),
                condition("Degraded", true, "InvalidSpec", message.clone()),
            ],
            replicas: previous.and_then(|p| p.replicas),
            ready: previous.and_then(|p| p.ready_replicas),
        },
        Observed::Deployment(deployment) => observe_deployment(deployment),
    };
    let conditions = conditions
        .into_iter()
        .map(|mut c| {
            c.observed_generation = generation;
            let before = previous.and_then(|p| p.conditions.iter().find(|o| o.type_ == c.type_));
            c.last_transition_time = match before {
                Some(b) if b.status == c.status => b.last_transition_time.clone(),
                _ => now.clone(),
            };
            c
        })
        .collect();
    WebAppStatus {
        observed_generation: generation,
        replicas,
        ready_replicas: ready,
        selector: Some(selector),
        conditions,
    }
}

/// `status` with every condition's `lastTransitionTime` cleared: what a status says, apart
/// from when it said it first (two reconciles of the same world differ only there when the
/// second one reads a copy from before the first one's write).
pub fn without_transition_times(status: &WebAppStatus) -> WebAppStatus {
    let mut status = status.clone();
    for condition in &mut status.conditions {
        condition.last_transition_time = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
    }
    status
}

/// The conditions and replica counts one observation yields, before transition times.
struct Observation {
    conditions: Vec<Condition>,
    replicas: Option<i32>,
    ready: Option<i32>,
}

/// Ready when every wanted replica is ready; progressing until the Deployment's current
/// generation is rolled out to every replica; never degraded.
fn observe_deployment(deployment: &Deployment) -> Observation {
    let want = deployment.spec.replicas.unwrap_or(1);
    let status = deployment.status.clone().unwrap_or_default();
    let ready = status.ready_replicas.unwrap_or(0);
    let updated = status.updated_replicas.unwrap_or(0);
    let current = status.replicas.unwrap_or(0);
    let rolled = status.observed_generation >= deployment.metadata.generation
        && updated >= want
        && current == updated;
    let ready_message = format!("{ready}/{want} replicas ready");
    let updated_message = format!("{updated}/{want} replicas updated");
    Observation {
        conditions: vec![
            if ready >= want {
                condition("Ready", true, "AllReplicasReady", ready_message)
            } else {
                condition("Ready", false, "ReplicasNotReady", ready_message)
            },
            if rolled {
                condition("Progressing", false, "RolloutComplete", updated_message)
            } else {
                condition("Progressing", true, "RollingOut", updated_message)
            },
            condition("Degraded", false, "AsExpected", String::new()),
        ],
        replicas: Some(current),
        ready: Some(ready),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(s: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(s).unwrap())
    }

    #[test]
    fn unchanged_world_gives_identical_status() {
        let deployment: Deployment = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "a", "generation": 2},
            "spec": {"replicas": 2, "selector": {}, "template": {}},
            "status": {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1},
        }))
        .unwrap();
        let observed = Observed::Deployment(&deployment);
        let first = desired(Some(3), None, &observed, "s".into(), time(10));
        let second = desired(Some(3), Some(&first), &observed, "s".into(), time(99));
        assert_eq!(first, second);
        let reasons: Vec<_> = first.conditions.iter().map(|c| c.reason.as_str()).collect();
        assert_eq!(
            reasons,
            ["ReplicasNotReady", "RolloutComplete", "AsExpected"]
        );
        let invalid = desired(
            Some(4),
            Some(&first),
            &Observed::InvalidSpec("bad".into()),
            "s".into(),
            time(50),
        );
        assert_eq!(
            invalid.conditions[0].last_transition_time,
            time(10),
            "Ready stayed False"
        );
        assert_eq!(
            invalid.conditions[2].last_transition_time,
            time(50),
            "Degraded flipped"
        );
    }
}
