//! Field names the way Go reads them: case-insensitively.
//!
//! opm and OLM decode ClusterServiceVersions and CustomResourceDefinitions into Go structs
//! with `encoding/json`, which matches an input key to a struct field ignoring case when no
//! key matches exactly: a CSV written with `ApiVersion:` or `Spec:` installs under OLM. The
//! object is still found by its exact `kind` (opm sorts manifests by reading `kind` from an
//! untyped map), so only objects whose `kind` is spelled right are read this way.
//!
//! [`go_view`] gives such an object with its known fields spelled the canonical way, and says
//! what it renamed; the caller reports each rename as a warning. When an object has both the
//! exact key and a differently cased one, the exact key is kept.
#![warn(missing_docs)]

use std::borrow::Cow;

use serde_json::{Map, Value};

/// A key read under its canonical spelling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renamed {
    /// Dotted path of the mapping that holds the key (`""` at the top level).
    pub at: String,
    /// The key as written.
    pub written: String,
    /// The field it matched.
    pub field: &'static str,
    /// Whether the exact key was also present (the written one is then ignored).
    pub shadowed: bool,
}

impl Renamed {
    /// The field path as findings name fields.
    pub fn path(&self) -> String {
        if self.at.is_empty() {
            self.field.to_owned()
        } else {
            format!("{}.{}", self.at, self.field)
        }
    }

    /// What happened, in our words.
    pub fn message(&self) -> String {
        if self.shadowed {
            format!(
                "key {:?} matches field {} only when case is ignored, and {} is also given; \
                 {:?} is ignored",
                self.written, self.field, self.field, self.written
            )
        } else {
            format!(
                "key {:?} is read as field {}: Go's JSON decoding (opm, OLM) ignores case, \
                 stricter readers (kubectl, the API server) do not",
                self.written, self.field
            )
        }
    }
}

const TOP: &[&str] = &["apiVersion", "kind", "metadata", "spec", "status"];
const METADATA: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "managedFields",
];
const CSV_SPEC: &[&str] = &[
    "install",
    "version",
    "maturity",
    "customresourcedefinitions",
    "apiservicedefinitions",
    "webhookdefinitions",
    "nativeAPIs",
    "minKubeVersion",
    "displayName",
    "description",
    "keywords",
    "maintainers",
    "provider",
    "links",
    "icon",
    "installModes",
    "replaces",
    "labels",
    "annotations",
    "selector",
    "cleanup",
    "skips",
    "relatedImages",
    "release",
];
const CSV_INSTALL: &[&str] = &["strategy", "spec"];
const CSV_INSTALL_SPEC: &[&str] = &["deployments", "permissions", "clusterPermissions"];
const CSV_PERMISSION: &[&str] = &["serviceAccountName", "rules"];
const CRD_SPEC: &[&str] = &[
    "group",
    "names",
    "scope",
    "versions",
    "conversion",
    "preserveUnknownFields",
    "version",
    "validation",
    "subresources",
    "additionalPrinterColumns",
];
const CRD_NAMES: &[&str] = &[
    "plural",
    "singular",
    "shortNames",
    "kind",
    "listKind",
    "categories",
];

/// The object with its known fields spelled canonically (borrowed when nothing changes).
pub fn go_view(object: &Value) -> (Cow<'_, Value>, Vec<Renamed>) {
    let spec_fields = match object.get("kind").and_then(Value::as_str) {
        Some("ClusterServiceVersion") => CSV_SPEC,
        Some("CustomResourceDefinition") => CRD_SPEC,
        _ => return (Cow::Borrowed(object), Vec::new()),
    };
    let mut renamed = Vec::new();
    let mut copy = object.clone();
    if let Some(top) = copy.as_object_mut() {
        fold(top, "", TOP, &mut renamed);
        if let Some(meta) = top.get_mut("metadata").and_then(Value::as_object_mut) {
            fold(meta, "metadata", METADATA, &mut renamed);
        }
        if let Some(spec) = top.get_mut("spec").and_then(Value::as_object_mut) {
            fold(spec, "spec", spec_fields, &mut renamed);
            if let Some(names) = spec
                .get_mut("names")
                .and_then(Value::as_object_mut)
                .filter(|_| spec_fields == CRD_SPEC)
            {
                fold(names, "spec.names", CRD_NAMES, &mut renamed);
            }
            if spec_fields == CSV_SPEC {
                fold_install(spec, &mut renamed);
            }
        }
    }
    if renamed.is_empty() {
        (Cow::Borrowed(object), renamed)
    } else {
        (Cow::Owned(copy), renamed)
    }
}

/// The CSV's install strategy: OLM decodes it, permissions included, into its Go types too.
fn fold_install(spec: &mut Map<String, Value>, out: &mut Vec<Renamed>) {
    let Some(install) = spec.get_mut("install").and_then(Value::as_object_mut) else {
        return;
    };
    fold(install, "spec.install", CSV_INSTALL, out);
    let Some(details) = install.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    fold(details, "spec.install.spec", CSV_INSTALL_SPEC, out);
    for list in ["permissions", "clusterPermissions"] {
        let Some(entries) = details.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for (i, entry) in entries.iter_mut().enumerate() {
            if let Some(entry) = entry.as_object_mut() {
                fold(
                    entry,
                    &format!("spec.install.spec.{list}[{i}]"),
                    CSV_PERMISSION,
                    out,
                );
            }
        }
    }
}

/// Renames keys of `map` that match one of `fields` only case-insensitively.
fn fold(map: &mut Map<String, Value>, at: &str, fields: &[&'static str], out: &mut Vec<Renamed>) {
    let mismatched: Vec<(String, &'static str)> = map
        .keys()
        .filter(|k| !fields.contains(&k.as_str()))
        .filter_map(|k| {
            let field = fields.iter().find(|f| f.eq_ignore_ascii_case(k))?;
            Some((k.clone(), *field))
        })
        .collect();
    for (written, field) in mismatched {
        let shadowed = map.contains_key(field);
        let value = map.remove(&written).unwrap_or(Value::Null);
        if !shadowed {
            map.insert(field.to_owned(), value);
        }
        out.push(Renamed {
            at: at.to_owned(),
            written,
            field,
            shadowed,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn csv_fields_are_matched_ignoring_case() {
        let csv = json!({
            "ApiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "Metadata": {"Name": "op.v1"},
            "spec": {"Version": "1.0.0", "version": "2.0.0", "unknownField": 1},
        });
        let (view, renamed) = go_view(&csv);
        assert_eq!(
            view.as_ref(),
            &json!({
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "ClusterServiceVersion",
                "metadata": {"name": "op.v1"},
                "spec": {"version": "2.0.0", "unknownField": 1},
            })
        );
        let got: Vec<_> = renamed.iter().map(|r| (r.path(), r.message())).collect();
        assert_eq!(
            got,
            vec![
                ("apiVersion".to_owned(), "key \"ApiVersion\" is read as field apiVersion: Go's JSON decoding (opm, OLM) ignores case, stricter readers (kubectl, the API server) do not".to_owned()),
                ("metadata".to_owned(), "key \"Metadata\" is read as field metadata: Go's JSON decoding (opm, OLM) ignores case, stricter readers (kubectl, the API server) do not".to_owned()),
                ("metadata.name".to_owned(), "key \"Name\" is read as field name: Go's JSON decoding (opm, OLM) ignores case, stricter readers (kubectl, the API server) do not".to_owned()),
                ("spec.version".to_owned(), "key \"Version\" matches field version only when case is ignored, and version is also given; \"Version\" is ignored".to_owned()),
            ]
        );
    }

    #[test]
    fn install_strategy_permissions_are_matched_ignoring_case() {
        let csv = json!({
            "kind": "ClusterServiceVersion",
            "spec": {"install": {"spec": {
                "clusterpermissions": [{"serviceaccountname": "op", "rules": []}],
                "permissions": [{"serviceaccountname": "op", "Rules": []}],
            }}},
        });
        let (view, renamed) = go_view(&csv);
        assert_eq!(
            view["spec"]["install"]["spec"],
            json!({
                "clusterPermissions": [{"serviceAccountName": "op", "rules": []}],
                "permissions": [{"serviceAccountName": "op", "rules": []}],
            })
        );
        let paths: Vec<_> = renamed.iter().map(Renamed::path).collect();
        assert_eq!(
            paths,
            [
                "spec.install.spec.clusterPermissions",
                "spec.install.spec.permissions[0].rules",
                "spec.install.spec.permissions[0].serviceAccountName",
                "spec.install.spec.clusterPermissions[0].serviceAccountName",
            ]
        );
    }

    #[test]
    fn other_kinds_and_exact_spellings_are_borrowed() {
        let cm = json!({"ApiVersion": "v1", "kind": "ConfigMap"});
        assert!(matches!(go_view(&cm), (Cow::Borrowed(_), r) if r.is_empty()));
        let crd =
            json!({"apiVersion": "x", "kind": "CustomResourceDefinition", "spec": {"group": "g"}});
        assert!(matches!(go_view(&crd), (Cow::Borrowed(_), r) if r.is_empty()));
        let crd = json!({"kind": "CustomResourceDefinition", "spec": {"Names": {"Plural": "ws"}}});
        let (view, renamed) = go_view(&crd);
        assert_eq!(view["spec"]["names"]["plural"], "ws");
        assert_eq!(renamed.len(), 2);
    }
}
