//! Images of files: layers, image config and manifest, written to an OCI layout; on no base
//! (a "scratch" image) or onto every platform image of a base.
//!
//! Contract (see also the [module docs](super)):
//! - An image with no base has one layer per entry list (or directory), in order, each with its
//!   history line, and the given labels on its config, for [`BuildOptions::platform`].
//! - On a base image ([`on_base`]), each of the base's platforms gets the base layers plus the
//!   added layer, the base config with the labels added and the entrypoint and command
//!   replaced. A base image index gives an index with one manifest per platform.
//! - `created` in every config (and in history entries olmpack adds) is the source date epoch.
//! - The returned descriptor is the root of the layout: an image manifest, or an index.

use crate::RefusesInput;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::base::{BaseError, BaseImage};
use super::layer::{self, LayerError, LayerOptions, LayerSource};
use super::layout::{Descriptor, ImageIndex, ImageManifest, LayoutError, LayoutWriter, Platform};
use super::media_type;

/// Failure to build an image.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The directory to build an image from is missing or is a file.
    #[error("{path} is not a directory")]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// The output layout would be written into the very directory being packed, so the image would contain itself.
    #[error("the layout {layout} is inside {dir}, the directory being built")]
    LayoutInsideSource {
        /// The output layout directory.
        layout: PathBuf,
        /// The directory being built.
        dir: PathBuf,
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
impl RefusesInput for BuildError {
    fn refuses_input(&self) -> bool {
        match self {
            BuildError::Layer { source, .. } => source.is_refusal(),
            BuildError::Layout(layout) => layout.refuses_input(),
            BuildError::Base { source, .. } => source.refuses_input(),
            BuildError::NotADirectory { .. }
            | BuildError::LayoutInsideSource { .. }
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
    /// The platform of images built without a base.
    pub platform: Platform,
    /// How much of a directory is read at most.
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
pub fn refuse_layout_inside(dir: &Path, out: &Path) -> Result<(), BuildError> {
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

/// Refuses `dir` unless it is a directory.
pub fn require_dir(dir: &Path) -> Result<(), BuildError> {
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
pub struct BuiltLayer {
    /// The compressed layer's descriptor in the layout.
    pub descriptor: Descriptor,
    /// The digest of the uncompressed layer (the config's `rootfs.diff_ids` entry).
    pub diff_id: String,
}

/// Writes one layer holding the directories of `sources`.
pub fn write_layer(
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
pub fn write_entries(
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

/// A config `history` entry made by olmpack at the source date epoch.
pub fn history_entry(created_by: &str, options: &BuildOptions) -> Value {
    json!({
        "created": rfc3339(options.source_date_epoch),
        "created_by": created_by,
        "comment": "olmpack",
    })
}

/// The config of an image with no base.
pub fn scratch_config(
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
pub fn write_image(
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

/// Writes `config` and the manifest of it and `layers`; returns the manifest's descriptor.
pub fn write_manifest(
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

/// What an image adds on top of a base: one layer, its history line, labels, and the
/// entrypoint and command it runs.
#[derive(Clone, Copy, Debug)]
pub struct Addition<'a> {
    /// The added layer.
    pub layer: &'a BuiltLayer,
    /// The history line of the added layer.
    pub history: &'a str,
    /// Labels added to the base's (a base label of the same key is replaced).
    pub labels: &'a BTreeMap<String, String>,
    /// The image's `Entrypoint`.
    pub entrypoint: &'a [&'a str],
    /// The image's `Cmd`.
    pub cmd: &'a [&'a str],
}

/// Puts `addition` on every platform image of `base`; `None` if it has none.
pub fn on_base(
    writer: &LayoutWriter,
    base: &BaseImage,
    addition: &Addition<'_>,
    options: &BuildOptions,
) -> Result<Option<Descriptor>, LayoutError> {
    let mut manifests = Vec::new();
    for image in &base.images {
        let mut config = image.config.clone();
        extend_base_config(&mut config, addition, options);
        let mut layers = image.layers.clone();
        layers.push(addition.layer.descriptor.clone());
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

/// Adds the layer, labels, entrypoint and command of `addition` to a base image's config,
/// keeping everything else.
pub fn extend_base_config(config: &mut Value, addition: &Addition<'_>, options: &BuildOptions) {
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
    for (key, value) in addition.labels {
        existing.insert(key.clone(), json!(value));
    }
    runtime.insert("Entrypoint".into(), json!(addition.entrypoint));
    runtime.insert("Cmd".into(), json!(addition.cmd));

    let rootfs = root
        .entry("rootfs")
        .or_insert_with(|| json!({"type": "layers", "diff_ids": []}));
    if let Some(ids) = rootfs.get_mut("diff_ids").and_then(Value::as_array_mut) {
        ids.push(json!(addition.layer.diff_id));
    }
    // History must stay aligned with the layers: extend it only if the base has one.
    if let Some(entries) = root.get_mut("history").and_then(Value::as_array_mut) {
        entries.push(history_entry(addition.history, options));
        entries.push(history_entry(
            &format!(
                "ENTRYPOINT {} CMD {}",
                json!(addition.entrypoint),
                json!(addition.cmd)
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
}
