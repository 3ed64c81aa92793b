//! The reference operator's bundle/ and catalog/ (generated from olmpack.yaml at the
//! repository root): current, and accepted by the real opm and by olmpack's validators.

use std::path::{Path, PathBuf};
use std::process::Command;

mod bundle_support;

use olmpack_envtest::binaries::Tool;
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn olmpack() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_olmpack"));
    cmd.current_dir(root());
    cmd
}

#[test]
fn bundle_and_catalog_are_current() {
    let out = olmpack().args(["generate", "--check"]).output().unwrap();
    assert!(
        out.status.success(),
        "bundle/ or catalog/ is stale; run `cargo xtask regenerate`:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_releases_walk_the_crd_versions() {
    let plan = olmpack::plan::load(&root().join("olmpack.yaml"), &Default::default()).unwrap();
    let served = |version: &str| -> Vec<(String, bool)> {
        let crd: Value = olmpack_model::yaml::from_str(
            &std::fs::read_to_string(root().join(format!(
                "bundle/{version}/manifests/apps.olmpack.dev_webapps.yaml"
            )))
            .unwrap(),
        )
        .unwrap();
        crd["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v["served"] == true)
            .map(|v| (v["name"].as_str().unwrap().to_owned(), v["storage"] == true))
            .collect()
    };
    assert!(plan.plan.releases.len() >= 5);
    assert_eq!(served("0.1.0"), [("v1alpha1".to_owned(), true)]);
    assert!(served("0.2.0").contains(&("v1beta1".to_owned(), true)));
    assert!(served("0.3.0").contains(&("v1".to_owned(), true)));
    assert!(
        !served("1.0.0").iter().any(|(v, _)| v == "v1alpha1"),
        "1.0.0 no longer serves v1alpha1"
    );
    // The conversion webhook is declared in the CSV from 0.2.0 on; the CRD carries it in the
    // shape OLM writes for that definition (OLM's Service, no CA).
    for version in ["0.2.0", "0.3.0", "1.0.0", "1.0.1"] {
        let csv = std::fs::read_to_string(root().join(format!(
            "bundle/{version}/manifests/webapp-operator.clusterserviceversion.yaml"
        )))
        .unwrap();
        assert!(csv.contains("type: ConversionWebhook"), "{version}");
        let crd = std::fs::read_to_string(root().join(format!(
            "bundle/{version}/manifests/apps.olmpack.dev_webapps.yaml"
        )))
        .unwrap();
        let olms_shape = "  conversion:\n    strategy: Webhook\n    webhook:\n      clientConfig:\n        service:\n          name: webapp-operator-service\n          namespace: webapp-operator-system\n          path: /convert\n          port: 443\n      conversionReviewVersions:\n      - v1\n";
        assert!(
            crd.contains(olms_shape) && !crd.contains("caBundle"),
            "{version} CRD's spec.conversion is not in OLM's shape:\n{crd}"
        );
    }
    let patch = std::fs::read_to_string(
        root().join("bundle/1.0.1/manifests/webapp-operator.clusterserviceversion.yaml"),
    )
    .unwrap();
    assert!(patch.contains("olm.skipRange: \">=0.3.0 <1.0.1\""));
}

#[test]
fn opm_and_olmpack_accept_the_catalog_and_render_every_bundle_alike() {
    let opm = Tool::Opm
        .path()
        .expect("opm is installed by cargo xtask setup");
    let validated = Command::new(&opm)
        .arg("validate")
        .arg(root().join("catalog"))
        .output()
        .unwrap();
    assert!(
        validated.status.success(),
        "opm validate: {}",
        String::from_utf8_lossy(&validated.stderr)
    );
    let ours = olmpack()
        .args(["catalog", "validate", "catalog"])
        .output()
        .unwrap();
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stdout)
    );
    let bundles = olmpack()
        .args(["bundle", "validate", "bundle"])
        .output()
        .unwrap();
    assert!(
        bundles.status.success(),
        "{}",
        String::from_utf8_lossy(&bundles.stdout)
    );

    // Every bundle directory; the generated-tree stamp (a file) is not a bundle.
    for entry in std::fs::read_dir(root().join("bundle")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            bundle_support::assert_renders_like_opm(&path);
        }
    }
}

#[test]
fn the_docs_show_the_current_upgrade_graph() {
    let out = olmpack()
        .args(["catalog", "graph", "catalog"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let graph = String::from_utf8(out.stdout).unwrap();
    let readme = std::fs::read_to_string(root().join("docs/reference-operator.md")).unwrap();
    let block =
        format!("<!-- olmpack-graph:begin -->\n```mermaid\n{graph}```\n<!-- olmpack-graph:end -->");
    assert!(
        readme.contains(&block),
        "docs/reference-operator.md's upgrade graph is stale; paste the output of `olmpack catalog graph catalog`"
    );
}
