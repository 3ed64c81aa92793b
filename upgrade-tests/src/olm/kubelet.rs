//! The part of a kubelet that kwok does not play: a pod whose Secret or ConfigMap volumes (or
//! env references) do not exist never starts.
//!
//! kwok makes every scheduled pod Running and Ready. The environment's kwok stage for that
//! (`pod-ready`) additionally requires the annotation [`ADMITTED`], which this loop sets only
//! when every non-optional Secret and ConfigMap the pod references exists in its namespace —
//! what the kubelet needs before it starts containers. Until then the pod stays Pending and a
//! Warning Event says why, in the kubelet's words (`FailedMount`,
//! `CreateContainerConfigError`).

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod, PodSpec, Secret};
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
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

fn needs(spec: &PodSpec) -> BTreeSet<Need> {
    let mut out = BTreeSet::new();
    let mount = |kind, name: &str, volume: &str| Need {
        kind,
        name: name.to_owned(),
        reason: "FailedMount",
        volume: Some(volume.to_owned()),
    };
    for v in spec.volumes.iter().flatten() {
        if let Some(s) = &v.secret
            && !s.optional.unwrap_or(false)
            && let Some(name) = &s.secret_name
        {
            out.insert(mount("Secret", name, &v.name));
        }
        if let Some(c) = &v.config_map
            && !c.optional.unwrap_or(false)
        {
            out.insert(mount("ConfigMap", &c.name, &v.name));
        }
        for source in v.projected.iter().flat_map(|p| p.sources.iter().flatten()) {
            if let Some(s) = &source.secret
                && !s.optional.unwrap_or(false)
            {
                out.insert(mount("Secret", &s.name, &v.name));
            }
            if let Some(c) = &source.config_map
                && !c.optional.unwrap_or(false)
            {
                out.insert(mount("ConfigMap", &c.name, &v.name));
            }
        }
    }
    let config = |kind, name: &str| Need {
        kind,
        name: name.to_owned(),
        reason: "CreateContainerConfigError",
        volume: None,
    };
    let containers = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten());
    for c in containers {
        for e in c.env.iter().flatten().filter_map(|e| e.value_from.as_ref()) {
            if let Some(r) = &e.secret_key_ref
                && !r.optional.unwrap_or(false)
            {
                out.insert(config("Secret", &r.name));
            }
            if let Some(r) = &e.config_map_key_ref
                && !r.optional.unwrap_or(false)
            {
                out.insert(config("ConfigMap", &r.name));
            }
        }
        for e in c.env_from.iter().flatten() {
            if let Some(r) = &e.secret_ref
                && !r.optional.unwrap_or(false)
            {
                out.insert(config("Secret", &r.name));
            }
            if let Some(r) = &e.config_map_ref
                && !r.optional.unwrap_or(false)
            {
                out.insert(config("ConfigMap", &r.name));
            }
        }
    }
    out
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
/// loop), oldest first, as `pod: reason: message`.
pub async fn complaints(client: &Client, ns: &str) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let Ok(list) = events.list(&ListParams::default()).await else {
        return Vec::new();
    };
    list.items
        .into_iter()
        .filter(|e| {
            e.source
                .as_ref()
                .and_then(|s| s.component.as_deref())
                .is_some_and(|c| c.starts_with("kubelet"))
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
