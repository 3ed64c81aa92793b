//! Checks on the repository's own files with the real tools.

use std::path::{Path, PathBuf};
use std::process::Command;

use olmpack_envtest::binaries::Tool;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn actionlint(dir: &Path, files: &[PathBuf]) -> std::process::Output {
    let bin = Tool::Actionlint
        .path()
        .expect("actionlint is installed by cargo xtask setup");
    Command::new(bin)
        .arg("-no-color")
        .args(files)
        .current_dir(dir)
        .output()
        .expect("actionlint runs")
}

#[test]
fn workflows_pass_actionlint() {
    let root = workspace();
    let dir = root.join(".github/workflows");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the repository has .github/workflows")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no workflow files in {}", dir.display());
    let out = actionlint(&root, &files);
    assert!(
        out.status.success(),
        "actionlint found problems:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn actionlint_rejects_a_broken_workflow() {
    // Guards the test above: the linter must actually be able to fail.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken.yml");
    std::fs::write(
        &file,
        "on: push\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo ${{ github.nonexistent_context_value }}\n        uses: actions/checkout@v4\n",
    )
    .unwrap();
    let out = actionlint(dir.path(), &[file]);
    assert!(
        !out.status.success(),
        "actionlint accepted a broken workflow"
    );
}
