//! Attaching an artifact (an SBOM) to an image: an OCI image manifest whose `subject` is the
//! image, pushed by digest, found through the registry's referrers API or, where the registry
//! has none, through the referrers tag schema of the OCI distribution spec 1.1.
//!
//! Contract:
//! - The artifact manifest is deterministic ([`artifact_manifest`]): the empty config
//!   (`application/vnd.oci.empty.v1+json`, `{}`), one layer with the artifact, `artifactType`,
//!   `subject`, and `org.opencontainers.image.created` from the caller's epoch. Re-attaching
//!   the same artifact pushes the same digest.
//! - After the push the referrers of the subject are listed (`GET
//!   /v2/<name>/referrers/<digest>`). A registry with the API lists the artifact and nothing
//!   else is written. A registry without it (404 there, e.g. docker-registry 2.8) gets the
//!   fallback: the OCI index at tag `sha256-<hex>` of the subject digest, read, the artifact
//!   added to it (every entry already there is kept, byte for byte), and pushed back.
//! - The listing is read again at the end and must name the artifact.
#![warn(missing_docs)]

use std::collections::BTreeMap;

use serde::Serialize;

use super::oci::{Repo, RepoError};
use crate::image::build::rfc3339;
use crate::image::digest::{sha256_digest, sha256_hex};
use crate::image::layout::Descriptor;
use crate::image::media_type;

/// The empty config of an artifact manifest.
pub const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
const EMPTY_CONFIG: &[u8] = b"{}";
const TITLE: &str = "org.opencontainers.image.title";
const CREATED: &str = "org.opencontainers.image.created";

/// How the registry lists an attached artifact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Discovery {
    /// The registry's referrers API lists it.
    ReferrersApi,
    /// The index at tag `sha256-<hex>` lists it (the referrers tag schema).
    TagSchema,
}

/// Failure to attach an artifact.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// A registry operation on the subject's repository failed.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// The digest of the subject image is malformed.
    #[error("{subject}: {digest:?} is not a sha256 digest")]
    Digest {
        /// The subject image reference.
        subject: String,
        /// The digest as given.
        digest: String,
    },
    /// The referrers tag holds something that is not an OCI image index, so it cannot be extended.
    #[error("the referrers index at {reference} is not an OCI image index")]
    BadIndex {
        /// The referrers index reference.
        reference: String,
        /// The JSON parser's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// After pushing, neither the referrers API nor the referrers tag lists the artifact, so tools will not find it.
    #[error("{artifact} was pushed, but the referrers of {subject} do not list it")]
    NotListed {
        /// The subject image reference.
        subject: String,
        /// The artifact manifest reference.
        artifact: String,
    },
}

/// Never about the input olmpack reads: a failure to do the job (exit 2).
impl crate::RefusesInput for AttachError {
    fn refuses_input(&self) -> bool {
        false
    }
}

/// One artifact to attach.
#[derive(Clone, Debug)]
pub struct Artifact<'a> {
    /// The `artifactType` and the layer's media type.
    pub artifact_type: &'a str,
    /// The layer's `org.opencontainers.image.title` (a file name).
    pub title: &'a str,
    /// The file's content, stored as the artifact's single layer.
    pub bytes: &'a [u8],
    /// Seconds since the epoch for `org.opencontainers.image.created`.
    pub created: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactManifest<'a> {
    schema_version: u32,
    media_type: &'static str,
    artifact_type: &'a str,
    config: Descriptor,
    layers: Vec<Descriptor>,
    subject: &'a Descriptor,
    annotations: BTreeMap<String, String>,
}

/// The artifact manifest's bytes for `artifact` about `subject`.
pub fn artifact_manifest(subject: &Descriptor, artifact: &Artifact<'_>) -> Vec<u8> {
    let mut layer = Descriptor::new(
        artifact.artifact_type,
        sha256_digest(artifact.bytes),
        artifact.bytes.len() as u64,
    );
    layer.annotations = Some(BTreeMap::from([(TITLE.into(), artifact.title.into())]));
    let manifest = ArtifactManifest {
        schema_version: 2,
        media_type: media_type::MANIFEST,
        artifact_type: artifact.artifact_type,
        config: Descriptor::new(
            EMPTY_MEDIA_TYPE,
            sha256_digest(EMPTY_CONFIG),
            EMPTY_CONFIG.len() as u64,
        ),
        layers: vec![layer],
        subject,
        annotations: BTreeMap::from([(CREATED.into(), rfc3339(artifact.created))]),
    };
    serde_json::to_vec(&manifest).expect("a manifest serializes")
}

/// What an attachment did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Attached {
    /// The artifact manifest's digest.
    pub digest: String,
    /// How tools can find the artifact from the subject.
    pub discovery: Discovery,
}

/// Attaches `artifact` to `subject` in `repo` (see the module docs).
pub async fn attach(
    repo: &Repo,
    subject: &Descriptor,
    artifact: &Artifact<'_>,
) -> Result<Attached, AttachError> {
    let hex = sha256_hex(&subject.digest).ok_or_else(|| AttachError::Digest {
        subject: repo.name(),
        digest: subject.digest.clone(),
    })?;
    repo.ensure_blob(EMPTY_MEDIA_TYPE, EMPTY_CONFIG).await?;
    repo.ensure_blob(artifact.artifact_type, artifact.bytes)
        .await?;
    let manifest = artifact_manifest(subject, artifact);
    let digest = sha256_digest(&manifest);
    repo.put_manifest(&repo.at_digest(&digest), &manifest, media_type::MANIFEST)
        .await?;

    let fallback_tag = format!("sha256-{hex}");
    let fallback = repo.at_tag(&fallback_tag);
    let existing = repo.get_manifest(&fallback, &[media_type::INDEX]).await?;
    let in_fallback = match &existing {
        Some(bytes) => index_lists(bytes, &digest, &fallback.whole())?,
        None => false,
    };
    let listed = repo.referrers(&subject.digest).await?.contains(&digest);
    let discovery = if listed && !in_fallback {
        Discovery::ReferrersApi
    } else {
        if !in_fallback {
            let mut entry =
                Descriptor::new(media_type::MANIFEST, digest.clone(), manifest.len() as u64);
            entry.artifact_type = Some(artifact.artifact_type.to_owned());
            entry.annotations = Some(BTreeMap::from([(
                CREATED.into(),
                rfc3339(artifact.created),
            )]));
            let index = merged_index(existing.as_deref(), &entry, &fallback.whole())?;
            repo.put_manifest(&fallback, &index, media_type::INDEX)
                .await?;
        }
        Discovery::TagSchema
    };
    if !repo.referrers(&subject.digest).await?.contains(&digest) {
        return Err(AttachError::NotListed {
            subject: format!("{}@{}", repo.name(), subject.digest),
            artifact: digest,
        });
    }
    Ok(Attached { digest, discovery })
}

fn parse_index(bytes: &[u8], reference: &str) -> Result<serde_json::Value, AttachError> {
    let bad = |source| AttachError::BadIndex {
        reference: reference.to_owned(),
        source,
    };
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(bad)?;
    if !value
        .get("manifests")
        .is_some_and(serde_json::Value::is_array)
    {
        return Err(bad(serde::de::Error::missing_field("manifests")));
    }
    Ok(value)
}

fn index_lists(bytes: &[u8], digest: &str, reference: &str) -> Result<bool, AttachError> {
    let index = parse_index(bytes, reference)?;
    Ok(index["manifests"]
        .as_array()
        .is_some_and(|m| m.iter().any(|e| e["digest"] == digest)))
}

/// The fallback index with `entry` appended; every entry (and field) already there is kept.
pub fn merged_index(
    existing: Option<&[u8]>,
    entry: &Descriptor,
    reference: &str,
) -> Result<Vec<u8>, AttachError> {
    let mut index = match existing {
        Some(bytes) => parse_index(bytes, reference)?,
        None => serde_json::json!({
            "schemaVersion": 2,
            "mediaType": media_type::INDEX,
            "manifests": [],
        }),
    };
    let entry = serde_json::to_value(entry).expect("a descriptor serializes");
    if let Some(manifests) = index["manifests"].as_array_mut()
        && !manifests.iter().any(|e| e["digest"] == entry["digest"])
    {
        manifests.push(entry);
    }
    Ok(serde_json::to_vec(&index).expect("an index serializes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_every_entry_already_in_the_fallback_index() {
        let existing = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:aa","size":1,"artifactType":"application/vnd.example","data":"e30="}],"annotations":{"x":"y"}}"#;
        let entry = Descriptor::new(media_type::MANIFEST, "sha256:bb".into(), 2);
        let merged = merged_index(Some(existing), &entry, "r/x:sha256-1").unwrap();
        let value: serde_json::Value = serde_json::from_slice(&merged).unwrap();
        assert_eq!(value["manifests"][0]["data"], "e30=");
        assert_eq!(value["manifests"][1]["digest"], "sha256:bb");
        assert_eq!(value["annotations"]["x"], "y");
        // Adding the same entry again changes nothing.
        assert_eq!(merged_index(Some(&merged), &entry, "r").unwrap(), merged);
    }

    #[test]
    fn a_fallback_tag_that_is_not_an_index_is_refused() {
        let entry = Descriptor::new(media_type::MANIFEST, "sha256:bb".into(), 2);
        let err = merged_index(Some(b"{\"layers\":[]}"), &entry, "r/x:sha256-1").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the referrers index at r/x:sha256-1 is not an OCI image index"
        );
    }
}
