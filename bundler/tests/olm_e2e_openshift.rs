//! A real operator that needs OpenShift, under the real OLM v0 on both platforms of
//! `upgrade olm --platform`: must-gather-operator (community-operators corpus, its newest
//! bundle) mounts the Secret that OpenShift's service-ca makes for its metrics Service
//! (annotated `service.alpha.openshift.io/serving-cert-secret-name`) and ships a
//! ServiceMonitor. On plain Kubernetes nothing makes that Secret: the step ends as stuck
//! within `--stuck-after`, naming service-ca and the flag; on OpenShift the install succeeds,
//! on the Kubernetes release that OpenShift release ships (4.22: 1.35; 4.14: 1.27).

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
    Some(install_logged(platform, test).await?.0)
}

/// [`install_on`], with the run's step lines.
async fn install_logged(platform: Platform, test: &str) -> Option<(CaseReport, Vec<String>)> {
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
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let lines = seen.clone();
    let options = RunOptions {
        timeouts: Timeouts {
            // Long enough that only the stuck rule can end the Kubernetes run early.
            step: Duration::from_secs(240),
            ..Timeouts::default()
        },
        cluster_crds,
        platform,
        steps: olm::StepLog::new(move |line| {
            lines.lock().unwrap().push(line.to_owned());
        }),
        ..RunOptions::default()
    };
    let mut reports = olm::run(&dir, &cases, &options).await.unwrap();
    let said = seen.lock().unwrap().clone();
    Some((reports.pop()?, said))
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

    let (report, said) = install_logged(Platform::openshift(), test).await.unwrap();
    assert!(
        matches!(&report.install.outcome, Outcome::Succeeded { csv } if csv.starts_with("must-gather-operator.")),
        "{:#?}",
        report.install
    );
    assert_control_plane(&said, Platform::openshift());
}

/// OpenShift 4.14 runs on the Kubernetes it ships (1.27, the oldest minor olmpack pins):
/// OLM v0 installs the same operator there, and the apiserver says which release it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn olm_e2e_openshift_4_14_installs_on_kubernetes_1_27() {
    let test = "olm_e2e_openshift_4_14_installs_on_kubernetes_1_27";
    let platform = Platform::OpenShift { minor: 14 };
    let Some((report, said)) = install_logged(platform, test).await else {
        return;
    };
    assert!(
        matches!(&report.install.outcome, Outcome::Succeeded { csv } if csv.starts_with("must-gather-operator.")),
        "{:#?}",
        report.install
    );
    assert_eq!(platform.kubernetes_minor().version(), "v1.27.16");
    assert_control_plane(&said, platform);
}

/// The run's environment was the control plane `platform` runs on, in the apiserver's words.
fn assert_control_plane(said: &[String], platform: Platform) {
    let version = platform.kubernetes_minor().version();
    let up = format!("OLM environment up (kube-apiserver {version})");
    assert!(said.iter().any(|l| l.ends_with(&up)), "{up}: {said:#?}");
}
