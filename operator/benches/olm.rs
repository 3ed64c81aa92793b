//! Benchmark (not a test): the real OLM v0 on the test control plane, with the reference
//! operator serving its webhooks. Prints the seconds from `opm serve` start to the CSV's
//! `Succeeded` for one install (the channel head), and the wall time of the whole matrix of
//! the reference catalog (every release installed, every edge OLM takes upgraded), run with
//! `--jobs 1` and `--jobs 2`, each with a fresh environment per case (the baseline) and
//! with environments reset and reused between cases (`upgrade olm`'s default). Target: the
//! matrix under 2 minutes on 2 cores.
//!
//! Run: `eval "$(cargo xtask env)" && cargo bench -p webapp-operator --bench olm`

use std::path::Path;
use std::time::Instant;

use olmpack::upgrade::olm::{self, Case, EnvPool, RunOptions};
use olmpack_envtest::olm::WebhookCommand;

fn operator_command() -> WebhookCommand {
    WebhookCommand::shell(&format!(
        "'{}' run --tls-cert-file \"$OLMPACK_WEBHOOK_CERT_FILE\" --tls-key-file \"$OLMPACK_WEBHOOK_KEY_FILE\" \
         --bind-address 127.0.0.1 --webhook-port \"$OLMPACK_WEBHOOK_PORT\" --metrics-port 0 --leader-elect",
        env!("CARGO_BIN_EXE_webapp-operator")
    ))
}

fn main() {
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog");
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let cases = olm::load_cases(&catalog, Some("webapp-operator")).expect("the catalog loads");
    let head = cases
        .iter()
        .find(|c| c.upgrade.is_none())
        .cloned()
        .expect("a channel head");
    let options = |jobs, envs| RunOptions {
        webhook_command: Some(operator_command()),
        jobs,
        envs,
        ..RunOptions::default()
    };
    runtime.block_on(async {
        let report = olm::v0::run_case(&catalog, head, &options(1, None))
            .await
            .expect("the OLM environment runs");
        println!(
            "one install ({}): {:.1} s from `opm serve` start to {}; {:.1} s with environment start-up",
            report.case.from,
            report.install_seconds,
            olm::describe(&report.install.outcome),
            report.seconds
        );
        for jobs in [1, 2] {
            let fresh = matrix(&catalog, &cases, &options(jobs, None)).await;
            let reused = matrix(&catalog, &cases, &options(jobs, Some(EnvPool::default()))).await;
            println!(
                "matrix, {} cases, --jobs {jobs}: {reused:.1} s reusing environments, {fresh:.1} s with a fresh one per case (baseline): {:.2}x",
                cases.len(),
                fresh / reused
            );
        }
    });
}

/// The wall time of every case, in seconds; panics when a case fails.
async fn matrix(catalog: &Path, cases: &[Case], options: &RunOptions) -> f64 {
    let started = Instant::now();
    let reports = olm::run(catalog, cases, options)
        .await
        .expect("the OLM environments run");
    let failed: Vec<_> = reports.iter().flat_map(|r| r.failures()).collect();
    assert!(failed.is_empty(), "{failed:#?}");
    started.elapsed().as_secs_f64()
}
