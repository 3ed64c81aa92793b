//! Reusing an [`OlmEnv`] for another install: [`OlmEnv::reset`] removes what the last one
//! left until the cluster holds the cluster-scoped objects it held when it came up; the next
//! install gets namespaces of its own (`operators-2`, …) with a new OperatorGroup.
//!
//! [`OlmEnv`]: super::OlmEnv
//! [`OlmEnv::reset`]: super::OlmEnv::reset
//!
//! What a case can leave, and what each would do to the next one:
//! - APIServices and webhook configurations pointing at a process that is gone: requests
//!   they guard fail (`failurePolicy: Fail`), and an unavailable APIService stops namespace
//!   deletion. Removed first.
//! - CustomResourceDefinitions: the next operator would find its CRDs (or another's) already
//!   there, and OLM checks existing objects against new CRDs. Their objects lose their
//!   finalizers (no operator runs to remove them) and conversion webhooks are dropped (no
//!   process serves them), then the CRDs are deleted.
//! - OLM's Subscriptions, InstallPlans, CSVs and the OperatorGroup of the last operator
//!   namespace, and every CatalogSource: deleted, and waited for, so that OLM keeps nothing
//!   of them (a CSV it still knew would have OLM make again what the CSV owns).
//! - Namespaces (the operator's, the OperatorGroup's targets, any the operator made): deleted
//!   with everything in them. The namespace controller starts on a namespace only seconds
//!   after its deletion, so the reset does not wait for them to go: the next install has
//!   namespaces of other names.
//! - ClusterRoles, ClusterRoleBindings, PriorityClasses and OLM's `Operator` objects the
//!   install made: deleted, not waited for (OLM itself may be making the next
//!   OperatorGroup's ClusterRoles meanwhile).
//!
//! The reset succeeds only when the checked kinds are back to the names they had at start
//! (namespaces: or being deleted); otherwise it fails and the caller starts a fresh
//! environment.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};

use super::OlmError;
use super::operator_group::{CATALOG_NAMESPACE, Namespaces};
use super::resources;
use crate::live::api::status_code;

/// How long the leftovers of one install may take to go.
const RESET_TIMEOUT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(200);

/// A cluster-scoped kind an install can leave behind.
struct Kind {
    resource: ApiResource,
    /// When a leftover of this kind is gone enough (see the module docs).
    check: Check,
}

/// When a leftover is gone enough for the next install.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Only once it is gone.
    Gone,
    /// Once it is being deleted.
    Deleting,
    /// Deleted, not checked.
    Not,
}

/// The kinds, in the order leftovers are removed.
fn kinds() -> Vec<Kind> {
    use Check::{Deleting, Gone, Not};
    let kind = |group: &str, version: &str, kind: &str, plural: &str, check: Check| Kind {
        resource: ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, version, kind),
            plural,
        ),
        check,
    };
    vec![
        kind(
            "apiregistration.k8s.io",
            "v1",
            "APIService",
            "apiservices",
            Gone,
        ),
        kind(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            Gone,
        ),
        kind(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            Gone,
        ),
        kind(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            Gone,
        ),
        kind("", "v1", "Namespace", "namespaces", Deleting),
        kind(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
            Not,
        ),
        kind(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            Not,
        ),
        kind(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            "priorityclasses",
            Not,
        ),
        kind(resources::GROUP, "v1", "Operator", "operators", Not),
    ]
}

/// The names of each kind's objects when the environment came up (namespaces without the
/// operator namespace and the OperatorGroup's targets, which every reset makes afresh).
#[derive(Debug, Default)]
pub(super) struct Baseline {
    names: BTreeMap<String, BTreeSet<String>>,
}

impl Baseline {
    /// Reads the names of every kind now (but `install`'s namespaces).
    pub(super) async fn take(client: &Client, install: &Namespaces) -> Result<Self, OlmError> {
        let mut names = BTreeMap::new();
        for kind in kinds() {
            let mut now: BTreeSet<String> = list(client, &kind.resource)
                .await?
                .into_iter()
                .map(|(name, _)| name)
                .collect();
            if kind.resource.plural == "namespaces" {
                for ns in install.all() {
                    now.remove(ns);
                }
            }
            names.insert(kind.resource.plural.clone(), now);
        }
        Ok(Self { names })
    }

    /// The objects of `kind` that were not there at start, and whether each is being
    /// deleted.
    async fn extra(&self, client: &Client, kind: &Kind) -> Result<Vec<(String, bool)>, OlmError> {
        let known = self.names.get(&kind.resource.plural);
        let now = list(client, &kind.resource).await?;
        Ok(now
            .into_iter()
            .filter(|(name, _)| known.is_none_or(|k| !k.contains(name)))
            .collect())
    }

    /// `Kind name` of every leftover that is not gone enough.
    async fn leftovers(&self, client: &Client) -> Result<Vec<String>, OlmError> {
        let mut out = Vec::new();
        for kind in kinds().iter().filter(|k| k.check != Check::Not) {
            for (name, deleting) in self.extra(client, kind).await? {
                if !(deleting && kind.check == Check::Deleting) {
                    out.push(format!("{} {name}", kind.resource.kind));
                }
            }
        }
        Ok(out)
    }
}

/// The name of every object of `resource`, and whether it is being deleted.
async fn list(client: &Client, resource: &ApiResource) -> Result<Vec<(String, bool)>, OlmError> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    let list = api
        .list_metadata(&ListParams::default())
        .await
        .map_err(OlmError::api(format!("list {}", resource.plural)))?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|o| Some((o.metadata.name?, o.metadata.deletion_timestamp.is_some())))
        .collect())
}

/// Removes what the install in `operator_namespace` left (see the module docs); `Err` names
/// what is still there.
pub(super) async fn clean(
    client: &Client,
    baseline: &Baseline,
    operator_namespace: &str,
) -> Result<(), OlmError> {
    remove_olm_objects(client, operator_namespace).await?;
    for kind in kinds() {
        let extra = baseline.extra(client, &kind).await?;
        if kind.resource.plural == "customresourcedefinitions" {
            for (name, _) in &extra {
                crate::olm::uninstall::release_objects(client, name).await?;
            }
        }
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &kind.resource);
        for (name, _) in extra.into_iter().filter(|(_, deleting)| !deleting) {
            match api.delete(&name, &DeleteParams::background()).await {
                Err(source) if status_code(&source) != Some(404) => {
                    return Err(OlmError::Api {
                        action: format!("delete {} {name}", kind.resource.kind),
                        source,
                    });
                }
                _ => {}
            }
        }
    }
    until_none("the last install's objects", || baseline.leftovers(client)).await
}

/// Asks `left` until it finds nothing left, for up to [`RESET_TIMEOUT`]; `Err` names what
/// was still there (`what` says whose).
async fn until_none<F, Fut>(what: &str, mut left: F) -> Result<(), OlmError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Vec<String>, OlmError>>,
{
    let started = Instant::now();
    loop {
        let now = left().await?;
        if now.is_empty() {
            return Ok(());
        }
        if started.elapsed() > RESET_TIMEOUT {
            return Err(OlmError::Timeout {
                what: format!("{what} were still there: {}", now.join(", ")),
                waited: RESET_TIMEOUT,
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Deletes the Subscriptions, InstallPlans, CSVs and OperatorGroups of namespace `ns` and
/// every CatalogSource, and waits until the last three kinds are gone.
async fn remove_olm_objects(client: &Client, ns: &str) -> Result<(), OlmError> {
    let namespaced = [
        (ns, resources::subscription()),
        (ns, resources::install_plan()),
        (ns, resources::csv()),
        (ns, resources::operator_group()),
        (CATALOG_NAMESPACE, resources::catalog_source()),
    ];
    for (ns, resource) in &namespaced {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, resource);
        api.delete_collection(&DeleteParams::background(), &ListParams::default())
            .await
            .map_err(OlmError::api(format!(
                "delete the {} of {ns}",
                resource.plural
            )))?;
    }
    until_none("OLM's objects of the last install", || async {
        let mut left = Vec::new();
        for (ns, resource) in &namespaced[2..] {
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, resource);
            let list = api
                .list_metadata(&ListParams::default())
                .await
                .map_err(OlmError::api(format!(
                    "list the {} of {ns}",
                    resource.plural
                )))?;
            left.extend(list.items.into_iter().filter_map(|o| o.metadata.name));
        }
        Ok(left)
    })
    .await
}
