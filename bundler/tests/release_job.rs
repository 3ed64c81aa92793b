//! `olmpack generate` and `olmpack example`: bundles and catalog from one plan,
//! accepted by the real opm.

use std::process::Command;

use olmpack_envtest::binaries::Tool;

fn olmpack() -> Command {
    Command::new(env!("CARGO_BIN_EXE_olmpack"))
}

#[test]
fn the_example_job_writes_bundles_and_a_catalog_opm_accepts() {
    let out = tempfile::tempdir().unwrap();
    let run = olmpack()
        .args(["example", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8(run.stdout).unwrap();
    assert!(
        stdout.contains("released guestbook-operator 1.1.1 to"),
        "{stdout}"
    );
    // Warnings name files relative to the plan, not a temp directory.
    let stderr = String::from_utf8(run.stderr).unwrap();
    assert!(
        stderr
            .contains("warning[input/namespace-dropped] deploy/1.0.0/manifests.yaml (document 1)"),
        "{stderr}"
    );

    let catalog = out.path().join("catalog");
    let opm = Tool::Opm
        .path()
        .expect("opm is installed by cargo xtask setup");
    let validated = Command::new(&opm)
        .arg("validate")
        .arg(&catalog)
        .output()
        .unwrap();
    assert!(
        validated.status.success(),
        "opm validate: {}",
        String::from_utf8_lossy(&validated.stderr)
    );
    let ours = olmpack()
        .args(["catalog", "validate"])
        .arg(&catalog)
        .output()
        .unwrap();
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stdout)
    );
    let bundles = olmpack()
        .args(["bundle", "validate"])
        .arg(out.path().join("bundle"))
        .output()
        .unwrap();
    assert!(
        bundles.status.success(),
        "{}",
        String::from_utf8_lossy(&bundles.stdout)
    );

    // The catalog names every bundle by the plan's image repository, pinned to the digest of
    // the bundle image built, and keeps the skipRange.
    let text = std::fs::read_to_string(catalog.join("guestbook-operator/catalog.json")).unwrap();
    assert!(
        text.contains("\"image\": \"quay.io/olmpack/guestbook-operator-bundle@sha256:"),
        "{text}"
    );
    assert!(text.contains("\"skipRange\": \">=1.0.0 <1.1.1\""));
}

#[test]
fn generate_check_passes_on_fresh_output_and_fails_on_a_stale_catalog() {
    let work = tempfile::tempdir().unwrap();
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("example");
    for (path, contents) in olmpack_oci::output::read_tree(&example, &Default::default()).unwrap() {
        let target = work.path().join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, contents).unwrap();
    }
    let plan = work.path().join("olmpack.yaml");
    let generate = |check: bool| {
        let mut cmd = olmpack();
        cmd.args(["generate", "--plan"]).arg(&plan);
        if check {
            cmd.arg("--check");
        }
        cmd.output().unwrap()
    };
    assert!(generate(false).status.success());
    assert!(generate(true).status.success());
    let catalog = work.path().join("catalog/guestbook-operator/catalog.json");
    let text = std::fs::read_to_string(&catalog).unwrap().replace(
        "\"defaultChannel\": \"stable\"",
        "\"defaultChannel\": \"candidate\"",
    );
    std::fs::write(&catalog, text).unwrap();
    let stale = generate(true);
    assert_eq!(stale.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&stale.stdout).contains("+    \"defaultChannel\": \"stable\""));
    // `catalog generate` sees the same staleness, and fixes it.
    let catalog_check = |check: bool| {
        let mut cmd = olmpack();
        cmd.args(["catalog", "generate", "--plan"]).arg(&plan);
        if check {
            cmd.arg("--check");
        }
        cmd.output().unwrap()
    };
    assert_eq!(catalog_check(true).status.code(), Some(1));
    assert!(catalog_check(false).status.success());
    assert!(catalog_check(true).status.success());
    assert!(generate(true).status.success());
}
