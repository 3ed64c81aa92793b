//! The real OLM v1 (catalogd and operator-controller, as `tools.toml` pins them) installs every
//! release of the reference operator's catalog by ClusterExtension and upgrades along every
//! edge OLM v1 takes, with the operator binary itself serving the webhooks OLM v1 wired
//! (conversion and admission, `failurePolicy: Fail`) as the process of its pods: the
//! certificate comes from OLM v1's certificate provider (OpenShift's service-ca, which the
//! environment plays), the command contract is OLM v0's. The examples are created through
//! the validating and mutating webhooks and read back after each upgrade through the
//! conversion webhook — without the process, both would be refused.

mod common;

use std::path::{Path, PathBuf};

use common::olm::operator_command;
use olmpack::upgrade::olm::{self, OlmVersion, RunOptions, StepLog};
use olmpack_envtest::olm::Outcome;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Whether OLM v1's binaries and the registry are installed; "NOT RUN" when not (a failure
/// in CI).
fn olm_v1_installed() -> bool {
    olmpack_testkit::tools::require(&olmpack_testkit::tools::OLM_V1, "OLM v1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn olm_v1_e2e_reference_operator_serves_its_webhooks_along_every_edge() {
    if !olm_v1_installed() {
        return;
    }
    let catalog = root().join("catalog");
    let limits = olmpack_oci::input::Limits::default();
    let cases = olm::load_cases_of(
        OlmVersion::V1,
        &catalog,
        Some("webapp-operator"),
        &[],
        &limits,
    )
    .unwrap();
    let edges: Vec<String> = cases.iter().map(|c| c.title()).collect();
    assert_eq!(
        edges,
        [
            "webapp-operator.v0.1.0 → webapp-operator.v0.2.0",
            "webapp-operator.v0.2.0 → webapp-operator.v0.3.0",
            "webapp-operator.v0.3.0 → webapp-operator.v1.0.1",
            "webapp-operator.v1.0.0 → webapp-operator.v1.0.1",
            "webapp-operator.v1.0.1",
        ]
    );
    let options = RunOptions {
        olm: OlmVersion::V1,
        webhook_command: Some(operator_command()),
        steps: StepLog::new(|line| eprintln!("{line}")),
        ..RunOptions::default()
    };
    let reports = olm::run(&catalog, &cases, &options).await.unwrap();
    let table = olm::markdown(&reports);
    eprintln!("{table}");
    assert_eq!(reports.len(), cases.len());
    for r in &reports {
        let name = r.name();
        assert_eq!(r.failures(), [], "{name}\n{table}");
        assert_eq!(r.not_run(), Vec::<String>::new(), "{name}\n{table}");
        assert_eq!(
            r.install.outcome,
            Outcome::Succeeded {
                csv: r.case.from.clone()
            },
            "{name}"
        );
        // Created through the admission webhooks (failurePolicy: Fail): each one admitted.
        let examples = r
            .examples
            .as_ref()
            .and_then(|e| e.as_ref().ok())
            .unwrap_or_else(|| panic!("{name}: examples not run: {:?}", r.examples));
        assert!(!examples.is_empty(), "{name} has alm-examples");
        assert!(
            examples.iter().all(|e| e.refused.is_none()),
            "{name}: {examples:#?}"
        );
        if let Some(to) = r.case.to() {
            let step = r.upgrade.as_ref().expect("the upgrade ran");
            assert_eq!(step.outcome, Outcome::Succeeded { csv: to.to_owned() });
            // Read back through the conversion webhook of the release upgraded to.
            assert_eq!(r.examples_after.len(), examples.len(), "{name}");
            assert!(
                r.examples_after.iter().all(Result::is_ok),
                "{name}: {:?}",
                r.examples_after
            );
        }
    }
}
