//! Resolving an image reference to the digest it names now.

use oci_client::RegistryOperation;

use super::media_type;
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

/// Never about the input olmpack reads: a failure to do the job (exit 2).
impl crate::RefusesInput for ResolveError {
    fn refuses_input(&self) -> bool {
        false
    }
}

/// The digest (`sha256:…`) that `reference` (`host/repo:tag` or `host/repo@digest`) names in
/// its registry: the index digest for a multi-platform image, which is what `relatedImages`
/// and catalogs should pin. A reference with a digest is checked to exist and returned as is.
///
/// The manifest is fetched (bounded, see [`super::fetch`]) and hashed: the digest is that of
/// the bytes the registry sent, never its `Docker-Content-Digest` header, so a registry that
/// lies in its headers cannot make olmpack pin a wrong digest. Retries and the deadline are as
/// described in [`super::registry`].
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
    let wanted = parsed.digest().or(parsed.tag()).unwrap_or("latest");
    let (_, digest) = client
        .get_manifest(
            parsed.repository(),
            wanted,
            media_type::ALL_MANIFESTS,
            format!("resolving {reference}"),
        )
        .await
        .map_err(wrap)?;
    Ok(digest)
}
