//! What a bundle installs, read once from its manifests: the facts the install manifests and
//! the OLM v1 installer's RBAC are derived from.
//!
//! The CSV is read through a small typed view of the fields that matter here (install
//! strategy, install modes, webhook definitions); unknown fields are ignored, as Go's decoder
//! ignores them.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::PolicyRule;
use serde::Deserialize;

use crate::bundle::load::LoadedBundle;

/// Failure to read a bundle's install facts.
#[derive(Debug, thiserror::Error)]
pub enum FactsError {
    /// The bundle holds no ClusterServiceVersion, so there is no operator to install.
    #[error("{bundle}: the bundle has no ClusterServiceVersion")]
    NoCsv {
        /// The bundle, as the caller names it.
        bundle: String,
    },
    /// A field of the CSV read here (install strategy, install modes, webhook definitions,
    /// name, annotations) has the wrong type, so its install manifests cannot be derived.
    #[error("{bundle}: ClusterServiceVersion/{csv}: {message}")]
    Csv {
        /// The bundle, as the caller names it.
        bundle: String,
        /// The CSV's `metadata.name`.
        csv: String,
        /// The path of the field and what is wrong with it.
        message: String,
    },
}

/// The install modes OLM knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum InstallMode {
    /// The operator watches only the namespace it is installed in.
    OwnNamespace,
    /// The operator watches one namespace other than its own.
    SingleNamespace,
    /// The operator watches a list of namespaces.
    MultiNamespace,
    /// The operator watches every namespace of the cluster.
    AllNamespaces,
}

/// An object of the bundle other than the CSV and CRDs, by API group, resource and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OtherObject {
    /// The API group (`""` for the core group).
    pub group: String,
    /// The plural resource name (`services`).
    pub resource: String,
    /// Its `metadata.name`.
    pub name: String,
    /// Whether OLM creates it in the install namespace (false for the cluster-scoped kinds
    /// OLM installs, such as ClusterRole or PriorityClass).
    pub namespaced: bool,
}

/// A webhook definition of the CSV.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Webhook {
    /// `ValidatingAdmissionWebhook`, `MutatingAdmissionWebhook` or `ConversionWebhook`.
    pub kind: String,
    /// Its `generateName`.
    pub name: String,
}

/// Everything one bundle installs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BundleFacts {
    /// The CSV's `metadata.name`.
    pub csv_name: String,
    /// `operatorframework.io/suggested-namespace`, when the CSV names one.
    pub suggested_namespace: Option<String>,
    /// The install modes the CSV marks supported.
    pub install_modes: BTreeSet<InstallMode>,
    /// The names of the bundle's CRDs (`<plural>.<group>`).
    pub crds: BTreeSet<String>,
    /// The names of the install strategy's deployments.
    pub deployments: BTreeSet<String>,
    /// The operator's service accounts (deployments' and permissions'), `default` left out.
    pub service_accounts: BTreeSet<String>,
    /// `spec.install.spec.permissions[*].rules`, in order.
    pub permissions: Vec<PolicyRule>,
    /// `spec.install.spec.clusterPermissions[*].rules`, in order.
    pub cluster_permissions: Vec<PolicyRule>,
    /// The CSV's webhook definitions.
    pub webhooks: BTreeSet<Webhook>,
    /// The bundle's other objects (Services, ConfigMaps, ClusterRoles, …).
    pub others: BTreeSet<OtherObject>,
}

#[derive(Deserialize)]
struct CsvView {
    #[serde(default)]
    metadata: MetaView,
    #[serde(default)]
    spec: CsvSpecView,
}

#[derive(Default, Deserialize)]
struct MetaView {
    #[serde(default)]
    name: String,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CsvSpecView {
    #[serde(default)]
    install: InstallView,
    #[serde(default)]
    install_modes: Vec<InstallModeView>,
    #[serde(default)]
    webhookdefinitions: Vec<WebhookView>,
}

#[derive(Default, Deserialize)]
struct InstallView {
    #[serde(default)]
    spec: StrategyView,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StrategyView {
    #[serde(default)]
    deployments: Vec<DeploymentView>,
    #[serde(default)]
    permissions: Vec<PermissionView>,
    #[serde(default)]
    cluster_permissions: Vec<PermissionView>,
}

#[derive(Deserialize)]
struct DeploymentView {
    name: String,
    #[serde(default)]
    spec: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PermissionView {
    #[serde(default)]
    service_account_name: String,
    #[serde(default)]
    rules: Vec<PolicyRule>,
}

#[derive(Deserialize)]
struct InstallModeView {
    #[serde(rename = "type")]
    type_: String,
    #[serde(default)]
    supported: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WebhookView {
    #[serde(rename = "type")]
    type_: String,
    #[serde(default)]
    generate_name: String,
}

/// Kinds OLM installs cluster-wide (every other kind of a bundle is namespaced).
const CLUSTER_SCOPED_KINDS: [&str; 11] = [
    "ClusterRole",
    "ClusterRoleBinding",
    "PriorityClass",
    "StorageClass",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "APIService",
    "ConsoleYAMLSample",
    "ConsoleQuickStart",
    "ConsoleCLIDownload",
    "ConsoleLink",
];

/// Reads the install facts of `bundle` (named `label` in errors).
pub fn read(label: &str, bundle: &LoadedBundle) -> Result<BundleFacts, FactsError> {
    let csv = bundle.csv().ok_or_else(|| FactsError::NoCsv {
        bundle: label.to_owned(),
    })?;
    let view: CsvView =
        serde_path_to_error::deserialize(&csv.value).map_err(|err| FactsError::Csv {
            bundle: label.to_owned(),
            csv: csv.name().to_owned(),
            message: format!("{}: {}", err.path(), plain(err.inner())),
        })?;
    let mut facts = BundleFacts {
        csv_name: view.metadata.name,
        suggested_namespace: view
            .metadata
            .annotations
            .get("operatorframework.io/suggested-namespace")
            .filter(|ns| !ns.is_empty())
            .cloned(),
        crds: bundle.crds().map(|c| c.name().to_owned()).collect(),
        install_modes: supported_modes(&view.spec.install_modes),
        ..BundleFacts::default()
    };
    facts.add_strategy(&view.spec.install.spec);
    facts.webhooks = view
        .spec
        .webhookdefinitions
        .into_iter()
        .map(|w| Webhook {
            kind: w.type_,
            name: w.generate_name,
        })
        .collect();
    facts.others = other_objects(bundle);
    Ok(facts)
}

/// The install modes the CSV marks supported (unknown mode names are ignored).
fn supported_modes(modes: &[InstallModeView]) -> BTreeSet<InstallMode> {
    modes
        .iter()
        .filter(|m| m.supported)
        .filter_map(|m| match m.type_.as_str() {
            "OwnNamespace" => Some(InstallMode::OwnNamespace),
            "SingleNamespace" => Some(InstallMode::SingleNamespace),
            "MultiNamespace" => Some(InstallMode::MultiNamespace),
            "AllNamespaces" => Some(InstallMode::AllNamespaces),
            _ => None,
        })
        .collect()
}

impl BundleFacts {
    /// Adds the install strategy's deployments, their service accounts and the permissions'
    /// accounts and rules (the `default` account left out).
    fn add_strategy(&mut self, strategy: &StrategyView) {
        for deployment in &strategy.deployments {
            self.deployments.insert(deployment.name.clone());
            let account = deployment
                .spec
                .pointer("/template/spec/serviceAccountName")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("default");
            self.service_accounts.insert(account.to_owned());
        }
        for (list, rules) in [
            (&strategy.permissions, &mut self.permissions),
            (&strategy.cluster_permissions, &mut self.cluster_permissions),
        ] {
            for permission in list {
                let account = match permission.service_account_name.as_str() {
                    "" => "default",
                    name => name,
                };
                self.service_accounts.insert(account.to_owned());
                rules.extend(permission.rules.iter().cloned());
            }
        }
        self.service_accounts.remove("default");
    }
}

/// Every object of the bundle but the CSV and the CRDs, by group, plural resource and name.
fn other_objects(bundle: &LoadedBundle) -> BTreeSet<OtherObject> {
    bundle
        .objects
        .iter()
        .filter(|o| {
            !matches!(
                o.kind(),
                "ClusterServiceVersion" | "CustomResourceDefinition"
            )
        })
        .map(|o| {
            let (group, version) = match o.api_version().rsplit_once('/') {
                Some((group, version)) => (group, version),
                None => ("", o.api_version()),
            };
            let gvk = kube::core::GroupVersionKind::gvk(group, version, o.kind());
            OtherObject {
                group: group.to_owned(),
                resource: kube::core::ApiResource::from_gvk(&gvk).plural,
                name: o.name().to_owned(),
                namespaced: !CLUSTER_SCOPED_KINDS.contains(&o.kind()),
            }
        })
        .collect()
}

/// A serde message without the Rust type names serde puts into some of them.
fn plain(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.split_once(" at line ") {
        Some((message, _)) => message.to_owned(),
        None => text,
    }
}
