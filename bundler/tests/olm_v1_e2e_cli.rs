//! `olmpack upgrade olm --olm v1` on the reference operator's catalog (catalog/ at the
//! repository root): the real OLM v1 (catalogd and operator-controller at the version
//! `tools.toml` pins) installs every release by a version-pinned ClusterExtension and upgrades
//! along every edge OLM v1 takes — each edge passes, in one environment for all cases. Then a
//! variant of the catalog whose 1.0.1 lowers a CRD `maximum`: OLM v1's CRD upgrade safety
//! preflight refuses both edges into 1.0.1, and the verdicts quote its words (the library
//! entry and the command line alike, the latter in two shards run at once and merged); in
//! that variant 0.1.0 has no webhooks, so its examples are created. Without OLM v1's binaries
//! the live tests say NOT RUN (a failure in CI). Listing the cases and refusing OLM v0's flags
//! needs no tools.

use std::path::{Path, PathBuf};
use std::time::Instant;

use base64::Engine as _;
use olmpack::upgrade::olm::{self, CaseReport, OlmVersion, RunOptions, StepLog};
use olmpack_envtest::olm::Outcome;
use olmpack_model::plan::InstallModeType;
use olmpack_model::upgrade::Verdict;
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Whether OLM v1's binaries and the registry are installed; "NOT RUN" when not (a failure
/// in CI).
fn olm_v1_installed() -> bool {
    olmpack_testkit::tools::require(&olmpack_testkit::tools::OLM_V1, "OLM v1")
}

/// Every case of `catalog` under OLM v1, through the library entry the CLI calls.
async fn run_v1(catalog: &Path) -> Vec<CaseReport> {
    let limits = olmpack_oci::input::Limits::default();
    let cases = olm::load_cases_of(OlmVersion::V1, catalog, None, &[], &limits).unwrap();
    let options = RunOptions {
        olm: OlmVersion::V1,
        steps: StepLog::new(|line| eprintln!("{line}")),
        ..RunOptions::default()
    };
    let started = Instant::now();
    let reports = olm::run(catalog, &cases, &options).await.unwrap();
    eprintln!(
        "olm v1: {} case(s) in {:.1?}",
        reports.len(),
        started.elapsed()
    );
    for r in &reports {
        eprintln!("olm v1: {} in {:.1} s", r.name(), r.seconds);
    }
    reports
}

/// `FROM → TO` of each case (`FROM` alone when OLM v1 has no successor).
fn edges(reports: &[CaseReport]) -> Vec<String> {
    reports.iter().map(|r| r.case.title()).collect()
}

const EDGES: [&str; 5] = [
    "webapp-operator.v0.1.0 → webapp-operator.v0.2.0",
    "webapp-operator.v0.2.0 → webapp-operator.v0.3.0",
    "webapp-operator.v0.3.0 → webapp-operator.v1.0.1",
    "webapp-operator.v1.0.0 → webapp-operator.v1.0.1",
    "webapp-operator.v1.0.1",
];

#[tokio::test(flavor = "multi_thread")]
async fn olm_v1_e2e_cli_every_edge_of_the_reference_catalog_installs_and_upgrades() {
    if !olm_v1_installed() {
        return;
    }
    let reports = run_v1(&root().join("catalog")).await;
    assert_eq!(edges(&reports), EDGES);
    for r in &reports {
        assert_eq!(r.case.olm, OlmVersion::V1);
        assert!(r.name().ends_with(" on OLM v1"), "{}", r.name());
        assert_eq!(r.failures(), [], "{}", r.name());
        assert_eq!(r.verdict(), Verdict::Passed, "{}", r.name());
        assert_eq!(
            r.install.outcome,
            Outcome::Succeeded {
                csv: r.case.from.clone()
            }
        );
        // OLM v1's own words on the install.
        assert!(
            r.install.observed.iter().any(|o| o
                .starts_with("OLM v1: Installed=True (Succeeded): Installed bundle 127.0.0.1:")
                && o.ends_with(" successfully")),
            "{:?}",
            r.install.observed
        );
        if let Some(to) = r.case.to() {
            let step = r.upgrade.as_ref().expect("the upgrade ran");
            assert_eq!(step.outcome, Outcome::Succeeded { csv: to.to_owned() });
            assert_eq!(step.csv.as_deref(), Some(to));
        }
        assert!(
            !r.installed.crds.is_empty()
                && r.installed
                    .crds
                    .iter()
                    .all(|c| c.starts_with("webapps.apps.olmpack.dev/")),
            "{:?}",
            r.installed
        );
        // The reference operator's webhooks: nothing serves them under OLM v1 here.
        let not_run = r.not_run().join("\n");
        assert!(
            not_run.contains("the bundle declares webhooks"),
            "{not_run}"
        );
    }
}

/// A copy of the reference catalog in `dir`, each bundle's manifests (the JSON text of each
/// `olm.bundle.object`) changed by `edit(bundle, text)`; returns the catalog directory.
fn variant(dir: &Path, edit: impl Fn(&str, String) -> String) -> PathBuf {
    let file = root().join("catalog/webapp-operator/catalog.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let engine = base64::engine::general_purpose::STANDARD;
    let mut out = Vec::new();
    for doc in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
        let mut doc = doc.unwrap();
        let name = doc["name"].as_str().unwrap_or_default().to_owned();
        if doc["schema"] == "olm.bundle" {
            for p in doc["properties"].as_array_mut().unwrap() {
                if p["type"] != "olm.bundle.object" {
                    continue;
                }
                let data = engine.decode(p["value"]["data"].as_str().unwrap()).unwrap();
                let edited = edit(&name, String::from_utf8(data).unwrap());
                p["value"]["data"] = Value::from(engine.encode(edited));
            }
        }
        out.push(serde_json::to_string_pretty(&doc).unwrap());
    }
    let catalog = dir.join("catalog");
    std::fs::create_dir_all(catalog.join("webapp-operator")).unwrap();
    std::fs::write(
        catalog.join("webapp-operator/catalog.json"),
        out.join("\n") + "\n",
    )
    .unwrap();
    catalog
}

/// The reference catalog with 1.0.1's CRD lowering every `maximum: 100` to 50, and 0.1.0
/// without its (admission) webhooks, so that its examples are created under OLM v1 — and
/// deleted with the CRD after its case, though the CRD then converts through a webhook.
fn lowered_maximum(dir: &Path) -> PathBuf {
    let lowered = std::sync::atomic::AtomicUsize::new(0);
    let catalog = variant(dir, |bundle, text| {
        let crd = text.contains("\"kind\":\"CustomResourceDefinition\"");
        let csv = text.contains("\"kind\":\"ClusterServiceVersion\"");
        match bundle {
            "webapp-operator.v1.0.1" if crd => {
                lowered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let edited = text.replace("\"maximum\":100", "\"maximum\":50");
                assert_ne!(edited, text, "no maximum: 100 in the CRD of {bundle}");
                edited
            }
            "webapp-operator.v0.1.0" if csv => {
                let mut object: Value = serde_json::from_str(&text).unwrap();
                let spec = object["spec"].as_object_mut().unwrap();
                assert!(spec.remove("webhookdefinitions").is_some(), "{bundle}");
                serde_json::to_string(&object).unwrap()
            }
            _ => text,
        }
    });
    assert_eq!(lowered.into_inner(), 1, "1.0.1 has one CRD");
    catalog
}

/// OLM v1's CRD upgrade safety preflight, refusing a lowered maximum of the webapps CRD.
const PREFLIGHT: &str = "validating upgrade for CRD \"webapps.apps.olmpack.dev\"";
const LOWERED: &str = "maximum: maximum decreased : 100 -> 50";

#[tokio::test(flavor = "multi_thread")]
async fn olm_v1_e2e_cli_a_lowered_maximum_is_refused_in_the_preflights_words() {
    if !olm_v1_installed() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let catalog = lowered_maximum(work.path());
    let reports = run_v1(&catalog).await;
    assert_eq!(edges(&reports), EDGES);
    for r in &reports {
        let into_1_0_1 = r.case.to() == Some("webapp-operator.v1.0.1");
        if r.case.from == "webapp-operator.v0.1.0" {
            // Without webhooks: every example created after the install; 0.2.0 converts
            // through a webhook nothing serves, so reading them back is not run.
            let examples = match &r.examples {
                Some(Ok(examples)) => examples,
                other => panic!("example checks should have run: {other:?}"),
            };
            assert!(!examples.is_empty());
            assert!(examples.iter().all(|e| e.refused.is_none()), "{examples:?}");
            let reads = r.reads_not_run.as_deref().unwrap_or_default();
            assert!(reads.contains("ConversionWebhook"), "{reads}");
        }
        if !into_1_0_1 {
            assert_eq!(
                r.verdict(),
                Verdict::Passed,
                "{}: {:?}",
                r.name(),
                r.failures()
            );
            continue;
        }
        assert_eq!(r.verdict(), Verdict::Refused, "{}", r.name());
        let step = r.upgrade.as_ref().expect("the upgrade ran");
        let Outcome::Refused {
            by,
            reason,
            message,
        } = &step.outcome
        else {
            panic!("{}: {:?}", r.name(), step.outcome);
        };
        // Each case's own ClusterExtension, numbered in the run.
        assert!(by.starts_with("ClusterExtension olmpack-case-"), "{by}");
        assert_eq!(reason, "Progressing=True (Retrying)");
        assert!(
            message.starts_with(
                "error for resolved bundle \"webapp-operator.v1.0.1\" with version \"1.0.1\": "
            ) && message.contains(PREFLIGHT)
                && message.contains(LOWERED),
            "{message}"
        );
        let failures = r.failures();
        assert!(
            failures[0].message.contains(PREFLIGHT) && failures[0].message.contains(LOWERED),
            "{failures:?}"
        );
    }
    // The command line, in two shards merged: the same verdicts, each shard exits 1 with the
    // preflight's words, and the merged report has both refusals.
    // (Both shards at once, as two CI jobs would run them.)
    let shards: Vec<(&str, PathBuf, std::process::Child)> = ["1/2", "2/2"]
        .into_iter()
        .map(|shard| {
            let junit = work.path().join(format!("junit-{}.xml", &shard[..1]));
            let child = std::process::Command::new(env!("CARGO_BIN_EXE_olmpack"))
                .args(["upgrade", "olm", "--olm", "v1", "--quiet", "--catalog"])
                .arg(&catalog)
                .args(["--shard", shard, "--junit"])
                .arg(&junit)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (shard, junit, child)
        })
        .collect();
    let mut junits = Vec::new();
    for (shard, junit, child) in shards {
        let run = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert_eq!(run.status.code(), Some(1), "{shard}: {stdout}\n{stderr}");
        let refused: Vec<&str> = stderr
            .lines()
            .filter(|l| {
                l.starts_with("error[olm]: ") && l.contains(PREFLIGHT) && l.contains(LOWERED)
            })
            .collect();
        assert_eq!(refused.len(), 1, "{shard}: {stderr}");
        junits.push(junit);
    }
    let merged = work.path().join("junit.xml");
    let mut args = vec![
        "upgrade",
        "merge-shards",
        "--output",
        merged.to_str().unwrap(),
    ];
    args.extend(junits.iter().map(|j| j.to_str().unwrap()));
    let (code, stdout, stderr) = olmpack(&args);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("(all 2 shard(s))")
            && stdout.contains(": 5 case(s), 2 failed, 0 in error, 3 skipped"),
        "{stdout}"
    );
    let xml = std::fs::read_to_string(&merged).unwrap();
    assert_eq!(xml.matches("<failure").count(), 2, "{xml}");
    assert!(xml.contains("maximum decreased : 100 -"), "{xml}");
}

/// `olmpack upgrade olm` with the arguments given; exit code, stdout and stderr.
fn olmpack(args: &[&str]) -> (Option<i32>, String, String) {
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    (
        run.status.code(),
        String::from_utf8_lossy(&run.stdout).into_owned(),
        String::from_utf8_lossy(&run.stderr).into_owned(),
    )
}

#[test]
fn olm_v1_e2e_cli_lists_olm_v1s_cases_and_refuses_flags_of_olm_v0() {
    // No tools needed: the cases come from the catalog alone.
    let (code, stdout, stderr) = olmpack(&[
        "upgrade",
        "olm",
        "--olm",
        "v1",
        "--catalog",
        "catalog",
        "--list",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let listed: Vec<&str> = stdout.lines().collect();
    let want: Vec<String> = EDGES
        .iter()
        .map(|e| format!("webapp-operator\t{e} [candidate,fast,stable] (AllNamespaces) on OLM v1"))
        .collect();
    assert_eq!(listed, want);
    let (code, stdout, stderr) = olmpack(&[
        "upgrade",
        "olm",
        "--olm",
        "v1",
        "--catalog",
        "catalog",
        "--shard",
        "2/2",
        "--list",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.lines().collect::<Vec<_>>(), [&want[1], &want[3]]);
    // The one flag only OLM v0 runs with.
    let (code, _, stderr) = olmpack(&[
        "upgrade",
        "olm",
        "--olm",
        "v1",
        "--catalog",
        "catalog",
        "--platform",
        "openshift",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "--platform openshift is for OLM v0 only; `upgrade olm --olm v1` does not take it"
        ),
        "{stderr}"
    );
    let (code, _, stderr) = olmpack(&["upgrade", "olm", "--olm", "v2", "--list"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("possible values: v0, v1"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn olm_v1_e2e_cli_an_install_mode_olm_v1_cannot_run_is_not_run_and_says_why() {
    // No tools needed: with no case OLM v1 can run, no environment starts.
    let catalog = root().join("catalog");
    let limits = olmpack_oci::input::Limits::default();
    let modes = [olmpack_model::plan::InstallModeType::MultiNamespace];
    let cases = olm::load_cases_of(OlmVersion::V1, &catalog, None, &modes, &limits).unwrap();
    let options = RunOptions {
        olm: OlmVersion::V1,
        ..RunOptions::default()
    };
    let reports = olm::run(&catalog, &cases, &options).await.unwrap();
    assert_eq!(reports.len(), EDGES.len());
    for r in &reports {
        assert_eq!(r.verdict(), Verdict::NotRun, "{}", r.name());
        assert_eq!(r.failures(), [], "{}", r.name());
        let why = r.error().unwrap_or_default();
        assert!(
            why.starts_with("not run: OLM v1 has no MultiNamespace install mode (a ClusterExtension watches all namespaces, or one: OwnNamespace and SingleNamespace)"),
            "{why}"
        );
        assert!(r.upgrade.is_none(), "{}", r.name());
    }
}

/// The reference catalog with 0.1.0 (admission webhooks, no conversion webhook: OLM v1
/// refuses a conversion webhook in a bundle supporting any mode but AllNamespaces) also
/// supporting OwnNamespace and SingleNamespace; 0.2.0, its successor, supports AllNamespaces
/// only.
fn namespaced_first(dir: &Path) -> PathBuf {
    variant(dir, |bundle, text| {
        if bundle != "webapp-operator.v0.1.0"
            || !text.contains("\"kind\":\"ClusterServiceVersion\"")
        {
            return text;
        }
        let mut csv: Value = serde_json::from_str(&text).unwrap();
        for mode in csv["spec"]["installModes"].as_array_mut().unwrap() {
            if mode["type"] == "OwnNamespace" || mode["type"] == "SingleNamespace" {
                mode["supported"] = Value::Bool(true);
            }
        }
        serde_json::to_string(&csv).unwrap()
    })
}

/// OwnNamespace and SingleNamespace cases run through operator-controller's gate, the report
/// saying so and naming the watched namespace; the upgrade into a release that supports
/// AllNamespaces only is refused in OLM v1's words (the `watchNamespace` the installed
/// release needed no longer fits); MultiNamespace, no OLM v1 install mode, is not run.
#[tokio::test(flavor = "multi_thread")]
async fn olm_v1_e2e_cli_own_and_single_namespace_run_through_the_gate_and_multi_is_not_run() {
    if !olm_v1_installed() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let catalog = namespaced_first(work.path());
    let limits = olmpack_oci::input::Limits::default();
    let modes = [
        InstallModeType::OwnNamespace,
        InstallModeType::SingleNamespace,
        InstallModeType::MultiNamespace,
    ];
    let cases: Vec<_> = olm::load_cases_of(OlmVersion::V1, &catalog, None, &modes, &limits)
        .unwrap()
        .into_iter()
        .filter(|c| c.from == "webapp-operator.v0.1.0")
        .collect();
    assert_eq!(cases.len(), 3, "{cases:#?}");
    let options = RunOptions {
        olm: OlmVersion::V1,
        steps: StepLog::new(|line| eprintln!("{line}")),
        ..RunOptions::default()
    };
    let reports = olm::run(&catalog, &cases, &options).await.unwrap();
    for (r, watched) in reports.iter().zip(["olmpack-operator", "olmpack-watched"]) {
        let name = r.name();
        let mode = r.case.install_mode;
        assert_eq!(
            r.install.outcome,
            Outcome::Succeeded {
                csv: "webapp-operator.v0.1.0".to_owned()
            },
            "{name}"
        );
        assert_eq!(
            r.install.observed.first().map(String::as_str),
            Some(format!("OLM v1: {mode} through operator-controller's SingleOwnNamespaceInstallSupport feature gate (alpha): watchNamespace {watched}").as_str()),
            "{name}"
        );
        let step = r.upgrade.as_ref().expect("the upgrade ran");
        let Outcome::Refused {
            reason, message, ..
        } = &step.outcome
        else {
            panic!("{name}: {:?}", step.outcome);
        };
        assert_eq!(reason, "Progressing=False (InvalidConfiguration)", "{name}");
        assert!(
            message.contains("invalid ClusterExtension configuration")
                && message.contains("watchNamespace"),
            "{name}: {message}"
        );
    }
    let multi = &reports[2];
    assert_eq!(multi.case.install_mode, InstallModeType::MultiNamespace);
    assert_eq!(multi.verdict(), Verdict::NotRun);
    assert!(
        multi
            .error()
            .unwrap_or_default()
            .starts_with("not run: OLM v1 has no MultiNamespace install mode"),
        "{:?}",
        multi.error()
    );
}
