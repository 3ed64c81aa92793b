//! `olmpack upgrade test`: every edge of the upgrade graph, live (see [`olmpack::upgrade::test`]).

use std::path::PathBuf;
use std::process::ExitCode;

use olmpack::build::BuildError;
use olmpack::bundle::generate::GenerateError;
use olmpack::upgrade::olm::platform::Platform;
use olmpack::upgrade::test::{self, LiveInputsError, Target};
use olmpack_envtest::binaries::{KubeMinor, Tool};
use olmpack_envtest::live::EdgeOptions;
use olmpack_model::plan;
use olmpack_model::report::OutputFormat;

use crate::cli::CmdResult;

/// Arguments of `olmpack upgrade test`.
#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// The release plan (its bundles and catalog are generated in memory).
    #[arg(long, default_value = plan::DEFAULT_PLAN_FILE, conflicts_with_all = ["catalog", "bundles"])]
    plan: PathBuf,
    /// A File-Based Catalog directory whose graph gives the edges (with --bundles).
    #[arg(long, requires = "bundles")]
    catalog: Option<PathBuf>,
    /// A directory of bundle directories (`<dir>/<any>/manifests/…`), matched by CSV name.
    #[arg(long, requires = "catalog")]
    bundles: Option<PathBuf>,
    /// Run on this cluster instead of a test environment of olmpack's own (its apiserver
    /// must reach the webhook at 127.0.0.1; the CRDs must not exist there yet).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The operator's process, run for every release by `sh -c` as written (a script or a
    /// snippet); it serves the conversion webhook and runs the controllers. Its environment:
    /// KUBECONFIG (acting as the CSV Deployment's ServiceAccount with the CSV's permissions),
    /// OLMPACK_WEBHOOK_CERT_FILE, OLMPACK_WEBHOOK_KEY_FILE, OLMPACK_WEBHOOK_CERT_DIR,
    /// OLMPACK_WEBHOOK_PORT, OLMPACK_RELEASE, OLMPACK_IMAGE, OLMPACK_DEPLOYMENT,
    /// OLMPACK_NAMESPACE, and TMPDIR with the certificate in k8s-webhook-server/serving-certs
    /// (docs/upgrade-test.md "The webhook command"). Where olmpack may (as root) it runs in a network of
    /// its own, so OLMPACK_WEBHOOK_PORT is controller-runtime's 9443 and a kubebuilder
    /// manager needs no webhook flag; give it `--health-probe-bind-address 0
    /// --metrics-bind-address 0` all the same, as other ports must be free where it shares the
    /// network.
    #[arg(long)]
    webhook_command: Option<String>,
    /// The Kubernetes minor whose control plane runs the edges: `kubernetes` (the default
    /// minor olmpack pins) or `kubernetes-1.N` (another minor tools.toml pins: its own
    /// kube-apiserver, built by `cargo xtask setup`). The report names it.
    #[arg(
        long,
        value_name = "PLATFORM",
        default_value = "kubernetes",
        conflicts_with = "kubeconfig"
    )]
    platform: Platform,
    /// Copies of every example object.
    #[arg(long, default_value_t = 1)]
    copies: usize,
    /// Edges run at once, each on a control plane of its own (ignored with --kubeconfig,
    /// where edges share the cluster's CRD names). Each runs its own webhook command: the
    /// operator's other ports must not be fixed ones.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    jobs: u16,
    #[arg(long, value_parser = crate::cli::choice::<OutputFormat>(), default_value = "text")]
    output: OutputFormat,
}

/// The plan's inputs, generated in memory; `Err(exit code)` when the plan is invalid (its
/// findings printed, as `generate` prints them).
fn inputs_of_plan(
    path: &std::path::Path,
    policy: &olmpack_oci::input::Policy,
) -> Result<Result<test::Inputs, ExitCode>, olmpack::refusal::CommandError> {
    let loaded = olmpack::plan::load(path, policy)?;
    match test::from_plan(&loaded, policy) {
        Ok(inputs) => Ok(Ok(inputs)),
        Err(LiveInputsError::Release(BuildError::Bundles(GenerateError::Invalid(findings))))
        | Err(LiveInputsError::Generate(GenerateError::Invalid(findings))) => {
            Ok(Err(crate::cli::report_invalid(&loaded.path, findings)))
        }
        Err(other) => Err(other.into()),
    }
}

/// The Kubernetes minor `--platform` names; `Err` for OpenShift, whose kinds and service-ca
/// only `upgrade olm` serves (bad arguments, exit 2).
fn kubernetes_minor(platform: Platform) -> Result<KubeMinor, crate::cli::Failure> {
    match platform {
        Platform::Kubernetes { minor } => Ok(minor),
        Platform::OpenShift { .. } => Err(crate::cli::Failure(format!(
            "--platform: `upgrade test` runs on Kubernetes (kubernetes, kubernetes-1.N); {platform} is for `upgrade olm`"
        ))),
    }
}

/// Runs `olmpack upgrade test`.
pub fn run(args: TestArgs, policy: &olmpack_oci::input::Policy) -> CmdResult {
    let inputs = match (&args.catalog, &args.bundles) {
        (Some(catalog), Some(bundles)) => {
            super::refuse_same_dir(catalog, bundles)?;
            test::from_dirs(catalog, bundles, &policy.limits)?
        }
        _ => match inputs_of_plan(&args.plan, policy)? {
            Ok(inputs) => inputs,
            Err(code) => return Ok(code),
        },
    };
    let target = match &args.kubeconfig {
        Some(path) => Target::Kubeconfig(path.clone()),
        None => {
            let minor = kubernetes_minor(args.platform)?;
            crate::cli::tools::ensure(&[Tool::Etcd, Tool::KubeApiserver], minor)?;
            minor
                .tool_path(Tool::KubeApiserver)
                .map_err(|e| crate::cli::Failure(e.to_string()))?;
            Target::TestEnv(minor)
        }
    };
    let options = EdgeOptions {
        copies: args.copies.max(1),
        ..EdgeOptions::default()
    };
    let runtime = tokio::runtime::Runtime::new()?;
    let reports = runtime.block_on(test::run(
        &inputs,
        &target,
        args.webhook_command.as_deref(),
        &options,
        usize::from(args.jobs),
    ))?;
    print!("{}", test::format(&reports, args.output));
    Ok(ExitCode::from(test::exit_code(&reports)))
}
