//! The image steps of a release: the operator image from its binaries, one bundle image per
//! release and the catalog image, each rebuilt only when its inputs changed, and how each
//! step is described.

use std::path::Path;

use sha2::{Digest as _, Sha256};

use super::state::State;
use crate::image::build::{build_bundle_image, build_catalog_image};
use olmpack_model::file_name::FileName;
use olmpack_model::plan::{LoadedPlan, image_for_release};
use olmpack_oci::image::build::BuildOptions;
use olmpack_oci::image::digest::format_digest;
use olmpack_oci::image::layout::{Layout, Platform};
use olmpack_oci::image::operator::{OperatorBinary, OperatorOptions, build_operator_image};
use olmpack_oci::image::progress::Progress;
use olmpack_oci::output::FileTree;

use super::names::{Names, pinned, split_tag};
use super::{Change, ImageSummary, Options, ReleaseError, Step, fail, step, supply};

/// `sha256:` of labelled parts, for an image's inputs.
pub(super) fn inputs_digest(parts: &[(&str, &[u8])]) -> String {
    let mut hasher = Sha256::new();
    for (label, bytes) in parts {
        hasher.update((label.len() as u64).to_le_bytes());
        hasher.update(label.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    format_digest(&hasher.finalize())
}

/// The inputs every image shares, after its own: the build time (`SOURCE_DATE_EPOCH`) and
/// the tag it is built for.
fn build_parts(options: &Options, tag: &str) -> [(String, Vec<u8>); 2] {
    let epoch = options.source_date_epoch.unwrap_or(0).to_string();
    [
        ("epoch".into(), epoch.into_bytes()),
        ("tag".into(), tag.as_bytes().to_vec()),
    ]
}

pub(super) fn tree_parts(tree: &FileTree) -> Vec<(String, Vec<u8>)> {
    tree.iter()
        .map(|(p, c)| (p.to_string_lossy().into_owned(), c.to_vec()))
        .collect()
}

/// The digest of the layout `<out>/images/<name>` if it holds `digest` under `tag`.
/// Every blob of it is verified: a layout whose blobs were deleted, changed, grown, or
/// replaced by a FIFO or a symlink is not the image recorded, so it is rebuilt.
pub(super) fn layout_has(out: &Path, name: &str, tag: Option<&str>, digest: &str) -> bool {
    let Ok(layout) = Layout::open(&out.join("images").join(name)) else {
        return false;
    };
    layout
        .find(tag)
        .is_ok_and(|d| d.digest == digest && layout.verify(&d).is_ok())
}

/// Everything an image step needs to decide whether to rebuild.
pub(super) struct ImageJob<'a> {
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

pub(super) fn build_options(options: &Options, reference: &str) -> BuildOptions {
    BuildOptions {
        source_date_epoch: options.source_date_epoch.unwrap_or(0),
        tag: split_tag(reference).1.map(str::to_owned),
        platform: Platform::linux_amd64(),
        limits: options.input.limits,
    }
}

pub(super) fn image_step(step: &'static str, image: &ImageSummary) -> Step {
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

pub(super) fn images_step(step: &'static str, images: &[ImageSummary]) -> Step {
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

pub(super) fn push_step(push: bool, images: &[&ImageSummary]) -> Step {
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
pub(super) fn binaries(
    plan: &LoadedPlan,
    options: &Options,
) -> Result<Vec<OperatorBinary>, ReleaseError> {
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
                    refused: false,
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

pub(super) async fn operator_step(
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
            refused: false,
            source: format!(
                "{}: operator binaries are given but the plan names no operatorImage to publish them as",
                plan.path.display()
            )
            .into(),
        });
    };
    let reference = image_for_release(template, newest);
    let base = plan.plan.images.operator_base.clone();
    let mut parts: Vec<(String, Vec<u8>)> =
        vec![("base".into(), base.clone().unwrap_or_default().into_bytes())];
    parts.extend(build_parts(options, &reference));
    for binary in &binaries {
        let bytes = std::fs::read(&binary.path).map_err(|source| ReleaseError::Step {
            step: step::OPERATOR_IMAGE,
            refused: false,
            source: format!(
                "failed to read the operator binary {}: {source}",
                binary.path.display()
            )
            .into(),
        })?;
        parts.push((
            olmpack_oci::image::operator::platform_name(&binary.platform),
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

pub(super) fn borrow(parts: &[(String, Vec<u8>)]) -> Vec<(&str, &[u8])> {
    parts
        .iter()
        .map(|(l, b)| (l.as_str(), b.as_slice()))
        .collect()
}

pub(super) fn bundle_image_step(
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
    parts.extend(build_parts(options, &reference));
    let job = ImageJob {
        // The layout's directory under `images/`: one checked path component.
        name: FileName::or_hash(&format!("bundle-{version}")).to_string(),
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

pub(super) async fn catalog_image_step(
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
    parts.extend(build_parts(options, &names.catalog));
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

/// The files of one version's bundle, relative to the bundle directory.
pub(super) fn bundle_files(tree: &FileTree, version: &str) -> Result<FileTree, ReleaseError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_digest_separates_its_parts() {
        let a = inputs_digest(&[("a", b"bc")]);
        let b = inputs_digest(&[("ab", b"c")]);
        assert_ne!(a, b);
        assert_eq!(a, inputs_digest(&[("a", b"bc")]));
    }
}
