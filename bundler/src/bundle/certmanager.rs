//! kubebuilder's `dist/install.yaml` wires webhook (and metrics) serving certificates through
//! cert-manager: `Certificate`s, an `Issuer`, and Secret volumes in the manager Deployment.
//! OLM does not run cert-manager; it creates, mounts and rotates webhook serving certificates
//! itself. This module decides what happens to each cert-manager object of the input:
//!
//! - a Certificate whose Secret a Deployment mounts where webhook certificates go (or whose DNS
//!   names are a webhook Service's) is replaced by OLM's handling: dropped, with an info;
//! - an Issuer or ClusterIssuer only issues such certificates: dropped, with an info;
//! - another Certificate whose Secret nothing mounts is dropped with a warning;
//! - another Certificate whose Secret a Deployment mounts is the plan's choice
//!   ([`olmpack_model::plan::Plan::cert_manager_certificates`]): by default an error with a hint
//!   (dropped, the pod could not start, and OLM has nothing to replace it with); with
//!   `drop`, a warning, and [`unmount`] removes the Secret's volume, its volumeMounts and the
//!   container args pointing into the mount from every Deployment, each removal named in a
//!   warning.
#![warn(missing_docs)]

use std::collections::BTreeSet;

use serde_json::Value;

use crate::bundle::inputs::Sourced;
use crate::json::{array_at, str_at};
use olmpack_model::decode::text;
use olmpack_model::objects::{self, Certificate};
use olmpack_model::plan::ErrorOrDrop;
use olmpack_model::report::Finding;

/// API group of cert-manager's objects.
pub const GROUP: &str = "cert-manager.io";

/// What the input's Deployments and webhooks say about certificate Secrets.
#[derive(Debug, Default)]
pub struct Wiring {
    /// Secrets mounted where OLM puts webhook serving certificates.
    webhook_secrets: BTreeSet<String>,
    /// Every Secret a Deployment mounts as a volume.
    mounted: BTreeSet<String>,
    /// Services named by webhook configurations and CRD conversion webhooks.
    webhook_services: BTreeSet<String>,
}

impl Wiring {
    /// Reads the wiring from every input object.
    pub fn of(objects: &[Sourced]) -> Self {
        let mut wiring = Wiring::default();
        for object in objects {
            match object.kind() {
                "Deployment" => wiring.read_deployment(object),
                "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration" => {
                    for hook in array_at(&object.value, "/webhooks") {
                        let service = objects::webhook_service(hook).name;
                        wiring.webhook_services.insert(service.unwrap_or_default());
                    }
                }
                "CustomResourceDefinition" => {
                    let crd = object.crd_v1();
                    let service = crd.conversion_service_name();
                    wiring.webhook_services.insert(service.to_owned());
                }
                _ => {}
            }
        }
        wiring.webhook_services.remove("");
        wiring
    }

    fn read_deployment(&mut self, deployment: &Sourced) {
        let deployment = deployment.deployment();
        let Some(pod) = deployment.pod() else {
            return;
        };
        let mut cert_volumes = BTreeSet::new();
        for container in pod.all_containers() {
            for mount in container.volume_mounts.iter().flatten() {
                if crate::bundle::csv::OLM_CERT_PATHS.contains(&text(&mount.mount_path)) {
                    cert_volumes.insert(text(&mount.name));
                }
            }
        }
        for volume in pod.volumes.iter().flatten() {
            let secret = volume.secret.as_ref().map_or("", |s| text(&s.secret_name));
            if secret.is_empty() {
                continue;
            }
            self.mounted.insert(secret.to_owned());
            if cert_volumes.contains(text(&volume.name)) {
                self.webhook_secrets.insert(secret.to_owned());
            }
        }
    }

    fn serves_webhooks(&self, certificate: &Certificate) -> bool {
        let names = certificate.spec.as_ref().and_then(|s| s.dns_names.as_ref());
        self.webhook_secrets.contains(certificate.secret_name())
            || names.into_iter().flatten().any(|host| {
                let service = host.split('.').next().unwrap_or("");
                self.webhook_services.contains(service)
            })
    }

    /// The finding for one cert-manager object (which is never shipped), and the Secret the
    /// Deployments must stop mounting (a dropped Certificate whose Secret they mount).
    pub fn decide(&self, object: &Sourced, choice: ErrorOrDrop) -> (Finding, Option<String>) {
        let certificate: Certificate = objects::view(&object.value);
        let secret = certificate.secret_name();
        let mut unmount = None;
        let finding = match object.kind() {
            "Certificate" if self.serves_webhooks(&certificate) => Finding::info(
                "input/cert-manager-replaced",
                format!("webhook serving certificate (Secret {secret}) left out: OLM creates, mounts and rotates webhook certificates itself"),
            ),
            "Certificate" if self.mounted.contains(secret) && choice == ErrorOrDrop::Drop => {
                unmount = Some(secret.to_owned());
                Finding::warning(
                    "input/cert-manager-dropped",
                    format!("Certificate left out (certManagerCertificates: drop): OLM does not run cert-manager, so Secret {secret} would never exist; the Deployments no longer mount it"),
                )
            }
            "Certificate" if self.mounted.contains(secret) => Finding::error(
                "input/cert-manager-certificate",
                format!("OLM does not run cert-manager, so Secret {secret}, which a Deployment mounts, would never exist and the pod could not start"),
            )
            .hint(format!("set `certManagerCertificates: drop` in the plan to leave the Certificate out and remove the Secret {secret} volume, its mounts and the container args pointing into them (e.g. kubebuilder's --metrics-cert-path; controller-runtime then serves metrics with a self-signed certificate), or ship the Secret")),
            "Certificate" => Finding::warning(
                "input/cert-manager-dropped",
                format!("Certificate left out: OLM does not run cert-manager, and nothing mounts its Secret {secret}"),
            ),
            kind => Finding::info(
                "input/cert-manager-replaced",
                format!("{kind} left out: it only issues certificates, which OLM handles itself for webhooks"),
            ),
        };
        (object.finding(finding), unmount)
    }
}

/// Removes Secret `secret` from a Deployment's pod: the volumes of that Secret, their
/// volumeMounts in every container and init container, and the args that point into such a
/// mount (`--flag=PATH`, or `PATH` with the `--flag` before it). A warning names every
/// removal; `None` when the Deployment does not mount the Secret.
pub fn unmount(deployment: &mut Sourced, secret: &str) -> Option<Finding> {
    let pod = deployment.value.pointer_mut("/spec/template/spec")?;
    let volumes = pod.get_mut("volumes")?.as_array_mut()?;
    let names: BTreeSet<String> = volumes
        .iter()
        .filter(|v| str_at(v, "/secret/secretName") == secret)
        .map(|v| str_at(v, "/name").to_owned())
        .collect();
    if names.is_empty() {
        return None;
    }
    volumes.retain(|v| str_at(v, "/secret/secretName") != secret);
    let mut removed: Vec<String> = names.iter().map(|n| format!("volume {n}")).collect();
    for key in ["initContainers", "containers"] {
        let Some(containers) = pod.get_mut(key).and_then(Value::as_array_mut) else {
            continue;
        };
        for container in containers {
            removed.extend(unmount_container(container, &names));
        }
    }
    Some(deployment.finding(
        Finding::warning(
            "input/cert-manager-unmounted",
            format!(
                "Secret {secret} (its Certificate was left out) is no longer mounted: removed {}",
                removed.join(", ")
            ),
        )
        .field("spec.template.spec"),
    ))
}

/// A warning for a shipped object (e.g. kubebuilder's ServiceMonitor, whose `tlsConfig`
/// names the metrics Secret) that selects a key of Secret `secret`, whose Certificate was
/// left out; `None` when it does not.
pub fn still_referenced(object: &Sourced, secret: &str) -> Option<Finding> {
    fn selects(value: &Value, secret: &str) -> bool {
        match value {
            Value::Object(map) => {
                (map.get("name").and_then(Value::as_str) == Some(secret) && map.contains_key("key"))
                    || map.values().any(|v| selects(v, secret))
            }
            Value::Array(items) => items.iter().any(|v| selects(v, secret)),
            _ => false,
        }
    }
    selects(&object.value, secret).then(|| {
        object.finding(Finding::warning(
            "input/cert-manager-secret-referenced",
            format!("refers to Secret {secret}, whose Certificate was left out: nothing creates it, so whatever reads it (e.g. Prometheus scraping with this TLS configuration) fails"),
        ))
    })
}

/// Removes the mounts of `volumes` from one container and the args pointing into them.
fn unmount_container(container: &mut Value, volumes: &BTreeSet<String>) -> Vec<String> {
    let name = str_at(container, "/name").to_owned();
    let mut paths = Vec::new();
    if let Some(mounts) = container
        .get_mut("volumeMounts")
        .and_then(Value::as_array_mut)
    {
        mounts.retain(|m| {
            let keep = !volumes.contains(str_at(m, "/name"));
            if !keep {
                paths.push(str_at(m, "/mountPath").to_owned());
            }
            keep
        });
    }
    let mut removed: Vec<String> = paths
        .iter()
        .map(|p| format!("the mount at {p} in container {name}"))
        .collect();
    let inside = |arg: &str| {
        paths
            .iter()
            .any(|p| !p.is_empty() && (arg == p || arg.starts_with(&format!("{p}/"))))
    };
    let Some(args) = container.get_mut("args").and_then(Value::as_array_mut) else {
        return removed;
    };
    let mut kept: Vec<Value> = Vec::with_capacity(args.len());
    for arg in args.drain(..) {
        let text = arg.as_str().unwrap_or("");
        let value = text.split_once('=').map_or(text, |(_, v)| v);
        if !inside(value) {
            kept.push(arg);
            continue;
        }
        // `--flag PATH`: the flag goes with its value.
        let flag = kept
            .last()
            .and_then(Value::as_str)
            .filter(|f| !text.contains('=') && f.starts_with('-') && !f.contains('='))
            .map(str::to_owned);
        let shown = match flag {
            Some(flag) => {
                kept.pop();
                format!("{flag} {text}")
            }
            None => text.to_owned(),
        };
        removed.push(format!("argument {shown} of container {name}"));
    }
    *args = kept;
    removed
}

#[cfg(test)]
mod tests;
