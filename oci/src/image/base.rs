//! Pulling a base image (manifest or index, its configs and layers) into a layout being built.
//!
//! Contract: every blob is verified against its digest while it is written; Docker schema 2
//! media types are mapped to their OCI equivalents (same bytes); attestation and unknown-platform
//! entries of an index are skipped; non-distributable (foreign) layers are refused.

use crate::RefusesInput;
use std::collections::HashSet;

use oci_client::RegistryOperation;
use serde_json::Value;

use super::fetch::Expected;
use super::layout::{Descriptor, ImageIndex, ImageManifest, LayoutError, LayoutWriter, Platform};
use super::media_type;
use super::progress::Progress;
use super::reference::{self, Reference, ReferenceError};
use super::registry::{RegistryAccess, RegistryClient, RegistryError};

/// Failure to pull a base image.
#[derive(Debug, thiserror::Error)]
pub enum BaseError {
    /// The base image reference does not parse.
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// Talking to the registry that holds the base image failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// Reading the base image from an OCI layout failed.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// A manifest or index of the base image is not valid JSON of its kind.
    #[error("manifest {digest} is not a valid {what}")]
    Manifest {
        /// Digest of the manifest that does not parse.
        digest: String,
        /// Which document was expected, e.g. "image manifest".
        what: &'static str,
        /// The JSON parser's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// A manifest uses a media type olmpack does not read (neither OCI nor Docker schema 2).
    #[error("manifest {digest} has media type {media_type:?}, which olmpack cannot build on")]
    MediaType {
        /// Digest of the manifest.
        digest: String,
        /// Its media type.
        media_type: String,
    },
    /// The base image's config blob is JSON but not an object.
    #[error("config {digest} is not a JSON object")]
    Config {
        /// Digest of the config blob.
        digest: String,
    },
    /// A layer may not be redistributed (Docker foreign layer), so it cannot be copied into the new image.
    #[error(
        "layer {digest} is non-distributable (media type {media_type:?}); olmpack cannot copy it"
    )]
    ForeignLayer {
        /// Digest of the layer.
        digest: String,
        /// Its non-distributable media type.
        media_type: String,
    },
    /// Saving a downloaded base layer to the local staging area failed.
    #[error("failed to store layer {digest}")]
    Store {
        /// Digest of the layer.
        digest: String,
        /// The I/O error from the file system.
        #[source]
        source: std::io::Error,
    },
}

/// A layout blob olmpack refuses (exit 1); a registry or a base image it cannot use is a
/// failure to build (exit 2).
impl RefusesInput for BaseError {
    fn refuses_input(&self) -> bool {
        match self {
            BaseError::Layout(layout) => layout.refuses_input(),
            _ => false,
        }
    }
}

/// A base image: one platform image, or several from an index.
#[derive(Clone, Debug)]
pub struct BaseImage {
    /// True when the reference pointed to an index (multi-platform), false for a single manifest.
    pub is_index: bool,
    /// The platform images: one for a single manifest, one per usable index entry otherwise.
    pub images: Vec<PlatformImage>,
}

/// One platform's image of the base: its config and its layers (already in the layout).
#[derive(Clone, Debug)]
pub struct PlatformImage {
    /// The platform this image is for, as its index entry says (none for a single manifest).
    pub platform: Option<Platform>,
    /// The image config as JSON, kept whole so unknown fields survive.
    pub config: Value,
    /// The layers of the image, lowest first.
    pub layers: Vec<Descriptor>,
}

/// Which layers of an image [`fetch_selected`] pulls: asked with the image's config and the
/// layer's index (lowest first).
pub type LayerFilter<'a> = &'a (dyn Fn(&Value, usize) -> bool + Sync);

/// Pulls `reference` and stores its layers in `writer`.
pub async fn fetch(
    reference: &str,
    access: &RegistryAccess,
    writer: &LayoutWriter,
    progress: &Progress,
) -> Result<BaseImage, BaseError> {
    fetch_selected(reference, access, writer, progress, &|_, _| true).await
}

/// As [`fetch`], pulling only the layers `keep` selects: every layer stays listed in its
/// [`PlatformImage::layers`], but only the selected ones are stored in `writer` (an image
/// whose layers are files of separate directories installs the ones asked for).
pub async fn fetch_selected(
    reference: &str,
    access: &RegistryAccess,
    writer: &LayoutWriter,
    progress: &Progress,
    keep: LayerFilter<'_>,
) -> Result<BaseImage, BaseError> {
    let reference = reference::parse(reference)?;
    let client = RegistryClient::new(&reference, access)?;
    client
        .authenticate(&reference, RegistryOperation::Pull)
        .await?;
    let (bytes, digest) = pull_manifest(&client, &reference).await?;
    let media = media_type_of(&bytes);
    let mut fetched = HashSet::new();
    if media_type::is_index(&media) {
        let index: ImageIndex =
            serde_json::from_slice(&bytes).map_err(|source| BaseError::Manifest {
                digest: digest.clone(),
                what: "image index",
                source,
            })?;
        let mut images = Vec::new();
        for entry in index.manifests.iter().filter(|d| is_platform_image(d)) {
            let child = Reference::with_digest(
                reference.registry().to_owned(),
                reference.repository().to_owned(),
                entry.digest.clone(),
            );
            let (bytes, digest) = pull_manifest(&client, &child).await?;
            let mut image = fetch_image(
                &client,
                &child,
                &bytes,
                &digest,
                (writer, keep),
                progress,
                &mut fetched,
            )
            .await?;
            image.platform = entry.platform.clone();
            images.push(image);
        }
        Ok(BaseImage {
            is_index: true,
            images,
        })
    } else if media_type::is_manifest(&media) {
        let image = fetch_image(
            &client,
            &reference,
            &bytes,
            &digest,
            (writer, keep),
            progress,
            &mut fetched,
        )
        .await?;
        Ok(BaseImage {
            is_index: false,
            images: vec![image],
        })
    } else {
        Err(BaseError::MediaType {
            digest,
            media_type: media,
        })
    }
}

/// The `mediaType` of a manifest, inferred from its shape when absent.
fn media_type_of(bytes: &[u8]) -> String {
    let value: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    match value.get("mediaType").and_then(Value::as_str) {
        Some(media) => media.to_owned(),
        None if value.get("manifests").is_some() => media_type::INDEX.to_owned(),
        None => media_type::MANIFEST.to_owned(),
    }
}

/// Index entries that are runnable images: not attestations, not `unknown/unknown`.
fn is_platform_image(entry: &Descriptor) -> bool {
    let attestation = entry
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key("vnd.docker.reference.type"));
    let unknown = entry
        .platform
        .as_ref()
        .is_some_and(|p| p.os == "unknown" || p.architecture == "unknown");
    media_type::is_manifest(&entry.media_type) && !attestation && !unknown
}

async fn pull_manifest(
    client: &RegistryClient,
    reference: &Reference,
) -> Result<(Vec<u8>, String), BaseError> {
    let wanted = reference
        .digest()
        .or(reference.tag())
        .unwrap_or("latest")
        .to_owned();
    Ok(client
        .get_manifest(
            reference.repository(),
            &wanted,
            media_type::ALL_MANIFESTS,
            format!("pulling manifest {}", reference.whole()),
        )
        .await?)
}

#[allow(clippy::too_many_arguments)]
async fn fetch_image(
    client: &RegistryClient,
    reference: &Reference,
    bytes: &[u8],
    digest: &str,
    (writer, keep): (&LayoutWriter, LayerFilter<'_>),
    progress: &Progress,
    fetched: &mut HashSet<String>,
) -> Result<PlatformImage, BaseError> {
    let manifest: ImageManifest =
        serde_json::from_slice(bytes).map_err(|source| BaseError::Manifest {
            digest: digest.to_owned(),
            what: "image manifest",
            source,
        })?;
    let config_bytes = pull_to_memory(client, reference, &manifest.config).await?;
    let config: Value = serde_json::from_slice(&config_bytes)
        .ok()
        .filter(Value::is_object)
        .ok_or_else(|| BaseError::Config {
            digest: manifest.config.digest.clone(),
        })?;
    let mut layers = Vec::new();
    for (index, layer) in manifest.layers.iter().enumerate() {
        let media = oci_layer_media_type(layer)?;
        if keep(&config, index) && fetched.insert(layer.digest.clone()) {
            pull_to_layout(client, reference, layer, writer).await?;
            progress.blob("pulled", &layer.digest, layer.size);
        }
        let mut descriptor = Descriptor::new(&media, layer.digest.clone(), layer.size);
        descriptor.annotations = layer.annotations.clone();
        layers.push(descriptor);
    }
    Ok(PlatformImage {
        platform: None,
        config,
        layers,
    })
}

fn oci_layer_media_type(layer: &Descriptor) -> Result<String, BaseError> {
    let media = match layer.media_type.as_str() {
        media_type::DOCKER_LAYER_GZIP => media_type::LAYER_GZIP,
        media_type::DOCKER_LAYER_TAR => media_type::LAYER_TAR,
        other
            if other.starts_with("application/vnd.oci.image.layer.v1.tar")
                && !other.contains("nondistributable") =>
        {
            other
        }
        other => {
            return Err(BaseError::ForeignLayer {
                digest: layer.digest.clone(),
                media_type: other.to_owned(),
            });
        }
    };
    if layer.urls.as_ref().is_some_and(|u| !u.is_empty()) {
        return Err(BaseError::ForeignLayer {
            digest: layer.digest.clone(),
            media_type: layer.media_type.clone(),
        });
    }
    Ok(media.to_owned())
}

async fn pull_to_memory(
    client: &RegistryClient,
    reference: &Reference,
    blob: &Descriptor,
) -> Result<Vec<u8>, BaseError> {
    let expected = Expected {
        digest: &blob.digest,
        size: blob.size,
    };
    Ok(client
        .get_small_blob(
            reference.repository(),
            expected,
            format!("pulling blob {}", blob.digest),
        )
        .await?)
}

/// Streams a layer into the layout, never past its declared size, its digest checked.
async fn pull_to_layout(
    client: &RegistryClient,
    reference: &Reference,
    blob: &Descriptor,
    writer: &LayoutWriter,
) -> Result<(), BaseError> {
    use std::io::Write as _;
    let temp = writer.temp_blob_path();
    let store = |source| BaseError::Store {
        digest: blob.digest.clone(),
        source,
    };
    let mut file: Option<std::io::BufWriter<std::fs::File>> = None;
    let expected = Expected {
        digest: &blob.digest,
        size: blob.size,
    };
    client
        .get_blob(
            reference.repository(),
            expected,
            format!("pulling blob {}", blob.digest),
            |chunk| {
                if chunk.is_empty() {
                    // A fresh file per attempt: a retry must not append to a partial download.
                    file = Some(std::io::BufWriter::new(std::fs::File::create(&temp)?));
                    return Ok(());
                }
                match file.as_mut() {
                    Some(out) => out.write_all(chunk),
                    None => Ok(()),
                }
            },
        )
        .await?;
    if let Some(out) = file {
        out.into_inner()
            .map_err(|e| store(e.into_error()))?
            .sync_all()
            .map_err(store)?;
    }
    writer.commit_blob(&temp, &blob.digest)?;
    Ok(())
}
