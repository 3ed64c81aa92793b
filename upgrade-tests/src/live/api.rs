//! The few apiserver calls a live upgrade test makes, with the waits and retries a CRD
//! update needs (the apiserver swaps a CRD's handler asynchronously after an update).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::ByteString;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, WebhookClientConfig,
};
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, ObjectMeta, PostParams};
use serde_json::Value;

use super::compare::user_data;
use crate::control_plane::crd_condition_true;

/// How long a CRD may take to be established and reflected in discovery.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a read is retried while the apiserver settles.
const READ_RETRY: Duration = Duration::from_secs(10);

/// The apiserver's message for a failed call (its `Status.message`, else the error).
pub fn apiserver_message(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

/// The HTTP status code of a failed call, if the apiserver answered.
pub fn status_code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// `crd` as this run installs it: only name, labels and annotations of its metadata, no
/// status, and a webhook conversion pointed at `https://<host>:<port><path>` with `ca_pem`
/// as its CA bundle, as OLM injects its own CA. The path is the one the CRD names (service
/// path or URL path), else `/convert`.
pub fn prepare_crd(
    crd: &CustomResourceDefinition,
    host: &str,
    port: u16,
    ca_pem: &str,
) -> CustomResourceDefinition {
    let mut out = crd.clone();
    out.metadata = ObjectMeta {
        name: crd.metadata.name.clone(),
        labels: crd.metadata.labels.clone(),
        annotations: crd.metadata.annotations.clone(),
        ..Default::default()
    };
    out.status = None;
    if let Some(webhook) = out
        .spec
        .conversion
        .as_mut()
        .filter(|c| c.strategy == "Webhook")
        .and_then(|c| c.webhook.as_mut())
    {
        let path = webhook
            .client_config
            .as_ref()
            .and_then(|cc| {
                cc.service
                    .as_ref()
                    .and_then(|s| s.path.clone())
                    .or_else(|| {
                        cc.url
                            .as_ref()
                            .and_then(|u| u.splitn(4, '/').nth(3).map(|p| format!("/{p}")))
                    })
            })
            .unwrap_or_else(|| "/convert".to_owned());
        webhook.client_config = Some(WebhookClientConfig {
            url: Some(format!("https://{host}:{port}{path}")),
            ca_bundle: Some(ByteString(ca_pem.as_bytes().to_vec())),
            service: None,
        });
    }
    out
}

/// Whether `crd` converts through a webhook.
pub fn has_webhook(crd: &CustomResourceDefinition) -> bool {
    crd.spec
        .conversion
        .as_ref()
        .is_some_and(|c| c.strategy == "Webhook")
}

/// The CRD's name.
pub fn crd_name(crd: &CustomResourceDefinition) -> String {
    crd.metadata.name.clone().unwrap_or_default()
}

/// The versions `crd` serves, in its order.
pub fn served(crd: &CustomResourceDefinition) -> Vec<String> {
    crd.spec
        .versions
        .iter()
        .filter(|v| v.served)
        .map(|v| v.name.clone())
        .collect()
}

/// Reads the CRD `name` as the cluster has it.
pub async fn get_crd(client: &Client, name: &str) -> Result<CustomResourceDefinition, kube::Error> {
    Api::<CustomResourceDefinition>::all(client.clone())
        .get(name)
        .await
}

/// Creates or updates `crd` (an update carries the current `resourceVersion`, as OLM's
/// update does); the apiserver's refusal is the error. Waits until the CRD is established
/// and discovery lists exactly its served versions.
pub async fn apply_crd(client: &Client, crd: &CustomResourceDefinition) -> Result<(), kube::Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd_name(crd);
    match api.get_opt(&name).await? {
        Some(existing) => {
            let mut crd = crd.clone();
            crd.metadata.resource_version = existing.metadata.resource_version;
            api.replace(&name, &PostParams::default(), &crd).await?;
        }
        None => {
            api.create(&PostParams::default(), crd).await?;
        }
    }
    wait_settled(client, crd).await;
    Ok(())
}

/// Waits (bounded) until `crd` is established and discovery matches its served versions;
/// a CRD that never settles shows up as failing reads later, with the apiserver's message.
async fn wait_settled(client: &Client, crd: &CustomResourceDefinition) {
    let started = Instant::now();
    let name = crd_name(crd);
    while started.elapsed() < SETTLE_TIMEOUT {
        if established(client, &name).await && discovery_matches(client, crd).await {
            // The handler swap follows discovery closely, not exactly.
            tokio::time::sleep(Duration::from_millis(300)).await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn established(client: &Client, name: &str) -> bool {
    get_crd(client, name)
        .await
        .is_ok_and(|current| crd_condition_true(&current, "Established"))
}

async fn discovery_matches(client: &Client, crd: &CustomResourceDefinition) -> bool {
    for version in &crd.spec.versions {
        let path = format!("/apis/{}/{}", crd.spec.group, version.name);
        let Ok(request) = http::Request::get(&path).body(Vec::new()) else {
            return false;
        };
        let listed = match client.request::<Value>(request).await {
            Ok(list) => list["resources"].as_array().is_some_and(|resources| {
                resources
                    .iter()
                    .any(|r| r["name"] == crd.spec.names.plural.as_str())
            }),
            Err(_) => false,
        };
        if listed != version.served {
            return false;
        }
    }
    true
}

/// An `Api` for `crd`'s objects at `version` (in `namespace` when the CRD is namespaced).
pub fn objects_api(
    client: &Client,
    crd: &CustomResourceDefinition,
    version: &str,
    namespace: &str,
) -> Api<DynamicObject> {
    let resource = crd_migrate::api_resource(crd, version);
    if crd.spec.scope == "Namespaced" {
        Api::namespaced_with(client.clone(), namespace, &resource)
    } else {
        Api::all_with(client.clone(), &resource)
    }
}

/// Every object of `crd` at `version`, by name, as [`user_data`]; one attempt.
pub async fn list_once(api: &Api<DynamicObject>) -> Result<BTreeMap<String, Value>, kube::Error> {
    let list = api.list(&ListParams::default()).await?;
    Ok(list
        .items
        .into_iter()
        .map(|o| {
            let name = o.metadata.name.clone().unwrap_or_default();
            let value = serde_json::to_value(&o).unwrap_or(Value::Null);
            (name, user_data(&value))
        })
        .collect())
}

/// One object as [`user_data`], read from etcd (a GET without `resourceVersion` bypasses the
/// watch cache, so it always goes through conversion).
pub async fn get_once(api: &Api<DynamicObject>, name: &str) -> Result<Value, kube::Error> {
    let object = api.get(name).await?;
    Ok(user_data(
        &serde_json::to_value(&object).unwrap_or(Value::Null),
    ))
}

/// Every object of `crd` at `version` as [`user_data`], and the etcd revision of the list.
pub async fn list_with_revision(
    api: &Api<DynamicObject>,
) -> Result<(BTreeMap<String, Value>, String), kube::Error> {
    let list = api.list(&ListParams::default()).await?;
    let revision = list.metadata.resource_version.clone().unwrap_or_default();
    let objects = list
        .items
        .into_iter()
        .map(|o| {
            let name = o.metadata.name.clone().unwrap_or_default();
            let value = serde_json::to_value(&o).unwrap_or(Value::Null);
            (name, user_data(&value))
        })
        .collect();
    Ok((objects, revision))
}

/// Every object of `crd` at `version` as [`user_data`], exactly as stored at etcd revision
/// `resource_version` (a consistent snapshot: what a controller wrote later is not in it);
/// retried while the apiserver settles.
pub async fn list_at(
    api: &Api<DynamicObject>,
    resource_version: &str,
) -> Result<BTreeMap<String, Value>, kube::Error> {
    let params = ListParams::default()
        .at(resource_version)
        .matching(kube::api::VersionMatch::Exact);
    let started = Instant::now();
    loop {
        match api.list(&params).await {
            Ok(list) => {
                return Ok(list
                    .items
                    .into_iter()
                    .map(|o| {
                        let name = o.metadata.name.clone().unwrap_or_default();
                        let value = serde_json::to_value(&o).unwrap_or(Value::Null);
                        (name, user_data(&value))
                    })
                    .collect());
            }
            Err(err) if started.elapsed() > READ_RETRY => return Err(err),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// The `resourceVersion` of every object of `crd` at `version`, by name; `None` when the
/// list fails.
pub async fn resource_versions(api: &Api<DynamicObject>) -> Option<BTreeMap<String, String>> {
    let list = api.list(&ListParams::default()).await.ok()?;
    Some(
        list.items
            .into_iter()
            .map(|o| {
                (
                    o.metadata.name.unwrap_or_default(),
                    o.metadata.resource_version.unwrap_or_default(),
                )
            })
            .collect(),
    )
}

/// [`list_once`], retried while the apiserver settles; the last error when it never works.
pub async fn list(api: &Api<DynamicObject>) -> Result<BTreeMap<String, Value>, kube::Error> {
    let started = Instant::now();
    loop {
        match list_once(api).await {
            Ok(objects) => return Ok(objects),
            Err(err) if started.elapsed() > READ_RETRY => return Err(err),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Deletes the CRD `name` (and so every object of it); errors are ignored (cleanup).
pub async fn delete_crd(client: &Client, name: &str) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let _ = api.delete(name, &Default::default()).await;
    let started = Instant::now();
    while started.elapsed() < SETTLE_TIMEOUT {
        if matches!(api.get_opt(name).await, Ok(None)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
