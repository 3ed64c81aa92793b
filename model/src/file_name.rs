//! One plain path component made of text read from an input (a catalog, a bundle, a plan, a
//! PROJECT file, a registry, a JUnit report). Every file or directory olmpack names after such
//! text is a [`FileName`]: the one checked constructor, so no input reaches a path as `..`, an
//! absolute path, a separator, a control character or a look-alike of one.
//!
//! A plain name is 1 to [`MAX_LEN`] ASCII letters, digits, `.`, `_`, `-` and `+`, starting
//! with a letter or a digit (so never `.`, `..`, a hidden file or an option such as `-rf`).
//! [`FileName::new`] refuses anything else and says why; [`FileName::or_hash`] is for names a
//! consumer accepts although they are not plain (opm accepts any bundle name): a plain name is
//! kept, any other becomes `_` and a hash of it, which no plain name can equal. Reports keep
//! the input's own name; only the file system sees the hash.

use std::fmt;
use std::path::Path;

use sha2::{Digest, Sha256};

/// The longest plain name, in bytes: short enough that a prefix and a suffix still fit the
/// 255 bytes a file name may have.
pub const MAX_LEN: usize = 100;

/// The longest stem [`FileName::or_hash_within`] keeps: a file name may have 255 bytes, and
/// a suffix such as `.yaml` follows.
pub const MAX_STEM_LEN: usize = 245;

/// Why a text is not one plain path component.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FileNameError {
    /// The text is empty.
    #[error("a file name cannot be empty")]
    Empty,
    /// `.` or `..`: the directory itself or its parent.
    #[error("{0:?} names a directory, not a file")]
    Dot(String),
    /// The text has a separator: it would be more than one path component.
    #[error("{name:?} holds {separator:?}: a file name must be one path component")]
    Separator {
        /// The text.
        name: String,
        /// `/` or `\`.
        separator: char,
    },
    /// The text has a character outside the plain set.
    #[error(
        "{name:?} holds {character:?} (U+{code:04X}): a file name is made of ASCII letters, digits, '.', '_', '-' and '+'",
        code = u32::from(*character)
    )]
    Character {
        /// The text.
        name: String,
        /// The first character refused.
        character: char,
    },
    /// The text starts with a character other than a letter or a digit.
    #[error("{0:?} starts with neither a letter nor a digit")]
    Start(String),
    /// The text is too long.
    #[error("a file name is at most {max} bytes; this one has {len}")]
    TooLong {
        /// The text's length in bytes.
        len: usize,
        /// The most it may have.
        max: usize,
    },
}

/// One plain path component (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileName(String);

impl FileName {
    /// `name` as it is, when it is one plain path component.
    pub fn new(name: &str) -> Result<Self, FileNameError> {
        Self::within(name, MAX_LEN)
    }

    /// [`Self::or_hash`] for a name that may be longer than [`MAX_LEN`], up to `max` bytes
    /// (at most [`MAX_STEM_LEN`]): the stem of a file named after names whose length the
    /// input's own rules bound (kube-apiserver's object names), which a suffix follows.
    pub fn or_hash_within(name: &str, max: usize) -> Self {
        Self::within(name, max.min(MAX_STEM_LEN)).unwrap_or_else(|_| Self::hash(name))
    }

    fn within(name: &str, max: usize) -> Result<Self, FileNameError> {
        if name.is_empty() {
            return Err(FileNameError::Empty);
        }
        if name == "." || name == ".." {
            return Err(FileNameError::Dot(name.to_owned()));
        }
        if let Some(separator) = name.chars().find(|c| matches!(c, '/' | '\\')) {
            let name = name.to_owned();
            return Err(FileNameError::Separator { name, separator });
        }
        let plain = |c: &char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+');
        if let Some(character) = name.chars().find(|c| !plain(c)) {
            let name = name.to_owned();
            return Err(FileNameError::Character { name, character });
        }
        if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            return Err(FileNameError::Start(name.to_owned()));
        }
        if name.len() > max {
            let len = name.len();
            return Err(FileNameError::TooLong { len, max });
        }
        Ok(Self(name.to_owned()))
    }

    /// `name` when it is plain; otherwise `_` and the first 32 hex digits of its SHA-256, so
    /// two names map to two files and no plain name is the hash of another.
    pub fn or_hash(name: &str) -> Self {
        Self::new(name).unwrap_or_else(|_| Self::hash(name))
    }

    fn hash(name: &str) -> Self {
        let digest = Sha256::digest(name.as_bytes());
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        Self(format!("_{hex}"))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<Path> for FileName {
    fn as_ref(&self) -> &Path {
        Path::new(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hostile names: what each one is refused for, and that its hash is plain.
    #[test]
    fn hostile_names_are_refused_and_hash_to_plain_names() {
        let long = "a".repeat(300);
        let table: [(&str, &str); 11] = [
            ("", "a file name cannot be empty"),
            ("..", "\"..\" names a directory, not a file"),
            (
                "/abs/dir",
                "\"/abs/dir\" holds '/': a file name must be one path component",
            ),
            (
                "../../x",
                "\"../../x\" holds '/': a file name must be one path component",
            ),
            (
                "a\\b",
                "\"a\\\\b\" holds '\\\\': a file name must be one path component",
            ),
            (
                "a\0b",
                "\"a\\0b\" holds '\\0' (U+0000): a file name is made of ASCII letters, digits, '.', '_', '-' and '+'",
            ),
            (
                "a\nb",
                "\"a\\nb\" holds '\\n' (U+000A): a file name is made of ASCII letters, digits, '.', '_', '-' and '+'",
            ),
            (
                "a\u{2215}b",
                "\"a∕b\" holds '∕' (U+2215): a file name is made of ASCII letters, digits, '.', '_', '-' and '+'",
            ),
            (
                "\u{ff0e}\u{ff0e}",
                "\"．．\" holds '．' (U+FF0E): a file name is made of ASCII letters, digits, '.', '_', '-' and '+'",
            ),
            ("-rf", "\"-rf\" starts with neither a letter nor a digit"),
            (&long, "a file name is at most 100 bytes; this one has 300"),
        ];
        for (name, message) in table {
            let refused = FileName::new(name).expect_err(name);
            assert_eq!(refused.to_string(), message, "{name:?}");
            let hashed = FileName::or_hash(name);
            assert!(hashed.as_str().starts_with('_'), "{name:?}: {hashed}");
            assert_eq!(hashed.as_str().len(), 33, "{name:?}");
            assert!(
                hashed.as_str()[1..].chars().all(|c| c.is_ascii_hexdigit()),
                "{hashed}"
            );
        }
    }

    #[test]
    fn plain_names_are_kept_and_distinct_names_hash_apart() {
        for name in [
            "demo.v1.0.0",
            "demo.v1.0.0+build.1",
            "a",
            "A_b-c",
            &"x".repeat(100),
        ] {
            assert_eq!(FileName::new(name).unwrap().as_str(), name);
            assert_eq!(FileName::or_hash(name).as_str(), name);
        }
        let long = format!(
            "{}_rbac.authorization.k8s.io_v1_clusterrolebinding",
            "r".repeat(190)
        );
        assert_eq!(FileName::or_hash_within(&long, 300).as_str(), long);
        assert!(
            FileName::or_hash_within(&"r".repeat(246), 300)
                .as_str()
                .starts_with('_')
        );
        assert!(
            FileName::or_hash_within("../a", 300)
                .as_str()
                .starts_with('_')
        );
        assert_ne!(FileName::or_hash("../a"), FileName::or_hash("../b"));
        assert_eq!(FileName::or_hash("../a"), FileName::or_hash("../a"));
    }
}
