//! Serving a release's conversion webhook on 127.0.0.1 for a live upgrade test.
//!
//! A [`Webhook`] is either a command (any operator: started as `sh -c 'exec COMMAND'`, so
//! it must end in one program, which is killed to stop it; told where its
//! certificate, key and port are through the environment variables below) or an in-process
//! axum router (tests that inject faults). Either way it serves TLS with a certificate of the
//! run's own CA, on a port fixed for the whole edge, so the CRD's `clientConfig` never
//! changes when one release's webhook replaces another's.
//!
//! Environment of a webhook command:
//! - [`CERT_FILE_ENV`], [`KEY_FILE_ENV`]: the serving certificate and key (PEM);
//! - [`CERT_DIR_ENV`]: a directory holding them as `tls.crt`/`tls.key` (controller-runtime's
//!   names) and `apiserver.crt`/`apiserver.key` (where OLM mounts them);
//! - [`PORT_ENV`]: the port to listen on, on 127.0.0.1;
//! - [`RELEASE_ENV`]: the release whose webhook is wanted (one command may serve several).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::https::{HttpsError, HttpsServer};
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

/// How long a webhook may take to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How to serve one release's conversion webhook.
#[derive(Clone, Debug)]
pub enum Webhook {
    /// A shell command (`sh -c 'exec …'`), see the module docs for its environment.
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
    #[error("failed to start the webhook command of {release}")]
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

/// A running webhook; stopped (process killed, connections closed) on drop.
#[derive(Debug)]
pub enum RunningWebhook {
    Process(ChildProcess),
    Server(HttpsServer),
}

impl RunningWebhook {
    /// Starts `webhook` for `release` on `port` and waits until it accepts connections.
    pub async fn start(
        webhook: &Webhook,
        release: &str,
        port: u16,
        certs: &CertFiles,
        log_dir: &Path,
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
                let env = vec![
                    (CERT_FILE_ENV.to_owned(), certs.cert.display().to_string()),
                    (KEY_FILE_ENV.to_owned(), certs.key.display().to_string()),
                    (CERT_DIR_ENV.to_owned(), certs.dir.display().to_string()),
                    (PORT_ENV.to_owned(), port.to_string()),
                    (RELEASE_ENV.to_owned(), release.to_owned()),
                ];
                let log = log_dir.join(format!("webhook-{port}.log"));
                let mut child = ChildProcess::start_with_env(
                    "webhook",
                    Path::new("sh"),
                    &["-c".to_owned(), format!("exec {command}")],
                    &env,
                    &log,
                )
                .map_err(|source| WebhookError::Process {
                    release: release.to_owned(),
                    source,
                })?;
                wait_accepting(&mut child, release, port).await?;
                Ok(RunningWebhook::Process(child))
            }
        }
    }
}

async fn wait_accepting(
    child: &mut ChildProcess,
    release: &str,
    port: u16,
) -> Result<(), WebhookError> {
    let started = Instant::now();
    loop {
        if let Err(source) = child.check_running() {
            return Err(WebhookError::Process {
                release: release.to_owned(),
                source,
            });
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if started.elapsed() > READY_TIMEOUT {
            return Err(WebhookError::NotReady {
                release: release.to_owned(),
                port,
                log_tail: child.log_tail(),
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
