//! Helpers shared by the `olmpack release` tests: run the CLI, copy the example project, build
//! a real static operator binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn olmpack() -> Command {
    Command::new(env!("CARGO_BIN_EXE_olmpack"))
}

/// `output`, after asserting the run succeeded (its output on failure).
pub fn ok(output: Output) -> Output {
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The example operator copied to `dir`; returns its plan.
pub fn example_project(dir: &Path) -> PathBuf {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("example");
    for (path, contents) in olmpack_oci::output::read_tree(&example, &Default::default()).unwrap() {
        let target = dir.join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, contents).unwrap();
    }
    dir.join("olmpack.yaml")
}

/// A static operator binary for linux/amd64 (Go, CGO off).
pub fn operator_binary(dir: &Path) -> PathBuf {
    std::fs::write(
        dir.join("main.go"),
        "package main\n\nfunc main() { println(\"guestbook operator\") }\n",
    )
    .unwrap();
    let out = dir.join("manager");
    let status = Command::new("go")
        .args(["build", "-trimpath", "-o"])
        .arg(&out)
        .arg("main.go")
        .env("CGO_ENABLED", "0")
        .env("GOOS", "linux")
        .env("GOARCH", "amd64")
        .current_dir(dir)
        .status()
        .expect("go is installed (cargo xtask setup needs it)");
    assert!(status.success());
    out
}
