//! Pushing an image from an OCI layout to a registry.
//!
//! Contract, in order:
//! 1. Every blob and manifest is read from the layout and checked against its digest before
//!    anything is sent.
//! 2. Blobs the registry already has (HEAD) are not sent again; the others are uploaded, each
//!    with retries (see [`super::registry`]), and confirmed with a HEAD afterwards.
//! 3. Manifests are pushed by digest, children before the index that lists them, each only
//!    after everything it refers to is confirmed in the registry.
//! 4. The tag is moved last, to the root manifest; then the tag is resolved again and must
//!    give the root digest.
//!
//! A failed push leaves at most unreferenced blobs or untagged complete manifests behind;
//! running it again finishes it without re-sending what is there.
//!
//! Caveat: each blob is held in memory while it is uploaded (catalog layers are tens of MB;
//! base image layers are re-used from the registry when already there).

use std::collections::BTreeSet;

use futures::{StreamExt, TryStreamExt};
use oci_client::Reference;
use oci_client::RegistryOperation;

use super::layout::{Descriptor, ImageIndex, ImageManifest, Layout, LayoutError};
use super::media_type;
use super::progress::Progress;
use super::reference::{self, LayoutRef, ReferenceError};
use super::registry::{RegistryAccess, RegistryClient, RegistryError};

/// Failure to push an image.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The OCI layout to push from cannot be opened or read, or a blob in it does not match
    /// its digest.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The source `DIR[:TAG]` or the target reference is malformed.
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// The registry refused or could not be reached (after retries).
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The layout holds a manifest, index or descriptor of a media type olmpack does not
    /// push (or one that is not a valid HTTP header value).
    #[error("{digest} has media type {media_type:?}, which olmpack does not push")]
    MediaType {
        /// The digest of the object with that media type.
        digest: String,
        /// The media type, as the layout records it.
        media_type: String,
    },
    /// The target names a digest (`…@sha256:…`) other than the one of the image in the
    /// layout; nothing was pushed.
    #[error("{reference} names digest {wanted}, but the layout's image is {actual}")]
    DigestMismatch {
        /// The target reference, as given.
        reference: String,
        /// The digest the target names.
        wanted: String,
        /// The digest of the layout's image.
        actual: String,
    },
    /// The registry accepted the upload of a blob but does not report it afterwards; no
    /// manifest referring to it was pushed.
    #[error("the registry still lacks blob {digest} after it was uploaded")]
    BlobMissing {
        /// The digest of the blob.
        digest: String,
    },
    /// After moving the tag, the registry resolves it to another manifest (e.g. someone else
    /// pushed to the same tag at the same time).
    #[error("after the push {reference} resolves to {actual}, not the pushed {expected}")]
    TagMismatch {
        /// The tagged reference pushed to.
        reference: String,
        /// The digest of the pushed root manifest or index.
        expected: String,
        /// The digest the tag resolves to now.
        actual: String,
    },
}

/// A layout blob olmpack refuses to read (exit 1); a registry or network failure is exit 2.
impl crate::RefusesInput for PushError {
    fn refuses_input(&self) -> bool {
        match self {
            PushError::Layout(layout) => layout.refuses_input(),
            PushError::Reference(_)
            | PushError::Registry(_)
            | PushError::MediaType { .. }
            | PushError::DigestMismatch { .. }
            | PushError::BlobMissing { .. }
            | PushError::TagMismatch { .. } => false,
        }
    }
}

/// What a push did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushReport {
    /// The digest of the pushed root (manifest or index).
    pub digest: String,
    /// `registry/repository@digest`.
    pub pinned: String,
    /// How many blobs (layers and configs) were uploaded.
    pub blobs_pushed: usize,
    /// How many blobs the registry already had, so were not sent.
    pub blobs_present: usize,
    /// The size in bytes of the uploaded blobs, together.
    pub bytes_pushed: u64,
}

/// A manifest or index to push, with the bytes whose digest it has.
#[derive(Clone, Debug)]
struct ManifestToPush {
    descriptor: Descriptor,
    bytes: Vec<u8>,
}

/// What an image consists of, in push order.
#[derive(Clone, Debug, Default)]
struct UploadOrder {
    blobs: Vec<Descriptor>,
    /// Children first, the root last.
    manifests: Vec<ManifestToPush>,
}

/// Reads the image graph under `root`, checking every manifest and blob digest.
fn upload_order(layout: &Layout, root: &Descriptor) -> Result<UploadOrder, PushError> {
    let mut order = UploadOrder::default();
    let mut seen = BTreeSet::new();
    add_manifest(layout, root, &mut order, &mut seen)?;
    Ok(order)
}

fn add_manifest(
    layout: &Layout,
    descriptor: &Descriptor,
    order: &mut UploadOrder,
    seen: &mut BTreeSet<String>,
) -> Result<(), PushError> {
    let bytes = layout.read_described(descriptor)?;
    if media_type::is_index(&descriptor.media_type) {
        let index: ImageIndex = layout.read_json(&descriptor.digest, "image index")?;
        for child in &index.manifests {
            add_manifest(layout, child, order, seen)?;
        }
    } else if media_type::is_manifest(&descriptor.media_type) {
        let manifest: ImageManifest = layout.read_json(&descriptor.digest, "image manifest")?;
        for blob in std::iter::once(&manifest.config).chain(&manifest.layers) {
            if seen.insert(blob.digest.clone()) {
                // Reading checks the digest; the bytes are read again when sent.
                check_blob(layout, blob)?;
                order.blobs.push(blob.clone());
            }
        }
    } else {
        return Err(PushError::MediaType {
            digest: descriptor.digest.clone(),
            media_type: descriptor.media_type.clone(),
        });
    }
    if seen.insert(descriptor.digest.clone()) {
        order.manifests.push(ManifestToPush {
            descriptor: descriptor.clone(),
            bytes,
        });
    }
    Ok(())
}

fn check_blob(layout: &Layout, blob: &Descriptor) -> Result<(), PushError> {
    // A regular file of the layout (a FIFO is refused, not waited on), of the descriptor's
    // size, hashing to its digest.
    Ok(layout.check_blob(blob)?)
}

/// Pushes the image `source` names (`DIR[:TAG]`) to `target` (`host/repo[:tag][@digest]`).
pub async fn push_layout(
    source: &str,
    target: &str,
    access: &RegistryAccess,
    progress: &Progress,
) -> Result<PushReport, PushError> {
    let LayoutRef { path, tag } = reference::parse_layout_ref(source)?;
    let layout = Layout::open(&path)?;
    let root = layout.find(tag.as_deref())?;
    let target = reference::parse(target)?;
    if let Some(wanted) = target.digest()
        && wanted != root.digest
    {
        return Err(PushError::DigestMismatch {
            reference: target.whole(),
            wanted: wanted.to_owned(),
            actual: root.digest,
        });
    }
    let order = upload_order(&layout, &root)?;
    let client = RegistryClient::new(&target, access)?;
    client
        .authenticate(&target, RegistryOperation::Push)
        .await?;

    let outcomes = push_blobs(&client, &layout, &target, &order.blobs, access, progress).await?;
    for manifest in &order.manifests {
        let reference = by_digest(&target, &manifest.descriptor.digest);
        push_manifest(&client, &reference, manifest).await?;
        progress.step(&format!("manifest {}", manifest.descriptor.digest));
    }
    // The tag moves last, once everything it will point to is there.
    if target.digest().is_none() {
        let root_manifest = order
            .manifests
            .last()
            .expect("the upload order always ends with the root");
        move_tag(&client, &target, &root.digest, root_manifest, progress).await?;
    }
    progress.finish();

    let pushed = outcomes.iter().filter(|(sent, _)| *sent).count();
    Ok(PushReport {
        pinned: by_digest(&target, &root.digest).whole(),
        digest: root.digest,
        blobs_pushed: pushed,
        blobs_present: outcomes.len() - pushed,
        bytes_pushed: outcomes
            .iter()
            .filter(|(sent, _)| *sent)
            .map(|(_, size)| size)
            .sum(),
    })
}

/// `digest` in the repository of `target`.
fn by_digest(target: &Reference, digest: &str) -> Reference {
    Reference::with_digest(
        target.registry().to_owned(),
        target.repository().to_owned(),
        digest.to_owned(),
    )
}

/// Uploads the blobs the registry lacks, several at a time; returns, per blob, whether it
/// was sent and its size.
async fn push_blobs(
    client: &RegistryClient,
    layout: &Layout,
    target: &Reference,
    blobs: &[Descriptor],
    access: &RegistryAccess,
    progress: &Progress,
) -> Result<Vec<(bool, u64)>, PushError> {
    let total: u64 = blobs.iter().map(|b| b.size).sum();
    progress.start(
        &format!("pushing to {}/{}", target.registry(), target.repository()),
        blobs.len(),
        total,
    );
    futures::stream::iter(blobs)
        .map(|blob| push_blob(client, layout, target, blob, progress))
        .buffer_unordered(access.max_concurrent.max(1))
        .try_collect()
        .await
}

/// Points the tag of `target` (`latest` when it has none) at the root manifest, then
/// resolves the tag again: it must give `root_digest`.
async fn move_tag(
    client: &RegistryClient,
    target: &Reference,
    root_digest: &str,
    root_manifest: &ManifestToPush,
    progress: &Progress,
) -> Result<(), PushError> {
    let tag = target.tag().unwrap_or("latest");
    let tagged = Reference::with_tag(
        target.registry().to_owned(),
        target.repository().to_owned(),
        tag.to_owned(),
    );
    push_manifest(client, &tagged, root_manifest).await?;
    // The digest of what the tag serves, hashed here: a header could say anything.
    let (_, actual) = client
        .get_manifest(
            tagged.repository(),
            tag,
            super::media_type::ALL_MANIFESTS,
            format!("resolving {}", tagged.whole()),
        )
        .await?;
    if actual != root_digest {
        return Err(PushError::TagMismatch {
            reference: tagged.whole(),
            expected: root_digest.to_owned(),
            actual,
        });
    }
    progress.step(&format!("tagged {tag}"));
    Ok(())
}

/// Uploads one blob unless the registry has it; returns whether it was sent, and its size.
async fn push_blob(
    client: &RegistryClient,
    layout: &Layout,
    target: &Reference,
    blob: &Descriptor,
    progress: &Progress,
) -> Result<(bool, u64), PushError> {
    let exists = || async {
        client
            .with_retries(format!("checking blob {}", blob.digest), || async {
                client.client.blob_exists(target, &blob.digest).await
            })
            .await
    };
    if exists().await? {
        progress.blob("exists", &blob.digest, blob.size);
        return Ok((false, blob.size));
    }
    let bytes = bytes::Bytes::from(layout.read_described(blob)?);
    client
        .with_retries(format!("uploading blob {}", blob.digest), || async {
            // The registry checks the upload against `digest` before it accepts it.
            client
                .client
                .push_blob(target, bytes.clone(), &blob.digest)
                .await
        })
        .await?;
    if !exists().await? {
        return Err(PushError::BlobMissing {
            digest: blob.digest.clone(),
        });
    }
    progress.blob("pushed", &blob.digest, blob.size);
    Ok((true, blob.size))
}

async fn push_manifest(
    client: &RegistryClient,
    reference: &Reference,
    manifest: &ManifestToPush,
) -> Result<(), PushError> {
    let content_type = manifest
        .descriptor
        .media_type
        .parse::<http::HeaderValue>()
        .map_err(|_| PushError::MediaType {
            digest: manifest.descriptor.digest.clone(),
            media_type: manifest.descriptor.media_type.clone(),
        })?;
    client
        .with_retries(
            format!("pushing manifest to {}", reference.whole()),
            || async {
                client
                    .client
                    .push_manifest_raw(reference, manifest.bytes.clone(), content_type.clone())
                    .await
            },
        )
        .await?;
    Ok(())
}
