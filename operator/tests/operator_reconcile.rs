//! The controller against the real apiserver and kube-controller-manager, running as the
//! operator's ServiceAccount under the RBAC it declares.

mod common;

use std::time::Duration;

use common::harness::{self, APPS_NS, OPERATOR_NS, eventually};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::json;
use webapp_operator::api::{Version, v1};
use webapp_operator::controller::reconcile::FINALIZER;
use webapp_operator::controller::routes::{LEGACY_ROUTES_CONFIGMAP, URL_KEY};
use webapp_operator::releases::OperatorRelease;

const WAIT: Duration = Duration::from_secs(60);
/// The routing entry of WebApp `apps/shop`.
const SHOP_ROUTE: &str = "route.apps.shop";

fn ready_condition(app: &v1::WebApp) -> Option<(String, String)> {
    app.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| (c.status.clone(), c.reason.clone()))
    })
}

async fn wait_reconciles(running: &webapp_operator::run::Running, at_least: u64) {
    eventually("reconciles", WAIT, || async move {
        running.metrics.reconciles() >= at_least
    })
    .await;
}

#[tokio::test]
async fn operator_reconcile_lifecycle() {
    let cluster = harness::cluster(OperatorRelease::latest(), true).await;
    let operator = harness::start_operator(&cluster, None).await;
    let client = cluster.env.client();
    let apps: Api<v1::WebApp> = Api::namespaced(client.clone(), APPS_NS);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), APPS_NS);
    let services: Api<Service> = Api::namespaced(client.clone(), APPS_NS);
    let routes: Api<ConfigMap> = Api::namespaced(client.clone(), OPERATOR_NS);

    harness::create_webapp(
        &cluster,
        Version::V1,
        "shop",
        json!({"image": "shop:1", "replicas": 2, "containerPort": 9000, "resources": {"cpu": "1000m"},
               "database": {"secretName": "db", "key": "dsn"}, "logLevel": "Debug"}),
    )
    .await;

    // Converges: children with owner references, finalizer, routing entry, status.
    eventually("the WebApp converges", WAIT, || {
        let apps = apps.clone();
        async move {
            let app = apps.get("shop").await.unwrap();
            app.status.as_ref().and_then(|s| s.observed_generation) == app.metadata.generation
                && ready_condition(&app).is_some()
        }
    })
    .await;
    let app = apps.get("shop").await.unwrap();
    assert!(app.finalizers().contains(&FINALIZER.to_owned()));
    let status = app.status.clone().unwrap();
    let reasons: Vec<(&str, &str, &str)> = status
        .conditions
        .iter()
        .map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_str()))
        .collect();
    // No kubelet in the test environment: pods never become ready.
    assert!(
        reasons.contains(&("Ready", "False", "ReplicasNotReady")),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&("Degraded", "False", "AsExpected")),
        "{reasons:?}"
    );
    assert_eq!(
        status.selector.as_deref(),
        Some("app.kubernetes.io/instance=shop,app.kubernetes.io/name=webapp")
    );

    let deployment = deployments.get("shop").await.unwrap();
    let owner = &deployment.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("WebApp", app.uid().unwrap().as_str(), Some(true))
    );
    let spec = deployment.spec.clone();
    assert_eq!(spec.replicas, Some(2));
    let container = &spec.template.spec.as_ref().unwrap().containers[0];
    assert_eq!(container.image.as_deref(), Some("shop:1"));
    let env = serde_json::to_value(&container.env).unwrap();
    assert_eq!(env[0], json!({"name": "LOG_LEVEL", "value": "debug"}));
    assert_eq!(
        env[1]["valueFrom"]["secretKeyRef"],
        json!({"name": "db", "key": "dsn"})
    );
    let service = services.get("shop").await.unwrap();
    assert_eq!(service.owner_references()[0].uid, app.uid().unwrap());
    // The routing entry is the WebApp's own ConfigMap; the shared table of earlier
    // releases is never written.
    let entry = routes.get(SHOP_ROUTE).await.unwrap();
    assert_eq!(entry.data.unwrap()[URL_KEY], "http://shop.apps.svc:80");
    assert!(
        routes
            .get_opt(LEGACY_ROUTES_CONFIGMAP)
            .await
            .unwrap()
            .is_none()
    );

    // Let the Deployment controller's status updates settle (each one triggers a reconcile).
    let mut last = (String::new(), u64::MAX);
    let started = std::time::Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let rv = apps.get("shop").await.unwrap().resource_version().unwrap();
        let now = (rv, operator.metrics.api_writes());
        if now == last {
            break;
        }
        assert!(started.elapsed() < WAIT, "the status never settled");
        last = now;
    }

    // Ten further reconciles without a change: zero writes, zero reads (the stores answer),
    // nothing changes.
    let writes_before = operator.metrics.api_writes();
    let reads_before = operator.metrics.api_requests("GET");
    // The counter sees the operator's writes: finalizer, Deployment, Service, routing
    // entry, status.
    assert!(writes_before >= 5, "writes counted: {writes_before}");
    assert!(operator.metrics.api_requests("PATCH") >= 4);
    let versions = |app: &v1::WebApp, d: &Deployment, s: &Service, c: &ConfigMap| {
        [
            app.resource_version(),
            d.resource_version(),
            s.resource_version(),
            c.resource_version(),
        ]
    };
    let before = versions(
        &apps.get("shop").await.unwrap(),
        &deployments.get("shop").await.unwrap(),
        &services.get("shop").await.unwrap(),
        &routes.get(SHOP_ROUTE).await.unwrap(),
    );
    for _ in 0..10 {
        let done = operator.metrics.reconciles();
        operator.resync();
        wait_reconciles(&operator, done + 1).await;
    }
    assert_eq!(
        operator.metrics.api_writes(),
        writes_before,
        "ten reconciles of a converged WebApp wrote nothing"
    );
    assert_eq!(
        operator.metrics.api_requests("GET"),
        reads_before,
        "ten reconciles read nothing from the API (watches are counted as WATCH)"
    );
    let after = versions(
        &apps.get("shop").await.unwrap(),
        &deployments.get("shop").await.unwrap(),
        &services.get("shop").await.unwrap(),
        &routes.get(SHOP_ROUTE).await.unwrap(),
    );
    assert_eq!(after, before, "no object changed");

    // A spec change rolls out.
    apps.patch(
        "shop",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"image": "shop:2", "replicas": 3}})),
    )
    .await
    .unwrap();
    eventually("the new image rolls out", WAIT, || {
        let deployments = deployments.clone();
        let apps = apps.clone();
        async move {
            let d = deployments.get("shop").await.unwrap();
            let app = apps.get("shop").await.unwrap();
            let image = d.spec.template.spec.as_ref().unwrap().containers[0]
                .image
                .clone();
            image.as_deref() == Some("shop:2")
                && d.spec.replicas == Some(3)
                && app.status.as_ref().and_then(|s| s.observed_generation)
                    == app.metadata.generation
        }
    })
    .await;
    assert_eq!(
        deployments
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1,
        "updated in place"
    );

    // Delete: cleanup runs, the finalizer goes, the children are garbage-collected.
    apps.delete("shop", &DeleteParams::default()).await.unwrap();
    eventually("the WebApp is gone", WAIT, || {
        let apps = apps.clone();
        async move { apps.get_opt("shop").await.unwrap().is_none() }
    })
    .await;
    assert!(
        routes.get_opt(SHOP_ROUTE).await.unwrap().is_none(),
        "cleanup removed the routing entry"
    );
    assert!(
        routes
            .get_opt(LEGACY_ROUTES_CONFIGMAP)
            .await
            .unwrap()
            .is_none()
    );
    eventually("the children are garbage-collected", WAIT, || {
        let deployments = deployments.clone();
        let services = services.clone();
        async move {
            deployments.get_opt("shop").await.unwrap().is_none()
                && services.get_opt("shop").await.unwrap().is_none()
        }
    })
    .await;

    assert_eq!(
        operator.metrics.api_responses(403),
        0,
        "the declared RBAC covers everything the operator did"
    );
    operator.stop().await.unwrap();
}

#[tokio::test]
async fn operator_invalid_spec_waits_for_a_change() {
    let cluster = harness::cluster(OperatorRelease::latest(), false).await;
    let operator = harness::start_operator(&cluster, None).await;
    let apps: Api<v1::WebApp> = Api::namespaced(cluster.env.client(), APPS_NS);
    // No admission webhook registered here: the controller's own validation catches it.
    harness::create_webapp(&cluster, Version::V1, "loose", json!({"image": "shop"})).await;
    eventually("InvalidSpec is reported", WAIT, || {
        let apps = apps.clone();
        async move {
            let app = apps.get("loose").await.unwrap();
            ready_condition(&app) == Some(("False".into(), "InvalidSpec".into()))
        }
    })
    .await;
    let app = apps.get("loose").await.unwrap();
    let degraded = app
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Degraded")
        .unwrap();
    assert_eq!(degraded.status, "True");
    assert!(
        degraded.message.contains("must name a tag or a digest"),
        "{}",
        degraded.message
    );
    let deployments: Api<Deployment> = Api::namespaced(cluster.env.client(), APPS_NS);
    assert!(
        deployments.get_opt("loose").await.unwrap().is_none(),
        "nothing deployed for an invalid spec"
    );

    // No retry storm: without a change, no more reconciles and no writes.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (reconciles, writes) = (operator.metrics.reconciles(), operator.metrics.api_writes());
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(operator.metrics.reconciles(), reconciles);
    assert_eq!(operator.metrics.api_writes(), writes);

    // The metrics endpoint shows it: an unconverged object, no errors, no retries.
    let metrics = http_get(operator.metrics_addr, "/metrics").await;
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    for line in [
        "webapp_reconciles_total{result=\"invalid_spec\"}",
        "webapp_reconcile_duration_seconds_count",
        "webapp_queue_depth 0",
        "webapp_oldest_unconverged_seconds",
        "webapp_reconcile_retries_total 0",
        "webapp_api_requests_total{verb=\"GET\"}",
        "webapp_leader 1",
    ] {
        assert!(metrics.contains(line), "missing {line}:\n{metrics}");
    }
    assert!(
        !metrics.contains("webapp_reconcile_errors_total{"),
        "{metrics}"
    );
    assert!(
        http_get(operator.metrics_addr, "/healthz")
            .await
            .starts_with("HTTP/1.1 200")
    );
    assert!(
        http_get(operator.metrics_addr, "/readyz")
            .await
            .starts_with("HTTP/1.1 200")
    );

    // Fixing the spec converges.
    apps.patch(
        "loose",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"image": "shop:1"}})),
    )
    .await
    .unwrap();
    eventually("the fixed WebApp is deployed", WAIT, || {
        let deployments = deployments.clone();
        async move { deployments.get_opt("loose").await.unwrap().is_some() }
    })
    .await;
    assert_eq!(operator.metrics.api_responses(403), 0);
    operator.stop().await.unwrap();
}

/// A plain HTTP/1.1 GET; returns the whole response.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
}

#[tokio::test]
async fn operator_cleanup_failure_keeps_finalizer_then_completes() {
    use k8s_openapi::api::rbac::v1::Role;
    use webapp_operator::manifests::{NAME, rbac};

    let cluster = harness::cluster(OperatorRelease::latest(), false).await;
    let operator = harness::start_operator(&cluster, None).await;
    let client = cluster.env.client();
    let apps: Api<v1::WebApp> = Api::namespaced(client.clone(), APPS_NS);
    let routes: Api<ConfigMap> = Api::namespaced(client.clone(), OPERATOR_NS);
    harness::create_webapp(&cluster, Version::V1, "gone", json!({"image": "shop:1"})).await;
    eventually("the routing entry exists", WAIT, || {
        let routes = routes.clone();
        async move { routes.get_opt("route.apps.gone").await.unwrap().is_some() }
    })
    .await;

    // The external dependency fails: the operator loses access to its routing entries.
    let roles: Api<Role> = Api::namespaced(client.clone(), OPERATOR_NS);
    let full = rbac::role(OPERATOR_NS, OperatorRelease::latest().version);
    let mut reduced = full.clone();
    reduced.rules.as_mut().unwrap().retain(|r| {
        !r.resources
            .as_ref()
            .unwrap()
            .contains(&"configmaps".to_owned())
    });
    let apply_role = |role: Role| {
        let roles = roles.clone();
        async move {
            let mut value = serde_json::to_value(&role).unwrap();
            value["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
            value["kind"] = json!("Role");
            roles
                .patch(
                    NAME,
                    &PatchParams::apply("test-setup").force(),
                    &Patch::Apply(&value),
                )
                .await
                .unwrap();
        }
    };
    apply_role(reduced).await;
    apps.delete("gone", &DeleteParams::default()).await.unwrap();
    eventually("cleanup fails and is retried", WAIT, || async {
        let text = operator.metrics.encode();
        text.contains("webapp_reconcile_errors_total{reason=\"Forbidden\"}")
            && operator.metrics.api_responses(403) >= 2
    })
    .await;
    let text = operator.metrics.encode();
    assert!(
        !text.contains("webapp_reconcile_retries_total 0\n"),
        "retried with backoff:\n{text}"
    );
    let app = apps.get("gone").await.unwrap();
    assert!(app.metadata.deletion_timestamp.is_some());
    assert!(
        app.finalizers().contains(&FINALIZER.to_owned()),
        "the finalizer stays while cleanup fails"
    );

    // The dependency recovers: cleanup continues from the current state and completes.
    apply_role(full).await;
    eventually("the WebApp is gone", WAIT, || {
        let apps = apps.clone();
        async move { apps.get_opt("gone").await.unwrap().is_none() }
    })
    .await;
    assert!(routes.get_opt("route.apps.gone").await.unwrap().is_none());
    operator.stop().await.unwrap();
}
