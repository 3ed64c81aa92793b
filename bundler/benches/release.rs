//! `olmpack release` of the reference operator (the root `olmpack.yaml`, 5 releases) to OCI
//! layouts, against the baseline measured in the same run: the sum of the separate commands
//! that do the same work (`generate`, `image build operator`, `image build bundle` × 5,
//! `image build catalog`). Also a no-op re-run (target: under 1 s).
//!
//! The operator binary is a static Go program built once before timing (Go is needed by
//! `cargo xtask setup` anyway).
//!
//! Run: `cargo bench -p olmpack --bench release`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const RUNS: usize = 3;

fn olmpack() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_olmpack"));
    cmd.env("SOURCE_DATE_EPOCH", "1700000000");
    cmd
}

fn run(cmd: &mut Command) -> Duration {
    let start = Instant::now();
    let out = cmd.output().expect("olmpack runs");
    let took = start.elapsed();
    assert!(
        out.status.success(),
        "{:?} failed:\n{}",
        cmd,
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn operator_binary(dir: &Path) -> PathBuf {
    std::fs::write(
        dir.join("main.go"),
        "package main\n\nimport \"net/http\"\n\nfunc main() { _ = http.ListenAndServe(\":8080\", nil) }\n",
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
        .expect("go is installed");
    assert!(status.success());
    out
}

/// The separate commands, one after the other; returns their summed time.
fn separate(plan: &Path, binary: &Path, work: &Path) -> Duration {
    let bundles = work.join("bundle");
    let catalog = work.join("catalog");
    let mut total = run(olmpack()
        .args(["generate", "--plan"])
        .arg(plan)
        .arg("--bundles")
        .arg(&bundles)
        .arg("--catalog")
        .arg(&catalog));
    total += run(olmpack()
        .args(["image", "build", "operator", "--binary"])
        .arg(binary)
        .arg("--layout")
        .arg(work.join("images/operator")));
    for entry in std::fs::read_dir(&bundles).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        total += run(olmpack()
            .args(["image", "build", "bundle"])
            .arg(&dir)
            .arg("--layout")
            .arg(work.join(format!("images/bundle-{name}"))));
    }
    total += run(olmpack()
        .args(["image", "build", "catalog"])
        .arg(&catalog)
        .arg("--layout")
        .arg(work.join("images/catalog")));
    total
}

fn release(plan: &Path, binary: &Path, out: &Path) -> Duration {
    run(olmpack()
        .args(["release", "--plan"])
        .arg(plan)
        .arg("--out")
        .arg(out)
        .arg("--binary")
        .arg(binary))
}

fn best(times: impl IntoIterator<Item = Duration>) -> f64 {
    times.into_iter().min().unwrap_or_default().as_secs_f64()
}

fn main() {
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("../olmpack.yaml");
    let work = tempfile::Builder::new()
        .prefix("olmpack-bench-release-")
        .tempdir()
        .unwrap();
    let binary = operator_binary(work.path());
    let size = std::fs::metadata(&binary).unwrap().len();

    let mut baseline = Vec::new();
    let mut cold = Vec::new();
    let mut noop = Vec::new();
    for i in 0..RUNS {
        baseline.push(separate(
            &plan,
            &binary,
            &work.path().join(format!("separate-{i}")),
        ));
        let out = work.path().join(format!("release-{i}"));
        cold.push(release(&plan, &binary, &out));
        noop.push(release(&plan, &binary, &out));
    }
    let (baseline, cold, noop) = (best(baseline), best(cold), best(noop));
    println!(
        "release of the reference operator (5 releases, {:.1} MiB operator binary), best of {RUNS}:",
        size as f64 / 1_048_576.0
    );
    println!("  separate commands (baseline): {baseline:.3} s");
    println!(
        "  olmpack release:              {cold:.3} s ({:.2}x the baseline; target <= 1.00x)",
        cold / baseline
    );
    println!("  no-op re-run:                 {noop:.3} s (target < 1 s)");
}
