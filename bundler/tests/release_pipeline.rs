//! `olmpack release` (and `olmpack example`, which is `release` on the embedded example): the
//! whole pipeline, its re-runs, its dry run, and its faults — against the real registry, opm,
//! skopeo and the Go toolchain for a real static operator binary.

mod image_support;
mod release_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use olmpack_envtest::binaries::Tool;
use olmpack_testkit::{registry::Registry, registry::RegistryAuth};
use release_support::{example_project, ok, olmpack, operator_binary, stderr, stdout};

/// Every file under `dir` with its bytes and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
                out.insert(path.clone(), (std::fs::read(&path).unwrap(), modified));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, &mut out);
    out
}

fn layout_digest(out: &Path, name: &str) -> String {
    let layout = olmpack_oci::image::layout::Layout::open(&out.join("images").join(name)).unwrap();
    layout.find(None).unwrap().digest
}

#[test]
fn release_pipeline_example_writes_files_and_layouts_and_a_rerun_changes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("example");
    let first = ok(olmpack()
        .args(["example", "--out"])
        .arg(&out)
        .output()
        .unwrap());
    let text = stdout(&first);
    assert!(
        text.contains("upgrade check  [unchanged] passed: 3 upgrade edge(s) checked"),
        "{text}"
    );
    assert!(text.contains("push           [skipped]"), "{text}");

    // The catalog names every bundle image by the digest of the layout built from it.
    let catalog =
        std::fs::read_to_string(out.join("catalog/guestbook-operator/catalog.json")).unwrap();
    for version in ["1.0.0", "1.1.0", "1.1.1"] {
        let digest = layout_digest(&out, &format!("bundle-{version}"));
        assert!(
            catalog.contains(&format!(
                "\"image\": \"quay.io/olmpack/guestbook-operator-bundle@{digest}\""
            )),
            "{version} by digest in\n{catalog}"
        );
    }
    // opm accepts the catalog; skopeo reads the catalog image and sees the catalog label.
    let opm = Tool::Opm
        .path()
        .expect("opm is installed by cargo xtask setup");
    let validated = Command::new(&opm)
        .arg("validate")
        .arg(out.join("catalog"))
        .output()
        .unwrap();
    assert!(validated.status.success(), "{}", stderr(&validated));
    let inspected = image_support::run(
        Tool::Skopeo,
        &[
            "inspect",
            "--config",
            &format!("oci:{}:latest", out.join("images/catalog").display()),
        ],
    );
    let config: serde_json::Value = serde_json::from_str(&inspected).unwrap();
    assert_eq!(
        config["config"]["Labels"]["operators.operatorframework.io.index.configs.v1"], "/configs",
        "{inspected}"
    );

    // A second run changes no file (not even its time) and says so.
    let before = snapshot(&out);
    let second = ok(olmpack()
        .args(["example", "--out"])
        .arg(&out)
        .output()
        .unwrap());
    assert!(
        stdout(&second).contains("nothing to do: the release is complete"),
        "{}",
        stdout(&second)
    );
    assert_eq!(snapshot(&out), before);
}

#[test]
fn release_pipeline_dry_run_prints_every_step_and_writes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let plan = example_project(work.path());
    let out = work.path().join("out");
    let run = ok(olmpack()
        .args(["release", "--dry-run", "--plan"])
        .arg(&plan)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap());
    let text = stdout(&run);
    for step in [
        "1. plan",
        "2. operator image",
        "3. bundles",
        "4. bundle images",
        "5. catalog",
        "6. upgrade check",
        "7. catalog image",
        "8. install manifests",
        "9. push",
    ] {
        assert!(text.contains(step), "{step} in\n{text}");
    }
    assert!(
        text.contains("dry run: nothing was written or pushed"),
        "{text}"
    );
    let left: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
    assert!(left.is_empty(), "the dry run left {left:?}");
}

#[test]
fn release_pipeline_refuses_an_invalid_plan_and_writes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let plan = example_project(work.path());
    let text = std::fs::read_to_string(&plan).unwrap().replace(
        "catalogImage: quay.io/olmpack/guestbook-operator-catalog:latest\n",
        "",
    );
    std::fs::write(&plan, text).unwrap();
    let out = work.path().join("out");
    let run = olmpack()
        .args(["release", "--plan"])
        .arg(&plan)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    assert_eq!(
        stderr(&run),
        format!(
            "error: release step \"plan\" failed\n  caused by: {}: the plan names no catalogImage; `olmpack release` publishes every image under the name the plan gives it\n",
            plan.display()
        )
    );
    assert!(!out.exists());

    // Manifests that do not make a valid bundle: exit 1 with the findings, nothing written.
    let manifests = work.path().join("deploy/1.1.1/manifests.yaml");
    let broken = std::fs::read_to_string(&manifests)
        .unwrap()
        .replace("kind: Deployment", "kind: Deployment\n  bogus: [");
    std::fs::write(&manifests, broken).unwrap();
    let text = std::fs::read_to_string(&plan).unwrap()
        + "catalogImage: quay.io/olmpack/guestbook-operator-catalog:latest\n";
    std::fs::write(&plan, text).unwrap();
    let run = olmpack()
        .args(["release", "--plan"])
        .arg(&plan)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    assert!(stderr(&run).contains("nothing written"), "{}", stderr(&run));
    // No empty output directory either: the run made it and leaves it as it found it.
    assert!(!out.exists(), "the refused release left {}", out.display());
}

fn release(plan: &Path, out: &Path, binary: &Path, registry: &str, extra: &[&str]) -> Output {
    olmpack()
        .args([
            "release",
            "--push",
            "--output",
            "json",
            "--attempts",
            "2",
            "--timeout",
            "5",
        ])
        .arg("--plan")
        .arg(plan)
        .arg("--out")
        .arg(out)
        .arg("--binary")
        .arg(binary)
        .args(["--registry", registry])
        .args(extra)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn release_pipeline_pushes_what_the_catalog_names_and_a_rerun_pushes_nothing() {
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let plan = example_project(&work.path().join("project"));
    let binary = operator_binary(work.path());
    let out = work.path().join("out");
    let target = format!("{}/acme", registry.host());

    // First against a registry that is not there: the push step fails by name, and nothing
    // is recorded as pushed.
    let dead = "127.0.0.1:9/acme";
    let failed = release(&plan, &out, &binary, dead, &[]);
    assert_eq!(failed.status.code(), Some(2));
    assert!(
        stderr(&failed).contains("error: release step \"push\" failed"),
        "{}",
        stderr(&failed)
    );
    let state = std::fs::read_to_string(out.join("release-state.json")).unwrap();
    assert!(state.contains("\"pushed\": {}"), "{state}");

    let run = ok(release(&plan, &out, &binary, &target, &[]));
    let summary: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(summary["pushed"], true);
    assert_eq!(summary["upgradeCheck"]["status"], "passed");
    assert_eq!(
        summary["upgradeCheck"]["verdicts"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let operator = summary["operator"]["pinned"].as_str().unwrap().to_owned();
    assert!(operator.starts_with(&format!("{target}/guestbook-operator@sha256:")));

    // The newest CSV runs the pushed operator image by digest.
    let csv = std::fs::read_to_string(
        out.join("bundle/1.1.1/manifests/guestbook-operator.clusterserviceversion.yaml"),
    )
    .unwrap();
    assert!(csv.contains(&format!("image: {operator}")), "{csv}");

    // Every tag is where the summary says, and opm renders the pushed catalog image: its
    // bundles are the pushed bundle images, by digest.
    let resolve = |reference: &str| {
        let out = ok(olmpack()
            .args(["image", "resolve", reference])
            .output()
            .unwrap());
        stdout(&out).trim().to_owned()
    };
    let catalog_ref = summary["catalog"]["reference"].as_str().unwrap();
    assert_eq!(resolve(catalog_ref), summary["catalog"]["digest"]);
    assert_eq!(
        resolve(summary["operator"]["reference"].as_str().unwrap()),
        summary["operator"]["digest"]
    );
    let opm = Tool::Opm
        .path()
        .expect("opm is installed by cargo xtask setup");
    let rendered = Command::new(&opm)
        .args(["render", "-o", "json", "--use-http"])
        .arg(summary["catalog"]["pinned"].as_str().unwrap())
        .output()
        .unwrap();
    assert!(rendered.status.success(), "{}", stderr(&rendered));
    let rendered = stdout(&rendered);
    for bundle in summary["bundles"].as_array().unwrap() {
        let pinned = bundle["pinned"].as_str().unwrap();
        assert!(
            rendered.contains(&format!("\"image\": \"{pinned}\"")),
            "{pinned}"
        );
        assert_eq!(resolve(pinned), bundle["digest"]);
        assert_eq!(
            resolve(bundle["reference"].as_str().unwrap()),
            bundle["digest"]
        );
    }

    // A re-run changes nothing and pushes nothing.
    let before = snapshot(&out);
    let again = ok(release(&plan, &out, &binary, &target, &[]));
    assert!(
        stderr(&again).contains("nothing to do: the release is complete"),
        "{}",
        stderr(&again)
    );
    assert!(
        stderr(&again).contains("0 image(s) to push, 5 already at their digest"),
        "{}",
        stderr(&again)
    );
    assert_eq!(snapshot(&out), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn release_pipeline_rejected_credentials_name_the_step_and_never_show_the_secret() {
    let registry = Registry::start(RegistryAuth::Htpasswd {
        username: "releaser".into(),
        password: "right-password".into(),
    })
    .await
    .unwrap();
    let work = tempfile::tempdir().unwrap();
    let plan = example_project(&work.path().join("project"));
    let binary = operator_binary(work.path());
    let out = work.path().join("out");
    let target = format!("{}/acme", registry.host());
    let secret = "wrong-secret-c0ffee";
    let failed = olmpack()
        .args(["-vvv", "release", "--push", "--attempts", "1"])
        .arg("--plan")
        .arg(&plan)
        .arg("--out")
        .arg(&out)
        .arg("--binary")
        .arg(&binary)
        .args(["--registry", &target, "--username", "releaser"])
        .env("OLMPACK_REGISTRY_PASSWORD", secret)
        .env("OLMPACK_LOG", "trace")
        .output()
        .unwrap();
    assert_eq!(failed.status.code(), Some(2));
    let all = format!("{}{}", stdout(&failed), stderr(&failed));
    assert!(all.contains("error: release step \"push\" failed"), "{all}");
    assert!(all.contains("denied access (HTTP 401)"), "{all}");
    assert!(!all.contains(secret), "the password leaked");
    let encoded = base64_basic("releaser", secret);
    assert!(!all.contains(&encoded), "the encoded credential leaked");

    // With the right password the same command finishes the release.
    let done = ok(olmpack()
        .args(["release", "--push"])
        .arg("--plan")
        .arg(&plan)
        .arg("--out")
        .arg(&out)
        .arg("--binary")
        .arg(&binary)
        .args(["--registry", &target, "--username", "releaser"])
        .env("OLMPACK_REGISTRY_PASSWORD", "right-password")
        .output()
        .unwrap());
    assert!(stdout(&done).contains("and pushed it"), "{}", stdout(&done));
}

fn base64_basic(user: &str, password: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn release_pipeline_push_cut_off_half_way_publishes_no_tag_and_a_rerun_finishes() {
    use image_support::proxy::{Fault, FaultProxy, Rule};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    olmpack::install_crypto_provider();
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    // After the third manifest is stored, every request is cut off, until `cut` is lifted.
    let manifests = Arc::new(AtomicUsize::new(0));
    let cut = Arc::new(AtomicBool::new(true));
    let (seen, active) = (manifests.clone(), cut.clone());
    let rule: Arc<Rule> = Arc::new(move |_, method, path| {
        if active.load(Ordering::SeqCst) && seen.load(Ordering::SeqCst) >= 3 {
            return Fault::Reset;
        }
        if method == "PUT" && path.contains("/manifests/") {
            seen.fetch_add(1, Ordering::SeqCst);
        }
        Fault::Pass
    });
    let proxy = FaultProxy::start(registry.host(), rule).await;
    let work = tempfile::tempdir().unwrap();
    let plan = example_project(&work.path().join("project"));
    let binary = operator_binary(work.path());
    let out = work.path().join("out");
    let target = format!("{}/acme", proxy.host());
    let go = |plan: PathBuf, out: PathBuf, binary: PathBuf, target: String| {
        tokio::task::spawn_blocking(move || release(&plan, &out, &binary, &target, &[]))
    };

    let failed = go(plan.clone(), out.clone(), binary.clone(), target.clone())
        .await
        .unwrap();
    assert_eq!(failed.status.code(), Some(2), "{}", stderr(&failed));
    assert!(
        stderr(&failed).contains("error: release step \"push\" failed"),
        "{}",
        stderr(&failed)
    );
    // Tags move last: after the cut, no tag of the release exists in the registry.
    let inspector = image_support::Inspector::new(oci_client::secrets::RegistryAuth::Anonymous);
    let direct = format!("{}/acme", registry.host());
    for name in [
        "guestbook-operator:v1.1.1",
        "guestbook-operator-bundle:v1.0.0",
        "guestbook-operator-bundle:v1.1.1",
        "guestbook-operator-catalog:latest",
    ] {
        assert!(
            inspector
                .manifest(&format!("{direct}/{name}"))
                .await
                .is_none(),
            "{name} was tagged before everything was pushed"
        );
    }

    // The same command, once the network is back, finishes the release.
    cut.store(false, Ordering::SeqCst);
    let done = ok(go(plan, out, binary, target).await.unwrap());
    let summary: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    let catalog = summary["catalog"]["reference"]
        .as_str()
        .unwrap()
        .replace(&proxy.host(), &registry.host());
    let (_, digest) = inspector.manifest(&catalog).await.expect("catalog tagged");
    assert_eq!(digest, summary["catalog"]["digest"]);
}
