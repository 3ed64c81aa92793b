//! Generated files: built in memory, then written all at once or compared with what is on disk.
//!
//! Contract:
//! - [`FileTree::write_to`] never leaves a half-written directory: the tree is written to a
//!   sibling temp directory, then swapped into place with renames. If anything fails, the old
//!   directory is untouched and the temp directory removed.
//! - It replaces only what olmpack made: nothing, an empty directory, a directory carrying the
//!   [`STAMP_FILE`] olmpack writes into every tree, or a directory whose every file is one this
//!   tree writes (a tree generated before stamps existed). Anything else (a file, a symlink, a
//!   device, a directory with other files) is refused before a byte is written
//!   ([`FileTree::check_replaceable`]).
//! - [`FileTree::check_against`] reports every difference (missing, extra, changed files, the
//!   latter with a unified diff); an empty list means the directory is up to date.
//! - Paths are relative and use `/`; iteration order is the sorted path order, so output that
//!   depends on it is deterministic.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

/// Failure to read or write generated files.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("failed to write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("refusing to write outside the output directory: {path}")]
    Escapes { path: PathBuf },
    #[error(
        "{path}: {reason}; olmpack replaces only directories it generated, so nothing was written (pick another output directory, or remove it yourself)"
    )]
    NotReplaceable { path: PathBuf, reason: String },
}

/// The file olmpack puts into every directory it generates; a directory with it may be
/// replaced by the next run. [`FileTree::check_against`] ignores it. It is empty: a catalog
/// directory is served as it is (`opm serve`, catalog images), and an empty file holds no
/// catalog objects, so every reader skips it.
pub const STAMP_FILE: &str = ".olmpack-generated";

const STAMP: &[u8] = b"";

/// Files to be written under one directory, keyed by relative path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileTree {
    files: BTreeMap<PathBuf, Vec<u8>>,
}

/// One way a directory differs from a [`FileTree`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Drift {
    Missing(PathBuf),
    Extra(PathBuf),
    Changed { path: PathBuf, diff: String },
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Drift::Missing(path) => write!(f, "missing: {}", path.display()),
            Drift::Extra(path) => write!(f, "not generated (would be removed): {}", path.display()),
            Drift::Changed { path, diff } => write!(f, "changed: {}\n{diff}", path.display()),
        }
    }
}

impl FileTree {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a file. `path` must be relative and stay inside the tree.
    pub fn insert(
        &mut self,
        path: impl Into<PathBuf>,
        contents: impl Into<Vec<u8>>,
    ) -> Result<(), OutputError> {
        let path = path.into();
        let escapes = path.is_absolute()
            || path
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)));
        if escapes {
            return Err(OutputError::Escapes { path });
        }
        self.files.insert(path, contents.into());
        Ok(())
    }

    /// Adds every file of `other` under `prefix`.
    pub fn merge_under(&mut self, prefix: &Path, other: FileTree) -> Result<(), OutputError> {
        for (path, contents) in other.files {
            self.insert(prefix.join(path), contents)?;
        }
        Ok(())
    }

    pub fn get(&self, path: &Path) -> Option<&[u8]> {
        self.files.get(path).map(Vec::as_slice)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Path, &[u8])> {
        self.files.iter().map(|(p, c)| (p.as_path(), c.as_slice()))
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Total size in bytes of every file.
    pub fn total_size(&self) -> usize {
        self.files.values().map(Vec::len).sum()
    }

    /// Whether [`FileTree::write_to`] may replace `dir` (see the module contract).
    pub fn check_replaceable(&self, dir: &Path) -> Result<(), OutputError> {
        let refuse = |reason: &str| OutputError::NotReplaceable {
            path: dir.to_path_buf(),
            reason: reason.to_owned(),
        };
        let meta = match fs::symlink_metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => {
                return Err(OutputError::Read {
                    path: dir.to_path_buf(),
                    source,
                });
            }
            Ok(meta) => meta,
        };
        let file_type = meta.file_type();
        if file_type.is_symlink() {
            return Err(refuse("is a symlink, not a directory olmpack generated"));
        }
        if file_type.is_file() {
            return Err(refuse("is a file, not a directory"));
        }
        if !file_type.is_dir() {
            return Err(refuse("is not a directory (a device, FIFO or socket)"));
        }
        if fs::symlink_metadata(dir.join(STAMP_FILE)).is_ok_and(|m| m.is_file()) {
            return Ok(());
        }
        match self.first_foreign_entry(dir)? {
            None => Ok(()),
            Some(foreign) => Err(refuse(&format!(
                "is a directory olmpack did not generate (it holds {}, which olmpack would not write)",
                foreign.display()
            ))),
        }
    }

    /// The first entry under `dir` (relative) that is not a file this tree writes.
    fn first_foreign_entry(&self, dir: &Path) -> Result<Option<PathBuf>, OutputError> {
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            let abs = dir.join(&rel);
            let entries = fs::read_dir(&abs).map_err(|source| OutputError::Read {
                path: abs.clone(),
                source,
            })?;
            for entry in entries {
                let entry = entry.map_err(|source| OutputError::Read {
                    path: abs.clone(),
                    source,
                })?;
                let path = rel.join(entry.file_name());
                let file_type = entry.file_type().map_err(|source| OutputError::Read {
                    path: dir.join(&path),
                    source,
                })?;
                if file_type.is_dir() && self.files.keys().any(|f| f.starts_with(&path)) {
                    stack.push(path);
                } else if !(file_type.is_file() && self.files.contains_key(&path)) {
                    return Ok(Some(path));
                }
            }
        }
        Ok(None)
    }

    /// Replaces `dir` with exactly this tree plus the [`STAMP_FILE`] (see the module contract).
    pub fn write_to(&self, dir: &Path) -> Result<(), OutputError> {
        self.check_replaceable(dir)?;
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&parent).map_err(|source| OutputError::Write {
            path: parent.clone(),
            source,
        })?;
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "out".to_owned());
        let staging = tempfile::Builder::new()
            .prefix(&format!(".{name}.olmpack-new-"))
            .tempdir_in(&parent)
            .map_err(|source| OutputError::Write {
                path: parent.clone(),
                source,
            })?;
        for (path, contents) in &self.files {
            let target = staging.path().join(path);
            if let Some(p) = target.parent() {
                fs::create_dir_all(p).map_err(|source| OutputError::Write {
                    path: dir.join(path),
                    source,
                })?;
            }
            fs::write(&target, contents).map_err(|source| OutputError::Write {
                path: dir.join(path),
                source,
            })?;
        }
        fs::write(staging.path().join(STAMP_FILE), STAMP).map_err(|source| OutputError::Write {
            path: dir.join(STAMP_FILE),
            source,
        })?;
        let staged = staging.keep();
        let swap = || -> Result<(), std::io::Error> {
            if dir.exists() {
                let old = tempfile::Builder::new()
                    .prefix(&format!(".{name}.olmpack-old-"))
                    .tempdir_in(&parent)?;
                let old_path = old.keep();
                fs::remove_dir(&old_path)?;
                fs::rename(dir, &old_path)?;
                if let Err(err) = fs::rename(&staged, dir) {
                    // Put the old directory back before reporting.
                    let _ = fs::rename(&old_path, dir);
                    return Err(err);
                }
                fs::remove_dir_all(&old_path)?;
            } else {
                fs::rename(&staged, dir)?;
            }
            Ok(())
        };
        swap().map_err(|source| {
            let _ = fs::remove_dir_all(&staged);
            OutputError::Write {
                path: dir.to_path_buf(),
                source,
            }
        })
    }

    /// Every difference between `dir` and this tree; empty when `dir` is up to date.
    pub fn check_against(&self, dir: &Path) -> Result<Vec<Drift>, OutputError> {
        let on_disk = read_tree(dir)?;
        let mut drifts = Vec::new();
        for (path, wanted) in &self.files {
            match on_disk.get(path) {
                None => drifts.push(Drift::Missing(path.clone())),
                Some(found) if found != wanted => drifts.push(Drift::Changed {
                    path: path.clone(),
                    diff: unified_diff(path, found, wanted),
                }),
                Some(_) => {}
            }
        }
        for path in on_disk.keys() {
            if !self.files.contains_key(path) && path != Path::new(STAMP_FILE) {
                drifts.push(Drift::Extra(path.clone()));
            }
        }
        Ok(drifts)
    }
}

/// Reads every regular file under `dir` (empty if `dir` does not exist), through the safe
/// reader ([`crate::input::read_tree`]); entries it refuses count as files that should not be
/// there (empty contents).
pub fn read_tree(dir: &Path) -> Result<BTreeMap<PathBuf, Vec<u8>>, OutputError> {
    if fs::symlink_metadata(dir).is_err() {
        return Ok(BTreeMap::new());
    }
    let tree = crate::input::read_tree(dir).map_err(|err| OutputError::Read {
        path: dir.to_path_buf(),
        source: std::io::Error::other(err.to_string()),
    })?;
    let mut files = tree.files;
    for refused in tree.refused {
        files.entry(refused.file).or_default();
    }
    Ok(files)
}

fn unified_diff(path: &Path, old: &[u8], new: &[u8]) -> String {
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    let shown = path.display().to_string();
    similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("a/{shown} (on disk)"),
            &format!("b/{shown} (generated)"),
        )
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> FileTree {
        let mut t = FileTree::new();
        for (p, c) in files {
            t.insert(*p, c.as_bytes()).unwrap();
        }
        t
    }

    #[test]
    fn write_replaces_the_whole_directory() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("bundle");
        tree(&[("a.yaml", "1\n"), ("sub/b.yaml", "2\n")])
            .write_to(&out)
            .unwrap();
        tree(&[("a.yaml", "3\n")]).write_to(&out).unwrap();
        assert_eq!(fs::read_to_string(out.join("a.yaml")).unwrap(), "3\n");
        assert!(!out.join("sub").exists());
        // Nothing but the output is left in the parent.
        let names: Vec<_> = fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("bundle")]);
    }

    #[test]
    fn check_lists_every_drift() {
        let root = tempfile::tempdir().unwrap();
        tree(&[("same", "x\n"), ("changed", "old\n"), ("extra", "e\n")])
            .write_to(root.path())
            .unwrap();
        let drifts = tree(&[("same", "x\n"), ("changed", "new\n"), ("missing", "m\n")])
            .check_against(root.path())
            .unwrap();
        assert_eq!(drifts.len(), 3);
        assert!(
            matches!(&drifts[0], Drift::Changed { diff, .. } if diff.contains("-old") && diff.contains("+new"))
        );
        assert_eq!(drifts[1], Drift::Missing("missing".into()));
        assert_eq!(drifts[2], Drift::Extra("extra".into()));
    }

    #[test]
    fn paths_may_not_escape() {
        let mut t = FileTree::new();
        assert!(t.insert("../x", "").is_err());
        assert!(t.insert("/etc/x", "").is_err());
        assert!(t.insert("a/./b", "").is_ok());
    }
}
