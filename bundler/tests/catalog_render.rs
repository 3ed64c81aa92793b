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
    opm_render_dirs(args, &[dir.to_path_buf()])
}

/// `opm render <args> <dirs…>`, as it ran.
fn opm_render_dirs(args: &[&str], dirs: &[PathBuf]) -> Output {
    let opm = olmpack_envtest::binaries::Tool::Opm
        .path()
        .expect("opm is required for this test");
    Command::new(opm)
        .arg("render")
        .args(args)
        .args(dirs)
        .output()
        .unwrap()
}

/// `olmpack catalog render <args> <dirs…>`, as it ran.
fn olmpack_render_dirs(args: &[&str], dirs: &[PathBuf]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["catalog", "render"])
        .args(args)
        .args(dirs)
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
                ..Default::default()
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
                    ..Default::default()
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
    for format in ["json", "yaml"] {
        for migrate in [false, true] {
            let mut args = vec!["-o", format];
            if migrate {
                args.extend(["--migrate-level", "bundle-object-to-csv-metadata"]);
            }
            let theirs = opm_render_output(&args, &dir);
            assert!(theirs.status.success());
            let ours = olmpack_render_dirs(&args, std::slice::from_ref(&dir));
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
        olmpack_testkit::files::copy_tree(&bundles()[0], &bundle).unwrap();
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
            olmpack_model::report::error_chain(&err),
            format!(
                "bundle webapp-operator.v0.1.0: {role} CRD name \"{bare}\" is not <plural>.<group>"
            )
        );
    }
}

/// Writes a bundle that exercises Go's decoding and encoding: `images` are the CSV's
/// relatedImages `(name, image)` (the containers' images among them, so opm adds none in its
/// random map order); duplicate keys in the CSV and in two metadata files; `<`, `>` and `&`
/// in property values opm copies from YAML (escaped in its JSON), builds itself and reads
/// from the CSV's `olm.properties` annotation (both not escaped).
fn go_decoding_bundle(dir: &Path, images: &[(String, String)]) {
    std::fs::create_dir_all(dir.join("manifests")).unwrap();
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    let related: String = images
        .iter()
        .map(|(name, image)| format!("  - name: {name}\n    image: {image}\n"))
        .collect();
    let csv = format!(
        r#"apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: godecoding.v1.0.0
  annotations:
    description: first
    olm.properties: '[{{"type": "example.com/raw", "value": {{"and": "a & b", "range": ">=1.0.0 <2.0.0"}}}}]'
    description: second <b>
spec:
  version: 1.0.0
  displayName: Go
  displayName: Go decoding
  installModes:
  - type: AllNamespaces
    supported: true
  install:
    strategy: deployment
    spec:
      deployments:
      - name: op
        spec:
          selector:
            matchLabels:
              app: op
          template:
            metadata:
              labels:
                app: op
            spec:
              initContainers:
              - name: init
                image: quay.io/example/init:v1
              containers:
              - name: op
                image: quay.io/example/op:v1
  relatedImages:
  - name: init
    image: quay.io/example/init:v1
  - name: op
    image: quay.io/example/op:v1
{related}"#
    );
    std::fs::write(
        dir.join("manifests/godecoding.clusterserviceversion.yaml"),
        csv,
    )
    .unwrap();
    std::fs::write(
        dir.join("metadata/annotations.yaml"),
        "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  \
         operators.operatorframework.io.bundle.package.v1: godecoding\n  \
         operators.operatorframework.io.bundle.channels.v1: alpha\n  \
         operators.operatorframework.io.bundle.channels.v1: stable\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("metadata/dependencies.yaml"),
        "dependencies:\n- type: olm.package\n  value:\n    packageName: dep\n    version: \">=1.0.0 <2.0.0\"\n\
         - type: olm.constraint\n  value:\n    failureMessage: needs dep & friends\n    \
         package:\n      packageName: dep\n      versionRange: \">=1.0.0\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("metadata/properties.yaml"),
        "properties:\n- type: example.com/note\n  value:\n    text: <b>bold</b>\n    text: <i>it</i>\n",
    )
    .unwrap();
}

/// relatedImages in crafted orders, with many images listed more than once under different
/// names: `n` entries, `distinct` images.
fn crafted_images(n: usize, distinct: usize, step: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| {
            (
                format!("name-{i}"),
                format!("quay.io/example/image-{:02}:v1", (i * step + 3) % distinct),
            )
        })
        .collect()
}

/// Duplicate keys, HTML escaping and relatedImages order, byte for byte against the real opm,
/// on crafted bundles whose relatedImages take every path of Go's sort.Slice (short runs,
/// median of three, ninther, equal partitions, reversed and nearly sorted input).
#[test]
fn go_decoding_and_unstable_sort_render_byte_identical_to_opm() {
    let mut shapes: Vec<Vec<(String, String)>> = [
        (11, 4, 3),
        (14, 5, 7),
        (20, 6, 5),
        (33, 4, 11),
        (50, 9, 7),
        (64, 7, 13),
        (100, 30, 17),
        (180, 12, 1),
    ]
    .iter()
    .map(|&(n, d, s)| crafted_images(n, d, s))
    .collect();
    let mut falling = crafted_images(60, 60, 1);
    falling.reverse();
    falling.extend(crafted_images(10, 5, 1));
    shapes.push(falling);
    let mut html_seen = false;
    for (i, images) in shapes.iter().enumerate() {
        let tmp = tempfile::tempdir().unwrap();
        go_decoding_bundle(tmp.path(), images);
        for format in ["json", "yaml"] {
            let theirs = opm_render_output(&["-o", format], tmp.path());
            assert!(
                theirs.status.success(),
                "{}",
                String::from_utf8_lossy(&theirs.stderr)
            );
            let ours = olmpack_render_dirs(&["-o", format], &[tmp.path().to_path_buf()]);
            let stderr = String::from_utf8_lossy(&ours.stderr);
            assert!(ours.status.success(), "{stderr}");
            assert_eq!(
                String::from_utf8(ours.stdout.clone()).unwrap(),
                String::from_utf8(theirs.stdout.clone()).unwrap(),
                "shape {i}, {format}"
            );
            // Every file with a repeated key is read (not skipped) and named in a warning.
            for file in [
                "godecoding.clusterserviceversion.yaml: line 8: key \"description\" is given twice",
                "annotations.yaml: line 5: key \"operators.operatorframework.io.bundle.channels.v1\" is given twice",
                "properties.yaml: line 5: key \"text\" is given twice",
            ] {
                assert!(stderr.contains(file), "{file}: {stderr}");
            }
            assert!(!stderr.contains("skipped"), "{stderr}");
            let text = String::from_utf8(ours.stdout).unwrap();
            if format == "json" {
                // Escaped where opm copied YAML, as written where it built the value or read
                // the CSV's annotation.
                assert!(text.contains(r#""versionRange": "\u003e=1.0.0""#), "{text}");
                assert!(text.contains(r#""text": "\u003ci\u003eit\u003c/i\u003e""#));
                assert!(text.contains(r#""versionRange": ">=1.0.0 <2.0.0""#));
                assert!(text.contains(r#""and": "a & b""#));
                html_seen = true;
            }
        }
    }
    assert!(html_seen);
}

/// `count` copies of the 0.2.0 fixture under `root`, re-versioned 0.3.0, 0.3.1, …; the
/// copies at `twins` get the version of the first of them, the second its own operator image,
/// so two bundles share a name but not their bytes.
fn versioned_copies(root: &Path, count: usize, twins: [usize; 2]) -> Vec<PathBuf> {
    (0..count)
        .map(|i| {
            let dir = root.join(format!("bundle-{i:02}"));
            olmpack_testkit::files::copy_tree(&bundles()[1], &dir).unwrap();
            let csv = dir.join("manifests/webapp-operator.clusterserviceversion.yaml");
            let version = if i == twins[1] { twins[0] } else { i };
            let mut text = std::fs::read_to_string(&csv)
                .unwrap()
                .replace("0.2.0", &format!("0.3.{version}"));
            if i == twins[1] {
                text = text.replace("example/webapp-operator:", "example/webapp-operator-twin:");
            }
            std::fs::write(csv, text).unwrap();
            dir
        })
        .collect()
}

/// Rendered together, two bundles of one package with the same name come out where opm's
/// Go `sort.Slice` leaves them (not in argument order): byte for byte, JSON and YAML.
#[test]
fn bundles_sharing_a_name_render_in_opms_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = versioned_copies(tmp.path(), 20, [3, 15]);
    for format in ["json", "yaml"] {
        let ours = olmpack_render_dirs(&["-o", format], &dirs);
        let theirs = opm_render_dirs(&["-o", format], &dirs);
        for (who, out) in [("opm", &theirs), ("olmpack", &ours)] {
            assert!(
                out.status.success(),
                "{who}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let text = String::from_utf8_lossy(&ours.stdout);
        assert!(
            text.contains("webapp-operator-twin:v0.3.3"),
            "{format}: twin rendered"
        );
        assert!(
            text.contains("webapp-operator:v0.3.3"),
            "{format}: its namesake rendered"
        );
        assert!(
            ours.stdout == theirs.stdout,
            "{format}: olmpack differs from opm"
        );
    }
}
