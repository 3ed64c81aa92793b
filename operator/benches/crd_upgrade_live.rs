//! Benchmark (not a test): the reference operator's full live upgrade matrix — every edge of
//! its upgrade graph (5 releases), 100 objects per example version, each edge on its own
//! etcd + kube-apiserver with the operator's real conversion webhook, edges two at a time
//! (the machine's cores; `olmpack upgrade test --jobs 2`). Prints the wall-clock seconds, the objects/s and the Markdown table
//! the README shows. Target: under 60 s on 2 cores.
//!
//! Run: `cargo xtask env` first (for the tool paths), then
//! `cargo bench -p webapp-operator --bench crd_upgrade_live`; `OLMPACK_BENCH_COPIES` changes
//! the 100.

use std::path::Path;
use std::time::Instant;

use upgrade_tests::live::EdgeOptions;

fn main() {
    upgrade_tests::install_crypto_provider();
    let copies: usize = std::env::var("OLMPACK_BENCH_COPIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace");
    let plan = olmpack::plan::load(&root.join("olmpack.yaml")).expect("olmpack.yaml loads");
    let inputs = olmpack::live::from_plan(&plan).expect("the plan's bundles generate");
    let webhook = format!("'{}' webhook", env!("CARGO_BIN_EXE_webapp-operator"));
    let options = EdgeOptions {
        copies,
        ..EdgeOptions::default()
    };
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let started = Instant::now();
    let mut reports = runtime
        .block_on(olmpack::live::run(
            &inputs,
            &olmpack::live::Target::TestEnv,
            Some(&webhook),
            &options,
            2,
        ))
        .expect("every edge runs");
    let seconds = started.elapsed().as_secs_f64();
    reports.sort_by(|a, b| (&a.from, &a.to).cmp(&(&b.from, &b.to)));
    let objects: usize = reports.iter().map(|r| r.objects).sum();
    for report in &reports {
        eprintln!("{} → {}: {:.1} s", report.from, report.to, report.seconds);
        for step in &report.steps {
            eprintln!("  {:>6.1} s  {}", step.seconds, step.step);
        }
    }
    print!(
        "{}",
        olmpack::live::render(&reports, olmpack::report::OutputFormat::Markdown)
    );
    println!(
        "live matrix: {} edges, {objects} objects ({copies} per example version) in {seconds:.1} s = {:.0} objects/s (target: under 60 s on 2 cores)",
        reports.len(),
        objects as f64 / seconds
    );
    let failed: Vec<_> = reports
        .iter()
        .filter(|r| r.verdict != upgrade_tests::live::Verdict::Passed)
        .collect();
    assert!(failed.is_empty(), "edges failed: {failed:#?}");
}
