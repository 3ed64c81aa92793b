//! Operator images (`olmpack image build operator`): static binaries built by the real Go
//! toolchain for two architectures, packed daemonless, read back by skopeo and umoci.

mod image_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use image_support::run;
use olmpack_envtest::binaries::Tool;
use olmpack_oci::image::layout::{ImageIndex, ImageManifest, Layout};
use serde_json::Value;

fn olmpack() -> Command {
    Command::new(env!("CARGO_BIN_EXE_olmpack"))
}

/// A statically linked Linux binary for `arch`, built by the Go toolchain (CGO off).
pub fn static_binary(dir: &Path, arch: &str) -> PathBuf {
    let source = dir.join("main.go");
    std::fs::write(
        &source,
        "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"operator\") }\n",
    )
    .unwrap();
    let out = dir.join(format!("manager-{arch}"));
    let go = std::env::var_os("GO").unwrap_or_else(|| "go".into());
    let status = Command::new(go)
        .args(["build", "-trimpath", "-ldflags=-s -w", "-o"])
        .arg(&out)
        .arg(&source)
        .env("CGO_ENABLED", "0")
        .env("GOOS", "linux")
        .env("GOARCH", arch)
        .env("GOFLAGS", "-mod=mod")
        .current_dir(dir)
        .status()
        .expect("go is installed (cargo xtask setup needs it)");
    assert!(status.success(), "go build for {arch} failed");
    out
}

fn build(args: &[&str], binaries: &[&Path], layout: &Path) -> std::process::Output {
    let mut cmd = olmpack();
    cmd.args(["image", "build", "operator", "--layout"])
        .arg(layout)
        .args(args)
        .env("SOURCE_DATE_EPOCH", "1700000000");
    for binary in binaries {
        cmd.arg("--binary").arg(binary);
    }
    cmd.output().unwrap()
}

fn digest_of(output: &std::process::Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .trim()
        .to_owned()
}

#[test]
fn operator_image_is_reproducible_multi_platform_and_runs_as_numeric_nonroot() {
    let work = tempfile::tempdir().unwrap();
    let amd64 = static_binary(work.path(), "amd64");
    let arm64 = static_binary(work.path(), "arm64");
    let platforms = ["--platform", "linux/amd64,linux/arm64", "--tag", "v1"];
    let first = work.path().join("first");
    let second = work.path().join("second");
    let a = digest_of(&build(&platforms, &[&amd64, &arm64], &first));
    let b = digest_of(&build(&platforms, &[&amd64, &arm64], &second));
    assert_eq!(a, b, "the same binaries give the same digest");
    assert_eq!(
        image_support::read_tree(&first),
        image_support::read_tree(&second)
    );

    let layout = Layout::open(&first).unwrap();
    let root = layout.find(Some("v1")).unwrap();
    assert_eq!(root.digest, a);
    let index: ImageIndex = layout.read_json(&root.digest, "index").unwrap();
    let platforms: Vec<String> = index
        .manifests
        .iter()
        .map(|m| olmpack_oci::image::operator::platform_name(m.platform.as_ref().unwrap()))
        .collect();
    assert_eq!(platforms, ["linux/amd64", "linux/arm64"]);
    // Both platforms share the base-files layer.
    let manifests: Vec<ImageManifest> = index
        .manifests
        .iter()
        .map(|m| layout.read_json(&m.digest, "manifest").unwrap())
        .collect();
    assert_eq!(manifests[0].layers[0], manifests[1].layers[0]);
    assert_ne!(manifests[0].layers[1], manifests[1].layers[1]);

    // skopeo reads the config of each platform: user, entrypoint, architecture.
    for arch in ["amd64", "arm64"] {
        let text = run(
            Tool::Skopeo,
            &[
                "--override-arch",
                arch,
                "--override-os",
                "linux",
                "inspect",
                "--config",
                &format!("oci:{}:v1", first.display()),
            ],
        );
        let config: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(config["architecture"], arch);
        assert_eq!(config["config"]["User"], "65532:65532");
        assert_eq!(
            config["config"]["Entrypoint"],
            serde_json::json!(["/manager"])
        );
        assert!(config["config"].get("Cmd").is_none());
        assert_eq!(config["created"], "2023-11-14T22:13:20Z");
    }

    // umoci unpacks the amd64 image: the binary is executable, the user exists.
    let single = work.path().join("single");
    digest_of(&build(&["--tag", "v1"], &[&amd64], &single));
    let bundle = work.path().join("unpacked");
    run(
        Tool::Umoci,
        &[
            "unpack",
            "--rootless",
            "--image",
            &format!("{}:v1", single.display()),
            bundle.to_str().unwrap(),
        ],
    );
    let rootfs = bundle.join("rootfs");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(rootfs.join("manager"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(
        std::fs::read(rootfs.join("manager")).unwrap(),
        std::fs::read(&amd64).unwrap()
    );
    let passwd = std::fs::read_to_string(rootfs.join("etc/passwd")).unwrap();
    assert!(passwd.contains("nonroot:x:65532:65532:"), "{passwd}");
    // The unpacked binary runs on this (amd64) machine.
    let ran = Command::new(rootfs.join("manager")).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "operator\n");
}

#[test]
fn operator_image_refuses_binaries_that_could_not_run() {
    let work = tempfile::tempdir().unwrap();
    let arm64 = static_binary(work.path(), "arm64");
    let layout = work.path().join("out");
    let cases: Vec<(Vec<&str>, Vec<PathBuf>, String)> = vec![
        (
            vec![],
            vec![PathBuf::from("/bin/ls")],
            "error: /bin/ls is dynamically linked (it needs the loader /lib64/ld-linux-x86-64.so.2), and an image without a base has no C library to run it; build it statically (e.g. for the *-unknown-linux-musl target) or give --base\n".into(),
        ),
        (
            vec![],
            vec![arm64.clone()],
            format!(
                "error: {} is built for arm64, but is given for platform linux/amd64; the container runtime could not run it\n",
                arm64.display()
            ),
        ),
        (
            vec![],
            vec![work.path().join("main.go")],
            format!(
                "error: {} is not an executable for Linux (not an ELF file: no ELF magic number)\n",
                work.path().join("main.go").display()
            ),
        ),
        (
            vec!["--platform", "linux/amd64,linux/arm64"],
            vec![arm64.clone()],
            "error: 1 --binary for 2 --platform; give one binary per platform, in the same order\n".into(),
        ),
        (
            vec!["--platform", "linux/arm64", "--base", "127.0.0.1:1/base:latest"],
            vec![arm64.clone()],
            "error: the base image 127.0.0.1:1/base:latest is not named by digest; name it as repository@sha256:… so the image is reproducible\n".into(),
        ),
    ];
    for (args, binaries, expected) in cases {
        let refs: Vec<&Path> = binaries.iter().map(PathBuf::as_path).collect();
        let output = build(&args, &refs, &layout);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&output.stderr), expected);
        assert!(!layout.exists(), "nothing is written");
    }
}
