//! Serving a release's conversion webhook on 127.0.0.1 for a live upgrade test.
//!
//! A [`Webhook`] is either a command (any operator: the text is run as `sh -c COMMAND`, so a
//! snippet (`VAR=x cmd`, a `case`, two programs) works as well as a script; its process
//! group is killed to stop it) or an in-process axum router (tests that inject faults).
//! Either way it serves TLS with a certificate of the run's own CA, on a port fixed for the
//! whole edge, so the CRD's `clientConfig` never changes when one release's webhook
//! replaces another's.
//!
//! A command is the operator's process: it is started for every release, also one without a
//! conversion webhook (its controllers run and fill in status, as they would on a cluster).
//! Its environment (the same names as `olmpack upgrade olm` gives; docs/upgrade-test.md "The webhook
//! command"):
//! - [`CERT_FILE_ENV`], [`KEY_FILE_ENV`]: the serving certificate and key (PEM);
//! - [`CERT_DIR_ENV`]: a directory holding them as `tls.crt`/`tls.key` (controller-runtime's
//!   names) and `apiserver.crt`/`apiserver.key` (where OLM mounts them);
//! - [`PORT_ENV`]: the port to listen on, on 127.0.0.1;
//! - [`RELEASE_ENV`]: the release (bundle name) whose webhook is wanted (one command may
//!   serve several);
//! - [`IMAGE_ENV`], [`DEPLOYMENT_ENV`]: the image and name of the CSV's Deployment;
//! - [`NAMESPACE_ENV`] (and `POD_NAMESPACE`, `POD_NAME`): the namespace the operator runs in;
//! - `KUBECONFIG`: a kubeconfig that acts as the Deployment's ServiceAccount, with the
//!   CSV's permissions granted to it (when the run has an admin kubeconfig to derive it
//!   from).
//!
//! When the release's CSV has a Deployment, the command stands in for its first container
//! as the kubelet starts it ([`crate::container`]): `sh -c COMMAND sh ARGS…`, so the
//! container's arguments after its program are the command's `"$@"` (`$OLMPACK_CONTAINER_COMMAND`
//! is its program, when it names one); the container's environment (`fieldRef`, Secret and
//! ConfigMap references resolved) is added to the above; its volumes (OLM's certificate at
//! `/apiserver.local.config/certificates` and `/tmp/k8s-webhook-server/serving-certs`
//! included) are mounted at their paths in a mount namespace of the process's own. A
//! container the kubelet would not start, or that exits again after each of
//! [`crate::container::RESTARTS`] restarts, is [`WebhookError::CrashLoop`] or a finding of
//! the edge, not a harness failure.
//!
//! Each process's output goes to a log file of its own; the end of it is shown when the
//! process fails to start, and kept in the report when an edge does not pass.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::https::{HttpsError, HttpsServer};
use crate::netns::ProcessNetwork;
use crate::pki::CertifiedKey;
use crate::process::{ChildProcess, ProcessError};

/// The serving certificate file.
pub const CERT_FILE_ENV: &str = "OLMPACK_WEBHOOK_CERT_FILE";
/// The serving key file.
pub const KEY_FILE_ENV: &str = "OLMPACK_WEBHOOK_KEY_FILE";
/// The directory with `tls.crt`, `tls.key`, `apiserver.crt`, `apiserver.key`.
pub const CERT_DIR_ENV: &str = "OLMPACK_WEBHOOK_CERT_DIR";
/// The port to serve on (127.0.0.1).
pub const PORT_ENV: &str = "OLMPACK_WEBHOOK_PORT";
/// The release (bundle name) whose webhook is wanted.
pub const RELEASE_ENV: &str = "OLMPACK_RELEASE";
/// The image of the Deployment's first container.
pub const IMAGE_ENV: &str = "OLMPACK_IMAGE";
/// The Deployment the process stands in for.
pub const DEPLOYMENT_ENV: &str = "OLMPACK_DEPLOYMENT";
/// The namespace the operator runs in (and where namespaced examples are created).
pub const NAMESPACE_ENV: &str = "OLMPACK_NAMESPACE";

/// How long a webhook may take to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a command that no CRD needs as a webhook is given to start listening (an
/// operator without webhooks never does; it only has to keep running).
const START_GRACE: Duration = Duration::from_secs(5);

/// How to serve one release's conversion webhook.
#[derive(Clone, Debug)]
pub enum Webhook {
    /// A shell command (`sh -c COMMAND`), see the module docs for its environment.
    Command(String),
    /// An in-process router (its `/convert`-like paths as the CRDs name them).
    Router(axum::Router),
}

/// Failure to start a webhook.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("failed to write the webhook's certificate files to {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the webhook command of {release} failed to start")]
    Process {
        release: String,
        #[source]
        source: ProcessError,
    },
    #[error(
        "the webhook of {release} did not accept connections on port {port} within {READY_TIMEOUT:?}; its output:\n{log_tail}"
    )]
    NotReady {
        release: String,
        port: u16,
        log_tail: String,
    },
    #[error(
        "{release}: container {container} exited {exits} times, the last after {restarts} restart(s) ({status}): the pod would crash-loop; its last output:\n{log_tail}"
    )]
    CrashLoop {
        release: String,
        container: String,
        exits: u32,
        restarts: u32,
        status: String,
        log_tail: String,
    },
    #[error("failed to listen on 127.0.0.1:{port} for the webhook of {release}")]
    Relay {
        release: String,
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to serve the in-process webhook of {release}")]
    Serve {
        release: String,
        #[source]
        source: HttpsError,
    },
}

/// The serving certificate files of one run.
#[derive(Debug)]
pub struct CertFiles {
    pub dir: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    pub pem: CertifiedKey,
}

impl CertFiles {
    /// Writes `pem` into `dir` under every name a webhook may look for.
    pub fn write(dir: &Path, pem: CertifiedKey) -> Result<Self, WebhookError> {
        for (name, text) in [
            ("tls.crt", &pem.cert_pem),
            ("tls.key", &pem.key_pem),
            ("apiserver.crt", &pem.cert_pem),
            ("apiserver.key", &pem.key_pem),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|source| WebhookError::Write { path, source })?;
        }
        Ok(Self {
            dir: dir.to_owned(),
            cert: dir.join("tls.crt"),
            key: dir.join("tls.key"),
            pem,
        })
    }
}

/// Who the process of a release runs as, and where.
#[derive(Clone, Debug, Default)]
pub struct ProcessEnv {
    /// The kubeconfig the process gets as `KUBECONFIG` (none: not set).
    pub kubeconfig: Option<PathBuf>,
    pub namespace: String,
    pub deployment: String,
    pub image: String,
    /// The Deployment's container as the kubelet would start it: its arguments become the
    /// command's `"$@"`, its environment and volumes the process's (none: the command alone).
    pub container: Option<crate::container::Prepared>,
}

/// A running webhook; stopped (process group killed, connections closed) on drop.
#[derive(Debug)]
pub enum RunningWebhook {
    Process {
        child: ChildProcess,
        /// Where it listens (see [`crate::netns`]); relays stop with it.
        network: ProcessNetwork,
        /// Why it shares this machine's network, when it does.
        shared_because: Option<String>,
    },
    Server(HttpsServer),
}

impl RunningWebhook {
    /// Starts `webhook` for `release` on `port`. When `required`, waits until it accepts
    /// connections; otherwise gives a command a moment to listen and only requires that it
    /// keeps running. `seq` numbers the process's log file (`webhook-<seq>-<release>.log`).
    #[allow(clippy::too_many_arguments)]
    pub async fn start(
        webhook: &Webhook,
        release: &str,
        port: u16,
        certs: &CertFiles,
        env: &ProcessEnv,
        log: &Path,
        required: bool,
    ) -> Result<Self, WebhookError> {
        match webhook {
            Webhook::Router(router) => HttpsServer::start_on(port, router.clone(), &certs.pem)
                .await
                .map(RunningWebhook::Server)
                .map_err(|source| WebhookError::Serve {
                    release: release.to_owned(),
                    source,
                }),
            Webhook::Command(command) => {
                let start = CommandStart {
                    command,
                    release,
                    port,
                    certs,
                    env,
                    log,
                };
                start.run(required).await
            }
        }
    }

    /// How the process is reached, in words for a report (empty for an in-process server).
    pub fn network_words(&self) -> String {
        match self {
            RunningWebhook::Process {
                network,
                shared_because,
                ..
            } => match (network.namespace(), shared_because) {
                (Some(_), _) => format!(
                    " (the process listens on {} in a network of its own)",
                    network.listen_port()
                ),
                (None, Some(why)) => format!(" (shared network: {why})"),
                (None, None) => String::new(),
            },
            RunningWebhook::Server(_) => String::new(),
        }
    }

    /// The process's log file (none for an in-process server).
    pub fn log_path(&self) -> Option<PathBuf> {
        match self {
            RunningWebhook::Process { child, .. } => Some(child.log_path().to_owned()),
            RunningWebhook::Server(_) => None,
        }
    }
}

/// One start of a webhook command.
struct CommandStart<'a> {
    command: &'a str,
    release: &'a str,
    /// Where the apiserver calls the webhook (127.0.0.1:`port`).
    port: u16,
    certs: &'a CertFiles,
    env: &'a ProcessEnv,
    log: &'a Path,
}

impl CommandStart<'_> {
    /// Starts the command in a network of its own where it may have one (listening on 9443
    /// there, relayed from 127.0.0.1:`port`), else on this machine's network on `port`.
    async fn run(self, required: bool) -> Result<RunningWebhook, WebhookError> {
        let release = self.release.to_owned();
        let (mut network, shared_because) =
            ProcessNetwork::for_process(self.env.kubeconfig.as_deref(), self.port).await;
        let tmp = self.log.with_extension("tmp");
        let pem = &self.certs.pem;
        let private_tmp =
            controller_runtime_cert_dir(&tmp, pem.cert_pem.as_bytes(), pem.key_pem.as_bytes())?;
        let mut vars = command_env(
            release.as_str(),
            network.listen_port(),
            self.certs,
            self.env,
        );
        vars.push(("TMPDIR".to_owned(), private_tmp.display().to_string()));
        if network.namespace().is_some() {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", self.port))
                .await
                .map_err(|source| WebhookError::Relay {
                    release: release.clone(),
                    port: self.port,
                    source,
                })?;
            network.relay_in(listener);
        }
        let child = self
            .start_restarting(vars, &network, required, shared_because.as_deref())
            .await?;
        Ok(RunningWebhook::Process {
            child,
            network,
            shared_because,
        })
    }
}

impl CommandStart<'_> {
    /// Starts the process (the container's when there is one: its `"$@"`, environment and
    /// mounts) and waits until it accepts connections or, when not `required`, for a
    /// moment. A container that exits is started again after a back-off, up to
    /// [`crate::container::RESTARTS`] times, then it is a crash loop.
    async fn start_restarting(
        &self,
        mut vars: Vec<(String, String)>,
        network: &ProcessNetwork,
        required: bool,
        shared_because: Option<&str>,
    ) -> Result<ChildProcess, WebhookError> {
        let release = self.release.to_owned();
        let (argv, mounts) = match &self.env.container {
            Some(prepared) => {
                vars = crate::container::merged_env(vars, &prepared.spec);
                (prepared.shell_argv(self.command), prepared.mounts.clone())
            }
            None => (
                vec!["-c".to_owned(), self.command.to_owned()],
                crate::container::Mounts::default(),
            ),
        };
        let timeout = if required { READY_TIMEOUT } else { START_GRACE };
        let mut restarts = 0;
        loop {
            let mut child = ChildProcess::start_container(
                &format!("the webhook command of {release}"),
                (Path::new("sh"), &argv),
                &vars,
                self.log,
                network.namespace(),
                mounts.clone(),
            )
            .map_err(|source| WebhookError::Process {
                release: release.clone(),
                source,
            })?;
            match wait_accepting(&mut child, &release, network, timeout).await {
                Ok(()) => return Ok(child),
                Err(WebhookError::NotReady { .. }) if !required => return Ok(child),
                Err(WebhookError::NotReady { log_tail, .. }) => {
                    return Err(WebhookError::NotReady {
                        release,
                        port: network.listen_port(),
                        log_tail: with_reason(log_tail, shared_because),
                    });
                }
                Err(WebhookError::Process {
                    source:
                        ProcessError::Exited {
                            status, log_tail, ..
                        },
                    ..
                }) if self.env.container.is_some() => {
                    if restarts == crate::container::RESTARTS {
                        return Err(self.crash_loop(restarts, status, &log_tail));
                    }
                    tokio::time::sleep(crate::container::back_off(restarts)).await;
                    restarts += 1;
                }
                Err(other) => return Err(other),
            }
        }
    }

    fn crash_loop(&self, restarts: u32, status: String, log_tail: &str) -> WebhookError {
        let container = self
            .env
            .container
            .as_ref()
            .map(|c| c.spec.container.clone())
            .unwrap_or_default();
        WebhookError::CrashLoop {
            release: self.release.to_owned(),
            container,
            exits: restarts + 1,
            restarts,
            status,
            log_tail: crate::container::last_lines(log_tail, 20),
        }
    }
}

/// The end of a process's output, with why it shared this machine's network (a manager
/// without a port flag listens on 9443, which may be taken).
fn with_reason(log_tail: String, shared_because: Option<&str>) -> String {
    match shared_because {
        Some(why) => format!("{log_tail}\n(olmpack note: {why})"),
        None => log_tail,
    }
}

/// Writes the serving certificate where controller-runtime looks when a manager is given no
/// certificate flags — `$TMPDIR/k8s-webhook-server/serving-certs/tls.{crt,key}` — under the
/// process's own TMPDIR `tmp`, which is returned.
pub fn controller_runtime_cert_dir(
    tmp: &Path,
    cert: &[u8],
    key: &[u8],
) -> Result<PathBuf, WebhookError> {
    let dir = tmp.join(CONTROLLER_RUNTIME_CERT_DIR);
    std::fs::create_dir_all(&dir).map_err(|source| WebhookError::Write {
        path: dir.clone(),
        source,
    })?;
    for (name, text) in [("tls.crt", cert), ("tls.key", key)] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| WebhookError::Write { path, source })?;
    }
    Ok(tmp.to_owned())
}

/// Where controller-runtime's webhook server reads its certificate by default, under TMPDIR.
pub const CONTROLLER_RUNTIME_CERT_DIR: &str = "k8s-webhook-server/serving-certs";

/// The environment of a webhook command (module docs).
fn command_env(
    release: &str,
    port: u16,
    certs: &CertFiles,
    env: &ProcessEnv,
) -> Vec<(String, String)> {
    let mut vars = vec![
        (CERT_FILE_ENV, certs.cert.display().to_string()),
        (KEY_FILE_ENV, certs.key.display().to_string()),
        (CERT_DIR_ENV, certs.dir.display().to_string()),
        (PORT_ENV, port.to_string()),
        (RELEASE_ENV, release.to_owned()),
        (IMAGE_ENV, env.image.clone()),
        (DEPLOYMENT_ENV, env.deployment.clone()),
        (NAMESPACE_ENV, env.namespace.clone()),
        ("POD_NAMESPACE", env.namespace.clone()),
        ("POD_NAME", format!("{}-olmpack", env.deployment)),
    ];
    if let Some(kubeconfig) = &env.kubeconfig {
        vars.push(("KUBECONFIG", kubeconfig.display().to_string()));
    }
    vars.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

async fn wait_accepting(
    child: &mut ChildProcess,
    release: &str,
    network: &ProcessNetwork,
    timeout: Duration,
) -> Result<(), WebhookError> {
    let started = Instant::now();
    loop {
        if let Err(source) = child.check_running() {
            return Err(WebhookError::Process {
                release: release.to_owned(),
                source,
            });
        }
        if network.accepting().await {
            return Ok(());
        }
        if started.elapsed() > timeout {
            return Err(WebhookError::NotReady {
                release: release.to_owned(),
                port: network.listen_port(),
                log_tail: child.log_tail(),
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
