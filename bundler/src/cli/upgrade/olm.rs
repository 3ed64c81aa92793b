//! `olmpack upgrade olm`: let the real OLM (v0, or v1 with `--olm v1`) install and upgrade
//! the catalog's releases.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use olmpack::build::{self, BuildError};
use olmpack::bundle::generate::GenerateError;
use olmpack::upgrade::olm::CaseReport;
use olmpack::upgrade::olm::shard::{self, Shard};
use olmpack::upgrade::olm::{self, OlmVersion, RunOptions, StepLog};
use olmpack_envtest::olm::{Timeouts, WebhookCommand};
use olmpack_model::openshift;
use olmpack_model::plan::InstallModeType;

use crate::cli::CmdResult;

/// Arguments of `olmpack upgrade olm`.
#[derive(Debug, clap::Args)]
pub struct OlmArgs {
    /// Release plan whose catalog is tested (generated in memory; nothing is written).
    #[arg(long, conflicts_with = "catalog")]
    pub plan: Option<PathBuf>,
    /// File-Based Catalog directory to test (its bundles need `olm.bundle.object`
    /// properties, as `olmpack generate` and `opm render` write them).
    #[arg(long)]
    pub catalog: Option<PathBuf>,
    /// Only this package of the catalog.
    #[arg(long)]
    pub package: Option<String>,
    /// Which OLM installs and upgrades: `v0` (olm-operator and catalog-operator: a
    /// Subscription per case, InstallPlans approved one by one) or `v1` (catalogd and
    /// operator-controller at the version olmpack pins: per case a ClusterExtension pinned to
    /// the starting version, then to OLM v1's successor, upgrade constraint policy
    /// CatalogProvided). With v1, olmpack builds a bundle image of each bundle's
    /// `olm.bundle.object` manifests and the catalog image naming them by digest, serves them
    /// from a registry on 127.0.0.1, and runs the cases one after another in one OLM v1;
    /// verdicts quote OLM v1's Installed and Progressing conditions (the CRD upgrade safety
    /// preflight's words when it refuses). OwnNamespace and SingleNamespace cases run through
    /// operator-controller's SingleOwnNamespaceInstallSupport gate (alpha; the ClusterExtension's
    /// watchNamespace), MultiNamespace cases are not run (OLM v1 has no such mode), and
    /// --platform openshift is v0 only. --webhook-command and --cluster-crd work with both:
    /// under v1 the operator's serving certificate comes from OLM v1's certificate provider
    /// (OpenShift's service-ca, which olmpack plays).
    #[arg(long, value_name = "VERSION", default_value = "v0", value_parser = crate::cli::choice::<OlmVersion>())]
    pub olm: OlmVersion,
    /// Install under an OperatorGroup of this mode (repeatable: a case per mode and entry).
    /// Default: per case, the first mode the starting bundle supports of AllNamespaces,
    /// OwnNamespace, SingleNamespace (one other namespace), MultiNamespace (two).
    #[arg(long = "install-mode", value_name = "MODE", value_parser = crate::cli::choice::<InstallModeType>())]
    pub install_modes: Vec<InstallModeType>,
    /// Print nothing while the cases run (by default each step is printed on stderr as it
    /// happens, with the seconds since its case started).
    #[arg(long, short)]
    pub quiet: bool,
    /// Shell command (or snippet) run by `sh -c` as the process of every Deployment OLM
    /// wires webhooks to: the same contract as `upgrade test`'s (docs/upgrade-test.md, "The webhook
    /// command"). It gets OLM's serving certificate in $OLMPACK_WEBHOOK_CERT_FILE and
    /// $OLMPACK_WEBHOOK_KEY_FILE (also as tls.crt/tls.key in $OLMPACK_WEBHOOK_CERT_DIR and
    /// in $TMPDIR/k8s-webhook-server/serving-certs, where controller-runtime looks), must
    /// serve HTTPS on $OLMPACK_WEBHOOK_PORT (9443, controller-runtime's default, in a network
    /// of its own where olmpack may make one, so no flag is needed), and gets $KUBECONFIG (acting as the
    /// Deployment's ServiceAccount), $OLMPACK_RELEASE (the CSV), $OLMPACK_IMAGE,
    /// $OLMPACK_DEPLOYMENT, $OLMPACK_NAMESPACE, $POD_NAMESPACE and $POD_NAME. Without it,
    /// checks that need webhooks are reported as not run.
    #[arg(long)]
    pub webhook_command: Option<String>,
    /// Seconds OLM may take for each install or upgrade step.
    #[arg(long, default_value_t = 180)]
    pub timeout: u64,
    /// Seconds OLM retries a failing InstallPlan step before it fails the plan (its
    /// catalog-operator's --install-plan-retry-timeout; OLM's default is 60). The refusal
    /// reads the same sooner: every API is there from the start here, so a shorter time only
    /// shortens cases that fail (a kind the apiserver does not serve, existing objects
    /// invalid under a new CRD). At least 1: with none, OLM would fail a step on its first
    /// error, even one that heals a moment later.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = parse_retry_seconds)]
    pub install_plan_retry: u64,
    /// Seconds a step may stand still with pods the kubelet or the scheduler refuses (a
    /// Secret or ConfigMap nobody creates, a node selector no node matches), or with a
    /// requirement OLM reports not met that nothing here meets (a CRD the apiserver has not
    /// established, the CSV's minKubeVersion), before it ends as stuck, instead of waiting
    /// out --timeout. Nothing on the test control plane can unblock either: pods' containers
    /// never run, the nodes never change, and nobody else edits the CRDs. At least 1.
    #[arg(long, value_name = "SECONDS", default_value_t = 20, value_parser = parse_stuck_seconds)]
    pub stuck_after: u64,
    /// Cases run at once (each runs its own control plane and OLM).
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Start a fresh control plane and OLM for every case. By default a case reuses the
    /// environment of one that ended, once olmpack has removed what that one left (CRDs,
    /// webhook configurations, APIServices, namespaces, OLM's objects) and checked the
    /// cluster is back to how it came up; when it cannot, the case starts a fresh one.
    #[arg(long)]
    pub fresh_env_per_case: bool,
    /// A CRD the cluster has before OLM installs anything, as another operator would have
    /// installed it (repeatable): a CRD file, or the name of a well-known one olmpack carries
    /// (e.g. servicemonitors.monitoring.coreos.com for a bundle that ships a ServiceMonitor,
    /// as kubebuilder's projects do), which OLM can create only where that kind is served.
    #[arg(long = "cluster-crd", value_name = "FILE|NAME")]
    pub cluster_crds: Vec<PathBuf>,
    /// The cluster the operator is installed on: `kubernetes` (`kubernetes-1.N`: another
    /// Kubernetes minor olmpack pins, whose own control plane then runs), `openshift` (the
    /// OpenShift release olmpack pins) or `openshift-4.N` (an older one; on the Kubernetes
    /// minor that release ships when olmpack pins it, else on the default one, as the report
    /// says): the control plane then also
    /// serves OpenShift's own API kinds (Route, ConsolePlugin, ConsoleLink, ConsoleYAMLSample,
    /// SecurityContextConstraints, the config.openshift.io kinds, …; those of the pinned
    /// release) and prometheus-operator's ServiceMonitor, PodMonitor and PrometheusRule, so a
    /// CSV whose nativeAPIs name them installs as it does on OpenShift; service-ca makes
    /// serving-certificate Secrets for annotated Services and injects its CA where annotated;
    /// the node is a single-node OpenShift's (a master); and a bundle whose
    /// olm.maxOpenShiftVersion is below the next release is reported as blocking cluster
    /// upgrades (warning[platform]), as is, with --plan, a com.redhat.openshift.versions
    /// bundle label that leaves the release's catalog without the plan's bundles.
    /// docs/upgrade-olm.md says what is not emulated.
    #[arg(long, value_name = "PLATFORM", default_value = "kubernetes")]
    pub platform: olmpack::upgrade::olm::platform::Platform,
    /// Also write the results as JUnit XML to this file.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Run only shard I of N, e.g. `2/3`: the cases at positions I, I+N, I+2N… of the
    /// catalog's case order (the same on every machine), so N CI jobs run every case exactly
    /// once. The JUnit report says which shard it is; `olmpack upgrade merge-shards` puts the
    /// N reports back together and fails if one is missing.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Print the cases that would run (of this shard, with --shard), one per line, and exit
    /// without running them (no tools needed).
    #[arg(long)]
    pub list: bool,
    /// Also write the results as a Markdown table to this file.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
}

/// Runs `olmpack upgrade olm`.
pub fn run(args: OlmArgs, policy: &olmpack_oci::input::Policy) -> CmdResult {
    // Bad arguments are refused before anything is read, `--list` or not.
    refuse_v0_only_flags(&args)?;
    refuse_olm_v1_below_its_kubernetes(&args)?;
    let limits = policy.limits;
    let generated;
    let catalog: PathBuf = match (&args.plan, &args.catalog) {
        (_, Some(dir)) => dir.clone(),
        (plan_path, None) => {
            let plan_path = plan_path
                .clone()
                .unwrap_or_else(|| PathBuf::from("olmpack.yaml"));
            match catalog_of_plan(&plan_path, policy)? {
                Ok(generated_catalog) => {
                    warn_catalog_gap(&args, &plan_path, &generated_catalog.bundle_labels);
                    generated = generated_catalog.dir;
                    generated.path().join("catalog")
                }
                Err(code) => return Ok(code),
            }
        }
    };
    let all = olm::load_cases_of(
        args.olm,
        &catalog,
        args.package.as_deref(),
        &args.install_modes,
        &limits,
    )?;
    let total = all.len();
    let cases = match args.shard {
        Some(shard) => shard.select(all),
        None => all,
    };
    if args.list {
        for case in &cases {
            println!("{}\t{}", case.package, case.name());
        }
        return Ok(ExitCode::SUCCESS);
    }
    // What was asked is checked before the tools: a wrong name needs no control plane.
    let mut cluster_crds = args.platform.cluster_crds(&limits)?;
    cluster_crds.extend(cluster_crds_of(&args.cluster_crds, &limits)?);
    if args.olm == OlmVersion::V0 {
        let minor = args.platform.kubernetes_minor();
        crate::cli::tools::ensure(&olmpack::tools::ARTIFACT_TOOLS, minor)?;
    }
    let options = run_options(&args, cluster_crds, limits);
    if !args.quiet {
        announce(&args, cases.len(), total);
    }
    let runtime = tokio::runtime::Runtime::new()?;
    // The pool's environments stop inside the runtime that started them.
    let reports = runtime.block_on(async move { olm::run(&catalog, &cases, &options).await })?;
    write_reports(&args, &reports)
}

/// How the cases run, as the flags say.
fn run_options(
    args: &OlmArgs,
    cluster_crds: Vec<CustomResourceDefinition>,
    limits: olmpack_oci::input::Limits,
) -> RunOptions {
    RunOptions {
        webhook_command: args.webhook_command.as_deref().map(WebhookCommand::shell),
        timeouts: Timeouts {
            step: Duration::from_secs(args.timeout),
            install_plan_retry: Duration::from_secs(args.install_plan_retry),
            stuck: Duration::from_secs(args.stuck_after),
            ..Timeouts::default()
        },
        jobs: args.jobs,
        envs: (!args.fresh_env_per_case).then(olm::EnvPool::default),
        cluster_crds,
        platform: args.platform,
        steps: if args.quiet {
            StepLog::silent()
        } else {
            StepLog::new(|line| eprintln!("{line}"))
        },
        limits,
        olm: args.olm,
    }
}

/// The line that says what runs: `count` cases (of `total` when sharded), how many at once,
/// under which OLM.
fn announce(args: &OlmArgs, count: usize, total: usize) {
    let of_shard = args
        .shard
        .map(|shard| format!(" (shard {shard}: of {total})"))
        .unwrap_or_default();
    let at_once = match args.olm {
        OlmVersion::V0 => args.jobs.max(1),
        OlmVersion::V1 => 1,
    };
    eprintln!(
        "olmpack upgrade olm: {count} case(s){of_shard}, {at_once} at once, OLM {}, on {}",
        args.olm,
        args.platform.control_plane()
    );
}

/// The oldest Kubernetes minor OLM v1 (operator-controller v1.11) installs on: its CRDs'
/// validation rules call CEL's format library (`format.dns1123Label()`), which kube-apiserver
/// accepts in a new CRD from 1.32 on (testkit/tests/kubernetes_minors.rs shows 1.27 refusing
/// it and 1.35 taking it).
const OLM_V1_MIN_KUBERNETES: u64 = 32;

/// `Err` when `--olm v1` runs on a Kubernetes minor OLM v1 cannot be installed on (bad
/// arguments, exit 2).
fn refuse_olm_v1_below_its_kubernetes(args: &OlmArgs) -> Result<(), crate::cli::Failure> {
    let minor = args.platform.kubernetes_minor();
    if args.olm == OlmVersion::V0 || minor.minor() >= OLM_V1_MIN_KUBERNETES {
        return Ok(());
    }
    Err(crate::cli::Failure(format!(
        "--olm v1 on Kubernetes {minor}: OLM v1's CRDs call CEL's format library, which kube-apiserver accepts from Kubernetes 1.{OLM_V1_MIN_KUBERNETES} on (1.{} refuses them: \"undeclared reference to 'format'\"); choose a --platform of 1.{OLM_V1_MIN_KUBERNETES} or later",
        minor.minor()
    )))
}

/// `Err` naming the flag when `--olm v1` is given with a flag only OLM v0 runs with: bad
/// arguments (exit 2).
fn refuse_v0_only_flags(args: &OlmArgs) -> Result<(), crate::cli::Failure> {
    if args.olm == OlmVersion::V0 {
        return Ok(());
    }
    let given = [(
        "--platform openshift",
        matches!(
            args.platform,
            olmpack::upgrade::olm::platform::Platform::OpenShift { .. }
        ),
    )];
    match given.into_iter().find(|(_, set)| *set) {
        Some((flag, _)) => Err(crate::cli::Failure(format!(
            "{flag} is for OLM v0 only; `upgrade olm --olm v1` does not take it"
        ))),
        None => Ok(()),
    }
}

/// The CRDs of `--cluster-crd`: each a file, or the name of a CRD olmpack knows.
fn cluster_crds_of(
    paths: &[PathBuf],
    limits: &olmpack_oci::input::Limits,
) -> Result<Vec<CustomResourceDefinition>, olmpack::refusal::CommandError> {
    let mut crds = Vec::new();
    for path in paths {
        if !path.exists()
            && let Some(crd) = path.to_str().and_then(olmpack::cluster_crds::by_name)
        {
            crds.push(crd);
            continue;
        }
        if !path.exists() {
            return Err(missing_cluster_crd(path));
        }
        crds.push(olmpack::upgrade::check::read_crd_file(path, limits)?);
    }
    Ok(crds)
}

/// A `--cluster-crd` that is neither a file nor a known name: a missing file when it reads as
/// a path (a `/`, or a YAML or JSON file name), else an unknown name. Either is a bad
/// argument (exit 2), refused before any environment starts.
fn missing_cluster_crd(path: &Path) -> olmpack::refusal::CommandError {
    let arg = path.display().to_string();
    let file_like = arg.contains('/')
        || [".yaml", ".yml", ".json"]
            .iter()
            .any(|ext| arg.ends_with(ext));
    match file_like {
        true => crate::cli::Failure(format!("--cluster-crd {arg}: does not exist")).into(),
        false => crate::cli::Failure(olmpack::cluster_crds::unknown(&arg)).into(),
    }
}

/// `--platform openshift-4.N` with `--plan`: a warning when the plan's
/// `com.redhat.openshift.versions` bundle label leaves 4.N's catalog without its bundles (a
/// catalog directory carries no bundle labels, so `--catalog` cannot be judged so).
fn warn_catalog_gap(args: &OlmArgs, plan_path: &Path, labels: &BTreeMap<String, String>) {
    let (Some(release), Some(value)) = (
        args.platform.as_openshift(),
        labels.get(openshift::VERSIONS_ANNOTATION),
    ) else {
        return;
    };
    if let Some(gap) = openshift::catalog_gap(value, release) {
        eprintln!(
            "warning[platform]: {}: bundleLabels.{}: {gap}",
            plan_path.display(),
            openshift::VERSIONS_ANNOTATION
        );
    }
}

/// A plan's catalog, generated into a temp directory, and the plan's bundle labels.
struct GeneratedCatalog {
    dir: tempfile::TempDir,
    bundle_labels: BTreeMap<String, String>,
}

/// The plan's catalog; `Err(exit code)` when the plan is invalid (findings printed).
fn catalog_of_plan(
    plan_path: &Path,
    policy: &olmpack_oci::input::Policy,
) -> Result<Result<GeneratedCatalog, ExitCode>, olmpack::refusal::CommandError> {
    let loaded = olmpack::plan::load(plan_path, policy)?;
    let output = match build::build(&loaded, &crate::cli::generate_options(None, policy)?) {
        Ok(output) => output,
        Err(BuildError::Bundles(GenerateError::Invalid(findings))) => {
            return Ok(Err(crate::cli::report_invalid(&loaded.path, findings)));
        }
        Err(other) => return Err(other.into()),
    };
    let dir = tempfile::Builder::new()
        .prefix("olmpack-olm-catalog-")
        .tempdir()?;
    // In a subdirectory: write_to swaps a whole directory into place.
    output.catalog.files.write_to(&dir.path().join("catalog"))?;
    Ok(Ok(GeneratedCatalog {
        dir,
        bundle_labels: loaded.plan.bundle_labels.clone(),
    }))
}

fn write_reports(args: &OlmArgs, reports: &[CaseReport]) -> CmdResult {
    let table = olm::markdown(reports);
    print!("{table}");
    if let Some(path) = &args.markdown {
        std::fs::write(path, &table)
            .map_err(|e| crate::cli::Failure(format!("failed to write {}: {e}", path.display())))?;
    }
    if let Some(path) = &args.junit {
        std::fs::write(path, olm::junit(reports, args.shard))
            .map_err(|e| crate::cli::Failure(format!("failed to write {}: {e}", path.display())))?;
    }
    for line in olm::text::lines(reports) {
        eprintln!("{line}");
    }
    println!("{}", olm::text::summary(reports));
    Ok(ExitCode::from(olm::text::exit_code(reports)))
}

/// Arguments of `olmpack upgrade merge-shards`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The JUnit reports of the shards (`upgrade olm --shard I/N --junit FILE`), in any
    /// order; reports of unsharded runs (any JUnit) are merged as given.
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// Where to write the merged report (replaced whole, or left as it was on failure).
    #[arg(long, short)]
    pub output: PathBuf,
}

/// Runs `olmpack upgrade merge-shards`.
pub fn merge(args: MergeArgs, limits: &olmpack_oci::input::Limits) -> CmdResult {
    let mut reports = Vec::new();
    for path in &args.reports {
        reports.push((
            path.display().to_string(),
            olmpack_oci::input::text(path, limits)?,
        ));
    }
    let merged = shard::merge(&reports)
        .map_err(|e| crate::cli::Invalid(format!("nothing was written: {e}")))?;
    crate::cli::write_file_atomically(&args.output, merged.xml.as_bytes())?;
    let shards = merged
        .shards
        .map(|n| format!(" (all {n} shard(s))"))
        .unwrap_or_default();
    println!(
        "merged {} report(s){shards} into {}: {} case(s), {} failed, {} in error, {} skipped",
        args.reports.len(),
        args.output.display(),
        merged.tests,
        merged.failures,
        merged.errors,
        merged.skipped
    );
    Ok(if merged.failures + merged.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `--install-plan-retry`: a whole number of seconds, at least 1.
fn parse_retry_seconds(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err(
            "0 seconds would make OLM fail a step on its first error; give at least 1".to_owned(),
        ),
        Ok(seconds) => Ok(seconds),
        Err(_) => Err(format!("{text:?} is not a whole number of seconds")),
    }
}

/// `--stuck-after`: a whole number of seconds, at least 1.
fn parse_stuck_seconds(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => {
            Err("0 seconds would end a step at its first refused pod; give at least 1".to_owned())
        }
        Ok(seconds) => Ok(seconds),
        Err(_) => Err(format!("{text:?} is not a whole number of seconds")),
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_retry_seconds, parse_stuck_seconds};

    #[test]
    fn stuck_after_is_at_least_one_whole_second() {
        assert_eq!(parse_stuck_seconds("20"), Ok(20));
        assert_eq!(
            parse_stuck_seconds("0"),
            Err("0 seconds would end a step at its first refused pod; give at least 1".to_owned())
        );
        assert_eq!(
            parse_stuck_seconds("soon"),
            Err("\"soon\" is not a whole number of seconds".to_owned())
        );
    }

    #[test]
    fn install_plan_retry_is_at_least_one_whole_second() {
        let cases = [
            ("20", Ok(20)),
            (
                "0",
                Err("0 seconds would make OLM fail a step on its first error; give at least 1"),
            ),
            ("1.5", Err("\"1.5\" is not a whole number of seconds")),
            ("-3", Err("\"-3\" is not a whole number of seconds")),
        ];
        for (text, want) in cases {
            assert_eq!(
                parse_retry_seconds(text),
                want.map_err(str::to_owned),
                "{text}"
            );
        }
    }
}
