//! The release's "install manifests" step: [`crate::install`] on the generated bundles and the
//! catalog image's digest, written to `<out>/install/`.

use serde::Serialize;

use super::{Change, ImageSummary, Options, ReleaseError, Step, fail, stale, step};
use crate::bundle::generate::Generated;
use crate::install::{self, InstallInput, OLM_V0_FILE, OLM_V1_FILE, facts};
use olmpack_model::plan::LoadedPlan;
use olmpack_oci::output::FileTree;

/// The directory under `--out` the install manifests go to.
pub const INSTALL_DIR: &str = "install";

/// The install manifests of a release, for the JSON summary.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallSummary {
    /// Paths relative to `--out`: the OLM v0 and the OLM v1 manifests.
    pub files: Vec<String>,
    /// The namespace the operator is installed into.
    pub namespace: String,
    /// The catalog image the CatalogSource and the ClusterCatalog serve, by digest.
    pub catalog_image: String,
}

/// The step's outcome: the files (when they can be written) and whether they are stale.
#[derive(Debug)]
pub struct InstallOutcome {
    /// The install manifests, by path under `install/`; none when the newest CSV's install
    /// modes leave the target namespaces to the administrator.
    pub files: Option<FileTree>,
    /// Whether `<out>/install/` differs from the files (so writing changes it).
    pub stale: bool,
    /// What the files are, for the JSON summary; none when skipped.
    pub summary: Option<InstallSummary>,
    /// The step's line of the printed steps.
    pub step: Step,
}

/// Builds the install manifests from every release's bundle (oldest first) and the catalog
/// image, and compares them with `<out>/install/`.
pub fn prepare(
    plan: &LoadedPlan,
    generated: &Generated,
    versions: &[String],
    catalog: &ImageSummary,
    options: &Options,
) -> Result<InstallOutcome, ReleaseError> {
    let (out, push) = (options.out.as_path(), options.push);
    let releases = release_facts(generated, versions)?;
    let input = InstallInput {
        package: &plan.plan.package,
        default_channel: &plan.plan.default_channel,
        catalog_image: &catalog.pinned,
        releases: &releases,
    };
    let built = match install::build(&input) {
        Ok(built) => built,
        Err(err @ install::InstallError::NoInstallMode { .. }) => {
            return Ok(InstallOutcome::skipped(&err));
        }
        Err(other) => return Err(fail(step::INSTALL)(other)),
    };
    let webhooks = releases.last().is_some_and(|r| !r.webhooks.is_empty());
    let is_stale = stale(
        &built.files,
        &out.join(INSTALL_DIR),
        step::INSTALL,
        &options.input.limits,
    )?;
    let files: Vec<String> = [OLM_V0_FILE, OLM_V1_FILE]
        .iter()
        .map(|f| format!("{INSTALL_DIR}/{f}"))
        .collect();
    let detail = format!(
        "{}; they name the catalog image {}{}{}; {}",
        contents(&files, &plan.plan.default_channel, &built.namespace),
        catalog.pinned,
        if push { "" } else { NOT_PUSHED_NOTE },
        if webhooks { WEBHOOKS_NOTE } else { "" },
        if is_stale {
            "install/ will be written"
        } else {
            "install/ is up to date"
        }
    );
    Ok(InstallOutcome {
        stale: is_stale,
        summary: Some(InstallSummary {
            files,
            namespace: built.namespace,
            catalog_image: catalog.pinned.clone(),
        }),
        files: Some(built.files),
        step: Step {
            step: step::INSTALL,
            change: if is_stale {
                Change::Changes
            } else {
                Change::Unchanged
            },
            detail,
        },
    })
}

/// Said of the catalog image when the run does not push it.
const NOT_PUSHED_NOTE: &str = ", which clusters can pull only once it is pushed (--push)";
/// Said when the newest bundle has webhooks.
const WEBHOOKS_NOTE: &str = "; the newest bundle has webhooks, which OLM v1 installs only with its webhook support (cert-manager) enabled";

/// What install reads of each release's bundle, oldest first.
fn release_facts(
    generated: &Generated,
    versions: &[String],
) -> Result<Vec<facts::BundleFacts>, ReleaseError> {
    let mut releases = Vec::new();
    for version in versions {
        if let Some(bundle) = generated.bundles.get(version) {
            let label = format!("bundle/{version}");
            releases.push(facts::read(&label, bundle).map_err(fail(step::INSTALL))?);
        }
    }
    Ok(releases)
}

/// The two files (`files`: OLM v0's, then OLM v1's) and what they hold.
fn contents(files: &[String], channel: &str, namespace: &str) -> String {
    format!(
        "{} (OLM v0: CatalogSource, OperatorGroup, Subscription to {channel}) and {} (OLM v1: ClusterCatalog, installer ServiceAccount + RBAC, ClusterExtension) into namespace {namespace}",
        files[0], files[1],
    )
}

impl InstallOutcome {
    /// Nothing to install: the CSV's install modes leave the target namespaces to the
    /// administrator (`err` says why).
    fn skipped(err: &install::InstallError) -> Self {
        InstallOutcome {
            files: None,
            stale: false,
            summary: None,
            step: Step {
                step: step::INSTALL,
                change: Change::Skipped,
                detail: err.to_string(),
            },
        }
    }
}
