//! `olmpack bundle generate` on the example operator: snapshots, determinism (also on other
//! days, via faketime), agreement with the real opm, bad input, `--check`.

use std::path::{Path, PathBuf};
use std::process::Command;

mod bundle_support;

use olmpack::bundle::generate::{GenerateOptions, generate};
use olmpack::catalog::render::{self, RenderOptions};
use olmpack_envtest::binaries::Tool;
use olmpack_oci::output::read_tree;

fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("example")
}

fn olmpack() -> Command {
    Command::new(env!("CARGO_BIN_EXE_olmpack"))
}

/// Copies the example plan and its inputs into a fresh directory, so tests can change them.
fn example_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, contents) in read_tree(&example_dir(), &Default::default()).unwrap() {
        let target = dir.path().join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, contents).unwrap();
    }
    dir
}

#[test]
fn generated_bundles_match_their_snapshots() {
    let plan =
        olmpack::plan::load(&example_dir().join("olmpack.yaml"), &Default::default()).unwrap();
    let generated = generate(&plan, &GenerateOptions::default()).unwrap();
    assert_eq!(generated.reports.len(), 3);
    for (path, contents) in generated.tree.iter() {
        let name = path.display().to_string().replace('/', "__");
        insta::assert_snapshot!(name, std::str::from_utf8(contents).unwrap());
    }
}

/// The bundles validated (and handed on to the catalog) are built, not parsed back from the
/// written files; they must be exactly what reading those files gives, for the example plan,
/// the reference operator's and operator-sdk output read by the importer.
#[test]
fn the_bundle_validated_is_the_bundle_written() {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let load = |file: PathBuf| olmpack::plan::load(&file, &Default::default()).unwrap();
    // operator-sdk output through the importer: a bundle's manifests, a kustomize build.
    let imported = |dir: &str, manifests: &str| {
        let file = manifest_dir
            .join("tests/fixtures/import")
            .join(dir)
            .join("olmpack.yaml");
        let text = format!(
            "package: memcached-operator\ndefaultChannel: alpha\nchannels: [alpha]\n\
             csv: {{displayName: \"\", description: \"\", provider: {{name: \"\"}}}}\n\
             releases:\n- {{version: 0.0.1, manifests: {manifests}}}\n"
        );
        olmpack_model::plan::parse(&file, &text).unwrap()
    };
    // Metadata files beside annotations.yaml, with text opm escapes when it reads YAML.
    let mut with_metadata = load(example_dir().join("olmpack.yaml"));
    with_metadata.plan.releases[0].properties = vec![
        serde_json::json!({"type": "olm.maxOpenShiftVersion", "value": "4.16"}),
        serde_json::json!({"type": "acme.note", "value": "a <b> & c"}),
    ];
    with_metadata.plan.releases[0].dependencies = vec![serde_json::json!(
        {"type": "olm.package", "value": {"packageName": "etcd", "version": ">=0.9.0 <1.0.0"}}
    )];
    let plans = [
        load(example_dir().join("olmpack.yaml")),
        with_metadata,
        // The reference operator: webhooks, a conversion webhook, three CRD versions.
        load(manifest_dir.join("../olmpack.yaml")),
        imported("sdk-bundle", "manifests"),
        imported("sdk-config", "."),
    ];
    for plan in plans {
        let plan_file = plan.path.clone();
        let generated = generate(&plan, &GenerateOptions::default()).unwrap();
        assert!(!generated.bundles.is_empty(), "{}", plan_file.display());
        for (version, built) in &generated.bundles {
            let dir = Path::new(version);
            let files: Vec<(PathBuf, Vec<u8>)> = (generated.tree.iter())
                .filter_map(|(p, b)| Some((p.strip_prefix(dir).ok()?.to_path_buf(), b.to_vec())))
                .collect();
            let read = olmpack::bundle::load::load_files(
                dir,
                files.iter().map(|(p, b)| (p.as_path(), b.as_slice())),
            );
            let what = format!("{} {version}", plan_file.display());
            assert_eq!(read.objects, built.objects, "{what}");
            assert_eq!(read.annotations, built.annotations, "{what}");
            assert_eq!(read.properties, built.properties, "{what}");
            assert_eq!(read.dependencies, built.dependencies, "{what}");
            assert_eq!(read.files, built.files, "{what}");
            assert!(
                read.problems.is_empty() && read.lenient.is_empty(),
                "{what}"
            );
            // The catalog renders the built bundle without parsing its files back: the
            // blob is the one opm's reading of the written files gives.
            let options = RenderOptions {
                image: format!("quay.io/example/bundle:v{version}"),
                ..Default::default()
            };
            let json = |bundle| {
                let mut out = Vec::new();
                olmpack::catalog::gojson::write_indented(&mut out, &bundle).unwrap();
                String::from_utf8(out).unwrap()
            };
            assert_eq!(
                json(render::render_built(built, &options).unwrap()),
                json(render::render_files(dir, &read.files, &options).unwrap()),
                "{what}"
            );
        }
    }
}

#[test]
fn generation_is_byte_identical_across_runs_and_days() {
    let faketime = Tool::Faketime
        .path()
        .expect("faketime is installed by cargo xtask setup");
    let work = tempfile::tempdir().unwrap();
    let plan = example_dir().join("olmpack.yaml");
    let mut outputs = Vec::new();
    for (i, day) in ["2027-03-01 08:00:00", "2031-11-30 23:59:59"]
        .iter()
        .enumerate()
    {
        // Guard: the fake clock really reaches child processes, or this test proves nothing.
        let year = Command::new(&faketime)
            .arg(day)
            .args(["date", "-u", "+%Y"])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&year.stdout).trim(),
            &day[..4],
            "faketime is not faking the clock"
        );
        let out = work.path().join(format!("out-{i}"));
        let status = Command::new(&faketime)
            .arg(day)
            .arg(env!("CARGO_BIN_EXE_olmpack"))
            .args(["bundle", "generate", "--plan"])
            .arg(&plan)
            .arg("--out")
            .arg(&out)
            .env("TZ", if i == 0 { "UTC" } else { "Asia/Kolkata" })
            .status()
            .unwrap();
        assert!(status.success());
        outputs.push(read_tree(&out, &Default::default()).unwrap());
    }
    assert!(!outputs[0].is_empty());
    assert_eq!(outputs[0], outputs[1], "output differs between days");
}

#[test]
fn created_at_comes_from_the_plan_or_source_date_epoch_only() {
    let dir = example_copy();
    let plan_path = dir.path().join("olmpack.yaml");
    let text = std::fs::read_to_string(&plan_path)
        .unwrap()
        .replace("createdAt: \"2026-01-15T00:00:00Z\"\n", "");
    std::fs::write(&plan_path, text).unwrap();
    let csv_of = |epoch: Option<&str>| -> String {
        let out = dir.path().join("bundle");
        let mut cmd = olmpack();
        cmd.args(["bundle", "generate", "--plan"])
            .arg(&plan_path)
            .env_remove("SOURCE_DATE_EPOCH");
        if let Some(epoch) = epoch {
            cmd.env("SOURCE_DATE_EPOCH", epoch);
        }
        assert!(cmd.status().unwrap().success());
        std::fs::read_to_string(
            out.join("1.0.0/manifests/guestbook-operator.clusterserviceversion.yaml"),
        )
        .unwrap()
    };
    assert!(
        !csv_of(None).contains("createdAt"),
        "no plan date and no SOURCE_DATE_EPOCH: no createdAt"
    );
    assert!(csv_of(Some("1700000000")).contains("createdAt: \"2023-11-14T22:13:20Z\""));
}

#[test]
fn opm_renders_every_generated_bundle_like_olmpack() {
    let out = tempfile::tempdir().unwrap();
    let status = olmpack()
        .args(["bundle", "generate", "--plan"])
        .arg(example_dir().join("olmpack.yaml"))
        .arg("--out")
        .arg(out.path())
        .status()
        .unwrap();
    assert!(status.success());
    for version in ["1.0.0", "1.1.0", "1.1.1"] {
        let theirs = bundle_support::assert_renders_like_opm(&out.path().join(version));
        assert_eq!(theirs["name"], format!("guestbook-operator.v{version}"));
    }
}

/// Runs generate on a broken copy of the example; returns (exit code, stderr) and checks that
/// the output directory was not touched.
fn generate_broken(change: impl FnOnce(&Path)) -> (i32, String) {
    let dir = example_copy();
    let out = dir.path().join("bundle");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("sentinel"), "before").unwrap();
    change(dir.path());
    let result = olmpack()
        .args(["bundle", "generate", "--plan"])
        .arg(dir.path().join("olmpack.yaml"))
        .output()
        .unwrap();
    let entries: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        entries,
        vec![std::ffi::OsString::from("sentinel")],
        "a failed generate wrote output"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("olmpack-new") || n.contains("olmpack-old"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "temp output left behind: {leftovers:?}"
    );
    (
        result.status.code().unwrap(),
        String::from_utf8(result.stderr).unwrap(),
    )
}

fn append(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    let mut contents = std::fs::read_to_string(&path).unwrap();
    contents.push_str(text);
    std::fs::write(path, contents).unwrap();
}

#[test]
fn bad_input_names_file_and_field_and_writes_nothing() {
    // (name, how to break the example, exit code, what stderr must say)
    type Case = (&'static str, Box<dyn FnOnce(&Path)>, i32, Vec<&'static str>);
    let cases: Vec<Case> = vec![
        (
            "malformed YAML in a manifest",
            Box::new(|d: &Path| {
                append(
                    d,
                    "deploy/1.1.0/manifests.yaml",
                    "---\nkind: [oops\nmetadata: x\n",
                )
            }),
            1,
            vec![
                "error[input/invalid-yaml]",
                "deploy/1.1.0/manifests.yaml",
                "invalid YAML: line 201 column 9: illegal placement",
            ],
        ),
        (
            "unsupported kind",
            Box::new(|d: &Path| {
                append(
                    d,
                    "deploy/1.0.0/manifests.yaml",
                    "---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate}\n",
                )
            }),
            1,
            vec![
                "error[input/unsupported-kind]",
                "deploy/1.0.0/manifests.yaml (document 10): Job/migrate: kind: kind Job (batch/v1) cannot be shipped in a registry+v1 bundle",
            ],
        ),
        (
            "duplicate CRD",
            Box::new(|d: &Path| {
                let text = std::fs::read_to_string(d.join("deploy/1.0.0/manifests.yaml")).unwrap();
                let crd = text
                    .split("---\n")
                    .find(|doc| doc.contains("kind: CustomResourceDefinition"))
                    .unwrap()
                    .to_owned();
                std::fs::write(d.join("deploy/1.0.0/crd-copy.yaml"), crd).unwrap();
            }),
            1,
            vec![
                "error[input/duplicate-object]",
                "CustomResourceDefinition/guestbooks.demo.olmpack.dev: metadata.name: CustomResourceDefinition/guestbooks.demo.olmpack.dev is also defined in",
            ],
        ),
        (
            "missing required CSV field",
            Box::new(|d: &Path| {
                let path = d.join("olmpack.yaml");
                let text = std::fs::read_to_string(&path)
                    .unwrap()
                    .replace("  displayName: Guestbook Operator\n", "");
                std::fs::write(path, text).unwrap();
            }),
            1,
            vec!["olmpack.yaml: csv: missing field `displayName`"],
        ),
        (
            "unknown key in the plan",
            Box::new(|d: &Path| {
                append(
                    d,
                    "olmpack.yaml",
                    "  - version: 1.2.0\n    manifests: deploy/1.1.1\n    skipRang: \">=1.0.0 <1.2.0\"\n",
                )
            }),
            1,
            vec!["olmpack.yaml: releases[3].skipRang: unknown field `skipRang`"],
        ),
        (
            "missing sample file",
            Box::new(|d: &Path| std::fs::remove_file(d.join("samples/v1.yaml")).unwrap()),
            1,
            vec![
                "error[plan/sample-unreadable]",
                "olmpack.yaml: samples[1]:",
                "samples/v1.yaml: does not exist",
            ],
        ),
    ];
    for (name, change, code, expected) in cases {
        let (got_code, stderr) = generate_broken(change);
        assert_eq!(got_code, code, "{name}: {stderr}");
        for part in expected {
            assert!(
                stderr.contains(part),
                "{name}: stderr lacks {part:?}:\n{stderr}"
            );
        }
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    }
}

#[test]
fn every_release_is_read_before_any_is_built_and_all_problems_come_at_once() {
    // 1.0.0 reads fine but cannot be built (a webhook OLM cannot route); 1.1.0 cannot be
    // read. Reading every release comes first, so the run stops with 1.1.0's problem and
    // builds nothing (releases one by one would give 1.0.0's build problem first).
    let dir = example_copy();
    let webhook = "---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: check}\nwebhooks:\n- name: check.demo.olmpack.dev\n  admissionReviewVersions: [v1]\n  sideEffects: None\n  clientConfig: {url: \"https://example.com/check\"}\n";
    append(dir.path(), "deploy/1.0.0/manifests.yaml", webhook);
    append(
        dir.path(),
        "deploy/1.1.0/manifests.yaml",
        "---\nkind: [oops\n",
    );
    let rules = |dir: &Path| {
        let plan = olmpack::plan::load(&dir.join("olmpack.yaml"), &Default::default()).unwrap();
        let Err(olmpack::bundle::generate::GenerateError::Invalid(found)) =
            generate(&plan, &GenerateOptions::default())
        else {
            panic!("generate must refuse the plan");
        };
        let found: Vec<(String, String)> = found
            .iter()
            .map(|f| {
                (
                    f.rule.clone(),
                    f.file.as_ref().unwrap().display().to_string(),
                )
            })
            .collect();
        found
    };
    assert_eq!(
        rules(dir.path()),
        [(
            "input/invalid-yaml".to_owned(),
            "deploy/1.1.0/manifests.yaml".to_owned()
        )]
    );
    // Once every release reads, every release's build problem comes at once.
    std::fs::copy(
        dir.path().join("deploy/1.0.0/manifests.yaml"),
        dir.path().join("deploy/1.1.0/manifests.yaml"),
    )
    .unwrap();
    let built: Vec<String> = rules(dir.path())
        .into_iter()
        .map(|(rule, _)| rule)
        .collect();
    assert_eq!(
        built,
        [
            "input/webhook-without-service",
            "input/webhook-without-service"
        ]
    );
}

#[test]
fn check_reports_stale_output_with_a_diff() {
    let dir = example_copy();
    let plan = dir.path().join("olmpack.yaml");
    let run = |check: bool| {
        let mut cmd = olmpack();
        cmd.args(["bundle", "generate", "--plan"]).arg(&plan);
        if check {
            cmd.arg("--check");
        }
        cmd.output().unwrap()
    };
    assert!(run(false).status.success());
    assert!(run(true).status.success(), "fresh output is up to date");
    let csv = dir
        .path()
        .join("bundle/1.1.1/manifests/guestbook-operator.clusterserviceversion.yaml");
    let text = std::fs::read_to_string(&csv)
        .unwrap()
        .replace("maturity: stable", "maturity: alpha");
    std::fs::write(&csv, text).unwrap();
    std::fs::write(
        dir.path().join("bundle/1.1.1/manifests/extra.yaml"),
        "x: 1\n",
    )
    .unwrap();
    let stale = run(true);
    assert_eq!(stale.status.code(), Some(1));
    let stdout = String::from_utf8(stale.stdout).unwrap();
    assert!(
        stdout.contains("-  maturity: alpha\n+  maturity: stable"),
        "{stdout}"
    );
    assert!(
        stdout.contains("not generated (would be removed): 1.1.1/manifests/extra.yaml"),
        "{stdout}"
    );
}

#[test]
fn each_image_reference_is_resolved_once_and_a_refusal_is_a_problem_of_every_release_naming_it() {
    // 1.1.0 and 1.1.1 run the same image; the resolver refuses everything.
    let dir = example_copy();
    let manifests = dir.path().join("deploy/1.1.1/manifests.yaml");
    let text = std::fs::read_to_string(&manifests).unwrap();
    let shared = "quay.io/olmpack/guestbook-operator:v1.1.0";
    std::fs::write(
        &manifests,
        text.replace("guestbook-operator:v1.1.1", "guestbook-operator:v1.1.0"),
    )
    .unwrap();
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = asked.clone();
    let options = GenerateOptions {
        resolver: Some(olmpack::bundle::generate::ImageResolver(
            std::sync::Arc::new(move |reference: &str| {
                log.lock().unwrap().push(reference.to_owned());
                Err(olmpack::bundle::generate::Unresolved::Refused(
                    "no such image".to_owned(),
                ))
            }),
        )),
        ..Default::default()
    };
    let plan = olmpack::plan::load(&dir.path().join("olmpack.yaml"), &Default::default()).unwrap();
    let Err(olmpack::bundle::generate::GenerateError::Invalid(found)) = generate(&plan, &options)
    else {
        panic!("generate must refuse images it cannot pin");
    };
    let asked = asked.lock().unwrap().clone();
    assert_eq!(
        asked.iter().filter(|r| *r == shared).count(),
        1,
        "{asked:?}"
    );
    let naming: Vec<String> = (found.iter())
        .filter(|f| f.message.contains(shared))
        .map(|f| f.field.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        naming,
        ["releases[1].manifests", "releases[2].manifests"],
        "{found:#?}"
    );
    assert!(
        found.iter().all(|f| f.rule == "image/unresolved"),
        "{found:#?}"
    );
}
