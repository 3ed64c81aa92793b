//! Reading input files, the one way olmpack does it: every plan, manifest, bundle, catalog,
//! template, sample and icon goes through here.
//!
//! Contract:
//! - Only regular files are read. A FIFO, device or socket is refused from its metadata,
//!   before it is opened (for a tree's files, the metadata the walk saw); the open itself is
//!   non-blocking and the opened file is checked again, so a file swapped for a FIFO in
//!   between cannot block either.
//! - Every read is bounded: a file larger than [`Limits::max_file_bytes`] is refused from its
//!   size and never read past the limit (files whose size the kernel does not report, as in
//!   `/proc`, included); a tree is refused once its files add up to more than
//!   [`Limits::max_tree_bytes`] or [`Limits::max_tree_files`].
//! - Trees ([`read_tree`]) follow a symlink only when its target lies inside the tree's root,
//!   and enter every directory at most once, so symlink cycles (`a -> .`) end the walk instead
//!   of repeating it. Refused entries are returned as [`Refusal`]s, so a loader can report every
//!   one of them and still read the rest.
//! - Paths taken from a release plan stay inside the plan's directory ([`inside`]) unless the
//!   policy allows outside paths (`--allow-outside-paths`).
//! - Text ([`text`]) must be UTF-8; a leading byte-order mark is dropped.
//! - Errors say what is wrong in our words: never a library's, never "(os error N)".
//!
//! The limits travel as a value: the command line builds one [`Policy`] from its flags and
//! hands its [`Limits`] (and whether plan paths may leave the plan's directory) to every
//! reader; there is no process-wide setting. Library callers pass `&Limits::default()`.
#![warn(missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Read as _};
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Component, Path, PathBuf};

/// How much olmpack reads at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest single input file, in bytes.
    pub max_file_bytes: u64,
    /// Largest total size of one input tree (a bundle, a catalog, a manifests directory).
    pub max_tree_bytes: u64,
    /// Most files in one input tree.
    pub max_tree_files: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: 256 * MIB,
            max_tree_bytes: 4 * 1024 * MIB,
            max_tree_files: 200_000,
        }
    }
}

const MIB: u64 = 1024 * 1024;

/// How olmpack reads its input: the command line's flags, as one value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Size and count limits for what is read.
    pub limits: Limits,
    /// Let paths in a release plan point outside the plan's directory.
    pub allow_outside_paths: bool,
}

/// Why an input could not be read. [`InputError::is_refusal`] tells input olmpack refuses
/// (invalid input, exit 1) from input it could not get at (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file system refused or failed the read (missing file, no permission, ...): olmpack could not get at the input.
    #[error("{path}: {problem}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What went wrong, in our words.
        problem: String,
        /// The kind of I/O failure, for deciding how to report it.
        kind: io::ErrorKind,
    },
    /// The path is a directory, device, socket or pipe where a file was expected.
    #[error("{path}: is {what}, not a regular file; olmpack reads only regular files")]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is instead, e.g. "a directory".
        what: &'static str,
    },
    /// A file is larger than the per-file limit (`--max-file-size`).
    #[error(
        "{path}: is {size} bytes, more than the limit of {limit} bytes; raise it with --max-file-size if the file is meant to be this large"
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// A key, certificate or credentials file is larger than [`SECRET_FILE_MAX_BYTES`].
    #[error(
        "{path}: is {size} bytes, more than the {limit} bytes a key or credentials file may have"
    )]
    SecretTooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes (as far as it was read).
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// A stream (standard input) goes on past the per-file limit (`--max-file-size`); it is
    /// not read further.
    #[error(
        "{path}: is more than the limit of {limit} bytes; raise it with --max-file-size if the input is meant to be this large"
    )]
    StreamTooLarge {
        /// What the stream is, e.g. `the template on standard input`.
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },
    /// The files of a directory tree together exceed the total size limit (`--max-input-size`).
    #[error(
        "{root}: the files add up to more than {limit} bytes; raise the limit with --max-input-size if that is expected"
    )]
    TreeTooLarge {
        /// The directory being read.
        root: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },
    /// A directory tree holds more files than the limit (`--max-input-files`).
    #[error(
        "{root}: holds more than {limit} files; raise the limit with --max-input-files if that is expected"
    )]
    TooManyFiles {
        /// The directory being read.
        root: PathBuf,
        /// The maximum number of files.
        limit: usize,
    },
    /// A symlink inside a directory being read points out of it.
    #[error(
        "{path}: is a symlink to {target}, outside the directory being read; olmpack follows symlinks only inside it"
    )]
    SymlinkOutside {
        /// The symlink.
        path: PathBuf,
        /// Where it points.
        target: PathBuf,
    },
    /// A symlink chain never ends at a file.
    #[error("{path}: is a symlink that never reaches a file (a symlink loop)")]
    SymlinkLoop {
        /// The symlink.
        path: PathBuf,
    },
    /// A directory is reached a second time (through a symlink), so it is skipped.
    #[error(
        "{path}: leads to the directory {target}, which is already being read (a symlink cycle or a second link to it); it is not read twice"
    )]
    Revisited {
        /// The path that leads there again.
        path: PathBuf,
        /// The directory already being read.
        target: PathBuf,
    },
    /// A path in a release plan leads outside the plan's directory and `--allow-outside-paths` was not given.
    #[error(
        "{path}: is outside {base}; paths in a release plan must stay inside the plan's directory (or pass --allow-outside-paths)"
    )]
    Outside {
        /// The path as resolved.
        path: PathBuf,
        /// The plan's directory.
        base: PathBuf,
    },
    /// A file that must be text is not valid UTF-8.
    #[error("{path}: is not UTF-8 text")]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
}

impl crate::RefusesInput for InputError {
    fn refuses_input(&self) -> bool {
        self.is_refusal()
    }
}

impl InputError {
    /// True when olmpack refuses the input (exit 1, a finding), false when it could not read
    /// it (exit 2: a missing file, no permission, an I/O failure).
    pub fn is_refusal(&self) -> bool {
        !matches!(self, InputError::Io { .. })
    }

    /// The file or directory the error is about.
    pub fn path(&self) -> &Path {
        match self {
            InputError::Io { path, .. }
            | InputError::NotRegular { path, .. }
            | InputError::TooLarge { path, .. }
            | InputError::SecretTooLarge { path, .. }
            | InputError::StreamTooLarge { path, .. }
            | InputError::SymlinkOutside { path, .. }
            | InputError::SymlinkLoop { path }
            | InputError::Revisited { path, .. }
            | InputError::Outside { path, .. }
            | InputError::NotUtf8 { path } => path,
            InputError::TreeTooLarge { root, .. } | InputError::TooManyFiles { root, .. } => root,
        }
    }

    fn io(path: &Path, err: &io::Error) -> Self {
        if err.raw_os_error() == Some(libc::ELOOP) {
            return InputError::SymlinkLoop {
                path: path.to_path_buf(),
            };
        }
        InputError::Io {
            path: path.to_path_buf(),
            problem: describe_io(err),
            kind: err.kind(),
        }
    }
}

/// An I/O error in our words: what happened, never "(os error N)".
pub fn describe_io(err: &io::Error) -> String {
    use io::ErrorKind as K;
    let text = match err.kind() {
        K::NotFound => "does not exist",
        K::PermissionDenied => "permission denied",
        K::NotADirectory => "a part of the path is not a directory",
        K::IsADirectory => "is a directory",
        K::AlreadyExists => "already exists",
        K::DirectoryNotEmpty => "the directory is not empty",
        K::StorageFull => "no space left on the device",
        K::ReadOnlyFilesystem => "the file system is read-only",
        K::CrossesDevices => "cannot be moved to another file system",
        K::WouldBlock => "would block (not a regular file)",
        K::UnexpectedEof => "ended early",
        K::InvalidFilename => "the file name is invalid or too long",
        K::TimedOut => "timed out",
        K::Interrupted => "was interrupted",
        K::OutOfMemory => "out of memory",
        _ => match err.raw_os_error() {
            Some(libc::ELOOP) => "a symlink loop",
            Some(libc::EIO) => "input/output error of the device",
            Some(libc::ENAMETOOLONG) => "the file name is too long",
            _ => return plain_io_words(err),
        },
    };
    text.to_owned()
}

/// The error's own words without the "(os error N)" suffix.
fn plain_io_words(err: &io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_lowercase(),
        None => text,
    }
}

fn kind_of(file_type: &fs::FileType) -> Option<&'static str> {
    if file_type.is_file() {
        None
    } else if file_type.is_dir() {
        Some("a directory")
    } else if file_type.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if file_type.is_socket() {
        Some("a socket")
    } else if file_type.is_block_device() || file_type.is_char_device() {
        Some("a device")
    } else {
        Some("not a regular file")
    }
}

/// Reads one regular file, bounded by the per-file limit (see the module contract).
pub fn read(path: &Path, limits: &Limits) -> Result<Vec<u8>, InputError> {
    read_limited(path, limits.max_file_bytes)
}

/// [`read`] for callers whose errors carry an [`io::Error`]: the message in our words, without
/// the path (the caller names it), and the kind of a failed system call kept.
pub fn read_io(path: &Path, limits: &Limits) -> io::Result<Vec<u8>> {
    read(path, limits).map_err(|err| without_path(path, err))
}

/// `err` as an [`io::Error`] in our words without the path, keeping a system call's kind.
fn without_path(path: &Path, err: InputError) -> io::Error {
    let kind = match &err {
        InputError::Io { kind, .. } => *kind,
        _ => io::ErrorKind::InvalidInput,
    };
    let full = err.to_string();
    let prefix = format!("{}: ", path.display());
    io::Error::new(kind, full.strip_prefix(&prefix).unwrap_or(&full).to_owned())
}

/// Largest key, certificate or credentials file olmpack reads (`--sign-key`, registry auth
/// files, kubeconfig client certificates): real ones are a few KiB.
pub const SECRET_FILE_MAX_BYTES: u64 = MIB;

/// Reads a key, certificate or credentials file: a regular file (a FIFO or device is refused
/// before it is opened) of at most [`SECRET_FILE_MAX_BYTES`], whatever the input limits.
pub fn read_secret(path: &Path) -> Result<Vec<u8>, InputError> {
    read_limited(path, SECRET_FILE_MAX_BYTES).map_err(|err| match err {
        InputError::TooLarge { path, size, limit } => {
            InputError::SecretTooLarge { path, size, limit }
        }
        other => other,
    })
}

/// [`read_secret`] for callers whose errors carry an [`io::Error`], worded as [`read_io`]'s.
pub fn read_secret_io(path: &Path) -> io::Result<Vec<u8>> {
    read_secret(path).map_err(|err| without_path(path, err))
}

/// [`read`], decoded as UTF-8 text without a leading byte-order mark.
pub fn text(path: &Path, limits: &Limits) -> Result<String, InputError> {
    let bytes = read(path, limits)?;
    decode(path, bytes)
}

/// UTF-8 bytes to text, dropping a leading byte-order mark.
pub fn decode(path: &Path, bytes: Vec<u8>) -> Result<String, InputError> {
    let text = decode_keeping_bom(path, bytes)?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    })
}

/// [`text`] with a leading byte-order mark kept, for a reader that must see the mark (one
/// that reads JSON behind the mark as YAML, as the Go tools olmpack matches do).
pub fn text_keeping_bom(path: &Path, limits: &Limits) -> Result<String, InputError> {
    decode_keeping_bom(path, read(path, limits)?)
}

/// UTF-8 bytes to text, a leading byte-order mark kept.
fn decode_keeping_bom(path: &Path, bytes: Vec<u8>) -> Result<String, InputError> {
    String::from_utf8(bytes).map_err(|_| InputError::NotUtf8 {
        path: path.to_path_buf(),
    })
}

/// Bytes without a leading UTF-8 byte-order mark.
pub fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

/// Opens a regular file for reading (see the module contract: checked before and after a
/// non-blocking open), whatever its size; returns it with its size. The caller bounds what
/// it reads.
pub fn open_regular(path: &Path) -> Result<(fs::File, u64), InputError> {
    open_limited(path, u64::MAX)
}

fn open_limited(path: &Path, limit: u64) -> Result<(fs::File, u64), InputError> {
    let meta = fs::metadata(path).map_err(|e| InputError::io(path, &e))?;
    check_regular(path, &meta, limit)?;
    open_seen(path, limit)
}

/// Opens a file whose metadata was just seen to be a regular file's (by [`open_limited`], or
/// by the walk that listed it), non-blocking, and checks what was opened.
fn open_seen(path: &Path, limit: u64) -> Result<(fs::File, u64), InputError> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| InputError::io(path, &e))?;
    // The file may have been swapped between the two looks: check what was opened.
    let opened = file.metadata().map_err(|e| InputError::io(path, &e))?;
    check_regular(path, &opened, limit)?;
    Ok((file, opened.len()))
}

/// Reads standard input as text for `what` (e.g. `the template`), bounded like a file by the
/// policy's per-file limit: more than that is refused, never buffered whole. A leading
/// byte-order mark is kept, as by [`text_keeping_bom`].
pub fn stdin_text(what: &str, limits: &Limits) -> Result<String, InputError> {
    let limit = limits.max_file_bytes;
    let path = PathBuf::from(format!("{what} on standard input"));
    let mut bytes = Vec::new();
    io::stdin()
        .lock()
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| InputError::io(&path, &e))?;
    if bytes.len() as u64 > limit {
        return Err(InputError::StreamTooLarge { path, limit });
    }
    decode_keeping_bom(&path, bytes)
}

/// A regular file opened for reading in pieces, bounded like [`read`]: reading refuses a
/// file that grows past the policy's per-file limit while it is read.
#[derive(Debug)]
pub struct Bounded {
    path: PathBuf,
    /// The file, limited to one byte past the limit (reading that byte means "too large").
    reader: io::Take<fs::File>,
    limit: u64,
}

impl Bounded {
    /// Opens `path` as [`read`] would (regular files only, size within the limit).
    pub fn open(path: &Path, limits: &Limits) -> Result<Bounded, InputError> {
        let limit = limits.max_file_bytes;
        let (file, _) = open_limited(path, limit)?;
        Ok(Bounded {
            path: path.to_path_buf(),
            reader: file.take(limit.saturating_add(1)),
            limit,
        })
    }

    /// Appends up to `chunk` more bytes to `buf` (fewer only at the end of the file);
    /// returns how many (0 at the end).
    pub fn fill(&mut self, buf: &mut Vec<u8>, chunk: usize) -> Result<usize, InputError> {
        self.append(buf, chunk as u64)
    }

    /// Appends the rest of the file to `buf`.
    pub fn read_rest(&mut self, buf: &mut Vec<u8>) -> Result<usize, InputError> {
        self.append(buf, u64::MAX)
    }

    fn append(&mut self, buf: &mut Vec<u8>, most: u64) -> Result<usize, InputError> {
        let n = (&mut self.reader)
            .take(most)
            .read_to_end(buf)
            .map_err(|e| InputError::io(&self.path, &e))?;
        if self.reader.limit() == 0 {
            return Err(InputError::TooLarge {
                path: self.path.clone(),
                size: self.limit.saturating_add(1),
                limit: self.limit,
            });
        }
        Ok(n)
    }
}

fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let (file, len) = open_limited(path, limit)?;
    read_opened(path, file, len, limit)
}

/// Reads a file a tree walk listed: the walk's look was the first one, so it is opened as
/// [`open_seen`] does, whose check of the opened file refuses it when over the limit.
fn read_listed(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let (file, len) = open_seen(path, limit)?;
    read_opened(path, file, len, limit)
}

/// Reads an opened file `len` bytes long (as opened), never past one byte over `limit`.
fn read_opened(
    path: &Path,
    mut file: fs::File,
    len: u64,
    limit: u64,
) -> Result<Vec<u8>, InputError> {
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    (&mut file)
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| InputError::io(path, &e))?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

fn check_regular(path: &Path, meta: &fs::Metadata, limit: u64) -> Result<(), InputError> {
    if let Some(what) = kind_of(&meta.file_type()) {
        return Err(InputError::NotRegular {
            path: path.to_path_buf(),
            what,
        });
    }
    if meta.len() > limit {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            size: meta.len(),
            limit,
        });
    }
    Ok(())
}

/// Resolves `path` (from a plan whose directory is `base`) and checks it stays inside `base`,
/// also through symlinks, unless the policy allows outside paths.
pub fn inside(base: &Path, path: &Path, policy: &Policy) -> Result<PathBuf, InputError> {
    let joined = base.join(path);
    if policy.allow_outside_paths {
        return Ok(joined);
    }
    let outside = || InputError::Outside {
        path: joined.clone(),
        base: base.to_path_buf(),
    };
    let mut depth = 0usize;
    for component in path.components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir if depth > 0 => depth -= 1,
            _ => return Err(outside()),
        }
    }
    // Through symlinks: compare real paths, when the target exists (a missing one is
    // reported by whoever reads it).
    if let (Ok(real_base), Ok(real)) = (fs::canonicalize(base), fs::canonicalize(&joined))
        && !real.starts_with(&real_base)
    {
        return Err(outside());
    }
    Ok(joined)
}

/// Every regular file of a directory tree, read (see the module contract).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tree {
    /// Relative path → contents, in sorted path order.
    pub files: BTreeMap<PathBuf, Vec<u8>>,
    /// Entries that were not read, and why; relative paths.
    pub refused: Vec<Refusal>,
}

/// One tree entry olmpack did not read.
#[derive(Debug)]
pub struct Refusal {
    /// Relative to the tree's directory.
    pub file: PathBuf,
    /// Why it was not read.
    pub error: InputError,
}

impl Clone for Refusal {
    fn clone(&self) -> Self {
        Refusal {
            file: self.file.clone(),
            error: InputError::Io {
                path: self.error.path().to_path_buf(),
                problem: self.message(),
                kind: io::ErrorKind::Other,
            },
        }
    }
}

impl PartialEq for Refusal {
    fn eq(&self, other: &Self) -> bool {
        self.file == other.file && self.message() == other.message()
    }
}

impl Eq for Refusal {}

impl Refusal {
    /// What is wrong, without the path (the finding names the file).
    pub fn message(&self) -> String {
        let full = self.error.to_string();
        let prefix = format!("{}: ", self.error.path().display());
        full.strip_prefix(&prefix).unwrap_or(&full).to_owned()
    }
}

/// The regular files of a tree, found but not read yet.
#[derive(Debug, Default)]
pub struct Listing {
    /// The directory that was walked.
    pub dir: PathBuf,
    /// Regular files (relative path, size), in sorted path order.
    pub files: Vec<(PathBuf, u64)>,
    /// Entries that will not be read, and why.
    pub refused: Vec<Refusal>,
    /// The limits it was listed under, which reading it keeps.
    pub limits: Limits,
}

impl Listing {
    /// Reads the listed files accepted by `keep`, bounded by the policy's limits; a file that
    /// cannot be read becomes a refusal.
    pub fn read(self, keep: impl Fn(&Path) -> bool) -> Result<Tree, InputError> {
        let Listing {
            dir,
            files,
            refused,
            limits,
        } = self;
        let mut tree = Tree {
            files: BTreeMap::new(),
            refused,
        };
        let mut total = 0u64;
        for (rel, len) in files.into_iter().filter(|(rel, _)| keep(rel)) {
            // A file over the per-file limit is refused by itself below, unread.
            total = total.saturating_add(if len > limits.max_file_bytes { 0 } else { len });
            check_total(&dir, total, &limits)?;
            match read_listed(&dir.join(&rel), limits.max_file_bytes) {
                Ok(bytes) => {
                    // A file that grew since it was listed still counts at its real size.
                    total = total.saturating_add((bytes.len() as u64).saturating_sub(len));
                    check_total(&dir, total, &limits)?;
                    tree.files.insert(rel, bytes);
                }
                Err(error) => tree.refused.push(Refusal { file: rel, error }),
            }
        }
        Ok(tree)
    }

    /// Fails when the files accepted by `keep` add up to more than the tree limit.
    pub fn check_size(&self, keep: impl Fn(&Path) -> bool) -> Result<(), InputError> {
        let limits = self.limits;
        let total = self
            .files
            .iter()
            .filter(|(rel, len)| keep(rel) && *len <= limits.max_file_bytes)
            .fold(0u64, |sum, (_, len)| sum.saturating_add(*len));
        check_total(&self.dir, total, &limits)
    }
}

fn check_total(dir: &Path, total: u64, limits: &Limits) -> Result<(), InputError> {
    if total > limits.max_tree_bytes {
        return Err(InputError::TreeTooLarge {
            root: dir.to_path_buf(),
            limit: limits.max_tree_bytes,
        });
    }
    Ok(())
}

/// Reads every regular file under `dir`; symlinks may lead anywhere inside `dir`.
pub fn read_tree(dir: &Path, limits: &Limits) -> Result<Tree, InputError> {
    read_tree_within(dir, Some(dir), limits)
}

/// `path` as `/`-separated text (tar paths, ignore patterns, plan entries).
pub fn slash_path(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Reads every regular file under `dir`; symlinks may lead anywhere inside `root` (anywhere at
/// all with `None`). An unreadable `dir` or a tree over the limits is an error; other problems
/// are [`Tree::refused`].
pub fn read_tree_within(
    dir: &Path,
    root: Option<&Path>,
    limits: &Limits,
) -> Result<Tree, InputError> {
    list_tree(dir, root, limits)?.read(|_| true)
}

/// Lists the regular files under `dir` without reading them (see [`read_tree_within`]).
pub fn list_tree(dir: &Path, root: Option<&Path>, limits: &Limits) -> Result<Listing, InputError> {
    let meta = fs::metadata(dir).map_err(|e| InputError::io(dir, &e))?;
    if !meta.is_dir() {
        return Err(InputError::Io {
            path: dir.to_path_buf(),
            problem: "is not a directory".to_owned(),
            kind: io::ErrorKind::NotADirectory,
        });
    }
    let root = match root {
        Some(r) => Some(fs::canonicalize(r).map_err(|e| InputError::io(r, &e))?),
        None => None,
    };
    let mut walk = Walk {
        root,
        seen_dirs: BTreeSet::from([(meta.dev(), meta.ino())]),
        limit: limits.max_tree_files,
        listing: Listing {
            dir: dir.to_path_buf(),
            limits: *limits,
            ..Listing::default()
        },
    };
    walk.dir(dir, Path::new(""))?;
    Ok(walk.listing)
}

/// A walk enters every directory once and follows symlinks only inside `root`.
struct Walk {
    root: Option<PathBuf>,
    seen_dirs: BTreeSet<(u64, u64)>,
    limit: usize,
    listing: Listing,
}

impl Walk {
    fn refuse(&mut self, rel: &Path, error: InputError) {
        self.listing.refused.push(Refusal {
            file: rel.to_path_buf(),
            error,
        });
    }

    fn dir(&mut self, abs: &Path, rel: &Path) -> Result<(), InputError> {
        let entries = fs::read_dir(abs).map_err(|e| InputError::io(abs, &e))?;
        let mut names = Vec::new();
        for entry in entries {
            names.push(entry.map_err(|e| InputError::io(abs, &e))?.file_name());
            if names.len() + self.listing.files.len() > self.limit {
                return Err(InputError::TooManyFiles {
                    root: self.listing.dir.clone(),
                    limit: self.limit,
                });
            }
        }
        names.sort();
        for name in names {
            self.entry(&abs.join(&name), &rel.join(&name))?;
        }
        Ok(())
    }

    fn entry(&mut self, abs: &Path, rel: &Path) -> Result<(), InputError> {
        let link = match fs::symlink_metadata(abs) {
            Ok(link) => link,
            Err(e) => {
                self.refuse(rel, InputError::io(abs, &e));
                return Ok(());
            }
        };
        if !link.file_type().is_symlink() {
            // Not a link: its own metadata is the target's; no second look.
            return self.target(abs, rel, link);
        }
        if let Err(err) = self.check_link(abs) {
            self.refuse(rel, err);
            return Ok(());
        }
        match fs::metadata(abs) {
            Ok(meta) => self.target(abs, rel, meta),
            Err(e) => {
                self.refuse(rel, InputError::io(abs, &e));
                Ok(())
            }
        }
    }

    /// The entry at `abs` once its (followed) metadata `meta` is known.
    fn target(&mut self, abs: &Path, rel: &Path, meta: fs::Metadata) -> Result<(), InputError> {
        if meta.is_dir() {
            if !self.seen_dirs.insert((meta.dev(), meta.ino())) {
                let target = fs::canonicalize(abs).unwrap_or_else(|_| abs.to_path_buf());
                let path = abs.to_path_buf();
                self.refuse(rel, InputError::Revisited { path, target });
                return Ok(());
            }
            return self.dir(abs, rel);
        }
        if let Some(what) = kind_of(&meta.file_type()) {
            let path = abs.to_path_buf();
            self.refuse(rel, InputError::NotRegular { path, what });
            return Ok(());
        }
        if self.listing.files.len() >= self.limit {
            return Err(InputError::TooManyFiles {
                root: self.listing.dir.clone(),
                limit: self.limit,
            });
        }
        self.listing.files.push((rel.to_path_buf(), meta.len()));
        Ok(())
    }

    fn check_link(&self, abs: &Path) -> Result<(), InputError> {
        let target = fs::canonicalize(abs).map_err(|e| InputError::io(abs, &e))?;
        match &self.root {
            Some(root) if !target.starts_with(root) => Err(InputError::SymlinkOutside {
                path: abs.to_path_buf(),
                target,
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_are_in_our_words() {
        let err = io::Error::from_raw_os_error(libc::ENOTDIR);
        assert_eq!(describe_io(&err), "a part of the path is not a directory");
        let err = io::Error::from_raw_os_error(libc::EXDEV);
        assert!(!describe_io(&err).contains("os error"));
        let err = io::Error::from_raw_os_error(libc::ENOSPC);
        assert_eq!(describe_io(&err), "no space left on the device");
    }

    #[test]
    fn lexical_escapes_are_outside() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        assert!(inside(base, Path::new("a/../b"), &Policy::default()).is_ok());
        for path in ["../x", "a/../../x", "/etc/passwd"] {
            assert!(
                matches!(
                    inside(base, Path::new(path), &Policy::default()),
                    Err(InputError::Outside { .. })
                ),
                "{path}"
            );
        }
    }

    #[test]
    fn bom_is_dropped() {
        let text = decode(Path::new("x"), b"\xEF\xBB\xBFa: 1\n".to_vec()).unwrap();
        assert_eq!(text, "a: 1\n");
        assert_eq!(strip_bom(b"\xEF\xBB\xBF{}"), b"{}");
    }
}
