//! kubebuilder's `dist/install.yaml` wires webhook (and metrics) serving certificates through
//! cert-manager: `Certificate`s, an `Issuer`, and Secret volumes in the manager Deployment.
//! OLM does not run cert-manager; it creates, mounts and rotates webhook serving certificates
//! itself. This module decides what happens to each cert-manager object of the input:
//!
//! - a Certificate whose Secret a Deployment mounts where webhook certificates go (or whose DNS
//!   names are a webhook Service's) is replaced by OLM's handling: dropped, with an info;
//! - an Issuer or ClusterIssuer only issues such certificates: dropped, with an info;
//! - another Certificate whose Secret nothing mounts is dropped with a warning;
//! - another Certificate whose Secret a Deployment mounts is an error with a hint: dropped,
//!   the pod could not start, and OLM has nothing to replace it with.

use std::collections::BTreeSet;

use crate::bundle::manifests::Sourced;
use crate::json::{array_at, str_at};
use crate::report::Finding;

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
                        let service = str_at(hook, "/clientConfig/service/name");
                        wiring.webhook_services.insert(service.to_owned());
                    }
                }
                "CustomResourceDefinition" => {
                    let crd = crate::bundle::crd_v1beta1::to_v1(&object.value);
                    let service =
                        str_at(&crd, "/spec/conversion/webhook/clientConfig/service/name");
                    wiring.webhook_services.insert(service.to_owned());
                }
                _ => {}
            }
        }
        wiring.webhook_services.remove("");
        wiring
    }

    fn read_deployment(&mut self, deployment: &Sourced) {
        let pod = deployment
            .value
            .pointer("/spec/template/spec")
            .unwrap_or(&serde_json::Value::Null);
        let mut cert_volumes = BTreeSet::new();
        for container in array_at(pod, "/containers")
            .iter()
            .chain(array_at(pod, "/initContainers"))
        {
            for mount in array_at(container, "/volumeMounts") {
                if crate::bundle::csv::OLM_CERT_PATHS.contains(&str_at(mount, "/mountPath")) {
                    cert_volumes.insert(str_at(mount, "/name"));
                }
            }
        }
        for volume in array_at(pod, "/volumes") {
            let secret = str_at(volume, "/secret/secretName");
            if secret.is_empty() {
                continue;
            }
            self.mounted.insert(secret.to_owned());
            if cert_volumes.contains(str_at(volume, "/name")) {
                self.webhook_secrets.insert(secret.to_owned());
            }
        }
    }

    fn serves_webhooks(&self, certificate: &Sourced) -> bool {
        let secret = str_at(&certificate.value, "/spec/secretName");
        self.webhook_secrets.contains(secret)
            || array_at(&certificate.value, "/spec/dnsNames")
                .iter()
                .any(|name| {
                    let host = name.as_str().unwrap_or("");
                    let service = host.split('.').next().unwrap_or("");
                    self.webhook_services.contains(service)
                })
    }

    /// The finding for one cert-manager object (which is never shipped).
    pub fn decide(&self, object: &Sourced) -> Finding {
        let secret = str_at(&object.value, "/spec/secretName");
        let finding = match object.kind() {
            "Certificate" if self.serves_webhooks(object) => Finding::info(
                "input/cert-manager-replaced",
                format!("webhook serving certificate (Secret {secret}) left out: OLM creates, mounts and rotates webhook certificates itself"),
            ),
            "Certificate" if self.mounted.contains(secret) => Finding::error(
                "input/cert-manager-certificate",
                format!("OLM does not run cert-manager, so Secret {secret}, which a Deployment mounts, would never exist and the pod could not start"),
            )
            .hint(format!("remove the Secret {secret} volume and what uses it from the Deployment (e.g. kubebuilder's --metrics-cert-path; controller-runtime then serves metrics with a self-signed certificate), or ship the Secret")),
            "Certificate" => Finding::warning(
                "input/cert-manager-dropped",
                format!("Certificate left out: OLM does not run cert-manager, and nothing mounts its Secret {secret}"),
            ),
            kind => Finding::info(
                "input/cert-manager-replaced",
                format!("{kind} left out: it only issues certificates, which OLM handles itself for webhooks"),
            ),
        };
        object.finding(finding)
    }
}
