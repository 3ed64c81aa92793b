//! What the generator reads, sorted by role: every input object with the file and document it
//! came from ([`Sourced`]), the objects a bundle is built from ([`Inputs`]), and what a
//! ClusterServiceVersion in the input says beyond its install strategy ([`Imported`]).
//!
//! Plain data: [`super::manifests`] fills it, the importers ([`super::operator_sdk`],
//! [`super::helm`], [`super::certmanager`]) transform it, and [`super::csv`] builds from it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;

use olmpack_model::objects::{self, CustomResourceDefinition, Deployment, Identity, Service};
use olmpack_model::plan::CsvMetadata;
use olmpack_model::report::Finding;

/// A Kubernetes object with the file and document it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Sourced {
    /// The input file, as found under the manifests directory.
    pub file: PathBuf,
    /// The object's position among the file's non-empty YAML documents, from 0.
    pub index: usize,
    /// The object as read.
    pub value: Value,
}

impl Sourced {
    /// `kind`, or "" when the object has none.
    pub fn kind(&self) -> &str {
        Identity::of(&self.value).kind
    }

    /// `metadata.name`, or "" when the object has none.
    pub fn name(&self) -> &str {
        Identity::of(&self.value).name
    }

    /// `apiVersion`, or "" when the object has none.
    pub fn api_version(&self) -> &str {
        Identity::of(&self.value).api_version
    }

    /// `Kind/name`.
    pub fn display(&self) -> String {
        format!("{}/{}", self.kind(), self.name())
    }

    /// `file (document N)` when the file holds several documents.
    pub fn location(&self) -> String {
        format!("{} (document {})", self.file.display(), self.index + 1)
    }

    /// A finding located at this object.
    pub fn finding(&self, finding: Finding) -> Finding {
        finding.file(self.location()).object(self.display())
    }

    /// The object read as a Deployment (leniently, see [`objects`]).
    pub fn deployment(&self) -> Deployment {
        objects::view(&self.value)
    }

    /// The object read as a Service (leniently).
    pub fn service(&self) -> Service {
        objects::view(&self.value)
    }

    /// The object read as a CRD in the v1 shape (a v1beta1 CRD converted first; leniently).
    pub fn crd_v1(&self) -> CustomResourceDefinition {
        objects::view(&super::crd_v1beta1::to_v1(&self.value))
    }
}

/// The input objects, by role.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inputs {
    /// CustomResourceDefinitions, shipped in the bundle and owned by the CSV.
    pub crds: Vec<Sourced>,
    /// Deployments, which become the CSV's install strategy.
    pub deployments: Vec<Sourced>,
    /// ServiceAccounts the deployments run as (OLM creates them from the strategy).
    pub service_accounts: Vec<Sourced>,
    /// Roles, folded into the strategy's `permissions` of the accounts bound to them.
    pub roles: Vec<Sourced>,
    /// ClusterRoles, folded into the strategy's `clusterPermissions` of the accounts bound to them.
    pub cluster_roles: Vec<Sourced>,
    /// RoleBindings, which say which account gets which Role.
    pub role_bindings: Vec<Sourced>,
    /// ClusterRoleBindings, which say which account gets which ClusterRole.
    pub cluster_role_bindings: Vec<Sourced>,
    /// Services (a webhook's own Service is not shipped: OLM creates it).
    pub services: Vec<Sourced>,
    /// ValidatingWebhookConfigurations, which become the CSV's webhook definitions.
    pub validating_webhooks: Vec<Sourced>,
    /// MutatingWebhookConfigurations, which become the CSV's webhook definitions.
    pub mutating_webhooks: Vec<Sourced>,
    /// Custom resources of a kind that one of the input CRDs defines: samples.
    pub custom_resources: Vec<Sourced>,
    /// Other supported objects, shipped as they are.
    pub others: Vec<Sourced>,
    /// Warnings about what was dropped.
    pub notes: Vec<Finding>,
    /// operator-sdk's scorecard Configuration, carried to the bundle's tests/scorecard/.
    pub scorecard: Option<Sourced>,
    /// What a ClusterServiceVersion in the input says beyond its install strategy.
    pub imported: Option<Imported>,
}

impl Inputs {
    /// The service accounts whose bindings become the CSV's permissions: the deployments'
    /// (`deployments`), and those an imported CSV grants permissions to.
    pub fn permission_accounts(&self, deployments: &BTreeSet<String>) -> BTreeSet<String> {
        let mut accounts = deployments.clone();
        if let Some(imported) = &self.imported {
            accounts.extend(imported.accounts.iter().cloned());
        }
        accounts
    }
}

/// What a CSV in the input says beyond its install strategy.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Imported {
    /// The CSV's file (document N), for findings.
    pub location: String,
    /// The CSV's `Kind/name`.
    pub object: String,
    /// Metadata in the plan's terms; empty fields are those the CSV does not set.
    pub metadata: CsvMetadata,
    /// The CSV's first icon (its data and media type).
    pub icon: Option<olmpack_model::csv::Icon>,
    /// Service accounts the CSV grants permissions to that no deployment runs as.
    pub accounts: BTreeSet<String>,
    /// `(file, package)` from the bundle's `../metadata/annotations.yaml`, when there is one.
    pub bundle_package: Option<(PathBuf, String)>,
}

impl Imported {
    pub(super) fn finding(&self, finding: Finding) -> Finding {
        finding
            .file(self.location.clone())
            .object(self.object.clone())
    }
}
