//! A serving certificate read from files and reloaded when they change, without a restart.
//!
//! OLM (and cert-manager, and kubelet's Secret volumes) replace the files in place; a watcher
//! polls their contents every [`ReloadingCert::spawn_watcher`] interval and swaps the
//! certificate for new TLS handshakes. A pair that does not load (for example the
//! certificate already rotated but the key not yet) keeps the previous certificate in
//! service and is retried on the next poll. Connections already open keep their certificate.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// Failure to load the certificate and key.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("failed to read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} holds no PEM certificate")]
    NoCertificate { path: PathBuf },
    #[error("{path} holds no usable PEM private key")]
    BadKey { path: PathBuf },
    #[error("the key in {path} does not match the certificate or is unsupported")]
    Mismatch {
        path: PathBuf,
        #[source]
        source: rustls::Error,
    },
}

/// The current serving certificate and the files it comes from.
#[derive(Debug)]
pub struct ReloadingCert {
    cert_path: PathBuf,
    key_path: PathBuf,
    current: RwLock<(Vec<u8>, Arc<CertifiedKey>)>,
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

fn load(cert_path: &Path, key_path: &Path) -> Result<(Vec<u8>, Arc<CertifiedKey>), TlsError> {
    let cert_pem = read(cert_path)?;
    let key_pem = read(key_path)?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .ok()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| TlsError::NoCertificate {
            path: cert_path.to_owned(),
        })?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| TlsError::BadKey {
        path: key_path.to_owned(),
    })?;
    let provider = rustls::crypto::ring::default_provider();
    let certified =
        CertifiedKey::from_der(chain, key, &provider).map_err(|source| TlsError::Mismatch {
            path: key_path.to_owned(),
            source,
        })?;
    let mut fingerprint = cert_pem;
    fingerprint.extend_from_slice(&key_pem);
    Ok((fingerprint, Arc::new(certified)))
}

impl ReloadingCert {
    /// Loads `cert_path` and `key_path` (PEM) now; fails if they do not load.
    pub fn load(cert_path: &Path, key_path: &Path) -> Result<Arc<Self>, TlsError> {
        let current = load(cert_path, key_path)?;
        Ok(Arc::new(Self {
            cert_path: cert_path.to_owned(),
            key_path: key_path.to_owned(),
            current: RwLock::new(current),
        }))
    }

    /// Re-reads the files; returns `Ok(true)` when the certificate changed.
    pub fn reload(&self) -> Result<bool, TlsError> {
        let (fingerprint, key) = load(&self.cert_path, &self.key_path)?;
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        if current.0 == fingerprint {
            return Ok(false);
        }
        *current = (fingerprint, key);
        Ok(true)
    }

    /// Polls the files every `interval` until the returned task is aborted.
    pub fn spawn_watcher(self: &Arc<Self>, interval: Duration) -> tokio::task::JoinHandle<()> {
        let this = Arc::clone(self);
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            loop {
                ticker.tick().await;
                match this.reload() {
                    Ok(true) => {
                        tracing::info!(cert = %this.cert_path.display(), "serving certificate reloaded")
                    }
                    Ok(false) => {}
                    Err(err) => {
                        tracing::warn!(error = %err, "serving certificate not reloaded; keeping the previous one")
                    }
                }
            }
        })
    }

    /// A rustls server configuration that always serves the current certificate.
    pub fn server_config(self: &Arc<Self>) -> rustls::ServerConfig {
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map(|b| b.with_no_client_auth().with_cert_resolver(self.clone()))
        .unwrap_or_else(|_| {
            rustls::ServerConfig::builder()
                .with_no_client_auth()
                .with_cert_resolver(self.clone())
        });
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        config
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        Some(current.1.clone())
    }
}
