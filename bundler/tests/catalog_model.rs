//! Reading and writing catalogs: every valid fixture round-trips through JSON and YAML, and
//! olmpack writes the same documents in the same order as `opm render <catalog-dir>`.

use std::path::{Path, PathBuf};
use std::process::Command;

use olmpack::catalog::load::{load_dir, load_stream};
use olmpack::catalog::write::{Format, to_string};
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
    let opm = upgrade_tests::Tool::Opm
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
