//! The operator's two Kubernetes clients.
//!
//! - The **work client** (reconciles, watches, storage migration): every request first takes
//!   a token from a client-side bucket ([`ApiLimits`]: sustained requests per second and a
//!   burst), so that the operator's flow stays within what the apiserver's priority and
//!   fairness grants it instead of being queued and rejected with 429. kube's retry of 429,
//!   503 and 504 runs *outside* the counting layer, so `webapp_api_requests_total` and
//!   `webapp_api_responses_total` see every attempt, retries included (kube's own retry
//!   layer sits below any layer added to its builder and hides them).
//! - The **leader-election client**: its own connection pool and no bucket, so a Lease
//!   renewal never waits behind reconcile traffic; its responses are counted separately
//!   (`webapp_leader_election_responses_total`).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use kube::Client;
use kube::client::ClientBuilder;
use kube::client::retry::RetryPolicy;
use tower::buffer::BufferLayer;
use tower::retry::RetryLayer;
use tower::util::{MapRequestLayer, MapResponseLayer};
use tower::{Layer, Service};

use super::ControllerError;
use crate::metrics::Metrics;

/// Client-side request rate of the work client.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ApiLimits {
    /// Sustained requests per second.
    pub qps: f64,
    /// Requests that may be sent at once after an idle period.
    pub burst: u32,
}

impl Default for ApiLimits {
    fn default() -> Self {
        Self {
            qps: 100.0,
            burst: 200,
        }
    }
}

/// How many requests may wait in the buffer in front of the connection pool.
const BUFFER: usize = 1024;

/// The work client for `config` (module docs).
pub fn work_client(
    mut config: kube::Config,
    limits: ApiLimits,
    metrics: Arc<Metrics>,
) -> Result<Client, ControllerError> {
    config.default_retry = false;
    let bucket = Arc::new(TokenBucket::new(limits, metrics.clone()));
    let requests = metrics.clone();
    let responses = metrics;
    let builder = ClientBuilder::try_from(config).map_err(ControllerError::Client)?;
    Ok(builder
        .with_layer(&MapResponseLayer::new(
            move |response: http::Response<_>| {
                responses.api_response(response.status().as_u16());
                response
            },
        ))
        .with_layer(&MapRequestLayer::new(
            move |request: http::Request<kube::client::Body>| {
                requests.api_request(verb(&request));
                request
            },
        ))
        .with_layer(&BufferLayer::<http::Request<kube::client::Body>>::new(
            BUFFER,
        ))
        .with_layer(&ThrottleLayer { bucket })
        .with_layer(&RetryLayer::new(RetryPolicy::server_retry()))
        .build())
}

/// The request's HTTP method, or `WATCH` for a watch (a long-running GET).
fn verb<B>(request: &http::Request<B>) -> &str {
    let watch = request
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    if watch {
        "WATCH"
    } else {
        request.method().as_str()
    }
}

/// The leader-election client for `config` (module docs).
pub fn lease_client(
    config: kube::Config,
    metrics: Arc<Metrics>,
) -> Result<Client, ControllerError> {
    let builder = ClientBuilder::try_from(config).map_err(ControllerError::Client)?;
    Ok(builder
        .with_layer(&MapResponseLayer::new(
            move |response: http::Response<_>| {
                metrics.lease_response(response.status().as_u16());
                response
            },
        ))
        .build())
}

/// A token bucket: `burst` tokens, refilled at `qps` per second. A caller reserves a token
/// (the count may go negative) and sleeps until its token would have been there, so waiting
/// callers are served in the order they came.
#[derive(Debug)]
struct TokenBucket {
    limits: ApiLimits,
    state: Mutex<(f64, Instant)>,
    metrics: Arc<Metrics>,
}

impl TokenBucket {
    fn new(limits: ApiLimits, metrics: Arc<Metrics>) -> Self {
        let limits = ApiLimits {
            qps: limits.qps.max(0.1),
            burst: limits.burst.max(1),
        };
        Self {
            limits,
            state: Mutex::new((f64::from(limits.burst), Instant::now())),
            metrics,
        }
    }

    /// Reserves one token; returns how long to wait for it.
    fn reserve(&self) -> Duration {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let (tokens, last) = *state;
        let refilled = (tokens + now.duration_since(last).as_secs_f64() * self.limits.qps)
            .min(f64::from(self.limits.burst));
        let left = refilled - 1.0;
        *state = (left, now);
        if left >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-left / self.limits.qps)
        }
    }

    async fn take(&self) {
        let wait = self.reserve();
        if !wait.is_zero() {
            self.metrics.client_throttled(wait);
            tokio::time::sleep(wait).await;
        }
    }
}

#[derive(Clone, Debug)]
struct ThrottleLayer {
    bucket: Arc<TokenBucket>,
}

impl<S> Layer<S> for ThrottleLayer {
    type Service = Throttle<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Throttle {
            inner,
            bucket: self.bucket.clone(),
        }
    }
}

/// Waits for a token of the bucket before every request.
#[derive(Clone, Debug)]
struct Throttle<S> {
    inner: S,
    bucket: Arc<TokenBucket>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, R> Service<R> for Throttle<S>
where
    S: Service<R> + Clone + Send + 'static,
    S::Future: Send,
    R: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        // The service that was polled ready answers this call; a fresh clone stays.
        let clone = self.inner.clone();
        let mut ready = std::mem::replace(&mut self.inner, clone);
        let bucket = self.bucket.clone();
        Box::pin(async move {
            bucket.take().await;
            ready.call(request).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_allows_a_burst_then_the_rate() {
        let bucket = TokenBucket::new(
            ApiLimits {
                qps: 10.0,
                burst: 3,
            },
            Arc::new(Metrics::default()),
        );
        for _ in 0..3 {
            assert_eq!(bucket.reserve(), Duration::ZERO);
        }
        let fourth = bucket.reserve();
        let fifth = bucket.reserve();
        assert!(fourth > Duration::from_millis(50) && fourth <= Duration::from_millis(100));
        assert!(
            fifth > fourth,
            "later callers wait longer: {fourth:?} {fifth:?}"
        );
    }
}
