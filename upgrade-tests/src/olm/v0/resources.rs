//! Typed views of the OLM v0 objects the environment reads, and their API resources.
//!
//! Only the fields the environment uses are modelled; everything else is ignored when read.

use kube::core::{ApiResource, GroupVersionKind, Object};
use serde::{Deserialize, Serialize};

/// The API group of OLM v0's objects.
pub const GROUP: &str = "operators.coreos.com";

fn resource(version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, version, kind), plural)
}

/// `CatalogSource` (operators.coreos.com/v1alpha1).
pub fn catalog_source() -> ApiResource {
    resource("v1alpha1", "CatalogSource", "catalogsources")
}

/// `Subscription` (operators.coreos.com/v1alpha1).
pub fn subscription() -> ApiResource {
    resource("v1alpha1", "Subscription", "subscriptions")
}

/// `InstallPlan` (operators.coreos.com/v1alpha1).
pub fn install_plan() -> ApiResource {
    resource("v1alpha1", "InstallPlan", "installplans")
}

/// `ClusterServiceVersion` (operators.coreos.com/v1alpha1).
pub fn csv() -> ApiResource {
    resource(
        "v1alpha1",
        "ClusterServiceVersion",
        "clusterserviceversions",
    )
}

/// `OperatorGroup` (operators.coreos.com/v1).
pub fn operator_group() -> ApiResource {
    resource("v1", "OperatorGroup", "operatorgroups")
}

/// `OLMConfig` (operators.coreos.com/v1).
pub fn olm_config() -> ApiResource {
    resource("v1", "OLMConfig", "olmconfigs")
}

/// A condition as OLM writes it on InstallPlans, Subscriptions and CatalogSources.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// A reference by name.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(default)]
pub struct NameRef {
    pub name: String,
}

/// `CatalogSource.status`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CatalogSourceStatus {
    pub connection_state: Option<ConnectionState>,
}

/// `CatalogSource.status.connectionState`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConnectionState {
    pub address: String,
    pub last_observed_state: String,
}

/// `Subscription.status`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionStatus {
    pub state: String,
    #[serde(rename = "currentCSV")]
    pub current_csv: String,
    #[serde(rename = "installedCSV")]
    pub installed_csv: String,
    pub install_plan_ref: Option<NameRef>,
    pub conditions: Vec<Condition>,
}

/// `InstallPlan.spec`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InstallPlanSpec {
    pub approved: bool,
    pub approval: String,
    pub cluster_service_version_names: Vec<String>,
}

/// `InstallPlan.status`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InstallPlanStatus {
    pub phase: String,
    pub message: String,
    pub conditions: Vec<Condition>,
    /// The objects OLM creates for the plan, one step each, with how far it got.
    pub plan: Vec<InstallPlanStep>,
}

/// One entry of `InstallPlan.status.plan`: an object OLM creates for the bundle `resolving`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InstallPlanStep {
    pub resolving: String,
    pub resource: StepResource,
    /// `Unknown`, `NotPresent`, `Present`, `Created` or `WaitingForApi`.
    pub status: String,
}

/// The object of a [`InstallPlanStep`].
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StepResource {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
}

/// `ClusterServiceVersion.status`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsvStatus {
    pub phase: String,
    pub reason: String,
    pub message: String,
    /// What OLM checked before installing: each owned or required API, the ServiceAccounts
    /// and their permissions, with `status` `Present` when met.
    pub requirement_status: Vec<RequirementStatus>,
    /// OLM's record of the phases the CSV entered, oldest first (it keeps the last 20): one
    /// entry whenever the phase or the reason changed.
    pub conditions: Vec<CsvCondition>,
}

/// One entry of `ClusterServiceVersion.status.conditions`: a phase the CSV entered, why.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct CsvCondition {
    pub phase: String,
    pub reason: String,
    pub message: String,
}

impl CsvStatus {
    /// The phase the CSV entered when it last left `Succeeded`, from OLM's record: what began
    /// the way it is now, however many phases it went through since. The current phase when
    /// the record holds no `Succeeded` followed by another phase (never succeeded, or the
    /// record no longer reaches back that far).
    pub fn departure(&self) -> CsvCondition {
        let last_succeeded = self.conditions.iter().rposition(|c| c.phase == "Succeeded");
        match last_succeeded.and_then(|i| self.conditions.get(i + 1)) {
            Some(first) => first.clone(),
            None => CsvCondition {
                phase: self.phase.clone(),
                reason: self.reason.clone(),
                message: self.message.clone(),
            },
        }
    }
}

/// One entry of `ClusterServiceVersion.status.requirementStatus`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RequirementStatus {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
    pub status: String,
    pub message: String,
    /// For a ServiceAccount: the permissions OLM found missing (or present).
    pub dependents: Vec<DependentStatus>,
}

/// A dependent of a [`RequirementStatus`] (a permission of a ServiceAccount).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DependentStatus {
    pub kind: String,
    pub status: String,
    pub message: String,
}

/// A Subscription as read.
pub type Subscription = Object<serde_json::Value, SubscriptionStatus>;
/// An InstallPlan as read.
pub type InstallPlan = Object<InstallPlanSpec, InstallPlanStatus>;
/// A ClusterServiceVersion as read (its spec as the cluster holds it;
/// [`crate::olm::webhooks::csv_spec`] types it).
pub type Csv = Object<serde_json::Value, CsvStatus>;
/// A CatalogSource as read.
pub type CatalogSource = Object<serde_json::Value, CatalogSourceStatus>;

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(phase: &str, reason: &str) -> CsvCondition {
        CsvCondition {
            phase: phase.into(),
            reason: reason.into(),
            message: format!("{phase} {reason}"),
        }
    }

    fn status(history: &[(&str, &str)]) -> CsvStatus {
        let conditions: Vec<CsvCondition> = history.iter().map(|(p, r)| condition(p, r)).collect();
        let now = conditions.last().cloned().unwrap_or_default();
        CsvStatus {
            phase: now.phase,
            reason: now.reason,
            message: now.message,
            conditions,
            ..CsvStatus::default()
        }
    }

    #[test]
    fn departure_is_the_phase_entered_right_after_the_last_succeeded() {
        let installing = ("Installing", "InstallSucceeded");
        let succeeded = ("Succeeded", "InstallSucceeded");
        let refresh = ("Pending", "NeedsCertRotation");
        let ready = ("InstallReady", "RequirementsMet");
        type History<'a> = Vec<(&'a str, &'a str)>;
        let cases: [(&str, History, CsvCondition); 4] = [
            (
                "a refresh seen late, already reinstalling",
                vec![installing, succeeded, refresh, ready, installing],
                condition("Pending", "NeedsCertRotation"),
            ),
            (
                "the second departure counts, not the first",
                vec![
                    succeeded,
                    refresh,
                    succeeded,
                    ("Failed", "ComponentUnhealthy"),
                ],
                condition("Failed", "ComponentUnhealthy"),
            ),
            (
                "never succeeded: the current phase",
                vec![("Pending", "RequirementsNotMet"), ready, installing],
                condition("Installing", "InstallSucceeded"),
            ),
            (
                "no record: the current phase",
                vec![],
                CsvCondition::default(),
            ),
        ];
        for (what, history, expected) in cases {
            assert_eq!(status(&history).departure(), expected, "{what}");
        }
    }
}
