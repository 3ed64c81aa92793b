//! A registry+v1 bundle → the `olm.bundle` blob `opm render` produces for it.
//!
//! Contract (what opm v1.74 does for a bundle directory; `tests/catalog_render.rs` and the
//! corpus test `tests/realworld_render.rs` compare with the real opm byte for byte):
//! - manifests: every file directly in `manifests/` whose name does not start with `.`, in
//!   name order, whatever its extension; only its first document counts, a file whose first
//!   document does not decode as an object with a `kind` is skipped; only the first CSV
//!   counts; the CSV names the bundle;
//! - metadata: every file directly in `metadata/`, in name order, is tried as the
//!   annotations file (an `annotations` mapping with a package, channels or default channel),
//!   the dependencies file (a non-empty `dependencies` list) and the properties file (a
//!   non-empty `properties` list); the first file that fits each role plays it, whatever its
//!   name. Without an annotations file the bundle does not render;
//! - properties: the properties file's, then `olm.package` (annotations package + CSV
//!   `spec.version`/`spec.release`), the CSV's `olm.properties` annotation (e.g.
//!   `olm.maxOpenShiftVersion`), `olm.gvk` per CRD version and owned API service, duplicates
//!   removed; the last `olm.package` wins; `olm.gvk.required` per required CRD and API
//!   service and per `olm.gvk` dependency, `olm.package.required` per `olm.package`
//!   dependency, other dependencies as they are, one `olm.bundle.object` per manifest; sorted
//!   by type then by encoded value, then `olm.bundle.object`/`olm.csv.metadata` moved last;
//! - relatedImages: the CSV's, plus the bundle image, plus every deployment container and init
//!   container image not already listed (with an empty name), sorted by image with Go's
//!   unstable `sort.Slice` ([`super::gosort`]: equal images end where opm leaves them);
//! - fields opm decodes into Go types (CSV metadata, version, CRD and API service
//!   definitions, related images, CRD names and versions, typed property values) fail the
//!   render when they have the wrong JSON type, as opm's decoding does;
//! - [`MigrateLevel::BundleObjectToCsvMetadata`] replaces the `olm.bundle.object` properties
//!   by one `olm.csv.metadata` — like opm, only when the bundle has an image (opm skips the
//!   migration for a directory rendered without an image reference).
//!
//! The renderer works on the bundle's files; rendering a bundle *image* is unpacking it and
//! calling [`render_files`] with the image reference.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::declcfg::{Bundle, Property, RelatedImage, SCHEMA_BUNDLE, lookup};
use super::gojson;
use super::property::{
    self, PropertyError, TYPE_BUNDLE_OBJECT, TYPE_CSV_METADATA, TYPE_GVK, TYPE_PACKAGE,
};
use crate::bundle::load::{BundleLoadError, LoadedBundle};
use crate::json::{array_at, str_at};
use crate::refusal::Refusal;
use olmpack_model::csv::{CsvSpec, RelatedImage as CsvRelatedImage};
use olmpack_model::decode::{Fields, Kind};
use olmpack_model::objects::ObjectMeta;
use olmpack_model::yaml::Leniency;

/// The CSV annotation that carries extra properties (opm reads this key only).
pub const PROPERTIES_ANNOTATION: &str = "olm.properties";
const PACKAGE_ANNOTATION: &str = "operators.operatorframework.io.bundle.package.v1";
const CHANNELS_ANNOTATION: &str = "operators.operatorframework.io.bundle.channels.v1";
const DEFAULT_CHANNEL_ANNOTATION: &str = "operators.operatorframework.io.bundle.channel.default.v1";

/// Why a bundle cannot be rendered (each is a bundle opm refuses to render too).
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The bundle directory is missing, not a directory, or cannot be listed.
    #[error("failed to read bundle directory")]
    Load(#[from] BundleLoadError),
    /// No file directly in `manifests/` has a first document that is an object with a `kind`.
    #[error("bundle {dir}: no bundle objects found in manifests/{skipped}")]
    NoObjects {
        /// The bundle directory, as given.
        dir: String,
        /// The files opm skipped because their first document does not decode (they may be
        /// the missing piece), each with the reason.
        skipped: SkippedList,
    },
    /// `manifests/` holds objects but no ClusterServiceVersion, so the bundle has no name.
    #[error("bundle {dir}: no ClusterServiceVersion in manifests/{skipped}")]
    NoCsv {
        /// The bundle directory, as given.
        dir: String,
        /// The files opm skipped because their first document does not decode (they may be
        /// the missing piece), each with the reason.
        skipped: SkippedList,
    },
    /// No file in `metadata/` is an annotations file, so the bundle has no package.
    #[error(
        "bundle {dir}: no file in metadata/ has an `annotations` mapping with the package annotation{skipped}"
    )]
    NoAnnotations {
        /// The bundle directory, as given.
        dir: String,
        /// The files opm skipped because their first document does not decode (they may be
        /// the missing piece), each with the reason.
        skipped: SkippedList,
    },
    /// The CSV owns a CRD version that no CustomResourceDefinition in `manifests/` serves.
    #[error(
        "bundle {bundle}: owned CRD {name} version {version} ({kind}) is not provided by any CRD in the bundle{skipped}"
    )]
    MissingOwnedCrd {
        /// The bundle (CSV) name.
        bundle: String,
        /// The owned CRD's name (`<plural>.<group>`) as the CSV lists it.
        name: String,
        /// The owned API version (e.g. `v1beta1`).
        version: String,
        /// The owned kind.
        kind: String,
        /// The files opm skipped because their first document does not decode (the CRD may be
        /// among them), each with the reason.
        skipped: SkippedList,
    },
    /// A CRD the CSV owns or requires is named without a dot, so it has no API group.
    #[error("bundle {bundle}: {role} CRD name {name:?} is not <plural>.<group>")]
    BadCrdName {
        /// The bundle (CSV) name.
        bundle: String,
        /// `owned` or `required`: the CSV list the name is in.
        role: &'static str,
        /// The CRD name as the CSV lists it.
        name: String,
    },
    /// A field opm decodes into a Go type has the wrong JSON type.
    #[error("bundle {bundle}: {object}: `{field}` must be {expected}; opm cannot decode it")]
    FieldType {
        /// The bundle (CSV) name.
        bundle: String,
        /// The object holding the field (e.g. `ClusterServiceVersion`).
        object: String,
        /// The field's dotted path within the object (e.g. `spec.release`).
        field: String,
        /// The JSON type opm expects (e.g. `a string or a number`).
        expected: &'static str,
    },
    /// A property or dependency in `metadata/` has a value that does not decode for its type.
    #[error("bundle {bundle}: {file}")]
    Property {
        /// The bundle (CSV) name.
        bundle: String,
        /// Which metadata file role: `properties` or `dependencies`.
        file: String,
        /// Which entry is wrong and how.
        #[source]
        source: PropertyError,
    },
}

/// A bundle olmpack cannot render is invalid (refused), unless it could not be read at all
/// (then its loader says).
impl Refusal for RenderError {
    fn refuses_input(&self) -> bool {
        match self {
            RenderError::Load(load) => load.refuses_input(),
            _ => true,
        }
    }
}

/// A file opm reads but skips because its first document does not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Relative to the bundle directory.
    pub file: PathBuf,
    /// Why opm skips it: its first document has bad syntax, or (in `manifests/`) is not an
    /// object with a `kind`.
    pub reason: String,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: skipped, as opm skips it: {}",
            self.file.display(),
            self.reason
        )
    }
}

/// A file opm reads leniently, as Go's YAML decoder does (a key given twice keeps its last
/// value): worth a warning, as stricter readers refuse it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lenient {
    /// Relative to the bundle directory.
    pub file: PathBuf,
    /// 1-based line in the file.
    pub line: u64,
    /// What was read leniently.
    pub message: String,
}

impl std::fmt::Display for Lenient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: line {}: {}",
            self.file.display(),
            self.line,
            self.message
        )
    }
}

/// The skipped files, for error messages (empty, or ` (<file>: …; …)`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkippedList(pub Vec<Skipped>);

impl std::fmt::Display for SkippedList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return Ok(());
        }
        let items: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        write!(f, " ({})", items.join("; "))
    }
}

/// A rendered bundle and the files opm's reading skips (worth a warning each).
#[derive(Clone, Debug)]
pub struct Rendered {
    /// The `olm.bundle` blob, as opm renders it.
    pub bundle: Bundle,
    /// The files opm's reading skipped, in the order they were met.
    pub skipped: Vec<Skipped>,
    /// What opm's reading took leniently, in file order.
    pub lenient: Vec<Lenient>,
}

/// How far to migrate the rendered blob (opm's `--migrate-level`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MigrateLevel {
    /// No migration: the blob keeps one `olm.bundle.object` property per manifest.
    #[default]
    None,
    /// Replace the `olm.bundle.object` properties by one `olm.csv.metadata` property (only
    /// when the bundle has an image, like opm).
    BundleObjectToCsvMetadata,
}

impl olmpack_model::choice::Choice for MigrateLevel {
    const CHOICES: &'static [(&'static str, Self)] = &[
        ("none", MigrateLevel::None),
        (
            "bundle-object-to-csv-metadata",
            MigrateLevel::BundleObjectToCsvMetadata,
        ),
    ];
}

/// How to render a bundle (opm's `render` flags that matter for one bundle).
#[derive(Clone, Debug, Default)]
pub struct RenderOptions {
    /// The bundle image reference (empty for a plain directory, as opm does).
    pub image: String,
    /// How far to migrate the rendered blob.
    pub migrate: MigrateLevel,
    /// How much is read at most (the command line's `--max-*` flags).
    pub limits: olmpack_oci::input::Limits,
}

/// Renders the bundle directory at `dir`.
pub fn render_dir(dir: &Path, options: &RenderOptions) -> Result<Bundle, RenderError> {
    Ok(render_dir_reporting(dir, options)?.bundle)
}

/// [`render_dir`], also returning the files opm skips.
pub fn render_dir_reporting(dir: &Path, options: &RenderOptions) -> Result<Rendered, RenderError> {
    if !dir.is_dir() {
        return Err(BundleLoadError::NotADirectory {
            path: dir.to_path_buf(),
        }
        .into());
    }
    let mut tree = olmpack_oci::input::read_tree(dir, &options.limits).map_err(|source| {
        BundleLoadError::Read {
            path: dir.to_path_buf(),
            source,
        }
    })?;
    // A file opm would read that cannot be read at all (a FIFO, a symlink loop, too large) is
    // the error, not what is missing because of it; `bundle validate` and `image build` refuse
    // it alike.
    crate::bundle::load::refuse_unreadable(dir, &mut tree)?;
    render_bundle(dir, &tree.files, options)
}

/// Renders a loaded bundle (module contract).
pub fn render_loaded(b: &LoadedBundle, options: &RenderOptions) -> Result<Bundle, RenderError> {
    render_files(&b.dir, &b.files, options)
}

/// Renders a bundle olmpack built, from the objects and metadata it was built with: each of
/// its manifest files holds one object and its metadata files are YAML, so what opm would
/// decode from the files is what was built, and no file is parsed back.
pub fn render_built(b: &LoadedBundle, options: &RenderOptions) -> Result<Bundle, RenderError> {
    let objects = (b.objects.iter())
        .map(|o| &o.value)
        .filter(|v| is_manifest(v));
    let read = Read {
        objects: first_csv_only(objects.map(Cow::Borrowed)),
        meta: built_metadata(b),
        skipped: Vec::new(),
        lenient: Vec::new(),
    };
    Ok(render_read(&b.dir, read, options)?.bundle)
}

/// What opm reads of a bundle (module contract): its objects, the roles its metadata files
/// play, and what it skipped or read leniently on the way.
struct Read<'a> {
    objects: Vec<Cow<'a, Value>>,
    meta: Option<Metadata>,
    skipped: Vec<Skipped>,
    lenient: Vec<Lenient>,
}

/// Renders a bundle from its files (relative path → contents); `dir` labels errors.
pub fn render_files(
    dir: &Path,
    files: &BTreeMap<PathBuf, Vec<u8>>,
    options: &RenderOptions,
) -> Result<Bundle, RenderError> {
    Ok(render_bundle(dir, files, options)?.bundle)
}

type Gvk = (String, String, String);
/// group, version, kind, plural — opm's API key.
type ApiKey = (String, String, String, String);

/// [`render_files`], also returning the files opm skips (module contract).
pub fn render_bundle(
    dir: &Path,
    files: &BTreeMap<PathBuf, Vec<u8>>,
    options: &RenderOptions,
) -> Result<Rendered, RenderError> {
    let mut skipped = Vec::new();
    let mut lenient = Vec::new();
    let objects = manifests(files, &mut skipped, &mut lenient);
    let meta = metadata(files, &mut skipped, &mut lenient);
    let read = Read {
        objects,
        meta,
        skipped,
        lenient,
    };
    render_read(dir, read, options)
}

/// Renders what was read of the bundle at `dir` (which labels errors).
fn render_read(
    dir: &Path,
    read: Read<'_>,
    options: &RenderOptions,
) -> Result<Rendered, RenderError> {
    let Read {
        objects,
        meta,
        skipped,
        lenient,
    } = read;
    let label = dir.display().to_string();
    let list = || SkippedList(skipped.clone());
    if objects.is_empty() {
        return Err(RenderError::NoObjects {
            dir: label,
            skipped: list(),
        });
    }
    let csv = objects
        .iter()
        .find(|o| kind(o) == "ClusterServiceVersion")
        .ok_or_else(|| RenderError::NoCsv {
            dir: label.clone(),
            skipped: list(),
        })?;
    let ctx = Ctx {
        bundle: str_at(csv, "/metadata/name").to_owned(),
    };
    ctx.check_csv(csv)?;
    let provided = ctx.provided_apis(&objects, csv)?;
    ctx.check_owned(csv, &provided, &skipped)?;
    let meta = meta.ok_or_else(|| RenderError::NoAnnotations {
        dir: label,
        skipped: list(),
    })?;
    let version = ctx.version(csv)?;
    let release = release(csv);

    let own = declared_properties(&meta, csv, &provided, &version, &release);
    let properties = ctx.properties(&own, &meta, csv, &version, &release)?;
    let properties = with_manifests(properties, &objects, csv, options);
    let related_images = ctx.related_images(csv, &options.image)?;
    let bundle = Bundle {
        origin: None,
        schema: SCHEMA_BUNDLE.to_owned(),
        name: ctx.bundle,
        package: meta.package,
        image: options.image.clone(),
        properties,
        related_images,
    };
    Ok(Rendered {
        bundle,
        skipped,
        lenient,
    })
}

/// The properties the bundle declares, as opm's bundle parser collects them: the properties
/// file's, `olm.package` (annotations package, CSV version and release), the CSV's
/// `olm.properties` annotation and an `olm.gvk` per provided API; duplicates removed.
fn declared_properties(
    meta: &Metadata,
    csv: &Value,
    provided: &BTreeSet<ApiKey>,
    version: &str,
    release: &str,
) -> Vec<Property> {
    let mut own: Vec<Property> = meta.properties.clone();
    if !meta.package.is_empty() {
        own.push(property::package(&meta.package, version, release));
    }
    own.extend(annotation_properties(csv));
    let gvks: BTreeSet<(&str, &str, &str)> = provided
        .iter()
        .map(|(g, v, k, _)| (g.as_str(), v.as_str(), k.as_str()))
        .collect();
    own.extend(gvks.into_iter().map(|(g, v, k)| property::gvk(g, v, k)));
    dedup(&mut own);
    own
}

/// The blob's property list: `properties` and an `olm.bundle.object` per manifest, sorted —
/// or, when migrating, the `olm.bundle.object`s replaced by one `olm.csv.metadata`, last.
/// Those are not encoded at all then: the sort is stable and orders by type first, so leaving
/// them out leaves the others' order as it would be.
fn with_manifests(
    mut properties: Vec<Property>,
    objects: &[Cow<'_, Value>],
    csv: &Value,
    options: &RenderOptions,
) -> Vec<Property> {
    let migrate = options.migrate == MigrateLevel::BundleObjectToCsvMetadata
        && !options.image.is_empty()
        && !properties.iter().any(|p| p.type_ == TYPE_CSV_METADATA);
    if !migrate {
        let mut json = Vec::new();
        properties.extend(objects.iter().map(|o| {
            json.clear();
            gojson::append(&mut json, o);
            property::bundle_object(&json)
        }));
    }
    let mut properties = sort_properties(properties);
    if migrate {
        properties.push(Property::new(TYPE_CSV_METADATA, csv_metadata(csv)));
    }
    properties
}

fn kind(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or("")
}

/// Whether opm counts a manifest's first document: an object with a kind.
fn is_manifest(v: &Value) -> bool {
    v.is_object() && !kind(v).is_empty()
}

/// The first document of every top-level manifest file that decodes as an object with a
/// kind, first CSV only.
fn manifests(
    files: &BTreeMap<PathBuf, Vec<u8>>,
    skipped: &mut Vec<Skipped>,
    lenient: &mut Vec<Lenient>,
) -> Vec<Cow<'static, Value>> {
    let mut out = Vec::new();
    for (path, contents) in files {
        let in_manifests = path.parent() == Some(Path::new(crate::bundle::load::MANIFESTS_DIR));
        let hidden = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if !in_manifests || hidden {
            continue;
        }
        let value = match first_document(contents) {
            Ok(Some((value, notes))) if is_manifest(&value) => {
                lenient.extend(notes.into_iter().map(|n| note(path, n)));
                value
            }
            Ok(_) => {
                skipped.push(Skipped {
                    file: path.clone(),
                    reason: "its first document is not a Kubernetes object with a kind".into(),
                });
                continue;
            }
            Err(reason) => {
                skipped.push(Skipped {
                    file: path.clone(),
                    reason,
                });
                continue;
            }
        };
        out.push(Cow::Owned(value));
    }
    first_csv_only(out.into_iter())
}

/// The objects with every CSV after the first left out: only the first one counts.
fn first_csv_only<'a>(objects: impl Iterator<Item = Cow<'a, Value>>) -> Vec<Cow<'a, Value>> {
    let mut csv_seen = false;
    let first = |v: &Cow<'a, Value>| {
        kind(v) != "ClusterServiceVersion" || !std::mem::replace(&mut csv_seen, true)
    };
    objects.filter(first).collect()
}

/// The first document of a file as Kubernetes' YAML-or-JSON decoder reads it: JSON when the
/// text starts with `{`, else the YAML up to the first `---` line that has content. YAML is
/// read as Go's decoder reads it (a key given twice keeps its last value); what was read that
/// way comes back as notes, each with its line in the file.
pub fn first_document(contents: &[u8]) -> Result<Option<(Value, Vec<Leniency>)>, String> {
    let text = std::str::from_utf8(olmpack_oci::input::strip_bom(contents))
        .map_err(|_| "not UTF-8 text".to_owned())?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        let mut stream = serde_json::Deserializer::from_str(trimmed).into_iter::<Value>();
        return match stream.next() {
            None => Ok(None),
            Some(Ok(v)) => Ok(Some((v, Vec::new()))),
            Some(Err(e)) => Err(format!("invalid JSON: {e}")),
        };
    }
    let (start, end) = first_document_bounds(text)?;
    let doc = &text[start..end];
    if doc.trim().is_empty() {
        return Ok(None);
    }
    if let Ok(value) = olmpack_model::yaml::value_from_str(doc) {
        return Ok(Some((value, Vec::new())));
    }
    let (value, mut notes) = olmpack_model::yaml::from_str_go(doc).map_err(|e| e.to_string())?;
    let before = text[..start].matches('\n').count() as u64;
    for note in &mut notes {
        note.line += before;
    }
    Ok(Some((value, notes)))
}

/// Where the first YAML document with content lies in `text`: from after the last `---` line
/// before it to the next `---` line (or the end). Separator lines are found with `memmem`, not
/// line by line.
fn first_document_bounds(text: &str) -> Result<(usize, usize), String> {
    let bytes = text.as_bytes();
    let at_start = text.starts_with("---").then_some(0);
    let later = memchr::memmem::find_iter(bytes, b"\n---").map(|i| i + 1);
    let mut start = 0;
    for at in at_start.into_iter().chain(later) {
        let line_end = memchr::memchr(b'\n', &bytes[at..]).map_or(text.len(), |n| at + n + 1);
        let line = &text[at..line_end];
        let rest = line[3..].trim();
        if !rest.is_empty() && !rest.starts_with('#') {
            return Err(format!(
                "text after the document separator: {:?}",
                line.trim_end()
            ));
        }
        if !text[start..at].trim().is_empty() {
            return Ok((start, at));
        }
        start = line_end;
    }
    Ok((start, text.len()))
}

/// Whether Kubernetes' YAML-or-JSON decoder reads `contents` as JSON (it starts with `{`).
fn is_json_text(contents: &[u8]) -> bool {
    olmpack_oci::input::strip_bom(contents)
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        == Some(&b'{')
}

fn note(file: &Path, n: Leniency) -> Lenient {
    Lenient {
        file: file.to_path_buf(),
        line: n.line,
        message: n.message,
    }
}

/// What opm reads from `metadata/`.
struct Metadata {
    package: String,
    dependencies: Vec<Property>,
    properties: Vec<Property>,
}

/// The annotations, dependencies and properties files (module contract), or `None` when no
/// file has the annotations.
fn metadata(
    files: &BTreeMap<PathBuf, Vec<u8>>,
    skipped: &mut Vec<Skipped>,
    lenient: &mut Vec<Lenient>,
) -> Option<Metadata> {
    let mut annotations: Option<String> = None;
    let mut dependencies: Option<Vec<Property>> = None;
    let mut properties: Option<Vec<Property>> = None;
    for (path, contents) in files {
        if path.parent() != Some(Path::new(crate::bundle::load::METADATA_DIR)) {
            continue;
        }
        // opm converts YAML to JSON with Go's default encoder: values copied from a YAML
        // file keep `<`, `>`, `&` escaped.
        let yaml = !is_json_text(contents);
        let doc = match first_document(contents) {
            Ok(Some((doc, notes))) => {
                lenient.extend(notes.into_iter().map(|n| note(path, n)));
                doc
            }
            Ok(None) => continue,
            Err(reason) => {
                skipped.push(Skipped {
                    file: path.clone(),
                    reason,
                });
                continue;
            }
        };
        let Some(map) = doc.as_object() else {
            continue;
        };
        if annotations.is_none() {
            annotations = annotations_of(map);
        }
        let escaped = |mut list: Vec<Property>| {
            list.iter_mut().for_each(|p| p.html_escaped = yaml);
            list
        };
        if dependencies.is_none() {
            dependencies = property_list(map, "dependencies").map(escaped);
        }
        if properties.is_none() {
            properties = property_list(map, "properties").map(escaped);
        }
    }
    Some(Metadata {
        package: annotations?,
        dependencies: dependencies.unwrap_or_default(),
        properties: properties.unwrap_or_default(),
    })
}

/// The metadata of a bundle olmpack built, as [`metadata`] reads it from the files written
/// for it (YAML, each list in a file of its own).
fn built_metadata(b: &LoadedBundle) -> Option<Metadata> {
    let annotations = (b.annotations.iter()).map(|a| ("annotations", json!(a)));
    let lists = [
        ("dependencies", &b.dependencies),
        ("properties", &b.properties),
    ];
    let lists = (lists.into_iter()).filter_map(|(key, list)| Some((key, json!(list.as_ref()?))));
    let map: Map<String, Value> = (annotations.chain(lists))
        .map(|(key, value)| (key.to_owned(), value))
        .collect();
    let from_yaml = |mut list: Vec<Property>| {
        list.iter_mut().for_each(|p| p.html_escaped = true);
        list
    };
    Some(Metadata {
        package: annotations_of(&map)?,
        dependencies: (property_list(&map, "dependencies").map(from_yaml)).unwrap_or_default(),
        properties: (property_list(&map, "properties").map(from_yaml)).unwrap_or_default(),
    })
}

/// The package annotation when `map` decodes as opm's annotations file with any of its three
/// annotations set.
fn annotations_of(map: &Map<String, Value>) -> Option<String> {
    let a = match lookup(map, "annotations") {
        None | Some(Value::Null) => return None,
        Some(Value::Object(a)) => a,
        Some(_) => return None,
    };
    let mut values = Vec::new();
    for key in [
        PACKAGE_ANNOTATION,
        CHANNELS_ANNOTATION,
        DEFAULT_CHANNEL_ANNOTATION,
    ] {
        match lookup(a, key) {
            None | Some(Value::Null) => values.push(""),
            Some(Value::String(s)) => values.push(s.as_str()),
            Some(_) => return None,
        }
    }
    values
        .iter()
        .any(|v| !v.is_empty())
        .then(|| values[0].to_owned())
}

/// A non-empty `{type, value}` list under `key` when `map` decodes as opm's dependencies or
/// properties file.
fn property_list(map: &Map<String, Value>, key: &str) -> Option<Vec<Property>> {
    let items = match lookup(map, key) {
        Some(Value::Array(items)) => items,
        _ => return None,
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::Null => out.push(Property::new("", Value::Null)),
            Value::Object(m) => {
                let type_ = match lookup(m, "type") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s.clone(),
                    Some(_) => return None,
                };
                let value = lookup(m, "value").cloned().unwrap_or(Value::Null);
                out.push(Property::new(type_, value));
            }
            _ => return None,
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The CSV's `olm.properties` annotation, when it decodes as a property list.
fn annotation_properties(csv: &Value) -> Vec<Property> {
    let Some(text) = metadata_field(csv, "annotations")
        .and_then(|a| a.get(PROPERTIES_ANNOTATION))
        .and_then(Value::as_str)
    else {
        return Vec::new();
    };
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in items {
        let Value::Object(m) = p else {
            return Vec::new();
        };
        let type_ = match lookup(&m, "type") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Vec::new(),
        };
        out.push(Property::new(
            type_,
            lookup(&m, "value").cloned().unwrap_or(Value::Null),
        ));
    }
    out
}

/// `spec.release` as opm reads it: a string, or a number printed like Go does.
fn release(csv: &Value) -> String {
    match spec_field(csv, "release") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => format!("{}", f as i64),
            Some(f) => super::gonum::format_g(f),
            None => n.to_string(),
        },
        _ => String::new(),
    }
}

/// opm's `DefinitionKey`, its own type that it decodes each owned and required CRD and API
/// service of the CSV into: the fields it reads as strings.
const OPM_DEFINITION_KEY: [&str; 4] = ["group", "kind", "name", "version"];

/// Naming for errors, plus the checks that mirror opm's typed decoding.
struct Ctx {
    bundle: String,
}

impl Ctx {
    fn field_type(&self, object: &str, field: &str, expected: &'static str) -> RenderError {
        RenderError::FieldType {
            bundle: self.bundle.clone(),
            object: object.to_owned(),
            field: field.to_owned(),
            expected,
        }
    }

    /// The CSV fields opm decodes into Go types before rendering.
    fn check_csv(&self, csv: &Value) -> Result<(), RenderError> {
        let object = "ClusterServiceVersion";
        for key in ["annotations", "labels"] {
            match metadata_field(csv, key) {
                None | Some(Value::Null) => {}
                Some(Value::Object(m)) => {
                    if m.values().any(|v| !(v.is_string() || v.is_null())) {
                        return Err(self.field_type(
                            object,
                            &format!("metadata.{key}"),
                            "a mapping of strings",
                        ));
                    }
                }
                Some(_) => {
                    return Err(self.field_type(
                        object,
                        &format!("metadata.{key}"),
                        "a mapping of strings",
                    ));
                }
            }
        }
        if let Some(v) = spec_field(csv, "release")
            && !(v.is_string() || v.is_number() || v.is_null())
        {
            return Err(self.field_type(object, "spec.release", "a string or a number"));
        }
        if let Some(v) = spec_field(csv, "relatedImages")
            && !v.is_null()
        {
            let keys: Vec<&str> = CsvRelatedImage::FIELDS.keys().collect();
            self.check_keys(v, "spec.relatedImages", &keys)?;
        }
        for section in ["customresourcedefinitions", "apiservicedefinitions"] {
            if let Some(v) = spec_field(csv, section) {
                match v {
                    Value::Null => {}
                    Value::Object(m) => {
                        for list in ["owned", "required"] {
                            if let Some(items) = lookup(m, list) {
                                let field = format!("spec.{section}.{list}");
                                self.check_keys(items, &field, &OPM_DEFINITION_KEY)?;
                            }
                        }
                    }
                    _ => {
                        return Err(self.field_type(
                            object,
                            &format!("spec.{section}"),
                            "a mapping",
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// A list (or null) of objects (or nulls) whose `keys` are strings (or null), matched
    /// case-insensitively as Go's JSON decoder does.
    fn check_keys(&self, v: &Value, field: &str, keys: &[&str]) -> Result<(), RenderError> {
        let object = "ClusterServiceVersion";
        let items = match v {
            Value::Null => return Ok(()),
            Value::Array(items) => items,
            _ => return Err(self.field_type(object, field, "a list")),
        };
        for item in items {
            match item {
                Value::Null => {}
                Value::Object(m) => {
                    for key in keys {
                        if let Some(v) = lookup(m, key)
                            && !(v.is_string() || v.is_null())
                        {
                            return Err(self.field_type(
                                object,
                                &format!("{field}[].{key}"),
                                "a string",
                            ));
                        }
                    }
                }
                _ => return Err(self.field_type(object, field, "a list of mappings")),
            }
        }
        Ok(())
    }

    /// `spec.version`, which opm decodes as a string.
    fn version(&self, csv: &Value) -> Result<String, RenderError> {
        match spec_field(csv, "version") {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(self.field_type("ClusterServiceVersion", "spec.version", "a string")),
        }
    }

    /// Every CRD version and owned API service (opm's provided APIs).
    fn provided_apis(
        &self,
        objects: &[Cow<'_, Value>],
        csv: &Value,
    ) -> Result<BTreeSet<ApiKey>, RenderError> {
        let mut provided = BTreeSet::new();
        for crd in objects
            .iter()
            .filter(|o| kind(o) == "CustomResourceDefinition")
        {
            let api_version = crd.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let version = api_version.rsplit('/').next().unwrap_or("");
            if version != "v1" && version != "v1beta1" {
                continue;
            }
            let name = format!("CustomResourceDefinition/{}", str_at(crd, "/metadata/name"));
            let spec = crd.get("spec");
            let names = spec.and_then(|s| s.get("names"));
            let string =
                |map: Option<&Value>, key: &str, field: &str| match map.and_then(|m| m.get(key)) {
                    None | Some(Value::Null) => Ok(String::new()),
                    Some(Value::String(s)) => Ok(s.clone()),
                    Some(_) => Err(self.field_type(&name, field, "a string")),
                };
            let group = string(spec, "group", "spec.group")?;
            let kind_ = string(names, "kind", "spec.names.kind")?;
            let plural = string(names, "plural", "spec.names.plural")?;
            let mut versions = Vec::new();
            match spec.and_then(|s| s.get("versions")) {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) => {
                    for v in items {
                        match v.get("name") {
                            None | Some(Value::Null) => versions.push(String::new()),
                            Some(Value::String(s)) => versions.push(s.clone()),
                            Some(_) => {
                                return Err(self.field_type(
                                    &name,
                                    "spec.versions[].name",
                                    "a string",
                                ));
                            }
                        }
                    }
                }
                Some(_) => return Err(self.field_type(&name, "spec.versions", "a list")),
            }
            if version == "v1beta1" {
                let legacy = string(spec, "version", "spec.version")?;
                if !legacy.is_empty() {
                    versions.push(legacy);
                }
            }
            for v in versions {
                provided.insert((group.clone(), v, kind_.clone(), plural.clone()));
            }
        }
        for api in array_at(csv, "/spec/apiservicedefinitions/owned") {
            provided.insert(definition_key(api));
        }
        Ok(provided)
    }

    /// Every owned CRD of the CSV must be provided by a CRD of the bundle.
    fn check_owned(
        &self,
        csv: &Value,
        provided: &BTreeSet<ApiKey>,
        skipped: &[Skipped],
    ) -> Result<(), RenderError> {
        for owned in definitions(csv, "customresourcedefinitions", "owned") {
            let crd_name = ci_str(owned, "name");
            let (plural, group) =
                crd_name
                    .split_once('.')
                    .ok_or_else(|| RenderError::BadCrdName {
                        bundle: self.bundle.clone(),
                        role: "owned",
                        name: crd_name.to_owned(),
                    })?;
            let key = (
                group.to_owned(),
                ci_str(owned, "version").to_owned(),
                ci_str(owned, "kind").to_owned(),
                plural.to_owned(),
            );
            if !provided.contains(&key) {
                return Err(RenderError::MissingOwnedCrd {
                    bundle: self.bundle.clone(),
                    name: crd_name.to_owned(),
                    version: key.1,
                    kind: key.2,
                    skipped: SkippedList(skipped.to_vec()),
                });
            }
        }
        Ok(())
    }

    /// The property list of the rendered blob (module contract) but its `olm.bundle.object`s,
    /// unsorted.
    fn properties(
        &self,
        own: &[Property],
        meta: &Metadata,
        csv: &Value,
        version: &str,
        release: &str,
    ) -> Result<Vec<Property>, RenderError> {
        let mut collected = self.own_properties(own)?;
        self.dependency_properties(&meta.dependencies, &mut collected)?;
        self.required_apis(csv, &mut collected.required)?;
        let Collected {
            gvks,
            package,
            others,
            required,
            package_required,
        } = collected;
        let mut props =
            vec![package.unwrap_or_else(|| property::package(&meta.package, version, release))];
        props.extend(gvks.iter().map(|(g, v, k)| property::gvk(g, v, k)));
        props.extend(
            required
                .iter()
                .map(|(g, v, k)| property::gvk_required(g, v, k)),
        );
        props.extend(package_required);
        props.extend(others);
        Ok(props)
    }

    /// An error for a property of `file` that does not decode.
    fn bad_property(&self, file: &str, source: PropertyError) -> RenderError {
        RenderError::Property {
            bundle: self.bundle.clone(),
            file: file.to_owned(),
            source,
        }
    }

    /// Reads the properties file: its `olm.gvk`s and last `olm.package` are typed (and
    /// re-encoded), everything else is kept as written.
    fn own_properties(&self, own: &[Property]) -> Result<Collected, RenderError> {
        let mut collected = Collected::default();
        for (i, p) in own.iter().enumerate() {
            match p.type_.as_str() {
                TYPE_GVK | TYPE_PACKAGE => {
                    match property::parse(i, p).map_err(|e| self.bad_property("properties", e))? {
                        property::Typed::Gvk {
                            group,
                            version,
                            kind,
                        } => {
                            collected.gvks.insert((group, version, kind));
                        }
                        property::Typed::Package {
                            package_name,
                            version,
                            release,
                        } => {
                            collected.package =
                                Some(property::package(&package_name, &version, &release));
                        }
                        _ => {}
                    }
                }
                _ => collected.others.push(p.clone()),
            }
        }
        Ok(collected)
    }

    /// Reads the dependencies file: `olm.gvk` → required GVKs, `olm.package` →
    /// `olm.package.required`, anything else kept as written.
    fn dependency_properties(
        &self,
        dependencies: &[Property],
        collected: &mut Collected,
    ) -> Result<(), RenderError> {
        for (i, d) in dependencies.iter().enumerate() {
            match d.type_.as_str() {
                TYPE_GVK => {
                    if let property::Typed::Gvk {
                        group,
                        version,
                        kind,
                    } =
                        property::parse(i, d).map_err(|e| self.bad_property("dependencies", e))?
                    {
                        collected.required.insert((group, version, kind));
                    }
                }
                TYPE_PACKAGE => {
                    if let property::Typed::Package {
                        package_name,
                        version,
                        ..
                    } =
                        property::parse(i, d).map_err(|e| self.bad_property("dependencies", e))?
                    {
                        collected
                            .package_required
                            .push(property::package_required(&package_name, &version));
                    }
                }
                _ => collected.others.push(d.clone()),
            }
        }
        Ok(())
    }

    /// Adds the CSV's required CRDs (group from the CRD name) and API services.
    fn required_apis(&self, csv: &Value, required: &mut BTreeSet<Gvk>) -> Result<(), RenderError> {
        for req in definitions(csv, "customresourcedefinitions", "required") {
            let crd_name = ci_str(req, "name");
            let (_, group) = crd_name
                .split_once('.')
                .ok_or_else(|| RenderError::BadCrdName {
                    bundle: self.bundle.clone(),
                    role: "required",
                    name: crd_name.to_owned(),
                })?;
            required.insert((
                group.into(),
                ci_str(req, "version").into(),
                ci_str(req, "kind").into(),
            ));
        }
        for api in definitions(csv, "apiservicedefinitions", "required") {
            let (g, v, k, _) = definition_key(api);
            required.insert((g, v, k));
        }
        Ok(())
    }

    /// The CSV's related images, the bundle image, then every operator image not listed,
    /// sorted by image.
    fn related_images(
        &self,
        csv: &Value,
        bundle_image: &str,
    ) -> Result<Vec<RelatedImage>, RenderError> {
        let mut out: Vec<RelatedImage> = array_at(csv, "/spec/relatedImages")
            .iter()
            .map(|r| RelatedImage {
                name: ci_str(r, "name").to_owned(),
                image: ci_str(r, "image").to_owned(),
            })
            .collect();
        let mut all: BTreeSet<String> = out.iter().map(|r| r.image.clone()).collect();
        if !bundle_image.is_empty() && !all.contains(bundle_image) {
            out.push(RelatedImage {
                name: String::new(),
                image: bundle_image.to_owned(),
            });
        }
        for image in self.operator_images(csv)? {
            if all.insert(image.clone()) {
                out.push(RelatedImage {
                    name: String::new(),
                    image,
                });
            }
        }
        // opm sorts with Go's unstable sort.Slice: equal images stay where it leaves them.
        super::gosort::sort_slice(&mut out, |a, b| a.image < b.image);
        Ok(out)
    }

    /// Container and init container images of a `deployment` install strategy; field names
    /// matched case-insensitively, as Go's JSON decoder does.
    fn operator_images(&self, csv: &Value) -> Result<BTreeSet<String>, RenderError> {
        let mut images = BTreeSet::new();
        let Some(install) = csv.get("spec").and_then(|s| ci(s, "install")) else {
            return Ok(images);
        };
        if ci(install, "strategy").and_then(Value::as_str) != Some("deployment") {
            return Ok(images);
        }
        let deployments = ci(install, "spec").and_then(|s| ci(s, "deployments"));
        for d in deployments.and_then(Value::as_array).into_iter().flatten() {
            let pod = ci(d, "spec")
                .and_then(|s| ci(s, "template"))
                .and_then(|t| ci(t, "spec"));
            for key in ["containers", "initContainers"] {
                for c in pod
                    .and_then(|p| ci(p, key))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match ci(c, "image") {
                        None | Some(Value::Null) => {
                            images.insert(String::new());
                        }
                        Some(Value::String(s)) => {
                            images.insert(s.clone());
                        }
                        Some(_) => {
                            return Err(self.field_type(
                                "ClusterServiceVersion",
                                "spec.install.spec.deployments[].spec.template.spec.containers[].image",
                                "a string",
                            ));
                        }
                    }
                }
            }
        }
        Ok(images)
    }
}

/// The properties gathered from the bundle's metadata files and CSV, before sorting.
#[derive(Default)]
struct Collected {
    /// `olm.gvk` from the properties file.
    gvks: BTreeSet<Gvk>,
    /// The last `olm.package` of the properties file.
    package: Option<Property>,
    /// Properties and dependencies of other types, as written.
    others: Vec<Property>,
    /// Required GVKs: `olm.gvk` dependencies, required CRDs and API services.
    required: BTreeSet<Gvk>,
    /// `olm.package.required` from `olm.package` dependencies.
    package_required: Vec<Property>,
}

/// Sorts by type then by Go-encoded value, then moves `olm.bundle.object` and
/// `olm.csv.metadata` last, as opm does.
fn sort_properties(props: Vec<Property>) -> Vec<Property> {
    let order: Vec<usize> = {
        let keys: Vec<GoKey> = props.iter().map(GoKey::of).collect();
        let mut order: Vec<usize> = (0..props.len()).collect();
        order.sort_by(|&a, &b| {
            (props[a].type_.cmp(&props[b].type_)).then_with(|| keys[a].cmp(&keys[b]))
        });
        order
    };
    let mut slots: Vec<Option<Property>> = props.into_iter().map(Some).collect();
    let (objs, mut rest): (Vec<Property>, Vec<Property>) = order
        .into_iter()
        .filter_map(|i| slots[i].take())
        .partition(|p| p.type_ == TYPE_BUNDLE_OBJECT || p.type_ == TYPE_CSV_METADATA);
    rest.extend(objs);
    rest
}

/// Whether `text` holds only bytes of the base64 alphabet (`A-Z`, `a-z`, `0-9`, `+`, `/`,
/// `=`): one pass without early exit, which the compiler vectorizes.
fn is_base64(text: &str) -> bool {
    text.bytes().fold(true, |ok, b| {
        ok & (b.is_ascii_alphanumeric() | (b == b'+') | (b == b'/') | (b == b'='))
    })
}

/// The bytes Go has for a property value, as opm sorts by them: borrowed from the value when
/// it is `{"data": <base64 text>}` (an `olm.bundle.object`; Go copies base64 as it is), else
/// encoded.
enum GoKey<'p> {
    Encoded(Vec<u8>),
    Data(&'p str),
}

impl<'p> GoKey<'p> {
    fn of(p: &'p Property) -> Self {
        if p.type_ != TYPE_PACKAGE
            && let Value::Object(m) = &p.value
            && m.len() == 1
            && let Some(Value::String(data)) = m.get("data")
            && is_base64(data)
        {
            // The same bytes as `go_bytes(p)` (checked in the tests below, and by the corpus
            // renders held against opm's byte for byte).
            return GoKey::Data(data);
        }
        GoKey::Encoded(go_bytes(p))
    }

    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self, other) {
            (GoKey::Encoded(a), GoKey::Encoded(b)) => a.cmp(b),
            (GoKey::Data(a), GoKey::Data(b)) => a.cmp(b),
            _ => self.bytes().cmp(other.bytes()),
        }
    }

    fn bytes(&self) -> impl Iterator<Item = u8> + '_ {
        let (head, body, tail): (&[u8], &[u8], &[u8]) = match self {
            GoKey::Encoded(v) => (v, b"", b""),
            GoKey::Data(s) => (b"{\"data\":\"", s.as_bytes(), b"\"}"),
        };
        head.iter().chain(body).chain(tail).copied()
    }
}

/// A field of a JSON object the way Go's decoder finds a struct field.
fn ci<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
    lookup(v.as_object()?, key)
}

fn ci_str<'v>(v: &'v Value, key: &str) -> &'v str {
    ci(v, key).and_then(Value::as_str).unwrap_or("")
}

/// The CSV's `metadata.<key>`, as given.
fn metadata_field<'v>(csv: &'v Value, key: &str) -> Option<&'v Value> {
    csv.get("metadata")?.get(key)
}

/// The CSV's `spec.<key>`, as given: opm keeps `spec` as raw JSON and looks its fields up
/// by exact key.
fn spec_field<'v>(csv: &'v Value, key: &str) -> Option<&'v Value> {
    csv.get("spec")?.get(key)
}

/// `spec.<section>.<list>` entries of the CSV (exact section key, as opm's map lookup).
fn definitions<'v>(csv: &'v Value, section: &str, list: &str) -> Vec<&'v Value> {
    csv.get("spec")
        .and_then(|s| s.get(section))
        .and_then(|s| ci(s, list))
        .and_then(Value::as_array)
        .map(|items| items.iter().filter(|v| !v.is_null()).collect())
        .unwrap_or_default()
}

fn definition_key(api: &Value) -> ApiKey {
    (
        ci_str(api, "group").into(),
        ci_str(api, "version").into(),
        ci_str(api, "kind").into(),
        ci_str(api, "name").into(),
    )
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
    value_bytes(p)
}

/// A property value's bytes as opm holds them: escaped only when copied from YAML.
fn value_bytes(p: &Property) -> Vec<u8> {
    if p.html_escaped {
        gojson::to_vec(&p.value)
    } else {
        gojson::to_vec_unescaped(&p.value)
    }
}

/// opm's property set: the first of equal properties stays.
fn dedup(props: &mut Vec<Property>) {
    let mut seen = BTreeSet::new();
    props.retain(|p| seen.insert((p.type_.clone(), value_bytes(p))));
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
        super::gosort::sort_slice(&mut b.related_images, |x, y| x.image < y.image);
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

/// A value as Go holds it after decoding into a field of `kind` and encoding again, as far
/// as opm's projection shows: a struct keeps its declared fields ([`project`]), a list of
/// structs each item's (anything but a list is then dropped), any other value stays as given.
fn project_kind(v: &Value, kind: Kind) -> Value {
    match kind {
        Kind::Struct(fields) => project(v, fields),
        Kind::List(Kind::Struct(fields)) => match v {
            Value::Array(items) => Value::Array(items.iter().map(|i| project(i, fields)).collect()),
            _ => Value::Null,
        },
        _ => v.clone(),
    }
}

/// Keeps the declared fields of a Go struct (the model's table: key, `omitempty`, kind); a
/// field given as `null` or absent prints its zero value unless it is `omitempty`.
fn project(v: &Value, fields: &Fields) -> Value {
    let mut out = Map::new();
    for field in fields.fields {
        let value = match v.get(field.key) {
            None | Some(Value::Null) => Value::Null,
            Some(given) => project_kind(given, field.kind),
        };
        if field.omitempty && is_empty(&value) {
            continue;
        }
        let value = match (value, field.kind) {
            (Value::Null, Kind::Bool) => Value::Bool(false),
            (Value::Null, _) => Value::String(String::new()),
            (value, _) => value,
        };
        out.insert(field.key.to_owned(), value);
    }
    Value::Object(out)
}

/// Where a field of opm's `CSVMetadata` comes from in the CSV.
#[derive(Clone, Copy)]
enum Source {
    /// `metadata.<key>`.
    Metadata(&'static str),
    /// `spec.<key>`.
    Spec(&'static str),
}

/// opm's `CSVMetadata` (the `olm.csv.metadata` value), in its Go order: each JSON key (every
/// one `omitempty`) and the CSV field it copies. What each copied field keeps is the model's
/// (see [`csv_field`]).
const CSV_METADATA: [(&str, Source); 14] = [
    ("annotations", Source::Metadata("annotations")),
    (
        "apiServiceDefinitions",
        Source::Spec("apiservicedefinitions"),
    ),
    ("crdDescriptions", Source::Spec("customresourcedefinitions")),
    ("description", Source::Spec("description")),
    ("displayName", Source::Spec("displayName")),
    ("installModes", Source::Spec("installModes")),
    ("keywords", Source::Spec("keywords")),
    ("labels", Source::Metadata("labels")),
    ("links", Source::Spec("links")),
    ("maintainers", Source::Spec("maintainers")),
    ("maturity", Source::Spec("maturity")),
    ("minKubeVersion", Source::Spec("minKubeVersion")),
    ("nativeAPIs", Source::Spec("nativeAPIs")),
    ("provider", Source::Spec("provider")),
];

/// The CSV's `source` field as given (`null` when absent), and its kind in the model.
fn csv_field(csv: &Value, source: Source) -> (Value, Kind) {
    let (object, fields, key) = match source {
        Source::Metadata(key) => ("metadata", ObjectMeta::FIELDS, key),
        Source::Spec(key) => ("spec", CsvSpec::FIELDS, key),
    };
    let kind = fields.get(key).map_or(Kind::Any, |f| f.kind);
    let value = csv.get(object).and_then(|o| o.get(key));
    (value.cloned().unwrap_or(Value::Null), kind)
}

/// The `olm.csv.metadata` value opm builds from a CSV.
pub fn csv_metadata(csv: &Value) -> Value {
    let mut out = Map::new();
    for (key, source) in CSV_METADATA {
        let (value, kind) = csv_field(csv, source);
        let value = project_kind(&value, kind);
        if !is_empty(&value) {
            out.insert(key.to_owned(), value);
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Properties of every shape the sort meets: base64 data (the shortcut), data that is not
    /// base64 (encoded), a package (Go's struct order), others.
    fn properties() -> Vec<Property> {
        vec![
            Property::new(TYPE_BUNDLE_OBJECT, json!({"data": "eyJraW5kIjoiQ1JEIn0="})),
            Property::new(TYPE_BUNDLE_OBJECT, json!({"data": "YWJj"})),
            Property::new(TYPE_BUNDLE_OBJECT, json!({"data": "not base64 <&>"})),
            Property::new(TYPE_BUNDLE_OBJECT, json!({"data": "YWJj", "extra": 1})),
            Property::new(
                TYPE_PACKAGE,
                json!({"version": "1.0.0", "packageName": "p", "release": "2"}),
            ),
            Property::new(
                TYPE_GVK,
                json!({"group": "g", "kind": "K", "version": "v1"}),
            ),
            Property::new("olm.maxOpenShiftVersion", json!("4.12")),
        ]
    }

    #[test]
    fn opm_s_csv_metadata_copies_fields_the_model_declares() {
        for (key, source) in CSV_METADATA {
            let (object, fields, field) = match source {
                Source::Metadata(field) => ("metadata", ObjectMeta::FIELDS, field),
                Source::Spec(field) => ("spec", CsvSpec::FIELDS, field),
            };
            assert!(fields.get(field).is_some(), "{key}: {object}.{field}");
        }
    }

    #[test]
    fn csv_metadata_keeps_what_opm_s_go_types_keep() {
        let csv = json!({
            "metadata": {"name": "op.v1", "annotations": {"a": "b"}, "labels": {}},
            "spec": {
                "version": "1.0.0",
                "displayName": "Op",
                "description": "",
                "installModes": [{"type": "OwnNamespace"}, {"supported": true, "x": 1}],
                "customresourcedefinitions": {"owned": [{
                    "name": "ws.example.com", "kind": "W", "version": "v1", "displayName": "",
                    "specDescriptors": [{"path": "size", "x-descriptors": "kept", "value": 0}, null],
                    "resources": "not a list", "unknown": true,
                }], "required": null},
                "maintainers": [{"name": "a", "email": ""}],
                "links": null,
                "nativeAPIs": [{"kind": "Pod"}],
            },
        });
        assert_eq!(
            csv_metadata(&csv),
            json!({
                "annotations": {"a": "b"},
                "apiServiceDefinitions": {},
                "crdDescriptions": {"owned": [{
                    "name": "ws.example.com", "kind": "W", "version": "v1",
                    "specDescriptors": [
                        {"path": "size", "x-descriptors": "kept"},
                        {"path": ""},
                    ],
                }]},
                "displayName": "Op",
                "installModes": [
                    {"type": "OwnNamespace", "supported": false},
                    {"type": "", "supported": true},
                ],
                "labels": {},
                "maintainers": [{"name": "a"}],
                "nativeAPIs": [{"group": "", "version": "", "kind": "Pod"}],
                "provider": {},
            })
        );
    }

    #[test]
    fn the_first_document_is_found_between_separator_lines() {
        let table: [(&str, Result<&str, &str>); 8] = [
            ("a: 1\n", Ok("a: 1\n")),
            ("---\na: 1\n---\nb: 2\n", Ok("a: 1\n")),
            ("--- # first\n\n---\na: 1\n--- \nb: 2", Ok("a: 1\n")),
            ("a: 1\n---", Ok("a: 1\n")),
            ("---\n---\n", Ok("")),
            ("a: |\n  ---x\n---\n", Ok("a: |\n  ---x\n")),
            (
                "---\na: 1\n---x\n",
                Err("text after the document separator: \"---x\""),
            ),
            (
                "--- a\r\n",
                Err("text after the document separator: \"--- a\""),
            ),
        ];
        for (text, want) in table {
            let got = first_document_bounds(text).map(|(start, end)| &text[start..end]);
            assert_eq!(got, want.map_err(str::to_owned), "{text:?}");
        }
    }

    #[test]
    fn base64_text_is_told_from_anything_else() {
        let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";
        assert!(is_base64(alphabet) && is_base64(""));
        for bad in ["\"", "\\", " ", "-", "_", "\n", "é", "<", "&"] {
            let text = format!("{alphabet}{bad}{alphabet}");
            assert!(!is_base64(&text), "{bad:?}");
        }
    }

    #[test]
    fn the_sort_key_is_the_bytes_go_has_for_the_value() {
        for p in properties() {
            let key: Vec<u8> = GoKey::of(&p).bytes().collect();
            assert_eq!(
                String::from_utf8_lossy(&key),
                String::from_utf8_lossy(&go_bytes(&p)),
                "{} {}",
                p.type_,
                p.value
            );
        }
    }

    #[test]
    fn properties_sort_by_type_then_go_bytes_with_objects_last() {
        let sorted = sort_properties(properties());
        let mut expected = properties();
        expected.sort_by(|a, b| (&a.type_, go_bytes(a)).cmp(&(&b.type_, go_bytes(b))));
        let (objects, mut rest): (Vec<_>, Vec<_>) = expected
            .into_iter()
            .partition(|p| p.type_ == TYPE_BUNDLE_OBJECT);
        rest.extend(objects);
        assert_eq!(sorted, rest);
        assert_eq!(
            sorted.last().map(|p| p.type_.as_str()),
            Some(TYPE_BUNDLE_OBJECT)
        );
    }
}
