//! The `deployment` install strategy: each input Deployment's spec, with `WATCH_NAMESPACE`
//! wired to OLM's target namespaces and the certificate volumes OLM injects for webhooks
//! left out.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::super::inputs::Sourced;
use olmpack_model::csv::StrategyDeployment;
use olmpack_model::decode::text;
use olmpack_model::objects::{Container, DeploymentSpec, EnvVar, PodSpec};
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
    let deployment = d.deployment();
    let mut out = StrategyDeployment {
        name: Some(d.name().to_owned()),
        ..StrategyDeployment::default()
    };
    match deployment.spec {
        Some(mut spec) => {
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
            out.spec = Some(spec);
        }
        // Absent (written as null) or of a type OLM does not read: kept as given.
        None => {
            let given = deployment.extra.get("spec").cloned();
            out.extra
                .insert("spec".into(), given.unwrap_or(Value::Null));
        }
    }
    let meta = deployment.metadata.unwrap_or_default();
    match meta.labels {
        Some(labels) => out.label = Some(labels),
        None => {
            if let Some(given) = meta.extra.get("labels") {
                out.extra.insert("label".into(), given.clone());
            }
        }
    }
    out
}

/// The pod's containers and init containers, mutably.
fn containers_mut(pod: &mut PodSpec) -> impl Iterator<Item = &mut Container> {
    let init = pod.init_containers.iter_mut().flatten();
    pod.containers.iter_mut().flatten().chain(init)
}

/// Removes volumes (and their mounts) that would collide with the certificate volumes OLM
/// injects for webhooks; returns the names of the volumes removed.
fn drop_cert_volumes(spec: &mut DeploymentSpec) -> Vec<String> {
    let Some(pod) = spec.template.as_mut().and_then(|t| t.spec.as_mut()) else {
        return Vec::new();
    };
    let mut dropped: BTreeSet<String> = BTreeSet::new();
    for container in containers_mut(pod) {
        drop_cert_mounts(container, &mut dropped);
    }
    if let Some(volumes) = pod.volumes.as_mut() {
        volumes.retain(|v| {
            let name = text(&v.name);
            let cert = dropped.contains(name) || OLM_CERT_VOLUMES.contains(&name);
            if cert {
                dropped.insert(name.to_owned());
            }
            !cert
        });
        if volumes.is_empty() {
            pod.volumes = None;
        }
    }
    dropped.into_iter().collect()
}

/// Removes a container's mounts at OLM's certificate paths or of OLM's certificate volume
/// names, recording the volumes they mounted in `dropped`.
fn drop_cert_mounts(container: &mut Container, dropped: &mut BTreeSet<String>) {
    let Some(mounts) = container.volume_mounts.as_mut() else {
        return;
    };
    mounts.retain(|m| {
        let cert = OLM_CERT_PATHS.contains(&text(&m.mount_path))
            || OLM_CERT_VOLUMES.contains(&text(&m.name));
        if cert {
            dropped.insert(text(&m.name).to_owned());
        }
        !cert
    });
    if mounts.is_empty() {
        container.volume_mounts = None;
    }
}

/// `WATCH_NAMESPACE` with a literal value → the namespaces OLM's OperatorGroup targets.
fn wire_watch_namespace(spec: &mut DeploymentSpec) {
    let Some(pod) = spec.template.as_mut().and_then(|t| t.spec.as_mut()) else {
        return;
    };
    for container in containers_mut(pod) {
        for var in container.env.iter_mut().flatten() {
            if var.is_literal("WATCH_NAMESPACE") {
                *var = EnvVar {
                    name: var.name.take(),
                    value_from: Some(json!({"fieldRef": {
                        "fieldPath": "metadata.annotations['olm.targetNamespaces']",
                    }})),
                    ..EnvVar::default()
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use olmpack_model::objects;

    use super::*;

    #[test]
    fn certificate_volumes_olm_injects_are_dropped_with_their_mounts() {
        let given = json!({"template": {"spec": {
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
        let mut typed: DeploymentSpec = objects::view(&given);
        assert_eq!(drop_cert_volumes(&mut typed), ["apiservice-cert", "cert"]);
        let spec = json!(typed);
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
