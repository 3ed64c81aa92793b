//! Released kubebuilder scaffolds, unedited: kubebuilder's own `testdata/project-v4` as
//! released kubebuilder v4.3.0 and v4.8.0 generated it, upgraded to what v4.15.0 generates
//! (corpus `kubebuilder-project-v4-releases`). The managers are built from each release's
//! source with Go (`go mod tidy` first: kubebuilder's testdata has no `go.sum`), and
//! `olmpack upgrade test` runs docs/upgrade-test.md's webhook command verbatim — the Deployment's
//! arguments and no webhook flag, which v4.0–v4.3 managers lack entirely and v4.8–v4.15 have
//! only for certificates: each manager
//! listens on controller-runtime's default port 9443 in a network of its own and reads its
//! certificate from `$TMPDIR/k8s-webhook-server/serving-certs`.
//!
//! The samples get `spec.foo` (the scaffold's example field): from v4.8.0 FirstMate has v2,
//! whose conversion is the scaffold's TODO stub that copies ObjectMeta only, so a FirstMate
//! read or written at v2 loses it — what `upgrade test` must find.

mod byo_support;

use std::path::Path;
use std::process::Command;

use byo_support::Project;
use serde_json::Value;

/// the kubebuilder webhook command of docs/upgrade-test.md, verbatim: each release's manager, picked by the
/// version in the CSV name, with its Deployment's arguments (`"$@"`).
const WEBHOOK_COMMAND: &str =
    r#""./bin/${OLMPACK_RELEASE##*.v}/manager" "$@" --leader-elect=false"#;

/// The scaffold's empty spec, and the same with its example field set.
const SPEC_FOO: [(&str, &str); 1] = [(
    "spec:\n  # TODO(user): Add fields here\n",
    "spec:\n  foo: set-by-the-sample\n",
)];

/// The scaffold of kubebuilder `tag`, copied to `into` as `name`, with `spec.foo` in its
/// samples when `set_field`.
fn scaffold(releases: &Path, tag: &str, into: &Path, name: &str, set_field: bool) -> Project {
    let mut project = Project::copy(&releases.join(tag).join("project-v4"), into, name);
    project.tidy = true;
    let samples = project.dir.join("config/samples");
    for entry in std::fs::read_dir(&samples).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        if set_field && file.starts_with("crew_") {
            project.patch(&format!("config/samples/{file}"), &SPEC_FOO, 1);
        }
        // Unedited, FirstMate's sample has no spec, which its CRD requires from v4.8.0 and no
        // defaulting webhook fills in: `generate` refuses it, as kube-apiserver would
        // (`cr_schema_generate_refuses_kubebuilders_unedited_samples`).
        if !set_field && file.contains("firstmate") {
            std::fs::remove_file(samples.join(&file)).unwrap();
        }
    }
    project
}

/// The plan's releases: 0.1.0 from `old`, 0.2.0 from `new`, with every sample each ships.
fn plan(dir: &Path) -> String {
    let mut text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/byo_release/olmpack.yaml"),
    )
    .unwrap();
    text.push_str("releases:\n");
    for (version, name) in [("0.1.0", "old"), ("0.2.0", "new")] {
        text.push_str(&format!(
            "  - version: {version}\n    manifests: {name}\n    samples:\n"
        ));
        let mut samples: Vec<String> = std::fs::read_dir(dir.join("samples").join(name))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        samples.sort();
        for sample in samples {
            text.push_str(&format!("      - samples/{name}/{sample}\n"));
        }
    }
    text
}

/// The managers of `old_tag` and v4.15.0 and the plan's inputs, in a temp directory.
struct Scene {
    dir: tempfile::TempDir,
}

impl Scene {
    /// Builds the managers and lays out the plan's inputs (NOT RUN without the corpus, the
    /// tools or Go).
    fn new(test: &str, old_tag: &str, set_field: bool) -> Option<Self> {
        let releases =
            olmpack_testkit::corpus::require(olmpack_testkit::corpus::KUBEBUILDER_RELEASES, test)?;
        byo_support::tools(test)?;
        let dir = tempfile::Builder::new()
            .prefix("olmpack-byo-release-")
            .tempdir()
            .unwrap();
        let old = scaffold(&releases, old_tag, dir.path(), "old", set_field);
        let new = scaffold(&releases, "v4.15.0", dir.path(), "new", set_field);
        for (version, project) in [("0.1.0", &old), ("0.2.0", &new)] {
            let manager = project.build(test)?;
            let bin = dir.path().join("bin").join(version);
            std::fs::create_dir_all(&bin).unwrap();
            std::fs::copy(&manager, bin.join("manager")).unwrap();
            project.release_inputs(dir.path());
        }
        std::fs::write(dir.path().join("olmpack.yaml"), plan(dir.path())).unwrap();
        Some(Self { dir })
    }

    fn olmpack(&self, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_olmpack"))
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .unwrap()
    }

    /// `olmpack upgrade test` with docs/upgrade-test.md's command: its JSON report, exit code and stderr.
    fn upgrade_test(&self, test: &str) -> (Vec<Value>, Option<i32>, String) {
        let out = self.olmpack(&[
            "upgrade",
            "test",
            "--plan",
            "olmpack.yaml",
            "--output",
            "json",
            "--webhook-command",
            WEBHOOK_COMMAND,
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let reports: Vec<Value> = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{test}: no JSON report ({e}):\n{stdout}\n{stderr}"));
        (reports, out.status.code(), stderr)
    }

    /// `olmpack upgrade olm` with docs/upgrade-test.md's command (each case in a fresh environment, as a
    /// user's first run has it): its exit code and everything it printed.
    fn upgrade_olm(&self) -> (Option<i32>, String) {
        let out = self.olmpack(&[
            "upgrade",
            "olm",
            "--plan",
            "olmpack.yaml",
            "--cluster-crd",
            "servicemonitors.monitoring.coreos.com",
            "--webhook-command",
            WEBHOOK_COMMAND,
        ]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    }

    /// `olmpack upgrade check`'s text output.
    fn upgrade_check(&self) -> String {
        let out = self.olmpack(&["upgrade", "check", "--plan", "olmpack.yaml"]);
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    }
}

/// The findings of `report` with rule `rule`.
fn findings<'a>(report: &'a Value, rule: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .map(|all| all.iter().filter(|f| f["rule"] == rule).collect())
        .unwrap_or_default()
}

/// What both edges must show: every manager served (no flag refused, no start failure),
/// the stub conversion's loss of `spec.foo` is found, and no existing object is called
/// refused — in a cluster the releases' defaulting webhooks stored them as they are — which
/// `upgrade check` says too; it refuses the selector change from v4.3.0 only.
fn assert_release_edge(test: &str, old_tag: &str) {
    let Some(scene) = Scene::new(test, old_tag, true) else {
        return;
    };
    let (reports, code, stderr) = scene.upgrade_test(test);
    let shown = serde_json::to_string_pretty(&reports).unwrap();
    eprintln!("{shown}");
    assert!(
        !stderr.contains("flag provided but not defined") && !shown.contains("flag provided"),
        "{test}: a manager refused a flag:\n{shown}\n{stderr}"
    );
    assert_eq!(reports.len(), 1, "{shown}\n{stderr}");
    let report = &reports[0];
    assert_eq!(report["from"], "project-v4.v0.1.0", "{shown}");
    assert_eq!(report["to"], "project-v4.v0.2.0", "{shown}");
    // One answer per edge: live, the stub conversion loses data; from v4.3.0 `upgrade check`
    // also refuses the selector change (both OLMs do), and a refusal outranks the loss.
    assert_eq!(report["verdicts"]["live"], "data-lost", "{shown}\n{stderr}");
    let refused = old_tag == "v4.3.0";
    assert_eq!(
        report["verdicts"]["check"] == "refused",
        refused,
        "{shown}\n{stderr}"
    );
    let verdict = if refused { "refused" } else { "data-lost" };
    assert_eq!(report["verdict"], verdict, "{shown}\n{stderr}");
    assert_eq!(code, Some(1), "{shown}\n{stderr}");
    assert_step(
        report,
        "install",
        "listens on 9443 in a network of its own",
        &shown,
    );
    assert_step(
        report,
        "admission",
        "admission webhook(s) registered",
        &shown,
    );
    let lossy = findings(report, "live/lossy-conversion");
    assert!(
        lossy.iter().any(|f| f["object"]
            .as_str()
            .is_some_and(|o| o.starts_with("FirstMate/"))
            && f["field"] == "spec.foo"),
        "{test}: the stub conversion's loss of spec.foo was not found:\n{shown}"
    );
    assert!(
        findings(report, "live/existing-object-invalid").is_empty(),
        "{test}: an existing object was called invalid:\n{shown}"
    );
    let check = scene.upgrade_check();
    eprintln!("{check}");
    assert!(
        !check.contains("error[crd-upgrade/existing-object-invalid]"),
        "{test}: upgrade check disagrees:\n{check}"
    );
    assert_eq!(
        check.contains("error[upgrade/deployment-selector]"),
        old_tag == "v4.3.0",
        "{test}: the selector gained app.kubernetes.io/name in v4.8.0:\n{check}"
    );
}

/// A step named `step` whose outcome contains `words`.
fn assert_step(report: &Value, step: &str, words: &str, shown: &str) {
    let steps = report["steps"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    assert!(
        steps
            .iter()
            .any(|s| s["step"] == step && s["outcome"].as_str().is_some_and(|o| o.contains(words))),
        "no {step} step with {words:?}:\n{shown}"
    );
}

/// The samples as the scaffold ships them (no spec at all) of the kinds a defaulting webhook
/// covers (FirstMate's, which none covers, `generate` refuses): v4.15.0's schema requires
/// `spec`, but the releases' defaulting webhooks store `spec: {}`, so no existing object is
/// invalid —
/// where, before olmpack registered the webhooks, `upgrade test` called Admiral and Captain
/// refused by OLM v0. Nothing is lost, and the edge passes.
#[test]
fn byo_release_unedited_samples_are_stored_as_a_cluster_stores_them() {
    let test = "byo_release_unedited_samples_are_stored_as_a_cluster_stores_them";
    let Some(scene) = Scene::new(test, "v4.8.0", false) else {
        return;
    };
    let (reports, code, stderr) = scene.upgrade_test(test);
    let shown = serde_json::to_string_pretty(&reports).unwrap();
    eprintln!("{shown}");
    let report = &reports[0];
    assert_step(
        report,
        "admission",
        "admission webhook(s) registered",
        &shown,
    );
    assert!(
        findings(report, "live/existing-object-invalid").is_empty(),
        "{shown}\n{stderr}"
    );
    assert_eq!(report["verdict"], "passed", "{shown}\n{stderr}");
    assert_eq!(code, Some(0), "{shown}\n{stderr}");
}

#[test]
fn byo_release_v4_8_0_to_v4_15_0_upgrade_test() {
    assert_release_edge("byo_release_v4_8_0_to_v4_15_0_upgrade_test", "v4.8.0");
}

#[test]
fn byo_release_v4_3_0_to_v4_15_0_upgrade_test() {
    assert_release_edge("byo_release_v4_3_0_to_v4_15_0_upgrade_test", "v4.3.0");
}

/// OLM's verdict on the v4.3.0 → v4.15.0 edge: v4.8.0 added `app.kubernetes.io/name` to the
/// manager Deployment's selector, which is immutable, so the real OLM v0 fails the upgrade —
/// olmpack quotes its words; v4.15.0 alone installs and its examples are read back.
#[test]
fn byo_release_v4_3_0_to_v4_15_0_upgrade_olm_refuses_the_selector_change() {
    let test = "byo_release_v4_3_0_to_v4_15_0_upgrade_olm_refuses_the_selector_change";
    let Some(scene) = Scene::new(test, "v4.3.0", true) else {
        return;
    };
    let (code, text) = scene.upgrade_olm();
    eprintln!("{text}");
    assert_eq!(code, Some(1), "{text}");
    let edge = case_line(&text, "project-v4.v0.1.0 → project-v4.v0.2.0");
    assert!(
        edge.contains("FAIL") && edge.contains("field is immutable"),
        "OLM's refusal of the selector change is not quoted:\n{text}"
    );
    let head = case_line(&text, "[project-v4 project-v4.v0.2.0,");
    assert!(head.contains("done: pass"), "{text}");
}

/// With the selector kept (v4.8.0 → v4.15.0), the real OLM v0 upgrades: both cases pass and
/// every example — Captain, FirstMate at v1 and Admiral, all in one group where only
/// FirstMate has a v2 — is read back after the upgrade at its own apiVersion.
#[test]
fn byo_release_v4_8_0_to_v4_15_0_upgrade_olm_passes_and_reads_every_example_back() {
    let test = "byo_release_v4_8_0_to_v4_15_0_upgrade_olm_passes_and_reads_every_example_back";
    let Some(scene) = Scene::new(test, "v4.8.0", true) else {
        return;
    };
    let (code, text) = scene.upgrade_olm();
    eprintln!("{text}");
    assert_eq!(code, Some(0), "{text}");
    let edge = case_line(&text, "project-v4.v0.1.0 → project-v4.v0.2.0");
    assert!(edge.contains("done: pass"), "{text}");
    assert!(
        text.contains("examples: 4/4 created") && text.contains("examples after: 4/4 read back"),
        "not every example was created and read back after the upgrade:\n{text}"
    );
    assert!(!text.contains("x509"), "{text}");
}

/// The summary line of the case whose name starts with `name`.
fn case_line<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .rfind(|l| l.contains(name) && l.contains("done:"))
        .unwrap_or_else(|| panic!("no summary for case {name}:\n{text}"))
}
