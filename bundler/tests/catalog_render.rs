//! `olmpack catalog render` of bundle directories equals `opm render` (compared as JSON).
//!
//! Fixtures: two registry+v1 bundles with a CSV (relatedImages, init containers, an
//! `olm.skipRange`, owned and required CRDs), CRDs with several versions, annotations,
//! properties.yaml and dependencies.yaml.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use olmpack::catalog::declcfg::to_value;
use olmpack::catalog::render::{MigrateLevel, RenderOptions, render_dir};
use serde_json::Value;

fn bundles() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/catalog/bundles");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    out.sort();
    out
}

/// `opm render <args> <dir>`, as it ran.
fn opm_render_output(args: &[&str], dir: &Path) -> Output {
    let opm = upgrade_tests::Tool::Opm
        .path()
        .expect("opm is required for this test");
    Command::new(opm)
        .arg("render")
        .args(args)
        .arg(dir)
        .output()
        .unwrap()
}

/// `opm render -o json <args> <dir>`, which must succeed, as a JSON value.
fn opm_render(args: &[&str], dir: &Path) -> Value {
    let out = opm_render_output(&[&["-o", "json"], args].concat(), dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn bundle_directories_render_like_opm() {
    let dirs = bundles();
    assert!(dirs.len() >= 2);
    for dir in dirs {
        let ours = to_value(&render_dir(&dir, &RenderOptions::default()).unwrap());
        let theirs = opm_render(&[], &dir);
        assert_eq!(ours, theirs, "{}", dir.display());
        // Same property order, not just the same set.
        let types = |v: &Value| -> Vec<String> {
            v["properties"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["type"].as_str().unwrap().to_owned())
                .collect()
        };
        assert!(types(&ours).last().unwrap() == "olm.bundle.object");
    }
}

#[test]
fn migrate_level_with_an_image_reference_matches_opm() {
    for dir in bundles() {
        let ours = render_dir(
            &dir,
            &RenderOptions {
                image: String::new(),
                migrate: MigrateLevel::BundleObjectToCsvMetadata,
            },
        )
        .unwrap();
        // Without an image opm leaves the bundle objects alone; so do we.
        assert!(
            ours.properties
                .iter()
                .any(|p| p.type_ == "olm.bundle.object")
        );
        let loaded = olmpack::bundle::load::load_dir(&dir).unwrap();
        let csv = loaded.csv().unwrap();
        let version = csv.value["spec"]["version"].as_str().unwrap();
        let image = format!("quay.io/example/webapp-operator-bundle:v{version}");
        let ours = to_value(
            &render_dir(
                &dir,
                &RenderOptions {
                    image: image.clone(),
                    migrate: MigrateLevel::BundleObjectToCsvMetadata,
                },
            )
            .unwrap(),
        );
        let theirs = opm_render(
            &[
                "--migrate-level",
                "bundle-object-to-csv-metadata",
                "--alpha-image-ref-template",
                "quay.io/example/{{.Package}}-bundle:v{{.Version}}",
            ],
            &dir,
        );
        assert_eq!(ours, theirs, "{}", dir.display());
        assert_eq!(
            ours["properties"].as_array().unwrap().last().unwrap()["type"],
            "olm.csv.metadata"
        );
    }
}

#[test]
fn rendering_is_deterministic_and_the_cli_prints_json() {
    let dir = &bundles()[0];
    let bin = env!("CARGO_BIN_EXE_olmpack");
    let run = || {
        Command::new(bin)
            .args(["catalog", "render"])
            .arg(dir)
            .output()
            .unwrap()
    };
    let (a, b) = (run(), run());
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    let v: Value = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(v["schema"], "olm.bundle");
}

/// A bundle with opm's reading quirks: dependencies and properties in metadata files with
/// other names, `olm.maxOpenShiftVersion` in the CSV's `olm.properties` annotation, a
/// manifest without extension, a hidden manifest and one that does not decode (both
/// skipped, the second with a warning), strings YAML must quote, fold or block. `catalog
/// render` prints the same bytes as `opm render`, JSON and YAML, with and without migration.
#[test]
fn quirky_bundle_renders_byte_identical_to_opm() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/render/quirks");
    let olmpack = Path::new(env!("CARGO_BIN_EXE_olmpack"));
    for format in ["json", "yaml"] {
        for migrate in [false, true] {
            let mut args = vec!["-o", format];
            if migrate {
                args.extend(["--migrate-level", "bundle-object-to-csv-metadata"]);
            }
            let theirs = opm_render_output(&args, &dir);
            assert!(theirs.status.success());
            let ours = Command::new(olmpack)
                .args(["catalog", "render"])
                .args(&args)
                .arg(&dir)
                .output()
                .unwrap();
            assert!(
                ours.status.success(),
                "{}",
                String::from_utf8_lossy(&ours.stderr)
            );
            let text = String::from_utf8(ours.stdout.clone()).unwrap();
            assert_eq!(text, String::from_utf8(theirs.stdout).unwrap(), "{args:?}");
            assert!(text.contains("olm.maxOpenShiftVersion") && text.contains("\"4.8\""));
            assert!(text.contains("olm.package.required") && text.contains("example.com/flags"));
            assert!(
                String::from_utf8_lossy(&ours.stderr)
                    .contains("manifests/broken.yaml: skipped, as opm skips it"),
                "{}",
                String::from_utf8_lossy(&ours.stderr)
            );
        }
    }
}

/// A CSV listing a CRD by a name without a group (`<plural>` only): opm refuses to render the
/// bundle, and so does olmpack, naming the list the name is in.
#[test]
fn crd_names_without_a_group_fail_like_opm() {
    let cases = [
        ("- name: webapps.example.com", "owned", "webapps"),
        (
            "- name: certificates.cert-manager.io",
            "required",
            "certificates",
        ),
    ];
    for (line, role, bare) in cases {
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("webapp-0.1.0");
        upgrade_tests::files::copy_tree(&bundles()[0], &bundle).unwrap();
        let csv = bundle.join("manifests/webapp-operator.clusterserviceversion.yaml");
        let text = std::fs::read_to_string(&csv).unwrap();
        assert_eq!(text.matches(line).count(), 1, "{line}");
        std::fs::write(&csv, text.replace(line, &format!("- name: {bare}"))).unwrap();

        let theirs = opm_render_output(&[], &bundle);
        assert!(
            !theirs.status.success(),
            "opm renders a {role} CRD named {bare:?}"
        );
        let err = render_dir(&bundle, &RenderOptions::default()).unwrap_err();
        assert_eq!(
            olmpack::report::error_chain(&err),
            format!(
                "bundle webapp-operator.v0.1.0: {role} CRD name \"{bare}\" is not <plural>.<group>"
            )
        );
    }
}
