//! Shared by the tests that ask the real kube-apiserver: a server-side dry run of one object,
//! and the objects OLM creates from a bundle.

use std::path::Path;

use olmpack::bundle::load;
use serde_json::{Value, json};

/// What OLM creates from the bundle, as the API server sees it: every plain object, and a
/// Deployment per CSV deployment.
#[allow(dead_code)]
pub fn objects_olm_creates(bundle: &Path) -> Vec<Value> {
    let loaded = load::load_dir(bundle).unwrap();
    let mut out = Vec::new();
    for object in &loaded.objects {
        if object.kind() != "ClusterServiceVersion" {
            out.push(object.value.clone());
            continue;
        }
        for d in object.value["spec"]["install"]["spec"]["deployments"]
            .as_array()
            .unwrap()
        {
            out.push(json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": d["name"]},
                "spec": d["spec"],
            }));
        }
    }
    out
}

/// `POST …?dryRun=All` of one object as written (raw JSON, so what a typed client could not
/// even encode still reaches the server); `Err` holds the server's refusal.
pub async fn apiserver_dry_run(client: &kube::Client, object: &Value) -> Result<(), String> {
    let api_version = object["apiVersion"].as_str().unwrap_or("");
    let kind = object["kind"].as_str().unwrap_or("");
    let plural = format!("{}s", kind.to_lowercase());
    let base = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    let cluster_scoped = matches!(
        kind,
        "CustomResourceDefinition"
            | "ClusterRole"
            | "ClusterRoleBinding"
            | "PriorityClass"
            | "APIService"
            | "FlowSchema"
            | "PriorityLevelConfiguration"
            | "ValidatingWebhookConfiguration"
            | "MutatingWebhookConfiguration"
    );
    let path = if cluster_scoped {
        format!("{base}/{plural}?dryRun=All")
    } else {
        format!("{base}/namespaces/default/{plural}?dryRun=All")
    };
    let request = http::Request::post(path)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(object).unwrap())
        .unwrap();
    client
        .request_text(request)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}
