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
use olmpack::image::build::build_bundle_image;
use olmpack_envtest::binaries::Tool;
use olmpack_oci::image::progress::Progress;
use olmpack_oci::image::{
    auth::Credentials, build::BuildOptions, push::push_layout, registry::RegistryAccess,
};
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

/// A bundle image no registry serves: opm gets as far as pulling it only when it has read
/// the template.
const IMG: &str = "localhost:1/none/bundle:v1";

/// Semver templates opm refuses while reading them (before pulling any bundle), with
/// olmpack's message for each.
fn refused_semver_templates() -> Vec<(&'static str, String, String)> {
    let entry = format!("stable:\n  bundles:\n  - image: {IMG}\n");
    let known = "a semver template has only schema, generateMajorChannels, generateMinorChannels, defaultChannelTypePreference, candidate, fast, stable";
    vec![
        (
            "top-level key given twice",
            format!("schema: olm.semver\nschema: olm.semver\n{entry}"),
            "olm.semver template: line 2 column 1: duplicate key schema: each key may appear only once in a mapping; opm refuses it".to_owned(),
        ),
        (
            "archetype given twice",
            format!("schema: olm.semver\n{entry}{entry}"),
            "olm.semver template: line 5 column 1: duplicate key stable: each key may appear only once in a mapping; opm refuses it".to_owned(),
        ),
        (
            "bundles given twice",
            format!("schema: olm.semver\nstable:\n  bundles: []\n  bundles:\n  - image: {IMG}\n"),
            "olm.semver template: line 4 column 3: duplicate key bundles: each key may appear only once in a mapping; opm refuses it".to_owned(),
        ),
        (
            "image given twice",
            format!("schema: olm.semver\n{entry}    image: {IMG}\n"),
            "olm.semver template: line 5 column 5: duplicate key image: each key may appear only once in a mapping; opm refuses it".to_owned(),
        ),
        (
            "key given twice in JSON",
            format!("{{\"schema\":\"olm.semver\",\"schema\":\"olm.semver\",\"stable\":{{\"bundles\":[{{\"image\":\"{IMG}\"}}]}}}}\n"),
            "olm.semver template: line 1 column 24: duplicate key schema: each key may appear only once in a mapping; opm refuses it".to_owned(),
        ),
        (
            "unknown top-level field",
            format!("schema: olm.semver\navoidSkipPatch: true\n{entry}"),
            format!("olm.semver template: avoidSkipPatch: unknown field: {known}; opm refuses it"),
        ),
        (
            "unknown field in an archetype",
            format!("schema: olm.semver\nstable:\n  channel: x\n  bundles:\n  - image: {IMG}\n"),
            "olm.semver template: stable.channel: unknown field: an archetype has only bundles; opm refuses it".to_owned(),
        ),
        (
            "unknown field in a bundle entry",
            format!("schema: olm.semver\n{entry}    name: b.v1\n"),
            "olm.semver template: stable.bundles[0].name: unknown field: a bundle entry has only image; opm refuses it".to_owned(),
        ),
        (
            "flag given as a string",
            format!("schema: olm.semver\ngenerateMajorChannels: \"true\"\n{entry}"),
            "olm.semver template: generateMajorChannels: must be true or false, not the string \"true\"; opm refuses it".to_owned(),
        ),
        (
            "flag given as a number",
            format!("schema: olm.semver\nGenerateMinorChannels: 1\n{entry}"),
            "olm.semver template: GenerateMinorChannels: must be true or false, not the number 1; opm refuses it".to_owned(),
        ),
        (
            "bundles given as a string",
            format!("schema: olm.semver\nstable:\n  bundles: {IMG}\n"),
            format!("olm.semver template: stable.bundles: must be a list of bundle entries (- image: ...), not the string \"{IMG}\"; opm refuses it"),
        ),
        (
            "archetype given as a list",
            format!("schema: olm.semver\nstable:\n- image: {IMG}\n"),
            "olm.semver template: stable: must be a mapping with a bundles list, not a list; opm refuses it".to_owned(),
        ),
        (
            "bundle entry given as a string",
            format!("schema: olm.semver\nstable:\n  bundles:\n  - {IMG}\n"),
            format!("olm.semver template: stable.bundles[0]: must be a mapping with an image, not the string \"{IMG}\"; opm refuses it"),
        ),
        (
            "unknown channel type preference",
            format!("schema: olm.semver\ndefaultChannelTypePreference: Minor\n{entry}"),
            "olm.semver template: defaultChannelTypePreference: must be \"major\" or \"minor\", not \"Minor\"; opm refuses it".to_owned(),
        ),
        (
            "preference for channels not generated",
            format!("schema: olm.semver\ngenerateMajorChannels: true\ndefaultChannelTypePreference: minor\n{entry}"),
            "olm.semver template: defaultChannelTypePreference: is \"minor\", but minor-version channels are not generated (generateMinorChannels is not true); opm refuses it".to_owned(),
        ),
        (
            "a JSON escape YAML does not know",
            "{\"schema\":\"olm.semver\",\"stable\":{\"bundles\":[{\"image\":\"r.io\\/b:v1\"}]}}\n".to_owned(),
            "olm.semver template: line 1: \\/ is a JSON escape that YAML, as Go reads it, does not know; opm refuses it".to_owned(),
        ),
        (
            "a field name that folds to one only in Unicode's full case mapping",
            format!("schema: olm.semver\ngenerateM\u{131}norChannels: true\n{entry}"),
            format!("olm.semver template: generateM\u{131}norChannels: unknown field: {known}; opm refuses it"),
        ),
        (
            "empty first document",
            format!("---\n---\nschema: olm.semver\n{entry}"),
            "the template's first YAML document is empty (another follows it); opm reads only the first document, and refuses the template".to_owned(),
        ),
    ]
}

/// Semver templates opm reads (it goes on to pull the bundle), olmpack too (it goes on to
/// look the bundle up).
fn accepted_semver_templates() -> Vec<(&'static str, String)> {
    let entry = format!("stable:\n  bundles:\n  - image: {IMG}\n");
    vec![
        (
            "null flag",
            format!("schema: olm.semver\ngenerateMajorChannels: null\n{entry}"),
        ),
        (
            "capitalised keys",
            format!(
                "Schema: olm.semver\nGenerateMajorChannels: true\nDefaultChannelTypePreference: major\nStable:\n  Bundles:\n  - Image: {IMG}\n"
            ),
        ),
        (
            "long s for s",
            format!("schema: olm.semver\n\u{17f}table:\n  bundles:\n  - image: {IMG}\n"),
        ),
        (
            "a second document, not even YAML",
            format!("schema: olm.semver\n{entry}---\nfoo: [\n"),
        ),
        (
            "a second JSON value",
            format!(
                "{{\"schema\":\"olm.semver\",\"stable\":{{\"bundles\":[{{\"image\":\"{IMG}\"}}]}}}}\n{{\"foo\": 1}}\n"
            ),
        ),
        (
            "YAML 1.1 boolean",
            format!(
                "schema: olm.semver\ngenerateMajorChannels: yes\ndefaultChannelTypePreference: major\n{entry}"
            ),
        ),
        (
            "null archetype",
            format!("schema: olm.semver\ncandidate: null\n{entry}"),
        ),
        (
            "schema under two spellings",
            format!("schema: olm.semver\nSchema: other\n{entry}"),
        ),
    ]
}

#[test]
fn semver_template_refuses_what_opm_refuses_in_our_words() {
    let resolver = DirResolver::default();
    let mut wrong = Vec::new();
    for (name, text, want) in refused_semver_templates() {
        match template::expand_any(&text, &resolver) {
            Ok(_) => wrong.push(format!("{name}: accepted")),
            Err(e) if e.to_string() != want => {
                wrong.push(format!("{name}:\n  got  {e}\n  want {want}"));
            }
            Err(_) => {}
        }
    }
    for (name, text) in accepted_semver_templates() {
        match template::expand_any(&text, &resolver) {
            Err(template::TemplateError::Resolve { image, .. }) if image == IMG => {}
            other => wrong.push(format!("{name}: not read up to the bundle: {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The same templates given to opm: each refusal is a reading error (opm never gets to pull
/// a bundle), and each accepted template gets as far as pulling its bundle.
#[test]
fn semver_template_verdicts_are_opms() {
    let opm = match Tool::Opm.path() {
        Ok(opm) => opm,
        Err(e) => {
            eprintln!("NOT RUN: semver_template_verdicts_are_opms needs opm: {e}");
            return;
        }
    };
    let work = tempfile::tempdir().unwrap();
    let run = |text: &str| {
        let file = work.path().join("t.yaml");
        std::fs::write(&file, text).unwrap();
        let out = Command::new(&opm)
            .args(["alpha", "render-template", "semver"])
            .arg(&file)
            .args(["-o", "json", "--use-http"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "opm rendered:\n{text}");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        stderr.lines().next().unwrap_or("").to_owned()
    };
    let mut wrong = Vec::new();
    for (name, text, _) in refused_semver_templates() {
        let error = run(&text);
        if error.contains("render reference") || !error.contains("unable to read file") {
            wrong.push(format!(
                "{name}: opm did not refuse it while reading: {error}"
            ));
        }
    }
    for (name, text) in accepted_semver_templates() {
        let error = run(&text);
        if !error.contains(&format!("render reference \"{IMG}\"")) {
            wrong.push(format!("{name}: opm refused it while reading: {error}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn basic_template_rejects_what_opm_rejects() {
    let resolver = DirResolver::default();
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

/// Basic templates read as opm reads them: `(name, template, olmpack's refusal)`; `None` is a
/// template both read up to its bundle (opm pulls it, olmpack looks it up).
fn hostile_basic_templates() -> Vec<(&'static str, String, Option<String>)> {
    let bundle = format!("- schema: olm.bundle\n  image: {IMG}\n");
    let refused = |at: &str, problem: &str| {
        Some(format!(
            "olm.template.basic template: {at}: {problem}; opm refuses it"
        ))
    };
    let list = "must be a list of catalog objects, not";
    let object = "must be a catalog object (a mapping), not";
    vec![
        (
            "entries a number",
            "schema: olm.template.basic\nentries: 5\n".to_owned(),
            refused("entries", &format!("{list} the number 5")),
        ),
        (
            "entries a string",
            "schema: olm.template.basic\nentries: hello\n".to_owned(),
            refused("entries", &format!("{list} the string \"hello\"")),
        ),
        (
            "entries a mapping",
            format!("schema: olm.template.basic\nentries:\n  image: {IMG}\n"),
            refused("entries", &format!("{list} a mapping")),
        ),
        (
            "capitalised entries a number",
            "schema: olm.template.basic\nEntries: 5\n".to_owned(),
            refused("Entries", &format!("{list} the number 5")),
        ),
        (
            "an entry a number",
            format!("schema: olm.template.basic\nentries:\n{bundle}- 5\n"),
            refused("entries[1]", &format!("{object} the number 5")),
        ),
        (
            "an entry a list",
            "schema: olm.template.basic\nentries:\n- [a]\n".to_owned(),
            refused("entries[0]", &format!("{object} a list")),
        ),
        (
            "schema a number",
            format!("schema: 5\nentries:\n{bundle}"),
            refused("schema", "must be a string, not the number 5"),
        ),
        (
            "the template a list",
            format!("- schema: olm.template.basic\n- entries:\n  {bundle}"),
            refused(
                "the template",
                "must be a mapping with schema and entries, not a list",
            ),
        ),
        (
            "another schema",
            format!("schema: olm.template.other\nentries:\n{bundle}"),
            Some(
                "template has unknown schema (\"olm.template.other\"), should be \"olm.template.basic\""
                    .to_owned(),
            ),
        ),
        (
            "capitalised entries",
            format!("schema: olm.template.basic\nEntries:\n{bundle}"),
            None,
        ),
        (
            "upper-case schema",
            format!("SCHEMA: olm.template.basic\nentries:\n{bundle}"),
            None,
        ),
        (
            "long s in schema",
            format!("\u{17f}chema: olm.template.basic\nentries:\n{bundle}"),
            None,
        ),
        (
            "null schema beside the schema",
            format!("Schema: null\nschema: olm.template.basic\nentries:\n{bundle}"),
            None,
        ),
        (
            "unknown top-level key",
            format!("schema: olm.template.basic\nnotes: [1, 2]\nentries:\n{bundle}"),
            None,
        ),
    ]
}

/// The hostile basic templates through olmpack and, in the same test, through opm's
/// `alpha render-template basic`: olmpack refuses each with its message where opm refuses it
/// while reading (before pulling any bundle), and reads the others up to their bundle as opm
/// does.
#[test]
fn basic_template_verdicts_are_opms() {
    let resolver = DirResolver::default();
    let mut wrong = Vec::new();
    for (name, text, want) in hostile_basic_templates() {
        let got = template::expand_any(&text, &resolver);
        match (&want, got) {
            (None, Err(template::TemplateError::Resolve { image, .. })) if image == IMG => {}
            (Some(want), Err(e)) if e.to_string() == *want => {}
            (_, got) => wrong.push(format!("{name}:\n  got  {got:?}\n  want {want:?}")),
        }
    }
    assert!(wrong.is_empty(), "olmpack:\n{}", wrong.join("\n"));
    if !olmpack_testkit::tools::require(&[Tool::Opm], "opm") {
        return;
    }
    let opm = Tool::Opm.path().unwrap();
    let work = tempfile::tempdir().unwrap();
    for (name, text, want) in hostile_basic_templates() {
        let file = work.path().join("t.yaml");
        std::fs::write(&file, &text).unwrap();
        let out = Command::new(&opm)
            .args(["alpha", "render-template", "basic"])
            .arg(&file)
            .args(["-o", "json", "--use-http"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let pulled = stderr.contains(IMG);
        match (&want, out.status.success(), pulled) {
            (Some(_), false, false) | (None, false, true) => {}
            _ => wrong.push(format!(
                "{name}: olmpack {}, opm exit {:?}:\n{stderr}",
                match want {
                    Some(_) => "refuses it",
                    None => "reads it up to the bundle",
                },
                out.status.code()
            )),
        }
    }
    assert!(wrong.is_empty(), "opm:\n{}", wrong.join("\n"));
}

/// A basic template of `packages` packages, one entry of 7 values each, as YAML.
fn many_packages(packages: usize) -> String {
    let mut text = String::from("schema: olm.template.basic\nentries:\n");
    for i in 0..packages {
        text.push_str(&format!(
            "- schema: olm.package\n  name: package-{i:07}\n  description: the package numbered {i:07}\n"
        ));
    }
    text
}

/// A 26 MB basic template (300,000 packages, 2.1 million values) is taken as opm takes it:
/// opm has no limit but the file's size, and neither has olmpack below `--max-file-size` (it
/// refused this after half a minute, "too large to read safely: 2000001 values", "split the
/// file"). The template is generated here; opm, when it is installed, reads the same file to
/// the same packages. The time bound is a hang check (a debug build on a loaded machine).
#[test]
fn a_26_mb_basic_template_is_taken_as_opm_takes_it() {
    let packages = 300_000;
    let text = many_packages(packages);
    assert!(text.len() > 26_000_000, "{} bytes", text.len());
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("big.yaml");
    std::fs::write(&file, &text).unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["catalog", "template"])
        .arg(&file)
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "olmpack: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names = |stdout: &[u8]| -> Vec<String> {
        json_stream(&String::from_utf8_lossy(stdout))
            .iter()
            .filter(|v| v["schema"] == "olm.package")
            .map(|v| v["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let ours = names(&out.stdout);
    assert_eq!(ours.len(), packages);
    assert_eq!(ours[packages - 1], format!("package-{:07}", packages - 1));
    assert!(took.as_secs() < 120, "olmpack took {took:?}");
    if !olmpack_testkit::tools::require(&[Tool::Opm], "opm") {
        return;
    }
    let opm = Command::new(Tool::Opm.path().unwrap())
        .args(["alpha", "render-template", "basic"])
        .arg(&file)
        .args(["-o", "json"])
        .output()
        .unwrap();
    assert!(
        opm.status.success(),
        "opm: {}",
        String::from_utf8_lossy(&opm.stderr)
    );
    assert_eq!(names(&opm.stdout), ours, "opm's packages");
}
