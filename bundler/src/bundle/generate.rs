//! Generating every bundle of a release plan, in passes: read everything the plan names
//! ([`super::read`], the only I/O), build every bundle (pure), pin their images (when asked),
//! then lay out and validate each as built. A pass that finds problems reports all of them and
//! the passes after it do not run. The result is a [`FileTree`] of `<version>/…` that
//! the caller writes to `bundle/` or checks against it — nothing is written here, so a failure
//! leaves no partial output.
//!
//! `createdAt` comes from the release, else the plan, else `SOURCE_DATE_EPOCH`; with none of
//! them the CSV has no `createdAt`. The wall clock is never read.
#![warn(missing_docs)]

use crate::refusal::Refusal;
use std::collections::BTreeMap;
use std::path::Path;

use super::csv::{self, BuiltBundle, ReleaseSpec};
use super::files::{self, BundleMetadata};
use super::load::LoadedBundle;
use super::pin;
use super::read::{self, ReadPlan, ReadRelease};
use super::validate;
use olmpack_model::plan::{LoadedPlan, Release};
use olmpack_model::report::{Finding, Report, Severity};
use olmpack_model::upgrade_graph::UpgradeGraph;
use olmpack_oci::input::Policy;
use olmpack_oci::output::FileTree;

/// Failure to generate bundles.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// Problems in the plan or the manifests; every one is listed.
    #[error("{} problem(s) in the release plan or its manifests", .0.iter().filter(|f| f.severity == Severity::Error).count())]
    Invalid(Vec<Finding>),
    /// `--pin-digests` could not ask a registry (unreachable, failing, too slow): olmpack
    /// could not do its job, which says nothing about the plan.
    #[error("cannot pin {reference} to a digest")]
    Unpinned {
        /// The image reference.
        reference: String,
        /// Why, in our words, naming the registry.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A valid release's bundle could not be turned into files: a manifest could not be
    /// printed as YAML, or a file path would leave the bundle directory.
    #[error("failed to lay out the bundle of release {version}")]
    LayOut {
        /// The release's version.
        version: String,
        /// Why laying it out failed.
        #[source]
        source: files::BundleFilesError,
    },
}

/// An invalid plan is refused (exit 1); an image that cannot be pinned, or a bundle that
/// cannot be laid out, is a failure to do the job (exit 2).
impl Refusal for GenerateError {
    fn refuses_input(&self) -> bool {
        match self {
            GenerateError::Invalid(_) => true,
            GenerateError::Unpinned { .. } | GenerateError::LayOut { .. } => false,
        }
    }
}

/// Settings from the environment, passed in so generation stays pure of it.
#[derive(Clone, Debug, Default)]
pub struct GenerateOptions {
    /// `SOURCE_DATE_EPOCH`, seconds since 1970.
    pub source_date_epoch: Option<i64>,
    /// Only this release (by version); all releases when `None`.
    pub only_version: Option<String>,
    /// When set, every image reference is pinned to the digest this resolves it to.
    pub resolver: Option<ImageResolver>,
    /// How the plan's files are read: limits, and whether they may lie outside its directory.
    pub input: Policy,
}

/// Says what an image reference becomes (pinned to a digest, or replaced by the image as
/// published elsewhere), leaves it as written (`None`), or says why it cannot.
#[derive(Clone)]
pub struct ImageResolver(pub std::sync::Arc<ResolveFn>);

/// `reference → Ok(Some(rewrite)) | Ok(None) (leave it) | Err(why not)`.
pub type ResolveFn = dyn Fn(&str) -> Result<Option<pin::Rewrite>, Unresolved> + Send + Sync;

/// Why a reference was not resolved.
#[derive(Clone, Debug)]
pub enum Unresolved {
    /// The reference names nothing (no such image, not a reference): a problem of the plan.
    Refused(String),
    /// The registry could not be asked (unreachable, failing, too slow): not the plan's fault.
    Unreachable(std::sync::Arc<dyn std::error::Error + Send + Sync>),
}

impl std::fmt::Debug for ImageResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ImageResolver")
    }
}

/// The generated bundles and what olmpack noticed on the way.
#[derive(Clone, Debug)]
pub struct Generated {
    /// `<version>/manifests/…`, `<version>/metadata/…`, `<version>/bundle.Dockerfile`.
    pub tree: FileTree,
    /// Warnings from generation and the validation of each generated bundle.
    pub reports: Vec<Report>,
    /// Each generated bundle as validation reads it (built, never parsed back from its files),
    /// keyed by release version, so later steps, like building the catalog, read no files.
    pub bundles: BTreeMap<String, LoadedBundle>,
    /// The plan's upgrade graph the CSVs' edges were read from (the catalog reads the same).
    pub graph: UpgradeGraph,
}

/// Generates the bundle of every release (or one, see [`GenerateOptions::only_version`]):
/// reads everything, builds every bundle, pins their images, then lays out and validates each.
/// A pass that finds problems stops the run with every problem it found.
pub fn generate(plan: &LoadedPlan, options: &GenerateOptions) -> Result<Generated, GenerateError> {
    let refused = |found| GenerateError::Invalid(about_plan(plan, found));
    let read = read::read_inputs(plan, options.only_version.as_deref(), &options.input)
        .map_err(refused)?;
    let epoch_created = options.source_date_epoch.and_then(format_epoch);
    let mut built = build_all(&read, epoch_created).map_err(refused)?;
    if let Some(resolver) = &options.resolver {
        pin_all(&mut built, resolver).map_err(|failed| match failed {
            PinFailed::Findings(found) => refused(found),
            PinFailed::Unreachable { reference, source } => GenerateError::Unpinned {
                reference,
                source: Box::new(Shared(source)),
            },
        })?;
    }
    write_all(&read, built)
}

/// A release's bundle, built, with what its files carry beside it.
struct Built<'r> {
    release: &'r ReadRelease<'r>,
    bundle: BuiltBundle,
}

/// Builds every release's bundle from what was read (pure); `Err` holds every problem.
fn build_all<'r>(
    read: &'r ReadPlan<'r>,
    epoch_created: Option<String>,
) -> Result<Vec<Built<'r>>, Vec<Finding>> {
    let mut built = Vec::new();
    let mut problems = Vec::new();
    for release in &read.releases {
        let plan = &read.plan.plan;
        let spec = ReleaseSpec {
            package: &plan.package,
            version: &release.version,
            csv: &release.csv,
            icon: read.icon.clone().or_else(|| release.imported_icon.clone()),
            edges: (read.graph.csv_edges(&release.release.version).cloned()).unwrap_or_default(),
            created_at: (release.release.created_at.clone())
                .or_else(|| plan.created_at.clone())
                .or_else(|| epoch_created.clone()),
            samples: &read.samples,
            release_samples: &release.samples,
        };
        match csv::build(&spec, &release.inputs) {
            Ok(bundle) => built.push(Built { release, bundle }),
            Err(found) => problems.extend(found),
        }
    }
    all_or_problems(built, problems)
}

/// `value` when no problem was found, else every problem.
fn all_or_problems<T>(value: T, problems: Vec<Finding>) -> Result<T, Vec<Finding>> {
    match problems.is_empty() {
        true => Ok(value),
        false => Err(problems),
    }
}

/// Why pinning failed: problems of the plan, or a registry that could not be asked.
enum PinFailed {
    Findings(Vec<Finding>),
    Unreachable {
        reference: String,
        source: std::sync::Arc<dyn std::error::Error + Send + Sync>,
    },
}

/// An error shared with the resolver's cache, shown as itself.
#[derive(Debug)]
struct Shared(std::sync::Arc<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Shared {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Rewrites every image reference of every CSV as the resolver says, asking it once for each
/// reference; a reference it refuses is a problem of each release that names it, a registry
/// that cannot be asked stops the run.
fn pin_all(built: &mut [Built<'_>], resolver: &ImageResolver) -> Result<(), PinFailed> {
    let mut resolved: BTreeMap<String, Result<Option<pin::Rewrite>, Unresolved>> = BTreeMap::new();
    let mut problems = Vec::new();
    for bundle in built.iter_mut() {
        let mut refused = BTreeMap::new();
        let mut unreachable = None;
        pin::rewrite(&mut bundle.bundle.csv, &mut |reference| {
            let outcome =
                (resolved.entry(reference.to_owned())).or_insert_with(|| (resolver.0)(reference));
            match outcome {
                Ok(rewrite) => rewrite.clone(),
                Err(Unresolved::Refused(message)) => {
                    refused.insert(reference.to_owned(), message.clone());
                    None
                }
                Err(Unresolved::Unreachable(source)) => {
                    unreachable.get_or_insert_with(|| (reference.to_owned(), source.clone()));
                    None
                }
            }
        });
        if let Some((reference, source)) = unreachable {
            return Err(PinFailed::Unreachable { reference, source });
        }
        let field = format!("releases[{}].manifests", bundle.release.index);
        problems.extend(refused.into_iter().map(|(reference, message)| {
            let message = format!("cannot pin {reference} to a digest: {message}");
            Finding::error("image/unresolved", message).field(field.clone())
        }));
    }
    all_or_problems((), problems).map_err(PinFailed::Findings)
}

/// Lays out every built bundle as files under `<version>/` and validates it as built; any
/// error a validator finds refuses the run.
fn write_all(read: &ReadPlan<'_>, built: Vec<Built<'_>>) -> Result<Generated, GenerateError> {
    let plan = read.plan;
    let (mut tree, mut reports, mut bundles) = (FileTree::new(), Vec::new(), BTreeMap::new());
    let mut problems = Vec::new();
    for bundle in built {
        let version = bundle.release.release.version.clone();
        let dir = Path::new(&version);
        let (report, loaded, files) = lay_out_one(plan, &read.graph, bundle)?;
        let errors = report
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error);
        problems.extend(errors.cloned().map(|f| locate_in(f, dir)));
        reports.push(report);
        (tree.merge_under(dir, files)).map_err(|e| GenerateError::LayOut {
            version: version.clone(),
            source: e.into(),
        })?;
        bundles.insert(version, loaded);
    }
    // A validator's finding is about the bundle: it names a bundle file or none.
    let relative = |f: Finding| relative_to(f, plan.base_dir());
    if !problems.is_empty() {
        return Err(GenerateError::Invalid(
            problems.into_iter().map(relative).collect(),
        ));
    }
    for report in &mut reports {
        let findings = std::mem::take(&mut report.findings).into_iter();
        report.findings = findings.map(relative).collect();
    }
    let graph = read.graph.clone();
    Ok(Generated {
        tree,
        reports,
        bundles,
        graph,
    })
}

/// One release's bundle as files, as validation reads it, and its report (its notes and
/// the upgrade graph's findings for it included).
fn lay_out_one(
    plan: &LoadedPlan,
    graph: &UpgradeGraph,
    built: Built<'_>,
) -> Result<(Report, LoadedBundle, FileTree), GenerateError> {
    let release = built.release.release;
    let scorecard = built.release.inputs.scorecard.as_ref();
    let labels = super::scorecard::labels(&plan.plan.bundle_labels, scorecard);
    let meta = BundleMetadata {
        extra_labels: &labels,
        ..bundle_metadata(plan, release)
    };
    let (files, objects) = files::to_files(&built.bundle, &meta)
        .and_then(|(mut files, objects)| {
            super::scorecard::carry(&mut files, scorecard).map(|()| (files, objects))
        })
        .map_err(|source| GenerateError::LayOut {
            version: release.version.clone(),
            source,
        })?;
    let dir = Path::new(&release.version);
    let loaded = files::loaded(objects, &meta, dir, &files);
    let mut report = validate::validate(&loaded, &validate::Options::default());
    let plan_file = plan.path.display().to_string();
    let notes = built.bundle.notes.into_iter();
    report.extend(notes.map(|f| with_plan_file(f, &plan_file)));
    report.extend(graph.findings_for(&release.version).cloned());
    report.normalize();
    Ok((report, loaded, files))
}

/// The `metadata/annotations.yaml` and Dockerfile labels of the release's bundle.
fn bundle_metadata<'a>(plan: &'a LoadedPlan, release: &'a Release) -> BundleMetadata<'a> {
    let channels = plan.channels_of(release);
    BundleMetadata {
        package: &plan.plan.package,
        channels,
        default_channel: channels
            .iter()
            .any(|c| c == &plan.plan.default_channel)
            .then_some(plan.plan.default_channel.as_str()),
        extra_labels: &plan.plan.bundle_labels,
        properties: &release.properties,
        dependencies: &release.dependencies,
    }
}

/// Problems as the run reports them: one that names no file is about the plan file, and
/// files are relative to the plan's directory when under it.
fn about_plan(plan: &LoadedPlan, found: Vec<Finding>) -> Vec<Finding> {
    let plan_file = plan.path.display().to_string();
    let base = plan.base_dir();
    let located = found.into_iter().map(|f| with_plan_file(f, &plan_file));
    located.map(|f| relative_to(f, base)).collect()
}

/// A finding's file relative to `base` (the plan's directory), when it is under it.
fn relative_to(mut finding: Finding, base: &Path) -> Finding {
    if let Some(file) = &finding.file
        && let Ok(rest) = file.strip_prefix(base)
        && !base.as_os_str().is_empty()
    {
        finding.file = Some(rest.to_path_buf());
    }
    finding
}

/// Plan-level findings without a file are about the plan file.
fn with_plan_file(finding: Finding, plan_file: &str) -> Finding {
    if finding.file.is_none() {
        finding.file(plan_file)
    } else {
        finding
    }
}

/// Findings on a generated bundle name the file inside `<version>/`.
fn locate_in(mut finding: Finding, dir: &Path) -> Finding {
    if let Some(file) = finding.file.take() {
        finding.file = Some(if file.is_relative() && !file.starts_with(dir) {
            dir.join(file)
        } else {
            file
        });
    }
    finding
}

/// `SOURCE_DATE_EPOCH` seconds → `YYYY-MM-DDTHH:MM:SSZ`.
pub fn format_epoch(seconds: i64) -> Option<String> {
    time::OffsetDateTime::from_unix_timestamp(seconds)
        .ok()?
        .format(&time::format_description::well_known::Rfc3339)
        .ok()
}

/// Reads `SOURCE_DATE_EPOCH`; an unparsable value is an error rather than silently ignored.
pub fn source_date_epoch_from_env() -> Result<Option<i64>, String> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("SOURCE_DATE_EPOCH={v:?} is not a number of seconds")),
        Err(_) => Ok(None),
    }
}
