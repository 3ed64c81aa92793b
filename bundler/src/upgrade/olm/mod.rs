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
//!   blame, as an error finding of its own rule family ([`blamed`]): OLM (quoted;
//!   refused by OLM v0 or v1), or the examples (the apiserver's or webhook's words; refused by
//!   kube-apiserver).
//! - While a step waits, what OLM is doing is told to [`RunOptions::steps`] whenever it
//!   changes (the Subscription, the InstallPlan's phase and steps, the CSV's phase, reason and
//!   message, the pods refused; see [`olmpack_envtest::olm::progress`]), and what is awaited
//!   after 20 s without news, so a run is never silent for long; an InstallPlan step of a
//!   kind the cluster does not serve names the `--cluster-crd` that would serve it.
//! - Calls to the test apiserver that fail in transport (or with a 5xx) are retried within a
//!   bound and listed ([`CaseReport::retried`]). When the test environment fails all the
//!   same, the case is reported as not finished ([`CaseReport::environment`]), with what it
//!   found until then: every case gets a report.
#![warn(missing_docs)]

mod cases;
pub mod platform;
mod report;
pub mod shard;
pub mod v1;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use olmpack_envtest::olm::progress;
use olmpack_envtest::olm::transient::error_chain;
use olmpack_envtest::olm::{
    Event, Example, InstallStep, Observer, Outcome, StillSucceeded, Timeouts, WebhookCommand,
};
use olmpack_envtest::{olm::OlmEnv, olm::OlmEnvOptions};
use olmpack_model::upgrade::Verdict;

pub use cases::{
    Case, OlmVersion, load_cases, load_cases_for, load_cases_of, plan_cases, preferred_mode,
};
pub use report::{CaseReport, EXAMPLE_RULES, OLM_RULES, blamed, describe, junit, markdown};

use crate::catalog::load::{LoadOptions, load_dir_with};
use platform::Platform;

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
    /// The cluster the operator is installed on (`--platform`): on OpenShift the control
    /// plane plays its service-ca and a single-node OpenShift's node, and reports say what
    /// OpenShift's OLM does about the installed bundles' `olm.maxOpenShiftVersion`
    /// ([`Platform::upgrade_gate`]). Its API kinds are given in `cluster_crds`.
    pub platform: Platform,
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
            platform: Platform::Kubernetes,
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

    /// Who is told what OLM does during step `step` (`install`, `upgrade`) of `case`: each
    /// piece of news becomes a step line, with the seconds since the step began.
    fn observer(&self, case: &Case, started: Instant, step: &'static str) -> Observer {
        let (log, case) = (self.clone(), case.clone());
        Observer::new(move |progress| {
            let into = progress.elapsed.as_secs_f64();
            let news = progress_line(&progress.event);
            let what = format_args!("{step}, {into:.0} s into the step: {news}");
            log.step(&case, started, what);
        })
    }

    /// `fut`'s output, with a step line saying `what` is awaited whenever
    /// [`progress::HEARTBEAT`] passes without it.
    async fn awaiting<T>(
        &self,
        case: &Case,
        started: Instant,
        what: &str,
        fut: impl std::future::Future<Output = T>,
    ) -> T {
        let since = Instant::now();
        let mut fut = std::pin::pin!(fut);
        loop {
            tokio::select! {
                out = &mut fut => return out,
                () = tokio::time::sleep(progress::HEARTBEAT) => {
                    let waited = since.elapsed().as_secs_f64();
                    let line = format_args!("still waiting for {what} ({waited:.0} s)");
                    self.step(case, started, line);
                }
            }
        }
    }
}

/// A piece of news about a step in one line; a kind the cluster does not serve names the
/// `--cluster-crd` that gives it one.
fn progress_line(event: &Event) -> String {
    match event {
        Event::Changed(state) => state.clone(),
        Event::Unchanged(line) => line.clone(),
        Event::NotServed {
            plan,
            group,
            version,
            kind,
            name,
        } => {
            let known = crate::cluster_crds::WELL_KNOWN
                .iter()
                .find(|w| w.group == group && w.kind == kind);
            let flag = match known {
                Some(w) => format!("--cluster-crd {} ({}'s)", w.name, w.owner),
                None => format!("--cluster-crd FILE with the CRD of {kind}"),
            };
            format!(
                "InstallPlan {plan} creates {kind} {name}, but the cluster does not serve \
                 {kind} {group}/{version}: OLM retries the InstallPlan until its retry \
                 timeout, then fails it; give the cluster the CRD with {flag}"
            )
        }
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
    report.crash_loops.extend(env.webhooks().take_crash_loops());
    report.retried = env.retried();
    report.platform_gates = platform_gates(&report, options.platform);
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

/// What `platform`'s OLM does about each bundle the case installed (see
/// [`Platform::upgrade_gate`]).
fn platform_gates(report: &CaseReport, platform: Platform) -> Vec<String> {
    let steps = std::iter::once(&report.install).chain(report.upgrade.as_ref());
    steps
        .filter_map(|step| match &step.outcome {
            Outcome::Succeeded { csv } => {
                let values = report.case.max_openshift_versions.get(csv)?;
                platform.upgrade_gate(csv, values)
            }
            _ => None,
        })
        .collect()
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
    let serving = env.serve_catalog("olmpack", served.path());
    let catalog = progress
        .awaiting(&case, started, "OLM to connect to the catalog", serving)
        .await?;
    env.subscribe(&catalog, &case.package, &case.channels[0], &case.from)
        .await?;
    let observer = progress.observer(&case, started, "install");
    report.install = env
        .next_step_observed(&case.package, options.timeouts, &observer)
        .await?;
    report.install_seconds = catalog.started.elapsed().as_secs_f64();
    let what = describe(&report.install.outcome);
    progress.step(&case, started, format_args!("install: {what}"));
    if let Outcome::Succeeded { csv } = report.install.outcome.clone() {
        report.installed = env.installed().await?;
        let creating = examples(env, &csv, options);
        let made = progress
            .awaiting(&case, started, "the examples to be created", creating)
            .await?;
        let made = examples_line(report.examples.insert(made));
        progress.step(&case, started, format_args!("examples: {made}"));
        let last = match case.expected.is_some() {
            true => upgrade(env, report, options, started).await?,
            false => Some(csv),
        };
        if let Some(csv) = last {
            let what = format!("ClusterServiceVersion {csv} to stay Succeeded");
            let holding = env.left_succeeded(&csv, options.timeouts.step);
            match progress.awaiting(&case, started, &what, holding).await? {
                StillSucceeded::Yes => {}
                StillSucceeded::Recovered(seen) => {
                    let step = report.upgrade.as_mut().unwrap_or(&mut report.install);
                    step.observed.push(seen);
                }
                StillSucceeded::Left(status) => report.left_succeeded = Some(status),
            }
        }
    }
    report.crash_loops = env.webhooks().take_crash_loops();
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
        service_ca: options.platform.service_ca(),
        node_roles: options.platform.node_roles(),
    };
    if let Some(mut env) = options.envs.as_ref().and_then(|pool| pool.take(&wanted)) {
        let what = "the OLM environment to be reset";
        let reset = env.reset(case.install_mode);
        match options.steps.awaiting(case, started, what, reset).await {
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
    let what = "the control plane and OLM to start";
    let starting = OlmEnv::start_with(wanted);
    let env = options
        .steps
        .awaiting(case, started, what, starting)
        .await?;
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
    let observer = options.steps.observer(&report.case, started, "upgrade");
    let step = env
        .next_step_observed(&report.case.package, options.timeouts, &observer)
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
    if let (Some(Ok(examples)), Some(csv)) = (&report.examples, &done)
        && !examples.is_empty()
    {
        let (case, log) = (&report.case, &options.steps);
        let serving = webhooks_served(env, csv, options, true);
        let what = "the conversion webhook the examples need";
        match log.awaiting(case, started, what, serving).await? {
            Ok(()) => {
                let reading = env.read_examples(examples);
                let what = "the examples to be read back";
                report.examples_after = log.awaiting(case, started, what, reading).await;
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
        Ok(list) if list.is_empty() => "none (alm-examples is empty)".to_owned(),
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
        (_, Some(f), _) => format!("FAIL ({}: {})", blamed(f), f.message),
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
    if env.example_count(csv).await? == 0 {
        return Ok(Ok(Vec::new())); // nothing to create: no webhook is needed
    }
    Ok(match webhooks_served(env, csv, options, false).await? {
        Ok(()) => Ok(env.create_examples(csv).await?),
        Err(why) => Err(why),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crash loop fails the case, blamed on the pod, whatever OLM said of its steps.
    #[test]
    fn a_crash_loop_fails_the_case() {
        let case = Case {
            package: "op".into(),
            channels: vec!["stable".into()],
            from: "op.v1".into(),
            expected: None,
            install_mode: olmpack_model::plan::InstallModeType::AllNamespaces,
            max_openshift_versions: Default::default(),
            olm: Default::default(),
        };
        let mut report = CaseReport::new(case);
        report.install.outcome = Outcome::Succeeded {
            csv: "op.v1".into(),
        };
        assert_eq!(report.verdict(), Verdict::Passed);
        let words = "Deployment op: container manager of op exited (exit status: 1) — the pod would crash-loop";
        report.crash_loops = vec![words.to_owned()];
        assert_eq!(report.verdict(), Verdict::Failed);
        let failures = report.failures();
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].rule, report::CRASH_LOOP_RULE);
        assert_eq!(
            failures[0].consumer,
            Some(olmpack_model::report::Consumer::PodCannotStart)
        );
        assert_eq!(verdict(&report), format!("FAIL (pod: {words})"));
    }

    #[test]
    fn platform_gates_judge_only_the_bundles_installed() {
        use olmpack_envtest::olm::InstallStep;
        let case = Case {
            package: "op".into(),
            channels: vec!["stable".into()],
            from: "op.v1".into(),
            expected: Some(("op.v2".into(), Vec::new())),
            install_mode: olmpack_model::plan::InstallModeType::AllNamespaces,
            max_openshift_versions: [
                ("op.v1".to_owned(), vec![serde_json::json!("4.8")]),
                ("op.v2".to_owned(), vec![serde_json::json!("4.8")]),
            ]
            .into(),
            olm: Default::default(),
        };
        let succeeded = |csv: &str| InstallStep {
            csv: Some(csv.into()),
            outcome: Outcome::Succeeded { csv: csv.into() },
            ..InstallStep::unfinished()
        };
        let mut report = CaseReport::new(case);
        report.install = succeeded("op.v1");
        let on = Platform::OpenShift { minor: 9 };
        let line = |csv: &str| {
            format!(
                "OLM on OpenShift 4.9 blocks upgrades of the cluster to 4.10 while {csv} is installed: its olm.maxOpenShiftVersion is 4.8"
            )
        };
        assert_eq!(platform_gates(&report, on), [line("op.v1")]);
        report.upgrade = Some(succeeded("op.v2"));
        assert_eq!(platform_gates(&report, on), [line("op.v1"), line("op.v2")]);
        assert!(platform_gates(&report, Platform::Kubernetes).is_empty());
        assert!(platform_gates(&report, Platform::OpenShift { minor: 7 }).is_empty());
        report.install = InstallStep::unfinished();
        report.upgrade = None;
        assert!(platform_gates(&report, on).is_empty());
    }

    #[test]
    fn a_kind_not_served_names_the_cluster_crd_that_serves_it() {
        let not_served = |group: &str, kind: &str| Event::NotServed {
            plan: "install-abc".into(),
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            name: "op-metrics".into(),
        };
        let cases = [
            (
                not_served("monitoring.coreos.com", "ServiceMonitor"),
                "InstallPlan install-abc creates ServiceMonitor op-metrics, but the cluster does not serve ServiceMonitor monitoring.coreos.com/v1: OLM retries the InstallPlan until its retry timeout, then fails it; give the cluster the CRD with --cluster-crd servicemonitors.monitoring.coreos.com (prometheus-operator's)",
            ),
            (
                not_served("example.com", "Widget"),
                "InstallPlan install-abc creates Widget op-metrics, but the cluster does not serve Widget example.com/v1: OLM retries the InstallPlan until its retry timeout, then fails it; give the cluster the CRD with --cluster-crd FILE with the CRD of Widget",
            ),
            (
                Event::Changed("InstallPlan install-abc: Installing".into()),
                "InstallPlan install-abc: Installing",
            ),
        ];
        for (event, want) in cases {
            assert_eq!(progress_line(&event), want);
        }
    }

    #[test]
    fn examples_never_attempted_or_none_are_not_counted_as_created() {
        let example = |refused: Option<&str>| Example {
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
            name: "a-v1".into(),
            declared: "a".into(),
            refused: refused.map(str::to_owned),
        };
        let cases = [
            (Ok(vec![]), "none (alm-examples is empty)"),
            (
                Err("no webhook command was given".into()),
                "not run: no webhook command was given",
            ),
            (
                Ok(vec![example(None), example(Some("denied"))]),
                "1/2 created",
            ),
        ];
        for (examples, want) in cases {
            assert_eq!(examples_line(&examples), want);
        }
    }
}
