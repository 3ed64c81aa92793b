//! Pulling an image's files: the union of its layers as a file tree in memory, e.g. to read a
//! bundle image the way `opm render <bundle-image>` does.
//!
//! Contract: the image is fetched with [`super::base::fetch`] (digests verified, retries), its
//! layers applied in order (later files win; OCI whiteouts `.wh.<name>` delete). Only regular
//! files are kept, with paths relative to the image root. Nothing is written outside a temp
//! directory that is removed before returning. For an index, the first platform image is used
//! (bundle and catalog content is the same on every platform).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::base::{self, BaseError};
use super::layout::{LayoutError, LayoutWriter};
use super::progress::Progress;
use super::registry::RegistryAccess;

/// Failure to pull an image's files.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// Fetching the image from its registry or layout failed.
    #[error("failed to pull {reference}")]
    Fetch {
        /// The image reference as given.
        reference: String,
        /// Why fetching failed.
        #[source]
        source: BaseError,
    },
    /// The reference resolves to an index that lists no image.
    #[error("{reference} has no image")]
    Empty {
        /// The image reference as given.
        reference: String,
    },
    /// Writing the pulled blobs into the staging layout failed.
    #[error("failed to stage the layers of {reference}")]
    Layout {
        /// The image reference as given.
        reference: String,
        /// The layout writer's error.
        #[source]
        source: LayoutError,
    },
    /// Reading or unpacking a pulled layer failed.
    #[error("failed to read layer {digest} of {reference}")]
    Layer {
        /// The image reference as given.
        reference: String,
        /// Digest of the layer.
        digest: String,
        /// The I/O error from reading or unpacking.
        #[source]
        source: std::io::Error,
    },
    /// The temporary directory for the pulled image could not be created.
    #[error("failed to create a temp directory")]
    TempDir(#[source] std::io::Error),
}

/// The files of `reference` (relative path → contents).
pub async fn pull_files(
    reference: &str,
    access: &RegistryAccess,
) -> Result<BTreeMap<PathBuf, Vec<u8>>, PullError> {
    let temp = tempfile::tempdir().map_err(PullError::TempDir)?;
    let layout_err = |source| PullError::Layout {
        reference: reference.to_owned(),
        source,
    };
    let writer = LayoutWriter::create(&temp.path().join("layout")).map_err(layout_err)?;
    let image = base::fetch(reference, access, &writer, &Progress::Quiet)
        .await
        .map_err(|source| PullError::Fetch {
            reference: reference.to_owned(),
            source,
        })?;
    let first = image.images.first().ok_or_else(|| PullError::Empty {
        reference: reference.to_owned(),
    })?;
    let mut files = BTreeMap::new();
    for layer in &first.layers {
        let blob = writer.read_staged_blob(&layer.digest).map_err(layout_err)?;
        apply_layer(&blob, &mut files).map_err(|source| PullError::Layer {
            reference: reference.to_owned(),
            digest: layer.digest.clone(),
            source,
        })?;
    }
    Ok(files)
}

/// Applies one (gzip-compressed or plain) tar layer to `files`.
fn apply_layer(blob: &[u8], files: &mut BTreeMap<PathBuf, Vec<u8>>) -> std::io::Result<()> {
    let reader: Box<dyn Read + '_> = if blob.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(blob))
    } else {
        Box::new(blob)
    };
    let mut archive = tar::Archive::new(reader);
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path = entry.path()?.into_owned();
        let path: PathBuf = path
            .components()
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .collect();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(hidden) = name.strip_prefix(".wh.") {
            let parent = path.parent().unwrap_or(Path::new(""));
            if hidden == ".wh..opq" {
                files.retain(|p, _| !p.starts_with(parent) || p == parent);
            } else {
                let target = parent.join(hidden);
                files.retain(|p, _| !p.starts_with(&target));
            }
            continue;
        }
        if entry.header().entry_type().is_file() {
            let mut contents = Vec::new();
            entry.read_to_end(&mut contents)?;
            files.insert(path, contents);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, contents) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(contents.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder
                .append_data(&mut header, path, contents.as_bytes())
                .unwrap();
        }
        builder.into_inner().unwrap()
    }

    #[test]
    fn layers_apply_in_order_with_whiteouts() {
        let mut files = BTreeMap::new();
        apply_layer(
            &tar(&[
                ("manifests/a.yaml", "1"),
                ("manifests/b.yaml", "2"),
                ("metadata/x", "3"),
            ]),
            &mut files,
        )
        .unwrap();
        apply_layer(
            &tar(&[
                ("manifests/a.yaml", "new"),
                ("manifests/.wh.b.yaml", ""),
                ("./metadata/y", "4"),
            ]),
            &mut files,
        )
        .unwrap();
        let got: Vec<(String, String)> = files
            .iter()
            .map(|(p, c)| {
                (
                    p.display().to_string(),
                    String::from_utf8(c.clone()).unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("manifests/a.yaml".into(), "new".into()),
                ("metadata/x".into(), "3".into()),
                ("metadata/y".into(), "4".into())
            ]
        );
    }
}
