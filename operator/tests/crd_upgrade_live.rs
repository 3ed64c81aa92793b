//! Live upgrade tests of the reference operator on a real apiserver, with its real conversion
//! webhook (`webapp-operator webhook`): every edge of its upgrade graph (read from the root
//! `olmpack.yaml` through olmpack, as `olmpack upgrade test` reads it), every deliberately
//! broken next release of [`olmpack_testkit::defects`], and the operator's own storage
//! migration at start-up. Each test runs its own control plane.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use axum::body::Bytes;
use axum::routing::post;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use olmpack::upgrade::test::Inputs;
use olmpack_envtest::control_plane::TestEnv;
use olmpack_envtest::live::{
    EdgeOptions, EdgeReport, ReleaseUnderTest, Rollback, Webhook, rules, run_edge,
};
use olmpack_model::report::{Consumer, Finding, Severity};
use olmpack_model::upgrade::{Edge, Verdict};
use olmpack_testkit::defects::{BrokenRelease, Defect, broken_release};
use serde_json::{Value, json};

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
        let plan = olmpack::plan::load(&root().join("olmpack.yaml"), &Default::default())
            .expect("olmpack.yaml loads");
        olmpack::upgrade::test::from_plan(&plan, &Default::default())
            .expect("the plan's bundles generate")
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
    run_as(from, to, false).await
}

/// [`run`]; with `kubeconfig` the process gets one acting as its ServiceAccount, as
/// `olmpack upgrade test` always gives it.
async fn run_as(from: &ReleaseUnderTest, to: &ReleaseUnderTest, kubeconfig: bool) -> EdgeReport {
    let env = TestEnv::start().await.expect("test environment starts");
    let options = EdgeOptions {
        cleanup: false,
        kubeconfig: kubeconfig.then(|| env.kubeconfig_path().to_owned()),
        ..EdgeOptions::default()
    };
    let report = run_edge(&env.client(), from, to, &options)
        .await
        .expect("the edge runs");
    eprintln!(
        "{}",
        olmpack::upgrade::test::format(
            &[report.clone().into()],
            olmpack_model::report::OutputFormat::Text
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

fn findings<'a>(report: &'a EdgeReport, rule: &str) -> Vec<&'a Finding> {
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

/// The newest release and a next release with exactly one `defect`.
fn broken(defect: Defect) -> (ReleaseUnderTest, ReleaseUnderTest, BrokenRelease) {
    let base = release("1.0.1");
    let crd = base.crds[0].clone();
    let defect = broken_release(&crd, defect).expect("the reference CRD carries every defect");
    let mut next = base.clone();
    next.name = format!("webapp-operator.v1.0.2-{}", defect.defect);
    next.crds = vec![defect.crd.clone()];
    (base, next, defect)
}

/// `^.spec.x` → `spec.x`.
fn field(path: &str) -> String {
    path.trim_start_matches("^.").to_owned()
}

async fn defect_rule(defect: Defect, rule: &str) -> EdgeReport {
    let (base, next, _) = broken(defect);
    let report = run(&base, &next).await;
    assert_ne!(
        report.verdict,
        Verdict::Passed,
        "{defect}: {:#?}",
        report.findings
    );
    assert!(
        report.errors().any(|f| f.rule == rule),
        "{defect}: expected {rule}, got {:#?}",
        report.findings
    );
    report
}

#[tokio::test]
async fn crd_upgrade_live_defect_field_removed() {
    let (_, _, defect) = broken(Defect::FieldRemoved);
    let report = defect_rule(Defect::FieldRemoved, rules::DATA_LOST).await;
    let path = field(defect.path.as_deref().unwrap());
    assert!(
        findings(&report, rules::DATA_LOST)
            .iter()
            .any(|f| f.field.as_deref() == Some(path.as_str())),
        "{path}: {:#?}",
        report.findings
    );
}

/// The reference CRD converts through a webhook, so OLM v0 only warns about existing objects
/// the new schema refuses (as `upgrade check` says: the refusal is OLM v1's, which the live
/// test does not judge); kube-apiserver refuses their updates, and the finding says so.
async fn existing_object_warning(base: &ReleaseUnderTest, next: &ReleaseUnderTest) -> EdgeReport {
    let report = run(base, next).await;
    // The existing objects are only warned about. The release's own conversions are judged
    // too: a broken release whose examples convert into objects its own CRD refuses (a new
    // required field) is `live/release-conversion-lossy`, and only that may be an error.
    let errors: Vec<_> = report
        .errors()
        .filter(|f| f.rule != rules::RELEASE_CONVERSION_LOSSY)
        .collect();
    assert!(errors.is_empty(), "{:#?}", report.findings);
    let invalid = findings(&report, rules::EXISTING_OBJECT_INVALID);
    assert!(!invalid.is_empty(), "{:#?}", report.findings);
    for finding in &invalid {
        assert_eq!(finding.severity, Severity::Warning, "{finding:#?}");
        assert_eq!(
            finding.consumer,
            Some(Consumer::KubeApiserver),
            "{finding:#?}"
        );
        assert!(
            finding.message.contains(
                "OLM v0 only warns because the new CRD converts through a webhook, but kube-apiserver refuses every update of such an object"
            ),
            "{}",
            finding.message
        );
    }
    report
}

#[tokio::test]
async fn crd_upgrade_live_defect_new_required_field() {
    let (base, next, _) = broken(Defect::NewRequiredField);
    let report = existing_object_warning(&base, &next).await;
    let finding = findings(&report, rules::EXISTING_OBJECT_INVALID)[0];
    assert!(
        finding
            .message
            .contains(olmpack_testkit::defects::NEW_REQUIRED_FIELD),
        "{}",
        finding.message
    );
}

/// The removed enum value only matters to objects that use it: the base release gets one.
#[tokio::test]
async fn crd_upgrade_live_defect_enum_value_removed() {
    let (mut base, next, defect) = broken(Defect::EnumValueRemoved);
    let path = field(defect.path.as_deref().unwrap());
    let value = removed_enum_value(&base.crds[0], &next.crds[0], &defect.version, &path);
    let mut example = json!({
        "apiVersion": format!("apps.olmpack.dev/{}", defect.version),
        "kind": "WebApp",
        "metadata": {"name": "uses-removed-value"},
        "spec": {"image": "nginx:1.27"},
    });
    set_path(&mut example, &path, value.clone());
    base.examples.push(example);
    let report = existing_object_warning(&base, &next).await;
    let invalid = findings(&report, rules::EXISTING_OBJECT_INVALID);
    assert!(
        invalid.iter().any(
            |f| f.object.as_deref() == Some("WebApp/uses-removed-value-v1")
                && f.message.contains(value.as_str().unwrap())
        ),
        "{:#?}",
        report.findings
    );
}

/// Without a conversion webhook OLM v0 refuses the upgrade for an existing object the new
/// schema refuses: the same defect on the reference CRD with `strategy: None`.
#[tokio::test]
async fn crd_upgrade_live_existing_object_refused_by_olm_v0_without_a_webhook() {
    let (base, mut next, _) = broken(Defect::NewRequiredField);
    let mut crd = serde_json::to_value(&next.crds[0]).unwrap();
    crd["spec"]["conversion"] = json!({"strategy": "None"});
    next.crds = vec![serde_json::from_value(crd).unwrap()];
    let report = run(&base, &next).await;
    assert_eq!(report.verdict, Verdict::Refused, "{:#?}", report.findings);
    let finding = findings(&report, rules::EXISTING_OBJECT_INVALID)[0];
    assert_eq!(finding.severity, Severity::Error);
    assert_eq!(finding.consumer, Some(Consumer::OlmV0));
    assert!(
        finding
            .message
            .contains("OLM v0 fails the InstallPlan when such an object exists (\"updated validation is too restrictive\")"),
        "{}",
        finding.message
    );
}

/// Two defects as `olmpack upgrade test --jobs 2` runs them: both edges at once, each on a
/// control plane of its own; the reports come back in edge order, each with its defect's
/// verdict and rule.
#[tokio::test]
async fn crd_upgrade_live_defects_two_edges_at_once() {
    let cases = [
        (
            Defect::StorageVersionDropped,
            Verdict::Refused,
            rules::STORED_VERSION_REMOVED,
        ),
        (
            Defect::ConversionWebhookMissing,
            Verdict::DataLost,
            rules::DATA_LOST,
        ),
    ];
    let mut two = Inputs::default();
    for (defect, _, _) in &cases {
        let (base, next, _) = broken(*defect);
        two.edges.push(Edge::new("webapp", &base.name, &next.name));
        two.releases.insert(base.name.clone(), base);
        two.releases.insert(next.name.clone(), next);
    }
    let Webhook::Command(webhook) = operator_webhook() else {
        unreachable!("the operator's webhook is a command")
    };
    let started = std::time::Instant::now();
    let reports = olmpack::upgrade::test::run(
        &two,
        &olmpack::upgrade::test::Target::TestEnv {
            kubernetes: Default::default(),
            openshift: None,
        },
        Some(&webhook),
        &EdgeOptions::default(),
        2,
    )
    .await
    .expect("both edges run");
    let wall = started.elapsed().as_secs_f64();
    assert_eq!(reports.len(), 2);
    for ((defect, verdict, rule), (report, edge)) in
        cases.iter().zip(reports.iter().zip(&two.edges))
    {
        assert_eq!(
            (&report.edge.from, &report.edge.to),
            (&edge.from, &edge.to),
            "{defect}: edge order"
        );
        assert_eq!(report.verdict, *verdict, "{defect}: {:#?}", report.findings);
        assert!(
            report.errors().any(|f| f.rule == *rule),
            "{defect}: expected {rule}, got {:#?}",
            report.findings
        );
    }
    // How much sooner than one after the other is the bench's to say (`crd_upgrade_live`).
    let sum: f64 = reports.iter().map(|r| r.seconds).sum();
    eprintln!("two edges at once: {wall:.1} s; the edges alone {sum:.1} s together");
}

#[tokio::test]
async fn crd_upgrade_live_defect_storage_version_dropped() {
    let report = defect_rule(Defect::StorageVersionDropped, rules::STORED_VERSION_REMOVED).await;
    assert_eq!(report.verdict, Verdict::Refused);
    let finding = findings(&report, rules::STORED_VERSION_REMOVED)[0];
    assert!(
        finding.message.contains("the apiserver refuses it too"),
        "{}",
        finding.message
    );
    assert!(
        finding.message.contains("missing from spec.versions"),
        "{}",
        finding.message
    );
}

#[tokio::test]
async fn crd_upgrade_live_defect_served_version_removed() {
    let (_, _, defect) = broken(Defect::ServedVersionRemoved);
    let report = defect_rule(Defect::ServedVersionRemoved, rules::VERSION_NOT_SERVED).await;
    let finding = findings(&report, rules::VERSION_NOT_SERVED)[0];
    assert_eq!(finding.version.as_deref(), Some(defect.version.as_str()));
    assert_eq!(finding.severity, Severity::Error);
}

/// The CRD is unchanged; the next release's webhook drops `spec.logLevel` on the way to the
/// hub (a fault a static check cannot see).
#[tokio::test]
async fn crd_upgrade_live_defect_lossy_conversion() {
    let (base, mut next, _) = broken(Defect::LossyConversion);
    next.webhook = Some(Webhook::Router(lossy_router()));
    let report = run(&base, &next).await;
    assert_eq!(report.verdict, Verdict::DataLost, "{:#?}", report.findings);
    let lossy = findings(&report, rules::LOSSY_CONVERSION);
    assert!(
        lossy
            .iter()
            .any(|f| f.field.as_deref() == Some("spec.logLevel")
                && f.version.as_deref() == Some("v1")),
        "{:#?}",
        report.findings
    );
}

/// The operator's conversion, except that objects converted to v1 lose `spec.logLevel`.
fn lossy_router() -> axum::Router {
    axum::Router::new().route(
        webapp_operator::manifests::crd::CONVERT_PATH,
        post(|body: Bytes| async move {
            let (bytes, _) = webapp_operator::webhook::convert::handle(&body);
            let mut review: Value =
                serde_json::from_slice(&bytes).expect("the handler answers JSON");
            for object in review["response"]["convertedObjects"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                if object["apiVersion"] == "apps.olmpack.dev/v1"
                    && let Some(spec) = object["spec"].as_object_mut()
                {
                    spec.remove("logLevel");
                }
            }
            (
                [(http::header::CONTENT_TYPE, "application/json")],
                review.to_string(),
            )
        }),
    )
}

fn schema_at<'a>(
    crd: &'a CustomResourceDefinition,
    version: &str,
    path: &str,
) -> &'a JSONSchemaProps {
    let mut schema = crd
        .spec
        .versions
        .iter()
        .find(|v| v.name == version)
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .expect("the version has a schema");
    for part in path.split('.') {
        schema = &schema.properties.as_ref().expect("an object schema")[part];
    }
    schema
}

fn removed_enum_value(
    base: &CustomResourceDefinition,
    next: &CustomResourceDefinition,
    version: &str,
    path: &str,
) -> Value {
    let values = |crd| -> Vec<Value> {
        schema_at(crd, version, path)
            .enum_
            .iter()
            .flatten()
            .map(|j| j.0.clone())
            .collect()
    };
    let kept = values(next);
    values(base)
        .into_iter()
        .find(|v| !kept.contains(v))
        .expect("one value was removed")
}

fn set_path(object: &mut Value, path: &str, value: Value) {
    let mut target = object;
    let parts: Vec<&str> = path.split('.').collect();
    for part in &parts[..parts.len() - 1] {
        target = &mut target[*part];
    }
    target[parts[parts.len() - 1]] = value;
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
    use webapp_operator::releases::OperatorRelease;

    let cluster = harness::cluster(OperatorRelease::find("0.2.0").unwrap(), false).await;
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
    let latest = crd(OperatorRelease::latest(), &target).unwrap();
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

/// A release whose process is the operator's container as the kubelet starts it: the
/// command line runs the real operator with the container's arguments (`"$@"`: `run
/// --cert-dir=/apiserver.local.config/certificates …`), after checking what only the
/// container spec gives — `WATCH_NAMESPACE` (a `fieldRef` in `env`, added to the pod
/// template's variables) and OLM's certificate at its mount path.
fn as_container(version: &str, env: Vec<Value>) -> ReleaseUnderTest {
    let mut release = release(version);
    let operator = release.operator.as_mut().expect("the CSV has a Deployment");
    let container = &mut operator.pod_template["spec"]["containers"][0];
    let list = container["env"]
        .as_array_mut()
        .expect("the container has env");
    list.extend(env);
    release.webhook = Some(Webhook::Command(format!(
        r#"test -n "$WATCH_NAMESPACE" || {{ echo "WATCH_NAMESPACE is not set" >&2; exit 1; }}
test -f /apiserver.local.config/certificates/apiserver.crt || {{ echo "no certificate where OLM mounts it" >&2; exit 1; }}
echo "watching $WATCH_NAMESPACE, arguments: $*"
exec '{}' "$@""#,
        env!("CARGO_BIN_EXE_webapp-operator")
    )));
    release
}

fn watch_namespace() -> Vec<Value> {
    vec![
        json!({"name": "WATCH_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}),
    ]
}

/// Whether this process may give its children mount namespaces (root); says NOT RUN
/// otherwise, and fails under CI, where the suite runs as root.
fn mounts_or_not_run(test: &str) -> bool {
    if olmpack_envtest::container::mount_namespaces_allowed() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: mount namespaces need root under CI"
    );
    eprintln!("{test}: NOT RUN: mount namespaces need root");
    false
}

/// The operator runs from its Deployment's container spec: its arguments, a `fieldRef`
/// variable and OLM's certificate volume reach the process, and the edge passes.
#[tokio::test]
async fn crd_upgrade_live_operator_runs_as_its_container() {
    if !mounts_or_not_run("crd_upgrade_live_operator_runs_as_its_container") {
        return;
    }
    let from = as_container("0.1.0", watch_namespace());
    let to = as_container("0.2.0", watch_namespace());
    let report = run_as(&from, &to, true).await;
    assert_eq!(report.verdict, Verdict::Passed, "{:#?}", report.findings);
}

/// A container that exits at once is restarted twice and then is the edge's verdict, in
/// seconds: the pod would crash-loop, with the container and its last output.
#[tokio::test]
async fn crd_upgrade_live_a_crashing_container_is_a_verdict_at_once() {
    if !mounts_or_not_run("crd_upgrade_live_a_crashing_container_is_a_verdict_at_once") {
        return;
    }
    let from = as_container("0.1.0", Vec::new());
    let to = as_container("0.2.0", watch_namespace());
    let report = run(&from, &to).await;
    assert_eq!(report.verdict, Verdict::Refused, "{:#?}", report.findings);
    let found = findings(&report, "live/pod-cannot-start");
    assert_eq!(found.len(), 1, "{:#?}", report.findings);
    assert_eq!(found[0].consumer, Some(Consumer::PodCannotStart));
    let message = &found[0].message;
    for words in [
        "webapp-operator.v0.1.0: container manager exited 3 times, the last after 2 restart(s) (exit status: 1): the pod would crash-loop",
        "WATCH_NAMESPACE is not set",
    ] {
        assert!(message.contains(words), "{words:?} not in {message}");
    }
    assert!(report.seconds < 30.0, "took {} s", report.seconds);
}

/// An env reference to a Secret the namespace does not have: the kubelet does not start
/// the container, in its words.
#[tokio::test]
async fn crd_upgrade_live_a_missing_secret_is_the_kubelets_refusal() {
    let missing = json!({"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}});
    let from = as_container("0.1.0", vec![missing]);
    let to = as_container("0.2.0", watch_namespace());
    let report = run(&from, &to).await;
    let found = findings(&report, "live/pod-cannot-start");
    assert_eq!(found.len(), 1, "{:#?}", report.findings);
    assert_eq!(
        found[0].message,
        "webapp-operator.v0.1.0: the kubelet does not start container manager of Deployment webapp-operator: CreateContainerConfigError: secret \"creds\" not found"
    );
}
