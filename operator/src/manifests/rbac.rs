//! The operator's permissions, declared once. The ClusterRole, the Role, their bindings and
//! (through the bundler) the CSV's `clusterPermissions`/`permissions` are all built from
//! [`RULES`]; the RBAC tests grant exactly these and expect zero 403s.
//!
//! Least privilege: `delete` only on ConfigMaps in the operator's namespace (the finalizer's
//! cleanup of a WebApp's routing entry; children go through garbage collection), `update`
//! only on `webapps` (the storage migration's no-change rewrite) and `webapps/finalizers`
//! (required where the OwnerReferencesPermissionEnforcement admission plugin is on), the
//! WebApp CRD only by name (read it, prune its `status.storedVersions`), Lease and
//! routing-entry access only in the operator's namespace.

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use kube::api::ObjectMeta;

use super::{NAME, labels};
use crate::api::CRD_NAME;

/// Where a rule applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every namespace (ClusterRole; CSV `clusterPermissions`).
    Cluster,
    /// The operator's own namespace (Role; CSV `permissions`).
    OperatorNamespace,
}

/// One permission.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub scope: Scope,
    pub api_group: &'static str,
    pub resources: &'static [&'static str],
    pub verbs: &'static [&'static str],
    /// Only these objects (`resourceNames`); every object of the resources when empty.
    pub resource_names: &'static [&'static str],
    /// Why the operator needs it.
    pub reason: &'static str,
}

/// Every permission the operator needs, and nothing more.
pub const RULES: &[Rule] = &[
    Rule {
        scope: Scope::Cluster,
        api_group: "apps.olmpack.dev",
        resources: &["webapps"],
        verbs: &["get", "list", "watch", "patch", "update"],
        resource_names: &[],
        reason: "watch WebApps; add and remove the finalizer; rewrite them in the storage migration",
    },
    Rule {
        scope: Scope::Cluster,
        api_group: "apps.olmpack.dev",
        resources: &["webapps/status"],
        verbs: &["patch"],
        resource_names: &[],
        reason: "server-side apply of the status",
    },
    Rule {
        scope: Scope::Cluster,
        api_group: "apps.olmpack.dev",
        resources: &["webapps/finalizers"],
        verbs: &["update"],
        resource_names: &[],
        reason: "owner references with blockOwnerDeletion",
    },
    Rule {
        scope: Scope::Cluster,
        api_group: "apps",
        resources: &["deployments"],
        verbs: &["get", "list", "watch", "create", "patch"],
        resource_names: &[],
        reason: "server-side apply of each WebApp's Deployment (apply creates)",
    },
    Rule {
        scope: Scope::Cluster,
        api_group: "",
        resources: &["services"],
        verbs: &["get", "list", "watch", "create", "patch"],
        resource_names: &[],
        reason: "server-side apply of each WebApp's Service (apply creates)",
    },
    Rule {
        scope: Scope::Cluster,
        api_group: "apiextensions.k8s.io",
        resources: &[
            "customresourcedefinitions",
            "customresourcedefinitions/status",
        ],
        verbs: &["get", "patch"],
        resource_names: &[CRD_NAME],
        reason: "storage migration: read the WebApp CRD and prune its status.storedVersions",
    },
    Rule {
        scope: Scope::OperatorNamespace,
        api_group: "coordination.k8s.io",
        resources: &["leases"],
        verbs: &["get", "create", "patch"],
        resource_names: &[],
        reason: "leader election",
    },
    Rule {
        scope: Scope::OperatorNamespace,
        api_group: "",
        resources: &["configmaps"],
        verbs: &["list", "watch", "create", "patch", "delete"],
        resource_names: &[],
        reason: "one routing entry per WebApp (watched into a cache), deleted by the finalizer's cleanup",
    },
];

fn policy_rules(scope: Scope) -> Vec<PolicyRule> {
    RULES
        .iter()
        .filter(|r| r.scope == scope)
        .map(|r| PolicyRule {
            api_groups: Some(vec![r.api_group.to_owned()]),
            resources: Some(r.resources.iter().map(|s| (*s).to_owned()).collect()),
            verbs: r.verbs.iter().map(|s| (*s).to_owned()).collect(),
            resource_names: (!r.resource_names.is_empty())
                .then(|| r.resource_names.iter().map(|s| (*s).to_owned()).collect()),
            ..Default::default()
        })
        .collect()
}

fn subject(namespace: &str) -> Vec<Subject> {
    vec![Subject {
        kind: "ServiceAccount".to_owned(),
        name: NAME.to_owned(),
        namespace: Some(namespace.to_owned()),
        ..Default::default()
    }]
}

fn meta(namespace: Option<&str>, version: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(NAME.to_owned()),
        namespace: namespace.map(str::to_owned),
        labels: Some(labels(version)),
        ..Default::default()
    }
}

/// The operator's ServiceAccount.
pub fn service_account(namespace: &str, version: &str) -> ServiceAccount {
    ServiceAccount {
        metadata: meta(Some(namespace), version),
        ..Default::default()
    }
}

/// The ClusterRole with every [`Scope::Cluster`] rule.
pub fn cluster_role(version: &str) -> ClusterRole {
    ClusterRole {
        metadata: meta(None, version),
        rules: Some(policy_rules(Scope::Cluster)),
        ..Default::default()
    }
}

/// Binds [`cluster_role`] to the ServiceAccount in `namespace`.
pub fn cluster_role_binding(namespace: &str, version: &str) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: meta(None, version),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".to_owned()),
            kind: "ClusterRole".to_owned(),
            name: NAME.to_owned(),
        },
        subjects: Some(subject(namespace)),
    }
}

/// The Role in `namespace` with every [`Scope::OperatorNamespace`] rule.
pub fn role(namespace: &str, version: &str) -> Role {
    Role {
        metadata: meta(Some(namespace), version),
        rules: Some(policy_rules(Scope::OperatorNamespace)),
    }
}

/// Binds [`role`] to the ServiceAccount.
pub fn role_binding(namespace: &str, version: &str) -> RoleBinding {
    RoleBinding {
        metadata: meta(Some(namespace), version),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".to_owned()),
            kind: "Role".to_owned(),
            name: NAME.to_owned(),
        },
        subjects: Some(subject(namespace)),
    }
}
