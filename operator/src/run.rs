//! Starting and stopping a whole operator instance: metrics/health server, webhook server
//! (when a certificate is configured), certificate watcher and controller. The binary's
//! `run` command and the integration tests use the same entry point.
//!
//! A controller instance also runs the storage migration of the WebApp CRD in the background
//! (see [`migrate_storage`]): when the CRD's storage version is this release's and
//! `status.storedVersions` still lists an older one, every WebApp is rewritten and the list
//! pruned, so that a later release may drop the old version.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, watch};

use crate::controller::{self, ControllerError, Settings};
use crate::metrics::{self, Metrics};
use crate::webhook::server::{ServerError, WebhookServer};
use crate::webhook::tls_reload::{ReloadingCert, TlsError};

/// Failure to start an operator instance.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("failed to load the webhook serving certificate")]
    Tls(#[from] TlsError),
    #[error("failed to start the webhook server")]
    Webhook(#[from] ServerError),
    #[error("failed to start the metrics server on {addr}")]
    Metrics {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Controller(#[from] ControllerError),
}

/// The serving certificate and key files of the webhook server.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// How often the files are checked for a rotation.
    pub poll: Duration,
}

/// How to run one instance.
#[derive(Clone, Debug)]
pub struct Options {
    pub settings: Settings,
    /// Webhook server address; no webhook server without [`Options::tls`].
    pub webhook_addr: SocketAddr,
    pub tls: Option<TlsFiles>,
    pub metrics_addr: SocketAddr,
    /// Run the controller (a webhook-only instance sets false).
    pub controller: bool,
}

/// A running instance.
#[derive(Debug)]
pub struct Running {
    pub metrics: Arc<Metrics>,
    pub webhook_addr: Option<SocketAddr>,
    pub metrics_addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    resync: broadcast::Sender<()>,
    controller: Option<tokio::task::JoinHandle<Result<(), ControllerError>>>,
    webhook: Option<WebhookServer>,
    watcher: Option<tokio::task::JoinHandle<()>>,
    migration: Option<tokio::task::JoinHandle<()>>,
    metrics_task: tokio::task::JoinHandle<()>,
}

/// How long the start-up migration waits between attempts (the conversion webhook it needs
/// may be this very process, not yet reachable through its Service).
const MIGRATION_RETRY: Duration = Duration::from_secs(5);
/// How many attempts the start-up migration makes before it gives up until the next start.
const MIGRATION_ATTEMPTS: usize = 60;

/// The start-up storage migration of the WebApp CRD (module docs): retried until it succeeds
/// or [`MIGRATION_ATTEMPTS`] fail; the outcome is logged.
pub async fn migrate_storage(client: kube::Client) {
    let storage = crate::releases::OperatorRelease::latest()
        .storage_version()
        .name();
    for attempt in 1..=MIGRATION_ATTEMPTS {
        match crd_migrate::migrate_if_needed(&client, crate::api::CRD_NAME, storage).await {
            Ok(Some(done)) => {
                tracing::info!(
                    crd = %done.crd,
                    storage = %done.storage_version,
                    rewritten = done.rewritten,
                    stored_before = ?done.stored_before,
                    "storage migration finished; status.storedVersions pruned"
                );
                return;
            }
            Ok(None) => return,
            Err(err) => {
                tracing::warn!(attempt, error = %olmpack_model::report::error_chain(&err), "storage migration failed; retrying");
                tokio::time::sleep(MIGRATION_RETRY).await;
            }
        }
    }
}

/// Starts an instance that talks to the cluster with `config`.
pub async fn start(options: Options, config: kube::Config) -> Result<Running, RunError> {
    let metrics = Arc::new(Metrics::default());
    let (shutdown, shutdown_rx) = watch::channel(false);
    let (resync, _) = broadcast::channel(16);
    let (metrics_addr, metrics_task) =
        metrics::serve(options.metrics_addr, metrics.clone(), shutdown_rx.clone())
            .await
            .map_err(|source| RunError::Metrics {
                addr: options.metrics_addr,
                source,
            })?;
    let (webhook, watcher) = match &options.tls {
        Some(tls) => {
            let cert = ReloadingCert::load(&tls.cert, &tls.key)?;
            let watcher = cert.spawn_watcher(tls.poll);
            let server = WebhookServer::start(
                options.webhook_addr,
                cert,
                metrics.clone(),
                shutdown_rx.clone(),
            )
            .await?;
            (Some(server), Some(watcher))
        }
        None => (None, None),
    };
    let mut migration = None;
    let controller = if options.controller {
        let lease_client = controller::client::lease_client(config.clone(), metrics.clone())?;
        let client =
            controller::client::work_client(config, options.settings.api_limits, metrics.clone())?;
        migration = Some(tokio::spawn(migrate_storage(client.clone())));
        Some(tokio::spawn(controller::run(
            client,
            lease_client,
            options.settings.clone(),
            metrics.clone(),
            shutdown_rx,
            resync.clone(),
        )))
    } else {
        None
    };
    metrics.set_ready(true);
    Ok(Running {
        webhook_addr: webhook.as_ref().map(WebhookServer::addr),
        metrics,
        metrics_addr,
        shutdown,
        resync,
        controller,
        webhook,
        watcher,
        migration,
        metrics_task,
    })
}

impl Running {
    /// Reconciles every WebApp once more (if this instance leads).
    pub fn resync(&self) {
        let _ = self.resync.send(());
    }

    /// Whether the controller task has ended (it only ends on shutdown or a setup failure).
    pub fn controller_finished(&self) -> bool {
        self.controller.as_ref().is_none_or(|c| c.is_finished())
    }

    /// Graceful shutdown: stops accepting work, lets running reconciles finish within the
    /// shutdown bound ([`Settings::shutdown_timeout`]), releases the Lease, stops the servers.
    pub async fn stop(mut self) -> Result<(), RunError> {
        self.metrics.set_ready(false);
        let _ = self.shutdown.send(true);
        let mut result = Ok(());
        if let Some(controller) = self.controller.take()
            && let Ok(Err(err)) = controller.await
        {
            result = Err(err.into());
        }
        if let Some(webhook) = self.webhook.take() {
            webhook.stopped().await;
        }
        if let Some(watcher) = self.watcher.take() {
            watcher.abort();
        }
        if let Some(migration) = self.migration.take() {
            migration.abort();
        }
        let _ = (&mut self.metrics_task).await;
        result
    }

    /// Waits until the controller ends by itself (an error) or `signal` resolves, then stops.
    pub async fn run_until(
        mut self,
        signal: impl std::future::Future<Output = ()>,
    ) -> Result<(), RunError> {
        let controller = self.controller.take();
        match controller {
            Some(mut task) => {
                tokio::select! {
                    _ = signal => {
                        self.controller = Some(task);
                    }
                    ended = &mut task => {
                        if let Ok(Err(err)) = ended {
                            let _ = self.stop().await;
                            return Err(err.into());
                        }
                    }
                }
            }
            None => signal.await,
        }
        self.stop().await
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(c) = &self.controller {
            c.abort();
        }
        if let Some(w) = &self.watcher {
            w.abort();
        }
        if let Some(m) = &self.migration {
            m.abort();
        }
        self.metrics_task.abort();
    }
}
