//! `crd/` rules: CustomResourceDefinitions as the API server would check them on create —
//! including the schema errors operator-framework/api's validator filters out.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{on, str_at};
use crate::bundle::load::{Crd, LoadedBundle, Object};
use olmpack_model::decode::text;
use olmpack_model::names::is_dns1123_label;
use olmpack_model::objects::{CrdSpec, CrdVersion, CustomResourceDefinition};
use olmpack_model::report::Finding;
use olmpack_model::report::Severity;

const TYPES: [&str; 6] = ["object", "array", "string", "integer", "number", "boolean"];
const COLUMN_TYPES: [&str; 5] = ["integer", "number", "string", "boolean", "date"];

pub(super) fn check_all(bundle: &LoadedBundle, out: &mut Vec<Finding>) {
    let mut seen: BTreeMap<(String, String, String), String> = BTreeMap::new();
    for crd in bundle.crds() {
        let typed = crd.typed();
        check(&crd, &typed, out);
        for v in typed.versions() {
            let key = (typed.group(), v.name(), typed.kind());
            let key = (key.0.to_owned(), key.1.to_owned(), key.2.to_owned());
            if let Some(other) = seen.insert(key.clone(), crd.object.display_name()) {
                out.push(on(
                    crd.object,
                    Finding::error(
                        "crd/duplicate",
                        format!("{}/{} {} is also defined by {other}", key.0, key.1, key.2),
                    ),
                ));
            }
        }
    }
}

/// Findings on one CRD, each placed on the CRD's file, object and a field.
struct CrdFindings<'a, 'o> {
    object: &'a Object,
    /// Whether the CRD was written as apiextensions.k8s.io/v1beta1.
    legacy: bool,
    out: &'o mut Vec<Finding>,
}

impl CrdFindings<'_, '_> {
    /// Records `finding` at `field`.
    fn push(&mut self, finding: Finding, field: &str) {
        self.out
            .push(on(self.object, finding).field(field.to_owned()));
    }

    /// Records an error of `rule` at `field`.
    fn error(&mut self, rule: &str, message: impl Into<String>, field: &str) {
        self.push(Finding::error(rule, message), field);
    }

    /// Records a schema finding, softened for v1beta1 (see [`non_structural`]).
    fn schema(&mut self, finding: Finding, field: &str) {
        let legacy = self.legacy;
        self.push(non_structural(finding, legacy), field);
    }
}

fn check(crd: &Crd<'_>, typed: &CustomResourceDefinition, out: &mut Vec<Finding>) {
    let mut report = CrdFindings {
        object: crd.object,
        legacy: crd.is_v1beta1(),
        out,
    };
    let api_version = crd.object.api_version();
    if api_version != "apiextensions.k8s.io/v1" && api_version != "apiextensions.k8s.io/v1beta1" {
        report.error(
            "crd/api-version",
            format!("apiVersion {api_version:?} is not apiextensions.k8s.io/v1"),
            "apiVersion",
        );
    }
    let no_spec = CrdSpec::default();
    let spec = typed.spec.as_ref().unwrap_or(&no_spec);
    check_names(spec, crd.object.name(), &mut report);
    match text(&spec.scope) {
        "Namespaced" | "Cluster" => {}
        other => report.error(
            "crd/scope",
            format!("scope {other:?} must be Namespaced or Cluster"),
            "spec.scope",
        ),
    }
    let versions = typed.versions();
    if versions.is_empty() {
        report.error("crd/versions", "the CRD has no versions", "spec.versions");
        return;
    }
    check_storage_and_served(versions, &mut report);
    let mut names = BTreeMap::new();
    for (i, version) in versions.iter().enumerate() {
        let name = version.name();
        let field = format!("spec.versions[{i}]");
        if !is_dns1123_label(name) {
            report.error(
                "crd/versions",
                format!("version name {name:?} must be a DNS-1123 label"),
                &format!("{field}.name"),
            );
        }
        if names.insert(name, i).is_some() {
            report.error(
                "crd/versions",
                format!("version {name} is listed twice"),
                &format!("{field}.name"),
            );
        }
        check_version_schema(version, name, &field, &mut report);
        check_printer_columns(version, &field, &mut report);
        check_scale(version, &field, &mut report);
    }
    check_conversion(typed, &mut report);
}

/// A Webhook conversion names the review versions it speaks.
fn check_conversion(typed: &CustomResourceDefinition, report: &mut CrdFindings<'_, '_>) {
    let Some(conversion) = typed.webhook_conversion() else {
        return;
    };
    let versions = conversion.webhook.as_ref();
    let versions = versions.and_then(|w| w.conversion_review_versions.as_ref());
    if versions.is_none_or(Vec::is_empty) {
        report.error(
            "crd/conversion",
            "a Webhook conversion needs conversionReviewVersions",
            "spec.conversion.webhook.conversionReviewVersions",
        );
    }
}

/// Group, plural, kind and singular names, and `metadata.name` = `<plural>.<group>`.
fn check_names(spec: &CrdSpec, metadata_name: &str, report: &mut CrdFindings<'_, '_>) {
    let names = spec.names.clone().unwrap_or_default();
    let group = text(&spec.group);
    let plural = text(&names.plural);
    let kind = text(&names.kind);
    if group.is_empty() || !group.contains('.') {
        report.error(
            "crd/group",
            format!("group {group:?} must be a domain name with at least one dot"),
            "spec.group",
        );
    }
    if !is_dns1123_label(plural) {
        report.error(
            "crd/names",
            format!("plural {plural:?} must be a lowercase DNS-1123 label"),
            "spec.names.plural",
        );
    }
    if kind.is_empty() || !kind.starts_with(|c: char| c.is_ascii_uppercase()) {
        // The API server refuses an empty kind; a lowercase one is only a convention.
        let severity = if kind.is_empty() {
            Finding::error
        } else {
            Finding::warning
        };
        report.push(
            severity(
                "crd/names",
                format!("kind {kind:?} must be set and start with an uppercase letter"),
            ),
            "spec.names.kind",
        );
    }
    let singular = text(&names.singular);
    if !singular.is_empty() && !is_dns1123_label(singular) {
        report.error(
            "crd/names",
            format!("singular {singular:?} must be a lowercase DNS-1123 label"),
            "spec.names.singular",
        );
    }
    let expected = format!("{plural}.{group}");
    if metadata_name != expected {
        report.error(
            "crd/name",
            format!("metadata.name must be <plural>.<group> ({expected:?})"),
            "metadata.name",
        );
    }
}

/// Exactly one storage version, and at least one served version.
fn check_storage_and_served(versions: &[CrdVersion], report: &mut CrdFindings<'_, '_>) {
    let storage = versions.iter().filter(|x| x.storage == Some(true)).count();
    if storage != 1 {
        report.error(
            "crd/storage-version",
            format!("exactly one version must be the storage version, found {storage}"),
            "spec.versions",
        );
    }
    if !versions.iter().any(|x| x.served == Some(true)) {
        // The API server accepts it; the CRD is useless, though.
        report.push(
            Finding::warning("crd/versions", "no version is served"),
            "spec.versions",
        );
    }
}

/// One version's `schema.openAPIV3Schema`: present (v1), an object at the root, a
/// metadata schema restricting only names, and structural throughout.
fn check_version_schema(
    version: &CrdVersion,
    name: &str,
    field: &str,
    report: &mut CrdFindings<'_, '_>,
) {
    let Some(schema) = version.open_api_schema() else {
        // v1beta1 made the schema optional; its removal is the deprecated-API rule's.
        if !report.legacy {
            report.error(
                "crd/schema",
                format!("version {name} has no schema.openAPIV3Schema (required by apiextensions.k8s.io/v1)"),
                &format!("{field}.schema"),
            );
        }
        return;
    };
    if str_at(schema, "/type") != "object" {
        report.schema(
            Finding::error("crd/schema", "the root schema must have type: object"),
            &format!("{field}.schema.openAPIV3Schema.type"),
        );
    }
    if let Some(meta) = schema.pointer("/properties/metadata")
        && let Some(props) = meta.get("properties").and_then(Value::as_object)
    {
        for key in props.keys() {
            if key != "name" && key != "generateName" {
                report.schema(
                    Finding::error(
                        "crd/schema",
                        format!(
                            "the metadata schema may only restrict name and generateName, not {key}"
                        ),
                    ),
                    &format!("{field}.schema.openAPIV3Schema.properties.metadata.properties.{key}"),
                );
            }
        }
    }
    let mut found = Vec::new();
    structural(
        schema,
        &format!("{field}.schema.openAPIV3Schema"),
        &mut found,
    );
    for (f, path) in found {
        report.schema(f, &path);
    }
}

/// `additionalPrinterColumns`: a `.`-rooted jsonPath and a known column type.
fn check_printer_columns(version: &CrdVersion, field: &str, report: &mut CrdFindings<'_, '_>) {
    let columns = version.additional_printer_columns.iter().flatten();
    for (j, column) in columns.enumerate() {
        let cfield = format!("{field}.additionalPrinterColumns[{j}]");
        let json_path = text(&column.json_path);
        if !json_path.starts_with('.') {
            report.error(
                "crd/printer-columns",
                format!("jsonPath {json_path:?} must start with '.'"),
                &format!("{cfield}.jsonPath"),
            );
        }
        let column_type = text(&column.type_);
        if !COLUMN_TYPES.contains(&column_type) {
            report.error(
                "crd/printer-columns",
                format!(
                    "column type {column_type:?} is not one of {}",
                    COLUMN_TYPES.join(", ")
                ),
                &format!("{cfield}.type"),
            );
        }
    }
}

/// The scale subresource's replica paths lie under `.spec` and `.status`.
fn check_scale(version: &CrdVersion, field: &str, report: &mut CrdFindings<'_, '_>) {
    let subresources = version.subresources.as_ref();
    let Some(scale) = subresources.and_then(|s| s.scale.as_ref()) else {
        return;
    };
    if !text(&scale.spec_replicas_path).starts_with(".spec.") {
        report.error(
            "crd/subresources",
            "scale.specReplicasPath must be under .spec",
            &format!("{field}.subresources.scale.specReplicasPath"),
        );
    }
    if !text(&scale.status_replicas_path).starts_with(".status.") {
        report.error(
            "crd/subresources",
            "scale.statusReplicasPath must be under .status",
            &format!("{field}.subresources.scale.statusReplicasPath"),
        );
    }
}

/// v1beta1 served non-structural schemas (with a `NonStructuralSchema` condition): what v1
/// refuses is only a warning there, the removal itself being the deprecated-API rule's.
fn non_structural(mut finding: Finding, legacy: bool) -> Finding {
    if legacy && finding.severity == Severity::Error {
        finding.severity = Severity::Warning;
        finding.message += " (apiextensions.k8s.io/v1 refuses it; v1beta1 served it)";
    }
    finding
}

/// A schema finding and the field path it points at.
type Found = Vec<(Finding, String)>;

/// Structural-schema checks, recursively: every node says its type (unless it opts out with
/// `x-kubernetes-int-or-string` or `x-kubernetes-preserve-unknown-fields`), arrays have
/// `items`, `required` names declared properties, CEL rules are not empty.
fn structural(schema: &Value, path: &str, found: &mut Found) {
    let Some(node) = schema.as_object() else {
        found.push((
            Finding::error("crd/schema", "a schema must be an object"),
            path.to_owned(),
        ));
        return;
    };
    let kind = node.get("type").and_then(Value::as_str).unwrap_or("");
    check_node_type(node, kind, path, found);
    let properties = node.get("properties").and_then(Value::as_object);
    check_required(node, properties, path, found);
    check_validation_rules(node, path, found);
    check_enum(node, kind, path, found);
    for (name, child) in properties.into_iter().flatten() {
        structural(child, &format!("{path}.properties.{name}"), found);
    }
    if let Some(items) = node.get("items") {
        structural(items, &format!("{path}.items"), found);
    }
    if let Some(additional) = node.get("additionalProperties").filter(|a| a.is_object()) {
        structural(additional, &format!("{path}.additionalProperties"), found);
    }
}

/// A schema node as a JSON object.
type Node = serde_json::Map<String, Value>;

/// The node's `type`: set (unless opted out) and known; arrays with `items`; properties
/// only on objects.
fn check_node_type(node: &Node, kind: &str, path: &str, found: &mut Found) {
    let flag = |key: &str| node.get(key).and_then(Value::as_bool) == Some(true);
    let opt_out =
        flag("x-kubernetes-int-or-string") || flag("x-kubernetes-preserve-unknown-fields");
    if kind.is_empty() && !opt_out {
        found.push((
            Finding::error(
                "crd/schema",
                "the schema is not structural: type is missing",
            ),
            format!("{path}.type"),
        ));
    } else if !kind.is_empty() && !TYPES.contains(&kind) {
        found.push((
            Finding::error(
                "crd/schema",
                format!("type {kind:?} is not one of {}", TYPES.join(", ")),
            ),
            format!("{path}.type"),
        ));
    }
    if kind == "array" && node.get("items").is_none() {
        found.push((
            Finding::error("crd/schema", "an array schema needs items"),
            format!("{path}.items"),
        ));
    }
    if node.contains_key("properties") && !kind.is_empty() && kind != "object" {
        found.push((
            Finding::error("crd/schema", format!("properties on a {kind} schema")),
            format!("{path}.properties"),
        ));
    }
}

/// Every `required` name is a declared property (when properties are declared).
fn check_required(node: &Node, properties: Option<&Node>, path: &str, found: &mut Found) {
    for (i, name) in node
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = name.as_str().unwrap_or("");
        if properties.is_some_and(|p| !p.contains_key(name)) {
            found.push((
                Finding::warning(
                    "crd/schema",
                    format!("required lists {name:?}, which is not a property"),
                ),
                format!("{path}.required[{i}]"),
            ));
        }
    }
}

/// Every `x-kubernetes-validations` rule has a CEL expression.
fn check_validation_rules(node: &Node, path: &str, found: &mut Found) {
    for (i, rule) in node
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if str_at(rule, "/rule").trim().is_empty() {
            found.push((
                Finding::error("crd/schema", "a validation rule has no CEL expression"),
                format!("{path}.x-kubernetes-validations[{i}].rule"),
            ));
        }
    }
}

/// The first `enum` value that does not have the node's type (no object could use it).
fn check_enum(node: &Node, kind: &str, path: &str, found: &mut Found) {
    let Some(values) = node.get("enum").and_then(Value::as_array) else {
        return;
    };
    let nullable = node.get("nullable").and_then(Value::as_bool) == Some(true);
    let matches = |v: &Value| {
        (v.is_null() && nullable)
            || match kind {
                "string" => v.is_string(),
                "integer" => v.is_i64() || v.is_u64(),
                "number" => v.is_number(),
                "boolean" => v.is_boolean(),
                _ => true,
            }
    };
    if let Some(bad) = values.iter().find(|v| !matches(v)) {
        found.push((
            Finding::warning(
                "crd/schema-enum",
                format!("enum value {bad} is not a {kind}; no object can use it"),
            ),
            format!("{path}.enum"),
        ));
    }
}
