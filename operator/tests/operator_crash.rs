//! Crash safety: the real binary exits at each crash point; a restart converges without
//! duplicate children or duplicate side effects.

mod common;

use std::time::Duration;

use common::harness::{self, APPS_NS, OPERATOR_NS, OperatorProcess};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, ListParams};
use serde_json::json;
use webapp_operator::api::{Version, v1};
use webapp_operator::controller::crash::{CRASH_ENV, CRASH_EXIT_CODE, CrashPoint};
use webapp_operator::controller::routes as route_entries;
use webapp_operator::releases::OperatorRelease;

const WAIT: Duration = Duration::from_secs(60);

#[tokio::test]
async fn operator_crash_at_each_point_then_restart_converges() {
    let cluster = harness::cluster(OperatorRelease::latest(), false).await;
    let client = cluster.env.client();
    let apps: Api<v1::WebApp> = Api::namespaced(client.clone(), APPS_NS);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), APPS_NS);
    let services: Api<Service> = Api::namespaced(client.clone(), APPS_NS);
    let routes: Api<ConfigMap> = Api::namespaced(client.clone(), OPERATOR_NS);

    for (index, point) in CrashPoint::ALL.into_iter().enumerate() {
        let name = format!("crash-{}", point.name());
        harness::create_webapp(&cluster, Version::V1, &name, json!({"image": "shop:1"})).await;

        let mut crashing =
            OperatorProcess::start(&cluster, &name, &[], &[(CRASH_ENV, point.name())]);
        let code = crashing.exit_code(WAIT).await;
        assert_eq!(
            code,
            Some(CRASH_EXIT_CODE),
            "{} log:\n{}",
            point.name(),
            crashing.log()
        );

        // The state the crash left behind.
        let deployed = deployments.get_opt(&name).await.unwrap().is_some();
        let status = apps.get(&name).await.unwrap().status;
        match point {
            CrashPoint::BeforeDeploymentApply => assert!(!deployed, "crashed before applying"),
            CrashPoint::AfterDeploymentApply => assert!(deployed && status.is_none()),
            CrashPoint::BeforeStatusWrite => {
                assert!(
                    deployed
                        && services.get_opt(&name).await.unwrap().is_some()
                        && status.is_none()
                );
            }
        }

        // Restart without the crash point: converges.
        let restarted = OperatorProcess::start(&cluster, &format!("{name}-restart"), &[], &[]);
        restarted
            .eventually("the restarted operator converges", WAIT, || {
                let apps = apps.clone();
                let name = name.clone();
                async move {
                    let app = apps.get(&name).await.unwrap();
                    app.status.as_ref().and_then(|s| s.observed_generation)
                        == app.metadata.generation
                }
            })
            .await;
        let log = restarted.log();
        assert_eq!(
            restarted.terminate().await,
            Some(0),
            "graceful exit; log:\n{log}"
        );

        // No duplicates: one Deployment, one Service and one routing entry per WebApp.
        let count = index + 1;
        let selector = ListParams::default().labels("app.kubernetes.io/managed-by=webapp-operator");
        assert_eq!(
            deployments.list(&selector).await.unwrap().items.len(),
            count
        );
        assert_eq!(services.list(&selector).await.unwrap().items.len(), count);
        let entries = routes
            .list(&ListParams::default().labels(&route_entries::selector()))
            .await
            .unwrap()
            .items;
        assert_eq!(entries.len(), count, "one routing entry per WebApp");
        assert!(
            !log.contains("\"code\":403") && !log.contains("Forbidden"),
            "no 403s:\n{log}"
        );
    }
}
