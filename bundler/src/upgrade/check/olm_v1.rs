//! OLM v1's CRD upgrade-safety preflight: crdify's checks, with the configuration
//! operator-controller runs them with (`conversion: Ignore`, `unhandledEnforcement: Error`,
//! `description` not enforced, `enum` additions allowed).
//!
//! Three groups, as crdify runs them:
//! - CRD-wide: `scope`, `storedVersionRemoval` (every entry of the old CRD's
//!   `status.storedVersions` must still be in the new `spec.versions`), `existingFieldRemoval`
//!   (per version present in both, every property path of the old schema must still exist).
//! - Same version: each old version against the new version of the same name, property by
//!   property (only the properties of the old schema; a removed one is compared against an
//!   empty schema).
//! - Served versions: unless the new CRD converts through a webhook, every ordered pair of
//!   served versions of the new CRD (lower priority → higher), minus the problems the old
//!   CRD's own pairs already had.
//!
//! Each property is compared on its own node (children are compared at their own paths, but
//! combinators, `not` and `additionalProperties` stay part of the node): `enum`, `default`,
//! `required`, `type`, `maximum`, `maxItems`, `maxLength`, `maxProperties`, `minimum`,
//! `minItems`, `minLength`, `minProperties`, `pattern`, `nullable`, `oneOf`, each clearing
//! the field it handles; any difference left over is `unhandled` and fails.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion, JSONSchemaProps,
};

use super::schema::{differing_fields, flatten, json_text, own};
use super::{Problem, RefusedBy, kube_version};
use olmpack_model::report::{Consumer, Severity};

/// A property-level problem before it is tied to a CRD: `(path, rule, message)`.
type PropertyProblem = (String, &'static str, String);

/// Every problem OLM v1 reports for replacing `old` with `new`, where `stored_versions` is the
/// old CRD's `status.storedVersions` as the cluster has it.
pub fn check(
    old: &CustomResourceDefinition,
    new: &CustomResourceDefinition,
    stored_versions: &[String],
) -> Vec<Problem> {
    let crd = new.metadata.name.clone().unwrap_or_default();
    let mut out = Vec::new();
    let problem =
        |rule, version: Option<&str>, path: Option<String>, message: String, by| Problem {
            rule,
            crd: crd.clone(),
            version: version.map(str::to_owned),
            path,
            message,
            refused_by: by,
            severity: Severity::Error,
        };
    if old.spec.scope != new.spec.scope {
        out.push(problem(
            "crd-upgrade/scope",
            None,
            None,
            format!(
                "scope changed: {:?} -> {:?}",
                old.spec.scope, new.spec.scope
            ),
            RefusedBy::only(Consumer::OlmV1),
        ));
    }
    let (old_by_name, new_by_name) = (by_name(old), by_name(new));
    let removed: Vec<&String> = stored_versions
        .iter()
        .filter(|v| !new_by_name.contains_key(v.as_str()))
        .collect();
    for version in removed {
        out.push(problem("crd-upgrade/stored-version-removal", Some(version), None, format!("{version} is in the old CRD's status.storedVersions but not in the new spec.versions (objects may still be stored at {version}; migrate them and prune status.storedVersions first); kube-apiserver refuses it too"), RefusedBy::BOTH_OLMS));
    }
    for new_version in &new.spec.versions {
        let Some(old_version) = old_by_name.get(new_version.name.as_str()) else {
            continue;
        };
        let kept = flatten(new_version);
        for path in flatten(old_version)
            .keys()
            .filter(|p| !kept.contains_key(*p))
        {
            out.push(problem(
                "crd-upgrade/existing-field-removal",
                Some(&new_version.name),
                Some(path.clone()),
                "field removed from an existing version".into(),
                RefusedBy::only(Consumer::OlmV1),
            ));
        }
    }
    for old_version in &old.spec.versions {
        let Some(new_version) = new_by_name.get(old_version.name.as_str()) else {
            continue;
        };
        for (path, rule, message) in compare_versions(old_version, new_version) {
            out.push(problem(
                rule,
                Some(&old_version.name),
                Some(path),
                message,
                RefusedBy::only(Consumer::OlmV1),
            ));
        }
    }
    for (pair, (path, rule, message)) in served_problems(old, new) {
        out.push(problem(
            rule,
            Some(&pair),
            Some(path),
            format!("served versions are incompatible without a conversion webhook: {message}"),
            RefusedBy::only(Consumer::OlmV1),
        ));
    }
    out
}

/// The versions of `crd` by name (the first of a repeated name, as a linear search finds it).
fn by_name(crd: &CustomResourceDefinition) -> BTreeMap<&str, &CustomResourceDefinitionVersion> {
    let mut out = BTreeMap::new();
    for v in &crd.spec.versions {
        out.entry(v.name.as_str()).or_insert(v);
    }
    out
}

/// Whether the CRD converts through a webhook (`spec.conversion.strategy: Webhook`).
pub fn has_webhook(crd: &CustomResourceDefinition) -> bool {
    crd.spec
        .conversion
        .as_ref()
        .is_some_and(|c| c.strategy == "Webhook")
}

/// Served-version problems new to `new`: `("vA -> vB", problem)`, skipped when `new`
/// converts through a webhook.
fn served_problems(
    old: &CustomResourceDefinition,
    new: &CustomResourceDefinition,
) -> Vec<(String, PropertyProblem)> {
    if has_webhook(new) {
        return Vec::new();
    }
    let existing: BTreeSet<(String, PropertyProblem)> = served_pairs(old).into_iter().collect();
    served_pairs(new)
        .into_iter()
        .filter(|p| !existing.contains(p))
        .collect()
}

/// The problems of every ordered pair of served versions of one CRD, pairs in priority
/// order (lower → higher, then by the higher one).
///
/// The problems of a pair depend only on the two schemas, so versions are grouped by schema
/// (by its JSON encoding) and each pair of distinct schemas is compared once, each schema
/// flattened once; pairs of versions sharing a schema have no problems. Cost: sorting the
/// versions, one comparison per ordered pair of distinct schemas, and the problems reported —
/// a CRD with thousands of versions and a few schemas is as quick as one with a few versions.
pub fn served_pairs(crd: &CustomResourceDefinition) -> Vec<(String, PropertyProblem)> {
    let mut served: Vec<&CustomResourceDefinitionVersion> =
        crd.spec.versions.iter().filter(|v| v.served).collect();
    served.sort_by(|a, b| kube_version::cmp_priority(&a.name, &b.name));
    let groups = schema_groups(&served);
    let flat: Vec<_> = groups.iter().map(|g| flatten(served[g[0]])).collect();
    // (position of the lower version, position of the higher one, problem)
    let mut found: Vec<(usize, usize, PropertyProblem)> = Vec::new();
    for (x, lower) in groups.iter().enumerate() {
        for (y, higher) in groups.iter().enumerate() {
            if x == y {
                continue;
            }
            let problems = compare_flattened(&flat[x], &flat[y]);
            if problems.is_empty() {
                continue;
            }
            for &i in lower {
                for &j in higher.iter().filter(|&&j| j > i) {
                    found.extend(problems.iter().map(|p| (i, j, p.clone())));
                }
            }
        }
    }
    // Stable: a pair's problems keep the order compare_flattened gave them.
    found.sort_by_key(|(i, j, _)| (*i, *j));
    found
        .into_iter()
        .map(|(i, j, p)| (format!("{} -> {}", served[i].name, served[j].name), p))
        .collect()
}

/// Positions of `versions` grouped by equal schema, each group in ascending order, groups in
/// the order of their first member.
fn schema_groups(versions: &[&CustomResourceDefinitionVersion]) -> Vec<Vec<usize>> {
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let key = serde_json::to_string(&v.schema).expect("CRD schemas always serialize");
        let next = groups.len();
        let g = *index.entry(key).or_insert(next);
        if g == next {
            groups.push(Vec::new());
        }
        groups[g].push(i);
    }
    groups
}

/// Property problems of going from version `a` to version `b`, for every property of `a`.
pub fn compare_versions(
    a: &CustomResourceDefinitionVersion,
    b: &CustomResourceDefinitionVersion,
) -> Vec<PropertyProblem> {
    compare_flattened(&flatten(a), &flatten(b))
}

/// [`compare_versions`] on schemas already flattened.
fn compare_flattened(
    a: &BTreeMap<String, &JSONSchemaProps>,
    b: &BTreeMap<String, &JSONSchemaProps>,
) -> Vec<PropertyProblem> {
    let empty = JSONSchemaProps::default();
    let mut out = Vec::new();
    for (path, old_schema) in a {
        let old_own = own(old_schema);
        let new_own = own(b.get(path).copied().unwrap_or(&empty));
        if old_own == new_own {
            continue;
        }
        for (rule, message) in compare_properties(old_own, new_own) {
            out.push((path.clone(), rule, message));
        }
    }
    out
}

/// The property checks, in crdify's set, on two normalized nodes; `unhandled` last.
pub fn compare_properties(
    mut a: JSONSchemaProps,
    mut b: JSONSchemaProps,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    a.description = None;
    b.description = None;
    out.extend(enum_check(&a, &b).map(|m| ("crd-upgrade/enum", m)));
    (a.enum_, b.enum_) = (None, None);
    out.extend(default_check(&a, &b).map(|m| ("crd-upgrade/default", m)));
    (a.default, b.default) = (None, None);
    let old_required: BTreeSet<&String> = a.required.iter().flatten().collect();
    let added: Vec<&String> = b
        .required
        .iter()
        .flatten()
        .filter(|r| !old_required.contains(r))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !added.is_empty() {
        out.push((
            "crd-upgrade/required",
            format!("new required fields: {added:?}"),
        ));
    }
    (a.required, b.required) = (None, None);
    if a.type_ != b.type_ {
        out.push((
            "crd-upgrade/type",
            format!(
                "type changed: {:?} -> {:?}",
                a.type_.as_deref().unwrap_or(""),
                b.type_.as_deref().unwrap_or("")
            ),
        ));
    }
    (a.type_, b.type_) = (None, None);
    out.extend(bound_checks(&mut a, &mut b));
    out.extend(pattern_check(&a, &b).map(|m| ("crd-upgrade/pattern", m)));
    (a.pattern, b.pattern) = (None, None);
    match (a.nullable.is_some(), b.nullable.is_some()) {
        (false, true) => out.push(("crd-upgrade/nullable", "nullable added".to_owned())),
        (true, false) => out.push(("crd-upgrade/nullable", "nullable removed".to_owned())),
        _ => {}
    }
    (a.nullable, b.nullable) = (None, None);
    out.extend(one_of_check(&a, &b).map(|m| ("crd-upgrade/one-of", m)));
    (a.one_of, b.one_of) = (None, None);
    if a != b {
        let fields: Vec<String> = differing_fields(&a, &b)
            .into_iter()
            .map(|(field, old, new)| format!("{field}: {} -> {}", shorten(&old), shorten(&new)))
            .collect();
        out.push((
            "crd-upgrade/unhandled",
            format!(
                "a change no OLM v1 check handles (OLM v1 fails closed on it): {}",
                fields.join("; ")
            ),
        ));
    }
    out
}

fn shorten(text: &str) -> String {
    const MAX: usize = 120;
    if text.chars().count() <= MAX {
        return text.to_owned();
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}…")
}

fn enum_check(a: &JSONSchemaProps, b: &JSONSchemaProps) -> Option<String> {
    let set = |s: &JSONSchemaProps| -> BTreeSet<String> {
        s.enum_.iter().flatten().map(json_text).collect()
    };
    let (old, new) = (set(a), set(b));
    if old.is_empty() && !new.is_empty() {
        return Some(format!(
            "enum constraint added where there was none: [{}]",
            join(&new)
        ));
    }
    let removed: BTreeSet<String> = old.difference(&new).cloned().collect();
    (!removed.is_empty()).then(|| format!("allowed enum values removed: [{}]", join(&removed)))
}

fn join(values: &BTreeSet<String>) -> String {
    values
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

fn default_check(a: &JSONSchemaProps, b: &JSONSchemaProps) -> Option<String> {
    match (&a.default, &b.default) {
        (None, Some(new)) => Some(format!("default added: {}", json_text(new))),
        (Some(old), None) => Some(format!("default removed: {}", json_text(old))),
        (Some(old), Some(new)) if old != new => Some(format!(
            "default changed: {} -> {}",
            json_text(old),
            json_text(new)
        )),
        _ => None,
    }
}

/// `maximum*` may not be added or lowered, `minimum*` may not be added or raised.
fn bound_checks(a: &mut JSONSchemaProps, b: &mut JSONSchemaProps) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let mut check =
        |rule: &'static str, name: &str, old: Option<f64>, new: Option<f64>, is_max: bool| match (
            old, new,
        ) {
            (None, Some(n)) => out.push((rule, format!("{name} added where there was none: {n}"))),
            (Some(o), Some(n)) if is_max && n < o => {
                out.push((rule, format!("{name} decreased: {o} -> {n}")))
            }
            (Some(o), Some(n)) if !is_max && n > o => {
                out.push((rule, format!("{name} increased: {o} -> {n}")))
            }
            _ => {}
        };
    #[allow(clippy::cast_precision_loss)]
    let f = |v: Option<i64>| v.map(|v| v as f64);
    check("crd-upgrade/maximum", "maximum", a.maximum, b.maximum, true);
    check(
        "crd-upgrade/max-items",
        "maxItems",
        f(a.max_items),
        f(b.max_items),
        true,
    );
    check(
        "crd-upgrade/max-length",
        "maxLength",
        f(a.max_length),
        f(b.max_length),
        true,
    );
    check(
        "crd-upgrade/max-properties",
        "maxProperties",
        f(a.max_properties),
        f(b.max_properties),
        true,
    );
    check(
        "crd-upgrade/minimum",
        "minimum",
        a.minimum,
        b.minimum,
        false,
    );
    check(
        "crd-upgrade/min-items",
        "minItems",
        f(a.min_items),
        f(b.min_items),
        false,
    );
    check(
        "crd-upgrade/min-length",
        "minLength",
        f(a.min_length),
        f(b.min_length),
        false,
    );
    check(
        "crd-upgrade/min-properties",
        "minProperties",
        f(a.min_properties),
        f(b.min_properties),
        false,
    );
    for s in [a, b] {
        (s.maximum, s.max_items, s.max_length, s.max_properties) = (None, None, None, None);
        (s.minimum, s.min_items, s.min_length, s.min_properties) = (None, None, None, None);
    }
    out
}

fn pattern_check(a: &JSONSchemaProps, b: &JSONSchemaProps) -> Option<String> {
    match (&a.pattern, &b.pattern) {
        (None, Some(new)) => Some(format!("pattern added: {new:?}")),
        (Some(old), None) => Some(format!("pattern removed: {old:?}")),
        (Some(old), Some(new)) if old != new => {
            Some(format!("pattern changed: {old:?} -> {new:?}"))
        }
        _ => None,
    }
}

/// A `oneOf` may not appear where there was none, and none of its branches may go; adding a
/// branch only allows more.
fn one_of_check(a: &JSONSchemaProps, b: &JSONSchemaProps) -> Option<String> {
    let (old, new) = (
        a.one_of.as_deref().unwrap_or_default(),
        b.one_of.as_deref().unwrap_or_default(),
    );
    if old.is_empty() && !new.is_empty() {
        return Some(format!(
            "oneOf constraint added where there was none ({} branches)",
            new.len()
        ));
    }
    let removed: Vec<usize> = old
        .iter()
        .enumerate()
        .filter(|(_, branch)| !new.contains(branch))
        .map(|(i, _)| i)
        .collect();
    (!removed.is_empty())
        .then(|| format!("allowed oneOf branches removed or changed: {removed:?} of the old oneOf"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn props(value: Value) -> JSONSchemaProps {
        own(&serde_json::from_value(value).unwrap())
    }

    /// Old node, new node, the problems (rule, message) OLM v1 reports.
    type Row = (Value, Value, Vec<(&'static str, &'static str)>);

    /// One row per check.
    #[test]
    fn every_property_check() {
        let rows: Vec<Row> = vec![
            (
                json!({"type": "string"}),
                json!({"type": "string", "description": "x"}),
                vec![],
            ),
            (
                json!({"enum": ["a", "b"]}),
                json!({"enum": ["a", "b", "c"]}),
                vec![],
            ),
            (
                json!({"enum": ["a", "b"]}),
                json!({"enum": ["a"]}),
                vec![("crd-upgrade/enum", "allowed enum values removed: [\"b\"]")],
            ),
            (
                json!({}),
                json!({"enum": ["a"]}),
                vec![(
                    "crd-upgrade/enum",
                    "enum constraint added where there was none: [\"a\"]",
                )],
            ),
            (json!({"default": 1}), json!({"default": 1.0}), vec![]),
            (
                json!({"default": 1}),
                json!({"default": 2}),
                vec![("crd-upgrade/default", "default changed: 1 -> 2")],
            ),
            (
                json!({}),
                json!({"default": "x"}),
                vec![("crd-upgrade/default", "default added: \"x\"")],
            ),
            (
                json!({"default": "x"}),
                json!({}),
                vec![("crd-upgrade/default", "default removed: \"x\"")],
            ),
            (
                json!({"required": ["a"]}),
                json!({"required": ["b", "a"]}),
                vec![("crd-upgrade/required", "new required fields: [\"b\"]")],
            ),
            (
                json!({"required": ["a", "b"]}),
                json!({"required": ["a"]}),
                vec![],
            ),
            (
                json!({"type": "integer"}),
                json!({"type": "number"}),
                vec![(
                    "crd-upgrade/type",
                    "type changed: \"integer\" -> \"number\"",
                )],
            ),
            (
                json!({"maximum": 5}),
                json!({"maximum": 4}),
                vec![("crd-upgrade/maximum", "maximum decreased: 5 -> 4")],
            ),
            (json!({"maximum": 5}), json!({"maximum": 6}), vec![]),
            (
                json!({}),
                json!({"maxItems": 3}),
                vec![(
                    "crd-upgrade/max-items",
                    "maxItems added where there was none: 3",
                )],
            ),
            (
                json!({"maxLength": 3}),
                json!({"maxLength": 2}),
                vec![("crd-upgrade/max-length", "maxLength decreased: 3 -> 2")],
            ),
            (
                json!({}),
                json!({"maxProperties": 1}),
                vec![(
                    "crd-upgrade/max-properties",
                    "maxProperties added where there was none: 1",
                )],
            ),
            (
                json!({"minimum": 1}),
                json!({"minimum": 2}),
                vec![("crd-upgrade/minimum", "minimum increased: 1 -> 2")],
            ),
            (json!({"minimum": 2}), json!({}), vec![]),
            (
                json!({}),
                json!({"minItems": 1}),
                vec![(
                    "crd-upgrade/min-items",
                    "minItems added where there was none: 1",
                )],
            ),
            (
                json!({"minLength": 1}),
                json!({"minLength": 2}),
                vec![("crd-upgrade/min-length", "minLength increased: 1 -> 2")],
            ),
            (
                json!({}),
                json!({"minProperties": 1}),
                vec![(
                    "crd-upgrade/min-properties",
                    "minProperties added where there was none: 1",
                )],
            ),
            (
                json!({}),
                json!({"pattern": "^a$"}),
                vec![("crd-upgrade/pattern", "pattern added: \"^a$\"")],
            ),
            (
                json!({"pattern": "^a$"}),
                json!({}),
                vec![("crd-upgrade/pattern", "pattern removed: \"^a$\"")],
            ),
            (
                json!({"pattern": "^a$"}),
                json!({"pattern": "^b$"}),
                vec![("crd-upgrade/pattern", "pattern changed: \"^a$\" -> \"^b$\"")],
            ),
            (
                json!({}),
                json!({"nullable": true}),
                vec![("crd-upgrade/nullable", "nullable added")],
            ),
            (
                json!({"nullable": true}),
                json!({"nullable": false}),
                vec![("crd-upgrade/nullable", "nullable removed")],
            ),
            (
                json!({}),
                json!({"oneOf": [{"required": ["a"]}]}),
                vec![(
                    "crd-upgrade/one-of",
                    "oneOf constraint added where there was none (1 branches)",
                )],
            ),
            (
                json!({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}),
                json!({"oneOf": [{"required": ["a"]}]}),
                vec![(
                    "crd-upgrade/one-of",
                    "allowed oneOf branches removed or changed: [1] of the old oneOf",
                )],
            ),
            (
                json!({"oneOf": [{"required": ["a"]}]}),
                json!({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}),
                vec![],
            ),
            (
                json!({"type": "string"}),
                json!({"type": "string", "format": "email"}),
                vec![(
                    "crd-upgrade/unhandled",
                    "a change no OLM v1 check handles (OLM v1 fails closed on it): format: none -> \"email\"",
                )],
            ),
            (
                json!({}),
                json!({"x-kubernetes-validations": [{"rule": "self > 0"}]}),
                vec![(
                    "crd-upgrade/unhandled",
                    "a change no OLM v1 check handles (OLM v1 fails closed on it): x-kubernetes-validations: none -> [{\"rule\":\"self > 0\"}]",
                )],
            ),
        ];
        for (old, new, want) in rows {
            let got = compare_properties(props(old.clone()), props(new.clone()));
            let got: Vec<(&str, &str)> = got.iter().map(|(r, m)| (*r, m.as_str())).collect();
            assert_eq!(got, want, "{old} -> {new}");
        }
    }
}

#[cfg(test)]
mod crd_tests {
    use super::*;
    use serde_json::json;

    fn crd(versions: serde_json::Value, webhook: bool) -> CustomResourceDefinition {
        let mut value = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"kind": "Thing", "plural": "things"}, "versions": versions}
        });
        if webhook {
            value["spec"]["conversion"] =
                json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"]}});
        }
        serde_json::from_value(value).unwrap()
    }

    fn version(name: &str, storage: bool, props: serde_json::Value) -> serde_json::Value {
        json!({"name": name, "served": true, "storage": storage, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "properties": props}}}}})
    }

    fn summary(problems: &[Problem]) -> Vec<(String, String, String)> {
        problems
            .iter()
            .map(|p| {
                (
                    p.rule.to_owned(),
                    p.version.clone().unwrap_or_default(),
                    p.path.clone().unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn served_versions_need_a_webhook_and_old_problems_ratchet() {
        let a = json!({"a": {"type": "string"}});
        let ab = json!({"a": {"type": "string"}, "b": {"type": "string"}});
        // v1alpha1 has b, v1 does not: a served-version problem (b's schema against an empty
        // one: its type goes), unless a webhook converts.
        let old = crd(json!([version("v1", true, a.clone())]), false);
        let new = crd(
            json!([
                version("v1alpha1", false, ab.clone()),
                version("v1", true, a.clone())
            ]),
            false,
        );
        assert_eq!(
            summary(&check(&old, &new, &[])),
            vec![(
                "crd-upgrade/type".to_owned(),
                "v1alpha1 -> v1".to_owned(),
                "^.spec.b".to_owned()
            ),]
        );
        let with_webhook = crd(
            json!([
                version("v1alpha1", false, ab.clone()),
                version("v1", true, a.clone())
            ]),
            true,
        );
        assert!(check(&old, &with_webhook, &[]).is_empty());
        // The same problem in the old CRD is not reported again.
        assert!(check(&new, &new, &[]).is_empty());
        // Removing a field from an existing version, and a stored version.
        let dropped = crd(json!([version("v1", true, json!({}))]), false);
        assert_eq!(
            summary(&check(&old, &dropped, &["v1".into(), "v1beta1".into()])),
            vec![
                (
                    "crd-upgrade/stored-version-removal".into(),
                    "v1beta1".into(),
                    String::new()
                ),
                (
                    "crd-upgrade/existing-field-removal".into(),
                    "v1".into(),
                    "^.spec.a".into()
                ),
                ("crd-upgrade/type".into(), "v1".into(), "^.spec.a".into()),
            ]
        );
    }
}
