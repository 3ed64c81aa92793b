//! What killed runs leave behind: the temp directories olmpack stages in (a pulled image in
//! `$TMPDIR`, a layout being written next to its destination) are removed when a run ends,
//! but not when it is killed. Each such directory holds an owner marker ([`MARKER`]) naming
//! the process that made it — its pid and that process's start time — and a later run
//! removes a directory of the same kind only when its marker names a process that no longer
//! exists.
//!
//! Contract:
//! - **Never by name alone.** A directory is removed only when it is a directory (not a link),
//!   its name starts with the prefix of its kind, and it holds a marker (a regular file) whose
//!   process is gone. A directory without a marker, or with a marker of a live process, is
//!   left alone.
//! - **A reused pid is not a live owner.** The marker records the process's start time (field
//!   22 of `/proc/<pid>/stat`); a process with the same pid and another start time is another
//!   process, so the directory is removed.
//! - **Where processes cannot be asked** (no `/proc`), nothing is removed.
//! - **Best effort.** Sweeping never fails a run: a directory that cannot be removed is left
//!   (and logged).
#![warn(missing_docs)]

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The owner marker's file name inside a staging directory.
pub const MARKER: &str = ".olmpack-owner";

/// The most a marker file may hold; anything larger is not olmpack's.
const MARKER_MAX: u64 = 256;

/// The start time of process `pid` (clock ticks since boot), from `/proc/<pid>/stat`; `None`
/// when there is no such process or no `/proc`.
fn start_time(pid: &str) -> Option<u64> {
    let stat = fs::read_to_string(Path::new("/proc").join(pid).join("stat")).ok()?;
    // `pid (comm) state …`: comm may hold spaces and parentheses; fields follow the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    // After the comm come fields 3, 4, …; the start time is field 22.
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Writes this process's owner marker into `dir`.
pub fn mark(dir: &Path) -> io::Result<()> {
    let pid = std::process::id().to_string();
    let start = start_time(&pid).unwrap_or(0);
    fs::write(
        dir.join(MARKER),
        format!("olmpack pid {pid} start {start}\n"),
    )
}

/// Removes `dir`'s owner marker (before the directory becomes a result of its own).
pub fn unmark(dir: &Path) -> io::Result<()> {
    fs::remove_file(dir.join(MARKER))
}

/// Whether `dir` holds an owner marker whose process is gone (module contract).
fn owner_gone(dir: &Path) -> bool {
    let marker = dir.join(MARKER);
    let regular = fs::symlink_metadata(&marker).is_ok_and(|m| m.is_file() && m.len() <= MARKER_MAX);
    let Some(text) = regular.then(|| fs::read_to_string(&marker).ok()).flatten() else {
        return false;
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    let ["olmpack", "pid", pid, "start", start] = words.as_slice() else {
        return false;
    };
    if pid.parse::<u32>().is_err() || start_time("self").is_none() {
        return false;
    }
    start_time(pid).is_none_or(|now| now.to_string() != *start)
}

/// Removes every directory in `parent` whose name starts with `prefix` and whose owner marker
/// names a process that is gone (module contract); returns what it removed.
pub fn sweep(parent: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let named = entry.file_name().to_string_lossy().starts_with(prefix);
        let is_dir = fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if !(named && is_dir && owner_gone(&path)) {
            continue;
        }
        match fs::remove_dir_all(&path) {
            Ok(()) => removed.push(path),
            Err(err) => tracing::warn!(
                path = %path.display(),
                problem = %crate::input::describe_io(&err),
                "could not remove what a killed olmpack run left"
            ),
        }
    }
    removed.sort();
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_directories_of_gone_owners_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id().to_string();
        let started = start_time(&me).unwrap();
        let dead = {
            let mut child = std::process::Command::new("true").spawn().unwrap();
            let pid = child.id();
            child.wait().unwrap();
            pid
        };
        let rows = [
            ("dead", Some(format!("olmpack pid {dead} start 1\n")), true),
            (
                "live",
                Some(format!("olmpack pid {me} start {started}\n")),
                false,
            ),
            (
                "reused",
                Some(format!("olmpack pid {me} start {}\n", started + 1)),
                true,
            ),
            ("unmarked", None, false),
            ("garbage", Some("pid 1 start x\n".to_owned()), false),
        ];
        for (name, marker, _) in &rows {
            let path = dir.path().join(format!(".x.tmp-{name}"));
            fs::create_dir_all(path.join("blobs")).unwrap();
            if let Some(marker) = marker {
                fs::write(path.join(MARKER), marker).unwrap();
            }
        }
        // Same marker, another name: not of this kind.
        let other = dir.path().join("other");
        fs::create_dir(&other).unwrap();
        fs::write(other.join(MARKER), format!("olmpack pid {dead} start 1\n")).unwrap();
        let removed = sweep(dir.path(), ".x.tmp-");
        let expected: Vec<PathBuf> = rows
            .iter()
            .filter(|(_, _, gone)| *gone)
            .map(|(name, _, _)| dir.path().join(format!(".x.tmp-{name}")))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(removed, expected);
        for (name, _, gone) in rows {
            assert_eq!(
                dir.path().join(format!(".x.tmp-{name}")).exists(),
                !gone,
                "{name}"
            );
        }
        assert!(other.exists());
    }
}
