//! One reconcile of one WebApp: finalizer, validation, children, routing entry, status.
//!
//! Every step reads the current state — from the controller's reflector stores
//! ([`super::Stores`]), never with a GET — and writes only the difference, so a reconcile can
//! be repeated, interrupted (see [`super::crash`]) or replayed after a leader change without
//! duplicating anything:
//! 1. the finalizer, by [`kube::runtime::finalizer`]: without it, it is added (a JSON patch
//!    whose `test` fails on a stale copy, which is re-read and recomputed) and the change
//!    triggers the next reconcile; deleted → [`Event::Cleanup`] deletes the WebApp's own
//!    routing entry (idempotent, see [`super::routes`]), then the finalizer goes; children go
//!    by garbage collection through their owner reference. Otherwise [`Event::Apply`]:
//! 2. invalid spec → `InvalidSpec` conditions, wait for a spec change;
//! 3. Deployment, Service: server-side apply only when the stored object lacks what we set;
//! 4. the routing entry (a ConfigMap of its own in the operator's namespace), applied only
//!    when the stored one is missing or differs;
//! 5. status, written only when it differs from the current one.
//!
//! Writes this instance just sent are remembered ([`super::memo`]) so that a store one event
//! behind does not cause the same write twice.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{self, Event, finalizer};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;

use super::Stores;
use super::apply::{self, FIELD_MANAGER};
use super::crash::{self, CrashPoint};
use super::errors::{self, ErrorClass, ReconcileError};
use super::memo::{self, RecentWrites, Write};
use super::routes;
use super::status::{self, Observed};
use crate::api::v1;
use crate::metrics::{Metrics, Outcome};
use crate::webhook::admission;

/// Finalizer that guards the cleanup of the routing entry.
pub const FINALIZER: &str = "apps.olmpack.dev/cleanup";
/// Safety-net resync of a converged WebApp (plus jitter).
pub const RESYNC: Duration = Duration::from_secs(600);

/// Shared state of the reconciles.
pub struct Context {
    pub client: Client,
    pub metrics: Arc<Metrics>,
    /// Namespace of the routing entries (the operator's own).
    pub operator_namespace: String,
    pub crash: Option<CrashPoint>,
    /// What the watches have seen.
    pub stores: Stores,
    writes: RecentWrites,
    failures: Mutex<HashMap<String, u32>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("operator_namespace", &self.operator_namespace)
            .field("crash", &self.crash)
            .finish_non_exhaustive()
    }
}

impl Context {
    /// A context for reconciles with `client`, reading from `stores`.
    pub fn new(
        client: Client,
        metrics: Arc<Metrics>,
        operator_namespace: String,
        crash: Option<CrashPoint>,
        stores: Stores,
    ) -> Self {
        Self {
            client,
            metrics,
            operator_namespace,
            crash,
            stores,
            writes: RecentWrites::default(),
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Forgets everything about the WebApp `key` (it is gone).
    pub fn forget(&self, key: &str) {
        self.metrics.forget(key);
        self.writes.forget(key);
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }
}

/// `<namespace>/<name>` of a WebApp.
pub fn key(app: &v1::WebApp) -> String {
    format!("{}/{}", app.namespace().unwrap_or_default(), app.name_any())
}

fn jitter_seed(key: &str) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    key.bytes().fold(u64::from(nanos), |h, b| {
        h.wrapping_mul(31).wrapping_add(u64::from(b))
    })
}

/// Entry point for the controller: runs [`reconcile_inner`] and records metrics.
pub async fn reconcile(app: Arc<v1::WebApp>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let started = Instant::now();
    let key = key(&app);
    let in_flight = InFlight::start(&ctx.metrics, &key);
    let result = reconcile_inner(app, &ctx, &key).await;
    drop(in_flight);
    let outcome = match &result {
        Ok((_, true)) => Outcome::Converged,
        Ok((_, false)) => Outcome::InvalidSpec,
        Err(err) => Outcome::Error(err.reason()),
    };
    ctx.metrics.reconciled(started, outcome);
    let result = result.map(|(action, _)| action);
    match &result {
        Ok(_) => {
            ctx.failures
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&key);
        }
        Err(err) => {
            tracing::warn!(webapp = %key, reason = err.reason(), error = %err, "reconcile failed")
        }
    }
    result
}

/// Counts a running reconcile; also when it is abandoned at shutdown (dropped).
struct InFlight<'a> {
    metrics: &'a Metrics,
    key: &'a str,
}

impl<'a> InFlight<'a> {
    fn start(metrics: &'a Metrics, key: &'a str) -> Self {
        metrics.in_flight(key, true);
        Self { metrics, key }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.metrics.in_flight(self.key, false);
    }
}

/// Retry policy: conflicts at once, everything else with backoff and jitter.
pub fn error_policy(app: Arc<v1::WebApp>, err: &ReconcileError, ctx: Arc<Context>) -> Action {
    ctx.metrics.retried();
    let key = key(&app);
    match err.class() {
        ErrorClass::Conflict => Action::requeue(errors::CONFLICT_DELAY),
        ErrorClass::Transient => {
            let mut failures = ctx.failures.lock().unwrap_or_else(|p| p.into_inner());
            let n = failures.entry(key.clone()).or_insert(0);
            let delay = errors::backoff(*n, jitter_seed(&key));
            *n = n.saturating_add(1);
            Action::requeue(delay)
        }
    }
}

/// One reconcile under the finalizer; the flag says whether the WebApp converged (false:
/// invalid spec).
async fn reconcile_inner(
    app: Arc<v1::WebApp>,
    ctx: &Context,
    key: &str,
) -> Result<(Action, bool), ReconcileError> {
    let ns = app.namespace().unwrap_or_default();
    let apps: Api<v1::WebApp> = Api::namespaced(ctx.client.clone(), &ns);
    let deleting = app.metadata.deletion_timestamp.is_some();
    let converged = AtomicBool::new(true);
    let action = finalizer(&apps, FINALIZER, app, |event| async {
        match event {
            Event::Apply(app) => {
                let (action, ok) = apply_webapp(&app, ctx, &apps, key).await?;
                converged.store(ok, Ordering::Relaxed);
                Ok(action)
            }
            Event::Cleanup(app) => {
                let api: Api<ConfigMap> =
                    Api::namespaced(ctx.client.clone(), &ctx.operator_namespace);
                routes::remove(&api, &app)
                    .await
                    .map_err(ReconcileError::api("delete the routing entry", key))?;
                tracing::info!(webapp = %key, "cleanup done; removing the finalizer");
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|err| from_finalizer(err, key))?;
    if deleting {
        ctx.forget(key);
    }
    Ok((action, converged.into_inner()))
}

/// The reconcile error behind a failure of [`finalizer`].
fn from_finalizer(err: finalizer::Error<ReconcileError>, key: &str) -> ReconcileError {
    match err {
        finalizer::Error::ApplyFailed(err) | finalizer::Error::CleanupFailed(err) => err,
        finalizer::Error::AddFinalizer(err) => ReconcileError::api("add the finalizer", key)(err),
        finalizer::Error::RemoveFinalizer(err) => {
            ReconcileError::api("remove the finalizer", key)(err)
        }
        finalizer::Error::UnnamedObject | finalizer::Error::InvalidFinalizer => {
            ReconcileError::Unnamed {
                key: key.to_owned(),
            }
        }
    }
}

/// Steps 2–5 of the module docs ([`Event::Apply`]).
async fn apply_webapp(
    app: &v1::WebApp,
    ctx: &Context,
    apps: &Api<v1::WebApp>,
    key: &str,
) -> Result<(Action, bool), ReconcileError> {
    let ns = app.namespace().unwrap_or_default();
    if !ctx.stores.ready().await {
        return Err(ReconcileError::CachesClosed {
            key: key.to_owned(),
        });
    }
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let problems = admission::validate(&app.spec);
    if !problems.is_empty() {
        let message = problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        tracing::info!(webapp = %key, %message, "invalid spec; waiting for a change");
        let observed = Observed::InvalidSpec(message);
        write_status(ctx, apps, app, &observed, now, key).await?;
        return Ok((Action::await_change(), false));
    }

    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ns);
    let deployment = ensure_child(
        ctx,
        key,
        Write::Deployment,
        &ctx.stores.deployments,
        &deployments,
        apply::deployment(app),
    )
    .await?;
    let services: Api<Service> = Api::namespaced(ctx.client.clone(), &ns);
    ensure_child(
        ctx,
        key,
        Write::Service,
        &ctx.stores.services,
        &services,
        apply::service(app),
    )
    .await?;
    ensure_route(ctx, app, key).await?;
    let jitter = errors::backoff(0, jitter_seed(key)).as_millis() as u64;
    let resync = Action::requeue(RESYNC + Duration::from_millis(jitter * 60));
    match deployment {
        Some(deployment) => {
            let observed = Observed::Deployment(&deployment);
            write_status(ctx, apps, app, &observed, now, key).await?;
            Ok((resync, true))
        }
        // Just created and not in the store yet: its watch event brings the next reconcile.
        None => Ok((Action::await_change(), true)),
    }
}

/// Server-side applies a child unless the store holds it already (or holds the version
/// from before this very write); returns the child as stored or as applied.
async fn ensure_child<K>(
    ctx: &Context,
    key: &str,
    write: Write,
    store: &Store<K>,
    api: &Api<K>,
    desired: serde_json::Value,
) -> Result<Option<Arc<K>>, ReconcileError>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + serde::Serialize + Debug,
{
    let name = desired["metadata"]["name"].as_str().unwrap_or_default();
    let ns = desired["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default();
    let live = store.get(&ObjectRef::new(name).within(ns));
    let seen = live.as_ref().and_then(|l| l.resource_version());
    let digest = memo::digest(&desired);
    if !apply::needs_apply(live.as_deref(), &desired)
        || ctx.writes.already_sent(key, write, seen.as_deref(), digest)
    {
        return Ok(live);
    }
    let step = match write {
        Write::Deployment => "apply the Deployment",
        _ => "apply the Service",
    };
    if write == Write::Deployment {
        crash::check(ctx.crash, CrashPoint::BeforeDeploymentApply);
    }
    let applied = apply::apply(api, &desired)
        .await
        .map_err(ReconcileError::api(step, key))?;
    ctx.writes.sent(key, write, seen.as_deref(), digest);
    tracing::info!(webapp = %key, child = ?write, "applied");
    if write == Write::Deployment {
        crash::check(ctx.crash, CrashPoint::AfterDeploymentApply);
    }
    Ok(Some(Arc::new(applied)))
}

async fn write_status(
    ctx: &Context,
    apps: &Api<v1::WebApp>,
    app: &v1::WebApp,
    observed: &Observed<'_>,
    now: Time,
    key: &str,
) -> Result<(), ReconcileError> {
    let desired = status::desired(
        app.metadata.generation,
        app.status.as_ref(),
        observed,
        apply::selector_string(app),
        now,
    );
    if app.status.as_ref() == Some(&desired) {
        return Ok(());
    }
    let seen = app.resource_version();
    let digest = memo::digest(&json!(status::without_transition_times(&desired)));
    if ctx
        .writes
        .already_sent(key, Write::Status, seen.as_deref(), digest)
    {
        return Ok(());
    }
    crash::check(ctx.crash, CrashPoint::BeforeStatusWrite);
    let patch = json!({
        "apiVersion": "apps.olmpack.dev/v1",
        "kind": "WebApp",
        "metadata": {"name": app.name_any()},
        "status": desired,
    });
    apps.patch_status(
        &app.name_any(),
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
    .map_err(ReconcileError::api("write the status", key))?;
    ctx.writes.sent(key, Write::Status, seen.as_deref(), digest);
    tracing::debug!(webapp = %key, "status written");
    Ok(())
}

/// Applies the WebApp's routing entry unless the store already holds it.
async fn ensure_route(ctx: &Context, app: &v1::WebApp, key: &str) -> Result<(), ReconcileError> {
    let ns = &ctx.operator_namespace;
    if routes::is_current(&ctx.stores.routes, app, ns) {
        return Ok(());
    }
    let name = routes::name(&app.namespace().unwrap_or_default(), &app.name_any());
    let seen = ctx
        .stores
        .routes
        .get(&ObjectRef::new(&name).within(ns))
        .and_then(|entry| entry.resource_version());
    let digest = memo::digest(&routes::desired(app, ns));
    if ctx
        .writes
        .already_sent(key, Write::Route, seen.as_deref(), digest)
    {
        return Ok(());
    }
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), ns);
    routes::ensure(&api, app, ns)
        .await
        .map_err(ReconcileError::api("apply the routing entry", key))?;
    ctx.writes.sent(key, Write::Route, seen.as_deref(), digest);
    Ok(())
}
