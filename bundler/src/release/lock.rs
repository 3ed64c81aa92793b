//! One `olmpack release` at a time per `--out`, and what an interrupted run left there.
//!
//! Contract:
//! - [`OutLock::acquire`] takes an exclusive advisory lock (`flock`) on the `--out` directory
//!   itself, so it leaves no file behind and the kernel drops it when the process ends, even
//!   when killed. A second run into the same `--out` fails at once, naming the directory,
//!   before it reads or writes anything there.
//! - [`remove_leftovers`] (called with the lock held, so no other run owns them) removes the
//!   staging directories an interrupted run leaves: `.release-staging-*` and the
//!   `.<dir>.olmpack-new-*` / `.<dir>.olmpack-old-*` siblings a generated tree is swapped
//!   through. Nothing else is touched.

use std::fs::{self, File, TryLockError};
use std::path::{Path, PathBuf};

/// Prefix of the staging directory of one run, under `--out`.
pub const STAGING_PREFIX: &str = ".release-staging-";

/// `--out` could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another run holds the lock.
    #[error(
        "{out}: another `olmpack release` is writing to this directory now; nothing was done (wait for it to finish, or give another --out)"
    )]
    Busy {
        /// The `--out` directory.
        out: PathBuf,
    },
    /// The directory could not be opened or locked.
    #[error("{out}: cannot lock the output directory: {problem}")]
    Io {
        /// The `--out` directory.
        out: PathBuf,
        /// Why, in our words.
        problem: String,
    },
}

/// Never about the input olmpack reads: a failure to do the job (exit 2).
impl crate::refusal::Refusal for LockError {
    fn refuses_input(&self) -> bool {
        false
    }
}

/// The lock on one `--out` directory; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct OutLock {
    _dir: File,
}

impl OutLock {
    /// Locks `out` (which must exist), or fails at once if another run holds it.
    pub fn acquire(out: &Path) -> Result<OutLock, LockError> {
        let io = |e: std::io::Error| LockError::Io {
            out: out.to_owned(),
            problem: olmpack_oci::input::describe_io(&e),
        };
        let dir = File::open(out).map_err(io)?;
        match dir.try_lock() {
            Ok(()) => Ok(OutLock { _dir: dir }),
            Err(TryLockError::WouldBlock) => Err(LockError::Busy {
                out: out.to_owned(),
            }),
            Err(TryLockError::Error(e)) => Err(io(e)),
        }
    }
}

/// Whether `name` (an entry of `--out`) is a staging directory of some run.
fn is_leftover(name: &str) -> bool {
    if name.starts_with(STAGING_PREFIX) {
        return true;
    }
    let Some(rest) = name.strip_prefix('.') else {
        return false;
    };
    rest.contains(".olmpack-new-") || rest.contains(".olmpack-old-")
}

/// Removes what interrupted runs left in `out` (module contract), except `keep` (this run's
/// own staging directory, matched by name); returns the names removed, sorted. Call it with
/// the lock held.
pub fn remove_leftovers(out: &Path, keep: &Path) -> std::io::Result<Vec<String>> {
    let mut removed = Vec::new();
    for entry in fs::read_dir(out)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        // Only real directories: a symlink named like one is not ours to follow.
        let own = keep.file_name() == Some(entry.file_name().as_os_str());
        if !is_leftover(&name) || own || !entry.file_type()?.is_dir() {
            continue;
        }
        fs::remove_dir_all(&path)?;
        removed.push(name);
    }
    removed.sort();
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftovers_are_the_staging_directories_only() {
        for (name, leftover) in [
            (".release-staging-Ab12", true),
            (".bundle.olmpack-new-x1", true),
            (".catalog.olmpack-old-x2", true),
            ("bundle", false),
            ("release-state.json", false),
            (".olmpack-generated", false),
            ("bundle.olmpack-new-x", false),
        ] {
            assert_eq!(is_leftover(name), leftover, "{name}");
        }
    }

    #[test]
    fn a_second_lock_on_the_same_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let first = OutLock::acquire(dir.path()).unwrap();
        let err = OutLock::acquire(dir.path()).unwrap_err();
        assert!(matches!(err, LockError::Busy { .. }), "{err}");
        drop(first);
        OutLock::acquire(dir.path()).unwrap();
    }
}
