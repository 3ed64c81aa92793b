//! `olmpack release` gates on the same upgrade edges as `olmpack upgrade check`: the edges of
//! the new catalog and, from each head of the catalog published before, the edge to its new
//! head.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn olmpack() -> Command {
    Command::new(env!("CARGO_BIN_EXE_olmpack"))
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The reference operator's plan, with a catalog published before whose channels end at
/// 0.1.0 (and that bundle's directory): the new heads' edge from 0.1.0 to 1.0.1 is in no
/// channel of the new catalog, only in the move from the published head.
fn plan_after_an_old_head(dir: &Path) {
    let root = root();
    std::fs::copy(root.join("olmpack.yaml"), dir.join("olmpack.yaml")).unwrap();
    for part in ["deploy", "samples"] {
        copy_dir(
            &root.join("operator").join(part),
            &dir.join("operator").join(part),
        );
    }
    std::fs::copy(
        root.join("operator/icon.svg"),
        dir.join("operator/icon.svg"),
    )
    .unwrap();
    copy_dir(&root.join("bundle/0.1.0"), &dir.join("bundle/0.1.0"));
    let text = std::fs::read_to_string(root.join("catalog/webapp-operator/catalog.json")).unwrap();
    let mut kept = Vec::new();
    for doc in serde_json::Deserializer::from_str(&text).into_iter::<serde_json::Value>() {
        let mut doc = doc.unwrap();
        match doc["schema"].as_str() {
            Some("olm.channel") => {
                let entries = doc["entries"].as_array_mut().unwrap();
                entries.retain(|e| e["name"] == "webapp-operator.v0.1.0");
                entries[0] = serde_json::json!({"name": "webapp-operator.v0.1.0"});
            }
            Some("olm.bundle") if doc["name"] != "webapp-operator.v0.1.0" => continue,
            _ => {}
        }
        kept.push(serde_json::to_string_pretty(&doc).unwrap());
    }
    let catalog = dir.join("catalog/webapp-operator");
    std::fs::create_dir_all(&catalog).unwrap();
    std::fs::write(catalog.join("catalog.json"), kept.join("\n") + "\n").unwrap();
}

fn run(dir: &Path, args: &[&str]) -> Output {
    olmpack().args(args).current_dir(dir).output().unwrap()
}

/// The `error[…]` lines of a run's output, sorted.
fn errors(out: &Output) -> Vec<String> {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("error["))
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

#[test]
fn upgrade_request_release_checks_the_edge_from_a_published_head_as_upgrade_check_does() {
    let dir = tempfile::tempdir().unwrap();
    plan_after_an_old_head(dir.path());
    let check = run(dir.path(), &["upgrade", "check"]);
    let release = run(dir.path(), &["release", "--dry-run"]);
    let moved = "webapp-operator.v0.1.0 -> webapp-operator.v1.0.1:";
    let check_errors = errors(&check);
    assert_eq!(check.status.code(), Some(1), "{check_errors:#?}");
    assert!(
        check_errors.iter().any(|l| l.contains(moved)),
        "upgrade check judges the published head's move: {check_errors:#?}"
    );
    assert_eq!(
        release.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&release.stderr)
    );
    assert_eq!(errors(&release), check_errors);
    assert!(
        String::from_utf8_lossy(&release.stderr).contains("nothing written"),
        "a refused edge stops the release before anything is written"
    );
    assert!(!dir.path().join("release").join("catalog").exists());
}
