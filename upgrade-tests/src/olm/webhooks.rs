//! Webhook servers for the fake pods of an [`super::OlmEnv`].
//!
//! For every Deployment OLM created a webhook serving certificate for (Secret
//! `<deployment>-service-cert` next to Service `<deployment>-service`), the host:
//! 1. writes the certificate and key OLM generated to files;
//! 2. starts the [`WebhookCommand`] with them, listening on 127.0.0.1:`$OLMPACK_WEBHOOK_PORT`,
//!    with a kubeconfig that acts as the Deployment's ServiceAccount (so the process has
//!    exactly the permissions OLM granted);
//! 3. relays this machine's non-loopback IPv4 address (a random port) to that port, and
//!    applies an EndpointSlice for the Service naming it — the apiserver routes webhook
//!    calls to endpoints (`--enable-aggregator-routing=true`) and refuses loopback endpoint
//!    addresses, hence the relay.
//!
//! When the Deployment changes (an upgrade) or OLM rotates the certificate, the process is
//! replaced make-before-break, as a rolling update does: the successor starts, its slice is
//! written, and the old process keeps serving a few seconds more for calls routed by the
//! apiserver's older view of the slices. A process goes with its Deployment, not with the
//! Secret: OLM deletes and recreates the Secret during an upgrade, while a pod keeps the files
//! it mounted (and serves the webhooks that admit OLM's own update of the Deployment).
//! Processes die with the host.
//!
//! Each process is the Deployment's first container as the kubelet starts it, from the pod
//! template OLM wrote ([`crate::container`]: its arguments as the shell line's `"$@"`, its
//! environment, its volumes in a mount namespace of its own). A process that exits is
//! started again after a back-off; one that exited after every one of
//! [`crate::container::RESTARTS`] restarts is a crash loop ([`WebhookHost::crash_loop`]),
//! which [`WebhookHost::wait_serving`] answers at once.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use olmpack_model::csv::CsvSpec;

use super::OlmError;
use crate::live::webhook::controller_runtime_cert_dir;
use crate::netns::ProcessNetwork;
use crate::process::{ChildProcess, free_port};

// The variables a [`WebhookCommand`] receives: one contract with `upgrade test`'s command
// (see `crate::live::webhook`), besides `KUBECONFIG`, `POD_NAMESPACE` and `POD_NAME`.
use crate::live::webhook::{
    CERT_DIR_ENV, CERT_FILE_ENV, DEPLOYMENT_ENV, IMAGE_ENV, KEY_FILE_ENV, NAMESPACE_ENV, PORT_ENV,
    RELEASE_ENV,
};

/// How long a started command may take to listen on its port.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(300);
/// How long a replaced process keeps serving after its successor's EndpointSlice is written:
/// the apiserver routes by its cached view of the slices, so calls may still reach the old
/// address for a moment (a kubelet, too, keeps the old pod until the new one is ready).
const RETIRE_GRACE: Duration = Duration::from_secs(5);
/// How long a process must have run for its exit not to count towards a crash loop (the
/// kubelet, too, forgets a container's back-off once it has run a while).
const STEADY: Duration = Duration::from_secs(30);

/// The command started as the process of a Deployment's pods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl WebhookCommand {
    /// A shell command line (or snippet) run as written by `sh -c LINE`, as the leader of its
    /// own process group, which is killed as a whole.
    pub fn shell(line: &str) -> Self {
        Self {
            program: PathBuf::from("/bin/sh"),
            args: vec!["-c".to_owned(), line.to_owned()],
        }
    }

    /// The arguments to start the program with for a container whose arguments (after its
    /// program) are `container_args`: a shell line gets them as `"$@"`; another program gets
    /// them after its own.
    pub fn args_for(&self, container_args: &[String]) -> Vec<String> {
        let mut args = self.args.clone();
        if matches!(args.first().map(String::as_str), Some("-c")) && args.len() == 2 {
            args.push("sh".to_owned());
        }
        args.extend(container_args.iter().cloned());
        args
    }
}

/// Starts and replaces webhook processes; see the module docs.
pub struct WebhookHost {
    state: Arc<Mutex<State>>,
    task: Option<tokio::task::JoinHandle<()>>,
    unavailable: Option<String>,
}

#[derive(Default)]
struct State {
    hosted: BTreeMap<String, Hosted>,
    /// Every process start, in order: `deployment (image): log file`.
    started: Vec<String>,
    /// The last problem per Deployment (cleared when it is hosted).
    problems: BTreeMap<String, String>,
    /// Replaced processes still serving, with when they were replaced.
    retiring: Vec<(std::time::Instant, Hosted)>,
    /// The release processes start as, when the Deployments do not say (OLM v1's).
    release: Option<String>,
    /// Per Deployment, how its current pod template's process exited so far.
    exits: BTreeMap<String, Exits>,
}

/// The exits of one Deployment's process at one fingerprint (a kubelet's restart count).
struct Exits {
    fingerprint: String,
    count: u32,
    last: std::time::Instant,
    /// The crash-loop verdict once the process exited after every restart.
    crash_loop: Option<String>,
}

struct Hosted {
    fingerprint: String,
    /// The Deployment generation the process stands in for.
    generation: i64,
    process: ChildProcess,
    /// When it started (an exit after [`STEADY`] of running is no crash loop).
    started: std::time::Instant,
    /// Where the process listens; its relays stop with it.
    _network: ProcessNetwork,
}

impl std::fmt::Debug for WebhookHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookHost")
            .field("unavailable", &self.unavailable)
            .finish_non_exhaustive()
    }
}

/// What one reconcile pass needs.
struct Ctx {
    client: Client,
    namespace: String,
    command: WebhookCommand,
    admin_kubeconfig: PathBuf,
    dir: PathBuf,
    host_ip: Ipv4Addr,
    state: Arc<Mutex<State>>,
}

impl WebhookHost {
    /// Starts hosting webhooks of Deployments in `namespace` (nothing when `command` is
    /// `None` or no address can carry the EndpointSlices).
    pub fn start(
        client: Client,
        namespace: &str,
        command: Option<WebhookCommand>,
        admin_kubeconfig: PathBuf,
        dir: PathBuf,
    ) -> Result<Self, OlmError> {
        let state = Arc::new(Mutex::new(State::default()));
        let Some(command) = command else {
            return Ok(Self {
                state,
                task: None,
                unavailable: Some("no webhook command was given".to_owned()),
            });
        };
        let Some(host_ip) = host_ipv4() else {
            return Ok(Self {
                state,
                task: None,
                unavailable: Some(
                    "this machine has no non-loopback IPv4 address for webhook EndpointSlices"
                        .to_owned(),
                ),
            });
        };
        std::fs::create_dir_all(&dir).map_err(|source| OlmError::Write {
            path: dir.clone(),
            source,
        })?;
        let ctx = Ctx {
            client,
            namespace: namespace.to_owned(),
            command,
            admin_kubeconfig,
            dir,
            host_ip,
            state: state.clone(),
        };
        let task = tokio::spawn(async move {
            loop {
                ctx.reconcile().await;
                tokio::time::sleep(POLL).await;
            }
        });
        Ok(Self {
            state,
            task: Some(task),
            unavailable: None,
        })
    }

    /// `Err(why)` when webhook calls cannot reach a process.
    pub fn available(&self) -> Result<(), String> {
        match &self.unavailable {
            Some(why) => Err(why.clone()),
            None => Ok(()),
        }
    }

    /// The PIDs of the running webhook processes.
    pub fn pids(&self) -> Vec<u32> {
        let state = self.lock();
        state
            .hosted
            .values()
            .chain(state.retiring.iter().map(|(_, h)| h))
            .map(|h| h.process.pid())
            .collect()
    }

    /// Names the release (`OLMPACK_RELEASE`) of processes started from now on, for
    /// Deployments that do not name theirs: OLM v0 labels each with its CSV (`olm.owner`),
    /// OLM v1 does not, so its driver says which bundle it is installing.
    pub fn set_release(&self, release: &str) {
        self.lock().release = Some(release.to_owned());
    }

    /// Waits until every Deployment of `deployments` in `namespace` exists and a process
    /// stands in for its current generation; `Err` says which did not within `timeout`, and
    /// why when known.
    pub async fn wait_serving(
        &self,
        client: &Client,
        namespace: &str,
        deployments: &[String],
        timeout: Duration,
    ) -> Result<(), String> {
        self.available()?;
        let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
        let deadline = std::time::Instant::now() + timeout;
        for name in deployments {
            loop {
                let generation = api
                    .get_opt(name)
                    .await
                    .ok()
                    .flatten()
                    .and_then(|d| d.metadata.generation);
                if generation.is_some() && self.serving_generation(name) == generation {
                    break;
                }
                if let Some(words) = self.crash_loop(name) {
                    return Err(words);
                }
                if std::time::Instant::now() >= deadline {
                    let problem = self.problems().get(name).cloned();
                    return Err(format!(
                        "no webhook process served Deployment {name} after {timeout:?}{}",
                        problem.map(|p| format!(": {p}")).unwrap_or_default()
                    ));
                }
                tokio::time::sleep(POLL).await;
            }
        }
        Ok(())
    }

    /// Why `deployment`'s pod would crash-loop: its process exited after every restart
    /// (`None` while it runs or may still start).
    pub fn crash_loop(&self, deployment: &str) -> Option<String> {
        self.lock()
            .exits
            .get(deployment)
            .and_then(|e| e.crash_loop.clone())
    }

    /// Why each Deployment whose pod would crash-loop does, in Deployment order; they are
    /// forgotten (a case reports them once, the next case starts clean).
    pub fn take_crash_loops(&self) -> Vec<String> {
        let mut state = self.lock();
        let looping: Vec<String> = state
            .exits
            .iter()
            .filter(|(_, e)| e.crash_loop.is_some())
            .map(|(d, _)| d.clone())
            .collect();
        looping
            .iter()
            .filter_map(|d| state.exits.remove(d).and_then(|e| e.crash_loop))
            .collect()
    }

    /// The Deployment generation whose process serves `deployment`'s webhooks now.
    pub fn serving_generation(&self, deployment: &str) -> Option<i64> {
        self.lock().hosted.get(deployment).map(|h| h.generation)
    }

    /// Every process started so far (`deployment (image): log`), oldest first.
    pub fn started(&self) -> Vec<String> {
        self.lock().started.clone()
    }

    /// Why a Deployment's webhook process is not running, per Deployment.
    pub fn problems(&self) -> BTreeMap<String, String> {
        self.lock().problems.clone()
    }

    /// The end of every running webhook process's log.
    pub fn log_tails(&self) -> String {
        self.lock()
            .hosted
            .iter()
            .map(|(name, h)| {
                format!(
                    "--- webhook process of {name} ---\n{}",
                    h.process.log_tail()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Stops hosting: no more processes start, and the running ones are killed.
    pub fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        let mut state = self.lock();
        state.hosted.clear();
        state.retiring.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl State {
    /// Counts an exit of `deployment`'s process at `fingerprint` (`what`: the container,
    /// its release and its last output); after [`crate::container::RESTARTS`] restarts it is
    /// a crash loop.
    fn exited(&mut self, deployment: &str, fingerprint: &str, what: &str) {
        let entry = self
            .exits
            .entry(deployment.to_owned())
            .or_insert_with(|| Exits {
                fingerprint: fingerprint.to_owned(),
                count: 0,
                last: std::time::Instant::now(),
                crash_loop: None,
            });
        if entry.fingerprint != fingerprint {
            entry.fingerprint = fingerprint.to_owned();
            entry.count = 0;
            entry.crash_loop = None;
        }
        entry.count += 1;
        entry.last = std::time::Instant::now();
        let restarts = entry.count - 1;
        if restarts >= crate::container::RESTARTS {
            entry.crash_loop = Some(format!(
                "Deployment {deployment}: {what} — it exited {} times, the last after {restarts} restart(s): the pod would crash-loop",
                entry.count
            ));
        }
    }

    /// Whether `deployment`'s process may start (again) now: not after a crash loop, and
    /// only after the back-off since its last exit at the same fingerprint.
    fn may_start(&self, deployment: &str, fingerprint: &str) -> bool {
        match self.exits.get(deployment) {
            Some(e) if e.fingerprint == fingerprint => {
                e.crash_loop.is_none()
                    && e.last.elapsed() >= crate::container::back_off(e.count.saturating_sub(1))
            }
            _ => true,
        }
    }
}

/// Why a process did not come up: it exited (its container, release and last output), or
/// something else went wrong.
enum Spawn {
    Exited(String),
    Other(String),
}

impl From<String> for Spawn {
    fn from(problem: String) -> Self {
        Spawn::Other(problem)
    }
}

/// The last lines of an exited process's output, from its error.
fn hosted_tail(exited: &crate::process::ProcessError) -> String {
    match exited {
        crate::process::ProcessError::Exited {
            name,
            status,
            log_tail,
        } => format!(
            "{name} exited ({status}); its last output:\n{}",
            crate::container::last_lines(log_tail, 20)
        ),
        other => other.to_string(),
    }
}

impl Drop for WebhookHost {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Ctx {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn reconcile(&self) {
        self.lock()
            .retiring
            .retain(|(since, _)| since.elapsed() < RETIRE_GRACE);
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        let Ok(list) = secrets.list(&ListParams::default()).await else {
            return;
        };
        let mut wanted = BTreeMap::new();
        for secret in list.items {
            let name = secret.metadata.name.clone().unwrap_or_default();
            if let Some(deployment) = name.strip_suffix("-service-cert") {
                wanted.insert(deployment.to_owned(), secret);
            }
        }
        let unlisted: Vec<String> = self
            .lock()
            .hosted
            .keys()
            .filter(|d| !wanted.contains_key(*d))
            .cloned()
            .collect();
        // A pod keeps the certificate files it mounted when the Secret goes (OLM deletes and
        // recreates it during an upgrade): its process goes only with its Deployment.
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), &self.namespace);
        for deployment in unlisted {
            if let Ok(None) = deployments.get_opt(&deployment).await {
                self.retire(&deployment);
            }
        }
        for (deployment, secret) in wanted {
            if let Err(problem) = self.host(&deployment, &secret).await {
                self.lock().problems.insert(deployment, problem);
            }
        }
    }

    /// Stops hosting `deployment`, whose Deployment is gone: its process keeps serving for
    /// [`RETIRE_GRACE`], as a terminating pod does for calls routed by an older view.
    fn retire(&self, deployment: &str) {
        let mut state = self.lock();
        if let Some(old) = state.hosted.remove(deployment) {
            tracing::debug!(%deployment, "webhook host: Deployment gone, process retired");
            state.retiring.push((std::time::Instant::now(), old));
        }
    }

    /// Makes sure the current process of `deployment` runs and its EndpointSlice exists.
    async fn host(&self, deployment: &str, secret: &Secret) -> Result<(), String> {
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), &self.namespace);
        let Some(found) = deployments
            .get_opt(deployment)
            .await
            .map_err(|e| e.to_string())?
        else {
            self.retire(deployment);
            return Ok(());
        };
        let fingerprint = format!(
            "{}/{}/{}",
            found.metadata.uid.clone().unwrap_or_default(),
            found.metadata.generation.unwrap_or_default(),
            secret.metadata.resource_version.clone().unwrap_or_default()
        );
        {
            let mut guard = self.lock();
            let state: &mut State = &mut guard;
            if let Some(hosted) = state.hosted.get_mut(deployment) {
                match hosted.process.check_running() {
                    Ok(()) if hosted.fingerprint == fingerprint => return Ok(()),
                    // Replaced below: it serves until its successor is listening.
                    Ok(()) => {}
                    Err(exited) => {
                        tracing::debug!(%deployment, %exited, "webhook host: process exited");
                        let early = hosted.started.elapsed() < STEADY;
                        state
                            .problems
                            .insert(deployment.to_owned(), exited.to_string());
                        state.hosted.remove(deployment);
                        if early {
                            state.exited(deployment, &fingerprint, &hosted_tail(&exited));
                        }
                    }
                }
            }
            if !state.may_start(deployment, &fingerprint) {
                return Ok(());
            }
        }
        tracing::debug!(%deployment, %fingerprint, "webhook host: starting a process");
        let hosted = match self
            .spawn(deployment, &found, secret, fingerprint.clone())
            .await
        {
            Ok(hosted) => hosted,
            Err(Spawn::Exited(tail)) => {
                self.lock().exited(deployment, &fingerprint, &tail);
                return Err(format!("its process exited: {tail}"));
            }
            Err(Spawn::Other(problem)) => return Err(problem),
        };
        let mut state = self.lock();
        state.problems.remove(deployment);
        if let Some(old) = state.hosted.insert(deployment.to_owned(), hosted) {
            state.retiring.push((std::time::Instant::now(), old));
        }
        Ok(())
    }

    async fn spawn(
        &self,
        deployment: &str,
        found: &Deployment,
        secret: &Secret,
        fingerprint: String,
    ) -> Result<Hosted, Spawn> {
        let data = secret.data.clone().unwrap_or_default();
        let (Some(cert), Some(key)) = (data.get("tls.crt"), data.get("tls.key")) else {
            return Err(Spawn::Other(format!(
                "Secret {deployment}-service-cert has no tls.crt or tls.key"
            )));
        };
        let generation = found.metadata.generation.unwrap_or_default();
        // One directory per start: a replaced process may still be serving from its own.
        let start = self.lock().started.len();
        let deployment_file = olmpack_model::file_name::FileName::or_hash(deployment);
        let dir = self
            .dir
            .join(format!("{deployment_file}-{generation}-{start}"));
        let _ = std::fs::create_dir_all(&dir);
        // Also under the names OLM mounts them with (controller-runtime reads tls.*).
        for (name, bytes) in [
            ("tls.crt", &cert.0),
            ("tls.key", &key.0),
            ("apiserver.crt", &cert.0),
            ("apiserver.key", &key.0),
        ] {
            std::fs::write(dir.join(name), bytes).map_err(|e| e.to_string())?;
        }
        let kubeconfig = dir.join("kubeconfig");
        write_impersonating_kubeconfig(
            &self.admin_kubeconfig,
            &kubeconfig,
            &self.namespace,
            &service_account(found),
        )?;
        let container = self.container(deployment, found, &dir).await?;
        let port = free_port().map_err(|e| e.to_string())?;
        let (mut network, _) = ProcessNetwork::for_process(Some(&kubeconfig), port).await;
        let tmp = controller_runtime_cert_dir(&dir.join("tmp"), &cert.0, &key.0)
            .map_err(|e| e.to_string())?;
        let (env, image) = self.process_env(deployment, found, &dir, network.listen_port());
        let env = [env, vec![("TMPDIR".to_owned(), tmp.display().to_string())]].concat();
        let env = crate::container::merged_env(env, &container.spec);
        let log = dir.join("process.log");
        let args = self.command.args_for(&container.spec.args);
        let mut process = ChildProcess::start_container(
            &format!("container {} of {deployment}", container.spec.container),
            (&self.command.program, &args),
            &env,
            &log,
            network.namespace(),
            container.mounts.clone(),
        )
        .map_err(|e| e.to_string())?;
        self.lock()
            .started
            .push(format!("{deployment} ({image}): {}", log.display()));
        let net = &network;
        match crate::process::wait_until(&mut process, LISTEN_TIMEOUT, || net.accepting()).await {
            Ok(()) => {}
            Err(exited @ crate::process::ProcessError::Exited { .. }) => {
                return Err(Spawn::Exited(hosted_tail(&exited)));
            }
            Err(other) => return Err(Spawn::Other(other.to_string())),
        }
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(IpAddr::V4(self.host_ip), 0))
            .await
            .map_err(|e| format!("no port on {} for the webhook relay: {e}", self.host_ip))?;
        let relay_port = listener.local_addr().map_err(|e| e.to_string())?.port();
        network.relay_in(listener);
        self.apply_slice(deployment, relay_port).await?;
        tracing::debug!(%deployment, relay_port, "webhook host: process serving");
        Ok(Hosted {
            fingerprint,
            generation,
            process,
            started: std::time::Instant::now(),
            _network: network,
        })
    }

    /// The Deployment's first container as the kubelet would start it, from the pod template
    /// OLM wrote (its certificate volumes included) and the Secrets and ConfigMaps of the
    /// namespace; `Err` in the kubelet's words when it would not start it.
    async fn container(
        &self,
        deployment: &str,
        found: &Deployment,
        dir: &Path,
    ) -> Result<crate::container::Prepared, String> {
        let template = &found.spec.template;
        let pod_spec = serde_json::to_value(&template.spec).unwrap_or_default();
        let meta = template.metadata.clone().unwrap_or_default();
        let generation = found.metadata.generation.unwrap_or_default();
        let pod = crate::container::PodIdentity {
            name: format!("{deployment}-{generation}-olmpack"),
            namespace: self.namespace.clone(),
            labels: meta.labels.unwrap_or_default(),
            annotations: meta.annotations.unwrap_or_default(),
            ca_pem: crate::container::cluster_ca(&self.admin_kubeconfig),
        };
        match crate::container::prepare(&self.client, &pod, &pod_spec, &dir.join("volumes"))
            .await
            .map_err(|e| e.to_string())?
        {
            Ok(prepared) => Ok(prepared),
            Err((container, why)) => Err(format!(
                "the kubelet does not start container {container} of Deployment {deployment}: {why}"
            )),
        }
    }

    /// The environment of the webhook process of `deployment` (the one contract with
    /// `upgrade test`'s command), with the kubeconfig it names written into `dir`; also the
    /// image of the Deployment's first container.
    fn process_env(
        &self,
        deployment: &str,
        found: &Deployment,
        dir: &Path,
        port: u16,
    ) -> (Vec<(String, String)>, String) {
        let pod = found.spec.template.spec.as_ref();
        let image = pod
            .and_then(|p| p.containers.first())
            .and_then(|c| c.image.clone())
            .unwrap_or_default();
        // OLM v0 labels what a CSV installs with the CSV's name.
        let release = found
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("olm.owner"))
            .cloned()
            .or_else(|| self.lock().release.clone())
            .unwrap_or_default();
        let generation = found.metadata.generation.unwrap_or_default();
        let kubeconfig = dir.join("kubeconfig");
        let env = [
            (CERT_FILE_ENV, dir.join("tls.crt").display().to_string()),
            (KEY_FILE_ENV, dir.join("tls.key").display().to_string()),
            (CERT_DIR_ENV, dir.display().to_string()),
            (PORT_ENV, port.to_string()),
            (DEPLOYMENT_ENV, deployment.to_owned()),
            (IMAGE_ENV, image.clone()),
            (RELEASE_ENV, release),
            (NAMESPACE_ENV, self.namespace.clone()),
            ("KUBECONFIG", kubeconfig.display().to_string()),
            ("POD_NAMESPACE", self.namespace.clone()),
            ("POD_NAME", format!("{deployment}-{generation}-olmpack")),
        ]
        .map(|(k, v)| (k.to_owned(), v))
        .to_vec();
        (env, image)
    }

    /// Points OLM's webhook Service `<deployment>-service` at the relay.
    async fn apply_slice(&self, deployment: &str, port: u16) -> Result<(), String> {
        let service_name = format!("{deployment}-service");
        let services: Api<Service> = Api::namespaced(self.client.clone(), &self.namespace);
        let service = services
            .get(&service_name)
            .await
            .map_err(|e| format!("Service {service_name}: {e}"))?;
        let ports: Vec<serde_json::Value> = service
            .spec
            .and_then(|s| s.ports)
            .unwrap_or_default()
            .into_iter()
            .map(|p| json!({"name": p.name.unwrap_or_default(), "port": port, "protocol": "TCP"}))
            .collect();
        let name = format!("{service_name}-olmpack");
        let slice = json!({
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {
                    "kubernetes.io/service-name": service_name,
                    "endpointslice.kubernetes.io/managed-by": "olmpack.dev",
                },
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [self.host_ip.to_string()], "conditions": {"ready": true}}],
            "ports": ports,
        });
        let slices: Api<EndpointSlice> = Api::namespaced(self.client.clone(), &self.namespace);
        slices
            .patch(
                &name,
                &PatchParams::apply("olmpack").force(),
                &Patch::Apply(&slice),
            )
            .await
            .map_err(|e| format!("EndpointSlice {name}: {e}"))?;
        Ok(())
    }
}

/// The types of the webhooks a CSV's `spec` declares (`webhookdefinitions[].type`), in
/// order: all, or with `conversion_only` its `ConversionWebhook`s only (what reading objects
/// at another version needs).
pub fn declared_webhooks(spec: &CsvSpec, conversion_only: bool) -> Vec<&str> {
    spec.webhookdefinitions
        .iter()
        .flatten()
        .filter_map(|d| d.type_.as_deref())
        .filter(|t| !conversion_only || *t == "ConversionWebhook")
        .collect()
}

/// The Deployments serving the webhooks of a CSV's `spec` (`webhookdefinitions[].deploymentName`),
/// sorted, each once.
pub fn webhook_deployments(spec: &CsvSpec) -> Vec<String> {
    let mut deployments: Vec<String> = spec
        .webhookdefinitions
        .iter()
        .flatten()
        .filter_map(|d| d.deployment_name.clone())
        .collect();
    deployments.sort();
    deployments.dedup();
    deployments
}

/// The ServiceAccount the Deployment's pods run as.
fn service_account(found: &Deployment) -> String {
    found
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.service_account_name.clone())
        .unwrap_or_else(|| "default".to_owned())
}

/// A kubeconfig like `admin` (JSON) that impersonates ServiceAccount `namespace/account`.
fn write_impersonating_kubeconfig(
    admin: &Path,
    out: &Path,
    namespace: &str,
    account: &str,
) -> Result<(), String> {
    let text = std::fs::read_to_string(admin).map_err(|e| e.to_string())?;
    let mut config: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    if let Some(users) = config.get_mut("users").and_then(|u| u.as_array_mut()) {
        for user in users {
            user["user"]["as"] = json!(format!("system:serviceaccount:{namespace}:{account}"));
            user["user"]["as-groups"] = json!([
                "system:serviceaccounts",
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated",
            ]);
        }
    }
    std::fs::write(out, config.to_string()).map_err(|e| e.to_string())
}

/// This machine's own IPv4 address on its default route, if it has one that is neither
/// loopback nor link-local (what an EndpointSlice may hold). No packet is sent.
pub fn host_ipv4() -> Option<Ipv4Addr> {
    [
        "192.0.2.1:9",
        "10.255.255.254:9",
        "172.31.255.254:9",
        "8.8.8.8:53",
    ]
    .iter()
    .find_map(|target| {
        let socket = std::net::UdpSocket::bind(("0.0.0.0", 0)).ok()?;
        socket.connect(target).ok()?;
        match socket.local_addr().ok()?.ip() {
            IpAddr::V4(ip) if !ip.is_loopback() && !ip.is_link_local() && !ip.is_unspecified() => {
                Some(ip)
            }
            _ => None,
        }
    })
}
