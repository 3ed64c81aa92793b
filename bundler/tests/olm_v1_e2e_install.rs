//! The real OLM v1 (catalogd and operator-controller at the version `tools.toml` pins) installs
//! what `olmpack release` ships: the reference operator's catalog image and bundle images,
//! pushed to a registry on 127.0.0.1, applied by the release's own `install/olm-v1.yaml`
//! (ClusterCatalog, installer ServiceAccount and RBAC, ClusterExtension), reach
//! `Installed=True`, then upgrade along the catalog's edges by version pinning. Verdicts quote
//! OLM v1's own conditions. Without OLM v1's binaries the test says NOT RUN (a failure in CI).

mod release_support;

use std::path::Path;
use std::time::{Duration, Instant};

use olmpack_envtest::binaries::Tool;
use olmpack_envtest::olmv1::{Condition, OlmV1Env, is_true};
use olmpack_testkit::registry::{Registry, RegistryAuth};
use release_support::{example_project, ok, olmpack, operator_binary};
use serde_json::Value;

/// How long OLM v1 may take for one install or upgrade.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether OLM v1's binaries are installed; `false` said loudly (a failure in CI).
fn olm_v1_installed() -> bool {
    let missing: Vec<String> = [Tool::Catalogd, Tool::OperatorController]
        .into_iter()
        .filter_map(|tool| tool.path().err().map(|e| e.to_string()))
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "OLM v1 is not installed in CI: {missing:?}"
    );
    eprintln!("NOT RUN: OLM v1 is not installed: {missing:?}");
    false
}

/// `olmpack release --push` of the example operator to `registry`; returns the output dir.
fn release(work: &Path, registry: &str) -> std::path::PathBuf {
    let plan = example_project(&work.join("project"));
    let binary = operator_binary(work);
    let out = work.join("out");
    ok(olmpack()
        .args(["release", "--push", "--output", "json"])
        .arg("--plan")
        .arg(&plan)
        .arg("--out")
        .arg(&out)
        .arg("--binary")
        .arg(&binary)
        .args(["--registry", &format!("{registry}/acme")])
        .output()
        .unwrap());
    out
}

fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    olmpack_model::yaml::from_multi_str(&text)
        .unwrap()
        .into_iter()
        .filter(|d| !d.is_null())
        .collect()
}

fn shown(conditions: &[Condition]) -> String {
    conditions
        .iter()
        .map(|c| format!("{c}\n"))
        .collect::<String>()
}

/// Pins the ClusterExtension to `version`, applies it and waits until OLM v1 says it
/// installed that version; returns OLM v1's conditions.
async fn install_version(olm: &mut OlmV1Env, extension: &Value, version: &str) -> Vec<Condition> {
    let mut pinned = extension.clone();
    pinned["spec"]["source"]["catalog"]["version"] = Value::from(version);
    olm.apply(&pinned).await.unwrap();
    let name = extension["metadata"]["name"].as_str().unwrap();
    let (conditions, body) = olm
        .wait_for(
            "ClusterExtension",
            name,
            STEP_TIMEOUT,
            |conditions, body| {
                is_true(conditions, "Installed")
                    && body["status"]["install"]["bundle"]["version"] == version
            },
        )
        .await
        .unwrap_or_else(|err| panic!("{name} {version}: {err}"));
    assert!(
        conditions.iter().any(|c| c.type_ == "Installed"
            && c.reason == "Succeeded"
            && c.message.starts_with("Installed bundle ")
            && c.message.ends_with(" successfully")),
        "{}",
        shown(&conditions)
    );
    eprintln!(
        "olm v1: {name} at {}:\n{}",
        body["status"]["install"]["bundle"]["name"],
        shown(&conditions)
    );
    conditions
}

#[tokio::test(flavor = "multi_thread")]
async fn olm_v1_e2e_install_the_reference_operator_installs_and_upgrades_along_its_edges() {
    if !olm_v1_installed() {
        return;
    }
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = release(work.path(), &registry.host());
    let manifests = documents(&out.join("install/olm-v1.yaml"));
    let catalog = manifests
        .iter()
        .find(|d| d["kind"] == "ClusterCatalog")
        .unwrap();
    let image = catalog["spec"]["source"]["image"]["ref"].as_str().unwrap();
    assert!(
        image.starts_with(&format!("{}/acme/", registry.host())),
        "install/olm-v1.yaml names the pushed catalog: {image}"
    );

    let started = Instant::now();
    let mut olm = OlmV1Env::start(&[registry.host()]).await.unwrap();
    let up = started.elapsed();
    for object in manifests.iter().filter(|d| d["kind"] != "ClusterExtension") {
        olm.apply(object).await.unwrap();
    }
    let catalog_name = catalog["metadata"]["name"].as_str().unwrap();
    let (served, _) = olm
        .wait_for("ClusterCatalog", catalog_name, STEP_TIMEOUT, |c, _| {
            is_true(c, "Serving")
        })
        .await
        .unwrap();
    eprintln!("olm v1: {catalog_name}:\n{}", shown(&served));

    let extension = manifests
        .iter()
        .find(|d| d["kind"] == "ClusterExtension")
        .unwrap();
    // The catalog's channel: 1.0.0 → 1.1.0 → 1.1.1 (replaces), each pinned in turn.
    for version in ["1.0.0", "1.1.0", "1.1.1"] {
        let step = Instant::now();
        install_version(&mut olm, extension, version).await;
        eprintln!("olm v1: {version} in {:.1?}", step.elapsed());
    }
    eprintln!(
        "olm v1: environment up in {up:.1?}, everything in {:.1?}",
        started.elapsed()
    );
}
