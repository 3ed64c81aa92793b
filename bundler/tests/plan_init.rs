//! `olmpack plan init` on a kubebuilder project we did not write: the kubebuilder book's
//! multiversion-tutorial (its PROJECT file, `make build-installer`'s dist/install.yaml and
//! config/samples, from the corpus). The plan it writes is a snapshot, and `olmpack generate`
//! turns it into a bundle and catalog with no error; a missing PROJECT or install.yaml and an
//! existing plan are refused with nothing written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A copy of the project's PROJECT, dist/install.yaml and config/samples, or NOT RUN.
fn project(test: &str) -> Option<tempfile::TempDir> {
    let corpus = std::env::var_os("OLMPACK_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"));
    let src = corpus.join("kubebuilder-5c40072/src/multiversion-tutorial");
    if !src.join("PROJECT").is_file() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test}: the book's project is not at {} (required in CI)",
            src.display()
        );
        eprintln!("\n*** {test}: NOT RUN: no {} ***\n", src.display());
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    for file in [
        "PROJECT",
        "dist/install.yaml",
        "config/samples/batch_v1_cronjob.yaml",
        "config/samples/batch_v2_cronjob.yaml",
        "config/samples/kustomization.yaml",
    ] {
        let to = dir.path().join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(src.join(file), to).unwrap();
    }
    Some(dir)
}

fn olmpack(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn shown(out: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn plan_init_writes_a_plan_generate_turns_into_a_bundle() {
    let Some(dir) = project("plan_init_writes_a_plan_generate_turns_into_a_bundle") else {
        return;
    };
    let init = olmpack(
        dir.path(),
        &["plan", "init", "--repository", "ghcr.io/acme/cronjob"],
    );
    assert!(init.status.success(), "{}", shown(&init));
    assert!(
        String::from_utf8_lossy(&init.stderr).contains(
            "for project 0.1.0 (CronJob (batch.tutorial.kubebuilder.io/v1), CronJob (batch.tutorial.kubebuilder.io/v2); conversion webhook: give upgrade test --webhook-command)"
        ),
        "{}",
        shown(&init)
    );
    // The book's installer was built without IMG: the image every release would run.
    assert!(
        String::from_utf8_lossy(&init.stderr).contains(
            "runs image controller:latest (kubebuilder's default), so every release would run the same image: build it with `make build-installer IMG=ghcr.io/acme/cronjob:v0.1.0`"
        ),
        "{}",
        shown(&init)
    );
    let plan = std::fs::read_to_string(dir.path().join("olmpack.yaml")).unwrap();
    insta::assert_snapshot!("plan_init_kubebuilder_book", plan);

    let generate = olmpack(dir.path(), &["generate"]);
    assert!(generate.status.success(), "{}", shown(&generate));
    let text = shown(&generate);
    assert!(text.contains("0.1.0: 0 error(s)"), "{text}");
    let csv = dir
        .path()
        .join("bundle/0.1.0/manifests/project.clusterserviceversion.yaml");
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(
        csv.contains("\"kind\": \"CronJob\""),
        "samples in alm-examples:\n{csv}"
    );
}

#[test]
fn plan_init_refuses_what_it_cannot_read_and_keeps_an_existing_plan() {
    let test = "plan_init_refuses_what_it_cannot_read_and_keeps_an_existing_plan";
    let Some(dir) = project(test) else {
        return;
    };
    let path = |p: &str| dir.path().join(p).display().to_string();
    std::fs::write(dir.path().join("olmpack.yaml"), "mine\n").unwrap();
    let kept = olmpack(dir.path(), &["plan", "init"]);
    assert_eq!(kept.status.code(), Some(2), "{}", shown(&kept));
    assert!(
        shown(&kept).contains("./olmpack.yaml: exists; nothing was written (--force replaces it)"),
        "{}",
        shown(&kept)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("olmpack.yaml")).unwrap(),
        "mine\n"
    );
    let forced = olmpack(dir.path(), &["plan", "init", "--force"]);
    assert!(forced.status.success(), "{}", shown(&forced));
    assert!(
        std::fs::read_to_string(dir.path().join("olmpack.yaml"))
            .unwrap()
            .contains("operatorImage: registry.example/project:v{version}")
    );

    std::fs::remove_file(dir.path().join("dist/install.yaml")).unwrap();
    let no_install = olmpack(dir.path(), &["plan", "init", "--force"]);
    assert_eq!(no_install.status.code(), Some(2), "{}", shown(&no_install));
    assert!(
        shown(&no_install).contains(
            "./dist/install.yaml: not found: run `make build-installer` in the project first"
        ),
        "{}",
        shown(&no_install)
    );
    std::fs::remove_file(dir.path().join("PROJECT")).unwrap();
    let no_project = olmpack(dir.path(), &["plan", "init", "--project", &path("")]);
    assert_eq!(no_project.status.code(), Some(2), "{}", shown(&no_project));
    assert!(
        shown(&no_project).contains("PROJECT: does not exist"),
        "{}",
        shown(&no_project)
    );
}

/// A minimal kubebuilder project in a new directory: its PROJECT file with `kind`, an
/// install.yaml, and `config/samples` holding `samples`.
fn hostile_project(kind: &str, samples: &[&std::ffi::OsStr]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let project = serde_json::json!({
        "domain": "example.com",
        "projectName": "demo",
        "resources": [{"group": "apps", "kind": kind, "version": "v1"}],
    });
    std::fs::write(dir.path().join("PROJECT"), project.to_string()).unwrap();
    std::fs::create_dir_all(dir.path().join("dist")).unwrap();
    std::fs::write(
        dir.path().join("dist/install.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("config/samples")).unwrap();
    for name in samples {
        std::fs::write(dir.path().join("config/samples").join(name), "kind: X\n").unwrap();
    }
    dir
}

/// Text from the PROJECT file and sample file names is serialized, never formatted into the
/// plan: a `kind` holding a newline adds no key, a sample name holding newlines adds no
/// release, `a #b.yaml` stays whole, and every sample the plan names is a file that exists.
#[test]
fn plan_init_serializes_what_it_read() {
    use std::ffi::OsStr;
    let kind = "CronJob\nbundleLabels: {injected: yes}\n# and more";
    let newline = "x.yaml\n  - version: 9.9.9\n    manifests: evil.yaml\n#.yaml";
    let names = ["a #b.yaml", newline, "c: {d}.yml", "\u{2028}e.yaml"];
    let dir = hostile_project(kind, &names.map(OsStr::new));
    let init = olmpack(dir.path(), &["plan", "init"]);
    assert!(init.status.success(), "{}", shown(&init));
    let text = std::fs::read_to_string(dir.path().join("olmpack.yaml")).unwrap();
    let plan: serde_json::Value = olmpack_model::yaml::from_str(&text).unwrap();
    let keys: Vec<&String> = plan.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "bundleImage",
            "catalogImage",
            "channels",
            "csv",
            "defaultChannel",
            "operatorImage",
            "package",
            "releases"
        ],
        "{text}"
    );
    let releases = plan["releases"].as_array().unwrap();
    assert_eq!(releases.len(), 1, "{text}");
    let mut want: Vec<String> = names
        .iter()
        .map(|n| format!("config/samples/{n}"))
        .collect();
    want.sort();
    let samples: Vec<String> = releases[0]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(samples, want, "{text}");
    for sample in &samples {
        assert!(dir.path().join(sample).is_file(), "{sample:?}");
    }
    // The comment naming the APIs stays one comment line.
    let apis: Vec<&str> = text.lines().filter(|l| l.contains("APIs:")).collect();
    assert_eq!(
        apis,
        ["# APIs: CronJob bundleLabels: {injected: yes} # and more (apps.example.com/v1)."],
        "{text}"
    );
}

/// What plan init cannot write is refused naming the input, with nothing written: a sample
/// whose name is not UTF-8 (exit 1), a PROJECT file that is not one (exit 1, the input is
/// invalid), a release version the plan refuses (exit 2, a bad argument; the message blames
/// the arguments, not an olmpack.yaml that was never written).
#[test]
fn plan_init_refuses_what_it_cannot_represent_naming_the_input() {
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"s\xff.yaml");
    let dir = hostile_project("Widget", &[bad]);
    let out = olmpack(dir.path(), &["plan", "init"]);
    assert_eq!(out.status.code(), Some(1), "{}", shown(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: config/samples/s\u{fffd}.yaml: its name is not UTF-8, so olmpack.yaml cannot name it; nothing was written (rename it)\n"
    );
    assert!(!dir.path().join("olmpack.yaml").exists());

    let dir = hostile_project("Widget", &[]);
    std::fs::write(dir.path().join("PROJECT"), "- a\n- b\n").unwrap();
    let out = olmpack(dir.path(), &["plan", "init"]);
    assert_eq!(out.status.code(), Some(1), "{}", shown(&out));
    assert!(
        shown(&out).contains("./PROJECT: not a kubebuilder PROJECT file: "),
        "{}",
        shown(&out)
    );

    let dir = hostile_project("Widget", &[]);
    let out = olmpack(dir.path(), &["plan", "init", "--release-version", "one"]);
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(
            "error: the plan made of ./PROJECT and the arguments: releases[0].version: "
        ) && stderr.ends_with("\nnothing was written to ./olmpack.yaml\n"),
        "{stderr}"
    );
    assert!(!dir.path().join("olmpack.yaml").exists());
}

/// A FIFO where dist/install.yaml should be is refused as what it is (exit 1), not reported
/// as missing, and nothing is written.
#[test]
fn plan_init_says_a_fifo_install_yaml_is_not_a_file() {
    let dir = hostile_project("Widget", &[]);
    let install = dir.path().join("dist/install.yaml");
    std::fs::remove_file(&install).unwrap();
    let made = Command::new("mkfifo").arg(&install).status().unwrap();
    assert!(made.success());
    let out = olmpack(dir.path(), &["plan", "init"]);
    assert_eq!(out.status.code(), Some(1), "{}", shown(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("dist/install.yaml: is a FIFO") && !stderr.contains("not found"),
        "{stderr}"
    );
    assert!(!dir.path().join("olmpack.yaml").exists());
}

/// operator-sdk's Go memcached sample at a released tag (PROJECT, `make bundle`'s bundle/,
/// config/samples and config/manifests, unedited: fixtures/plan_init_operator_sdk/TAG/README.md).
fn sdk_project(tag: &str) -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/plan_init_operator_sdk")
        .join(tag);
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&src, dir.path());
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The `olmpack` commands of docs/guide.md's operator-sdk block, as they stand (`make
/// bundle`'s output is the fixture's bundle/).
fn sdk_docs_commands() -> Vec<Vec<String>> {
    let guide = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/guide.md");
    let guide = std::fs::read_to_string(guide).unwrap();
    let start = guide
        .find("**operator-sdk projects:**")
        .expect("docs/guide.md has its operator-sdk section");
    let block = &guide[start..];
    let block = &block[block.find("```sh\n").unwrap() + 6..];
    let block = &block[..block.find("```").unwrap()];
    let commands: Vec<Vec<String>> = block
        .lines()
        .map(|line| line.split(" #").next().unwrap().trim())
        .filter(|line| line.starts_with("olmpack "))
        .map(|line| line.split_whitespace().skip(1).map(str::to_owned).collect())
        .collect();
    assert_eq!(commands.len(), 3, "{block}");
    assert!(block.contains("make bundle"), "{block}");
    commands
}

/// `warnings`: what `bundle validate` says of the generated bundle — v1.42.3's manager is
/// told `--metrics-cert-path` under a path no volume mounts (`csv/unmounted-path`: the pod
/// crash-loops unless the image holds the file).
fn sdk_docs_commands_run_as_they_stand(tag: &str, warnings: usize) {
    let dir = sdk_project(tag);
    let before = std::fs::read(dir.path().join("bundle/tests/scorecard/config.yaml")).unwrap();
    for command in sdk_docs_commands() {
        let args: Vec<&str> = command.iter().map(String::as_str).collect();
        let out = olmpack(dir.path(), &args);
        assert!(out.status.success(), "{tag}: {args:?}\n{}", shown(&out));
        if args[0] == "bundle" {
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                stdout.ends_with(&format!(
                    "olmpack/bundle: 0 error(s), {warnings} warning(s), 0 info\n"
                )),
                "{tag}: {}",
                shown(&out)
            );
            assert_eq!(
                stdout.contains("warning[csv/unmounted-path]"),
                warnings == 4,
                "{tag}: {stdout}"
            );
        }
        if args[0] == "plan" {
            let plan = std::fs::read_to_string(dir.path().join("olmpack.yaml")).unwrap();
            insta::assert_snapshot!(
                format!("plan_init_operator_sdk_{}", tag.replace('.', "_")),
                plan
            );
        }
    }
    // operator-sdk's bundle/ is untouched; olmpack's bundle carries its scorecard config, named
    // by operator-sdk's test annotations and labels, copied by the Dockerfile.
    let bundle = dir.path().join("olmpack/bundle/0.0.1");
    let carried = std::fs::read_to_string(bundle.join("tests/scorecard/config.yaml")).unwrap();
    let carried: serde_json::Value = olmpack_model::yaml::from_str(&carried).unwrap();
    let source: serde_json::Value =
        olmpack_model::yaml::from_str(std::str::from_utf8(&before).unwrap()).unwrap();
    assert_eq!(carried, source, "{tag}");
    assert_eq!(
        std::fs::read(dir.path().join("bundle/tests/scorecard/config.yaml")).unwrap(),
        before
    );
    let annotations = std::fs::read_to_string(bundle.join("metadata/annotations.yaml")).unwrap();
    for line in [
        "  operators.operatorframework.io.test.config.v1: tests/scorecard/\n",
        "  operators.operatorframework.io.test.mediatype.v1: scorecard+v1\n",
    ] {
        assert!(annotations.contains(line), "{tag}: {annotations}");
    }
    let dockerfile = std::fs::read_to_string(bundle.join("bundle.Dockerfile")).unwrap();
    for line in [
        "LABEL operators.operatorframework.io.test.config.v1=\"tests/scorecard/\"\n",
        "LABEL operators.operatorframework.io.test.mediatype.v1=\"scorecard+v1\"\n",
        "COPY tests/scorecard /tests/scorecard/\n",
    ] {
        assert!(dockerfile.contains(line), "{tag}: {dockerfile}");
    }
    let csv = std::fs::read_to_string(
        bundle.join("manifests/memcached-operator.clusterserviceversion.yaml"),
    )
    .unwrap();
    assert!(csv.contains("displayName: Memcached Operator"), "{csv}");
    assert!(
        csv.contains("\"kind\": \"Memcached\""),
        "alm-examples:\n{csv}"
    );
}

#[test]
fn plan_init_operator_sdk_v1_39_2_docs_commands_generate_a_valid_bundle() {
    sdk_docs_commands_run_as_they_stand("v1.39.2", 3);
}

#[test]
fn plan_init_operator_sdk_v1_42_3_docs_commands_generate_a_valid_bundle() {
    sdk_docs_commands_run_as_they_stand("v1.42.3", 4);
}

/// operator-sdk's own bundle/ is never replaced: `generate` told to write there is refused by
/// the `.olmpack-generated` rule, nothing written; without `make bundle`'s output `plan init`
/// says what to run; a scorecard file that is not a Configuration is left out with a warning.
#[test]
fn plan_init_operator_sdk_refuses_the_collision_and_a_missing_bundle() {
    let dir = sdk_project("v1.42.3");
    let init = olmpack(dir.path(), &["plan", "init"]);
    assert!(init.status.success(), "{}", shown(&init));
    let listing = |d: &Path| {
        let mut files: Vec<String> = walk(d);
        files.sort();
        files
    };
    let before = listing(&dir.path().join("bundle"));
    let out = olmpack(dir.path(), &["generate", "--bundles", "bundle"]);
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).ends_with(
            "error: bundle: is a directory olmpack did not generate (it holds metadata, which olmpack would not write); olmpack replaces only directories it generated, so nothing was written (pick another output directory, or remove it yourself)\n"
        ),
        "{}",
        shown(&out)
    );
    assert_eq!(listing(&dir.path().join("bundle")), before);
    assert!(!dir.path().join("olmpack").exists());
    assert!(!dir.path().join("catalog").exists());

    std::fs::write(
        dir.path().join("bundle/tests/scorecard/config.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .unwrap();
    let out = olmpack(dir.path(), &["generate"]);
    assert!(out.status.success(), "{}", shown(&out));
    assert!(
        shown(&out).contains("warning[input/scorecard-unreadable] bundle/tests/scorecard/config.yaml: the bundle's scorecard configuration is not carried: it holds ConfigMap \"v1\", not a scorecard.operatorframework.io Configuration"),
        "{}",
        shown(&out)
    );
    assert!(!dir.path().join("olmpack/bundle/0.0.1/tests").exists());

    std::fs::remove_dir_all(dir.path().join("bundle/manifests")).unwrap();
    let out = olmpack(dir.path(), &["plan", "init", "--force"]);
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: ./bundle/manifests: no ClusterServiceVersion there, and PROJECT names operator-sdk's manifests.sdk.operatorframework.io/v2: run `make bundle` in the project first (olmpack reads its bundle/manifests and does not run operator-sdk), or write the plan yourself with `manifests` naming the output of `kustomize build config/manifests`\n"
    );
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            out.extend(walk(&entry.path()));
        } else {
            out.push(entry.path().display().to_string());
        }
    }
    out
}
