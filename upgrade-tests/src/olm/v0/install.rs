//! Installing and upgrading by Subscription (`installPlanApproval: Manual`), one approved
//! InstallPlan at a time, and what OLM reported for each step.

use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::Scope;
use olmpack_model::csv::examples;
use serde_json::json;

use super::env::Catalog;
use super::operator_group;
use super::resources::{self, Csv, InstallPlan, Subscription};
use super::{OlmEnv, OlmError};
use crate::live::api::apiserver_message;
use crate::olm::examples::{
    Example, WEBHOOK_SETTLES, create_example, read_back_resource, webhook_unreachable,
};
use crate::olm::progress::{Observer, Tracker};
use crate::olm::step::{InstallStep, Installed, Outcome, StillSucceeded, Timeouts};
use crate::olm::webhooks;

pub(super) const POLL: Duration = Duration::from_millis(250);

/// `Subscription NAME: STATE (InstallPlan P)`, with the conditions that hold (a resolution
/// failure, an unhealthy catalog), for the observer of a step.
fn subscription_summary(sub: &Subscription) -> String {
    let name = sub.metadata.name.as_deref().unwrap_or_default();
    let status = sub.status.clone().unwrap_or_default();
    let mut line = match status.state.as_str() {
        "" => format!("Subscription {name}: no state yet"),
        state => format!("Subscription {name}: {state}"),
    };
    if let Some(plan) = &status.install_plan_ref {
        line.push_str(&format!(" (InstallPlan {})", plan.name));
    }
    for c in status.conditions.iter().filter(|c| c.status == "True") {
        let said = [c.type_.as_str(), c.reason.as_str(), c.message.as_str()];
        let said: Vec<&str> = said.into_iter().filter(|s| !s.is_empty()).collect();
        line.push_str(&format!("; {}", said.join(": ")));
    }
    line
}

impl OlmEnv {
    /// Subscribes to `package` in `channel` of `catalog` at `starting_csv`, with manual
    /// InstallPlan approval.
    pub async fn subscribe(
        &self,
        catalog: &Catalog,
        package: &str,
        channel: &str,
        starting_csv: &str,
    ) -> Result<(), OlmError> {
        let api: Api<DynamicObject> = Api::namespaced_with(
            self.client(),
            self.operator_namespace(),
            &resources::subscription(),
        );
        let sub: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": package, "namespace": self.operator_namespace()},
            "spec": {
                "name": package,
                "channel": channel,
                "source": catalog.name,
                "sourceNamespace": catalog.namespace(),
                "installPlanApproval": "Manual",
                "startingCSV": starting_csv,
            },
        }))
        .expect("a static Subscription is valid");
        // Retried like a read: an attempt cut off in transport may have created it, and then
        // the apiserver's "already exists" answers the retry.
        let mut retry = false;
        let (api, sub, params) = (&api, &sub, PostParams::default());
        self.call(format!("create Subscription {package}"), || {
            let after_attempt = std::mem::replace(&mut retry, true);
            let params = &params;
            async move {
                match api.create(params, sub).await {
                    Err(kube::Error::Api(status)) if status.code == 409 && after_attempt => Ok(()),
                    other => other.map(|_| ()),
                }
            }
        })
        .await
    }

    /// Waits for the next InstallPlan of Subscription `package`, approves it, and waits until
    /// its CSV succeeds or fails, OLM refuses the plan, or `timeouts.step` passes.
    pub async fn next_step(
        &self,
        package: &str,
        timeouts: Timeouts,
    ) -> Result<InstallStep, OlmError> {
        self.next_step_observed(package, timeouts, &Observer::silent())
            .await
    }

    /// As [`Self::next_step`], telling `observer` what OLM is doing while the step waits
    /// (see [`crate::olm::progress`]).
    pub async fn next_step_observed(
        &self,
        package: &str,
        timeouts: Timeouts,
        observer: &Observer,
    ) -> Result<InstallStep, OlmError> {
        let started = Instant::now();
        let deadline = started + timeouts.step;
        let mut tracker = Tracker::new(observer, started);
        let plan = self
            .approve_next_plan(package, deadline, &mut tracker)
            .await?;
        let Some((plan, current)) = plan else {
            let outcome = self.not_resolved(package, timeouts.step).await?;
            return Ok(InstallStep {
                csv: None,
                outcome,
                observed: Vec::new(),
                elapsed: started.elapsed(),
            });
        };
        let csv = subscribed_csv(&plan, &current);
        let (outcome, mut observed) = self
            .wait_for_csv(&plan_name(&plan), &csv, deadline, timeouts, &mut tracker)
            .await?;
        if matches!(outcome, Outcome::Succeeded { .. }) {
            // A process that cannot run is a crash loop now, not after the case.
            let settling = deadline.saturating_duration_since(Instant::now());
            let settling = settling.min(webhooks::SETTLE_TIMEOUT);
            self.webhooks()
                .wait_settled(&self.client(), self.operator_namespace(), settling)
                .await;
        }
        for other in plan
            .spec
            .cluster_service_version_names
            .iter()
            .filter(|n| **n != csv)
        {
            observed.push(format!(
                "InstallPlan {} also installs {other} (a dependency OLM resolved)",
                plan_name(&plan)
            ));
        }
        Ok(InstallStep {
            csv: Some(csv),
            outcome,
            observed,
            elapsed: started.elapsed(),
        })
    }

    /// The first unapproved InstallPlan of the Subscription, approved, with the CSV the
    /// Subscription resolved to (`status.currentCSV`); `None` at the deadline.
    async fn approve_next_plan(
        &self,
        package: &str,
        deadline: Instant,
        tracker: &mut Tracker<'_>,
    ) -> Result<Option<(InstallPlan, String)>, OlmError> {
        let subs: Api<Subscription> = Api::namespaced_with(
            self.client(),
            self.operator_namespace(),
            &resources::subscription(),
        );
        let plans: Api<InstallPlan> = Api::namespaced_with(
            self.client(),
            self.operator_namespace(),
            &resources::install_plan(),
        );
        while Instant::now() < deadline {
            let sub = self
                .call(format!("read Subscription {package}"), || subs.get(package))
                .await?;
            let awaited = format!("OLM to make an InstallPlan for Subscription {package}");
            tracker.saw(subscription_summary(&sub), &awaited, Instant::now());
            if let Some(name) = sub
                .status
                .as_ref()
                .and_then(|s| s.install_plan_ref.as_ref())
                .map(|r| r.name.clone())
                && let Some(plan) = self
                    .call(format!("read InstallPlan {name}"), || plans.get_opt(&name))
                    .await?
                && !plan.spec.approved
            {
                self.wait_until_managed(deadline).await?;
                let patch = Patch::Merge(json!({"spec": {"approved": true}}));
                let params = PatchParams::default();
                self.call(format!("approve InstallPlan {name}"), || {
                    plans.patch(&name, &params, &patch)
                })
                .await?;
                let current = sub.status.map(|s| s.current_csv).unwrap_or_default();
                return Ok(Some((plan, current)));
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(None)
    }

    /// Waits until OLM manages the namespaces the operator namespace's OperatorGroup
    /// targets ([`operator_group::managed`]), and returns them as its status lists them
    /// (`[""]`: all namespaces). An InstallPlan approved before then may stay
    /// `RequiresApproval`: OLM's catalog-operator finds no OperatorGroup managing the
    /// namespace and does not look at the plan again.
    pub async fn wait_until_managed(&self, deadline: Instant) -> Result<Vec<String>, OlmError> {
        let ns = self.operator_namespace();
        let groups: Api<DynamicObject> =
            Api::namespaced_with(self.client(), ns, &resources::operator_group());
        let targeted = self.namespaces().targeted(self.install_mode());
        let action = format!("read OperatorGroup {ns}/{}", operator_group::NAME);
        let started = Instant::now();
        loop {
            let group = self
                .call(action.as_str(), || groups.get(operator_group::NAME))
                .await?;
            let status = &group.data["status"];
            if operator_group::managed(status, &targeted) {
                let listed = status["namespaces"].as_array().into_iter().flatten();
                return Ok(listed
                    .filter_map(|n| n.as_str().map(str::to_owned))
                    .collect());
            }
            if Instant::now() >= deadline {
                return Err(OlmError::Timeout {
                    what: format!(
                        "OLM did not take up OperatorGroup {ns}/{}: its status does not list the namespaces it targets ({targeted:?}): {status}",
                        operator_group::NAME
                    ),
                    waited: started.elapsed(),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Why the Subscription has no InstallPlan: OLM's resolution failure, or a timeout.
    async fn not_resolved(&self, package: &str, waited: Duration) -> Result<Outcome, OlmError> {
        let subs: Api<Subscription> = Api::namespaced_with(
            self.client(),
            self.operator_namespace(),
            &resources::subscription(),
        );
        let sub = self
            .call(format!("read Subscription {package}"), || subs.get(package))
            .await?;
        let status = sub.status.unwrap_or_default();
        if let Some(c) = status
            .conditions
            .iter()
            .find(|c| c.type_ == "ResolutionFailed" && c.status == "True")
        {
            return Ok(Outcome::Refused {
                by: format!("Subscription {package}"),
                reason: c.reason.clone(),
                message: c.message.clone(),
            });
        }
        let mut evidence: Vec<String> = status
            .conditions
            .iter()
            .map(|c| format!("{}={} {}: {}", c.type_, c.status, c.reason, c.message))
            .collect();
        evidence.extend(self.catalog_operator_errors());
        Ok(Outcome::TimedOut {
            waiting_for: format!("an InstallPlan for Subscription {package} ({waited:?})"),
            phase: status.state,
            reason: String::new(),
            message: evidence.join("; "),
            pods: Vec::new(),
        })
    }

    /// Creates every object of CSV `csv`'s `alm-examples` as a user of this install would
    /// (`kubectl create -n NS`): namespaced kinds in the install mode's example namespace
    /// (whatever `metadata.namespace` the example sets), cluster-scoped kinds without one.
    /// Each is named `<name>-<version>` so that examples of one object at several versions
    /// do not collide. A refusal is recorded, not returned as an error.
    pub async fn create_examples(&self, csv: &str) -> Result<Vec<Example>, OlmError> {
        let namespace = self.namespaces().for_examples(self.install_mode());
        let mut out = Vec::new();
        let settled = Instant::now() + WEBHOOK_SETTLES;
        let retried = |action: &str, cause: &str| self.retries().note(action, cause);
        for object in self.alm_examples(csv).await? {
            let example = create_example(&self.client(), object, namespace, settled, &retried)
                .await
                .map_err(|(example, e)| OlmError::Invalid {
                    path: format!("ClusterServiceVersion {csv}").into(),
                    message: format!("alm-examples {} {}: {e}", example.kind, example.name),
                })?;
            out.push(example);
        }
        Ok(out)
    }

    /// How many objects CSV `csv`'s `alm-examples` annotation holds.
    pub async fn example_count(&self, csv: &str) -> Result<usize, OlmError> {
        Ok(self.alm_examples(csv).await?.len())
    }

    /// The objects of CSV `csv`'s `alm-examples` annotation (none when it has none).
    async fn alm_examples(&self, csv: &str) -> Result<Vec<serde_json::Value>, OlmError> {
        let found = self.read_csv(csv).await?;
        let text = (found.metadata.annotations.as_ref())
            .and_then(|a| a.get(examples::ALM_EXAMPLES))
            .map(String::as_str);
        examples::read(csv, examples::ALM_EXAMPLES, text).map_err(|e| OlmError::Invalid {
            path: format!("ClusterServiceVersion {csv}").into(),
            message: e.at_field(),
        })
    }

    /// Reads every created example back at the apiVersion it was written at (through
    /// conversion, when it is stored at another one), or at a served version of its kind when
    /// that one is no longer served ([`read_back_resource`]); `Err` per unreadable example.
    pub async fn read_examples(&self, examples: &[Example]) -> Vec<Result<(), String>> {
        let mut out = Vec::new();
        for example in examples.iter().filter(|e| e.refused.is_none()) {
            let started = Instant::now();
            let action = format!("read {} {} back", example.kind, example.name);
            let result = loop {
                match self.read_example(example).await {
                    Err((_, Some(cause))) if started.elapsed() < WEBHOOK_SETTLES => {
                        self.retries().note(&action, &cause);
                        tokio::time::sleep(POLL).await;
                    }
                    result => break result.map_err(|(message, _)| message),
                }
            };
            out.push(result);
        }
        out
    }

    /// Reads one example back (see [`Self::read_examples`]); `Err` with the message and,
    /// when the read is worth repeating, why: the apiserver not yet trusting the
    /// certificate its conversion webhook presents (`x509: ...`: OLM rotates the serving
    /// certificate and the CRD's `caBundle` together), the conversion webhook's Service not
    /// reachable ([`webhook_unreachable`]), or a transport error. Any other answer of the
    /// apiserver (an error the conversion webhook itself returned among them) is the verdict.
    async fn read_example(&self, example: &Example) -> Result<(), (String, Option<String>)> {
        let (resource, scope) =
            read_back_resource(&self.client(), &example.api_version, &example.kind)
                .await
                .map_err(|message| (message, None))?;
        let (api, _) = self.scoped(&resource, scope);
        api.get(&example.name).await.map(|_| ()).map_err(|e| {
            let message = apiserver_message(&e);
            let worth_repeating = match &e {
                kube::Error::Api(_) if message.contains("x509: ") => {
                    super::transient::transient(&e)
                }
                kube::Error::Api(_) => webhook_unreachable(&message),
                _ => super::transient::transient(&e),
            };
            let message = format!(
                "{} {} ({}, created as {}): {message}",
                example.kind, example.declared, resource.api_version, example.name
            );
            (message, worth_repeating)
        })
    }

    fn scoped(
        &self,
        resource: &kube::discovery::ApiResource,
        scope: Scope,
    ) -> (Api<DynamicObject>, Option<&str>) {
        match scope {
            Scope::Namespaced => {
                let ns = self.namespaces().for_examples(self.install_mode());
                (Api::namespaced_with(self.client(), ns, resource), Some(ns))
            }
            Scope::Cluster => (Api::all_with(self.client(), resource), None),
        }
    }

    /// CSV `csv` of the operator namespace.
    async fn read_csv(&self, csv: &str) -> Result<Csv, OlmError> {
        let csvs: Api<Csv> =
            Api::namespaced_with(self.client(), self.operator_namespace(), &resources::csv());
        self.call(format!("read ClusterServiceVersion {csv}"), || {
            csvs.get(csv)
        })
        .await
    }

    /// Whether CSV `csv` declares webhooks (`spec.webhookdefinitions`): any, or with
    /// `conversion_only` only a `ConversionWebhook` (the one reading objects at another
    /// version needs).
    pub async fn has_webhooks(&self, csv: &str, conversion_only: bool) -> Result<bool, OlmError> {
        let found = self.read_csv(csv).await?;
        let spec = webhooks::csv_spec(&found.spec);
        Ok(!webhooks::declared_webhooks(&spec, conversion_only).is_empty())
    }

    /// Whether CSV `csv`, whose step was done, is still `Succeeded`: `Left` with OLM's status
    /// when it is not. What made it leave is read from OLM's record of phases, so it is known
    /// however late it is looked at. An install OLM starts again by itself (see
    /// [`reinstall`]) is followed for up to `timeout`: back in `Succeeded`, it is `Recovered`
    /// with what was seen.
    pub async fn left_succeeded(
        &self,
        csv: &str,
        timeout: Duration,
    ) -> Result<StillSucceeded, OlmError> {
        let started = Instant::now();
        // What began the departure, from the first look that saw one.
        let mut departure: Option<resources::CsvCondition> = None;
        loop {
            let Some(status) = self.csv_status(csv).await? else {
                return Ok(StillSucceeded::Left(format!(
                    "ClusterServiceVersion {csv} was deleted after its step was done"
                )));
            };
            if status.phase == "Succeeded" {
                return Ok(match departure {
                    None => StillSucceeded::Yes,
                    Some(began) => StillSucceeded::Recovered(format!(
                        "{}; OLM installed it again and the CSV was Succeeded again {:.1} s later",
                        left_for(csv, &began),
                        started.elapsed().as_secs_f64()
                    )),
                });
            }
            let began = departure.get_or_insert_with(|| status.departure());
            let left = left_now(csv, began, &status);
            if !reinstall(began) {
                return Ok(StillSucceeded::Left(left));
            }
            if started.elapsed() > timeout {
                return Ok(StillSucceeded::Left(format!(
                    "{left} (still not Succeeded {:.0} s after OLM began installing it again)",
                    started.elapsed().as_secs_f64()
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn csv_status(&self, csv: &str) -> Result<Option<resources::CsvStatus>, OlmError> {
        let csvs: Api<Csv> =
            Api::namespaced_with(self.client(), self.operator_namespace(), &resources::csv());
        let found = self
            .call(format!("read ClusterServiceVersion {csv}"), || {
                csvs.get_opt(csv)
            })
            .await?;
        Ok(found.map(|f| f.status.unwrap_or_default()))
    }

    /// Waits until a webhook process serves every Deployment CSV `csv` wires webhooks to, at
    /// the Deployment's current generation; `Err` says which one is not served.
    pub async fn wait_for_webhooks(&self, csv: &str, timeout: Duration) -> Result<(), String> {
        self.webhooks_available()?;
        let csvs: Api<Csv> =
            Api::namespaced_with(self.client(), self.operator_namespace(), &resources::csv());
        let found = csvs.get(csv).await.map_err(|e| e.to_string())?;
        let deployments = webhooks::webhook_deployments(&webhooks::csv_spec(&found.spec));
        self.webhooks()
            .wait_serving(
                &self.client(),
                self.operator_namespace(),
                &deployments,
                timeout,
            )
            .await
    }

    /// Every InstallPlan of the operator namespace, for failure messages: `name: phase`.
    pub async fn install_plans(&self) -> Vec<String> {
        let plans: Api<InstallPlan> = Api::namespaced_with(
            self.client(),
            self.operator_namespace(),
            &resources::install_plan(),
        );
        plans
            .list(&ListParams::default())
            .await
            .map(|l| {
                l.items
                    .into_iter()
                    .map(|p| {
                        format!(
                            "{} {:?}: {}",
                            plan_name(&p),
                            p.spec.cluster_service_version_names,
                            p.status.map(|s| s.phase).unwrap_or_default()
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The CSV of `plan` the Subscription resolved to (`current`, its `status.currentCSV`): a
/// plan also carries the CSVs of the dependencies OLM installs with it, in no set order.
fn subscribed_csv(plan: &InstallPlan, current: &str) -> String {
    let names = &plan.spec.cluster_service_version_names;
    names
        .iter()
        .find(|n| *n == current)
        .or(names.first())
        .cloned()
        .unwrap_or_default()
}

fn plan_name(plan: &InstallPlan) -> String {
    plan.metadata.name.clone().unwrap_or_default()
}

impl OlmEnv {
    /// What is installed now (see [`Installed`]).
    pub async fn installed(&self) -> Result<Installed, OlmError> {
        use k8s_openapi::api::apps::v1::Deployment;
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
        let crds: Api<CustomResourceDefinition> = Api::all(self.client());
        let mut installed = Installed::default();
        let all = ListParams::default();
        for crd in self
            .call("list CustomResourceDefinitions", || crds.list(&all))
            .await?
        {
            if crd.spec.group != "operators.coreos.com" {
                installed.add_crd(&crd);
            }
        }
        let deployments: Api<Deployment> =
            Api::namespaced(self.client(), self.operator_namespace());
        installed.deployments = self
            .call("list Deployments", || deployments.list(&all))
            .await?
            .into_iter()
            .filter_map(|d| d.metadata.name)
            .collect();
        installed.crds.sort();
        installed.deployments.sort();
        Ok(installed)
    }
}

/// Whether OLM left `Succeeded` to install the CSV again by itself:
/// - phase `Pending` with reason `NeedsCertRotation` (the certificate Secret it generated for
///   the CSV's webhooks or API services is missing or due for renewal; after an upgrade it may
///   be gone for a moment) or `NeedsReinstall` (the Deployment it calculates from that
///   certificate cannot be made: "calculated deployment install is bad"); which of the two
///   OLM reports depends on which check sees the missing Secret first;
/// - phase `InstallReady` with reason `ComponentUnhealthy`: its periodic check of an installed
///   CSV found a component not as installed (under load, most often a CRD whose conversion
///   the catalog-operator re-applied a moment before OLM wrote the webhook back: "Webhook
///   install failed: conversionWebhook not ready"), and `InstallReady` is where OLM installs
///   from. A component that stays unhealthy never brings the CSV back to `Succeeded`, so
///   following it only delays that verdict.
///
/// `Failed` is never followed: OLM gave up on the CSV.
fn reinstall(began: &resources::CsvCondition) -> bool {
    matches!(
        (began.phase.as_str(), began.reason.as_str()),
        ("Pending", "NeedsCertRotation" | "NeedsReinstall")
            | ("InstallReady", "ComponentUnhealthy")
    )
}

/// How CSV `csv` left `Succeeded` after its step: the phase it entered, why.
fn left_for(csv: &str, began: &resources::CsvCondition) -> String {
    format!(
        "ClusterServiceVersion {csv} left Succeeded after its step was done: phase {}, reason {}: {}",
        began.phase, began.reason, began.message
    )
}

/// [`left_for`], and where the CSV is now when that is elsewhere.
fn left_now(csv: &str, began: &resources::CsvCondition, now: &resources::CsvStatus) -> String {
    let left = left_for(csv, began);
    if (now.phase.as_str(), now.reason.as_str()) == (began.phase.as_str(), began.reason.as_str()) {
        return left;
    }
    format!(
        "{left}; now phase {}, reason {}: {}",
        now.phase, now.reason, now.message
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_waits_for_the_subscribed_csv_not_a_dependency() {
        let plan: InstallPlan = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
            "metadata": {"name": "install-1"},
            "spec": {"approval": "Manual", "approved": false,
                     "clusterServiceVersionNames": ["poison-pill.v0.1.0", "node-healthcheck-operator.v0.0.2"]},
        }))
        .unwrap();
        assert_eq!(
            subscribed_csv(&plan, "node-healthcheck-operator.v0.0.2"),
            "node-healthcheck-operator.v0.0.2"
        );
        assert_eq!(subscribed_csv(&plan, ""), "poison-pill.v0.1.0");
    }

    #[test]
    fn a_departure_names_what_began_it_and_where_the_csv_is_now() {
        let refresh = resources::CsvCondition {
            phase: "Pending".into(),
            reason: "NeedsCertRotation".into(),
            message: "CSV owns resources that require a cert refresh".into(),
        };
        let mut now = resources::CsvStatus {
            phase: "Installing".into(),
            reason: "InstallSucceeded".into(),
            message: "waiting for install components to report healthy".into(),
            ..Default::default()
        };
        assert_eq!(
            left_now("a.v1", &refresh, &now),
            "ClusterServiceVersion a.v1 left Succeeded after its step was done: phase Pending, \
             reason NeedsCertRotation: CSV owns resources that require a cert refresh; now phase \
             Installing, reason InstallSucceeded: waiting for install components to report healthy"
        );
        now.phase = "Pending".into();
        now.reason = "NeedsCertRotation".into();
        assert_eq!(
            left_now("a.v1", &refresh, &now),
            "ClusterServiceVersion a.v1 left Succeeded after its step was done: phase Pending, \
             reason NeedsCertRotation: CSV owns resources that require a cert refresh"
        );
    }

    #[test]
    fn only_olm_installing_again_by_itself_is_followed() {
        let cases = [
            ("Pending", "NeedsCertRotation", true),
            ("Pending", "NeedsReinstall", true),
            ("Failed", "ComponentUnhealthy", false),
            ("InstallReady", "ComponentUnhealthy", true),
            ("InstallReady", "RequirementsMet", false),
            ("Failed", "RequirementsNotMet", false),
            ("Pending", "RequirementsNotMet", false),
        ];
        for (phase, reason, expected) in cases {
            let began = resources::CsvCondition {
                phase: phase.into(),
                reason: reason.into(),
                message: String::new(),
            };
            assert_eq!(reinstall(&began), expected, "{phase} {reason}");
        }
    }
}
