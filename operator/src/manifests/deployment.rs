//! The operator's Deployment and its webhook Service.
//!
//! The serving certificate is mounted where OLM puts it
//! (`/apiserver.local.config/certificates/apiserver.{crt,key}`) from a volume named
//! `apiservice-cert`, the name OLM gives the volume it injects, so that under OLM the
//! injected volume takes this one's place. Outside OLM the Secret [`CERT_SECRET`] (type
//! `kubernetes.io/tls`, e.g. from cert-manager) provides it.

use serde_json::{Value, json};

use super::{CERT_DIR, METRICS_PORT, NAME, SERVICE_NAME, WEBHOOK_PORT, labels, selector_labels};
use crate::releases::OperatorRelease;

/// Secret with the webhook serving certificate (`tls.crt`, `tls.key`) outside OLM.
pub const CERT_SECRET: &str = "webapp-operator-webhook-cert";
/// Name of the certificate volume (OLM's name for the volume it injects).
pub const CERT_VOLUME: &str = "apiservice-cert";

/// The operator's Deployment: two replicas (one leader), restricted pod security.
pub fn deployment(release: &OperatorRelease, namespace: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": NAME,
            "namespace": namespace,
            "labels": labels(release.version),
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": selector_labels()},
            "template": {
                "metadata": {"labels": labels(release.version)},
                "spec": {
                    "serviceAccountName": NAME,
                    "automountServiceAccountToken": true,
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": {
                        "runAsNonRoot": true,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [manager_container(release)],
                    "volumes": [cert_volume()],
                },
            },
        },
    })
}

/// The `manager` container: the operator binary with leader election, webhook and metrics
/// ports, probes, requests and limits, and a restricted security context.
fn manager_container(release: &OperatorRelease) -> Value {
    json!({
        "name": "manager",
        "image": release.image(),
        "imagePullPolicy": "IfNotPresent",
        "args": [
            "run",
            format!("--cert-dir={CERT_DIR}"),
            format!("--webhook-port={WEBHOOK_PORT}"),
            format!("--metrics-port={METRICS_PORT}"),
            "--leader-elect",
            "--log-format=json",
        ],
        "env": [
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
        "ports": [
            {"name": "webhook", "containerPort": WEBHOOK_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
        ],
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": "metrics"},
            "periodSeconds": 10,
        },
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": "metrics"},
            "periodSeconds": 5,
        },
        "resources": {
            "requests": {"cpu": "10m", "memory": "64Mi"},
            "limits": {"cpu": "500m", "memory": "128Mi"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "runAsNonRoot": true,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [{
            "name": CERT_VOLUME,
            "mountPath": CERT_DIR,
            "readOnly": true,
        }],
    })
}

/// The webhook serving certificate, mounted from [`CERT_SECRET`] under the file names OLM
/// uses for the certificate it injects.
fn cert_volume() -> Value {
    json!({
        "name": CERT_VOLUME,
        "secret": {
            "secretName": CERT_SECRET,
            "items": [
                {"key": "tls.crt", "path": "apiserver.crt"},
                {"key": "tls.key", "path": "apiserver.key"},
            ],
        },
    })
}

/// The Service in front of the webhook server (port 443 → container port `webhook`).
pub fn service(release: &OperatorRelease, namespace: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": SERVICE_NAME,
            "namespace": namespace,
            "labels": labels(release.version),
        },
        "spec": {
            "selector": selector_labels(),
            "ports": [{"name": "https", "port": 443, "targetPort": "webhook", "protocol": "TCP"}],
        },
    })
}
