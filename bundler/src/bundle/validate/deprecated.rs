//! `deprecated-api/` rules: objects (and CSV resource lists) using APIs that Kubernetes has
//! removed — every removal through the targeted version, not only up to 1.26.

use super::{Options, on};
use crate::bundle::load::LoadedBundle;
use olmpack_model::csv::CsvSpec;
use olmpack_model::decode::text;
use olmpack_model::objects::{self, PolicyRule};
use olmpack_model::report::{Finding, Severity};

/// `(group/version, kinds (empty = every kind), removed in minor, replacement)`.
const REMOVED: [(&str, &[&str], u64, &str); 24] = [
    (
        "apiextensions.k8s.io/v1beta1",
        &[],
        22,
        "apiextensions.k8s.io/v1",
    ),
    (
        "admissionregistration.k8s.io/v1beta1",
        &[
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ],
        22,
        "admissionregistration.k8s.io/v1",
    ),
    (
        "apiregistration.k8s.io/v1beta1",
        &[],
        22,
        "apiregistration.k8s.io/v1",
    ),
    (
        "authentication.k8s.io/v1beta1",
        &[],
        22,
        "authentication.k8s.io/v1",
    ),
    (
        "authorization.k8s.io/v1beta1",
        &[],
        22,
        "authorization.k8s.io/v1",
    ),
    (
        "certificates.k8s.io/v1beta1",
        &[],
        22,
        "certificates.k8s.io/v1",
    ),
    (
        "coordination.k8s.io/v1beta1",
        &[],
        22,
        "coordination.k8s.io/v1",
    ),
    (
        "extensions/v1beta1",
        &[],
        22,
        "apps/v1 or networking.k8s.io/v1",
    ),
    (
        "networking.k8s.io/v1beta1",
        &["Ingress", "IngressClass"],
        22,
        "networking.k8s.io/v1",
    ),
    (
        "rbac.authorization.k8s.io/v1beta1",
        &[],
        22,
        "rbac.authorization.k8s.io/v1",
    ),
    ("scheduling.k8s.io/v1beta1", &[], 22, "scheduling.k8s.io/v1"),
    (
        "storage.k8s.io/v1beta1",
        &["CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"],
        22,
        "storage.k8s.io/v1",
    ),
    ("batch/v1beta1", &["CronJob"], 25, "batch/v1"),
    ("discovery.k8s.io/v1beta1", &[], 25, "discovery.k8s.io/v1"),
    ("events.k8s.io/v1beta1", &[], 25, "events.k8s.io/v1"),
    ("autoscaling/v2beta1", &[], 25, "autoscaling/v2"),
    ("policy/v1beta1", &["PodDisruptionBudget"], 25, "policy/v1"),
    (
        "policy/v1beta1",
        &["PodSecurityPolicy"],
        25,
        "Pod Security Admission",
    ),
    ("node.k8s.io/v1beta1", &[], 25, "node.k8s.io/v1"),
    ("autoscaling/v2beta2", &[], 26, "autoscaling/v2"),
    (
        "flowcontrol.apiserver.k8s.io/v1beta1",
        &[],
        26,
        "flowcontrol.apiserver.k8s.io/v1",
    ),
    (
        "storage.k8s.io/v1beta1",
        &["CSIStorageCapacity"],
        27,
        "storage.k8s.io/v1",
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1beta2",
        &[],
        29,
        "flowcontrol.apiserver.k8s.io/v1",
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1beta3",
        &[],
        32,
        "flowcontrol.apiserver.k8s.io/v1",
    ),
];

fn removal(api_version: &str, kind: &str) -> Option<(u64, &'static str)> {
    REMOVED
        .iter()
        .find(|(gv, kinds, _, _)| *gv == api_version && (kinds.is_empty() || kinds.contains(&kind)))
        .map(|(_, _, minor, replacement)| (*minor, *replacement))
}

/// `spec`: the bundle's CSV, as the validators read it.
pub(super) fn check(
    bundle: &LoadedBundle,
    spec: Option<&CsvSpec>,
    options: &Options,
    out: &mut Vec<Finding>,
) {
    let target = options.kube_version;
    // A minKubeVersion at or past the removal makes it an error even for older targets.
    let csv = bundle.csv();
    let min_kube = spec
        .and_then(|s| {
            semver::Version::parse(text(&s.min_kube_version).trim_start_matches('v')).ok()
        })
        .map(|v| (v.major, v.minor));
    let severity = |minor: u64| {
        let removed = (1, minor);
        if target >= removed || min_kube.is_some_and(|m| m >= removed) {
            Severity::Error
        } else {
            Severity::Warning
        }
    };
    for object in &bundle.objects {
        if let Some((minor, replacement)) = removal(object.api_version(), object.kind()) {
            out.push(on(
                object,
                Finding::new(
                    "deprecated-api/removed",
                    severity(minor),
                    format!(
                        "{} {} was removed in Kubernetes 1.{minor}; use {replacement}",
                        object.api_version(),
                        object.kind()
                    ),
                )
                .field("apiVersion"),
            ));
        }
    }
    if let (Some(csv), Some(spec)) = (csv, spec) {
        for (list, crds) in spec.crd_lists() {
            for (i, crd) in crds.iter().enumerate() {
                for (j, resource) in crd.resources.iter().flatten().enumerate() {
                    let kind = text(&resource.kind);
                    let version = text(&resource.version);
                    for (gv, kinds, minor, replacement) in REMOVED.iter() {
                        let group_version_matches =
                            gv.ends_with(&format!("/{version}")) || *gv == version;
                        if group_version_matches && kinds.contains(&kind) {
                            out.push(on(csv, Finding::new("deprecated-api/removed", severity(*minor), format!("resource {kind} {version} was removed in Kubernetes 1.{minor}; use {replacement}")).field(format!("spec.customresourcedefinitions.{list}[{i}].resources[{j}]"))));
                        }
                    }
                }
            }
        }
        for (list, permissions) in spec.permissions() {
            for (i, p) in permissions.iter().enumerate() {
                for (j, rule) in p.rules.iter().flatten().enumerate() {
                    let rule: PolicyRule = objects::view(rule);
                    if rule.covers(&["policy"], &["podsecuritypolicies"]) {
                        out.push(on(csv, Finding::warning("deprecated-api/removed", "a rule grants access to PodSecurityPolicies, removed in Kubernetes 1.25").field(format!("spec.install.spec.{list}[{i}].rules[{j}]"))));
                    }
                }
            }
        }
    }
}
