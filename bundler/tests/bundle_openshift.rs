//! `olmpack bundle validate --platform openshift-4.N`: OpenShift's own version gates on a
//! bundle, judged against release 4.N (fixture `tests/fixtures/bundles/openshift-gates`:
//! operator-sdk's memcached bundle with `com.redhat.openshift.versions: v4.16` and
//! `olm.maxOpenShiftVersion: "4.16"`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bundles/openshift-gates")
}

/// Exit code, and the `openshift/` findings as `severity[rule] file: field: message`.
fn validate(extra: &[&str]) -> (i32, Vec<String>) {
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["bundle", "validate", "--output", "json"])
        .args(extra)
        .arg(fixture())
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"].as_str().unwrap().starts_with("openshift/"))
        .map(|f| {
            format!(
                "{}[{}] {}: {}: {}",
                f["severity"].as_str().unwrap(),
                f["rule"].as_str().unwrap(),
                f["file"].as_str().unwrap(),
                f["field"].as_str().unwrap(),
                f["message"].as_str().unwrap()
            )
        })
        .collect();
    (out.status.code().unwrap(), findings)
}

fn blocked(current: u64) -> String {
    format!(
        "warning[openshift/max-version] metadata/properties.yaml: properties[0]: OpenShift 4.{current}'s OLM blocks upgrades of the cluster to 4.{} while memcached-operator.v0.0.1 is installed: its olm.maxOpenShiftVersion is 4.16; the operator-lifecycle-manager ClusterOperator reports Upgradeable=False (IncompatibleOperatorsInstalled): \"maximum supported OCP version for <namespace>/memcached-operator.v0.0.1 is 4.16\"",
        current + 1
    )
}

#[test]
fn without_a_platform_openshifts_gates_are_not_judged() {
    assert_eq!(validate(&[]), (0, vec![]));
}

#[test]
fn each_release_is_told_whether_its_catalog_carries_the_bundle_and_whether_upgrades_are_blocked() {
    let left_out = "warning[openshift/catalog] metadata/annotations.yaml: com.redhat.openshift.versions: OpenShift's catalog for 4.14 does not carry the bundle: \"v4.16\" names 4.16 and later";
    assert_eq!(
        validate(&["--platform", "openshift-4.14"]),
        (0, vec![left_out.to_owned()])
    );
    assert_eq!(validate(&["--platform", "openshift-4.15"]).1.len(), 1);
    assert_eq!(
        validate(&["--platform", "openshift-4.16"]),
        (0, vec![blocked(16)])
    );
    assert_eq!(
        validate(&["--platform", "openshift-4.17"]),
        (0, vec![blocked(17)])
    );
}

#[test]
fn a_kubernetes_platform_is_refused_with_the_flag_to_use() {
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["bundle", "validate", "--platform", "kubernetes"])
        .arg(fixture())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("\"kubernetes\": bundle validate judges only OpenShift releases by --platform (openshift, openshift-4.N); name a Kubernetes version with --kube-version"),
        "{stderr}"
    );
}

/// `upgrade olm --plan … --platform openshift-4.N` judges the plan's
/// `com.redhat.openshift.versions` bundle label by the same rule (fixture
/// `tests/fixtures/openshift-gates-plan`: `v4.16-v4.18`); `--list` starts no cluster.
#[test]
fn upgrade_olm_says_when_the_plans_bundles_are_not_in_the_releases_catalog() {
    let plan = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/openshift-gates-plan/olmpack.yaml");
    let list = |platform: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
            .args(["upgrade", "olm", "--list", "--platform", platform, "--plan"])
            .arg(&plan)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "demo\tdemo.v1.0.0 [stable] (AllNamespaces)\n"
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert_eq!(
        list("openshift-4.14"),
        format!(
            "warning[platform]: {}: bundleLabels.com.redhat.openshift.versions: OpenShift's catalog for 4.14 does not carry the bundle: \"v4.16-v4.18\" names 4.16 to 4.18\n",
            plan.display()
        )
    );
    assert_eq!(list("openshift-4.17"), "");
    assert_eq!(list("kubernetes"), "");
}
