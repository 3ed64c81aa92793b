//! OCI image layouts on disk (`oci-layout`, `index.json`, `blobs/sha256/…`): written whole or
//! not at all, read with every blob's digest checked.
//!
//! Contract:
//! - [`LayoutWriter`] assembles the layout in a hidden sibling temp directory of the target
//!   and renames it into place in [`LayoutWriter::finish`]. Every layout it writes carries
//!   olmpack's [`STAMP_FILE`]; an existing target is replaced only if it carries it or is an
//!   empty directory ([`check_replaceable`]) — never because it holds an `oci-layout` file.
//!   Dropping the writer without finishing removes the temp directory; the temp directory
//!   holds an owner marker until it becomes the layout, so what a killed run left is removed
//!   by the next writer of the same layout ([`crate::leftovers`]).
//! - [`Layout`] reads a layout; a blob is read only as a regular file of the layout (a symlink,
//!   FIFO or device is refused without blocking), and [`Layout::read_blob`] and
//!   [`Layout::check_blob`] fail if its size or its bytes do not match its descriptor.
//!   [`Layout::verify`] checks every blob an image reaches.
//! - JSON written here (index, manifests, configs) is compact and its field order fixed, so the
//!   same content always gives the same digest.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::REF_NAME_ANNOTATION;
use super::digest::{HashingWriter, sha256_digest, sha256_hex};
use super::media_type;
use crate::output::STAMP_FILE;

const OCI_LAYOUT_FILE: &str = "oci-layout";
const OCI_LAYOUT_CONTENT: &[u8] = br#"{"imageLayoutVersion":"1.0.0"}"#;

/// Failure to read or write an OCI image layout.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// Writing a file or directory of the layout failed.
    #[error("failed to write the image layout {path}")]
    Write {
        /// The file or directory being written.
        path: PathBuf,
        /// The I/O error from the file system.
        #[source]
        source: io::Error,
    },
    /// Reading a file of the layout failed.
    #[error("failed to read {path}")]
    Read {
        /// The file being read.
        path: PathBuf,
        /// The I/O error from the file system.
        #[source]
        source: io::Error,
    },
    /// A layout file (index, manifest, `oci-layout`) does not parse as the OCI JSON it should be.
    #[error("{path} is not valid JSON for an OCI {what}")]
    Json {
        /// The file that does not parse.
        path: PathBuf,
        /// Which OCI document was expected, e.g. "image index".
        what: &'static str,
        /// The JSON parser's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// The target path holds something olmpack did not write, so it is left alone.
    #[error(
        "{path}: {reason}; olmpack replaces only image layouts it wrote (they carry {STAMP_FILE}), so nothing was written (pick another directory, or remove it yourself)"
    )]
    NotALayout {
        /// The path that is not an olmpack layout.
        path: PathBuf,
        /// What is there, e.g. "is a directory olmpack did not write (it holds thesis.tex)".
        reason: String,
    },
    /// A blob of the layout is not a regular file olmpack can read.
    #[error("{layout}: blob {digest}: {problem}")]
    BlobUnreadable {
        /// The layout directory.
        layout: PathBuf,
        /// The blob's digest.
        digest: String,
        /// What is wrong, in our words.
        problem: String,
        /// True when olmpack refuses it (a symlink, FIFO, device: exit 1), false when the
        /// system could not read it (missing, no permission: exit 2).
        refusal: bool,
    },
    /// A blob's size differs from the size its descriptor gives.
    #[error(
        "{layout}: blob {digest} is {actual} bytes, but the image names it with {expected} bytes (the layout was changed after it was written)"
    )]
    BlobSize {
        /// The layout directory.
        layout: PathBuf,
        /// The blob's digest.
        digest: String,
        /// The size the descriptor gives.
        expected: u64,
        /// The size on disk.
        actual: u64,
    },
    /// The layout declares a version olmpack does not read.
    #[error("{path} has imageLayoutVersion {version:?}; only 1.0.0 is supported")]
    Version {
        /// The layout directory.
        path: PathBuf,
        /// The `imageLayoutVersion` it declares.
        version: String,
    },
    /// The `LAYOUT:TAG` reference names a tag the layout does not have.
    #[error("{layout} has no image tagged {tag:?} (tags: {tags})")]
    NoSuchTag {
        /// The layout directory.
        layout: PathBuf,
        /// The tag that was asked for.
        tag: String,
        /// The tags the layout does have, comma-separated, for the message.
        tags: String,
    },
    /// No tag was given and the layout holds more than one image, so the choice is ambiguous.
    #[error("{layout} holds {count} images; name one with LAYOUT:TAG (tags: {tags})")]
    Ambiguous {
        /// The layout directory.
        layout: PathBuf,
        /// How many images the index lists.
        count: usize,
        /// The tags of those images, comma-separated.
        tags: String,
    },
    /// The layout's index lists no image at all.
    #[error("{layout} holds no image")]
    Empty {
        /// The layout directory.
        layout: PathBuf,
    },
    /// A descriptor's digest is not of the form `sha256:<64 hex digits>`.
    #[error("{digest:?} in {layout} is not a sha256 digest")]
    BadDigest {
        /// The layout directory.
        layout: PathBuf,
        /// The digest as written.
        digest: String,
    },
    /// A blob's bytes do not hash to the digest that names it.
    #[error("blob {expected} in {layout} is corrupt: its content hashes to {actual}")]
    Corrupt {
        /// The layout directory.
        layout: PathBuf,
        /// The digest the blob is stored under.
        expected: String,
        /// The digest of its actual content.
        actual: String,
    },
}

/// A blob olmpack refuses to read (exit 1); anything else is a failure to write or read the
/// layout (exit 2).
impl crate::RefusesInput for LayoutError {
    fn refuses_input(&self) -> bool {
        match self {
            LayoutError::BlobUnreadable { refusal, .. } => *refusal,
            _ => false,
        }
    }
}

/// An OCI content descriptor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Media type of the referenced blob (see [`super::media_type`]).
    pub media_type: String,
    /// Content digest of the blob, `sha256:<hex>`.
    pub digest: String,
    /// Size of the blob in bytes.
    pub size: u64,
    /// Which OS and architecture the referenced image is for (in an index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    /// Free-form key/value annotations on this reference, e.g. the tag name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Alternative download locations of the blob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urls: Option<Vec<String>>,
    /// Artifact type of the referenced manifest, when it is not an image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
}

impl Descriptor {
    /// A descriptor with only the media type, digest and size set.
    pub fn new(media_type: &str, digest: String, size: u64) -> Self {
        Self {
            media_type: media_type.to_owned(),
            digest,
            size,
            platform: None,
            annotations: None,
            urls: None,
            artifact_type: None,
        }
    }
}

/// The platform an image runs on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    /// CPU architecture in Go's spelling, e.g. `amd64`, `arm64`.
    pub architecture: String,
    /// Operating system in Go's spelling, e.g. `linux`.
    pub os: String,
    /// Exact OS version (Windows images).
    #[serde(
        rename = "os.version",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub os_version: Option<String>,
    /// Required OS features (Windows images).
    #[serde(
        rename = "os.features",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub os_features: Option<Vec<String>>,
    /// Architecture variant, e.g. `v8` for `arm64`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl Platform {
    /// The platform most catalog and bundle images are built for: `linux/amd64`.
    pub fn linux_amd64() -> Self {
        Self {
            architecture: "amd64".into(),
            os: "linux".into(),
            os_version: None,
            os_features: None,
            variant: None,
        }
    }
}

/// An OCI image index (also the shape of a layout's `index.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageIndex {
    /// Always 2 for the OCI image index schema.
    pub schema_version: u32,
    /// [`super::media_type::INDEX`] when written by olmpack; absent in some older indexes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The per-platform (or per-tag) manifests the index points to.
    pub manifests: Vec<Descriptor>,
    /// Free-form key/value annotations on the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

impl ImageIndex {
    /// An OCI index (schema 2, OCI media type) over these manifests.
    pub fn new(manifests: Vec<Descriptor>) -> Self {
        Self {
            schema_version: 2,
            media_type: Some(media_type::INDEX.to_owned()),
            manifests,
            annotations: None,
        }
    }
}

/// An OCI image manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    /// Always 2 for the OCI image manifest schema.
    pub schema_version: u32,
    /// [`super::media_type::MANIFEST`] when written by olmpack; absent in some older manifests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The image's config blob.
    pub config: Descriptor,
    /// The image's layers, lowest first.
    pub layers: Vec<Descriptor>,
    /// Free-form key/value annotations on the manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// Builds a layout in a temp directory next to its destination. See the module docs.
#[derive(Debug)]
pub struct LayoutWriter {
    dest: PathBuf,
    staging: tempfile::TempDir,
    next_temp: std::sync::atomic::AtomicU64,
}

impl LayoutWriter {
    /// Starts a layout that [`finish`](Self::finish) will move to `dest`.
    pub fn create(dest: &Path) -> Result<Self, LayoutError> {
        let write_err = |source| LayoutError::Write {
            path: dest.to_owned(),
            source,
        };
        check_replaceable(dest)?;
        let parent = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&parent).map_err(write_err)?;
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "layout".into());
        let prefix = format!(".{name}.tmp-");
        // What killed runs writing this layout left (by owner marker, never by name alone).
        crate::leftovers::sweep(&parent, &prefix);
        let staging = tempfile::Builder::new()
            .prefix(&prefix)
            .tempdir_in(&parent)
            .map_err(write_err)?;
        crate::leftovers::mark(staging.path()).map_err(write_err)?;
        fs::create_dir_all(staging.path().join("blobs/sha256")).map_err(write_err)?;
        Ok(Self {
            dest: dest.to_owned(),
            staging,
            next_temp: Default::default(),
        })
    }

    fn write_err(&self, source: io::Error) -> LayoutError {
        LayoutError::Write {
            path: self.dest.clone(),
            source,
        }
    }

    /// A fresh path inside the staging directory for a blob being written.
    pub fn temp_blob_path(&self) -> PathBuf {
        let n = self
            .next_temp
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.staging.path().join(format!("blobs/.incoming-{n}"))
    }

    /// Opens a blob already stored in this (unfinished) layout, to stream it.
    pub fn open_staged_blob(&self, digest: &str) -> Result<fs::File, LayoutError> {
        let hex = sha256_hex(digest).ok_or_else(|| LayoutError::BadDigest {
            layout: self.dest.clone(),
            digest: digest.to_owned(),
        })?;
        fs::File::open(self.staging.path().join("blobs/sha256").join(hex))
            .map_err(|e| self.write_err(e))
    }

    /// Reads a blob already stored in this (unfinished) layout.
    pub fn read_staged_blob(&self, digest: &str) -> Result<Vec<u8>, LayoutError> {
        let hex = sha256_hex(digest).ok_or_else(|| LayoutError::BadDigest {
            layout: self.dest.clone(),
            digest: digest.to_owned(),
        })?;
        fs::read(self.staging.path().join("blobs/sha256").join(hex)).map_err(|e| self.write_err(e))
    }

    /// Moves a fully written temp blob to its content address.
    pub fn commit_blob(&self, temp: &Path, digest: &str) -> Result<(), LayoutError> {
        let hex = sha256_hex(digest).ok_or_else(|| LayoutError::BadDigest {
            layout: self.dest.clone(),
            digest: digest.to_owned(),
        })?;
        fs::rename(temp, self.staging.path().join("blobs/sha256").join(hex))
            .map_err(|e| self.write_err(e))
    }

    /// Writes a blob produced by `fill` and returns its digest and size.
    pub fn write_blob_with<E: From<LayoutError>, T>(
        &self,
        fill: impl FnOnce(&mut HashingWriter<io::BufWriter<fs::File>>) -> Result<T, E>,
    ) -> Result<(T, String, u64), E> {
        let temp = self.temp_blob_path();
        let file = fs::File::create(&temp).map_err(|e| self.write_err(e))?;
        let mut writer = HashingWriter::new(io::BufWriter::new(file));
        let value = fill(&mut writer)?;
        let (buffered, digest, size) = writer.finish();
        let file = buffered
            .into_inner()
            .map_err(|e| self.write_err(e.into_error()))?;
        file.sync_all().map_err(|e| self.write_err(e))?;
        self.commit_blob(&temp, &digest)?;
        Ok((value, digest, size))
    }

    /// Stores `bytes` as a blob and returns its descriptor.
    pub fn put_blob(&self, media_type: &str, bytes: &[u8]) -> Result<Descriptor, LayoutError> {
        let digest = sha256_digest(bytes);
        let hex = sha256_hex(&digest).expect("sha256_digest is well formed");
        fs::write(self.staging.path().join("blobs/sha256").join(hex), bytes)
            .map_err(|e| self.write_err(e))?;
        Ok(Descriptor::new(media_type, digest, bytes.len() as u64))
    }

    /// Stores a JSON document as a blob.
    pub fn put_json<T: Serialize>(
        &self,
        media_type: &str,
        value: &T,
    ) -> Result<Descriptor, LayoutError> {
        let bytes = serde_json::to_vec(value).expect("image JSON always serializes");
        self.put_blob(media_type, &bytes)
    }

    /// Writes `index.json` (naming `root` with `tag`, if any) and `oci-layout`, then moves the
    /// layout to its destination, replacing an older layout there.
    pub fn finish(self, root: &Descriptor, tag: Option<&str>) -> Result<(), LayoutError> {
        let mut entry = root.clone();
        if let Some(tag) = tag {
            entry
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(REF_NAME_ANNOTATION.to_owned(), tag.to_owned());
        }
        let index = ImageIndex::new(vec![entry]);
        let staging = self.staging.path();
        let index_bytes = serde_json::to_vec(&index).expect("index JSON always serializes");
        fs::write(staging.join("index.json"), index_bytes).map_err(|e| self.write_err(e))?;
        fs::write(staging.join(OCI_LAYOUT_FILE), OCI_LAYOUT_CONTENT)
            .map_err(|e| self.write_err(e))?;
        fs::write(staging.join(STAMP_FILE), b"").map_err(|e| self.write_err(e))?;
        crate::leftovers::unmark(staging).map_err(|e| self.write_err(e))?;
        check_replaceable(&self.dest)?;
        let dest = self.dest.clone();
        let staging = self.staging.keep();
        swap_into_place(&staging, &dest).map_err(|source| {
            let _ = fs::remove_dir_all(&staging);
            LayoutError::Write { path: dest, source }
        })
    }
}

/// Whether a layout may be written to `dest`: nothing there, an empty directory, or a
/// directory carrying olmpack's [`STAMP_FILE`] (module contract).
pub fn check_replaceable(dest: &Path) -> Result<(), LayoutError> {
    let refuse = |reason: String| {
        Err(LayoutError::NotALayout {
            path: dest.to_owned(),
            reason,
        })
    };
    let meta = match fs::symlink_metadata(dest) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(LayoutError::Read {
                path: dest.to_owned(),
                source,
            });
        }
        Ok(meta) => meta,
    };
    if meta.file_type().is_symlink() {
        return refuse("is a symlink, not a directory olmpack wrote".into());
    }
    if !meta.is_dir() {
        return refuse("is not a directory".into());
    }
    if fs::symlink_metadata(dest.join(STAMP_FILE)).is_ok_and(|m| m.is_file()) {
        return Ok(());
    }
    let read_err = |source| LayoutError::Read {
        path: dest.to_owned(),
        source,
    };
    let mut names = Vec::new();
    for entry in fs::read_dir(dest).map_err(read_err)? {
        names.push(entry.map_err(read_err)?.file_name());
    }
    names.sort();
    // Name what is not part of an OCI layout first: that is what would be lost.
    let layout_part = |n: &std::ffi::OsString| {
        [OCI_LAYOUT_FILE, "index.json", "blobs"]
            .iter()
            .any(|p| n.as_os_str() == *p)
    };
    match names
        .iter()
        .find(|n| !layout_part(n))
        .or_else(|| names.first())
    {
        None => Ok(()),
        Some(name) => refuse(format!(
            "is a directory olmpack did not write (it holds {}, and no {STAMP_FILE})",
            Path::new(name).display()
        )),
    }
}

/// Renames `staging` to `dest`; an existing `dest` is moved aside first and removed after.
fn swap_into_place(staging: &Path, dest: &Path) -> io::Result<()> {
    if !dest.exists() {
        return fs::rename(staging, dest);
    }
    let old = staging.with_extension("old");
    fs::rename(dest, &old)?;
    if let Err(e) = fs::rename(staging, dest) {
        // Put the previous layout back; the new one is discarded by the caller.
        let _ = fs::rename(&old, dest);
        return Err(e);
    }
    let _ = fs::remove_dir_all(&old);
    Ok(())
}

/// An OCI image layout on disk.
#[derive(Clone, Debug)]
pub struct Layout {
    root: PathBuf,
    index: ImageIndex,
}

impl Layout {
    /// Opens a layout: checks `oci-layout` and reads `index.json`.
    pub fn open(root: &Path) -> Result<Self, LayoutError> {
        let marker = root.join(OCI_LAYOUT_FILE);
        // A layout's marker and index are small files; the default limits bound them.
        let text =
            crate::input::read_io(&marker, &crate::input::Limits::default()).map_err(|source| {
                LayoutError::Read {
                    path: marker.clone(),
                    source,
                }
            })?;
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Marker {
            image_layout_version: String,
        }
        let parsed: Marker = serde_json::from_slice(&text).map_err(|source| LayoutError::Json {
            path: marker.clone(),
            what: "layout marker",
            source,
        })?;
        if parsed.image_layout_version != "1.0.0" {
            return Err(LayoutError::Version {
                path: marker,
                version: parsed.image_layout_version,
            });
        }
        let index_path = root.join("index.json");
        let bytes = crate::input::read_io(&index_path, &crate::input::Limits::default()).map_err(
            |source| LayoutError::Read {
                path: index_path.clone(),
                source,
            },
        )?;
        let index = serde_json::from_slice(&bytes).map_err(|source| LayoutError::Json {
            path: index_path,
            what: "image index",
            source,
        })?;
        Ok(Self {
            root: root.to_owned(),
            index,
        })
    }

    /// The directory the layout was opened from.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The layout's `index.json`.
    pub fn index(&self) -> &ImageIndex {
        &self.index
    }

    /// The image named `tag`, or the only image when `tag` is `None`.
    pub fn find(&self, tag: Option<&str>) -> Result<Descriptor, LayoutError> {
        let tag_of = |d: &Descriptor| {
            d.annotations
                .as_ref()
                .and_then(|a| a.get(REF_NAME_ANNOTATION))
                .cloned()
        };
        let tags = || {
            let names: Vec<String> = self.index.manifests.iter().filter_map(tag_of).collect();
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        };
        match tag {
            Some(tag) => self
                .index
                .manifests
                .iter()
                .find(|d| tag_of(d).as_deref() == Some(tag))
                .cloned()
                .ok_or_else(|| LayoutError::NoSuchTag {
                    layout: self.root.clone(),
                    tag: tag.to_owned(),
                    tags: tags(),
                }),
            None => match self.index.manifests.as_slice() {
                [only] => Ok(only.clone()),
                [] => Err(LayoutError::Empty {
                    layout: self.root.clone(),
                }),
                many => Err(LayoutError::Ambiguous {
                    layout: self.root.clone(),
                    count: many.len(),
                    tags: tags(),
                }),
            },
        }
    }

    /// Where a blob's bytes are.
    pub fn blob_path(&self, digest: &str) -> Result<PathBuf, LayoutError> {
        let hex = sha256_hex(digest).ok_or_else(|| LayoutError::BadDigest {
            layout: self.root.clone(),
            digest: digest.to_owned(),
        })?;
        Ok(self.root.join("blobs/sha256").join(hex))
    }

    /// Opens a blob: a regular file inside the layout, never a symlink, FIFO or device (a
    /// FIFO is refused without blocking); returns it with its size.
    fn open_blob(&self, digest: &str) -> Result<(fs::File, u64), LayoutError> {
        let path = self.blob_path(digest)?;
        let unreadable = |problem: String, refusal| LayoutError::BlobUnreadable {
            layout: self.root.clone(),
            digest: digest.to_owned(),
            problem,
            refusal,
        };
        let meta = fs::symlink_metadata(&path).map_err(|e| {
            unreadable(
                format!("{}: {}", path.display(), crate::input::describe_io(&e)),
                false,
            )
        })?;
        if meta.file_type().is_symlink() {
            return Err(unreadable(
                format!(
                    "{}: is a symlink; olmpack reads blobs only as regular files of the layout",
                    path.display()
                ),
                true,
            ));
        }
        crate::input::open_regular(&path).map_err(|e| {
            let refusal = e.is_refusal();
            unreadable(e.to_string(), refusal)
        })
    }

    /// Reads a blob whose descriptor gives `expected` bytes (when known), checking its size
    /// and its digest; streams it through `sink`.
    fn stream_blob(
        &self,
        digest: &str,
        expected: Option<u64>,
        mut sink: impl FnMut(&[u8]),
    ) -> Result<(), LayoutError> {
        use io::Read as _;
        use sha2::Digest as _;
        let (mut file, len) = self.open_blob(digest)?;
        let size_err = |actual| LayoutError::BlobSize {
            layout: self.root.clone(),
            digest: digest.to_owned(),
            expected: expected.unwrap_or_default(),
            actual,
        };
        if expected.is_some_and(|e| e != len) {
            return Err(size_err(len));
        }
        let mut hasher = sha2::Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            let n = file.read(&mut buf).map_err(|source| LayoutError::Read {
                path: self.blob_path(digest).unwrap_or_default(),
                source,
            })?;
            if n == 0 {
                break;
            }
            total += n as u64;
            if total > len {
                // Grew while being read: not the blob that was named.
                return Err(size_err(total));
            }
            hasher.update(&buf[..n]);
            sink(&buf[..n]);
        }
        let actual = super::digest::format_digest(&hasher.finalize());
        if actual != digest {
            return Err(LayoutError::Corrupt {
                layout: self.root.clone(),
                expected: digest.to_owned(),
                actual,
            });
        }
        Ok(())
    }

    /// A blob's bytes, checked against its digest.
    pub fn read_blob(&self, digest: &str) -> Result<Vec<u8>, LayoutError> {
        let mut bytes = Vec::new();
        self.stream_blob(digest, None, |chunk| bytes.extend_from_slice(chunk))?;
        Ok(bytes)
    }

    /// A blob's bytes, checked against its descriptor (size and digest).
    pub fn read_described(&self, blob: &Descriptor) -> Result<Vec<u8>, LayoutError> {
        let mut bytes = Vec::new();
        self.stream_blob(&blob.digest, Some(blob.size), |chunk| {
            bytes.extend_from_slice(chunk)
        })?;
        Ok(bytes)
    }

    /// Checks a blob against its descriptor (size and digest) without keeping its bytes.
    pub fn check_blob(&self, blob: &Descriptor) -> Result<(), LayoutError> {
        self.stream_blob(&blob.digest, Some(blob.size), |_| {})
    }

    /// Checks everything the image `root` reaches — the manifests and indexes, every config
    /// and layer — against its descriptor: each a regular file of the layout, of the size
    /// named, hashing to its digest.
    pub fn verify(&self, root: &Descriptor) -> Result<(), LayoutError> {
        let mut seen = std::collections::BTreeSet::new();
        let mut pending = vec![root.clone()];
        while let Some(d) = pending.pop() {
            if !seen.insert(d.digest.clone()) {
                continue;
            }
            if media_type::is_index(&d.media_type) {
                let bytes = self.read_described(&d)?;
                let index: ImageIndex = self.parse(&d.digest, &bytes, "image index")?;
                pending.extend(index.manifests);
            } else if media_type::is_manifest(&d.media_type) {
                let bytes = self.read_described(&d)?;
                let manifest: ImageManifest = self.parse(&d.digest, &bytes, "image manifest")?;
                pending.push(manifest.config);
                pending.extend(manifest.layers);
            } else {
                self.check_blob(&d)?;
            }
        }
        Ok(())
    }

    fn parse<T: serde::de::DeserializeOwned>(
        &self,
        digest: &str,
        bytes: &[u8],
        what: &'static str,
    ) -> Result<T, LayoutError> {
        serde_json::from_slice(bytes).map_err(|source| LayoutError::Json {
            path: self.blob_path(digest).unwrap_or_default(),
            what,
            source,
        })
    }

    /// A JSON blob, checked and parsed.
    pub fn read_json<T: serde::de::DeserializeOwned>(
        &self,
        digest: &str,
        what: &'static str,
    ) -> Result<T, LayoutError> {
        let bytes = self.read_blob(digest)?;
        self.parse(digest, &bytes, what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_to_replace_a_directory_that_is_not_a_layout() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out");
        fs::create_dir(&dest).unwrap();
        fs::write(dest.join("precious.txt"), "keep me").unwrap();
        let err = LayoutWriter::create(&dest).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: is a directory olmpack did not write (it holds precious.txt, and no .olmpack-generated); olmpack replaces only image layouts it wrote (they carry .olmpack-generated), so nothing was written (pick another directory, or remove it yourself)",
                dest.display()
            )
        );
        assert!(dest.join("precious.txt").is_file());
    }

    #[test]
    fn replaces_an_older_layout_and_leaves_no_temp_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out");
        for content in [&b"one"[..], b"two"] {
            let writer = LayoutWriter::create(&dest).unwrap();
            let blob = writer.put_blob(media_type::CONFIG, content).unwrap();
            writer.finish(&blob, Some("v1")).unwrap();
        }
        let layout = Layout::open(&dest).unwrap();
        let found = layout.find(Some("v1")).unwrap();
        assert_eq!(layout.read_blob(&found.digest).unwrap(), b"two");
        assert_eq!(layout.find(None).unwrap(), found);
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["out"]);
        let err = layout.find(Some("v2")).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{} has no image tagged \"v2\" (tags: v1)", dest.display())
        );
    }

    #[test]
    fn dropping_an_unfinished_writer_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out");
        let writer = LayoutWriter::create(&dest).unwrap();
        writer.put_blob(media_type::CONFIG, b"x").unwrap();
        drop(writer);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn corrupt_blobs_are_detected() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out");
        let writer = LayoutWriter::create(&dest).unwrap();
        let blob = writer.put_blob(media_type::CONFIG, b"good").unwrap();
        writer.finish(&blob, None).unwrap();
        let layout = Layout::open(&dest).unwrap();
        fs::write(layout.blob_path(&blob.digest).unwrap(), b"evil").unwrap();
        let err = layout.read_blob(&blob.digest).unwrap_err();
        assert!(matches!(err, LayoutError::Corrupt { .. }), "{err}");
    }
}
