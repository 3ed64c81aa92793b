//! Pulling an image's files: the union of its layers as a file tree in memory, e.g. to read
//! the files an image carries without a container engine.
//!
//! Contract: the image is fetched with [`super::base::fetch`] (digests verified, retries), its
//! layers applied in order (later files win; OCI whiteouts `.wh.<name>` delete). Only regular
//! files are kept, with paths relative to the image root. Nothing is written outside a temp
//! directory that is removed before returning. For an index, the first platform image is used
//! (the images pulled this way hold files, the same on every platform).

use crate::RefusesInput;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::base::{self, BaseError};
use super::layout::{LayoutError, LayoutWriter};
use super::progress::Progress;
use super::registry::RegistryAccess;
use super::unpack::{Budget, is_gzip, tar_stream};
use crate::input::Limits;

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

/// A blob olmpack refuses to read (exit 1); a registry or disk failure is exit 2.
impl RefusesInput for PullError {
    fn refuses_input(&self) -> bool {
        match self {
            PullError::Fetch { source, .. } => source.refuses_input(),
            PullError::Layout { source, .. } => source.refuses_input(),
            _ => false,
        }
    }
}

/// The prefix of a pull's temp directory in `$TMPDIR`.
pub const PULL_PREFIX: &str = ".olmpack-pull-";

/// The files of `reference` (relative path → contents), its layers unpacked under `limits`
/// as local input is read ([`super::unpack`]).
pub async fn pull_files(
    reference: &str,
    access: &RegistryAccess,
    limits: &Limits,
) -> Result<BTreeMap<PathBuf, Vec<u8>>, PullError> {
    // What killed pulls left in the temp directory (by owner marker, never by name alone).
    crate::leftovers::sweep(&std::env::temp_dir(), PULL_PREFIX);
    let temp = tempfile::Builder::new()
        .prefix(PULL_PREFIX)
        .tempdir()
        .map_err(PullError::TempDir)?;
    crate::leftovers::mark(temp.path()).map_err(PullError::TempDir)?;
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
    let mut budget = Budget::new(limits);
    for layer in &first.layers {
        let blob = writer.open_staged_blob(&layer.digest).map_err(layout_err)?;
        let blob = std::io::BufReader::new(blob);
        apply_layer(blob, &mut files, &mut budget).map_err(|source| PullError::Layer {
            reference: reference.to_owned(),
            digest: layer.digest.clone(),
            source,
        })?;
    }
    Ok(files)
}

/// Applies one (gzip-compressed or plain) tar layer to `files`, within `budget`.
fn apply_layer(
    mut blob: impl std::io::BufRead,
    files: &mut BTreeMap<PathBuf, Vec<u8>>,
    budget: &mut Budget,
) -> std::io::Result<()> {
    let gzip = is_gzip(blob.fill_buf()?);
    let mut archive = tar::Archive::new(tar_stream(blob, gzip));
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
            budget.admit(&path, entry.size())?;
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
            tar(&[
                ("manifests/a.yaml", "1"),
                ("manifests/b.yaml", "2"),
                ("metadata/x", "3"),
            ])
            .as_slice(),
            &mut files,
            &mut Budget::new(&Limits::default()),
        )
        .unwrap();
        apply_layer(
            tar(&[
                ("manifests/a.yaml", "new"),
                ("manifests/.wh.b.yaml", ""),
                ("./metadata/y", "4"),
            ])
            .as_slice(),
            &mut files,
            &mut Budget::new(&Limits::default()),
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
