//! The real-world corpora for `realworld_` conformance tests, as `cargo xtask conformance`
//! unpacks them: `$OLMPACK_CORPUS_CACHE` (default `~/.cache/olmpack/corpus`) holds
//! `<name>/` and the stamp `<name>.stamp` written after a complete unpack.
//!
//! A test whose corpus is absent says so loudly ("NOT RUN") and returns; under `CI=true`
//! the corpus must be there, so its absence fails the test.

use std::path::PathBuf;

/// operator-framework/community-operators at 1591b5e (bundle and package-manifest formats).
pub const COMMUNITY_OPERATORS: &str = "community-operators-1591b5e";

/// kubebuilder's `testdata/project-v4` as released kubebuilder v4.0.0, v4.3.0, v4.8.0 and
/// v4.15.0 generated it: `<tag>/project-v4/`.
pub const KUBEBUILDER_RELEASES: &str = "kubebuilder-project-v4-releases";

/// The directory the corpora are unpacked into.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("OLMPACK_CORPUS_CACHE") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("olmpack/corpus"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/olmpack/corpus"))
}

/// The unpacked corpus `name`, when a complete unpack of it exists.
pub fn find(name: &str) -> Option<PathBuf> {
    let cache = cache_dir()?;
    let dir = cache.join(name);
    (dir.is_dir() && cache.join(format!("{name}.stamp")).is_file()).then_some(dir)
}

/// The unpacked corpus `name` for the test `test`; prints "NOT RUN" and returns `None` when
/// it is absent, and panics instead under `CI=true`.
pub fn require(name: &str, test: &str) -> Option<PathBuf> {
    if let Some(dir) = find(name) {
        return Some(dir);
    }
    let msg = format!(
        "{test}: NOT RUN: corpus {name} is not unpacked under {} (run `cargo xtask conformance`)",
        cache_dir().unwrap_or_default().display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{msg}; CI=true requires the corpus");
    }
    eprintln!("\n*** {msg} ***\n");
    None
}

/// Every `<tree>/<package>/<version>/` directory of the community-operators corpus, sorted;
/// `true` for the bundle format (`manifests/` and `metadata/`), `false` for a package manifest.
pub fn version_dirs(corpus: &std::path::Path) -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    for tree in ["community-operators", "upstream-community-operators"] {
        for pkg in sorted_dirs(&corpus.join(tree)) {
            for version in sorted_dirs(&pkg) {
                let bundle =
                    version.join("manifests").is_dir() && version.join("metadata").is_dir();
                out.push((version, bundle));
            }
        }
    }
    out
}

/// Every file below `dir` whose extension is one of `extensions`, sorted by path. An
/// unreadable directory fails the calling test: a corpus walk must not shrink silently.
pub fn files(dir: &std::path::Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    collect_files(dir, extensions, &mut out);
    out.sort();
    out
}

fn collect_files(dir: &std::path::Path, extensions: &[&str], out: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: cannot list: {e}", dir.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("{}: cannot list: {e}", dir.display()));
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            collect_files(&path, extensions, out);
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| extensions.contains(&e))
        {
            out.push(path);
        }
    }
}

fn sorted_dirs(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}
