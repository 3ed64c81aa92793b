//! `helm template` output as the generator's input. Helm's own marks are read like this:
//!
//! - `# Source:` comments and empty documents are YAML comments and nothing: no effect.
//! - Hook objects (annotation `helm.sh/hook`): OLM never runs Helm hooks. Test hooks
//!   (`test`, `test-success`, `test-failure`) are dropped with a warning; delete and rollback
//!   hooks too (OLM has no such step, and the object would otherwise be created at install);
//!   install and upgrade hooks are an error naming the object — the work they do would never
//!   happen (hint: move it into the operator) — unless the plan says `helmHooks: drop`
//!   ([`olmpack_model::plan::Plan::helm_hooks`]): then they are left out with a warning each.
//! - A Secret with a TLS certificate that a webhook's Deployment mounts is the chart's
//!   self-generated webhook serving certificate (`genCA`/`genSignedCert`): OLM creates, mounts
//!   and rotates webhook certificates itself, so it is dropped with an info finding (a warning
//!   when it is mounted somewhere OLM does not mount its certificate).
//! - `helm.sh/chart` and `app.kubernetes.io/managed-by: Helm` labels are kept as they are.

use std::collections::BTreeSet;

use serde_json::Value;

use super::inputs::{Inputs, Sourced};
use crate::json::{array_at, str_at};
use olmpack_model::objects::{self, Object, Service};
use olmpack_model::plan::ErrorOrDrop;
use olmpack_model::report::Finding;

/// The annotation that makes an object a Helm hook.
pub const HOOK_ANNOTATION: &str = "helm.sh/hook";

/// Hook types that only `helm test` runs.
const TEST_HOOKS: [&str; 3] = ["test", "test-success", "test-failure"];
/// Hook types that run at install or upgrade: the operator would miss their work.
const INSTALL_HOOKS: [&str; 5] = [
    "pre-install",
    "post-install",
    "pre-upgrade",
    "post-upgrade",
    "crd-install",
];

/// Where OLM mounts the webhook serving certificates it manages.
const OLM_WEBHOOK_CERT_PATH: &str = "/tmp/k8s-webhook-server/serving-certs";

/// For a Helm hook object: the finding that drops it (warning) or refuses it (error, for an
/// install or upgrade hook unless `choice` is [`ErrorOrDrop::Drop`]).
pub fn hook(object: &Sourced, choice: ErrorOrDrop) -> Option<Finding> {
    let meta: Object = objects::view(&object.value);
    let annotation = meta.annotation(HOOK_ANNOTATION)?;
    let types: Vec<&str> = annotation
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    let field = format!("metadata.annotations.{HOOK_ANNOTATION}");
    let finding = match types.iter().find(|t| INSTALL_HOOKS.contains(t)) {
        Some(install) if choice == ErrorOrDrop::Error => Finding::error(
            "input/helm-hook",
            format!("a Helm {install} hook: OLM never runs Helm hooks, so this work would never happen"),
        )
        .hint("move the work into the operator (do it at startup or when reconciling), remove the hook annotation if the object is simply part of the install, or set `helmHooks: drop` in the plan to leave install and upgrade hooks out"),
        Some(install) => Finding::warning(
            "input/helm-hook-dropped",
            format!("a Helm {install} hook is left out (helmHooks: drop): OLM never runs Helm hooks, so the operator must do this work itself"),
        ),
        None if types.iter().all(|t| TEST_HOOKS.contains(t)) => Finding::warning(
            "input/helm-hook-dropped",
            "a Helm test hook is left out: only `helm test` runs it",
        ),
        None => Finding::warning(
            "input/helm-hook-dropped",
            format!("a Helm {annotation} hook is left out: OLM never runs Helm hooks"),
        ),
    };
    Some(object.finding(finding.field(field)))
}

/// Drops the chart's self-generated webhook serving certificate Secrets (see the module docs).
pub fn drop_webhook_cert_secrets(inputs: &mut Inputs) {
    let deployments: Vec<Sourced> = webhook_deployments(inputs).into_iter().cloned().collect();
    let mut notes = Vec::new();
    inputs.others.retain(|object| {
        if object.kind() != "Secret" || !holds_certificate(&object.value) {
            return true;
        }
        let mounts: Vec<String> = deployments
            .iter()
            .flat_map(|d| mount_paths(d, object.name()))
            .collect();
        if mounts.is_empty() {
            return true;
        }
        let finding = if mounts.iter().all(|p| p == OLM_WEBHOOK_CERT_PATH) {
            Finding::info(
                "input/webhook-cert-secret-dropped",
                "the chart's webhook serving certificate is left out: OLM creates, mounts and rotates webhook certificates itself",
            )
        } else {
            Finding::warning(
                "input/webhook-cert-secret-dropped",
                format!("the chart's webhook serving certificate is left out (OLM creates webhook certificates itself), but it is mounted at {}, not at {OLM_WEBHOOK_CERT_PATH} where OLM mounts its own", mounts.join(", ")),
            )
            .hint(format!("serve the webhook with the certificate in {OLM_WEBHOOK_CERT_PATH} (controller-runtime's default)"))
        };
        notes.push(object.finding(finding));
        false
    });
    inputs.notes.extend(notes);
}

/// A Secret of type `kubernetes.io/tls`, or with a `tls.crt` key.
fn holds_certificate(secret: &Value) -> bool {
    str_at(secret, "/type") == "kubernetes.io/tls"
        || ["data", "stringData"]
            .iter()
            .any(|k| secret.get(*k).and_then(|d| d.get("tls.crt")).is_some())
}

/// Deployments whose pods a webhook's (admission or conversion) Service selects.
fn webhook_deployments(inputs: &Inputs) -> Vec<&Sourced> {
    let mut services = BTreeSet::new();
    for config in inputs
        .validating_webhooks
        .iter()
        .chain(&inputs.mutating_webhooks)
    {
        for hook in array_at(&config.value, "/webhooks") {
            services.insert(objects::webhook_service(hook).name.unwrap_or_default());
        }
    }
    for crd in &inputs.crds {
        services.insert(crd.crd_v1().conversion_service_name().to_owned());
    }
    let selecting: Vec<Service> = (inputs.services.iter())
        .filter(|s| services.contains(s.name()))
        .map(Sourced::service)
        .collect();
    (inputs.deployments.iter())
        .filter(|d| {
            let deployment = d.deployment();
            selecting.iter().any(|s| s.selects(deployment.pod_labels()))
        })
        .collect()
}

/// Where the Deployment's containers mount Secret `secret`.
fn mount_paths(deployment: &Sourced, secret: &str) -> Vec<String> {
    let view = deployment.deployment();
    let Some(pod) = view.pod() else {
        return Vec::new();
    };
    let volumes = pod.secret_volumes(secret);
    let mut paths = pod.mount_paths(&volumes);
    if paths.is_empty() && !volumes.is_empty() {
        paths.push("(a volume no container mounts)".to_owned());
    }
    paths
}
