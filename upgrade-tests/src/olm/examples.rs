//! The `alm-examples` objects of an installed bundle, as both OLMs' environments create and
//! read them back: created as a user would (`kubectl create -n NS`), read back after an
//! upgrade at the apiVersion they were written at, or at a version still served.

use kube::api::{Api, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{self, Scope};
use serde::Serialize;
use serde_json::json;

use crate::live::api::apiserver_message;

/// An example object created from a CSV's `alm-examples`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Example {
    pub api_version: String,
    pub kind: String,
    /// The name it is created under: the name `alm-examples` gives it, suffixed with the
    /// version (`<name>-<version>`, see [`super::v0::OlmEnv::create_examples`]).
    pub name: String,
    /// The name `alm-examples` gives it.
    pub declared: String,
    /// Why the API server refused it (a webhook's or the schema's message), if it did.
    pub refused: Option<String>,
}

impl Example {
    /// `Kind NAME (API_VERSION, created as NAME-VERSION)`: the example by the name
    /// `alm-examples` gives it, and the name it was created under.
    pub fn label(&self) -> String {
        format!(
            "{} {} ({}, created as {})",
            self.kind, self.declared, self.api_version, self.name
        )
    }
}

/// The API an object written at `api_version` as a `kind` is read back through after an
/// upgrade: that apiVersion while the apiserver serves the kind there, else the most stable
/// other version of the group that serves the kind — never the group's preferred version as
/// such, which belongs to whichever kind of the group gained the newest version. Each
/// version is looked up on its own: right after a CRD changes, discovery may still list a
/// version whose endpoint is already gone, which must not hide the others. `Err` names the
/// kind and the versions asked when none serves it (in the apiserver's words, when it
/// refused the discovery read).
pub async fn read_back_resource(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
) -> Result<(kube::discovery::ApiResource, Scope), String> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let served = |version: &str| {
        let gvk = GroupVersionKind::gvk(group, version, kind);
        async move { discovery::pinned_kind(client, &gvk).await.ok() }
    };
    if let Some((resource, caps)) = served(version).await {
        return Ok((resource, caps.scope));
    }
    let groups = client.list_api_groups().await.map_err(|e| {
        format!(
            "{kind} is no longer served at {api_version}, and the apiserver refused to list its API groups: {}",
            apiserver_message(&e)
        )
    })?;
    let mut others: Vec<String> = groups
        .groups
        .into_iter()
        .filter(|g| g.name == group)
        .flat_map(|g| g.versions.into_iter().map(|v| v.version))
        .filter(|v| v != version)
        .collect();
    others.sort_by_cached_key(|v| std::cmp::Reverse(kube::core::Version::parse(v).priority()));
    for other in others {
        if let Some((resource, caps)) = served(&other).await {
            return Ok((resource, caps.scope));
        }
    }
    Err(format!(
        "{kind} is no longer served at {api_version} nor at any other version of group {group:?}"
    ))
}

/// Creates one `alm-examples` object as a user would (`kubectl create -n NS`): named
/// `<name>-<version>` so that examples of one object at several versions do not collide,
/// a namespaced kind in `namespace` (whatever namespace it names), a cluster-scoped one
/// without. A refusal (the kind not served, the apiserver's no) is recorded in the
/// [`Example`]; `Err` only when the object is no Kubernetes object at all, with the example
/// as it would have been named.
pub(crate) async fn create_example(
    client: &kube::Client,
    mut object: serde_json::Value,
    namespace: &str,
) -> Result<Example, (Example, serde_json::Error)> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default().to_owned();
    let kind = object["kind"].as_str().unwrap_or_default().to_owned();
    let version = api_version.rsplit('/').next().unwrap_or_default();
    let declared = object["metadata"]["name"]
        .as_str()
        .unwrap_or("example")
        .to_owned();
    let name = format!("{declared}-{version}");
    let mut example = Example {
        api_version,
        kind,
        name,
        declared,
        refused: None,
    };
    let (api, namespace) =
        match example_api(client, &example.api_version, &example.kind, namespace).await {
            Ok(found) => found,
            Err(why) => {
                example.refused = Some(why);
                return Ok(example);
            }
        };
    place(&mut object, &example.name, namespace);
    let object: DynamicObject = match serde_json::from_value(object) {
        Ok(object) => object,
        Err(e) => return Err((example, e)),
    };
    example.refused = api
        .create(&PostParams::default(), &object)
        .await
        .err()
        .map(|e| apiserver_message(&e));
    Ok(example)
}

/// The API of an example's kind, and the namespace its objects go to (`None`:
/// cluster-scoped); `Err` when the apiserver does not serve the kind.
async fn example_api<'a>(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    namespace: &'a str,
) -> Result<(Api<DynamicObject>, Option<&'a str>), String> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, caps) = discovery::pinned_kind(client, &gvk).await.map_err(|e| {
        format!(
            "{api_version} {kind} is not served: {}",
            apiserver_message(&e)
        )
    })?;
    Ok(match caps.scope {
        Scope::Namespaced => (
            Api::namespaced_with(client.clone(), namespace, &resource),
            Some(namespace),
        ),
        Scope::Cluster => (Api::all_with(client.clone(), &resource), None),
    })
}

/// Names an example object and puts it where `kubectl create -n NS` would: in `namespace`
/// when its kind is namespaced (whatever namespace it names), in none when cluster-scoped.
fn place(object: &mut serde_json::Value, name: &str, namespace: Option<&str>) {
    let metadata = &mut object["metadata"];
    if !metadata.is_object() {
        *metadata = json!({});
    }
    metadata["name"] = json!(name);
    match namespace {
        Some(ns) => metadata["namespace"] = json!(ns),
        None => {
            if let Some(m) = metadata.as_object_mut() {
                m.remove("namespace");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_go_where_kubectl_create_n_puts_them() {
        let mut namespaced =
            json!({"kind": "A", "metadata": {"name": "a", "namespace": "elsewhere"}});
        place(&mut namespaced, "a-v1", Some("olmpack-target-a"));
        assert_eq!(
            namespaced["metadata"],
            json!({"name": "a-v1", "namespace": "olmpack-target-a"})
        );
        let mut cluster = json!({"kind": "B", "metadata": {"name": "b", "namespace": "x"}});
        place(&mut cluster, "b-v1", None);
        assert_eq!(cluster["metadata"], json!({"name": "b-v1"}));
        let mut bare = json!({"kind": "C"});
        place(&mut bare, "example-v1", Some("default"));
        assert_eq!(
            bare["metadata"],
            json!({"name": "example-v1", "namespace": "default"})
        );
    }
}
