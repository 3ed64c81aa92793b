//! A release's admission webhooks, registered while its process runs, so that objects are
//! stored as a cluster stores them (a defaulting webhook fills in what the schema requires).
//!
//! OLM v0 writes one webhook configuration per CSV `webhookdefinitions` entry of type
//! `MutatingAdmissionWebhook` or `ValidatingAdmissionWebhook`, calling the operator's Service;
//! `upgrade test` writes the same webhooks calling the release's process at the edge's webhook
//! address, with the run's CA, limited to the test's namespace (and cluster-scoped objects).

use std::collections::BTreeMap;

use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

/// One admission webhook of a release, as its CSV declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct AdmissionWebhook {
    /// Mutating (defaulting) or validating.
    pub mutating: bool,
    /// The webhook's name (`generateName`).
    pub name: String,
    /// The path the process serves it on (`webhookPath`, default `/`).
    pub path: String,
    /// The rest of the admissionregistration/v1 webhook as the CSV has it: `rules`,
    /// `failurePolicy`, `sideEffects`, `timeoutSeconds`, `admissionReviewVersions`,
    /// `matchPolicy`, `objectSelector`, `reinvocationPolicy`.
    pub fields: BTreeMap<String, Value>,
}

/// Where the registered webhooks call.
#[derive(Clone, Copy, Debug)]
pub struct Endpoint<'a> {
    pub host: &'a str,
    pub port: u16,
    pub ca_pem: &'a str,
    pub namespace: &'a str,
}

/// The configuration object (`MutatingWebhookConfiguration` or
/// `ValidatingWebhookConfiguration`) of `release`'s webhooks of one kind; none when it has
/// none.
fn configuration(
    release: &str,
    webhooks: &[AdmissionWebhook],
    mutating: bool,
    to: Endpoint<'_>,
) -> Option<Value> {
    let ca = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, to.ca_pem);
    let entries: Vec<Value> = webhooks
        .iter()
        .filter(|w| w.mutating == mutating)
        .map(|w| {
            let mut entry = json!({
                "name": w.name,
                "clientConfig": {"url": format!("https://{}:{}{}", to.host, to.port, w.path), "caBundle": ca},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": to.namespace}},
            });
            for (key, value) in &w.fields {
                entry[key] = value.clone();
            }
            entry
        })
        .collect();
    if entries.is_empty() {
        return None;
    }
    let kind = kind(mutating);
    Some(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": config_name(release, mutating)},
        "webhooks": entries,
    }))
}

fn kind(mutating: bool) -> &'static str {
    if mutating {
        "MutatingWebhookConfiguration"
    } else {
        "ValidatingWebhookConfiguration"
    }
}

fn config_name(release: &str, mutating: bool) -> String {
    let which = if mutating { "mutating" } else { "validating" };
    format!("olmpack-upgrade-test-{which}")
        .chars()
        .chain(std::iter::once('-'))
        .chain(release.chars().map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        }))
        .take(253)
        .collect()
}

fn api(client: &Client, mutating: bool) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "admissionregistration.k8s.io".to_owned(),
        version: "v1".to_owned(),
        api_version: "admissionregistration.k8s.io/v1".to_owned(),
        kind: kind(mutating).to_owned(),
        plural: format!("{}s", kind(mutating).to_lowercase()),
    };
    Api::all_with(client.clone(), &resource)
}

/// Registers `release`'s admission webhooks; returns how many were registered.
pub async fn register(
    client: &Client,
    release: &str,
    webhooks: &[AdmissionWebhook],
    to: Endpoint<'_>,
) -> Result<usize, kube::Error> {
    for mutating in [true, false] {
        let Some(object) = configuration(release, webhooks, mutating, to) else {
            continue;
        };
        let name = config_name(release, mutating);
        api(client, mutating)
            .patch(
                &name,
                &PatchParams::apply("olmpack").force(),
                &Patch::Apply(&object),
            )
            .await?;
    }
    Ok(webhooks.len())
}

/// Removes what [`register`] wrote for `release` (absent objects are fine).
pub async fn unregister(client: &Client, release: &str) {
    for mutating in [true, false] {
        let _ = api(client, mutating)
            .delete(&config_name(release, mutating), &DeleteParams::default())
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mutating_webhook_calls_the_process_with_the_csv_fields() {
        let webhook = AdmissionWebhook {
            mutating: true,
            name: "mcaptain-v1.kb.io".to_owned(),
            path: "/mutate-crew-testproject-org-v1-captain".to_owned(),
            fields: BTreeMap::from([
                ("failurePolicy".to_owned(), json!("Fail")),
                (
                    "rules".to_owned(),
                    json!([{"apiGroups": ["crew.testproject.org"]}]),
                ),
            ]),
        };
        let to = Endpoint {
            host: "127.0.0.1",
            port: 4443,
            ca_pem: "CA",
            namespace: "ns",
        };
        let object = configuration("Project-v4.v0.1.0", &[webhook], true, to).unwrap();
        assert_eq!(
            object,
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": "olmpack-upgrade-test-mutating-project-v4.v0.1.0"},
                "webhooks": [{
                    "name": "mcaptain-v1.kb.io",
                    "clientConfig": {"url": "https://127.0.0.1:4443/mutate-crew-testproject-org-v1-captain", "caBundle": "Q0E="},
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ns"}},
                    "failurePolicy": "Fail",
                    "rules": [{"apiGroups": ["crew.testproject.org"]}],
                }],
            })
        );
        assert_eq!(configuration("r", &[], false, to), None);
    }
}
