//! Bundles olmpack did not make — operator-sdk's scaffold output, a hand-written bundle with
//! JSON manifests and properties.yaml — are read and judged like any other: valid ones pass,
//! and opm agrees they are bundles.

use std::path::{Path, PathBuf};
use std::process::Command;

use olmpack_envtest::binaries::Tool;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/bundles")
        .join(name)
}

fn validate(dir: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["bundle", "validate", "--output", "json"])
        .args(extra)
        .arg(dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        serde_json::from_slice(&out.stdout).unwrap(),
    )
}

fn rules(report: &serde_json::Value, severity: &str) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == severity)
        .map(|f| f["rule"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn other_tools_bundles_pass_and_opm_renders_them() {
    let opm = Tool::Opm
        .path()
        .expect("opm is installed by cargo xtask setup");
    for name in ["sdk-memcached", "hand-written-json"] {
        let dir = fixture(name);
        let (code, report) = validate(&dir, &[]);
        assert_eq!(code, 0, "{name}: {report:#}");
        assert!(rules(&report, "error").is_empty());
        let rendered = Command::new(&opm).arg("render").arg(&dir).output().unwrap();
        assert!(
            rendered.status.success(),
            "opm render {name}: {}",
            String::from_utf8_lossy(&rendered.stderr)
        );
    }
}

#[test]
fn the_sdk_scaffold_is_not_ready_for_operatorhub() {
    // operator-sdk scaffolds an empty icon; fine for OLM, not for publishing on OperatorHub.
    let (code, report) = validate(&fixture("sdk-memcached"), &[]);
    assert_eq!(code, 0);
    assert!(rules(&report, "warning").contains(&"operatorhub/icon".to_owned()));
    let (code, report) = validate(&fixture("sdk-memcached"), &["--operatorhub"]);
    assert_eq!(code, 1);
    assert_eq!(rules(&report, "error"), ["operatorhub/icon"]);
}

#[test]
fn an_older_cluster_target_turns_removed_api_errors_into_warnings() {
    let dir = tempfile::tempdir().unwrap();
    for (path, contents) in
        olmpack_oci::output::read_tree(&fixture("hand-written-json"), &Default::default()).unwrap()
    {
        let target = dir.path().join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, contents).unwrap();
    }
    std::fs::write(
        dir.path().join("manifests/pdb.yaml"),
        "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: memcached}\nspec: {minAvailable: 1}\n",
    )
    .unwrap();
    // Removed in 1.25: an error for the default target (1.37) ...
    let (code, report) = validate(dir.path(), &[]);
    assert_eq!(code, 1);
    assert_eq!(rules(&report, "error"), ["deprecated-api/removed"]);
    // ... a warning for a bundle aimed at 1.24 clusters (its minKubeVersion, 1.27, makes it an
    // error again, so lower that too).
    let csv_path = dir.path().join("manifests/csv.json");
    let csv = std::fs::read_to_string(&csv_path)
        .unwrap()
        .replace("\"1.27.0\"", "\"1.23.0\"");
    std::fs::write(&csv_path, csv).unwrap();
    let (code, report) = validate(dir.path(), &["--kube-version", "1.24"]);
    assert_eq!(code, 0, "{report:#}");
    assert!(rules(&report, "warning").contains(&"deprecated-api/removed".to_owned()));
}
