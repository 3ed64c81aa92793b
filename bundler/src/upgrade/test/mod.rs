//! `olmpack upgrade test`: every edge of the upgrade graph, live, on a real apiserver.
//!
//! Inputs come from a plan (bundles generated in memory, the catalog's graph) or from a
//! catalog and bundle directories. Each bundle becomes an
//! [`olmpack_envtest::live::ReleaseUnderTest`]: its CRDs, with the conversion webhook that the
//! CSV's `ConversionWebhook` definitions ask OLM to inject, and its `alm-examples` (plus the
//! plan's samples). [`run`] runs [`olmpack_envtest::live::run_edge`] for every edge, on a test
//! environment of its own per edge or on one given cluster, and joins each edge's report with
//! `upgrade check`'s answer for the same edge ([`answer`]: an edge OLM refuses is never
//! passed); [`format`] prints the reports.
#![warn(missing_docs)]

pub mod answer;
mod format;
mod inputs;
pub mod kubeconfig;

use std::path::PathBuf;

use futures::{StreamExt as _, TryStreamExt as _};

use crate::upgrade::check::graph::check_edges;
use olmpack_envtest::binaries::KubeMinor;
use olmpack_envtest::control_plane::{TestEnv, TestEnvOptions};
use olmpack_envtest::live::{EdgeOptions, EdgeReport, LiveError, ReleaseUnderTest, Webhook};
use olmpack_model::upgrade::{Edge, Verdict};

pub use answer::EdgeAnswer;
pub use format::format;
pub use inputs::{Inputs, LiveInputsError, from_dirs, from_plan, operator_identity};

/// Where the edges run.
#[derive(Clone, Debug)]
pub enum Target {
    /// A fresh etcd + kube-apiserver of Kubernetes `kubernetes` per edge, from the tools
    /// `cargo xtask setup` installs; `openshift`: the OpenShift 4 minor release that ships
    /// that Kubernetes minor, when `--platform openshift-4.N` named it (the report says so).
    TestEnv {
        /// The Kubernetes minor whose control plane runs.
        kubernetes: KubeMinor,
        /// The OpenShift 4 minor release asked for, if any.
        openshift: Option<u64>,
    },
    /// The cluster of this kubeconfig (its apiserver must reach 127.0.0.1, where the webhook
    /// listens); edges run one after another and clean up their CRDs.
    Kubeconfig(PathBuf),
}

/// Failure to run the live test (not a finding about the releases).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The test control plane could not be started.
    #[error("failed to start the test environment")]
    Env(#[from] olmpack_envtest::control_plane::EnvError),
    /// The kubeconfig of the given cluster cannot be read.
    #[error("failed to read kubeconfig {path}")]
    Kubeconfig {
        /// The kubeconfig file.
        path: PathBuf,
        /// The kube client library's error.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// The kubeconfig names credentials olmpack cannot use.
    #[error(transparent)]
    KubeconfigUnusable(#[from] kubeconfig::KubeconfigCheckError),
    /// No client could be made for the cluster the kubeconfig names.
    #[error("failed to create a client for the cluster of {path}")]
    Client {
        /// The kubeconfig file.
        path: PathBuf,
        /// The kube client library's error.
        #[source]
        source: kube::Error,
    },
    /// The test harness failed while running one upgrade edge (not a verdict on the operator).
    #[error("edge {from} → {to} could not run")]
    Edge {
        /// The bundle upgraded from.
        from: String,
        /// The bundle upgraded to.
        to: String,
        /// What failed.
        #[source]
        source: LiveError,
    },
}

/// Never about the input olmpack reads: a failure to do the job (exit 2).
impl crate::refusal::Refusal for RunError {
    fn refuses_input(&self) -> bool {
        false
    }
}

/// Runs every edge of `inputs` on `target`, serving each release's webhook with
/// `webhook_command` (see [`olmpack_envtest::live::webhook`] for its environment). On test
/// environments of its own, up to `jobs` edges run at once (each on its own control plane);
/// on a given cluster one at a time (edges share its CRD names). Each report is joined with
/// `upgrade check`'s answer for its edge. Reports come in edge order; the first edge (in that
/// order) that cannot run ends the run.
pub async fn run(
    inputs: &Inputs,
    target: &Target,
    webhook_command: Option<&str>,
    options: &EdgeOptions,
    jobs: usize,
) -> Result<Vec<EdgeAnswer>, RunError> {
    let reports = run_live(inputs, target, webhook_command, options, jobs).await?;
    let checked = check_edges(&inputs.edges, &inputs.installed);
    let platform = target.platform();
    Ok(reports
        .into_iter()
        .zip(&checked)
        .map(|(report, check)| EdgeAnswer {
            platform: platform.clone(),
            ..answer::join(report, check)
        })
        .collect())
}

impl Target {
    /// The platform the edges run on, for the report: the test environment's Kubernetes
    /// minor and release; `None` on a given cluster (olmpack does not ask its version).
    fn platform(&self) -> Option<String> {
        match self {
            Target::TestEnv {
                kubernetes,
                openshift,
            } => {
                let apiserver = kubernetes.control_plane();
                Some(match openshift {
                    Some(minor) => format!("OpenShift 4.{minor} on {apiserver}"),
                    None => apiserver,
                })
            }
            Target::Kubeconfig(_) => None,
        }
    }
}

/// The live reports of every edge, in edge order.
async fn run_live(
    inputs: &Inputs,
    target: &Target,
    webhook_command: Option<&str>,
    options: &EdgeOptions,
    jobs: usize,
) -> Result<Vec<EdgeReport>, RunError> {
    let webhook = webhook_command.map(|c| Webhook::Command(c.to_owned()));
    let release = |name: &str| -> ReleaseUnderTest {
        let mut release = inputs.releases[name].clone();
        release.webhook = webhook.clone();
        release
    };
    let (shared, kubernetes) = match target {
        Target::TestEnv { kubernetes, .. } => (None, *kubernetes),
        Target::Kubeconfig(path) => (
            Some((client_for(path).await?, path.clone())),
            KubeMinor::default(),
        ),
    };
    let jobs = if shared.is_some() { 1 } else { jobs.max(1) };
    futures::stream::iter(&inputs.edges)
        .map(|edge| {
            let (from, to) = (release(&edge.from), release(&edge.to));
            let on = shared.as_ref().map_or(On::TestEnv(kubernetes), On::Cluster);
            run_one(edge, from, to, on, options)
        })
        .buffered(jobs)
        .try_collect()
        .await
}

/// Where one edge runs: the given cluster (its client and kubeconfig), or a test
/// environment of its own of this minor.
enum On<'a> {
    Cluster(&'a (kube::Client, PathBuf)),
    TestEnv(KubeMinor),
}

/// One edge, where `on` says. Its report names the whole `edge` (package, channels,
/// ways), which the live run knows by its releases' names only.
async fn run_one(
    edge: &Edge,
    from: ReleaseUnderTest,
    to: ReleaseUnderTest,
    on: On<'_>,
    options: &EdgeOptions,
) -> Result<EdgeReport, RunError> {
    let mut report = run_live_edge(edge, from, to, on, options).await?;
    report.edge = edge.clone();
    Ok(report)
}

async fn run_live_edge(
    edge: &Edge,
    from: ReleaseUnderTest,
    to: ReleaseUnderTest,
    on: On<'_>,
    options: &EdgeOptions,
) -> Result<EdgeReport, RunError> {
    let wrap = |source| RunError::Edge {
        from: edge.from.clone(),
        to: edge.to.clone(),
        source,
    };
    match on {
        On::Cluster((client, path)) => {
            let options = EdgeOptions {
                kubeconfig: Some(path.clone()),
                ..options.clone()
            };
            olmpack_envtest::live::run_edge(client, &from, &to, &options)
                .await
                .map_err(wrap)
        }
        On::TestEnv(kubernetes) => {
            let env = TestEnv::start_with(TestEnvOptions {
                kubernetes: Some(kubernetes),
                ..TestEnvOptions::default()
            })
            .await?;
            let options = EdgeOptions {
                cleanup: false,
                kubeconfig: Some(env.kubeconfig_path().to_owned()),
                ..options.clone()
            };
            olmpack_envtest::live::run_edge(&env.client(), &from, &to, &options)
                .await
                .map_err(wrap)
        }
    }
}

async fn client_for(path: &std::path::Path) -> Result<kube::Client, RunError> {
    let kubeconfig_err = |source| RunError::Kubeconfig {
        path: path.to_owned(),
        source,
    };
    let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(kubeconfig_err)?;
    kubeconfig::check(path, &kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .map_err(kubeconfig_err)?;
    kube::Client::try_from(config).map_err(|source| RunError::Client {
        path: path.to_owned(),
        source,
    })
}

/// `0` when every edge passed (live and by `upgrade check`), `1` otherwise.
pub fn exit_code(reports: &[EdgeAnswer]) -> u8 {
    u8::from(reports.iter().any(|r| r.verdict != Verdict::Passed))
}
