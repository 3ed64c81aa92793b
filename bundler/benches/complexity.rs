//! Catalog algorithms at scale, side by side with the reference tool in one run (wall time and
//! peak RSS from `/usr/bin/time`), to show every catalog algorithm is n·log n in bundles and
//! edges (issue 23):
//! - `catalog validate` on one package with a linear `replaces` chain of
//!   `OLMPACK_BENCH_CHAIN` bundles (default 50,000), against `opm validate`;
//! - `catalog validate` on `OLMPACK_BENCH_SKIPRANGE` entries (default 20,000), each replacing
//!   the previous and with a `skipRange` covering every older version (2·10⁸ covered pairs),
//!   against `opm validate`;
//! - `catalog validate` on `OLMPACK_BENCH_SKIPRANGE_ONLY` entries (default 20,000) with only
//!   a `skipRange` covering every older version and no `replaces` (every entry a channel head:
//!   both tools refuse the channel, after reading it whole), against `opm validate`;
//! - `catalog validate` and `catalog graph` on `OLMPACK_BENCH_PACKAGES` packages of one bundle
//!   each (default 100,000), against `opm validate` and `opm alpha render-graph`;
//! - `catalog graph` (mermaid) on the chain, against `opm alpha render-graph`;
//! - `catalog upgrade-paths` on `OLMPACK_BENCH_PATHS` bundles (default 2,000; it prints every
//!   bundle's whole path, so its output is quadratic), olmpack only (opm has no such command);
//! - `upgrade check --crd` on two CRDs of `OLMPACK_BENCH_CRD_VERSIONS` served versions
//!   (default 3,000; every 1000th has one more field), against `crdify` when it is on
//!   `PATH` or `$OLMPACK_CRDIFY` (opm has no CRD command).
//!
//! Targets: the 50,000-bundle chain no slower than opm; 20,000 skipRange entries under 2 s;
//! 20,000 skipRange-only entries no slower than opm; 100,000 packages in no more memory than
//! opm (issue 44).
//! A reference run is stopped after `OLMPACK_BENCH_REFERENCE_LIMIT` seconds (default 300) and
//! shown as "stopped after …".
//! Run: `cargo bench -p olmpack --bench complexity` (`eval "$(cargo xtask env)"` first, for
//! opm and crdify).

mod support;

use std::path::{Path, PathBuf};

use support::{best_of, env_usize, measure};

/// One package `p`, one channel of `n` bundles, each replacing the previous when `replaces`;
/// `skip_range` gives an entry's skipRange from its index.
fn chain_catalog(
    dir: &Path,
    n: usize,
    replaces: bool,
    skip_range: impl Fn(usize) -> Option<String>,
) {
    let mut out =
        String::from("{\"schema\":\"olm.package\",\"name\":\"p\",\"defaultChannel\":\"stable\"}\n");
    let version = |i: usize| format!("{}.{}.0", 1 + i / 1000, i % 1000);
    let mut entries = Vec::with_capacity(n);
    for i in 0..n {
        let mut e = serde_json::json!({"name": format!("p.v{}", version(i))});
        if replaces && i > 0 {
            e["replaces"] = format!("p.v{}", version(i - 1)).into();
        }
        if let Some(r) = skip_range(i) {
            e["skipRange"] = r.into();
        }
        entries.push(e);
    }
    out.push_str(
        &serde_json::json!({"schema":"olm.channel","package":"p","name":"stable","entries":entries})
            .to_string(),
    );
    out.push('\n');
    for i in 0..n {
        let v = version(i);
        out.push_str(&format!(
            "{{\"schema\":\"olm.bundle\",\"package\":\"p\",\"name\":\"p.v{v}\",\"image\":\"quay.io/p/bundle:v{v}\",\"properties\":[{{\"type\":\"olm.package\",\"value\":{{\"packageName\":\"p\",\"version\":\"{v}\"}}}}]}}\n"
        ));
    }
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("catalog.json"), out).unwrap();
}

/// `n` packages of one bundle each (one channel, one entry), in one file.
fn packages_catalog(dir: &Path, n: usize) {
    let mut out = String::new();
    for i in 0..n {
        out.push_str(&format!(
            "{{\"schema\":\"olm.package\",\"name\":\"p{i}\",\"defaultChannel\":\"stable\"}}\n{{\"schema\":\"olm.channel\",\"package\":\"p{i}\",\"name\":\"stable\",\"entries\":[{{\"name\":\"p{i}.v1.0.0\"}}]}}\n{{\"schema\":\"olm.bundle\",\"package\":\"p{i}\",\"name\":\"p{i}.v1.0.0\",\"image\":\"quay.io/p{i}/bundle:v1.0.0\",\"properties\":[{{\"type\":\"olm.package\",\"value\":{{\"packageName\":\"p{i}\",\"version\":\"1.0.0\"}}}}]}}\n"
        ));
    }
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("catalog.json"), out).unwrap();
}

/// A CRD with `n` served versions, all with one schema except every 1000th, which has one
/// more field (so served-version pairs differ); `extra` adds an optional property to every
/// version (the new CRD).
fn crd(n: usize, extra: bool) -> String {
    let mut text = String::from(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: things.example.com}\nspec:\n  group: example.com\n  names: {kind: Thing, plural: things, singular: thing, listKind: ThingList}\n  scope: Namespaced\n  versions:\n",
    );
    for i in 0..n {
        let mut props = String::from("              size: {type: integer}\n");
        if i % 1000 == 999 {
            props.push_str("              field: {type: string}\n");
        }
        if extra {
            props.push_str("              color: {type: string}\n");
        }
        text.push_str(&format!(
            "  - name: v{}\n    served: true\n    storage: {}\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n{props}",
            i + 1,
            i + 1 == n
        ));
    }
    text
}

fn crdify() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("OLMPACK_CRDIFY") {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("crdify"))
        .find(|p| p.is_file())
}

/// A command's best wall time and peak RSS, or a note when its exit code says it failed (a
/// reference tool may refuse what olmpack checks).
fn timed(runs: usize, program: &Path, args: &[&str]) -> (f64, f64) {
    let mut best = f64::MAX;
    let mut rss: f64 = 0.0;
    for _ in 0..runs {
        let (secs, mib, _) = measure(program, args);
        best = best.min(secs);
        rss = rss.max(mib);
    }
    (best, rss)
}

/// The reference tool's best wall time and peak RSS, each run stopped (SIGKILL) after
/// `limit` seconds: `None` when a run reached the limit (opm's memory grows with a long chain
/// until the machine has none left). A run must succeed unless `refuses` (a catalog both
/// tools refuse, e.g. a channel of many heads, is still read and checked whole).
fn limited(
    runs: usize,
    program: &Path,
    args: &[&str],
    limit: u64,
    refuses: bool,
) -> Option<(f64, f64)> {
    let mut with_limit: Vec<&str> = vec!["-s", "KILL"];
    let limit_text = limit.to_string();
    let program_text = program.to_string_lossy().into_owned();
    with_limit.extend([limit_text.as_str(), program_text.as_str()]);
    with_limit.extend(args);
    let mut best = f64::MAX;
    let mut rss: f64 = 0.0;
    for _ in 0..runs {
        let (secs, mib, ok) = measure(Path::new("/usr/bin/timeout"), &with_limit);
        if !ok && secs + 1.0 >= limit as f64 {
            println!(
                "<!-- {} {:?}… stopped after {limit} s, {mib:.0} MiB -->",
                program.display(),
                &args[..args.len().min(2)]
            );
            return None;
        }
        assert!(ok != refuses, "{} {args:?}: exit status", program.display());
        best = best.min(secs);
        rss = rss.max(mib);
    }
    Some((best, rss))
}

fn row(task: &str, ours: (f64, f64), theirs: Option<(&str, f64, f64)>) {
    match theirs {
        Some((tool, t, m)) if t.is_infinite() => println!(
            "| {task} | {:.2} s | {tool} stopped after {m:.0} s | > {:.0}x | {:.0} MiB | |",
            ours.0,
            m / ours.0.max(0.005),
            ours.1
        ),
        Some((tool, t, m)) => println!(
            "| {task} | {:.2} s | {tool} {t:.2} s | {:.1}x | {:.0} MiB | {m:.0} MiB |",
            ours.0,
            t / ours.0.max(0.005),
            ours.1
        ),
        None => println!(
            "| {task} | {:.2} s | (no such command) | | {:.0} MiB | |",
            ours.0, ours.1
        ),
    }
}

/// Issue 44's shapes: `OLMPACK_BENCH_SKIPRANGE_ONLY` entries (default 20,000) that each carry
/// only a `skipRange` covering every older version (no `replaces`, so every entry is a
/// channel head, which both tools refuse after reading the whole channel), and
/// `OLMPACK_BENCH_PACKAGES` packages of one bundle each (default 100,000).
fn wide_shapes(runs: usize, olmpack: &Path, opm: &Path, work: &Path, limit: u64) {
    let skip_only = env_usize("OLMPACK_BENCH_SKIPRANGE_ONLY", 20_000);
    let packages = env_usize("OLMPACK_BENCH_PACKAGES", 100_000);
    let dir = |name: &str| work.join(name).to_string_lossy().into_owned();
    chain_catalog(&work.join("skip-only"), skip_only, false, |i| {
        (i > 0).then(|| format!(">=1.0.0 <{}.{}.0", 1 + i / 1000, i % 1000))
    });
    packages_catalog(&work.join("packages"), packages);
    let reference = |args: &[&str], refuses: bool| {
        limited(runs, opm, args, limit, refuses).unwrap_or((f64::INFINITY, limit as f64))
    };
    let (skip_dir, packages_dir) = (dir("skip-only"), dir("packages"));
    let ours = timed(runs, olmpack, &["catalog", "validate", &skip_dir]);
    let (t, m) = reference(&["validate", &skip_dir], true);
    row(
        &format!("validate, {skip_only} skipRange-only entries (both refuse: many heads)"),
        ours,
        Some(("opm", t, m)),
    );
    let ours = best_of(runs, olmpack, &["catalog", "validate", &packages_dir]);
    let (t, m) = reference(&["validate", &packages_dir], false);
    row(
        &format!("validate, {packages} one-bundle packages"),
        ours,
        Some(("opm", t, m)),
    );
    let ours = best_of(runs, olmpack, &["catalog", "graph", &packages_dir]);
    let (t, m) = reference(&["alpha", "render-graph", &packages_dir], false);
    row(
        &format!("graph (mermaid), {packages} one-bundle packages"),
        ours,
        Some(("opm alpha render-graph", t, m)),
    );
}

fn main() {
    let chain = env_usize("OLMPACK_BENCH_CHAIN", 50_000);
    let ranged = env_usize("OLMPACK_BENCH_SKIPRANGE", 20_000);
    let paths = env_usize("OLMPACK_BENCH_PATHS", 2_000);
    let versions = env_usize("OLMPACK_BENCH_CRD_VERSIONS", 3_000);
    let runs = env_usize("OLMPACK_BENCH_RUNS", 3);
    // Longest a reference run may take (opm's validate of a 50,000-bundle chain grew past
    // 21 GiB in 9.5 minutes on a 24 GiB machine).
    let limit = env_usize("OLMPACK_BENCH_REFERENCE_LIMIT", 300) as u64;
    let opm = olmpack_envtest::binaries::Tool::Opm
        .path()
        .expect("opm is required (cargo xtask setup)");
    let olmpack = PathBuf::from(env!("CARGO_BIN_EXE_olmpack"));
    let work = tempfile::tempdir().unwrap();
    let w = |name: &str| work.path().join(name).to_string_lossy().into_owned();

    chain_catalog(&work.path().join("chain"), chain, true, |_| None);
    chain_catalog(&work.path().join("ranged"), ranged, true, |i| {
        (i > 0).then(|| format!(">=1.0.0 <{}.{}.0", 1 + i / 1000, i % 1000))
    });
    chain_catalog(&work.path().join("paths"), paths, true, |i| {
        (i % 2 == 1).then(|| format!(">=1.0.0 <{}.{}.0", 1 + i / 1000, i % 1000))
    });
    std::fs::write(work.path().join("old.yaml"), crd(versions, false)).unwrap();
    std::fs::write(work.path().join("new.yaml"), crd(versions, true)).unwrap();
    println!(
        "chain {chain} bundles; skipRange {ranged} entries; upgrade-paths {paths} bundles; CRD {versions} versions; {} cores",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!("| task | olmpack | reference | speed-up | olmpack peak RSS | reference peak RSS |");
    println!("| --- | --- | --- | --- | --- | --- |");

    // A stopped reference run is shown as "stopped after LIMIT s" (t = ∞, m = the limit).
    let reference = |args: &[&str]| {
        limited(runs, &opm, args, limit, false).unwrap_or((f64::INFINITY, limit as f64))
    };
    let ours = best_of(runs, &olmpack, &["catalog", "validate", &w("chain")]);
    let (t, m) = reference(&["validate", &w("chain")]);
    row(
        &format!("validate, {chain}-bundle chain"),
        ours,
        Some(("opm", t, m)),
    );

    let ours = best_of(runs, &olmpack, &["catalog", "validate", &w("ranged")]);
    let (t, m) = reference(&["validate", &w("ranged")]);
    row(
        &format!("validate, {ranged} skipRange entries"),
        ours,
        Some(("opm", t, m)),
    );

    wide_shapes(runs, &olmpack, &opm, work.path(), limit);

    let ours = best_of(runs, &olmpack, &["catalog", "graph", &w("chain")]);
    let (t, m) = reference(&["alpha", "render-graph", &w("chain")]);
    row(
        &format!("graph (mermaid), {chain}-bundle chain"),
        ours,
        Some(("opm alpha render-graph", t, m)),
    );

    let ours = best_of(runs, &olmpack, &["catalog", "upgrade-paths", &w("paths")]);
    row(&format!("upgrade-paths, {paths} bundles"), ours, None);

    let (old, new) = (w("old.yaml"), w("new.yaml"));
    let ours = timed(runs, &olmpack, &["upgrade", "check", "--crd", &old, &new]);
    // OLM v1's configuration of crdify, from the corpus, when it is there.
    let config = std::env::var_os("OLMPACK_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"))
        .join("crd-histories/crdify-olmv1.yaml");
    let theirs = crdify().map(|c| {
        let (old, new) = (format!("file://{old}"), format!("file://{new}"));
        let mut args: Vec<&str> = Vec::new();
        let config = config.to_string_lossy().into_owned();
        if Path::new(&config).is_file() {
            args.extend(["--config", &config]);
        }
        args.extend([old.as_str(), new.as_str()]);
        let (t, m) =
            limited(runs, &c, &args, limit, false).unwrap_or((f64::INFINITY, limit as f64));
        ("crdify", t, m)
    });
    row(
        &format!("upgrade check --crd, {versions} versions"),
        ours,
        theirs,
    );
}
