//! Installing and upgrading an operator under OLM v1 as olmpack drives it: a ClusterCatalog
//! serving a catalog image, a ClusterExtension pinned to one version at a time (upgrade
//! constraint policy `CatalogProvided`: OLM v1 moves only along the catalog's edges), and
//! OLM v1's verdict on each step read from its own conditions.
//!
//! A step is installed when the ClusterExtension's conditions are about its current spec
//! (every `observedGeneration` is `metadata.generation`), `Installed=True` and
//! `Progressing=True (Succeeded)`, and `status.install.bundle.version` is the pinned version.
//! It is refused when OLM v1 reports `Progressing` with reason `Retrying` or `Blocked` (a
//! resolution error, the CRD upgrade safety preflight's refusal, an apply error) or
//! `InvalidConfiguration` (a config that does not fit the bundle) and still
//! does [`REFUSAL_HOLDS`] later with the same problems (in whatever order it lists them:
//! [`super::problems`]), in its answer to a fresh attempt: the
//! first time a refusal holds, olmpack asks OLM v1 to try the step once more (see
//! [`ExtensionSpec::attempt`]) and judges its answer to that; else it times out. (Under
//! load OLM v1 answers a step with transient refusals — its catalog cache not filled yet, a
//! Helm install that failed part-way — and retries them with a backoff that soon outlasts
//! any fixed wait: its words then stand unchanged although it would answer otherwise now.)

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{Discovery, verbs};
use olmpack_model::report::error_chain;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Condition, OlmError, OlmV1Env, is_true, problems};
use crate::olm::progress::{Observer, Tracker};
use crate::olm::uninstall::release_objects;

/// The apiVersion of OLM v1's objects.
pub const API_VERSION: &str = "olm.operatorframework.io/v1";
/// The labels operator-controller sets on every object it applies for a ClusterExtension:
/// the owner's kind and name.
pub const OWNER_KIND_LABEL: &str = "olm.operatorframework.io/owner-kind";
/// See [`OWNER_KIND_LABEL`].
pub const OWNER_NAME_LABEL: &str = "olm.operatorframework.io/owner-name";
/// The label catalogd sets on each ClusterCatalog to its name (catalog selectors match it).
pub const CATALOG_NAME_LABEL: &str = "olm.operatorframework.io/metadata.name";
/// Which upgrades OLM v1 allows a ClusterExtension (`upgradeConstraintPolicy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UpgradePolicy {
    /// Only along the catalog's edges (`replaces`, `skips`, `olm.skipRange`): olmpack's runs.
    #[default]
    CatalogProvided,
    /// Any version, a downgrade too (the CRD upgrade safety preflight still runs).
    SelfCertified,
}

impl UpgradePolicy {
    /// The value OLM v1 reads.
    pub fn as_str(self) -> &'static str {
        match self {
            UpgradePolicy::CatalogProvided => "CatalogProvided",
            UpgradePolicy::SelfCertified => "SelfCertified",
        }
    }
}
/// How long a refusal must stand, in the same words, before it is the verdict.
pub const REFUSAL_HOLDS: Duration = Duration::from_secs(3);
/// How many fresh attempts a step gets after a refusal held, before it is the verdict.
const REFUSAL_RETRIES: usize = 1;
/// How often OLM v1's objects are read while waiting.
const POLL: Duration = Duration::from_millis(250);
/// How many times one step deletes what OLM v1's own failed attempt left (see
/// `OlmV1Env::delete_leftovers`) before an "already exists" refusal is the verdict.
const LEFTOVER_CLEANUPS: usize = 20;
/// The API groups (with their version) an "already exists" refusal's objects are looked up in.
const LEFTOVER_GROUPS: [(&str, &str); 5] = [
    ("", "v1"),
    ("apps", "v1"),
    ("rbac.authorization.k8s.io", "v1"),
    ("admissionregistration.k8s.io", "v1"),
    ("apiextensions.k8s.io", "v1"),
];
/// How long one pass at letting a CRD's objects go, or one list or discovery of the uninstall,
/// may take before the uninstall tries again.
const RELEASE_CALL: Duration = Duration::from_secs(5);

/// A ClusterCatalog named `name` serving the catalog image `image`.
pub fn cluster_catalog(name: &str, image: &str) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": "ClusterCatalog",
        "metadata": {"name": name},
        "spec": {"source": {"type": "Image", "image": {"ref": image}}},
    })
}

/// What a ClusterExtension installs: which package, from which catalog, where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtensionSpec {
    /// The ClusterExtension's name.
    pub name: String,
    /// The package installed.
    pub package: String,
    /// The channels resolved from (all of the package's when empty).
    pub channels: Vec<String>,
    /// The namespace the bundle's namespaced objects go to.
    pub namespace: String,
    /// The ServiceAccount named in the spec (operator-controller v1.11 ignores it).
    pub service_account: String,
    /// The ClusterCatalog resolved from (by its name label).
    pub catalog: String,
    /// Which upgrades OLM v1 may make.
    pub policy: UpgradePolicy,
    /// The namespace the operator watches (`config.inline.watchNamespace`: OwnNamespace when
    /// it is [`Self::namespace`], SingleNamespace when another; operator-controller takes it
    /// only with its SingleOwnNamespaceInstallSupport gate); `None`: all namespaces.
    pub watch_namespace: Option<String>,
}

impl ExtensionSpec {
    /// The ClusterExtension pinned to `version`, under [`Self::policy`].
    pub fn pinned(&self, version: &str) -> Value {
        self.attempt(version, 0)
    }

    /// [`Self::pinned`] as attempt `n` of the step: from the second on, the catalog selector
    /// also excludes a catalog name no catalog has (`olmpack-attempt-N`). It selects the same
    /// catalog, but the spec differs, so operator-controller tries the step again at once
    /// and says so in its conditions' `observedGeneration`.
    pub fn attempt(&self, version: &str, n: usize) -> Value {
        let mut selector = json!({"matchLabels": {CATALOG_NAME_LABEL: self.catalog}});
        if n > 0 {
            selector["matchExpressions"] = json!([{
                "key": CATALOG_NAME_LABEL,
                "operator": "NotIn",
                "values": [format!("olmpack-attempt-{n}")],
            }]);
        }
        let mut catalog = json!({
            "packageName": self.package,
            "version": version,
            "upgradeConstraintPolicy": self.policy.as_str(),
            "selector": selector,
        });
        if !self.channels.is_empty() {
            catalog["channels"] = json!(self.channels);
        }
        let mut extension = json!({
            "apiVersion": API_VERSION,
            "kind": "ClusterExtension",
            "metadata": {"name": self.name},
            "spec": {
                "namespace": self.namespace,
                "serviceAccount": {"name": self.service_account},
                "source": {"sourceType": "Catalog", "catalog": catalog},
            },
        });
        if let Some(watched) = &self.watch_namespace {
            extension["spec"]["config"] =
                json!({"configType": "Inline", "inline": {"watchNamespace": watched}});
        }
        extension
    }
}

/// How one pinned step ended, in OLM v1's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepEnd {
    /// OLM v1 installed the bundle `bundle` at the pinned version.
    Installed {
        /// The installed bundle's name (`status.install.bundle.name`).
        bundle: String,
        /// OLM v1's conditions then.
        conditions: Vec<Condition>,
    },
    /// OLM v1 refused the step; `progressing` is its `Progressing` condition.
    Refused {
        /// The `Progressing` condition that says why.
        progressing: Condition,
        /// OLM v1's conditions then.
        conditions: Vec<Condition>,
    },
    /// Neither within the timeout; OLM v1's last conditions.
    TimedOut {
        /// The conditions last read (empty when none was about the current spec).
        conditions: Vec<Condition>,
    },
}

/// The parts of a ClusterExtension's body a step's verdict reads.
#[derive(Debug, Default, Deserialize)]
struct ExtensionBody {
    #[serde(default)]
    metadata: Metadata,
    #[serde(default)]
    status: ExtensionStatus,
}

#[derive(Debug, Default, Deserialize)]
struct Metadata {
    #[serde(default)]
    generation: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
struct ExtensionStatus {
    #[serde(default)]
    conditions: Vec<ObservedCondition>,
    #[serde(default)]
    install: Option<InstallStatus>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ObservedCondition {
    #[serde(default)]
    observed_generation: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
struct InstallStatus {
    #[serde(default)]
    bundle: InstalledBundle,
}

#[derive(Debug, Default, Deserialize)]
struct InstalledBundle {
    #[serde(default)]
    name: String,
    #[serde(default)]
    version: String,
}

impl ExtensionBody {
    fn read(body: &Value) -> Self {
        serde_json::from_value(body.clone()).unwrap_or_default()
    }

    /// Whether every condition is about the current spec.
    fn observed(&self) -> bool {
        let all = &self.status.conditions;
        !all.is_empty()
            && all
                .iter()
                .all(|c| c.observed_generation == self.metadata.generation)
    }

    fn bundle(&self) -> Option<&InstalledBundle> {
        self.status.install.as_ref().map(|i| &i.bundle)
    }
}

/// `Progressing` when it says OLM v1 cannot do the step: reason `Retrying` or `Blocked`, or
/// `InvalidConfiguration` (a terminal error: the ClusterExtension's config does not fit the
/// bundle, e.g. a `watchNamespace` for a bundle that supports AllNamespaces only).
fn refusal(conditions: &[Condition]) -> Option<&Condition> {
    conditions.iter().find(|c| {
        c.type_ == "Progressing"
            && matches!(
                c.reason.as_str(),
                "Retrying" | "Blocked" | "InvalidConfiguration"
            )
            && !c.message.is_empty()
    })
}

/// When a refusal has stood long enough, in the same words, to be the verdict; and every
/// refusal seen in the step, in order.
struct RefusalClock {
    since: Option<(Instant, String)>,
    holds: Duration,
    seen: Vec<String>,
}

impl RefusalClock {
    fn new(holds: Duration) -> Self {
        RefusalClock {
            since: None,
            holds,
            seen: Vec::new(),
        }
    }

    /// Whether `r` has now stood with the same problems ([`problems::canonical`]: in any
    /// order) for as long as it must.
    fn holds(&mut self, r: &Condition) -> bool {
        let words = problems::canonical(&r.message);
        if self.seen.last() != Some(&words) {
            self.seen.push(words.clone());
        }
        match &self.since {
            Some((since, held)) if *held == words => since.elapsed() >= self.holds,
            _ => {
                self.since = Some((Instant::now(), words));
                false
            }
        }
    }

    /// Starts over: no refusal now, or the next is OLM v1's answer to a new attempt.
    fn restart(&mut self) {
        self.since = None;
    }

    fn seen(&self) -> &[String] {
        &self.seen
    }
}

/// What a step waits for, in OLM v1's words.
fn awaited(extension: &str, version: &str) -> String {
    format!(
        "ClusterExtension {extension} to say Installed=True and Progressing=True (Succeeded) with version {version} installed"
    )
}

/// `ClusterExtension NAME: Installed=… (…); Progressing=… (…): MESSAGE`: what OLM v1 says
/// of the step (its `Installed` and `Progressing` conditions), or that it has not answered
/// the current spec yet.
fn summary(extension: &str, said: Option<&[Condition]>) -> String {
    let Some(conditions) = said else {
        return format!("ClusterExtension {extension}: no answer to its current spec yet");
    };
    let shown: Vec<String> = conditions
        .iter()
        .filter(|c| matches!(c.type_.as_str(), "Installed" | "Progressing"))
        .map(|c| match c.message.as_str() {
            "" => format!("{}={} ({})", c.type_, c.status, c.reason),
            _ => c.to_string(),
        })
        .collect();
    match shown.as_slice() {
        [] => format!("ClusterExtension {extension}: no Installed or Progressing condition yet"),
        _ => format!("ClusterExtension {extension}: {}", shown.join("; ")),
    }
}

fn installed_at(conditions: &[Condition], body: &ExtensionBody, version: &str) -> bool {
    is_true(conditions, "Installed")
        && conditions
            .iter()
            .any(|c| c.type_ == "Progressing" && c.status == "True" && c.reason == "Succeeded")
        && body.bundle().is_some_and(|b| b.version == version)
}

impl OlmV1Env {
    /// Applies ClusterCatalog `name` serving `image` and waits until catalogd serves it;
    /// returns its conditions.
    pub async fn serve_catalog(
        &mut self,
        name: &str,
        image: &str,
        timeout: Duration,
    ) -> Result<Vec<Condition>, OlmError> {
        self.apply(&cluster_catalog(name, image)).await?;
        let (conditions, _) = self
            .wait_for("ClusterCatalog", name, timeout, |c, _| {
                is_true(c, "Serving")
            })
            .await?;
        Ok(conditions)
    }

    /// Creates `namespace` (it may exist already).
    pub async fn ensure_namespace(&self, namespace: &str) -> Result<(), OlmError> {
        let namespaces: Api<Namespace> = Api::all(self.client());
        let object: Namespace =
            serde_json::from_value(json!({"metadata": {"name": namespace}})).unwrap_or_default();
        create_if_absent(
            namespaces.create(&PostParams::default(), &object).await,
            || format!("create Namespace {namespace}"),
        )
    }

    /// Creates `namespace` and ServiceAccount `account` in it (both may exist already).
    pub async fn prepare_namespace(&self, namespace: &str, account: &str) -> Result<(), OlmError> {
        self.ensure_namespace(namespace).await?;
        let accounts: Api<ServiceAccount> = Api::namespaced(self.client(), namespace);
        let object: ServiceAccount =
            serde_json::from_value(json!({"metadata": {"name": account}})).unwrap_or_default();
        create_if_absent(
            accounts.create(&PostParams::default(), &object).await,
            || format!("create ServiceAccount {namespace}/{account}"),
        )
    }

    /// Pins `spec` to `version`, applies it and waits for OLM v1's verdict (module docs).
    pub async fn install_version(
        &mut self,
        spec: &ExtensionSpec,
        version: &str,
        timeout: Duration,
    ) -> Result<StepEnd, OlmError> {
        self.install_version_observed(spec, version, timeout, &Observer::silent())
            .await
    }

    /// [`Self::install_version`], telling `observer` what OLM v1 says whenever it changes and
    /// what is awaited when it has not for [`crate::olm::progress::HEARTBEAT`].
    pub async fn install_version_observed(
        &mut self,
        spec: &ExtensionSpec,
        version: &str,
        timeout: Duration,
        observer: &Observer,
    ) -> Result<StepEnd, OlmError> {
        let mut attempt = 0;
        self.apply(&spec.attempt(version, attempt)).await?;
        let started = Instant::now();
        let mut tracker = Tracker::new(observer, started);
        let awaited = awaited(&spec.name, version);
        let mut clock = RefusalClock::new(REFUSAL_HOLDS);
        let (mut last, mut cleanups, mut retries) = (Vec::new(), 0, 0);
        while started.elapsed() < timeout {
            self.check_running()?;
            // Until OLM v1 answers the current attempt, its conditions are about another.
            let answer = self.answer(&spec.name).await?;
            let said = answer.as_ref().map(|(c, _)| c.as_slice());
            tracker.saw(summary(&spec.name, said), &awaited, Instant::now());
            if let Some((conditions, typed)) = answer {
                if installed_at(&conditions, &typed, version) {
                    let bundle = typed.bundle().map(|b| b.name.clone()).unwrap_or_default();
                    // A process that cannot run is a crash loop now, not after the case.
                    let settling = timeout.saturating_sub(started.elapsed());
                    if let Some(host) = self.webhooks() {
                        let settling = settling.min(crate::olm::webhooks::SETTLE_TIMEOUT);
                        host.wait_settled(&self.client(), &spec.namespace, settling)
                            .await;
                    }
                    return Ok(StepEnd::Installed { bundle, conditions });
                }
                match refusal(&conditions).cloned() {
                    None => clock.restart(),
                    Some(r) => {
                        let again = if cleanups < LEFTOVER_CLEANUPS
                            && self
                                .delete_leftovers(spec, &r.message, clock.seen())
                                .await?
                        {
                            cleanups += 1;
                            true
                        } else if !clock.holds(&r) {
                            false
                        } else if retries == REFUSAL_RETRIES {
                            return Ok(StepEnd::Refused {
                                progressing: r,
                                conditions,
                            });
                        } else {
                            retries += 1;
                            true
                        };
                        // OLM v1's answer to a fresh attempt is the one judged.
                        if again {
                            attempt += 1;
                            self.apply(&spec.attempt(version, attempt)).await?;
                            clock.restart();
                        }
                    }
                }
                last = conditions;
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(StepEnd::TimedOut { conditions: last })
    }

    /// ClusterExtension `name`'s conditions and body when they answer its current spec (every
    /// condition's `observedGeneration` is its generation); `None` until then or while it does
    /// not exist. Each message lists its problems in one order ([`problems::canonical`]),
    /// whichever operator-controller printed.
    async fn answer(
        &self,
        name: &str,
    ) -> Result<Option<(Vec<Condition>, ExtensionBody)>, OlmError> {
        let read = self.read("ClusterExtension", name).await?;
        Ok(read
            .map(|(mut conditions, body)| {
                for c in &mut conditions {
                    c.message = problems::canonical(&c.message);
                }
                (conditions, ExtensionBody::read(&body))
            })
            .filter(|(_, typed)| typed.observed()))
    }

    /// Deletes the objects an "already exists" refusal of `spec`'s ClusterExtension names that
    /// operator-controller itself labelled as that ClusterExtension's; whether it deleted any
    /// (said in [`Self::take_notes`], with the first other refusal of the step, `before`). On
    /// a loaded machine an install attempt of OLM v1's can fail part-way and leave what it
    /// created outside any Helm release; a retry is then refused with "already exists" for
    /// objects it made itself. Objects of anyone else are never touched: their "already
    /// exists" is the verdict.
    async fn delete_leftovers(
        &mut self,
        spec: &ExtensionSpec,
        message: &str,
        before: &[String],
    ) -> Result<bool, OlmError> {
        let (name, namespace) = (spec.name.as_str(), spec.namespace.as_str());
        let mut deleted = Vec::new();
        // Looked up directly (no discovery, which a loaded apiserver answers slowly): the
        // words name the resource, not its group, so the groups a bundle's objects are in.
        for (plural, object) in already_existing(message) {
            for (group, version) in LEFTOVER_GROUPS {
                let gvk = GroupVersionKind::gvk(group, version, "");
                let resource = ApiResource::from_gvk_with_plural(&gvk, &plural);
                let apis: [Api<DynamicObject>; 2] = [
                    Api::namespaced_with(self.client(), namespace, &resource),
                    Api::all_with(self.client(), &resource),
                ];
                for api in apis {
                    let Ok(Some(found)) = api.get_opt(&object).await else {
                        continue;
                    };
                    let labels = found.metadata.labels.unwrap_or_default();
                    if labels.get(OWNER_NAME_LABEL).map(String::as_str) != Some(name) {
                        continue;
                    }
                    delete_if_present(
                        api.delete(&object, &DeleteParams::background()).await,
                        || format!("delete {plural} {object}"),
                    )?;
                    deleted.push(format!("{plural} {object}"));
                }
            }
        }
        if deleted.is_empty() {
            return Ok(false);
        }
        let first = before
            .iter()
            .find(|m| already_existing(m).is_empty())
            .map(|m| format!(" (OLM v1 had said before: {})", m.trim_end()))
            .unwrap_or_default();
        self.notes.push(format!(
            "olmpack deleted what an earlier install attempt of OLM v1's left and OLM v1 then refused as already existing: {}{first}",
            deleted.join(", ")
        ));
        Ok(true)
    }

    /// Uninstalls ClusterExtension `name` without waiting on the garbage collector: deletes it,
    /// then, until it is gone and nothing labelled as its own is left, lets the objects of
    /// `crds` go (their conversion webhooks dropped and finalizers removed, as OLM v0's reset
    /// does: the operator's process goes with its Deployment, and a CRD is not deleted while it
    /// holds objects it cannot convert or finalize) and deletes every object operator-controller
    /// labelled as the ClusterExtension's (its release's objects, CRDs included), then any CRD
    /// of `crds` still there. The garbage collector would delete them too, but on a loaded
    /// machine it took minutes to finish a foreground deletion; OLM v1's record of the release
    /// (Helm release Secrets in [`super::SYSTEM_NAMESPACE`], owned by the ClusterExtension) is
    /// left to it, which is why each case installs under a ClusterExtension name of its own.
    pub async fn uninstall(
        &mut self,
        name: &str,
        crds: &[String],
        timeout: Duration,
    ) -> Result<(), OlmError> {
        let gvk = GroupVersionKind::gvk("olm.operatorframework.io", "v1", "ClusterExtension");
        let extensions: Api<DynamicObject> =
            Api::all_with(self.client(), &ApiResource::from_gvk(&gvk));
        delete_if_present(
            extensions.delete(name, &DeleteParams::background()).await,
            || format!("delete ClusterExtension {name}"),
        )?;
        let started = Instant::now();
        loop {
            // Retried while refused or slow: the garbage collector may delete a webhook's
            // Service before its webhook configuration, which then fails every call for a
            // moment; operator-controller may put a CRD's conversion back once more; and
            // listing a CRD's objects waits while the apiserver cannot convert them.
            let mut held = self.release(crds).await;
            let (left, unlisted) = self.owned_objects(name).await?;
            held.extend(unlisted);
            let extension = self.read("ClusterExtension", name).await?.is_some();
            if !extension && left.is_empty() && held.is_empty() {
                break;
            }
            if started.elapsed() > timeout {
                let mut last: Vec<String> = left.iter().map(|o| o.what.clone()).collect();
                last.extend(extension.then(|| format!("ClusterExtension {name}")));
                last.extend(held);
                return Err(OlmError::Stalled {
                    what: format!("ClusterExtension {name} and its objects to be deleted"),
                    waited: timeout,
                    last: last.join("; "),
                    logs: self.log_tails(),
                });
            }
            for Owned {
                what, name, api, ..
            } in left
            {
                delete_if_present(api.delete(&name, &DeleteParams::background()).await, || {
                    format!("delete {what}")
                })?;
            }
            tokio::time::sleep(POLL).await;
        }
        self.delete_crds(crds, timeout).await
    }

    /// Lets the objects of each CRD of `crds` go ([`release_objects`]); what held one back.
    async fn release(&self, crds: &[String]) -> Vec<String> {
        let mut held = Vec::new();
        for crd in crds {
            let client = self.client();
            let released = tokio::time::timeout(RELEASE_CALL, release_objects(&client, crd));
            match released.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => held.push(error_chain(&e)),
                Err(_) => held.push(format!(
                    "letting the objects of CustomResourceDefinition {crd} go took over {RELEASE_CALL:?}"
                )),
            }
        }
        held
    }

    /// Deletes each CRD of `crds` still there and waits until it is gone.
    async fn delete_crds(&mut self, crds: &[String], timeout: Duration) -> Result<(), OlmError> {
        let all: Api<CustomResourceDefinition> = Api::all(self.client());
        for crd in crds {
            delete_if_present(all.delete(crd, &DeleteParams::default()).await, || {
                format!("delete CustomResourceDefinition {crd}")
            })?;
            let all = all.clone();
            self.wait_gone("CustomResourceDefinition", crd, timeout, async move |_| {
                all.get_opt(crd)
                    .await
                    .map(|c| c.is_some())
                    .map_err(|source| OlmError::Api {
                        action: format!("read CustomResourceDefinition {crd}"),
                        source,
                    })
            })
            .await?;
        }
        Ok(())
    }

    /// The objects labelled as ClusterExtension `name`'s, and what could not be listed now (a
    /// CRD whose objects cannot be converted, the kinds themselves while a group goes), said. A kind that went away while
    /// it was listed (a CRD just deleted) holds none.
    async fn owned_objects(&self, name: &str) -> Result<(Vec<Owned>, Vec<String>), OlmError> {
        let api_error = |action: String| move |source| OlmError::Api { action, source };
        // A group whose last CRD was just deleted answers 404 while discovery walks the
        // groups: nothing is known this time, and the caller looks again.
        let discovered = tokio::time::timeout(RELEASE_CALL, Discovery::new(self.client()).run());
        let discovery = match discovered.await {
            Ok(Ok(discovery)) => discovery,
            Ok(Err(source)) => {
                let error = api_error("discover the kinds the apiserver serves".to_owned())(source);
                return Ok((Vec::new(), vec![error_chain(&error)]));
            }
            Err(_) => {
                let slow = format!("discovering the served kinds took over {RELEASE_CALL:?}");
                return Ok((Vec::new(), vec![slow]));
            }
        };
        let selector = format!("{OWNER_KIND_LABEL}=ClusterExtension,{OWNER_NAME_LABEL}={name}");
        let params = ListParams::default().labels(&selector);
        let (mut owned, mut unlisted) = (Vec::new(), Vec::new());
        for (resource, capabilities) in discovery.groups().flat_map(|g| g.recommended_resources()) {
            if !capabilities.supports_operation(verbs::LIST)
                || !capabilities.supports_operation(verbs::DELETE)
            {
                continue;
            }
            let all: Api<DynamicObject> = Api::all_with(self.client(), &resource);
            // Bounded: the apiserver holds a list while it cannot convert a CRD's objects.
            let listed = tokio::time::timeout(RELEASE_CALL, all.list_metadata(&params)).await;
            let list = match listed {
                Ok(Ok(list)) => list,
                Ok(Err(kube::Error::Api(e))) if e.code == 404 => continue,
                Ok(Err(source)) => {
                    let error = api_error(format!("list {} of {name}", resource.plural))(source);
                    unlisted.push(error_chain(&error));
                    continue;
                }
                Err(_) => {
                    unlisted.push(format!(
                        "listing {} took over {RELEASE_CALL:?}",
                        resource.plural
                    ));
                    continue;
                }
            };
            for object in list {
                let name = object.metadata.name.unwrap_or_default();
                let (api, what) = match object.metadata.namespace {
                    Some(ns) => (
                        Api::namespaced_with(self.client(), &ns, &resource),
                        format!("{} {ns}/{name}", resource.kind),
                    ),
                    None => (all.clone(), format!("{} {name}", resource.kind)),
                };
                owned.push(Owned { what, name, api });
            }
        }
        Ok((owned, unlisted))
    }

    async fn wait_gone(
        &mut self,
        kind: &str,
        name: &str,
        timeout: Duration,
        present: impl AsyncFn(&Self) -> Result<bool, OlmError>,
    ) -> Result<(), OlmError> {
        let started = Instant::now();
        while present(self).await? {
            if started.elapsed() > timeout {
                return Err(OlmError::Stalled {
                    what: format!("{kind} {name} to be deleted"),
                    waited: timeout,
                    last: "still present".to_owned(),
                    logs: self.log_tails(),
                });
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(())
    }
}

/// An object operator-controller applied for a ClusterExtension.
struct Owned {
    /// "Kind namespace/name", or "Kind name" when cluster-scoped.
    what: String,
    name: String,
    /// The API that deletes it.
    api: Api<DynamicObject>,
}

/// The `(resource, name)` pairs of an apiserver's "already exists" words in `message`, such
/// as `serviceaccounts "cert-manager" already exists`.
fn already_existing(message: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut parts = message.split(" already exists").peekable();
    while let Some(before) = parts.next() {
        if parts.peek().is_none() {
            break;
        }
        let Some(head) = before.strip_suffix('"') else {
            continue;
        };
        let Some((head, name)) = head.rsplit_once('"') else {
            continue;
        };
        let resource = head
            .trim_end()
            .rsplit([' ', '\t', '\n'])
            .next()
            .unwrap_or("");
        if !resource.is_empty() && !name.is_empty() {
            found.push((resource.to_owned(), name.to_owned()));
        }
    }
    found
}

fn create_if_absent<T>(
    result: Result<T, kube::Error>,
    action: impl FnOnce() -> String,
) -> Result<(), OlmError> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(source) => Err(OlmError::Api {
            action: action(),
            source,
        }),
    }
}

fn delete_if_present<T>(
    result: Result<T, kube::Error>,
    action: impl FnOnce() -> String,
) -> Result<(), OlmError> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(source) => Err(OlmError::Api {
            action: action(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
        }
    }

    #[test]
    fn a_pinned_extension_names_the_version_policy_catalog_and_channels() {
        let spec = ExtensionSpec {
            name: "demo".to_owned(),
            package: "demo-operator".to_owned(),
            channels: vec!["stable".to_owned()],
            namespace: "demo-system".to_owned(),
            service_account: "demo-installer".to_owned(),
            catalog: "olmpack".to_owned(),
            policy: UpgradePolicy::CatalogProvided,
            watch_namespace: None,
        };
        let object = spec.pinned("1.2.3");
        let catalog = &object["spec"]["source"]["catalog"];
        assert_eq!(catalog["version"], "1.2.3");
        assert_eq!(catalog["upgradeConstraintPolicy"], "CatalogProvided");
        assert_eq!(catalog["channels"], json!(["stable"]));
        assert_eq!(
            catalog["selector"]["matchLabels"][CATALOG_NAME_LABEL],
            "olmpack"
        );
        assert_eq!(object["spec"]["namespace"], "demo-system");
        assert_eq!(object["spec"].get("config"), None);
        let own = ExtensionSpec {
            watch_namespace: Some("demo-system".to_owned()),
            ..spec
        };
        assert_eq!(
            own.pinned("1.2.3")["spec"]["config"],
            json!({"configType": "Inline", "inline": {"watchNamespace": "demo-system"}})
        );
    }

    #[test]
    fn only_a_retrying_blocked_or_invalid_configuration_progressing_condition_is_a_refusal() {
        let retrying = condition(
            "Progressing",
            "True",
            "Retrying",
            "validating upgrade for CRD",
        );
        let succeeded = condition("Progressing", "True", "Succeeded", "done");
        assert_eq!(refusal(std::slice::from_ref(&retrying)), Some(&retrying));
        assert_eq!(refusal(&[succeeded]), None);
        // Seen live: an AllNamespaces-only bundle given a watchNamespace.
        let invalid = condition(
            "Progressing",
            "False",
            "InvalidConfiguration",
            "error for resolved bundle \"webapp-operator.v1.0.0\" with version \"1.0.0\": invalid ClusterExtension configuration: invalid configuration: unknown field \"watchNamespace\"",
        );
        assert_eq!(refusal(std::slice::from_ref(&invalid)), Some(&invalid));
    }

    #[test]
    fn a_refusal_is_the_verdict_once_it_holds_in_the_same_words() {
        let exists = condition(
            "Progressing",
            "True",
            "Retrying",
            "serviceaccounts \"a\" already exists",
        );
        let other = condition("Progressing", "True", "Retrying", "no bundles found");
        let mut clock = RefusalClock::new(Duration::ZERO);
        assert!(!clock.holds(&other), "first seen: the clock starts");
        assert!(clock.holds(&other), "same words, held long enough");
        assert!(!clock.holds(&exists), "new words start over");
        assert!(clock.holds(&exists));
        clock.restart();
        assert!(!clock.holds(&exists), "a new attempt starts over");
        assert!(clock.holds(&exists));
        assert_eq!(
            clock.seen(),
            [other.message.clone(), exists.message.clone()]
        );
        let mut slow = RefusalClock::new(Duration::from_secs(3600));
        assert!(!slow.holds(&other));
        assert!(!slow.holds(&other), "not held long enough");
    }

    #[test]
    fn a_refusal_holds_while_olm_v1_lists_the_same_problems_in_another_order() {
        // Seen live: operator-controller prints a preflight refusal's lines in a new order on
        // each reconcile.
        let head = "error for resolved bundle \"op.v1.1.1\" with version \"1.1.1\": validating upgrade for CRD \"a.b.c\": ";
        let (size, replicas) = (
            "v1alpha1: ^.spec.size: maximum: maximum decreased : 10 -> 5",
            "v1: ^.spec.replicas: maximum: maximum decreased : 10 -> 5",
        );
        let one = condition(
            "Progressing",
            "True",
            "Retrying",
            &format!("{head}{size}\n{replicas}"),
        );
        let other = condition(
            "Progressing",
            "True",
            "Retrying",
            &format!("{head}{replicas}\n{size}"),
        );
        let mut clock = RefusalClock::new(Duration::ZERO);
        assert!(!clock.holds(&one));
        assert!(
            clock.holds(&other),
            "the same problems in another order hold"
        );
        assert!(clock.holds(&one));
        assert_eq!(clock.seen(), [format!("{head}{replicas}\n{size}")]);
        let fewer = condition("Progressing", "True", "Retrying", &format!("{head}{size}"));
        assert!(!clock.holds(&fewer), "one problem fewer starts over");
    }

    #[test]
    fn progress_names_the_conditions_awaited_and_what_olm_v1_said() {
        let refused = condition("Progressing", "True", "Retrying", "no bundles found");
        let installed = condition("Installed", "False", "Failed", "");
        let deprecated = condition("Deprecated", "False", "Deprecated", "");
        let cases = [
            (
                None,
                "ClusterExtension ce: no answer to its current spec yet",
            ),
            (
                Some(vec![deprecated.clone()]),
                "ClusterExtension ce: no Installed or Progressing condition yet",
            ),
            (
                Some(vec![installed, deprecated, refused]),
                "ClusterExtension ce: Installed=False (Failed); Progressing=True (Retrying): no bundles found",
            ),
        ];
        for (said, want) in cases {
            assert_eq!(summary("ce", said.as_deref()), want);
        }
        assert_eq!(
            awaited("ce", "1.2.3"),
            "ClusterExtension ce to say Installed=True and Progressing=True (Succeeded) with version 1.2.3 installed"
        );
    }

    #[test]
    fn a_further_attempt_selects_the_same_catalog_with_another_spec() {
        let spec = ExtensionSpec {
            name: "ce".into(),
            package: "op".into(),
            channels: Vec::new(),
            namespace: "ns".into(),
            service_account: "sa".into(),
            catalog: "olmpack".into(),
            policy: UpgradePolicy::CatalogProvided,
            watch_namespace: None,
        };
        let first = spec.attempt("1.0.0", 0);
        assert_eq!(first, spec.pinned("1.0.0"));
        let selector = |v: &Value| v["spec"]["source"]["catalog"]["selector"].clone();
        assert_eq!(
            selector(&first),
            json!({"matchLabels": {CATALOG_NAME_LABEL: "olmpack"}})
        );
        let second = spec.attempt("1.0.0", 2);
        assert_eq!(
            selector(&second),
            json!({
                "matchLabels": {CATALOG_NAME_LABEL: "olmpack"},
                "matchExpressions": [{"key": CATALOG_NAME_LABEL, "operator": "NotIn", "values": ["olmpack-attempt-2"]}],
            })
        );
        assert_ne!(second, spec.attempt("1.0.0", 1));
    }

    #[test]
    fn already_existing_objects_are_read_from_the_apiservers_words() {
        // Seen live (CI, a loaded machine): cert-manager v1.4.0's install under OLM v1.
        let message = "error for resolved bundle \"cert-manager.v1.4.0\" with version \"1.4.0\": 3 errors occurred:\n\t* serviceaccounts \"cert-manager-cainjector\" already exists\n\t* serviceaccounts \"cert-manager\" already exists\n\n";
        assert_eq!(
            already_existing(message),
            [
                (
                    "serviceaccounts".to_owned(),
                    "cert-manager-cainjector".to_owned()
                ),
                ("serviceaccounts".to_owned(), "cert-manager".to_owned()),
            ]
        );
        assert_eq!(already_existing("validating upgrade for CRD \"a\""), []);
        assert_eq!(already_existing("\"x\" already exists"), []);
    }

    #[test]
    fn conditions_of_an_older_generation_are_not_observed() {
        let body = ExtensionBody::read(&json!({
            "metadata": {"generation": 2},
            "status": {"conditions": [{"observedGeneration": 1}, {"observedGeneration": 2}]},
        }));
        assert!(!body.observed());
        let body = ExtensionBody::read(&json!({
            "metadata": {"generation": 2},
            "status": {"conditions": [{"observedGeneration": 2}]},
        }));
        assert!(body.observed());
    }
}
