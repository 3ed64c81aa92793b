//! [`OlmV1Env`]: the real OLM v1 (catalogd and operator-controller, pinned in `tools.toml`) on
//! a [`crate::control_plane::TestEnv`], installing and upgrading operators by
//! `ClusterExtension` — without a cluster, a kubelet or a container runtime.
//!
//! What runs: etcd, kube-apiserver and kube-controller-manager (its garbage collector deletes
//! what a deleted ClusterExtension owned), OLM v1's CRDs (ClusterCatalog, ClusterExtension;
//! the experimental set, which has the fields of its alpha features) from the same
//! operator-controller version, catalogd and operator-controller as local processes.
//! What olmpack provides in place of the cluster they expect:
//! - **In-cluster identity.** Both read their ServiceAccount from
//!   `/var/run/secrets/kubernetes.io/serviceaccount/token` (the subject of a JWT) and their
//!   namespace next to it. Each runs under `unshare --mount` with a directory of its own bound
//!   over `/var/run` that holds a token the apiserver minted (TokenRequest) for a real
//!   ServiceAccount of [`SYSTEM_NAMESPACE`]. They reach the apiserver through the admin
//!   kubeconfig (`$KUBECONFIG`); the RBAC of OLM's own manifest is not applied.
//! - **TLS.** catalogd serves catalogs over HTTPS with a certificate the environment's CA
//!   issues for 127.0.0.1; operator-controller trusts that CA (`--catalogd-cas-dir`).
//! - **catalogd's mutating webhook** (it labels each ClusterCatalog with its name, which
//!   ClusterExtension catalog selectors match): registered by URL at catalogd's webhook port
//!   on 127.0.0.1, with the CA's bundle.
//! - **Image pulls** from registries on loopback over plain HTTP: a containers
//!   `registries.conf` (`$CONTAINERS_REGISTRIES_CONF`) marks each given registry insecure.
//! - **Webhook certificates of bundles:** OpenShift's service-ca is the certificate provider
//!   (`WebhookProviderOpenshiftServiceCA`; `WebhookProviderCertManager`, on by default, is
//!   turned off: cert-manager's `Certificate` and `Issuer` kinds are not served here), so
//!   operator-controller annotates a bundle's webhook Service, webhook configurations and
//!   conversion CRDs for service-ca, and [`crate::service_ca`] plays service-ca's part: the
//!   Service's serving-certificate Secret, the CA in every `caBundle`.
//! - **The operator's process:** no kubelet runs its pods; [`OlmV1Env::host_webhooks`]
//!   starts a command in their place for each Deployment of the install (OLM v0's host, the
//!   same command contract: a process that exits again after its restarts is a crash loop);
//!   for a Deployment serving webhooks, with the certificate service-ca issued, and points
//!   the Service's endpoints at it. The apiserver routes webhook calls to endpoints
//!   (`--enable-aggregator-routing=true`).
//! - **Identity of installs:** operator-controller v1.11 ignores `spec.serviceAccount` of a
//!   ClusterExtension ("deprecated, ignored": it installs as its own cluster-admin account),
//!   so running it with the admin kubeconfig is what it does in a cluster.
//!
//! Every process is started with its ports on 127.0.0.1 (free ports), its caches and temp
//! files in the TestEnv's directory, and dies with the [`OlmV1Env`].

mod examples;
pub mod extension;
pub mod problems;
pub mod registry;
mod start;

pub use extension::{ExtensionSpec, StepEnd, UpgradePolicy};
pub use registry::LocalRegistry;
pub use start::{OlmV1Env, is_true};

pub use super::OlmError;

/// The namespace catalogd and operator-controller keep their state in (Helm release Secrets).
pub const SYSTEM_NAMESPACE: &str = "olmv1-system";

/// One condition of an OLM v1 object, as its controller wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}={} ({}): {}",
            self.type_, self.status, self.reason, self.message
        )
    }
}

/// The conditions of an object (`status.conditions`), in the order written.
pub fn conditions(object: &serde_json::Value) -> Vec<Condition> {
    let text = |c: &serde_json::Value, key: &str| c[key].as_str().unwrap_or_default().to_owned();
    object["status"]["conditions"]
        .as_array()
        .map(|all| {
            all.iter()
                .map(|c| Condition {
                    type_: text(c, "type"),
                    status: text(c, "status"),
                    reason: text(c, "reason"),
                    message: text(c, "message"),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The containers `registries.conf` that lets OLM v1 pull from `hosts` over plain HTTP.
pub fn registries_conf(hosts: &[String]) -> String {
    hosts
        .iter()
        .map(|host| format!("[[registry]]\nlocation = \"{host}\"\ninsecure = true\n"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_are_read_in_order_and_shown_with_reason_and_message() {
        let object = serde_json::json!({"status": {"conditions": [
            {"type": "Progressing", "status": "True", "reason": "Succeeded", "message": "done"},
            {"type": "Installed", "status": "False", "reason": "Failed", "message": "no"},
        ]}});
        let shown: Vec<String> = conditions(&object).iter().map(|c| c.to_string()).collect();
        assert_eq!(
            shown,
            [
                "Progressing=True (Succeeded): done",
                "Installed=False (Failed): no"
            ]
        );
        assert!(conditions(&serde_json::json!({})).is_empty());
    }

    #[test]
    fn each_loopback_registry_is_marked_insecure() {
        assert_eq!(
            registries_conf(&["127.0.0.1:5000".to_owned(), "127.0.0.1:5001".to_owned()]),
            "[[registry]]\nlocation = \"127.0.0.1:5000\"\ninsecure = true\n\n[[registry]]\nlocation = \"127.0.0.1:5001\"\ninsecure = true\n"
        );
    }
}
