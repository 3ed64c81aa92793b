//! Bring your own operator: the kubebuilder book's CronJob project, built from source with Go,
//! as a user's release job would run it. 0.1.0 is cronjob-tutorial (CronJob v1), 0.2.0 is
//! multiversion-tutorial (v1 + v2, conversion webhook); each release's `dist/install.yaml`
//! and samples with only a plan file added (tests/fixtures/byo_operator/olmpack.yaml).
//!
//! `olmpack upgrade test` runs the stock manager binaries through `--webhook-command` with
//! their Deployment's arguments (docs/upgrade-test.md "The webhook command"): the manager gets a kubeconfig acting as its
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

/// The webhook command of docs/upgrade-test.md's kubebuilder workflow: one manager per release, picked by
/// `$OLMPACK_RELEASE`, with its Deployment's arguments (`"$@"`), and `--leader-elect=false`
/// after them when `elect` is false (the docs' commands add it to save the wait for the
/// stopped manager's Lease; without it olmpack waits as a rolling update does).
fn webhook_command(bin: &Path, elect: bool) -> String {
    let tail = if elect { "" } else { " --leader-elect=false" };
    format!(
        r#"case "$OLMPACK_RELEASE" in
  project.v0.1.0) manager='{}/0.1.0/manager' ;;
  *) manager='{}/0.2.0/manager' ;;
esac
"$manager" "$@"{tail}"#,
        bin.display(),
        bin.display()
    )
}

/// A run as a new user's job makes it: an empty HOME, no tool variables, only a tools image
/// to install from.
struct NewUser<'a> {
    home: &'a Path,
    tools_image: &'a str,
}

impl NewUser<'_> {
    fn apply(&self, cmd: &mut Command) {
        for tool in olmpack_envtest::binaries::Tool::ALL {
            cmd.env_remove(tool.env_var());
        }
        for data in [
            olmpack_envtest::binaries::ToolData::OlmCrds,
            olmpack_envtest::binaries::ToolData::KwokStages,
            olmpack_envtest::binaries::ToolData::OlmV1Crds,
            olmpack_envtest::binaries::ToolData::OlmV1ExperimentalCrds,
            olmpack_envtest::binaries::ToolData::OlmV1Manifest,
        ] {
            cmd.env_remove(data.env_var());
        }
        for var in ["KUBEBUILDER_ASSETS", "OLMPACK_TOOLS_DIR", "XDG_CACHE_HOME"] {
            cmd.env_remove(var);
        }
        cmd.env("HOME", self.home)
            .env("OLMPACK_TOOLS_IMAGE", self.tools_image);
    }
}

/// Builds both managers (0.2.0 with `fix` applied or not), generates nothing but what the
/// plan asks, and runs `olmpack upgrade test` (as `user` when given; the managers electing
/// their leader when `elect`); returns its JSON report and stderr.
fn upgrade_test(
    test: &str,
    fixed: bool,
    elect: bool,
    user: Option<&NewUser>,
) -> Option<(Vec<Value>, String)> {
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
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_olmpack"));
    cmd.args([
        "upgrade",
        "test",
        "--plan",
        "olmpack.yaml",
        "--output",
        "json",
    ])
    .arg("--webhook-command")
    .arg(webhook_command(&bin, elect))
    .current_dir(dir.path());
    if let Some(user) = user {
        user.apply(&mut cmd);
    }
    let out = cmd.output().unwrap();
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
    // The managers elect their leader as their Deployment says (`--leader-elect`): each new
    // one waits out the stopped one's Lease, and olmpack waits for it before it watches
    // what its controllers write (without that wait the loss below was not seen).
    let Some((reports, stderr)) = upgrade_test(test, false, true, None) else {
        return;
    };
    let shown = serde_json::to_string_pretty(&reports).unwrap();
    eprintln!("{shown}");
    assert_eq!(reports.len(), 1, "{shown}");
    let report = &reports[0];
    assert_eq!(report["from"], "project.v0.1.0", "{shown}");
    assert_eq!(report["to"], "project.v0.2.0", "{shown}");
    assert_eq!(report["verdict"], "data-lost", "{shown}\n{stderr}");
    let took_lease = report["steps"].as_array().unwrap().iter().any(|s| {
        s["step"] == "lease"
            && s["outcome"].as_str().is_some_and(|o| {
                o.starts_with("project.v0.2.0's process took the leader-election Lease")
            })
    });
    assert!(took_lease, "0.2.0 never took 0.1.0's Lease:\n{shown}");
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
    let Some((reports, stderr)) = upgrade_test(test, true, false, None) else {
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

#[test]
fn byo_operator_tools_image_in_an_empty_home() {
    let test = "byo_operator_tools_image_in_an_empty_home";
    let Some(cache) = olmpack_envtest::binaries::located_cache_dir() else {
        byo_support::not_run::<()>(
            test,
            "the tools are not in a tool cache laid out by cargo xtask setup",
        );
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let registry = runtime
        .block_on(olmpack_testkit::registry::Registry::start(
            olmpack_testkit::registry::RegistryAuth::Anonymous,
        ))
        .expect("the Distribution registry starts");
    // olmpack's release job: pack the tools setup built, push them.
    let started = std::time::Instant::now();
    let layout = work.path().join("tools-layout");
    let packed = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["tools", "pack", "--layout"])
        .arg(&layout)
        .env("OLMPACK_TOOLS_DIR", &cache)
        .output()
        .unwrap();
    assert!(
        packed.status.success(),
        "{}",
        String::from_utf8_lossy(&packed.stderr)
    );
    let target = format!("{}/olmpack-tools:test", registry.host());
    let pushed = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["image", "push"])
        .arg(&layout)
        .arg(&target)
        .output()
        .unwrap();
    assert!(
        pushed.status.success(),
        "{}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    let digest = String::from_utf8_lossy(&pushed.stdout).trim().to_owned();
    eprintln!(
        "{test}: packed and pushed the tools in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // A new user's job: nothing but olmpack and the image's name.
    let home = work.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let reference = format!("{}/olmpack-tools@{digest}", registry.host());
    let user = NewUser {
        home: &home,
        tools_image: &reference,
    };
    let started = std::time::Instant::now();
    let Some((reports, stderr)) = upgrade_test(test, true, false, Some(&user)) else {
        return;
    };
    eprintln!(
        "{test}: tools installed and a verdict in {:.1} s (manager builds included)",
        started.elapsed().as_secs_f64()
    );
    let installed = home.join(".cache/olmpack/tools");
    assert!(
        stderr.contains(&format!(
            "olmpack: etcd, kube-apiserver not found; installing olmpack's pinned tools from {reference} into {}",
            installed.display()
        )),
        "{stderr}"
    );
    let etcd = installed.join(
        olmpack_envtest::binaries::Tool::Etcd
            .cache_binary()
            .unwrap(),
    );
    assert!(etcd.is_file(), "{} not installed", etcd.display());
    // The image carries every pinned Kubernetes minor; a run on the default one installs
    // none of the others.
    let minors = olmpack_envtest::binaries::KubeMinor::pinned();
    for minor in minors.into_iter().filter(|m| !m.is_default()) {
        let dir = installed.join(minor.cache_dir());
        assert!(!dir.exists(), "{} installed unasked", dir.display());
    }
    let shown = serde_json::to_string_pretty(&reports).unwrap();
    assert_eq!(reports.len(), 1, "{shown}");
    assert_eq!(reports[0]["verdict"], "passed", "{shown}\n{stderr}");
    // OLM v1 from the same image: the reference catalog's head under the real OLM v1.
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_olmpack"));
    cmd.args(["upgrade", "olm", "--olm", "v1", "--quiet", "--shard", "5/5"])
        .arg("--catalog")
        .arg(&catalog);
    user.apply(&mut cmd);
    let out = cmd.output().unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("webapp-operator.v1.0.1") && text.contains("on OLM v1"),
        "{text}"
    );
    for tool in [
        olmpack_envtest::binaries::Tool::OperatorController,
        olmpack_envtest::binaries::Tool::Olareg,
    ] {
        let binary = installed.join(tool.cache_binary().unwrap());
        assert!(binary.is_file(), "{} not installed", binary.display());
    }
}

/// `olmpack upgrade olm` on the same two releases: the real OLM v0 installs 0.1.0 by
/// Subscription, creates its example, upgrades to 0.2.0 and reads the example back, with the
/// stock managers started by the webhook command as the pods' process (their output appended
/// to one log per release, which shows the conversion requests OLM's wiring sent them). Run
/// as two shards (`--shard 1/2`, `2/2`, one case each) whose JUnit reports
/// `upgrade merge-shards` puts back together.
#[test]
fn byo_operator_upgrade_olm_through_the_real_managers() {
    upgrade_olm_through_the_real_managers(
        "byo_operator_upgrade_olm_through_the_real_managers",
        "v0",
    );
}

/// The same under the real OLM v1: a ClusterExtension installs 0.1.0 and is pinned to 0.2.0;
/// the stock managers serve the webhooks OLM v1 wired, with the certificate of its provider
/// (service-ca, which olmpack plays), and the 0.2.0 manager converts the example on its way
/// back.
#[test]
fn byo_operator_upgrade_olm_v1_through_the_real_managers() {
    upgrade_olm_through_the_real_managers(
        "byo_operator_upgrade_olm_v1_through_the_real_managers",
        "v1",
    );
}

/// Builds both managers, then `olmpack upgrade olm --olm OLM` in two shards and their JUnit
/// merged; the 0.2.0 manager must have converted.
fn upgrade_olm_through_the_real_managers(test: &str, olm: &str) {
    let Some(book) = byo_support::book(test) else {
        return;
    };
    let Some(()) = byo_support::tools(test) else {
        return;
    };
    let olm_binary = match olm {
        "v0" => olmpack_envtest::binaries::Tool::OlmOperator,
        _ => olmpack_envtest::binaries::Tool::OperatorController,
    };
    if let Err(err) = olm_binary.path() {
        byo_support::not_run::<()>(test, &err.to_string());
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("olmpack-byo-olm-")
        .tempdir()
        .unwrap();
    let mut new = Project::copy(
        &book.join("multiversion-tutorial"),
        dir.path(),
        "multiversion-tutorial",
    );
    new.patch("api/v2/cronjob_conversion.go", &FIX, 2);
    let old = Project::copy(
        &book.join("cronjob-tutorial"),
        dir.path(),
        "cronjob-tutorial",
    );
    let bin = dir.path().join("bin");
    for (version, project) in [("0.1.0", &old), ("0.2.0", &new)] {
        let Some(manager) = project.build(test) else {
            return;
        };
        std::fs::create_dir_all(bin.join(version)).unwrap();
        std::fs::copy(&manager, bin.join(version).join("manager")).unwrap();
        project.release_inputs(dir.path());
    }
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/byo_operator/olmpack.yaml"),
        dir.path().join("olmpack.yaml"),
    )
    .unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let command = format!(
        "{} >> '{}'/\"$OLMPACK_RELEASE\".log 2>&1",
        webhook_command(&bin, false),
        logs.display()
    );
    // Two shards, as two CI jobs would run them, then their JUnit reports merged.
    let mut table = String::new();
    let mut shown = String::new();
    for shard in ["1/2", "2/2"] {
        let (markdown, junit) = (
            dir.path().join(format!("olm-{}.md", &shard[..1])),
            dir.path().join(format!("olm-{}.xml", &shard[..1])),
        );
        let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
            .args([
                "upgrade",
                "olm",
                "--olm",
                olm,
                "--plan",
                "olmpack.yaml",
                "--quiet",
            ])
            .args(["--cluster-crd", "servicemonitors.monitoring.coreos.com"])
            .args(["--shard", shard, "--markdown"])
            .arg(&markdown)
            .arg("--junit")
            .arg(&junit)
            .arg("--webhook-command")
            .arg(&command)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let out_text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("shard {shard}:\n{out_text}");
        assert_eq!(out.status.code(), Some(0), "shard {shard}: {out_text}");
        table.push_str(&std::fs::read_to_string(&markdown).unwrap());
        shown.push_str(&out_text);
    }
    let merged = dir.path().join("olm.xml");
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args([
            "upgrade",
            "merge-shards",
            "olm-2.xml",
            "olm-1.xml",
            "-o",
            "olm.xml",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "merged 2 report(s) (all 2 shard(s)) into olm.xml: 2 case(s), 0 failed, 0 in error, 0 skipped\n"
    );
    assert_eq!(out.status.code(), Some(0));
    let junit = std::fs::read_to_string(&merged).unwrap();
    let (first, second) = (
        junit
            .find("name=\"project.v0.1.0 → project.v0.2.0")
            .unwrap(),
        junit.find("name=\"project.v0.2.0 [").unwrap(),
    );
    assert!(first < second, "{junit}");
    let log = std::fs::read_to_string(logs.join("project.v0.2.0.log")).unwrap_or_default();
    assert!(
        log.contains("Converting CronJob from"),
        "no conversion request reached the 0.2.0 manager:\n{log}\n{shown}"
    );
}
