//! `sha256:<hex>` digests: computing them, checking their shape, hashing while writing.

use std::io::{self, Write};

use sha2::{Digest as _, Sha256};

/// `sha256:` followed by the lowercase hex SHA-256 of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format_digest(&Sha256::digest(bytes))
}

/// Formats a finished SHA-256 hash as `sha256:<hex>`.
pub fn format_digest(hash: &[u8]) -> String {
    let mut out = String::with_capacity(7 + hash.len() * 2);
    out.push_str("sha256:");
    for byte in hash {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The hex part of a well-formed `sha256:<64 lowercase hex>` digest, or `None`.
pub fn sha256_hex(digest: &str) -> Option<&str> {
    let hex = digest.strip_prefix("sha256:")?;
    let well_formed = hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    well_formed.then_some(hex)
}

/// A writer that hashes and counts everything passed through to `inner`.
#[derive(Debug)]
pub struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> HashingWriter<W> {
    /// Wraps `inner`; nothing hashed or counted yet.
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            written: 0,
        }
    }

    /// The inner writer, the `sha256:` digest and the byte count of what was written.
    pub fn finish(self) -> (W, String, u64) {
        (
            self.inner,
            format_digest(&self.hasher.finalize()),
            self.written,
        )
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_lowercase_hex_of_sha256() {
        assert_eq!(
            sha256_digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let mut writer = HashingWriter::new(Vec::new());
        writer.write_all(b"abc").unwrap();
        let (inner, digest, size) = writer.finish();
        assert_eq!(inner, b"abc");
        assert_eq!(digest, sha256_digest(b"abc"));
        assert_eq!(size, 3);
    }

    #[test]
    fn only_well_formed_sha256_digests_have_a_hex_part() {
        let good = sha256_digest(b"x");
        assert_eq!(sha256_hex(&good), Some(&good[7..]));
        assert_eq!(sha256_hex("sha256:ABC"), None);
        assert_eq!(sha256_hex(&good.to_uppercase()), None);
        assert_eq!(sha256_hex("sha512:00"), None);
        assert_eq!(sha256_hex("sha256:../../etc/passwd"), None);
    }
}
