//! `olmpack tools install` from a warm registry, next to its floor: copying the same tool
//! directories on the same disk (`cp -r`, no network, no digest checks, no unpacking). The
//! tools image is packed from the tool cache `cargo xtask setup` filled and pushed to a local
//! Distribution registry first (both timed once). Goal (issue: tools without olmpack's
//! checkout): the install well under 60 s.
//!
//! Run: `eval "$(cargo xtask env)"; cargo bench -p olmpack --bench tools`
//! (`OLMPACK_BENCH_RUNS`, default 3: best of).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use support::{best_of, env_usize};

fn olmpack(args: &[&str], cache: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(args)
        .env("OLMPACK_TOOLS_DIR", cache)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "olmpack {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn main() {
    let runs = env_usize("OLMPACK_BENCH_RUNS", 3);
    let cache = olmpack_envtest::binaries::located_cache_dir()
        .expect("etcd in a tool cache laid out by cargo xtask setup");
    let work = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let registry = runtime
        .block_on(olmpack_testkit::registry::Registry::start(
            olmpack_testkit::registry::RegistryAuth::Anonymous,
        ))
        .expect("the Distribution registry (cargo xtask setup)");

    let layout = work.path().join("layout");
    let started = Instant::now();
    let digest = olmpack(
        &["tools", "pack", "--layout", layout.to_str().unwrap()],
        &cache,
    );
    let pack = started.elapsed().as_secs_f64();
    let target = format!("{}/olmpack-tools:bench", registry.host());
    let started = Instant::now();
    olmpack(
        &["image", "push", layout.to_str().unwrap(), &target],
        &cache,
    );
    let push = started.elapsed().as_secs_f64();
    let reference = format!("{}/olmpack-tools@{digest}", registry.host());

    let dirs: Vec<PathBuf> = olmpack::tools::artifact_dirs()
        .into_iter()
        .map(|(d, _)| d)
        .collect();
    let bytes: u64 = dirs
        .iter()
        .flat_map(|d| walk(&cache.join(d)))
        .map(|f| f.metadata().map_or(0, |m| m.len()))
        .sum();
    let mut n = 0;
    let mut fresh = || {
        n += 1;
        work.path().join(format!("cache-{n}"))
    };
    let olmpack_bin = PathBuf::from(env!("CARGO_BIN_EXE_olmpack"));
    let install = {
        let mut best = (f64::MAX, 0.0_f64);
        for _ in 0..runs {
            let dir = fresh();
            let var = format!("OLMPACK_TOOLS_DIR={}", dir.display());
            let args = [
                var.as_str(),
                olmpack_bin.to_str().unwrap(),
                "tools",
                "install",
                "--from",
                &reference,
                "--kubernetes",
                "all",
            ];
            let (secs, rss) = best_of(1, Path::new("/usr/bin/env"), &args);
            best = (best.0.min(secs), best.1.max(rss));
        }
        best
    };
    let floor = {
        let mut best = f64::MAX;
        for _ in 0..runs {
            let dir = fresh();
            std::fs::create_dir_all(&dir).unwrap();
            let started = Instant::now();
            for d in &dirs {
                let to = dir.join(d);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                let ok = Command::new("cp")
                    .arg("-r")
                    .arg(cache.join(d))
                    .arg(&to)
                    .status()
                    .unwrap();
                assert!(ok.success());
            }
            best = best.min(started.elapsed().as_secs_f64());
        }
        best
    };
    println!(
        "tools image: {} directories, {:.0} MiB; pack {pack:.1} s, push to a local registry {push:.1} s",
        dirs.len(),
        bytes as f64 / 1048576.0
    );
    println!("| task | seconds | peak RSS | vs floor |");
    println!("| --- | --- | --- | --- |");
    println!(
        "| tools install (pull, verify, unpack) | {:.1} s | {:.0} MiB | {:.1}x |",
        install.0,
        install.1,
        install.0 / floor.max(0.001)
    );
    println!("| floor: cp -r of the same directories | {floor:.1} s | | 1.0x |");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
