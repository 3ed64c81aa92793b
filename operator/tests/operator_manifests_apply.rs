//! Every release's rendered manifests are valid Kubernetes objects: the real apiserver
//! accepts each document (server-side dry run, so admission and schema validation run).

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use olmpack_envtest::control_plane::TestEnv;
use webapp_operator::manifests::{self, DEFAULT_NAMESPACE};
use webapp_operator::releases::RELEASES;

#[tokio::test]
async fn operator_manifests_apply_to_apiserver() {
    let env = TestEnv::start().await.expect("test environment starts");
    let client = env.client();
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": DEFAULT_NAMESPACE}}))
            .unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    for release in RELEASES {
        let yaml = manifests::to_yaml(release, DEFAULT_NAMESPACE).unwrap();
        let docs: Vec<DynamicObject> = serde_saphyr::from_multiple(&yaml).unwrap();
        for doc in docs {
            let types = doc.types.clone().unwrap();
            let gvk = GroupVersionKind::try_from(&types).unwrap();
            let plural = match gvk.kind.as_str() {
                "CustomResourceDefinition" => "customresourcedefinitions",
                "ServiceAccount" => "serviceaccounts",
                "ClusterRole" => "clusterroles",
                "ClusterRoleBinding" => "clusterrolebindings",
                "Role" => "roles",
                "RoleBinding" => "rolebindings",
                "Service" => "services",
                "Deployment" => "deployments",
                "ValidatingWebhookConfiguration" => "validatingwebhookconfigurations",
                "MutatingWebhookConfiguration" => "mutatingwebhookconfigurations",
                other => panic!("unexpected kind {other}"),
            };
            let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
            let api: Api<DynamicObject> = match &doc.metadata.namespace {
                Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
                None => Api::all_with(client.clone(), &resource),
            };
            if let Err(err) = api.create(&dry_run, &doc).await {
                panic!(
                    "release {}: the apiserver rejects {} {:?}: {err}",
                    release.version, gvk.kind, doc.metadata.name
                );
            }
        }
    }
}
