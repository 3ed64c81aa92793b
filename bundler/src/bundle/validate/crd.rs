//! `crd/` rules: CustomResourceDefinitions as the API server would check them on create —
//! including the schema errors operator-framework/api's validator filters out.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{array_at, on, str_at};
use crate::bundle::load::{Crd, LoadedBundle};
use crate::names::is_dns1123_label;
use crate::report::Finding;
use crate::report::Severity;

const TYPES: [&str; 6] = ["object", "array", "string", "integer", "number", "boolean"];
const COLUMN_TYPES: [&str; 5] = ["integer", "number", "string", "boolean", "date"];

pub(super) fn check_all(bundle: &LoadedBundle, out: &mut Vec<Finding>) {
    let mut seen: BTreeMap<(String, String, String), String> = BTreeMap::new();
    for crd in bundle.crds() {
        check(&crd, out);
        let group = str_at(&crd.v1, "/spec/group").to_owned();
        let kind = str_at(&crd.v1, "/spec/names/kind").to_owned();
        for v in array_at(&crd.v1, "/spec/versions") {
            let key = (group.clone(), str_at(v, "/name").to_owned(), kind.clone());
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

fn check(crd: &Crd<'_>, out: &mut Vec<Finding>) {
    let v = crd.v1.as_ref();
    let legacy = crd.is_v1beta1();
    let at = |f: Finding, field: &str| on(crd.object, f).field(field.to_owned());
    let crd = crd.object;
    if crd.api_version() != "apiextensions.k8s.io/v1"
        && crd.api_version() != "apiextensions.k8s.io/v1beta1"
    {
        out.push(at(
            Finding::error(
                "crd/api-version",
                format!(
                    "apiVersion {:?} is not apiextensions.k8s.io/v1",
                    crd.api_version()
                ),
            ),
            "apiVersion",
        ));
    }
    let group = str_at(v, "/spec/group");
    let plural = str_at(v, "/spec/names/plural");
    let kind = str_at(v, "/spec/names/kind");
    if group.is_empty() || !group.contains('.') {
        out.push(at(
            Finding::error(
                "crd/group",
                format!("group {group:?} must be a domain name with at least one dot"),
            ),
            "spec.group",
        ));
    }
    if !is_dns1123_label(plural) {
        out.push(at(
            Finding::error(
                "crd/names",
                format!("plural {plural:?} must be a lowercase DNS-1123 label"),
            ),
            "spec.names.plural",
        ));
    }
    if kind.is_empty() || !kind.starts_with(|c: char| c.is_ascii_uppercase()) {
        // The API server refuses an empty kind; a lowercase one is only a convention.
        let severity = if kind.is_empty() {
            Finding::error
        } else {
            Finding::warning
        };
        out.push(at(
            severity(
                "crd/names",
                format!("kind {kind:?} must be set and start with an uppercase letter"),
            ),
            "spec.names.kind",
        ));
    }
    let singular = str_at(v, "/spec/names/singular");
    if !singular.is_empty() && !is_dns1123_label(singular) {
        out.push(at(
            Finding::error(
                "crd/names",
                format!("singular {singular:?} must be a lowercase DNS-1123 label"),
            ),
            "spec.names.singular",
        ));
    }
    let expected = format!("{plural}.{group}");
    if crd.name() != expected {
        out.push(at(
            Finding::error(
                "crd/name",
                format!("metadata.name must be <plural>.<group> ({expected:?})"),
            ),
            "metadata.name",
        ));
    }
    match str_at(v, "/spec/scope") {
        "Namespaced" | "Cluster" => {}
        other => out.push(at(
            Finding::error(
                "crd/scope",
                format!("scope {other:?} must be Namespaced or Cluster"),
            ),
            "spec.scope",
        )),
    }
    let versions = array_at(v, "/spec/versions");
    if versions.is_empty() {
        out.push(at(
            Finding::error("crd/versions", "the CRD has no versions"),
            "spec.versions",
        ));
        return;
    }
    let storage = versions
        .iter()
        .filter(|x| x.get("storage").and_then(Value::as_bool) == Some(true))
        .count();
    if storage != 1 {
        out.push(at(
            Finding::error(
                "crd/storage-version",
                format!("exactly one version must be the storage version, found {storage}"),
            ),
            "spec.versions",
        ));
    }
    if !versions
        .iter()
        .any(|x| x.get("served").and_then(Value::as_bool) == Some(true))
    {
        out.push(at(
            // The API server accepts it; the CRD is useless, though.
            Finding::warning("crd/versions", "no version is served"),
            "spec.versions",
        ));
    }
    let mut names = BTreeMap::new();
    for (i, version) in versions.iter().enumerate() {
        let name = str_at(version, "/name");
        let field = format!("spec.versions[{i}]");
        if !is_dns1123_label(name) {
            out.push(at(
                Finding::error(
                    "crd/versions",
                    format!("version name {name:?} must be a DNS-1123 label"),
                ),
                &format!("{field}.name"),
            ));
        }
        if names.insert(name, i).is_some() {
            out.push(at(
                Finding::error("crd/versions", format!("version {name} is listed twice")),
                &format!("{field}.name"),
            ));
        }
        match version.pointer("/schema/openAPIV3Schema") {
            // v1beta1 made the schema optional; its removal is the deprecated-API rule's.
            None if legacy => {}
            None => out.push(at(Finding::error("crd/schema", format!("version {name} has no schema.openAPIV3Schema (required by apiextensions.k8s.io/v1)")), &format!("{field}.schema"))),
            Some(schema) => {
                if str_at(schema, "/type") != "object" {
                    out.push(at(non_structural(Finding::error("crd/schema", "the root schema must have type: object"), legacy), &format!("{field}.schema.openAPIV3Schema.type")));
                }
                if let Some(meta) = schema.pointer("/properties/metadata")
                    && let Some(props) = meta.get("properties").and_then(Value::as_object) {
                        for key in props.keys() {
                            if key != "name" && key != "generateName" {
                                out.push(at(non_structural(Finding::error("crd/schema", format!("the metadata schema may only restrict name and generateName, not {key}")), legacy), &format!("{field}.schema.openAPIV3Schema.properties.metadata.properties.{key}")));
                            }
                        }
                    }
                let mut found = Vec::new();
                structural(schema, &format!("{field}.schema.openAPIV3Schema"), &mut found);
                out.extend(found.into_iter().map(|(f, path)| at(non_structural(f, legacy), &path)));
            }
        }
        for (j, column) in array_at(version, "/additionalPrinterColumns")
            .iter()
            .enumerate()
        {
            let cfield = format!("{field}.additionalPrinterColumns[{j}]");
            if !str_at(column, "/jsonPath").starts_with('.') {
                out.push(at(
                    Finding::error(
                        "crd/printer-columns",
                        format!(
                            "jsonPath {:?} must start with '.'",
                            str_at(column, "/jsonPath")
                        ),
                    ),
                    &format!("{cfield}.jsonPath"),
                ));
            }
            if !COLUMN_TYPES.contains(&str_at(column, "/type")) {
                out.push(at(
                    Finding::error(
                        "crd/printer-columns",
                        format!(
                            "column type {:?} is not one of {}",
                            str_at(column, "/type"),
                            COLUMN_TYPES.join(", ")
                        ),
                    ),
                    &format!("{cfield}.type"),
                ));
            }
        }
        if let Some(scale) = version.pointer("/subresources/scale") {
            if !str_at(scale, "/specReplicasPath").starts_with(".spec.") {
                out.push(at(
                    Finding::error(
                        "crd/subresources",
                        "scale.specReplicasPath must be under .spec",
                    ),
                    &format!("{field}.subresources.scale.specReplicasPath"),
                ));
            }
            if !str_at(scale, "/statusReplicasPath").starts_with(".status.") {
                out.push(at(
                    Finding::error(
                        "crd/subresources",
                        "scale.statusReplicasPath must be under .status",
                    ),
                    &format!("{field}.subresources.scale.statusReplicasPath"),
                ));
            }
        }
    }
    if str_at(v, "/spec/conversion/strategy") == "Webhook"
        && array_at(v, "/spec/conversion/webhook/conversionReviewVersions").is_empty()
    {
        out.push(at(
            Finding::error(
                "crd/conversion",
                "a Webhook conversion needs conversionReviewVersions",
            ),
            "spec.conversion.webhook.conversionReviewVersions",
        ));
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

/// Structural-schema checks, recursively: every node says its type (unless it opts out with
/// `x-kubernetes-int-or-string` or `x-kubernetes-preserve-unknown-fields`), arrays have
/// `items`, `required` names declared properties, CEL rules are not empty.
fn structural(schema: &Value, path: &str, found: &mut Vec<(Finding, String)>) {
    let mut report = |f: Finding, at: &str| found.push((f, at.to_owned()));
    let Some(node) = schema.as_object() else {
        report(
            Finding::error("crd/schema", "a schema must be an object"),
            path,
        );
        return;
    };
    let opt_out = node
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
        || node
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            == Some(true);
    let kind = node.get("type").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() && !opt_out {
        report(
            Finding::error(
                "crd/schema",
                "the schema is not structural: type is missing",
            ),
            &format!("{path}.type"),
        );
    } else if !kind.is_empty() && !TYPES.contains(&kind) {
        report(
            Finding::error(
                "crd/schema",
                format!("type {kind:?} is not one of {}", TYPES.join(", ")),
            ),
            &format!("{path}.type"),
        );
    }
    if kind == "array" && node.get("items").is_none() {
        report(
            Finding::error("crd/schema", "an array schema needs items"),
            &format!("{path}.items"),
        );
    }
    if node.contains_key("properties") && !kind.is_empty() && kind != "object" {
        report(
            Finding::error("crd/schema", format!("properties on a {kind} schema")),
            &format!("{path}.properties"),
        );
    }
    let properties = node.get("properties").and_then(Value::as_object);
    for (i, name) in node
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = name.as_str().unwrap_or("");
        if properties.is_some_and(|p| !p.contains_key(name)) {
            report(
                Finding::warning(
                    "crd/schema",
                    format!("required lists {name:?}, which is not a property"),
                ),
                &format!("{path}.required[{i}]"),
            );
        }
    }
    for (i, rule) in node
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if str_at(rule, "/rule").trim().is_empty() {
            report(
                Finding::error("crd/schema", "a validation rule has no CEL expression"),
                &format!("{path}.x-kubernetes-validations[{i}].rule"),
            );
        }
    }
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
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
            report(
                Finding::warning(
                    "crd/schema-enum",
                    format!("enum value {bad} is not a {kind}; no object can use it"),
                ),
                &format!("{path}.enum"),
            );
        }
    }
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
