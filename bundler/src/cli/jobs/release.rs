//! `olmpack release`: the whole pipeline from the plan to pushed images (see
//! [`olmpack::release`]). The list of steps goes to stdout (stderr with `--output json`,
//! whose summary is the only thing on stdout).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use olmpack::release::{self, Change, Options, ReleaseError, Summary};
use olmpack_model::plan;
use olmpack_oci::image::layout::Platform;
use olmpack_oci::image::operator::OperatorBinary;
use olmpack_oci::image::progress::Progress;

use crate::cli::CmdResult;
use crate::cli::image::{RegistryArgs, parse_epoch, parse_platform};

/// How `olmpack release` prints its summary: text, or JSON on stdout (the list of steps then
/// goes to stderr). A summary is not a report of findings, so not a
/// [`olmpack_model::report::OutputFormat`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SummaryFormat {
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ReleaseArgs {
    /// The release plan.
    #[arg(long, default_value = plan::DEFAULT_PLAN_FILE)]
    plan: PathBuf,
    /// Where bundle/, catalog/, images/ (OCI layouts) and release-state.json go
    /// [default: `release` next to the plan].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Push every image to its registry (by digest first, tags last).
    #[arg(long)]
    push: bool,
    /// Print the steps and what they would change, then stop.
    #[arg(long)]
    dry_run: bool,
    /// The summary's format.
    #[arg(long, value_enum, default_value = "text")]
    output: SummaryFormat,
    /// The operator binary of the newest release; repeat once per --platform (overrides the
    /// plan's images.operatorBinaries).
    #[arg(long = "binary", value_name = "PATH")]
    binaries: Vec<PathBuf>,
    /// The platforms of the --binary files, as OS/ARCH[/VARIANT], comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "linux/amd64", value_parser = parse_platform)]
    platform: Vec<Platform>,
    /// Publish every image under this host/namespace (e.g. ghcr.io/acme) instead of the
    /// plan's, keeping each image's name and tag.
    #[arg(long, value_name = "HOST/NAMESPACE")]
    registry: Option<String>,
    /// File mtimes, image creation times and the CSVs' default createdAt, in seconds since the
    /// Unix epoch.
    #[arg(long, env = "SOURCE_DATE_EPOCH", value_parser = parse_epoch)]
    source_date_epoch: Option<u64>,
    /// Sign every pushed bundle and catalog image with this key, in cosign's format
    /// (`cosign verify --key` checks it): cosign's encrypted key file (password in
    /// COSIGN_PASSWORD) or a PKCS#8 / SEC1 EC P-256 PEM. Needs --push.
    #[arg(long, value_name = "PATH")]
    sign_key: Option<PathBuf>,
    #[command(flatten)]
    access: RegistryArgs,
}

/// Runs `olmpack release`.
pub fn release_cmd(args: ReleaseArgs, policy: &olmpack_oci::input::Policy) -> CmdResult {
    let loaded = olmpack::plan::load(&args.plan, policy)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| loaded.resolve(Path::new("release")));
    if !args.binaries.is_empty() && args.binaries.len() != args.platform.len() {
        return Err(crate::cli::Failure(format!(
            "{} --binary for {} --platform; give one binary per platform, in the same order",
            args.binaries.len(),
            args.platform.len()
        ))
        .into());
    }
    let options = Options {
        out,
        source_date_epoch: args.source_date_epoch,
        binaries: args
            .platform
            .iter()
            .cloned()
            .zip(args.binaries.iter().cloned())
            .map(|(platform, path)| OperatorBinary { platform, path })
            .collect(),
        registry: args.registry.clone(),
        access: args.access.access()?,
        push: args.push,
        // The key is read before anything is built, so a bad key or password changes nothing.
        signer: match &args.sign_key {
            Some(path) => Some(release::supply::load_signer(path)?),
            None => None,
        },
        input: *policy,
    };
    run(&loaded, &options, args.dry_run, args.output)
}

/// Prepares, prints the steps, and (unless `dry_run`) applies them.
pub fn run(
    loaded: &plan::LoadedPlan,
    options: &Options,
    dry_run: bool,
    format: SummaryFormat,
) -> CmdResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let progress = Progress::auto();
    let prepared = match runtime.block_on(release::prepare(loaded, options, &progress)) {
        Ok(prepared) => prepared,
        Err(ReleaseError::Invalid(findings)) => {
            return Ok(crate::cli::report_invalid(&loaded.path, findings));
        }
        Err(other) => return Err(other.into()),
    };
    let mut steps_out: Box<dyn Write> = match format {
        SummaryFormat::Text => Box::new(std::io::stdout()),
        SummaryFormat::Json => Box::new(std::io::stderr()),
    };
    print_steps(&mut steps_out, &prepared.summary, &options.out)?;
    if !prepared.summary.findings.is_empty() {
        let mut report = olmpack_model::report::Report::new(loaded.path.display().to_string());
        report.extend(prepared.summary.findings.iter().cloned());
        report.normalize();
        eprint!(
            "{}",
            report.format(olmpack_model::report::OutputFormat::Text)
        );
    }
    let noop = prepared.is_noop();
    let summary = if dry_run {
        writeln!(steps_out, "dry run: nothing was written or pushed")?;
        prepared.summary.clone()
    } else if noop {
        prepared.remove_leftovers(&options.out)?;
        writeln!(steps_out, "nothing to do: the release is complete")?;
        let mut summary = prepared.summary.clone();
        summary.dry_run = false;
        summary.pushed = options.push;
        summary
    } else {
        let summary = runtime.block_on(release::apply(prepared, options, &progress))?;
        writeln!(
            steps_out,
            "released {} {} to {}{}",
            summary.package,
            summary.versions.last().map(String::as_str).unwrap_or(""),
            options.out.display(),
            if summary.pushed { " and pushed it" } else { "" }
        )?;
        summary
    };
    if format == SummaryFormat::Json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_steps(out: &mut dyn Write, summary: &Summary, dir: &Path) -> std::io::Result<()> {
    writeln!(
        out,
        "olmpack release: {} ({} release(s)) → {}",
        summary.package,
        summary.versions.len(),
        dir.display()
    )?;
    for (i, step) in summary.steps.iter().enumerate() {
        let mark = match step.change {
            Change::Unchanged => "unchanged",
            Change::Changes => "changes",
            Change::Skipped => "skipped",
            Change::Republish => "republish",
        };
        writeln!(
            out,
            "  {}. {:<14} [{mark}] {}",
            i + 1,
            step.step,
            step.detail
        )?;
    }
    Ok(())
}
