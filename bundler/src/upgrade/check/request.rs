//! What one static upgrade check judges: the edges of a catalog, each head of the catalog
//! already published to its new head, and the installed bundle at each end of every edge.
//!
//! `olmpack upgrade check` and the upgrade check that gates `olmpack release` build the same
//! [`Request`], so `olmpack release` never checks fewer edges than the command users run by
//! hand.

use crate::refusal::Refusal;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::graph::{self, Edge, EdgeResult, GraphError, InstalledBundle};
use crate::build::Built;
use crate::bundle::load::{self, BundleLoadError, LoadedBundle};
use crate::catalog::load::{self as catalog_load, LoadError, LoadOptions};
use crate::catalog::model::Model;
use olmpack_model::plan::LoadedPlan;
use olmpack_oci::input::Limits;

/// A request could not be put together (not a finding about the releases).
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// A release's CRDs cannot be compared.
    #[error(transparent)]
    Release(#[from] GraphError),
    /// The catalog published before cannot be read.
    #[error("cannot read the catalog published before, {dir}")]
    Previous {
        /// The catalog directory.
        dir: PathBuf,
        /// Why it cannot be read.
        #[source]
        source: LoadError,
    },
    /// The bundle directories next to that catalog cannot be listed.
    #[error("cannot read the bundle directories in {dir}: {message}")]
    BundleDirs {
        /// The directory holding `<version>/manifests/`.
        dir: PathBuf,
        /// What went wrong, in our words.
        message: String,
    },
    /// A bundle directory next to that catalog cannot be read.
    #[error(transparent)]
    Bundle(#[from] BundleLoadError),
    /// The catalog asked about cannot be read.
    #[error(transparent)]
    Catalog(LoadError),
    /// The catalog asked about holds what olmpack refuses to load (the input is invalid).
    #[error("catalog {dir}: {file}: {message}")]
    CatalogInvalid {
        /// The catalog directory.
        dir: PathBuf,
        /// The first file refused, relative to it.
        file: PathBuf,
        /// Why.
        message: String,
    },
    /// The directory of the catalog's bundle directories is not a directory.
    #[error("cannot read the bundle directories: {} is not a directory", dir.display())]
    NotADirectory {
        /// The path given.
        dir: PathBuf,
    },
}

/// A catalog or bundle olmpack refuses (exit 1, its reader's answer); the rest is olmpack
/// failing to put the request together (exit 2).
impl Refusal for RequestError {
    fn refuses_input(&self) -> bool {
        match self {
            RequestError::Previous { source, .. } | RequestError::Catalog(source) => {
                source.refuses_input()
            }
            RequestError::Bundle(bundle) => bundle.refuses_input(),
            RequestError::CatalogInvalid { .. } => true,
            RequestError::Release(_)
            | RequestError::BundleDirs { .. }
            | RequestError::NotADirectory { .. } => false,
        }
    }
}

/// The edges one upgrade check judges and the installed bundles at their ends.
#[derive(Debug, Default)]
pub struct Request {
    edges: Vec<Edge>,
    releases: BTreeMap<String, InstalledBundle>,
}

impl Request {
    /// Every edge of `catalog`, with its bundles as they were built (in memory) or read.
    pub fn new<'a>(
        catalog: &Model,
        bundles: impl IntoIterator<Item = &'a LoadedBundle>,
    ) -> Result<Self, RequestError> {
        let mut request = Request {
            edges: graph::edges(catalog),
            releases: BTreeMap::new(),
        };
        for bundle in bundles {
            request.add_release(InstalledBundle::from_bundle(bundle)?);
        }
        Ok(request)
    }

    /// What `olmpack upgrade check --plan` judges: the plan's bundles and catalog as
    /// [`build::build`] made them (in memory), each bundle named where `olmpack generate`
    /// writes it, and from each head of the catalog already next to the plan (with its
    /// bundles) to its new head.
    pub fn of_build(
        plan: &LoadedPlan,
        built: Built,
        limits: &Limits,
    ) -> Result<Self, RequestError> {
        let (model, _) = Model::from_config(built.catalog.config);
        let bundle_dir = plan.bundles_dir();
        let bundles: Vec<LoadedBundle> = (built.loaded.into_iter())
            .map(|(version, bundle)| LoadedBundle {
                dir: bundle_dir.join(version),
                ..bundle
            })
            .collect();
        Request::new(&model, &bundles)?.with_previous(
            &model,
            &plan.catalog_dir(),
            &bundle_dir,
            limits,
        )
    }

    /// What `olmpack upgrade check --catalog --bundles` judges: every edge of the catalog in
    /// directory `catalog`, with the bundles in the bundle directories under `bundles` (else
    /// the catalog's own `olm.bundle.object`s). A catalog olmpack refuses to load is invalid
    /// input ([`RequestError::CatalogInvalid`]), as for `catalog validate`.
    pub fn of_catalog_dir(
        catalog: &Path,
        bundles: &Path,
        limits: &Limits,
    ) -> Result<Self, RequestError> {
        let options = LoadOptions {
            limits: *limits,
            ..Default::default()
        };
        let loaded =
            catalog_load::load_dir_with(catalog, options).map_err(RequestError::Catalog)?;
        if let Some(problem) = loaded.problems.first() {
            return Err(RequestError::CatalogInvalid {
                dir: catalog.to_owned(),
                file: problem.file.clone(),
                message: problem.message.clone(),
            });
        }
        if !bundles.is_dir() {
            return Err(RequestError::NotADirectory {
                dir: bundles.to_owned(),
            });
        }
        let (model, _) = Model::from_config(loaded.config);
        let mut request = Request::new(&model, [])?;
        request.add_releases_of(&model, bundles, limits)?;
        Ok(request)
    }

    /// Adds what a catalog published before brings: from each of its channel heads to the
    /// head of the same channel in `catalog`, with the releases it names that are not known
    /// yet (from the bundle directories under `bundles`, matched by CSV name, else from the
    /// catalog's own `olm.bundle.object`s). `previous` that is not a directory adds nothing.
    pub fn with_previous(
        mut self,
        catalog: &Model,
        previous: &Path,
        bundles: &Path,
        limits: &Limits,
    ) -> Result<Self, RequestError> {
        if !previous.is_dir() {
            return Ok(self);
        }
        let options = LoadOptions {
            limits: *limits,
            ..Default::default()
        };
        let loaded = catalog_load::load_dir_with(previous, options).map_err(|source| {
            RequestError::Previous {
                dir: previous.to_owned(),
                source,
            }
        })?;
        let (model, _) = Model::from_config(loaded.config);
        self.edges.extend(graph::next_head_edges(&model, catalog));
        self.add_releases_of(&model, bundles, limits)?;
        Ok(self)
    }

    /// Adds the releases of `model` not known yet: from the bundle directories under
    /// `bundles` (each `<dir>/manifests/`), else from the catalog's own objects.
    pub fn add_releases_of(
        &mut self,
        model: &Model,
        bundles: &Path,
        limits: &Limits,
    ) -> Result<(), RequestError> {
        for dir in bundle_dirs(bundles)? {
            let release = InstalledBundle::from_bundle(&load::load_dir_with(&dir, limits)?)?;
            self.add_release(release);
        }
        for pkg in model.packages.values() {
            for bundle in pkg.bundles.values().filter(|b| b.has_objects) {
                if !self.releases.contains_key(&bundle.name) {
                    self.add_release(InstalledBundle::from_catalog(bundle)?);
                }
            }
        }
        Ok(())
    }

    /// Judges every edge (edges found several ways are judged once, their channels and ways
    /// united).
    pub fn check(&self) -> Vec<EdgeResult> {
        graph::check_edges(&graph::merge(self.edges.clone()), &self.releases)
    }

    /// Keeps the first release of each name.
    fn add_release(&mut self, release: InstalledBundle) {
        self.releases.entry(release.name.clone()).or_insert(release);
    }
}

/// The bundle directories under `dir` (those holding `manifests/`), sorted; none when `dir`
/// is not a directory.
fn bundle_dirs(dir: &Path) -> Result<Vec<PathBuf>, RequestError> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let entries = std::fs::read_dir(dir).map_err(|e| RequestError::BundleDirs {
        dir: dir.to_owned(),
        message: olmpack_oci::input::describe_io(&e),
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("manifests").is_dir())
        .collect();
    dirs.sort();
    Ok(dirs)
}
