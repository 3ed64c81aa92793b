//! The first pass of generating bundles: every file a plan names is read — each selected
//! release's manifests and samples, the plan's samples and icon — and the importers turn
//! what was read into what a bundle is built from. Every problem of every release comes back
//! at once, and nothing is built until all of it could be read.
//!
//! The plan's own values were checked when it was loaded ([`olmpack_model::plan::parse`]);
//! this pass checks what only the files can tell. Its result, [`ReadPlan`], is the plan as the
//! builder needs it: versions parsed, the CSV metadata merged with an imported CSV's, the upgrade
//! graph drawn. Nothing after it reads a file.
#![warn(missing_docs)]

use std::path::PathBuf;

use base64::Engine as _;

use super::inputs::{Inputs, Sourced};
use super::manifests;
use super::operator_sdk;
use crate::plan::PlanInputs as _;
use olmpack_model::csv::Icon;
use olmpack_model::plan::{CsvMetadata, LoadedPlan, Release};
use olmpack_model::report::Finding;
use olmpack_model::upgrade_graph::UpgradeGraph;
use olmpack_oci::input::Policy;

/// A plan with everything it names read: what the build pass needs, and no more files to read.
#[derive(Debug)]
pub struct ReadPlan<'p> {
    /// The plan as loaded (its values already checked).
    pub plan: &'p LoadedPlan,
    /// The plan's upgrade graph: the CSVs' edges and the catalog's channels read it.
    pub graph: UpgradeGraph,
    /// The plan's icon file, encoded; `None` when the plan names none.
    pub icon: Option<Icon>,
    /// Samples from the plan's `samples` files, for every release.
    pub samples: Vec<Sourced>,
    /// The selected releases, in the plan's order.
    pub releases: Vec<ReadRelease<'p>>,
}

/// One release, read.
#[derive(Debug)]
pub struct ReadRelease<'p> {
    /// The release's position in the plan (`releases[index]` in findings).
    pub index: usize,
    /// The release as the plan gives it.
    pub release: &'p Release,
    /// Its version, parsed.
    pub version: semver::Version,
    /// The plan's CSV metadata, with what an imported CSV adds where the plan is silent.
    pub csv: CsvMetadata,
    /// An imported CSV's icon, used when the plan names none.
    pub imported_icon: Option<Icon>,
    /// Samples from files listed for this release only.
    pub samples: Vec<Sourced>,
    /// The objects of its manifests, sorted by role.
    pub inputs: Inputs,
}

/// Reads what the plan names for every release (or only the release `only`) under the reading
/// `policy`; `Err` holds every problem found.
pub fn read_inputs<'p>(
    plan: &'p LoadedPlan,
    only: Option<&str>,
    policy: &Policy,
) -> Result<ReadPlan<'p>, Vec<Finding>> {
    let plan_file = plan.path.display().to_string();
    if let Some(only) = only
        && plan.release(only).is_none()
    {
        let message = format!("the plan has no release {only}");
        let finding = Finding::error("plan/unknown-release", message).file(&plan_file);
        return Err(vec![finding.field("releases")]);
    }
    let mut problems = Vec::new();
    let samples = read_samples(plan, policy, &plan.plan.samples, "samples", &mut problems);
    let icon = read_icon(plan, policy, &mut problems);
    let selected = (plan.plan.releases.iter().enumerate())
        .filter(|(_, r)| only.is_none_or(|v| v == r.version));
    let releases: Vec<ReadRelease<'p>> = selected
        .filter_map(|(index, release)| read_release(plan, policy, index, release, &mut problems))
        .collect();
    let graph = UpgradeGraph::from_plan(plan);
    problems.extend(graph.replaces_cycles(plan));
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(ReadPlan {
        plan,
        graph,
        icon,
        samples,
        releases,
    })
}

/// Reads one release's samples and manifests and imports them; `None` when a problem stops it.
fn read_release<'p>(
    plan: &'p LoadedPlan,
    policy: &Policy,
    index: usize,
    release: &'p Release,
    problems: &mut Vec<Finding>,
) -> Option<ReadRelease<'p>> {
    let field = format!("releases[{index}].samples");
    let samples = read_samples(plan, policy, &release.samples, &field, problems);
    let mut inputs = read_manifests(plan, policy, index, release, problems)?;
    // plan::parse refused a plan whose versions are not semantic versions.
    let version = semver::Version::parse(&release.version).ok()?;
    operator_sdk::check_package(&plan.plan.package, &mut inputs);
    let csv = operator_sdk::fill(&plan.plan.csv, &mut inputs);
    Some(ReadRelease {
        index,
        release,
        version,
        imported_icon: operator_sdk::icon_of(&plan.plan.csv, &inputs),
        csv,
        samples,
        inputs,
    })
}

/// The release's manifests directory (or file), read; `None` when it cannot be.
fn read_manifests(
    plan: &LoadedPlan,
    policy: &Policy,
    index: usize,
    release: &Release,
    problems: &mut Vec<Finding>,
) -> Option<Inputs> {
    let dir = match plan.resolve_input(&release.manifests, policy) {
        Ok(dir) => dir,
        Err(err) => {
            let field = format!("releases[{index}].manifests");
            let finding = plan_path_finding(plan, "plan/manifests-unreadable", &err, field);
            problems.push(finding);
            return None;
        }
    };
    let choices = manifests::ImportChoices::of(&plan.plan);
    match manifests::read_dir(&dir, plan.input_root(policy), choices, &policy.limits) {
        Ok(inputs) => Some(inputs),
        Err(found) => {
            problems.extend(found);
            None
        }
    }
}

/// The objects of every sample file in `paths` (the plan's field `field`).
fn read_samples(
    plan: &LoadedPlan,
    policy: &Policy,
    paths: &[PathBuf],
    field: &str,
    problems: &mut Vec<Finding>,
) -> Vec<Sourced> {
    let mut samples = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let read = plan.resolve_input(path, policy).and_then(|file| {
            olmpack_oci::input::text(&file, &policy.limits).map(|text| (file, text))
        });
        let (file, text) = match read {
            Ok(read) => read,
            Err(err) => {
                let field = format!("{field}[{i}]");
                problems.push(plan_path_finding(
                    plan,
                    "plan/sample-unreadable",
                    &err,
                    field,
                ));
                continue;
            }
        };
        match olmpack_model::yaml::from_multi_str(&text) {
            Ok(docs) => samples.extend(docs.into_iter().enumerate().map(|(index, value)| {
                let file = file.clone();
                Sourced { file, index, value }
            })),
            Err(err) => problems.push(
                Finding::error("plan/sample-invalid", err.to_string())
                    .file(file.display().to_string()),
            ),
        }
    }
    samples
}

/// The plan's icon file, base64-encoded with the media type the plan gives.
fn read_icon(plan: &LoadedPlan, policy: &Policy, problems: &mut Vec<Finding>) -> Option<Icon> {
    let icon = plan.plan.csv.icon.as_ref()?;
    let read = plan
        .resolve_input(&icon.path, policy)
        .and_then(|file| olmpack_oci::input::read(&file, &policy.limits));
    match read {
        Ok(bytes) => {
            let data = base64::engine::general_purpose::STANDARD.encode(bytes);
            Some(Icon::new(data, icon.mediatype.clone()))
        }
        Err(err) => {
            let field = "csv.icon.path".to_owned();
            problems.push(plan_path_finding(plan, "plan/icon-unreadable", &err, field));
            None
        }
    }
}

/// A finding on the plan for a path it names that cannot be used.
fn plan_path_finding(
    plan: &LoadedPlan,
    rule: &str,
    err: &olmpack_oci::input::InputError,
    field: String,
) -> Finding {
    Finding::error(rule, err.to_string())
        .file(plan.path.display().to_string())
        .field(field)
}
