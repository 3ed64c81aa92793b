//! [`HttpsServer`]: serve an axum `Router` over TLS on 127.0.0.1, e.g. a webhook under test.
//!
//! Guarantees: TLS only (rustls, ring), HTTP/1.1 and HTTP/2; the server stops, and closes
//! every open connection, when the handle is dropped. Connections that fail the handshake are dropped without affecting others.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::pki::CertifiedKey;

/// Failure to start an HTTPS server.
#[derive(Debug, thiserror::Error)]
pub enum HttpsError {
    #[error("failed to read the serving certificate or key")]
    Pem(#[from] rustls::pki_types::pem::Error),
    #[error("the serving certificate was rejected")]
    Tls(#[from] rustls::Error),
    #[error("failed to listen on 127.0.0.1")]
    Bind(#[from] std::io::Error),
}

/// A running HTTPS server; stops on drop.
#[derive(Debug)]
pub struct HttpsServer {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl HttpsServer {
    /// Serves `router` with `cert` on a free port of 127.0.0.1.
    pub async fn start(router: axum::Router, cert: &CertifiedKey) -> Result<Self, HttpsError> {
        Self::start_on(0, router, cert).await
    }

    /// Serves `router` with `cert` on `port` of 127.0.0.1 (0: a free port).
    pub async fn start_on(
        port: u16,
        router: axum::Router,
        cert: &CertifiedKey,
    ) -> Result<Self, HttpsError> {
        crate::install_crypto_provider();
        let chain = CertificateDer::pem_slice_iter(cert.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()?;
        let key = PrivateKeyDer::from_pem_slice(cert.key_pem.as_bytes())?;
        let mut config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            // Connections live in this set: stopping the server (aborting this task) drops
            // the set and so closes every open connection too.
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                while connections.try_join_next().is_some() {}
                let acceptor = acceptor.clone();
                let service = TowerToHyperService::new(router.clone());
                connections.spawn(async move {
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

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
