//! The WebApp controller (kube-runtime `Controller`) behind leader election.
//!
//! Only the holder of the Lease runs the controller; the others wait. Losing the Lease stops
//! the controller at once; shutdown stops it gracefully and releases the Lease so that
//! another instance takes over without waiting for expiry. Either way the controller stops
//! taking work, lets running reconciles finish for at most [`Settings::shutdown_timeout`] and
//! abandons the rest (every step is idempotent, the next leader redoes them).
//!
//! Bounded work: at most [`Settings::concurrency`] reconciles run at once (the controller's
//! own limit; further keys wait in its queue), and the work client keeps to a client-side
//! request rate ([`client::ApiLimits`]). Reconciles read WebApps, Deployments, Services and
//! routing entries from reflector stores that the controller's watches fill ([`Stores`]);
//! the Lease has a client of its own ([`client`]).

pub mod apply;
pub mod client;
pub mod crash;
pub mod errors;
pub mod memo;
pub mod reconcile;
pub mod routes;
pub mod status;

use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::Api;
use kube::runtime::controller::{self as runtime, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::{broadcast, watch};

use crate::api::v1;
use crate::metrics::Metrics;
use reconcile::Context;

/// Name of the leader-election Lease in the operator's namespace.
pub const LEASE_NAME: &str = "webapp-operator-leader";
/// Default of [`Settings::concurrency`].
pub const DEFAULT_CONCURRENCY: u16 = 32;
/// Default of [`Settings::shutdown_timeout`].
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
/// How long releasing the Lease may take at shutdown.
const LEASE_RELEASE_TIMEOUT: Duration = Duration::from_secs(2);

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
    /// The operator's namespace (Lease and routing entries).
    pub operator_namespace: String,
    /// Watch only this namespace; all namespaces when `None`.
    pub watch_namespace: Option<String>,
    /// `None` runs without leader election (a single instance).
    pub leader_election: Option<LeaderElection>,
    /// Armed crash point (tests only).
    pub crash: Option<crash::CrashPoint>,
    /// Reconciles running at once at most.
    pub concurrency: u16,
    /// Client-side request rate of the work client.
    pub api_limits: client::ApiLimits,
    /// How long a stopping controller waits for running reconciles before abandoning them.
    pub shutdown_timeout: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            operator_namespace: crate::manifests::DEFAULT_NAMESPACE.to_owned(),
            watch_namespace: None,
            leader_election: None,
            crash: None,
            concurrency: DEFAULT_CONCURRENCY,
            api_limits: client::ApiLimits::default(),
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
        }
    }
}

/// The reflector stores reconciles read from (filled by the controller's watches).
#[derive(Clone, Debug)]
pub struct Stores {
    pub webapps: Store<v1::WebApp>,
    pub deployments: Store<Deployment>,
    pub services: Store<Service>,
    /// Routing entries in the operator's namespace ([`routes`]).
    pub routes: Store<ConfigMap>,
    /// The watches yet to list their kind ([`Listed`]); ready at zero.
    listed: watch::Receiver<usize>,
}

impl Stores {
    /// Waits until every store holds its initial list; `false` if a watch ended first.
    ///
    /// Not `Store::wait_until_ready`: kube keeps one waker per store there, so of several
    /// reconciles waiting at once only the last is woken and the others hang for good.
    pub async fn ready(&self) -> bool {
        let mut listed = self.listed.clone();
        listed.wait_for(|left| *left == 0).await.is_ok()
    }
}

/// Counts down the watches that have not listed their kind yet; at zero [`Stores::ready`]
/// opens.
#[derive(Clone, Debug)]
struct Listed(Arc<watch::Sender<usize>>);

impl Listed {
    fn new(watches: usize) -> (Self, watch::Receiver<usize>) {
        let (left, rx) = watch::channel(watches);
        (Self(Arc::new(left)), rx)
    }

    /// A watch whose list is complete: returns a closure that counts it once.
    fn once(&self) -> impl FnMut() + Send + 'static {
        let left = self.0.clone();
        let mut counted = false;
        move || {
            if !std::mem::replace(&mut counted, true) {
                left.send_modify(|n| *n = n.saturating_sub(1));
            }
        }
    }
}

fn webapp_api(client: &Client, settings: &Settings) -> Api<v1::WebApp> {
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

/// The fields a reconcile never reads, dropped before objects enter a store.
fn slim<K: Resource>(object: &mut K) {
    object.managed_fields_mut().clear();
    object
        .annotations_mut()
        .remove("kubectl.kubernetes.io/last-applied-configuration");
}

fn converged(app: &v1::WebApp) -> bool {
    app.metadata.deletion_timestamp.is_none()
        && app.status.as_ref().is_some_and(|s| {
            s.observed_generation == app.metadata.generation
                && s.conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

/// The WebApp watch: fills `writer`, tells the metrics what is queued and unconverged.
fn webapp_stream(
    api: Api<v1::WebApp>,
    writer: reflector::store::Writer<v1::WebApp>,
    metrics: Arc<Metrics>,
    mut listed: impl FnMut() + Send + 'static,
) -> impl Stream<Item = Result<v1::WebApp, watcher::Error>> + Send + 'static {
    watcher(api, watcher::Config::default().any_semantic())
        .default_backoff()
        .modify(slim)
        .reflect(writer)
        .inspect_ok(move |event| match event {
            watcher::Event::Apply(app) | watcher::Event::InitApply(app) => {
                let key = reconcile::key(app);
                metrics.queued(&key);
                metrics.observed(&key, converged(app));
            }
            watcher::Event::Delete(app) => metrics.forget(&reconcile::key(app)),
            watcher::Event::InitDone => listed(),
            watcher::Event::Init => {}
        })
        .applied_objects()
}

/// A watch of one kind of object: fills `writer`; every event counts the WebApp `owner`
/// maps it to as queued (if that WebApp exists); calls `listed` when its list is complete.
fn child_stream<K>(
    api: Api<K>,
    config: watcher::Config,
    writer: reflector::store::Writer<K>,
    webapps: Store<v1::WebApp>,
    metrics: Arc<Metrics>,
    owner: fn(&K) -> Option<ObjectRef<v1::WebApp>>,
    mut listed: impl FnMut() + Send + 'static,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    watcher(api, config.any_semantic())
        .default_backoff()
        .modify(slim)
        .reflect(writer)
        .inspect_ok(move |event| match event {
            watcher::Event::Apply(child) | watcher::Event::Delete(child) => {
                if let Some(app) = owner(child).and_then(|r| webapps.get(&r)) {
                    metrics.queued(&reconcile::key(&app));
                }
            }
            watcher::Event::InitDone => listed(),
            watcher::Event::Init | watcher::Event::InitApply(_) => {}
        })
        .touched_objects()
}

/// The WebApp that controls `child` (its controller owner reference).
fn controller_owner<K: Resource>(child: &K) -> Option<ObjectRef<v1::WebApp>> {
    let owner = child
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true) && o.kind == "WebApp")?;
    Some(ObjectRef::new(&owner.name).within(&child.namespace()?))
}

/// The controller over WebApps with its three owned or watched kinds, and the stores its
/// watches fill (for the reconciles to read).
fn controller(
    client: &Client,
    metrics: &Arc<Metrics>,
    settings: &Settings,
) -> (Controller<v1::WebApp>, Stores) {
    let children = watcher::Config::default().labels(&format!(
        "{}={}",
        apply::MANAGED_BY.0,
        apply::MANAGED_BY.1
    ));
    let (webapps, webapps_writer) = reflector::store();
    let (deployments, deployments_writer) = reflector::store();
    let (services, services_writer) = reflector::store();
    let (routes, routes_writer) = reflector::store();
    let (listed, listed_rx) = Listed::new(4);
    let stores = Stores {
        webapps: webapps.clone(),
        deployments,
        services,
        routes,
        listed: listed_rx,
    };
    let route_api = Api::namespaced(client.clone(), &settings.operator_namespace);
    let route_config = watcher::Config::default().labels(&routes::selector());
    let controller = Controller::for_stream(
        webapp_stream(
            webapp_api(client, settings),
            webapps_writer,
            metrics.clone(),
            listed.once(),
        ),
        webapps.clone(),
    )
    .owns_stream(child_stream(
        owned::<Deployment>(client, settings),
        children.clone(),
        deployments_writer,
        webapps.clone(),
        metrics.clone(),
        controller_owner,
        listed.once(),
    ))
    .owns_stream(child_stream(
        owned::<Service>(client, settings),
        children,
        services_writer,
        webapps.clone(),
        metrics.clone(),
        controller_owner,
        listed.once(),
    ))
    .watches_stream(
        child_stream(
            route_api,
            route_config,
            routes_writer,
            webapps,
            metrics.clone(),
            routes::owner,
            listed.once(),
        ),
        |entry| routes::owner(&entry),
    )
    .with_config(runtime::Config::default().concurrency(settings.concurrency));
    (controller, stores)
}

/// One item per message on `resync` (a lagging receiver skips to the newest).
fn resync_triggers(resync: broadcast::Receiver<()>) -> impl Stream<Item = ()> + Send {
    futures::stream::unfold(resync, |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(()) => return Some(((), rx)),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
}

/// Runs the controller until `stop` resolves, then lets running reconciles finish for at
/// most [`Settings::shutdown_timeout`].
async fn run_controller(
    client: Client,
    metrics: Arc<Metrics>,
    settings: &Settings,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
    resync: broadcast::Receiver<()>,
) {
    let stop = stop.shared();
    let (controller, stores) = controller(&client, &metrics, settings);
    let controller = controller
        .reconcile_all_on(resync_triggers(resync))
        .graceful_shutdown_on(stop.clone());
    let ctx = Arc::new(Context::new(
        client,
        metrics.clone(),
        settings.operator_namespace.clone(),
        settings.crash,
        stores,
    ));
    let running = controller
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "controller event");
            }
        });
    tokio::pin!(running);
    let stopped = tokio::select! {
        _ = &mut running => false,
        _ = stop => true,
    };
    if stopped
        && tokio::time::timeout(settings.shutdown_timeout, running)
            .await
            .is_err()
    {
        tracing::warn!(
            abandoned = metrics.reconciles_in_flight(),
            timeout = ?settings.shutdown_timeout,
            "reconciles still running at the shutdown bound; abandoned"
        );
    }
    metrics.clear_queue();
}

async fn signalled(mut rx: watch::Receiver<bool>, value: bool) {
    let _ = rx.wait_for(|v| *v == value).await;
}

/// Runs the controller (behind leader election when configured) until `shutdown` turns
/// true; `resync` triggers a reconcile of every WebApp. `client` does the work,
/// `lease_client` only the leader election.
pub async fn run(
    client: Client,
    lease_client: Client,
    settings: Settings,
    metrics: Arc<Metrics>,
    shutdown: watch::Receiver<bool>,
    resync: broadcast::Sender<()>,
) -> Result<(), ControllerError> {
    let Some(election) = settings.leader_election.clone() else {
        metrics.set_leader(true);
        let stop = signalled(shutdown, true);
        run_controller(client, metrics.clone(), &settings, stop, resync.subscribe()).await;
        metrics.set_leader(false);
        return Ok(());
    };
    let manager = LeaseManagerBuilder::new(lease_client, LEASE_NAME)
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
        let work = client.clone();
        run_controller(work, metrics.clone(), &settings, either, resync.subscribe()).await;
        metrics.set_leader(false);
        tracing::info!(identity = %election.identity, "stopped leading");
        if *shutdown.borrow() {
            break;
        }
    }
    // Dropping the last receiver makes the manager release the Lease.
    drop(leader);
    match tokio::time::timeout(LEASE_RELEASE_TIMEOUT, lease_task).await {
        Ok(Ok(Err(err))) => tracing::warn!(error = %err, "failed to release the Lease"),
        Err(_) => tracing::warn!("timed out releasing the Lease"),
        _ => tracing::info!("Lease released"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stores(listed: watch::Receiver<usize>) -> Stores {
        Stores {
            webapps: reflector::store().0,
            deployments: reflector::store().0,
            services: reflector::store().0,
            routes: reflector::store().0,
            listed,
        }
    }

    #[tokio::test]
    async fn every_waiting_reconcile_wakes_once_the_last_watch_has_listed() {
        let (listed, rx) = Listed::new(2);
        let stores = stores(rx);
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let stores = stores.clone();
                tokio::spawn(async move { stores.ready().await })
            })
            .collect();
        tokio::task::yield_now().await;
        let (mut first, mut second) = (listed.once(), listed.once());
        first();
        first();
        assert_eq!(*stores.listed.borrow(), 1, "one watch listing twice is one");
        second();
        for waiter in waiters {
            let ready = tokio::time::timeout(Duration::from_secs(5), waiter).await;
            assert!(ready.expect("woken").expect("joined"));
        }
    }

    #[tokio::test]
    async fn a_watch_ending_before_its_list_is_not_ready() {
        let (listed, rx) = Listed::new(2);
        let stores = stores(rx);
        let mut only = listed.once();
        only();
        drop((listed, only));
        assert!(!stores.ready().await);
    }
}
