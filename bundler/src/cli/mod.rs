//! Argument parsing and dispatch. Each command group lives in its own module.
//!
//! Exit codes, the same for every command and every path through it ([`CommandError`]): `0`
//! success; `1` the input is invalid (findings printed: validation errors, an invalid release
//! plan, input olmpack refuses to read, a stale `--check`); `2` olmpack could not do its job
//! (a missing or unreadable input, bad arguments, an output it may not replace, I/O or network
//! failure).

mod bundle;
mod catalog;
pub(crate) mod image;
mod jobs;
mod plan;
mod tools;
mod upgrade;

use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::TypedValueParser as _;
use clap::{Parser, Subcommand};
use olmpack::refusal::{CommandError, Refusal};

/// Ship a Kubernetes operator through OLM: bundles, File-Based Catalogs and their images,
/// from one release plan, deterministically.
#[derive(Debug, Parser)]
#[command(name = "olmpack", version, propagate_version = true, after_help = EXIT_CODES)]
struct Cli {
    /// Log more (repeat for more detail); logs go to stderr.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Log as JSON lines instead of text.
    #[arg(long, global = true)]
    log_json: bool,
    #[command(flatten)]
    input: InputArgs,
    #[command(subcommand)]
    command: Command,
}

const EXIT_CODES: &str = "Exit codes (every command): 0 success; 1 the input is invalid (findings printed, \
including an invalid olmpack.yaml, input olmpack refuses to read, and a stale --check); 2 olmpack \
could not do its job (missing or unreadable input, bad arguments, an output it may not replace, \
I/O or network failure).";

/// Limits on what olmpack reads (see `olmpack_oci::input`).
#[derive(Debug, clap::Args)]
struct InputArgs {
    /// Largest input file olmpack reads, in MiB.
    #[arg(long, global = true, value_name = "MIB", default_value_t = 256)]
    max_file_size: u64,
    /// Largest total size of one input directory (a bundle, a catalog, a manifests
    /// directory), in MiB.
    #[arg(long, global = true, value_name = "MIB", default_value_t = 4096)]
    max_input_size: u64,
    /// Most files in one input directory.
    #[arg(long, global = true, value_name = "N", default_value_t = 200_000)]
    max_input_files: usize,
    /// Let paths in the release plan (manifests, samples, icon) point outside the plan's
    /// directory, and symlinks under them lead anywhere.
    #[arg(long, global = true)]
    allow_outside_paths: bool,
}

impl InputArgs {
    fn policy(&self) -> olmpack_oci::input::Policy {
        const MIB: u64 = 1024 * 1024;
        olmpack_oci::input::Policy {
            limits: olmpack_oci::input::Limits {
                max_file_bytes: self.max_file_size.saturating_mul(MIB),
                max_tree_bytes: self.max_input_size.saturating_mul(MIB),
                max_tree_files: self.max_input_files,
            },
            allow_outside_paths: self.allow_outside_paths,
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Generate bundle/ and catalog/ from the plan (olmpack.yaml), validate them, and write
    /// both — or, with --check, fail with a diff when they are stale.
    ///
    /// cert-manager objects in the manifests (kubebuilder's dist/install.yaml): webhook
    /// serving Certificates and their Issuers are left out, since OLM creates, mounts and
    /// rotates webhook certificates itself (info). Any other Certificate whose Secret a
    /// Deployment mounts (kubebuilder's metrics certificate) is an error unless the plan sets
    /// `certManagerCertificates: drop`: then it is left out with a warning, and the Secret's
    /// volume, its volumeMounts and the container args pointing into them (e.g.
    /// --metrics-cert-path) are removed from the Deployments, each removal named.
    ///
    /// A ClusterServiceVersion in the manifests (operator-sdk's bundle/manifests/ or `kustomize
    /// build config/manifests`) is imported: its install strategy becomes the deployments,
    /// RBAC and webhooks, and its metadata fills what the plan leaves unset (the plan wins;
    /// an info finding per field group taken). `helm template` output: Helm hooks are left out
    /// with a warning (test, delete, rollback) or refused (install, upgrade: OLM never runs
    /// them; the plan's `helmHooks: drop` leaves them out with a warning instead); the chart's
    /// own webhook certificate Secret is left out (info).
    Generate(jobs::generate::GenerateArgs),
    /// The whole release: plan → operator image → bundles pinned to it → validation →
    /// catalog → bundle and catalog images (OCI layouts) → with --push, the registries the
    /// plan names. Prints every step first; re-running after success changes nothing.
    Release(Box<jobs::release::ReleaseArgs>),
    /// Run `olmpack release` (without --push) on the embedded example operator (no files,
    /// cluster or registry needed) and write the result to --out.
    Example {
        /// Where to write bundle/, catalog/ and images/.
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
    /// Will the next release break the clusters that run an older one? CRD upgrade checks
    /// for every edge of the upgrade graph.
    #[command(subcommand)]
    Upgrade(upgrade::UpgradeCommand),
    /// The reference tools `upgrade test` and `upgrade olm` run (etcd, kube-apiserver, OLM, …):
    /// where each is found, and installing them from olmpack's tools image.
    #[command(subcommand)]
    Tools(tools::ToolsCommand),
}

/// The result of a command: an exit code, or the error that stops it (whose variant is the
/// exit code: only an error that says whether it refuses the input becomes one).
pub type CmdResult = Result<ExitCode, CommandError>;

/// The input is invalid (exit 1); the message names the file and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

impl Refusal for Invalid {
    fn refuses_input(&self) -> bool {
        true
    }
}

/// olmpack could not do its job (exit 2): bad arguments, an output it may not replace, a
/// missing input; the message says what.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Failure(pub String);

impl Refusal for Failure {
    fn refuses_input(&self) -> bool {
        false
    }
}

/// A flag whose value is one of the library's named choices; `--help` lists the names.
pub fn choice<T: olmpack_model::choice::Choice + Send + Sync>()
-> impl clap::builder::TypedValueParser<Value = T> {
    clap::builder::PossibleValuesParser::new(T::names()).try_map(|name: String| {
        T::from_name(&name).ok_or_else(|| format!("{name:?} is not one of the choices"))
    })
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // The reading policy travels as a value from here to every reader.
    let policy = cli.input.policy();
    init_logging(cli.verbose, cli.log_json);
    let result = match cli.command {
        Command::Generate(args) => jobs::generate::generate_cmd(args, &policy),
        Command::Release(args) => jobs::release::release_cmd(*args, &policy),
        Command::Example { out } => jobs::generate::example_cmd(&out, &policy),
        Command::Bundle(cmd) => bundle::run(cmd, &policy),
        Command::Catalog(cmd) => catalog::run(cmd, &policy),
        Command::Image(cmd) => image::run(cmd, &policy),
        Command::Plan(cmd) => plan::run(cmd, &policy),
        Command::Upgrade(cmd) => upgrade::run(cmd, &policy),
        Command::Tools(cmd) => tools::run(cmd),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            print_error(err.error());
            ExitCode::from(err.exit_code())
        }
    }
}

/// Resolves image references through the registries (credentials from the usual auth files),
/// for `--pin-digests`.
pub fn digest_resolver(
    net: &image::NetArgs,
) -> Result<olmpack::bundle::generate::ImageResolver, std::io::Error> {
    let runtime = std::sync::Arc::new(
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
    );
    let access = net.access();
    Ok(olmpack::bundle::generate::ImageResolver(
        std::sync::Arc::new(move |reference: &str| {
            runtime
                .block_on(olmpack_oci::image::resolve::resolve_digest(
                    reference, &access,
                ))
                .map(|digest| Some(olmpack::bundle::pin::Rewrite::Digest(digest)))
                .map_err(unresolved)
        }),
    ))
}

/// A failed resolve for `--pin-digests`: a reference that names nothing is the plan's problem
/// (exit 1); a registry that cannot be asked is not (exit 2).
fn unresolved(
    err: olmpack_oci::image::resolve::ResolveError,
) -> olmpack::bundle::generate::Unresolved {
    use olmpack::bundle::generate::Unresolved;
    use olmpack_oci::image::registry::RegistryError;
    use olmpack_oci::image::resolve::ResolveError;
    match &err {
        ResolveError::Reference(_)
        | ResolveError::Registry {
            source: RegistryError::Status { status: 404, .. },
            ..
        } => Unresolved::Refused(olmpack_model::report::error_chain(&err)),
        ResolveError::Registry { .. } => Unresolved::Unreachable(std::sync::Arc::new(err)),
    }
}

/// Generation options from the environment and the `--pin-digests` flag (with the registry
/// settings it resolves with).
pub fn generate_options(
    pin_digests: Option<&image::NetArgs>,
    policy: &olmpack_oci::input::Policy,
) -> Result<olmpack::bundle::generate::GenerateOptions, CommandError> {
    Ok(olmpack::bundle::generate::GenerateOptions {
        input: *policy,
        source_date_epoch: olmpack::bundle::generate::source_date_epoch_from_env()
            .map_err(Failure)?,
        only_version: None,
        resolver: match pin_digests {
            Some(net) => Some(digest_resolver(net)?),
            None => None,
        },
    })
}

/// Writes `bytes` to `path` whole or not at all (a temporary file beside it, renamed into
/// place); the error names the path.
pub fn write_file_atomically(path: &std::path::Path, bytes: &[u8]) -> Result<(), Failure> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    let failed = |e: std::io::Error| Failure(format!("failed to write {}: {e}", path.display()));
    let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
    std::io::Write::write_all(&mut temp, bytes).map_err(failed)?;
    temp.persist(path).map_err(|e| failed(e.error))?;
    Ok(())
}

/// Prints why generation refused the plan (every finding) and that nothing was written.
pub fn report_invalid(
    plan: &std::path::Path,
    findings: Vec<olmpack_model::report::Finding>,
) -> ExitCode {
    let mut report = olmpack_model::report::Report::new(plan.display().to_string());
    report.extend(findings);
    report.normalize();
    eprint!(
        "{}",
        report.format(olmpack_model::report::OutputFormat::Text)
    );
    eprintln!("olmpack: nothing written");
    ExitCode::from(1)
}

/// Prints the warnings of each generated bundle (infos stay quiet).
pub fn report_warnings(reports: &[olmpack_model::report::Report]) {
    for report in reports {
        if report
            .findings
            .iter()
            .any(|f| f.severity != olmpack_model::report::Severity::Info)
        {
            eprint!(
                "{}",
                report.format(olmpack_model::report::OutputFormat::Text)
            );
        }
    }
}

/// `error: top` then one `caused by:` line per source, each message said once, in our words
/// (I/O errors without "(os error N)") and shown safely (see `olmpack_model::report::safe_text`).
fn print_error(err: &(dyn Error + 'static)) {
    eprintln!("error: {}", olmpack_model::report::safe_text(&words(err)));
    let mut source = err.source();
    while let Some(cause) = source {
        eprintln!(
            "  caused by: {}",
            olmpack_model::report::safe_text(&words(cause))
        );
        source = cause.source();
    }
}

fn words(err: &(dyn Error + 'static)) -> String {
    match err.downcast_ref::<std::io::Error>() {
        Some(io) => olmpack_oci::input::describe_io(io),
        None => err.to_string(),
    }
}

fn init_logging(verbose: u8, json: bool) {
    let default = match verbose {
        // kube's client logs every failed request as an error; `upgrade test` provokes
        // failures on purpose (webhook outage, refused CRDs) and reports them itself.
        // rustls logs a failed handshake as an error in its own words; olmpack reports the
        // failure itself, naming the registry.
        0 => "warn,kube_client=off,rustls=off",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("OLMPACK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour codes only for a terminal: stderr redirected into a file or a CI log gets none.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use olmpack::catalog::load::LoadError;
    use olmpack::plan::PlanLoadError;
    use olmpack::upgrade::check::request::RequestError;
    use olmpack_oci::image::layout::LayoutError;
    use olmpack_oci::image::push::PushError;
    use olmpack_oci::input::InputError;
    use std::path::PathBuf;

    /// A missing file (exit 2) and a named pipe where a file is read (exit 1).
    fn missing() -> InputError {
        InputError::Io {
            path: PathBuf::from("plan.yaml"),
            problem: "no such file".into(),
            kind: std::io::ErrorKind::NotFound,
        }
    }

    fn fifo() -> InputError {
        InputError::NotRegular {
            path: PathBuf::from("pipe.yaml"),
            what: "a named pipe",
        }
    }

    fn blob(refusal: bool) -> LayoutError {
        LayoutError::BlobUnreadable {
            layout: PathBuf::from("layout"),
            digest: "sha256:00".into(),
            problem: "is a directory".into(),
            refusal,
        }
    }

    /// Every error reaches `main` as a [`CommandError`] whose variant is its exit code: the
    /// error decides, by its type, including through the errors that wrap it. (An error
    /// type that does not decide cannot become a `CommandError` at all: see the
    /// `compile_fail` example of `olmpack::refusal`.)
    #[test]
    fn each_error_decides_its_exit_code() {
        let plan = || PathBuf::from("olmpack.yaml");
        let cases: Vec<(&str, CommandError, u8)> = vec![
            ("invalid", Invalid("x".into()).into(), 1),
            ("failure", Failure("x".into()).into(), 2),
            ("missing file", missing().into(), 2),
            ("named pipe", fifo().into(), 1),
            (
                "plan unreadable",
                PlanLoadError::Read {
                    path: plan(),
                    source: missing(),
                }
                .into(),
                2,
            ),
            (
                "plan refused",
                PlanLoadError::Read {
                    path: plan(),
                    source: fifo(),
                }
                .into(),
                1,
            ),
            (
                "layout blob refused",
                PushError::Layout(blob(true)).into(),
                1,
            ),
            (
                "layout blob unreadable",
                PushError::Layout(blob(false)).into(),
                2,
            ),
            (
                "catalog refused",
                RequestError::Catalog(LoadError::Read {
                    path: plan(),
                    source: fifo(),
                })
                .into(),
                1,
            ),
            (
                "catalog invalid",
                RequestError::CatalogInvalid {
                    dir: plan(),
                    file: plan(),
                    message: "x".into(),
                }
                .into(),
                1,
            ),
            (
                "bundles not a directory",
                RequestError::NotADirectory { dir: plan() }.into(),
                2,
            ),
            ("io", std::io::Error::other("x").into(), 2),
        ];
        for (name, err, code) in cases {
            assert_eq!(err.exit_code(), code, "{name}: {}", err.error());
        }
    }
}
