//! Reading the files of a pulled layer under the limits of local input: a layer is input like
//! a bundle directory, so the same per-file, total and file-count limits
//! ([`crate::input::Limits`], `--max-file-size`, `--max-input-size`, `--max-input-files`) bound
//! what one image's layers unpack to, together. A gzip layer that inflates more than
//! [`MAX_GZIP_RATIO`] times its compressed size (past [`RATIO_FLOOR`] bytes) is a compression
//! bomb and refused as soon as it gets there, before the bytes are kept.

use std::io::{self, Read};
use std::path::Path;

use crate::input::Limits;

/// Most a gzip layer may inflate, as a multiple of the compressed bytes read.
pub const MAX_GZIP_RATIO: u64 = 200;

/// Inflated bytes below which the ratio is not checked (small, very regular files are fine).
pub const RATIO_FLOOR: u64 = 64 * 1024 * 1024;

/// What the layers of one image have unpacked to so far.
#[derive(Debug)]
pub struct Budget {
    limits: Limits,
    files: usize,
    bytes: u64,
}

impl Budget {
    /// A budget of `limits` for one image's layers.
    pub fn new(limits: &Limits) -> Self {
        Self {
            limits: *limits,
            files: 0,
            bytes: 0,
        }
    }

    /// Counts one file of `size` bytes at `path` (in the layer), refusing it when it breaks a
    /// limit. The error is in our words, for the caller to name the layer.
    pub fn admit(&mut self, path: &Path, size: u64) -> io::Result<()> {
        let refuse = |text: String| Err(io::Error::new(io::ErrorKind::InvalidData, text));
        if size > self.limits.max_file_bytes {
            return refuse(format!(
                "{} is {size} bytes, more than the limit of {} bytes; raise it with --max-file-size if the file is meant to be this large",
                path.display(),
                self.limits.max_file_bytes
            ));
        }
        self.files += 1;
        self.bytes = self.bytes.saturating_add(size);
        if self.files > self.limits.max_tree_files {
            return refuse(format!(
                "the image's layers hold more than {} files; raise the limit with --max-input-files if that is expected",
                self.limits.max_tree_files
            ));
        }
        if self.bytes > self.limits.max_tree_bytes {
            return refuse(format!(
                "the image's files add up to more than {} bytes; raise the limit with --max-input-size if that is expected",
                self.limits.max_tree_bytes
            ));
        }
        Ok(())
    }
}

/// The tar stream of a layer blob: inflated (ratio-checked) when it is gzip, as is otherwise.
pub fn tar_stream<'a>(blob: impl Read + 'a, gzip: bool) -> Box<dyn Read + 'a> {
    if !gzip {
        return Box::new(blob);
    }
    let counted = Counted {
        inner: blob,
        count: std::rc::Rc::new(std::cell::Cell::new(0)),
    };
    let compressed = counted.count.clone();
    Box::new(RatioGuard {
        inner: flate2::read::GzDecoder::new(counted),
        compressed,
        inflated: 0,
    })
}

/// True when `head` starts like a gzip stream.
pub fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b])
}

struct Counted<R> {
    inner: R,
    count: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

struct RatioGuard<R> {
    inner: R,
    compressed: std::rc::Rc<std::cell::Cell<u64>>,
    inflated: u64,
}

impl<R: Read> Read for RatioGuard<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.inflated += n as u64;
        let compressed = self.compressed.get().max(1);
        if self.inflated > RATIO_FLOOR && self.inflated / compressed > MAX_GZIP_RATIO {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "it inflates more than {MAX_GZIP_RATIO} times its compressed size (a compression bomb); refused"
                ),
            ));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gzip_bomb_is_stopped_past_the_floor() {
        use std::io::Write as _;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![0u8; 1024 * 1024];
        for _ in 0..(RATIO_FLOOR / zeros.len() as u64 + 8) {
            gz.write_all(&zeros).unwrap();
        }
        let bomb = gz.finish().unwrap();
        let mut sink = Vec::new();
        let err = tar_stream(bomb.as_slice(), true)
            .read_to_end(&mut sink)
            .unwrap_err();
        assert!(err.to_string().contains("compression bomb"), "{err}");
        assert!(sink.len() as u64 <= RATIO_FLOOR + 1024 * 1024);
    }

    #[test]
    fn limits_count_files_and_bytes_across_layers() {
        let limits = Limits {
            max_file_bytes: 10,
            max_tree_bytes: 15,
            max_tree_files: 2,
        };
        let mut budget = Budget::new(&limits);
        assert!(budget.admit(Path::new("a"), 8).is_ok());
        let big = budget.admit(Path::new("b"), 11).unwrap_err().to_string();
        assert!(
            big.starts_with("b is 11 bytes, more than the limit of 10"),
            "{big}"
        );
        let total = budget.admit(Path::new("c"), 8).unwrap_err().to_string();
        assert!(total.contains("add up to more than 15 bytes"), "{total}");
        let mut budget = Budget::new(&limits);
        budget.admit(Path::new("a"), 0).unwrap();
        budget.admit(Path::new("b"), 0).unwrap();
        let count = budget.admit(Path::new("c"), 0).unwrap_err().to_string();
        assert!(count.contains("more than 2 files"), "{count}");
    }
}
