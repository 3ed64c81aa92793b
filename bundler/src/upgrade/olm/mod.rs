//! `olmpack upgrade olm`: the real OLM v0 installs every release of a catalog by Subscription
//! and upgrades along the edges it would take, and reports what OLM said.
//!
//! Contract:
//! - The cases come from the catalog alone ([`plan_cases`]): per package and per channel, one
//!   case per entry: install it (Subscription with `startingCSV`, manual approval) and, when
//!   OLM v0 has a successor for it ([`crate::catalog::upgrade::v0_successor`]), approve the
//!   next InstallPlan and expect exactly that successor. Channels whose entries are identical
//!   share their cases (OLM resolves them identically); the report names every channel.
//! - The OperatorGroup follows the starting bundle's supported install modes (AllNamespaces,
//!   else OwnNamespace, else SingleNamespace, else MultiNamespace), or each mode asked for.
//! - A step is done when OLM has finished it: the InstallPlan `Complete`, the CSV `Succeeded`
//!   and the CRDs it converts with a webhook set so, held for a settle period; what OLM did on
//!   the way (a CSV leaving `Succeeded`, a CRD's conversion reset) is reported with the step,
//!   and a CSV that leaves `Succeeded` after its step fails the case as OLM's doing.
//! - OLM is served the catalog with every bundle's image cleared ([`inline_catalog`]), so
//!   that it installs the `olm.bundle.object` manifests inline instead of unpacking bundle
//!   images with a Job (no kubelet, no registry here).
//! - Each case runs in an [`olmpack_envtest::olm::OlmEnv`] of its own: a fresh one, or, with
//!   an [`EnvPool`], one an earlier case used, reset so that the cluster holds again the
//!   APIServices, webhook configurations, CRDs and namespaces it held when it came up, with
//!   the operator namespace and OperatorGroup made afresh ([`OlmEnv::reset`]; when that
//!   fails, a fresh one). Cases never see each other's objects; up to `jobs` run at once.
//! - Between install and upgrade, every `alm-examples` object of the installed CSV is created
//!   as a user of that install would (`kubectl create -n` a namespace the operator serves);
//!   after the upgrade each must still be readable. When webhooks cannot be served (no
//!   `--webhook-command`, no usable address) and the bundle declares webhooks, the example
//!   checks are "not run" with the reason — never passed; reading back needs only the
//!   conversion webhook, so admission webhooks alone never stop it.
//! - Examples are read back at the apiVersion they were written at, or at a served version
//!   of their kind when that one is no longer served
//!   ([`olmpack_envtest::olm::read_back_resource`]).
//! - A case passes when every step OLM took ended `Succeeded`, OLM picked the predicted
//!   successor, and every example was created and read back. Each failure names who is to
//!   blame ([`Party`]): OLM (quoted), or the examples (the apiserver's or webhook's words).
//! - Calls to the test apiserver that fail in transport (or with a 5xx) are retried within a
//!   bound and listed ([`CaseReport::retried`]). When the test environment fails all the
//!   same, the case is reported as not finished ([`CaseReport::environment`]), with what it
//!   found until then: every case gets a report.
#![warn(missing_docs)]

mod cases;
mod report;
pub mod shard;
pub mod v1;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use olmpack_envtest::olm::transient::error_chain;
use olmpack_envtest::olm::{
    Example, InstallStep, Outcome, StillSucceeded, Timeouts, WebhookCommand,
};
use olmpack_envtest::{olm::OlmEnv, olm::OlmEnvOptions};
use olmpack_model::upgrade::Verdict;

pub use cases::{
    Case, OlmVersion, load_cases, load_cases_for, load_cases_of, plan_cases, preferred_mode,
};
pub use report::{CaseReport, Failure, Party, describe, junit, markdown};

use crate::catalog::load::{LoadOptions, load_dir_with};

/// Failure to run the cases (not a verdict about the operator).
#[derive(Debug, thiserror::Error)]
pub enum OlmRunError {
    /// The catalog directory cannot be loaded.
    #[error("failed to read the catalog {dir}")]
    Load {
        /// The catalog directory.
        dir: PathBuf,
        /// The loader's error.
        #[source]
        source: crate::catalog::load::LoadError,
    },
    /// The catalog fails validation, so running OLM on it would say nothing useful.
    #[error("the catalog {dir} is invalid ({first}); run `olmpack catalog validate` on it")]
    Invalid {
        /// The catalog directory.
        dir: PathBuf,
        /// The first error finding.
        first: String,
    },
    /// The catalog has no package of the requested name.
    #[error("the catalog {dir} has no package {package}")]
    NoPackage {
        /// The catalog directory.
        dir: PathBuf,
        /// The package asked for.
        package: String,
    },
    /// Starting or driving the test control plane with OLM failed.
    #[error("the OLM test environment failed")]
    Env(#[from] olmpack_envtest::olm::OlmError),
    /// A bundle carries no manifests in the catalog, so the test cluster (which has no kubelet) cannot unpack it.
    #[error(
        "bundle {bundle} has no olm.bundle.object properties: OLM would unpack its image with a Job, which needs a kubelet; render the catalog with `olmpack generate` or `opm render` (without --migrate-level)"
    )]
    NoObjects {
        /// The bundle name.
        bundle: String,
    },
    /// Writing the catalog that `opm serve` gives to OLM failed.
    #[error("failed to write the catalog served to OLM to {path}")]
    Write {
        /// The file being written.
        path: PathBuf,
        /// The I/O error from the file system.
        #[source]
        source: std::io::Error,
    },
    /// Printing the catalog that `opm serve` gives to OLM failed.
    #[error("failed to serialise the catalog served to OLM")]
    Serialize(#[from] crate::catalog::serialize::SerializeError),
    /// Starting or driving OLM v1 (or the registry it pulls from) failed.
    #[error("the OLM v1 test environment failed")]
    OlmV1(#[source] Box<olmpack_envtest::olmv1::OlmV1Error>),
    /// A bundle of the catalog cannot be served to OLM v1 as it is.
    #[error("bundle {bundle}: {problem}")]
    Bundle {
        /// The bundle name.
        bundle: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Building an image OLM v1 pulls failed.
    #[error("failed to build {what} served to OLM v1")]
    BuildImage {
        /// Which image.
        what: String,
        /// The image builder's error.
        #[source]
        source: Box<crate::image::build::BuildError>,
    },
    /// Pushing an image OLM v1 pulls to the local registry failed.
    #[error("failed to push {target} for OLM v1")]
    PushImage {
        /// Where it was pushed.
        target: String,
        /// The registry client's error.
        #[source]
        source: Box<crate::image::push::PushError>,
    },
}

impl From<olmpack_envtest::olmv1::OlmV1Error> for OlmRunError {
    fn from(err: olmpack_envtest::olmv1::OlmV1Error) -> Self {
        OlmRunError::OlmV1(Box::new(err))
    }
}

/// The catalog of `dir` as it is served to OLM, in a temp directory: each bundle's `image`
/// cleared. OLM v0 installs a bundle's `olm.bundle.object` manifests inline only when the
/// bundle names no image; with an image it unpacks that image with a Job, which needs a
/// kubelet and a registry. The manifests are the same either way for a catalog made from
/// its bundles by `opm render` or by `olmpack generate`.
pub fn inline_catalog(
    dir: &Path,
    limits: &crate::input::Limits,
) -> Result<tempfile::TempDir, OlmRunError> {
    let options = LoadOptions {
        limits: *limits,
        ..LoadOptions::default()
    };
    let loaded = load_dir_with(dir, options).map_err(|source| OlmRunError::Load {
        dir: dir.to_owned(),
        source,
    })?;
    let mut config = loaded.config;
    for bundle in &mut config.bundles {
        if !bundle
            .properties
            .iter()
            .any(|p| p.type_ == "olm.bundle.object")
        {
            return Err(OlmRunError::NoObjects {
                bundle: bundle.name.clone(),
            });
        }
        bundle.image.clear();
    }
    let text =
        crate::catalog::serialize::to_string(&config, crate::catalog::serialize::Format::Json)?;
    let out = tempfile::Builder::new()
        .prefix("olmpack-olm-catalog-")
        .tempdir()
        .map_err(|source| OlmRunError::Write {
            path: std::env::temp_dir(),
            source,
        })?;
    let path = out.path().join("catalog.json");
    std::fs::write(&path, text).map_err(|source| OlmRunError::Write { path, source })?;
    Ok(out)
}

/// How to run the cases.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Command run for the operator's webhook Deployments, when the bundle has webhooks; none skips them.
    pub webhook_command: Option<WebhookCommand>,
    /// How long each wait for OLM may take.
    pub timeouts: Timeouts,
    /// Cases run at once (each has its own control plane and OLM).
    pub jobs: usize,
    /// Environments kept between cases and reset for the next one; `None` starts a fresh
    /// one for every case.
    pub envs: Option<EnvPool>,
    /// CRDs the cluster has before OLM installs anything, as another operator installed
    /// them (e.g. prometheus-operator's, for a bundle that ships a ServiceMonitor: OLM
    /// cannot create an object whose kind the cluster does not serve).
    pub cluster_crds: Vec<CustomResourceDefinition>,
    /// Plays OpenShift's service-ca on the control plane (`--platform openshift`; see
    /// [`olmpack_envtest::service_ca`]).
    pub service_ca: bool,
    /// Told each step of each case as it happens (the CLI prints them on stderr).
    pub steps: StepLog,
    /// How much of the catalog is read at most (the command line's `--max-*` flags).
    pub limits: crate::input::Limits,
    /// The OLM that runs the cases ([`v1`] for OLM v1).
    pub olm: OlmVersion,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            webhook_command: None,
            timeouts: Timeouts::default(),
            jobs: 1,
            envs: None,
            cluster_crds: Vec::new(),
            service_ca: false,
            steps: StepLog::silent(),
            limits: crate::input::Limits::default(),
            olm: OlmVersion::V0,
        }
    }
}

/// OLM environments between cases: a case takes one (reset for it) or starts its own, and
/// gives it back when done. Clones share the pool; the environments stop when the last
/// clone goes.
#[derive(Clone, Default)]
pub struct EnvPool(Arc<std::sync::Mutex<Vec<OlmEnv>>>);

impl EnvPool {
    /// An idle environment started with `options` (but for the install mode), if any.
    fn take(&self, options: &OlmEnvOptions) -> Option<OlmEnv> {
        let mut idle = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let at = idle
            .iter()
            .position(|e| e.options().same_but_mode(options))?;
        Some(idle.swap_remove(at))
    }

    fn give(&self, env: OlmEnv) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(env);
    }

    /// How many environments are idle in the pool.
    pub fn idle(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl std::fmt::Debug for EnvPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EnvPool({} idle)", self.idle())
    }
}

/// Where progress lines go: one line per step of a case, prefixed with the case.
#[derive(Clone)]
pub struct StepLog(Arc<dyn Fn(&str) + Send + Sync>);

impl StepLog {
    /// Each step line passed to `f`.
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// No progress lines.
    pub fn silent() -> Self {
        Self::new(|_| {})
    }

    /// A line about the run as a whole (not one case's step).
    fn line(&self, text: &str) {
        (self.0)(text);
    }

    fn step(&self, case: &Case, started: Instant, what: std::fmt::Arguments<'_>) {
        let label = match &case.expected {
            Some((to, _)) => format!("{} {} → {to}", case.package, case.from),
            None => format!("{} {}", case.package, case.from),
        };
        (self.0)(&format!(
            "[{label}, {}] {:>5.1} s  {what}",
            case.install_mode,
            started.elapsed().as_secs_f64()
        ));
    }
}

impl std::fmt::Debug for StepLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StepLog")
    }
}

/// Runs every case (up to `options.jobs` at once; under OLM v1 one after another, see
/// [`v1`]); reports in case order.
pub async fn run(
    catalog: &Path,
    cases: &[Case],
    options: &RunOptions,
) -> Result<Vec<CaseReport>, OlmRunError> {
    if options.olm == OlmVersion::V1 {
        return v1::run(catalog, cases, options).await;
    }
    let semaphore = std::sync::Arc::new(tokio::sync::Semaphore::new(options.jobs.max(1)));
    let mut tasks = Vec::new();
    for case in cases.iter().cloned() {
        let semaphore = semaphore.clone();
        let catalog = catalog.to_owned();
        let options = options.clone();
        tasks.push(tokio::spawn(async move {
            let _permit = semaphore.acquire_owned().await;
            run_case(&catalog, case, &options).await
        }));
    }
    let mut reports = Vec::new();
    for task in tasks {
        match task.await {
            Ok(report) => reports.push(report?),
            Err(join) => std::panic::resume_unwind(join.into_panic()),
        }
    }
    Ok(reports)
}

/// One case in an OLM environment of its own (from [`RunOptions::envs`], reset, or fresh);
/// the environment goes back to the pool when the case is done. When the test environment
/// fails (it does not start, or its apiserver cannot be reached even after retries), the
/// report keeps what the case found until then and says so ([`CaseReport::environment`]):
/// a report is written for every case.
pub async fn run_case(
    catalog_dir: &Path,
    case: Case,
    options: &RunOptions,
) -> Result<CaseReport, OlmRunError> {
    let started = Instant::now();
    let mut report = CaseReport::new(case);
    let env = match env_for(&report.case, options, started).await {
        Ok(env) => env,
        Err(err) => return environment_failed(report, err, options, started),
    };
    let ran = run_in(&env, catalog_dir, &mut report, options, started).await;
    report.retried = env.retried();
    report.seconds = started.elapsed().as_secs_f64();
    match ran {
        Ok(()) => {
            if let Some(pool) = &options.envs {
                pool.give(env);
            }
            Ok(report)
        }
        Err(err) => environment_failed(report, err, options, started),
    }
}

/// `report` of a case whose test environment failed with `err` (an `Err` for any other
/// failure): the step under way is unfinished, and the report says why in olmpack's words.
fn environment_failed(
    mut report: CaseReport,
    err: OlmRunError,
    options: &RunOptions,
    started: Instant,
) -> Result<CaseReport, OlmRunError> {
    let OlmRunError::Env(env) = &err else {
        return Err(err);
    };
    // One line (it goes into table cells): a process's last output may span several.
    let why = format!("{err}: {}", error_chain(env));
    let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
    let unfinished = Outcome::Unfinished { why: why.clone() };
    let steps = std::iter::once(&mut report.install).chain(report.upgrade.as_mut());
    for step in steps.filter(|s| matches!(s.outcome, Outcome::Unfinished { .. })) {
        step.outcome = unfinished.clone();
    }
    report.environment = Some(why);
    report.seconds = started.elapsed().as_secs_f64();
    let what = format_args!("done: {}", verdict(&report));
    options.steps.step(&report.case, started, what);
    Ok(report)
}

/// The case's steps in `env`, recorded in `report` as they end.
async fn run_in(
    env: &OlmEnv,
    catalog_dir: &Path,
    report: &mut CaseReport,
    options: &RunOptions,
    started: Instant,
) -> Result<(), OlmRunError> {
    let progress = &options.steps;
    let case = report.case.clone();
    let served = inline_catalog(catalog_dir, &options.limits)?;
    let catalog = env.serve_catalog("olmpack", served.path()).await?;
    env.subscribe(&catalog, &case.package, &case.channels[0], &case.from)
        .await?;
    report.install = env.next_step(&case.package, options.timeouts).await?;
    report.install_seconds = catalog.started.elapsed().as_secs_f64();
    let what = describe(&report.install.outcome);
    progress.step(&case, started, format_args!("install: {what}"));
    if let Outcome::Succeeded { csv } = report.install.outcome.clone() {
        report.installed = env.installed().await?;
        report.examples = examples(env, &csv, options).await?;
        let made = examples_line(&report.examples);
        progress.step(&case, started, format_args!("examples: {made}"));
        let last = match case.expected.is_some() {
            true => upgrade(env, report, options, started).await?,
            false => Some(csv),
        };
        if let Some(csv) = last {
            match env.left_succeeded(&csv, options.timeouts.step).await? {
                StillSucceeded::Yes => {}
                StillSucceeded::Recovered(seen) => {
                    let step = report.upgrade.as_mut().unwrap_or(&mut report.install);
                    step.observed.push(seen);
                }
                StillSucceeded::Left(status) => report.left_succeeded = Some(status),
            }
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    let what = format_args!("done: {}", verdict(report));
    progress.step(&case, started, what);
    Ok(())
}

/// The environment of `case`: an idle one of the pool, reset for it, or else a fresh one.
async fn env_for(
    case: &Case,
    options: &RunOptions,
    started: Instant,
) -> Result<OlmEnv, OlmRunError> {
    let wanted = OlmEnvOptions {
        webhook_command: options.webhook_command.clone(),
        install_mode: case.install_mode,
        install_plan_retry: options.timeouts.install_plan_retry,
        cluster_crds: options.cluster_crds.clone(),
        service_ca: options.service_ca,
    };
    if let Some(mut env) = options.envs.as_ref().and_then(|pool| pool.take(&wanted)) {
        match env.reset(case.install_mode).await {
            Ok(()) => {
                let what = format_args!("OLM environment reused (reset {})", env.resets());
                options.steps.step(case, started, what);
                return Ok(env);
            }
            Err(err) => {
                let why = error_chain(&err);
                let what = format_args!("OLM environment not reused ({why}); starting another");
                options.steps.step(case, started, what);
            }
        }
    }
    let env = OlmEnv::start_with(wanted).await?;
    options
        .steps
        .step(case, started, format_args!("OLM environment up"));
    Ok(env)
}

/// Approves the upgrade and reads the examples back; the CSV that ended `Succeeded`, if any.
async fn upgrade(
    env: &OlmEnv,
    report: &mut CaseReport,
    options: &RunOptions,
    started: Instant,
) -> Result<Option<String>, OlmRunError> {
    // Unfinished until OLM's verdict is in (see [`environment_failed`]).
    report.upgrade = Some(InstallStep::unfinished());
    let step = env
        .next_step(&report.case.package, options.timeouts)
        .await?;
    let what = describe(&step.outcome);
    options
        .steps
        .step(&report.case, started, format_args!("upgrade: {what}"));
    let done = match &step.outcome {
        Outcome::Succeeded { csv } => Some(csv.clone()),
        _ => None,
    };
    report.upgrade = Some(step);
    if let (Ok(examples), Some(csv)) = (&report.examples, &done) {
        match webhooks_served(env, csv, options, true).await? {
            Ok(()) => {
                report.examples_after = env.read_examples(examples).await;
                let line = read_back_line(&report.examples_after);
                options.steps.step(
                    &report.case,
                    started,
                    format_args!("examples after: {line}"),
                );
            }
            Err(why) => report.reads_not_run = Some(why),
        }
    }
    if done.is_some() {
        report.installed = env.installed().await?;
    }
    Ok(done)
}

/// `N/M read back`: the examples created before the upgrade that the apiserver served after it.
fn read_back_line(reads: &[Result<(), String>]) -> String {
    let read = reads.iter().filter(|r| r.is_ok()).count();
    format!("{read}/{} read back", reads.len())
}

fn examples_line(examples: &Result<Vec<Example>, String>) -> String {
    match examples {
        Err(why) => format!("not run: {why}"),
        Ok(list) => {
            let created = list.iter().filter(|e| e.refused.is_none()).count();
            format!("{created}/{} created", list.len())
        }
    }
}

fn verdict(report: &CaseReport) -> String {
    let failures = report.failures();
    let not_run = report.not_run();
    match (report.verdict(), failures.first(), not_run.first()) {
        (_, Some(f), _) => format!("FAIL ({}: {})", f.party.label(), f.message),
        (Verdict::NotRun, None, _) => {
            format!("not finished ({})", report.error().unwrap_or_default())
        }
        (_, None, Some(why)) => format!("pass, checks not run ({why})"),
        (_, None, None) => "pass".to_owned(),
    }
}

/// Whether the webhooks the examples need from `csv` are served: `Ok(Err(why))` when the
/// checks that need them cannot run (no webhook command or address) or no process came up.
/// Creating examples needs every webhook `csv` declares; reading them back needs only a
/// conversion webhook (`conversion_only`), so admission webhooks alone never stop reads.
async fn webhooks_served(
    env: &OlmEnv,
    csv: &str,
    options: &RunOptions,
    conversion_only: bool,
) -> Result<Result<(), String>, OlmRunError> {
    if !env.has_webhooks(csv, conversion_only).await? {
        return Ok(Ok(()));
    }
    Ok(env.wait_for_webhooks(csv, options.timeouts.step).await)
}

/// Creates the examples of `csv` once its webhooks are served (see [`CaseReport::examples`]).
async fn examples(
    env: &OlmEnv,
    csv: &str,
    options: &RunOptions,
) -> Result<Result<Vec<Example>, String>, OlmRunError> {
    Ok(match webhooks_served(env, csv, options, false).await? {
        Ok(()) => Ok(env.create_examples(csv).await?),
        Err(why) => Err(why),
    })
}
