//! One answer per edge: `olmpack upgrade test` carries `upgrade check`'s answer for the same
//! edge, so an edge OLM refuses is never "passed". The fixture's two releases differ only in
//! their Deployment's selector, which both OLMs refuse to change (the real OLM v0 and OLM v1
//! refuse it in `olm_e2e_broken.rs`); their CRD data upgrades cleanly, so the live run alone
//! would pass.

use std::path::{Path, PathBuf};
use std::process::Command;

use olmpack_envtest::binaries::{KubeMinor, Tool};
use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/olm_e2e/selector-change")
}

/// `olmpack upgrade test` on the fixture in `output`: exit code and stdout.
fn upgrade_test(output: &str) -> (Option<i32>, String) {
    upgrade_test_with(&["--output", output], |_| {})
}

/// `olmpack upgrade test` on the fixture with `args`, its command adjusted by `adjust`: exit
/// code, stdout then stderr.
fn upgrade_test_with(args: &[&str], adjust: impl FnOnce(&mut Command)) -> (Option<i32>, String) {
    let catalog = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture().join("package.json"),
        catalog.path().join("package.json"),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_olmpack"));
    cmd.args(["upgrade", "test", "--catalog"])
        .arg(catalog.path())
        .arg("--bundles")
        .arg(fixture().join("bundles"))
        .args(args);
    adjust(&mut cmd);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    (out.status.code(), format!("{stdout}{stderr}"))
}

/// The JSON report array in `shown` (stdout then stderr); panics showing it when there is none.
fn json_reports(shown: &str) -> Vec<Value> {
    let start = shown.find('[').unwrap_or_default();
    serde_json::Deserializer::from_str(&shown[start..])
        .into_iter()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("no JSON report:\n{shown}"))
}

#[test]
fn upgrade_test_an_edge_both_olms_refuse_is_refused_and_says_what_each_answer_judged() {
    if !olmpack_testkit::tools::require(&[Tool::Etcd, Tool::KubeApiserver], "upgrade test") {
        return;
    }
    let (code, shown) = upgrade_test("json");
    let reports = json_reports(&shown);
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

/// `--platform kubernetes-1.27` runs the edge on Kubernetes 1.27's own apiserver, and the
/// report says so; the default names its own minor.
#[test]
fn upgrade_test_runs_on_the_kubernetes_minor_asked_for_and_says_which() {
    let old = KubeMinor::of(27).expect("tools.toml pins Kubernetes 1.27");
    for minor in [KubeMinor::default(), old] {
        if !olmpack_testkit::tools::require_kubernetes(minor, "upgrade test --platform") {
            continue;
        }
        let platform = format!("kubernetes-{minor}");
        let (code, shown) =
            upgrade_test_with(&["--platform", &platform, "--output", "json"], |_| {});
        assert_eq!(code, Some(1), "{shown}");
        let reports = json_reports(&shown);
        assert_eq!(
            reports[0]["platform"],
            format!("Kubernetes {minor} (kube-apiserver {})", minor.version()),
            "{shown}"
        );
        assert_eq!(reports[0]["verdicts"]["live"], "passed", "{shown}");
    }
    // OpenShift 4.14's CRDs are Kubernetes 1.27's: the edge runs there, and the report says
    // which OpenShift release asked for it.
    if olmpack_testkit::tools::require_kubernetes(old, "upgrade test --platform openshift-4.14") {
        let args = ["--platform", "openshift-4.14", "--output", "json"];
        let (code, shown) = upgrade_test_with(&args, |_| {});
        assert_eq!(code, Some(1), "{shown}");
        let reports = json_reports(&shown);
        assert_eq!(
            reports[0]["platform"],
            format!(
                "OpenShift 4.14 on Kubernetes 1.27 (kube-apiserver {})",
                old.version()
            ),
            "{shown}"
        );
    }
}

/// A pinned minor whose tools are not installed is an error before any edge runs, naming
/// the minor and how to get it (no real tool needed: kubebuilder's envtest binaries stand in
/// for the default minor's).
#[test]
fn upgrade_test_on_a_minor_that_is_not_installed_says_how_to_get_it() {
    let home = tempfile::tempdir().unwrap();
    let assets = home.path().join("envtest");
    std::fs::create_dir_all(&assets).unwrap();
    for binary in ["etcd", "kube-apiserver"] {
        use std::os::unix::fs::PermissionsExt as _;
        let path = assets.join(binary);
        std::fs::write(&path, "#!/bin/sh\nexit 1\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (code, shown) = upgrade_test_with(&["--platform", "kubernetes-1.27"], |cmd| {
        cmd.env_clear()
            .env("PATH", "/nonexistent")
            .env("HOME", home.path())
            .env("KUBEBUILDER_ASSETS", &assets);
    });
    assert_eq!(code, Some(2), "{shown}");
    for words in [
        "kube-apiserver of Kubernetes 1.27 (v1.27.",
        "is not installed",
        "`cargo xtask setup`",
    ] {
        assert!(shown.contains(words), "no {words:?} in:\n{shown}");
    }
    let (code, shown) = upgrade_test_with(&["--platform", "kubernetes-1.2"], |_| {});
    assert_eq!(code, Some(2), "{shown}");
    assert!(
        shown.contains("olmpack pins these Kubernetes minors"),
        "{shown}"
    );
    let (code, shown) = upgrade_test_with(&["--platform", "openshift-4.16"], |_| {});
    assert_eq!(code, Some(2), "{shown}");
    assert!(
        shown.contains(
            "--platform openshift-4.16: `upgrade test` runs on the Kubernetes minor an OpenShift release ships, and olmpack does not pin OpenShift 4.16's (1.29); pinned: kubernetes-1.27 (OpenShift 4.14), kubernetes-1.35 (OpenShift 4.22), kubernetes-1.37"
        ),
        "{shown}"
    );
}
