//! Resolving an image reference to the digest it names now.

use oci_client::RegistryOperation;

use super::reference::{self, ReferenceError};
use super::registry::{RegistryAccess, RegistryClient, RegistryError};

/// Failure to resolve a reference.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The reference does not parse.
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// Asking the registry for the digest failed.
    #[error("failed to resolve {reference}")]
    Registry {
        /// The image reference as given.
        reference: String,
        /// The registry error.
        #[source]
        source: RegistryError,
    },
}

/// The digest (`sha256:…`) that `reference` (`host/repo:tag` or `host/repo@digest`) names in
/// its registry: the index digest for a multi-platform image, which is what `relatedImages`
/// and catalogs should pin. A reference with a digest is checked to exist and returned as is
/// (the registry must answer with the same digest).
///
/// Uses a HEAD request when the registry sends `Docker-Content-Digest`, else hashes the
/// manifest it returns. Retries as described in [`super::registry`].
pub async fn resolve_digest(
    reference: &str,
    access: &RegistryAccess,
) -> Result<String, ResolveError> {
    let parsed = reference::parse(reference)?;
    let wrap = |source| ResolveError::Registry {
        reference: reference.to_owned(),
        source,
    };
    let client = RegistryClient::new(&parsed, access).map_err(wrap)?;
    client
        .authenticate(&parsed, RegistryOperation::Pull)
        .await
        .map_err(wrap)?;
    client
        .with_retries(format!("resolving {reference}"), || async {
            client
                .client
                .fetch_manifest_digest(&parsed, &client.auth)
                .await
        })
        .await
        .map_err(wrap)
}
