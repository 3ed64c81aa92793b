//! Bundle and catalog images: OLM's images, built on the images of files of
//! [`olmpack_oci::image::build`].
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

use olmpack_oci::image::build::{
    self as files, Addition, scratch_config, write_image, write_layer,
};
use olmpack_oci::image::layout::{Descriptor, LayoutError, LayoutWriter};
use serde_json::Value;

use super::CATALOG_CONFIGS_LABEL;
use olmpack_oci::image::base;
use olmpack_oci::image::layer::{self, LayerSource};
use olmpack_oci::image::progress::Progress;
use olmpack_oci::image::registry::RegistryAccess;

/// The settings of a build: those of every image olmpack builds.
use olmpack_oci::image::build::BuildOptions;

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

/// Failure to build a bundle or catalog image.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
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
        source: olmpack_oci::input::InputError,
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
    /// A catalog image was requested from a directory with no files.
    #[error("{path} holds no files; a catalog image needs a File-Based Catalog")]
    EmptyCatalog {
        /// The catalog directory.
        path: PathBuf,
    },
    /// Building the image of the files failed.
    #[error(transparent)]
    Image(#[from] files::BuildError),
}

impl From<LayoutError> for BuildError {
    fn from(err: LayoutError) -> Self {
        BuildError::Image(err.into())
    }
}

/// What olmpack refuses to put in an image (a file a layer cannot hold, an input it refuses to
/// read, a layout blob it refuses) is exit 1; anything else is a failure to build (exit 2).
impl Refusal for BuildError {
    fn refuses_input(&self) -> bool {
        match self {
            BuildError::ReadAnnotations { source, .. } => source.is_refusal(),
            BuildError::Image(image) => image.refuses_input(),
            BuildError::MissingBundleDir { .. }
            | BuildError::ParseAnnotations { .. }
            | BuildError::BadAnnotations { .. }
            | BuildError::EmptyCatalog { .. } => false,
        }
    }
}

/// Reads `metadata/annotations.yaml`'s `annotations` map: the bundle image's labels.
pub fn read_bundle_labels(
    bundle_dir: &Path,
    limits: &olmpack_oci::input::Limits,
) -> Result<BTreeMap<String, String>, BuildError> {
    let path = bundle_dir.join("metadata/annotations.yaml");
    let text =
        olmpack_oci::input::text(&path, limits).map_err(|source| BuildError::ReadAnnotations {
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
    files::require_dir(bundle_dir)?;
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
    files::require_dir(catalog_dir)?;
    files::refuse_layout_inside(catalog_dir, out)?;
    let source = LayerSource {
        dir: catalog_dir.to_owned(),
        dest: CATALOG_DIR.trim_start_matches('/').to_owned(),
    };
    let entries =
        layer::collect(std::slice::from_ref(&source)).map_err(|e| files::BuildError::Layer {
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
                .map_err(|source| files::BuildError::Base {
                    reference: reference.to_owned(),
                    source: Box::new(source),
                })?;
            let addition = Addition {
                layer: &catalog_layer,
                history: &history,
                labels: &labels,
                entrypoint: CATALOG_ENTRYPOINT,
                cmd: CATALOG_CMD,
            };
            files::on_base(&writer, &base_image, &addition, options)?.ok_or_else(|| {
                files::BuildError::NoBasePlatform {
                    reference: reference.to_owned(),
                }
            })?
        }
    };
    writer.finish(&root, options.tag.as_deref())?;
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use olmpack_oci::image::build::BuiltLayer;
    use olmpack_oci::image::media_type;
    use serde_json::json;

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
        let addition = Addition {
            layer: &layer,
            history: "COPY catalog /configs",
            labels: &labels,
            entrypoint: CATALOG_ENTRYPOINT,
            cmd: CATALOG_CMD,
        };
        files::extend_base_config(&mut config, &addition, &BuildOptions::default());
        insta::assert_json_snapshot!(config);
    }
}
