//! `olmpack catalog render` against `opm render` over every bundle-format directory of the
//! community-operators corpus that renders, side by side in one run: wall time and peak RSS
//! (from `/usr/bin/time`), for JSON and YAML output with
//! `--migrate-level bundle-object-to-csv-metadata`, as a catalog build runs it.
//! Targets: at least 10× faster, at most 1/10 of opm's peak RSS.
//!
//! The corpus is unpacked by `cargo xtask conformance`; without it the bench says "NOT RUN".
//! Run: `cargo bench -p olmpack --bench render_corpus` (`OLMPACK_BENCH_RUNS`, default 3).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use support::{best_of, env_usize};

/// Every bundle-format directory of the corpus, sorted.
fn bundle_dirs(corpus: &Path) -> Vec<PathBuf> {
    olmpack_testkit::corpus::version_dirs(corpus)
        .into_iter()
        .filter_map(|(dir, bundle)| bundle.then_some(dir))
        .collect()
}

fn renders(olmpack: &Path, dir: &Path) -> bool {
    Command::new(olmpack)
        .args(["catalog", "render"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn main() {
    let Some(corpus) = olmpack_testkit::corpus::require(
        olmpack_testkit::corpus::COMMUNITY_OPERATORS,
        "bench render_corpus",
    ) else {
        return;
    };
    let runs = env_usize("OLMPACK_BENCH_RUNS", 3);
    let opm = olmpack_envtest::binaries::Tool::Opm
        .path()
        .expect("opm is required (cargo xtask setup)");
    let olmpack = PathBuf::from(env!("CARGO_BIN_EXE_olmpack"));
    let all = bundle_dirs(&corpus);
    // opm fails the whole run when one reference fails: keep the directories that render
    // (olmpack fails exactly where opm does; tests/realworld_render.rs checks that).
    let dirs: Vec<PathBuf> = all
        .iter()
        .filter(|d| renders(&olmpack, d))
        .cloned()
        .collect();
    let bytes: u64 = dirs
        .iter()
        .flat_map(|d| walk(d))
        .filter_map(|f| f.metadata().ok())
        .map(|m| m.len())
        .sum();
    println!(
        "corpus: {} of {} bundle directories render, {:.1} MiB of input; {} cores",
        dirs.len(),
        all.len(),
        bytes as f64 / 1048576.0,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    // The olmpack binary is built with the bench profile (the release settings: opt-level 3);
    // a debug build would measure nothing useful.
    if cfg!(debug_assertions) {
        println!("WARNING: unoptimised build; run with `cargo bench` for meaningful numbers");
    }
    println!("load average before: {}", load_average());
    let dir_args: Vec<&str> = dirs.iter().map(|d| d.to_str().unwrap()).collect();
    println!(
        "| output | olmpack wall | opm wall | speed-up | olmpack peak RSS | opm peak RSS | memory ratio |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for format in ["json", "yaml"] {
        let flags = [
            "-o",
            format,
            "--migrate-level",
            "bundle-object-to-csv-metadata",
        ];
        let mut ours = vec!["catalog", "render"];
        ours.extend(flags);
        ours.extend(&dir_args);
        let mut theirs = vec!["render"];
        theirs.extend(flags);
        theirs.extend(&dir_args);
        let (ot, om) = best_of(runs, &olmpack, &ours);
        let (pt, pm) = best_of(runs, &opm, &theirs);
        println!(
            "| {format} | {ot:.2} s | {pt:.2} s | {:.1}x | {om:.0} MiB | {pm:.0} MiB | 1/{:.1} |",
            pt / ot.max(0.005),
            pm / om.max(0.1)
        );
    }
    println!("load average after: {}", load_average());
}

/// The 1, 5 and 15 minute load averages (the machine may be shared; ratios are measured in
/// the same run, absolute times are not comparable across runs).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
