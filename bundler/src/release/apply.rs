//! [`super::apply`]: writing what changed into `--out` and (with push) publishing.

use std::path::Path;

use super::state::{BuiltImage, State};
use olmpack_oci::image::progress::Progress;
use olmpack_oci::image::push::push_layout;

use super::names::split_tag;
use super::{ImageSummary, Options, Prepared, ReleaseError, Summary, fail, install, step, supply};

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
pub(super) fn place_layout(
    staging: &Path,
    out: &Path,
    name: &str,
    recorded: bool,
) -> Result<(), ReleaseError> {
    let from = staging.join("images").join(name);
    let to = out.join("images").join(name);
    let io = |source: std::io::Error| ReleaseError::Step {
        step: step::WRITE,
        refused: false,
        source: format!(
            "failed to move the image layout into {}: {source}",
            to.display()
        )
        .into(),
    };
    std::fs::create_dir_all(out.join("images")).map_err(io)?;
    if !recorded {
        olmpack_oci::image::layout::check_replaceable(&to).map_err(fail(step::WRITE))?;
    }
    if to.exists() {
        let old = staging.join("replaced").join(name);
        std::fs::create_dir_all(old.parent().unwrap_or(staging)).map_err(io)?;
        std::fs::rename(&to, &old).map_err(io)?;
    }
    std::fs::rename(&from, &to).map_err(io)
}

pub(super) async fn push_all(
    images: &[ImageSummary],
    supply_jobs: &supply::SupplyJobs,
    state: &mut State,
    options: &Options,
    progress: &Progress,
) -> Result<Vec<super::state::Attachment>, ReleaseError> {
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
    let attachments = supply::publish(supply_jobs, state, options).await?;
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
