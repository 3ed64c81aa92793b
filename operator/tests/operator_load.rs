//! The controller's behaviour under load, on the real apiserver: bounded concurrency with a
//! queue, throttling made visible, the Lease released at shutdown.

mod common;

use std::time::Duration;

use common::harness::{self, APPS_NS, OPERATOR_NS, eventually};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use olmpack_envtest::control_plane::TestEnvOptions;
use serde_json::json;
use webapp_operator::api::{Version, v1};
use webapp_operator::controller::{LEASE_NAME, Settings};
use webapp_operator::manifests::NAME;
use webapp_operator::releases::OperatorRelease;
use webapp_operator::run::{self, Options, Running};

const WAIT: Duration = Duration::from_secs(120);

async fn start(cluster: &harness::Cluster, settings: Settings) -> Running {
    let localhost = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    run::start(
        Options {
            settings,
            webhook_addr: localhost,
            tls: None,
            metrics_addr: localhost,
            controller: true,
        },
        cluster.operator_config(),
    )
    .await
    .expect("operator starts")
}

async fn create_all(cluster: &harness::Cluster, names: &[String]) {
    futures::future::join_all(names.iter().map(|name| {
        harness::create_webapp(cluster, Version::V1, name, json!({"image": "shop:1"}))
    }))
    .await;
}

async fn all_reconciled(apps: &Api<v1::WebApp>, names: &[String]) -> bool {
    for name in names {
        let app = apps.get(name).await.unwrap();
        let observed = app.status.as_ref().and_then(|s| s.observed_generation);
        if observed.is_none() || observed != app.metadata.generation {
            return false;
        }
    }
    true
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

#[tokio::test]
async fn operator_concurrency_is_bounded_and_the_rest_is_queued() {
    let cluster = harness::cluster(OperatorRelease::latest(), false).await;
    let apps: Api<v1::WebApp> = Api::namespaced(cluster.env.client(), APPS_NS);
    // Created before the operator starts: its initial list triggers all of them at once.
    let names = names("many", 12);
    create_all(&cluster, &names).await;
    let operator = start(
        &cluster,
        Settings {
            concurrency: 2,
            ..harness::settings(None)
        },
    )
    .await;
    eventually("every WebApp is reconciled", WAIT, || {
        all_reconciled(&apps, &names)
    })
    .await;
    let (queued, in_flight) = operator.metrics.peaks();
    assert!(
        (1..=2).contains(&in_flight),
        "at most 2 reconciles ran at once, saw {in_flight}"
    );
    assert!(queued >= 1, "keys waited in the queue: {queued}");
    eventually("the queue drains", WAIT, || async {
        let text = operator.metrics.encode();
        text.contains("webapp_queue_depth 0\n") && text.contains("webapp_reconciles_in_flight 0\n")
    })
    .await;
    // Reconciled but not Ready (no kubelet here): still unconverged, and said so.
    let text = operator.metrics.encode();
    assert!(text.contains("webapp_unconverged 12\n"), "{text}");
    operator.stop().await.unwrap();
}

/// A priority level for the operator's ServiceAccount that has one seat and rejects
/// (429) whatever does not fit, instead of queuing it.
async fn throttle_operator(client: &kube::Client) {
    let resource = |kind: &str, plural: &str| {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("flowcontrol.apiserver.k8s.io", "v1", kind),
            plural,
        )
    };
    let levels: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &resource("PriorityLevelConfiguration", "prioritylevelconfigurations"),
    );
    let schemas: Api<DynamicObject> =
        Api::all_with(client.clone(), &resource("FlowSchema", "flowschemas"));
    let apply = PatchParams::apply("test-setup");
    levels
        .patch(
            "tiny",
            &apply,
            &Patch::Apply(json!({
                "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                "kind": "PriorityLevelConfiguration",
                "metadata": {"name": "tiny"},
                "spec": {"type": "Limited", "limited": {
                    "nominalConcurrencyShares": 1,
                    "lendablePercent": 0,
                    "borrowingLimitPercent": 0,
                    "limitResponse": {"type": "Reject"},
                }},
            })),
        )
        .await
        .unwrap();
    schemas
        .patch(
            "tiny",
            &apply,
            &Patch::Apply(json!({
                "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                "kind": "FlowSchema",
                "metadata": {"name": "tiny"},
                "spec": {
                    "priorityLevelConfiguration": {"name": "tiny"},
                    "matchingPrecedence": 100,
                    "distinguisherMethod": {"type": "ByUser"},
                    "rules": [{
                        "subjects": [{"kind": "ServiceAccount", "serviceAccount": {"name": NAME, "namespace": OPERATOR_NS}}],
                        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"], "clusterScope": true}],
                        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                    }],
                },
            })),
        )
        .await
        .unwrap();
    eventually("the apiserver uses the FlowSchema", WAIT, || {
        let schemas = schemas.clone();
        async move {
            let schema = schemas.get("tiny").await.unwrap();
            schema.data["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Dangling" && c["status"] == "False")
        }
    })
    .await;
}

/// The apiserver's count of rejected requests in FlowSchema `tiny`.
async fn rejected_by_apiserver(client: &kube::Client) -> u64 {
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client.request_text(request).await.unwrap();
    text.lines()
        .filter(|l| {
            l.starts_with("apiserver_flowcontrol_rejected_requests_total{")
                && l.contains("flow_schema=\"tiny\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

#[tokio::test]
async fn operator_counts_every_throttled_response_including_retries() {
    let options = TestEnvOptions {
        apiserver_args: vec![
            "--enable-priority-and-fairness=true".to_owned(),
            "--max-requests-inflight=10".to_owned(),
            "--max-mutating-requests-inflight=5".to_owned(),
        ],
        ..Default::default()
    };
    let cluster = harness::cluster_with(OperatorRelease::latest(), options).await;
    let client = cluster.env.client();
    throttle_operator(&client).await;
    let names = names("squeezed", 16);
    create_all(&cluster, &names).await;
    let operator = start(
        &cluster,
        Settings {
            concurrency: 16,
            ..harness::settings(None)
        },
    )
    .await;
    let apps: Api<v1::WebApp> = Api::namespaced(client.clone(), APPS_NS);
    eventually("every WebApp is reconciled despite the 429s", WAIT, || {
        all_reconciled(&apps, &names)
    })
    .await;
    let rejected = rejected_by_apiserver(&client).await;
    let throttled = operator.metrics.throttled();
    assert!(
        rejected > 0,
        "the apiserver rejected some of the operator's requests"
    );
    // Every rejection reached the metrics, also those kube's client retried by itself.
    assert_eq!(
        throttled, rejected,
        "operator saw {throttled}, apiserver rejected {rejected}"
    );
    let text = operator.metrics.encode();
    assert!(
        text.contains(&format!(
            "webapp_api_responses_total{{code=\"429\"}} {throttled}\n"
        )),
        "{text}"
    );
    operator.stop().await.unwrap();
}

#[tokio::test]
async fn operator_shutdown_releases_the_lease() {
    let cluster = harness::cluster(OperatorRelease::latest(), false).await;
    let operator = harness::start_operator(&cluster, Some("releasing")).await;
    eventually("it leads", WAIT, || async { operator.metrics.is_leader() }).await;
    let leases: Api<Lease> = Api::namespaced(cluster.env.client(), OPERATOR_NS);
    let holder = || {
        let leases = leases.clone();
        async move {
            leases
                .get(LEASE_NAME)
                .await
                .unwrap()
                .spec
                .and_then(|s| s.holder_identity)
        }
    };
    assert_eq!(holder().await.as_deref(), Some("releasing"));
    harness::create_webapp(&cluster, Version::V1, "one", json!({"image": "shop:1"})).await;
    operator.stop().await.unwrap();
    assert_eq!(holder().await, None, "the Lease was released on stop");
}
