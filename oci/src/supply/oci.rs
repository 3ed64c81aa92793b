//! The few registry operations the supply chain steps need, on one repository: blobs and
//! manifests by digest, a manifest by tag that may be absent, and the referrers list.
#![warn(missing_docs)]

use oci_client::{Reference, RegistryOperation};

use crate::image::digest::sha256_digest;
use crate::image::layout::Descriptor;
use crate::image::reference::{self, ReferenceError};
use crate::image::registry::{RegistryAccess, RegistryClient, RegistryError};

/// One repository of one registry, authenticated for pushing.
#[derive(Debug)]
pub struct Repo {
    client: RegistryClient,
    registry: String,
    repository: String,
}

/// Failure of a registry operation of the supply chain steps.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// The image reference does not parse.
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// A request to the registry failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The registry does not serve a blob that was just uploaded (a broken or eventually consistent registry).
    #[error("{what}: the registry still lacks blob {digest} after it was uploaded")]
    BlobMissing {
        /// What was being pushed.
        what: String,
        /// The digest of the missing blob.
        digest: String,
    },
}

/// Never about the input olmpack reads: a failure to do the job (exit 2).
impl crate::RefusesInput for RepoError {
    fn refuses_input(&self) -> bool {
        false
    }
}

impl Repo {
    /// Connects to the repository of `image` (`host/repo[:tag][@digest]`) and authenticates.
    pub async fn connect(image: &str, access: &RegistryAccess) -> Result<Self, RepoError> {
        let parsed = reference::parse(image)?;
        let client = RegistryClient::new(&parsed, access)?;
        client
            .authenticate(&parsed, RegistryOperation::Push)
            .await?;
        Ok(Self {
            client,
            registry: parsed.registry().to_owned(),
            repository: parsed.repository().to_owned(),
        })
    }

    /// `host/repo`.
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// A reference to `digest` in this repository.
    pub fn at_digest(&self, digest: &str) -> Reference {
        Reference::with_digest(
            self.registry.clone(),
            self.repository.clone(),
            digest.to_owned(),
        )
    }

    /// A reference to `tag` in this repository.
    pub fn at_tag(&self, tag: &str) -> Reference {
        Reference::with_tag(
            self.registry.clone(),
            self.repository.clone(),
            tag.to_owned(),
        )
    }

    /// Whether the registry has blob `digest` in this repository (a HEAD request).
    pub async fn has_blob(&self, digest: &str) -> Result<bool, RepoError> {
        let target = self.at_digest(digest);
        Ok(self
            .client
            .with_retries(
                format!("checking blob {}@{digest}", self.name()),
                || async { self.client.client.blob_exists(&target, digest).await },
            )
            .await?)
    }

    /// Uploads `bytes` unless the registry has them; returns their descriptor.
    pub async fn ensure_blob(
        &self,
        media_type: &str,
        bytes: &[u8],
    ) -> Result<Descriptor, RepoError> {
        let digest = sha256_digest(bytes);
        let target = self.at_digest(&digest);
        let exists = || self.has_blob(&digest);
        if !exists().await? {
            let data = bytes::Bytes::copy_from_slice(bytes);
            self.client
                .with_retries(
                    format!("uploading blob {}@{digest}", self.name()),
                    || async {
                        self.client
                            .client
                            .push_blob(&target, data.clone(), &digest)
                            .await
                    },
                )
                .await?;
            if !exists().await? {
                return Err(RepoError::BlobMissing {
                    what: self.name(),
                    digest,
                });
            }
        }
        Ok(Descriptor::new(media_type, digest, bytes.len() as u64))
    }

    /// Pushes a manifest to `reference` (a digest or a tag).
    pub async fn put_manifest(
        &self,
        reference: &Reference,
        bytes: &[u8],
        media_type: &str,
    ) -> Result<(), RepoError> {
        let content_type = http::HeaderValue::from_str(media_type)
            .unwrap_or_else(|_| http::HeaderValue::from_static("application/octet-stream"));
        let body = bytes.to_vec();
        self.client
            .with_retries(
                format!("pushing manifest to {}", reference.whole()),
                || async {
                    self.client
                        .client
                        .push_manifest_raw(reference, body.clone(), content_type.clone())
                        .await
                },
            )
            .await?;
        Ok(())
    }

    /// The manifest at `reference`, or `None` when the registry has none there.
    pub async fn get_manifest(
        &self,
        reference: &Reference,
        accepted: &[&str],
    ) -> Result<Option<Vec<u8>>, RepoError> {
        let wanted = reference.digest().or(reference.tag()).unwrap_or("latest");
        let found = self
            .client
            .get_manifest(
                reference.repository(),
                wanted,
                accepted,
                format!("reading {}", reference.whole()),
            )
            .await;
        match found {
            Ok((bytes, _)) => Ok(Some(bytes)),
            Err(RegistryError::Status { status: 404, .. }) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    /// The digests of the manifests referring to `subject`, as the registry lists them:
    /// by its referrers API, or (on a 404 there) from the tag-schema index.
    pub async fn referrers(&self, subject: &str) -> Result<Vec<String>, RepoError> {
        let reference = self.at_digest(subject);
        let index = self
            .client
            .with_retries(
                format!("listing the referrers of {}@{subject}", self.name()),
                || async { self.client.client.pull_referrers(&reference, None).await },
            )
            .await?;
        Ok(index.manifests.into_iter().map(|m| m.digest).collect())
    }
}
