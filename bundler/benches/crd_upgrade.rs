//! `olmpack upgrade check --crd OLD NEW` against `crdify` (OLM v1's configuration) on every
//! consecutive pair of the CRD-history corpus (`../shared/corpus/crd-histories`, or
//! `$OLMPACK_CORPUS/crd-histories`), side by side in one run, one process per pair for both.
//! Also prints the in-process time of the check (parse + compare) for the same pairs.
//! Target: olmpack at least 10× faster than crdify. crdify comes from `$OLMPACK_CRDIFY` or
//! `PATH` (`eval "$(cargo xtask env)"`). Run: `cargo bench -p olmpack --bench crd_upgrade`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn corpus() -> PathBuf {
    std::env::var_os("OLMPACK_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"))
        .join("crd-histories")
}

fn crdify() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("OLMPACK_CRDIFY") {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("crdify"))
        .find(|p| p.is_file())
}

fn olmpack_binary() -> PathBuf {
    // The bench binary lives in target/<profile>/deps; the CLI one level up.
    let exe = std::env::current_exe().expect("bench path");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    dir.join("olmpack")
}

fn pairs(root: &Path) -> Vec<(PathBuf, PathBuf)> {
    std::fs::read_to_string(root.join("pairs.tsv"))
        .expect("pairs.tsv")
        .lines()
        .skip(1)
        .map(|line| {
            let c: Vec<&str> = line.split('\t').collect();
            let dir = root.join(c[0]).join(c[1]);
            (
                dir.join(format!("{}.yaml", c[2])),
                dir.join(format!("{}.yaml", c[3])),
            )
        })
        .collect()
}

fn time_processes(
    pairs: &[(PathBuf, PathBuf)],
    mut command: impl FnMut(&Path, &Path) -> Command,
) -> (Duration, usize) {
    let start = Instant::now();
    let mut refused = 0;
    for (old, new) in pairs {
        let status = command(old, new).output().expect("run").status;
        match status.code() {
            Some(0) => {}
            Some(1) => refused += 1,
            other => panic!("exit {other:?} on {} -> {}", old.display(), new.display()),
        }
    }
    (start.elapsed(), refused)
}

fn main() {
    let root = corpus();
    let Some(crdify) = crdify().filter(|_| root.join("pairs.tsv").is_file()) else {
        eprintln!(
            "*** NOT RUN: crd_upgrade bench needs crdify ($OLMPACK_CRDIFY) and {} ***",
            root.display()
        );
        return;
    };
    let olmpack = olmpack_binary();
    assert!(
        olmpack.is_file(),
        "build the CLI first: cargo build --release -p olmpack ({})",
        olmpack.display()
    );
    let pairs = pairs(&root);
    let config = root.join("crdify-olmv1.yaml");

    let start = Instant::now();
    let mut in_process_refused = 0;
    for (old, new) in &pairs {
        let read = |p: &Path| {
            olmpack::upgrade::check::parse_crd_file("f", &std::fs::read_to_string(p).unwrap())
                .unwrap()
        };
        if olmpack::upgrade::check::olm_v1_refuses(&olmpack::upgrade::check::check_files(
            &read(old),
            &read(new),
        )) {
            in_process_refused += 1;
        }
    }
    let in_process = start.elapsed();

    let (ours, ours_refused) = time_processes(&pairs, |old, new| {
        let mut c = Command::new(&olmpack);
        c.args(["upgrade", "check", "--output", "json", "--crd"])
            .arg(old)
            .arg(new);
        c
    });
    let (theirs, theirs_refused) = time_processes(&pairs, |old, new| {
        let mut c = Command::new(&crdify);
        c.arg("--config")
            .arg(&config)
            .arg(format!("file://{}", old.display()))
            .arg(format!("file://{}", new.display()));
        c
    });
    println!("crd_upgrade: {} pairs", pairs.len());
    println!(
        "  olmpack in-process : {:>9.1} ms  ({in_process_refused} refused)",
        in_process.as_secs_f64() * 1e3
    );
    println!(
        "  olmpack --crd      : {:>9.1} ms  ({ours_refused} refused, one process per pair)",
        ours.as_secs_f64() * 1e3
    );
    println!(
        "  crdify             : {:>9.1} ms  ({theirs_refused} refused, one process per pair)",
        theirs.as_secs_f64() * 1e3
    );
    println!(
        "  ratio crdify / olmpack --crd: {:.1}× (target ≥ 10×)",
        theirs.as_secs_f64() / ours.as_secs_f64()
    );
    println!(
        "  ratio crdify / olmpack in-process: {:.1}×",
        theirs.as_secs_f64() / in_process.as_secs_f64()
    );
}
