//! OLM v0's CRD checks when an InstallPlan replaces a CRD (the catalog operator's CRD step).
//!
//! - SafeStorageVersionUpgrade: every entry of the installed CRD's `status.storedVersions`
//!   must still be a version of the new CRD. That is the same condition as OLM v1's
//!   `storedVersionRemoval`, so [`super::olm_v1::check`] reports it once, refused by both.
//! - Existing objects: OLM v0 lists every object at every version that is served by both CRDs
//!   and validates it against the new schema of that version; one invalid object fails the
//!   InstallPlan. Statically, the objects are the installed release's examples (CSV
//!   `alm-examples`, the plan's samples), each at the version it is written in and — when the
//!   installed CRD has no conversion webhook, so the apiserver serves it unchanged — at every
//!   other version both CRDs serve; one already
//!   invalid under the installed schema cannot exist on a cluster and is skipped (an info
//!   says so). When the new
//!   CRD converts through a webhook OLM v0 only warns (it trusts the webhook to fix them).
//!   CEL rules are not evaluated (OLM v0 does not run them either); an info says so.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use serde_json::Value;

use super::{PairInput, Problem, RefusedBy, olm_v1};
use crate::bundle::cr_schema::{Invalid, as_created, has_cel_rules, validate_object};
use olmpack_model::objects::Identity;
use olmpack_model::report::Severity;
use olmpack_model::upgrade::EXISTING_OBJECT_INVALID;

/// `crd-upgrade/` + the shared rule [`EXISTING_OBJECT_INVALID`]'s name.
const EXISTING_OBJECT_RULE: &str = "crd-upgrade/existing-object-invalid";

/// OLM v0's existing-object check on the examples of `input.from`.
pub fn check<'a>(input: &PairInput<'a>) -> Vec<Problem> {
    let crd = input.to.metadata.name.clone().unwrap_or_default();
    let webhook = olm_v1::has_webhook(input.to);
    let mut out = Vec::new();
    let mut cel_versions = Vec::new();
    for example in input.examples {
        let Some(written) = example_version(example, input) else {
            continue;
        };
        for version in versions_seen(&written, input.from) {
            // Reported as a served-version removal when `to` no longer serves it.
            let (Some(old_root), Some(root)) = (
                served_schema(input.from, &version),
                served_schema(input.to, &version),
            ) else {
                continue;
            };
            if has_cel_rules(root) && !cel_versions.contains(&version) {
                cel_versions.push(version.clone());
            }
            // As the installed release stored it: its defaults applied, its nulls pruned.
            let seen = seen_at(example, input.from, &version);
            let seen = as_created(&seen, old_root, has_status(input.from, &version));
            let target = Example {
                crd: &crd,
                version: &version,
                written: &written,
                object: &seen,
            };
            let invalid_now = validate_object(&seen, root);
            if input.mutated && !invalid_now.is_empty() {
                out.push(target.stored_as_mutated(&invalid_now[0]));
                continue;
            }
            if version == written && !validate_object(&seen, old_root).is_empty() {
                // Such an object cannot exist on a cluster running `from`: not this upgrade's
                // problem, at any version.
                out.push(target.already_invalid(old_root));
                break;
            }
            for invalid in invalid_now {
                out.push(target.invalid_after_upgrade(&invalid, webhook));
            }
        }
    }
    for version in cel_versions {
        out.push(Problem {
            rule: "crd-upgrade/cel-not-evaluated",
            crd: crd.clone(),
            version: Some(version.clone()),
            path: None,
            message: format!("the new {version} schema has CEL rules (x-kubernetes-validations); the examples were not checked against them (OLM v0 does not run them either, kube-apiserver does on every write)"),
            refused_by: RefusedBy::NOBODY,
            severity: Severity::Info,
        });
    }
    out
}

/// The versions OLM v0 lists an object written at `written` through: its own first, then —
/// when the installed CRD converts with strategy `None`, so the apiserver serves the object
/// unchanged at every served version — each other version (the loop keeps those the new CRD
/// still serves). Through a conversion webhook, what another version holds is the webhook's
/// answer, which no static check knows.
fn versions_seen(written: &str, from: &CustomResourceDefinition) -> Vec<String> {
    let mut out = vec![written.to_owned()];
    if !olm_v1::has_webhook(from) {
        out.extend(
            from.spec
                .versions
                .iter()
                .filter(|v| v.served && v.name != written)
                .map(|v| v.name.clone()),
        );
    }
    out
}

/// The schema of `crd`'s served version `version`.
fn served_schema<'c>(
    crd: &'c CustomResourceDefinition,
    version: &str,
) -> Option<&'c JSONSchemaProps> {
    crd.spec
        .versions
        .iter()
        .find(|v| v.name == version && v.served)
        .and_then(|v| v.schema.as_ref()?.open_api_v3_schema.as_ref())
}

/// Whether `version` of `crd` has a status subresource (the apiserver drops `status` on
/// create then).
fn has_status(crd: &CustomResourceDefinition, version: &str) -> bool {
    crd.spec
        .versions
        .iter()
        .find(|v| v.name == version)
        .and_then(|v| v.subresources.as_ref())
        .is_some_and(|s| s.status.is_some())
}

/// `example` as the apiserver serves it at `version` without a conversion webhook: the same
/// object under that apiVersion.
fn seen_at(example: &Value, crd: &CustomResourceDefinition, version: &str) -> Value {
    let mut seen = example.clone();
    if let Some(object) = seen.as_object_mut() {
        object.insert(
            "apiVersion".into(),
            Value::String(format!("{}/{version}", crd.spec.group)),
        );
    }
    seen
}

/// One example object of the installed release, checked at one served version of a CRD.
struct Example<'e> {
    /// The CRD's name.
    crd: &'e str,
    /// The served version the example is checked at.
    version: &'e str,
    /// The version the example is written in.
    written: &'e str,
    object: &'e Value,
}

impl Example<'_> {
    /// The example's `metadata.name`, or `(unnamed)`.
    fn name(&self) -> &str {
        match Identity::of(self.object).name {
            "" => "(unnamed)",
            name => name,
        }
    }

    /// The example is invalid under the installed schema already (info: nobody refuses the
    /// upgrade for it).
    fn already_invalid(&self, old_root: &JSONSchemaProps) -> Problem {
        let (name, version) = (self.name(), self.version);
        Problem {
            rule: "crd-upgrade/example-already-invalid",
            crd: self.crd.to_owned(),
            version: Some(version.to_owned()),
            path: None,
            message: format!(
                "example {name} is already invalid under the installed {version} schema ({}), so it cannot exist on a cluster as written (unless a mutating webhook fixes it); not checked against the new schema",
                first_reason(self.object, old_root)
            ),
            refused_by: RefusedBy::NOBODY,
            severity: Severity::Info,
        }
    }

    /// The example is invalid under the new schema as written, but the installed release's
    /// mutating webhook changes such objects before they are stored (a defaulting webhook
    /// fills in what a schema requires): what is stored cannot be known statically (a
    /// warning: `upgrade test` registers the webhooks and decides).
    fn stored_as_mutated(&self, invalid: &Invalid) -> Problem {
        let message = format!(
            "{} as written is invalid under the new {} schema ({}), but a mutating admission webhook of the installed release changes such objects before they are stored, so whether OLM v0 refuses depends on what it stores: `olmpack upgrade test` registers the webhooks and decides",
            self.described(),
            self.version,
            reason(invalid)
        );
        self.invalid(invalid, Severity::Warning, RefusedBy::NOBODY, message)
    }

    /// The example is invalid under the new schema: OLM v0 refuses the upgrade, or (with a
    /// conversion webhook) kube-apiserver refuses every update of such an object.
    fn invalid_after_upgrade(&self, invalid: &Invalid, webhook: bool) -> Problem {
        let judged = (EXISTING_OBJECT_INVALID.judge)(webhook);
        let (severity, consequence) = (judged.severity, judged.consequence);
        let refused_by = RefusedBy::only(judged.refused_by);
        let message = format!(
            "{} is invalid under the new {} schema: {}; {consequence}",
            self.described(),
            self.version,
            reason(invalid)
        );
        self.invalid(invalid, severity, refused_by, message)
    }

    /// `example KIND NAME (from the installed release)`.
    fn described(&self) -> String {
        let kind = self
            .object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("");
        let name = self.name();
        if self.version == self.written {
            format!("example {kind} {name} (from the installed release)")
        } else {
            format!(
                "example {kind} {name} (from the installed release, written at {}; the installed CRD has no conversion webhook, so the apiserver serves it unchanged at {})",
                self.written, self.version
            )
        }
    }

    /// An existing-object problem of this example at `invalid`'s path.
    fn invalid(
        &self,
        invalid: &Invalid,
        severity: Severity,
        refused_by: RefusedBy,
        message: String,
    ) -> Problem {
        Problem {
            rule: EXISTING_OBJECT_RULE,
            crd: self.crd.to_owned(),
            version: Some(self.version.to_owned()),
            path: Some(invalid.path.clone()),
            message,
            refused_by,
            severity,
        }
    }
}

/// `PATH: WHY` of a schema violation, in the apiserver's words.
fn reason(invalid: &Invalid) -> String {
    invalid.text()
}

/// The first reason `example` is invalid under `root`, in the apiserver's words.
fn first_reason(example: &Value, root: &JSONSchemaProps) -> String {
    validate_object(example, root)
        .first()
        .map(Invalid::text)
        .unwrap_or_default()
}

/// The version an example object of this CRD is written in, if it is one.
fn example_version(example: &Value, input: &PairInput<'_>) -> Option<String> {
    let api_version = example.get("apiVersion")?.as_str()?;
    let kind = example.get("kind")?.as_str()?;
    let (group, version) = api_version.split_once('/')?;
    (group == input.from.spec.group && kind == input.from.spec.names.kind)
        .then(|| version.to_owned())
}
