//! The real OLM v0 installs every release of the reference operator's catalog (catalog/ at the
//! repository root) by Subscription and upgrades along every edge OLM takes to each channel
//! head, with the operator binary itself serving the webhooks OLM wired (conversion and
//! admission, `failurePolicy: Fail`), as the process of its pods.

use std::path::{Path, PathBuf};

use olmpack::upgrade_olm::{self, RunOptions};
use upgrade_tests::olm::{Outcome, WebhookCommand};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The operator binary as the process of its pods: OLM's certificate, the port the harness
/// picked, the ServiceAccount's kubeconfig from `$KUBECONFIG`.
fn operator_command() -> WebhookCommand {
    WebhookCommand::shell(&format!(
        "'{}' run --tls-cert-file \"$OLMPACK_WEBHOOK_CERT_FILE\" --tls-key-file \"$OLMPACK_WEBHOOK_KEY_FILE\" \
         --bind-address 127.0.0.1 --webhook-port \"$OLMPACK_WEBHOOK_PORT\" --metrics-port 0 \
         --leader-elect --cert-poll-seconds 1",
        env!("CARGO_BIN_EXE_webapp-operator")
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn olm_e2e_reference_operator_installs_and_upgrades_along_every_edge() {
    let catalog = root().join("catalog");
    let cases = upgrade_olm::load_cases(&catalog, Some("webapp-operator")).unwrap();
    // Every release is installed; every release but the head has an upgrade to check.
    let releases = ["0.1.0", "0.2.0", "0.3.0", "1.0.0", "1.0.1"];
    assert_eq!(cases.len(), releases.len(), "{cases:#?}");
    let options = RunOptions {
        webhook_command: Some(operator_command()),
        jobs: 2,
        ..RunOptions::default()
    };
    let reports = upgrade_olm::run(&catalog, &cases, &options).await.unwrap();
    let table = upgrade_olm::markdown(&reports);
    eprintln!("{table}");
    for report in &reports {
        assert!(
            report.failures().is_empty(),
            "{}: {:#?}\n{table}",
            report.case.from,
            report.failures()
        );
        assert!(matches!(report.install.outcome, Outcome::Succeeded { .. }));
        let examples = report.examples.as_ref().expect("webhooks were served");
        assert!(
            !examples.is_empty(),
            "{} has alm-examples",
            report.case.from
        );
    }
    // OLM takes the skipRange head directly from 0.3.0 and 1.0.0.
    let to = |from: &str| {
        reports
            .iter()
            .find(|r| r.case.from == format!("webapp-operator.v{from}"))
            .and_then(|r| r.upgrade.as_ref())
            .and_then(|s| s.csv.clone())
    };
    assert_eq!(to("0.3.0").as_deref(), Some("webapp-operator.v1.0.1"));
    assert_eq!(to("1.0.0").as_deref(), Some("webapp-operator.v1.0.1"));
    assert_eq!(to("0.1.0").as_deref(), Some("webapp-operator.v0.2.0"));
    assert_eq!(to("1.0.1"), None);
}
