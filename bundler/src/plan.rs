//! The release plan on disk: [`load`] reads `olmpack.yaml`, and [`PlanInputs`] resolves the
//! files a plan names (manifests, samples, icon) inside the plan's directory.
//!
//! The plan's types, its parsing from text, its checks and its JSON Schema are pure and live
//! in [`olmpack_model::plan`].
#![warn(missing_docs)]

use std::path::{Path, PathBuf};

use olmpack_model::plan::{LoadedPlan, PlanError, parse};

use olmpack_oci::input::{self, InputError, Policy};

/// Failure to load a release plan: its file could not be read, or its text is refused.
#[derive(Debug, thiserror::Error)]
pub enum PlanLoadError {
    /// The file could not be read (or is refused as a file: too large, not UTF-8, ...).
    #[error("failed to read release plan {path}")]
    Read {
        /// The plan file.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: InputError,
    },
    /// The file was read, and its text is not a valid plan.
    #[error(transparent)]
    Refused(#[from] PlanError),
}

impl PlanLoadError {
    /// True when the plan itself is invalid (exit 1), false when it could not be read (exit 2).
    pub fn is_invalid(&self) -> bool {
        match self {
            PlanLoadError::Read { source, .. } => source.is_refusal(),
            PlanLoadError::Refused(_) => true,
        }
    }
}

impl crate::refusal::Refusal for PlanLoadError {
    fn refuses_input(&self) -> bool {
        self.is_invalid()
    }
}

/// Reads and checks a plan file, under the reading `policy`'s limits.
pub fn load(path: &Path, policy: &Policy) -> Result<LoadedPlan, PlanLoadError> {
    let text = input::text(path, &policy.limits).map_err(|source| PlanLoadError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(parse(path, &text)?)
}

/// Where the files a plan names may be read from, under a reading [`Policy`]. These look at the file system, so they live here and not on the pure
/// [`LoadedPlan`].
pub trait PlanInputs {
    /// Resolves a path the plan reads from (manifests, samples, icon): it must stay inside the
    /// plan's directory, also through symlinks, unless the reading policy allows outside
    /// paths (see [`input::inside`]).
    fn resolve_input(&self, path: &Path, policy: &Policy) -> Result<PathBuf, InputError>;

    /// The directory trees read for the plan may reach through symlinks: the plan's
    /// directory, or anywhere (`None`) when the policy allows outside paths.
    fn input_root(&self, policy: &Policy) -> Option<&Path>;
}

impl PlanInputs for LoadedPlan {
    fn resolve_input(&self, path: &Path, policy: &Policy) -> Result<PathBuf, InputError> {
        input::inside(self.base_dir(), path, policy)
    }

    fn input_root(&self, policy: &Policy) -> Option<&Path> {
        (!policy.allow_outside_paths).then(|| self.base_dir())
    }
}
