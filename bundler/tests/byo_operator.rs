//! Bring your own operator: the kubebuilder book's CronJob project, built from source with Go,
//! as a user's release job would run it. 0.1.0 is cronjob-tutorial (CronJob v1), 0.2.0 is
//! multiversion-tutorial (v1 + v2, conversion webhook); each release's `dist/install.yaml`
//! and samples with only a plan file added (tests/fixtures/byo_operator/olmpack.yaml).
//!
//! `olmpack upgrade test` runs the stock manager binaries through `--webhook-command` with
//! flags only (README "The webhook command"): the manager gets a kubeconfig acting as its
//! ServiceAccount, its controller fills in `status.conditions`, and the book's conversion
//! code, which copies only `active` and `lastScheduleTime` of the status, loses the
//! conditions when an object is written at v2. With the two missing lines added to
//! ConvertTo/ConvertFrom (a patched copy of the project) the edge passes.
//!
//! The managers are built with the Go toolchain into a cache outside the checkout
//! (`$OLMPACK_GO_BUILD_CACHE`, default `~/.cache/olmpack/go-builds`), keyed by a hash of the
//! project's sources: a second run does not build again. Without Go, the corpus or the test
//! environment's tools the tests say NOT RUN (and fail under `CI=true`).

mod byo_support;

use std::path::Path;
use std::process::Command;

use byo_support::Project;
use serde_json::Value;

/// The two lines the book's conversion is missing, for each direction.
const FIX: [(&str, &str); 1] = [(
    "\tdst.Status.LastScheduleTime = src.Status.LastScheduleTime\n",
    "\tdst.Status.LastScheduleTime = src.Status.LastScheduleTime\n\tdst.Status.Conditions = src.Status.Conditions\n",
)];

/// The webhook command of README's kubebuilder workflow: one manager per release, picked by
/// `$OLMPACK_RELEASE`, configured with flags only.
fn webhook_command(bin: &Path) -> String {
    format!(
        r#"case "$OLMPACK_RELEASE" in
  project.v0.1.0) manager='{}/0.1.0/manager' ;;
  *) manager='{}/0.2.0/manager' ;;
esac
"$manager" --webhook-cert-path "$OLMPACK_WEBHOOK_CERT_DIR" --webhook-cert-name tls.crt \
  --webhook-cert-key tls.key --webhook-port "$OLMPACK_WEBHOOK_PORT" \
  --metrics-bind-address 0 --health-probe-bind-address 0"#,
        bin.display(),
        bin.display()
    )
}

/// Builds both managers (0.2.0 with `fix` applied or not), generates nothing but what the
/// plan asks, and runs `olmpack upgrade test`; returns its JSON report and stderr.
fn upgrade_test(test: &str, fixed: bool) -> Option<(Vec<Value>, String)> {
    let book = byo_support::book(test)?;
    byo_support::tools(test)?;
    let dir = tempfile::Builder::new()
        .prefix("olmpack-byo-")
        .tempdir()
        .unwrap();
    let old = Project::copy(
        &book.join("cronjob-tutorial"),
        dir.path(),
        "cronjob-tutorial",
    );
    let mut new = Project::copy(
        &book.join("multiversion-tutorial"),
        dir.path(),
        "multiversion-tutorial",
    );
    if fixed {
        new.patch("api/v2/cronjob_conversion.go", &FIX, 2);
    }
    let bin = dir.path().join("bin");
    for (version, project) in [("0.1.0", &old), ("0.2.0", &new)] {
        let manager = project.build(test)?;
        std::fs::create_dir_all(bin.join(version)).unwrap();
        std::fs::copy(&manager, bin.join(version).join("manager")).unwrap();
    }
    for project in [&old, &new] {
        project.release_inputs(dir.path());
    }
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/byo_operator/olmpack.yaml"),
        dir.path().join("olmpack.yaml"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args([
            "upgrade",
            "test",
            "--plan",
            "olmpack.yaml",
            "--output",
            "json",
        ])
        .arg("--webhook-command")
        .arg(webhook_command(&bin))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let reports: Vec<Value> = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{test}: no JSON report ({e}):\n{stdout}\n{stderr}"));
    let expected_exit = if fixed { 0 } else { 1 };
    assert_eq!(
        out.status.code(),
        Some(expected_exit),
        "{test}:\n{stdout}\n{stderr}"
    );
    Some((reports, stderr))
}

#[test]
fn byo_operator_book_conversion_loses_status_conditions() {
    let test = "byo_operator_book_conversion_loses_status_conditions";
    let Some((reports, stderr)) = upgrade_test(test, false) else {
        return;
    };
    let shown = serde_json::to_string_pretty(&reports).unwrap();
    eprintln!("{shown}");
    assert_eq!(reports.len(), 1, "{shown}");
    let report = &reports[0];
    assert_eq!(report["from"], "project.v0.1.0", "{shown}");
    assert_eq!(report["to"], "project.v0.2.0", "{shown}");
    assert_eq!(report["verdict"], "data-lost", "{shown}\n{stderr}");
    let lossy: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "live/lossy-conversion")
        .collect();
    assert!(
        lossy
            .iter()
            .any(|f| f["object"] == "CronJob/cronjob-sample-v1"
                && f["version"] == "v1"
                && f["field"] == "status.conditions"
                && f["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("read at v1 after a write at v2"))),
        "no lossy conversion of status.conditions at v1 after a v2 write:\n{shown}"
    );
    // Only the conditions are lost: the fields the book's conversion copies survive.
    for finding in &lossy {
        assert_eq!(finding["field"], "status.conditions", "{shown}");
    }
    // The managers' output is kept for a failed edge, one entry per process, and shows the
    // conversion requests that reached the 0.2.0 manager.
    let processes = report["processes"].as_array().expect("process output kept");
    assert!(
        processes.iter().any(|p| p["release"] == "project.v0.1.0"),
        "{shown}"
    );
    assert!(
        processes.iter().any(|p| p["release"] == "project.v0.2.0"
            && p["tail"].as_str().is_some_and(|t| {
                t.contains(
                    "ConvertFrom: Converting CronJob from Hub version v1 to Spoke version v2",
                )
            })),
        "the 0.2.0 manager's log shows no conversion request:\n{shown}"
    );
}

#[test]
fn byo_operator_fixed_conversion_passes() {
    let test = "byo_operator_fixed_conversion_passes";
    let Some((reports, stderr)) = upgrade_test(test, true) else {
        return;
    };
    let shown = serde_json::to_string_pretty(&reports).unwrap();
    eprintln!("{shown}");
    assert_eq!(reports.len(), 1, "{shown}");
    let report = &reports[0];
    assert_eq!(report["verdict"], "passed", "{shown}\n{stderr}");
    // The controller ran: its conditions exist and were compared.
    let steps = report["steps"].as_array().unwrap();
    let round_trip = steps
        .iter()
        .find(|s| s["step"] == "round-trip")
        .unwrap_or_else(|| panic!("no round trip ran:\n{shown}"));
    assert!(
        round_trip["outcome"]
            .as_str()
            .is_some_and(|o| o.contains("write(s) through every served version")),
        "{shown}"
    );
    assert!(report.get("processes").is_none(), "{shown}");
}
