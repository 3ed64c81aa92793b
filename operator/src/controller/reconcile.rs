//! One reconcile of one WebApp: finalizer, validation, children, routing entry, status.
//!
//! Every step reads the current state and writes only the difference, so a reconcile can be
//! repeated, interrupted (see [`super::crash`]) or replayed after a leader change without
//! duplicating anything:
//! 1. the finalizer, by [`kube::runtime::finalizer`]: without it, it is added (a JSON patch
//!    whose `test` fails on a stale copy, which is re-read and recomputed) and the change
//!    triggers the next reconcile; deleted → [`Event::Cleanup`] removes the routing entry
//!    (idempotent), then the finalizer goes; children go by garbage collection through their
//!    owner reference. Otherwise [`Event::Apply`]:
//! 2. invalid spec → `InvalidSpec` conditions, wait for a spec change;
//! 3. Deployment, Service: server-side apply only when the live object differs;
//! 4. routing entry in the operator's ConfigMap (the external side effect the finalizer
//!    cleans up);
//! 5. status, written only when it differs from the current one.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{self, Event, finalizer};
use kube::{Client, ResourceExt};
use serde_json::json;

use super::apply::{self, FIELD_MANAGER};
use super::crash::{self, CrashPoint};
use super::errors::{self, ErrorClass, ReconcileError};
use super::status::{self, Observed};
use crate::api::v1;
use crate::metrics::{Metrics, Outcome};
use crate::webhook::admission;

/// Finalizer that guards the cleanup of the routing entry.
pub const FINALIZER: &str = "apps.olmpack.dev/cleanup";
/// ConfigMap (in the operator's namespace) that maps every WebApp to its Service URL.
pub const ROUTES_CONFIGMAP: &str = "webapp-operator-routes";
/// Safety-net resync of a converged WebApp (plus jitter).
pub const RESYNC: Duration = Duration::from_secs(600);

/// Shared state of the reconciles.
pub struct Context {
    pub client: Client,
    pub metrics: Arc<Metrics>,
    /// Namespace of the routing ConfigMap (the operator's own).
    pub operator_namespace: String,
    pub crash: Option<CrashPoint>,
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
    /// A context for reconciles with `client`.
    pub fn new(
        client: Client,
        metrics: Arc<Metrics>,
        operator_namespace: String,
        crash: Option<CrashPoint>,
    ) -> Self {
        Self {
            client,
            metrics,
            operator_namespace,
            crash,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

fn key(app: &v1::WebApp) -> String {
    format!("{}/{}", app.namespace().unwrap_or_default(), app.name_any())
}

/// The routing entry of `app`: ConfigMap key and value.
pub fn route(app: &v1::WebApp) -> (String, String) {
    let ns = app.namespace().unwrap_or_default();
    let name = app.name_any();
    (
        format!("{ns}.{name}"),
        format!("http://{name}.{ns}.svc:{}", apply::SERVICE_PORT),
    )
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
    ctx.metrics.queue(1);
    let result = reconcile_inner(app, &ctx, &key).await;
    ctx.metrics.queue(-1);
    let outcome = match &result {
        Ok((_, true)) => Outcome::Converged,
        Ok((_, false)) => Outcome::InvalidSpec,
        Err(err) => Outcome::Error(err.reason()),
    };
    ctx.metrics.reconciled(&key, started, outcome);
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
                remove_route(ctx, &app, key).await?;
                tracing::info!(webapp = %key, "cleanup done; removing the finalizer");
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|err| from_finalizer(err, key))?;
    if deleting {
        ctx.metrics.forget(key);
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
    let name = app.name_any();
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
    let live = deployments
        .get_opt(&name)
        .await
        .map_err(ReconcileError::api("read the Deployment", key))?;
    let desired = apply::deployment(app);
    let deployment = match live {
        Some(live) if !apply::needs_apply(Some(&live), &desired) => live,
        _ => {
            crash::check(ctx.crash, CrashPoint::BeforeDeploymentApply);
            let applied = apply::apply(&deployments, &desired)
                .await
                .map_err(ReconcileError::api("apply the Deployment", key))?;
            tracing::info!(webapp = %key, "Deployment applied");
            crash::check(ctx.crash, CrashPoint::AfterDeploymentApply);
            applied
        }
    };

    let services: Api<Service> = Api::namespaced(ctx.client.clone(), &ns);
    let live = services
        .get_opt(&name)
        .await
        .map_err(ReconcileError::api("read the Service", key))?;
    let desired = apply::service(app);
    if apply::needs_apply(live.as_ref(), &desired) {
        apply::apply(&services, &desired)
            .await
            .map_err(ReconcileError::api("apply the Service", key))?;
        tracing::info!(webapp = %key, "Service applied");
    }

    ensure_route(ctx, app, key).await?;
    write_status(ctx, apps, app, &Observed::Deployment(&deployment), now, key).await?;
    let jitter = errors::backoff(0, jitter_seed(key)).as_millis() as u64;
    Ok((
        Action::requeue(RESYNC + Duration::from_millis(jitter * 60)),
        true,
    ))
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
    Ok(())
}

async fn ensure_route(ctx: &Context, app: &v1::WebApp, key: &str) -> Result<(), ReconcileError> {
    let (entry, url) = route(app);
    let maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ctx.operator_namespace);
    let current = maps
        .get_opt(ROUTES_CONFIGMAP)
        .await
        .map_err(ReconcileError::api("read the routing table", key))?;
    match current {
        None => {
            let map = ConfigMap {
                metadata: kube::api::ObjectMeta {
                    name: Some(ROUTES_CONFIGMAP.to_owned()),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([(entry, url)])),
                ..Default::default()
            };
            maps.create(&PostParams::default(), &map)
                .await
                .map_err(ReconcileError::api("create the routing table", key))?;
        }
        Some(map) if map.data.as_ref().and_then(|d| d.get(&entry)) == Some(&url) => {}
        Some(_) => {
            let patch = json!({"data": {entry: url}});
            maps.patch(
                ROUTES_CONFIGMAP,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(ReconcileError::api("add the routing entry", key))?;
        }
    }
    Ok(())
}

async fn remove_route(ctx: &Context, app: &v1::WebApp, key: &str) -> Result<(), ReconcileError> {
    let (entry, _) = route(app);
    let maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ctx.operator_namespace);
    let current = maps
        .get_opt(ROUTES_CONFIGMAP)
        .await
        .map_err(ReconcileError::api("read the routing table", key))?;
    let present = current
        .and_then(|m| m.data)
        .is_some_and(|d| d.contains_key(&entry));
    if present {
        let patch = json!({"data": {entry: null}});
        maps.patch(
            ROUTES_CONFIGMAP,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .map_err(ReconcileError::api("remove the routing entry", key))?;
    }
    Ok(())
}
