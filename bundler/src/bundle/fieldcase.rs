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
//!
//! The CSV's fields are the model's ([`olmpack_model::csv`]'s field tables); the Kubernetes
//! objects inside a CSV (its `metadata`, a deployment's `spec`) and CRDs are read by the
//! tables here, which list more of their fields than the model's views of them.
#![warn(missing_docs)]

use std::borrow::Cow;

use olmpack_model::csv::{
    ClusterServiceVersion, CsvSpec, InstallStrategy, StrategyDeployment, StrategyDetails,
    StrategyPermissions,
};
use olmpack_model::decode::{self, GoKind, Kind};
use olmpack_model::objects::{DeploymentSpec, ObjectMeta};
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

/// The JSON fields of a Go struct, each with the shape of its value.
type Fields = &'static [(&'static str, Shape)];

/// What Go decodes a value into, as far as field names matter.
#[derive(Clone, Copy)]
enum Shape {
    /// A value whose keys are data, not fields (strings, numbers, label maps, schemas).
    Leaf,
    /// A struct.
    Struct(Fields),
    /// A list of structs.
    List(Fields),
    /// A struct of the model, or a list of them.
    Model(Kind),
}

/// The shape of a value of the model's `kind`: the model's structs by their own tables, the
/// Kubernetes objects it models only in part by the tables here.
fn model_shape(kind: Kind) -> Shape {
    match kind {
        Kind::Struct(fields) if *fields == ObjectMeta::FIELDS => Struct(METADATA),
        Kind::Struct(fields) if *fields == DeploymentSpec::FIELDS => Struct(DEPLOYMENT_SPEC),
        Kind::Struct(fields) | Kind::List(&Kind::Struct(fields)) if walked(fields) => {
            Shape::Model(kind)
        }
        _ => Leaf,
    }
}

/// Whether the keys inside a value of the CSV's struct `fields` are matched: the CSV's, its
/// `spec`'s and the install strategy's are. Go matches the keys of the other structs (CRD
/// and API service descriptions, icons, links, ...) ignoring case as well; matching them here
/// would add findings, a change of its own.
fn walked(fields: &decode::Fields) -> bool {
    let walked = [
        ClusterServiceVersion::FIELDS,
        CsvSpec::FIELDS,
        InstallStrategy::FIELDS,
        StrategyDetails::FIELDS,
        StrategyDeployment::FIELDS,
        StrategyPermissions::FIELDS,
    ];
    walked.contains(fields)
}

use Shape::{Leaf, List, Struct};

const METADATA: Fields = &[
    ("name", Leaf),
    ("generateName", Leaf),
    ("namespace", Leaf),
    ("labels", Leaf),
    ("annotations", Leaf),
    ("ownerReferences", Leaf),
    ("finalizers", Leaf),
    ("uid", Leaf),
    ("resourceVersion", Leaf),
    ("generation", Leaf),
    ("creationTimestamp", Leaf),
    ("deletionTimestamp", Leaf),
    ("managedFields", Leaf),
];

/// `{name, optional}` references (`secretKeyRef`, `configMapRef`, projected sources, ...).
const OBJECT_REF: Fields = &[
    ("name", Leaf),
    ("key", Leaf),
    ("optional", Leaf),
    ("items", Leaf),
];
const SECRET_VOLUME: Fields = &[
    ("secretName", Leaf),
    ("optional", Leaf),
    ("items", Leaf),
    ("defaultMode", Leaf),
];
const CONFIG_MAP_VOLUME: Fields = &[
    ("name", Leaf),
    ("optional", Leaf),
    ("items", Leaf),
    ("defaultMode", Leaf),
];
const PROJECTED_SOURCE: Fields = &[
    ("secret", Struct(OBJECT_REF)),
    ("configMap", Struct(OBJECT_REF)),
    ("downwardAPI", Leaf),
    ("serviceAccountToken", Leaf),
    ("clusterTrustBundle", Leaf),
];
const VOLUME: Fields = &[
    ("name", Leaf),
    ("secret", Struct(SECRET_VOLUME)),
    ("configMap", Struct(CONFIG_MAP_VOLUME)),
    (
        "projected",
        Struct(&[("sources", List(PROJECTED_SOURCE)), ("defaultMode", Leaf)]),
    ),
    ("emptyDir", Leaf),
    ("downwardAPI", Leaf),
    ("hostPath", Leaf),
    ("persistentVolumeClaim", Leaf),
    ("csi", Leaf),
    ("ephemeral", Leaf),
];
const ENV_VAR: Fields = &[
    ("name", Leaf),
    ("value", Leaf),
    (
        "valueFrom",
        Struct(&[
            ("secretKeyRef", Struct(OBJECT_REF)),
            ("configMapKeyRef", Struct(OBJECT_REF)),
            ("fieldRef", Leaf),
            ("resourceFieldRef", Leaf),
        ]),
    ),
];
const ENV_FROM: Fields = &[
    ("prefix", Leaf),
    ("secretRef", Struct(OBJECT_REF)),
    ("configMapRef", Struct(OBJECT_REF)),
];
const CONTAINER: Fields = &[
    ("name", Leaf),
    ("image", Leaf),
    ("command", Leaf),
    ("args", Leaf),
    ("env", List(ENV_VAR)),
    ("envFrom", List(ENV_FROM)),
    (
        "volumeMounts",
        List(&[
            ("name", Leaf),
            ("mountPath", Leaf),
            ("readOnly", Leaf),
            ("subPath", Leaf),
        ]),
    ),
    ("ports", Leaf),
    ("resources", Leaf),
    ("securityContext", Leaf),
];
const POD_SPEC: Fields = &[
    ("volumes", List(VOLUME)),
    ("containers", List(CONTAINER)),
    ("initContainers", List(CONTAINER)),
    ("serviceAccountName", Leaf),
];
/// An apps/v1 DeploymentSpec (the `spec` of a CSV's install strategy deployment).
const DEPLOYMENT_SPEC: Fields = &[
    ("replicas", Leaf),
    ("selector", Leaf),
    ("strategy", Leaf),
    (
        "template",
        Struct(&[("metadata", Struct(METADATA)), ("spec", Struct(POD_SPEC))]),
    ),
];
const CRD_NAMES: Fields = &[
    ("plural", Leaf),
    ("singular", Leaf),
    ("shortNames", Leaf),
    ("kind", Leaf),
    ("listKind", Leaf),
    ("categories", Leaf),
];
const SCALE: Fields = &[
    ("specReplicasPath", Leaf),
    ("statusReplicasPath", Leaf),
    ("labelSelectorPath", Leaf),
];
const SUBRESOURCES: Fields = &[("status", Leaf), ("scale", Struct(SCALE))];
const SCHEMA: Fields = &[("openAPIV3Schema", Leaf)];
/// A printer column of `apiextensions.k8s.io/v1` (`jsonPath`).
const COLUMN_V1: Fields = &[
    ("name", Leaf),
    ("type", Leaf),
    ("format", Leaf),
    ("description", Leaf),
    ("priority", Leaf),
    ("jsonPath", Leaf),
];
/// A printer column of `apiextensions.k8s.io/v1beta1`, whose Go field is spelled `JSONPath`.
const COLUMN_V1BETA1: Fields = &[
    ("name", Leaf),
    ("type", Leaf),
    ("format", Leaf),
    ("description", Leaf),
    ("priority", Leaf),
    ("JSONPath", Leaf),
];
const SERVICE_REF: Fields = &[
    ("namespace", Leaf),
    ("name", Leaf),
    ("path", Leaf),
    ("port", Leaf),
];
const CLIENT_CONFIG: Fields = &[
    ("url", Leaf),
    ("service", Struct(SERVICE_REF)),
    ("caBundle", Leaf),
];
const CRD_V1_SPEC: Fields = &[
    ("group", Leaf),
    ("names", Struct(CRD_NAMES)),
    ("scope", Leaf),
    (
        "versions",
        List(&[
            ("name", Leaf),
            ("served", Leaf),
            ("storage", Leaf),
            ("deprecated", Leaf),
            ("deprecationWarning", Leaf),
            ("schema", Struct(SCHEMA)),
            ("subresources", Struct(SUBRESOURCES)),
            ("additionalPrinterColumns", List(COLUMN_V1)),
            ("selectableFields", List(&[("jsonPath", Leaf)])),
        ]),
    ),
    (
        "conversion",
        Struct(&[
            ("strategy", Leaf),
            (
                "webhook",
                Struct(&[
                    ("clientConfig", Struct(CLIENT_CONFIG)),
                    ("conversionReviewVersions", Leaf),
                ]),
            ),
        ]),
    ),
    ("preserveUnknownFields", Leaf),
];
const CRD_V1BETA1_SPEC: Fields = &[
    ("group", Leaf),
    ("version", Leaf),
    ("names", Struct(CRD_NAMES)),
    ("scope", Leaf),
    ("validation", Struct(SCHEMA)),
    ("subresources", Struct(SUBRESOURCES)),
    (
        "versions",
        List(&[
            ("name", Leaf),
            ("served", Leaf),
            ("storage", Leaf),
            ("deprecated", Leaf),
            ("deprecationWarning", Leaf),
            ("schema", Struct(SCHEMA)),
            ("subresources", Struct(SUBRESOURCES)),
            ("additionalPrinterColumns", List(COLUMN_V1BETA1)),
        ]),
    ),
    ("additionalPrinterColumns", List(COLUMN_V1BETA1)),
    (
        "conversion",
        Struct(&[
            ("strategy", Leaf),
            ("webhookClientConfig", Struct(CLIENT_CONFIG)),
            ("conversionReviewVersions", Leaf),
        ]),
    ),
    ("preserveUnknownFields", Leaf),
];

/// The top-level fields of an object whose `spec` has the fields `spec`.
const fn top(spec: Fields) -> [(&'static str, Shape); 5] {
    [
        ("apiVersion", Leaf),
        ("kind", Leaf),
        ("metadata", Struct(METADATA)),
        ("spec", Struct(spec)),
        ("status", Leaf),
    ]
}
const CRD_V1: Fields = &top(CRD_V1_SPEC);
const CRD_V1BETA1: Fields = &top(CRD_V1BETA1_SPEC);

/// The object with its known fields spelled canonically (borrowed when nothing changes).
pub fn go_view(object: &Value) -> (Cow<'_, Value>, Vec<Renamed>) {
    let shape = match object.get("kind").and_then(Value::as_str) {
        Some("ClusterServiceVersion") => Shape::Model(ClusterServiceVersion::KIND),
        Some("CustomResourceDefinition") => {
            let version = object.get("apiVersion").and_then(Value::as_str);
            if version == Some("apiextensions.k8s.io/v1beta1") {
                Struct(CRD_V1BETA1)
            } else {
                Struct(CRD_V1)
            }
        }
        _ => return (Cow::Borrowed(object), Vec::new()),
    };
    let mut renamed = Vec::new();
    let mut copy = object.clone();
    walk(&mut copy, "", shape, &mut renamed);
    if renamed.is_empty() {
        (Cow::Borrowed(object), renamed)
    } else {
        (Cow::Owned(copy), renamed)
    }
}

/// Folds the keys of `value` (at dotted path `at`) and of everything below it, by `shape`.
fn walk(value: &mut Value, at: &str, shape: Shape, out: &mut Vec<Renamed>) {
    match shape {
        Leaf => {}
        Struct(fields) => {
            let children = fields.iter().map(|(field, inner)| (*field, *inner));
            walk_struct(value, at, children.collect(), out);
        }
        List(fields) => walk_items(value, at, Struct(fields), out),
        Shape::Model(Kind::Struct(fields)) => {
            let children = fields.fields.iter().map(|f| (f.key, model_shape(f.kind)));
            walk_struct(value, at, children.collect(), out);
        }
        Shape::Model(Kind::List(item)) => walk_items(value, at, model_shape(*item), out),
        Shape::Model(_) => {}
    }
}

/// Folds the keys of the struct `value` to `fields`, then walks each field's value by its shape.
fn walk_struct(
    value: &mut Value,
    at: &str,
    fields: Vec<(&'static str, Shape)>,
    out: &mut Vec<Renamed>,
) {
    let Some(map) = value.as_object_mut() else {
        return;
    };
    let names: Vec<&'static str> = fields.iter().map(|(field, _)| *field).collect();
    fold(map, at, &names, out);
    for (field, inner) in fields {
        if matches!(inner, Leaf) {
            continue;
        }
        if let Some(child) = map.get_mut(field) {
            walk(child, &join(at, field), inner, out);
        }
    }
}

/// Walks each item of the list `value` by `shape`.
fn walk_items(value: &mut Value, at: &str, shape: Shape, out: &mut Vec<Renamed>) {
    for (i, item) in value.as_array_mut().into_iter().flatten().enumerate() {
        walk(item, &format!("{at}[{i}]"), shape, out);
    }
}

fn join(at: &str, field: &str) -> String {
    if at.is_empty() {
        field.to_owned()
    } else {
        format!("{at}.{field}")
    }
}

/// Renames keys of `map` that match one of `fields` only case-insensitively.
fn fold(map: &mut Map<String, Value>, at: &str, fields: &[&'static str], out: &mut Vec<Renamed>) {
    let mismatched: Vec<(String, &'static str)> = map
        .keys()
        .filter(|k| !fields.iter().any(|f| f == k))
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
    fn every_spec_field_of_the_csv_model_is_matched_ignoring_case() {
        let fields = olmpack_model::csv::CsvSpec::FIELDS;
        for key in fields.keys() {
            let csv = json!({"kind": "ClusterServiceVersion", "spec": {key.to_uppercase(): 1}});
            let (view, renamed) = go_view(&csv);
            assert_eq!(view["spec"], json!({key: 1}));
            let paths: Vec<_> = renamed.iter().map(Renamed::path).collect();
            assert_eq!(paths, [format!("spec.{key}")]);
        }
    }

    #[test]
    fn csv_structs_outside_the_install_strategy_keep_their_inner_keys() {
        let spec = json!({
            "customresourcedefinitions": {"Owned": [{"Name": "ws.example.com"}]},
            "icon": [{"MediaType": "image/png"}],
            "provider": {"URL": "https://example.com"},
        });
        let csv = json!({"kind": "ClusterServiceVersion", "spec": spec});
        assert!(matches!(go_view(&csv), (Cow::Borrowed(_), r) if r.is_empty()));
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

    #[test]
    fn printer_columns_are_matched_by_the_crd_version_s_spelling() {
        let v1 = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "spec": {"versions": [{"name": "v1", "additionalPrinterColumns": [
                {"name": "Ready", "type": "string", "JSONPath": ".status.ready"}
            ]}]},
        });
        let (view, renamed) = go_view(&v1);
        assert_eq!(
            view["spec"]["versions"][0]["additionalPrinterColumns"][0]["jsonPath"],
            ".status.ready"
        );
        assert_eq!(
            renamed.iter().map(Renamed::path).collect::<Vec<_>>(),
            ["spec.versions[0].additionalPrinterColumns[0].jsonPath"]
        );
        let v1beta1 = json!({
            "apiVersion": "apiextensions.k8s.io/v1beta1",
            "kind": "CustomResourceDefinition",
            "spec": {"additionalPrinterColumns": [
                {"name": "Ready", "type": "string", "jsonPath": ".status.ready"},
                {"name": "Age", "type": "date", "JSONPath": ".metadata.creationTimestamp"},
            ]},
        });
        let (view, renamed) = go_view(&v1beta1);
        assert_eq!(
            view["spec"]["additionalPrinterColumns"][0]["JSONPath"],
            ".status.ready"
        );
        assert_eq!(
            renamed.iter().map(Renamed::path).collect::<Vec<_>>(),
            ["spec.additionalPrinterColumns[0].JSONPath"]
        );
    }

    #[test]
    fn pod_spec_fields_of_the_install_strategy_are_matched_ignoring_case() {
        let csv = json!({
            "kind": "ClusterServiceVersion",
            "spec": {"install": {"spec": {"deployments": [{"name": "op", "spec": {"template": {"spec": {
                "Volumes": [{"name": "c", "Secret": {"SecretName": "s", "Optional": true}}],
                "containers": [{"name": "m", "VolumeMounts": [{"Name": "c", "mountPath": "/c"}],
                    "envFrom": [{"configmapref": {"name": "x"}}]}],
            }}}}]}}},
        });
        let (view, renamed) = go_view(&csv);
        let pod = &view["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"];
        assert_eq!(
            pod["volumes"][0],
            json!({"name": "c", "secret": {"secretName": "s", "optional": true}})
        );
        assert_eq!(pod["containers"][0]["volumeMounts"][0]["name"], "c");
        assert_eq!(
            pod["containers"][0]["envFrom"][0]["configMapRef"]["name"],
            "x"
        );
        assert_eq!(renamed.len(), 7, "{renamed:#?}");
    }
}
