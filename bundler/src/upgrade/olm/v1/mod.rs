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
//! - One [`OlmV1Env`] for all cases, one case after another (a [`Driver`] of one job): each
//!   installs into the same namespace under a ClusterExtension of its own (`olmpack-case-N`),
//!   and ends by deleting it and everything OLM v1 made for it, CRDs included
//!   ([`OlmV1Env::uninstall`]), so the next case starts from a cluster without the operator.
//! - A step ends as [`olmpack_envtest::olm::v1::StepEnd`] says: installed (`Outcome::Succeeded`
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

use std::sync::Arc;
use std::time::Instant;

use olmpack_envtest::olm::v1::{
    Condition, ExtensionSpec, LocalRegistry, OlmV1Env, StepEnd, UpgradePolicy,
};
use olmpack_envtest::olm::{
    Example, InstallStep, Installed, Observer, Outcome, StillSucceeded, webhooks,
};
use olmpack_model::csv::ClusterServiceVersion;
use olmpack_model::plan::InstallModeType;
use serde_json::Value;
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::driver::{Driver, Ended, Session};
use super::log::CaseLog;
use super::{Case, OlmRunError, RunOptions};
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

/// OLM v1 for a run: the registry and images it pulls, and the one environment every case
/// runs in, in turn.
pub(super) struct OlmV1 {
    served: Arc<Served>,
    env: Arc<Mutex<OlmV1Env>>,
    options: RunOptions,
    // Serves the images for as long as the run lasts.
    _registry: LocalRegistry,
}

impl Driver for OlmV1 {
    type Session = V1Session;

    fn cannot_run(case: &Case) -> Option<String> {
        watched(case.install_mode).err()
    }

    async fn up(catalog: &std::path::Path, options: &RunOptions) -> Result<Self, OlmRunError> {
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
        let minor = options.platform.kubernetes_minor();
        let mut env = OlmV1Env::start_on(&[registry.host()], minor).await?;
        for crd in &options.cluster_crds {
            env.install_cluster_crd(crd).await?;
        }
        env.serve_catalog(CATALOG, &served.catalog, options.timeouts.step)
            .await?;
        let up = started.elapsed().as_secs_f64();
        options.steps.line(&format!(
            "OLM v1: environment up and ClusterCatalog {CATALOG} serving in {up:.1} s"
        ));
        Ok(Self {
            served: Arc::new(served),
            env: Arc::new(Mutex::new(env)),
            options: options.clone(),
            _registry: registry,
        })
    }

    fn jobs(&self) -> usize {
        1
    }

    async fn session(
        &self,
        case: &Case,
        number: usize,
        _log: &CaseLog,
    ) -> Result<V1Session, OlmRunError> {
        let mut session = V1Session {
            env: self.env.clone().lock_owned().await,
            served: self.served.clone(),
            options: self.options.clone(),
            spec: extension(case, &format!("{EXTENSION}-{number}")),
        };
        match session.prepare().await {
            Ok(()) => Ok(session),
            Err(err) => {
                // What prepare made goes with the case, as after any other failure.
                session.end(false).await.cleanup?;
                Err(err)
            }
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

/// The ClusterExtension `name` of `case`.
fn extension(case: &Case, name: &str) -> ExtensionSpec {
    ExtensionSpec {
        name: name.to_owned(),
        package: case.package.clone(),
        channels: case.channels.clone(),
        namespace: NAMESPACE.to_owned(),
        service_account: SERVICE_ACCOUNT.to_owned(),
        catalog: CATALOG.to_owned(),
        policy: UpgradePolicy::CatalogProvided,
        watch_namespace: watched(case.install_mode)
            .unwrap_or_default()
            .map(str::to_owned),
    }
}

/// One case's turn in the [`OlmV1Env`], under its own ClusterExtension.
pub(super) struct V1Session {
    env: OwnedMutexGuard<OlmV1Env>,
    served: Arc<Served>,
    options: RunOptions,
    spec: ExtensionSpec,
}

impl Session for V1Session {
    async fn install(
        &mut self,
        case: &Case,
        observer: &Observer,
    ) -> Result<(InstallStep, f64), OlmRunError> {
        let mut step = self.step(&case.from, observer).await?;
        if let Some(namespace) = &self.spec.watch_namespace {
            step.observed.insert(0, format!(
                "OLM v1: {} through operator-controller's SingleOwnNamespaceInstallSupport feature gate (alpha): watchNamespace {namespace}",
                case.install_mode
            ));
        }
        let seconds = step.elapsed.as_secs_f64();
        Ok((step, seconds))
    }

    async fn upgrade(
        &mut self,
        _case: &Case,
        to: &str,
        observer: &Observer,
    ) -> Result<InstallStep, OlmRunError> {
        self.step(to, observer).await
    }

    async fn installed(&self) -> Result<Installed, OlmRunError> {
        Ok(self.env.installed(NAMESPACE).await?)
    }

    async fn example_count(&self, csv: &str) -> Result<usize, OlmRunError> {
        Ok(alm_examples(self.bundle(csv)?)?.len())
    }

    async fn create_examples(&self, csv: &str) -> Result<Vec<Example>, OlmRunError> {
        let objects = alm_examples(self.bundle(csv)?)?;
        Ok(self.env.create_examples(objects, NAMESPACE).await)
    }

    async fn read_examples(&self, examples: &[Example]) -> Vec<Result<(), String>> {
        self.env.read_examples(examples, NAMESPACE).await
    }

    async fn webhooks_served(
        &self,
        csv: &str,
        conversion_only: bool,
    ) -> Result<Result<(), String>, OlmRunError> {
        let bundle = self.bundle(csv)?;
        let Some(spec) = csv_of(bundle).map(|csv| webhooks::csv_spec(&csv["spec"])) else {
            return Ok(Ok(()));
        };
        let declared = webhooks::declared_webhooks(&spec, conversion_only);
        if declared.is_empty() {
            return Ok(Ok(()));
        }
        let deployments = webhooks::webhook_deployments(&spec);
        let timeout = self.options.timeouts.step;
        let waited = self.env.wait_for_webhooks(NAMESPACE, &deployments, timeout);
        Ok(waited.await.map_err(|why| {
            format!(
                "the bundle declares webhooks ({}) and they are not served: {why}",
                declared.join(", ")
            )
        }))
    }

    async fn hold(&self, _csv: &str, _log: &CaseLog) -> Result<StillSucceeded, OlmRunError> {
        // OLM v1 has no phase a release leaves once installed: its conditions were read
        // when the step ended.
        Ok(StillSucceeded::Yes)
    }

    async fn end(mut self, _ran: bool) -> Ended {
        let crash_loops = self.env.webhooks().map(|host| host.take_crash_loops());
        let crash_loops = crash_loops.unwrap_or_default();
        let cleanup = self.uninstall().await;
        Ended {
            crash_loops,
            retried: Vec::new(),
            cleanup,
        }
    }
}

impl V1Session {
    /// The namespaces the case needs, and the operator's processes hosted in the install
    /// namespace (when a command was given).
    async fn prepare(&mut self) -> Result<(), OlmRunError> {
        if let Some(namespace) = &self.spec.watch_namespace {
            self.env.ensure_namespace(namespace).await?;
        }
        self.env
            .prepare_namespace(NAMESPACE, SERVICE_ACCOUNT)
            .await?;
        let command = self.options.webhook_command.clone();
        self.env.host_webhooks(NAMESPACE, command)?;
        Ok(())
    }

    /// The served bundle named `name`.
    fn bundle(&self, name: &str) -> Result<&ServedBundle, OlmRunError> {
        self.served
            .bundles
            .get(name)
            .ok_or_else(|| OlmRunError::Bundle {
                bundle: name.to_owned(),
                problem: "is a channel entry but no olm.bundle of the catalog".to_owned(),
            })
    }

    /// OLM v1's step to `name` (at its bundle's version), as the report's [`InstallStep`];
    /// `observer` hears what OLM v1 says on the way.
    async fn step(&mut self, name: &str, observer: &Observer) -> Result<InstallStep, OlmRunError> {
        let started = Instant::now();
        let version = self.bundle(name)?.version.clone();
        if let Some(host) = self.env.webhooks() {
            // The release the operator's process is started as from now on.
            host.set_release(name);
        }
        let timeout = self.options.timeouts.step;
        let end = self
            .env
            .install_version_observed(&self.spec, &version, timeout, observer)
            .await?;
        let (csv, outcome, conditions) = ended(end, &self.spec.name, name, &version);
        let installed = conditions.iter().filter(|c| c.type_ == "Installed");
        let mut observed: Vec<String> = installed.map(|c| format!("OLM v1: {c}")).collect();
        observed.extend(self.env.take_notes());
        Ok(InstallStep {
            csv,
            outcome,
            observed,
            elapsed: started.elapsed(),
        })
    }

    /// Deletes the case's ClusterExtension and the CRDs left (module docs), then stops the
    /// operator's processes.
    async fn uninstall(&mut self) -> Result<(), OlmRunError> {
        let crds = self.env.operator_crds().await?;
        let timeout = self.options.timeouts.step;
        let uninstalled = self.env.uninstall(&self.spec.name, &crds, timeout).await;
        self.env.stop_webhooks();
        uninstalled.map_err(OlmRunError::from)
    }
}

/// How OLM v1's step to `name` (`version`) by ClusterExtension `extension` ended: the bundle
/// it names, the outcome, and OLM v1's conditions.
fn ended(
    end: StepEnd,
    extension: &str,
    name: &str,
    version: &str,
) -> (Option<String>, Outcome, Vec<Condition>) {
    let by = format!("ClusterExtension {extension}");
    match end {
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
            let outcome = timed_out(&by, name, version, &conditions);
            (None, outcome, conditions)
        }
    }
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

/// The CSV among the bundle's manifests.
fn csv_of(bundle: &ServedBundle) -> Option<&Value> {
    bundle
        .objects
        .iter()
        .find(|o| o["kind"] == "ClusterServiceVersion")
}

/// The objects of the bundle CSV's `alm-examples` annotation (none when it has none), read
/// by the model's one reader.
fn alm_examples(bundle: &ServedBundle) -> Result<Vec<Value>, OlmRunError> {
    let Some(csv) = csv_of(bundle) else {
        return Ok(Vec::new());
    };
    // Read leniently: what OLM v1 refuses of the CSV is its verdict, not this reader's.
    let (csv, _) = ClusterServiceVersion::read(csv);
    csv.alm_examples().map_err(|e| OlmRunError::Bundle {
        bundle: e.csv.clone(),
        problem: e.at_field(),
    })
}
