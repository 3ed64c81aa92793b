//! Argument parsing and dispatch. Each command group lives in its own module.
//!
//! Exit codes: `0` success; `1` the input is invalid (validation errors, a stale `--check`);
//! `2` olmpack could not do its job (unreadable input, bad arguments, I/O or network failure).

mod bundle;
mod catalog;
mod image;
mod plan;
mod release;
mod upgrade_olm;

use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Ship a Kubernetes operator through OLM: bundles, File-Based Catalogs and their images,
/// from one release plan, deterministically.
#[derive(Debug, Parser)]
#[command(name = "olmpack", version, propagate_version = true)]
struct Cli {
    /// Log more (repeat for more detail); logs go to stderr.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Log as JSON lines instead of text.
    #[arg(long, global = true)]
    log_json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The release job: generate bundle/ and catalog/ from the plan (olmpack.yaml), validate
    /// them, and write both — or, with --check, fail with a diff when they are stale.
    Generate(release::GenerateArgs),
    /// Run the release job on the embedded example operator (no files, cluster or registry
    /// needed) and write the result to --out.
    Example {
        /// Where to write bundle/ and catalog/.
        #[arg(long, default_value = "olmpack-example")]
        out: PathBuf,
    },
    /// Generate and validate registry+v1 bundles.
    #[command(subcommand)]
    Bundle(bundle::BundleCommand),
    /// Generate, render, validate and draw File-Based Catalogs.
    #[command(subcommand)]
    Catalog(catalog::CatalogCommand),
    /// Build, push and resolve bundle and catalog images (no container engine needed).
    #[command(subcommand)]
    Image(image::ImageCommand),
    /// Inspect the release plan (olmpack.yaml).
    #[command(subcommand)]
    Plan(plan::PlanCommand),
    /// Test upgrades of the catalog's releases.
    #[command(subcommand)]
    Upgrade(UpgradeCommand),
}

/// `olmpack upgrade …`.
#[derive(Debug, Subcommand)]
enum UpgradeCommand {
    /// Let the real OLM v0 (on a local control plane, no cluster needed) install every
    /// release by Subscription and upgrade along every edge it takes; report what OLM said.
    Olm(upgrade_olm::OlmArgs),
}

/// The result of a command: an exit code, or an error that stops it.
pub type CmdResult = Result<ExitCode, Box<dyn Error + Send + Sync>>;

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose, cli.log_json);
    let result = match cli.command {
        Command::Generate(args) => release::generate_cmd(args),
        Command::Example { out } => release::example_cmd(&out),
        Command::Bundle(cmd) => bundle::run(cmd),
        Command::Catalog(cmd) => catalog::run(cmd),
        Command::Image(cmd) => image::run(cmd),
        Command::Plan(cmd) => plan::run(cmd),
        Command::Upgrade(UpgradeCommand::Olm(args)) => upgrade_olm::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            print_error(err.as_ref());
            ExitCode::from(2)
        }
    }
}

/// Resolves image references through the registries (credentials from the usual auth files),
/// for `--pin-digests`.
pub fn digest_resolver() -> Result<olmpack::bundle::generate::ImageResolver, std::io::Error> {
    let runtime = std::sync::Arc::new(
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
    );
    let access = olmpack::image::RegistryAccess::default();
    Ok(olmpack::bundle::generate::ImageResolver(
        std::sync::Arc::new(move |reference: &str| {
            runtime
                .block_on(olmpack::image::resolve_digest(reference, &access))
                .map_err(|e| olmpack::report::error_chain(&e))
        }),
    ))
}

/// Generation options from the environment and the `--pin-digests` flag.
pub fn generate_options(
    pin_digests: bool,
) -> Result<olmpack::bundle::generate::GenerateOptions, Box<dyn Error + Send + Sync>> {
    Ok(olmpack::bundle::generate::GenerateOptions {
        source_date_epoch: olmpack::bundle::generate::source_date_epoch_from_env()?,
        only_version: None,
        resolver: if pin_digests {
            Some(digest_resolver()?)
        } else {
            None
        },
    })
}

/// Prints why generation refused the plan (every finding) and that nothing was written.
pub fn report_invalid(plan: &std::path::Path, findings: Vec<olmpack::report::Finding>) -> ExitCode {
    let mut report = olmpack::report::Report::new(plan.display().to_string());
    report.extend(findings);
    report.normalize();
    eprint!("{}", report.render(olmpack::report::OutputFormat::Text));
    eprintln!("olmpack: nothing written");
    ExitCode::from(1)
}

/// Prints the warnings of each generated bundle (infos stay quiet).
pub fn report_warnings(reports: &[olmpack::report::Report]) {
    for report in reports {
        if report
            .findings
            .iter()
            .any(|f| f.severity != olmpack::report::Severity::Info)
        {
            eprint!("{}", report.render(olmpack::report::OutputFormat::Text));
        }
    }
}

/// `error: top` then one `caused by:` line per source, each message said once.
fn print_error(err: &(dyn Error + 'static)) {
    eprintln!("error: {err}");
    let mut source = err.source();
    while let Some(cause) = source {
        eprintln!("  caused by: {cause}");
        source = cause.source();
    }
}

fn init_logging(verbose: u8, json: bool) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("OLMPACK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
