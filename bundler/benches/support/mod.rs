//! Measuring a command's wall time and peak RSS with `/usr/bin/time`, shared by the benches.

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `program args` under `/usr/bin/time`, stdout discarded; returns (seconds, peak RSS
/// in MiB, success).
pub fn measure(program: &Path, args: &[&str]) -> (f64, f64, bool) {
    let out = Command::new("/usr/bin/time")
        .args(["-f", "TIME %e %M"])
        .arg(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("/usr/bin/time runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("TIME "))
        .unwrap_or_else(|| panic!("no timing from {}: {stderr}", program.display()));
    let mut parts = line.split_whitespace().skip(1);
    let secs: f64 = parts.next().unwrap().parse().unwrap();
    let kib: f64 = parts.next().unwrap().parse().unwrap();
    if !out.status.success() {
        // The start of the complaint: a refusal may list thousands of names.
        let start: String = stderr.trim().chars().take(400).collect();
        eprintln!("{} failed: {start}…", program.display());
    }
    (secs, kib / 1024.0, out.status.success())
}

/// Best wall time and highest RSS over `runs` runs; panics when a run fails.
pub fn best_of(runs: usize, program: &Path, args: &[&str]) -> (f64, f64) {
    let mut best = f64::MAX;
    let mut rss: f64 = 0.0;
    for _ in 0..runs {
        let (secs, mib, ok) = measure(program, args);
        assert!(
            ok,
            "{} {:?}… failed",
            program.display(),
            &args[..args.len().min(4)]
        );
        best = best.min(secs);
        rss = rss.max(mib);
    }
    (best, rss)
}

/// An environment variable parsed as a number, or `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
