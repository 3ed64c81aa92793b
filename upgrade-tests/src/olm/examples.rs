//! The `alm-examples` objects of an installed bundle, as both OLMs' environments create and
//! read them back: created as a user would (`kubectl create -n NS`), read back after an
//! upgrade at the apiVersion they were written at, or at a version still served.

use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{self, Scope};
use serde::Serialize;
use serde_json::json;

use crate::live::api::apiserver_message;

/// How long a create or read of an example is retried while a webhook it goes through is
/// not yet trusted or not reachable, as happens on a real cluster as here right after an
/// install or upgrade: OLM rotates the serving certificate and the CRD's `caBundle`
/// together, and for a moment the apiserver's view of one lags the other (`x509: ...`); and
/// whenever OLM installs a CSV again it deletes the webhook's Service and creates it anew,
/// so for a moment the Service or its endpoints are missing ([`webhook_unreachable`]). A
/// user's `kubectl create` retried would succeed; longer is a real failure, reported with
/// the last error.
pub(crate) const WEBHOOK_SETTLES: Duration = Duration::from_secs(60);

/// The pause between two tries of a call a webhook could not answer.
const WEBHOOK_POLL: Duration = Duration::from_millis(500);

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
/// [`Example`]; a webhook that could not be reached at all is tried again until `settled`
/// (one deadline for a whole batch, [`WEBHOOK_SETTLES`] after it began, so that a webhook
/// that never comes up costs that once), each retry told to `retried` (`action`, `cause`).
/// `Err` only when
/// the object is no Kubernetes object at all, with the example as it would have been named.
pub(crate) async fn create_example(
    client: &kube::Client,
    mut object: serde_json::Value,
    namespace: &str,
    settled: Instant,
    retried: &(dyn Fn(&str, &str) + Sync),
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
    let action = format!("create {} {}", example.kind, example.name);
    example.refused = create_settled(&api, &object, &action, settled, retried).await;
    Ok(example)
}

/// Creates `object`; the apiserver's message when it refused. A refusal because a webhook
/// could not be reached ([`webhook_unreachable`]: nothing was stored) is tried again until
/// `settled`, each retry told to `retried`.
async fn create_settled(
    api: &Api<DynamicObject>,
    object: &DynamicObject,
    action: &str,
    settled: Instant,
    retried: &(dyn Fn(&str, &str) + Sync),
) -> Option<String> {
    loop {
        let e = api.create(&PostParams::default(), object).await.err()?;
        let message = apiserver_message(&e);
        match webhook_unreachable(&message) {
            Some(cause) if matches!(e, kube::Error::Api(_)) && Instant::now() < settled => {
                retried(action, &cause);
                tokio::time::sleep(WEBHOOK_POLL).await;
            }
            _ => return Some(message),
        }
    }
}

/// Why a call refused with `message` is worth repeating, when the apiserver could not reach
/// a webhook (conversion or admission) at all: its Service missing (`service "…" not
/// found`), without endpoints, or refusing the connection. OLM deletes a webhook's Service
/// and creates it anew whenever it installs a CSV again (after an upgrade, or when it finds
/// a component unhealthy), and the webhook's pod may be restarting; neither is an answer of
/// the webhook.
pub(crate) fn webhook_unreachable(message: &str) -> Option<String> {
    let which = if message.contains("conversion webhook for") {
        "conversion"
    } else if message.contains("failed calling webhook") {
        "admission"
    } else {
        return None;
    };
    let missing = message.contains("service \"") && message.contains("\" not found");
    let causes = [
        (missing, "Service was missing"),
        (
            message.contains("no endpoints available for service"),
            "Service had no endpoints",
        ),
        (
            message.contains("connect: connection refused"),
            "process refused the connection",
        ),
    ];
    causes
        .iter()
        .find(|(seen, _)| *seen)
        .map(|(_, what)| format!("the {which} webhook's {what} for a moment"))
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

    #[test]
    fn a_call_is_repeated_only_while_a_webhook_is_unreachable() {
        let post = "conversion webhook for crew.testproject.org/v2, Kind=FirstMate failed: \
                    Post \"https://op-service.op-system.svc:443/convert?timeout=30s\": ";
        let cases = [
            (
                format!("{post}service \"op-service\" not found"),
                Some("the conversion webhook's Service was missing for a moment"),
            ),
            (
                format!("{post}no endpoints available for service \"op-service\""),
                Some("the conversion webhook's Service had no endpoints for a moment"),
            ),
            (
                format!("{post}dial tcp 10.0.0.1:443: connect: connection refused"),
                Some("the conversion webhook's process refused the connection for a moment"),
            ),
            // The webhook answered: its answer is the verdict.
            (
                "conversion webhook for crew.testproject.org/v2, Kind=FirstMate returned \
                 failure status: spec.size: field missing"
                    .to_owned(),
                None,
            ),
            (
                "Internal error occurred: failed calling webhook \"mwebapp.kb.io\": failed to \
                 call webhook: Post \"https://op-service.op-system.svc:443/mutate?timeout=10s\": \
                 service \"op-service\" not found"
                    .to_owned(),
                Some("the admission webhook's Service was missing for a moment"),
            ),
            (
                "admission webhook \"vwebapp.kb.io\" denied the request: spec.replicas: \
                 Invalid value: 0"
                    .to_owned(),
                None,
            ),
            // Not a webhook: a missing Service named in another message is no cause.
            ("services \"op-service\" not found".to_owned(), None),
        ];
        for (message, want) in cases {
            assert_eq!(webhook_unreachable(&message).as_deref(), want, "{message}");
        }
    }
}
