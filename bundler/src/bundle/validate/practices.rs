//! `good-practice/`, `security/` and `olmv1/` rules: what is legal but likely wrong, pods that
//! do not meet the restricted Pod Security Standard, and what OLM v1 handles differently.

use super::{Context, str_at};
use crate::bundle::files::{CHANNELS_KEY, DEFAULT_CHANNEL_KEY};
use olmpack_model::decode::text;
use olmpack_model::objects::{self, Container, DeploymentSpec, PolicyRule, SeccompProfile};
use olmpack_model::report::Finding;

pub(super) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    containers(ctx, out);
    descriptions(ctx, out);
    channels(ctx, out);
    meta_operator(ctx, out);
    olm_v1(ctx, out);
}

fn containers(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    for (i, d) in ctx.deployments().iter().enumerate() {
        let Some(pod) = d.spec.as_ref().and_then(DeploymentSpec::pod) else {
            continue;
        };
        let pod_field = format!("spec.install.spec.deployments[{i}].spec.template.spec");
        let pod_context = pod.security_context.as_ref();
        let defaults = PodDefaults {
            non_root: pod_context.and_then(|sc| sc.run_as_non_root) == Some(true),
            seccomp: SeccompProfile::is_restricted(
                pod_context.and_then(|sc| sc.seccomp_profile.as_ref()),
            ),
        };
        if pod.host_network == Some(true) || pod.host_pid == Some(true) {
            out.push(ctx.at(
                Finding::warning(
                    "security/host-namespaces",
                    "the pod shares the host's network or PID namespace",
                ),
                pod_field.clone(),
            ));
        }
        for (list, containers) in pod.container_lists() {
            for (j, c) in containers.iter().enumerate() {
                let field = format!("{pod_field}.{list}[{j}]");
                container(ctx, c, &field, defaults, out);
            }
        }
    }
}

/// What the pod's security context already settles for all its containers.
#[derive(Clone, Copy)]
struct PodDefaults {
    /// `runAsNonRoot: true` on the pod.
    non_root: bool,
    /// A RuntimeDefault or Localhost seccomp profile on the pod.
    seccomp: bool,
}

/// One container: resource requests, and the restricted pod security profile.
fn container(
    ctx: &Context<'_>,
    c: &Container,
    field: &str,
    pod: PodDefaults,
    out: &mut Vec<Finding>,
) {
    let name = c.name();
    let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref());
    if requests.and_then(|r| r.get("cpu")).is_none()
        || requests.and_then(|r| r.get("memory")).is_none()
    {
        out.push(ctx.at(
            Finding::warning(
                "good-practice/resource-requests",
                format!("container {name} has no CPU and memory requests"),
            ),
            format!("{field}.resources.requests"),
        ));
    }
    let sc = c.security_context.clone().unwrap_or_default();
    if sc.privileged == Some(true) {
        out.push(ctx.at(
            Finding::error(
                "security/privileged",
                format!("container {name} is privileged"),
            ),
            format!("{field}.securityContext.privileged"),
        ));
    }
    if sc.allow_privilege_escalation != Some(false) {
        out.push(ctx.at(
            Finding::warning(
                "security/restricted",
                format!("container {name} does not set allowPrivilegeEscalation: false"),
            ),
            format!("{field}.securityContext.allowPrivilegeEscalation"),
        ));
    }
    let drops = sc.capabilities.as_ref().and_then(|c| c.drop.as_ref());
    let drops_all = drops.is_some_and(|drop| drop.iter().any(|c| c == "ALL"));
    if !drops_all {
        out.push(ctx.at(
            Finding::warning(
                "security/restricted",
                format!("container {name} does not drop ALL capabilities"),
            ),
            format!("{field}.securityContext.capabilities.drop"),
        ));
    }
    if !pod.non_root && sc.run_as_non_root != Some(true) {
        out.push(ctx.at(
            Finding::warning(
                "security/restricted",
                format!("container {name} may run as root (runAsNonRoot is not true)"),
            ),
            format!("{field}.securityContext.runAsNonRoot"),
        ));
    }
    if !pod.seccomp && !SeccompProfile::is_restricted(sc.seccomp_profile.as_ref()) {
        out.push(ctx.at(
            Finding::warning(
                "security/restricted",
                format!("container {name} has no RuntimeDefault or Localhost seccomp profile"),
            ),
            format!("{field}.securityContext.seccompProfile"),
        ));
    }
}

fn descriptions(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let crds = ctx.spec.customresourcedefinitions.as_ref();
    for (list, given) in [
        ("owned", crds.and_then(|c| c.owned.as_ref())),
        ("required", crds.and_then(|c| c.required.as_ref())),
    ] {
        for (i, crd) in given.into_iter().flatten().enumerate() {
            if text(&crd.description).trim().is_empty() {
                out.push(ctx.at(
                    Finding::warning(
                        "good-practice/crd-description",
                        format!("{} has no description", text(&crd.name)),
                    ),
                    format!("spec.customresourcedefinitions.{list}[{i}].description"),
                ));
            }
        }
    }
}

fn channels(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let mut names: Vec<&str> = ctx
        .bundle
        .annotation(CHANNELS_KEY)
        .map(|c| c.split(',').map(str::trim).collect())
        .unwrap_or_default();
    names.extend(ctx.bundle.annotation(DEFAULT_CHANNEL_KEY));
    for name in names {
        if !name.is_empty()
            && !["candidate", "fast", "stable"]
                .iter()
                .any(|p| name.starts_with(p))
        {
            out.push(Finding::warning("good-practice/channel-name", format!("channel {name:?} does not start with candidate, fast or stable (OLM's channel naming convention)")).file("metadata/annotations.yaml").field(CHANNELS_KEY));
        }
    }
}

/// Operators that may create or patch CRDs can change other operators' APIs.
fn meta_operator(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    for (list, given) in ctx.permissions() {
        for (i, p) in given.iter().enumerate() {
            for (j, rule) in p.rules.iter().flatten().enumerate() {
                let rule: PolicyRule = objects::view(rule);
                if rule.allows(
                    &["apiextensions.k8s.io", "*"],
                    &["customresourcedefinitions", "*"],
                    &["create", "patch", "update", "*"],
                ) {
                    out.push(ctx.at(Finding::warning("good-practice/crd-write-permission", "the operator may create or change CustomResourceDefinitions; OLM manages CRDs, and an operator that writes them is a meta-operator"), format!("spec.install.spec.{list}[{i}].rules[{j}]")));
                }
            }
        }
    }
}

fn olm_v1(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let modes = ctx.spec.install_modes.as_deref().unwrap_or_default();
    let all = modes
        .iter()
        .any(|m| text(&m.type_) == "AllNamespaces" && m.supported == Some(true));
    if !modes.is_empty() && !all {
        out.push(ctx.at(Finding::warning("olmv1/install-mode", "AllNamespaces is not supported: OLM v1 installs registry+v1 bundles in AllNamespaces mode only (others need an alpha feature gate)"), "spec.installModes"));
    }
    let crds = ctx.spec.customresourcedefinitions.as_ref();
    if crds
        .and_then(|c| c.required.as_ref())
        .is_some_and(|r| !r.is_empty())
    {
        out.push(ctx.at(Finding::warning("olmv1/dependencies", "required CRDs: OLM v1 does not resolve dependencies and refuses bundles that declare them"), "spec.customresourcedefinitions.required"));
    }
    let api_services = ctx.spec.apiservicedefinitions.as_ref();
    if api_services
        .and_then(|a| a.owned.as_ref())
        .is_some_and(|o| !o.is_empty())
    {
        out.push(ctx.at(
            Finding::warning(
                "olmv1/api-services",
                "owned API services are not supported by OLM v1",
            ),
            "spec.apiservicedefinitions.owned",
        ));
    }
    for (i, dep) in ctx.bundle.dependencies.iter().flatten().enumerate() {
        let kind = str_at(dep, "/type");
        if matches!(kind, "olm.gvk" | "olm.package" | "olm.constraint") {
            out.push(Finding::warning("olmv1/dependencies", format!("dependency of type {kind}: OLM v1 refuses bundles that declare dependencies")).file("metadata/dependencies.yaml").field(format!("dependencies[{i}]")));
        }
    }
}
