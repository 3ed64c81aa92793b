//! What a bundle installs, read once from its manifests: the facts the install manifests and
//! the OLM v1 installer's RBAC are derived from.
//!
//! The CSV is read through the typed model ([`olmpack_model::csv`]): its install strategy,
//! install modes and webhook definitions. A field of the wrong type fails as it fails OLM.

use std::collections::BTreeSet;

use k8s_openapi::api::rbac::v1::PolicyRule;
use olmpack_model::csv::{ClusterServiceVersion, InstallMode as CsvInstallMode, StrategyDetails};

use crate::bundle::load::LoadedBundle;
use crate::bundle::validate::podstart;

/// Failure to read a bundle's install facts.
#[derive(Debug, thiserror::Error)]
pub enum FactsError {
    /// The bundle holds no ClusterServiceVersion, so there is no operator to install.
    #[error("{bundle}: the bundle has no ClusterServiceVersion")]
    NoCsv {
        /// The bundle, as the caller names it.
        bundle: String,
    },
    /// The CSV has a field of a type OLM refuses, or lacks a field read here that OLM requires
    /// (a deployment's name, a webhook's type), so its install manifests cannot be derived.
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

/// Never about the input olmpack reads: a failure to do the job (exit 2).
impl crate::refusal::Refusal for FactsError {
    fn refuses_input(&self) -> bool {
        false
    }
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
    /// Secrets and ConfigMaps (`(kind, name)`) the operator's pod needs that neither the bundle
    /// nor OLM creates: the user creates them in the install namespace (see
    /// [`crate::bundle::validate::podstart`]).
    pub prerequisites: BTreeSet<(String, String)>,
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
    let loaded = bundle.csv().ok_or_else(|| FactsError::NoCsv {
        bundle: label.to_owned(),
    })?;
    let fail = |message: String| FactsError::Csv {
        bundle: label.to_owned(),
        csv: loaded.name().to_owned(),
        message,
    };
    let csv = ClusterServiceVersion::from_value(&loaded.value).map_err(|e| fail(e.to_string()))?;
    let spec = csv.spec.as_ref();
    let mut facts = BundleFacts {
        csv_name: csv.name().to_owned(),
        suggested_namespace: csv
            .annotation("operatorframework.io/suggested-namespace")
            .map(str::to_owned),
        crds: bundle.crds().map(|c| c.name().to_owned()).collect(),
        install_modes: supported_modes(
            spec.and_then(|s| s.install_modes.as_deref())
                .unwrap_or_default(),
        ),
        prerequisites: podstart::missing_objects(bundle, spec.unwrap_or(&Default::default()))
            .into_iter()
            .filter(|m| m.why == podstart::Missing::Prerequisite)
            .map(|m| (m.reference.kind.as_str().to_owned(), m.reference.name))
            .collect(),
        ..BundleFacts::default()
    };
    if let Some(strategy) = csv.strategy() {
        facts.add_strategy(strategy).map_err(fail)?;
    }
    let webhooks = spec.and_then(|s| s.webhookdefinitions.as_deref());
    for (i, webhook) in webhooks.unwrap_or_default().iter().enumerate() {
        let kind = webhook.type_.clone().ok_or_else(|| {
            fail(format!(
                "field spec.webhookdefinitions[{i}].type: missing, OLM requires it"
            ))
        })?;
        facts.webhooks.insert(Webhook {
            kind,
            name: webhook.generate_name.clone().unwrap_or_default(),
        });
    }
    facts.others = other_objects(bundle);
    Ok(facts)
}

/// The install modes the CSV marks supported (unknown mode names are ignored).
fn supported_modes(modes: &[CsvInstallMode]) -> BTreeSet<InstallMode> {
    modes
        .iter()
        .filter(|m| m.supported == Some(true))
        .filter_map(|m| match m.type_.as_deref() {
            Some("OwnNamespace") => Some(InstallMode::OwnNamespace),
            Some("SingleNamespace") => Some(InstallMode::SingleNamespace),
            Some("MultiNamespace") => Some(InstallMode::MultiNamespace),
            Some("AllNamespaces") => Some(InstallMode::AllNamespaces),
            _ => None,
        })
        .collect()
}

impl BundleFacts {
    /// Adds the install strategy's deployments, their service accounts and the permissions'
    /// accounts and rules (the `default` account left out); fails on a deployment without a
    /// name or a rule that is not an rbac/v1 PolicyRule.
    fn add_strategy(&mut self, strategy: &StrategyDetails) -> Result<(), String> {
        for (i, deployment) in strategy.deployments.iter().flatten().enumerate() {
            let name = deployment.name.clone().ok_or_else(|| {
                format!("field spec.install.spec.deployments[{i}].name: missing, OLM requires it")
            })?;
            self.deployments.insert(name);
            self.service_accounts
                .insert(deployment.service_account().to_owned());
        }
        for (field, list, rules) in [
            ("permissions", &strategy.permissions, &mut self.permissions),
            (
                "clusterPermissions",
                &strategy.cluster_permissions,
                &mut self.cluster_permissions,
            ),
        ] {
            for (i, permission) in list.iter().flatten().enumerate() {
                self.service_accounts
                    .insert(permission.service_account().to_owned());
                for (j, rule) in permission.rules.iter().flatten().enumerate() {
                    let rule: PolicyRule = serde_path_to_error::deserialize(rule).map_err(|e| {
                        format!(
                            "field spec.install.spec.{field}[{i}].rules[{j}].{}: {}",
                            e.path(),
                            olmpack_model::decode::olm_message(e.inner())
                        )
                    })?;
                    rules.push(rule);
                }
            }
        }
        self.service_accounts.remove("default");
        Ok(())
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::bundle::load::Object;

    fn bundle(csv: serde_json::Value) -> LoadedBundle {
        LoadedBundle {
            objects: vec![Object {
                file: "manifests/demo.clusterserviceversion.yaml".into(),
                index: 0,
                value: csv,
            }],
            ..LoadedBundle::default()
        }
    }

    fn csv(spec: serde_json::Value) -> serde_json::Value {
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {
                "name": "demo.v1.0.0",
                "annotations": {"operatorframework.io/suggested-namespace": "demo-system"},
            },
            "spec": spec,
        })
    }

    #[test]
    fn facts_come_from_the_typed_csv() {
        let value = csv(json!({
            "installModes": [
                {"type": "OwnNamespace", "supported": true},
                {"type": "AllNamespaces", "supported": false},
                {"type": "Elsewhere", "supported": true},
            ],
            "install": {"strategy": "deployment", "spec": {
                "deployments": [
                    {"name": "demo-controller", "spec": {"template": {"spec": {"serviceAccountName": "demo-sa"}}}},
                    {"name": "demo-helper", "spec": {}},
                ],
                "permissions": [{"serviceAccountName": "", "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}],
                "clusterPermissions": [{"serviceAccountName": "demo-admin", "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}],
            }},
            "webhookdefinitions": [{"type": "ConversionWebhook", "generateName": "cdemo.example.com"}],
        }));
        let facts = read("demo", &bundle(value)).unwrap();
        assert_eq!(facts.csv_name, "demo.v1.0.0");
        assert_eq!(facts.suggested_namespace.as_deref(), Some("demo-system"));
        assert_eq!(facts.install_modes, [InstallMode::OwnNamespace].into());
        assert_eq!(
            facts.deployments,
            ["demo-controller".to_owned(), "demo-helper".to_owned()].into()
        );
        assert_eq!(
            facts.service_accounts,
            ["demo-admin".to_owned(), "demo-sa".to_owned()].into()
        );
        assert_eq!(
            facts.permissions[0].resources.as_deref(),
            Some(&["configmaps".to_owned()][..])
        );
        assert_eq!(facts.cluster_permissions.len(), 1);
        assert_eq!(
            facts.webhooks,
            [Webhook {
                kind: "ConversionWebhook".into(),
                name: "cdemo.example.com".into()
            }]
            .into()
        );
    }

    #[test]
    fn a_csv_olm_refuses_is_named_with_its_field() {
        let cases = [
            (
                json!({"installModes": [{"type": "OwnNamespace", "supported": "yes"}]}),
                "demo: ClusterServiceVersion/demo.v1.0.0: field spec.installModes[0].supported: OLM reads a boolean here, found string \"yes\" (OLM v0's decoder refuses it too)",
            ),
            (
                json!({"install": {"spec": {"deployments": [{"spec": {}}]}}}),
                "demo: ClusterServiceVersion/demo.v1.0.0: field spec.install.spec.deployments[0].name: missing, OLM requires it",
            ),
            (
                json!({"install": {"spec": {"clusterPermissions": [{"rules": [{"verbs": "get"}]}]}}}),
                "demo: ClusterServiceVersion/demo.v1.0.0: field spec.install.spec.clusterPermissions[0].rules[0].verbs: OLM reads a list here, found string \"get\" (OLM v0's decoder refuses it too)",
            ),
            (
                json!({"webhookdefinitions": [{"generateName": "vdemo.example.com"}]}),
                "demo: ClusterServiceVersion/demo.v1.0.0: field spec.webhookdefinitions[0].type: missing, OLM requires it",
            ),
        ];
        for (spec, want) in cases {
            let err = read("demo", &bundle(csv(spec))).unwrap_err();
            assert_eq!(err.to_string(), want);
        }
    }
}
