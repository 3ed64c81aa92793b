//! The install manifests `olmpack release` writes (`install/olm-v0.yaml`, `install/olm-v1.yaml`),
//! checked by a server-side dry run (server-side apply, strict field validation) on a real
//! kube-apiserver that serves the real OLM v0 CRDs (the OLM release `tools.toml` pins) and OLM
//! v1 CRDs (operator-controller at the pinned version). The installer ServiceAccount's RBAC is
//! then exercised as that account: it may do what installing the bundle takes, and no more.

use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams, ValidationDirective};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope};
use olmpack_envtest::{binaries::ToolData, control_plane::TestEnv};
use serde_json::{Value, json};

const MANAGER: &str = "olmpack-test";

/// `olmpack example --out <dir>`: the release of the embedded example, install/ included.
fn example_release(dir: &Path) -> PathBuf {
    let out = dir.join("example");
    let run = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["example", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    out
}

fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    olmpack_model::yaml::from_multi_str(&text)
        .unwrap()
        .into_iter()
        .filter(|d| !d.is_null())
        .collect()
}

async fn install_crds(env: &TestEnv, dir: &Path) -> usize {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for file in &files {
        for doc in documents(file) {
            let crd: CustomResourceDefinition = serde_json::from_value(doc).unwrap();
            env.install_crd(&crd).await.unwrap();
        }
    }
    files.len()
}

/// The API of `object` as the cluster serves it.
fn api_for(discovery: &Discovery, client: kube::Client, object: &Value) -> Api<DynamicObject> {
    let (group, version) = match object["apiVersion"].as_str().unwrap().rsplit_once('/') {
        Some((g, v)) => (g.to_owned(), v.to_owned()),
        None => (
            String::new(),
            object["apiVersion"].as_str().unwrap().to_owned(),
        ),
    };
    let gvk = GroupVersionKind::gvk(&group, &version, object["kind"].as_str().unwrap());
    let (resource, caps) = discovery
        .resolve_gvk(&gvk)
        .unwrap_or_else(|| panic!("the apiserver serves no {gvk:?}"));
    match (caps.scope, object["metadata"]["namespace"].as_str()) {
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client, ns, &resource),
        _ => Api::all_with(client, &resource),
    }
}

/// Server-side apply as a dry run, unknown or duplicate fields refused.
async fn dry_run(
    discovery: &Discovery,
    client: kube::Client,
    object: &Value,
) -> Result<(), String> {
    let api = api_for(discovery, client, object);
    let mut params = PatchParams::apply(MANAGER);
    params.dry_run = true;
    params.field_validation = Some(ValidationDirective::Strict);
    let name = object["metadata"]["name"].as_str().unwrap();
    api.patch(name, &params, &Patch::Apply(object))
        .await
        .map(|_| ())
        .map_err(|err| match err {
            kube::Error::Api(status) => format!("{} (HTTP {})", status.message, status.code),
            other => other.to_string(),
        })
}

async fn apply(discovery: &Discovery, client: kube::Client, object: &Value) {
    let api = api_for(discovery, client, object);
    let name = object["metadata"]["name"].as_str().unwrap();
    api.patch(name, &PatchParams::apply(MANAGER), &Patch::Apply(object))
        .await
        .unwrap_or_else(|err| panic!("applying {name}: {err}"));
}

fn find<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in the install manifests"))
}

#[tokio::test(flavor = "multi_thread")]
async fn release_pipeline_install_manifests_pass_a_server_side_dry_run_against_the_olm_crds() {
    let olm_v0_crds = ToolData::OlmCrds
        .path()
        .expect("OLM v0's CRDs are installed by cargo xtask setup");
    let olm_v1_crds = ToolData::OlmV1Crds
        .path()
        .expect("OLM v1's CRDs are installed by cargo xtask setup");
    let work = tempfile::tempdir().unwrap();
    let out = example_release(work.path());
    let v0 = documents(&out.join("install/olm-v0.yaml"));
    let v1 = documents(&out.join("install/olm-v1.yaml"));
    let kinds = |docs: &[Value]| -> Vec<String> {
        docs.iter()
            .map(|d| d["kind"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        kinds(&v0),
        [
            "Namespace",
            "CatalogSource",
            "OperatorGroup",
            "Subscription"
        ]
    );
    assert_eq!(
        kinds(&v1),
        [
            "Namespace",
            "ClusterCatalog",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "ClusterExtension"
        ]
    );
    // Both name the catalog image the release built, by digest.
    let catalog = olmpack_oci::image::layout::Layout::open(&out.join("images/catalog"))
        .unwrap()
        .find(None)
        .unwrap()
        .digest;
    let pinned = format!("quay.io/olmpack/guestbook-operator-catalog@{catalog}");
    assert_eq!(find(&v0, "CatalogSource")["spec"]["image"], pinned.as_str());
    assert_eq!(
        find(&v1, "ClusterCatalog")["spec"]["source"]["image"]["ref"],
        pinned.as_str()
    );

    let env = TestEnv::start().await.unwrap();
    assert_eq!(install_crds(&env, &olm_v0_crds).await, 8);
    assert_eq!(install_crds(&env, &olm_v1_crds).await, 2);
    let client = env.client();
    let discovery = Discovery::new(client.clone()).run().await.unwrap();

    // The namespace is created for real (namespaced objects can only be checked inside an
    // existing namespace); every other object goes through the dry run.
    apply(&discovery, client.clone(), &v0[0]).await;
    for object in v0.iter().chain(&v1) {
        if let Err(refused) = dry_run(&discovery, client.clone(), object).await {
            panic!(
                "the apiserver refused {}/{}: {refused}",
                object["kind"], object["metadata"]["name"]
            );
        }
    }

    // A broken manifest fails the same dry run, in the apiserver's words.
    let mut extension = find(&v1, "ClusterExtension").clone();
    extension["spec"]["source"]["sourceType"] = json!("Git");
    let refused = dry_run(&discovery, client.clone(), &extension)
        .await
        .unwrap_err();
    assert!(
        refused.contains("spec.source.sourceType: Unsupported value: \"Git\""),
        "{refused}"
    );
    let mut subscription = find(&v0, "Subscription").clone();
    subscription["spec"]
        .as_object_mut()
        .unwrap()
        .remove("sourceNamespace");
    subscription["spec"]["sourcenamespace"] = json!("typo");
    let refused = dry_run(&discovery, client.clone(), &subscription)
        .await
        .unwrap_err();
    assert!(refused.contains("sourcenamespace"), "{refused}");
    let mut catalog_source = find(&v1, "ClusterCatalog").clone();
    catalog_source["spec"]["source"]["image"]["pollIntervalMinutes"] = json!(5);
    let refused = dry_run(&discovery, client.clone(), &catalog_source)
        .await
        .unwrap_err();
    assert!(refused.contains("pollIntervalMinutes"), "{refused}");

    installer_can_install_the_bundle_and_nothing_else(&env, &discovery, &out, &v1).await;
}

/// With the installer RBAC applied, the installer account may create (dry run) every object
/// of the newest bundle, grant the operator's own cluster rules (RBAC escalation prevention
/// lets it grant only what it holds), and is refused another CRD's name.
async fn installer_can_install_the_bundle_and_nothing_else(
    env: &TestEnv,
    discovery: &Discovery,
    out: &Path,
    v1: &[Value],
) {
    let admin = env.client();
    for kind in [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
    ] {
        apply(discovery, admin.clone(), find(v1, kind)).await;
    }
    let account = find(v1, "ServiceAccount");
    let namespace = account["metadata"]["namespace"].as_str().unwrap();
    let installer = env
        .client_as_service_account(namespace, account["metadata"]["name"].as_str().unwrap())
        .unwrap();

    let manifests = out.join("bundle/1.1.1/manifests");
    let crd = &documents(&manifests.join("demo.olmpack.dev_guestbooks.yaml"))[0];
    let csv = &documents(&manifests.join("guestbook-operator.clusterserviceversion.yaml"))[0];
    let strategy = &csv["spec"]["install"]["spec"];
    let mut service = documents(&manifests.join("guestbook-metrics_v1_service.yaml"))[0].clone();
    service["metadata"]["namespace"] = json!(namespace);
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": strategy["deployments"][0]["name"], "namespace": namespace},
        "spec": strategy["deployments"][0]["spec"],
    });
    let cluster_role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "guestbook-operator.v1.1.1-guestbook-controller-0a1b2c"},
        "rules": strategy["clusterPermissions"][0]["rules"],
    });
    for object in [crd, &service, &deployment, &cluster_role] {
        if let Err(refused) = dry_run(discovery, installer.clone(), object).await {
            panic!(
                "the installer may not create {}/{}: {refused}",
                object["kind"], object["metadata"]["name"]
            );
        }
    }
    // Create is not limited by name, but changing another CRD is refused.
    let crds: Api<CustomResourceDefinition> = Api::all(installer.clone());
    let err = crds
        .delete(
            "clustercatalogs.olm.operatorframework.io",
            &Default::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403),
        "{err}"
    );
    // And it holds no rule beyond the operator's: a ClusterRole granting secrets is refused.
    let mut greedy = cluster_role.clone();
    greedy["metadata"]["name"] = json!("greedy");
    greedy["rules"] = json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]);
    let api: Api<DynamicObject> = api_for(discovery, installer, &greedy);
    let err = api
        .create(
            &PostParams {
                dry_run: true,
                field_manager: None,
            },
            &serde_json::from_value(greedy).unwrap(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403 && s.message.contains("attempting to grant RBAC permissions not currently held")),
        "{err}"
    );
}
