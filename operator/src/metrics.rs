//! Prometheus metrics and the plain-HTTP `/metrics`, `/healthz`, `/readyz` endpoints.
//!
//! Metric names (OpenMetrics):
//!
//! | metric | meaning |
//! |---|---|
//! | `webapp_reconciles_total{result}` | finished reconciles: `success`, `invalid_spec`, `error` |
//! | `webapp_reconcile_duration_seconds` | duration of one reconcile; buckets 5 ms … ~11 min |
//! | `webapp_reconcile_errors_total{reason}` | failed reconciles by stable reason |
//! | `webapp_reconcile_retries_total` | reconciles scheduled again after an error |
//! | `webapp_queue_depth` | WebApps a watch event has triggered and no reconcile has picked up yet |
//! | `webapp_reconciles_in_flight` | reconciles running now (at most the concurrency limit) |
//! | `webapp_unconverged` | WebApps not Ready at their current generation, or being deleted |
//! | `webapp_oldest_unconverged_seconds` | how long the oldest of those has been so (since this instance first saw it so) |
//! | `webapp_api_requests_total{verb}` | every request attempt of the work client, retries included |
//! | `webapp_api_responses_total{code}` | every response, so 429s and 5xx that the client retried too |
//! | `webapp_api_client_wait_seconds_total` | time requests waited for the client-side rate limit |
//! | `webapp_leader_election_responses_total{code}` | responses to the leader-election client |
//! | `webapp_webhook_requests_total{endpoint,result}` | webhook requests |
//! | `webapp_leader` | 1 while this instance leads |

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    in_flight: Gauge,
    unconverged_count: Gauge,
    oldest_unconverged: Gauge,
    api_requests: Family<Labels, Counter>,
    api_responses: Family<Labels, Counter>,
    client_wait: Counter<f64>,
    lease_responses: Family<Labels, Counter>,
    webhook_requests: Family<Labels, Counter>,
    leader: Gauge,
    /// Keys triggered by a watch event and not yet picked up by a reconcile.
    queued: Mutex<HashSet<String>>,
    /// WebApps not converged, with the time this instance first saw them so.
    unconverged: Mutex<HashMap<String, Instant>>,
    /// The most keys ever queued and reconciles ever in flight at once.
    peak_queued: AtomicI64,
    peak_in_flight: AtomicI64,
    ready: AtomicBool,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut metrics = Self {
            registry: Registry::default(),
            reconciles: Family::default(),
            // 5 ms doubling to 655 s: a reconcile that waits minutes for a throttled
            // apiserver still lands in a bucket.
            duration: Histogram::new(exponential_buckets(0.005, 2.0, 18)),
            errors: Family::default(),
            retries: Counter::default(),
            queue_depth: Gauge::default(),
            in_flight: Gauge::default(),
            unconverged_count: Gauge::default(),
            oldest_unconverged: Gauge::default(),
            api_requests: Family::default(),
            api_responses: Family::default(),
            client_wait: Counter::<f64>::default(),
            lease_responses: Family::default(),
            webhook_requests: Family::default(),
            leader: Gauge::default(),
            queued: Mutex::new(HashSet::new()),
            unconverged: Mutex::new(HashMap::new()),
            peak_queued: AtomicI64::new(0),
            peak_in_flight: AtomicI64::new(0),
            ready: AtomicBool::new(false),
        };
        metrics.register_all();
        metrics
    }
}

impl Metrics {
    /// Registers every metric under its exported name.
    fn register_all(&mut self) {
        let r = &mut self.registry;
        r.register(
            "webapp_reconciles",
            "Reconciles by result",
            self.reconciles.clone(),
        );
        r.register(
            "webapp_reconcile_duration_seconds",
            "Duration of one reconcile",
            self.duration.clone(),
        );
        r.register(
            "webapp_reconcile_errors",
            "Reconcile errors by reason",
            self.errors.clone(),
        );
        r.register(
            "webapp_reconcile_retries",
            "Reconciles scheduled after an error",
            self.retries.clone(),
        );
        r.register(
            "webapp_queue_depth",
            "WebApps triggered by a watch event and not yet picked up by a reconcile",
            self.queue_depth.clone(),
        );
        r.register(
            "webapp_reconciles_in_flight",
            "Reconciles running now",
            self.in_flight.clone(),
        );
        r.register(
            "webapp_unconverged",
            "WebApps not Ready at their current generation, or being deleted",
            self.unconverged_count.clone(),
        );
        r.register(
            "webapp_oldest_unconverged_seconds",
            "How long the oldest unconverged WebApp has been unconverged",
            self.oldest_unconverged.clone(),
        );
        r.register(
            "webapp_api_requests",
            "API request attempts sent by the work client, retries included, by verb",
            self.api_requests.clone(),
        );
        r.register(
            "webapp_api_responses",
            "API responses to the work client, retried ones included, by status code",
            self.api_responses.clone(),
        );
        r.register(
            "webapp_api_client_wait_seconds",
            "Time requests waited for the client-side rate limit",
            self.client_wait.clone(),
        );
        r.register(
            "webapp_leader_election_responses",
            "API responses to the leader-election client, by status code",
            self.lease_responses.clone(),
        );
        r.register(
            "webapp_webhook_requests",
            "Webhook requests by endpoint and result",
            self.webhook_requests.clone(),
        );
        r.register(
            "webapp_leader",
            "1 while this instance is the leader",
            self.leader.clone(),
        );
    }
}

impl Metrics {
    /// Records one finished reconcile.
    pub fn reconciled(&self, started: Instant, outcome: Outcome) {
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
    }

    /// Records what a watch event showed of WebApp `key`: whether it is converged (Ready at
    /// its current generation and not being deleted).
    pub fn observed(&self, key: &str, converged: bool) {
        let mut unconverged = self.unconverged.lock().unwrap_or_else(|p| p.into_inner());
        if converged {
            unconverged.remove(key);
        } else {
            unconverged
                .entry(key.to_owned())
                .or_insert_with(Instant::now);
        }
    }

    /// Forgets `key` (the WebApp is gone).
    pub fn forget(&self, key: &str) {
        self.unconverged
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
        self.queued
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }

    /// A watch event triggered a reconcile of `key`.
    pub fn queued(&self, key: &str) {
        let mut queued = self.queued.lock().unwrap_or_else(|p| p.into_inner());
        queued.insert(key.to_owned());
        self.queue_depth.set(queued.len() as i64);
        self.peak_queued
            .fetch_max(queued.len() as i64, Ordering::Relaxed);
    }

    /// A reconcile of `key` starts (`true`) or ends (`false`).
    pub fn in_flight(&self, key: &str, running: bool) {
        if running {
            let mut queued = self.queued.lock().unwrap_or_else(|p| p.into_inner());
            queued.remove(key);
            self.queue_depth.set(queued.len() as i64);
            let now = self.in_flight.inc() + 1;
            self.peak_in_flight.fetch_max(now, Ordering::Relaxed);
        } else {
            self.in_flight.dec();
        }
    }

    /// Empties the queue (the controller stopped; a new term lists everything again).
    pub fn clear_queue(&self) {
        self.queued
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.queue_depth.set(0);
    }

    /// Reconciles running now.
    pub fn reconciles_in_flight(&self) -> i64 {
        self.in_flight.get()
    }

    /// The most keys queued and the most reconciles in flight at once so far.
    pub fn peaks(&self) -> (i64, i64) {
        (
            self.peak_queued.load(Ordering::Relaxed),
            self.peak_in_flight.load(Ordering::Relaxed),
        )
    }

    /// A reconcile was scheduled again after an error.
    pub fn retried(&self) {
        self.retries.inc();
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

    /// A request waited `wait` for the client-side rate limit.
    pub fn client_throttled(&self, wait: Duration) {
        self.client_wait.inc_by(wait.as_secs_f64());
    }

    /// Counts one response to the leader-election client.
    pub fn lease_response(&self, code: u16) {
        self.lease_responses
            .get_or_create(&vec![("code", code.to_string())])
            .inc();
    }

    /// Responses with status 429 so far (every attempt, retried ones included).
    pub fn throttled(&self) -> u64 {
        self.api_responses(429)
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

    /// The oldest unconverged WebApp's age, and how many there are.
    pub fn unconverged(&self) -> (Duration, usize) {
        let unconverged = self.unconverged.lock().unwrap_or_else(|p| p.into_inner());
        let oldest = unconverged.values().map(Instant::elapsed).max();
        (oldest.unwrap_or_default(), unconverged.len())
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let (oldest, count) = self.unconverged();
        self.oldest_unconverged.set(oldest.as_secs() as i64);
        self.unconverged_count.set(count as i64);
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
