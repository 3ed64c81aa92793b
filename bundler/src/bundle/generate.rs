//! Generating every bundle of a release plan, in passes: read every release's inputs and
//! check the plan's values (the only I/O), build every bundle (pure), pin their images (when
//! asked), then render and validate each. The result is a [`FileTree`] of `<version>/…` that
//! the caller writes to `bundle/` or checks against it — nothing is written here, so a failure
//! leaves no partial output.
//!
//! `createdAt` comes from the release, else the plan, else `SOURCE_DATE_EPOCH`; with none of
//! them the CSV has no `createdAt`. The wall clock is never read.
#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;

use super::csv::{self, BuiltBundle, ReleaseSpec};
use super::files::{self, BundleMetadata};
use super::inputs::{Inputs, Sourced};
use super::load::LoadedBundle;
use super::manifests;
use super::pin;
use super::validate;
use crate::input::Policy;
use crate::output::FileTree;
use crate::plan::PlanInputs as _;
use olmpack_model::plan::{LoadedPlan, Release};
use olmpack_model::report::{Finding, Report, Severity};
use olmpack_model::upgrade_graph::UpgradeGraph;

/// Failure to generate bundles.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// Problems in the plan or the manifests; every one is listed.
    #[error("{} problem(s) in the release plan or its manifests", .0.iter().filter(|f| f.severity == Severity::Error).count())]
    Invalid(Vec<Finding>),
    /// A valid release's bundle could not be turned into files: a manifest could not be
    /// printed as YAML, or a file path would leave the bundle directory.
    #[error("failed to render the bundle of release {version}")]
    Render {
        /// The release's version.
        version: String,
        /// Why rendering failed.
        #[source]
        source: files::BundleFilesError,
    },
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

/// Resolves an image reference to its digest (`sha256:…`), leaves it as written (`None`), or
/// says why it cannot.
#[derive(Clone)]
pub struct ImageResolver(pub std::sync::Arc<ResolveFn>);

/// `reference → Ok(Some(digest)) | Ok(None) (leave it) | Err(reason)`.
pub type ResolveFn = dyn Fn(&str) -> Result<Option<String>, String> + Send + Sync;

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
    /// keyed by release version, so later steps, like rendering the catalog, read no files.
    pub bundles: BTreeMap<String, LoadedBundle>,
    /// The plan's upgrade graph the CSVs' edges were read from (the catalog reads the same).
    pub graph: UpgradeGraph,
}

/// Generates the bundle of every release (or one, see [`GenerateOptions::only_version`]).
pub fn generate(plan: &LoadedPlan, options: &GenerateOptions) -> Result<Generated, GenerateError> {
    let mut run = Run::new(plan, options);
    let selected = (plan.plan.releases.iter().enumerate())
        .filter(|(_, r)| (options.only_version.as_ref()).is_none_or(|v| v == &r.version));
    let read: Vec<ReleaseInputs<'_>> = selected.filter_map(|(i, r)| run.read(i, r)).collect();
    let mut built: Vec<Built<'_>> = read.into_iter().filter_map(|r| run.build(r)).collect();
    if let Some(resolver) = &options.resolver {
        for bundle in &mut built {
            run.pin_images(bundle.index, resolver, &mut bundle.bundle);
        }
    }
    for bundle in built {
        run.write(bundle)?;
    }
    run.finish()
}

/// Everything one release is built from, read and checked before any bundle is built.
struct ReleaseInputs<'p> {
    /// The release's position in the plan.
    index: usize,
    release: &'p Release,
    version: semver::Version,
    created_at: Option<String>,
    /// Samples listed for this release only.
    samples: Vec<Sourced>,
    inputs: Inputs,
}

/// A release's bundle, built, with what its files carry beside it.
struct Built<'p> {
    index: usize,
    release: &'p Release,
    bundle: BuiltBundle,
    /// The scorecard Configuration among the inputs, for the bundle's tests/.
    scorecard: Option<Sourced>,
}

/// One generation run: the plan-wide inputs, read once, and what the releases produced so far.
struct Run<'p> {
    plan: &'p LoadedPlan,
    options: &'p GenerateOptions,
    /// The plan file, as findings name it.
    plan_file: String,
    graph: UpgradeGraph,
    plan_samples: Vec<Sourced>,
    icon: Option<olmpack_model::csv::Icon>,
    /// `createdAt` from `SOURCE_DATE_EPOCH`, for releases and plans that set none.
    epoch_created: Option<String>,
    /// Image reference → digest, resolved once for all releases.
    digests: BTreeMap<String, String>,
    problems: Vec<Finding>,
    tree: FileTree,
    reports: Vec<Report>,
    bundles: BTreeMap<String, LoadedBundle>,
}

impl<'p> Run<'p> {
    /// Reads the plan-wide inputs (samples, icon).
    fn new(plan: &'p LoadedPlan, options: &'p GenerateOptions) -> Self {
        let mut problems = Vec::new();
        let plan_samples = read_samples(
            plan,
            &options.input,
            &plan.plan.samples,
            "samples",
            &mut problems,
        );
        let icon = read_icon(plan, &options.input, &mut problems);
        Run {
            plan,
            options,
            plan_file: plan.path.display().to_string(),
            graph: UpgradeGraph::from_plan(plan),
            plan_samples,
            icon,
            epoch_created: options.source_date_epoch.and_then(format_epoch),
            digests: BTreeMap::new(),
            problems,
            tree: FileTree::new(),
            reports: Vec::new(),
            bundles: BTreeMap::new(),
        }
    }

    /// Reads the release's manifests and samples and checks its `createdAt`; `None` when a
    /// problem stops it (every problem is collected).
    fn read(&mut self, index: usize, release: &'p Release) -> Option<ReleaseInputs<'p>> {
        let version = semver::Version::parse(&release.version).ok()?; // plan::load refused it
        let created_at = self.created_at(index, release);
        let samples = read_samples(
            self.plan,
            &self.options.input,
            &release.samples,
            &format!("releases[{index}].samples"),
            &mut self.problems,
        );
        let inputs = self.read_manifests(index, release)?;
        Some(ReleaseInputs {
            index,
            release,
            version,
            created_at,
            samples,
            inputs,
        })
    }

    /// Builds the release's CSV and objects from what was read; `None` when a problem stops it.
    fn build(&mut self, read: ReleaseInputs<'p>) -> Option<Built<'p>> {
        let plan = self.plan;
        let mut inputs = read.inputs;
        super::operator_sdk::check_package(&plan.plan.package, &mut inputs);
        let csv_metadata = super::operator_sdk::fill(&plan.plan.csv, &mut inputs);
        let spec = ReleaseSpec {
            package: &plan.plan.package,
            version: &read.version,
            csv: &csv_metadata,
            icon: (self.icon.clone())
                .or_else(|| super::operator_sdk::icon_of(&plan.plan.csv, &inputs)),
            edges: (self.graph.csv_edges(&read.release.version).cloned()).unwrap_or_default(),
            created_at: read.created_at,
            samples: self.plan_samples.clone(),
            release_samples: read.samples,
        };
        match csv::build(&spec, &inputs) {
            Ok(bundle) => Some(Built {
                index: read.index,
                release: read.release,
                bundle,
                scorecard: inputs.scorecard,
            }),
            Err(found) => {
                let plan_file = &self.plan_file;
                self.problems
                    .extend(found.into_iter().map(|f| with_plan_file(f, plan_file)));
                None
            }
        }
    }

    /// Renders the built bundle to files, validates it and adds it; `Err` only when rendering
    /// fails.
    fn write(&mut self, built: Built<'p>) -> Result<(), GenerateError> {
        let release = built.release;
        let meta = bundle_metadata(self.plan, release);
        let files = files::to_files(&built.bundle, &meta)
            .and_then(|mut files| {
                super::scorecard::carry(&mut files, built.scorecard.as_ref()).map(|()| files)
            })
            .map_err(|source| GenerateError::Render {
                version: release.version.clone(),
                source,
            })?;
        let loaded = files::loaded(&built.bundle, &meta, Path::new(&release.version), &files);
        self.add_bundle(release, &built.bundle, loaded, files)
    }

    /// `createdAt`: the release's, else the plan's, else from `SOURCE_DATE_EPOCH`; a value
    /// that is not RFC 3339 is a problem (and no `createdAt`).
    fn created_at(&mut self, i: usize, release: &Release) -> Option<String> {
        let Some(value) = release
            .created_at
            .as_ref()
            .or(self.plan.plan.created_at.as_ref())
        else {
            return self.epoch_created.clone();
        };
        match check_rfc3339(value) {
            Ok(()) => Some(value.clone()),
            Err(message) => {
                let field = if release.created_at.is_some() {
                    format!("releases[{i}].createdAt")
                } else {
                    "createdAt".into()
                };
                self.problems.push(
                    Finding::error("plan/created-at", message)
                        .file(&self.plan_file)
                        .field(field),
                );
                None
            }
        }
    }

    /// The release's manifests directory, read; `None` when it cannot be.
    fn read_manifests(&mut self, i: usize, release: &Release) -> Option<Inputs> {
        let plan = self.plan;
        let dir = match plan.resolve_input(&release.manifests, &self.options.input) {
            Ok(dir) => dir,
            Err(err) => {
                self.problems.push(plan_path_finding(
                    plan,
                    "plan/manifests-unreadable",
                    &err,
                    format!("releases[{i}].manifests"),
                ));
                return None;
            }
        };
        match manifests::read_dir(
            &dir,
            plan.input_root(&self.options.input),
            manifests::ImportChoices::of(&plan.plan),
            &self.options.input.limits,
        ) {
            Ok(inputs) => Some(inputs),
            Err(found) => {
                self.problems.extend(found);
                None
            }
        }
    }

    /// Pins every image reference of the CSV to its digest; one the resolver refuses is a
    /// problem.
    fn pin_images(&mut self, i: usize, resolver: &ImageResolver, built: &mut BuiltBundle) {
        for reference in pin::references(&built.csv) {
            if self.digests.contains_key(&reference) {
                continue;
            }
            match (resolver.0)(&reference) {
                Ok(Some(digest)) => {
                    self.digests.insert(reference, digest);
                }
                Ok(None) => {}
                Err(message) => self.problems.push(
                    Finding::error(
                        "image/unresolved",
                        format!("cannot pin {reference} to a digest: {message}"),
                    )
                    .file(&self.plan_file)
                    .field(format!("releases[{i}].manifests")),
                ),
            }
        }
        pin::pin(&mut built.csv, &self.digests);
    }

    /// Validates the built bundle (its errors become problems) and adds it, with its report
    /// and its files, under `<version>/`.
    fn add_bundle(
        &mut self,
        release: &Release,
        built: &BuiltBundle,
        loaded: LoadedBundle,
        files: FileTree,
    ) -> Result<(), GenerateError> {
        let dir = Path::new(&release.version);
        let mut report = validate::validate(&loaded, &validate::Options::default());
        report.extend(
            built
                .notes
                .iter()
                .cloned()
                .map(|f| with_plan_file(f, &self.plan_file)),
        );
        report.extend(self.graph.findings_for(&release.version).cloned());
        report.normalize();
        if report.has_errors() {
            self.problems.extend(
                report
                    .findings
                    .iter()
                    .filter(|f| f.severity == Severity::Error)
                    .cloned()
                    .map(|f| locate_in(f, dir)),
            );
        }
        self.reports.push(report);
        self.bundles.insert(release.version.clone(), loaded);
        self.tree
            .merge_under(dir, files)
            .map_err(|e| GenerateError::Render {
                version: release.version.clone(),
                source: e.into(),
            })
    }

    /// The result: every problem (findings' files relative to the plan's directory), or the
    /// bundles and their reports.
    fn finish(mut self) -> Result<Generated, GenerateError> {
        if let Some(only) = &self.options.only_version
            && self.plan.release(only).is_none()
        {
            self.problems.push(
                Finding::error(
                    "plan/unknown-release",
                    format!("the plan has no release {only}"),
                )
                .file(&self.plan_file)
                .field("releases"),
            );
        }
        let base = self.plan.base_dir().to_path_buf();
        let relative = |f: Finding| relative_to(f, &base);
        if self.problems.iter().any(|f| f.severity == Severity::Error) {
            return Err(GenerateError::Invalid(
                self.problems.into_iter().map(relative).collect(),
            ));
        }
        for report in &mut self.reports {
            report.findings = std::mem::take(&mut report.findings)
                .into_iter()
                .map(relative)
                .collect();
        }
        Ok(Generated {
            tree: self.tree,
            reports: self.reports,
            bundles: self.bundles,
            graph: self.graph,
        })
    }
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

/// A finding on the plan for a path it names that cannot be used.
fn plan_path_finding(
    plan: &LoadedPlan,
    rule: &str,
    err: &crate::input::InputError,
    field: String,
) -> Finding {
    Finding::error(rule, err.to_string())
        .file(plan.path.display().to_string())
        .field(field)
}

fn read_samples(
    plan: &LoadedPlan,
    policy: &Policy,
    paths: &[PathBuf],
    field: &str,
    problems: &mut Vec<Finding>,
) -> Vec<Sourced> {
    let mut samples = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let read = plan
            .resolve_input(path, policy)
            .and_then(|file| crate::input::text(&file, &policy.limits).map(|text| (file, text)));
        let (file, text) = match read {
            Ok(read) => read,
            Err(err) => {
                problems.push(plan_path_finding(
                    plan,
                    "plan/sample-unreadable",
                    &err,
                    format!("{field}[{i}]"),
                ));
                continue;
            }
        };
        match olmpack_model::yaml::from_multi_str(&text) {
            Ok(docs) => {
                samples.extend(docs.into_iter().enumerate().map(|(index, value)| Sourced {
                    file: file.clone(),
                    index,
                    value,
                }))
            }
            Err(err) => problems.push(
                Finding::error("plan/sample-invalid", err.to_string())
                    .file(file.display().to_string()),
            ),
        }
    }
    samples
}

fn read_icon(
    plan: &LoadedPlan,
    policy: &Policy,
    problems: &mut Vec<Finding>,
) -> Option<olmpack_model::csv::Icon> {
    let icon = plan.plan.csv.icon.as_ref()?;
    let read = plan
        .resolve_input(&icon.path, policy)
        .and_then(|file| crate::input::read(&file, &policy.limits));
    match read {
        Ok(bytes) => Some(olmpack_model::csv::Icon::new(
            base64::engine::general_purpose::STANDARD.encode(bytes),
            icon.mediatype.clone(),
        )),
        Err(err) => {
            problems.push(plan_path_finding(
                plan,
                "plan/icon-unreadable",
                &err,
                "csv.icon.path".to_owned(),
            ));
            None
        }
    }
}

fn check_rfc3339(value: &str) -> Result<(), String> {
    time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc3339)
        .map(|_| ())
        .map_err(|e| format!("{value:?} is not an RFC 3339 timestamp ({e})"))
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
