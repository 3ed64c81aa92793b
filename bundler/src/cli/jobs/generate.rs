//! `olmpack generate` (bundle/ and catalog/ from the plan, no images) and
//! `olmpack example` (`olmpack release` on the embedded example operator).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use olmpack::build::{self, BuildError};
use olmpack::bundle::generate::GenerateError;
use olmpack_model::plan;

use crate::cli::CmdResult;
use olmpack_oci::input::Policy;

/// The example operator, embedded so `olmpack example` needs no files.
const EXAMPLE: &[(&str, &str)] = &[
    (
        "olmpack.yaml",
        include_str!("../../../example/olmpack.yaml"),
    ),
    ("icon.svg", include_str!("../../../example/icon.svg")),
    (
        "samples/v1alpha1.yaml",
        include_str!("../../../example/samples/v1alpha1.yaml"),
    ),
    (
        "samples/v1.yaml",
        include_str!("../../../example/samples/v1.yaml"),
    ),
    (
        "deploy/1.0.0/manifests.yaml",
        include_str!("../../../example/deploy/1.0.0/manifests.yaml"),
    ),
    (
        "deploy/1.1.0/manifests.yaml",
        include_str!("../../../example/deploy/1.1.0/manifests.yaml"),
    ),
    (
        "deploy/1.1.1/manifests.yaml",
        include_str!("../../../example/deploy/1.1.1/manifests.yaml"),
    ),
];

/// Where `olmpack generate` writes.
#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// The release plan.
    #[arg(long, default_value = plan::DEFAULT_PLAN_FILE)]
    plan: PathBuf,
    /// Bundle output directory [default: the plan's `output.bundles`, `bundle` next to it].
    #[arg(long)]
    bundles: Option<PathBuf>,
    /// Catalog output directory [default: the plan's `output.catalog`, `catalog` next to it].
    #[arg(long)]
    catalog: Option<PathBuf>,
    /// Write nothing; exit 1 with a diff if either directory is not up to date.
    #[arg(long)]
    check: bool,
    /// Pin every image to the digest its registry serves now.
    #[arg(long)]
    pin_digests: bool,
    #[command(flatten)]
    net: crate::cli::image::NetArgs,
}

/// Runs `olmpack generate` on a plan file.
pub fn generate_cmd(args: GenerateArgs, policy: &Policy) -> CmdResult {
    let loaded = olmpack::plan::load(&args.plan, policy)?;
    let bundles = args.bundles.unwrap_or_else(|| loaded.bundles_dir());
    let catalog = args.catalog.unwrap_or_else(|| loaded.catalog_dir());
    run_generate(
        &loaded,
        (&bundles, &catalog),
        args.check,
        args.pin_digests.then_some(&args.net),
        policy,
    )
}

/// `olmpack release` without push on the embedded example, written under `out`.
pub fn example_cmd(out: &Path, policy: &Policy) -> CmdResult {
    let inputs = tempfile::tempdir()?;
    for (path, text) in EXAMPLE {
        let target = inputs.path().join(path);
        std::fs::create_dir_all(target.parent().unwrap_or(inputs.path()))?;
        std::fs::write(target, text)?;
    }
    let loaded = olmpack::plan::load(&inputs.path().join("olmpack.yaml"), policy)?;
    println!(
        "olmpack example: the guestbook operator (3 releases, CRD v1alpha1 → v1 with a conversion webhook)"
    );
    let options = olmpack::release::Options {
        out: out.to_owned(),
        source_date_epoch: olmpack::bundle::generate::source_date_epoch_from_env()
            .map_err(crate::cli::Failure)?
            .and_then(|e| u64::try_from(e).ok()),
        binaries: Vec::new(),
        registry: None,
        access: olmpack_oci::image::registry::RegistryAccess::default(),
        push: false,
        signer: None,
        input: *policy,
    };
    let code = crate::cli::jobs::release::run(
        &loaded,
        &options,
        false,
        crate::cli::jobs::release::SummaryFormat::Text,
    )?;
    if code == ExitCode::SUCCESS {
        println!(
            "next: `olmpack bundle validate {}`, `olmpack catalog validate {}`, `skopeo inspect oci:{}:latest`",
            out.join("bundle").display(),
            out.join("catalog").display(),
            out.join("images/catalog").display()
        );
    }
    Ok(code)
}

fn run_generate(
    loaded: &plan::LoadedPlan,
    (bundles, catalog): (&Path, &Path),
    check: bool,
    pin_digests: Option<&crate::cli::image::NetArgs>,
    policy: &Policy,
) -> CmdResult {
    let options = crate::cli::generate_options(pin_digests, policy)?;
    let output = match build::build(loaded, &options) {
        Ok(output) => output,
        Err(BuildError::Bundles(GenerateError::Invalid(findings))) => {
            return Ok(crate::cli::report_invalid(&loaded.path, findings));
        }
        Err(other) => return Err(other.into()),
    };
    crate::cli::report_warnings(&output.reports);
    if check {
        let mut stale = 0;
        for (tree, dir) in [(&output.bundles, bundles), (&output.catalog.files, catalog)] {
            for drift in tree.check_against(dir, &policy.limits)? {
                println!("{}: {drift}", dir.display());
                stale += 1;
            }
        }
        if stale > 0 {
            eprintln!(
                "olmpack: {stale} difference(s); run `olmpack generate` and commit the result"
            );
            return Ok(ExitCode::from(1));
        }
        println!(
            "{} and {} are up to date",
            bundles.display(),
            catalog.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    // Both trees are complete in memory before either is written; each write is atomic, and
    // neither is written unless both outputs may be replaced.
    output.bundles.check_replaceable(bundles)?;
    output.catalog.files.check_replaceable(catalog)?;
    output.bundles.write_to(bundles)?;
    output.catalog.files.write_to(catalog)?;
    println!(
        "wrote {} bundle(s) to {} and the catalog of package {} to {}",
        output.reports.len(),
        bundles.display(),
        loaded.plan.package,
        catalog.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `olmpack catalog generate`: `olmpack generate`, writing (or checking) only the catalog.
pub fn catalog_only(
    plan_path: &Path,
    out: Option<PathBuf>,
    check: bool,
    policy: &Policy,
) -> CmdResult {
    let loaded = olmpack::plan::load(plan_path, policy)?;
    let out = out.unwrap_or_else(|| loaded.catalog_dir());
    let output = match build::build(&loaded, &crate::cli::generate_options(None, policy)?) {
        Ok(output) => output,
        Err(BuildError::Bundles(GenerateError::Invalid(findings))) => {
            return Ok(crate::cli::report_invalid(&loaded.path, findings));
        }
        Err(other) => return Err(other.into()),
    };
    if check {
        let drifts = output.catalog.files.check_against(&out, &policy.limits)?;
        for drift in &drifts {
            println!("{drift}");
        }
        if !drifts.is_empty() {
            eprintln!(
                "olmpack: {} is stale; run `olmpack catalog generate`",
                out.display()
            );
            return Ok(ExitCode::from(1));
        }
        println!("{} is up to date", out.display());
        return Ok(ExitCode::SUCCESS);
    }
    output.catalog.files.write_to(&out)?;
    println!(
        "wrote the catalog of package {} to {}",
        loaded.plan.package,
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}
