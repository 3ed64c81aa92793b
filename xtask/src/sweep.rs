//! After a test run: find what the run left behind, and end it.
//!
//! Test environments keep every file of theirs under the run's scratch directory (TMPDIR), and
//! every process they start names such a file on its command line. So a process whose command
//! line mentions the scratch directory after the run is a leak, and so is a directory whose
//! name starts with `olmpack-` left inside it.

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::Result;

/// Kills leaked processes and lists every leak found (processes and directories).
pub fn sweep(scratch: &Path) -> Result<Vec<String>> {
    let needle = scratch.to_string_lossy().into_owned();
    let me = std::process::id();
    let mut leaks = Vec::new();
    for entry in fs::read_dir("/proc")?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(raw) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmdline.contains(&needle) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            leaks.push(format!("process {pid}: {}", cmdline.trim()));
        }
    }
    if let Ok(entries) = fs::read_dir(scratch) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("olmpack-") {
                leaks.push(format!("directory {}", entry.path().display()));
            }
        }
    }
    Ok(leaks)
}
