//! Prometheus metrics and the plain-HTTP `/metrics`, `/healthz`, `/readyz` endpoints.
//!
//! Metric names (OpenMetrics): `webapp_reconciles_total{result}` (`success`, `invalid_spec`, `error`),
//! `webapp_reconcile_duration_seconds`, `webapp_reconcile_errors_total{reason}`,
//! `webapp_reconcile_retries_total`, `webapp_queue_depth`,
//! `webapp_oldest_unconverged_seconds`, `webapp_api_requests_total{verb}` (every request the
//! operator's client sends), `webapp_api_responses_total{code}`, `webapp_webhook_requests_total{endpoint,result}`, and
//! `webapp_leader` (1 while this instance leads).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::sync::watch;

type Labels = Vec<(&'static str, String)>;

/// How a reconcile ended, for [`Metrics::reconciled`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The WebApp matches its spec (or is gone).
    Converged,
    /// The spec is invalid; the reconcile waits for a change.
    InvalidSpec,
    /// A reconcile error with this stable reason; retried.
    Error(&'static str),
}

/// Every metric of one operator instance.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    reconciles: Family<Labels, Counter>,
    duration: Histogram,
    errors: Family<Labels, Counter>,
    retries: Counter,
    queue_depth: Gauge,
    oldest_unconverged: Gauge,
    api_requests: Family<Labels, Counter>,
    api_responses: Family<Labels, Counter>,
    webhook_requests: Family<Labels, Counter>,
    leader: Gauge,
    /// Objects whose last reconcile did not converge, with the time it first failed.
    unconverged: Mutex<HashMap<String, Instant>>,
    ready: AtomicBool,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let reconciles = Family::<Labels, Counter>::default();
        let duration = Histogram::new(exponential_buckets(0.001, 2.0, 16));
        let errors = Family::<Labels, Counter>::default();
        let retries = Counter::default();
        let queue_depth = Gauge::default();
        let oldest_unconverged = Gauge::default();
        let api_requests = Family::<Labels, Counter>::default();
        let api_responses = Family::<Labels, Counter>::default();
        let webhook_requests = Family::<Labels, Counter>::default();
        let leader = Gauge::default();
        registry.register(
            "webapp_reconciles",
            "Reconciles by result",
            reconciles.clone(),
        );
        registry.register(
            "webapp_reconcile_duration_seconds",
            "Duration of one reconcile",
            duration.clone(),
        );
        registry.register(
            "webapp_reconcile_errors",
            "Reconcile errors by reason",
            errors.clone(),
        );
        registry.register(
            "webapp_reconcile_retries",
            "Reconciles scheduled after an error",
            retries.clone(),
        );
        registry.register(
            "webapp_queue_depth",
            "Reconciles running now (kube-runtime does not expose its queue)",
            queue_depth.clone(),
        );
        registry.register(
            "webapp_oldest_unconverged_seconds",
            "Age of the oldest WebApp whose last reconcile failed or found an invalid spec",
            oldest_unconverged.clone(),
        );
        registry.register(
            "webapp_api_requests",
            "API requests sent, by verb",
            api_requests.clone(),
        );
        registry.register(
            "webapp_api_responses",
            "API responses received, by status code",
            api_responses.clone(),
        );
        registry.register(
            "webapp_webhook_requests",
            "Webhook requests by endpoint and result",
            webhook_requests.clone(),
        );
        registry.register(
            "webapp_leader",
            "1 while this instance is the leader",
            leader.clone(),
        );
        Self {
            registry,
            reconciles,
            duration,
            errors,
            retries,
            queue_depth,
            oldest_unconverged,
            api_requests,
            api_responses,
            webhook_requests,
            leader,
            unconverged: Mutex::new(HashMap::new()),
            ready: AtomicBool::new(false),
        }
    }
}

impl Metrics {
    /// Records one finished reconcile of `key`.
    pub fn reconciled(&self, key: &str, started: Instant, outcome: Outcome) {
        self.duration.observe(started.elapsed().as_secs_f64());
        let result = match outcome {
            Outcome::Converged => "success",
            Outcome::InvalidSpec => "invalid_spec",
            Outcome::Error(_) => "error",
        };
        self.reconciles
            .get_or_create(&vec![("result", result.to_owned())])
            .inc();
        if let Outcome::Error(reason) = outcome {
            self.errors
                .get_or_create(&vec![("reason", reason.to_owned())])
                .inc();
        }
        let mut unconverged = self.unconverged.lock().unwrap_or_else(|p| p.into_inner());
        match outcome {
            Outcome::Converged => {
                unconverged.remove(key);
            }
            Outcome::InvalidSpec | Outcome::Error(_) => {
                unconverged
                    .entry(key.to_owned())
                    .or_insert_with(Instant::now);
            }
        }
        let oldest = unconverged
            .values()
            .map(|t| t.elapsed().as_secs())
            .max()
            .unwrap_or(0);
        self.oldest_unconverged.set(oldest as i64);
    }

    /// Forgets `key` (deleted objects are converged by definition).
    pub fn forget(&self, key: &str) {
        self.unconverged
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }

    /// A reconcile was scheduled again after an error.
    pub fn retried(&self) {
        self.retries.inc();
    }

    /// Adjusts the number of queued or running reconciles.
    pub fn queue(&self, delta: i64) {
        self.queue_depth.inc_by(delta);
    }

    /// Counts one API request by HTTP method.
    pub fn api_request(&self, verb: &str) {
        self.api_requests
            .get_or_create(&vec![("verb", verb.to_owned())])
            .inc();
    }

    /// Counts one API response by HTTP status code.
    pub fn api_response(&self, code: u16) {
        self.api_responses
            .get_or_create(&vec![("code", code.to_string())])
            .inc();
    }

    /// API responses received so far with status `code` (e.g. 403).
    pub fn api_responses(&self, code: u16) -> u64 {
        self.api_responses
            .get_or_create(&vec![("code", code.to_string())])
            .get()
    }

    /// API requests sent so far with `verb` (e.g. `PATCH`).
    pub fn api_requests(&self, verb: &str) -> u64 {
        self.api_requests
            .get_or_create(&vec![("verb", verb.to_owned())])
            .get()
    }

    /// API requests that write (POST, PUT, PATCH, DELETE) sent so far.
    pub fn api_writes(&self) -> u64 {
        ["POST", "PUT", "PATCH", "DELETE"]
            .iter()
            .map(|v| self.api_requests(v))
            .sum()
    }

    /// Reconciles finished so far (any result).
    pub fn reconciles(&self) -> u64 {
        ["success", "invalid_spec", "error"]
            .iter()
            .map(|r| {
                self.reconciles
                    .get_or_create(&vec![("result", (*r).to_owned())])
                    .get()
            })
            .sum()
    }

    /// Counts one webhook request.
    pub fn webhook_request(&self, endpoint: &'static str, ok: bool) {
        let result = if ok { "ok" } else { "failed" };
        self.webhook_requests
            .get_or_create(&vec![
                ("endpoint", endpoint.to_owned()),
                ("result", result.to_owned()),
            ])
            .inc();
    }

    /// Records whether this instance leads.
    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// Whether this instance currently leads.
    pub fn is_leader(&self) -> bool {
        self.leader.get() == 1
    }

    /// Marks the instance ready (`/readyz` answers 200).
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::SeqCst);
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// `/metrics`, `/healthz`, `/readyz` on plain HTTP at `addr` until `shutdown` turns true.
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let app = Router::new()
        .route(
            "/metrics",
            get(|State(m): State<Arc<Metrics>>| async move {
                (
                    [(
                        "content-type",
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    m.encode(),
                )
            }),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(|State(m): State<Arc<Metrics>>| async move {
                if m.ready.load(Ordering::SeqCst) {
                    (StatusCode::OK, "ok")
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "not ready")
                }
            }),
        )
        .with_state(metrics);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = shutdown.wait_for(|stop| *stop).await;
            })
            .await;
    });
    Ok((bound, task))
}
