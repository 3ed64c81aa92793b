//! `csv/missing-mount-source`: a deployment whose pods reference a Secret or ConfigMap that
//! neither the bundle nor OLM creates. The kubelet never starts such a pod (`FailedMount`,
//! `CreateContainerConfigError`), so OLM never marks the CSV `Succeeded` — every static check
//! of the objects themselves passes. The typical case is a kubebuilder project's manager
//! mounting `webhook-server-cert`, which its cert-manager Certificate used to create.
//!
//! What exists at install time: the bundle's own Secrets and ConfigMaps (OLM creates them),
//! `<deployment>-service-cert` for a deployment OLM wires webhooks or API services to, and
//! `kube-root-ca.crt` (published into every namespace by kube-controller-manager).

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Context, array_at, str_at};
use crate::report::Finding;

const RULE: &str = "csv/missing-mount-source";

pub(super) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let shipped = |kind: &str| -> BTreeSet<String> {
        ctx.bundle
            .objects
            .iter()
            .filter(|o| o.kind() == kind)
            .map(|o| str_at(&o.value, "/metadata/name").to_owned())
            .collect()
    };
    let secrets = shipped("Secret");
    let mut config_maps = shipped("ConfigMap");
    config_maps.insert("kube-root-ca.crt".to_owned());
    let served: BTreeSet<&str> = array_at(ctx.spec(), "/webhookdefinitions")
        .iter()
        .chain(array_at(ctx.spec(), "/apiservicedefinitions/owned").iter())
        .map(|d| str_at(d, "/deploymentName"))
        .collect();
    for (i, deployment) in ctx.deployments().iter().enumerate() {
        let name = str_at(deployment, "/name");
        let mut secrets = secrets.clone();
        if served.contains(name) {
            secrets.insert(format!("{name}-service-cert"));
        }
        let pod = deployment
            .pointer("/spec/template/spec")
            .unwrap_or(&Value::Null);
        let field = format!("spec.install.spec.deployments[{i}].spec.template.spec");
        for r in references(pod, &field) {
            let known = if r.kind == "Secret" {
                &secrets
            } else {
                &config_maps
            };
            if !known.contains(&r.name) {
                out.push(missing(ctx, name, &r));
            }
        }
    }
}

/// A non-optional reference from a pod spec.
struct Reference {
    kind: &'static str,
    name: String,
    /// Where, in the CSV.
    field: String,
    /// What uses it: `volume "x"` or `container "c"`.
    user: String,
}

fn missing(ctx: &Context<'_>, deployment: &str, r: &Reference) -> Finding {
    let hint = if r.kind == "Secret" && r.name.contains("cert") {
        format!(
            "OLM generates the webhook serving certificate itself: declare the webhooks in spec.webhookdefinitions with deploymentName {deployment} and OLM creates Secret {deployment}-service-cert and mounts it at /tmp/k8s-webhook-server/serving-certs; drop this volume (cert-manager Certificates are not part of an OLM bundle)"
        )
    } else {
        format!(
            "ship the {} in the bundle's manifests/, or mark the reference optional",
            r.kind
        )
    };
    ctx.at(
        Finding::error(
            RULE,
            format!(
                "deployment {deployment}: {} uses {} {:?}, which neither the bundle nor OLM creates; the kubelet never starts its pods, so OLM v0 never marks the CSV Succeeded",
                r.user, r.kind, r.name
            ),
        ),
        r.field.clone(),
    )
    .hint(hint)
}

fn optional(v: &Value) -> bool {
    v.get("optional").and_then(Value::as_bool) == Some(true)
}

fn references(pod: &Value, field: &str) -> Vec<Reference> {
    let mut out = Vec::new();
    for (i, volume) in array_at(pod, "/volumes").iter().enumerate() {
        let user = format!("volume {:?}", str_at(volume, "/name"));
        let at = format!("{field}.volumes[{i}]");
        if let Some(s) = volume.get("secret").filter(|s| !optional(s)) {
            let name = str_at(s, "/secretName").to_owned();
            out.push(Reference {
                kind: "Secret",
                name,
                field: format!("{at}.secret.secretName"),
                user: user.clone(),
            });
        }
        if let Some(c) = volume.get("configMap").filter(|c| !optional(c)) {
            let name = str_at(c, "/name").to_owned();
            out.push(Reference {
                kind: "ConfigMap",
                name,
                field: format!("{at}.configMap.name"),
                user: user.clone(),
            });
        }
        for (j, source) in array_at(volume, "/projected/sources").iter().enumerate() {
            let at = format!("{at}.projected.sources[{j}]");
            if let Some(s) = source.get("secret").filter(|s| !optional(s)) {
                let name = str_at(s, "/name").to_owned();
                out.push(Reference {
                    kind: "Secret",
                    name,
                    field: format!("{at}.secret.name"),
                    user: user.clone(),
                });
            }
            if let Some(c) = source.get("configMap").filter(|c| !optional(c)) {
                let name = str_at(c, "/name").to_owned();
                out.push(Reference {
                    kind: "ConfigMap",
                    name,
                    field: format!("{at}.configMap.name"),
                    user: user.clone(),
                });
            }
        }
    }
    for list in ["containers", "initContainers"] {
        for (i, c) in array_at(pod, &format!("/{list}")).iter().enumerate() {
            container_references(c, &format!("{field}.{list}[{i}]"), &mut out);
        }
    }
    out
}

fn container_references(c: &Value, at: &str, out: &mut Vec<Reference>) {
    let user = format!("container {:?}", str_at(c, "/name"));
    for (j, env) in array_at(c, "/env").iter().enumerate() {
        for (key, kind) in [("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")] {
            if let Some(r) = env
                .pointer(&format!("/valueFrom/{key}"))
                .filter(|r| !optional(r))
            {
                out.push(Reference {
                    kind,
                    name: str_at(r, "/name").to_owned(),
                    field: format!("{at}.env[{j}].valueFrom.{key}.name"),
                    user: user.clone(),
                });
            }
        }
    }
    for (j, env) in array_at(c, "/envFrom").iter().enumerate() {
        for (key, kind) in [("secretRef", "Secret"), ("configMapRef", "ConfigMap")] {
            if let Some(r) = env.get(key).filter(|r| !optional(r)) {
                out.push(Reference {
                    kind,
                    name: str_at(r, "/name").to_owned(),
                    field: format!("{at}.envFrom[{j}].{key}.name"),
                    user: user.clone(),
                });
            }
        }
    }
}
