//! What both OLMs' uninstalls share: letting the objects of an operator's CRD go before the
//! CRD is deleted (OLM v0's [`super::v0::OlmEnv::reset`], OLM v1's uninstall of a
//! ClusterExtension), when no operator runs to finalize them and no process serves their
//! conversion webhook.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

use super::OlmError;
use crate::live::api::status_code;

/// Lets the objects of CRD `name` go: no conversion webhook (nothing serves it any more) and
/// no finalizers (no operator runs to remove them).
pub(crate) async fn release_objects(client: &Client, name: &str) -> Result<(), OlmError> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let Some(crd) = crds.get_opt(name).await.map_err(OlmError::api(format!(
        "read CustomResourceDefinition {name}"
    )))?
    else {
        return Ok(());
    };
    let webhook = crd
        .spec
        .conversion
        .as_ref()
        .is_some_and(|c| c.strategy == "Webhook");
    if webhook {
        let none = json!({"spec": {"conversion": {"strategy": "None", "webhook": null}}});
        crds.patch(name, &PatchParams::default(), &Patch::Merge(&none))
            .await
            .map_err(OlmError::api(format!(
                "drop the conversion webhook of CustomResourceDefinition {name}"
            )))?;
    }
    let Some(version) = crd.spec.versions.iter().find(|v| v.storage) else {
        return Ok(());
    };
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&crd.spec.group, &version.name, &crd.spec.names.kind),
        &crd.spec.names.plural,
    );
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let list = api
        .list_metadata(&ListParams::default())
        .await
        .map_err(OlmError::api(format!("list the objects of {name}")))?;
    for object in list.items {
        if object
            .metadata
            .finalizers
            .as_ref()
            .is_none_or(Vec::is_empty)
        {
            continue;
        }
        let (Some(obj), ns) = (object.metadata.name, object.metadata.namespace) else {
            continue;
        };
        let scoped: Api<DynamicObject> = match &ns {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        let patch = json!({"metadata": {"finalizers": null}});
        match scoped
            .patch(&obj, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Err(source) if status_code(&source) != Some(404) => {
                return Err(OlmError::Api {
                    action: format!("remove the finalizers of {} {obj}", crd.spec.names.kind),
                    source,
                });
            }
            _ => {}
        }
    }
    Ok(())
}
