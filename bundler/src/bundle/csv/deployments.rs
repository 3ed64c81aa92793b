//! The `deployment` install strategy: each input Deployment's spec, with `WATCH_NAMESPACE`
//! wired to OLM's target namespaces and the certificate volumes OLM injects for webhooks
//! left out.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::super::inputs::Sourced;
use crate::json::str_at;
use olmpack_model::csv::StrategyDeployment;
use olmpack_model::decode;
use olmpack_model::report::Finding;

/// Where OLM mounts the serving certificates it manages for webhooks and API services.
pub const OLM_CERT_PATHS: [&str; 2] = [
    "/apiserver.local.config/certificates",
    "/tmp/k8s-webhook-server/serving-certs",
];
/// The volume names OLM gives them; a deployment that already has one would be invalid.
const OLM_CERT_VOLUMES: [&str; 2] = ["apiservice-cert", "webhook-cert"];

/// The ServiceAccounts the deployments run as (`default` when a pod names none).
pub(super) fn service_accounts(deployments: &[Sourced]) -> BTreeSet<String> {
    deployments
        .iter()
        .map(|d| d.deployment().service_account().to_owned())
        .collect()
}

/// The strategy's `deployments` entries, sorted by name. With webhooks, volumes that would
/// collide with OLM's certificate volumes are dropped, with a warning each.
pub(super) fn strategy_deployments(
    inputs: &[Sourced],
    has_webhooks: bool,
    notes: &mut Vec<Finding>,
) -> Vec<StrategyDeployment> {
    let mut out: Vec<StrategyDeployment> = inputs
        .iter()
        .map(|d| strategy_deployment(d, has_webhooks, notes))
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// One strategy deployment; a value of the input of a type OLM does not read stays as given
/// (in `extra`), so the validators judge it.
fn strategy_deployment(
    d: &Sourced,
    has_webhooks: bool,
    notes: &mut Vec<Finding>,
) -> StrategyDeployment {
    let mut spec = d.value.get("spec").cloned().unwrap_or(Value::Null);
    wire_watch_namespace(&mut spec);
    if has_webhooks {
        for dropped in drop_cert_volumes(&mut spec) {
            notes.push(d.finding(
                Finding::warning(
                    "input/webhook-cert-volume-dropped",
                    format!("volume {dropped} carries webhook serving certificates; OLM mounts its own there, so it is left out of the CSV"),
                )
                .field("spec.template.spec.volumes"),
            ));
        }
    }
    let mut entry = json!({ "name": d.name(), "spec": spec });
    let meta = d.deployment().metadata.unwrap_or_default();
    if let Some(labels) = decode::as_read(&meta.labels, &meta.extra, "labels") {
        entry["label"] = labels;
    }
    decode::read(&entry).0
}

/// The containers and init containers of a Deployment spec, mutably.
fn containers_mut(spec: &mut Value) -> impl Iterator<Item = &mut Value> {
    let pod = spec
        .pointer_mut("/template/spec")
        .and_then(Value::as_object_mut);
    pod.into_iter().flat_map(|pod| {
        pod.iter_mut()
            .filter(|(key, _)| *key == "containers" || *key == "initContainers")
            .filter_map(|(_, list)| list.as_array_mut())
            .flatten()
    })
}

/// Removes volumes (and their mounts) that would collide with the certificate volumes OLM
/// injects for webhooks; returns the names of the volumes removed.
fn drop_cert_volumes(spec: &mut Value) -> Vec<String> {
    let mut dropped: BTreeSet<String> = BTreeSet::new();
    for container in containers_mut(spec) {
        drop_cert_mounts(container, &mut dropped);
    }
    if let Some(volumes) = spec
        .pointer_mut("/template/spec/volumes")
        .and_then(Value::as_array_mut)
    {
        volumes.retain(|v| {
            let name = str_at(v, "/name");
            let cert = dropped.contains(name) || OLM_CERT_VOLUMES.contains(&name);
            if cert {
                dropped.insert(name.to_owned());
            }
            !cert
        });
        if volumes.is_empty()
            && let Some(pod) = spec
                .pointer_mut("/template/spec")
                .and_then(Value::as_object_mut)
        {
            pod.remove("volumes");
        }
    }
    dropped.into_iter().collect()
}

/// Removes a container's mounts at OLM's certificate paths or of OLM's certificate volume
/// names, recording the volumes they mounted in `dropped`.
fn drop_cert_mounts(container: &mut Value, dropped: &mut BTreeSet<String>) {
    let Some(mounts) = container
        .get_mut("volumeMounts")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    mounts.retain(|m| {
        let cert = OLM_CERT_PATHS.contains(&str_at(m, "/mountPath"))
            || OLM_CERT_VOLUMES.contains(&str_at(m, "/name"));
        if cert {
            dropped.insert(str_at(m, "/name").to_owned());
        }
        !cert
    });
    if mounts.is_empty() {
        container.as_object_mut().map(|c| c.remove("volumeMounts"));
    }
}

/// `WATCH_NAMESPACE` with a literal value → the namespaces OLM's OperatorGroup targets.
fn wire_watch_namespace(spec: &mut Value) {
    for container in containers_mut(spec) {
        let Some(env) = container.get_mut("env").and_then(Value::as_array_mut) else {
            continue;
        };
        for var in env {
            if str_at(var, "/name") == "WATCH_NAMESPACE" && var.get("valueFrom").is_none() {
                *var = json!({
                    "name": "WATCH_NAMESPACE",
                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['olm.targetNamespaces']"}},
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_volumes_olm_injects_are_dropped_with_their_mounts() {
        let mut spec = json!({"template": {"spec": {
            "containers": [{"name": "manager", "volumeMounts": [
                {"name": "cert", "mountPath": "/tmp/k8s-webhook-server/serving-certs", "readOnly": true},
                {"name": "tmp", "mountPath": "/tmp"},
            ]}],
            "volumes": [
                {"name": "cert", "secret": {"secretName": "webhook-server-cert"}},
                {"name": "apiservice-cert", "secret": {"secretName": "x"}},
                {"name": "tmp", "emptyDir": {}},
            ],
        }}});
        assert_eq!(drop_cert_volumes(&mut spec), ["apiservice-cert", "cert"]);
        assert_eq!(
            spec["template"]["spec"]["volumes"],
            json!([{"name": "tmp", "emptyDir": {}}])
        );
        assert_eq!(
            spec["template"]["spec"]["containers"][0]["volumeMounts"],
            json!([{"name": "tmp", "mountPath": "/tmp"}])
        );
    }
}
