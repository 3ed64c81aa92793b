//! Reading File-Based Catalogs: directory trees, single files and streams (JSON or YAML).
//!
//! Contract:
//! - [`load_dir`] reads every regular file under the root that no `.indexignore` hides (like
//!   opm, whatever its extension), in sorted path order, parsing files on all cores; the result
//!   is the same whatever the thread count.
//! - A JSON stream is read one document at a time ([`super::split`]): a file's bytes are never
//!   held whole, only the document being parsed. A stream that is not clean (a document the
//!   parser refuses, a top-level scalar, a truncated end) is read again whole, so its problems
//!   are worded and placed exactly as the whole-file parser reports them.
//! - A file is a JSON stream when its first non-blank byte is `{`, else a YAML stream; empty
//!   documents are skipped.
//! - YAML is read as opm reads it (Go's YAML decoder): a key given twice in a mapping keeps
//!   its last value, and each such key is kept as a lenient read ([`LoadedCatalog::lenient`],
//!   a warning) — the file is neither skipped nor refused.
//! - Problems in the content (bad syntax, a blob without `schema`, a field of the wrong type)
//!   are kept as [`LoadProblem`]s so one run reports them all; only an unreadable root is an
//!   error.

use crate::refusal::Refusal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::declcfg::{DeclarativeConfig, DeclcfgError, Meta, Origin};
use super::ignore::IgnoreMatcher;
use super::split::{Scan, Splitter};
use olmpack_oci::input::slash_path;

/// Name of the files whose gitignore-style patterns hide paths of a catalog tree from loading
/// (opm's `.indexignore`); the files themselves are never loaded.
pub const INDEX_IGNORE: &str = ".indexignore";

/// The catalog root cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The catalog root given by the user is missing or is a file; nothing was loaded.
    #[error("catalog directory {path} does not exist or is not a directory")]
    NotADirectory {
        /// The catalog root as given.
        path: PathBuf,
    },
    /// The catalog tree could not be listed (unreadable directory, or the files exceed the
    /// input limits); nothing was loaded.
    #[error("failed to read catalog {path}")]
    Read {
        /// The catalog root as given.
        path: PathBuf,
        /// What the safe reader refused, and for which entry.
        #[source]
        source: olmpack_oci::input::InputError,
    },
}

/// A catalog olmpack refuses to read (exit 1), or one it cannot get at (exit 2).
impl Refusal for LoadError {
    fn refuses_input(&self) -> bool {
        match self {
            LoadError::NotADirectory { .. } => false,
            LoadError::Read { source, .. } => source.is_refusal(),
        }
    }
}

/// Something in a catalog file that could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadProblem {
    /// Relative to the catalog root.
    pub file: PathBuf,
    /// The document within the file, when the problem is in one document.
    pub index: Option<usize>,
    /// What is wrong, in our words (bad syntax, a blob without `schema`, a field of the wrong
    /// type, an unreadable file).
    pub message: String,
}

/// A loaded catalog and the problems met on the way.
#[derive(Clone, Debug, Default)]
pub struct LoadedCatalog {
    /// The blobs that loaded, in file order then document order.
    pub config: DeclarativeConfig,
    /// Everything that could not be loaded, in file order; the catalog is incomplete when
    /// this is not empty.
    pub problems: Vec<LoadProblem>,
    /// Files read (after `.indexignore`), relative to the root.
    pub files: Vec<PathBuf>,
    /// What was read the lenient way opm reads it (a YAML key given twice keeps its last
    /// value), in file order: warnings, not problems.
    pub lenient: Vec<LoadProblem>,
}

/// One file's blobs, problems and lenient reads.
type FileLoad = (DeclarativeConfig, Vec<LoadProblem>, Vec<LoadProblem>);

/// How much of each blob to keep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Keep only what validation needs: large property values that decode correctly are
    /// replaced by small ones of the same type (see [`super::property::slim`]). The catalog
    /// validates exactly as the full one but must not be serialised or written back.
    pub lean: bool,
    /// How much is read at most (the command line's `--max-*` flags).
    pub limits: olmpack_oci::input::Limits,
}

/// Loads a catalog directory (see the module contract).
pub fn load_dir(root: &Path) -> Result<LoadedCatalog, LoadError> {
    load_dir_with(root, LoadOptions::default())
}

/// [`load_dir`] with options.
pub fn load_dir_with(root: &Path, options: LoadOptions) -> Result<LoadedCatalog, LoadError> {
    if !root.is_dir() {
        return Err(LoadError::NotADirectory {
            path: root.to_path_buf(),
        });
    }
    let (files, refused) = list_files(root, &options.limits)?;
    let parsed = load_files(root, &files, options);
    let mut out = LoadedCatalog {
        files: files.clone(),
        problems: refused
            .iter()
            .map(|r| refused_problem(&r.file, &r.error))
            .collect(),
        ..LoadedCatalog::default()
    };
    for (config, problems, lenient) in parsed {
        out.config.merge(config);
        out.problems.extend(problems);
        out.lenient.extend(lenient);
    }
    Ok(out)
}

/// Loads `files` on up to 16 threads, each taking the next file not yet taken (so one large
/// package does not hold up a thread's share); the result is in `files`' order.
fn load_files(root: &Path, files: &[PathBuf], options: LoadOptions) -> Vec<FileLoad> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 16)
        .min(files.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, FileLoad)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(rel) = files.get(i) else { break };
                        mine.push((i, load_file(root, rel, options)));
                    }
                    mine
                })
            })
            .collect();
        // A worker that panicked is a bug: go down with it rather than lose its files.
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, load)| load).collect()
}

/// Loads one file: a JSON stream one document at a time ([`stream_json`]), anything else (or
/// a JSON stream the splitter is unsure of) read whole.
fn load_file(root: &Path, rel: &Path, options: LoadOptions) -> FileLoad {
    let path = root.join(rel);
    let refused = |err: &olmpack_oci::input::InputError| {
        (
            DeclarativeConfig::default(),
            vec![refused_problem(rel, err)],
            Vec::new(),
        )
    };
    let whole = match stream_json(&path, rel, options) {
        Ok(Read::Streamed(load)) => return load,
        Ok(Read::Whole(bytes)) => bytes,
        Ok(Read::Again) => match olmpack_oci::input::read(&path, &options.limits) {
            Ok(bytes) => bytes,
            Err(err) => return refused(&err),
        },
        Err(err) => return refused(&err),
    };
    parse_file_noting(rel, &whole, options)
}

/// How far [`stream_json`] got with a file.
enum Read {
    /// A clean JSON stream, loaded document by document.
    Streamed(FileLoad),
    /// Not JSON: the whole file, read once, for the whole-file parser.
    Whole(Vec<u8>),
    /// A JSON stream that is not clean: to be read again whole (its start was let go).
    Again,
}

/// Bytes read from a catalog file at a time when it is read document by document.
const CHUNK: usize = 1 << 20;

/// Reads a JSON stream document by document, holding one document (and a [`CHUNK`]) at a
/// time. A file that is not JSON comes back whole (read once); a stream that is not clean (a
/// document the parser refuses, a top-level scalar, a truncated end) is to be read again, so
/// problems are reported exactly as the whole-file parser words them.
fn stream_json(
    path: &Path,
    rel: &Path,
    options: LoadOptions,
) -> Result<Read, olmpack_oci::input::InputError> {
    let mut reader = olmpack_oci::input::Bounded::open(path, &options.limits)?;
    let mut buf = Vec::new();
    reader.fill(&mut buf, CHUNK)?;
    // A byte-order mark makes opm read the file as YAML ([`parse_bom_json`]): read it whole.
    let mut start = 0;
    if buf.starts_with(BOM) || !is_json(&buf) {
        reader.read_rest(&mut buf)?;
        return Ok(Read::Whole(buf));
    }
    let mut blobs = Blobs::new(rel, options);
    let (mut splitter, mut index, mut eof) = (Splitter::default(), 0, false);
    loop {
        match splitter.scan(&buf[start..]) {
            Scan::Complete(end) => {
                let Ok(doc) = serde_json::from_slice::<Value>(&buf[start..start + end]) else {
                    return Ok(Read::Again);
                };
                blobs.push(index, doc);
                (index, start, splitter) = (index + 1, start + end, Splitter::default());
            }
            Scan::Unsure => return Ok(Read::Again),
            Scan::NeedMore if eof => {
                let clean = buf[start..].iter().all(u8::is_ascii_whitespace);
                return Ok(if clean {
                    Read::Streamed(blobs.finish())
                } else {
                    Read::Again
                });
            }
            Scan::NeedMore => {
                buf.drain(..start);
                start = 0;
                eof = reader.fill(&mut buf, CHUNK)? == 0;
            }
        }
    }
}

/// Reads a catalog directory one file at a time, in [`load_dir`]'s order, handing each file's
/// blobs to `each` (which returns `false` to stop early) and returning the problems and the
/// lenient reads met, in `load_dir`'s order. Memory is bounded by the largest file's blobs,
/// not the catalog.
pub fn for_each_file(
    root: &Path,
    limits: &olmpack_oci::input::Limits,
    mut each: impl FnMut(DeclarativeConfig) -> bool,
) -> Result<(Vec<LoadProblem>, Vec<LoadProblem>), LoadError> {
    if !root.is_dir() {
        return Err(LoadError::NotADirectory {
            path: root.to_path_buf(),
        });
    }
    let (files, refused) = list_files(root, limits)?;
    let mut problems: Vec<LoadProblem> = refused
        .iter()
        .map(|r| refused_problem(&r.file, &r.error))
        .collect();
    let mut lenient = Vec::new();
    for rel in &files {
        let options = LoadOptions {
            limits: *limits,
            ..LoadOptions::default()
        };
        let (config, found, noted) = load_file(root, rel, options);
        problems.extend(found);
        lenient.extend(noted);
        if !each(config) {
            break;
        }
    }
    Ok((problems, lenient))
}

/// Parses one catalog file's bytes (JSON or YAML stream); `rel` names it in origins and problems.
pub fn parse_file(rel: &Path, bytes: &[u8]) -> (DeclarativeConfig, Vec<LoadProblem>) {
    parse_file_with(rel, bytes, LoadOptions::default())
}

/// [`parse_file`] with options.
pub fn parse_file_with(
    rel: &Path,
    bytes: &[u8],
    options: LoadOptions,
) -> (DeclarativeConfig, Vec<LoadProblem>) {
    let (config, problems, _) = parse_file_noting(rel, bytes, options);
    (config, problems)
}

/// One file's blobs as they are parsed, document by document.
struct Blobs {
    file: Arc<Path>,
    options: LoadOptions,
    config: DeclarativeConfig,
    problems: Vec<LoadProblem>,
    lenient: Vec<LoadProblem>,
}

impl Blobs {
    fn new(rel: &Path, options: LoadOptions) -> Self {
        Blobs {
            file: Arc::from(rel),
            options,
            config: DeclarativeConfig::default(),
            problems: Vec::new(),
            lenient: Vec::new(),
        }
    }

    fn problem(&self, index: Option<usize>, message: String) -> LoadProblem {
        LoadProblem {
            file: self.file.to_path_buf(),
            index,
            message,
        }
    }

    /// Adds document `index`, typed by its schema (slimmed when lean), or its problem.
    fn push(&mut self, index: usize, doc: Value) {
        let result = Meta::from_value(doc).and_then(|mut meta| {
            meta.origin = Some(Origin {
                file: self.file.clone(),
                index,
            });
            let is_bundle = meta.schema == super::declcfg::SCHEMA_BUNDLE;
            self.config.push_meta(meta)?;
            if self.options.lean
                && is_bundle
                && let Some(b) = self.config.bundles.last_mut()
            {
                for (i, p) in b.properties.iter_mut().enumerate() {
                    super::property::slim(i, p);
                }
            }
            Ok(())
        });
        if let Err(err) = result {
            let message = match err {
                DeclcfgError::MissingSchema => "object is missing root schema field".to_owned(),
                other => other.to_string(),
            };
            self.problems.push(self.problem(Some(index), message));
        }
    }

    fn finish(self) -> FileLoad {
        (self.config, self.problems, self.lenient)
    }
}

/// [`parse_file_with`], also returning the lenient reads (see the module contract).
pub fn parse_file_noting(rel: &Path, bytes: &[u8], options: LoadOptions) -> FileLoad {
    let mut blobs = Blobs::new(rel, options);
    match bytes.strip_prefix(BOM) {
        Some(rest) if is_json(rest) => parse_bom_json(&mut blobs, rest),
        _ => {
            let bytes = olmpack_oci::input::strip_bom(bytes);
            if is_json(bytes) {
                parse_json(&mut blobs, bytes);
            } else {
                parse_yaml(&mut blobs, bytes);
            }
        }
    }
    blobs.finish()
}

/// A JSON stream, one document at a time: a large file is never held as values all at once.
fn parse_json(blobs: &mut Blobs, bytes: &[u8]) {
    for (index, doc) in serde_json::Deserializer::from_slice(bytes)
        .into_iter::<Value>()
        .enumerate()
    {
        match doc {
            Ok(doc) => blobs.push(index, doc),
            Err(e) => {
                let p = blobs.problem(None, json_problem(bytes, &e));
                blobs.problems.push(p);
                break;
            }
        }
    }
}

/// A YAML stream, read as Go's YAML decoder reads it.
fn parse_yaml(blobs: &mut Blobs, bytes: &[u8]) {
    match parse_yaml_stream(bytes) {
        Ok((docs, notes)) => {
            for n in notes {
                let note = blobs.problem(
                    Some(n.document.saturating_sub(1)),
                    format!("line {}: {}", n.line, n.message),
                );
                blobs.lenient.push(note);
            }
            for (index, doc) in docs.into_iter().enumerate() {
                blobs.push(index, doc);
            }
        }
        Err(message) => {
            let p = blobs.problem(None, message);
            blobs.problems.push(p);
        }
    }
}

/// A UTF-8 byte-order mark: Kubernetes' decoder, which opm reads catalog files with, does not
/// see a `{` behind it and reads the file as YAML.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A JSON stream behind a byte-order mark, read as opm reads it (observed on opm): as YAML
/// documents cut at `---` lines, of which Go's YAML decoder keeps the first node and ignores
/// whatever follows it. A stream of objects thus loses all but its first, which is reported
/// as a lenient read naming how many objects opm ignores; what opm refuses (a `\/` escape,
/// which YAML lacks) is a problem naming opm.
fn parse_bom_json(blobs: &mut Blobs, bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        let p = blobs.problem(None, "not UTF-8 text".to_owned());
        blobs.problems.push(p);
        return;
    };
    let (mut index, mut objects) = (0, 0);
    for (doc, first_line) in yaml_documents(text) {
        if doc.trim().is_empty() {
            continue;
        }
        match first_node(doc, first_line) {
            Ok((Value::Null, ..)) => {}
            Ok((value, count, notes)) => {
                for n in notes {
                    let note =
                        blobs.problem(Some(index), format!("line {}: {}", n.line, n.message));
                    blobs.lenient.push(note);
                }
                blobs.push(index, value);
                (index, objects) = (index + 1, objects + count);
            }
            Err(message) => {
                let message = format!(
                    "the file begins with a UTF-8 byte-order mark, so opm reads it as YAML, and refuses it: {message}"
                );
                let p = blobs.problem(None, message);
                blobs.problems.push(p);
                return;
            }
        }
    }
    if objects > index {
        let message = format!(
            "the file begins with a UTF-8 byte-order mark, so opm reads it as YAML and keeps only the first object of each document: {} of its {objects} objects {} ignored, here as by opm (remove the mark to have them read)",
            objects - index,
            if objects - index == 1 { "is" } else { "are" }
        );
        let note = blobs.problem(None, message);
        blobs.lenient.push(note);
    }
}

/// The first object of a text that is JSON behind a byte-order mark, read as opm reads a
/// template (as [`parse_bom_json`] reads a catalog file: as YAML, the first node of the first
/// document), or opm's refusal in our words; `None` for any other text.
pub(crate) fn bom_json_first(text: &str) -> Option<Result<Value, String>> {
    let rest = text.strip_prefix('\u{feff}')?;
    if !is_json(rest.as_bytes()) {
        return None;
    }
    let (doc, first_line) = yaml_documents(rest)
        .into_iter()
        .find(|(doc, _)| !doc.trim().is_empty())?;
    Some(first_node(doc, first_line).map(|(value, ..)| value))
}

/// The documents of a YAML stream as Kubernetes' YAML reader cuts them, each with its first
/// line: at each line that starts with `---` followed by nothing but blanks or a comment.
fn yaml_documents(text: &str) -> Vec<(&str, u64)> {
    let mut docs = Vec::new();
    let (mut start, mut first_line, mut line) = (0, 1, 1);
    let mut at = 0;
    for piece in text.split_inclusive('\n') {
        line += 1;
        at += piece.len();
        let Some(rest) = piece.strip_prefix("---") else {
            continue;
        };
        let rest = rest.trim();
        if rest.is_empty() || rest.starts_with('#') {
            docs.push((&text[start..at - piece.len()], first_line));
            (start, first_line) = (at, line);
        }
    }
    docs.push((&text[start..], first_line));
    docs
}

/// The first node of a YAML document as Go's decoder reads it, how many JSON objects the
/// document holds (the first and those that follow it back to back), and what was read
/// leniently (lines counted in the file, the document starting at `first_line`). A JSON value
/// is cut at its end and read by the YAML reader (so YAML's own rules apply to it); a
/// document that does not start with one is read whole.
fn first_node(
    doc: &str,
    first_line: u64,
) -> Result<(Value, usize, Vec<olmpack_model::yaml::Leniency>), String> {
    let mut stream = serde_json::Deserializer::from_str(doc).into_iter::<Value>();
    let (text, count) = match stream.next() {
        Some(Ok(_)) => {
            let end = stream.byte_offset();
            (&doc[..end], 1 + stream.take_while(Result::is_ok).count())
        }
        _ => (doc, 1),
    };
    // Blank lines before the document, so that the reader's lines are the file's.
    let padded = format!(
        "{}{text}",
        "\n".repeat(first_line.saturating_sub(1) as usize)
    );
    if let Some((line, escape)) = refused_escape(&padded) {
        return Err(format!(
            "line {line}: {escape} is a JSON escape that Go's YAML decoder does not know"
        ));
    }
    let (value, notes) = olmpack_model::yaml::from_str_go(&padded).map_err(|e| e.to_string())?;
    Ok((value, count, notes))
}

/// The first escape in JSON text that Go's YAML decoder refuses (`\/`, and a `\u` escape of
/// half a UTF-16 surrogate pair; olmpack's YAML reader takes both), with its line.
pub(crate) fn refused_escape(text: &str) -> Option<(usize, &str)> {
    let bytes = text.as_bytes();
    let (mut in_string, mut i) = (false, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                let surrogate = |hex: &str| {
                    u16::from_str_radix(hex, 16).is_ok_and(|c| (0xD800..=0xDFFF).contains(&c))
                };
                let escape = match bytes.get(i + 1) {
                    Some(b'/') => text.get(i..i + 2),
                    Some(b'u') if text.get(i + 2..i + 6).is_some_and(surrogate) => {
                        text.get(i..i + 6)
                    }
                    _ => None,
                };
                if let Some(escape) = escape {
                    return Some((text[..i].matches('\n').count() + 1, escape));
                }
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The JSON parser's complaint in our words: a broken `\u` escape (half of a UTF-16
/// surrogate pair) is named as written.
fn json_problem(bytes: &[u8], e: &serde_json::Error) -> String {
    let message = e.to_string();
    let what = message.split(" at line ").next().unwrap_or(&message);
    if what == "invalid unicode code point" {
        let (line, column) = (e.line(), e.column());
        return format!(
            "invalid JSON: line {line} column {column}: a string holds bytes that are not UTF-8 text"
        );
    }
    if !(what.contains("surrogate") || what.contains("hex escape")) {
        return format!("invalid JSON: {e}");
    }
    let (line, column) = (e.line(), e.column());
    let text = bytes
        .split(|b| *b == b'\n')
        .nth(line.saturating_sub(1))
        .unwrap_or(b"");
    let before = &text[..column.min(text.len())];
    let escape = before
        .windows(2)
        .rposition(|w| w == b"\\u")
        .map(|i| String::from_utf8_lossy(&text[i..(i + 6).min(text.len())]).into_owned())
        .unwrap_or_else(|| "a \\u escape".to_owned());
    format!(
        "invalid JSON: line {line} column {column}: {escape} is half of a UTF-16 surrogate pair, without its other half (a \\u escape of U+D800 to U+DFFF must be followed by its partner)"
    )
}

/// Whether a stream is JSON (its first non-blank byte is `{`), as opm's decoder decides.
fn is_json(bytes: &[u8]) -> bool {
    bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// Parses a stream of documents: JSON values back to back, or `---`-separated YAML (read as
/// opm reads it: a key given twice keeps its last value).
pub fn parse_stream(bytes: &[u8]) -> Result<Vec<Value>, String> {
    let bytes = olmpack_oci::input::strip_bom(bytes);
    if is_json(bytes) {
        let mut docs = Vec::new();
        for doc in serde_json::Deserializer::from_slice(bytes).into_iter::<Value>() {
            docs.push(doc.map_err(|e| json_problem(bytes, &e))?);
        }
        Ok(docs)
    } else {
        Ok(parse_yaml_stream(bytes)?.0)
    }
}

/// A YAML stream as opm's decoder reads it, with what was read leniently.
fn parse_yaml_stream(
    bytes: &[u8],
) -> Result<(Vec<Value>, Vec<olmpack_model::yaml::Leniency>), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())?;
    olmpack_model::yaml::from_multi_str_go(text).map_err(|e| e.to_string())
}

/// Loads a single stream (a file's contents or stdin).
pub fn load_stream(name: &Path, bytes: &[u8]) -> LoadedCatalog {
    let (config, problems, lenient) = parse_file_noting(name, bytes, LoadOptions::default());
    LoadedCatalog {
        config,
        problems,
        files: vec![name.to_path_buf()],
        lenient,
    }
}

/// A file the safe reader refused, as a load problem.
fn refused_problem(rel: &Path, err: &olmpack_oci::input::InputError) -> LoadProblem {
    let full = err.to_string();
    let prefix = format!("{}: ", err.path().display());
    LoadProblem {
        file: rel.to_path_buf(),
        index: None,
        message: full.strip_prefix(&prefix).unwrap_or(&full).to_owned(),
    }
}

/// Every file under `root` that `.indexignore` files do not hide, sorted, relative; and the
/// entries the safe reader refuses (FIFOs, symlinks leading outside, symlink cycles), unless
/// hidden too. Fails when the files to read exceed the input limits.
fn list_files(
    root: &Path,
    limits: &olmpack_oci::input::Limits,
) -> Result<(Vec<PathBuf>, Vec<olmpack_oci::input::Refusal>), LoadError> {
    let read_err = |source| LoadError::Read {
        path: root.to_path_buf(),
        source,
    };
    let listing = olmpack_oci::input::list_tree(root, Some(root), limits).map_err(read_err)?;
    let mut matcher = IgnoreMatcher::new();
    // Shallower `.indexignore` files first, as opm applies them.
    let mut ignores: Vec<&PathBuf> = listing
        .files
        .iter()
        .map(|(rel, _)| rel)
        .filter(|rel| rel.file_name() == Some(INDEX_IGNORE.as_ref()))
        .collect();
    ignores.sort_by_key(|rel| (rel.components().count(), rel.to_path_buf()));
    for rel in ignores {
        let text = olmpack_oci::input::text(&root.join(rel), limits).map_err(read_err)?;
        let dir = rel.parent().unwrap_or(Path::new(""));
        matcher.add_file(&slash_path(dir), &text);
    }
    let keep = |rel: &Path| {
        rel.file_name() != Some(INDEX_IGNORE.as_ref()) && !matcher.is_ignored(&slash_path(rel))
    };
    listing.check_size(keep).map_err(read_err)?;
    let mut files: Vec<PathBuf> = listing
        .files
        .iter()
        .map(|(rel, _)| rel.clone())
        .filter(|rel| keep(rel))
        .collect();
    files.sort();
    let refused = listing
        .refused
        .into_iter()
        .filter(|r| !matcher.is_ignored(&slash_path(&r.file)))
        .collect();
    Ok((files, refused))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_yaml_streams() {
        let (cfg, problems) = parse_file(
            Path::new("a.json"),
            br#"{"schema":"olm.package","name":"p"} {"schema":"custom","x":1}"#,
        );
        assert!(problems.is_empty());
        assert_eq!(cfg.packages[0].name, "p");
        assert_eq!(cfg.others[0].schema, "custom");
        let (cfg, problems) = parse_file(
            Path::new("b.yaml"),
            b"---\nschema: olm.channel\nname: c\npackage: p\nentries: []\n---\nname: x\n",
        );
        assert_eq!(cfg.channels.len(), 1);
        assert_eq!(problems[0].message, "object is missing root schema field");
        assert_eq!(problems[0].index, Some(1));
    }

    /// A JSON stream behind a byte-order mark is read as opm reads it: as YAML, the first
    /// object of each `---` document kept, the rest ignored and reported; a `\/` escape,
    /// which YAML lacks, refused naming opm. YAML behind a mark reads as without it.
    #[test]
    fn a_json_stream_behind_a_bom_is_read_as_opm_reads_it() {
        let read = |text: &str| {
            parse_file_noting(Path::new("a.json"), text.as_bytes(), LoadOptions::default())
        };
        let (cfg, problems, lenient) = read(
            "\u{feff}{\"schema\":\"olm.package\",\"name\":\"p\"}\n{\"schema\":\"olm.package\",\"name\":\"q\"} {\"schema\":\"x\"}\n---\n\n{\"schema\":\"olm.package\",\"name\":\"r\",\"name\":\"s\"}\n[not json",
        );
        assert!(problems.is_empty(), "{problems:?}");
        let names: Vec<&str> = cfg.packages.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["p", "s"]);
        let notes: Vec<(Option<usize>, &str)> = lenient
            .iter()
            .map(|n| (n.index, n.message.as_str()))
            .collect();
        assert_eq!(
            notes,
            [
                (
                    Some(1),
                    "line 5: key \"name\" is given twice (lines 5 and 5); the last value is used, as Go's YAML decoder does"
                ),
                (
                    None,
                    "the file begins with a UTF-8 byte-order mark, so opm reads it as YAML and keeps only the first object of each document: 2 of its 4 objects are ignored, here as by opm (remove the mark to have them read)"
                ),
            ]
        );
        let (cfg, problems, _) = read("\u{feff}{\"schema\":\"olm.package\",\"name\":\"a\\/b\"}\n");
        assert!(cfg.packages.is_empty());
        assert_eq!(problems.len(), 1);
        assert_eq!(
            problems[0].message,
            "the file begins with a UTF-8 byte-order mark, so opm reads it as YAML, and refuses it: line 1: \\/ is a JSON escape that Go's YAML decoder does not know"
        );
        let (_, problems, _) =
            read("\u{feff}{\"schema\":\"olm.package\",\n\"name\":\"\\ud83d\\ude00\"}");
        assert_eq!(
            problems[0].message,
            "the file begins with a UTF-8 byte-order mark, so opm reads it as YAML, and refuses it: line 2: \\ud83d is a JSON escape that Go's YAML decoder does not know"
        );
        let (cfg, problems, lenient) = read("\u{feff}schema: olm.package\nname: p\n");
        assert!(problems.is_empty() && lenient.is_empty());
        assert_eq!(cfg.packages[0].name, "p");
    }

    #[test]
    fn file_by_file_matches_whole_load() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("a")).unwrap();
        std::fs::write(
            d.join("a/one.yaml"),
            "schema: olm.package\nname: p\n---\nname: x\n",
        )
        .unwrap();
        std::fs::write(
            d.join("b.json"),
            r#"{"schema":"olm.channel","name":"c","package":"p","entries":[]}"#,
        )
        .unwrap();
        std::fs::write(d.join("c.json"), "{").unwrap();
        let whole = load_dir(d).unwrap();
        let mut merged = DeclarativeConfig::default();
        let mut calls = 0;
        let (problems, lenient) = for_each_file(d, &Default::default(), |cfg| {
            calls += 1;
            merged.merge(cfg);
            true
        })
        .unwrap();
        assert_eq!(calls, 3);
        assert_eq!(problems.len(), 2);
        assert!(lenient.is_empty());
        assert_eq!(problems, whole.problems);
        assert_eq!(format!("{merged:?}"), format!("{:?}", whole.config));
    }

    /// A JSON stream of `n` bundles, each with a property value of `pad` bytes, so documents
    /// straddle the reader's chunks.
    fn big_stream(n: usize, pad: usize) -> String {
        let mut text = String::from("{\"schema\":\"olm.package\",\"name\":\"p\"}\n");
        for i in 0..n {
            text.push_str(&format!(
                "{{\"schema\":\"olm.bundle\",\"package\":\"p\",\"name\":\"p.v{i}\",\"image\":\"x\",\"properties\":[{{\"type\":\"x.pad\",\"value\":\"{}\\\"}}\"}}]}} ",
                "a".repeat(pad)
            ));
        }
        text
    }

    /// Loading a directory (documents streamed) equals parsing each file whole.
    fn assert_streamed_as_whole(files: &[(&str, String)]) {
        let dir = tempfile::tempdir().unwrap();
        let mut whole = LoadedCatalog::default();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
            let (config, problems, lenient) =
                parse_file_noting(Path::new(name), text.as_bytes(), LoadOptions::default());
            whole.config.merge(config);
            whole.problems.extend(problems);
            whole.lenient.extend(lenient);
        }
        for (name, _) in files {
            // Only the clean stream goes document by document; YAML is read once, whole; the
            // unclean JSON streams are read again whole.
            let read = stream_json(
                &dir.path().join(name),
                Path::new(name),
                LoadOptions::default(),
            );
            let how = match read.unwrap() {
                Read::Streamed(_) => "streamed",
                Read::Whole(_) => "whole",
                Read::Again => "again",
            };
            let expected = match *name {
                "a.json" => "streamed",
                "e.yaml" => "whole",
                _ => "again",
            };
            assert_eq!(how, expected, "{name}");
        }
        let streamed = load_dir(dir.path()).unwrap();
        assert_eq!(streamed.problems, whole.problems);
        assert_eq!(
            format!("{:?}", streamed.config),
            format!("{:?}", whole.config)
        );
    }

    #[test]
    fn streamed_documents_load_as_the_whole_file() {
        let clean = big_stream(6, 700_000);
        assert_eq!(
            parse_file(Path::new("a"), clean.as_bytes()).0.bundles.len(),
            6
        );
        // A broken document after several chunks, a top-level scalar, a truncated end:
        // each read whole again, with the whole-file parser's line and column.
        let broken = format!("{}{{\"schema\": oops}}", big_stream(3, 700_000));
        let scalar = format!("{}\n42\n", big_stream(2, 10));
        let truncated = format!("{}{{\"schema\":\"olm.bundle\"", big_stream(2, 600_000));
        assert_streamed_as_whole(&[
            ("a.json", clean),
            ("b.json", broken),
            ("c.json", scalar),
            ("d.json", truncated),
            (
                "e.yaml",
                format!("schema: olm.package\nname: q\n{}", "#\n".repeat(700_000)),
            ),
        ]);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("e.json"),
            format!("{}{{\"schema\": oops}}", big_stream(3, 700_000)),
        )
        .unwrap();
        let problems = load_dir(dir.path()).unwrap().problems;
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0]
                .message
                .starts_with("invalid JSON: expected value at line 2 column "),
            "{:?}",
            problems[0].message
        );
    }

    #[test]
    fn directory_with_indexignore() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("p/sub")).unwrap();
        std::fs::write(d.join(".indexignore"), "*.md\n").unwrap();
        std::fs::write(d.join("README.md"), "not a catalog").unwrap();
        std::fs::write(d.join("p/catalog.yaml"), "schema: olm.package\nname: p\n").unwrap();
        std::fs::write(d.join("p/sub/.indexignore"), "skip.json\n").unwrap();
        std::fs::write(d.join("p/sub/skip.json"), "{").unwrap();
        let loaded = load_dir(d).unwrap();
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        assert_eq!(loaded.files, vec![PathBuf::from("p/catalog.yaml")]);
        assert_eq!(
            loaded.config.packages[0]
                .origin
                .as_ref()
                .unwrap()
                .file
                .as_ref(),
            Path::new("p/catalog.yaml")
        );
    }
}
