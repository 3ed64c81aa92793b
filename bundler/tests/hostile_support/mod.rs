//! Helpers for the hostile-input tests: run the CLI with a deadline, build hostile inputs
//! (FIFOs, symlink cycles, sparse files) in temp dirs, and prove nothing was written.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a run of the CLI did.
#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// Everything the run printed.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// Asserts the exit code, with the output on failure.
    pub fn expect(&self, code: i32, what: &str) -> &Self {
        assert_eq!(self.code, code, "{what}: exit code\n{}", self.all());
        self
    }

    /// Asserts the output contains `part`.
    pub fn says(&self, part: &str) -> &Self {
        assert!(
            self.all().contains(part),
            "output lacks {part:?}:\n{}",
            self.all()
        );
        self
    }

    /// Asserts the output uses none of the words that leak a library or Rust.
    pub fn in_our_words(&self) -> &Self {
        let all = self.all();
        for leak in [
            "DuplicateKeyPolicy",
            "from_str_multiple",
            "from_multiple",
            "expected struct",
            "budget breached",
            "os error",
            "\\u{",
            "panicked",
            "RUST_BACKTRACE",
        ] {
            assert!(!all.contains(leak), "output leaks {leak:?}:\n{all}");
        }
        self
    }
}

/// The olmpack binary under test.
pub fn olmpack() -> Command {
    Command::new(env!("CARGO_BIN_EXE_olmpack"))
}

/// Runs olmpack with `args` in `cwd`, under a memory limit (2 GiB of address space) and a
/// deadline: a hang or a crash fails the test instead of blocking it.
pub fn run(cwd: &Path, args: &[&str]) -> Outcome {
    run_with(cwd, args, Duration::from_secs(60))
}

/// [`run`] with another deadline.
pub fn run_with(cwd: &Path, args: &[&str], deadline: Duration) -> Outcome {
    run_env(cwd, args, &[], deadline)
}

/// [`run_with`] with more environment variables.
pub fn run_env(cwd: &Path, args: &[&str], env: &[(&str, &str)], deadline: Duration) -> Outcome {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 2097152; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_olmpack"))
        .args(args)
        .current_dir(cwd)
        .env_remove("SOURCE_DATE_EPOCH")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("olmpack runs");
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || read_all(stdout));
    let err = std::thread::spawn(move || read_all(stderr));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("olmpack {args:?} hung for more than {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let outcome = Outcome {
        code: status.code().unwrap_or(-1),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    assert!(
        outcome.code >= 0,
        "olmpack {args:?} was killed (crash or memory limit):\n{}",
        outcome.all()
    );
    outcome
}

fn read_all(mut r: impl std::io::Read) -> String {
    let mut bytes = Vec::new();
    let _ = r.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Creates a FIFO (named pipe) at `path`.
pub fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Creates a sparse file of `len` bytes (no disk space used).
pub fn sparse(path: &Path, len: u64) {
    std::fs::File::create(path).unwrap().set_len(len).unwrap();
}

pub fn write(path: &Path, text: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// One entry of a directory snapshot.
#[derive(Debug, PartialEq, Eq)]
pub enum Entry {
    File(Vec<u8>),
    Dir,
    Link(PathBuf),
    Other,
}

/// Everything under `dir` (not following symlinks, never opening a FIFO).
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(dir).unwrap().to_path_buf();
            let kind = if meta.file_type().is_symlink() {
                Entry::Link(std::fs::read_link(&path).unwrap())
            } else if meta.is_dir() {
                stack.push(path.clone());
                Entry::Dir
            } else if meta.is_file() && meta.len() < 1 << 20 {
                Entry::File(std::fs::read(&path).unwrap())
            } else {
                Entry::Other
            };
            out.insert(rel, kind);
        }
    }
    out
}

/// The example operator (plan, manifests, samples, icon) copied into `dir`.
pub fn example_into(dir: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("example");
    let mut stack = vec![source.clone()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                write(
                    &dir.join(path.strip_prefix(&source).unwrap()),
                    std::fs::read(&path).unwrap(),
                );
            }
        }
    }
}

/// A temp dir holding a copy of the example operator, and the plan's path in it.
pub fn example() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("olmpack-hostile-")
        .tempdir()
        .unwrap();
    example_into(dir.path());
    let plan = dir.path().join("olmpack.yaml");
    (dir, plan)
}

/// A fresh temp dir.
pub fn temp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("olmpack-hostile-")
        .tempdir()
        .unwrap()
}

/// A valid one-package catalog file.
pub const CATALOG: &str = "---
schema: olm.package
name: demo
defaultChannel: stable
---
schema: olm.channel
package: demo
name: stable
entries:
  - name: demo.v1.0.0
---
schema: olm.bundle
package: demo
name: demo.v1.0.0
image: quay.io/demo/demo-bundle:v1.0.0
properties:
  - type: olm.package
    value: {packageName: demo, version: 1.0.0}
";
