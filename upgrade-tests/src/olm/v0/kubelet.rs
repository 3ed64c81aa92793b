//! The part of a kubelet that kwok does not play: a pod whose mounted Secret or ConfigMap
//! volumes (or env references) do not exist never starts.
//!
//! kwok makes every scheduled pod Running and Ready. The environment's kwok stage for that
//! (`pod-ready`) additionally requires the annotation [`ADMITTED`], which this loop sets only
//! when every Secret and ConfigMap the kubelet needs before it starts containers exists in the
//! pod's namespace. Until then the pod stays Pending and a Warning Event says why, in the
//! kubelet's words (`FailedMount`, `CreateContainerConfigError`).
//!
//! What the kubelet needs is [`olmpack_model::pod`]'s rule: a volume only when some container
//! mounts it (kubebuilder's `cert` volume, left unmounted once OLM's certificate injection
//! mounts its own volume at the same path, never blocks); a Secret or ConfigMap only when not
//! `optional: true`; nothing for emptyDir, downwardAPI or service account tokens.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod, PodSpec, Secret};
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use olmpack_model::pod::{Use, required_references};
use serde_json::json;

/// The annotation that lets kwok start a pod.
pub const ADMITTED: &str = "olmpack.dev/kubelet";
const POLL: Duration = Duration::from_millis(250);

/// What a pod needs from its namespace, and what the kubelet says when it is missing.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Need {
    kind: &'static str,
    name: String,
    /// `FailedMount` or `CreateContainerConfigError`.
    reason: &'static str,
    /// The volume name, for mounts.
    volume: Option<String>,
}

impl Need {
    fn message(&self) -> String {
        let what = format!("{} \"{}\" not found", self.kind.to_lowercase(), self.name);
        match &self.volume {
            Some(volume) => format!("MountVolume.SetUp failed for volume \"{volume}\" : {what}"),
            None => what,
        }
    }
}

/// What the kubelet needs before it starts the pod's containers, as
/// [`olmpack_model::pod::required_references`] decides it (the one definition, shared with
/// the static rule `csv/missing-volume-source`).
fn needs(spec: &PodSpec) -> BTreeSet<Need> {
    let value = serde_json::to_value(spec).unwrap_or_default();
    required_references(&value)
        .into_iter()
        .map(|r| {
            let (reason, volume) = match r.used {
                Use::Mount { volume, .. } => ("FailedMount", Some(volume)),
                Use::Env { .. } => ("CreateContainerConfigError", None),
            };
            Need {
                kind: r.kind.as_str(),
                name: r.name,
                reason,
                volume,
            }
        })
        .collect()
}

/// Runs the admission loop until the task is aborted.
pub async fn run(client: Client) {
    let mut reported = BTreeSet::new();
    loop {
        let _ = pass(&client, &mut reported).await;
        tokio::time::sleep(POLL).await;
    }
}

async fn pass(client: &Client, reported: &mut BTreeSet<(String, Need)>) -> Result<(), kube::Error> {
    let pods: Api<Pod> = Api::all(client.clone());
    for pod in pods.list(&ListParams::default()).await?.items {
        let admitted = pod
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(ADMITTED));
        if admitted || pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let (Some(ns), Some(name), Some(spec)) = (
            pod.metadata.namespace.clone(),
            pod.metadata.name.clone(),
            pod.spec.as_ref(),
        ) else {
            continue;
        };
        if spec.node_name.is_none() {
            continue;
        }
        let mut missing = Vec::new();
        for need in needs(spec) {
            let exists = match need.kind {
                "Secret" => Api::<Secret>::namespaced(client.clone(), &ns)
                    .get_opt(&need.name)
                    .await?
                    .is_some(),
                _ => Api::<ConfigMap>::namespaced(client.clone(), &ns)
                    .get_opt(&need.name)
                    .await?
                    .is_some(),
            };
            if !exists {
                missing.push(need);
            }
        }
        let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
        if missing.is_empty() {
            let patch = json!({"metadata": {"annotations": {ADMITTED: "admitted"}}});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            continue;
        }
        for need in missing {
            let key = (format!("{ns}/{name}"), need.clone());
            if reported.insert(key) {
                warn(client, &ns, &pod, &need).await?;
            }
        }
    }
    Ok(())
}

/// A Warning Event on the pod, as the kubelet would record it.
async fn warn(client: &Client, ns: &str, pod: &Pod, need: &Need) -> Result<(), kube::Error> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        });
    let event: Event = serde_json::from_value(json!({
        "metadata": {"generateName": format!("{name}."), "namespace": ns},
        "involvedObject": {
            "kind": "Pod", "namespace": ns, "name": name,
            "uid": pod.metadata.uid, "apiVersion": "v1",
        },
        "reason": need.reason,
        "message": need.message(),
        "type": "Warning",
        "source": {"component": "kubelet (olmpack)"},
        "count": 1,
        "firstTimestamp": now,
        "lastTimestamp": now,
    }))
    .expect("a static Event is valid");
    Api::<Event>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &event)
        .await?;
    Ok(())
}

/// The kubelet's complaints about the pods of namespace `ns` (Warning Events from this
/// loop) and the scheduler's (`FailedScheduling`), oldest first, as `pod: reason: message`.
pub async fn complaints(client: &Client, ns: &str) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let Ok(list) = events.list(&ListParams::default()).await else {
        return Vec::new();
    };
    list.items
        .into_iter()
        .filter(|e| {
            let kubelet = e
                .source
                .as_ref()
                .and_then(|s| s.component.as_deref())
                .is_some_and(|c| c.starts_with("kubelet"));
            // The scheduler's word on a pod no node takes (a nodeSelector no node matches).
            kubelet || e.reason.as_deref() == Some("FailedScheduling")
        })
        .map(|e| {
            format!(
                "{}: {}: {}",
                e.involved_object.name.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default()
            )
        })
        .collect()
}

/// kwok's `pod-ready` stage text with the [`ADMITTED`] requirement added to its selector.
pub fn gate_pod_ready(stage: &str) -> Option<String> {
    let anchor = "  selector:\n    matchExpressions:\n";
    let at = stage.find(anchor)? + anchor.len();
    let gate = format!(
        "    - key: '.metadata.annotations[\"{ADMITTED}\"]'\n      operator: 'In'\n      values:\n      - 'admitted'\n"
    );
    let mut out = stage.to_owned();
    out.insert_str(at, &gate);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: serde_json::Value) -> PodSpec {
        serde_json::from_value(value).unwrap()
    }

    fn names(spec: &PodSpec) -> Vec<String> {
        needs(spec)
            .into_iter()
            .map(|n| format!("{} {} {}", n.reason, n.kind, n.name))
            .collect()
    }

    #[test]
    fn only_mounted_volumes_and_required_references_block_a_pod() {
        let cases = [
            (
                "kubebuilder's cert volume, unmounted once OLM mounts its own",
                json!({"containers": [{"name": "manager", "volumeMounts": [{"name": "olm-cert", "mountPath": "/tmp/k8s-webhook-server/serving-certs"}]}],
                       "volumes": [{"name": "cert", "secret": {"secretName": "webhook-server-cert"}},
                                   {"name": "olm-cert", "secret": {"secretName": "op-service-cert"}}]}),
                vec!["FailedMount Secret op-service-cert"],
            ),
            (
                "optional references never block",
                json!({"containers": [{"name": "c", "volumeMounts": [{"name": "a", "mountPath": "/a"}],
                       "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": true}}}],
                       "envFrom": [{"configMapRef": {"name": "cm", "optional": true}}]}],
                       "volumes": [{"name": "a", "configMap": {"name": "cm", "optional": true}}]}),
                vec![],
            ),
            (
                "an init container's mount counts; emptyDir and downwardAPI never block",
                json!({"initContainers": [{"name": "i", "volumeMounts": [{"name": "p", "mountPath": "/p"}, {"name": "e", "mountPath": "/e"}]}],
                       "containers": [{"name": "c", "volumeMounts": [{"name": "d", "mountPath": "/d"}]}],
                       "volumes": [{"name": "p", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}, {"configMap": {"name": "ca"}}]}},
                                   {"name": "e", "emptyDir": {}},
                                   {"name": "d", "downwardAPI": {"items": []}}]}),
                vec!["FailedMount ConfigMap ca"],
            ),
            (
                "env references of any container block without a mount",
                json!({"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "ack-user-config"}}]}],
                       "initContainers": [{"name": "i", "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "k"}}}]}]}),
                vec![
                    "CreateContainerConfigError ConfigMap ack-user-config",
                    "CreateContainerConfigError Secret creds",
                ],
            ),
        ];
        for (what, value, expected) in cases {
            assert_eq!(names(&spec(value)), expected, "{what}");
        }
    }
}
