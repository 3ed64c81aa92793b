//! Bundle and catalog images: layers, image config and manifest, written to an OCI layout.
//!
//! Contract (see also the [module docs](super)):
//! - A bundle directory must hold `manifests/` and `metadata/annotations.yaml`; its image has
//!   one layer per `bundle.Dockerfile` `COPY` (`/manifests/`, `/metadata/`, and
//!   `/tests/scorecard/` when that directory exists) and labels equal to the `annotations` map.
//! - A catalog image has one layer holding the directory's contents under `/configs` and the
//!   label `operators.operatorframework.io.index.configs.v1=/configs`. On a base image, each of
//!   the base's platforms gets the base layers plus this layer, the base config with the label
//!   added, entrypoint `/bin/opm` and command
//!   `serve /configs --cache-dir=/tmp/cache --cache-enforce-integrity=false` (opm builds its
//!   cache at start-up: a container-engine build pre-builds it by running opm, which olmpack
//!   cannot do for another platform). A base image index gives an index with one manifest per
//!   platform; attestation manifests are dropped.
//! - `created` in every config (and in history entries olmpack adds) is the source date epoch.
//! - The returned descriptor is the root of the layout: an image manifest, or an index.

use crate::refusal::Refusal;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::base::{self, BaseError, BaseImage};
use super::layer::{self, LayerError, LayerOptions, LayerSource};
use super::layout::{Descriptor, ImageIndex, ImageManifest, LayoutError, LayoutWriter, Platform};
use super::progress::Progress;
use super::registry::RegistryAccess;
use super::{CATALOG_CONFIGS_LABEL, media_type};

/// The catalog directory's place in the image.
pub const CATALOG_DIR: &str = "/configs";
/// Entrypoint and command of a catalog image on an opm base image.
pub const CATALOG_ENTRYPOINT: &[&str] = &["/bin/opm"];
/// Arguments to the entrypoint: serve `/configs`, caching in `/tmp/cache` without the integrity check.
pub const CATALOG_CMD: &[&str] = &[
    "serve",
    "/configs",
    "--cache-dir=/tmp/cache",
    "--cache-enforce-integrity=false",
];

/// Failure to build an image.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The directory to build an image from is missing or is a file.
    #[error("{path} is not a directory")]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// A bundle directory lacks `manifests/` or `metadata/`.
    #[error("{path} is missing or not a directory; a bundle image needs manifests/ and metadata/")]
    MissingBundleDir {
        /// The bundle directory.
        path: PathBuf,
    },
    /// `metadata/annotations.yaml` of the bundle cannot be read.
    #[error("failed to read {path}")]
    ReadAnnotations {
        /// The annotations file.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: crate::input::InputError,
    },
    /// `metadata/annotations.yaml` is not YAML.
    #[error("{path} is not valid YAML")]
    ParseAnnotations {
        /// The annotations file.
        path: PathBuf,
        /// The YAML parser's complaint.
        #[source]
        source: olmpack_model::yaml::YamlError,
    },
    /// `metadata/annotations.yaml` parses but its content is not usable as image labels.
    #[error("{path}: {problem}")]
    BadAnnotations {
        /// The annotations file.
        path: PathBuf,
        /// What is wrong with it, in our words.
        problem: String,
    },
    /// The output layout would be written into the very directory being packed, so the image would contain itself.
    #[error("the layout {layout} is inside {dir}, the directory being built")]
    LayoutInsideSource {
        /// The output layout directory.
        layout: PathBuf,
        /// The directory being built.
        dir: PathBuf,
    },
    /// A catalog image was requested from a directory with no files.
    #[error("{path} holds no files; a catalog image needs a File-Based Catalog")]
    EmptyCatalog {
        /// The catalog directory.
        path: PathBuf,
    },
    /// Writing the tar layer of a directory failed.
    #[error("failed to build the layer for {dest}")]
    Layer {
        /// Where the directory goes in the image, e.g. `/configs`.
        dest: String,
        /// The layer writer's error.
        #[source]
        source: LayerError,
    },
    /// Writing the OCI layout failed.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The base image could not be pulled or read.
    #[error("failed to use the base image {reference}")]
    Base {
        /// The base image reference as given.
        reference: String,
        /// Why pulling or reading it failed.
        #[source]
        source: Box<BaseError>,
    },
    /// The base image offers no image for a platform olmpack can build on.
    #[error("the base image {reference} has no usable platform image")]
    NoBasePlatform {
        /// The base image reference as given.
        reference: String,
    },
}

/// What olmpack refuses to put in an image (a file a layer cannot hold, an input it refuses to
/// read, a layout blob it refuses) is exit 1; anything else is a failure to build (exit 2).
impl Refusal for BuildError {
    fn refuses_input(&self) -> bool {
        match self {
            BuildError::ReadAnnotations { source, .. } => source.is_refusal(),
            BuildError::Layer { source, .. } => source.is_refusal(),
            BuildError::Layout(layout) => layout.refuses_input(),
            BuildError::Base { source, .. } => source.refuses_input(),
            BuildError::NotADirectory { .. }
            | BuildError::MissingBundleDir { .. }
            | BuildError::ParseAnnotations { .. }
            | BuildError::BadAnnotations { .. }
            | BuildError::LayoutInsideSource { .. }
            | BuildError::EmptyCatalog { .. }
            | BuildError::NoBasePlatform { .. } => false,
        }
    }
}

/// Settings for a build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildOptions {
    /// Seconds since the Unix epoch: the mtime of every file and the `created` time.
    pub source_date_epoch: u64,
    /// The tag recorded in the layout's `index.json` (`org.opencontainers.image.ref.name`).
    pub tag: Option<String>,
    /// The platform of images built without a base (bundle images, plain catalog images).
    pub platform: Platform,
    /// How much of the bundle directory is read at most.
    pub limits: crate::input::Limits,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            source_date_epoch: 0,
            tag: None,
            platform: Platform::linux_amd64(),
            limits: crate::input::Limits::default(),
        }
    }
}

/// Reads `metadata/annotations.yaml`'s `annotations` map: the bundle image's labels.
pub fn read_bundle_labels(
    bundle_dir: &Path,
    limits: &crate::input::Limits,
) -> Result<BTreeMap<String, String>, BuildError> {
    let path = bundle_dir.join("metadata/annotations.yaml");
    let text = crate::input::text(&path, limits).map_err(|source| BuildError::ReadAnnotations {
        path: path.clone(),
        source,
    })?;
    let doc: Value =
        olmpack_model::yaml::from_str(&text).map_err(|source| BuildError::ParseAnnotations {
            path: path.clone(),
            source,
        })?;
    let bad = |problem: String| BuildError::BadAnnotations {
        path: path.clone(),
        problem,
    };
    let map = match doc.get("annotations") {
        Some(Value::Object(map)) => map,
        Some(_) => return Err(bad("`annotations` must be a map of strings".into())),
        None => return Err(bad("has no top-level `annotations` map".into())),
    };
    if map.is_empty() {
        return Err(bad("`annotations` is empty".into()));
    }
    map.iter()
        .map(|(key, value)| match value {
            Value::String(s) => Ok((key.clone(), s.clone())),
            _ => Err(bad(format!("annotations.{key} must be a string"))),
        })
        .collect()
}

/// Builds the image of a registry+v1 bundle directory into an OCI layout at `out`.
pub fn build_bundle_image(
    bundle_dir: &Path,
    out: &Path,
    options: &BuildOptions,
) -> Result<Descriptor, BuildError> {
    require_dir(bundle_dir)?;
    let mut copies = Vec::new();
    for required in ["manifests", "metadata"] {
        let dir = bundle_dir.join(required);
        if !dir.is_dir() {
            return Err(BuildError::MissingBundleDir { path: dir });
        }
        copies.push((dir, required));
    }
    let scorecard = bundle_dir.join("tests/scorecard");
    if scorecard.is_dir() {
        copies.push((scorecard, "tests/scorecard"));
    }
    let labels = read_bundle_labels(bundle_dir, &options.limits)?;

    let writer = LayoutWriter::create(out)?;
    let mut layers = Vec::new();
    for (dir, dest) in copies {
        let source = LayerSource {
            dir,
            dest: dest.to_owned(),
        };
        let layer = write_layer(&writer, &[source], options)?;
        layers.push((layer, format!("COPY {dest}/ /{dest}/")));
    }
    let config = scratch_config(&options.platform, labels, &layers, options);
    let manifest = write_image(&writer, &config, layers.iter().map(|(l, _)| l.clone()))?;
    writer.finish(&manifest, options.tag.as_deref())?;
    Ok(manifest)
}

/// Builds the image of a File-Based Catalog directory into an OCI layout at `out`, on
/// `base` (a registry reference, pulled with `access`) when given.
pub async fn build_catalog_image(
    catalog_dir: &Path,
    out: &Path,
    options: &BuildOptions,
    base: Option<(&str, &RegistryAccess)>,
    progress: &Progress,
) -> Result<Descriptor, BuildError> {
    require_dir(catalog_dir)?;
    refuse_layout_inside(catalog_dir, out)?;
    let source = LayerSource {
        dir: catalog_dir.to_owned(),
        dest: CATALOG_DIR.trim_start_matches('/').to_owned(),
    };
    let entries = layer::collect(std::slice::from_ref(&source)).map_err(|e| BuildError::Layer {
        dest: CATALOG_DIR.into(),
        source: e,
    })?;
    if !entries
        .values()
        .any(|e| matches!(e, layer::Entry::File { .. }))
    {
        return Err(BuildError::EmptyCatalog {
            path: catalog_dir.to_owned(),
        });
    }
    let writer = LayoutWriter::create(out)?;
    let catalog_layer = write_layer(&writer, &[source], options)?;
    // Fixed text: the source directory's name must not reach the image.
    let history = format!("COPY . {CATALOG_DIR}/");
    let mut labels = BTreeMap::new();
    labels.insert(CATALOG_CONFIGS_LABEL.to_owned(), CATALOG_DIR.to_owned());

    let root = match base {
        None => {
            let layers = [(catalog_layer, history)];
            let config = scratch_config(&options.platform, labels, &layers, options);
            write_image(&writer, &config, [layers[0].0.clone()])?
        }
        Some((reference, access)) => {
            let base_image = base::fetch(reference, access, &writer, progress)
                .await
                .map_err(|source| BuildError::Base {
                    reference: reference.to_owned(),
                    source: Box::new(source),
                })?;
            on_base(
                &writer,
                &base_image,
                &catalog_layer,
                &history,
                labels,
                options,
            )?
            .ok_or_else(|| BuildError::NoBasePlatform {
                reference: reference.to_owned(),
            })?
        }
    };
    writer.finish(&root, options.tag.as_deref())?;
    Ok(root)
}

/// Builds an image of files with no base into an OCI layout at `out`: one layer per entry
/// list, in order, each with its history line, and `labels` on the config. The layers are
/// compressed concurrently (one thread each); `written` is told each layer's history line
/// and descriptor as soon as that layer is in the layout.
pub fn build_files_image(
    layers: &[(layer::Entries, String)],
    labels: BTreeMap<String, String>,
    out: &Path,
    options: &BuildOptions,
    written: &(dyn Fn(&str, &Descriptor) + Sync),
) -> Result<Descriptor, BuildError> {
    let writer = LayoutWriter::create(out)?;
    let results: Vec<Result<BuiltLayer, BuildError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = layers
            .iter()
            .map(|(entries, history)| {
                let writer = &writer;
                scope.spawn(move || {
                    let built = write_entries(writer, entries, history, options);
                    if let Ok(layer) = &built {
                        written(history, &layer.descriptor);
                    }
                    built
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    let mut built = Vec::new();
    for ((_, history), layer) in layers.iter().zip(results) {
        built.push((layer?, history.clone()));
    }
    let config = scratch_config(&options.platform, labels, &built, options);
    let manifest = write_image(&writer, &config, built.iter().map(|(l, _)| l.clone()))?;
    writer.finish(&manifest, options.tag.as_deref())?;
    Ok(manifest)
}

/// A layout written inside the directory it is built from would end up in later builds.
fn refuse_layout_inside(dir: &Path, out: &Path) -> Result<(), BuildError> {
    let absolute = |p: &Path| {
        std::path::absolute(p)
            .ok()
            .map(|p| p.components().collect::<PathBuf>())
    };
    let dir_abs = dir.canonicalize().ok().or_else(|| absolute(dir));
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let out_abs = parent
        .canonicalize()
        .ok()
        .zip(out.file_name())
        .map(|(p, name)| p.join(name))
        .or_else(|| absolute(out));
    match (dir_abs, out_abs) {
        (Some(dir_abs), Some(out_abs)) if out_abs.starts_with(&dir_abs) => {
            Err(BuildError::LayoutInsideSource {
                layout: out.to_owned(),
                dir: dir.to_owned(),
            })
        }
        _ => Ok(()),
    }
}

fn require_dir(dir: &Path) -> Result<(), BuildError> {
    if dir.is_dir() {
        Ok(())
    } else {
        Err(BuildError::NotADirectory {
            path: dir.to_owned(),
        })
    }
}

/// A layer in the layout: its descriptor and its uncompressed digest.
#[derive(Clone, Debug)]
pub(super) struct BuiltLayer {
    pub(super) descriptor: Descriptor,
    pub(super) diff_id: String,
}

fn write_layer(
    writer: &LayoutWriter,
    sources: &[LayerSource],
    options: &BuildOptions,
) -> Result<BuiltLayer, BuildError> {
    let dest = sources
        .iter()
        .map(|s| format!("/{}", s.dest.trim_matches('/')))
        .collect::<Vec<_>>()
        .join(", ");
    let layer_err = |source| BuildError::Layer {
        dest: dest.clone(),
        source,
    };
    let entries = layer::collect(sources).map_err(layer_err)?;
    write_entries(writer, &entries, &dest, options)
}

/// Writes a layer holding `entries`; `dest` names it in errors.
pub(super) fn write_entries(
    writer: &LayoutWriter,
    entries: &layer::Entries,
    dest: &str,
    options: &BuildOptions,
) -> Result<BuiltLayer, BuildError> {
    let layer_err = |source| BuildError::Layer {
        dest: dest.to_owned(),
        source,
    };
    let layer_options = LayerOptions {
        mtime: options.source_date_epoch,
    };
    let (written, digest, size) = writer
        .write_blob_with(|out| layer::write(entries, layer_options, out).map_err(layer_err))?;
    debug_assert_eq!(written.digest, digest);
    Ok(BuiltLayer {
        descriptor: Descriptor::new(media_type::LAYER_GZIP, digest, size),
        diff_id: written.diff_id,
    })
}

/// RFC 3339 UTC time of `epoch` seconds.
pub fn rfc3339(epoch: u64) -> String {
    let days = (epoch / 86_400) as i64;
    let secs = epoch % 86_400;
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

pub(super) fn history_entry(created_by: &str, options: &BuildOptions) -> Value {
    json!({
        "created": rfc3339(options.source_date_epoch),
        "created_by": created_by,
        "comment": "olmpack",
    })
}

/// The config of an image with no base.
fn scratch_config(
    platform: &Platform,
    labels: BTreeMap<String, String>,
    layers: &[(BuiltLayer, String)],
    options: &BuildOptions,
) -> Value {
    let mut config = json!({
        "architecture": platform.architecture,
        "os": platform.os,
        "created": rfc3339(options.source_date_epoch),
        "config": { "Labels": labels },
        "rootfs": {
            "type": "layers",
            "diff_ids": layers.iter().map(|(l, _)| l.diff_id.clone()).collect::<Vec<_>>(),
        },
        "history": layers.iter().map(|(_, h)| history_entry(h, options)).collect::<Vec<_>>(),
    });
    if let Some(variant) = &platform.variant {
        config["variant"] = json!(variant);
    }
    config
}

/// Writes the config and manifest of one image; returns the manifest's descriptor.
fn write_image(
    writer: &LayoutWriter,
    config: &Value,
    layers: impl IntoIterator<Item = BuiltLayer>,
) -> Result<Descriptor, LayoutError> {
    write_manifest(
        writer,
        config,
        layers.into_iter().map(|l| l.descriptor).collect(),
    )
}

pub(super) fn write_manifest(
    writer: &LayoutWriter,
    config: &Value,
    layers: Vec<Descriptor>,
) -> Result<Descriptor, LayoutError> {
    let config = writer.put_json(media_type::CONFIG, config)?;
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::MANIFEST.to_owned()),
        config,
        layers,
        annotations: None,
    };
    writer.put_json(media_type::MANIFEST, &manifest)
}

/// Puts the catalog layer on every platform image of `base`; `None` if it has none.
fn on_base(
    writer: &LayoutWriter,
    base: &BaseImage,
    catalog: &BuiltLayer,
    history: &str,
    labels: BTreeMap<String, String>,
    options: &BuildOptions,
) -> Result<Option<Descriptor>, LayoutError> {
    let mut manifests = Vec::new();
    for image in &base.images {
        let mut config = image.config.clone();
        extend_base_config(&mut config, catalog, history, &labels, options);
        let mut layers = image.layers.clone();
        layers.push(catalog.descriptor.clone());
        let mut descriptor = write_manifest(writer, &config, layers)?;
        descriptor.platform = image.platform.clone();
        manifests.push(descriptor);
    }
    if !base.is_index {
        return Ok(manifests.into_iter().next());
    }
    if manifests.is_empty() {
        return Ok(None);
    }
    let index = ImageIndex::new(manifests);
    writer.put_json(media_type::INDEX, &index).map(Some)
}

/// Adds the catalog layer, label, entrypoint and command to a base image's config, keeping
/// everything else.
fn extend_base_config(
    config: &mut Value,
    catalog: &BuiltLayer,
    history: &str,
    labels: &BTreeMap<String, String>,
    options: &BuildOptions,
) {
    let Some(root) = config.as_object_mut() else {
        return;
    };
    root.insert("created".into(), json!(rfc3339(options.source_date_epoch)));
    let runtime = root.entry("config").or_insert_with(|| json!({}));
    if !runtime.is_object() {
        *runtime = json!({});
    }
    let runtime = runtime.as_object_mut().expect("made an object above");
    let existing = runtime.entry("Labels").or_insert_with(|| json!({}));
    if !existing.is_object() {
        *existing = json!({});
    }
    let existing = existing.as_object_mut().expect("made an object above");
    for (key, value) in labels {
        existing.insert(key.clone(), json!(value));
    }
    runtime.insert("Entrypoint".into(), json!(CATALOG_ENTRYPOINT));
    runtime.insert("Cmd".into(), json!(CATALOG_CMD));

    let rootfs = root
        .entry("rootfs")
        .or_insert_with(|| json!({"type": "layers", "diff_ids": []}));
    if let Some(ids) = rootfs.get_mut("diff_ids").and_then(Value::as_array_mut) {
        ids.push(json!(catalog.diff_id));
    }
    // History must stay aligned with the layers: extend it only if the base has one.
    if let Some(entries) = root.get_mut("history").and_then(Value::as_array_mut) {
        entries.push(history_entry(history, options));
        entries.push(history_entry(
            &format!(
                "ENTRYPOINT {} CMD {}",
                json!(CATALOG_ENTRYPOINT),
                json!(CATALOG_CMD)
            ),
            options,
        ));
        if let Some(last) = entries.last_mut() {
            last["empty_layer"] = json!(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_matches_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(4_102_444_799), "2099-12-31T23:59:59Z");
    }

    #[test]
    fn base_config_keeps_its_settings_and_gains_the_catalog() {
        let mut config = json!({
            "architecture": "arm64", "os": "linux", "created": "2024-01-01T00:00:00Z",
            "config": {"Env": ["PATH=/bin"], "Labels": {"a": "b"}, "Entrypoint": ["/bin/sh"]},
            "rootfs": {"type": "layers", "diff_ids": ["sha256:base"]},
            "history": [{"created_by": "base"}],
        });
        let layer = BuiltLayer {
            descriptor: Descriptor::new(media_type::LAYER_GZIP, "sha256:x".into(), 1),
            diff_id: "sha256:ours".into(),
        };
        let mut labels = BTreeMap::new();
        labels.insert(CATALOG_CONFIGS_LABEL.to_owned(), "/configs".to_owned());
        extend_base_config(
            &mut config,
            &layer,
            "COPY catalog /configs",
            &labels,
            &BuildOptions::default(),
        );
        insta::assert_json_snapshot!(config);
    }
}
