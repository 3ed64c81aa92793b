//! The release's supply chain steps: an SPDX SBOM of every bundle and catalog image, attached
//! to it in its registry ([`olmpack_oci::supply::attach`]), and (with a signing key) a cosign
//! signature of each ([`olmpack_oci::supply::cosign`]).
//!
//! Contract:
//! - Only with push: SBOMs and signatures live next to the images in their registries.
//! - They are published after every image is pushed by digest and before any tag moves, so
//!   an image is never reachable by its tag without its SBOM and signature.
//! - Each attachment is recorded in the state file under its kind and the image's pinned
//!   name; a re-run with the same inputs publishes nothing again.
#![warn(missing_docs)]

use std::collections::BTreeMap;

use super::names::split_tag;
use super::state::{Attachment, Kind, State};
use super::{Change, ImageSummary, MISSING, Options, ReleaseError, Step, fail, step};
use crate::build::BuiltCatalog;
use crate::catalog::declcfg::DeclarativeConfig;
use olmpack_oci::image::auth::Secret;
use olmpack_oci::image::layout::{Descriptor, Layout};
use olmpack_oci::image::media_type;
use olmpack_oci::output::FileTree;
use olmpack_oci::supply::attach::{self, Artifact, Discovery};
use olmpack_oci::supply::cosign::{self, Signer};
use olmpack_oci::supply::oci::Repo;
use olmpack_oci::supply::sbom::{self, SPDX_JSON, SbomInput};

/// The SBOM of one image, ready to attach.
#[derive(Clone, Debug)]
pub struct SbomJob {
    /// The layout's name under `<out>/images/`.
    name: String,
    reference: String,
    pinned: String,
    bytes: Vec<u8>,
    /// Set when an earlier run attached it (and the registry still has it).
    done: Option<Attachment>,
    /// An earlier run attached it, but the registry no longer has it.
    missing: bool,
}

/// One image to sign.
#[derive(Clone, Debug)]
pub struct SignJob {
    pinned: String,
    digest: String,
    /// Set when an earlier run signed it (and the registry still has the signature).
    done: Option<Attachment>,
    /// An earlier run signed it, but the registry no longer has the signature.
    missing: bool,
}

/// The supply chain work of a release.
#[derive(Clone, Debug, Default)]
pub struct SupplyJobs {
    sboms: Vec<SbomJob>,
    signer: Option<Signer>,
    signatures: Vec<SignJob>,
}

impl SupplyJobs {
    /// What earlier runs published for this release's images.
    pub fn published(&self) -> Vec<Attachment> {
        let sboms = self.sboms.iter().filter_map(|j| j.done.clone());
        let signatures = self.signatures.iter().filter_map(|j| j.done.clone());
        sboms.chain(signatures).collect()
    }
}

/// Reads the signing key of `--sign-key`, its password from `COSIGN_PASSWORD`.
pub fn load_signer(path: &std::path::Path) -> Result<Signer, ReleaseError> {
    let password = std::env::var("COSIGN_PASSWORD").ok().map(Secret::new);
    Signer::load(path, password.as_ref()).map_err(fail(step::SIGN))
}

/// The directories of a bundle that its image holds.
const BUNDLE_DIRS: [&str; 3] = ["manifests/", "metadata/", "tests/scorecard/"];

/// The bundles of the catalog: image → related images.
fn catalog_bundles(catalog: &DeclarativeConfig) -> BTreeMap<String, Vec<String>> {
    catalog
        .bundles
        .iter()
        .map(|b| {
            let related = b
                .related_images
                .iter()
                .map(|r| r.image.clone())
                .filter(|image| *image != b.image)
                .collect();
            (b.image.clone(), related)
        })
        .collect()
}

/// The SBOM jobs of the bundle images (`(version, image)`) and the catalog image.
pub fn jobs(
    bundles: &[(&str, &ImageSummary, FileTree)],
    catalog_image: &ImageSummary,
    catalog: &BuiltCatalog,
    options: &Options,
    signer: Option<&Signer>,
    state: &State,
) -> Result<SupplyJobs, ReleaseError> {
    if !options.push {
        return Ok(SupplyJobs {
            signer: signer.cloned(),
            ..SupplyJobs::default()
        });
    }
    let created = options.source_date_epoch.unwrap_or(0);
    let related = catalog_bundles(&catalog.config);
    let job = |image: &ImageSummary, files: Vec<(String, &[u8])>, references: Vec<String>| {
        let bytes = sbom::build(&SbomInput {
            reference: &image.reference,
            digest: &image.digest,
            files,
            references,
            created,
        })
        .map_err(fail(step::SBOM))?;
        Ok::<_, ReleaseError>(SbomJob {
            name: image.name.clone(),
            reference: image.reference.clone(),
            pinned: image.pinned.clone(),
            bytes,
            done: state
                .supply
                .get(&Attachment::sbom_key(&image.pinned))
                .cloned(),
            missing: false,
        })
    };
    let mut sboms = Vec::new();
    for (_, image, files) in bundles {
        // What bundle.Dockerfile copies: manifests/, metadata/, tests/scorecard/.
        let in_image = files
            .iter()
            .map(|(p, c)| (p.to_string_lossy().into_owned(), c))
            .filter(|(p, _)| BUNDLE_DIRS.iter().any(|d| p.starts_with(d)))
            .map(|(p, c)| (format!("/{p}"), c))
            .collect();
        let references = related.get(&image.pinned).cloned().unwrap_or_default();
        sboms.push(job(image, in_image, references)?);
    }
    let in_image = catalog
        .files
        .iter()
        .map(|(p, c)| (format!("/configs/{}", p.to_string_lossy()), c))
        .collect();
    sboms.push(job(
        catalog_image,
        in_image,
        related.keys().cloned().collect(),
    )?);
    let images = bundles.iter().map(|(_, image, _)| *image);
    let signatures = match signer {
        Some(signer) => sign_jobs(images.chain([catalog_image]), signer, state),
        None => Vec::new(),
    };
    Ok(SupplyJobs {
        sboms,
        signer: signer.cloned(),
        signatures,
    })
}

/// One signing job per image, done when `state` records its signature by this key.
fn sign_jobs<'a>(
    images: impl Iterator<Item = &'a ImageSummary>,
    signer: &Signer,
    state: &State,
) -> Vec<SignJob> {
    images
        .map(|image| SignJob {
            pinned: image.pinned.clone(),
            digest: image.digest.clone(),
            done: state
                .supply
                .get(&Attachment::signature_key(&image.pinned, signer.key_id()))
                .cloned(),
            missing: false,
        })
        .collect()
}

/// What a step changes, from whether each pending item was published before and is missing
/// from the registry: nothing pending is unchanged; only missing items, a republish.
pub(super) fn change(missing: impl IntoIterator<Item = bool>) -> Change {
    let mut change = Change::Unchanged;
    for missing in missing {
        if !missing {
            return Change::Changes;
        }
        change = Change::Republish;
    }
    change
}

/// Checks what the state file says earlier runs published against the registries: an SBOM
/// whose manifest, or a signature whose signature image, the registry no longer has is
/// published again (and the printed steps say so).
pub async fn verify(jobs: &mut SupplyJobs, options: &Options) -> Result<(), ReleaseError> {
    for job in &mut jobs.sboms {
        let Some(done) = &job.done else { continue };
        let repo = Repo::connect(&job.pinned, &options.access)
            .await
            .map_err(fail(step::SBOM))?;
        let found = repo
            .get_manifest(&repo.at_digest(&done.digest), &[media_type::MANIFEST])
            .await
            .map_err(fail(step::SBOM))?;
        if found.is_none() {
            (job.done, job.missing) = (None, true);
        }
    }
    let Some(signer) = &jobs.signer else {
        return Ok(());
    };
    for job in &mut jobs.signatures {
        if job.done.is_none() {
            continue;
        }
        let repo = Repo::connect(&job.pinned, &options.access)
            .await
            .map_err(fail(step::SIGN))?;
        let signed = cosign::is_signed(&repo, &job.digest, signer)
            .await
            .map_err(fail(step::SIGN))?;
        if !signed {
            (job.done, job.missing) = (None, true);
        }
    }
    Ok(())
}

/// The printed line of the signing step.
pub fn sign_step(push: bool, jobs: &SupplyJobs) -> Step {
    let Some(signer) = &jobs.signer else {
        return Step {
            step: step::SIGN,
            change: Change::Skipped,
            detail: "not asked (--sign-key)".into(),
        };
    };
    if !push {
        return Step {
            step: step::SIGN,
            change: Change::Skipped,
            detail: "not asked (--push): signatures are pushed next to the images".into(),
        };
    }
    let pending: Vec<&SignJob> = jobs
        .signatures
        .iter()
        .filter(|j| j.done.is_none())
        .collect();
    let mut detail = format!(
        "{} image(s) to sign with key {}, {} signed before",
        pending.len(),
        signer.key_id(),
        jobs.signatures.len() - pending.len()
    );
    for job in &pending {
        detail.push_str(&format!("\n    {}", job.pinned));
        if job.missing {
            detail.push_str(&format!(" (signed before, {MISSING})"));
        }
    }
    Step {
        step: step::SIGN,
        change: change(pending.iter().map(|j| j.missing)),
        detail,
    }
}

/// The printed line of the SBOM step.
pub fn sbom_step(push: bool, jobs: &SupplyJobs) -> Step {
    if !push {
        return Step {
            step: step::SBOM,
            change: Change::Skipped,
            detail: "not asked (--push): SBOMs are attached to the images in their registries"
                .into(),
        };
    }
    let pending: Vec<&SbomJob> = jobs.sboms.iter().filter(|j| j.done.is_none()).collect();
    let mut detail = format!(
        "{} SPDX SBOM(s) to attach, {} attached before",
        pending.len(),
        jobs.sboms.len() - pending.len()
    );
    for job in &pending {
        detail.push_str(&format!("\n    {}", job.pinned));
        if job.missing {
            detail.push_str(&format!(" (attached before, {MISSING})"));
        }
    }
    Step {
        step: step::SBOM,
        change: change(pending.iter().map(|j| j.missing)),
        detail,
    }
}

/// The subject descriptor of an image: its layout's root (media type, digest, size).
fn subject(options: &Options, job: &SbomJob) -> Result<Descriptor, ReleaseError> {
    let layout =
        Layout::open(&options.out.join("images").join(&job.name)).map_err(fail(step::SBOM))?;
    let root = layout
        .find(split_tag(&job.reference).1)
        .map_err(fail(step::SBOM))?;
    Ok(Descriptor::new(&root.media_type, root.digest, root.size))
}

/// Attaches every SBOM not attached before; records each in the state as it goes.
pub async fn publish(
    jobs: &SupplyJobs,
    state: &mut State,
    options: &Options,
) -> Result<Vec<Attachment>, ReleaseError> {
    let mut published = Vec::new();
    for job in &jobs.sboms {
        if let Some(done) = &job.done {
            published.push(done.clone());
            continue;
        }
        let subject = subject(options, job)?;
        let repo = Repo::connect(&job.pinned, &options.access)
            .await
            .map_err(fail(step::SBOM))?;
        let title = format!("{}.spdx.json", job.name);
        let attached = attach::attach(
            &repo,
            &subject,
            &Artifact {
                artifact_type: SPDX_JSON,
                title: &title,
                bytes: &job.bytes,
                created: options.source_date_epoch.unwrap_or(0),
            },
        )
        .await
        .map_err(fail(step::SBOM))?;
        let attachment = Attachment {
            kind: Kind::Sbom,
            image: job.pinned.clone(),
            digest: attached.digest,
            found_by: match attached.discovery {
                Discovery::ReferrersApi => "referrers-api",
                Discovery::TagSchema => "tag-schema",
            }
            .into(),
        };
        state
            .supply
            .insert(Attachment::sbom_key(&job.pinned), attachment.clone());
        state.save(&options.out).map_err(fail(step::SBOM))?;
        published.push(attachment);
    }
    published.extend(sign_all(jobs, state, options).await?);
    Ok(published)
}

/// Signs every image not signed before with the plan's key.
async fn sign_all(
    jobs: &SupplyJobs,
    state: &mut State,
    options: &Options,
) -> Result<Vec<Attachment>, ReleaseError> {
    let Some(signer) = &jobs.signer else {
        return Ok(Vec::new());
    };
    let mut published = Vec::new();
    for job in &jobs.signatures {
        if let Some(done) = &job.done {
            published.push(done.clone());
            continue;
        }
        let repo = Repo::connect(&job.pinned, &options.access)
            .await
            .map_err(fail(step::SIGN))?;
        let signed = cosign::sign(&repo, &job.digest, signer)
            .await
            .map_err(fail(step::SIGN))?;
        let attachment = Attachment {
            kind: Kind::Signature,
            image: job.pinned.clone(),
            digest: signed.digest,
            found_by: "cosign-tag".into(),
        };
        state.supply.insert(
            Attachment::signature_key(&job.pinned, signer.key_id()),
            attachment.clone(),
        );
        state.save(&options.out).map_err(fail(step::SIGN))?;
        published.push(attachment);
    }
    Ok(published)
}
