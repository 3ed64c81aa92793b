//! The declared RBAC is least privilege: what it does not declare is denied to the
//! operator's ServiceAccount (the other tests show that what it does is enough: zero 403s).

mod common;

use common::harness::{self, APPS_NS, OPERATOR_NS};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams};
use webapp_operator::manifests::NAME;
use webapp_operator::manifests::rbac::{RULES, Scope};
use webapp_operator::releases::OperatorRelease;

fn forbidden<T: std::fmt::Debug>(result: Result<T, kube::Error>, what: &str) {
    match result {
        Err(kube::Error::Api(status)) if status.code == 403 => {}
        other => panic!("{what}: expected 403 Forbidden, got {other:?}"),
    }
}

#[tokio::test]
async fn operator_rbac_undeclared_is_denied() {
    let cluster = harness::cluster(OperatorRelease::latest(), false).await;
    let sa = cluster
        .env
        .client_as_service_account(OPERATOR_NS, NAME)
        .unwrap();

    // Declared: allowed.
    let deployments: Api<Deployment> = Api::namespaced(sa.clone(), APPS_NS);
    deployments
        .list(&ListParams::default())
        .await
        .expect("listing Deployments is declared");
    let leases: Api<Lease> = Api::namespaced(sa.clone(), OPERATOR_NS);
    leases
        .get_opt("anything")
        .await
        .expect("reading Leases in its namespace is declared");

    let crds: Api<CustomResourceDefinition> = Api::all(sa.clone());
    crds.get(webapp_operator::api::CRD_NAME)
        .await
        .expect("reading its own CRD is declared (storage migration)");

    // Not declared: denied.
    forbidden(crds.get_opt("other.example.com").await, "read another CRD");
    forbidden(crds.list(&ListParams::default()).await, "list CRDs");
    forbidden(
        deployments.delete("x", &DeleteParams::default()).await,
        "delete deployments",
    );
    forbidden(
        Api::<Secret>::namespaced(sa.clone(), APPS_NS)
            .list(&ListParams::default())
            .await,
        "list secrets",
    );
    forbidden(
        Api::<Lease>::namespaced(sa.clone(), APPS_NS)
            .get_opt("x")
            .await,
        "leases outside its namespace",
    );
    forbidden(
        Api::<ConfigMap>::namespaced(sa.clone(), APPS_NS)
            .get_opt("x")
            .await,
        "configmaps outside its namespace",
    );
    // Routing entries are watched in its namespace, never read one by one.
    let entries: Api<ConfigMap> = Api::namespaced(sa.clone(), OPERATOR_NS);
    entries
        .list(&ListParams::default())
        .await
        .expect("listing ConfigMaps in its namespace is declared (the routing-entry watch)");
    forbidden(entries.get_opt("x").await, "get configmaps");

    // The declaration never grants escalate, bind, impersonate or wildcards, and deletes
    // only routing entries (ConfigMaps in its own namespace).
    for rule in RULES {
        if rule.verbs.contains(&"delete") {
            assert_eq!(
                (rule.resources, rule.scope),
                (&["configmaps"][..], Scope::OperatorNamespace),
                "{rule:?}"
            );
        }
        for verb in rule.verbs {
            assert!(
                !["deletecollection", "escalate", "bind", "impersonate", "*"].contains(verb),
                "{rule:?}"
            );
        }
        assert!(!rule.resources.contains(&"*"), "{rule:?}");
        if rule.api_group == "coordination.k8s.io" || rule.resources.contains(&"configmaps") {
            assert_eq!(rule.scope, Scope::OperatorNamespace, "{rule:?}");
        }
    }
}
