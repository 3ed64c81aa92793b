//! The release state file (`<out>/release-state.json`): what a previous run built and pushed,
//! so a re-run rebuilds and pushes only what changed and an interrupted run finishes.
//!
//! Contract: the file is rewritten atomically (temp file + rename) after every step that
//! changes something; an unreadable or unparsable file counts as "nothing done yet" (the run
//! then rebuilds, which is always safe), never as success.
#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The state file's name under `--out`.
pub const STATE_FILE: &str = "release-state.json";

/// Failure to save the state file.
#[derive(Debug, thiserror::Error)]
#[error("failed to write the release state {path}")]
pub struct StateError {
    /// The state file.
    pub path: PathBuf,
    /// The I/O error from the file system.
    #[source]
    pub source: std::io::Error,
}

/// Never about the input olmpack reads: a failure to do the job (exit 2).
impl crate::refusal::Refusal for StateError {
    fn refuses_input(&self) -> bool {
        false
    }
}

/// What earlier runs did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// Built image layouts by name (`operator`, `bundle-1.0.0`, `catalog`).
    #[serde(default)]
    pub images: BTreeMap<String, BuiltImage>,
    /// Pushed references (`host/repo:tag`) → the digest the tag was moved to.
    #[serde(default)]
    pub pushed: BTreeMap<String, String>,
    /// Published SBOMs and signatures, by kind and image (see [`super::supply`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub supply: BTreeMap<String, Attachment>,
}

/// What a supply chain artifact is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// An SPDX SBOM attached as an OCI artifact.
    Sbom,
    /// A cosign signature at tag `sha256-<hex>.sig`.
    Signature,
}

/// One published supply chain artifact (in the summary and the state file).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    /// Whether it is an SBOM or a signature.
    pub kind: Kind,
    /// The image it is about, `host/repo@sha256:…`.
    pub image: String,
    /// The artifact's manifest digest.
    pub digest: String,
    /// How a client finds it: `referrers-api`, `tag-schema`, or `cosign-tag`.
    pub found_by: String,
}

impl Attachment {
    /// The state file's key of an SBOM.
    pub(super) fn sbom_key(image: &str) -> String {
        format!("sbom {image}")
    }

    /// The state file's key of a signature by the key `key_id`.
    pub(super) fn signature_key(image: &str, key_id: &str) -> String {
        format!("signature {image} key {key_id}")
    }
}

/// One image layout under `<out>/images/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BuiltImage {
    /// `sha256:` of everything the image was built from (files, binaries, base, options).
    pub inputs: String,
    /// The image's root digest.
    pub digest: String,
}

impl State {
    /// Reads the state under `out`; missing or unreadable means empty.
    pub fn load(out: &Path) -> Self {
        std::fs::read(out.join(STATE_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Writes the state under `out` atomically.
    pub fn save(&self, out: &Path) -> Result<(), StateError> {
        let path = out.join(STATE_FILE);
        let err = |source| StateError {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(out).map_err(err)?;
        let mut bytes = serde_json::to_vec_pretty(self).expect("the state always serializes");
        bytes.push(b'\n');
        let temp = out.join(format!(".{STATE_FILE}.tmp"));
        std::fs::write(&temp, bytes).map_err(err)?;
        std::fs::rename(&temp, &path).map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_and_garbage_means_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(State::load(dir.path()), State::default());
        let mut state = State::default();
        state.pushed.insert("r/x:v1".into(), "sha256:1".into());
        state.save(dir.path()).unwrap();
        assert_eq!(State::load(dir.path()), state);
        std::fs::write(dir.path().join(STATE_FILE), "{not json").unwrap();
        assert_eq!(State::load(dir.path()), State::default());
    }
}
