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
