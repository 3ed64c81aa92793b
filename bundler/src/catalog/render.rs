//! A registry+v1 bundle → the `olm.bundle` blob `opm render` produces for it.
//!
//! Contract (what opm v1.74 does for a bundle directory, checked against it in
//! `tests/catalog_render.rs`):
//! - manifests: the files directly in `manifests/` not starting with `.`, first document of
//!   each, in name order; only the first CSV counts; the CSV names the bundle;
//! - properties: `metadata/properties.yaml`, the CSV's `operatorframework.io/properties`
//!   annotation, `olm.package` (annotations package + CSV `spec.version`/`spec.release`),
//!   `olm.gvk` per CRD version and owned API service, `olm.gvk.required` per required CRD and API
//!   service and per `olm.gvk` in `dependencies.yaml`, `olm.package.required` per `olm.package`
//!   dependency, other dependencies as they are, one `olm.bundle.object` per manifest; sorted
//!   by type then by encoded value, then `olm.bundle.object`/`olm.csv.metadata` moved last;
//! - relatedImages: the CSV's, plus the bundle image, plus every deployment container and init
//!   container image not already listed (with an empty name), sorted by image;
//! - [`MigrateLevel::BundleObjectToCsvMetadata`] replaces the `olm.bundle.object` properties
//!   by one `olm.csv.metadata` — like opm, only when the bundle has an image (opm skips the
//!   migration for a directory rendered without an image reference).
//!
//! The renderer works on a [`LoadedBundle`]; rendering a bundle *image* is unpacking it into
//! one and calling [`render_loaded`] with the image reference.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::declcfg::{Bundle, Property, RelatedImage, SCHEMA_BUNDLE};
use super::gojson;
use super::property::{self, TYPE_BUNDLE_OBJECT, TYPE_CSV_METADATA, TYPE_GVK, TYPE_PACKAGE};
use crate::bundle::load::{LoadError, LoadedBundle, Object, load_dir};
use crate::json::{array_at, str_at};

/// The CSV annotation that carries extra properties.
pub const PROPERTIES_ANNOTATION: &str = "operatorframework.io/properties";
const PACKAGE_ANNOTATION: &str = "operators.operatorframework.io.bundle.package.v1";

/// Why a bundle cannot be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("failed to read bundle directory")]
    Load(#[from] LoadError),
    #[error("bundle {dir}: no bundle objects found in manifests/")]
    NoObjects { dir: String },
    #[error("bundle {dir}: no ClusterServiceVersion in manifests/")]
    NoCsv { dir: String },
    #[error("bundle {dir}: metadata/annotations.yaml has no package annotation")]
    NoAnnotations { dir: String },
    #[error(
        "bundle {bundle}: owned CRD {name} version {version} ({kind}) is not provided by any CRD in the bundle"
    )]
    MissingOwnedCrd {
        bundle: String,
        name: String,
        version: String,
        kind: String,
    },
    #[error("bundle {bundle}: required CRD name {name:?} is not <plural>.<group>")]
    BadCrdName { bundle: String, name: String },
}

/// How far to migrate the rendered blob (opm's `--migrate-level`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum MigrateLevel {
    #[default]
    None,
    #[value(name = "bundle-object-to-csv-metadata")]
    BundleObjectToCsvMetadata,
}

#[derive(Clone, Debug, Default)]
pub struct RenderOptions {
    /// The bundle image reference (empty for a plain directory, as opm does).
    pub image: String,
    pub migrate: MigrateLevel,
}

/// Renders the bundle directory at `dir`.
pub fn render_dir(dir: &Path, options: &RenderOptions) -> Result<Bundle, RenderError> {
    let loaded = load_dir(dir)?;
    render_loaded(&loaded, options)
}

/// The manifests opm reads: first document of each top-level file, first CSV only.
fn manifests(b: &LoadedBundle) -> Vec<&Object> {
    let mut csv_seen = false;
    b.objects
        .iter()
        .filter(|o| o.index == 0)
        .filter(|o| {
            o.file.parent() == Some(Path::new(crate::bundle::load::MANIFESTS_DIR))
                && !o
                    .file
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .filter(|o| {
            if o.kind() == "ClusterServiceVersion" {
                if csv_seen {
                    return false;
                }
                csv_seen = true;
            }
            true
        })
        .collect()
}

type Gvk = (String, String, String);

/// Renders a loaded bundle (module contract).
pub fn render_loaded(b: &LoadedBundle, options: &RenderOptions) -> Result<Bundle, RenderError> {
    let dir = b.dir.display().to_string();
    let objects = manifests(b);
    if objects.is_empty() {
        return Err(RenderError::NoObjects { dir });
    }
    let csv = objects
        .iter()
        .find(|o| o.kind() == "ClusterServiceVersion")
        .ok_or_else(|| RenderError::NoCsv { dir: dir.clone() })?;
    let csv = &csv.value;
    let name = str_at(csv, "/metadata/name").to_owned();
    let package = b
        .annotation(PACKAGE_ANNOTATION)
        .ok_or_else(|| RenderError::NoAnnotations { dir: dir.clone() })?
        .to_owned();
    let version = str_at(csv, "/spec/version").to_owned();
    let release = match csv.pointer("/spec/release") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };

    // Provided APIs: every CRD version, every owned API service.
    let mut provided: BTreeSet<Gvk> = BTreeSet::new();
    let mut crd_keys: BTreeSet<(String, String, String, String)> = BTreeSet::new();
    for o in objects
        .iter()
        .filter(|o| o.kind() == "CustomResourceDefinition")
    {
        let crd = crate::bundle::crd_v1beta1::to_v1(&o.value);
        let group = str_at(&crd, "/spec/group");
        let kind = str_at(&crd, "/spec/names/kind");
        let plural = str_at(&crd, "/spec/names/plural");
        let mut versions: Vec<&str> = array_at(&crd, "/spec/versions")
            .iter()
            .map(|v| str_at(v, "/name"))
            .collect();
        // opm also reads v1beta1's `spec.version` when `spec.versions` does not list it.
        let legacy = str_at(&o.value, "/spec/version");
        if !legacy.is_empty() {
            versions.push(legacy);
        }
        for v in versions {
            provided.insert((group.into(), v.into(), kind.into()));
            crd_keys.insert((group.into(), v.into(), kind.into(), plural.into()));
        }
    }
    for api in array_at(csv, "/spec/apiservicedefinitions/owned") {
        provided.insert((
            str_at(api, "/group").into(),
            str_at(api, "/version").into(),
            str_at(api, "/kind").into(),
        ));
    }
    for owned in array_at(csv, "/spec/customresourcedefinitions/owned") {
        let crd_name = str_at(owned, "/name");
        let (plural, group) = crd_name
            .split_once('.')
            .ok_or_else(|| RenderError::BadCrdName {
                bundle: name.clone(),
                name: crd_name.to_owned(),
            })?;
        let key = (
            group.to_owned(),
            str_at(owned, "/version").to_owned(),
            str_at(owned, "/kind").to_owned(),
            plural.to_owned(),
        );
        if !crd_keys.contains(&key) {
            return Err(RenderError::MissingOwnedCrd {
                bundle: name.clone(),
                name: crd_name.to_owned(),
                version: key.1,
                kind: key.2,
            });
        }
    }
    let mut required: BTreeSet<Gvk> = BTreeSet::new();
    for req in array_at(csv, "/spec/customresourcedefinitions/required") {
        let crd_name = str_at(req, "/name");
        let (_, group) = crd_name
            .split_once('.')
            .ok_or_else(|| RenderError::BadCrdName {
                bundle: name.clone(),
                name: crd_name.to_owned(),
            })?;
        required.insert((
            group.into(),
            str_at(req, "/version").into(),
            str_at(req, "/kind").into(),
        ));
    }
    for api in array_at(csv, "/spec/apiservicedefinitions/required") {
        required.insert((
            str_at(api, "/group").into(),
            str_at(api, "/version").into(),
            str_at(api, "/kind").into(),
        ));
    }

    // The bundle's own property list, as opm's bundle parser builds it.
    let mut own: Vec<Property> = Vec::new();
    for p in b.properties.iter().flatten() {
        own.push(Property::new(
            str_at(p, "/type"),
            p.get("value").cloned().unwrap_or(Value::Null),
        ));
    }
    own.push(property::package(&package, &version, &release));
    if let Some(text) = csv
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(PROPERTIES_ANNOTATION))
        .and_then(Value::as_str)
        && let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text)
    {
        for p in items {
            own.push(Property::new(
                str_at(&p, "/type"),
                p.get("value").cloned().unwrap_or(Value::Null),
            ));
        }
    }
    dedup(&mut own);

    let mut gvks: BTreeSet<Gvk> = BTreeSet::new();
    let mut package_prop: Option<Property> = None;
    let mut others: Vec<Property> = Vec::new();
    for p in &own {
        match p.type_.as_str() {
            TYPE_GVK => {
                gvks.insert((
                    str_at(&p.value, "/group").into(),
                    str_at(&p.value, "/version").into(),
                    str_at(&p.value, "/kind").into(),
                ));
            }
            TYPE_PACKAGE => {
                package_prop = Some(property::package(
                    str_at(&p.value, "/packageName"),
                    str_at(&p.value, "/version"),
                    str_at(&p.value, "/release"),
                ));
            }
            _ => others.push(p.clone()),
        }
    }
    let mut package_required = Vec::new();
    for d in b.dependencies.iter().flatten() {
        let value = d.get("value").cloned().unwrap_or(Value::Null);
        match str_at(d, "/type") {
            TYPE_GVK => {
                required.insert((
                    str_at(&value, "/group").into(),
                    str_at(&value, "/version").into(),
                    str_at(&value, "/kind").into(),
                ));
            }
            TYPE_PACKAGE => package_required.push(property::package_required(
                str_at(&value, "/packageName"),
                str_at(&value, "/version"),
            )),
            other => others.push(Property::new(other, value)),
        }
    }
    gvks.extend(provided);

    let mut props: Vec<Property> = objects
        .iter()
        .map(|o| property::bundle_object(&gojson::to_vec(&o.value)))
        .collect();
    props.push(package_prop.unwrap_or_else(|| property::package(&package, &version, &release)));
    props.extend(gvks.iter().map(|(g, v, k)| property::gvk(g, v, k)));
    props.extend(
        required
            .iter()
            .map(|(g, v, k)| property::gvk_required(g, v, k)),
    );
    props.extend(package_required);
    props.extend(others);
    let mut keyed: Vec<(Vec<u8>, Property)> =
        props.into_iter().map(|p| (go_bytes(&p), p)).collect();
    keyed.sort_by(|(ka, a), (kb, b)| a.type_.cmp(&b.type_).then_with(|| ka.cmp(kb)));
    let props: Vec<Property> = keyed.into_iter().map(|(_, p)| p).collect();
    let (objs, rest): (Vec<Property>, Vec<Property>) = props
        .into_iter()
        .partition(|p| p.type_ == TYPE_BUNDLE_OBJECT || p.type_ == TYPE_CSV_METADATA);
    let mut properties = rest;
    properties.extend(objs);

    if options.migrate == MigrateLevel::BundleObjectToCsvMetadata
        && !options.image.is_empty()
        && !properties.iter().any(|p| p.type_ == TYPE_CSV_METADATA)
    {
        properties.retain(|p| p.type_ != TYPE_BUNDLE_OBJECT);
        properties.push(Property::new(TYPE_CSV_METADATA, csv_metadata(csv)));
    }

    Ok(Bundle {
        origin: None,
        schema: SCHEMA_BUNDLE.to_owned(),
        name,
        package,
        image: options.image.clone(),
        properties,
        related_images: related_images(csv, &options.image),
    })
}

/// What `opm render <catalog-dir>` does to an already rendered catalog: `olm.bundle.object` and
/// `olm.csv.metadata` properties moved last, relatedImages sorted by image, and the migration
/// (for bundles with an image whose `olm.bundle.object`s include a CSV).
pub fn normalize_catalog(cfg: &mut super::declcfg::DeclarativeConfig, migrate: MigrateLevel) {
    for b in &mut cfg.bundles {
        let (objs, rest): (Vec<Property>, Vec<Property>) = std::mem::take(&mut b.properties)
            .into_iter()
            .partition(|p| p.type_ == TYPE_BUNDLE_OBJECT || p.type_ == TYPE_CSV_METADATA);
        b.properties = rest;
        b.properties.extend(objs);
        b.related_images.sort_by(|x, y| x.image.cmp(&y.image));
        if migrate != MigrateLevel::BundleObjectToCsvMetadata
            || b.image.is_empty()
            || b.properties.iter().any(|p| p.type_ == TYPE_CSV_METADATA)
        {
            continue;
        }
        let csv = b
            .properties
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match property::parse(i, p) {
                Ok(property::Typed::BundleObject(bytes)) => {
                    serde_json::from_slice::<Value>(&bytes).ok()
                }
                _ => None,
            })
            .find(|o| o.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion"));
        if let Some(csv) = csv {
            b.properties.retain(|p| p.type_ != TYPE_BUNDLE_OBJECT);
            b.properties
                .push(Property::new(TYPE_CSV_METADATA, csv_metadata(&csv)));
        }
    }
}

/// The bytes Go would have for a property value (opm sorts by them).
fn go_bytes(p: &Property) -> Vec<u8> {
    if p.type_ == TYPE_PACKAGE {
        // Go struct order: packageName, version, release.
        let mut s = format!(
            "{{\"packageName\":{},\"version\":{}",
            String::from_utf8_lossy(&gojson::to_vec(&json!(str_at(&p.value, "/packageName")))),
            String::from_utf8_lossy(&gojson::to_vec(&json!(str_at(&p.value, "/version"))))
        );
        let release = str_at(&p.value, "/release");
        if !release.is_empty() {
            s.push_str(&format!(
                ",\"release\":{}",
                String::from_utf8_lossy(&gojson::to_vec(&json!(release)))
            ));
        }
        s.push('}');
        return s.into_bytes();
    }
    gojson::to_vec(&p.value)
}

fn dedup(props: &mut Vec<Property>) {
    let mut seen = BTreeSet::new();
    props.retain(|p| seen.insert((p.type_.clone(), gojson::to_vec(&p.value))));
}

fn related_images(csv: &Value, bundle_image: &str) -> Vec<RelatedImage> {
    let mut out: Vec<RelatedImage> = array_at(csv, "/spec/relatedImages")
        .iter()
        .map(|r| RelatedImage {
            name: str_at(r, "/name").to_owned(),
            image: str_at(r, "/image").to_owned(),
        })
        .collect();
    let mut all: BTreeSet<String> = out.iter().map(|r| r.image.clone()).collect();
    if !bundle_image.is_empty() && !all.contains(bundle_image) {
        out.push(RelatedImage {
            name: String::new(),
            image: bundle_image.to_owned(),
        });
    }
    if str_at(csv, "/spec/install/strategy") == "deployment" {
        let mut images = BTreeSet::new();
        for d in array_at(csv, "/spec/install/spec/deployments") {
            for key in ["containers", "initContainers"] {
                for c in array_at(d, &format!("/spec/template/spec/{key}")) {
                    images.insert(str_at(c, "/image").to_owned());
                }
            }
        }
        for image in images {
            if all.insert(image.clone()) {
                out.push(RelatedImage {
                    name: String::new(),
                    image,
                });
            }
        }
    }
    out.sort_by(|a, b| a.image.cmp(&b.image));
    out
}

/// Go's `omitempty`: false, 0, "", empty list or map, null.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(_) => false,
    }
}

/// Keeps the listed fields of a Go struct: `(key, omitempty, sub-projection)`.
/// A Go struct field: JSON key, `omitempty`, and how to project its value.
type GoField<'a> = (&'a str, bool, Option<fn(&Value) -> Value>);

fn project(v: &Value, fields: &[GoField<'_>]) -> Value {
    let mut out = Map::new();
    for (key, omitempty, sub) in fields {
        let field = v.get(*key).cloned().unwrap_or(Value::Null);
        let field = match sub {
            Some(f) if !field.is_null() => f(&field),
            _ => field,
        };
        if *omitempty && is_empty(&field) {
            continue;
        }
        let field = if field.is_null() {
            // A non-omitempty Go field prints its zero value.
            match *key {
                "supported" => Value::Bool(false),
                _ => Value::String(String::new()),
            }
        } else {
            field
        };
        out.insert((*key).to_owned(), field);
    }
    Value::Object(out)
}

fn list_of(v: &Value, f: fn(&Value) -> Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(f).collect()),
        _ => Value::Null,
    }
}

fn descriptor(v: &Value) -> Value {
    project(
        v,
        &[
            ("path", false, None),
            ("displayName", true, None),
            ("description", true, None),
            ("x-descriptors", true, None),
            ("value", true, None),
        ],
    )
}

fn resource_ref(v: &Value) -> Value {
    project(
        v,
        &[
            ("name", false, None),
            ("kind", false, None),
            ("version", false, None),
        ],
    )
}

fn crd_description(v: &Value) -> Value {
    project(
        v,
        &[
            ("name", false, None),
            ("version", false, None),
            ("kind", false, None),
            ("displayName", true, None),
            ("description", true, None),
            ("resources", true, Some(|v| list_of(v, resource_ref))),
            ("statusDescriptors", true, Some(|v| list_of(v, descriptor))),
            ("specDescriptors", true, Some(|v| list_of(v, descriptor))),
            ("actionDescriptors", true, Some(|v| list_of(v, descriptor))),
        ],
    )
}

fn apiservice_description(v: &Value) -> Value {
    project(
        v,
        &[
            ("name", false, None),
            ("group", false, None),
            ("version", false, None),
            ("kind", false, None),
            ("deploymentName", true, None),
            ("containerPort", true, None),
            ("displayName", true, None),
            ("description", true, None),
            ("resources", true, Some(|v| list_of(v, resource_ref))),
            ("statusDescriptors", true, Some(|v| list_of(v, descriptor))),
            ("specDescriptors", true, Some(|v| list_of(v, descriptor))),
            ("actionDescriptors", true, Some(|v| list_of(v, descriptor))),
        ],
    )
}

fn app_link(v: &Value) -> Value {
    project(v, &[("name", true, None), ("url", true, None)])
}

/// The `olm.csv.metadata` value opm builds from a CSV.
pub fn csv_metadata(csv: &Value) -> Value {
    let spec = csv.get("spec").cloned().unwrap_or(Value::Null);
    let metadata = csv.get("metadata").cloned().unwrap_or(Value::Null);
    let mut out = Map::new();
    let mut put = |key: &str, v: Value, omitempty: bool| {
        if !(omitempty && is_empty(&v)) {
            out.insert(key.to_owned(), v);
        }
    };
    let get = |v: &Value, k: &str| v.get(k).cloned().unwrap_or(Value::Null);
    let owned_required = |v: Value, f: fn(&Value) -> Value| {
        project(&v, &[("owned", true, Some(f)), ("required", true, Some(f))])
    };
    put("annotations", get(&metadata, "annotations"), true);
    put(
        "apiServiceDefinitions",
        owned_required(get(&spec, "apiservicedefinitions"), |v| {
            list_of(v, apiservice_description)
        }),
        false,
    );
    put(
        "crdDescriptions",
        owned_required(get(&spec, "customresourcedefinitions"), |v| {
            list_of(v, crd_description)
        }),
        false,
    );
    put("description", get(&spec, "description"), true);
    put("displayName", get(&spec, "displayName"), true);
    put(
        "installModes",
        list_of(&get(&spec, "installModes"), |v| {
            project(v, &[("type", false, None), ("supported", false, None)])
        }),
        true,
    );
    put("keywords", get(&spec, "keywords"), true);
    put("labels", get(&metadata, "labels"), true);
    put("links", list_of(&get(&spec, "links"), app_link), true);
    put(
        "maintainers",
        list_of(&get(&spec, "maintainers"), |v| {
            project(v, &[("name", true, None), ("email", true, None)])
        }),
        true,
    );
    put("maturity", get(&spec, "maturity"), true);
    put("minKubeVersion", get(&spec, "minKubeVersion"), true);
    put(
        "nativeAPIs",
        list_of(&get(&spec, "nativeAPIs"), |v| {
            project(
                v,
                &[
                    ("group", false, None),
                    ("version", false, None),
                    ("kind", false, None),
                ],
            )
        }),
        true,
    );
    put("provider", app_link(&get(&spec, "provider")), false);
    Value::Object(out)
}
