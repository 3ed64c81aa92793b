//! Deterministic `tar+gzip` layers from directories.
//!
//! Contract: the layer bytes depend only on the relative paths and contents of the files and
//! on [`LayerOptions`] (and the modes of entries a caller sets). Entries are sorted by path (so
//! parents precede children), directories are listed explicitly (mode 0755) including the
//! parents of the destination, files listed from disk have mode 0644, every entry has uid/gid 0, empty user/group names, the given mtime and no extended
//! attributes. Paths longer than the tar header allows use the GNU long-name extension.
//! Symbolic links and special files are refused rather than silently changed.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use flate2::{Compression, GzBuilder};

use super::digest::HashingWriter;

/// The gzip level every layer is compressed with (zlib's default).
pub const GZIP_LEVEL: u32 = 6;
/// The gzip header's OS byte: "unknown", so the build machine does not show.
const GZIP_OS_UNKNOWN: u8 = 255;

/// Failure to build a layer.
#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    /// Reading a file or directory to put into the layer failed.
    #[error("failed to read {path}")]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error from the file system.
        #[source]
        source: io::Error,
    },
    /// The source holds a symlink, FIFO, socket or device, which olmpack does not pack.
    #[error("{path} is a {kind}; image layers hold only regular files and directories")]
    Unsupported {
        /// The offending file.
        path: PathBuf,
        /// What it is, in words: `symbolic link`, `FIFO (named pipe)`, `socket`, `device`.
        kind: &'static str,
    },
    /// A file name is not valid UTF-8, which tar paths in image layers must be.
    #[error("{path}: file names in image layers must be UTF-8")]
    NonUtf8 {
        /// The offending file.
        path: PathBuf,
    },
    /// A file's size changed between listing and packing, so the layer would not match what was planned.
    #[error("{path} changed while the layer was written")]
    Changed {
        /// The file that changed.
        path: PathBuf,
    },
    /// Writing the compressed layer file failed.
    #[error("failed to write the layer")]
    Write(#[source] io::Error),
}

/// A directory copied into the image, like a Dockerfile `COPY dir/ /dest/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerSource {
    /// The directory on disk whose contents are copied.
    pub dir: PathBuf,
    /// Where its contents land in the image: a relative `/`-separated path such as
    /// `manifests` or `tests/scorecard`.
    pub dest: String,
}

/// Settings that go into every entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayerOptions {
    /// Modification time of every entry, seconds since the Unix epoch.
    pub mtime: u64,
}

/// One entry of a layer, before it is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A directory entry (mode 0755).
    Dir,
    /// A regular file copied from disk ([`collect`] lists it with mode 0644).
    File {
        /// Where the file is on disk.
        source: PathBuf,
        /// Its size in bytes when it was listed; a different size when packing fails.
        len: u64,
        /// The file's Unix permission bits in the layer.
        mode: u32,
    },
    /// A file whose bytes and mode are given (generated files, executables).
    Content {
        /// The file's content.
        data: Vec<u8>,
        /// The file's Unix permission bits, e.g. `0o755`.
        mode: u32,
    },
}

/// The entries of a layer keyed by tar path (`dir/` for directories, `dir/file` for files).
pub type Entries = BTreeMap<String, Entry>;

/// A written layer: its compressed digest and size and its uncompressed digest (`diff_id`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenLayer {
    /// Digest of the gzip-compressed layer blob, `sha256:<hex>`.
    pub digest: String,
    /// Size of the compressed blob in bytes.
    pub size: u64,
    /// Digest of the uncompressed tar, as listed in the image config's `rootfs.diff_ids`.
    pub diff_id: String,
}

/// Lists what `sources` put into a layer, sorted by path.
pub fn collect(sources: &[LayerSource]) -> Result<Entries, LayerError> {
    let mut entries = Entries::new();
    for source in sources {
        let dest = source.dest.trim_matches('/');
        let mut parent = String::new();
        for part in dest.split('/').filter(|p| !p.is_empty()) {
            parent.push_str(part);
            parent.push('/');
            entries.insert(parent.clone(), Entry::Dir);
        }
        walk(&source.dir, &parent, &mut entries)?;
    }
    Ok(entries)
}

fn walk(dir: &Path, prefix: &str, entries: &mut Entries) -> Result<(), LayerError> {
    let read_err = |source| LayerError::Read {
        path: dir.to_owned(),
        source,
    };
    for item in fs::read_dir(dir).map_err(read_err)? {
        let item = item.map_err(read_err)?;
        let path = item.path();
        let name = item
            .file_name()
            .into_string()
            .map_err(|_| LayerError::NonUtf8 { path: path.clone() })?;
        // symlink_metadata: a link is refused, not followed.
        let meta = fs::symlink_metadata(&path).map_err(|source| LayerError::Read {
            path: path.clone(),
            source,
        })?;
        if meta.is_dir() {
            let child = format!("{prefix}{name}/");
            entries.insert(child.clone(), Entry::Dir);
            walk(&path, &child, entries)?;
        } else if meta.is_file() {
            entries.insert(
                format!("{prefix}{name}"),
                Entry::File {
                    source: path,
                    len: meta.len(),
                    mode: 0o644,
                },
            );
        } else {
            let kind = special_kind(&meta);
            return Err(LayerError::Unsupported { path, kind });
        }
    }
    Ok(())
}

/// What a file that is neither a regular file nor a directory is, in words.
fn special_kind(meta: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    let t = meta.file_type();
    match () {
        _ if t.is_symlink() => "symbolic link",
        _ if t.is_fifo() => "FIFO (named pipe)",
        _ if t.is_socket() => "socket",
        _ if t.is_block_device() || t.is_char_device() => "device",
        _ => "special file",
    }
}

impl LayerError {
    /// Whether the input is refused (a file a layer cannot hold: exit 1) rather than the
    /// environment failing (a read or write error: exit 2).
    pub fn is_refusal(&self) -> bool {
        matches!(self, Self::Unsupported { .. } | Self::NonUtf8 { .. })
    }
}

impl crate::RefusesInput for LayerError {
    fn refuses_input(&self) -> bool {
        self.is_refusal()
    }
}

/// Writes `entries` as a gzip-compressed tar to `out` and returns its digests.
pub fn write<W: Write>(
    entries: &Entries,
    options: LayerOptions,
    out: W,
) -> Result<WrittenLayer, LayerError> {
    let compressed = HashingWriter::new(out);
    let gzip = GzBuilder::new()
        .mtime(0)
        .operating_system(GZIP_OS_UNKNOWN)
        .write(compressed, Compression::new(GZIP_LEVEL));
    let uncompressed = HashingWriter::new(io::BufWriter::with_capacity(256 * 1024, gzip));
    let mut tar = tar::Builder::new(uncompressed);
    for (path, entry) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(options.mtime);
        match entry {
            Entry::Dir => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                tar.append_data(&mut header, path, io::empty())
                    .map_err(LayerError::Write)?;
            }
            Entry::File { source, len, mode } => {
                let data = fs::read(source).map_err(|e| LayerError::Read {
                    path: source.clone(),
                    source: e,
                })?;
                if data.len() as u64 != *len {
                    return Err(LayerError::Changed {
                        path: source.clone(),
                    });
                }
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(*mode);
                header.set_size(*len);
                tar.append_data(&mut header, path, data.as_slice())
                    .map_err(LayerError::Write)?;
            }
            Entry::Content { data, mode } => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(*mode);
                header.set_size(data.len() as u64);
                tar.append_data(&mut header, path, data.as_slice())
                    .map_err(LayerError::Write)?;
            }
        }
    }
    let uncompressed = tar.into_inner().map_err(LayerError::Write)?;
    let (buffered, diff_id, _) = uncompressed.finish();
    let gzip = buffered
        .into_inner()
        .map_err(|e| LayerError::Write(e.into_error()))?;
    let compressed = gzip.finish().map_err(LayerError::Write)?;
    let (mut out, digest, size) = compressed.finish();
    out.flush().map_err(LayerError::Write)?;
    Ok(WrittenLayer {
        digest,
        size,
        diff_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn tree(root: &Path, files: &[(&str, &str)]) {
        for (path, contents) in files {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, contents).unwrap();
        }
    }

    fn listing(layer: &[u8]) -> Vec<String> {
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(layer));
        archive
            .entries()
            .unwrap()
            .map(|entry| {
                let mut entry = entry.unwrap();
                let header = entry.header().clone();
                let mut body = String::new();
                entry.read_to_string(&mut body).unwrap();
                format!(
                    "{} {:o} {}:{} '{}':'{}' {} {}",
                    entry.path().unwrap().display(),
                    header.mode().unwrap(),
                    header.uid().unwrap(),
                    header.gid().unwrap(),
                    header.username().unwrap().unwrap_or("?"),
                    header.groupname().unwrap().unwrap_or("?"),
                    header.mtime().unwrap(),
                    body
                )
            })
            .collect()
    }

    #[test]
    fn entries_are_sorted_owned_by_root_with_fixed_modes_and_mtime() {
        let dir = tempfile::tempdir().unwrap();
        tree(
            dir.path(),
            &[("b.yaml", "b"), ("a/z.yaml", "z"), ("a-b", "ab")],
        );
        let entries = collect(&[LayerSource {
            dir: dir.path().to_owned(),
            dest: "/tests/scorecard/".into(),
        }])
        .unwrap();
        let mut out = Vec::new();
        let written = write(&entries, LayerOptions { mtime: 42 }, &mut out).unwrap();
        assert_eq!(written.digest, super::super::digest::sha256_digest(&out));
        assert_eq!(written.size, out.len() as u64);
        assert_eq!(
            listing(&out),
            [
                "tests/ 755 0:0 '':'' 42 ",
                "tests/scorecard/ 755 0:0 '':'' 42 ",
                "tests/scorecard/a-b 644 0:0 '':'' 42 ab",
                "tests/scorecard/a/ 755 0:0 '':'' 42 ",
                "tests/scorecard/a/z.yaml 644 0:0 '':'' 42 z",
                "tests/scorecard/b.yaml 644 0:0 '':'' 42 b",
            ]
        );
        // Fixed gzip header: no mtime, no name, OS unknown.
        assert_eq!(&out[..4], &[0x1f, 0x8b, 8, 0]);
        assert_eq!(&out[4..8], &[0, 0, 0, 0]);
        assert_eq!(out[9], 255);
    }

    #[test]
    fn long_paths_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!("{}/{}.yaml", "d".repeat(90), "f".repeat(120));
        tree(dir.path(), &[(&long, "x")]);
        let entries = collect(&[LayerSource {
            dir: dir.path().to_owned(),
            dest: "configs".into(),
        }])
        .unwrap();
        let mut out = Vec::new();
        write(&entries, LayerOptions::default(), &mut out).unwrap();
        let names: Vec<String> = listing(&out)
            .into_iter()
            .map(|l| l.split(' ').next().unwrap().to_owned())
            .collect();
        assert_eq!(names.last().unwrap(), &format!("configs/{long}"));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_refused_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link")).unwrap();
        let err = collect(&[LayerSource {
            dir: dir.path().to_owned(),
            dest: "configs".into(),
        }])
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{} is a symbolic link; image layers hold only regular files and directories",
                dir.path().join("link").display()
            )
        );
    }
}
