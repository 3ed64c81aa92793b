//! RBAC: (Cluster)Roles bound to a deployment's ServiceAccount become the strategy's
//! `permissions` / `clusterPermissions`; the bindings and roles folded in leave the manifests.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::super::inputs::{Inputs, Sourced};
use olmpack_model::csv::StrategyPermissions;
use olmpack_model::decode::text;
use olmpack_model::objects::{self, RoleBinding};
use olmpack_model::report::Finding;

/// The strategy's permissions and the RBAC objects they were made of.
pub(super) struct Rbac {
    /// `permissions` entries, one per ServiceAccount, sorted by account.
    pub(super) namespaced: Vec<StrategyPermissions>,
    /// `clusterPermissions` entries, one per ServiceAccount, sorted by account.
    pub(super) cluster: Vec<StrategyPermissions>,
    /// `(kind, name)` of RBAC objects folded into the CSV.
    consumed: BTreeSet<(String, String)>,
}

impl Rbac {
    /// Whether `object` still ships as a manifest (it was not folded into the CSV).
    pub(super) fn ships(&self, object: &Sourced) -> bool {
        !self
            .consumed
            .contains(&(object.kind().to_owned(), object.name().to_owned()))
    }
}

/// Rules per ServiceAccount, for namespaced and for cluster-wide permissions.
#[derive(Default)]
struct Grants {
    namespaced: BTreeMap<String, Vec<Value>>,
    cluster: BTreeMap<String, Vec<Value>>,
    consumed: BTreeSet<(String, String)>,
}

/// Folds every binding whose subjects include one of `accounts` into permissions; a binding
/// to a role that is not in the manifests is an error.
pub(super) fn permissions(
    inputs: &Inputs,
    accounts: &BTreeSet<String>,
    problems: &mut Vec<Finding>,
) -> Rbac {
    let mut grants = Grants::default();
    let mut bindings: Vec<(&Sourced, bool)> =
        inputs.role_bindings.iter().map(|b| (b, false)).collect();
    bindings.extend(inputs.cluster_role_bindings.iter().map(|b| (b, true)));
    bindings.sort_by(|a, b| (a.1, a.0.name()).cmp(&(b.1, b.0.name())));
    for (binding, cluster_scoped) in bindings {
        let subjects = bound_accounts(binding, accounts);
        if subjects.is_empty() {
            continue;
        }
        let Some(role) = bound_role(inputs, binding, problems) else {
            continue;
        };
        grants.grant(binding, role, cluster_scoped, subjects);
    }
    let per_account = |map: BTreeMap<String, Vec<Value>>| -> Vec<StrategyPermissions> {
        map.into_iter()
            .map(|(account, rules)| StrategyPermissions {
                service_account_name: Some(account),
                rules: Some(rules),
                ..StrategyPermissions::default()
            })
            .collect()
    };
    Rbac {
        namespaced: per_account(grants.namespaced),
        cluster: per_account(grants.cluster),
        consumed: grants.consumed,
    }
}

impl Grants {
    /// Gives each of `subjects` the rules of `role`, and marks binding and role consumed.
    fn grant(
        &mut self,
        binding: &Sourced,
        role: &Sourced,
        cluster_scoped: bool,
        subjects: Vec<String>,
    ) {
        let rules = role
            .value
            .get("rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        self.consumed
            .insert((binding.kind().to_owned(), binding.name().to_owned()));
        self.consumed
            .insert((role.kind().to_owned(), role.name().to_owned()));
        let bucket = if cluster_scoped {
            &mut self.cluster
        } else {
            &mut self.namespaced
        };
        for account in subjects {
            bucket
                .entry(account)
                .or_default()
                .extend(rules.iter().cloned());
        }
    }
}

/// The binding's ServiceAccount subjects that are among `accounts`.
fn bound_accounts(binding: &Sourced, accounts: &BTreeSet<String>) -> Vec<String> {
    let binding: RoleBinding = objects::view(&binding.value);
    let subjects = binding.subjects.into_iter().flatten();
    subjects
        .filter(|s| text(&s.kind) == "ServiceAccount" && accounts.contains(text(&s.name)))
        .filter_map(|s| s.name)
        .collect()
}

/// The user-facing and system ClusterRoles Kubernetes creates on every cluster.
fn is_built_in_cluster_role(name: &str) -> bool {
    matches!(name, "view" | "edit" | "admin" | "cluster-admin") || name.starts_with("system:")
}

/// The (Cluster)Role the binding refers to; `None`, with an error, when it is not in the
/// manifests.
fn bound_role<'a>(
    inputs: &'a Inputs,
    binding: &Sourced,
    problems: &mut Vec<Finding>,
) -> Option<&'a Sourced> {
    let typed: RoleBinding = objects::view(&binding.value);
    let role_ref = typed.role_ref.clone().unwrap_or_default();
    let (role_kind, role_name) = (text(&role_ref.kind), text(&role_ref.name));
    let pool = if role_kind == "ClusterRole" {
        &inputs.cluster_roles
    } else {
        &inputs.roles
    };
    let role = pool.iter().find(|r| r.name() == role_name);
    if role.is_none() {
        let mut finding = Finding::error(
            "input/dangling-role-ref",
            format!("refers to {role_kind} {role_name}, which is not in the manifests"),
        )
        .field("roleRef");
        let namespace = typed.metadata.as_ref().map_or("", |m| text(&m.namespace));
        if role_kind == "Role" && namespace == "kube-system" {
            // An aggregated API server's binding (Kueue's chart has one).
            finding = finding.hint(format!("the binding is for a Role in kube-system, but OLM creates a bundle's objects in the namespace the operator is installed into, where there is no Role {role_name}; OLM binds extension-apiserver-authentication-reader itself for an API in the CSV's spec.apiservicedefinitions.owned"));
        } else if role_kind == "ClusterRole" && is_built_in_cluster_role(role_name) {
            // Kyverno's chart binds its controllers to `view`.
            finding = finding.hint(format!("{role_name} is a ClusterRole every cluster has, with rules that differ between clusters; OLM grants the CSV's service accounts only the rules the CSV lists, so put a ClusterRole with the rules the operator needs in the manifests and bind that"));
        }
        problems.push(binding.finding(finding));
    }
    role
}
