//! `olmpack catalog template` equals `opm alpha render-template` for `olm.template.basic` and
//! `olm.semver` (normalised JSON, same documents in the same order).
//!
//! opm v1.74 accepts only image references in templates (a bundle directory is refused with
//! "cannot render bundle directory …: not allowed"), so the test builds real bundle images from
//! the fixture bundle directories with `olmpack::image`, pushes them to a real registry, lets
//! opm pull them, and gives olmpack the same references mapped to the same directories.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use olmpack::catalog::serialize::{Format, to_string};
use olmpack::catalog::template::{self, DirResolver};
use olmpack::image::progress::Progress;
use olmpack::image::{
    auth::Credentials, build::BuildOptions, build::build_bundle_image, push::push_layout,
    registry::RegistryAccess,
};
use olmpack_envtest::binaries::Tool;
use olmpack_testkit::{registry::Registry, registry::RegistryAuth};
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/catalog/bundles")
        .join(name)
}

/// A copy of the 0.2.0 fixture bundle re-versioned to `version`.
fn bundle_at(root: &Path, version: &str) -> PathBuf {
    let dir = root.join(format!("webapp-{version}"));
    olmpack_testkit::files::copy_tree(&fixture("webapp-0.2.0"), &dir).unwrap();
    let csv = dir.join("manifests/webapp-operator.clusterserviceversion.yaml");
    let text = std::fs::read_to_string(&csv)
        .unwrap()
        .replace("0.2.0", version);
    std::fs::write(csv, text).unwrap();
    dir
}

fn json_stream(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .collect()
}

fn opm_template(kind: &str, file: &Path) -> Vec<Value> {
    let opm = Tool::Opm.path().expect("opm is required for this test");
    let out = Command::new(opm)
        .args(["alpha", "render-template", kind])
        .arg(file)
        .args(["-o", "json", "--use-http"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "opm render-template {kind}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_stream(&String::from_utf8(out.stdout).unwrap())
}

#[tokio::test]
async fn templates_render_like_opm() {
    olmpack::install_crypto_provider();
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut dirs: BTreeMap<&str, PathBuf> = BTreeMap::new();
    dirs.insert("0.1.0", fixture("webapp-0.1.0"));
    dirs.insert("0.2.0", fixture("webapp-0.2.0"));
    for v in ["0.2.1", "1.0.0", "1.1.0"] {
        dirs.insert(v, bundle_at(work.path(), v));
    }
    let access = RegistryAccess {
        credentials: Credentials::Anonymous,
        ..RegistryAccess::default()
    };
    let mut resolver = DirResolver::default();
    let mut refs: BTreeMap<&str, String> = BTreeMap::new();
    for (version, dir) in &dirs {
        let layout = work.path().join(format!("layout-{version}"));
        build_bundle_image(
            dir,
            &layout,
            &BuildOptions {
                tag: Some("v1".to_owned()),
                ..BuildOptions::default()
            },
        )
        .unwrap();
        let reference = format!(
            "{}/example/webapp-operator-bundle:v{version}",
            registry.host()
        );
        push_layout(
            &format!("{}:v1", layout.display()),
            &reference,
            &access,
            &Progress::Quiet,
        )
        .await
        .unwrap();
        resolver.dirs.insert(reference.clone(), dir.clone());
        refs.insert(version, reference);
    }

    let basic = format!(
        "schema: olm.template.basic\nentries:\n\
         - schema: olm.package\n  name: webapp-operator\n  defaultChannel: stable\n  description: Runs web apps.\n\
         - schema: olm.channel\n  package: webapp-operator\n  name: stable\n  entries:\n\
         \x20 - name: webapp-operator.v0.1.0\n\
         \x20 - name: webapp-operator.v0.2.0\n    replaces: webapp-operator.v0.1.0\n    skipRange: '>=0.1.0 <0.2.0'\n\
         - schema: olm.bundle\n  image: {}\n\
         - schema: olm.bundle\n  image: {}\n\
         - schema: example.com.notes\n  package: webapp-operator\n  text: kept as is\n",
        refs["0.1.0"], refs["0.2.0"]
    );
    let semver = format!(
        "schema: olm.semver\ngenerateMajorChannels: true\ngenerateMinorChannels: true\n\
         candidate:\n  bundles:\n{}\
         fast:\n  bundles:\n  - image: {}\n  - image: {}\n  - image: {}\n\
         stable:\n  bundles:\n  - image: {}\n  - image: {}\n",
        refs.values()
            .map(|r| format!("  - image: {r}\n"))
            .collect::<String>(),
        refs["0.2.0"],
        refs["0.2.1"],
        refs["1.0.0"],
        refs["0.1.0"],
        refs["0.2.0"],
    );
    let semver_minor_only = format!(
        "schema: olm.semver\nstable:\n  bundles:\n{}",
        refs.values()
            .map(|r| format!("  - image: {r}\n"))
            .collect::<String>(),
    );
    for (kind, text) in [
        ("basic", basic),
        ("semver", semver),
        ("semver", semver_minor_only),
    ] {
        let file = work.path().join(format!("{kind}.yaml"));
        std::fs::write(&file, &text).unwrap();
        let theirs = opm_template(kind, &file);
        let ours = template::expand_any(&text, &resolver).unwrap();
        let ours = json_stream(&to_string(&ours, Format::Json).unwrap());
        assert_eq!(ours.len(), theirs.len(), "{kind}: document count");
        assert!(
            theirs
                .iter()
                .filter(|d| d["schema"] == "olm.channel")
                .count()
                >= 1
                && theirs
                    .iter()
                    .filter(|d| d["schema"] == "olm.bundle")
                    .count()
                    >= 2,
            "{kind}: opm produced channels and bundles"
        );
        for (a, b) in ours.iter().zip(&theirs) {
            assert_eq!(a, b, "{kind}:\n{text}");
        }
        // What opm generated is a valid catalog for both validators.
        let cat = work.path().join(format!("catalog-{kind}"));
        std::fs::create_dir_all(&cat).unwrap();
        std::fs::write(
            cat.join("catalog.json"),
            to_string(
                &template::expand_any(&text, &resolver).unwrap(),
                Format::Json,
            )
            .unwrap(),
        )
        .unwrap();
        let report = olmpack::catalog::validate::validate_dir(&cat, Default::default()).unwrap();
        assert!(
            !report.has_errors(),
            "{}",
            report.format(Default::default())
        );
    }
}

#[test]
fn semver_template_rejects_what_opm_rejects() {
    let resolver = DirResolver::default();
    let err = template::expand_any(
        "schema: olm.semver\navoidSkipPatch: true\nstable: {bundles: []}\n",
        &resolver,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown field \"avoidSkipPatch\" in olm.semver template"
    );
    let err = template::expand_any(
        "schema: olm.semver\ngenerateMajorChannels: true\ndefaultChannelTypePreference: minor\n",
        &resolver,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("DefaultChannelTypePreference set to 'minor'")
    );
    let err = template::expand_any(
        "schema: olm.template.basic\nentries:\n- schema: olm.bundle\n  image: x\n  package: p\n",
        &resolver,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("unexpected fields present in basic template bundle")
    );
}
