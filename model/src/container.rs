//! One container of a pod as a process, as the kubelet starts it: its argv, environment,
//! working directory and the volumes it mounts, with their content. Pure: the Secrets and
//! ConfigMaps of the pod's namespace and what the kubelet knows of the pod and node come in
//! a [`PodContext`]; the caller materialises the [`ProcessSpec`].
//!
//! What follows the kubelet:
//! - argv: `command` (the image's entrypoint when absent: unknown here, so
//!   [`ProcessSpec::program`] is `None`) then `args`, each with `$(VAR)` expanded from the
//!   container's final environment (`$$` is a literal `$`; an unknown `$(VAR)` stays as
//!   written);
//! - environment: `envFrom` first (each key with its `prefix`; keys that cannot be a variable
//!   name skipped), then `env` in order, each value expanded from the variables before it;
//!   `valueFrom` of `fieldRef` (`metadata.name`, `metadata.namespace`, `metadata.uid`,
//!   `metadata.labels['K']`, `metadata.annotations['K']`, `spec.nodeName`,
//!   `spec.serviceAccountName`, `status.hostIP`, `status.podIP`, `status.podIPs`),
//!   `resourceFieldRef` (a limit, or the node's allocatable when none; a request; divided by
//!   `divisor`, rounded up) and `secretKeyRef`/`configMapKeyRef`;
//! - a missing Secret, ConfigMap or key that is not `optional: true` refuses the start in the
//!   kubelet's words ([`StartError`]);
//! - volumes some container mounts: `secret`, `configMap` (every key, or `items`), `emptyDir`,
//!   `downwardAPI`, `projected` (those sources and `serviceAccountToken`), with `subPath`; and
//!   the ServiceAccount token volume the API server adds at
//!   [`SERVICE_ACCOUNT_PATH`] unless `automountServiceAccountToken: false` or a mount there.
//!
//! What is not: image pull (the user maps the image to a local program), probes, resource
//! limits (read for `resourceFieldRef`, never enforced), users and capabilities, hostPath and
//! persistent volumes (reported as [`Volume::Unsupported`]).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::pod::{items, text};

/// Where the API server's ServiceAccount admission mounts the pod's token.
pub const SERVICE_ACCOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The name olmpack gives that volume (the API server adds a random suffix).
pub const SERVICE_ACCOUNT_VOLUME: &str = "kube-api-access";

/// What the kubelet knows of a pod and its node, and the objects of its namespace.
#[derive(Clone, Debug, Default)]
pub struct PodContext {
    /// The pod's name.
    pub name: String,
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's uid.
    pub uid: String,
    /// The pod's labels.
    pub labels: BTreeMap<String, String>,
    /// The pod's annotations (OLM v0 adds `olm.targetNamespaces` to its Deployments' pods).
    pub annotations: BTreeMap<String, String>,
    /// The node's name.
    pub node_name: String,
    /// The node's and the pod's IP address.
    pub host_ip: String,
    /// The pod's IP address.
    pub pod_ip: String,
    /// The node's allocatable CPU in millicores (a `resourceFieldRef` to an unset CPU limit).
    pub node_cpu_millis: i128,
    /// The node's allocatable memory in bytes (likewise for memory and ephemeral storage).
    pub node_memory_bytes: i128,
    /// The ServiceAccount token the pod is given.
    pub token: String,
    /// The cluster's CA bundle (PEM), `ca.crt` of the token volume.
    pub ca_pem: String,
    /// The Secrets of the namespace: name → key → bytes.
    pub secrets: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
    /// The ConfigMaps of the namespace: name → key → bytes (`data` and `binaryData`).
    pub config_maps: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
}

/// One container as a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessSpec {
    /// The container's name.
    pub container: String,
    /// Its image.
    pub image: String,
    /// `command[0]`, expanded; `None` when the image's entrypoint runs (unknown here).
    pub program: Option<String>,
    /// The rest of `command` and then `args`, expanded.
    pub args: Vec<String>,
    /// The environment, in the kubelet's order (a later duplicate wins).
    pub env: Vec<(String, String)>,
    /// `workingDir` (the image's when `None`).
    pub working_dir: Option<String>,
    /// What the container mounts, in its `volumeMounts` order (the token volume last).
    pub mounts: Vec<MountSpec>,
    /// The content of every mounted volume, by name.
    pub volumes: BTreeMap<String, Volume>,
}

/// One `volumeMounts` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountSpec {
    /// The volume's name (a key of [`ProcessSpec::volumes`]).
    pub volume: String,
    /// Where it is mounted.
    pub path: String,
    /// The part of the volume mounted (`subPath`; empty: all of it).
    pub sub_path: String,
    /// `readOnly`.
    pub read_only: bool,
}

/// The content of a volume as the kubelet sets it up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Volume {
    /// Files, by path relative to the volume (`tls.crt`, `dir/key`).
    Files(BTreeMap<String, Vec<u8>>),
    /// An empty, writable directory.
    EmptyDir,
    /// A kind olmpack does not set up (`hostPath`, a claim, ...): its field name.
    Unsupported(String),
}

/// Why the kubelet does not start the container, in its words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    /// `CreateContainerConfigError`: an env reference does not resolve.
    #[error("CreateContainerConfigError: {0}")]
    Config(String),
    /// `FailedMount`: a volume cannot be set up.
    #[error("FailedMount: MountVolume.SetUp failed for volume \"{volume}\" : {message}")]
    Mount {
        /// The volume's name.
        volume: String,
        /// What failed.
        message: String,
    },
    /// The pod spec names no such container, or mounts an undeclared volume.
    #[error("{0}")]
    Spec(String),
}

fn optional(reference: &Value) -> bool {
    reference.get("optional").and_then(Value::as_bool) == Some(true)
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    items(v, key)
        .iter()
        .map(|s| s.as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The container `container` of `pod_spec` (a PodSpec as the API server stores it) as the
/// kubelet would start it in the pod `ctx` describes.
pub fn process_spec(
    pod_spec: &Value,
    container: &str,
    ctx: &PodContext,
) -> Result<ProcessSpec, StartError> {
    let found = items(pod_spec, "containers")
        .iter()
        .find(|c| text(c, "name") == container)
        .ok_or_else(|| StartError::Spec(format!("the pod has no container {container:?}")))?;
    let env = environment(pod_spec, found, ctx)?;
    let lookup: BTreeMap<&str, &str> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let command: Vec<String> = strings(found, "command")
        .iter()
        .map(|s| expand(s, &lookup))
        .collect();
    let mut args: Vec<String> = command.iter().skip(1).cloned().collect();
    args.extend(strings(found, "args").iter().map(|s| expand(s, &lookup)));
    let (mounts, volumes) = mounts(pod_spec, found, ctx)?;
    Ok(ProcessSpec {
        container: container.to_owned(),
        image: text(found, "image").to_owned(),
        program: command.first().cloned(),
        args,
        env,
        working_dir: Some(text(found, "workingDir"))
            .filter(|d| !d.is_empty())
            .map(str::to_owned),
        mounts,
        volumes,
    })
}

/// Whether the kubelet passes `name` as a variable (any printable ASCII but `=`, not empty).
fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| (b' '..=b'~').contains(&b) && b != b'=')
}

fn environment(
    pod_spec: &Value,
    container: &Value,
    ctx: &PodContext,
) -> Result<Vec<(String, String)>, StartError> {
    let mut env: Vec<(String, String)> = Vec::new();
    for from in items(container, "envFrom") {
        let prefix = text(from, "prefix");
        let Some(data) = env_from(from, ctx)? else {
            continue;
        };
        for (key, value) in data {
            let name = format!("{prefix}{key}");
            if valid_env_name(&name) {
                set(&mut env, name, String::from_utf8_lossy(value).into_owned());
            }
        }
    }
    for var in items(container, "env") {
        let name = text(var, "name").to_owned();
        let value = match var.get("valueFrom") {
            Some(from) => match value_from(pod_spec, container, from, ctx)? {
                Some(value) => value,
                None => continue,
            },
            None => {
                let lookup: BTreeMap<&str, &str> =
                    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                expand(text(var, "value"), &lookup)
            }
        };
        set(&mut env, name, value);
    }
    Ok(env)
}

/// Sets `name` (a later value replaces an earlier one in place, as the kubelet's map does).
fn set(env: &mut Vec<(String, String)>, name: String, value: String) {
    match env.iter_mut().find(|(k, _)| *k == name) {
        Some(slot) => slot.1 = value,
        None => env.push((name, value)),
    }
}

type Data<'a> = &'a BTreeMap<String, Vec<u8>>;

/// The object of an `envFrom` entry (`None`: optional and missing).
fn env_from<'a>(from: &Value, ctx: &'a PodContext) -> Result<Option<Data<'a>>, StartError> {
    let (reference, objects, kind) = match (from.get("configMapRef"), from.get("secretRef")) {
        (Some(r), _) => (r, &ctx.config_maps, "configmap"),
        (None, Some(r)) => (r, &ctx.secrets, "secret"),
        (None, None) => return Ok(None),
    };
    let name = text(reference, "name");
    match objects.get(name) {
        Some(data) => Ok(Some(data)),
        None if optional(reference) => Ok(None),
        None => Err(StartError::Config(format!("{kind} \"{name}\" not found"))),
    }
}

/// An `env[].valueFrom` (`None`: an optional reference that does not resolve).
fn value_from(
    pod_spec: &Value,
    container: &Value,
    from: &Value,
    ctx: &PodContext,
) -> Result<Option<String>, StartError> {
    if let Some(field) = from.get("fieldRef") {
        return field_value(pod_spec, text(field, "fieldPath"), ctx).map(Some);
    }
    if let Some(resource) = from.get("resourceFieldRef") {
        let named = Some(text(resource, "containerName")).filter(|n| !n.is_empty());
        let target = match named {
            Some(name) => items(pod_spec, "containers")
                .iter()
                .find(|c| text(c, "name") == name)
                .ok_or_else(|| {
                    StartError::Config(format!("resourceFieldRef: no container {name:?}"))
                })?,
            None => container,
        };
        return resource_value(target, resource, ctx).map(Some);
    }
    for (key, objects, kind, words) in [
        (
            "configMapKeyRef",
            &ctx.config_maps,
            "configmap",
            "ConfigMap",
        ),
        ("secretKeyRef", &ctx.secrets, "secret", "Secret"),
    ] {
        let Some(reference) = from.get(key) else {
            continue;
        };
        let (name, wanted) = (text(reference, "name"), text(reference, "key"));
        let Some(data) = objects.get(name) else {
            if optional(reference) {
                return Ok(None);
            }
            return Err(StartError::Config(format!("{kind} \"{name}\" not found")));
        };
        return match data.get(wanted) {
            Some(bytes) => Ok(Some(String::from_utf8_lossy(bytes).into_owned())),
            None if optional(reference) => Ok(None),
            None => Err(StartError::Config(format!(
                "couldn't find key {wanted} in {words} {}/{name}",
                ctx.namespace
            ))),
        };
    }
    Ok(Some(String::new()))
}

/// A `fieldRef` path's value.
fn field_value(pod_spec: &Value, path: &str, ctx: &PodContext) -> Result<String, StartError> {
    let keyed = |prefix: &str, map: &BTreeMap<String, String>| {
        path.strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix("['"))
            .and_then(|rest| rest.strip_suffix("']"))
            .map(|key| map.get(key).cloned().unwrap_or_default())
    };
    if let Some(value) = keyed("metadata.labels", &ctx.labels)
        .or_else(|| keyed("metadata.annotations", &ctx.annotations))
    {
        return Ok(value);
    }
    let account = match text(pod_spec, "serviceAccountName") {
        "" => "default",
        named => named,
    };
    Ok(match path {
        "metadata.name" => ctx.name.clone(),
        "metadata.namespace" => ctx.namespace.clone(),
        "metadata.uid" => ctx.uid.clone(),
        "spec.nodeName" => ctx.node_name.clone(),
        "spec.serviceAccountName" => account.to_owned(),
        "status.hostIP" | "status.hostIPs" => ctx.host_ip.clone(),
        "status.podIP" | "status.podIPs" => ctx.pod_ip.clone(),
        other => {
            return Err(StartError::Config(format!(
                "unsupported fieldRef fieldPath {other:?}"
            )));
        }
    })
}

/// A `resourceFieldRef`'s value: the limit or request divided by `divisor`, rounded up.
fn resource_value(
    container: &Value,
    field: &Value,
    ctx: &PodContext,
) -> Result<String, StartError> {
    let resource = text(field, "resource");
    let bad = |what: &str| StartError::Config(format!("resourceFieldRef {resource}: {what}"));
    let (section, name) = resource
        .split_once('.')
        .ok_or_else(|| bad("not a resource"))?;
    let cpu = name == "cpu";
    let set = container
        .get("resources")
        .and_then(|r| r.get(section))
        .and_then(|r| r.get(name))
        .map(quantity_text);
    let value = match (set, section) {
        (Some(q), _) => parse_quantity(&q).ok_or_else(|| bad("unreadable quantity"))?,
        // An unset limit is the node's allocatable; an unset request is 0.
        (None, "limits") if cpu => ctx.node_cpu_millis,
        (None, "limits") => ctx.node_memory_bytes * 1000,
        (None, _) => 0,
    };
    let divisor = match field.get("divisor").map(quantity_text) {
        Some(q) => parse_quantity(&q).ok_or_else(|| bad("unreadable divisor"))?,
        None => 1000,
    };
    if divisor <= 0 {
        return Err(bad("divisor is not positive"));
    }
    // Both in thousandths: the quotient rounded up, at least 1 for a CPU that is set.
    let quotient = (value + divisor - 1) / divisor;
    Ok(quotient.to_string())
}

fn quantity_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A Kubernetes quantity in thousandths (`100m` → 100, `1` → 1000, `1Ki` → 1 024 000).
pub fn parse_quantity(text: &str) -> Option<i128> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let scale: i128 = match suffix {
        "m" => 1,
        "" => 1_000,
        "k" => 1_000_000,
        "M" => 1_000_000_000,
        "G" => 1_000_000_000_000,
        "T" => 1_000_000_000_000_000,
        "Ki" => 1_024_000,
        "Mi" => 1_048_576_000,
        "Gi" => 1_073_741_824_000,
        "Ti" => 1_099_511_627_776_000,
        _ => return None,
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let whole: i128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let mut value = whole * scale;
    let mut unit = scale;
    for digit in fraction.chars() {
        unit /= 10;
        value += i128::from(digit.to_digit(10)?) * unit;
    }
    Some(value)
}

/// `$(VAR)` expansion as the kubelet does it: `$$` is `$`, an unknown reference stays.
pub fn expand(input: &str, env: &BTreeMap<&str, &str>) -> String {
    let mut out = String::new();
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some((name, tail)) = after
            .strip_prefix('(')
            .and_then(|inner| inner.split_once(')'))
        {
            match env.get(name) {
                Some(value) => out.push_str(value),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = tail;
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

mod paths;
mod volumes;
pub use paths::{UnmountedPath, unmounted_paths};
use volumes::mounts;

#[cfg(test)]
mod tests;
