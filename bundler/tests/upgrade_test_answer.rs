//! One answer per edge: `olmpack upgrade test` carries `upgrade check`'s answer for the same
//! edge, so an edge OLM refuses is never "passed". The fixture's two releases differ only in
//! their Deployment's selector, which both OLMs refuse to change (the real OLM v0 and OLM v1
//! refuse it in `olm_e2e_broken.rs`); their CRD data upgrades cleanly, so the live run alone
//! would pass.

use std::path::{Path, PathBuf};
use std::process::Command;

use olmpack_envtest::binaries::Tool;
use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/olm_e2e/selector-change")
}

/// `olmpack upgrade test` on the fixture in `output`: exit code and stdout.
fn upgrade_test(output: &str) -> (Option<i32>, String) {
    let catalog = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture().join("package.json"),
        catalog.path().join("package.json"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["upgrade", "test", "--catalog"])
        .arg(catalog.path())
        .arg("--bundles")
        .arg(fixture().join("bundles"))
        .args(["--output", output])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    (out.status.code(), format!("{stdout}{stderr}"))
}

#[test]
fn upgrade_test_an_edge_both_olms_refuse_is_refused_and_says_what_each_answer_judged() {
    if !olmpack_testkit::tools::require(&[Tool::Etcd, Tool::KubeApiserver], "upgrade test") {
        return;
    }
    let (code, shown) = upgrade_test("json");
    let start = shown.find('[').unwrap_or_default();
    let reports: Vec<Value> = serde_json::Deserializer::from_str(&shown[start..])
        .into_iter()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("no JSON report:\n{shown}"));
    assert_eq!(code, Some(1), "{shown}");
    assert_eq!(reports.len(), 1, "{shown}");
    let report = &reports[0];
    assert_eq!(
        (&report["from"], &report["to"]),
        (
            &Value::from("selector.v1.0.0"),
            &Value::from("selector.v2.0.0")
        ),
        "{shown}"
    );
    assert_eq!(report["verdict"], "refused", "{shown}");
    assert_eq!(report["verdicts"]["live"], "passed", "{shown}");
    assert_eq!(report["verdicts"]["check"], "refused", "{shown}");
    assert_eq!(
        report["check"]["refusedBy"],
        serde_json::json!(["OLM v0", "OLM v1"]),
        "{shown}"
    );
    let rules: Vec<&str> = report["check"]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert_eq!(rules, ["upgrade/deployment-selector"], "{shown}");

    let (code, text) = upgrade_test("text");
    assert_eq!(code, Some(1), "{text}");
    for line in [
        "selector.v1.0.0 → selector.v2.0.0: refused",
        "  live (the CRD data, live on kube-apiserver): passed; upgrade check (OLM v0's and OLM v1's upgrade rules, statically (`upgrade check`)): refused by OLM v0 and OLM v1",
        "  upgrade check: error[upgrade/deployment-selector] ",
        "0 of 1 edge(s) passed",
    ] {
        assert!(text.contains(line), "no {line:?} in:\n{text}");
    }
}
