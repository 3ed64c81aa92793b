//! The operator's container started as the kubelet starts it: what
//! [`olmpack_model::container::process_spec`] decides (argv, env, working directory, volumes)
//! made real for one process.
//!
//! - [`pod_context`] reads what the kubelet reads from the cluster: every Secret and
//!   ConfigMap of the pod's namespace, a token of its ServiceAccount (TokenRequest) and the
//!   cluster's CA.
//! - [`Materialised::write`] writes each mounted volume into a directory of the process's own
//!   and plans a bind mount of it at its mount path ([`Mounts`]), applied in a mount
//!   namespace of the process's own between fork and exec (`Mounts::apply`): the process
//!   sees `/tmp/k8s-webhook-server/serving-certs/tls.crt` where OLM mounts it, and nothing
//!   else of the machine changes but empty mount points (directories or files) created where
//!   none existed. This needs root; without it the volumes are not mounted and the report
//!   says so.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use olmpack_model::container::{PodContext, ProcessSpec, StartError, Volume};
use olmpack_model::file_name::FileName;
use serde_json::{Value, json};

/// Failure to prepare a container's process.
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    #[error("failed to read the {what} of namespace {namespace} for the operator's pod")]
    Read {
        what: &'static str,
        namespace: String,
        #[source]
        source: kube::Error,
    },
    #[error("failed to write the volume {volume} of the operator's pod to {path}")]
    Write {
        volume: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the mount path {0:?} cannot be handed to the kernel (it holds a NUL byte)")]
    Path(String),
}

/// The pod the process stands in for.
#[derive(Clone, Debug, Default)]
pub struct PodIdentity {
    pub name: String,
    pub namespace: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// The cluster's CA bundle (PEM), for the token volume's `ca.crt`.
    pub ca_pem: String,
}

/// What the kubelet would read for the pod `pod` with spec `pod_spec`.
pub async fn pod_context(
    client: &Client,
    pod: &PodIdentity,
    pod_spec: &Value,
) -> Result<PodContext, ContainerError> {
    let ns = &pod.namespace;
    let read = |what| {
        move |source| ContainerError::Read {
            what,
            namespace: ns.clone(),
            source,
        }
    };
    let secrets = Api::<Secret>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .map_err(read("Secrets"))?;
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .map_err(read("ConfigMaps"))?;
    let account = pod_spec["serviceAccountName"]
        .as_str()
        .filter(|a| !a.is_empty())
        .unwrap_or("default");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok(PodContext {
        name: pod.name.clone(),
        namespace: ns.clone(),
        uid: format!("olmpack-{}", pod.name),
        labels: pod.labels.clone(),
        annotations: pod.annotations.clone(),
        node_name: "olmpack".to_owned(),
        host_ip: "127.0.0.1".to_owned(),
        pod_ip: "127.0.0.1".to_owned(),
        node_cpu_millis: i128::try_from(cpus).unwrap_or(1) * 1000,
        node_memory_bytes: memory_bytes(),
        token: token(client, ns, account).await,
        ca_pem: pod.ca_pem.clone(),
        secrets: secrets
            .items
            .into_iter()
            .map(|s| {
                let data = s.data.unwrap_or_default();
                let data = data.into_iter().map(|(k, v)| (k, v.0)).collect();
                (s.metadata.name.unwrap_or_default(), data)
            })
            .collect(),
        config_maps: config_maps
            .items
            .into_iter()
            .map(|c| {
                let mut data: BTreeMap<String, Vec<u8>> = c
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.into_bytes()))
                    .collect();
                data.extend(
                    c.binary_data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, v.0)),
                );
                (c.metadata.name.unwrap_or_default(), data)
            })
            .collect(),
    })
}

/// A token of ServiceAccount `namespace/account` from the TokenRequest API (empty when the
/// cluster gives none: the process's `KUBECONFIG` is how it reaches the API server).
async fn token(client: &Client, namespace: &str, account: &str) -> String {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let Ok(request) = serde_json::from_value::<TokenRequest>(json!({
        "spec": {"audiences": [], "expirationSeconds": 3600}
    })) else {
        return String::new();
    };
    api.create_token_request(account, &PostParams::default(), &request)
        .await
        .ok()
        .and_then(|r| r.status)
        .and_then(|s| s.token)
        .unwrap_or_default()
}

/// This machine's memory (`MemTotal` of /proc/meminfo), in bytes; 0 when unknown.
fn memory_bytes() -> i128 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: i128 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(0)
}

/// Bind mounts for a process's own mount namespace, with its working directory.
#[derive(Clone, Debug, Default)]
pub struct Mounts {
    /// (source, target, read-only)
    binds: Vec<(CString, CString, bool)>,
    workdir: Option<CString>,
}

impl Mounts {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.binds.is_empty() && self.workdir.is_none()
    }

    /// Enters a new mount namespace (private propagation), binds every volume and changes
    /// into the working directory. Runs between fork and exec: only system calls on
    /// prepared strings, no allocation.
    #[allow(unsafe_code)]
    pub(crate) fn apply(&self) -> std::io::Result<()> {
        let fail = || Err(std::io::Error::last_os_error());
        // SAFETY: unshare, mount and chdir on NUL-terminated strings owned by `self`, which
        // outlives the call; all are async-signal-safe system calls.
        unsafe {
            if !self.binds.is_empty() {
                if libc::unshare(libc::CLONE_NEWNS) != 0 {
                    return fail();
                }
                let root = c"/".as_ptr();
                let flags = libc::MS_REC | libc::MS_PRIVATE;
                if libc::mount(
                    std::ptr::null(),
                    root,
                    std::ptr::null(),
                    flags,
                    std::ptr::null(),
                ) != 0
                {
                    return fail();
                }
            }
            for (source, target, read_only) in &self.binds {
                let bind = libc::MS_BIND | libc::MS_REC;
                if libc::mount(
                    source.as_ptr(),
                    target.as_ptr(),
                    std::ptr::null(),
                    bind,
                    std::ptr::null(),
                ) != 0
                {
                    return fail();
                }
                let remount = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY;
                if *read_only
                    && libc::mount(
                        std::ptr::null(),
                        target.as_ptr(),
                        std::ptr::null(),
                        remount,
                        std::ptr::null(),
                    ) != 0
                {
                    return fail();
                }
            }
            if let Some(dir) = &self.workdir
                && libc::chdir(dir.as_ptr()) != 0
            {
                return fail();
            }
        }
        Ok(())
    }
}

/// A container's volumes written to disk, and how to mount them.
#[derive(Debug)]
pub struct Materialised {
    pub mounts: Mounts,
    /// What is not as in a pod, in words for the process's log and the report.
    pub notes: Vec<String>,
}

impl Materialised {
    /// Writes every volume of `spec` under `dir` (one directory per volume) and plans their
    /// mounts; with `mount_namespaces` false (not root) plans nothing and says so.
    pub fn write(
        spec: &ProcessSpec,
        dir: &Path,
        mount_namespaces: bool,
    ) -> Result<Self, ContainerError> {
        let mut notes = Vec::new();
        let mut mounts = Mounts::default();
        for (name, volume) in &spec.volumes {
            write_volume(name, volume, &dir.join(FileName::or_hash(name)))?;
            if let Volume::Unsupported(kind) = volume {
                notes.push(format!(
                    "volume {name} ({kind}) is not emulated: an empty directory is mounted"
                ));
            }
        }
        if !mount_namespaces {
            if !spec.mounts.is_empty() {
                notes.push(
                    "olmpack may not create mount namespaces here (it needs root), so the \
                     container's volumes are not mounted"
                        .to_owned(),
                );
            }
            return Ok(Self { mounts, notes });
        }
        for mount in &spec.mounts {
            // The API server checked the names (a volume's is a DNS label, a subPath relative
            // without `..`); the volume's directory is still one checked path component.
            let volume = FileName::or_hash(&mount.volume);
            let source = dir.join(volume).join(&mount.sub_path);
            let target = PathBuf::from(&mount.path);
            mount_point(&source, &target).map_err(|err| ContainerError::Write {
                volume: mount.volume.clone(),
                path: target.clone(),
                source: err,
            })?;
            mounts
                .binds
                .push((c_path(&source)?, c_path(&target)?, mount.read_only));
        }
        mounts.workdir = spec
            .working_dir
            .as_deref()
            .map(|d| c_path(Path::new(d)))
            .transpose()?;
        Ok(Self { mounts, notes })
    }
}

fn c_path(path: &Path) -> Result<CString, ContainerError> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| ContainerError::Path(path.display().to_string()))
}

fn write_volume(name: &str, volume: &Volume, dir: &Path) -> Result<(), ContainerError> {
    let wrap = |path: &Path| {
        let path = path.to_owned();
        move |source| ContainerError::Write {
            volume: name.to_owned(),
            path,
            source,
        }
    };
    std::fs::create_dir_all(dir).map_err(wrap(dir))?;
    if let Volume::Files(files) = volume {
        for (relative, bytes) in files {
            let path = dir.join(relative);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(wrap(parent))?;
            }
            std::fs::write(&path, bytes).map_err(wrap(&path))?;
        }
    }
    Ok(())
}

/// Makes sure `target` exists as what `source` is (a directory, or an empty file).
fn mount_point(source: &Path, target: &Path) -> std::io::Result<()> {
    if source.is_dir() {
        return std::fs::create_dir_all(target);
    }
    if !source.exists() {
        std::fs::create_dir_all(source)?;
        return std::fs::create_dir_all(target);
    }
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if !target.exists() {
        std::fs::File::create(target)?;
    }
    Ok(())
}

/// Whether this process may give a child a mount namespace of its own (root).
pub fn mount_namespaces_allowed() -> bool {
    #[allow(unsafe_code)]
    // SAFETY: geteuid(2) has no preconditions.
    let euid = unsafe { libc::geteuid() };
    euid == 0
}

/// The environment of the process: olmpack's variables (`base`), then the container's, which
/// win except for `KUBECONFIG`, `TMPDIR` and olmpack's own `OLMPACK_*`.
pub fn merged_env(base: Vec<(String, String)>, spec: &ProcessSpec) -> Vec<(String, String)> {
    let mut env = base;
    for (name, value) in &spec.env {
        if name == "KUBECONFIG" || name == "TMPDIR" || name.starts_with("OLMPACK_") {
            continue;
        }
        match env.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = value.clone(),
            None => env.push((name.clone(), value.clone())),
        }
    }
    if let Some(program) = &spec.program {
        env.push((CONTAINER_COMMAND_ENV.to_owned(), program.clone()));
    }
    env
}

/// The container's program (`command[0]`) when it names one.
pub const CONTAINER_COMMAND_ENV: &str = "OLMPACK_CONTAINER_COMMAND";

/// The container of `pod_spec` that stands for the pod: the first.
pub fn first_container(pod_spec: &Value) -> String {
    pod_spec["containers"][0]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A container ready to start: its process, its mounts, and what differs from a pod.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub spec: ProcessSpec,
    pub mounts: Mounts,
    pub notes: Vec<String>,
}

impl Prepared {
    /// `sh -c LINE sh ARGS…`: the user's command line with the container's arguments (after
    /// its program) as `"$@"`.
    pub fn shell_argv(&self, line: &str) -> Vec<String> {
        let mut argv = vec!["-c".to_owned(), line.to_owned(), "sh".to_owned()];
        argv.extend(self.spec.args.iter().cloned());
        argv
    }
}

/// The first container of `pod_spec` for the pod `pod`, its volumes written under `dir`;
/// `Ok(Err(..))` when the kubelet would not start it (its name and why).
pub async fn prepare(
    client: &Client,
    pod: &PodIdentity,
    pod_spec: &Value,
    dir: &Path,
) -> Result<Result<Prepared, (String, StartError)>, ContainerError> {
    let ctx = pod_context(client, pod, pod_spec).await?;
    let container = first_container(pod_spec);
    let spec = match olmpack_model::container::process_spec(pod_spec, &container, &ctx) {
        Ok(spec) => spec,
        Err(why) => return Ok(Err((container, why))),
    };
    let written = Materialised::write(&spec, dir, mount_namespaces_allowed())?;
    Ok(Ok(Prepared {
        spec,
        mounts: written.mounts,
        notes: written.notes,
    }))
}

/// How many times a container that exits is started again before it counts as
/// crash-looping (the kubelet restarts it for ever, with a back-off).
pub const RESTARTS: u32 = 2;

/// The wait before restart `n` (0-based): 1 s, then 2 s (the kubelet's 10 s, 20 s, …
/// shortened; the verdict is the same).
pub fn back_off(n: u32) -> std::time::Duration {
    std::time::Duration::from_secs(1 << n.min(4))
}

/// The last `n` lines of `text`.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The cluster's CA (PEM) from the first cluster of a kubeconfig (empty when unreadable).
pub fn cluster_ca(kubeconfig: &Path) -> String {
    use base64::Engine as _;
    let Ok(text) = std::fs::read_to_string(kubeconfig) else {
        return String::new();
    };
    let Ok(config) = serde_saphyr::from_str::<Value>(&text) else {
        return String::new();
    };
    let cluster = &config["clusters"][0]["cluster"];
    if let Some(data) = cluster["certificate-authority-data"].as_str() {
        let decoded = base64::engine::general_purpose::STANDARD.decode(data.trim());
        return decoded
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
    }
    cluster["certificate-authority"]
        .as_str()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::ChildProcess;
    use olmpack_model::container::MountSpec;

    fn spec(mount_at: &Path, workdir: &Path) -> ProcessSpec {
        let files = BTreeMap::from([("tls.crt".to_owned(), b"CERT".to_vec())]);
        ProcessSpec {
            container: "manager".into(),
            image: "controller:latest".into(),
            program: Some("/manager".into()),
            args: vec!["--leader-elect".into()],
            env: vec![
                ("WATCH_NAMESPACE".into(), "ns".into()),
                ("TMPDIR".into(), "/x".into()),
            ],
            working_dir: Some(workdir.display().to_string()),
            mounts: vec![
                MountSpec {
                    volume: "cert".into(),
                    path: mount_at.display().to_string(),
                    sub_path: String::new(),
                    read_only: true,
                },
                MountSpec {
                    volume: "scratch".into(),
                    path: workdir.display().to_string(),
                    sub_path: String::new(),
                    read_only: false,
                },
            ],
            volumes: BTreeMap::from([
                ("cert".to_owned(), Volume::Files(files)),
                ("scratch".to_owned(), Volume::EmptyDir),
            ]),
        }
    }

    /// The process sees its volumes at their mount paths (read-only where asked), starts in
    /// its working directory and gets `"$@"`; this machine sees none of it.
    #[test]
    fn a_container_sees_its_volumes_and_the_machine_does_not() {
        if !mount_namespaces_allowed() {
            assert!(
                std::env::var_os("CI").is_none(),
                "mount namespaces need root under CI"
            );
            eprintln!("a_container_sees_its_volumes_and_the_machine_does_not: NOT RUN: not root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mount_at = dir.path().join("certs");
        let workdir = dir.path().join("work");
        let spec = spec(&mount_at, &workdir);
        let written = Materialised::write(&spec, &dir.path().join("volumes"), true).unwrap();
        let prepared = Prepared {
            spec: spec.clone(),
            mounts: written.mounts,
            notes: written.notes,
        };
        let line = "cat certs/tls.crt 2>/dev/null; cat \"$0\"/../certs/tls.crt; \
                    echo \" $(pwd) $WATCH_NAMESPACE $TMPDIR $OLMPACK_CONTAINER_COMMAND $*\"; \
                    touch \"$(dirname \"$(pwd)\")/certs/x\" 2>/dev/null || echo read-only";
        let line = line.replace("\"$0\"/..", &dir.path().display().to_string());
        let env = merged_env(vec![("TMPDIR".into(), "/tmp/own".into())], &prepared.spec);
        let log = dir.path().join("log");
        let mut child = ChildProcess::start_container(
            "container",
            (Path::new("sh"), &prepared.shell_argv(&line)),
            &env,
            &log,
            None,
            prepared.mounts.clone(),
        )
        .unwrap();
        let started = std::time::Instant::now();
        while child.check_running().is_ok() {
            assert!(started.elapsed().as_secs() < 10, "still running");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            out,
            format!(
                "CERT {} ns /tmp/own /manager --leader-elect\nread-only\n",
                workdir.display()
            )
        );
        // The mount points exist here, empty: the files are only in the process's namespace.
        assert_eq!(std::fs::read_dir(&mount_at).unwrap().count(), 0);
    }
}
