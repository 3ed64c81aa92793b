//! Who an operator's process runs as in a live test: the CSV Deployment's ServiceAccount,
//! with the CSV's permissions granted the way OLM v0 grants them (a Role and RoleBinding in
//! the install namespace for `permissions`, a ClusterRole and ClusterRoleBinding for
//! `clusterPermissions`), and a kubeconfig that impersonates it; and the Secrets and
//! ConfigMaps of its bundle, which OLM applies next to it.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use super::LiveError;

/// The operator as its CSV describes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OperatorIdentity {
    /// The Deployment's name (`spec.install.spec.deployments[0].name`).
    pub deployment: String,
    /// Its pods' ServiceAccount (`default` when the Deployment names none).
    pub service_account: String,
    /// The image of its first container.
    pub image: String,
    /// Rules of the CSV's `permissions` for that ServiceAccount (granted in the namespace).
    pub rules: Vec<PolicyRule>,
    /// Rules of the CSV's `clusterPermissions` for that ServiceAccount.
    pub cluster_rules: Vec<PolicyRule>,
    /// The Deployment's pod template (`metadata` and `spec`), from which its first container
    /// is started as the kubelet would ([`crate::container`]); `Null`: the command alone.
    pub pod_template: Value,
    /// The Secrets and ConfigMaps the bundle ships: OLM applies them in the install
    /// namespace with the rest of the bundle, so the pod's `env`, `envFrom` and volumes find
    /// them ([`apply_config`]).
    pub config: Vec<Value>,
}

/// The field manager of what a live test applies.
const MANAGER: &str = "olmpack-upgrade-test";

/// Creates `identity`'s ServiceAccount in `namespace` and grants it its rules; the RBAC
/// objects are named after `release`. Returns the cluster-scoped names created.
pub async fn grant(
    client: &Client,
    namespace: &str,
    release: &str,
    identity: &OperatorIdentity,
) -> Result<Vec<String>, LiveError> {
    let account = &identity.service_account;
    let subject = json!([{"kind": "ServiceAccount", "name": account, "namespace": namespace}]);
    let name = format!("olmpack-{release}-{account}");
    apply::<ServiceAccount>(
        Api::namespaced(client.clone(), namespace),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": namespace}}),
    )
    .await?;
    if !identity.rules.is_empty() {
        let meta = json!({"name": name, "namespace": namespace});
        apply::<Role>(
            Api::namespaced(client.clone(), namespace),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta, "rules": identity.rules}),
        )
        .await?;
        apply::<RoleBinding>(
            Api::namespaced(client.clone(), namespace),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": subject}),
        )
        .await?;
    }
    let mut cluster_scoped = Vec::new();
    if !identity.cluster_rules.is_empty() {
        let cluster_name = format!("olmpack-{namespace}-{release}-{account}");
        let meta = json!({"name": cluster_name});
        apply::<ClusterRole>(
            Api::all(client.clone()),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta, "rules": identity.cluster_rules}),
        )
        .await?;
        apply::<ClusterRoleBinding>(
            Api::all(client.clone()),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_name},
                "subjects": subject}),
        )
        .await?;
        cluster_scoped.push(cluster_name);
    }
    Ok(cluster_scoped)
}

/// Applies `identity`'s Secrets and ConfigMaps in `namespace`, as OLM applies a bundle's
/// (before the process starts: the kubelet reads them when it starts the pod).
pub async fn apply_config(
    client: &Client,
    namespace: &str,
    identity: &OperatorIdentity,
) -> Result<(), LiveError> {
    for object in &identity.config {
        let mut object = object.clone();
        object["metadata"]["namespace"] = json!(namespace);
        match object["kind"].as_str() {
            Some("Secret") => {
                apply::<Secret>(Api::namespaced(client.clone(), namespace), object).await?;
            }
            _ => apply::<ConfigMap>(Api::namespaced(client.clone(), namespace), object).await?,
        }
    }
    Ok(())
}

/// Deletes the ClusterRoles and ClusterRoleBindings [`grant`] created (best effort).
pub async fn revoke(client: &Client, names: &[String]) {
    for name in names {
        let _ = Api::<ClusterRoleBinding>::all(client.clone())
            .delete(name, &Default::default())
            .await;
        let _ = Api::<ClusterRole>::all(client.clone())
            .delete(name, &Default::default())
            .await;
    }
}

async fn apply<K>(api: Api<K>, object: Value) -> Result<(), LiveError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let kind = object["kind"].as_str().unwrap_or_default().to_owned();
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    api.patch(
        &name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&object),
    )
    .await
    .map(drop)
    .map_err(|source| LiveError::Kube {
        action: format!("apply {kind} {name} for the operator's process"),
        source,
    })
}

/// Failure to derive the operator's kubeconfig.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("failed to read kubeconfig {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("kubeconfig {path} is not a YAML mapping: {reason}")]
    Parse { path: PathBuf, reason: String },
    #[error("failed to write the operator's kubeconfig {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Writes to `out` a copy of the kubeconfig `admin` whose every user impersonates
/// ServiceAccount `namespace/account` (with the groups a real token of it has). Relative
/// file paths in `admin` are made absolute, as they are relative to its directory.
pub fn write_kubeconfig(
    admin: &Path,
    out: &Path,
    namespace: &str,
    account: &str,
) -> Result<(), KubeconfigError> {
    let text = std::fs::read_to_string(admin).map_err(|source| KubeconfigError::Read {
        path: admin.to_owned(),
        source,
    })?;
    let mut config: Value =
        serde_saphyr::from_str(&text).map_err(|err| KubeconfigError::Parse {
            path: admin.to_owned(),
            reason: err.to_string(),
        })?;
    let base = admin.parent().unwrap_or(Path::new("."));
    let absolute = |value: &mut Value, key: &str| {
        if let Some(path) = value.get(key).and_then(Value::as_str) {
            let path = base.join(path);
            value[key] = json!(path.display().to_string());
        }
    };
    if let Some(clusters) = config.get_mut("clusters").and_then(Value::as_array_mut) {
        for cluster in clusters {
            absolute(&mut cluster["cluster"], "certificate-authority");
        }
    }
    if let Some(users) = config.get_mut("users").and_then(Value::as_array_mut) {
        for user in users {
            let user = &mut user["user"];
            absolute(user, "client-certificate");
            absolute(user, "client-key");
            absolute(user, "tokenFile");
            user["as"] = json!(format!("system:serviceaccount:{namespace}:{account}"));
            user["as-groups"] = json!([
                "system:serviceaccounts",
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated",
            ]);
        }
    }
    std::fs::write(out, config.to_string()).map_err(|source| KubeconfigError::Write {
        path: out.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_impersonates_the_account_with_absolute_paths() {
        let dir = tempfile::tempdir().unwrap();
        let admin = dir.path().join("admin.yaml");
        std::fs::write(
            &admin,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1', certificate-authority: ca.crt}\nusers:\n- name: u\n  user: {client-certificate: u.crt, client-key-data: a2V5}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
        )
        .unwrap();
        let out = dir.path().join("out.json");
        write_kubeconfig(&admin, &out, "ns", "sa").unwrap();
        let written: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let user = &written["users"][0]["user"];
        assert_eq!(user["as"], "system:serviceaccount:ns:sa");
        assert_eq!(
            user["as-groups"],
            json!([
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ])
        );
        assert_eq!(
            user["client-certificate"],
            dir.path().join("u.crt").display().to_string()
        );
        assert_eq!(user["client-key-data"], "a2V5");
        assert_eq!(
            written["clusters"][0]["cluster"]["certificate-authority"],
            dir.path().join("ca.crt").display().to_string()
        );
    }
}
