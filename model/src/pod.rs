//! What a pod needs from its namespace before its containers start, as the kubelet decides,
//! and what OLM v0 changes in a deployment's pod before it creates it.
//!
//! The kubelet mounts only the volumes some container, init container or ephemeral container
//! mounts (`volumeMounts[].name`); a volume nobody mounts is never set up, so whatever it names
//! may be missing. For a mounted `secret` or `configMap` volume, and for the `secret` and
//! `configMap` sources of a mounted `projected` volume, the object must exist unless the
//! reference says `optional: true` (the kubelet reports `FailedMount` until it does). Other
//! volume kinds (`emptyDir`, `downwardAPI`, a projected service account token, ...) need
//! nothing. Every non-optional `env[].valueFrom.secretKeyRef`/`configMapKeyRef` and
//! `envFrom[].secretRef`/`configMapRef` of a container or init container must resolve too
//! (`CreateContainerConfigError`). References without a name are left out: the API server
//! refuses them before any kubelet sees the pod.
//!
//! Fields are read as the API server stores them (exact names): callers holding a manifest
//! as a user wrote it read it the way its consumer does first.

use serde_json::{Value, json};

/// The kind of object a pod references.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SourceKind {
    /// A Secret.
    Secret,
    /// A ConfigMap.
    ConfigMap,
}

impl SourceKind {
    /// The Kubernetes kind (`Secret`, `ConfigMap`).
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Secret => "Secret",
            SourceKind::ConfigMap => "ConfigMap",
        }
    }
}

/// How the pod uses a referenced object.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Use {
    /// Through a volume that containers mount (the kubelet's `FailedMount` when missing).
    Mount {
        /// The volume's name.
        volume: String,
        /// Where containers mount it, in container order.
        paths: Vec<String>,
    },
    /// Through an environment variable or `envFrom` of a container (the kubelet's
    /// `CreateContainerConfigError` when missing).
    Env {
        /// The container's name.
        container: String,
    },
}

/// A Secret or ConfigMap the pod cannot start without.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reference {
    /// What kind of object.
    pub kind: SourceKind,
    /// Its name, in the pod's namespace.
    pub name: String,
    /// The field that names it, under the pod spec (`volumes[0].secret.secretName`).
    pub field: String,
    /// How the pod uses it.
    pub used: Use,
}

/// The containers whose mounts count, with their list names.
const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

/// The array at `key` of `v` (empty when absent or not an array).
pub(crate) fn items<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The string at `key` of `v` (empty when absent or not a string).
pub(crate) fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn required(reference: &Value) -> bool {
    reference.get("optional").and_then(Value::as_bool) != Some(true)
}

/// Where some container mounts the volume `name`, in container order (empty when none does).
pub fn mount_paths(pod_spec: &Value, name: &str) -> Vec<String> {
    CONTAINER_LISTS
        .iter()
        .flat_map(|list| items(pod_spec, list))
        .flat_map(|c| items(c, "volumeMounts"))
        .filter(|m| text(m, "name") == name)
        .map(|m| text(m, "mountPath").to_owned())
        .collect()
}

/// Every Secret and ConfigMap the pod cannot start without (see the module docs), volumes
/// first, in field order.
pub fn required_references(pod_spec: &Value) -> Vec<Reference> {
    let mut out = Vec::new();
    for (v, volume) in items(pod_spec, "volumes").iter().enumerate() {
        let name = text(volume, "name");
        let paths = mount_paths(pod_spec, name);
        if paths.is_empty() {
            continue;
        }
        let used = Use::Mount {
            volume: name.to_owned(),
            paths,
        };
        let mut push = |kind, reference: Option<&Value>, key: &str, field: String| {
            if let Some(r) = reference.filter(|r| required(r)) {
                out.push(Reference {
                    kind,
                    name: text(r, key).to_owned(),
                    field: format!("{field}.{key}"),
                    used: used.clone(),
                });
            }
        };
        let base = format!("volumes[{v}]");
        push(
            SourceKind::Secret,
            volume.get("secret"),
            "secretName",
            format!("{base}.secret"),
        );
        push(
            SourceKind::ConfigMap,
            volume.get("configMap"),
            "name",
            format!("{base}.configMap"),
        );
        let sources = volume
            .get("projected")
            .map_or(&[][..], |p| items(p, "sources"));
        for (s, source) in sources.iter().enumerate() {
            let at = format!("{base}.projected.sources[{s}]");
            push(
                SourceKind::Secret,
                source.get("secret"),
                "name",
                format!("{at}.secret"),
            );
            push(
                SourceKind::ConfigMap,
                source.get("configMap"),
                "name",
                format!("{at}.configMap"),
            );
        }
    }
    for list in &CONTAINER_LISTS[..2] {
        for (c, container) in items(pod_spec, list).iter().enumerate() {
            env_references(container, &format!("{list}[{c}]"), &mut out);
        }
    }
    out.retain(|r| !r.name.is_empty());
    out
}

fn env_references(container: &Value, base: &str, out: &mut Vec<Reference>) {
    let used = Use::Env {
        container: text(container, "name").to_owned(),
    };
    let mut push = |kind, reference: Option<&Value>, field: String| {
        if let Some(r) = reference.filter(|r| required(r)) {
            out.push(Reference {
                kind,
                name: text(r, "name").to_owned(),
                field: format!("{field}.name"),
                used: used.clone(),
            });
        }
    };
    for (e, env) in items(container, "env").iter().enumerate() {
        let from = env.get("valueFrom");
        let at = format!("{base}.env[{e}].valueFrom");
        push(
            SourceKind::Secret,
            from.and_then(|f| f.get("secretKeyRef")),
            format!("{at}.secretKeyRef"),
        );
        push(
            SourceKind::ConfigMap,
            from.and_then(|f| f.get("configMapKeyRef")),
            format!("{at}.configMapKeyRef"),
        );
    }
    for (e, from) in items(container, "envFrom").iter().enumerate() {
        let at = format!("{base}.envFrom[{e}]");
        push(
            SourceKind::Secret,
            from.get("secretRef"),
            format!("{at}.secretRef"),
        );
        push(
            SourceKind::ConfigMap,
            from.get("configMapRef"),
            format!("{at}.configMapRef"),
        );
    }
}

/// Where OLM v0 mounts the serving certificate it issues for a deployment behind an owned API
/// service or a webhook: `(volume name, mount path)`.
pub const OLM_CERT_MOUNTS: [(&str, &str); 2] = [
    ("apiservice-cert", "/apiserver.local.config/certificates"),
    ("webhook-cert", "/tmp/k8s-webhook-server/serving-certs"),
];

/// The pod spec after OLM v0's certificate injection, which it applies to every deployment
/// named by an owned API service or a webhook definition: for each of [`OLM_CERT_MOUNTS`],
/// a volume of that name replaces the pod's own (or is added), holding the Secret `secret`
/// (as `apiserver.crt`/`apiserver.key` and `tls.crt`/`tls.key`);
/// in every container (not init containers) a mount of that name is kept, else a mount at the
/// same path is replaced by OLM's, else OLM's is added. A volume whose mounts OLM replaced is
/// then mounted by nobody (kubebuilder's `cert` volume of `webhook-server-cert`).
pub fn with_olm_certificates(pod_spec: &Value, secret: &str) -> Value {
    let mut spec = pod_spec.clone();
    let Some(map) = spec.as_object_mut() else {
        return spec;
    };
    for (volume, path) in OLM_CERT_MOUNTS {
        // OLM names the files for what reads them: `apiserver.*` for an API service.
        let stem = if volume == "apiservice-cert" {
            "apiserver"
        } else {
            "tls"
        };
        let ours = json!({"name": volume, "secret": {"secretName": secret, "items": [
            {"key": "tls.crt", "path": format!("{stem}.crt")},
            {"key": "tls.key", "path": format!("{stem}.key")},
        ]}});
        let volumes = map
            .entry("volumes")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(volumes) = volumes.as_array_mut() {
            match volumes.iter_mut().find(|v| text(v, "name") == volume) {
                Some(v) => *v = ours,
                None => volumes.push(ours),
            }
        }
        let mount = json!({"name": volume, "mountPath": path});
        for container in map
            .get_mut("containers")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let Some(c) = container.as_object_mut() else {
                continue;
            };
            let mounts = c
                .entry("volumeMounts")
                .or_insert_with(|| Value::Array(Vec::new()));
            let Some(mounts) = mounts.as_array_mut() else {
                continue;
            };
            if mounts.iter().any(|m| text(m, "name") == volume) {
                continue;
            }
            match mounts.iter_mut().find(|m| text(m, "mountPath") == path) {
                Some(m) => *m = mount.clone(),
                None => mounts.push(mount.clone()),
            }
        }
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(refs: &[Reference]) -> Vec<(&str, &str, &str)> {
        refs.iter()
            .map(|r| (r.kind.as_str(), r.name.as_str(), r.field.as_str()))
            .collect()
    }

    #[test]
    fn only_mounted_volumes_and_required_references_count() {
        let pod = json!({
            "volumes": [
                {"name": "unused", "secret": {"secretName": "nobody"}},
                {"name": "opt", "secret": {"secretName": "maybe", "optional": true}},
                {"name": "conf", "configMap": {"name": "settings"}},
                {"name": "tmp", "emptyDir": {}},
                {"name": "info", "downwardAPI": {"items": []}},
                {"name": "proj", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "t"}},
                    {"secret": {"name": "tls"}},
                    {"configMap": {"name": "ca", "optional": true}},
                ]}},
            ],
            "initContainers": [{"name": "init", "volumeMounts": [{"name": "conf", "mountPath": "/c"}]}],
            "containers": [{
                "name": "manager",
                "volumeMounts": [
                    {"name": "opt", "mountPath": "/o"},
                    {"name": "tmp", "mountPath": "/t"},
                    {"name": "info", "mountPath": "/i"},
                    {"name": "proj", "mountPath": "/p"},
                ],
                "env": [
                    {"name": "A", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "a"}}},
                    {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "opt", "key": "b", "optional": true}}},
                    {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                ],
                "envFrom": [{"configMapRef": {"name": "user-config"}}, {"secretRef": {"name": ""}}],
            }],
        });
        let refs = required_references(&pod);
        assert_eq!(
            names(&refs),
            [
                ("ConfigMap", "settings", "volumes[2].configMap.name"),
                (
                    "Secret",
                    "tls",
                    "volumes[5].projected.sources[1].secret.name"
                ),
                (
                    "Secret",
                    "creds",
                    "containers[0].env[0].valueFrom.secretKeyRef.name"
                ),
                (
                    "ConfigMap",
                    "user-config",
                    "containers[0].envFrom[0].configMapRef.name"
                ),
            ]
        );
        assert_eq!(
            refs[0].used,
            Use::Mount {
                volume: "conf".into(),
                paths: vec!["/c".into()]
            }
        );
        assert_eq!(
            refs[2].used,
            Use::Env {
                container: "manager".into()
            }
        );
    }

    #[test]
    fn olm_certificates_replace_the_mount_at_the_webhook_path() {
        let pod = json!({
            "volumes": [{"name": "cert", "secret": {"secretName": "webhook-server-cert"}}],
            "containers": [
                {"name": "manager", "volumeMounts": [{"name": "cert", "mountPath": "/tmp/k8s-webhook-server/serving-certs", "readOnly": true}]},
                {"name": "proxy"},
            ],
            "initContainers": [{"name": "init", "volumeMounts": [{"name": "cert", "mountPath": "/x"}]}],
        });
        let after = with_olm_certificates(&pod, "op-service-cert");
        let mounts: Vec<&str> = after["containers"][0]["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        assert_eq!(mounts, ["webhook-cert", "apiservice-cert"]);
        assert_eq!(
            after["containers"][1]["volumeMounts"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        // The init container still mounts `cert`: OLM leaves init containers alone.
        assert_eq!(
            names(&required_references(&after)),
            [
                (
                    "Secret",
                    "webhook-server-cert",
                    "volumes[0].secret.secretName"
                ),
                ("Secret", "op-service-cert", "volumes[1].secret.secretName"),
                ("Secret", "op-service-cert", "volumes[2].secret.secretName"),
            ]
        );
        let without_init = json!({"volumes": pod["volumes"], "containers": pod["containers"]});
        let after = with_olm_certificates(&without_init, "op-service-cert");
        assert_eq!(
            names(&required_references(&after)),
            [
                ("Secret", "op-service-cert", "volumes[1].secret.secretName"),
                ("Secret", "op-service-cert", "volumes[2].secret.secretName"),
            ]
        );
    }
}
