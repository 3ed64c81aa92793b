//! The OLM v0 driver: olm-operator and catalog-operator install each case's starting CSV by
//! Subscription (manual approval) and upgrade by approving the next InstallPlan.
//!
//! - OLM is served the catalog with every bundle's image cleared ([`inline_catalog`]), so
//!   that it installs the `olm.bundle.object` manifests inline instead of unpacking bundle
//!   images with a Job (no kubelet, no registry here).
//! - Each case runs in an [`OlmEnv`] of its own: a fresh one, or, with an [`EnvPool`], one
//!   an earlier case used, reset so that the cluster holds again what it held when it came
//!   up, with the operator namespace and OperatorGroup made afresh ([`OlmEnv::reset`]; when
//!   that fails, a fresh one). Cases never see each other's objects; up to
//!   [`RunOptions::jobs`] run at once.
//! - The last release must stay `Succeeded` after its step ([`OlmEnv::left_succeeded`]).

use std::path::Path;
use std::sync::Arc;

use olmpack_envtest::olm::v0::{Catalog, OlmEnv, OlmEnvOptions};
use olmpack_envtest::olm::{Example, InstallStep, Installed, Observer, StillSucceeded};

use super::driver::{Driver, Ended, Session};
use super::log::CaseLog;
use super::{Case, OlmRunError, RunOptions};

/// OLM v0 for a run: the catalog as it is served, and how cases get their environments.
pub(super) struct OlmV0 {
    served: tempfile::TempDir,
    options: RunOptions,
}

impl Driver for OlmV0 {
    type Session = V0Session;

    fn cannot_run(_case: &Case) -> Option<String> {
        None
    }

    async fn up(catalog: &Path, options: &RunOptions) -> Result<Self, OlmRunError> {
        Ok(Self {
            served: inline_catalog(catalog, &options.limits)?,
            options: options.clone(),
        })
    }

    fn jobs(&self) -> usize {
        self.options.jobs
    }

    async fn session(
        &self,
        case: &Case,
        _number: usize,
        log: &CaseLog,
    ) -> Result<V0Session, OlmRunError> {
        let env = env_for(case, &self.options, log).await?;
        let serving = env.serve_catalog("olmpack", self.served.path());
        let catalog = log
            .awaiting("OLM to connect to the catalog", serving)
            .await?;
        Ok(V0Session {
            env,
            catalog,
            options: self.options.clone(),
        })
    }
}

/// One case's [`OlmEnv`], serving the catalog.
pub(super) struct V0Session {
    env: OlmEnv,
    catalog: Catalog,
    options: RunOptions,
}

impl Session for V0Session {
    async fn install(
        &mut self,
        case: &Case,
        observer: &Observer,
    ) -> Result<(InstallStep, f64), OlmRunError> {
        let (package, channel) = (&case.package, &case.channels[0]);
        let catalog = &self.catalog;
        self.env
            .subscribe(catalog, package, channel, &case.from)
            .await?;
        let step = self.next_step(case, observer).await?;
        // From `opm serve`'s start: what a user waits for before the operator runs.
        Ok((step, self.catalog.started.elapsed().as_secs_f64()))
    }

    async fn upgrade(
        &mut self,
        case: &Case,
        _to: &str,
        observer: &Observer,
    ) -> Result<InstallStep, OlmRunError> {
        self.next_step(case, observer).await
    }

    async fn installed(&self) -> Result<Installed, OlmRunError> {
        Ok(self.env.installed().await?)
    }

    async fn example_count(&self, csv: &str) -> Result<usize, OlmRunError> {
        Ok(self.env.example_count(csv).await?)
    }

    async fn create_examples(&self, csv: &str) -> Result<Vec<Example>, OlmRunError> {
        Ok(self.env.create_examples(csv).await?)
    }

    async fn read_examples(&self, examples: &[Example]) -> Vec<Result<(), String>> {
        self.env.read_examples(examples).await
    }

    async fn webhooks_served(
        &self,
        csv: &str,
        conversion_only: bool,
    ) -> Result<Result<(), String>, OlmRunError> {
        if !self.env.has_webhooks(csv, conversion_only).await? {
            return Ok(Ok(()));
        }
        let timeout = self.options.timeouts.step;
        Ok(self.env.wait_for_webhooks(csv, timeout).await)
    }

    async fn hold(&self, csv: &str, log: &CaseLog) -> Result<StillSucceeded, OlmRunError> {
        let what = format!("ClusterServiceVersion {csv} to stay Succeeded");
        let holding = self.env.left_succeeded(csv, self.options.timeouts.step);
        Ok(log.awaiting(&what, holding).await?)
    }

    async fn end(self, ran: bool) -> Ended {
        let ended = Ended {
            crash_loops: self.env.webhooks().take_crash_loops(),
            retried: self.env.retried(),
            cleanup: Ok(()),
        };
        if let (true, Some(pool)) = (ran, &self.options.envs) {
            drop(self.catalog);
            pool.give(self.env);
        }
        ended
    }
}

impl V0Session {
    /// OLM's next step of the case's Subscription, approved and waited for.
    async fn next_step(
        &self,
        case: &Case,
        observer: &Observer,
    ) -> Result<InstallStep, OlmRunError> {
        let timeouts = self.options.timeouts;
        let step = self
            .env
            .next_step_observed(&case.package, timeouts, observer);
        Ok(step.await?)
    }
}

/// The environment of `case`: an idle one of the pool, reset for it, or else a fresh one.
async fn env_for(case: &Case, options: &RunOptions, log: &CaseLog) -> Result<OlmEnv, OlmRunError> {
    let wanted = OlmEnvOptions {
        webhook_command: options.webhook_command.clone(),
        install_mode: case.install_mode,
        install_plan_retry: options.timeouts.install_plan_retry,
        cluster_crds: options.cluster_crds.clone(),
        service_ca: options.platform.service_ca(),
        node_roles: options.platform.node_roles(),
        kubernetes: options.platform.kubernetes_minor(),
    };
    if let Some(mut env) = options.envs.as_ref().and_then(|pool| pool.take(&wanted)) {
        let reset = env.reset(case.install_mode);
        match log.awaiting("the OLM environment to be reset", reset).await {
            Ok(()) => {
                let resets = env.resets();
                log.step(format_args!("OLM environment reused (reset {resets})"));
                return Ok(env);
            }
            Err(err) => {
                let why = olmpack_model::report::error_chain(&err);
                log.step(format_args!(
                    "OLM environment not reused ({why}); starting another"
                ));
            }
        }
    }
    let starting = OlmEnv::start_with(wanted);
    let env = log
        .awaiting("the control plane and OLM to start", starting)
        .await?;
    // The control plane's own word on its release (`--platform` chose it).
    let version = match env.client().apiserver_version().await {
        Ok(info) => info.git_version,
        Err(e) => format!(
            "version not read: {}",
            olmpack_model::report::error_chain(&e)
        ),
    };
    log.step(format_args!(
        "OLM environment up (kube-apiserver {version})"
    ));
    Ok(env)
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

/// The catalog of `dir` as it is served to OLM, in a temp directory: each bundle's `image`
/// cleared. OLM v0 installs a bundle's `olm.bundle.object` manifests inline only when the
/// bundle names no image; with an image it unpacks that image with a Job, which needs a
/// kubelet and a registry. The manifests are the same either way for a catalog made from
/// its bundles by `opm render` or by `olmpack generate`.
pub fn inline_catalog(
    dir: &Path,
    limits: &olmpack_oci::input::Limits,
) -> Result<tempfile::TempDir, OlmRunError> {
    let mut config = super::cases::load_catalog(dir, limits)?;
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

/// One case of the catalog in `dir` under OLM v0, as [`super::run`] runs it: for callers
/// that schedule cases of several catalogs themselves (its future can be sent between
/// threads, so each case may be a task of its own).
pub async fn run_case(
    dir: &Path,
    case: Case,
    options: &RunOptions,
) -> Result<super::CaseReport, OlmRunError> {
    let reports = super::driver::run::<OlmV0>(dir, std::slice::from_ref(&case), options).await?;
    Ok(reports.into_iter().next().expect("one report per case"))
}
