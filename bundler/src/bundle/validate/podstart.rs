//! `csv/missing-volume-source`: the operator's pod needs a Secret or ConfigMap that neither
//! the bundle nor OLM creates. What the pod needs is read from the deployment as OLM v0 creates
//! it (its certificate mounts applied, see [`olmpack_model::pod::with_olm_certificates`]) and
//! as the kubelet reads it ([`olmpack_model::pod::required_references`]): only mounted volumes,
//! never `optional: true` references.
//!
//! Such an object is a prerequisite, not a refusal: OLM installs the bundle and the pod starts
//! once the user has created the object (the warning `csv/prerequisite` names it; `install/`
//! files list it too). One case is an error: a
//! Secret mounted where OLM mounts the serving certificates it issues
//! ([`olmpack_model::pod::OLM_CERT_MOUNTS`], kubebuilder's webhook certificate layout) on a
//! deployment OLM issues none for: in that layout cert-manager makes the Secret from a
//! Certificate, a kind a bundle cannot ship, so the pod waits forever
//! (`olm_e2e_broken_deployment_mounting_a_missing_secret_never_installs`).

use std::collections::BTreeSet;

use olmpack_model::pod::{self, Reference, SourceKind, Use};
use serde_json::{Value, json};

use super::Context;
use crate::bundle::load::LoadedBundle;
use olmpack_model::csv::CsvSpec;
use olmpack_model::decode::text;
use olmpack_model::objects::{self, DeploymentSpec};
use olmpack_model::report::Finding;

const RULE: &str = "csv/missing-volume-source";
/// The warning for an object the user creates before installing.
const PREREQUISITE: &str = "csv/prerequisite";
/// The warning for a certificate path no volume provides.
const UNMOUNTED: &str = "csv/unmounted-path";

/// Why a Secret or ConfigMap the pod needs is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// The user creates it before installing; the pod starts once it exists.
    Prerequisite,
    /// Only OpenShift's service CA creates it (from a bundle Service's annotation).
    OpenShiftOnly,
    /// A serving-certificate Secret at OLM's certificate path on a deployment OLM issues no
    /// certificate for: the pod cannot start.
    Uncertified,
}

/// A Secret or ConfigMap a deployment's pod needs that neither the bundle nor OLM creates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingObject {
    /// The deployment's index in the install strategy.
    pub deployment: usize,
    /// What the pod references, and how.
    pub reference: Reference,
    /// Why it is missing.
    pub why: Missing,
}

/// Every Secret and ConfigMap the CSV's deployments need that neither the bundle ships nor
/// OLM creates (module docs), in deployment and field order. Pure.
pub fn missing_objects(bundle: &LoadedBundle, spec: &CsvSpec) -> Vec<MissingObject> {
    let shipped: BTreeSet<(&str, &str)> = bundle
        .objects
        .iter()
        .filter(|o| matches!(o.kind(), "Secret" | "ConfigMap"))
        .map(|o| (o.kind(), o.name()))
        .collect();
    let certified = olm_certified(spec);
    let by_openshift = openshift_secrets(bundle);
    let mut out = Vec::new();
    for (i, name, as_created) in pods_as_created(spec) {
        let olm_secret = certified
            .contains(name)
            .then(|| format!("{name}-service-cert"));
        for r in pod::required_references(&as_created) {
            let is_secret = r.kind == SourceKind::Secret;
            if shipped.contains(&(r.kind.as_str(), r.name.as_str()))
                || (is_secret && olm_secret.as_deref() == Some(r.name.as_str()))
            {
                continue;
            }
            let why = if is_secret && by_openshift.contains(r.name.as_str()) {
                Missing::OpenShiftOnly
            } else if is_secret && at_cert_path(&r) {
                Missing::Uncertified
            } else {
                Missing::Prerequisite
            };
            out.push(MissingObject {
                deployment: i,
                reference: r,
                why,
            });
        }
    }
    out
}

/// Each deployment's pod spec as OLM v0 creates it (its certificate mounts applied), with
/// its index and name.
fn pods_as_created(spec: &CsvSpec) -> Vec<(usize, &str, Value)> {
    let certified = olm_certified(spec);
    let strategy = spec.install.as_ref().and_then(|i| i.spec.as_ref());
    let deployments = strategy.and_then(|s| s.deployments.as_deref());
    let mut out = Vec::new();
    for (i, deployment) in deployments.unwrap_or_default().iter().enumerate() {
        let name = text(&deployment.name);
        let pod = deployment.spec.as_ref().and_then(DeploymentSpec::pod);
        // The kubelet's view reads the pod spec as given (volumes, env), untyped.
        let pod_spec = pod.map_or(Value::Null, |p| json!(p));
        let as_created = match certified.contains(name) {
            true => pod::with_olm_certificates(&pod_spec, &format!("{name}-service-cert")),
            false => pod_spec,
        };
        out.push((i, name, as_created));
    }
    out
}

/// `csv/unmounted-path`: an argument or variable naming a certificate or key file under a
/// path no volume of its container is mounted at (see [`olmpack_model::container::unmounted_paths`]).
fn unmounted_paths(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    for (i, name, as_created) in pods_as_created(&ctx.spec) {
        let containers = as_created["containers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for found in olmpack_model::container::unmounted_paths(&as_created) {
            let index = containers
                .iter()
                .position(|c| c["name"].as_str() == Some(found.container.as_str()))
                .unwrap_or_default();
            let field = format!(
                "spec.install.spec.deployments[{i}].spec.template.spec.containers[{index}].{}",
                found.field
            );
            let finding = Finding::warning(
                UNMOUNTED,
                format!(
                    "container {} of deployment {name} is told {} {} but no volume is mounted there; unless the image holds that file the process cannot open it and the pod crash-loops",
                    found.container, found.name, found.path
                ),
            )
            .hint("mount a volume (a Secret with the certificate) at that path, or drop the argument");
            out.push(ctx.at(finding, field));
        }
    }
}

pub(super) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    unmounted_paths(ctx, out);
    for m in missing_objects(ctx.bundle, &ctx.spec) {
        let r = &m.reference;
        let field = format!(
            "spec.install.spec.deployments[{}].spec.template.spec.{}",
            m.deployment, r.field
        );
        let finding = match m.why {
            Missing::OpenShiftOnly => Finding::warning(
                RULE,
                format!(
                    "the pod needs Secret {}, which only OpenShift's service CA creates (from a Service annotation); elsewhere it cannot start",
                    r.name
                ),
            ),
            Missing::Uncertified => uncertified(r),
            Missing::Prerequisite => prerequisite(r),
        };
        out.push(ctx.at(finding, field));
    }
}

/// Whether the Secret is mounted where OLM mounts the serving certificates it issues.
fn at_cert_path(r: &Reference) -> bool {
    matches!(&r.used, Use::Mount { paths, .. }
        if paths.iter().any(|p| pod::OLM_CERT_MOUNTS.iter().any(|(_, at)| p.trim_end_matches('/') == *at)))
}

/// A serving-certificate Secret on a deployment OLM issues no certificate for.
fn uncertified(r: &Reference) -> Finding {
    Finding::error(
        RULE,
        format!(
            "the pod needs Secret {}, mounted where a webhook server reads its serving certificate; neither the bundle nor OLM creates it (OLM issues certificates only for deployments named by a webhook or an owned API service definition), so the pod cannot start",
            r.name
        ),
    )
    .hint("declare the webhooks in spec.webhookdefinitions (OLM then mounts its own certificate there), ship the Secret in the bundle, or mark the volume optional: true")
}

/// An object the user creates before installing.
fn prerequisite(r: &Reference) -> Finding {
    let how = match &r.used {
        Use::Mount { volume, .. } => format!("mounts it as volume {volume}"),
        Use::Env { container } => format!("reads it into the environment of container {container}"),
    };
    let kind = r.kind.as_str();
    Finding::warning(
        PREREQUISITE,
        format!(
            "prerequisite: create {kind} {} in the operator's namespace before installing; the pod {how} and neither the bundle nor OLM creates it, so the pod waits until it exists",
            r.name
        ),
    )
    .hint(format!("document {kind} {} as an install prerequisite, ship it in the bundle, or mark the reference optional: true", r.name))
}

/// The deployments OLM v0 issues a serving certificate for: those named by a webhook or an
/// owned API service definition.
fn olm_certified(spec: &CsvSpec) -> BTreeSet<&str> {
    let webhooks = spec.webhookdefinitions.iter().flatten();
    let api_services = spec.apiservicedefinitions.as_ref();
    let owned = api_services
        .and_then(|a| a.owned.as_ref())
        .into_iter()
        .flatten();
    (webhooks.map(|w| text(&w.deployment_name)))
        .chain(owned.map(|a| text(&a.deployment_name)))
        .filter(|d| !d.is_empty())
        .collect()
}

/// Secrets OpenShift's service CA creates for a bundle Service's serving-cert annotation.
fn openshift_secrets(bundle: &LoadedBundle) -> BTreeSet<String> {
    let services = bundle.objects.iter().filter(|o| o.kind() == "Service");
    let services = services.map(|o| objects::view::<objects::Object>(&o.value));
    services
        .flat_map(|o| {
            [
                "service.beta.openshift.io/serving-cert-secret-name",
                "service.alpha.openshift.io/serving-cert-secret-name",
            ]
            .map(|key| o.annotation(key).map(str::to_owned))
        })
        .flatten()
        .collect()
}
