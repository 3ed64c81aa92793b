//! `--pin-digests`: every image of a bundle pinned to the digest a real registry serves.

use std::path::Path;
use std::process::Command;

use olmpack_testkit::{registry::Registry, registry::RegistryAuth};

fn olmpack() -> Command {
    Command::new(env!("CARGO_BIN_EXE_olmpack"))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The example plan with only release 1.1.1, its images moved to `host`.
fn example_for(host: &str, dir: &Path) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("example");
    for (path, contents) in olmpack_oci::output::read_tree(&example, &Default::default()).unwrap() {
        let target = dir.join(&path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        let text = String::from_utf8(contents)
            .unwrap()
            .replace("quay.io/olmpack/", &format!("{host}/olmpack/"));
        std::fs::write(target, text).unwrap();
    }
    let plan_path = dir.join("olmpack.yaml");
    let mut plan: serde_json::Value =
        olmpack_model::yaml::from_str(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
    plan["releases"]
        .as_array_mut()
        .unwrap()
        .retain(|r| r["version"] == "1.1.1");
    std::fs::write(&plan_path, olmpack_model::yaml::to_string(&plan).unwrap()).unwrap();
}

#[tokio::test]
async fn images_are_pinned_to_the_digests_the_registry_serves() {
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let host = registry.host();
    let work = tempfile::tempdir().unwrap();
    example_for(&host, work.path());

    // Two real images to pin: built by olmpack from the example's bundle files.
    run(olmpack()
        .args(["bundle", "generate", "--plan"])
        .arg(work.path().join("olmpack.yaml"))
        .arg("--out")
        .arg(work.path().join("content")));
    let mut digests = Vec::new();
    for (repo, tag) in [("guestbook-operator", "a"), ("guestbook", "b")] {
        let layout = work.path().join(format!("layout-{tag}"));
        run(olmpack()
            .args(["image", "build", "bundle"])
            .arg(work.path().join("content/1.1.1"))
            .arg("--layout")
            .arg(&layout)
            .args(["--tag", tag])
            .env("SOURCE_DATE_EPOCH", if tag == "a" { "1" } else { "2" }));
        let pushed = run(olmpack()
            .args(["image", "push"])
            .arg(format!("{}:{tag}", layout.display()))
            .arg(format!("{host}/olmpack/{repo}:v1.1.1")));
        digests.push(pushed.trim().rsplit('@').next().unwrap().trim().to_owned());
    }
    assert_ne!(digests[0], digests[1]);
    assert!(
        digests.iter().all(|d| d.starts_with("sha256:")),
        "{digests:?}"
    );

    let out = work.path().join("pinned");
    run(olmpack()
        .args(["bundle", "generate", "--pin-digests", "--plan"])
        .arg(work.path().join("olmpack.yaml"))
        .arg("--out")
        .arg(&out));
    let csv = std::fs::read_to_string(
        out.join("1.1.1/manifests/guestbook-operator.clusterserviceversion.yaml"),
    )
    .unwrap();
    let operator = format!("{host}/olmpack/guestbook-operator@{}", digests[0]);
    let app = format!("{host}/olmpack/guestbook@{}", digests[1]);
    assert!(csv.contains(&format!("image: {operator}")), "{csv}");
    assert!(csv.contains(&format!("image: {app}")), "{csv}");
    assert!(
        csv.contains(&format!("value: {app}")),
        "RELATED_IMAGE_GUESTBOOK is pinned"
    );
    assert!(csv.contains(&format!("containerImage: {operator}")));
    assert!(!csv.contains(":v1.1.1"), "a tag survived pinning");
}

#[tokio::test]
async fn an_image_the_registry_does_not_have_fails_generation_by_name() {
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let work = tempfile::tempdir().unwrap();
    example_for(&registry.host(), work.path());
    let out = olmpack()
        .args(["bundle", "generate", "--pin-digests", "--plan"])
        .arg(work.path().join("olmpack.yaml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains(&format!("error[image/unresolved] olmpack.yaml: releases[0].manifests: cannot pin {}/olmpack/guestbook-operator:v1.1.1 to a digest", registry.host())), "{stderr}");
    assert!(
        !work.path().join("bundle").exists(),
        "nothing is written when pinning fails"
    );
}
