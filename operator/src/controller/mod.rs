//! The WebApp controller (kube-runtime `Controller`) behind leader election.
//!
//! Only the holder of the Lease runs the controller; the others wait. Losing the Lease stops
//! the controller at once (in-flight reconciles finish); shutdown stops it gracefully and
//! releases the Lease so that another instance takes over without waiting for expiry.

pub mod apply;
pub mod crash;
pub mod errors;
pub mod reconcile;
pub mod status;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kube::Client;
use kube::api::Api;
use kube::runtime::controller::Controller;
use kube::runtime::watcher;
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::{broadcast, watch};

use crate::api::v1;
use crate::metrics::Metrics;
use reconcile::Context;

/// Name of the leader-election Lease in the operator's namespace.
pub const LEASE_NAME: &str = "webapp-operator-leader";

/// Failure of the controller runtime (not of a single reconcile).
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("failed to set up leader election on Lease {namespace}/{LEASE_NAME}")]
    Lease {
        namespace: String,
        #[source]
        source: kube_lease_manager::LeaseManagerError,
    },
    #[error("failed to build the Kubernetes client")]
    Client(#[source] kube::Error),
}

/// Leader-election timing.
#[derive(Clone, Debug)]
pub struct LeaderElection {
    /// This instance's identity in the Lease (pod name).
    pub identity: String,
    /// Lease duration in seconds: how long a crashed leader blocks a takeover.
    pub duration_secs: u64,
    /// Renewal happens this many seconds before expiry.
    pub grace_secs: u64,
}

/// What the controller watches and how it runs.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The operator's namespace (Lease and routing table).
    pub operator_namespace: String,
    /// Watch only this namespace; all namespaces when `None`.
    pub watch_namespace: Option<String>,
    /// `None` runs without leader election (a single instance).
    pub leader_election: Option<LeaderElection>,
    /// Armed crash point (tests only).
    pub crash: Option<crash::CrashPoint>,
}

/// A client for `config` that counts every request by verb and every response by status
/// code in `metrics` (`webapp_api_requests_total`).
pub fn client(config: kube::Config, metrics: Arc<Metrics>) -> Result<Client, ControllerError> {
    let requests = metrics.clone();
    let responses = metrics;
    let builder = kube::client::ClientBuilder::try_from(config).map_err(ControllerError::Client)?;
    Ok(builder
        .with_layer(&tower::util::MapResponseLayer::new(
            move |response: http::Response<_>| {
                responses.api_response(response.status().as_u16());
                response
            },
        ))
        .with_layer(&tower::util::MapRequestLayer::new(
            move |request: http::Request<kube::client::Body>| {
                requests.api_request(request.method().as_str());
                request
            },
        ))
        .build())
}

fn webapps(client: &Client, settings: &Settings) -> Api<v1::WebApp> {
    match &settings.watch_namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

fn owned<K>(client: &Client, settings: &Settings) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    <K as kube::Resource>::DynamicType: Default,
{
    match &settings.watch_namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Runs the controller until `stop` resolves.
async fn run_controller(
    ctx: Arc<Context>,
    settings: &Settings,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
    resync: broadcast::Receiver<()>,
) {
    let client = ctx.client.clone();
    let children = watcher::Config::default().labels(&format!(
        "{}={}",
        apply::MANAGED_BY.0,
        apply::MANAGED_BY.1
    ));
    let triggers = futures::stream::unfold(resync, |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(()) => return Some(((), rx)),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Controller::new(webapps(&client, settings), watcher::Config::default())
        .owns(owned::<Deployment>(&client, settings), children.clone())
        .owns(owned::<Service>(&client, settings), children)
        .reconcile_all_on(triggers)
        .graceful_shutdown_on(stop)
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "controller event");
            }
        })
        .await;
}

async fn signalled(mut rx: watch::Receiver<bool>, value: bool) {
    let _ = rx.wait_for(|v| *v == value).await;
}

/// Runs the controller (behind leader election when configured) until `shutdown` turns
/// true; `resync` triggers a reconcile of every WebApp.
pub async fn run(
    client: Client,
    settings: Settings,
    metrics: Arc<Metrics>,
    shutdown: watch::Receiver<bool>,
    resync: broadcast::Sender<()>,
) -> Result<(), ControllerError> {
    let ctx = Arc::new(Context::new(
        client.clone(),
        metrics.clone(),
        settings.operator_namespace.clone(),
        settings.crash,
    ));
    let Some(election) = settings.leader_election.clone() else {
        metrics.set_leader(true);
        run_controller(
            ctx,
            &settings,
            signalled(shutdown, true),
            resync.subscribe(),
        )
        .await;
        metrics.set_leader(false);
        return Ok(());
    };
    let manager = LeaseManagerBuilder::new(client, LEASE_NAME)
        .with_namespace(&settings.operator_namespace)
        .with_identity(&election.identity)
        .with_duration(election.duration_secs)
        .with_grace(election.grace_secs)
        .build()
        .await
        .map_err(|source| ControllerError::Lease {
            namespace: settings.operator_namespace.clone(),
            source,
        })?;
    let (leader, lease_task) = manager.watch().await;
    let mut shutdown_rx = shutdown.clone();
    loop {
        let mut leader_rx = leader.clone();
        tokio::select! {
            _ = shutdown_rx.wait_for(|s| *s) => break,
            became = leader_rx.wait_for(|l| *l) => if became.is_err() { break },
        }
        tracing::info!(identity = %election.identity, "became the leader");
        metrics.set_leader(true);
        let lost = signalled(leader.clone(), false);
        let stop = signalled(shutdown.clone(), true);
        let either = async move {
            tokio::select! { _ = lost => {}, _ = stop => {} }
        };
        run_controller(ctx.clone(), &settings, either, resync.subscribe()).await;
        metrics.set_leader(false);
        tracing::info!(identity = %election.identity, "stopped leading");
        if *shutdown.borrow() {
            break;
        }
    }
    // Dropping the last receiver makes the manager release the Lease.
    drop(leader);
    match tokio::time::timeout(Duration::from_secs(10), lease_task).await {
        Ok(Ok(Err(err))) => tracing::warn!(error = %err, "failed to release the Lease"),
        Err(_) => tracing::warn!("timed out releasing the Lease"),
        _ => {}
    }
    Ok(())
}
