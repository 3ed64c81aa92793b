//! Reading and writing catalogs: every valid fixture round-trips through JSON and YAML, and
//! olmpack writes the same documents in the same order as `opm render <catalog-dir>`.

use std::path::{Path, PathBuf};
use std::process::Command;

use olmpack::catalog::load::{load_dir, load_stream};
use olmpack::catalog::serialize::{Format, to_string};
use serde_json::Value;

fn valid() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/catalog/valid");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    out.sort();
    out
}

fn json_stream(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn json_and_yaml_round_trips_keep_every_blob() {
    for dir in valid() {
        let loaded = load_dir(&dir).unwrap();
        assert!(loaded.problems.is_empty(), "{}", dir.display());
        let values = loaded.config.to_values();
        for format in [Format::Json, Format::Yaml] {
            let text = to_string(&loaded.config, format).unwrap();
            let again = load_stream(Path::new("stream"), text.as_bytes());
            assert!(
                again.problems.is_empty(),
                "{}: {:?}",
                dir.display(),
                again.problems
            );
            assert_eq!(
                again.config.to_values(),
                values,
                "{} {format:?}",
                dir.display()
            );
            assert_eq!(
                to_string(&again.config, format).unwrap(),
                text,
                "byte-stable"
            );
        }
    }
}

#[test]
fn written_order_and_content_match_opm_render() {
    let opm = olmpack_envtest::binaries::Tool::Opm
        .path()
        .expect("opm is required for this test");
    for dir in valid() {
        let out = Command::new(&opm)
            .arg("render")
            .arg(&dir)
            .args(["-o", "json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let theirs = json_stream(&String::from_utf8(out.stdout).unwrap());
        let ours = json_stream(&to_string(&load_dir(&dir).unwrap().config, Format::Json).unwrap());
        assert_eq!(ours, theirs, "{}", dir.display());
    }
}

#[test]
fn rendering_a_catalog_directory_matches_opm_render() {
    let opm = olmpack_envtest::binaries::Tool::Opm
        .path()
        .expect("opm is required for this test");
    let bin = env!("CARGO_BIN_EXE_olmpack");
    let mut dirs = valid();
    // A catalog made of rendered bundles (bundle objects, relatedImages) and a migration.
    let work = tempfile::tempdir().unwrap();
    let cat = work.path().join("rendered");
    std::fs::create_dir_all(&cat).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/catalog/bundles");
    let mut text = String::from(
        "{\"schema\":\"olm.package\",\"name\":\"webapp-operator\",\"defaultChannel\":\"stable\"}\n\
         {\"schema\":\"olm.channel\",\"package\":\"webapp-operator\",\"name\":\"stable\",\"entries\":[\
         {\"name\":\"webapp-operator.v0.1.0\"},{\"name\":\"webapp-operator.v0.2.0\",\"replaces\":\"webapp-operator.v0.1.0\"}]}\n",
    );
    for v in ["0.1.0", "0.2.0"] {
        let mut b = olmpack::catalog::render::render_dir(
            &fixture.join(format!("webapp-{v}")),
            &olmpack::catalog::render::RenderOptions {
                image: format!("quay.io/example/webapp-operator-bundle:v{v}"),
                ..Default::default()
            },
        )
        .unwrap();
        // Scramble what opm normalises.
        b.properties.reverse();
        b.related_images.reverse();
        text.push_str(&serde_json::to_string(&olmpack::catalog::declcfg::to_value(&b)).unwrap());
        text.push('\n');
    }
    std::fs::write(cat.join("catalog.json"), text).unwrap();
    dirs.push(cat);
    for dir in dirs {
        for migrate in [None, Some("bundle-object-to-csv-metadata")] {
            let mut theirs = Command::new(&opm);
            theirs.arg("render").arg(&dir).args(["-o", "json"]);
            let mut ours = Command::new(bin);
            ours.args(["catalog", "render"]).arg(&dir);
            if let Some(level) = migrate {
                theirs.args(["--migrate-level", level]);
                ours.args(["--migrate-level", level]);
            }
            let (theirs, ours) = (theirs.output().unwrap(), ours.output().unwrap());
            assert!(
                theirs.status.success() && ours.status.success(),
                "{}",
                dir.display()
            );
            assert_eq!(
                json_stream(&String::from_utf8(ours.stdout).unwrap()),
                json_stream(&String::from_utf8(theirs.stdout).unwrap()),
                "{} {migrate:?}",
                dir.display()
            );
        }
    }
}
