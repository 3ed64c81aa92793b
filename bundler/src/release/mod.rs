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

pub mod install;
pub mod lock;
pub mod state;
pub mod supply;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::build;
use crate::bundle::generate::{self, GenerateError, GenerateOptions, ImageResolver};
use crate::bundle::pin::Rewrite;
use crate::catalog::declcfg::DeclarativeConfig;
use crate::catalog::model::Model;
use crate::image::build::{BuildOptions, build_bundle_image, build_catalog_image};
use crate::image::layout::{Layout, Platform};
use crate::image::operator::{OperatorBinary, OperatorOptions, build_operator_image};
use crate::image::progress::Progress;
use crate::image::registry::RegistryAccess;
use crate::image::{digest::format_digest, push::push_layout};
use crate::output::FileTree;
use crate::upgrade::check::graph::{self, EdgeResult, InstalledBundle};
use olmpack_model::plan::{LoadedPlan, image_for_release};
use olmpack_model::report::{Finding, Report, Severity};
use state::{BuiltImage, State};

/// Step names, in order; errors and the printed plan use them.
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
        /// What failed in that step.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

fn fail<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
    step: &'static str,
) -> impl FnOnce(E) -> ReleaseError {
    move |source| ReleaseError::Step {
        step,
        source: source.into(),
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
    pub signer: Option<crate::supply::cosign::Signer>,
    /// How the plan's files are read (the command line's `--max-*` and
    /// `--allow-outside-paths` flags).
    pub input: crate::input::Policy,
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

/// One line of the printed plan.
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

/// Checks every upgrade edge of the catalog with the static checks of `olmpack upgrade
/// check`; a refused edge stops the release with its findings (exit 1).
fn upgrade_check(
    catalog: &DeclarativeConfig,
    generated: &generate::Generated,
) -> Result<UpgradeCheck, ReleaseError> {
    let (model, _) = Model::from_config(catalog.clone());
    let mut releases = BTreeMap::new();
    for bundle in generated.bundles.values() {
        let release = InstalledBundle::from_bundle(bundle).map_err(fail(step::UPGRADE_CHECK))?;
        releases.insert(release.name.clone(), release);
    }
    let verdicts = graph::check_edges(&graph::merge(graph::edges(&model)), &releases);
    if let Some(refused) = refusal(&verdicts) {
        return Err(ReleaseError::Invalid(refused));
    }
    Ok(UpgradeCheck {
        status: UPGRADE_CHECK_PASSED.into(),
        verdicts,
    })
}

/// Every finding of the refused edges among `verdicts` (`None` when none is refused):
/// warnings and infos too, so the release reports what `olmpack upgrade check` reports for
/// the same plan, with the same counts.
fn refusal(verdicts: &[EdgeResult]) -> Option<Vec<Finding>> {
    let refused: Vec<&EdgeResult> = verdicts.iter().filter(|v| v.refused()).collect();
    if refused.is_empty() {
        return None;
    }
    Some(
        refused
            .iter()
            .flat_map(|v| v.findings.iter().cloned())
            .collect(),
    )
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
    supply: supply::SupplyPlan,
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

/// `reference` moved under `registry` (`host/namespace`): its last path component is kept.
pub fn retarget(reference: &str, registry: &str) -> String {
    let name = reference.rsplit('/').next().unwrap_or(reference);
    format!("{}/{name}", registry.trim_end_matches('/'))
}

/// `host/repo:tag` → `host/repo` (and the tag).
fn split_tag(reference: &str) -> (&str, Option<&str>) {
    let last_slash = reference.rfind('/').map_or(0, |i| i + 1);
    match reference[last_slash..].rfind(':') {
        Some(colon) => (
            &reference[..last_slash + colon],
            Some(&reference[last_slash + colon + 1..]),
        ),
        None => (reference, None),
    }
}

fn pinned(reference: &str, digest: &str) -> String {
    format!("{}@{digest}", split_tag(reference).0)
}

/// The image names of a plan, after the registry override.
#[derive(Clone, Debug)]
struct Names {
    operator: Option<String>,
    bundle: String,
    catalog: String,
}

fn names(plan: &LoadedPlan, registry: Option<&str>) -> Result<Names, ReleaseError> {
    let missing = |field: &str| {
        ReleaseError::Step {
        step: step::PLAN,
        source: format!(
            "{}: the plan names no {field}; `olmpack release` publishes every image under the name the plan gives it",
            plan.path.display()
        )
        .into(),
    }
    };
    let bundle = plan
        .plan
        .bundle_image
        .clone()
        .ok_or_else(|| missing("bundleImage"))?;
    let catalog = plan
        .plan
        .catalog_image
        .clone()
        .ok_or_else(|| missing("catalogImage"))?;
    let move_to = |r: String| match registry {
        Some(registry) => retarget(&r, registry),
        None => r,
    };
    Ok(Names {
        operator: plan.plan.operator_image.clone().map(move_to),
        bundle: move_to(bundle),
        catalog: move_to(catalog),
    })
}

/// `sha256:` of labelled parts, for an image's inputs.
fn inputs_digest(parts: &[(&str, &[u8])]) -> String {
    let mut hasher = Sha256::new();
    for (label, bytes) in parts {
        hasher.update((label.len() as u64).to_le_bytes());
        hasher.update(label.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    format_digest(&hasher.finalize())
}

fn tree_parts(tree: &FileTree) -> Vec<(String, Vec<u8>)> {
    tree.iter()
        .map(|(p, c)| (p.to_string_lossy().into_owned(), c.to_vec()))
        .collect()
}

/// The digest of the layout `<out>/images/<name>` if it holds `digest` under `tag`.
/// Every blob of it is verified: a layout whose blobs were deleted, changed, grown, or
/// replaced by a FIFO or a symlink is not the image recorded, so it is rebuilt.
fn layout_has(out: &Path, name: &str, tag: Option<&str>, digest: &str) -> bool {
    let Ok(layout) = Layout::open(&out.join("images").join(name)) else {
        return false;
    };
    layout
        .find(tag)
        .is_ok_and(|d| d.digest == digest && layout.verify(&d).is_ok())
}

/// Everything an image step needs to decide whether to rebuild.
struct ImageJob<'a> {
    name: String,
    reference: String,
    inputs: String,
    out: &'a Path,
    state: &'a State,
}

impl ImageJob<'_> {
    /// The digest of an earlier build with the same inputs, if its layout is intact.
    fn reusable(&self) -> Option<String> {
        let built = self.state.images.get(&self.name)?;
        let tag = split_tag(&self.reference).1;
        (built.inputs == self.inputs && layout_has(self.out, &self.name, tag, &built.digest))
            .then(|| built.digest.clone())
    }

    fn summary(self, digest: String, rebuild: bool) -> ImageSummary {
        let needs_push = self.state.pushed.get(&self.reference) != Some(&digest);
        ImageSummary {
            pinned: pinned(&self.reference, &digest),
            name: self.name,
            reference: self.reference,
            digest,
            rebuild,
            needs_push,
            republish: None,
            inputs: self.inputs,
        }
    }
}

fn build_options(options: &Options, reference: &str) -> BuildOptions {
    BuildOptions {
        source_date_epoch: options.source_date_epoch.unwrap_or(0),
        tag: split_tag(reference).1.map(str::to_owned),
        platform: Platform::linux_amd64(),
        limits: options.input.limits,
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
    let prepared = prepare_in(plan, options, progress).await;
    if prepared.is_err() && made_out {
        // Only an empty directory goes: the staging directory and the lock went with the run.
        let _ = std::fs::remove_dir(&options.out);
    }
    prepared
}

async fn prepare_in(
    plan: &LoadedPlan,
    options: &Options,
    progress: &Progress,
) -> Result<Prepared, ReleaseError> {
    let mut run = Preparing::start(plan, options, progress)?;
    let mut operator = run.operator_image().await?;
    let mut bundles = run.bundles(operator.as_ref())?;
    let mut catalog = run.catalog(&bundles).await?;
    let install = install::prepare(
        plan,
        &bundles.generated,
        &run.versions,
        &catalog.image,
        options,
    )?;
    run.steps.push(install.step.clone());
    let supply_plan = run
        .supply(operator.as_mut(), &mut bundles, &mut catalog)
        .await?;

    let summary = Summary {
        package: plan.plan.package.clone(),
        versions: run.versions,
        operator,
        bundles: bundles.images,
        catalog: catalog.image,
        findings: bundles.warnings,
        upgrade_check: catalog.upgrade_check,
        install: install.summary.clone(),
        steps: run.steps,
        dry_run: true,
        pushed: false,
        supply: supply_plan.published(),
    };
    Ok(Prepared {
        staging: run.staging,
        _lock: run.lock,
        bundles: bundles.generated.tree,
        catalog: catalog.built.files,
        bundles_stale: bundles.stale,
        catalog_stale: catalog.stale,
        install,
        state: run.state,
        supply: supply_plan,
        summary,
    })
}

/// What the steps of [`prepare`] share: the plan, the options, where images are staged, the
/// state of earlier runs, and the steps described so far.
struct Preparing<'a> {
    plan: &'a LoadedPlan,
    options: &'a Options,
    progress: &'a Progress,
    names: Names,
    lock: lock::OutLock,
    staging: tempfile::TempDir,
    state: State,
    /// The plan's release versions, oldest first.
    versions: Vec<String>,
    /// The newest release's version (empty for a plan without releases).
    newest: String,
    steps: Vec<Step>,
}

/// The bundles step's outcome.
struct Bundles {
    generated: generate::Generated,
    /// Whether `<out>/bundle/` differs from the generated tree.
    stale: bool,
    /// Warnings of the generated bundles.
    warnings: Vec<Finding>,
    /// One bundle image per release, oldest first.
    images: Vec<ImageSummary>,
}

/// The catalog step's outcome.
struct Catalog {
    built: build::BuiltCatalog,
    /// Whether `<out>/catalog/` differs from the generated tree.
    stale: bool,
    upgrade_check: UpgradeCheck,
    image: ImageSummary,
}

impl<'a> Preparing<'a> {
    /// Resolves the image names, opens the staging directory and the state of earlier runs,
    /// and describes the plan.
    fn start(
        plan: &'a LoadedPlan,
        options: &'a Options,
        progress: &'a Progress,
    ) -> Result<Self, ReleaseError> {
        let names = names(plan, options.registry.as_deref())?;
        std::fs::create_dir_all(&options.out).map_err(fail(step::PLAN))?;
        let lock = lock::OutLock::acquire(&options.out).map_err(fail(step::PLAN))?;
        let staging = tempfile::Builder::new()
            .prefix(lock::STAGING_PREFIX)
            .tempdir_in(&options.out)
            .map_err(fail(step::PLAN))?;
        let state = State::load(&options.out);
        let versions: Vec<String> = plan
            .sorted_releases()
            .into_iter()
            .map(|(_, r)| r.version.clone())
            .collect();
        let newest = versions.last().cloned().unwrap_or_default();
        let plan_step = Step {
            step: step::PLAN,
            change: Change::Unchanged,
            detail: format!(
                "{}: package {}, {} release(s), newest {newest}",
                plan.path.display(),
                plan.plan.package,
                versions.len()
            ),
        };
        Ok(Preparing {
            plan,
            options,
            progress,
            names,
            lock,
            staging,
            state,
            versions,
            newest,
            steps: vec![plan_step],
        })
    }

    /// The operator image, when there are binaries to build it from.
    async fn operator_image(&mut self) -> Result<Option<ImageSummary>, ReleaseError> {
        let operator = operator_step(
            self.plan,
            self.options,
            &self.names,
            &self.newest,
            &self.state,
            &self.staging,
            self.progress,
        )
        .await?;
        self.steps.push(match &operator {
            Some(image) => image_step(step::OPERATOR_IMAGE, image),
            None => Step {
                step: step::OPERATOR_IMAGE,
                change: Change::Skipped,
                detail: "not built: no operator binaries (give --binary or the plan's images.operatorBinaries); the CSVs keep the operator image as their manifests name it".into(),
            },
        });
        Ok(operator)
    }

    /// Every bundle, generated and validated, and its image.
    fn bundles(&mut self, operator: Option<&ImageSummary>) -> Result<Bundles, ReleaseError> {
        let (plan, options) = (self.plan, self.options);
        let generated = generate_bundles(plan, options, &self.names, operator, &self.newest)?;
        let stale = stale(
            &generated.tree,
            &options.out.join("bundle"),
            step::BUNDLES,
            &options.input.limits,
        )?;
        let warnings = warnings(&generated.reports);
        self.steps.push(tree_step(
            step::BUNDLES,
            stale,
            format!(
                "{} bundle(s) generated and validated ({} warning(s))",
                generated.bundles.len(),
                warnings.len(),
            ),
            "bundle/",
        ));
        let mut images = Vec::new();
        for version in &self.versions {
            let image = bundle_image_step(
                &generated.tree,
                version,
                options,
                &self.names,
                &self.state,
                &self.staging,
            )?;
            images.push(image);
        }
        self.steps.push(images_step(step::BUNDLE_IMAGES, &images));
        Ok(Bundles {
            generated,
            stale,
            warnings,
            images,
        })
    }

    /// The catalog naming every bundle image by digest, its upgrade check and its image.
    async fn catalog(&mut self, bundles: &Bundles) -> Result<Catalog, ReleaseError> {
        let (plan, options) = (self.plan, self.options);
        let by_version: BTreeMap<&str, &ImageSummary> = self
            .versions
            .iter()
            .zip(&bundles.images)
            .map(|(v, i)| (v.as_str(), i))
            .collect();
        let built = build::catalog(plan, &bundles.generated, &|version| {
            by_version
                .get(version)
                .map(|i| i.pinned.clone())
                .unwrap_or_default()
        })
        .map_err(fail(step::CATALOG))?;
        let stale = stale(
            &built.files,
            &options.out.join("catalog"),
            step::CATALOG,
            &options.input.limits,
        )?;
        self.steps.push(tree_step(
            step::CATALOG,
            stale,
            format!(
                "package {}: every bundle named by digest",
                plan.plan.package
            ),
            "catalog/",
        ));
        let upgrade_check = upgrade_check(&built.config, &bundles.generated)?;
        self.steps.push(upgrade_check_step(&upgrade_check));
        let image = catalog_image_step(
            plan,
            &built.files,
            options,
            &self.names,
            &self.state,
            &self.staging,
            self.progress,
        )
        .await?;
        self.steps.push(image_step(step::CATALOG_IMAGE, &image));
        Ok(Catalog {
            built,
            stale,
            upgrade_check,
            image,
        })
    }

    /// The SBOMs and signatures to publish (with push), and the push, sbom and sign steps.
    /// With push, what earlier runs published is checked against the registries first:
    /// what they no longer have is published again.
    async fn supply(
        &mut self,
        mut operator: Option<&mut ImageSummary>,
        bundles: &mut Bundles,
        catalog: &mut Catalog,
    ) -> Result<supply::SupplyPlan, ReleaseError> {
        let options = self.options;
        if options.push {
            let images = operator
                .as_deref_mut()
                .into_iter()
                .chain(&mut bundles.images)
                .chain(std::iter::once(&mut catalog.image));
            verify_pushed(images, options).await?;
        }
        let mut sbom_inputs = Vec::new();
        for (version, image) in self.versions.iter().zip(&bundles.images) {
            let files = bundle_files(&bundles.generated.tree, version)?;
            sbom_inputs.push((version.as_str(), image, files));
        }
        let mut supply_plan = supply::plan(
            &sbom_inputs,
            &catalog.image,
            &catalog.built,
            options,
            options.signer.as_ref(),
            &self.state,
        )?;
        if options.push {
            supply::verify(&mut supply_plan, options).await?;
        }
        let all_images: Vec<&ImageSummary> = operator
            .map(|o| &*o)
            .into_iter()
            .chain(&bundles.images)
            .chain(std::iter::once(&catalog.image))
            .collect();
        self.steps.push(push_step(options.push, &all_images));
        self.steps
            .push(supply::sbom_step(options.push, &supply_plan));
        self.steps
            .push(supply::sign_step(options.push, &supply_plan));
        Ok(supply_plan)
    }
}

/// Checks each image an earlier run pushed (by the state file) against its registry: an image
/// whose tag the registry no longer has at the recorded digest is pushed again.
async fn verify_pushed(
    images: impl Iterator<Item = &mut ImageSummary>,
    options: &Options,
) -> Result<(), ReleaseError> {
    use crate::supply::oci::Repo;
    for image in images.filter(|i| !i.needs_push) {
        let repo = Repo::connect(&image.reference, &options.access)
            .await
            .map_err(fail(step::PUSH))?;
        let tag = split_tag(&image.reference).1.unwrap_or("latest");
        let found = repo
            .get_manifest(&repo.at_tag(tag), crate::image::media_type::ALL_MANIFESTS)
            .await
            .map_err(fail(step::PUSH))?;
        let why = match found.map(|bytes| crate::image::digest::sha256_digest(&bytes)) {
            None => MISSING.to_owned(),
            Some(digest) if digest != image.digest => {
                format!("the registry has its tag at {digest}")
            }
            Some(_) => continue,
        };
        image.needs_push = true;
        image.republish = Some(why);
    }
    Ok(())
}

/// The upgrade-check step: every edge passed (a refused one stops the release before).
fn upgrade_check_step(check: &UpgradeCheck) -> Step {
    Step {
        step: step::UPGRADE_CHECK,
        change: Change::Unchanged,
        detail: format!(
            "{}: {} upgrade edge(s) checked (CRD schemas, stored versions, conversion), none refused",
            check.status,
            check.verdicts.len()
        ),
    }
}

fn warnings(reports: &[Report]) -> Vec<Finding> {
    reports
        .iter()
        .flat_map(|r| r.findings.iter())
        .filter(|f| f.severity == Severity::Warning)
        .cloned()
        .collect()
}

/// The step that writes a generated tree to `dir` when it is `stale`.
fn tree_step(step: &'static str, stale: bool, what: String, dir: &str) -> Step {
    let (change, action) = if stale {
        (Change::Changes, "will be written")
    } else {
        (Change::Unchanged, "is up to date")
    };
    Step {
        step,
        change,
        detail: format!("{what}; {dir} {action}"),
    }
}

fn stale(
    tree: &FileTree,
    dir: &Path,
    step: &'static str,
    limits: &crate::input::Limits,
) -> Result<bool, ReleaseError> {
    Ok(!tree
        .check_against(dir, limits)
        .map_err(fail(step))?
        .is_empty())
}

fn image_step(step: &'static str, image: &ImageSummary) -> Step {
    Step {
        step,
        change: if image.rebuild {
            Change::Changes
        } else {
            Change::Unchanged
        },
        detail: format!(
            "{} {} ({})",
            image.reference,
            image.digest,
            if image.rebuild {
                "will be built"
            } else {
                "built before, unchanged"
            }
        ),
    }
}

fn images_step(step: &'static str, images: &[ImageSummary]) -> Step {
    let rebuilt = images.iter().filter(|i| i.rebuild).count();
    let mut detail = format!(
        "{} image(s), {rebuilt} to build, {} unchanged",
        images.len(),
        images.len() - rebuilt
    );
    for image in images {
        detail.push_str(&format!("\n    {} {}", image.reference, image.digest));
    }
    Step {
        step,
        change: if rebuilt > 0 {
            Change::Changes
        } else {
            Change::Unchanged
        },
        detail,
    }
}

fn push_step(push: bool, images: &[&ImageSummary]) -> Step {
    let pending: Vec<&&ImageSummary> = images.iter().filter(|i| i.needs_push).collect();
    if !push {
        return Step {
            step: step::PUSH,
            change: Change::Skipped,
            detail: format!(
                "not asked (--push): {} image(s) stay in OCI layouts under images/",
                images.len()
            ),
        };
    }
    let mut detail = format!(
        "{} image(s) to push, {} already at their digest",
        pending.len(),
        images.len() - pending.len()
    );
    for image in &pending {
        detail.push_str(&format!("\n    {}", image.reference));
        if let Some(why) = &image.republish {
            detail.push_str(&format!(" (pushed before as {}, {why})", image.digest));
        }
    }
    Step {
        step: step::PUSH,
        change: supply::change(pending.iter().map(|i| i.republish.is_some())),
        detail,
    }
}

/// The operator binaries: from the options, else the plan's (paths relative to the plan).
fn binaries(plan: &LoadedPlan, options: &Options) -> Result<Vec<OperatorBinary>, ReleaseError> {
    if !options.binaries.is_empty() {
        return Ok(options.binaries.clone());
    }
    plan.plan
        .images
        .operator_binaries
        .iter()
        .map(|(platform, path)| {
            let parts: Vec<&str> = platform.split('/').collect();
            match parts.as_slice() {
                [os, arch] | [os, arch, _] if !os.is_empty() && !arch.is_empty() => {
                    Ok(OperatorBinary {
                        platform: Platform {
                            os: (*os).to_owned(),
                            architecture: (*arch).to_owned(),
                            variant: parts.get(2).map(|v| (*v).to_owned()),
                            os_version: None,
                            os_features: None,
                        },
                        path: plan.resolve(path),
                    })
                }
                _ => Err(ReleaseError::Step {
                    step: step::PLAN,
                    source: format!(
                        "{}: images.operatorBinaries: {platform:?} is not OS/ARCH[/VARIANT]",
                        plan.path.display()
                    )
                    .into(),
                }),
            }
        })
        .collect()
}

async fn operator_step(
    plan: &LoadedPlan,
    options: &Options,
    names: &Names,
    newest: &str,
    state: &State,
    staging: &tempfile::TempDir,
    progress: &Progress,
) -> Result<Option<ImageSummary>, ReleaseError> {
    let binaries = binaries(plan, options)?;
    if binaries.is_empty() {
        return Ok(None);
    }
    let Some(template) = &names.operator else {
        return Err(ReleaseError::Step {
            step: step::OPERATOR_IMAGE,
            source: format!(
                "{}: operator binaries are given but the plan names no operatorImage to publish them as",
                plan.path.display()
            )
            .into(),
        });
    };
    let reference = image_for_release(template, newest);
    let base = plan.plan.images.operator_base.clone();
    let mut parts: Vec<(String, Vec<u8>)> = vec![
        ("base".into(), base.clone().unwrap_or_default().into_bytes()),
        (
            "epoch".into(),
            options
                .source_date_epoch
                .unwrap_or(0)
                .to_string()
                .into_bytes(),
        ),
        ("tag".into(), reference.clone().into_bytes()),
    ];
    for binary in &binaries {
        let bytes = std::fs::read(&binary.path).map_err(|source| ReleaseError::Step {
            step: step::OPERATOR_IMAGE,
            source: format!(
                "failed to read the operator binary {}: {source}",
                binary.path.display()
            )
            .into(),
        })?;
        parts.push((
            crate::image::operator::platform_name(&binary.platform),
            bytes,
        ));
    }
    let job = ImageJob {
        name: "operator".into(),
        inputs: inputs_digest(&borrow(&parts)),
        reference,
        out: &options.out,
        state,
    };
    if let Some(digest) = job.reusable() {
        return Ok(Some(job.summary(digest, false)));
    }
    let operator_options = OperatorOptions {
        build: build_options(options, &job.reference),
        ..Default::default()
    };
    let root = build_operator_image(
        &binaries,
        &staging.path().join("images/operator"),
        &operator_options,
        base.as_deref().map(|b| (b, &options.access)),
        progress,
    )
    .await
    .map_err(fail(step::OPERATOR_IMAGE))?;
    Ok(Some(job.summary(root.digest, true)))
}

fn borrow(parts: &[(String, Vec<u8>)]) -> Vec<(&str, &[u8])> {
    parts
        .iter()
        .map(|(l, b)| (l.as_str(), b.as_slice()))
        .collect()
}

/// Generates every bundle with the operator image of the newest release pinned to the built
/// digest (and every release's operator image moved to the target registry).
fn generate_bundles(
    plan: &LoadedPlan,
    options: &Options,
    names: &Names,
    operator: Option<&ImageSummary>,
    newest: &str,
) -> Result<generate::Generated, ReleaseError> {
    let mut replacements = BTreeMap::new();
    if let (Some(original), Some(target)) = (&plan.plan.operator_image, &names.operator) {
        for release in &plan.plan.releases {
            let from = image_for_release(original, &release.version);
            let to = image_for_release(target, &release.version);
            let to = match operator {
                Some(image) if release.version == newest => image.pinned.clone(),
                _ => to,
            };
            if from != to {
                replacements.insert(from, to);
            }
        }
    }
    let generate_options = GenerateOptions {
        source_date_epoch: options
            .source_date_epoch
            .and_then(|e| i64::try_from(e).ok()),
        only_version: None,
        input: options.input,
        resolver: (!replacements.is_empty()).then(|| {
            ImageResolver(std::sync::Arc::new(move |reference: &str| {
                Ok(replacements.get(reference).cloned().map(Rewrite::Image))
            }))
        }),
    };
    match generate::generate(plan, &generate_options) {
        Ok(generated) => Ok(generated),
        Err(GenerateError::Invalid(findings)) => Err(ReleaseError::Invalid(findings)),
        Err(other) => Err(fail(step::BUNDLES)(other)),
    }
}

/// The files of one version's bundle, relative to the bundle directory.
fn bundle_files(tree: &FileTree, version: &str) -> Result<FileTree, ReleaseError> {
    let mut files = FileTree::new();
    for (path, contents) in tree.iter() {
        if let Ok(rel) = path.strip_prefix(version) {
            files
                .insert(rel, contents.to_vec())
                .map_err(fail(step::BUNDLE_IMAGES))?;
        }
    }
    Ok(files)
}

fn bundle_image_step(
    tree: &FileTree,
    version: &str,
    options: &Options,
    names: &Names,
    state: &State,
    staging: &tempfile::TempDir,
) -> Result<ImageSummary, ReleaseError> {
    let files = bundle_files(tree, version)?;
    let reference = image_for_release(&names.bundle, version);
    let mut parts = tree_parts(&files);
    parts.push((
        "epoch".into(),
        options
            .source_date_epoch
            .unwrap_or(0)
            .to_string()
            .into_bytes(),
    ));
    parts.push(("tag".into(), reference.clone().into_bytes()));
    let job = ImageJob {
        name: format!("bundle-{version}"),
        inputs: inputs_digest(&borrow(&parts)),
        reference,
        out: &options.out,
        state,
    };
    if let Some(digest) = job.reusable() {
        return Ok(job.summary(digest, false));
    }
    let source = staging.path().join("src").join(&job.name);
    files.write_to(&source).map_err(fail(step::BUNDLE_IMAGES))?;
    let root = build_bundle_image(
        &source,
        &staging.path().join("images").join(&job.name),
        &build_options(options, &job.reference),
    )
    .map_err(fail(step::BUNDLE_IMAGES))?;
    Ok(job.summary(root.digest, true))
}

async fn catalog_image_step(
    plan: &LoadedPlan,
    catalog: &FileTree,
    options: &Options,
    names: &Names,
    state: &State,
    staging: &tempfile::TempDir,
    progress: &Progress,
) -> Result<ImageSummary, ReleaseError> {
    let base = plan.plan.images.catalog_base.clone();
    let mut parts = tree_parts(catalog);
    parts.push(("base".into(), base.clone().unwrap_or_default().into_bytes()));
    parts.push((
        "epoch".into(),
        options
            .source_date_epoch
            .unwrap_or(0)
            .to_string()
            .into_bytes(),
    ));
    parts.push(("tag".into(), names.catalog.clone().into_bytes()));
    let job = ImageJob {
        name: "catalog".into(),
        inputs: inputs_digest(&borrow(&parts)),
        reference: names.catalog.clone(),
        out: &options.out,
        state,
    };
    if let Some(digest) = job.reusable() {
        return Ok(job.summary(digest, false));
    }
    let source = staging.path().join("src/catalog");
    catalog
        .write_to(&source)
        .map_err(fail(step::CATALOG_IMAGE))?;
    let root = build_catalog_image(
        &source,
        &staging.path().join("images/catalog"),
        &build_options(options, &job.reference),
        base.as_deref().map(|b| (b, &options.access)),
        progress,
    )
    .await
    .map_err(fail(step::CATALOG_IMAGE))?;
    Ok(job.summary(root.digest, true))
}

/// Writes what changed, moves rebuilt layouts into place, and (with push) publishes: every
/// image by digest first, then the tags, the catalog's last. Saves the state after each step.
pub async fn apply(
    mut prepared: Prepared,
    options: &Options,
    progress: &Progress,
) -> Result<Summary, ReleaseError> {
    let out = &options.out;
    prepared.remove_leftovers(out)?;
    if prepared.bundles_stale {
        prepared
            .bundles
            .write_to(&out.join("bundle"))
            .map_err(fail(step::WRITE))?;
    }
    if prepared.catalog_stale {
        prepared
            .catalog
            .write_to(&out.join("catalog"))
            .map_err(fail(step::WRITE))?;
    }
    if let (true, Some(files)) = (prepared.install.stale, &prepared.install.files) {
        files
            .write_to(&out.join(install::INSTALL_DIR))
            .map_err(fail(step::WRITE))?;
    }
    let images: Vec<ImageSummary> = prepared
        .summary
        .operator
        .iter()
        .chain(&prepared.summary.bundles)
        .chain(std::iter::once(&prepared.summary.catalog))
        .cloned()
        .collect();
    for image in images.iter().filter(|i| i.rebuild) {
        let recorded = prepared.state.images.contains_key(&image.name);
        place_layout(prepared.staging.path(), out, &image.name, recorded)?;
        prepared.state.images.insert(
            image.name.clone(),
            BuiltImage {
                inputs: image.inputs.clone(),
                digest: image.digest.clone(),
            },
        );
        prepared.state.save(out).map_err(fail(step::WRITE))?;
    }
    // Layouts no longer part of the release (a release removed from the plan) are forgotten.
    prepared
        .state
        .images
        .retain(|name, _| images.iter().any(|i| &i.name == name));
    prepared.state.save(out).map_err(fail(step::WRITE))?;
    if options.push {
        prepared.summary.supply = push_all(
            &images,
            &prepared.supply,
            &mut prepared.state,
            options,
            progress,
        )
        .await?;
        prepared.summary.pushed = true;
    }
    prepared.summary.dry_run = false;
    Ok(prepared.summary)
}

/// Moves `<staging>/images/<name>` to `<out>/images/<name>`, replacing an older layout: one
/// olmpack wrote (stamped, or `recorded` in the state file by an earlier run), never a
/// directory someone else put there.
fn place_layout(
    staging: &Path,
    out: &Path,
    name: &str,
    recorded: bool,
) -> Result<(), ReleaseError> {
    let from = staging.join("images").join(name);
    let to = out.join("images").join(name);
    let io = |source: std::io::Error| ReleaseError::Step {
        step: step::WRITE,
        source: format!(
            "failed to move the image layout into {}: {source}",
            to.display()
        )
        .into(),
    };
    std::fs::create_dir_all(out.join("images")).map_err(io)?;
    if !recorded {
        crate::image::layout::check_replaceable(&to).map_err(fail(step::WRITE))?;
    }
    if to.exists() {
        let old = staging.join("replaced").join(name);
        std::fs::create_dir_all(old.parent().unwrap_or(staging)).map_err(io)?;
        std::fs::rename(&to, &old).map_err(io)?;
    }
    std::fs::rename(&from, &to).map_err(io)
}

async fn push_all(
    images: &[ImageSummary],
    supply_plan: &supply::SupplyPlan,
    state: &mut State,
    options: &Options,
    progress: &Progress,
) -> Result<Vec<state::Attachment>, ReleaseError> {
    let out = &options.out;
    let layout = |image: &ImageSummary| {
        out.join("images")
            .join(&image.name)
            .to_string_lossy()
            .into_owned()
    };
    let pending: Vec<&ImageSummary> = images.iter().filter(|i| i.needs_push).collect();
    // 1. Content by digest: nothing is reachable by a tag yet.
    for image in &pending {
        push_layout(&layout(image), &image.pinned, &options.access, progress)
            .await
            .map_err(fail(step::PUSH))?;
    }
    // 2. SBOMs (and signatures) of the images, before any tag makes an image reachable.
    let attachments = supply::publish(supply_plan, state, options).await?;
    // 3. Tags, the catalog last: it names everything else.
    for image in &pending {
        let tagged = format!(
            "{}:{}",
            layout(image),
            split_tag(&image.reference).1.unwrap_or("latest")
        );
        let report = push_layout(&tagged, &image.reference, &options.access, progress)
            .await
            .map_err(fail(step::PUSH))?;
        state.pushed.insert(image.reference.clone(), report.digest);
        state.save(out).map_err(fail(step::PUSH))?;
    }
    Ok(attachments)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_refused_edge_reports_its_warnings_too() {
        use crate::upgrade::check::graph::Edge;
        let edge = |findings: Vec<Finding>| EdgeResult {
            edge: Edge {
                package: "p".into(),
                from: "p.v1".into(),
                to: "p.v2".into(),
                channels: Default::default(),
                via: Default::default(),
            },
            crds: Vec::new(),
            findings,
            refused_by: Default::default(),
        };
        let warned = edge(vec![Finding::warning(
            "crd-upgrade/existing-object-invalid",
            "w",
        )]);
        assert_eq!(refusal(std::slice::from_ref(&warned)), None);
        let refused = edge(vec![
            Finding::error("crd-upgrade/required", "e"),
            Finding::warning("crd-upgrade/existing-object-invalid", "w"),
        ]);
        let found = refusal(&[warned, refused]).expect("an error refuses the edge");
        let severities: Vec<Severity> = found.iter().map(|f| f.severity).collect();
        assert_eq!(severities, [Severity::Error, Severity::Warning]);
    }

    use super::*;

    #[test]
    fn references_move_to_the_target_registry_keeping_name_and_tag() {
        let cases = [
            (
                "quay.io/acme/op-bundle:v{version}",
                "ghcr.io/me",
                "ghcr.io/me/op-bundle:v{version}",
            ),
            (
                "quay.io/acme/op:v1",
                "127.0.0.1:5000/x/",
                "127.0.0.1:5000/x/op:v1",
            ),
            ("op:latest", "localhost:5000", "localhost:5000/op:latest"),
        ];
        for (reference, registry, expected) in cases {
            assert_eq!(retarget(reference, registry), expected);
        }
        assert_eq!(
            split_tag("127.0.0.1:5000/a/b:v1"),
            ("127.0.0.1:5000/a/b", Some("v1"))
        );
        assert_eq!(
            split_tag("127.0.0.1:5000/a/b"),
            ("127.0.0.1:5000/a/b", None)
        );
        assert_eq!(pinned("r.io/a:v1", "sha256:1"), "r.io/a@sha256:1");
    }

    #[test]
    fn inputs_digest_separates_its_parts() {
        let a = inputs_digest(&[("a", b"bc")]);
        let b = inputs_digest(&[("ab", b"c")]);
        assert_ne!(a, b);
        assert_eq!(a, inputs_digest(&[("a", b"bc")]));
    }
}
