//! The processes of the fake pods of an [`super::v0::OlmEnv`] (and of an OLM v1 install): with a
//! [`WebhookCommand`], every Deployment in the namespace gets one, as a kubelet would start
//! its pod — also a Deployment serving no webhooks, whose process may exit (a crash loop)
//! like any other.
//!
//! For every Deployment OLM created a webhook serving certificate for (Secret
//! `<deployment>-service-cert` next to Service `<deployment>-service`), the host also:
//! 1. writes the certificate and key OLM generated to files;
//! 2. starts the [`WebhookCommand`] with them, listening on 127.0.0.1:`$OLMPACK_WEBHOOK_PORT`,
//!    with a kubeconfig that acts as the Deployment's ServiceAccount (so the process has
//!    exactly the permissions OLM granted);
//! 3. relays this machine's non-loopback IPv4 address (a random port) to that port, and
//!    applies an EndpointSlice for the Service naming it — the apiserver routes webhook
//!    calls to endpoints (`--enable-aggregator-routing=true`) and refuses loopback endpoint
//!    addresses, hence the relay.
//!
//! A Deployment serving no webhooks gets its process with the same kubeconfig and
//! environment but no certificate (none is mounted where OLM mounts none), no port it must
//! listen on, and no EndpointSlice.
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
//! which [`WebhookHost::wait_serving`] answers at once and [`WebhookHost::wait_settled`]
//! waits for after each install step (so a process that cannot run is a verdict in seconds
//! whether or not anything needs its webhooks).

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
use std::collections::BTreeSet;

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
/// How long a started process must keep running for [`WebhookHost::wait_settled`] to take
/// it as running (a process that cannot run exits well within it: a missing file, flag or
/// variable ends a manager during its set-up).
const SETTLE: Duration = Duration::from_secs(5);
/// How long a driver waits at most for the processes to settle after a step
/// ([`WebhookHost::wait_settled`]): a process starting (and listening) in time, or three
/// exits with the back-offs between them, take well under it.
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

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

/// Starts and replaces the processes of a namespace's Deployments (and serves their webhooks);
/// see the module docs.
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
    /// Every crash loop found since [`WebhookHost::take_crash_loops`] (kept when the
    /// Deployment changes afterwards: an upgrade does not undo an install's crash loop).
    crash_loops: Vec<String>,
    /// Per Deployment, the generation and start of its process that has not exited (yet);
    /// also while it is not listening.
    launched: BTreeMap<String, (i64, std::time::Instant)>,
    /// Per Deployment, the generation whose container the kubelet would not start.
    refused: BTreeMap<String, i64>,
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
    /// Starts hosting the processes of the Deployments in `namespace` and their webhooks
    /// (nothing when `command` is `None` or no address can carry the EndpointSlices).
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

    /// The PIDs of the running processes.
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

    /// Why each Deployment whose pod would crash-loop does — every crash loop found since
    /// the last call, also of a pod template the Deployment has left since — in Deployment
    /// order; they are forgotten (a case reports them once, the next case starts clean).
    pub fn take_crash_loops(&self) -> Vec<String> {
        let mut state = self.lock();
        state.exits.retain(|_, e| e.crash_loop.is_none());
        let mut found = std::mem::take(&mut state.crash_loops);
        found.sort();
        found.dedup();
        found
    }

    /// Waits until the process of every Deployment in `namespace` has been running at the
    /// Deployment's current generation for [`SETTLE`], or would crash-loop, or the kubelet
    /// would not start it — at most `timeout` (then it returns as well: what is still
    /// starting is judged by whatever waits for it next). Nothing to wait for without a
    /// command. Called after a step OLM finished, so that a process that cannot run is found
    /// before the case goes on or ends, whether or not its Deployment serves webhooks.
    pub async fn wait_settled(&self, client: &Client, namespace: &str, timeout: Duration) {
        if self.available().is_err() {
            return;
        }
        let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            let Ok(list) = api.list(&ListParams::default()).await else {
                tokio::time::sleep(POLL).await;
                continue;
            };
            let unsettled = list.items.iter().find(|d| !self.settled(d));
            let Some(deployment) = unsettled else {
                return;
            };
            let name = deployment.metadata.name.as_deref().unwrap_or_default();
            tracing::debug!(%name, "webhook host: waiting for the process to settle");
            tokio::time::sleep(POLL).await;
        }
    }

    /// Whether `deployment`'s process is settled ([`Self::wait_settled`]).
    fn settled(&self, deployment: &Deployment) -> bool {
        let name = deployment.metadata.name.clone().unwrap_or_default();
        let generation = deployment.metadata.generation.unwrap_or_default();
        let mut state = self.lock();
        let looped = state
            .exits
            .get(&name)
            .is_some_and(|e| e.crash_loop.is_some());
        let alive = state
            .hosted
            .get_mut(&name)
            .is_none_or(|h| h.process.check_running().is_ok());
        let running = alive
            && state
                .launched
                .get(&name)
                .is_some_and(|(g, since)| *g == generation && since.elapsed() >= SETTLE);
        looped || running || state.refused.get(&name) == Some(&generation)
    }

    /// The Deployment generation whose process serves `deployment`'s webhooks now.
    pub fn serving_generation(&self, deployment: &str) -> Option<i64> {
        self.lock().hosted.get(deployment).map(|h| h.generation)
    }

    /// Every process started so far (`deployment (image): log`), oldest first.
    pub fn started(&self) -> Vec<String> {
        self.lock().started.clone()
    }

    /// Why a Deployment's process is not running, per Deployment.
    pub fn problems(&self) -> BTreeMap<String, String> {
        self.lock().problems.clone()
    }

    /// The end of every running process's log.
    pub fn log_tails(&self) -> String {
        self.lock()
            .hosted
            .iter()
            .map(|(name, h)| {
                format!(
                    "--- process of Deployment {name} ---\n{}",
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
    /// Counts an exit of `deployment`'s process at `fingerprint` (`exit`: the container,
    /// its release, its status and its last output); after [`crate::container::RESTARTS`]
    /// restarts it is a crash loop.
    fn exited(&mut self, deployment: &str, fingerprint: &str, exit: &Exit) {
        self.launched.remove(deployment);
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
        if restarts >= crate::container::RESTARTS && entry.crash_loop.is_none() {
            let words = format!(
                "Deployment {deployment}: {} {} times, the last after {restarts} restart(s): the pod would crash-loop; its last output:\n{}",
                exit.what, entry.count, exit.output
            );
            entry.crash_loop = Some(words.clone());
            self.crash_loops.push(words);
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

/// Why a process did not come up: it exited, the kubelet would not start its container (in
/// its words), or something else went wrong.
enum Spawn {
    Exited(Exit),
    Refused(String),
    Other(String),
}

/// How a process exited: `container C of RELEASE exited (STATUS)`, and its last lines.
struct Exit {
    what: String,
    output: String,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; its last output:\n{}", self.what, self.output)
    }
}

impl From<String> for Spawn {
    fn from(problem: String) -> Self {
        Spawn::Other(problem)
    }
}

/// How a process exited, from its error.
fn exit_of(exited: &crate::process::ProcessError) -> Exit {
    match exited {
        crate::process::ProcessError::Exited {
            name,
            status,
            log_tail,
        } => Exit {
            what: format!("{name} exited ({status})"),
            output: crate::container::last_lines(log_tail, 20),
        },
        other => Exit {
            what: other.to_string(),
            output: String::new(),
        },
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
        // Deployments first: OLM creates a Deployment's webhook Service (and, OLM v0, its
        // Secret) before the Deployment, so the lists read next show them for every
        // Deployment of this one.
        let Ok(deployments) = self.list::<Deployment>().await else {
            return;
        };
        let (Ok(services), Ok(secrets)) =
            (self.list::<Service>().await, self.list::<Secret>().await)
        else {
            return;
        };
        let services: BTreeSet<String> = services
            .into_iter()
            .filter_map(|s| s.metadata.name)
            .collect();
        let mut certs: BTreeMap<String, Secret> = secrets
            .into_iter()
            .filter_map(|s| {
                let name = s.metadata.name.as_deref()?;
                let deployment = name.strip_suffix("-service-cert")?.to_owned();
                Some((deployment, s))
            })
            .collect();
        let present: BTreeSet<String> = deployments
            .iter()
            .filter_map(|d| d.metadata.name.clone())
            .collect();
        let gone: Vec<String> = self
            .lock()
            .hosted
            .keys()
            .filter(|d| !present.contains(*d))
            .cloned()
            .collect();
        for deployment in gone {
            self.retire(&deployment);
        }
        for found in &deployments {
            let name = found.metadata.name.clone().unwrap_or_default();
            let secret = certs.remove(&name);
            if secret.is_none() && serves_webhooks(found, &services) {
                // A pod keeps the certificate files it mounted when the Secret goes (OLM
                // deletes and recreates it during an upgrade); a new one waits for it.
                let mut state = self.lock();
                if !state.hosted.contains_key(&name) {
                    let waiting = format!(
                        "waiting for Secret {name}-service-cert, the serving certificate of its webhooks"
                    );
                    state.problems.insert(name, waiting);
                }
                continue;
            }
            if let Err(problem) = self.host(&name, found, secret.as_ref()).await {
                self.lock().problems.insert(name, problem);
            }
        }
    }

    /// Every object of kind `K` in the namespace.
    async fn list<K>(&self) -> Result<Vec<K>, kube::Error>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
        K::DynamicType: Default,
    {
        let api: Api<K> = Api::namespaced(self.client.clone(), &self.namespace);
        Ok(api.list(&ListParams::default()).await?.items)
    }

    /// Stops hosting `deployment`, whose Deployment is gone: its process keeps serving for
    /// [`RETIRE_GRACE`], as a terminating pod does for calls routed by an older view.
    fn retire(&self, deployment: &str) {
        let mut state = self.lock();
        state.launched.remove(deployment);
        if let Some(old) = state.hosted.remove(deployment) {
            tracing::debug!(%deployment, "webhook host: Deployment gone, process retired");
            state.retiring.push((std::time::Instant::now(), old));
        }
    }

    /// Makes sure the current process of Deployment `found` runs and, when it serves
    /// webhooks with the certificate in `secret`, its EndpointSlice exists.
    async fn host(
        &self,
        deployment: &str,
        found: &Deployment,
        secret: Option<&Secret>,
    ) -> Result<(), String> {
        let fingerprint = format!(
            "{}/{}/{}",
            found.metadata.uid.clone().unwrap_or_default(),
            found.metadata.generation.unwrap_or_default(),
            secret
                .and_then(|s| s.metadata.resource_version.clone())
                .unwrap_or_default()
        );
        if !self.may_start(deployment, &fingerprint) {
            return Ok(());
        }
        tracing::debug!(%deployment, %fingerprint, "webhook host: starting a process");
        let hosted = match self
            .spawn(deployment, found, secret, fingerprint.clone())
            .await
        {
            Ok(hosted) => hosted,
            Err(Spawn::Exited(exit)) => {
                let words = format!("its process exited: {exit}");
                self.lock().exited(deployment, &fingerprint, &exit);
                return Err(words);
            }
            Err(Spawn::Refused(why)) => {
                let generation = found.metadata.generation.unwrap_or_default();
                self.lock()
                    .refused
                    .insert(deployment.to_owned(), generation);
                return Err(why);
            }
            Err(Spawn::Other(problem)) => return Err(problem),
        };
        let mut state = self.lock();
        state.problems.remove(deployment);
        state.refused.remove(deployment);
        if let Some(old) = state.hosted.insert(deployment.to_owned(), hosted) {
            state.retiring.push((std::time::Instant::now(), old));
        }
        Ok(())
    }

    /// Whether a process for `deployment` at `fingerprint` is to be started now: none runs
    /// at it (one that exited is counted), and the back-off since its last exit is over.
    fn may_start(&self, deployment: &str, fingerprint: &str) -> bool {
        let mut guard = self.lock();
        let state: &mut State = &mut guard;
        if let Some(hosted) = state.hosted.get_mut(deployment) {
            match hosted.process.check_running() {
                Ok(()) if hosted.fingerprint == fingerprint => return false,
                // Replaced: it serves until its successor is listening.
                Ok(()) => {}
                Err(exited) => {
                    tracing::debug!(%deployment, %exited, "webhook host: process exited");
                    let early = hosted.started.elapsed() < STEADY;
                    let exit = exit_of(&exited);
                    state
                        .problems
                        .insert(deployment.to_owned(), exited.to_string());
                    state.hosted.remove(deployment);
                    state.launched.remove(deployment);
                    if early {
                        state.exited(deployment, fingerprint, &exit);
                    }
                }
            }
        }
        state.may_start(deployment, fingerprint)
    }

    async fn spawn(
        &self,
        deployment: &str,
        found: &Deployment,
        secret: Option<&Secret>,
        fingerprint: String,
    ) -> Result<Hosted, Spawn> {
        let generation = found.metadata.generation.unwrap_or_default();
        let files = self.files(deployment, found, secret)?;
        let dir = &files.dir;
        let container = self.container(deployment, found, dir).await?;
        let port = free_port().map_err(|e| e.to_string())?;
        let kubeconfig = dir.join("kubeconfig");
        let (mut network, _) = ProcessNetwork::for_process(Some(&kubeconfig), port).await;
        let release = self.release(found);
        let env = self.process_env(deployment, found, &files, network.listen_port());
        let env = crate::container::merged_env(env, &container.spec);
        let log = dir.join("process.log");
        let args = self.command.args_for(&container.spec.args);
        let name = format!("container {} of {release}", container.spec.container);
        let mut process = ChildProcess::start_container(
            &name,
            (&self.command.program, &args),
            &env,
            &log,
            network.namespace(),
            container.mounts.clone(),
        )
        .map_err(|e| e.to_string())?;
        {
            let mut state = self.lock();
            let image = &container.spec.image;
            state
                .started
                .push(format!("{deployment} ({image}): {}", log.display()));
            let now = std::time::Instant::now();
            state
                .launched
                .insert(deployment.to_owned(), (generation, now));
        }
        if files.certificate.is_some() {
            self.serve(deployment, &mut process, &mut network).await?;
        }
        Ok(Hosted {
            fingerprint,
            generation,
            process,
            started: std::time::Instant::now(),
            _network: network,
        })
    }

    /// Waits until the process of `deployment` listens, then relays this machine's address
    /// to it and points the Deployment's webhook Service there.
    async fn serve(
        &self,
        deployment: &str,
        process: &mut ChildProcess,
        network: &mut ProcessNetwork,
    ) -> Result<(), Spawn> {
        let net = &*network;
        match crate::process::wait_until(process, LISTEN_TIMEOUT, || net.accepting()).await {
            Ok(()) => {}
            Err(exited @ crate::process::ProcessError::Exited { .. }) => {
                return Err(Spawn::Exited(exit_of(&exited)));
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
        Ok(())
    }

    /// The files of one start of `deployment`'s process in a directory of its own (a
    /// replaced process may still be serving from its own): its kubeconfig, its TMPDIR and,
    /// when it serves webhooks, the certificate of `secret`.
    fn files(
        &self,
        deployment: &str,
        found: &Deployment,
        secret: Option<&Secret>,
    ) -> Result<StartFiles, Spawn> {
        let generation = found.metadata.generation.unwrap_or_default();
        let start = self.lock().started.len();
        let deployment_file = olmpack_model::file_name::FileName::or_hash(deployment);
        let dir = self
            .dir
            .join(format!("{deployment_file}-{generation}-{start}"));
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
        write_impersonating_kubeconfig(
            &self.admin_kubeconfig,
            &dir.join("kubeconfig"),
            &self.namespace,
            &service_account(found),
        )?;
        let Some(secret) = secret else {
            return Ok(StartFiles {
                dir,
                tmp,
                certificate: None,
            });
        };
        let data = secret.data.clone().unwrap_or_default();
        let (Some(cert), Some(key)) = (data.get("tls.crt"), data.get("tls.key")) else {
            return Err(Spawn::Other(format!(
                "Secret {deployment}-service-cert has no tls.crt or tls.key"
            )));
        };
        // Also under the names OLM mounts them with (controller-runtime reads tls.*).
        for (name, bytes) in [
            ("tls.crt", &cert.0),
            ("tls.key", &key.0),
            ("apiserver.crt", &cert.0),
            ("apiserver.key", &key.0),
        ] {
            std::fs::write(dir.join(name), bytes).map_err(|e| e.to_string())?;
        }
        let tmp = controller_runtime_cert_dir(&tmp, &cert.0, &key.0).map_err(|e| e.to_string())?;
        Ok(StartFiles {
            certificate: Some(dir.clone()),
            dir,
            tmp,
        })
    }

    /// The Deployment's first container as the kubelet would start it, from the pod template
    /// OLM wrote (its certificate volumes included) and the Secrets and ConfigMaps of the
    /// namespace; [`Spawn::Refused`] in the kubelet's words when it would not start it.
    async fn container(
        &self,
        deployment: &str,
        found: &Deployment,
        dir: &Path,
    ) -> Result<crate::container::Prepared, Spawn> {
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
            Err((container, why)) => Err(Spawn::Refused(format!(
                "the kubelet does not start container {container} of Deployment {deployment}: {why}"
            ))),
        }
    }

    /// The release the process of `found` stands in for: OLM v0 labels what a CSV installs
    /// with the CSV's name; OLM v1's driver names the bundle it installs.
    fn release(&self, found: &Deployment) -> String {
        found
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("olm.owner"))
            .cloned()
            .or_else(|| self.lock().release.clone())
            .unwrap_or_default()
    }

    /// The environment of the process of `deployment` (the one contract with `upgrade
    /// test`'s command): the certificate variables only when it serves webhooks.
    fn process_env(
        &self,
        deployment: &str,
        found: &Deployment,
        files: &StartFiles,
        port: u16,
    ) -> Vec<(String, String)> {
        let image = found
            .spec
            .template
            .spec
            .as_ref()
            .and_then(|p| p.containers.first())
            .and_then(|c| c.image.clone())
            .unwrap_or_default();
        let generation = found.metadata.generation.unwrap_or_default();
        let kubeconfig = files.dir.join("kubeconfig");
        let certificate = files.certificate.iter().flat_map(|dir| {
            [
                (CERT_FILE_ENV, dir.join("tls.crt").display().to_string()),
                (KEY_FILE_ENV, dir.join("tls.key").display().to_string()),
                (CERT_DIR_ENV, dir.display().to_string()),
            ]
        });
        let rest = [
            (PORT_ENV, port.to_string()),
            (DEPLOYMENT_ENV, deployment.to_owned()),
            (IMAGE_ENV, image),
            (RELEASE_ENV, self.release(found)),
            (NAMESPACE_ENV, self.namespace.clone()),
            ("KUBECONFIG", kubeconfig.display().to_string()),
            ("POD_NAMESPACE", self.namespace.clone()),
            ("POD_NAME", format!("{deployment}-{generation}-olmpack")),
            ("TMPDIR", files.tmp.display().to_string()),
        ];
        certificate
            .chain(rest)
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
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

/// The files of one process start ([`Ctx::files`]).
struct StartFiles {
    /// The start's own directory (kubeconfig, volumes, log).
    dir: PathBuf,
    /// The process's TMPDIR.
    tmp: PathBuf,
    /// The directory of the serving certificate, when the Deployment serves webhooks.
    certificate: Option<PathBuf>,
}

/// Whether OLM wired webhooks to `found` (its Service `<deployment>-service` exists, or its
/// pod template mounts the certificate Secret `<deployment>-service-cert`): its process then
/// waits for that Secret, as its pod would.
fn serves_webhooks(found: &Deployment, services: &BTreeSet<String>) -> bool {
    let name = found.metadata.name.as_deref().unwrap_or_default();
    let secret = format!("{name}-service-cert");
    let mounts_secret = found
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.volumes.as_ref())
        .is_some_and(|volumes| {
            volumes.iter().any(|v| {
                v.secret
                    .as_ref()
                    .is_some_and(|s| s.secret_name.as_deref() == Some(secret.as_str()))
            })
        });
    services.contains(&format!("{name}-service")) || mounts_secret
}

/// A CSV's `spec` typed, read as olmpack's validators read a CSV: a field of another type than
/// OLM's Go types counts as absent (OLM itself refuses such a CSV before installing it).
pub fn csv_spec(spec: &serde_json::Value) -> CsvSpec {
    olmpack_model::decode::lenient(spec)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn exit(output: &str) -> Exit {
        Exit {
            what: "container manager of op.v2 exited (exit status: 1)".to_owned(),
            output: output.to_owned(),
        }
    }

    /// The third exit at one pod template is the crash loop, in words naming the
    /// Deployment, container, release and last output; it is reported once, also after the
    /// Deployment moved on to another template, and forgotten once taken.
    #[test]
    fn a_crash_loop_is_kept_until_taken() {
        let host = WebhookHost {
            state: Arc::new(Mutex::new(State::default())),
            task: None,
            unavailable: None,
        };
        let words = "Deployment op: container manager of op.v2 exited (exit status: 1) 3 times, the last after 2 restart(s): the pod would crash-loop; its last output:\nopen /certs/tls.crt: no such file or directory";
        {
            let mut state = host.lock();
            for n in 1..=2 {
                state.exited(
                    "op",
                    "uid/2/",
                    &exit("open /certs/tls.crt: no such file or directory"),
                );
                assert_eq!(state.crash_loops.len(), 0, "after exit {n}");
            }
            state.exited(
                "op",
                "uid/2/",
                &exit("open /certs/tls.crt: no such file or directory"),
            );
            assert!(!state.may_start("op", "uid/2/"));
            // The Deployment changes (an upgrade): its new template starts afresh.
            state.exited("op", "uid/3/", &exit("other"));
            assert!(state.exits["op"].crash_loop.is_none());
        }
        assert_eq!(host.crash_loop("op"), None);
        assert_eq!(host.take_crash_loops(), [words]);
        assert_eq!(host.take_crash_loops(), Vec::<String>::new());
    }

    /// A Deployment serves webhooks when OLM made its Service or mounts its certificate
    /// Secret; else its process gets no certificate.
    #[test]
    fn webhooks_are_told_by_service_or_certificate_volume() {
        let deployment = |volumes: serde_json::Value| -> Deployment {
            serde_json::from_value(json!({
                "metadata": {"name": "op"},
                "spec": {"selector": {}, "template": {"spec": {"containers": [], "volumes": volumes}}},
            }))
            .unwrap()
        };
        let services = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect();
        let cert = json!([{"name": "webhook-cert", "secret": {"secretName": "op-service-cert"}}]);
        let other = json!([{"name": "metrics", "secret": {"secretName": "metrics-cert"}}]);
        for (volumes, names, expected) in [
            (json!([]), vec![], false),
            (other.clone(), vec!["op-metrics"], false),
            (json!([]), vec!["op-service"], true),
            (cert, vec![], true),
        ] {
            let found = deployment(volumes.clone());
            assert_eq!(
                serves_webhooks(&found, &services(&names)),
                expected,
                "{volumes} {names:?}"
            );
        }
    }
}
