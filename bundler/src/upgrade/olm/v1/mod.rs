//! `olmpack upgrade olm --olm v1`: the real OLM v1 (catalogd and operator-controller) installs
//! each case's starting release by ClusterExtension, pinned to its version, and upgrades
//! along the edge OLM v1 takes by pinning the next version (upgrade constraint policy
//! `CatalogProvided`); the verdicts quote OLM v1's conditions.
//!
//! Contract:
//! - The cases are [`super::load_cases_of`]'s for OLM v1: per entry, OLM v1's successor among
//!   the entries of its channels ([`crate::catalog::upgrade::v1_successor`]).
//! - Served as OLM v1 needs it ([`serve`]): a bundle image per bundle, built from its
//!   `olm.bundle.object` manifests, and the catalog naming them by digest, in a registry on
//!   127.0.0.1; one ClusterCatalog serves that catalog.
//! - One [`OlmV1Env`] for all cases, one case after another: each installs into the same
//!   namespace under a ClusterExtension of its own (`olmpack-case-N`), and ends by deleting it
//!   and everything OLM v1 made for it, CRDs included ([`OlmV1Env::uninstall`]), so the next
//!   case starts from a cluster without the operator.
//! - A step ends as [`olmpack_envtest::olmv1::StepEnd`] says: installed (`Outcome::Succeeded`
//!   naming the bundle), refused (`Outcome::Refused` quoting `Progressing`'s reason and
//!   message, e.g. the CRD upgrade safety preflight's words), or timed out (quoting the last
//!   conditions). OLM v1's other conditions are kept in the step's `observed` lines.
//! - Examples: as under OLM v0 on kwok nodes, the `alm-examples` objects are created against
//!   the CRDs after the install and read back after the upgrade. No kubelet runs the
//!   operator's pods; with a webhook command ([`RunOptions::webhook_command`]) the
//!   environment starts it in place of each Deployment serving webhooks, with the
//!   certificate OLM v1's provider (service-ca) issued, exactly as under OLM v0, and the
//!   examples wait until it serves the Deployment's current generation. Without one, a
//!   bundle that declares webhooks gets its example checks "not run", saying so.
//! - Install modes: AllNamespaces as OLM v1 installs by default; OwnNamespace and
//!   SingleNamespace through operator-controller's `SingleOwnNamespaceInstallSupport` gate
//!   (alpha, turned on), with the ClusterExtension's `watchNamespace` the install namespace or
//!   [`WATCHED`] — the install step's first observed line says so. MultiNamespace is not an
//!   OLM v1 install mode: such a case is not run, and its report says so
//!   ([`CaseReport::environment`]); when no case can run, nothing is started.

pub mod serve;

use std::time::Instant;

use olmpack_envtest::olm::{InstallStep, Observer, Outcome, resources, webhooks};
use olmpack_envtest::olmv1::{
    Condition, ExtensionSpec, LocalRegistry, OlmV1Env, StepEnd, UpgradePolicy,
};
use olmpack_model::plan::InstallModeType;
use serde_json::Value;

use super::{Case, CaseReport, OlmRunError, RunOptions, describe, verdict};
use serve::{Served, ServedBundle};

/// The ClusterCatalog serving the catalog under test.
const CATALOG: &str = "olmpack";
/// The name of each case's ClusterExtension: this, `-` and the case's number in the run (one
/// name per case, so that nothing OLM v1 kept of one release is found by the next).
const EXTENSION: &str = "olmpack-case";
/// The namespace every case installs into.
const NAMESPACE: &str = "olmpack-operator";
/// The ServiceAccount every ClusterExtension names (operator-controller v1.11 ignores it).
const SERVICE_ACCOUNT: &str = "olmpack-installer";
/// The namespace a SingleNamespace case's operator watches.
const WATCHED: &str = "olmpack-watched";

/// Runs every case under OLM v1, one after another in one environment; reports in case
/// order. Failing to serve the images or to start OLM v1 is an error; a case the
/// environment fails in is reported as not finished.
pub async fn run(
    catalog: &std::path::Path,
    cases: &[Case],
    options: &RunOptions,
) -> Result<Vec<CaseReport>, OlmRunError> {
    if cases.iter().all(|c| watched(c.install_mode).is_err()) {
        // Nothing OLM v1 runs here: no environment to start.
        let not_run = cases.iter().cloned().map(|c| not_supported(c, options));
        return Ok(not_run.collect());
    }
    // The registry client needs one, whoever calls (the binary installs it too).
    crate::install_crypto_provider();
    let registry = LocalRegistry::start().await?;
    let started = Instant::now();
    let served = serve::serve(catalog, &registry, &options.limits).await?;
    let images = started.elapsed().as_secs_f64();
    options.steps.line(&format!(
        "OLM v1: {} bundle image(s) and the catalog image pushed to {} in {images:.1} s",
        served.bundles.len(),
        registry.host()
    ));
    let started = Instant::now();
    let mut env = OlmV1Env::start(&[registry.host()]).await?;
    for crd in &options.cluster_crds {
        env.install_cluster_crd(crd).await?;
    }
    env.serve_catalog(CATALOG, &served.catalog, options.timeouts.step)
        .await?;
    let up = started.elapsed().as_secs_f64();
    options.steps.line(&format!(
        "OLM v1: environment up and ClusterCatalog {CATALOG} serving in {up:.1} s"
    ));
    let mut reports = Vec::new();
    for (number, case) in (1..).zip(cases) {
        let extension = format!("{EXTENSION}-{number}");
        reports.push(run_case(&mut env, &served, case.clone(), &extension, options).await);
    }
    Ok(reports)
}

/// One case in `env` by ClusterExtension `extension`, then its release uninstalled; every
/// case gets a report.
async fn run_case(
    env: &mut OlmV1Env,
    served: &Served,
    case: Case,
    extension: &str,
    options: &RunOptions,
) -> CaseReport {
    if watched(case.install_mode).is_err() {
        return not_supported(case, options);
    }
    let started = Instant::now();
    let mut report = CaseReport::new(case);
    let ran = steps(env, served, &mut report, extension, options, started).await;
    report.crash_loops = env
        .webhooks()
        .map(|host| host.take_crash_loops())
        .unwrap_or_default();
    let cleaned = uninstall(env, extension, options).await;
    report.seconds = started.elapsed().as_secs_f64();
    match ran.and(cleaned) {
        Ok(()) => {
            let what = format_args!("done: {}", verdict(&report));
            options.steps.step(&report.case, started, what);
            report
        }
        Err(err) => {
            let why = olmpack_envtest::olm::transient::error_chain(&err);
            not_finished(report, why, options, started)
        }
    }
}

/// The namespace the operator of a case in `mode` watches (`None`: all), or why OLM v1 has
/// no such install mode.
fn watched(mode: InstallModeType) -> Result<Option<&'static str>, String> {
    match mode {
        InstallModeType::AllNamespaces => Ok(None),
        InstallModeType::OwnNamespace => Ok(Some(NAMESPACE)),
        InstallModeType::SingleNamespace => Ok(Some(WATCHED)),
        InstallModeType::MultiNamespace => Err(
            "not run: OLM v1 has no MultiNamespace install mode (a ClusterExtension watches all namespaces, or one: OwnNamespace and SingleNamespace)".to_owned(),
        ),
    }
}

/// The report of a case in an install mode OLM v1 does not have: not run.
fn not_supported(case: Case, options: &RunOptions) -> CaseReport {
    let why = watched(case.install_mode).err().unwrap_or_default();
    not_finished(CaseReport::new(case), why, options, Instant::now())
}

/// `report` of a case that could not be finished (or run), for `why`: the step under way
/// is unfinished, and [`CaseReport::environment`] says why.
fn not_finished(
    mut report: CaseReport,
    why: String,
    options: &RunOptions,
    started: Instant,
) -> CaseReport {
    let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
    let steps = std::iter::once(&mut report.install).chain(report.upgrade.as_mut());
    for step in steps.filter(|s| matches!(s.outcome, Outcome::Unfinished { .. })) {
        step.outcome = Outcome::Unfinished { why: why.clone() };
    }
    report.environment = Some(why);
    report.seconds = started.elapsed().as_secs_f64();
    let what = format_args!("done: {}", verdict(&report));
    options.steps.step(&report.case, started, what);
    report
}

/// The install of `from` by ClusterExtension `extension`, its examples, and the upgrade to
/// OLM v1's successor, if any.
async fn steps(
    env: &mut OlmV1Env,
    served: &Served,
    report: &mut CaseReport,
    extension: &str,
    options: &RunOptions,
    started: Instant,
) -> Result<(), OlmRunError> {
    let case = report.case.clone();
    let spec = prepare(env, &case, extension, options).await?;
    let from = bundle(served, &case.from)?;
    let observer = options.steps.observer(&case, started, "install");
    report.install = step(env, &spec, &case.from, from, options, &observer).await?;
    if let Some(namespace) = &spec.watch_namespace {
        report.install.observed.insert(0, format!(
            "OLM v1: {} through operator-controller's SingleOwnNamespaceInstallSupport feature gate (alpha): watchNamespace {namespace}",
            case.install_mode
        ));
    }
    report.install_seconds = report.install.elapsed.as_secs_f64();
    let what = describe(&report.install.outcome);
    options
        .steps
        .step(&case, started, format_args!("install: {what}"));
    if !matches!(report.install.outcome, Outcome::Succeeded { .. }) {
        return Ok(());
    }
    report.installed = env.installed(NAMESPACE).await?;
    let objects = alm_examples(from)?;
    let examples = if objects.is_empty() {
        Ok(Vec::new()) // nothing to create: no webhook is needed
    } else if let Err(why) = webhooks_served(env, from, false, options).await {
        Err(why)
    } else {
        Ok(env.create_examples(objects, NAMESPACE).await)
    };
    let made = super::examples_line(&examples);
    report.examples = Some(examples);
    options
        .steps
        .step(&case, started, format_args!("examples: {made}"));
    let Some((to, _)) = &case.expected else {
        return Ok(());
    };
    report.upgrade = Some(InstallStep::unfinished());
    let next = bundle(served, to)?;
    let observer = options.steps.observer(&case, started, "upgrade");
    let upgraded = step(env, &spec, to, next, options, &observer).await?;
    let what = describe(&upgraded.outcome);
    options
        .steps
        .step(&case, started, format_args!("upgrade: {what}"));
    let done = matches!(upgraded.outcome, Outcome::Succeeded { .. });
    report.upgrade = Some(upgraded);
    if done {
        read_back(env, next, report, options, started).await;
        report.installed = env.installed(NAMESPACE).await?;
    }
    Ok(())
}

/// The ClusterExtension of `case`, with the namespaces it needs made and the operator's
/// webhook processes hosted in the install namespace (when a command was given).
async fn prepare(
    env: &mut OlmV1Env,
    case: &Case,
    extension: &str,
    options: &RunOptions,
) -> Result<ExtensionSpec, OlmRunError> {
    let watch_namespace = watched(case.install_mode).unwrap_or_default();
    if let Some(namespace) = watch_namespace {
        env.ensure_namespace(namespace).await?;
    }
    env.prepare_namespace(NAMESPACE, SERVICE_ACCOUNT).await?;
    env.host_webhooks(NAMESPACE, options.webhook_command.clone())?;
    Ok(ExtensionSpec {
        name: extension.to_owned(),
        package: case.package.clone(),
        channels: case.channels.clone(),
        namespace: NAMESPACE.to_owned(),
        service_account: SERVICE_ACCOUNT.to_owned(),
        catalog: CATALOG.to_owned(),
        policy: UpgradePolicy::CatalogProvided,
        watch_namespace: watch_namespace.map(str::to_owned),
    })
}

/// Reads the examples back after the upgrade to `next` (not run when `next` converts them
/// with a webhook no process serves).
async fn read_back(
    env: &OlmV1Env,
    next: &ServedBundle,
    report: &mut CaseReport,
    options: &RunOptions,
    started: Instant,
) {
    let Some(Ok(examples)) = &report.examples else {
        return;
    };
    if let Err(why) = webhooks_served(env, next, true, options).await {
        report.reads_not_run = Some(why);
        return;
    }
    report.examples_after = env.read_examples(examples, NAMESPACE).await;
    let line = super::read_back_line(&report.examples_after);
    options.steps.step(
        &report.case,
        started,
        format_args!("examples after: {line}"),
    );
}

/// OLM v1's step to `name` (at `bundle`'s version), as the report's [`InstallStep`];
/// `observer` hears what OLM v1 says on the way.
async fn step(
    env: &mut OlmV1Env,
    spec: &ExtensionSpec,
    name: &str,
    bundle: &ServedBundle,
    options: &RunOptions,
    observer: &Observer,
) -> Result<InstallStep, OlmRunError> {
    let started = Instant::now();
    let timeout = options.timeouts.step;
    if let Some(host) = env.webhooks() {
        // The release the operator's process is started as from now on.
        host.set_release(name);
    }
    let end = env
        .install_version_observed(spec, &bundle.version, timeout, observer)
        .await?;
    let by = format!("ClusterExtension {}", spec.name);
    let (csv, outcome, conditions) = match end {
        StepEnd::Installed { bundle, conditions } => {
            let outcome = Outcome::Succeeded {
                csv: bundle.clone(),
            };
            (Some(bundle), outcome, conditions)
        }
        StepEnd::Refused {
            progressing,
            conditions,
        } => {
            let outcome = Outcome::Refused {
                by,
                reason: format!(
                    "Progressing={} ({})",
                    progressing.status, progressing.reason
                ),
                message: progressing.message,
            };
            (Some(name.to_owned()), outcome, conditions)
        }
        StepEnd::TimedOut { conditions } => {
            let outcome = timed_out(&by, name, &bundle.version, &conditions);
            (None, outcome, conditions)
        }
    };
    let installed = conditions.iter().filter(|c| c.type_ == "Installed");
    let mut observed: Vec<String> = installed.map(|c| format!("OLM v1: {c}")).collect();
    observed.extend(env.take_notes());
    Ok(InstallStep {
        csv,
        outcome,
        observed,
        elapsed: started.elapsed(),
    })
}

/// A step OLM v1 did not finish in time: what was awaited, and what OLM v1 last said of it
/// (its conditions about the step's spec), or that it had not answered it.
pub(super) fn timed_out(by: &str, name: &str, version: &str, said: &[Condition]) -> Outcome {
    let message = if said.is_empty() {
        "OLM v1 had not answered the step (no condition about its current spec)".to_owned()
    } else {
        let said: Vec<String> = said.iter().map(ToString::to_string).collect();
        format!("OLM v1 last said: {}", said.join("; "))
    };
    Outcome::TimedOut {
        waiting_for: format!(
            "{by} to install {name} (version {version}): Installed=True, Progressing=True (Succeeded)"
        ),
        phase: String::new(),
        reason: String::new(),
        message,
        pods: Vec::new(),
    }
}

/// Deletes the case's ClusterExtension and the CRDs left (module docs), then stops the
/// operator's webhook processes.
async fn uninstall(
    env: &mut OlmV1Env,
    extension: &str,
    options: &RunOptions,
) -> Result<(), OlmRunError> {
    let crds = env.operator_crds().await?;
    let uninstalled = env.uninstall(extension, &crds, options.timeouts.step).await;
    env.stop_webhooks();
    uninstalled.map_err(OlmRunError::from)
}

fn bundle<'a>(served: &'a Served, name: &str) -> Result<&'a ServedBundle, OlmRunError> {
    served.bundles.get(name).ok_or_else(|| OlmRunError::Bundle {
        bundle: name.to_owned(),
        problem: "is a channel entry but no olm.bundle of the catalog".to_owned(),
    })
}

/// The CSV among the bundle's manifests.
fn csv(bundle: &ServedBundle) -> Option<&Value> {
    bundle
        .objects
        .iter()
        .find(|o| o["kind"] == "ClusterServiceVersion")
}

/// Whether the webhooks of `bundle` the examples need are served (`conversion_only`: only a
/// conversion webhook is needed, as for reading back): `Err(why)` when the checks cannot
/// run — no webhook command, or no process came up for a Deployment serving them.
async fn webhooks_served(
    env: &OlmV1Env,
    bundle: &ServedBundle,
    conversion_only: bool,
    options: &RunOptions,
) -> Result<(), String> {
    let Some(spec) = csv(bundle).map(|csv| resources::csv_spec(&csv["spec"])) else {
        return Ok(());
    };
    let declared = webhooks::declared_webhooks(&spec, conversion_only);
    if declared.is_empty() {
        return Ok(());
    }
    let deployments = webhooks::webhook_deployments(&spec);
    env.wait_for_webhooks(NAMESPACE, &deployments, options.timeouts.step)
        .await
        .map_err(|why| {
            format!(
                "the bundle declares webhooks ({}) and they are not served: {why}",
                declared.join(", ")
            )
        })
}

/// The objects of the bundle CSV's `alm-examples` annotation (none when it has none).
fn alm_examples(bundle: &ServedBundle) -> Result<Vec<Value>, OlmRunError> {
    let Some(csv) = csv(bundle) else {
        return Ok(Vec::new());
    };
    let name = csv["metadata"]["name"].as_str().unwrap_or_default();
    let text = csv["metadata"]["annotations"]["alm-examples"]
        .as_str()
        .unwrap_or("[]");
    serde_json::from_str(text).map_err(|e| OlmRunError::Bundle {
        bundle: name.to_owned(),
        problem: format!("metadata.annotations.alm-examples: {e}"),
    })
}
