//! `csv/missing-volume-source`: the operator's pod cannot start when it needs a Secret or
//! ConfigMap that nobody creates. The kubelet keeps such a pod in `ContainerCreating` (a
//! volume) or `CreateContainerConfigError` (an env reference) until the object appears; OLM
//! creates only the certificate Secrets it mounts itself, and the bundle only the objects it
//! ships. References marked `optional: true` are fine.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Context, array_at, str_at};
use crate::report::Finding;

const RULE: &str = "csv/missing-volume-source";

/// A Secret or ConfigMap a pod needs: `(kind, name, field path under the pod spec)`.
type Need = (&'static str, String, String);

pub(super) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let shipped: BTreeSet<(&str, &str)> = ctx
        .bundle
        .objects
        .iter()
        .filter(|o| matches!(o.kind(), "Secret" | "ConfigMap"))
        .map(|o| (o.kind(), o.name()))
        .collect();
    let by_olm = olm_secrets(ctx);
    let by_openshift = openshift_secrets(ctx);
    for (i, deployment) in ctx.deployments().iter().enumerate() {
        let pod = deployment
            .pointer("/spec/template/spec")
            .unwrap_or(&Value::Null);
        for (kind, name, at) in needs(pod) {
            if shipped.contains(&(kind, name.as_str()))
                || (kind == "Secret" && by_olm.contains(name.as_str()))
            {
                continue;
            }
            let field = format!("spec.install.spec.deployments[{i}].spec.template.spec.{at}");
            if kind == "Secret" && by_openshift.contains(name.as_str()) {
                out.push(ctx.at(
                    Finding::warning(
                        RULE,
                        format!("the pod needs Secret {name}, which only OpenShift's service CA creates (from a Service annotation); elsewhere it cannot start"),
                    ),
                    field,
                ));
                continue;
            }
            out.push(ctx.at(
                Finding::error(
                    RULE,
                    format!("the pod needs {kind} {name}, which neither the bundle nor OLM creates; it cannot start"),
                )
                .hint(format!("ship the {kind} in the bundle, mark the reference optional: true, or remove it")),
                field,
            ));
        }
    }
}

/// The serving-certificate Secrets OLM v0 creates: `<deployment>-service-cert` for each
/// deployment behind a webhook or an owned API service.
fn olm_secrets(ctx: &Context<'_>) -> BTreeSet<String> {
    let spec = ctx.spec();
    array_at(spec, "/webhookdefinitions")
        .iter()
        .chain(array_at(spec, "/apiservicedefinitions/owned"))
        .map(|d| str_at(d, "/deploymentName"))
        .filter(|d| !d.is_empty())
        .map(|d| format!("{d}-service-cert"))
        .collect()
}

/// Secrets OpenShift's service CA creates for a bundle Service's serving-cert annotation.
fn openshift_secrets<'a>(ctx: &Context<'a>) -> BTreeSet<&'a str> {
    ctx.bundle
        .objects
        .iter()
        .filter(|o| o.kind() == "Service")
        .flat_map(|o| {
            [
                "service.beta.openshift.io/serving-cert-secret-name",
                "service.alpha.openshift.io/serving-cert-secret-name",
            ]
            .map(|key| {
                o.value
                    .pointer("/metadata/annotations")
                    .and_then(|a| a.get(key))
                    .and_then(Value::as_str)
            })
        })
        .flatten()
        .collect()
}

fn required(reference: &Value) -> bool {
    reference.get("optional").and_then(Value::as_bool) != Some(true)
}

/// Every non-optional Secret/ConfigMap reference of a pod spec.
fn needs(pod: &Value) -> Vec<Need> {
    let mut out = Vec::new();
    for (v, volume) in array_at(pod, "/volumes").iter().enumerate() {
        if let Some(secret) = volume.get("secret").filter(|s| required(s)) {
            let at = format!("volumes[{v}].secret.secretName");
            out.push(("Secret", str_at(secret, "/secretName").to_owned(), at));
        }
        if let Some(map) = volume.get("configMap").filter(|s| required(s)) {
            let at = format!("volumes[{v}].configMap.name");
            out.push(("ConfigMap", str_at(map, "/name").to_owned(), at));
        }
        for (s, source) in array_at(volume, "/projected/sources").iter().enumerate() {
            let base = format!("volumes[{v}].projected.sources[{s}]");
            if let Some(secret) = source.get("secret").filter(|s| required(s)) {
                out.push((
                    "Secret",
                    str_at(secret, "/name").to_owned(),
                    format!("{base}.secret.name"),
                ));
            }
            if let Some(map) = source.get("configMap").filter(|s| required(s)) {
                out.push((
                    "ConfigMap",
                    str_at(map, "/name").to_owned(),
                    format!("{base}.configMap.name"),
                ));
            }
        }
    }
    for list in ["containers", "initContainers"] {
        for (c, container) in array_at(pod, &format!("/{list}")).iter().enumerate() {
            container_needs(container, &format!("{list}[{c}]"), &mut out);
        }
    }
    out.retain(|(_, name, _)| !name.is_empty());
    out
}

fn container_needs(container: &Value, base: &str, out: &mut Vec<Need>) {
    for (e, env) in array_at(container, "/env").iter().enumerate() {
        if let Some(r) = env
            .pointer("/valueFrom/secretKeyRef")
            .filter(|r| required(r))
        {
            let at = format!("{base}.env[{e}].valueFrom.secretKeyRef.name");
            out.push(("Secret", str_at(r, "/name").to_owned(), at));
        }
        if let Some(r) = env
            .pointer("/valueFrom/configMapKeyRef")
            .filter(|r| required(r))
        {
            let at = format!("{base}.env[{e}].valueFrom.configMapKeyRef.name");
            out.push(("ConfigMap", str_at(r, "/name").to_owned(), at));
        }
    }
    for (e, from) in array_at(container, "/envFrom").iter().enumerate() {
        if let Some(r) = from.get("secretRef").filter(|r| required(r)) {
            let at = format!("{base}.envFrom[{e}].secretRef.name");
            out.push(("Secret", str_at(r, "/name").to_owned(), at));
        }
        if let Some(r) = from.get("configMapRef").filter(|r| required(r)) {
            let at = format!("{base}.envFrom[{e}].configMapRef.name");
            out.push(("ConfigMap", str_at(r, "/name").to_owned(), at));
        }
    }
}
