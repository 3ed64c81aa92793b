//! `catalog::generate::build_catalog`: the catalog for a release plan is deterministic, valid
//! for opm and olmpack, and its channels are the plan's upgrade graph.

use std::path::{Path, PathBuf};
use std::process::Command;

use olmpack::catalog::declcfg::Bundle;
use olmpack::catalog::generate::{PackageMeta, build_catalog};
use olmpack::catalog::load::load_dir;
use olmpack::catalog::model::Model;
use olmpack::catalog::render::{RenderOptions, render_dir};
use olmpack::catalog::validate::{ValidateOptions, validate_dir};
use olmpack_model::upgrade_graph::UpgradeGraph;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/catalog/bundles")
        .join(name)
}

fn rendered() -> Vec<Bundle> {
    ["webapp-0.1.0", "webapp-0.2.0"]
        .iter()
        .map(|d| {
            render_dir(
                &fixture(d),
                &RenderOptions {
                    image: format!("quay.io/example/webapp-operator-bundle:v{}", &d[7..]),
                    ..RenderOptions::default()
                },
            )
            .unwrap()
        })
        .collect()
}

/// The upgrade graph of a plan publishing `releases` (YAML flow mappings) to `stable`.
fn graph(releases: &[&str]) -> UpgradeGraph {
    let text = format!(
        "package: webapp-operator\ndefaultChannel: stable\nchannels: [stable]\ncsv: {{displayName: W, description: d, provider: {{name: p}}}}\nreleases:\n{}",
        releases
            .iter()
            .map(|r| format!("- {r}\n"))
            .collect::<String>()
    );
    UpgradeGraph::from_plan(&olmpack_model::plan::parse(Path::new("olmpack.yaml"), &text).unwrap())
}

#[test]
fn generated_catalog_is_deterministic_and_valid_for_both_validators() {
    let package = PackageMeta {
        name: "webapp-operator".into(),
        default_channel: "stable".into(),
        description: "Runs web apps.".into(),
        icon: None,
    };
    let graph = graph(&[
        "{version: 0.1.0, manifests: m, deprecated: true}",
        "{version: 0.2.0, manifests: m, skipRange: '>=0.1.0 <0.2.0'}",
    ]);
    let a = build_catalog(&package, &graph, &rendered()).unwrap();
    let b = build_catalog(&package, &graph, &rendered()).unwrap();
    assert_eq!(a, b, "same inputs, same bytes");
    let paths: Vec<String> = a.iter().map(|(p, _)| p.display().to_string()).collect();
    assert_eq!(paths, ["webapp-operator/catalog.json"]);

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("catalog");
    a.write_to(&out).unwrap();
    assert!(
        a.check_against(&out, &Default::default())
            .unwrap()
            .is_empty()
    );
    let report = validate_dir(
        &out,
        ValidateOptions {
            strict: true,
            ..ValidateOptions::default()
        },
    )
    .unwrap();
    assert!(
        !report.has_errors(),
        "{}",
        report.format(Default::default())
    );
    let model = Model::from_config(load_dir(&out).unwrap().config).0;
    let pkg = &model.packages["webapp-operator"];
    let channels: Vec<&str> = pkg.channels.keys().map(String::as_str).collect();
    assert_eq!(channels, ["stable"]);
    let stable = &pkg.channels["stable"];
    assert_eq!(stable.head().unwrap().name, "webapp-operator.v0.2.0");
    assert_eq!(stable.entries[1].replaces, "webapp-operator.v0.1.0");
    assert_eq!(stable.entries[1].skip_range, ">=0.1.0 <0.2.0");
    assert!(pkg.bundles["webapp-operator.v0.1.0"].deprecation.is_some());

    let opm = olmpack_envtest::binaries::Tool::Opm
        .path()
        .expect("opm is required for this test");
    let status = Command::new(opm)
        .arg("validate")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
}

#[test]
fn a_plan_that_would_be_invalid_is_refused() {
    let package = PackageMeta {
        name: "webapp-operator".into(),
        default_channel: "beta".into(),
        ..PackageMeta::default()
    };
    let err = build_catalog(
        &package,
        &graph(&["{version: 0.1.0, manifests: m}"]),
        &rendered(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("[catalog/default-channel-missing] invalid package \"webapp-operator\": default channel \"beta\" not found in channels list"),
        "{err}"
    );
}
