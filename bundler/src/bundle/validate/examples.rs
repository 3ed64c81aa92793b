//! The CSV's examples (`alm-examples`, which carry the plan's samples) against the bundle's
//! own CRDs, as kube-apiserver creates them ([`crate::bundle::cr_schema`]): a console that
//! offers an example the apiserver refuses offers a form that cannot be submitted.
//!
//! For each example whose group and kind a CRD of the bundle defines:
//! - `csv/example-not-served`: the CRD does not serve the example's version (the apiserver
//!   has no such resource);
//! - `csv/example-invalid`: the example as stored (defaults applied) breaks the version's
//!   schema or has no `metadata.name`, one finding per reason, in the apiserver's words;
//! - `csv/example-mutated` (warning): it would be refused, but a mutating admission webhook
//!   of the CSV changes such objects before the apiserver validates them;
//! - `csv/example-cel-not-evaluated` (info): the version's schema has CEL rules, which are
//!   not evaluated statically.
//!
//! Unknown fields are not findings: the apiserver prunes them. Examples of kinds no CRD of
//! the bundle defines are `csv/example-not-owned`'s.

use std::collections::BTreeSet;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use serde_json::Value;

use super::Context;
use crate::bundle::cr_schema::{Invalid, as_created, has_cel_rules, validate_object};
use crate::bundle::load::Crd;
use olmpack_model::csv::ClusterServiceVersion;
use olmpack_model::objects::Identity;
use olmpack_model::report::Finding;

/// Where the examples are.
const FIELD: &str = "metadata.annotations.alm-examples";

/// A CRD of the bundle, typed as the apiserver reads it.
struct BundleCrd {
    crd: CustomResourceDefinition,
    /// Written as apiextensions.k8s.io/v1beta1 (its findings are warnings: no current
    /// apiserver installs it as written).
    legacy: bool,
}

/// What kube-apiserver does with one example, judged statically.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judged {
    /// No CRD given defines the example's group and kind.
    NotDefined,
    /// The CRD (named) defines its kind but does not serve its version.
    NotServed(String),
    /// The CRD (named) serves it: every reason the apiserver refuses it (none: it creates
    /// it), and whether CEL rules that were not evaluated apply too.
    Served {
        /// The CRD's name.
        crd: String,
        /// Why the apiserver refuses it, in its words (empty: it is created).
        refusals: Vec<Invalid>,
        /// The version's schema has CEL rules, not evaluated here.
        cel: bool,
    },
}

/// What kube-apiserver does when `example` is created with `crds` installed (statically):
/// the example as stored (defaults applied, `status` dropped under a status subresource)
/// against the schema of the version it is written in, and its `metadata.name`.
pub fn judge(example: &Value, crds: &[CustomResourceDefinition]) -> Judged {
    let id = Identity::of(example);
    let (group, version) = id
        .api_version
        .split_once('/')
        .unwrap_or(("", id.api_version));
    let Some(crd) = crds
        .iter()
        .find(|c| c.spec.group == group && c.spec.names.kind == id.kind)
    else {
        return Judged::NotDefined;
    };
    let name = crd.metadata.name.clone().unwrap_or_default();
    let Some(served) = crd
        .spec
        .versions
        .iter()
        .find(|v| v.name == version && v.served)
    else {
        return Judged::NotServed(name);
    };
    let mut refusals = metadata_problems(example);
    let mut cel = false;
    if let Some(root) = schema(served) {
        cel = has_cel_rules(root);
        let status = served
            .subresources
            .as_ref()
            .is_some_and(|s| s.status.is_some());
        refusals.extend(validate_object(&as_created(example, root, status), root));
    }
    Judged::Served {
        crd: name,
        refusals,
        cel,
    }
}

/// Checks every example against the bundle's CRDs.
pub(super) fn check(ctx: &Context<'_>, examples: &[Value], out: &mut Vec<Finding>) {
    let crds: Vec<BundleCrd> = ctx
        .bundle
        .crds()
        .filter_map(|crd: Crd<'_>| {
            let legacy = crd.is_v1beta1();
            let typed = serde_json::from_value(crd.v1.into_owned()).ok()?;
            Some(BundleCrd { crd: typed, legacy })
        })
        .collect();
    let typed: Vec<CustomResourceDefinition> = crds.iter().map(|c| c.crd.clone()).collect();
    let mutated = mutated_resources(&ClusterServiceVersion::read(&ctx.csv.value).0);
    let mut cel_noted = BTreeSet::new();
    for (index, example) in examples.iter().enumerate() {
        let judged = judge(example, &typed);
        let (Judged::NotServed(crd) | Judged::Served { crd, .. }) = &judged else {
            continue;
        };
        let bundle_crd = crds
            .iter()
            .find(|c| c.crd.metadata.name.as_deref() == Some(crd));
        let about = Example {
            ctx,
            index,
            example,
            legacy: bundle_crd.is_some_and(|c| c.legacy),
        };
        let mutates = bundle_crd.is_some_and(|c| covers(&mutated, &c.crd));
        match judged {
            Judged::NotDefined => {}
            Judged::NotServed(crd) => out.push(about.not_served(&crd)),
            Judged::Served { crd, refusals, cel } => {
                let version = about.version();
                if cel && cel_noted.insert((crd.clone(), version.to_owned())) {
                    let message = format!(
                        "the {version} schema of CRD {crd} has CEL rules (x-kubernetes-validations): they were not evaluated statically; kube-apiserver runs them when an example is created"
                    );
                    out.push(about.finding("csv/example-cel-not-evaluated", message, None));
                }
                out.extend(about.refused(&refusals, mutates));
            }
        }
    }
}

fn schema(
    version: &CustomResourceDefinitionVersion,
) -> Option<&k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps> {
    version.schema.as_ref()?.open_api_v3_schema.as_ref()
}

/// What the apiserver refuses in the example's `metadata` before its schema: a missing name.
fn metadata_problems(example: &Value) -> Vec<Invalid> {
    let meta = example.get("metadata");
    let named = ["name", "generateName"].iter().any(|k| {
        meta.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    });
    if named {
        return Vec::new();
    }
    vec![Invalid {
        path: "metadata.name".into(),
        message: "Required value: name or generateName is required".into(),
    }]
}

/// One example, for its findings.
struct Example<'a> {
    ctx: &'a Context<'a>,
    index: usize,
    example: &'a Value,
    legacy: bool,
}

impl Example<'_> {
    /// The version the example is written in.
    fn version(&self) -> &str {
        let id = Identity::of(self.example);
        id.api_version.split_once('/').map_or("", |(_, v)| v)
    }

    /// `csv/example-not-served`: its CRD `crd` does not serve its version.
    fn not_served(&self, crd: &str) -> Finding {
        let id = Identity::of(self.example);
        let message = format!(
            "example {} ({}): CRD {crd} defines {} but does not serve {}: kube-apiserver has no such resource to create it in",
            self.index,
            self.label(),
            id.kind,
            id.api_version
        );
        self.finding("csv/example-not-served", message, None)
    }

    /// One `csv/example-invalid` per refusal; or, when a mutating admission webhook of the
    /// CSV covers its kind, one `csv/example-mutated` warning (the webhook may fix it first).
    fn refused(&self, refusals: &[Invalid], mutates: bool) -> Vec<Finding> {
        let i = self.index;
        if mutates && let Some(first) = refusals.first() {
            let message = format!(
                "kube-apiserver refuses example {i} ({}) as written ({}), but a mutating admission webhook of this CSV changes {} objects before they are validated: whether it is created depends on the webhook (`olmpack upgrade test` registers it)",
                self.label(),
                first.text(),
                Identity::of(self.example).kind
            );
            return vec![self.finding("csv/example-mutated", message, Some(&first.path))];
        }
        refusals
            .iter()
            .map(|problem| {
                let message = format!(
                    "kube-apiserver refuses example {i} ({}): {}",
                    self.label(),
                    problem.text()
                );
                self.finding("csv/example-invalid", message, Some(&problem.path))
            })
            .collect()
    }

    /// `APIVERSION KIND NAME` (`(unnamed)` without a name).
    fn label(&self) -> String {
        let id = Identity::of(self.example);
        let name = if id.name.is_empty() {
            "(unnamed)"
        } else {
            id.name
        };
        format!("{} {} {name}", id.api_version, id.kind)
    }

    /// A finding at the example (and `path` inside it), an error unless its CRD is v1beta1
    /// or the rule is the CEL note.
    fn finding(&self, rule: &str, message: String, path: Option<&str>) -> Finding {
        let finding = match rule {
            "csv/example-cel-not-evaluated" => Finding::info(rule, message),
            "csv/example-mutated" => Finding::warning(rule, message),
            _ if self.legacy => Finding::warning(rule, message),
            _ => Finding::error(rule, message),
        };
        let mut field = format!("{FIELD}[{}]", self.index);
        if let Some(path) = path.filter(|p| !p.is_empty()) {
            field = format!("{field}.{path}");
        }
        self.ctx.at(finding, field)
    }
}

/// The `(group, resource)` pairs the CSV's mutating admission webhooks cover.
pub fn mutated_resources(csv: &ClusterServiceVersion) -> Vec<(String, String)> {
    let definitions = (csv.spec.as_ref())
        .and_then(|spec| spec.webhookdefinitions.as_deref())
        .unwrap_or_default();
    let mut out = Vec::new();
    for definition in definitions {
        if definition.type_.as_deref() != Some("MutatingAdmissionWebhook") {
            continue;
        }
        for rule in definition.rules.as_deref().unwrap_or_default() {
            let list = |key: &str| -> Vec<String> {
                rule.get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            };
            for group in list("apiGroups") {
                for resource in list("resources") {
                    out.push((group.clone(), resource));
                }
            }
        }
    }
    out
}

/// Whether `mutated` (see [`mutated_resources`]) covers the objects of `crd`.
pub fn covers(mutated: &[(String, String)], crd: &CustomResourceDefinition) -> bool {
    let (group, plural) = (&crd.spec.group, &crd.spec.names.plural);
    mutated.iter().any(|(g, r)| {
        (g == "*" || g == group) && (r == "*" || r == plural || r == &format!("{plural}/*"))
    })
}
