//! The RBAC of the ServiceAccount OLM v1 installs a ClusterExtension as: least privilege,
//! derived from what the bundles contain.
//!
//! OLM v1 (operator-controller) applies a bundle's objects with the ClusterExtension's
//! ServiceAccount, so that account needs, and gets here:
//! - `update` on its own ClusterExtension's `finalizers` (it sets owner references that
//!   block deletion);
//! - for every object kind of the bundle (CRDs, Deployments, ServiceAccounts, Services, other
//!   manifests, webhook configurations): `create`, `list`, `watch` on the kind, and `get`,
//!   `update`, `patch`, `delete` only on the names the bundle gives (the resource names a
//!   `create` cannot be limited to);
//! - `ClusterRole`/`ClusterRoleBinding` (and `Role`/`RoleBinding` in the install namespace)
//!   without name limits: OLM v1 names them `<csv>-<service account>-<hash>`, a hash of the
//!   rules that cannot be predicted here;
//! - every rule the operator's own permissions hold: Kubernetes lets an account grant only
//!   permissions it has itself (no `escalate` or `bind` is given). In AllNamespaces mode OLM v1
//!   turns `permissions` into cluster-wide rules plus `get`/`list`/`watch` on namespaces, so
//!   those go into the ClusterRole; in OwnNamespace mode they go into the namespace's Role.
//!
//! Rules are merged over every release of the package (an upgrade applies each in turn),
//! deduplicated and sorted, so the output is deterministic.
#![warn(missing_docs)]

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::facts::{BundleFacts, InstallMode};

/// Verbs that cannot be limited to resource names.
const UNNAMED_VERBS: [&str; 3] = ["create", "list", "watch"];
/// Verbs limited to the names the bundle gives.
const NAMED_VERBS: [&str; 4] = ["delete", "get", "patch", "update"];
/// Every verb the installer uses on a kind whose object names it cannot know.
const ALL_VERBS: [&str; 7] = [
    "create", "delete", "get", "list", "patch", "update", "watch",
];

/// Names the installer's objects use.
#[derive(Clone, Debug)]
pub struct InstallerNames {
    /// The ClusterExtension's name.
    pub extension: String,
    /// The install namespace.
    pub namespace: String,
    /// The ServiceAccount, and its ClusterRole, Role and bindings.
    pub account: String,
}

/// The installer's ServiceAccount and its RBAC.
#[derive(Clone, Debug, PartialEq)]
pub struct InstallerRbac {
    /// The account OLM v1 installs the bundle as.
    pub service_account: ServiceAccount,
    /// Its cluster-wide rules (bundle kinds, RBAC kinds, and the operator's cluster permissions).
    pub cluster_role: ClusterRole,
    /// Binds the ClusterRole to the account.
    pub cluster_role_binding: ClusterRoleBinding,
    /// Its rules in the install namespace (the operator's namespaced permissions in OwnNamespace mode).
    pub role: Role,
    /// Binds the Role to the account.
    pub role_binding: RoleBinding,
}

/// The installer RBAC for `facts` (every release of the package, merged), installed in
/// `mode` (AllNamespaces or OwnNamespace).
pub fn installer_rbac(
    facts: &[BundleFacts],
    mode: InstallMode,
    names: &InstallerNames,
) -> InstallerRbac {
    let mut cluster = Rules::default();
    let mut namespaced = Rules::default();
    cluster.add(
        "olm.operatorframework.io",
        "clusterextensions/finalizers",
        &["update"],
        [names.extension.clone()].into(),
    );
    let all = |f: fn(&BundleFacts) -> &BTreeSet<String>| -> BTreeSet<String> {
        facts.iter().flat_map(|b| f(b).iter().cloned()).collect()
    };
    cluster.named(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        all(|f| &f.crds),
    );
    namespaced.named("apps", "deployments", all(|f| &f.deployments));
    namespaced.named("", "serviceaccounts", all(|f| &f.service_accounts));
    for other in facts.iter().flat_map(|f| &f.others) {
        let rules = if other.namespaced {
            &mut namespaced
        } else {
            &mut cluster
        };
        rules.named(&other.group, &other.resource, [other.name.clone()].into());
    }
    webhook_rules(facts, &mut cluster, &mut namespaced);

    let permissions: Vec<PolicyRule> = facts
        .iter()
        .flat_map(|f| f.permissions.iter().cloned())
        .collect();
    let cluster_permissions: Vec<PolicyRule> = facts
        .iter()
        .flat_map(|f| f.cluster_permissions.iter().cloned())
        .collect();
    let mut grants_cluster = cluster_permissions.clone();
    let mut grants_namespaced = Vec::new();
    if mode == InstallMode::AllNamespaces {
        if !permissions.is_empty() {
            grants_cluster.extend(permissions);
            grants_cluster.push(rule("", "namespaces", &["get", "list", "watch"], None));
        }
    } else {
        grants_namespaced = permissions;
    }
    if !grants_cluster.is_empty() {
        cluster.unnamed("rbac.authorization.k8s.io", "clusterrolebindings");
        cluster.unnamed("rbac.authorization.k8s.io", "clusterroles");
    }
    if !grants_namespaced.is_empty() {
        namespaced.unnamed("rbac.authorization.k8s.io", "rolebindings");
        namespaced.unnamed("rbac.authorization.k8s.io", "roles");
    }
    assemble(
        names,
        cluster.into_rules(grants_cluster),
        namespaced.into_rules(grants_namespaced),
    )
}

/// Webhook configurations (cluster-wide, by their generate names) and, as OLM v1's webhook
/// support provisions their certificates with cert-manager, its Issuer and Certificate in the
/// install namespace.
fn webhook_rules(facts: &[BundleFacts], cluster: &mut Rules, namespaced: &mut Rules) {
    let mut any = false;
    for webhook in facts.iter().flat_map(|f| &f.webhooks) {
        any = true;
        let resource = match webhook.kind.as_str() {
            "ValidatingAdmissionWebhook" => "validatingwebhookconfigurations",
            "MutatingAdmissionWebhook" => "mutatingwebhookconfigurations",
            _ => continue,
        };
        cluster.named(
            "admissionregistration.k8s.io",
            resource,
            [webhook.name.clone()].into(),
        );
    }
    if any {
        namespaced.unnamed("cert-manager.io", "certificates");
        namespaced.unnamed("cert-manager.io", "issuers");
        namespaced.unnamed("", "services");
    }
}

fn rule(group: &str, resource: &str, verbs: &[&str], names: Option<Vec<String>>) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.to_owned()]),
        resources: Some(vec![resource.to_owned()]),
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        resource_names: names,
        non_resource_urls: None,
    }
}

/// Rules for the installer's own actions: per (group, resource), the names it may touch
/// (`None`: any name).
#[derive(Default)]
struct Rules {
    by_resource: BTreeMap<(String, String), Option<BTreeSet<String>>>,
    /// Rules with their own verbs: (verbs, resource names).
    extra: BTreeMap<(String, String), (Vec<String>, Vec<String>)>,
}

impl Rules {
    fn add(&mut self, group: &str, resource: &str, verbs: &[&str], names: BTreeSet<String>) {
        self.extra.insert(
            (group.to_owned(), resource.to_owned()),
            (
                verbs.iter().map(|v| (*v).to_owned()).collect(),
                names.into_iter().collect(),
            ),
        );
    }

    fn named(&mut self, group: &str, resource: &str, names: BTreeSet<String>) {
        if names.is_empty() {
            return;
        }
        let entry = self
            .by_resource
            .entry((group.to_owned(), resource.to_owned()))
            .or_insert_with(|| Some(BTreeSet::new()));
        if let Some(set) = entry {
            set.extend(names);
        }
    }

    fn unnamed(&mut self, group: &str, resource: &str) {
        self.by_resource
            .insert((group.to_owned(), resource.to_owned()), None);
    }

    /// The installer's rules, then `grants` (the operator's own rules), deduplicated.
    fn into_rules(self, grants: Vec<PolicyRule>) -> Vec<PolicyRule> {
        let mut out = Vec::new();
        for ((group, resource), (verbs, names)) in self.extra {
            out.push(PolicyRule {
                resource_names: Some(names),
                verbs,
                ..rule(&group, &resource, &[], None)
            });
        }
        for ((group, resource), names) in self.by_resource {
            match names {
                Some(names) => {
                    out.push(rule(&group, &resource, &UNNAMED_VERBS, None));
                    out.push(rule(
                        &group,
                        &resource,
                        &NAMED_VERBS,
                        Some(names.into_iter().collect()),
                    ));
                }
                None => out.push(rule(&group, &resource, &ALL_VERBS, None)),
            }
        }
        let mut seen = BTreeSet::new();
        for grant in grants {
            let key = serde_json::to_string(&grant).unwrap_or_default();
            if seen.insert(key) {
                out.push(grant);
            }
        }
        out
    }
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        ..ObjectMeta::default()
    }
}

fn assemble(
    names: &InstallerNames,
    cluster: Vec<PolicyRule>,
    namespaced: Vec<PolicyRule>,
) -> InstallerRbac {
    let ns = Some(names.namespace.as_str());
    let subject = Subject {
        kind: "ServiceAccount".into(),
        name: names.account.clone(),
        namespace: Some(names.namespace.clone()),
        api_group: None,
    };
    let role_ref = |kind: &str| RoleRef {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: kind.into(),
        name: names.account.clone(),
    };
    InstallerRbac {
        service_account: ServiceAccount {
            metadata: meta(&names.account, ns),
            ..ServiceAccount::default()
        },
        cluster_role: ClusterRole {
            metadata: meta(&names.account, None),
            rules: Some(cluster),
            aggregation_rule: None,
        },
        cluster_role_binding: ClusterRoleBinding {
            metadata: meta(&names.account, None),
            role_ref: role_ref("ClusterRole"),
            subjects: Some(vec![subject.clone()]),
        },
        role: Role {
            metadata: meta(&names.account, ns),
            rules: Some(namespaced),
        },
        role_binding: RoleBinding {
            metadata: meta(&names.account, ns),
            role_ref: role_ref("Role"),
            subjects: Some(vec![subject]),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::facts::{OtherObject, Webhook};

    fn names() -> InstallerNames {
        InstallerNames {
            extension: "demo".into(),
            namespace: "demo-system".into(),
            account: "demo-installer".into(),
        }
    }

    fn facts() -> BundleFacts {
        BundleFacts {
            csv_name: "demo.v1.0.0".into(),
            crds: ["widgets.demo.io".to_owned()].into(),
            deployments: ["demo-controller".to_owned()].into(),
            service_accounts: ["demo-controller".to_owned()].into(),
            permissions: vec![rule(
                "coordination.k8s.io",
                "leases",
                &["get", "create"],
                None,
            )],
            cluster_permissions: vec![rule("demo.io", "widgets", &["get", "list"], None)],
            webhooks: [Webhook {
                kind: "ValidatingAdmissionWebhook".into(),
                name: "vwidget.demo.io".into(),
            }]
            .into(),
            others: [
                OtherObject {
                    group: "".into(),
                    resource: "services".into(),
                    name: "demo-metrics".into(),
                    namespaced: true,
                },
                OtherObject {
                    group: "scheduling.k8s.io".into(),
                    resource: "priorityclasses".into(),
                    name: "demo-critical".into(),
                    namespaced: false,
                },
            ]
            .into(),
            ..BundleFacts::default()
        }
    }

    #[test]
    fn installer_rbac_all_namespaces() {
        let mut second = facts();
        second.crds.insert("gadgets.demo.io".into());
        let rbac = installer_rbac(&[facts(), second], InstallMode::AllNamespaces, &names());
        insta::assert_yaml_snapshot!(rbac_value(&rbac));
    }

    #[test]
    fn installer_rbac_own_namespace_keeps_permissions_in_the_namespace() {
        let rbac = installer_rbac(&[facts()], InstallMode::OwnNamespace, &names());
        insta::assert_yaml_snapshot!(rbac_value(&rbac));
    }

    #[test]
    fn a_bundle_without_permissions_gets_no_rbac_management() {
        let bare = BundleFacts {
            crds: ["widgets.demo.io".to_owned()].into(),
            ..BundleFacts::default()
        };
        let rbac = installer_rbac(&[bare], InstallMode::AllNamespaces, &names());
        let text = serde_json::to_string(&rbac_value(&rbac)).unwrap();
        assert!(!text.contains("clusterroles"), "{text}");
        assert!(!text.contains("\"roles\""), "{text}");
        assert_eq!(rbac.role.rules.as_ref().map(Vec::len), Some(0));
    }

    fn rbac_value(rbac: &InstallerRbac) -> serde_json::Value {
        serde_json::json!([
            rbac.service_account,
            rbac.cluster_role,
            rbac.cluster_role_binding,
            rbac.role,
            rbac.role_binding,
        ])
    }
}
