//! The kubebuilder book's CronJob project under the real OLM v0: cronjob-tutorial (CronJob v1)
//! as release 0.1.0 and multiversion-tutorial (v1 + v2, conversion webhook) as 0.2.0, from
//! their `dist/install.yaml` (shared corpus) with only a plan file added
//! (tests/fixtures/olm_e2e_kubebuilder/olmpack.yaml), through `olmpack generate`. OLM installs
//! each release by Subscription and upgrades 0.1.0 -> 0.2.0; the CSV reaches `Succeeded` at
//! both versions and the CRDs and Deployments OLM created are the bundle's.
//!
//! The kubebuilder manager binary is not available here, so nothing serves the webhooks OLM
//! wired (admission with `failurePolicy: Fail`, CRD conversion); the projects ship
//! `alm-examples: []`, so no example check needs them and each case is a plain pass.
//!
//! Without `--cluster-crd`, OLM cannot create the projects' ServiceMonitor and retries the
//! InstallPlan for a minute: the step lines must say so, name the flag, and never leave 30 s
//! without a line.

use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use olmpack::upgrade::olm::{self, RunOptions, StepLog};
use olmpack_envtest::olm::Outcome;

const PROJECTS: [&str; 2] = ["cronjob-tutorial", "multiversion-tutorial"];

/// The kubebuilder corpus directory, or `None` (said loudly; a failure in CI).
fn corpus() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = std::env::var_os("OLMPACK_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/corpus"))
        .join("kubebuilder-5c40072");
    if PROJECTS
        .iter()
        .all(|p| dir.join(format!("{p}.install.yaml")).is_file())
    {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the kubebuilder corpus is missing at {} in CI",
        dir.display()
    );
    eprintln!(
        "NOT RUN: the kubebuilder corpus is not at {}",
        dir.display()
    );
    None
}

/// The plan fixture and each project's install.yaml in a temp directory, through
/// `olmpack generate` (bundle/ and catalog/ next to the plan).
fn generate(corpus: &Path) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("olmpack-olm-kubebuilder-")
        .tempdir()
        .unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/olm_e2e_kubebuilder");
    std::fs::copy(
        fixture.join("olmpack.yaml"),
        dir.path().join("olmpack.yaml"),
    )
    .unwrap();
    for project in PROJECTS {
        std::fs::create_dir(dir.path().join(project)).unwrap();
        std::fs::copy(
            corpus.join(format!("{project}.install.yaml")),
            dir.path().join(project).join("install.yaml"),
        )
        .unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["generate", "--plan", "olmpack.yaml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("0.1.0: 0 error(s)") && stderr.contains("0.2.0: 0 error(s)"),
        "{stderr}"
    );
    dir
}

/// prometheus-operator's ServiceMonitor CRD (kubebuilder's projects ship a ServiceMonitor,
/// which OLM can only create where prometheus-operator is installed), as `--cluster-crd`
/// gives it.
fn service_monitor_crd() -> CustomResourceDefinition {
    olmpack::cluster_crds::by_name("servicemonitors.monitoring.coreos.com")
        .expect("olmpack carries the ServiceMonitor CRD")
}

/// The bundle's CRD versions (name → served versions) and Deployment names of `version`.
fn bundle_contents(generated: &Path, version: &str) -> (Vec<String>, Vec<String>) {
    let bundle = olmpack::bundle::load::load_dir(&generated.join("bundle").join(version)).unwrap();
    let mut crds = Vec::new();
    let mut deployments = Vec::new();
    for object in &bundle.objects {
        match object.kind() {
            "CustomResourceDefinition" => {
                for v in object.value["spec"]["versions"].as_array().unwrap() {
                    crds.push(format!(
                        "{}/{}",
                        object.value["metadata"]["name"].as_str().unwrap(),
                        v["name"].as_str().unwrap()
                    ));
                }
            }
            "ClusterServiceVersion" => {
                for d in object.value["spec"]["install"]["spec"]["deployments"]
                    .as_array()
                    .unwrap()
                {
                    deployments.push(d["name"].as_str().unwrap().to_owned());
                }
            }
            _ => {}
        }
    }
    crds.sort();
    deployments.sort();
    (crds, deployments)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn olm_e2e_kubebuilder_cronjob_to_multiversion() {
    let Some(corpus) = corpus() else {
        return;
    };
    let generated = generate(&corpus);
    let catalog = generated.path().join("catalog");
    let cases = olm::load_cases(&catalog, Some("project")).unwrap();
    let froms: Vec<&str> = cases.iter().map(|c| c.from.as_str()).collect();
    assert_eq!(froms, ["project.v0.1.0", "project.v0.2.0"], "{cases:#?}");
    let options = RunOptions {
        cluster_crds: vec![service_monitor_crd()],
        jobs: 2,
        ..RunOptions::default()
    };
    let reports = olm::run(&catalog, &cases, &options).await.unwrap();
    let table = olm::markdown(&reports);
    eprintln!("{table}");
    for report in &reports {
        assert!(
            report.failures().is_empty(),
            "{}: {:#?}\n{table}",
            report.case.from,
            report.failures()
        );
        assert!(
            matches!(report.install.outcome, Outcome::Succeeded { .. }),
            "{table}"
        );
        // The projects' `alm-examples` is `[]`: there is no example to create, so the
        // webhooks nothing serves stop no check, and nothing is "not run".
        let Some(Ok(examples)) = &report.examples else {
            panic!(
                "{}: the example checks did not run: {:?}\n{table}",
                report.case.from, report.examples
            );
        };
        assert!(examples.is_empty(), "{examples:#?}");
        assert!(report.not_run().is_empty(), "{:?}", report.not_run());
    }
    let upgrade = reports[0].upgrade.as_ref().expect("the upgrade ran");
    assert_eq!(upgrade.csv.as_deref(), Some("project.v0.2.0"));
    assert!(
        matches!(upgrade.outcome, Outcome::Succeeded { .. }),
        "{upgrade:#?}"
    );
    assert!(reports[1].upgrade.is_none(), "0.2.0 is the channel head");
    // What OLM created is the bundle's: after installing 0.2.0, and after upgrading to it.
    let expected = bundle_contents(generated.path(), "0.2.0");
    assert!(
        expected.0.iter().any(|c| c.ends_with("/v2")),
        "{expected:?}"
    );
    for report in &reports {
        let mut crds = report.installed.crds.clone();
        crds.retain(|c| !c.starts_with("servicemonitors.monitoring.coreos.com/"));
        assert_eq!(
            (crds, report.installed.deployments.clone()),
            expected,
            "{}",
            report.case.from
        );
    }
    let rows: Vec<&str> = table.lines().skip(2).collect();
    assert_eq!(rows.len(), 2, "{table}");
    for row in rows {
        assert!(
            row.ends_with("| none (alm-examples is empty) | pass |"),
            "{table}"
        );
    }
    let junit = olm::junit(&reports, None);
    assert!(!junit.contains("<skipped"), "{junit}");
}

/// Fresh installs of 0.2.0 in a row (conversion and admission webhooks wired by OLM, nothing
/// serving them, and no example that would need them): OLM's verdict must not change from
/// run to run. Slow (ten OLM
/// environments), so run on demand:
/// `cargo xtask test olm_e2e_kubebuilder_fresh -- --ignored`; `OLMPACK_STRESS_RUNS` changes
/// the 10.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "stress: ten OLM environments; run with --ignored"]
async fn olm_e2e_kubebuilder_fresh_install_verdict_is_stable() {
    let Some(corpus) = corpus() else {
        return;
    };
    let runs: usize = std::env::var("OLMPACK_STRESS_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let generated = generate(&corpus);
    let catalog = generated.path().join("catalog");
    let cases: Vec<_> = olm::load_cases(&catalog, Some("project"))
        .unwrap()
        .into_iter()
        .filter(|c| c.from == "project.v0.2.0")
        .collect();
    assert_eq!(cases.len(), 1, "{cases:#?}");
    let options = RunOptions {
        cluster_crds: vec![service_monitor_crd()],
        ..RunOptions::default()
    };
    let mut verdicts = Vec::new();
    for run in 1..=runs {
        let started = std::time::Instant::now();
        let report = olm::run(&catalog, &cases, &options)
            .await
            .unwrap()
            .pop()
            .unwrap();
        let verdict = match report.failures().first() {
            Some(failure) => format!("fail: {}", failure.message),
            None if !report.not_run().is_empty() => "pass, checks not run".to_owned(),
            None => "pass".to_owned(),
        };
        eprintln!("run {run}/{runs}: {verdict} ({:.1?})", started.elapsed());
        verdicts.push(verdict);
    }
    assert!(
        verdicts.iter().all(|v| v == &verdicts[0]),
        "the verdict changed between runs: {verdicts:?}"
    );
    assert_eq!(verdicts[0], "pass", "{verdicts:?}");
}

/// 0.2.0 without the ServiceMonitor CRD: OLM retries the InstallPlan until its retry timeout
/// (OLM's default minute) and fails it. The step lines say what OLM is doing all along: the
/// kind not served once, with the `--cluster-crd` that serves it, and a line at least every
/// 30 s (measured here as the longest gap between two lines).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn olm_e2e_kubebuilder_a_kind_not_served_is_said_while_olm_retries() {
    let Some(corpus) = corpus() else {
        return;
    };
    let generated = generate(&corpus);
    let catalog = generated.path().join("catalog");
    let cases: Vec<_> = olm::load_cases(&catalog, Some("project"))
        .unwrap()
        .into_iter()
        .filter(|c| c.from == "project.v0.2.0")
        .collect();
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = lines.clone();
    let options = RunOptions {
        steps: StepLog::new(move |line| {
            eprintln!("{line}");
            let at = std::time::Instant::now();
            seen.lock().unwrap().push((at, line.to_owned()));
        }),
        ..RunOptions::default()
    };
    let reports = olm::run(&catalog, &cases, &options).await.unwrap();
    let failures = reports[0].failures();
    assert!(
        matches!(reports[0].install.outcome, Outcome::Refused { .. }),
        "{failures:#?}"
    );
    let lines = lines.lock().unwrap().clone();
    let hints: Vec<&str> = lines
        .iter()
        .map(|(_, l)| l.as_str())
        .filter(|l| l.contains("but the cluster does not serve ServiceMonitor"))
        .collect();
    assert_eq!(hints.len(), 1, "{lines:#?}");
    assert!(
        hints[0].ends_with(
            "give the cluster the CRD with --cluster-crd servicemonitors.monitoring.coreos.com (prometheus-operator's)"
        ),
        "{}",
        hints[0]
    );
    let longest = lines
        .windows(2)
        .map(|w| w[1].0.duration_since(w[0].0))
        .max()
        .unwrap();
    assert!(
        longest < std::time::Duration::from_secs(30),
        "{longest:?} without a line: {lines:#?}"
    );
    let waited = lines
        .iter()
        .filter(|(_, l)| l.contains("still waiting for"))
        .count();
    assert!(waited >= 1, "OLM retried for a minute: {lines:#?}");
}
