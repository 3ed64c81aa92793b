//! The severity model: an error names who refuses the input or breaks on it.
//!
//! Every rule that may report an error is listed in [`RULES`] with its [`Consumer`]; a test
//! shows that consumer refusing the same input (see `bundler/tests/bundle_consumers.rs`).
//! [`apply`] stamps the consumer on every error, and turns an error from a rule that is not
//! listed into a warning: without a consumer, a finding is an opinion. `--strict` then turns
//! warnings back into errors for those who want them.

use olmpack_model::report::{Consumer, Finding, Severity};

/// `(rule id, who refuses)` for every rule that reports errors. Rules that once were here and
/// are warnings until a test shows their consumer refusing: `bundle/dependency` (opm renders
/// and validates an unknown dependency type), `security/privileged` (the API server admits a
/// privileged pod unless the namespace enforces a Pod Security level), and the OLM v0/v1
/// install checks `bundle/multiple-csvs`, `bundle/unreadable-file`, `bundle/duplicate-object`,
/// `bundle/size`, `bundle/annotation-value` and `crd/duplicate` (opm accepts them; no test runs
/// them through OLM yet). OLM v0 installs bundles with `csv/no-deployments`,
/// `csv/duplicate-deployment`, `bundle/service-account-conflict` and `csv/crd-not-owned`
/// (shown in `bundle_consumers.rs`), so those are warnings for good. `csv/api-version` is a warning because OLM finds
/// the CSV by its kind and sends it with its own Go type: published bundles with `apiVersion:
/// v1alpha1` install.
pub const RULES: &[(&str, Consumer)] = &[
    // opm's bundle loader and `opm render`/`opm validate`.
    ("bundle/annotation-missing", Consumer::Opm),
    ("bundle/missing-annotations", Consumer::Opm),
    ("bundle/no-csv", Consumer::Opm),
    ("bundle/no-manifests", Consumer::Opm),
    ("bundle/package-name", Consumer::Opm),
    ("csv/owned-crd", Consumer::Opm),
    ("csv/owned-crd-not-in-bundle", Consumer::Opm),
    ("csv/version", Consumer::Opm),
    ("csv/replaces", Consumer::Opm),
    ("csv/skips", Consumer::Opm),
    ("csv/skip-range", Consumer::Opm),
    // The API server, on the bundle's objects, the CSV (OLM's CRD) and what OLM creates from it.
    ("bundle/object-metadata", Consumer::KubeApiserver),
    ("bundle/object-name", Consumer::KubeApiserver),
    ("crd/api-version", Consumer::KubeApiserver),
    ("crd/conversion", Consumer::KubeApiserver),
    ("crd/group", Consumer::KubeApiserver),
    ("crd/name", Consumer::KubeApiserver),
    ("crd/names", Consumer::KubeApiserver),
    ("crd/printer-columns", Consumer::KubeApiserver),
    ("crd/schema", Consumer::KubeApiserver),
    ("crd/scope", Consumer::KubeApiserver),
    ("crd/storage-version", Consumer::KubeApiserver),
    ("crd/subresources", Consumer::KubeApiserver),
    ("crd/versions", Consumer::KubeApiserver),
    ("csv/name", Consumer::KubeApiserver),
    ("csv/missing-field", Consumer::KubeApiserver),
    ("csv/deployment-name", Consumer::KubeApiserver),
    ("csv/permissions", Consumer::KubeApiserver),
    ("csv/annotation-type", Consumer::KubeApiserver),
    ("deprecated-api/removed", Consumer::KubeApiserver),
    ("webhook/side-effects", Consumer::KubeApiserver),
    ("webhook/review-versions", Consumer::KubeApiserver),
    ("webhook/name", Consumer::KubeApiserver),
    ("webhook/port", Consumer::KubeApiserver),
    ("webhook/conversion-crds", Consumer::KubeApiserver),
    ("csv/field-type", Consumer::KubeApiserver),
    // The API server, on the CSV's examples created from a console.
    ("csv/example-invalid", Consumer::KubeApiserver),
    ("csv/example-not-served", Consumer::KubeApiserver),
    ("webhook/type", Consumer::KubeApiserver),
    // OLM v0's install of the CSV.
    ("csv/install-modes", Consumer::OlmV0),
    ("csv/install-strategy", Consumer::OlmV0),
    ("csv/min-kube-version", Consumer::OlmV0),
    ("webhook/rules", Consumer::OlmV0),
    ("bundle/unsupported-kind", Consumer::OlmV0),
    ("webhook/conversion-install-modes", Consumer::OlmV0),
    ("webhook/deployment", Consumer::OlmV0),
    // What the installed operator needs to run.
    ("csv/container-image", Consumer::PodCannotStart),
    ("csv/missing-volume-source", Consumer::PodCannotStart),
];

/// The consumer of `rule`, when it has one.
pub fn consumer(rule: &str) -> Option<Consumer> {
    if rule.starts_with("operatorhub/") {
        return Some(Consumer::OperatorHub);
    }
    RULES.iter().find(|(r, _)| *r == rule).map(|(_, c)| *c)
}

/// Stamps each error with its consumer; errors without one become warnings.
pub fn apply(findings: &mut [Finding]) {
    for finding in findings.iter_mut() {
        if finding.severity != Severity::Error {
            continue;
        }
        match consumer(&finding.rule) {
            Some(consumer) => finding.consumer = Some(consumer),
            None => finding.severity = Severity::Warning,
        }
    }
}

/// `--strict`: every warning is an error.
pub fn strict(findings: &mut [Finding]) {
    for finding in findings.iter_mut() {
        if finding.severity == Severity::Warning {
            finding.severity = Severity::Error;
        }
    }
}
