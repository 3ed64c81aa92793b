//! Shared by the bundle-corpus and bundle-consumer tests: the example operator's 1.1.1 bundle
//! (which validates clean) as files in memory, ways to break one thing in it, and what opm does
//! with the result.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use olmpack::bundle::generate::{GenerateOptions, generate};
use olmpack::bundle::{load, validate};
use olmpack_model::report::Finding;
use serde_json::{Value, json};

pub const CSV: &str = "manifests/guestbook-operator.clusterserviceversion.yaml";
pub const CRD: &str = "manifests/demo.olmpack.dev_guestbooks.yaml";
pub const ANNOTATIONS: &str = "metadata/annotations.yaml";
pub const DEPENDENCIES: &str = "metadata/dependencies.yaml";

pub type Files = BTreeMap<String, Vec<u8>>;

pub fn example_bundle() -> Files {
    let plan = olmpack::plan::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("example/olmpack.yaml"),
        &Default::default(),
    )
    .unwrap();
    let generated = generate(
        &plan,
        &GenerateOptions {
            only_version: Some("1.1.1".into()),
            ..Default::default()
        },
    )
    .unwrap();
    generated
        .tree
        .iter()
        .map(|(path, contents)| {
            (
                path.strip_prefix("1.1.1").unwrap().display().to_string(),
                contents.to_vec(),
            )
        })
        .collect()
}

pub fn yaml(files: &Files, path: &str) -> Value {
    olmpack_model::yaml::from_str(std::str::from_utf8(&files[path]).unwrap()).unwrap()
}

pub fn put(files: &mut Files, path: &str, value: &Value) {
    files.insert(
        path.to_owned(),
        olmpack_model::yaml::to_string(value).unwrap().into_bytes(),
    );
}

pub fn edit(files: &mut Files, path: &str, change: impl FnOnce(&mut Value)) {
    let mut value = yaml(files, path);
    change(&mut value);
    put(files, path, &value);
}

pub fn csv(change: impl FnOnce(&mut Value)) -> impl FnOnce(&mut Files) {
    move |files| edit(files, CSV, change)
}

pub fn crd(change: impl FnOnce(&mut Value)) -> impl FnOnce(&mut Files) {
    move |files| edit(files, CRD, change)
}

pub fn annotation(key: &str, value: Option<&str>) -> impl FnOnce(&mut Files) {
    let (key, value) = (key.to_owned(), value.map(str::to_owned));
    move |files| {
        edit(files, ANNOTATIONS, |a| match value {
            Some(v) => a["annotations"][&key] = json!(v),
            None => {
                a["annotations"].as_object_mut().unwrap().remove(&key);
            }
        });
        // Keep the Dockerfile in step, so only the intended rule fires.
        let labels: BTreeMap<String, String> =
            serde_json::from_value(yaml(files, ANNOTATIONS)["annotations"].clone()).unwrap();
        files.insert(
            "bundle.Dockerfile".into(),
            olmpack::bundle::files::dockerfile(&labels).into_bytes(),
        );
    }
}

pub fn validate_files(files: &Files) -> Vec<Finding> {
    let loaded = load::load_files(
        Path::new("bundle"),
        files
            .iter()
            .map(|(p, c)| (Path::new(p.as_str()), c.as_slice())),
    );
    let options = validate::Options {
        operatorhub: true,
        ..Default::default()
    };
    validate::validate(&loaded, &options).findings
}

pub fn dependencies(list: &'static str) -> impl FnOnce(&mut Files) {
    move |files| {
        files.insert(
            DEPENDENCIES.into(),
            format!("dependencies:\n{list}").into_bytes(),
        );
    }
}

pub fn first_deployment(csv: &mut Value) -> &mut Value {
    &mut csv["spec"]["install"]["spec"]["deployments"][0]
}

pub fn write_bundle(files: &Files) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, contents) in files {
        let target: PathBuf = dir.path().join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, contents).unwrap();
    }
    dir
}

/// What opm does with a bundle on its way into a catalog: `opm render` it, then `opm validate`
/// a catalog of that bundle alone (its package, one channel with its upgrade edges). `Err`
/// holds opm's message when either step refuses.
pub fn opm_consumes(opm: &Path, bundle: &Path) -> Result<(), String> {
    let out = std::process::Command::new(opm)
        .args(["render", "-o", "json"])
        .arg(bundle)
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let Ok(rendered) = serde_json::from_slice::<Value>(&out.stdout) else {
        return Err("opm render wrote no bundle".to_owned());
    };
    let package = rendered["package"].as_str().unwrap_or("").to_owned();
    let loaded = load::load_dir(bundle).unwrap();
    let channel = loaded
        .annotations
        .clone()
        .unwrap_or_default()
        .get("operators.operatorframework.io.bundle.channels.v1")
        .and_then(|c| c.split(',').next())
        .unwrap_or("")
        .to_owned();
    let mut entry = json!({ "name": rendered["name"] });
    if let Some(csv) = loaded.csv() {
        for key in ["replaces", "skips"] {
            if let Some(v) = csv.value["spec"].get(key) {
                entry[key] = v.clone();
            }
        }
        if let Some(range) = csv.value.pointer("/metadata/annotations/olm.skipRange") {
            entry["skipRange"] = range.clone();
        }
    }
    let catalog = tempfile::tempdir().unwrap();
    let docs = [
        json!({"schema": "olm.package", "name": package, "defaultChannel": channel}),
        json!({"schema": "olm.channel", "package": package, "name": channel, "entries": [entry]}),
        rendered,
    ];
    let text: String = docs.iter().map(|d| format!("{d}\n")).collect();
    std::fs::write(catalog.path().join("catalog.json"), text).unwrap();
    let out = std::process::Command::new(opm)
        .arg("validate")
        .arg(catalog.path())
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The files as olmpack's loader reads them (under the name `bundle`).
pub fn load_files(files: &Files) -> load::LoadedBundle {
    load::load_files(
        Path::new("bundle"),
        files
            .iter()
            .map(|(p, c)| (Path::new(p.as_str()), c.as_slice())),
    )
}
