//! `cargo xtask test --timings`: every test's own time, and the ten slowest at the end.
//!
//! libtest reports a test's time only with `--report-time`, an unstable option of the stable
//! toolchain's harness. The test binaries (not the compiler, so nothing is rebuilt) are run
//! through a small runner script that allows it for them alone and names the binary first
//! (cargo hands rustdoc the same runner for doc tests).

use std::path::Path;

use anyhow::{Context, Result};

/// What the runner prints before a binary's output: `MARKER <binary path>`.
const MARKER: &str = "xtask-timings: binary";

/// Writes the runner script into `dir`; the variable that makes cargo run test binaries
/// through it, and its value.
pub fn runner(dir: &Path) -> Result<(String, std::ffi::OsString)> {
    std::fs::create_dir_all(dir)?;
    let host = host_triple()?;
    let key = format!(
        "CARGO_TARGET_{}_RUNNER",
        host.to_uppercase().replace(['-', '.'], "_")
    );
    let script = dir.join("report-time.sh");
    // The variable is unset for the test binary: a test that runs cargo itself (the
    // workflow test's `cargo xtask setup`) must not run its programs through this runner.
    let text = format!(
        "#!/bin/sh\n# Written by `cargo xtask test --timings`.\necho \"{MARKER} $1\"\nunset {key}\nRUSTC_BOOTSTRAP=1 exec \"$@\" -Z unstable-options --report-time\n"
    );
    std::fs::write(&script, text).with_context(|| format!("writing {}", script.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok((key, script.into_os_string()))
}

fn host_triple() -> Result<String> {
    let out = std::process::Command::new("rustc")
        .arg("-vV")
        .output()
        .context("running rustc -vV")?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .context("rustc -vV names no host")
}

/// One test's time.
#[derive(Debug, PartialEq)]
pub struct Timed {
    /// Seconds.
    pub seconds: f64,
    /// The test binary (its file name without cargo's hash).
    pub binary: String,
    /// The test.
    pub test: String,
}

/// The times seen in the test run's output.
#[derive(Debug, Default)]
pub struct Timings {
    binary: String,
    seen: Vec<Timed>,
}

impl Timings {
    /// Takes one line of output; whether it is the harness's (to be shown) rather than the
    /// runner's marker.
    pub fn observe(&mut self, line: &str) -> bool {
        if let Some(path) = line.strip_prefix(MARKER) {
            self.binary = binary_name(path.trim());
            return false;
        }
        if let Some((test, seconds)) = parse_result(line) {
            self.seen.push(Timed {
                seconds,
                binary: self.binary.clone(),
                test: test.to_owned(),
            });
        }
        true
    }

    /// The `n` slowest tests, slowest first.
    pub fn slowest(mut self, n: usize) -> Vec<Timed> {
        self.seen.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
        self.seen.truncate(n);
        self.seen
    }
}

/// `target/debug/deps/olm_shards-0123456789abcdef` → `olm_shards`.
fn binary_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    match file.rsplit_once('-') {
        Some((stem, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            stem.to_owned()
        }
        _ => file.to_owned(),
    }
}

/// `test NAME ... ok <1.234s>` → (NAME, 1.234).
fn parse_result(line: &str) -> Option<(&str, f64)> {
    let rest = line.strip_prefix("test ")?;
    let (name, outcome) = rest.split_once(" ... ")?;
    let time = outcome.trim_end().strip_suffix("s>")?;
    let (_, seconds) = time.rsplit_once('<')?;
    Some((name, seconds.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_read_with_their_binary() {
        let mut t = Timings::default();
        let lines = [
            "xtask-timings: binary /w/target/debug/deps/olm_shards-0123456789abcdef",
            "running 2 tests",
            "test merge_shards_writes_all_or_nothing ... ok <0.036s>",
            "test a::b ... FAILED <12.500s>",
            "test slow has been running for over 60 seconds",
            "test ignored_one ... ignored",
            "xtask-timings: binary /w/target/debug/deps/xtask-fedcba9876543210",
            "test layout::x ... ok <3.000s>",
        ];
        let shown: Vec<bool> = lines.iter().map(|l| t.observe(l)).collect();
        assert_eq!(shown, [false, true, true, true, true, true, false, true]);
        let slowest = t.slowest(2);
        assert_eq!(
            slowest,
            [
                Timed {
                    seconds: 12.5,
                    binary: "olm_shards".into(),
                    test: "a::b".into()
                },
                Timed {
                    seconds: 3.0,
                    binary: "xtask".into(),
                    test: "layout::x".into()
                },
            ]
        );
    }
}
