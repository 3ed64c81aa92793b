//! Shared by the `byo_operator` and `byo_release` tests: kubebuilder projects of the corpus,
//! copied, patched and built with Go into a build cache outside the checkout.
// Each test binary uses its own part.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// The corpus directory of the book projects' sources.
pub const BOOK: &str = "kubebuilder-5c40072/src";

/// Says NOT RUN loudly (a failure under `CI=true`) and returns `None`.
pub fn not_run<T>(test: &str, why: &str) -> Option<T> {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test}: {why} (required in CI)"
    );
    eprintln!("\n*** {test}: NOT RUN: {why} ***\n");
    None
}

/// The book projects' sources, or NOT RUN.
pub fn book(test: &str) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = std::env::var_os("OLMPACK_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/corpus"))
        .join(BOOK);
    if dir.join("multiversion-tutorial/go.mod").is_file() {
        Some(dir)
    } else {
        not_run(
            test,
            &format!("the kubebuilder book sources are not at {}", dir.display()),
        )
    }
}

/// `Some(())` when the test environment's binaries are found (else NOT RUN).
pub fn tools(test: &str) -> Option<()> {
    for tool in [
        olmpack_envtest::binaries::Tool::Etcd,
        olmpack_envtest::binaries::Tool::KubeApiserver,
    ] {
        if let Err(err) = tool.path() {
            return not_run(test, &err.to_string());
        }
    }
    Some(())
}

/// A copy of a Go project in a temp directory.
pub struct Project {
    pub name: String,
    pub dir: PathBuf,
    /// Run `go mod tidy` before building: kubebuilder's testdata trees carry no `go.sum`.
    pub tidy: bool,
}

impl Project {
    /// Copies `src` (without `bin/`) to `into/src/<name>`.
    pub fn copy(src: &Path, into: &Path, name: &str) -> Self {
        let dir = into.join("src").join(name);
        copy_tree(src, &dir);
        Self {
            name: name.to_owned(),
            dir,
            tidy: false,
        }
    }

    /// What a release of this project contributes next to the plan in `dir`:
    /// `<name>/install.yaml` (its `dist/install.yaml`) and `samples/<name>/` (its
    /// `config/samples/*.yaml` but the kustomization).
    pub fn release_inputs(&self, dir: &Path) {
        std::fs::create_dir_all(dir.join(&self.name)).unwrap();
        std::fs::copy(
            self.dir.join("dist/install.yaml"),
            dir.join(&self.name).join("install.yaml"),
        )
        .unwrap();
        let samples = dir.join("samples").join(&self.name);
        std::fs::create_dir_all(&samples).unwrap();
        for entry in std::fs::read_dir(self.dir.join("config/samples")).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_owned();
            if name != "kustomization.yaml" {
                std::fs::copy(&path, samples.join(name)).unwrap();
            }
        }
    }

    /// Replaces each `(old, new)` in `file`, which must occur exactly `count` times.
    pub fn patch(&mut self, file: &str, edits: &[(&str, &str)], count: usize) {
        let path = self.dir.join(file);
        let mut text = std::fs::read_to_string(&path).unwrap();
        for (old, new) in edits {
            assert_eq!(
                text.matches(old).count(),
                count,
                "{}: {old:?} not found {count} times",
                path.display()
            );
            text = text.replace(old, new);
        }
        std::fs::write(&path, text).unwrap();
    }

    /// The manager binary of this source tree (`go build ./cmd`), from the build cache when a
    /// build of the same sources is there; NOT RUN without Go.
    pub fn build(&self, test: &str) -> Option<PathBuf> {
        let go = match Command::new("go").arg("version").output() {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
            _ => return not_run(test, "Go is not installed (`go version` failed)"),
        };
        let cached = build_cache()
            .join(format!(
                "{}-{}",
                self.name,
                &source_hash(&self.dir, &go)[..16]
            ))
            .join("manager");
        if cached.is_file() {
            eprintln!(
                "{test}: {} manager from the build cache: {}",
                self.name,
                cached.display()
            );
            return Some(cached);
        }
        let started = std::time::Instant::now();
        let work = cached
            .parent()
            .unwrap()
            .with_extension(format!("tmp-{}", std::process::id()));
        if self.tidy {
            let status = Command::new("go")
                .args(["mod", "tidy"])
                .current_dir(&self.dir)
                .status()
                .unwrap();
            assert!(
                status.success(),
                "{test}: go mod tidy in {} failed",
                self.name
            );
        }
        let status = Command::new("go")
            .args(["build", "-o"])
            .arg(work.join("manager"))
            .arg("./cmd")
            .current_dir(&self.dir)
            .status()
            .unwrap();
        assert!(status.success(), "{test}: go build of {} failed", self.name);
        // Another test may have finished the same build meanwhile: either copy will do.
        if std::fs::rename(&work, cached.parent().unwrap()).is_err() {
            let _ = std::fs::remove_dir_all(&work);
        }
        eprintln!(
            "{test}: built the {} manager in {:.1?}: {}",
            self.name,
            started.elapsed(),
            cached.display()
        );
        Some(cached)
    }
}

/// Where built managers are kept: `$OLMPACK_GO_BUILD_CACHE`, else
/// `$XDG_CACHE_HOME/olmpack/go-builds`, else `~/.cache/olmpack/go-builds`.
pub fn build_cache() -> PathBuf {
    if let Some(dir) = std::env::var_os("OLMPACK_GO_BUILD_CACHE") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("olmpack/go-builds");
    }
    let home = std::env::var_os("HOME").expect("HOME is set");
    PathBuf::from(home).join(".cache/olmpack/go-builds")
}

/// SHA-256 of the Go version and every file of `dir` (sorted paths and contents).
fn source_hash(dir: &Path, go_version: &str) -> String {
    let mut files = Vec::new();
    list_files(dir, Path::new(""), &mut files);
    files.sort();
    let mut hash = Sha256::new();
    hash.update(go_version.as_bytes());
    for relative in files {
        let contents = std::fs::read(dir.join(&relative)).unwrap();
        hash.update(relative.to_string_lossy().as_bytes());
        hash.update([0]);
        hash.update((contents.len() as u64).to_le_bytes());
        hash.update(&contents);
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn list_files(root: &Path, relative: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(root.join(relative)).unwrap() {
        let entry = entry.unwrap();
        let path = relative.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            list_files(root, &path, out);
        } else {
            out.push(path);
        }
    }
}

fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "bin" {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dst.join(&name));
        } else {
            std::fs::copy(entry.path(), dst.join(&name)).unwrap();
        }
    }
}
