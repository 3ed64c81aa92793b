//! `bundle/dependency` rules: the entries of `metadata/dependencies.yaml`, with the meaning
//! opm's bundle validator gives them: a known type whose value decodes and names what it must.

use serde_json::{Map, Value};

use super::str_at;
use crate::bundle::load::{DEPENDENCIES_FILE, LoadedBundle};
use olmpack_model::report::Finding;
use olmpack_model::version::Range;

const RULE: &str = "bundle/dependency";

/// `(field under the entry, what is wrong)`.
type Problems = Vec<(String, String)>;

pub(super) fn check(bundle: &LoadedBundle, out: &mut Vec<Finding>) {
    for (i, item) in bundle.dependencies.iter().flatten().enumerate() {
        let kind = str_at(item, "/type");
        if kind.is_empty() {
            continue; // layout's "each entry needs `type` and `value`" says so.
        }
        let value = item.get("value").unwrap_or(&Value::Null);
        // Go decodes a null value into the zero struct: every field empty.
        let empty = Map::new();
        let map = if value.is_null() {
            Some(&empty)
        } else {
            value.as_object()
        };
        let problems = match (kind, map) {
            ("olm.package" | "olm.gvk" | "olm.label" | "olm.constraint", None) => {
                vec![(
                    "value".to_owned(),
                    format!("value must be a mapping, found {value}"),
                )]
            }
            ("olm.package", Some(map)) => package(map),
            ("olm.gvk", Some(map)) => required(map, &["group", "version", "kind"]),
            ("olm.label", Some(map)) => required(map, &["label"]),
            ("olm.constraint", Some(map)) => constraint(map),
            (other, _) => vec![(
                "type".to_owned(),
                format!(
                    "unsupported dependency type {other:?} (known: olm.package, olm.gvk, olm.label, olm.constraint)"
                ),
            )],
        };
        for (field, message) in problems {
            out.push(
                Finding::error(RULE, message)
                    .file(DEPENDENCIES_FILE)
                    .field(format!("dependencies[{i}].{field}")),
            );
        }
    }
}

/// Each of `keys` must be a non-empty string (Go decodes a missing or null one as "").
fn required(map: &Map<String, Value>, keys: &[&str]) -> Problems {
    let mut out = Vec::new();
    for key in keys {
        let message = match map.get(*key) {
            None | Some(Value::Null) => format!("{key} is required"),
            Some(Value::String(s)) if s.is_empty() => format!("{key} is required"),
            Some(Value::String(_)) => continue,
            Some(other) => format!("{key} must be a string, found {other}"),
        };
        out.push((format!("value.{key}"), message));
    }
    out
}

fn package(map: &Map<String, Value>) -> Problems {
    let mut out = required(map, &["packageName", "version"]);
    if let Some(version) = map
        .get("version")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        && let Err(e) = Range::parse(version)
    {
        out.push((
            "value.version".to_owned(),
            format!("version {version:?} is not a semver range: {e}"),
        ));
    }
    out
}

fn constraint(map: &Map<String, Value>) -> Problems {
    match map.get("cel") {
        Some(cel) if str_at(cel, "/rule").trim().is_empty() => vec![(
            "value.cel.rule".to_owned(),
            "the CEL expression is missing".to_owned(),
        )],
        _ => Vec::new(),
    }
}
