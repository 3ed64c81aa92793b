//! Rendering many references into one catalog stream, as `opm render REF…` prints it, in
//! parallel and in bounded memory.
//!
//! Contract:
//! - Every reference is rendered by the caller's function, on up to `jobs` threads; the
//!   function hands its blobs to an [`Emitter`] one by one, which encodes each (JSON or YAML,
//!   byte for byte as opm) at once.
//! - Encoded blobs reach the spool in reference order, whatever the threads' timing: the
//!   blobs of reference N are spooled before those of N+1. A reference more than
//!   [`WINDOW_PER_JOB`]·`jobs` places after the one being spooled is not started, and a worker
//!   holding more than [`HELD_PER_REF`] bytes of a later reference waits for its turn, so
//!   memory is bounded by the references in flight (the largest bundle, or one catalog file),
//!   not by the catalog. The spool keeps [`SPILL_IN_MEMORY`] bytes in memory and the rest in an
//!   anonymous temporary file.
//! - The output order is opm's: per package (sorted by name) its packages, its channels by
//!   name, its bundles by name, its other blobs by schema, its deprecations; then the blobs of
//!   no package. Ties keep the order of the references and of the blobs within one, except
//!   channels and bundles sharing a name: opm orders those with Go's unstable `sort.Slice`,
//!   and so does the stream ([`super::gosort`]). Packages,
//!   channels, bundles and deprecations with an empty package are not written (opm drops
//!   them too).
//! - Like opm, a failing reference fails the whole run and nothing is written; the error
//!   reported is the one of the first failing reference in argument order (later references
//!   stop as soon as it is known).

use std::cmp::Ordering as CmpOrdering;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Condvar, Mutex, MutexGuard};

use serde::Serialize;

use super::declcfg::{Bundle, Channel, Deprecation, Meta, Package};
use super::serialize::Format;
use super::{gojson, goyaml};

/// Encoded output `catalog render` keeps in memory before spilling to a temporary file.
pub const SPILL_IN_MEMORY: usize = 1 << 20;
/// Encoded bytes a worker holds for a reference that is not yet being spooled before it
/// waits for that reference's turn.
pub const HELD_PER_REF: usize = 2 << 20;
/// How many references per job may be started ahead of the one being spooled.
pub const WINDOW_PER_JOB: usize = 2;

/// One blob of the output stream.
#[derive(Clone, Debug)]
pub enum Blob {
    /// An `olm.package` blob.
    Package(Package),
    /// An `olm.channel` blob.
    Channel(Channel),
    /// An `olm.bundle` blob.
    Bundle(Bundle),
    /// An `olm.deprecations` blob.
    Deprecation(Deprecation),
    /// A blob of any other schema, kept as written.
    Other(Meta),
}

/// Why the stream could not be written.
#[derive(Debug, thiserror::Error)]
pub enum StreamError<E: std::error::Error + 'static> {
    /// The first reference (in argument order) that failed to render; nothing was written.
    #[error("render reference {reference:?}")]
    Render {
        /// The reference as given (bundle or catalog directory, image, …).
        reference: String,
        /// Why the caller's render function failed for it.
        #[source]
        source: E,
    },
    /// A rendered blob could not be encoded; nothing was written.
    #[error("failed to encode a {schema} blob")]
    Encode {
        /// The blob's schema (e.g. `olm.bundle`).
        schema: String,
        /// What the encoder refused.
        #[source]
        source: serde_json::Error,
    },
    /// The spool's temporary file or the output could not be written.
    #[error("failed to write the rendered catalog")]
    Io(#[from] std::io::Error),
}

/// Where a blob goes in opm's output order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortKey {
    /// `false` for blobs of a package, `true` for blobs of no package (written last).
    rootless: bool,
    package: String,
    rank: u8,
    secondary: String,
    /// Reference index, then the blob's place among the reference's blobs.
    seq: (usize, usize),
}

impl SortKey {
    /// The index of the reference the blob came from.
    pub fn reference(&self) -> usize {
        self.seq.0
    }
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

    /// About how many bytes the blob encodes to, so that its buffer is not regrown (and
    /// copied) while encoding: a bundle's size is its bundle objects' base64 text.
    fn size_hint(&self) -> usize {
        const REST: usize = 4 << 10;
        let Blob::Bundle(b) = self else {
            return REST;
        };
        let data = |p: &super::declcfg::Property| {
            p.value
                .get("data")
                .and_then(serde_json::Value::as_str)
                .map_or(0, str::len)
        };
        REST + b.properties.iter().map(data).sum::<usize>()
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

/// Where encoded blobs go, in reference order (see the module contract).
pub trait Sink: Send {
    /// Takes the next encoded blob.
    fn blob(&mut self, key: SortKey, bytes: Vec<u8>) -> std::io::Result<()>;
}

/// Where the spool keeps one blob.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// The blob at this index of [`Spool::memory`].
    Memory(usize),
    /// `len` bytes at offset `at` of the spill file.
    File { at: u64, len: usize },
}

/// Encoded blobs, kept as they were encoded until they outgrow the spool's budget
/// ([`SPILL_IN_MEMORY`] for `catalog render`), then appended to an anonymous temporary file,
/// with their keys.
struct Spool {
    budget: usize,
    memory: Vec<Vec<u8>>,
    in_memory: usize,
    /// The spill file and how many bytes it holds.
    file: Option<(std::fs::File, u64)>,
    index: Vec<(SortKey, Place)>,
}

impl Sink for Spool {
    fn blob(&mut self, key: SortKey, mut bytes: Vec<u8>) -> std::io::Result<()> {
        let place = if self.file.is_none() && self.in_memory + bytes.len() <= self.budget {
            // Kept until the end: give back what the encoder reserved beyond its bytes.
            bytes.shrink_to_fit();
            self.in_memory += bytes.len();
            self.memory.push(bytes);
            Place::Memory(self.memory.len() - 1)
        } else {
            let (file, written) = match &mut self.file {
                Some(spill) => spill,
                None => self.file.insert((tempfile::tempfile()?, 0)),
            };
            file.write_all(&bytes)?;
            let at = *written;
            *written += bytes.len() as u64;
            Place::File {
                at,
                len: bytes.len(),
            }
        };
        self.index.push((key, place));
        Ok(())
    }
}

impl Spool {
    fn new(budget: usize) -> Self {
        Self {
            budget,
            memory: Vec::new(),
            in_memory: 0,
            file: None,
            index: Vec::new(),
        }
    }

    /// Writes the spooled blobs to `out` in opm's order. Blobs that lie one after another in
    /// the spill file (usual when the references come in the order opm sorts by) are copied
    /// as one run, past the output buffer (see [`Output`]).
    fn write_sorted(mut self, out: &mut dyn Output) -> std::io::Result<()> {
        self.index.sort_by(|a, b| a.0.cmp(&b.0));
        go_order_ties(&mut self.index);
        let mut out = std::io::BufWriter::with_capacity(OUTPUT_BUFFER, out);
        let mut run = SpillRun::default();
        for (_, place) in &self.index {
            match *place {
                Place::Memory(i) => {
                    run.write(&self.file, &mut out)?;
                    out.write_all(&self.memory[i])?;
                }
                Place::File { at, len } => run.push(at, len, &self.file, &mut out)?,
            }
        }
        run.write(&self.file, &mut out)?;
        out.flush()
    }
}

/// The output buffer of [`Spool::write_sorted`]; runs of the spill file bypass it.
const OUTPUT_BUFFER: usize = 256 << 10;

/// [`Spool::write_sorted`]'s output.
type Buffered<'o> = std::io::BufWriter<&'o mut dyn Output>;

/// The longest [`SpillRun`]: a longer one is copied in parts, so that the output flows
/// while the spill file is still being read.
const SPILL_RUN: usize = 4 << 20;

/// Adjacent blobs of the spill file, waiting to be written: `len` bytes from `at`.
#[derive(Default)]
struct SpillRun {
    at: u64,
    len: usize,
}

impl SpillRun {
    /// Adds the `len` bytes at `at` to the run when they follow it (and it stays within
    /// [`SPILL_RUN`]); else writes the run to `out` first and starts a new one with them.
    fn push(
        &mut self,
        at: u64,
        len: usize,
        file: &Option<(std::fs::File, u64)>,
        out: &mut Buffered<'_>,
    ) -> std::io::Result<()> {
        if self.len > 0 && self.at + self.len as u64 == at && self.len + len <= SPILL_RUN {
            self.len += len;
            return Ok(());
        }
        self.write(file, out)?;
        (self.at, self.len) = (at, len);
        Ok(())
    }

    /// Copies the run from the spill file to `out`, leaving the run empty.
    fn write(
        &mut self,
        file: &Option<(std::fs::File, u64)>,
        out: &mut Buffered<'_>,
    ) -> std::io::Result<()> {
        use std::io::{Read, Seek as _};
        if self.len == 0 {
            return Ok(());
        }
        let Some(file) = file.as_ref().map(|(f, _)| f) else {
            return Err(std::io::Error::other("the spool lost its spill file"));
        };
        let (at, len) = (self.at, std::mem::take(&mut self.len));
        out.flush()?;
        let mut file: &std::fs::File = file;
        file.seek(std::io::SeekFrom::Start(at))?;
        // Through the trait object: its `copy_from` is the concrete writer's.
        let writer: &mut dyn Output = *out.get_mut();
        let copied = writer.copy_from(&mut Read::take(file, len as u64))?;
        if copied < len as u64 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        Ok(())
    }
}

/// Where a rendered stream is written: any writer. Spilled blobs reach it through
/// [`std::io::copy`], which copies inside the kernel when the writer is a file or standard
/// output (never through this process's memory).
pub trait Output: Write {
    /// Copies all of `from` to the output.
    fn copy_from(&mut self, from: &mut std::io::Take<&std::fs::File>) -> std::io::Result<u64>;
}

impl<W: Write + ?Sized> Output for W {
    fn copy_from(&mut self, from: &mut std::io::Take<&std::fs::File>) -> std::io::Result<u64> {
        // Monomorphised for the concrete writer, so std sees its type and picks the copy.
        std::io::copy(from, self)
    }
}

/// opm sorts a package's channels and its bundles by name with Go's `sort.Slice`, which is
/// not stable: where two share a name (a bundle rendered from two directories), their order
/// is that algorithm's on the blobs in reference order. Runs without a shared name are
/// already in the only order a sort by name can give.
fn go_order_ties(index: &mut [(SortKey, Place)]) {
    let same_group = |a: &(SortKey, Place), b: &(SortKey, Place)| {
        (a.0.rootless, a.0.rank, &a.0.package) == (b.0.rootless, b.0.rank, &b.0.package)
    };
    for run in index.chunk_by_mut(same_group) {
        // Ranks 1 and 2: channels and bundles (see `Blob::key`).
        let by_name = !run[0].0.rootless && matches!(run[0].0.rank, 1 | 2);
        if by_name && run.windows(2).any(|w| w[0].0.secondary == w[1].0.secondary) {
            run.sort_by_key(|e| e.0.seq);
            super::gosort::sort_slice(run, |a, b| a.0.secondary < b.0.secondary);
        }
    }
}

/// A reference that finished before its turn: its blobs and how it ended.
struct Finished<E: std::error::Error + 'static> {
    held: Vec<(SortKey, Vec<u8>)>,
    warnings: Vec<String>,
    result: Result<(), StreamError<E>>,
}

/// The state the workers share.
struct State<'s, E: std::error::Error + 'static> {
    /// The next reference to start.
    claimed: usize,
    /// The reference whose blobs are spooled now; earlier ones are complete.
    turn: usize,
    /// References that finished before their turn.
    finished: BTreeMap<usize, Finished<E>>,
    sink: &'s mut dyn Sink,
    warnings: Vec<String>,
    /// The first failure in argument order; set, everything stops.
    failure: Option<StreamError<E>>,
    stopped: bool,
}

impl<E: std::error::Error + 'static> State<'_, E> {
    fn spool(&mut self, held: &mut Vec<(SortKey, Vec<u8>)>) {
        for (key, bytes) in held.drain(..) {
            if let Err(e) = self.sink.blob(key, bytes) {
                self.fail(e.into());
                return;
            }
        }
    }

    fn fail(&mut self, err: StreamError<E>) {
        if self.failure.is_none() {
            self.failure = Some(err);
        }
        self.stopped = true;
    }

    /// Completes the reference whose turn it is, then every finished one after it.
    fn complete(&mut self, mut done: Finished<E>) {
        loop {
            self.spool(&mut done.held);
            self.warnings.append(&mut done.warnings);
            if let Err(e) = done.result {
                self.fail(e);
            }
            self.turn += 1;
            if self.stopped {
                return;
            }
            match self.finished.remove(&self.turn) {
                Some(next) => done = next,
                None => return,
            }
        }
    }
}

/// The shared state and the condition workers wait on.
struct Shared<'s, E: std::error::Error + 'static> {
    state: Mutex<State<'s, E>>,
    changed: Condvar,
    window: usize,
    format: Format,
}

impl<'s, E: std::error::Error + 'static> Shared<'s, E> {
    fn lock(&self) -> MutexGuard<'_, State<'s, E>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next reference to render, once the window allows it; `None` when done or stopped.
    fn claim(&self, n: usize) -> Option<usize> {
        let mut state = self.lock();
        loop {
            if state.stopped || state.claimed >= n {
                return None;
            }
            if state.claimed < state.turn + self.window {
                state.claimed += 1;
                return Some(state.claimed - 1);
            }
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Stops every worker when one panics, so none waits forever for the panicking one's turn.
struct PanicGuard<'a, 's, E: std::error::Error + 'static>(&'a Shared<'s, E>);

impl<E: std::error::Error + 'static> Drop for PanicGuard<'_, '_, E> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().stopped = true;
            self.0.changed.notify_all();
        }
    }
}

/// What a render function hands its blobs and warnings to (module contract).
pub struct Emitter<'a, 's, E: std::error::Error + 'static> {
    shared: &'a Shared<'s, E>,
    reference: usize,
    seq: usize,
    held: Vec<(SortKey, Vec<u8>)>,
    held_bytes: usize,
    warnings: Vec<String>,
    /// The run stopped (an earlier reference failed) or a blob did not encode.
    stopped: bool,
    error: Option<StreamError<E>>,
}

impl<E: std::error::Error + 'static> std::fmt::Debug for Emitter<'_, '_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emitter")
            .field("reference", &self.reference)
            .field("seq", &self.seq)
            .field("held_bytes", &self.held_bytes)
            .finish_non_exhaustive()
    }
}

impl<E: std::error::Error + 'static> Emitter<'_, '_, E> {
    /// Encodes `blob` and queues it for the output; a no-op once the run has stopped.
    pub fn blob(&mut self, blob: &Blob) {
        if self.stopped {
            return;
        }
        let Some(key) = blob.key((self.reference, self.seq)) else {
            return;
        };
        self.seq += 1;
        let mut bytes = Vec::with_capacity(blob.size_hint());
        if let Err(source) = blob.encode(self.shared.format, &mut bytes) {
            self.error = Some(StreamError::Encode {
                schema: blob.schema().to_owned(),
                source,
            });
            self.stopped = true;
            return;
        }
        self.held_bytes += bytes.len();
        self.held.push((key, bytes));
        if self.held_bytes > HELD_PER_REF {
            self.flush();
        }
    }

    /// A warning to print once the run succeeds (in reference order).
    pub fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }

    /// Whether the run has stopped: the render function may return early.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Waits for this reference's turn, then spools what it holds.
    fn flush(&mut self) {
        let mut state = self.shared.lock();
        while state.turn != self.reference && !state.stopped {
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(|p| p.into_inner());
        }
        if state.stopped {
            self.stopped = true;
            self.held.clear();
        } else {
            state.spool(&mut self.held);
            self.stopped = state.stopped;
            if self.stopped {
                drop(state);
                self.shared.changed.notify_all();
            }
        }
        self.held_bytes = 0;
    }

    /// Hands the reference over: spooled now when it is its turn, else kept until it is.
    fn finish(self, result: Result<(), StreamError<E>>) {
        let result = match self.error {
            Some(e) => Err(e),
            None => result,
        };
        let done = Finished {
            held: self.held,
            warnings: self.warnings,
            result,
        };
        let mut state = self.shared.lock();
        if state.stopped {
            // Whoever stopped the run woke the others; wake them again to be sure none waits.
            drop(state);
            self.shared.changed.notify_all();
        } else if state.turn == self.reference {
            state.complete(done);
            drop(state);
            self.shared.changed.notify_all();
        } else {
            state.finished.insert(self.reference, done);
        }
    }
}

/// Renders `refs` with `render` on up to `jobs` threads and writes the stream to `out`
/// (module contract). Returns the warnings, in reference order.
pub fn render_refs<E, F>(
    refs: &[String],
    jobs: usize,
    format: Format,
    render: F,
    out: &mut dyn Output,
) -> Result<Vec<String>, StreamError<E>>
where
    E: std::error::Error + Send + 'static,
    F: Fn(usize, &mut Emitter<'_, '_, E>) -> Result<(), E> + Sync,
{
    let mut spool = Spool::new(SPILL_IN_MEMORY);
    let warnings = stream_into(refs, jobs, format, render, &mut spool)?;
    spool.write_sorted(out)?;
    Ok(warnings)
}

/// [`render_refs`] up to the spool: every encoded blob goes to `sink`, in reference order.
pub fn stream_into<E, F>(
    refs: &[String],
    jobs: usize,
    format: Format,
    render: F,
    sink: &mut dyn Sink,
) -> Result<Vec<String>, StreamError<E>>
where
    E: std::error::Error + Send + 'static,
    F: Fn(usize, &mut Emitter<'_, '_, E>) -> Result<(), E> + Sync,
{
    let jobs = jobs.clamp(1, refs.len().max(1));
    let shared = Shared {
        state: Mutex::new(State {
            claimed: 0,
            turn: 0,
            finished: BTreeMap::new(),
            sink,
            warnings: Vec::new(),
            failure: None,
            stopped: false,
        }),
        changed: Condvar::new(),
        window: jobs * WINDOW_PER_JOB,
        format,
    };
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                let _guard = PanicGuard(&shared);
                while let Some(i) = shared.claim(refs.len()) {
                    let mut emitter = Emitter {
                        shared: &shared,
                        reference: i,
                        seq: 0,
                        held: Vec::new(),
                        held_bytes: 0,
                        warnings: Vec::new(),
                        stopped: false,
                        error: None,
                    };
                    let result = render(i, &mut emitter).map_err(|source| StreamError::Render {
                        reference: refs[i].clone(),
                        source,
                    });
                    emitter.finish(result);
                }
            });
        }
    });
    let state = shared.state.into_inner().unwrap_or_else(|p| p.into_inner());
    match state.failure {
        Some(e) => Err(e),
        None => Ok(state.warnings),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::declcfg::{Bundle, SCHEMA_BUNDLE};
    use std::sync::mpsc;

    fn bundle(package: &str, name: &str, image: &str) -> Blob {
        Blob::Bundle(Bundle {
            origin: None,
            schema: SCHEMA_BUNDLE.into(),
            name: name.into(),
            package: package.into(),
            image: image.into(),
            properties: vec![],
            related_images: vec![],
        })
    }

    #[derive(Debug, thiserror::Error)]
    #[error("broken {0}")]
    struct Broken(usize);

    fn names_in(text: &str, field: &str) -> Vec<String> {
        let prefix = format!("\"{field}\": \"");
        text.lines()
            .filter_map(|l| l.trim().strip_prefix(prefix.as_str()))
            .map(|l| l.trim_end_matches("\",").trim_end_matches('"').to_owned())
            .collect()
    }

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
            |i, emit| {
                emit.blob(&bundle(names[i].0, names[i].1, ""));
                Ok::<_, Broken>(())
            },
            &mut out,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            names_in(&text, "name"),
            ["a.v0", "a.v1", "b.v1", "b.v2", "c.v1"]
        );

        let mut out = Vec::new();
        let err = render_refs(
            &refs,
            2,
            Format::Yaml,
            |i, emit| {
                if i == 2 || i == 4 {
                    Err(Broken(i))
                } else {
                    emit.blob(&bundle("p", "n", ""));
                    Ok(())
                }
            },
            &mut out,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "render reference \"r2\"");
        assert!(out.is_empty());
    }

    /// Ties (same package and bundle name) keep the reference order even when later
    /// references finish first: reference 0 waits until reference 1 has rendered, and the
    /// references emit from 1 to 40 blobs of varied sizes.
    #[test]
    fn ties_keep_reference_order_whatever_finishes_first() {
        let refs: Vec<String> = (0..60).map(|i| format!("r{i}")).collect();
        let (done_tx, done_rx) = mpsc::sync_channel::<()>(1);
        let done_rx = Mutex::new(done_rx);
        let render = |i: usize, emit: &mut Emitter<'_, '_, Broken>| {
            if i == 0 {
                done_rx.lock().unwrap().recv().unwrap();
            }
            for k in 0..(i * 7) % 40 + 1 {
                let image = format!("{i}-{k}-{}", "x".repeat((i * 31 + k * 17) % 5000));
                emit.blob(&bundle("p", "same", &image));
            }
            if i == 1 {
                done_tx.send(()).unwrap();
            }
            Ok(())
        };
        let mut parallel = Vec::new();
        render_refs(&refs, 2, Format::Json, render, &mut parallel).unwrap();
        let images = names_in(&String::from_utf8(parallel).unwrap(), "image");
        let expected: Vec<String> = (0..60)
            .flat_map(|i: usize| {
                (0..(i * 7) % 40 + 1)
                    .map(move |k| format!("{i}-{k}-{}", "x".repeat((i * 31 + k * 17) % 5000)))
            })
            .collect();
        assert_eq!(images, expected);
    }

    /// A spool that spills after a few blobs writes the same stream as one that keeps
    /// everything in memory.
    #[test]
    fn a_spilled_spool_writes_what_a_memory_one_does() {
        let refs: Vec<String> = (0..30).map(|i| format!("r{i}")).collect();
        let render = |i: usize, emit: &mut Emitter<'_, '_, Broken>| {
            for k in 0..i % 4 + 1 {
                let name = format!("b{}", (i * 13 + k) % 17);
                let image = format!("{i}-{k}-{}", "y".repeat(i * 97 % 700));
                emit.blob(&bundle(&format!("p{}", i % 3), &name, &image));
            }
            Ok(())
        };
        let mut written = Vec::new();
        for budget in [usize::MAX, 4096, 0] {
            let mut spool = Spool::new(budget);
            stream_into(&refs, 2, Format::Json, render, &mut spool).unwrap();
            assert_eq!(
                spool.file.is_some(),
                budget != usize::MAX,
                "budget {budget}"
            );
            let mut out = Vec::new();
            spool.write_sorted(&mut out).unwrap();
            written.push(out);
        }
        assert!(written[0].len() > 10_000);
        assert_eq!(written[0], written[1]);
        assert_eq!(written[0], written[2]);
    }

    #[test]
    fn spill_runs_join_adjacent_blobs_up_to_their_limit() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&(0..64u8).collect::<Vec<_>>()).unwrap();
        let file = Some((file, 64));
        // Into memory (std copies through a buffer) and into a file (inside the kernel).
        let mut memory = Vec::new();
        let mut disk = tempfile::tempfile().unwrap();
        for target in [&mut memory as &mut dyn Output, &mut disk] {
            let mut out = std::io::BufWriter::new(target);
            let mut run = SpillRun::default();
            run.push(10, 5, &file, &mut out).unwrap();
            run.push(15, 7, &file, &mut out).unwrap();
            assert_eq!(
                (run.at, run.len),
                (10, 12),
                "adjacent blobs wait in the run"
            );
            run.push(23, 1, &file, &mut out).unwrap();
            out.write_all(b"|").unwrap();
            run.push(0, 2, &file, &mut out).unwrap();
            run.push(2, SPILL_RUN, &file, &mut out).unwrap();
            assert_eq!((run.at, run.len), (2, SPILL_RUN));
            let lost = run.write(&None, &mut out).unwrap_err();
            assert_eq!(lost.to_string(), "the spool lost its spill file");
            let mut run = SpillRun::default();
            run.push(60, 8, &file, &mut out).unwrap();
            let short = run.write(&file, &mut out).unwrap_err();
            assert_eq!(
                short.kind(),
                std::io::ErrorKind::UnexpectedEof,
                "past the end"
            );
            out.flush().unwrap();
        }
        use std::io::{Read as _, Seek as _};
        let mut written = Vec::new();
        disk.seek(std::io::SeekFrom::Start(0)).unwrap();
        disk.read_to_end(&mut written).unwrap();
        // A gap writes the run, and so do a blob before it and one past the limit; the
        // buffered byte lands after what was written before it, the run held then after it.
        let mut expected: Vec<u8> = (10..22u8).collect();
        expected.extend([b'|', 23, 0, 1]);
        expected.extend(60..64u8);
        assert_eq!(memory, expected);
        assert_eq!(written, expected);
    }

    /// Records which reference each spooled blob came from, slowly, and when each render
    /// started relative to what was spooled.
    struct SlowSink<'a> {
        spooled: &'a Mutex<Vec<usize>>,
    }

    impl Sink for SlowSink<'_> {
        fn blob(&mut self, key: SortKey, _bytes: Vec<u8>) -> std::io::Result<()> {
            // Slow on purpose, so that unbounded workers would run far ahead.
            std::thread::sleep(std::time::Duration::from_millis(2));
            self.spooled.lock().unwrap().push(key.reference());
            Ok(())
        }
    }

    /// Blobs reach the sink in reference order, and reference N+window is not started
    /// before reference N is spooled: memory is bounded by the references in flight.
    #[test]
    fn bounded_lookahead_and_reference_order_at_the_sink() {
        let jobs = 2;
        let window = jobs * WINDOW_PER_JOB;
        let refs: Vec<String> = (0..40).map(|i| format!("r{i}")).collect();
        let spooled = Mutex::new(Vec::new());
        let started = Mutex::new(Vec::new());
        let mut sink = SlowSink { spooled: &spooled };
        stream_into(
            &refs,
            jobs,
            Format::Json,
            |i, emit: &mut Emitter<'_, '_, Broken>| {
                let done = spooled.lock().unwrap().len();
                started.lock().unwrap().push((i, done));
                emit.blob(&bundle("p", &format!("b{i}"), ""));
                Ok(())
            },
            &mut sink,
        )
        .unwrap();
        let spooled = spooled.into_inner().unwrap();
        assert_eq!(spooled, (0..40).collect::<Vec<_>>());
        for (i, done) in started.into_inner().unwrap() {
            assert!(
                i < done + window,
                "reference {i} started with only {done} reference(s) spooled (window {window})"
            );
        }
    }
}
