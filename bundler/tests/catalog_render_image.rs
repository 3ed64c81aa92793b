//! `olmpack catalog render <bundle-image>` pulls the image and renders it exactly as
//! `opm render <bundle-image>` does.

use std::path::Path;
use std::process::Command;

use olmpack_envtest::binaries::Tool;
use olmpack_testkit::{registry::Registry, registry::RegistryAuth};

fn run(cmd: &mut Command) -> Vec<u8> {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[tokio::test]
async fn a_pushed_bundle_image_renders_like_opm() {
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let olmpack = || Command::new(env!("CARGO_BIN_EXE_olmpack"));
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("example/olmpack.yaml");
    run(olmpack()
        .args(["bundle", "generate", "--plan"])
        .arg(&plan)
        .arg("--out")
        .arg(work.path().join("bundle")));
    let layout = work.path().join("layout");
    run(olmpack()
        .args(["image", "build", "bundle"])
        .arg(work.path().join("bundle/1.1.1"))
        .arg("--layout")
        .arg(&layout)
        .args(["--tag", "v1.1.1"]));
    let reference = format!(
        "{}/olmpack/guestbook-operator-bundle:v1.1.1",
        registry.host()
    );
    run(olmpack()
        .args(["image", "push"])
        .arg(format!("{}:v1.1.1", layout.display()))
        .arg(&reference));

    let ours: serde_json::Value = serde_json::from_slice(&run(
        olmpack().args(["catalog", "render", "-o", "json", &reference])
    ))
    .unwrap();
    let opm = Tool::Opm
        .path()
        .expect("opm is installed by cargo xtask setup");
    let theirs: serde_json::Value = serde_json::from_slice(&run(Command::new(opm).args([
        "render",
        "-o",
        "json",
        "--use-http",
        &reference,
    ])))
    .unwrap();
    assert_eq!(ours, theirs);
    assert_eq!(ours["image"], reference);

    // A reference that is neither a directory nor a pullable image fails by name.
    let missing = format!("{}/olmpack/nothing:v0", registry.host());
    let out = olmpack()
        .args(["catalog", "render", &missing])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("failed to pull {missing}")));
}
