//! [`super::prepare`]'s steps, in order: plan, operator image, bundles, catalog and its
//! upgrade check, install manifests, supply chain; each described as a [`super::Step`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::state::State;
use crate::build;
use crate::bundle::generate::{self, GenerateError, GenerateOptions, ImageResolver};
use crate::bundle::pin::Rewrite;
use crate::catalog::declcfg::DeclarativeConfig;
use crate::catalog::model::Model;
use crate::upgrade::check::graph::EdgeResult;
use crate::upgrade::check::request::Request;
use olmpack_model::plan::{LoadedPlan, image_for_release};
use olmpack_model::report::{Finding, Report, Severity};
use olmpack_oci::image::progress::Progress;
use olmpack_oci::input::Limits;

use super::images::{
    bundle_files, bundle_image_step, catalog_image_step, image_step, images_step, operator_step,
    push_step,
};
use super::names::{Names, names, split_tag};
use super::{
    Change, ImageSummary, MISSING, Options, Prepared, ReleaseError, Step, Summary,
    UPGRADE_CHECK_PASSED, UpgradeCheck, fail, install, lock, stale, step, supply,
};

/// Checks every upgrade edge with the static checks of `olmpack upgrade check`, the same
/// request it makes ([`Request`]): the catalog's edges, and from each head of a catalog
/// published before — the one next to the plan (`catalog/`, with `bundle/`) and the one an
/// earlier release wrote into `--out` — to its new head. A refused edge stops the release
/// with its findings (exit 1).
pub(super) fn upgrade_check(
    catalog: &DeclarativeConfig,
    generated: &generate::Generated,
    previous: &[(PathBuf, PathBuf)],
    limits: &Limits,
) -> Result<UpgradeCheck, ReleaseError> {
    let (model, _) = Model::from_config(catalog.clone());
    let mut request =
        Request::new(&model, generated.bundles.values()).map_err(fail(step::UPGRADE_CHECK))?;
    for (catalog_dir, bundle_dir) in previous {
        request = request
            .with_previous(&model, catalog_dir, bundle_dir, limits)
            .map_err(fail(step::UPGRADE_CHECK))?;
    }
    let verdicts = request.check();
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
pub(super) fn refusal(verdicts: &[EdgeResult]) -> Option<Vec<Finding>> {
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

pub(super) async fn prepare_in(
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
    let supply_jobs = run
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
        supply: supply_jobs.published(),
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
        supply: supply_jobs,
        summary,
    })
}

/// What the steps of [`prepare`] share: the plan, the options, where images are staged, the
/// state of earlier runs, and the steps described so far.
pub(super) struct Preparing<'a> {
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
pub(super) struct Bundles {
    generated: generate::Generated,
    /// Whether `<out>/bundle/` differs from the generated tree.
    stale: bool,
    /// Warnings of the generated bundles.
    warnings: Vec<Finding>,
    /// One bundle image per release, oldest first.
    images: Vec<ImageSummary>,
}

/// The catalog step's outcome.
pub(super) struct Catalog {
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
        let previous = [
            (plan.catalog_dir(), plan.bundles_dir()),
            (options.out.join("catalog"), options.out.join("bundle")),
        ];
        let upgrade_check = upgrade_check(
            &built.config,
            &bundles.generated,
            &previous,
            &options.input.limits,
        )?;
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
    ) -> Result<supply::SupplyJobs, ReleaseError> {
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
        let mut supply_jobs = supply::jobs(
            &sbom_inputs,
            &catalog.image,
            &catalog.built,
            options,
            options.signer.as_ref(),
            &self.state,
        )?;
        if options.push {
            supply::verify(&mut supply_jobs, options).await?;
        }
        let all_images: Vec<&ImageSummary> = operator
            .map(|o| &*o)
            .into_iter()
            .chain(&bundles.images)
            .chain(std::iter::once(&catalog.image))
            .collect();
        self.steps.push(push_step(options.push, &all_images));
        self.steps
            .push(supply::sbom_step(options.push, &supply_jobs));
        self.steps
            .push(supply::sign_step(options.push, &supply_jobs));
        Ok(supply_jobs)
    }
}

/// Checks each image an earlier run pushed (by the state file) against its registry: an image
/// whose tag the registry no longer has at the recorded digest is pushed again.
pub(super) async fn verify_pushed(
    images: impl Iterator<Item = &mut ImageSummary>,
    options: &Options,
) -> Result<(), ReleaseError> {
    use olmpack_oci::supply::oci::Repo;
    for image in images.filter(|i| !i.needs_push) {
        let repo = Repo::connect(&image.reference, &options.access)
            .await
            .map_err(fail(step::PUSH))?;
        let tag = split_tag(&image.reference).1.unwrap_or("latest");
        let found = repo
            .get_manifest(
                &repo.at_tag(tag),
                olmpack_oci::image::media_type::ALL_MANIFESTS,
            )
            .await
            .map_err(fail(step::PUSH))?;
        let why = match found.map(|bytes| olmpack_oci::image::digest::sha256_digest(&bytes)) {
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
pub(super) fn upgrade_check_step(check: &UpgradeCheck) -> Step {
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

pub(super) fn warnings(reports: &[Report]) -> Vec<Finding> {
    reports
        .iter()
        .flat_map(|r| r.findings.iter())
        .filter(|f| f.severity == Severity::Warning)
        .cloned()
        .collect()
}

/// The step that writes a generated tree to `dir` when it is `stale`.
pub(super) fn tree_step(step: &'static str, stale: bool, what: String, dir: &str) -> Step {
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

/// Generates every bundle with the operator image of the newest release pinned to the built
/// digest (and every release's operator image moved to the target registry).
pub(super) fn generate_bundles(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
