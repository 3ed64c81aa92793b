//! `catalog::generate::build_catalog`: the catalog for a release plan is deterministic, valid
//! for opm and olmpack, and its upgrade graph is what the policy promises.

use std::path::{Path, PathBuf};
use std::process::Command;

use olmpack::catalog::declcfg::Bundle;
use olmpack::catalog::generate::{PackageMeta, build_catalog};
use olmpack::catalog::policy::{Policy, ReleaseInput};
use olmpack::catalog::render::{RenderOptions, render_dir};
use olmpack::catalog::validate::{ValidateOptions, validate_dir};
use olmpack::catalog::version::Version;

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

fn input(version: &str, channels: &[&str]) -> ReleaseInput {
    ReleaseInput {
        bundle: format!("webapp-operator.v{version}"),
        version: Version::parse(version).unwrap(),
        channels: channels.iter().map(|c| c.to_string()).collect(),
        replaces: None,
        skips: None,
        skip_range: None,
        deprecated: None,
        broken: false,
    }
}

#[test]
fn generated_catalog_is_deterministic_and_valid_for_both_validators() {
    let package = PackageMeta {
        name: "webapp-operator".into(),
        default_channel: "stable".into(),
        description: "Runs web apps.".into(),
        icon: None,
    };
    let mut old = input("0.1.0", &["stable"]);
    old.deprecated = Some("0.1.0 is out of support".into());
    let inputs = vec![old, input("0.2.0", &["stable"])];
    let policy = Policy {
        per_minor_channels: true,
        ..Policy::default()
    };
    let a = build_catalog(&package, &inputs, &policy, &rendered()).unwrap();
    let b = build_catalog(&package, &inputs, &policy, &rendered()).unwrap();
    assert_eq!(a, b, "same inputs, same bytes");
    let paths: Vec<String> = a.iter().map(|(p, _)| p.display().to_string()).collect();
    assert_eq!(paths, ["webapp-operator/catalog.json"]);

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("catalog");
    a.write_to(&out).unwrap();
    assert!(a.check_against(&out).unwrap().is_empty());
    let (report, model) = validate_dir(
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
        report.render(Default::default())
    );
    let pkg = &model.packages["webapp-operator"];
    let channels: Vec<&str> = pkg.channels.keys().map(String::as_str).collect();
    assert_eq!(
        channels,
        [
            "candidate",
            "candidate-v0.1",
            "candidate-v0.2",
            "fast",
            "fast-v0.1",
            "fast-v0.2",
            "stable",
            "stable-v0.1",
            "stable-v0.2"
        ]
    );
    let stable = &pkg.channels["stable"];
    assert_eq!(stable.head().unwrap().name, "webapp-operator.v0.2.0");
    assert_eq!(stable.entries[1].replaces, "webapp-operator.v0.1.0");
    assert_eq!(stable.entries[1].skip_range, ">=0.1.0 <0.2.0");
    assert!(pkg.bundles["webapp-operator.v0.1.0"].deprecation.is_some());

    let opm = upgrade_tests::Tool::Opm
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
        &[input("0.1.0", &["stable"])],
        &Policy::default(),
        &rendered(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("[catalog/default-channel-missing] invalid package \"webapp-operator\": default channel \"beta\" not found in channels list"),
        "{err}"
    );
}
