//! `cargo xtask test`'s runner: builds every test binary once, then runs several binaries at
//! once.
//!
//! `cargo test --workspace` runs its test binaries one after another, so a binary that mostly
//! waits (OLM installing real packages, a control plane starting) holds the whole suite up.
//! Here the binaries run in lanes: `--jobs N` of them at a time, longest first, each one
//! exactly as cargo would run it (its package directory as working directory, the same
//! harness arguments). A binary's output is shown whole when it ends, so lanes never
//! interleave their lines. Doc tests run last through cargo itself.
//!
//! Which binary is long comes from the last run's times, kept next to the tools
//! (`test-times.tsv`); before any run a short list of binaries known to be long goes first.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use serde::Deserialize;

use crate::timings::Timings;

/// Binaries known to take minutes, longest first: the order before any run has been timed.
const KNOWN_LONG: &[&str] = &[
    "olm_e2e_corpus",
    "byo_operator",
    "olm_v1_e2e_corpus",
    "release_pipeline_workflow",
    "byo_release",
    "realworld_render",
    "olm_e2e_broken",
    "bundle_consumers",
    "olm_e2e",
    "operator_load",
];

/// One test binary cargo built.
#[derive(Debug, Clone)]
pub struct TestBinary {
    /// The target's name (`olm_e2e_corpus`), or the package's for a library's unit tests.
    pub name: String,
    /// `lib`, `bin` or `test`.
    pub kind: String,
    pub executable: PathBuf,
    /// The package's directory: the working directory cargo gives its tests.
    pub package_dir: PathBuf,
}

impl TestBinary {
    /// `olmpack (test olm_e2e_corpus)`, as cargo names it in its output.
    pub fn label(&self) -> String {
        let package = self
            .package_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("{package} ({} {})", self.kind, self.name)
    }
}

/// What to give every test binary.
pub struct Harness {
    pub args: Vec<String>,
    pub env: Vec<(String, OsString)>,
    pub timings: bool,
}

/// How one binary ended.
#[derive(Debug)]
pub struct Outcome {
    pub binary: TestBinary,
    pub seconds: f64,
    pub passed: bool,
    /// Of a failed binary, what each failing test said when it panicked ([`panics`]),
    /// repeated at the very end of the run, where a truncated CI log still shows it.
    pub panics: Vec<String>,
}

/// The most lines [`panics`] keeps per binary.
const PANIC_LINES: usize = 80;

/// Each `panicked at` line of `output` with what follows it, up to the backtrace (or the
/// next test's section), at most [`PANIC_LINES`] lines in all.
pub fn panics(output: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in output.lines() {
        if line.contains("panicked at") {
            inside = true;
        } else if line.starts_with("stack backtrace:")
            || line.starts_with("note: run with")
            || line.starts_with("---- ")
        {
            inside = false;
        }
        if inside && out.len() < PANIC_LINES {
            out.push(line.to_owned());
        }
    }
    out
}

/// What cargo says about one artifact (`--message-format=json`), the fields read here.
#[derive(Deserialize)]
struct Message {
    reason: String,
    #[serde(default)]
    executable: Option<PathBuf>,
    #[serde(default)]
    manifest_path: Option<PathBuf>,
    #[serde(default)]
    target: Option<Target>,
    #[serde(default)]
    profile: Option<Profile>,
}

#[derive(Deserialize)]
struct Target {
    name: String,
    kind: Vec<String>,
}

#[derive(Deserialize)]
struct Profile {
    test: bool,
}

/// Builds every test binary of the workspace (`cargo test --workspace --no-run`), showing
/// cargo's progress and diagnostics; the binaries it built.
pub fn build(root: &Path, env: &[(String, OsString)]) -> Result<Vec<TestBinary>> {
    let mut cmd = Command::new(crate::cargo_bin());
    cmd.current_dir(root)
        .args(["test", "--workspace", "--no-run"])
        .arg("--message-format=json-render-diagnostics")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().context("running cargo test --no-run")?;
    let stdout = child.stdout.take().context("cargo's output")?;
    let mut binaries = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading cargo's output")?;
        if let Some(binary) = test_binary(&line) {
            binaries.push(binary);
        }
    }
    let status = child.wait().context("running cargo test --no-run")?;
    ensure!(status.success(), "building the tests failed ({status})");
    binaries.sort_by_key(TestBinary::label);
    binaries.dedup_by(|a, b| a.executable == b.executable);
    Ok(binaries)
}

/// The test binary one line of cargo's JSON output announces, if it announces one.
fn test_binary(line: &str) -> Option<TestBinary> {
    let message: Message = serde_json::from_str(line).ok()?;
    if message.reason != "compiler-artifact" || !message.profile?.test {
        return None;
    }
    let target = message.target?;
    Some(TestBinary {
        name: target.name,
        kind: target.kind.first().cloned().unwrap_or_default(),
        executable: message.executable?,
        package_dir: message.manifest_path?.parent()?.to_path_buf(),
    })
}

/// The times of the last run, by binary label.
pub fn load_times(file: &Path) -> BTreeMap<String, f64> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return BTreeMap::new();
    };
    text.lines()
        .filter_map(|l| l.split_once('\t'))
        .filter_map(|(secs, label)| Some((label.to_owned(), secs.parse().ok()?)))
        .collect()
}

/// Records this run's times (whole file replaced at once; a failed write only warns).
pub fn save_times(file: &Path, outcomes: &[Outcome]) {
    let mut text = String::new();
    for o in outcomes {
        text.push_str(&format!("{:.1}\t{}\n", o.seconds, o.binary.label()));
    }
    let staged = file.with_extension("tsv.new");
    let written = std::fs::write(&staged, text).and_then(|()| std::fs::rename(&staged, file));
    if let Err(e) = written {
        eprintln!(
            "xtask: warning: cannot record test times in {}: {e}",
            file.display()
        );
    }
}

/// Longest first: by the last run's time, else binaries known to be long, else by name.
pub fn order(mut binaries: Vec<TestBinary>, times: &BTreeMap<String, f64>) -> Vec<TestBinary> {
    let rank = |b: &TestBinary| -> (f64, usize) {
        let known = KNOWN_LONG
            .iter()
            .position(|n| *n == b.name && b.kind == "test")
            .unwrap_or(KNOWN_LONG.len());
        (times.get(&b.label()).copied().unwrap_or(0.0), known)
    };
    // Stable sort: equal ranks keep the name order `build` gave.
    binaries.sort_by(|a, b| {
        let (ta, ka) = rank(a);
        let (tb, kb) = rank(b);
        tb.total_cmp(&ta).then(ka.cmp(&kb))
    });
    binaries
}

/// Runs the binaries, `jobs` at a time; every binary's outcome, in the order they ended.
pub fn run(binaries: Vec<TestBinary>, jobs: usize, harness: &Harness) -> Vec<Outcome> {
    let queue = Mutex::new(VecDeque::from(binaries));
    let done = Mutex::new((Vec::new(), Timings::default()));
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| {
                while let Some(binary) = next(&queue) {
                    let (outcome, output) = run_one(binary, harness);
                    let mut done = done.lock().unwrap_or_else(|e| e.into_inner());
                    report(&outcome, &output, &mut done.1);
                    done.0.push(outcome);
                }
            });
        }
    });
    let (outcomes, timings) = done.into_inner().unwrap_or_else(|e| e.into_inner());
    if harness.timings {
        println!("xtask: the ten slowest tests:");
        for t in timings.slowest(10) {
            println!("{:>9.1} s  {}  {}", t.seconds, t.binary, t.test);
        }
    }
    outcomes
}

fn next(queue: &Mutex<VecDeque<TestBinary>>) -> Option<TestBinary> {
    queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front()
}

/// Runs one binary as cargo would; its outcome and its whole output (stderr after stdout).
fn run_one(binary: TestBinary, harness: &Harness) -> (Outcome, String) {
    eprintln!("xtask: started {}", binary.label());
    let started = Instant::now();
    let mut cmd = Command::new(&binary.executable);
    cmd.current_dir(&binary.package_dir)
        .env("CARGO_MANIFEST_DIR", &binary.package_dir)
        .env("CARGO", crate::cargo_bin())
        .envs(harness.env.iter().map(|(k, v)| (k, v)))
        .args(&harness.args);
    if harness.timings {
        // `--report-time` is unstable in the stable toolchain's harness; allow it here only.
        cmd.env("RUSTC_BOOTSTRAP", "1")
            .args(["-Z", "unstable-options", "--report-time"]);
    }
    let (passed, output) = match cmd.output() {
        Ok(out) => {
            let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            (out.status.success(), text)
        }
        Err(e) => (
            false,
            format!("cannot run {}: {e}\n", binary.executable.display()),
        ),
    };
    let seconds = started.elapsed().as_secs_f64();
    let outcome = Outcome {
        binary,
        seconds,
        passed,
        panics: if passed { Vec::new() } else { panics(&output) },
    };
    (outcome, output)
}

/// Shows one finished binary: a header line, then its output as the harness wrote it.
fn report(outcome: &Outcome, output: &str, timings: &mut Timings) {
    println!(
        "\n── {} ({}, {:.1} s) ──",
        outcome.binary.label(),
        if outcome.passed { "ok" } else { "FAILED" },
        outcome.seconds
    );
    timings.binary(&outcome.binary.name);
    for line in output.lines() {
        timings.observe(line);
        println!("{line}");
    }
}

/// Runs the doc tests through cargo (rustdoc builds them); whether they passed.
pub fn doc_tests(root: &Path, harness: &Harness) -> Result<bool> {
    let mut cmd = Command::new(crate::cargo_bin());
    cmd.current_dir(root)
        .args(["test", "--workspace", "--doc"])
        .envs(harness.env.iter().map(|(k, v)| (k, v)));
    if !harness.args.is_empty() {
        cmd.arg("--").args(&harness.args);
    }
    let status = cmd.status().context("running cargo test --doc")?;
    Ok(status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_keeps_each_panic_up_to_its_backtrace() {
        let output = "running 2 tests\n\
            test a ... FAILED\n\
            ---- a stdout ----\n\
            noise\n\
            thread 'a' (7) panicked at x.rs:1:2:\n\
            expected 1, got 2\n\
            stack backtrace:\n\
            0: frame\n\
            ---- b stdout ----\n\
            thread 'b' (8) panicked at y.rs:3:4:\n\
            boom\n\
            note: run with `RUST_BACKTRACE=1`\n\
            failures:\n";
        assert_eq!(
            panics(output),
            [
                "thread 'a' (7) panicked at x.rs:1:2:",
                "expected 1, got 2",
                "thread 'b' (8) panicked at y.rs:3:4:",
                "boom"
            ]
        );
        let long = "thread 't' panicked at z.rs:1:1:\n".to_owned() + &"line\n".repeat(200);
        assert_eq!(panics(&long).len(), PANIC_LINES);
    }

    fn bin(name: &str, kind: &str) -> TestBinary {
        TestBinary {
            name: name.into(),
            kind: kind.into(),
            executable: PathBuf::from(format!("/t/{name}")),
            package_dir: PathBuf::from("/w/bundler"),
        }
    }

    #[test]
    fn cargo_announces_test_binaries_and_nothing_else() {
        let test = r#"{"reason":"compiler-artifact","manifest_path":"/w/bundler/Cargo.toml","target":{"name":"olm_shards","kind":["test"]},"profile":{"test":true},"executable":"/w/target/debug/deps/olm_shards-0123"}"#;
        let lib = r#"{"reason":"compiler-artifact","manifest_path":"/w/bundler/Cargo.toml","target":{"name":"olmpack","kind":["lib"]},"profile":{"test":false},"executable":null}"#;
        let done = r#"{"reason":"build-finished","success":true}"#;
        let found = test_binary(test).expect("a test binary");
        assert_eq!(found.name, "olm_shards");
        assert_eq!(found.kind, "test");
        assert_eq!(found.package_dir, PathBuf::from("/w/bundler"));
        assert_eq!(
            found.executable,
            PathBuf::from("/w/target/debug/deps/olm_shards-0123")
        );
        assert!(test_binary(lib).is_none());
        assert!(test_binary(done).is_none());
        assert!(test_binary("Compiling olmpack").is_none());
    }

    #[test]
    fn longest_first_by_last_run_then_known_long_then_name() {
        let binaries = vec![
            bin("a_quick", "test"),
            bin("bundle_consumers", "test"),
            bin("olm_e2e_corpus", "test"),
            bin("timed", "test"),
        ];
        let none = BTreeMap::new();
        let names = |v: Vec<TestBinary>| v.into_iter().map(|b| b.name).collect::<Vec<_>>();
        assert_eq!(
            names(order(binaries.clone(), &none)),
            ["olm_e2e_corpus", "bundle_consumers", "a_quick", "timed"]
        );
        let times = BTreeMap::from([
            ("bundler (test timed)".to_owned(), 900.0),
            ("bundler (test olm_e2e_corpus)".to_owned(), 600.0),
        ]);
        assert_eq!(
            names(order(binaries, &times)),
            ["timed", "olm_e2e_corpus", "bundle_consumers", "a_quick"]
        );
    }

    #[test]
    fn times_survive_a_round_trip_through_their_file() {
        let dir = std::env::temp_dir().join(format!("xtask-times-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("test-times.tsv");
        let outcomes = vec![Outcome {
            binary: bin("olm_e2e_corpus", "test"),
            seconds: 627.54,
            passed: true,
            panics: Vec::new(),
        }];
        save_times(&file, &outcomes);
        let times = load_times(&file);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            times,
            BTreeMap::from([("bundler (test olm_e2e_corpus)".to_owned(), 627.5)])
        );
    }
}
