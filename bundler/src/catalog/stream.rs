//! Rendering many references into one catalog stream, as `opm render REF…` prints it, in
//! parallel and in bounded memory.
//!
//! Contract:
//! - Every reference is rendered by the caller's function, on up to `jobs` threads; each
//!   blob is encoded (JSON or YAML, byte for byte as opm) as soon as it is rendered and
//!   appended to a spill buffer that moves to an anonymous temporary file past
//!   [`SPILL_IN_MEMORY`] bytes. Memory is bounded by the blobs in flight, not the catalog.
//! - The output order is opm's: per package (sorted by name) its packages, its channels by
//!   name, its bundles by name, its other blobs by schema, its deprecations; then the blobs of
//!   no package. Ties keep the order of the references and of the blobs within one. Packages,
//!   channels, bundles and deprecations with an empty package are not written (opm drops
//!   them too).
//! - Like opm, a failing reference fails the whole run and nothing is written; the error
//!   reported is the one of the first failing reference in argument order.

use std::cmp::Ordering as CmpOrdering;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use serde::Serialize;

use super::declcfg::{Bundle, Channel, Deprecation, Meta, Package};
use super::write::Format;
use super::{gojson, goyaml};

/// Encoded output kept in memory before spilling to a temporary file.
pub const SPILL_IN_MEMORY: usize = 16 << 20;

/// What rendering one reference produced: its blobs, and warnings (files skipped the way
/// opm skips them) to report.
#[derive(Clone, Debug, Default)]
pub struct RefOutput {
    pub blobs: Vec<Blob>,
    pub warnings: Vec<String>,
}

/// One blob of the output stream.
#[derive(Clone, Debug)]
pub enum Blob {
    Package(Package),
    Channel(Channel),
    Bundle(Bundle),
    Deprecation(Deprecation),
    Other(Meta),
}

/// Why the stream could not be written.
#[derive(Debug, thiserror::Error)]
pub enum StreamError<E: std::error::Error + 'static> {
    #[error("render reference {reference:?}")]
    Render {
        reference: String,
        #[source]
        source: E,
    },
    #[error("failed to encode a {schema} blob")]
    Encode {
        schema: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("failed to write the rendered catalog")]
    Io(#[from] std::io::Error),
}

/// Where a blob goes in opm's output order.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SortKey {
    /// `false` for blobs of a package, `true` for blobs of no package (written last).
    rootless: bool,
    package: String,
    rank: u8,
    secondary: String,
    seq: (usize, usize),
}

impl Ord for SortKey {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (
            self.rootless,
            &self.package,
            self.rank,
            &self.secondary,
            self.seq,
        )
            .cmp(&(
                other.rootless,
                &other.package,
                other.rank,
                &other.secondary,
                other.seq,
            ))
    }
}

impl PartialOrd for SortKey {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Blob {
    /// The sort key, or `None` for a blob opm does not write.
    fn key(&self, seq: (usize, usize)) -> Option<SortKey> {
        let (package, rank, secondary) = match self {
            Blob::Package(p) => (&p.name, 0, ""),
            Blob::Channel(c) => (&c.package, 1, c.name.as_str()),
            Blob::Bundle(b) => (&b.package, 2, b.name.as_str()),
            Blob::Other(m) => (&m.package, 3, m.schema.as_str()),
            Blob::Deprecation(d) => (&d.package, 4, ""),
        };
        let rootless = package.is_empty();
        if rootless && !matches!(self, Blob::Other(_)) {
            return None;
        }
        Some(SortKey {
            rootless,
            package: package.clone(),
            rank: if rootless { 0 } else { rank },
            secondary: if rootless {
                String::new()
            } else {
                secondary.to_owned()
            },
            seq,
        })
    }

    fn schema(&self) -> &str {
        match self {
            Blob::Package(p) => &p.schema,
            Blob::Channel(c) => &c.schema,
            Blob::Bundle(b) => &b.schema,
            Blob::Deprecation(d) => &d.schema,
            Blob::Other(m) => &m.schema,
        }
    }

    /// The blob as opm prints it in `format`.
    pub fn encode(&self, format: Format, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        match format {
            Format::Json => match self {
                Blob::Package(p) => gojson::write_indented(out, p),
                Blob::Channel(c) => gojson::write_indented(out, c),
                Blob::Bundle(b) => gojson::write_indented(out, b),
                Blob::Deprecation(d) => gojson::write_indented(out, d),
                Blob::Other(m) => gojson::write_indented(out, &m.blob),
            },
            Format::Yaml => {
                let value = match self {
                    Blob::Package(p) => to_value(p)?,
                    Blob::Channel(c) => to_value(c)?,
                    Blob::Bundle(b) => to_value(b)?,
                    Blob::Deprecation(d) => to_value(d)?,
                    Blob::Other(m) => m.blob.clone(),
                };
                out.extend_from_slice(b"---\n");
                goyaml::write_document(out, &value);
                Ok(())
            }
        }
    }
}

fn to_value<T: Serialize>(v: &T) -> Result<serde_json::Value, serde_json::Error> {
    serde_json::to_value(v)
}

/// Encoded blobs, in memory until they outgrow [`SPILL_IN_MEMORY`], then in a temporary file.
struct Spill {
    memory: Vec<u8>,
    file: Option<std::fs::File>,
    len: u64,
}

impl Spill {
    fn new() -> Self {
        Self {
            memory: Vec::new(),
            file: None,
            len: 0,
        }
    }

    fn append(&mut self, bytes: &[u8]) -> std::io::Result<(u64, usize)> {
        let at = self.len;
        if self.file.is_none() && self.memory.len() + bytes.len() > SPILL_IN_MEMORY {
            let mut file = tempfile::tempfile()?;
            file.write_all(&self.memory)?;
            self.memory = Vec::new();
            self.file = Some(file);
        }
        match &mut self.file {
            Some(file) => file.write_all(bytes)?,
            None => self.memory.extend_from_slice(bytes),
        }
        self.len += bytes.len() as u64;
        Ok((at, bytes.len()))
    }

    fn copy_to(&mut self, at: u64, len: usize, out: &mut dyn Write) -> std::io::Result<()> {
        match &self.file {
            None => out.write_all(&self.memory[at as usize..at as usize + len]),
            Some(file) => {
                use std::os::unix::fs::FileExt as _;
                let mut buf = vec![0; len];
                file.read_exact_at(&mut buf, at)?;
                out.write_all(&buf)
            }
        }
    }
}

/// Encoded blobs with their keys.
type Encoded = Vec<(SortKey, Vec<u8>)>;
/// What one reference produced: encoded blobs and warnings, or the render error.
type Rendered<E> = Result<(Encoded, Vec<String>), StreamError<E>>;

/// Renders `refs` with `render` on up to `jobs` threads and writes the stream to `out`
/// (module contract). Returns the warnings, in reference order.
pub fn render_refs<E, F>(
    refs: &[String],
    jobs: usize,
    format: Format,
    render: F,
    out: &mut dyn Write,
) -> Result<Vec<String>, StreamError<E>>
where
    E: std::error::Error + Send + 'static,
    F: Fn(usize) -> Result<RefOutput, E> + Sync,
{
    let jobs = jobs.clamp(1, refs.len().max(1));
    let next = AtomicUsize::new(0);
    let first_error = AtomicUsize::new(usize::MAX);
    let (tx, rx) = mpsc::sync_channel::<(usize, Rendered<E>)>(jobs * 2);
    let mut spill = Spill::new();
    let mut index: Vec<(SortKey, u64, usize)> = Vec::new();
    let mut error: Option<(usize, StreamError<E>)> = None;
    let mut warnings: Vec<(usize, Vec<String>)> = Vec::new();
    let collected: std::io::Result<()> = std::thread::scope(|s| {
        for _ in 0..jobs {
            let tx = tx.clone();
            let (next, first_error, render) = (&next, &first_error, &render);
            s.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= refs.len() || i > first_error.load(Ordering::Relaxed) {
                        break;
                    }
                    let result = render_one(i, &refs[i], format, render);
                    if result.is_err() {
                        first_error.fetch_min(i, Ordering::Relaxed);
                    }
                    if tx.send((i, result)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, result) in rx {
            match result {
                Ok((blobs, warned)) => {
                    for (key, bytes) in blobs {
                        let (at, len) = spill.append(&bytes)?;
                        index.push((key, at, len));
                    }
                    if !warned.is_empty() {
                        warnings.push((i, warned));
                    }
                }
                Err(e) => {
                    if error.as_ref().is_none_or(|(j, _)| i < *j) {
                        error = Some((i, e));
                    }
                }
            }
        }
        Ok(())
    });
    collected?;
    if let Some((_, e)) = error {
        return Err(e);
    }
    index.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
    for (_, at, len) in index {
        spill.copy_to(at, len, &mut out)?;
    }
    out.flush()?;
    warnings.sort_by_key(|(i, _)| *i);
    Ok(warnings.into_iter().flat_map(|(_, w)| w).collect())
}

fn render_one<E, F>(i: usize, reference: &str, format: Format, render: &F) -> Rendered<E>
where
    E: std::error::Error + 'static,
    F: Fn(usize) -> Result<RefOutput, E>,
{
    let RefOutput { blobs, warnings } = render(i).map_err(|source| StreamError::Render {
        reference: reference.to_owned(),
        source,
    })?;
    let mut encoded = Vec::with_capacity(blobs.len());
    for (k, blob) in blobs.iter().enumerate() {
        let Some(key) = blob.key((i, k)) else {
            continue;
        };
        let mut bytes = Vec::new();
        blob.encode(format, &mut bytes)
            .map_err(|source| StreamError::Encode {
                schema: blob.schema().to_owned(),
                source,
            })?;
        encoded.push((key, bytes));
    }
    Ok((encoded, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::declcfg::{Bundle, SCHEMA_BUNDLE};

    fn bundle(package: &str, name: &str) -> Blob {
        Blob::Bundle(Bundle {
            origin: None,
            schema: SCHEMA_BUNDLE.into(),
            name: name.into(),
            package: package.into(),
            image: String::new(),
            properties: vec![],
            related_images: vec![],
        })
    }

    #[derive(Debug, thiserror::Error)]
    #[error("broken {0}")]
    struct Broken(usize);

    #[test]
    fn opm_order_parallel_and_first_error() {
        let refs: Vec<String> = (0..6).map(|i| format!("r{i}")).collect();
        let names = [
            ("b", "b.v2"),
            ("a", "a.v1"),
            ("b", "b.v1"),
            ("", "x"),
            ("a", "a.v0"),
            ("c", "c.v1"),
        ];
        let mut out = Vec::new();
        render_refs(
            &refs,
            3,
            Format::Json,
            |i| {
                Ok::<_, Broken>(RefOutput {
                    blobs: vec![bundle(names[i].0, names[i].1)],
                    warnings: vec![],
                })
            },
            &mut out,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        let order: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("\"name\": \""))
            .map(|l| l.trim_end_matches("\","))
            .collect();
        assert_eq!(order, ["a.v0", "a.v1", "b.v1", "b.v2", "c.v1"]);

        let mut out = Vec::new();
        let err = render_refs(
            &refs,
            2,
            Format::Yaml,
            |i| {
                if i == 2 || i == 4 {
                    Err(Broken(i))
                } else {
                    Ok(RefOutput {
                        blobs: vec![bundle("p", "n")],
                        warnings: vec![],
                    })
                }
            },
            &mut out,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "render reference \"r2\"");
        assert!(out.is_empty());
    }
}
