//! Deliberately broken operators (tests/fixtures/olm_e2e/) under the real OLM v0: each is
//! refused or fails exactly as OLM reports it, and olmpack's static checks predicted it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use olmpack::upgrade_olm::{self, CaseReport, RunOptions};
use upgrade_tests::Tool;
use upgrade_tests::olm::{Outcome, Timeouts};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/olm_e2e")
        .join(name)
}

/// The fixture's bundles rendered by the real `opm render`, next to its package and channel.
fn catalog(name: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("olmpack-olm-broken-")
        .tempdir()
        .unwrap();
    let catalog = dir.path().join("catalog");
    std::fs::create_dir_all(&catalog).unwrap();
    std::fs::copy(
        fixture(name).join("package.json"),
        catalog.join("package.json"),
    )
    .unwrap();
    let mut bundles: Vec<PathBuf> = std::fs::read_dir(fixture(name).join("bundles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    bundles.sort();
    let out = Command::new(Tool::Opm.path().unwrap())
        .arg("render")
        .args(&bundles)
        .args(["--output", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(catalog.join("bundles.json"), out.stdout).unwrap();
    dir
}

/// `olmpack bundle validate` on the fixture's bundle `version`: exit code and output.
fn validate(name: &str, version: &str) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["bundle", "validate"])
        .arg(fixture(name).join("bundles").join(version))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Runs the catalog's case that starts at `from` under OLM.
async fn run(name: &str, from: &str, step: Duration) -> CaseReport {
    let dir = catalog(name);
    let catalog = dir.path().join("catalog");
    let cases: Vec<_> = upgrade_olm::load_cases(&catalog, None)
        .unwrap()
        .into_iter()
        .filter(|c| c.from == from)
        .collect();
    assert_eq!(cases.len(), 1, "{cases:#?}");
    let options = RunOptions {
        timeouts: Timeouts { step },
        ..RunOptions::default()
    };
    let mut reports = upgrade_olm::run(&catalog, &cases, &options).await.unwrap();
    reports.pop().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn olm_e2e_broken_deployment_mounting_a_missing_secret_never_installs() {
    let (code, out) = validate("missing-secret", "1.0.0");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("error[csv/missing-volume-source]")
            && out.contains("the pod needs Secret webhook-server-cert"),
        "{out}"
    );

    let report = run("missing-secret", "mounts.v1.0.0", Duration::from_secs(45)).await;
    let Outcome::TimedOut {
        phase,
        reason,
        pods,
        ..
    } = &report.install.outcome
    else {
        panic!(
            "OLM should wait for the pods forever: {:#?}",
            report.install
        );
    };
    assert_eq!(
        (phase.as_str(), reason.as_str()),
        ("Installing", "InstallWaiting")
    );
    assert!(
        pods.iter().any(|p| p.contains(
            "FailedMount: MountVolume.SetUp failed for volume \"cert\" : secret \"webhook-server-cert\" not found"
        )),
        "{pods:#?}"
    );
    assert!(!report.failures().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn olm_e2e_broken_invalid_install_mode_is_refused() {
    let (code, out) = validate("invalid-install-mode", "1.0.0");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("error[csv/install-modes]")
            && out.contains("unknown install mode \"AllNamespace\""),
        "{out}"
    );

    let report = run(
        "invalid-install-mode",
        "modes.v1.0.0",
        Duration::from_secs(90),
    )
    .await;
    let Outcome::Refused {
        by,
        reason,
        message,
    } = &report.install.outcome
    else {
        panic!("OLM should refuse the CSV: {:#?}", report.install);
    };
    assert_eq!(by, "ClusterServiceVersion modes.v1.0.0");
    assert_eq!(reason, "UnsupportedOperatorGroup", "{message}");
    assert!(
        message.contains("AllNamespaces InstallModeType not supported"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn olm_e2e_broken_crd_dropping_a_stored_version_is_refused() {
    let report = run("stored-version", "stored.v1.0.0", Duration::from_secs(90)).await;
    assert!(
        matches!(report.install.outcome, Outcome::Succeeded { .. }),
        "{:#?}",
        report.install
    );
    let examples = report.examples.as_ref().unwrap();
    assert!(
        examples.iter().all(|e| e.refused.is_none()),
        "{examples:#?}"
    );
    let upgrade = report.upgrade.as_ref().expect("the upgrade ran");
    assert_eq!(upgrade.csv.as_deref(), Some("stored.v2.0.0"));
    let Outcome::Refused { by, message, .. } = &upgrade.outcome else {
        panic!("OLM should refuse the upgrade: {upgrade:#?}");
    };
    assert!(by.starts_with("InstallPlan "), "{by}");
    assert!(
        message.contains("v1alpha1") && message.contains("stored"),
        "{message}"
    );
}
