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
    /// minor olmpack pins), `kubernetes-1.N` (another minor tools.toml pins: its own
    /// kube-apiserver, built by `cargo xtask setup`), or `openshift`/`openshift-4.N` (the
    /// Kubernetes minor that OpenShift release ships, when pinned: 4.14 on 1.27, 4.22 on
    /// 1.35). The report names it.
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

/// Where `--platform` runs the edges: its Kubernetes minor, and the OpenShift release when it
/// names one. A CRD's upgrade is the apiserver's alone, so OpenShift 4.N is the Kubernetes
/// minor it ships; `Err` (bad arguments, exit 2) when olmpack does not pin that minor.
fn test_env(platform: Platform) -> Result<Target, crate::cli::Failure> {
    match platform {
        Platform::Kubernetes { minor } => Ok(Target::TestEnv {
            kubernetes: minor,
            openshift: None,
        }),
        Platform::OpenShift { minor } if platform.ships_its_own_kubernetes() => {
            Ok(Target::TestEnv {
                kubernetes: platform.kubernetes_minor(),
                openshift: Some(minor),
            })
        }
        Platform::OpenShift { minor } => {
            let mut pinned = KubeMinor::pinned();
            pinned.sort();
            let pinned: Vec<String> = pinned
                .iter()
                .map(|m| match m.openshift() {
                    Some(os) => format!("kubernetes-{m} (OpenShift {os})"),
                    None => format!("kubernetes-{m}"),
                })
                .collect();
            Err(crate::cli::Failure(format!(
                "--platform openshift-4.{minor}: `upgrade test` runs on the Kubernetes minor an OpenShift release ships, and olmpack does not pin OpenShift 4.{minor}'s{}; pinned: {}",
                olmpack::upgrade::olm::platform::shipped_kubernetes(minor),
                pinned.join(", ")
            )))
        }
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
            let target = test_env(args.platform)?;
            let minor = args.platform.kubernetes_minor();
            crate::cli::tools::ensure(&[Tool::Etcd, Tool::KubeApiserver], minor)?;
            minor
                .tool_path(Tool::KubeApiserver)
                .map_err(|e| crate::cli::Failure(e.to_string()))?;
            target
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
