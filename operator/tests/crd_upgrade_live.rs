//! Live upgrade tests of the reference operator on a real apiserver, with its real conversion
//! webhook (`webapp-operator webhook`): every edge of its upgrade graph (read from the root
//! `olmpack.yaml` through olmpack, as `olmpack upgrade test` reads it), every deliberately
//! broken next release of [`upgrade_tests::defects`], and the operator's own storage
//! migration at start-up. Each test runs its own control plane.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use olmpack::live::Inputs;
use serde_json::json;
use upgrade_tests::TestEnv;
use upgrade_tests::live::{
    EdgeOptions, EdgeReport, LiveFinding, ReleaseUnderTest, Rollback, Severity, Verdict, Webhook,
    rules, run_edge,
};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the operator crate sits in the workspace")
        .to_owned()
}

/// The reference operator's releases and edges, as `olmpack upgrade test` reads them.
fn inputs() -> &'static Inputs {
    static INPUTS: OnceLock<Inputs> = OnceLock::new();
    INPUTS.get_or_init(|| {
        let plan = olmpack::plan::load(&root().join("olmpack.yaml")).expect("olmpack.yaml loads");
        olmpack::live::from_plan(&plan).expect("the plan's bundles generate")
    })
}

fn operator_webhook() -> Webhook {
    Webhook::Command(format!(
        "'{}' webhook",
        env!("CARGO_BIN_EXE_webapp-operator")
    ))
}

fn release(version: &str) -> ReleaseUnderTest {
    let mut release = inputs().releases[&format!("webapp-operator.v{version}")].clone();
    release.webhook = Some(operator_webhook());
    release
}

async fn run(from: &ReleaseUnderTest, to: &ReleaseUnderTest) -> EdgeReport {
    let env = TestEnv::start().await.expect("test environment starts");
    let options = EdgeOptions {
        cleanup: false,
        ..EdgeOptions::default()
    };
    let report = run_edge(&env.client(), from, to, &options)
        .await
        .expect("the edge runs");
    eprintln!(
        "{}",
        olmpack::live::render(
            std::slice::from_ref(&report),
            olmpack::live::OutputFormat::Text
        )
    );
    report
}

fn step<'a>(report: &'a EdgeReport, name: &str) -> &'a str {
    report
        .steps
        .iter()
        .find(|s| s.step == name)
        .map(|s| s.outcome.as_str())
        .unwrap_or_else(|| panic!("no step {name} in {:#?}", report.steps))
}

fn findings<'a>(report: &'a EdgeReport, rule: &str) -> Vec<&'a LiveFinding> {
    report.findings.iter().filter(|f| f.rule == rule).collect()
}

async fn reference_edge(from: &str, to: &str) -> EdgeReport {
    let (from_name, to_name) = (
        format!("webapp-operator.v{from}"),
        format!("webapp-operator.v{to}"),
    );
    assert!(
        inputs()
            .edges
            .iter()
            .any(|e| e.from == from_name && e.to == to_name),
        "{from} → {to} is not an edge of the graph: {:?}",
        inputs().edges
    );
    let report = run(&release(from), &release(to)).await;
    assert_eq!(report.verdict, Verdict::Passed, "{:#?}", report.findings);
    assert!(report.objects > 0);
    report
}

#[test]
fn crd_upgrade_live_graph_edges() {
    let edges: Vec<(String, String)> = inputs()
        .edges
        .iter()
        .map(|e| (e.from.clone(), e.to.clone()))
        .collect();
    let v = |s: &str| format!("webapp-operator.v{s}");
    assert_eq!(
        edges,
        [
            (v("0.1.0"), v("0.2.0")),
            (v("0.2.0"), v("0.3.0")),
            (v("0.3.0"), v("1.0.0")),
            (v("0.3.0"), v("1.0.1")),
            (v("1.0.0"), v("1.0.1")),
        ]
    );
}

/// v1alpha1 → v1beta1 storage: the successor without v1alpha1 is refused until the
/// migration, then installs; the rollback to 0.1.0 is refused (v1beta1 is stored now).
#[tokio::test]
async fn crd_upgrade_live_edge_0_1_0_to_0_2_0_migrate_then_drop() {
    let report = reference_edge("0.1.0", "0.2.0").await;
    let before = step(&report, "successor-before-migration");
    assert!(before.contains("refused by kube-apiserver"), "{before}");
    assert!(before.contains("storedVersions"), "{before}");
    let migrate = step(&report, "migrate");
    assert!(
        migrate.contains("[v1alpha1, v1beta1] → [v1beta1]"),
        "{migrate}"
    );
    assert_eq!(
        step(&report, "successor-after-migration"),
        "webapps.apps.olmpack.dev with only v1beta1: installs"
    );
    match &report.rollback {
        Rollback::Refused(message) => {
            assert!(
                message.contains("storedVersions") && message.contains("v1beta1"),
                "{message}"
            );
        }
        other => panic!("rollback: {other:?}"),
    }
}

/// The outage: with the webhook stopped, reads at a non-storage version fail with the
/// apiserver's conversion error, reads at the storage version work, and after a restart
/// every object reads back intact.
#[tokio::test]
async fn crd_upgrade_live_edge_0_2_0_to_0_3_0_webhook_outage() {
    let report = reference_edge("0.2.0", "0.3.0").await;
    let outage = step(&report, "outage");
    assert!(outage.contains("reads at v1alpha1 failed: "), "{outage}");
    assert!(outage.contains("conversion webhook"), "{outage}");
    assert!(outage.contains("reads at v1 kept working"), "{outage}");
    assert!(outage.contains("after the restart all"), "{outage}");
    assert!(findings(&report, rules::OUTAGE).is_empty());
    assert!(
        matches!(report.rollback, Rollback::Refused(_)),
        "{:?}",
        report.rollback
    );
}

/// 1.0.0 stops serving v1alpha1, which 0.3.0 had deprecated: a warning, not a failure. The
/// rollback keeps every object intact.
#[tokio::test]
async fn crd_upgrade_live_edge_0_3_0_to_1_0_0_rollback_intact() {
    let report = reference_edge("0.3.0", "1.0.0").await;
    let warning = findings(&report, rules::VERSION_NOT_SERVED);
    assert_eq!(warning.len(), 1, "{:#?}", report.findings);
    assert_eq!(warning[0].severity, Severity::Warning);
    assert_eq!(warning[0].version.as_deref(), Some("v1alpha1"));
    assert_eq!(report.rollback, Rollback::Intact);
}

#[tokio::test]
async fn crd_upgrade_live_edge_0_3_0_to_1_0_1() {
    let report = reference_edge("0.3.0", "1.0.1").await;
    assert_eq!(report.rollback, Rollback::Intact);
}

#[tokio::test]
async fn crd_upgrade_live_edge_1_0_0_to_1_0_1() {
    let report = reference_edge("1.0.0", "1.0.1").await;
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert_eq!(report.rollback, Rollback::Intact);
}

/// The operator itself migrates storage at start-up: objects written under 0.2.0 (stored
/// at v1beta1), the CRD upgraded to 1.0.1, the operator started as its ServiceAccount (with
/// the RBAC it declares) — `status.storedVersions` becomes `[v1]` and a release that drops
/// v1alpha1 and v1beta1 then installs.
#[tokio::test]
async fn crd_upgrade_live_operator_migrates_storage_at_startup() {
    use common::harness::{self, eventually};
    use webapp_operator::api::{CRD_NAME, Version};
    use webapp_operator::manifests::crd::{WebhookTarget, crd};
    use webapp_operator::releases::Release;

    let cluster = harness::cluster(Release::find("0.2.0").unwrap(), false).await;
    for (i, version) in [Version::V1alpha1, Version::V1beta1]
        .into_iter()
        .enumerate()
    {
        let spec = if version == Version::V1alpha1 {
            json!({"image": "nginx:1.27", "port": 8080})
        } else {
            json!({"image": "nginx:1.27", "containerPort": 8080})
        };
        harness::create_webapp(&cluster, version, &format!("app-{i}"), spec).await;
    }
    let target = WebhookTarget::Url {
        url: cluster.webhook_url(),
        ca_pem: cluster.env.ca().cert_pem().to_owned(),
    };
    let latest = crd(Release::latest(), &target).unwrap();
    cluster.env.install_crd(&latest).await.unwrap();
    let crds: kube::Api<CustomResourceDefinition> = kube::Api::all(cluster.env.client());
    let stored = || async { crd_migrate::stored_versions(&crds.get(CRD_NAME).await.unwrap()) };
    assert_eq!(stored().await, ["v1beta1", "v1"]);

    let operator = harness::start_operator(&cluster, None).await;
    eventually(
        "status.storedVersions is [v1]",
        Duration::from_secs(60),
        || async { stored().await == ["v1"] },
    )
    .await;
    let mut successor = latest.clone();
    successor.spec.versions.retain(|v| v.storage);
    cluster
        .env
        .install_crd(&successor)
        .await
        .expect("the release without old versions installs");
    let v1 = cluster
        .webapps(Version::V1)
        .list(&Default::default())
        .await
        .unwrap();
    assert_eq!(v1.items.len(), 2);
    operator.stop().await.unwrap();
}
