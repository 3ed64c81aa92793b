//! The HTTPS server (rustls only) that routes `/convert`, `/validate` and `/mutate` to the
//! pure handlers and answers every request with HTTP 200 and a review body.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;

use super::tls_reload::ReloadingCert;
use super::{admission, convert};
use crate::manifests::crd::CONVERT_PATH;
use crate::manifests::webhooks::{MUTATE_PATH, VALIDATE_PATH};
use crate::metrics::Metrics;

/// Largest accepted request body; a ConversionReview of a long list can be large.
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Failure to start the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("failed to listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

fn json(body: Vec<u8>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], body)
}

/// The webhook routes.
pub fn router(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route(
            CONVERT_PATH,
            post(|State(m): State<Arc<Metrics>>, body: Bytes| async move {
                let (bytes, outcome) = convert::handle(&body);
                m.webhook_request("convert", outcome == convert::Outcome::Success);
                json(bytes)
            }),
        )
        .route(
            VALIDATE_PATH,
            post(|State(m): State<Arc<Metrics>>, body: Bytes| async move {
                let (bytes, allowed) = admission::handle_validate(&body);
                m.webhook_request("validate", allowed);
                json(bytes)
            }),
        )
        .route(
            MUTATE_PATH,
            post(|State(m): State<Arc<Metrics>>, body: Bytes| async move {
                let (bytes, allowed) = admission::handle_mutate(&body);
                m.webhook_request("mutate", allowed);
                json(bytes)
            }),
        )
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(metrics)
}

/// A running webhook server.
#[derive(Debug)]
pub struct WebhookServer {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl WebhookServer {
    /// Serves [`router`] over TLS with `cert` on `addr` until `shutdown` turns true (port 0
    /// picks a free port; see [`WebhookServer::addr`]).
    pub async fn start(
        addr: SocketAddr,
        cert: Arc<ReloadingCert>,
        metrics: Arc<Metrics>,
        mut shutdown: watch::Receiver<bool>,
    ) -> Result<Self, ServerError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServerError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| ServerError::Bind { addr, source })?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cert.server_config()));
        let app = router(metrics);
        let task = tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    _ = shutdown.wait_for(|stop| *stop) => break,
                };
                let Ok((tcp, _)) = accepted else { continue };
                let acceptor = acceptor.clone();
                let service = TowerToHyperService::new(app.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Ok(Self { addr, task })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Waits until the accept loop has stopped (after shutdown).
    pub async fn stopped(mut self) {
        let _ = (&mut self.task).await;
    }
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
