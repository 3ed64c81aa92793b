//! A real operator that needs OpenShift, under the real OLM v0 on both platforms of
//! `upgrade olm --platform`: must-gather-operator (community-operators corpus, its newest
//! bundle) mounts the Secret that OpenShift's service-ca makes for its metrics Service
//! (annotated `service.alpha.openshift.io/serving-cert-secret-name`) and ships a
//! ServiceMonitor. On plain Kubernetes nothing makes that Secret: the step ends as stuck
//! within `--stuck-after`, naming service-ca and the flag; on OpenShift the install succeeds.

#[allow(dead_code)] // PACKAGES is for the corpus-wide tests
mod corpus_catalog;

use std::time::Duration;

use corpus_catalog::render_package;
use olmpack::upgrade::olm::platform::Platform;
use olmpack::upgrade::olm::{self, CaseReport, RunOptions};
use olmpack_envtest::olm::{Outcome, Timeouts};
use olmpack_testkit::corpus::{COMMUNITY_OPERATORS, require};

const PACKAGE: &str = "community-operators/must-gather-operator";

/// The install case of the package's newest bundle on `platform`.
async fn install_on(platform: Platform, test: &str) -> Option<CaseReport> {
    let corpus = require(COMMUNITY_OPERATORS, test)?;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("catalog");
    std::fs::create_dir_all(&dir).unwrap();
    let name = render_package(&corpus.join(PACKAGE), 1, work.path(), &dir);
    let cases = olm::load_cases(&dir, Some(&name)).unwrap();
    assert_eq!(cases.len(), 1, "one bundle, one install: {cases:#?}");
    let mut cluster_crds = platform.cluster_crds(&Default::default()).unwrap();
    if platform == Platform::kubernetes() {
        // Its ServiceMonitor's kind, as a user gives it with --cluster-crd: the Secret is
        // then the only thing plain Kubernetes lacks.
        cluster_crds
            .push(olmpack::cluster_crds::by_name("servicemonitors.monitoring.coreos.com").unwrap());
    }
    let options = RunOptions {
        timeouts: Timeouts {
            // Long enough that only the stuck rule can end the Kubernetes run early.
            step: Duration::from_secs(240),
            ..Timeouts::default()
        },
        cluster_crds,
        platform,
        ..RunOptions::default()
    };
    let mut reports = olm::run(&dir, &cases, &options).await.unwrap();
    reports.pop()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn olm_e2e_openshift_service_ca_secret_is_made_on_openshift_only() {
    let test = "olm_e2e_openshift_service_ca_secret_is_made_on_openshift_only";
    let Some(report) = install_on(Platform::kubernetes(), test).await else {
        return;
    };
    let Outcome::TimedOut {
        waiting_for, pods, ..
    } = &report.install.outcome
    else {
        panic!(
            "nothing makes the Secret on Kubernetes: {:#?}",
            report.install
        );
    };
    assert!(
        waiting_for.contains(
            "pods were refused: Secret must-gather-operator-certs is made by OpenShift's \
             service-ca for Service must-gather-operator-controller-manager-metrics \
             (annotated service.alpha.openshift.io/serving-cert-secret-name): run with --platform openshift"
        ),
        "{waiting_for}"
    );
    assert!(
        pods.iter()
            .any(|p| p.contains("secret \"must-gather-operator-certs\" not found")),
        "{pods:#?}"
    );
    assert!(
        waiting_for.contains("(stuck: nothing changed for 20 s"),
        "ended by --stuck-after, not the step time: {waiting_for}"
    );

    let report = install_on(Platform::openshift(), test).await.unwrap();
    assert!(
        matches!(&report.install.outcome, Outcome::Succeeded { csv } if csv.starts_with("must-gather-operator.")),
        "{:#?}",
        report.install
    );
}
