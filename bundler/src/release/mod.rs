//! `olmpack release`: the whole pipeline in one run — plan → operator image → bundles pinned
//! to it → validation → catalog naming the bundle images by digest → upgrade check → bundle
//! and catalog images as OCI layouts → (with push) the registries the plan names.
//!
//! Contract:
//! - **Upgrades checked.** Every upgrade edge of the catalog goes through the static checks of
//!   `olmpack upgrade check` ([`crate::upgrade::check`]); a refused edge stops the release (exit 1)
//!   before anything is written.
//! - **Plan first.** [`prepare`] computes everything (into a staging directory under `--out`)
//!   and describes every step — what exists, what would change — without touching anything
//!   else; [`apply`] then writes and pushes. A dry run stops after [`prepare`] and leaves
//!   `--out` as it was.
//! - **One name per image.** The plan's `operatorImage`, `bundleImage` and `catalogImage`
//!   (optionally moved to another registry with [`Options::registry`]) are the only names: the
//!   CSVs run the operator image by digest, the catalog names each bundle image by digest, and
//!   those are exactly the images pushed.
//! - **Re-runnable.** Image layouts live under `<out>/images/`, and the state file
//!   ([`state`]) records what they were built from and which tags were pushed. An image whose
//!   inputs did not change is not rebuilt — and "unchanged" is said only after its layout was
//!   verified blob by blob ([`Layout::verify`]: present, regular files, sizes and digests as
//!   named); a tag already at its digest is not pushed again. The state is saved after every
//!   step, so an interrupted run finishes when re-run, and the staging directories it left
//!   are removed by the next run ([`lock::remove_leftovers`]).
//! - **One run per `--out`.** A run locks `--out` ([`lock::OutLock`]) before it reads it; a
//!   second run into the same directory fails at once instead of mixing its files in.
//! - **Nothing half-published.** Every image is pushed by digest first; tags move only after
//!   every image is in its registry, the catalog's tag last.
//! - **Errors name the step** ([`ReleaseError::Step`]); credentials are never printed.
#![warn(missing_docs)]

mod apply;
mod images;
pub mod install;
pub mod lock;
mod names;
mod prepare;
pub mod state;
pub mod supply;

pub use apply::apply;
pub use names::retarget;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::refusal::Refusal;
use crate::upgrade::check::graph::EdgeResult;
use olmpack_model::plan::LoadedPlan;
use olmpack_model::report::Finding;
use olmpack_oci::image::operator::OperatorBinary;
use olmpack_oci::image::progress::Progress;
use olmpack_oci::image::registry::RegistryAccess;
use olmpack_oci::output::FileTree;
use state::State;

/// Step names, in order; errors and the printed steps use them.
pub mod step {
    /// Reading the plan, resolving the image names and opening `--out` and its state file.
    pub const PLAN: &str = "plan";
    /// Building the operator image from the operator binaries.
    pub const OPERATOR_IMAGE: &str = "operator image";
    /// Generating and validating the bundles, pinned to the operator image.
    pub const BUNDLES: &str = "bundles";
    /// Building one bundle image per release.
    pub const BUNDLE_IMAGES: &str = "bundle images";
    /// Generating the File-Based Catalog that names the bundle images by digest.
    pub const CATALOG: &str = "catalog";
    /// The static checks of `olmpack upgrade check` on every upgrade edge.
    pub const UPGRADE_CHECK: &str = "upgrade check";
    /// Building the catalog image.
    pub const CATALOG_IMAGE: &str = "catalog image";
    /// Building the OLM v0 and OLM v1 install manifests under `install/`.
    pub const INSTALL: &str = "install manifests";
    /// Writing `bundle/`, `catalog/`, `install/`, the image layouts and the state file to
    /// `--out`.
    pub const WRITE: &str = "write";
    /// Pushing the images to their registries and moving their tags.
    pub const PUSH: &str = "push";
    /// Attaching an SPDX SBOM to every bundle and catalog image.
    pub const SBOM: &str = "sbom";
    /// Signing every bundle and catalog image.
    pub const SIGN: &str = "sign";
}

/// What the upgrade-check step reports when every edge passes.
pub const UPGRADE_CHECK_PASSED: &str = "passed";

/// Failure of the release pipeline.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    /// The plan or its manifests are invalid; every finding is listed.
    #[error("the release plan or its manifests are invalid")]
    Invalid(Vec<Finding>),
    /// A step could not do its job (I/O, registry, signing key, …); the source says why.
    #[error("release step \"{step}\" failed")]
    Step {
        /// The step's name, one of [`step`].
        step: &'static str,
        /// Whether what failed is an input olmpack refuses (its [`Refusal`]), not a failure
        /// to do the job.
        refused: bool,
        /// What failed in that step.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// The plan is invalid (exit 1), or a step says whether what failed is an input olmpack
/// refuses.
impl Refusal for ReleaseError {
    fn refuses_input(&self) -> bool {
        match self {
            ReleaseError::Invalid(_) => true,
            ReleaseError::Step { refused, .. } => *refused,
        }
    }
}

fn fail<E: Refusal + std::error::Error + Send + Sync + 'static>(
    step: &'static str,
) -> impl FnOnce(E) -> ReleaseError {
    move |source| ReleaseError::Step {
        step,
        refused: source.refuses_input(),
        source: Box::new(source),
    }
}

/// How to run the pipeline.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where bundle/, catalog/, images/ and the state file go.
    pub out: PathBuf,
    /// `SOURCE_DATE_EPOCH` (seconds): the CSVs' `createdAt` fallback, and file times and image
    /// `created` (0 when unset).
    pub source_date_epoch: Option<u64>,
    /// Operator binaries; empty: the plan's `images.operatorBinaries`.
    pub binaries: Vec<OperatorBinary>,
    /// Publish every image under this `host/namespace` instead of the plan's (the last path
    /// component of each name is kept), e.g. `ghcr.io/acme`.
    pub registry: Option<String>,
    /// Credentials, retries and timeouts for pulls and pushes.
    pub access: RegistryAccess,
    /// Push to the registries (otherwise only files and layouts).
    pub push: bool,
    /// With push, sign every bundle and catalog image with this key (cosign's format).
    pub signer: Option<olmpack_oci::supply::cosign::Signer>,
    /// How the plan's files are read (the command line's `--max-*` and
    /// `--allow-outside-paths` flags).
    pub input: olmpack_oci::input::Policy,
}

/// Whether a step changes something.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// Already done by an earlier run.
    Unchanged,
    /// Will be done (or was done, after apply).
    Changes,
    /// Not done, and not needed (e.g. push without `--push`).
    Skipped,
    /// Done by an earlier run, but the registry no longer has it: done again.
    Republish,
}

/// Why something the state file says was published is published again.
pub const MISSING: &str = "missing from the registry";

/// One line of the printed steps.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    /// The step's name, one of [`step`].
    pub step: &'static str,
    /// Whether it changes something.
    pub change: Change,
    /// What it does or found, for people (e.g. which images, which directory, why skipped).
    pub detail: String,
}

/// One image of the release.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageSummary {
    /// The layout's name under `<out>/images/`.
    pub name: String,
    /// The tagged reference the image is published as.
    pub reference: String,
    /// `repository@sha256:…`: what the CSVs and the catalog name.
    pub pinned: String,
    /// The digest (`sha256:…`) of its manifest or index.
    pub digest: String,
    /// True when it must be (re)built into its layout.
    #[serde(skip)]
    pub rebuild: bool,
    /// True when its tag must be pushed (with push) — not yet at this digest, or no longer
    /// in the registry.
    pub needs_push: bool,
    /// Why it is pushed again when an earlier run pushed it: the registry no longer has it
    /// at its tag ([`MISSING`]), or has the tag at another digest.
    #[serde(skip)]
    pub republish: Option<String>,
    #[serde(skip)]
    inputs: String,
}

/// The run's result, for `--output json` and release notes.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// The plan's package name.
    pub package: String,
    /// The released versions, oldest first.
    pub versions: Vec<String>,
    /// The operator image, when the release builds one (it has operator binaries).
    pub operator: Option<ImageSummary>,
    /// One bundle image per release, oldest first.
    pub bundles: Vec<ImageSummary>,
    /// The catalog image.
    pub catalog: ImageSummary,
    /// Warnings of the generated bundles (errors stop the release).
    pub findings: Vec<Finding>,
    /// The verdicts of the upgrade check.
    pub upgrade_check: UpgradeCheck,
    /// The install manifests under `install/` (none when the CSV's install modes leave the
    /// target namespaces to the administrator).
    pub install: Option<install::InstallSummary>,
    /// Every step, in order, with what it changes.
    pub steps: Vec<Step>,
    /// True when nothing was written or pushed (only [`prepare`] ran).
    pub dry_run: bool,
    /// True when the images were pushed (after [`apply`] with push).
    pub pushed: bool,
    /// SBOMs and signatures published for the release's images (with push).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub supply: Vec<state::Attachment>,
}

/// The upgrade check's outcome (the static checks of `olmpack upgrade check` on the plan's graph).
#[derive(Clone, Debug, Serialize)]
pub struct UpgradeCheck {
    /// `passed` (a refused edge stops the release).
    pub status: String,
    /// One verdict per upgrade edge.
    pub verdicts: Vec<EdgeResult>,
}

/// Everything computed before anything is written or pushed.
#[derive(Debug)]
pub struct Prepared {
    /// Held until the run ends (dropped after `staging`, which is removed first).
    staging: tempfile::TempDir,
    _lock: lock::OutLock,
    bundles: FileTree,
    catalog: FileTree,
    bundles_stale: bool,
    catalog_stale: bool,
    install: install::InstallOutcome,
    state: State,
    supply: supply::SupplyJobs,
    /// What the run would do; [`apply`] completes and returns it.
    pub summary: Summary,
}

impl Prepared {
    /// Removes the staging directories interrupted runs left in `out` ([`lock::remove_leftovers`];
    /// this run holds the lock); [`apply`] does it first, a run with nothing to apply calls it.
    pub fn remove_leftovers(&self, out: &Path) -> Result<Vec<String>, ReleaseError> {
        lock::remove_leftovers(out, self.staging.path()).map_err(fail(step::WRITE))
    }

    /// True when applying would change nothing on disk and push nothing.
    pub fn is_noop(&self) -> bool {
        self.summary
            .steps
            .iter()
            .all(|s| matches!(s.change, Change::Unchanged | Change::Skipped))
    }
}

/// Computes the whole release into a staging directory and describes every step. When the
/// release stops before anything is written, an output directory this run made is removed
/// again (it holds nothing by then): a refused plan leaves no empty `release/` behind.
pub async fn prepare(
    plan: &LoadedPlan,
    options: &Options,
    progress: &Progress,
) -> Result<Prepared, ReleaseError> {
    let made_out = !options.out.exists();
    let prepared = prepare::prepare_in(plan, options, progress).await;
    if prepared.is_err() && made_out {
        // Only an empty directory goes: the staging directory and the lock went with the run.
        let _ = std::fs::remove_dir(&options.out);
    }
    prepared
}

/// Whether the files of `tree` differ from what `dir` holds (the step named `step` reads it).
fn stale(
    tree: &FileTree,
    dir: &Path,
    step: &'static str,
    limits: &olmpack_oci::input::Limits,
) -> Result<bool, ReleaseError> {
    Ok(!tree
        .check_against(dir, limits)
        .map_err(fail(step))?
        .is_empty())
}
