//! What `olmpack generate` makes: every bundle of a plan, and the File-Based Catalog that
//! publishes them — built in memory, validated, then written (or checked) by the caller.
//!
//! The CSVs' upgrade fields and the catalog's channel entries are both read from the plan's
//! [`olmpack_model::upgrade_graph::UpgradeGraph`] (see the module for its rules). Bundle images are named by
//! the plan's `bundleImage` template.
#![warn(missing_docs)]

use crate::bundle::generate::{self, GenerateError, GenerateOptions, Generated};
use crate::refusal::Refusal;
use std::collections::BTreeMap;

use crate::bundle::load::LoadedBundle;
use crate::catalog::declcfg::DeclarativeConfig;
use crate::catalog::generate::{self as catalog_generate, PackageMeta};
use crate::catalog::render::{self, RenderOptions};
use olmpack_model::csv::{ClusterServiceVersion, Icon};
use olmpack_model::plan::LoadedPlan;
use olmpack_model::report::Report;
use olmpack_oci::output::FileTree;

/// Failure to build a plan's bundles and catalog.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// Generating the bundle directories of the plan failed.
    #[error("failed to generate the bundles")]
    Bundles(#[from] GenerateError),
    /// The plan lacks what a release needs (a `bundleImage`, which names each bundle's image
    /// in the catalog): an invalid plan, for this job.
    #[error("the plan cannot be released")]
    Incomplete(#[source] olmpack_model::plan::PlanError),
    /// Rendering a generated bundle into its catalog blob failed.
    #[error("failed to render the bundle of release {version} for the catalog")]
    Render {
        /// The release's version.
        version: String,
        /// The renderer's error.
        #[source]
        source: Box<render::RenderError>,
    },
    /// Building the catalog from the rendered bundles failed.
    #[error("failed to build the catalog")]
    Catalog(#[from] catalog_generate::CatalogGenerateError),
}

/// An invalid or incomplete plan is refused (exit 1); a generated bundle that cannot be
/// read back or rendered, or a catalog that cannot be built, is olmpack failing (exit 2).
impl Refusal for BuildError {
    fn refuses_input(&self) -> bool {
        match self {
            BuildError::Bundles(generate) => generate.refuses_input(),
            BuildError::Incomplete(_) => true,
            BuildError::Render { source, .. } => match source.as_ref() {
                render::RenderError::Load(load) => load.refuses_input(),
                _ => false,
            },
            BuildError::Catalog(_) => false,
        }
    }
}

/// Everything a release writes, and what it was written from.
#[derive(Clone, Debug)]
pub struct Built {
    /// `<version>/…` for `bundle/`.
    pub bundles: FileTree,
    /// Each bundle as validation read it (built, not parsed back), by release version.
    pub loaded: BTreeMap<String, LoadedBundle>,
    /// The catalog.
    pub catalog: BuiltCatalog,
    /// Warnings found on the way (per generated bundle).
    pub reports: Vec<Report>,
}

/// A package's catalog: as written, and what it was written from.
#[derive(Clone, Debug)]
pub struct BuiltCatalog {
    /// `<package>/catalog.json` for `catalog/`.
    pub files: FileTree,
    /// The blobs of `catalog.json`.
    pub config: DeclarativeConfig,
}

/// The bundle image of `version`: the plan's template with `{version}` replaced.
pub fn bundle_image(plan: &LoadedPlan, version: &str) -> Option<String> {
    plan.plan
        .bundle_image
        .as_ref()
        .map(|t| olmpack_model::plan::image_for_release(t, version))
}

/// Builds the bundles and the catalog of `plan`.
pub fn build(plan: &LoadedPlan, options: &GenerateOptions) -> Result<Built, BuildError> {
    let generated = generate::generate(plan, options)?;
    plan.plan
        .bundle_image
        .as_ref()
        .ok_or_else(|| {
            BuildError::Incomplete(olmpack_model::plan::PlanError::Invalid {
                path: plan.path.clone(),
                field: "bundleImage".into(),
                message: "not set; the catalog names each bundle by its image (e.g. quay.io/me/my-operator-bundle:v{version})".into(),
            })
        })?;
    let catalog = catalog(plan, &generated, &|version| {
        bundle_image(plan, version).unwrap_or_default()
    })?;
    Ok(Built {
        bundles: generated.tree,
        loaded: generated.bundles,
        catalog,
        reports: generated.reports,
    })
}

/// The catalog of `plan` publishing the `generated` bundles, each named by `image_of(version)`.
pub fn catalog(
    plan: &LoadedPlan,
    generated: &Generated,
    image_of: &dyn Fn(&str) -> String,
) -> Result<BuiltCatalog, BuildError> {
    let mut rendered = Vec::new();
    for (_, release) in plan.sorted_releases() {
        let version_text = release.version.clone();
        let loaded = &generated.bundles[&version_text];
        let bundle = render::render_built(
            loaded,
            &RenderOptions {
                image: image_of(&version_text),
                ..Default::default()
            },
        )
        .map_err(|source| BuildError::Render {
            version: version_text.clone(),
            source: Box::new(source),
        })?;
        rendered.push(bundle);
    }
    let package = PackageMeta {
        name: plan.plan.package.clone(),
        default_channel: plan.plan.default_channel.clone(),
        description: plan.plan.csv.description.clone(),
        icon: icon(
            plan.sorted_releases()
                .last()
                .and_then(|(_, r)| generated.bundles.get(&r.version)),
        ),
    };
    let config = catalog_generate::build_config(&package, &generated.graph, &rendered)?;
    let files = catalog_generate::to_files(&package.name, &config)?;
    Ok(BuiltCatalog { files, config })
}

/// The package icon: the newest bundle's CSV icon.
fn icon(newest: Option<&LoadedBundle>) -> Option<Icon> {
    let csv = ClusterServiceVersion::read(&newest?.csv()?.value).0;
    let first = csv.spec?.icon?.into_iter().next()?;
    Some(Icon::new(first.base64data?, first.mediatype?))
}
