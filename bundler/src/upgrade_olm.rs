//! `olmpack upgrade olm`: the real OLM v0 installs every release of a catalog by Subscription
//! and upgrades along the edges it would take, and reports what OLM said.
//!
//! Contract:
//! - The cases come from the catalog alone ([`plan_cases`]): per package and per channel, one
//!   case per entry: install it (Subscription with `startingCSV`, manual approval) and, when
//!   OLM v0 has a successor for it ([`crate::catalog::upgrade::v0_successor`]), approve the
//!   next InstallPlan and expect exactly that successor. Channels whose entries are identical
//!   share their cases (OLM resolves them identically); the report names every channel.
//! - OLM is served the catalog with every bundle's image cleared ([`inline_catalog`]), so
//!   that it installs the `olm.bundle.object` manifests inline instead of unpacking bundle
//!   images with a Job (no kubelet, no registry here).
//! - Each case runs in its own [`upgrade_tests::OlmEnv`] (cases never see each other's
//!   objects); up to `jobs` at once.
//! - Between install and upgrade, every `alm-examples` object of the installed CSV is created;
//!   after the upgrade each must still be readable. When webhooks cannot be served (no
//!   `--webhook-command`, no usable address) and the bundle declares webhooks, the example
//!   checks are "not run" with the reason — never passed.
//! - A case passes when every step OLM took ended `Succeeded`, OLM picked the predicted
//!   successor, and every example was created and read back.
#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Serialize;
use upgrade_tests::olm::{Example, Installed, Outcome, Step, Timeouts, WebhookCommand};
use upgrade_tests::{OlmEnv, OlmEnvOptions};

use crate::catalog::load::load_dir;
use crate::catalog::model::{Model, Package};
use crate::catalog::upgrade::{Edge, v0_successor};

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
    Env(#[from] upgrade_tests::olm::OlmError),
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
    #[error("failed to render the catalog served to OLM")]
    Render(#[from] crate::catalog::serialize::SerializeError),
    /// A CRD the cluster should have before OLM could not be created.
    #[error("failed to install the cluster's CRD {name} before OLM")]
    ClusterCrd {
        /// The CRD's name.
        name: String,
        /// The test control plane's error.
        #[source]
        source: upgrade_tests::EnvError,
    },
}

/// The catalog of `dir` as it is served to OLM, in a temp directory: each bundle's `image`
/// cleared. OLM v0 installs a bundle's `olm.bundle.object` manifests inline only when the
/// bundle names no image; with an image it unpacks that image with a Job, which needs a
/// kubelet and a registry. The manifests are the same either way for a catalog rendered
/// from its bundles (what `opm render` and `olmpack generate` write).
pub fn inline_catalog(dir: &Path) -> Result<tempfile::TempDir, OlmRunError> {
    let loaded = load_dir(dir).map_err(|source| OlmRunError::Load {
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

/// One install (and at most one upgrade) to run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Case {
    /// The package installed.
    pub package: String,
    /// Every channel with this exact graph; the first is subscribed to.
    pub channels: Vec<String>,
    /// The bundle installed first (the starting CSV).
    pub from: String,
    /// OLM v0's successor of `from` in the channel, and the edge that makes it one.
    pub expected: Option<(String, Edge)>,
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
    /// CRDs the cluster has before OLM installs anything, as another operator installed
    /// them (e.g. prometheus-operator's, for a bundle that ships a ServiceMonitor: OLM
    /// cannot create an object whose kind the cluster does not serve).
    pub cluster_crds: Vec<CustomResourceDefinition>,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            webhook_command: None,
            timeouts: Timeouts::default(),
            jobs: 1,
            cluster_crds: Vec::new(),
        }
    }
}

/// What happened in one case.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseReport {
    /// The case that was run.
    pub case: Case,
    /// Outcome of the install of `from`.
    pub install: Step,
    /// Seconds from `opm serve` start to the installed CSV's final phase.
    pub install_seconds: f64,
    /// `Err(reason)` when the example checks could not run.
    pub examples: Result<Vec<Example>, String>,
    /// Outcome of the upgrade, when the case has one and the install succeeded.
    pub upgrade: Option<Step>,
    /// Per example created before the upgrade: `Err(message)` when unreadable after it.
    pub examples_after: Vec<Result<(), String>>,
    /// The CRDs and Deployments in the cluster after the last step that succeeded.
    pub installed: Installed,
    /// Wall-clock seconds the whole case took.
    pub seconds: f64,
}

impl CaseReport {
    /// Why the case failed; empty when it passed.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !matches!(self.install.outcome, Outcome::Succeeded { .. }) {
            out.push(format!(
                "install of {}: {}",
                self.case.from,
                describe(&self.install.outcome)
            ));
            return out;
        }
        if let Ok(examples) = &self.examples {
            for e in examples.iter().filter(|e| e.refused.is_some()) {
                out.push(format!(
                    "example {} {} ({}) refused: {}",
                    e.kind,
                    e.name,
                    e.api_version,
                    e.refused.as_deref().unwrap_or_default()
                ));
            }
        }
        match (&self.case.expected, &self.upgrade) {
            (Some((to, _)), Some(step)) => {
                if step.csv.as_deref() != Some(to.as_str()) {
                    out.push(format!(
                        "OLM proposed {} instead of {to}",
                        step.csv.as_deref().unwrap_or("no upgrade")
                    ));
                }
                if !matches!(step.outcome, Outcome::Succeeded { .. }) {
                    out.push(format!("upgrade to {to}: {}", describe(&step.outcome)));
                }
            }
            (Some((to, _)), None) => out.push(format!("upgrade to {to} did not run")),
            _ => {}
        }
        for r in &self.examples_after {
            if let Err(e) = r {
                out.push(format!("example unreadable after the upgrade: {e}"));
            }
        }
        out
    }
}

/// One line for an outcome, in OLM's words.
pub fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Succeeded { csv } => format!("{csv} Succeeded"),
        Outcome::Refused {
            by,
            reason,
            message,
        } => {
            format!("refused by {by}: {reason}: {message}")
        }
        Outcome::TimedOut {
            waiting_for,
            phase,
            reason,
            message,
            pods,
        } => {
            let mut s = format!("timed out waiting for {waiting_for}: phase {phase}");
            if !reason.is_empty() {
                let _ = write!(s, ", reason {reason}");
            }
            if !message.is_empty() {
                let _ = write!(s, ": {message}");
            }
            for p in pods {
                let _ = write!(s, "; pod {p}");
            }
            s
        }
    }
}

/// Loads the catalog in `dir` and plans its cases (see the module docs).
pub fn load_cases(dir: &Path, package: Option<&str>) -> Result<Vec<Case>, OlmRunError> {
    let loaded = load_dir(dir).map_err(|source| OlmRunError::Load {
        dir: dir.to_owned(),
        source,
    })?;
    let (model, findings) = Model::from_config(loaded.config);
    if let Some(first) = findings
        .iter()
        .find(|f| f.severity == crate::report::Severity::Error)
    {
        return Err(OlmRunError::Invalid {
            dir: dir.to_owned(),
            first: first.message.clone(),
        });
    }
    if let Some(name) = package
        && !model.packages.contains_key(name)
    {
        return Err(OlmRunError::NoPackage {
            dir: dir.to_owned(),
            package: name.to_owned(),
        });
    }
    Ok(model
        .packages
        .values()
        .filter(|p| package.is_none_or(|name| p.name == name))
        .flat_map(plan_cases)
        .collect())
}

/// The cases of one package (module docs), channels sharing identical graphs merged.
pub fn plan_cases(pkg: &Package) -> Vec<Case> {
    let mut by_graph: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for ch in pkg.channels.values() {
        let mut entries: Vec<String> = ch
            .entries
            .iter()
            .map(|e| format!("{}|{}|{:?}|{}", e.name, e.replaces, e.skips, e.skip_range))
            .collect();
        entries.sort();
        by_graph
            .entry(entries.join("\n"))
            .or_default()
            .push(&ch.name);
    }
    let mut groups: Vec<Vec<&str>> = by_graph.into_values().collect();
    groups.sort();
    let mut cases = Vec::new();
    for channels in groups {
        let ch = &pkg.channels[channels[0]];
        let mut names: Vec<&str> = ch.entries.iter().map(|e| e.name.as_str()).collect();
        names.sort_by(|a, b| {
            let v = |n: &str| pkg.bundles.get(n).and_then(|b| b.version.clone());
            v(a).cmp(&v(b)).then_with(|| a.cmp(b))
        });
        names.dedup();
        for from in names {
            cases.push(Case {
                package: pkg.name.clone(),
                channels: channels.iter().map(|c| (*c).to_owned()).collect(),
                from: from.to_owned(),
                expected: v0_successor(pkg, ch, from).map(|s| (s.to, s.via)),
            });
        }
    }
    cases
}

/// Runs every case (up to `options.jobs` at once); reports in case order.
pub async fn run(
    catalog: &Path,
    cases: &[Case],
    options: &RunOptions,
) -> Result<Vec<CaseReport>, OlmRunError> {
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

/// One case in a fresh OLM environment.
pub async fn run_case(
    catalog_dir: &Path,
    case: Case,
    options: &RunOptions,
) -> Result<CaseReport, OlmRunError> {
    let started = Instant::now();
    let env = OlmEnv::start_with(OlmEnvOptions {
        webhook_command: options.webhook_command.clone(),
    })
    .await?;
    for crd in &options.cluster_crds {
        env.env()
            .install_crd(crd)
            .await
            .map_err(|source| OlmRunError::ClusterCrd {
                name: crd.metadata.name.clone().unwrap_or_default(),
                source,
            })?;
    }
    let served = inline_catalog(catalog_dir)?;
    let catalog = env.serve_catalog("olmpack", served.path()).await?;
    env.subscribe(&catalog, &case.package, &case.channels[0], &case.from)
        .await?;
    let install = env.next_step(&case.package, options.timeouts).await?;
    let install_seconds = catalog.started.elapsed().as_secs_f64();
    let mut report = CaseReport {
        case,
        install,
        install_seconds,
        examples: Ok(Vec::new()),
        upgrade: None,
        examples_after: Vec::new(),
        installed: Installed::default(),
        seconds: 0.0,
    };
    if let Outcome::Succeeded { csv } = &report.install.outcome {
        report.installed = env.installed().await?;
        report.examples = examples(&env, csv, options).await?;
        if report.case.expected.is_some() {
            let step = env
                .next_step(&report.case.package, options.timeouts)
                .await?;
            if let (Ok(examples), Outcome::Succeeded { csv }) = (&report.examples, &step.outcome) {
                report.examples_after = match examples_served(&env, csv, options).await? {
                    Ok(()) => env.read_examples(examples).await,
                    Err(why) => vec![Err(why)],
                };
            }
            if let Outcome::Succeeded { .. } = &step.outcome {
                report.installed = env.installed().await?;
            }
            report.upgrade = Some(step);
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Whether the webhooks of `csv` are served: `Ok(Err(why))` when the checks that need them
/// cannot run (no webhook command or address) or no process came up.
async fn examples_served(
    env: &OlmEnv,
    csv: &str,
    options: &RunOptions,
) -> Result<Result<(), String>, OlmRunError> {
    if !env.has_webhooks(csv).await? {
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
    Ok(match examples_served(env, csv, options).await? {
        Ok(()) => Ok(env.create_examples(csv).await?),
        Err(why) => Err(why),
    })
}

/// A Markdown table of the reports: one row per case.
pub fn markdown(reports: &[CaseReport]) -> String {
    let mut out = String::from(
        "| channels | install | upgrade (OLM's choice) | examples | result |\n| --- | --- | --- | --- | --- |\n",
    );
    for r in reports {
        let install = match &r.install.outcome {
            Outcome::Succeeded { .. } => {
                format!("{} installed ({:.0} s)", r.case.from, r.install_seconds)
            }
            other => format!("{}: {}", r.case.from, describe(other)),
        };
        let upgrade = match (&r.case.expected, &r.upgrade) {
            (None, _) => "— (channel head)".to_owned(),
            (Some((to, via)), None) => format!("→ {to} ({}) not run", edge(*via)),
            (Some((_, via)), Some(step)) => match &step.outcome {
                Outcome::Succeeded { csv } => format!("→ {csv} ({}) upgraded", edge(*via)),
                other => format!(
                    "→ {} ({}): {}",
                    step.csv.as_deref().unwrap_or("none"),
                    edge(*via),
                    describe(other)
                ),
            },
        };
        let examples = match &r.examples {
            Err(why) => format!("not run: {why}"),
            Ok(list) => {
                let created = list.iter().filter(|e| e.refused.is_none()).count();
                let read = r.examples_after.iter().filter(|x| x.is_ok()).count();
                if r.upgrade.is_some() {
                    format!(
                        "{created}/{} created, {read}/{created} read after",
                        list.len()
                    )
                } else {
                    format!("{created}/{} created", list.len())
                }
            }
        };
        let result = match (r.failures().is_empty(), &r.examples) {
            (false, _) => "FAIL",
            (true, Err(_)) => "pass (example checks not run)",
            (true, Ok(_)) => "pass",
        };
        let _ = writeln!(
            out,
            "| {} | {install} | {upgrade} | {examples} | {result} |",
            r.case.channels.join(", ")
        );
    }
    out
}

fn edge(via: Edge) -> &'static str {
    match via {
        Edge::Replaces => "replaces",
        Edge::Skips => "skips",
        Edge::SkipRange => "skipRange",
    }
}

/// JUnit XML: one test case per case, failures with OLM's messages.
pub fn junit(reports: &[CaseReport]) -> String {
    let failed = reports.iter().filter(|r| !r.failures().is_empty()).count();
    let total: f64 = reports.iter().map(|r| r.seconds).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites><testsuite name=\"olmpack upgrade olm\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" time=\"{total:.1}\">",
        reports.len()
    );
    for r in reports {
        let name = match &r.case.expected {
            Some((to, _)) => format!("{} → {to} [{}]", r.case.from, r.case.channels.join(",")),
            None => format!("{} [{}]", r.case.from, r.case.channels.join(",")),
        };
        let _ = write!(
            out,
            "<testcase classname=\"{}\" name=\"{}\" time=\"{:.1}\"",
            crate::report::xml_escape(&r.case.package),
            crate::report::xml_escape(&name),
            r.seconds
        );
        let failures = r.failures();
        if failures.is_empty() {
            out.push_str("/>\n");
        } else {
            let _ = writeln!(
                out,
                "><failure message=\"{}\" type=\"olm\"/></testcase>",
                crate::report::xml_escape(&failures.join("; "))
            );
        }
    }
    out.push_str("</testsuite></testsuites>\n");
    out
}
