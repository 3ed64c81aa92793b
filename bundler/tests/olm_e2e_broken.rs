//! Deliberately broken operators (tests/fixtures/olm_e2e/) under the real OLM v0: each is
//! refused or fails exactly as OLM reports it, and olmpack's static checks predicted it: the
//! error rules of `olmpack bundle validate` (install) and `olmpack upgrade check` (upgrade)
//! give the same verdict OLM gave, both ways (an error exactly where OLM refused or failed).
//! One operator is broken only off its platform: its CSV needs OpenShift's API kinds. One is
//! broken only when it runs: its manager exits on a certificate no volume provides, which
//! `bundle validate` can only warn about and the real OLM v0 and v1 install as if it ran —
//! olmpack's process in place of its pod makes it a crash loop under both.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use olmpack::upgrade::olm::platform::Platform;
use olmpack::upgrade::olm::{self, CaseReport, OlmVersion, RunOptions};
use olmpack_envtest::binaries::Tool;
use olmpack_envtest::olm::{Outcome, Timeouts, WebhookCommand};
use olmpack_model::upgrade::Verdict;
use olmpack_oci::input::Limits;

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

/// The error rules of one run of olmpack with `--output json` (exit 1 exactly when any).
fn error_rules(args: &[&str], path: &Path) -> BTreeSet<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let report: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{args:?}: {e}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let rules: BTreeSet<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| f["rule"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        out.status.code(),
        Some(i32::from(!rules.is_empty())),
        "{text}"
    );
    rules
}

/// What olmpack's static checks predict for a fixture: the error rules of `bundle validate`
/// per bundle version (the install), and of `upgrade check` on the catalog (the upgrades).
#[derive(Debug)]
struct Predicted {
    install: std::collections::BTreeMap<String, BTreeSet<String>>,
    upgrade: BTreeSet<String>,
}

fn predicted(name: &str, catalog: &Path) -> Predicted {
    let bundles = fixture(name).join("bundles");
    let mut install = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(&bundles).unwrap() {
        let dir = entry.unwrap().path();
        let version = dir.file_name().unwrap().to_string_lossy().into_owned();
        install.insert(
            version,
            error_rules(&["bundle", "validate", "--output", "json"], &dir),
        );
    }
    let upgrade = error_rules(
        &[
            "upgrade",
            "check",
            "--output",
            "json",
            "--bundles",
            bundles.to_str().unwrap(),
            "--catalog",
        ],
        catalog,
    );
    Predicted { install, upgrade }
}

/// OLM refused or failed the step (anything but `Succeeded`).
fn olm_refused(outcome: &Outcome) -> bool {
    !matches!(outcome, Outcome::Succeeded { .. })
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

/// Runs the catalog's case that starts at `from` under OLM, with what the static checks
/// predicted for the fixture.
async fn run(name: &str, from: &str, step: Duration) -> (CaseReport, Predicted) {
    run_on(name, from, step, Platform::kubernetes()).await
}

/// [`run`] on a cluster of `platform`.
async fn run_on(
    name: &str,
    from: &str,
    step: Duration,
    platform: Platform,
) -> (CaseReport, Predicted) {
    let options = RunOptions {
        timeouts: Timeouts {
            step,
            ..Timeouts::default()
        },
        cluster_crds: platform.cluster_crds(&Limits::default()).unwrap(),
        platform,
        ..RunOptions::default()
    };
    run_with(name, from, options).await
}

/// Runs the catalog's case that starts at `from` under the OLM of `options`, with what the
/// static checks predicted for the fixture.
async fn run_with(name: &str, from: &str, options: RunOptions) -> (CaseReport, Predicted) {
    let dir = catalog(name);
    let catalog = dir.path().join("catalog");
    let predicted = predicted(name, &catalog);
    let cases: Vec<_> = olm::load_cases_of(options.olm, &catalog, None, &[], &Limits::default())
        .unwrap()
        .into_iter()
        .filter(|c| c.from == from)
        .collect();
    assert_eq!(cases.len(), 1, "{cases:#?}");
    let mut reports = olm::run(&catalog, &cases, &options).await.unwrap();
    (reports.pop().unwrap(), predicted)
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

    // A step time far beyond the stuck window: the step must end as stuck, not time out.
    let (report, predicted) =
        run("missing-secret", "mounts.v1.0.0", Duration::from_secs(300)).await;
    // Same verdict both ways: the one error rule, and OLM never gets the CSV to Succeeded.
    assert_eq!(
        predicted.install["1.0.0"],
        BTreeSet::from(["csv/missing-volume-source".to_owned()]),
        "{predicted:#?}"
    );
    assert!(olm_refused(&report.install.outcome));
    let Outcome::TimedOut {
        waiting_for,
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
        waiting_for.starts_with("ClusterServiceVersion mounts.v1.0.0 (stuck: nothing changed for 20 s while pods were refused"),
        "{waiting_for}"
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

    let (report, predicted) = run(
        "invalid-install-mode",
        "modes.v1.0.0",
        Duration::from_secs(90),
    )
    .await;
    assert_eq!(
        predicted.install["1.0.0"],
        BTreeSet::from(["csv/install-modes".to_owned()]),
        "{predicted:#?}"
    );
    assert!(olm_refused(&report.install.outcome));
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
    let (report, predicted) = run("stored-version", "stored.v1.0.0", Duration::from_secs(90)).await;
    // Both bundles install (no error from bundle validate, OLM installs 1.0.0); the edge
    // 1.0.0 -> 2.0.0 is refused (by upgrade check's stored-version rule, and by OLM).
    assert!(
        predicted.install.len() == 2 && predicted.install.values().all(BTreeSet::is_empty),
        "{predicted:#?}"
    );
    assert!(
        predicted
            .upgrade
            .contains("crd-upgrade/stored-version-removal"),
        "{predicted:#?}"
    );
    assert!(!olm_refused(&report.install.outcome));
    assert!(olm_refused(
        &report.upgrade.as_ref().expect("the upgrade ran").outcome
    ));
    assert!(
        matches!(report.install.outcome, Outcome::Succeeded { .. }),
        "{:#?}",
        report.install
    );
    let examples = report.examples.as_ref().unwrap().as_ref().unwrap();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn olm_e2e_broken_deployment_selector_change_is_refused_on_upgrade() {
    let (report, predicted) = run(
        "selector-change",
        "selector.v1.0.0",
        Duration::from_secs(90),
    )
    .await;
    // Both bundles install on their own; only the edge is refused, by upgrade check's
    // selector rule and by OLM v0.
    assert!(
        predicted.install.len() == 2 && predicted.install.values().all(BTreeSet::is_empty),
        "{predicted:#?}"
    );
    assert_eq!(
        predicted.upgrade,
        BTreeSet::from(["upgrade/deployment-selector".to_owned()]),
        "{predicted:#?}"
    );
    assert!(
        matches!(report.install.outcome, Outcome::Succeeded { .. }),
        "{:#?}",
        report.install
    );
    let upgrade = report.upgrade.as_ref().expect("the upgrade ran");
    assert_eq!(upgrade.csv.as_deref(), Some("selector.v2.0.0"));
    assert!(olm_refused(&upgrade.outcome), "{upgrade:#?}");
    let text = olm::describe(&upgrade.outcome);
    assert!(
        text.contains("InstallComponentFailed") || text.contains("immutable"),
        "{text}"
    );
    let failures = report.failures();
    assert!(
        failures.iter().all(|f| olm::blamed(f) == olm::OLM_RULES),
        "{failures:#?}"
    );
}

/// When the test environment itself fails (here kwok, the fake node, exits at once), `upgrade
/// olm` still writes its reports: the case is not finished, says why in olmpack's words, is
/// an error (not a failure) in JUnit, and the command exits 2 — no verdict about the
/// operator.
#[test]
fn olm_e2e_broken_environment_still_writes_every_report() {
    let work = tempfile::tempdir().unwrap();
    let kwok = work.path().join("kwok");
    std::fs::write(&kwok, "#!/bin/sh\necho 'kwok: no node today' >&2\nexit 3\n").unwrap();
    std::fs::set_permissions(&kwok, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let served = catalog("missing-secret");
    let (junit, markdown) = (work.path().join("junit.xml"), work.path().join("report.md"));
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["upgrade", "olm", "--quiet", "--catalog"])
        .arg(served.path().join("catalog"))
        .arg("--junit")
        .arg(&junit)
        .arg("--markdown")
        .arg(&markdown)
        .env("OLMPACK_KWOK", &kwok)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("error[environment]: ")
            && stderr.contains(": not finished: the OLM test environment failed: "),
        "{stderr}"
    );
    assert!(
        stdout.contains("not finished (the test environment failed)"),
        "{stdout}"
    );
    let table = std::fs::read_to_string(&markdown).unwrap();
    assert!(table.contains("| ERROR (test environment) |"), "{table}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(" failures=\"0\" errors=\"1\" "), "{xml}");
    assert!(
        xml.contains("<error message=\"the OLM test environment failed: "),
        "{xml}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn olm_e2e_openshift_native_apis_install_on_openshift_only() {
    // Plain Kubernetes serves neither Route, ConsolePlugin nor ConsoleYAMLSample: OLM's
    // InstallPlan fails on the bundle's ConsoleYAMLSample before the CSV's nativeAPIs are
    // weighed (the nativeAPIs hold is covered by the settle unit tests).
    let (report, _) = run_on(
        "openshift-native-apis",
        "routed.v1.0.0",
        Duration::from_secs(180),
        Platform::kubernetes(),
    )
    .await;
    let Outcome::Refused {
        by,
        reason,
        message,
    } = &report.install.outcome
    else {
        panic!("OLM should refuse the InstallPlan: {:#?}", report.install);
    };
    assert!(by.starts_with("InstallPlan "), "{by}");
    assert_eq!(reason, "InstallComponentFailed", "{message}");
    assert!(
        message.contains("installing ConsoleYAMLSample routed-widget")
            && message.contains("console.openshift.io/v1, Kind=ConsoleYAMLSample not found"),
        "{message}"
    );

    // With OpenShift's API kinds served, OLM installs it and creates its ConsoleYAMLSample.
    let (report, predicted) = run_on(
        "openshift-native-apis",
        "routed.v1.0.0",
        Duration::from_secs(300),
        Platform::openshift(),
    )
    .await;
    assert!(predicted.install["1.0.0"].is_empty(), "{predicted:#?}");
    assert_eq!(
        report.install.outcome,
        Outcome::Succeeded {
            csv: "routed.v1.0.0".into()
        },
        "{:#?}",
        report.install
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn olm_e2e_openshift_native_apis_alone_are_stuck_on_kubernetes_and_met_on_openshift() {
    // Nothing the bundle ships is an OpenShift kind: on plain Kubernetes OLM holds the CSV at
    // RequirementsNotMet for its nativeAPIs (Route, ConsolePlugin) and would wait until the
    // step's timeout; olmpack ends the step as stuck after --stuck-after, naming the platform.
    let (report, _) = run_on(
        "openshift-native-apis-held",
        "held.v1.0.0",
        Duration::from_secs(300),
        Platform::kubernetes(),
    )
    .await;
    let Outcome::TimedOut {
        waiting_for,
        reason,
        ..
    } = &report.install.outcome
    else {
        panic!("the CSV should be held: {:#?}", report.install);
    };
    assert_eq!(reason, "RequirementsNotMet", "{waiting_for}");
    for api in [
        "Route route.openshift.io/v1",
        "ConsolePlugin console.openshift.io/v1",
    ] {
        assert!(
            waiting_for.contains(&format!(
                "native API {api} is not served (Native API does not exist; OpenShift serves it: run with --platform openshift)"
            )),
            "{waiting_for}"
        );
    }
    // Ended as stuck (after --stuck-after of stillness), not at the 300 s step timeout.
    assert!(
        waiting_for.contains("(stuck: nothing changed for 20 s while OLM waited for requirements nothing on the test control plane meets: "),
        "{waiting_for}"
    );

    let (report, _) = run_on(
        "openshift-native-apis-held",
        "held.v1.0.0",
        Duration::from_secs(300),
        Platform::openshift(),
    )
    .await;
    assert_eq!(
        report.install.outcome,
        Outcome::Succeeded {
            csv: "held.v1.0.0".into()
        },
        "{:#?}",
        report.install
    );
}

/// A stand-in for the `unmounted-cert` fixture's manager that fails as operator-sdk v1.42.3's
/// does: it exits 1 when `--metrics-cert-path` names a directory without `tls.crt`, and runs
/// otherwise. Each start appends `RELEASE ARGS…` to `starts`.
fn manager_command(starts: &Path) -> WebhookCommand {
    WebhookCommand::shell(&format!(
        r#"echo "$OLMPACK_RELEASE $*" >> '{}'
for a in "$@"; do
  case "$a" in --metrics-cert-path=*)
    d="${{a#*=}}"
    [ -f "$d/tls.crt" ] || {{ echo "setup: open $d/tls.crt: no such file or directory"; exit 1; }} ;;
  esac
done
exec sleep 600"#,
        starts.display()
    ))
}

/// What the crash loop of `metrics.v2.0.0`'s manager says, under either OLM.
const CRASH_LOOP: &str = "Deployment metrics-manager: container manager of metrics.v2.0.0 exited (exit status: 1) 3 times, the last after 2 restart(s): the pod would crash-loop; its last output:\nsetup: open /tmp/k8s-metrics-server/metrics-certs/tls.crt: no such file or directory";

/// The `unmounted-cert` case from 1.0.0 under `olm`: 1.0.0's process runs, 2.0.0's exits
/// at once each time (its Deployment serves no webhooks) — a crash loop blamed on the pod,
/// found after the upgrade in seconds, not at the step timeout.
async fn crash_loop_case(olm: OlmVersion) {
    let (code, out) = validate("unmounted-cert", "2.0.0");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("warning[csv/unmounted-path]")
            && out.contains("--metrics-cert-path /tmp/k8s-metrics-server/metrics-certs but no volume is mounted there"),
        "{out}"
    );
    let (code, out) = validate("unmounted-cert", "1.0.0");
    assert_eq!((code, out.contains("unmounted-path")), (0, false), "{out}");

    let starts = tempfile::NamedTempFile::new().unwrap();
    let step = Duration::from_secs(300);
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = lines.clone();
    let options = RunOptions {
        olm,
        timeouts: Timeouts {
            step,
            ..Timeouts::default()
        },
        webhook_command: Some(manager_command(starts.path())),
        steps: olm::StepLog::new(move |line| {
            eprintln!("{line}");
            seen.lock().unwrap().push(line.to_owned());
        }),
        ..RunOptions::default()
    };
    let started = std::time::Instant::now();
    let (report, predicted) = run_with("unmounted-cert", "metrics.v1.0.0", options).await;
    let took = started.elapsed();
    eprintln!("{olm:?}: case done in {took:.1?}");
    // Statically no error anywhere: only running the process shows it.
    assert!(
        predicted.install.values().all(BTreeSet::is_empty) && predicted.upgrade.is_empty(),
        "{predicted:#?}"
    );
    // OLM installs and upgrades as if the pod ran; the crash loop is the verdict.
    assert!(
        matches!(report.install.outcome, Outcome::Succeeded { .. }),
        "{:#?}",
        report.install
    );
    let upgrade = report.upgrade.as_ref().expect("an upgrade step");
    assert_eq!(
        upgrade.csv.as_deref(),
        Some("metrics.v2.0.0"),
        "{upgrade:#?}"
    );
    assert!(
        matches!(upgrade.outcome, Outcome::Succeeded { .. }),
        "{upgrade:#?}"
    );
    assert_eq!(report.crash_loops, vec![CRASH_LOOP.to_owned()]);
    let failures = report.failures();
    let rules: Vec<&str> = failures.iter().map(|f| f.rule.as_str()).collect();
    assert_eq!(rules, ["pod/crash-loop"], "{failures:#?}");
    assert_eq!(report.verdict(), Verdict::Failed);
    // The progress line that ends the case says so too.
    let said = lines.lock().unwrap().clone();
    let done = said.iter().rfind(|l| l.contains("done: ")).cloned();
    assert!(
        done.is_some_and(|l| l.contains("done: FAIL (pod: Deployment metrics-manager: container manager of metrics.v2.0.0 exited")),
        "{said:#?}"
    );
    // Every start of each release's process had its Deployment's arguments; 1.0.0's ran
    // on, and 2.0.0's was started at least as often as a crash loop takes (3 exits). More
    // starts are not wrong: like a kubelet, the host goes on restarting a crash-looping
    // container (with back-off) until the case ends, which under load can be one more.
    let lines = std::fs::read_to_string(starts.path()).unwrap();
    let old = "metrics.v1.0.0 --metrics-bind-address=:8443";
    let new = "metrics.v2.0.0 --metrics-bind-address=:8443 --metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs";
    let count = |line: &str| lines.lines().filter(|l| *l == line).count();
    assert_eq!((count(old) >= 1, count(new) >= 3), (true, true), "{lines}");
    assert_eq!(lines.lines().count(), count(old) + count(new), "{lines}");
    // In seconds: far from the step timeout, which no step reached.
    assert!(took < step, "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn olm_e2e_broken_a_manager_exiting_on_an_unmounted_certificate_crash_loops_under_olm_v0() {
    crash_loop_case(OlmVersion::V0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn olm_e2e_broken_a_manager_exiting_on_an_unmounted_certificate_crash_loops_under_olm_v1() {
    if !olmpack_testkit::tools::require(&olmpack_testkit::tools::OLM_V1, "OLM v1") {
        return;
    }
    crash_loop_case(OlmVersion::V1).await;
}
