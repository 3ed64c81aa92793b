//! Validating any registry+v1 bundle: everything operator-sdk's validators (CSV, CRD, bundle,
//! OperatorHub, capabilities, categories, good practices, deprecated APIs), opm's bundle
//! format rules and OLM v1's registry+v1 install checks look at — and what they miss (CRD
//! schema errors, a duplicated install mode, removed APIs after 1.26, a hard-coded CRD
//! conversion stanza, Dockerfile labels that drifted from annotations.yaml).
//!
//! Every finding carries a stable rule id (`family/name`), a severity, the file, the object
//! and the field path. Rule families:
//!
//! | family | what it checks |
//! |---|---|
//! | `bundle/` | layout, annotations, Dockerfile labels, object kinds, size limit |
//! | `csv/` | the ClusterServiceVersion's fields, examples, edges, images, install modes |
//! | `crd/` | CustomResourceDefinitions, including their schemas |
//! | `webhook/` | `webhookdefinitions`, including conversion webhooks |
//! | `operatorhub/` | OperatorHub metadata: provider, maintainers, links, icon, capabilities, categories |
//! | `deprecated-api/` | APIs removed by the targeted Kubernetes version |
//! | `good-practice/` | resource requests, descriptions, channel names, meta-operator permissions |
//! | `security/` | the restricted Pod Security Standard for the operator's pods |
//! | `olmv1/` | what OLM v1 refuses or handles differently |
//! | `openshift/` | with `--platform openshift-4.N`: OpenShift's version gates (catalogs, cluster upgrades) |
//!
//! Validation is pure: it reads a [`LoadedBundle`] and never touches the file system.
#![warn(missing_docs)]

pub mod consumers;
mod crd;
mod csv;
mod dependencies;
mod deprecated;
pub mod examples;
mod layout;
mod objects;
mod openshift;
mod operatorhub;
pub mod podstart;
mod practices;
mod webhooks;

use std::borrow::Cow;

use serde_json::Value;

use super::load::{LoadedBundle, Object};
use crate::json::{array_at, str_at};
use olmpack_model::csv::{
    ClusterServiceVersion, CsvSpec, StrategyDeployment, StrategyDetails, StrategyPermissions,
};
use olmpack_model::objects::ObjectMeta;
use olmpack_model::report::{Finding, Report, Severity};

/// What validation targets.
#[derive(Clone, Debug)]
pub struct Options {
    /// The Kubernetes version the bundle must install on (`major`, `minor`); APIs removed by
    /// then are errors, later removals warnings.
    pub kube_version: (u64, u64),
    /// Hold the bundle to OperatorHub's publishing rules: `operatorhub/` findings are errors
    /// (by default they are warnings, as OLM itself installs such bundles).
    pub operatorhub: bool,
    /// Every warning is an error (`--strict`).
    pub strict: bool,
    /// The OpenShift release to judge OpenShift's version gates against
    /// (`--platform openshift-4.N`); none: they are not judged.
    pub openshift: Option<olmpack_model::openshift::OpenShiftRelease>,
}

/// The newest Kubernetes minor olmpack knows (the version its tests run against).
pub const TARGET_KUBE_VERSION: (u64, u64) = (1, 37);

impl Default for Options {
    fn default() -> Self {
        Self {
            kube_version: TARGET_KUBE_VERSION,
            operatorhub: false,
            strict: false,
            openshift: None,
        }
    }
}

/// Validates `bundle` and returns every finding, sorted.
pub fn validate(bundle: &LoadedBundle, options: &Options) -> Report {
    let mut report = Report::new(bundle.dir.display().to_string());
    let mut out = Vec::new();
    let bundle = &*go_fields(bundle, &mut out);
    let ctx = Context::of(bundle);
    let spec = ctx.as_ref().map(|c| &c.spec);
    layout::check(bundle, spec, &mut out);
    dependencies::check(bundle, &mut out);
    if let Some(ctx) = &ctx {
        csv::check(ctx, &mut out);
        webhooks::check(ctx, &mut out);
        operatorhub::check(ctx, &mut out);
        practices::check(ctx, &mut out);
        podstart::check(ctx, &mut out);
    }
    crd::check_all(bundle, &mut out);
    objects::check(bundle, &mut out);
    deprecated::check(bundle, spec, options, &mut out);
    if let Some(release) = options.openshift {
        openshift::check(bundle, release, &mut out);
    }
    if !options.operatorhub {
        for finding in &mut out {
            if finding.rule.starts_with("operatorhub/") && finding.severity == Severity::Error {
                finding.severity = Severity::Warning;
            }
        }
    }
    consumers::apply(&mut out);
    if options.strict {
        consumers::strict(&mut out);
    }
    report.extend(out);
    report.normalize();
    report
}

/// The `webhook/` findings of `bundle` alone, as [`validate`] reports them: the upgrade check
/// judges conversion webhooks by these rules without running the rest of the validation.
pub fn webhook_findings(bundle: &LoadedBundle) -> Vec<Finding> {
    let bundle = &*go_fields(bundle, &mut Vec::new());
    let mut out = Vec::new();
    if let Some(ctx) = Context::of(bundle) {
        webhooks::check(&ctx, &mut out);
    }
    consumers::apply(&mut out);
    let mut report = Report::new(bundle.dir.display().to_string());
    report.extend(out);
    report.normalize();
    report.findings
}

/// The bundle as opm and OLM read it: CSV and CRD fields matched ignoring case (see
/// [`crate::bundle::fieldcase`]), each rename a warning. Borrowed when nothing is renamed.
fn go_fields<'a>(bundle: &'a LoadedBundle, out: &mut Vec<Finding>) -> Cow<'a, LoadedBundle> {
    let mut views = Vec::new();
    for (i, object) in bundle.objects.iter().enumerate() {
        let (view, renamed) = crate::bundle::fieldcase::go_view(&object.value);
        for r in &renamed {
            out.push(
                on(object, Finding::warning("bundle/field-case", r.message())).field(r.path()),
            );
        }
        if let Cow::Owned(value) = view {
            views.push((i, value));
        }
    }
    if views.is_empty() {
        return Cow::Borrowed(bundle);
    }
    let mut copy = bundle.clone();
    for (i, value) in views {
        copy.objects[i].value = value;
    }
    Cow::Owned(copy)
}

/// What the per-CSV checks share.
struct Context<'a> {
    bundle: &'a LoadedBundle,
    /// The CSV as read.
    csv: &'a Object,
    /// Its `spec`, typed (empty when absent).
    spec: CsvSpec,
    /// Its `metadata`, typed (empty when absent).
    meta: ObjectMeta,
}

impl<'a> Context<'a> {
    /// The CSV read once, for every check (`None` without a CSV). Fields of a type OLM does not
    /// read count as absent here; what OLM's decoder refuses is the install checks' to report.
    fn of(bundle: &'a LoadedBundle) -> Option<Self> {
        bundle.csv().map(|csv_object| {
            let (model, _) = ClusterServiceVersion::read(&csv_object.value);
            Context {
                bundle,
                csv: csv_object,
                spec: model.spec.unwrap_or_default(),
                meta: model.metadata.unwrap_or_default(),
            }
        })
    }
}

impl Context<'_> {
    /// `spec` as read, for the checks of what the typed model has no place for.
    fn raw_spec(&self) -> &Value {
        self.csv.value.get("spec").unwrap_or(&Value::Null)
    }

    /// The install strategy's details, when given.
    fn strategy(&self) -> Option<&StrategyDetails> {
        self.spec.strategy()
    }

    /// A finding about the CSV, located at `field`.
    fn at(&self, finding: Finding, field: impl Into<String>) -> Finding {
        on(self.csv, finding).field(field)
    }

    /// The strategy's `permissions` and `clusterPermissions` (empty when absent), each with
    /// its key.
    fn permissions(&self) -> [(&'static str, &[StrategyPermissions]); 2] {
        self.spec.permissions()
    }

    /// The install strategy's deployments, in order.
    fn deployments(&self) -> &[StrategyDeployment] {
        (self.strategy().and_then(|d| d.deployments.as_deref())).unwrap_or_default()
    }

    /// `metadata.annotations[key]`, when given as a string (possibly empty).
    fn annotation(&self, key: &str) -> Option<&str> {
        let annotations = self.meta.annotations.as_ref()?;
        annotations
            .get(key)
            .filter(|_| !annotations.was_null(key))
            .map(String::as_str)
    }
}

/// A finding located at an object (file and `Kind/name`).
fn on(object: &Object, finding: Finding) -> Finding {
    finding
        .file(object.file.clone())
        .object(object.display_name())
}
