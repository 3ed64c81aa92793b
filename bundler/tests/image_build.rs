//! Building bundle and catalog images into OCI layouts: content, labels, errors,
//! reproducibility, and what real tools (umoci, opm) make of the result.

mod image_support;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use image_support::{copy_tree, fixture, options, read_tree, run};
use olmpack::image::{build::build_bundle_image, build::build_catalog_image};
use olmpack_envtest::binaries::Tool;
use olmpack_oci::image::build::BuildOptions;
use olmpack_oci::image::layout::{ImageManifest, Layout};
use olmpack_oci::image::progress::Progress;
use serde_json::Value;

fn layer_listing(layout: &Layout, digest: &str) -> Vec<String> {
    let bytes = layout.read_blob(digest).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
    archive
        .entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let h = e.header();
            format!(
                "{} {:o} {}:{} {}",
                e.path().unwrap().display(),
                h.mode().unwrap(),
                h.uid().unwrap(),
                h.gid().unwrap(),
                h.mtime().unwrap()
            )
        })
        .collect()
}

fn image(layout: &Path) -> (Layout, ImageManifest, Value) {
    let layout = Layout::open(layout).unwrap();
    let root = layout.find(None).unwrap();
    let manifest: ImageManifest = layout.read_json(&root.digest, "manifest").unwrap();
    let config: Value = layout.read_json(&manifest.config.digest, "config").unwrap();
    (layout, manifest, config)
}

#[test]
fn bundle_image_has_one_layer_per_dockerfile_copy_and_the_annotations_as_labels() {
    let out = tempfile::tempdir().unwrap();
    let layout_dir = out.path().join("layout");
    let root = build_bundle_image(&fixture("bundle"), &layout_dir, &options("v1")).unwrap();
    let (layout, manifest, config) = image(&layout_dir);
    assert_eq!(layout.find(Some("v1")).unwrap(), {
        let mut d = root.clone();
        d.annotations = Some(BTreeMap::from([(
            "org.opencontainers.image.ref.name".to_owned(),
            "v1".to_owned(),
        )]));
        d
    });
    assert_eq!(
        root.media_type,
        "application/vnd.oci.image.manifest.v1+json"
    );
    let manifest_json: Value = layout.read_json(&root.digest, "manifest").unwrap();
    assert_eq!(
        manifest_json["mediaType"], "application/vnd.oci.image.manifest.v1+json",
        "the manifest states its media type"
    );
    let listings: Vec<Vec<String>> = manifest
        .layers
        .iter()
        .map(|l| layer_listing(&layout, &l.digest))
        .collect();
    assert_eq!(
        listings,
        [
            vec![
                "manifests/ 755 0:0 0",
                "manifests/example.com_webapps.yaml 644 0:0 0",
                "manifests/webapp-operator.clusterserviceversion.yaml 644 0:0 0",
            ],
            vec!["metadata/ 755 0:0 0", "metadata/annotations.yaml 644 0:0 0"],
            vec![
                "tests/ 755 0:0 0",
                "tests/scorecard/ 755 0:0 0",
                "tests/scorecard/config.yaml 644 0:0 0",
            ],
        ]
    );
    let annotations: Value = olmpack_model::yaml::from_str(
        &std::fs::read_to_string(fixture("bundle/metadata/annotations.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(config["config"]["Labels"], annotations["annotations"]);
    assert_eq!(config["created"], "1970-01-01T00:00:00Z");
    assert_eq!(config["rootfs"]["diff_ids"].as_array().unwrap().len(), 3);
    assert_eq!(
        (&config["os"], &config["architecture"]),
        (&"linux".into(), &"amd64".into())
    );
}

#[test]
fn a_bundle_without_scorecard_tests_has_two_layers() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("bundle"), &dir.path().join("bundle"));
    std::fs::remove_dir_all(dir.path().join("bundle/tests")).unwrap();
    let layout_dir = dir.path().join("out");
    build_bundle_image(&dir.path().join("bundle"), &layout_dir, &options("v1")).unwrap();
    let (_, manifest, _) = image(&layout_dir);
    assert_eq!(manifest.layers.len(), 2);
}

#[test]
fn bundle_errors_name_the_file_and_the_problem() {
    let annotations = "metadata/annotations.yaml";
    let cases: Vec<(&str, Option<&str>, String)> = vec![
        (
            "missing annotations.yaml",
            None,
            format!("failed to read BUNDLE/{annotations}"),
        ),
        (
            "malformed YAML",
            Some("annotations: [unclosed"),
            format!("BUNDLE/{annotations} is not valid YAML"),
        ),
        (
            "no annotations key",
            Some("labels:\n  a: b\n"),
            format!("BUNDLE/{annotations}: has no top-level `annotations` map"),
        ),
        (
            "annotations is a list",
            Some("annotations:\n- a\n"),
            format!("BUNDLE/{annotations}: `annotations` must be a map of strings"),
        ),
        (
            "a value is not a string",
            Some("annotations:\n  a: b\n  n: 3\n"),
            format!("BUNDLE/{annotations}: annotations.n must be a string"),
        ),
        (
            "empty annotations",
            Some("annotations: {}\n"),
            format!("BUNDLE/{annotations}: `annotations` is empty"),
        ),
    ];
    for (name, content, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("bundle");
        copy_tree(&fixture("bundle"), &bundle);
        let path = bundle.join(annotations);
        match content {
            None => std::fs::remove_file(&path).unwrap(),
            Some(text) => std::fs::write(&path, text).unwrap(),
        }
        let out = dir.path().join("out");
        let err = build_bundle_image(&bundle, &out, &options("v1")).unwrap_err();
        let message = err
            .to_string()
            .replace(&bundle.display().to_string(), "BUNDLE");
        assert_eq!(message, expected, "{name}");
        assert!(!out.exists(), "{name}: no partial output");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "{name}: no temp directory left"
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle");
    copy_tree(&fixture("bundle"), &bundle);
    std::fs::remove_dir_all(bundle.join("manifests")).unwrap();
    let err = build_bundle_image(&bundle, &dir.path().join("out"), &options("v1")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{} is missing or not a directory; a bundle image needs manifests/ and metadata/",
            bundle.join("manifests").display()
        )
    );
}

fn set_tree_metadata(dir: &Path, mtime: SystemTime, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    for (rel, _) in read_tree(dir) {
        let path = dir.join(rel);
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(mtime).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// Builds bundle and catalog images of copies of the fixtures placed under `base`.
async fn build_copies(
    base: &Path,
    names: (&str, &str),
    mtime: SystemTime,
    mode: u32,
    epoch: u64,
) -> (String, String) {
    let bundle = base.join(names.0);
    let catalog = base.join(names.1);
    copy_tree(&fixture("bundle"), &bundle);
    copy_tree(&fixture("catalog"), &catalog);
    set_tree_metadata(&bundle, mtime, mode);
    set_tree_metadata(&catalog, mtime, mode);
    let options = BuildOptions {
        source_date_epoch: epoch,
        tag: Some("v1".into()),
        ..Default::default()
    };
    let b = build_bundle_image(&bundle, &base.join("bundle-layout"), &options).unwrap();
    let c = build_catalog_image(
        &catalog,
        &base.join("catalog-layout"),
        &options,
        None,
        &Progress::Quiet,
    )
    .await
    .unwrap();
    (b.digest, c.digest)
}

#[tokio::test]
async fn same_content_gives_the_same_digest_whenever_and_wherever_it_is_built() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::Builder::new()
        .prefix("other-place")
        .tempdir()
        .unwrap();
    let a = build_copies(
        first.path(),
        ("somewhere/bundle", "elsewhere/catalog"),
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000),
        0o600,
        0,
    )
    .await;
    // Later, elsewhere, with other mtimes and permissions on disk.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let b = build_copies(
        second.path(),
        ("my-bundle", "deeper/fbc"),
        SystemTime::now(),
        0o755,
        0,
    )
    .await;
    assert_eq!(a, b);
    for layout in ["bundle-layout", "catalog-layout"] {
        assert_eq!(
            read_tree(&first.path().join(layout)),
            read_tree(&second.path().join(layout)),
            "{layout} is byte-identical"
        );
    }

    // A changed file changes the digest ...
    let third = tempfile::tempdir().unwrap();
    let bundle = third.path().join("bundle");
    copy_tree(&fixture("bundle"), &bundle);
    let csv = bundle.join("manifests/webapp-operator.clusterserviceversion.yaml");
    let text = std::fs::read_to_string(&csv).unwrap();
    std::fs::write(
        &csv,
        text.replace("Runs web applications.", "Runs web apps."),
    )
    .unwrap();
    let changed = build_bundle_image(&bundle, &third.path().join("out"), &options("v1")).unwrap();
    assert_ne!(changed.digest, a.0);

    // ... and so does another source date epoch, which shows up as the creation time.
    let fourth = tempfile::tempdir().unwrap();
    let c = build_copies(
        fourth.path(),
        ("bundle", "catalog"),
        SystemTime::now(),
        0o644,
        1_700_000_000,
    )
    .await;
    assert_ne!(c.0, a.0);
    assert_ne!(c.1, a.1);
    let (layout, manifest, config) = image(&fourth.path().join("bundle-layout"));
    assert_eq!(config["created"], "2023-11-14T22:13:20Z");
    assert!(
        layer_listing(&layout, &manifest.layers[0].digest)
            .iter()
            .all(|l| l.ends_with(" 1700000000"))
    );
}

#[tokio::test]
async fn umoci_unpacks_the_layouts_into_exactly_the_source_files() {
    let dir = tempfile::tempdir().unwrap();
    let bundle_layout = dir.path().join("bundle-layout");
    let catalog_layout = dir.path().join("catalog-layout");
    build_bundle_image(&fixture("bundle"), &bundle_layout, &options("v1")).unwrap();
    build_catalog_image(
        &fixture("catalog"),
        &catalog_layout,
        &options("v2"),
        None,
        &Progress::Quiet,
    )
    .await
    .unwrap();

    let unpacked = dir.path().join("bundle-unpacked");
    run(
        Tool::Umoci,
        &[
            "unpack",
            "--rootless",
            "--image",
            &format!("{}:v1", bundle_layout.display()),
            unpacked.to_str().unwrap(),
        ],
    );
    assert_eq!(
        read_tree(&unpacked.join("rootfs")),
        read_tree(&fixture("bundle"))
    );
    let runtime: Value =
        serde_json::from_slice(&std::fs::read(unpacked.join("config.json")).unwrap()).unwrap();
    assert_eq!(
        runtime["annotations"]["operators.operatorframework.io.bundle.package.v1"],
        "webapp-operator"
    );

    let unpacked = dir.path().join("catalog-unpacked");
    run(
        Tool::Umoci,
        &[
            "unpack",
            "--rootless",
            "--image",
            &format!("{}:v2", catalog_layout.display()),
            unpacked.to_str().unwrap(),
        ],
    );
    assert_eq!(
        read_tree(&unpacked.join("rootfs/configs")),
        read_tree(&fixture("catalog"))
    );
    assert_eq!(
        read_tree(&unpacked.join("rootfs")).len(),
        read_tree(&fixture("catalog")).len(),
        "nothing but /configs"
    );
}

#[test]
fn the_fixtures_are_valid_for_opm() {
    let rendered = run(
        Tool::Opm,
        &["render", fixture("bundle").to_str().unwrap(), "-o", "json"],
    );
    let bundle: Value = serde_json::from_str(&rendered).unwrap();
    assert_eq!(bundle["name"], "webapp-operator.v1.0.0");
    run(
        Tool::Opm,
        &["validate", fixture("catalog").to_str().unwrap()],
    );
}

#[test]
fn cli_build_prints_the_digest_and_honours_source_date_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("layout");
    let cli = |epoch: &str, kind: &str, src: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_olmpack"))
            .args([
                "image",
                "build",
                kind,
                fixture(src).to_str().unwrap(),
                "--layout",
            ])
            .arg(&out)
            .args(["--tag", "t"])
            .env("SOURCE_DATE_EPOCH", epoch)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    let printed = cli("1700000000", "bundle", "bundle");
    let layout = Layout::open(&out).unwrap();
    assert_eq!(
        printed,
        format!("{}\n", layout.find(Some("t")).unwrap().digest)
    );
    let (_, _, config) = image(&out);
    assert_eq!(config["created"], "2023-11-14T22:13:20Z");
    // The same output directory is replaced by the next build.
    let printed = cli("0", "catalog", "catalog");
    assert_eq!(
        printed,
        format!(
            "{}\n",
            Layout::open(&out).unwrap().find(Some("t")).unwrap().digest
        )
    );
    let (_, _, config) = image(&out);
    assert_eq!(
        config["config"]["Labels"]["operators.operatorframework.io.index.configs.v1"],
        "/configs"
    );
    assert_eq!(
        cli("", "catalog", "catalog"),
        printed,
        "an empty SOURCE_DATE_EPOCH means 0"
    );

    let output = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args([
            "image",
            "build",
            "bundle",
            "/nonexistent/bundle",
            "--layout",
        ])
        .arg(dir.path().join("x"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: /nonexistent/bundle is not a directory\n"
    );
}

#[test]
fn layer_tar_matches_the_reference_tar_listing() {
    // GNU tar reads the layer and lists the same entries with root ownership.
    let out = tempfile::tempdir().unwrap();
    let layout_dir = out.path().join("layout");
    build_bundle_image(&fixture("bundle"), &layout_dir, &options("v1")).unwrap();
    let (layout, manifest, _) = image(&layout_dir);
    let blob = layout.blob_path(&manifest.layers[1].digest).unwrap();
    let output = Command::new("tar")
        .args(["--numeric-owner", "-tvzf"])
        .arg(&blob)
        .output()
        .unwrap();
    assert!(output.status.success());
    let listing = String::from_utf8(output.stdout).unwrap();
    let mut lines = listing.lines();
    let dir_line = lines.next().unwrap();
    assert!(dir_line.starts_with("drwxr-xr-x 0/0"), "{dir_line}");
    assert!(
        dir_line.ends_with("1970-01-01 00:00 metadata/"),
        "{dir_line}"
    );
    let file_line = lines.next().unwrap();
    assert!(file_line.starts_with("-rw-r--r-- 0/0"), "{file_line}");
    let mut gz = flate2::read::GzDecoder::new(std::fs::File::open(&blob).unwrap());
    let mut raw = Vec::new();
    gz.read_to_end(&mut raw).unwrap();
    assert_eq!(raw.len() % 512, 0);
}

#[tokio::test]
async fn image_json_and_digests_are_pinned() {
    // Any change to what olmpack writes shows up here: the digests are the reproducibility
    // promise, checked on every machine that runs the tests.
    let dir = tempfile::tempdir().unwrap();
    let bundle =
        build_bundle_image(&fixture("bundle"), &dir.path().join("b"), &options("v1")).unwrap();
    let catalog = build_catalog_image(
        &fixture("catalog"),
        &dir.path().join("c"),
        &options("v1"),
        None,
        &Progress::Quiet,
    )
    .await
    .unwrap();
    let mut pinned = serde_json::Map::new();
    for (name, root, layout) in [("bundle", &bundle, "b"), ("catalog", &catalog, "c")] {
        let (layout, manifest, config) = image(&dir.path().join(layout));
        let manifest_json: Value = layout.read_json(&root.digest, "manifest").unwrap();
        assert_eq!(manifest_json["config"]["digest"], manifest.config.digest);
        pinned.insert(
            name.to_owned(),
            serde_json::json!({"digest": root.digest, "manifest": manifest_json, "config": config}),
        );
    }
    insta::with_settings!({snapshot_path => "fixtures/image/snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_json_snapshot!("image_build_pinned", pinned);
    });
}

#[tokio::test]
async fn a_catalog_layout_inside_the_catalog_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog");
    copy_tree(&fixture("catalog"), &catalog);
    let err = build_catalog_image(
        &catalog,
        &catalog.join("image"),
        &options("v1"),
        None,
        &Progress::Quiet,
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the layout {} is inside {}, the directory being built",
            catalog.join("image").display(),
            catalog.display()
        )
    );
    assert_eq!(
        read_tree(&catalog),
        read_tree(&fixture("catalog")),
        "nothing written"
    );
}
