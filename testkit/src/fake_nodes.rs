//! Workload machinery for load tests on a [`TestEnv`]: kube-controller-manager (Deployments,
//! ReplicaSets, garbage collection), kube-scheduler and kwok with a number of fake nodes, so
//! that pods are created, scheduled and become Running and Ready without a kubelet.
//!
//! Unlike [`olmpack_envtest::olm::v0::OlmEnv`]'s single node (whose pods also wait for the kubelet stand-in's
//! admission), kwok here runs its stages unchanged: every scheduled pod becomes Ready. Each
//! component's client limits are raised ([`FakeNodesOptions`]) so that the control plane, not
//! its own clients' defaults (20 requests/s for kube-controller-manager), is what a load test
//! measures. Start the [`TestEnv`] without its own controller manager.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use olmpack_envtest::binaries::{Tool, ToolData, ToolNotFound};
use olmpack_envtest::control_plane::TestEnv;
use olmpack_envtest::process::{ChildProcess, ProcessError, wait_until};

/// How long a component or the nodes may take to become ready.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// Failure to start the workload machinery.
#[derive(Debug, thiserror::Error)]
pub enum FakeNodesError {
    #[error(transparent)]
    ToolNotFound(#[from] ToolNotFound),
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error("failed to {action}")]
    Api {
        action: String,
        #[source]
        source: kube::Error,
    },
    #[error("failed to read or write {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Options for [`FakeNodes::start`].
#[derive(Clone, Debug)]
pub struct FakeNodesOptions {
    /// How many fake nodes.
    pub nodes: usize,
    /// Client QPS of kube-controller-manager and kube-scheduler (burst: twice that).
    pub client_qps: u32,
    /// Concurrent Deployment and ReplicaSet syncs of kube-controller-manager.
    pub concurrent_syncs: u32,
}

impl Default for FakeNodesOptions {
    fn default() -> Self {
        Self {
            nodes: 6,
            client_qps: 200,
            concurrent_syncs: 10,
        }
    }
}

/// The running machinery; every process stops on drop.
#[derive(Debug)]
pub struct FakeNodes {
    kwok: ChildProcess,
    scheduler: ChildProcess,
    controller_manager: ChildProcess,
    nodes: Vec<String>,
}

impl FakeNodes {
    /// Starts kube-controller-manager, kube-scheduler and kwok against `env` and creates the
    /// nodes; returns once every node is Ready and untainted.
    pub async fn start(env: &TestEnv, options: &FakeNodesOptions) -> Result<Self, FakeNodesError> {
        let kubeconfig = env.kubeconfig_path().display().to_string();
        let dir = env.dir();
        let controller_manager = start_controller_manager(&kubeconfig, dir, options)?;
        let scheduler = start_scheduler(&kubeconfig, dir, options)?;
        let mut kwok = start_kwok(&kubeconfig, dir)?;
        let client = env.client();
        let nodes: Vec<String> = (0..options.nodes)
            .map(|i| format!("kwok-node-{i}"))
            .collect();
        for name in &nodes {
            create_node(&client, name).await?;
        }
        let api: Api<Node> = Api::all(client.clone());
        for name in &nodes {
            let api = api.clone();
            wait_until(&mut kwok, READY_TIMEOUT, || {
                let api = api.clone();
                async move { matches!(api.get_opt(name).await, Ok(Some(node)) if node_ready(&node)) }
            })
            .await?;
            // The apiserver taints a new node not-ready; the node lifecycle controller would
            // lift it but does not run (no kubelet heartbeats to watch), so it is lifted here.
            api.patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"taints": null}})),
            )
            .await
            .map_err(|source| FakeNodesError::Api {
                action: format!("untaint Node {name}"),
                source,
            })?;
        }
        Ok(Self {
            kwok,
            scheduler,
            controller_manager,
            nodes,
        })
    }

    /// The node names.
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }

    /// The process ids (kube-controller-manager, kube-scheduler, kwok).
    pub fn pids(&self) -> Vec<u32> {
        vec![
            self.controller_manager.pid(),
            self.scheduler.pid(),
            self.kwok.pid(),
        ]
    }
}

fn write(path: &Path, contents: &str) -> Result<(), FakeNodesError> {
    std::fs::write(path, contents).map_err(|source| FakeNodesError::Io {
        path: path.to_owned(),
        source,
    })
}

fn start_controller_manager(
    kubeconfig: &str,
    dir: &Path,
    options: &FakeNodesOptions,
) -> Result<ChildProcess, FakeNodesError> {
    let mut kcm = ChildProcess::start(
        "kube-controller-manager",
        &Tool::KubeControllerManager.path()?,
        &[
            format!("--kubeconfig={kubeconfig}"),
            "--controllers=garbage-collector-controller,deployment-controller,replicaset-controller".to_owned(),
            format!("--kube-api-qps={}", options.client_qps),
            format!("--kube-api-burst={}", options.client_qps * 2),
            format!("--concurrent-deployment-syncs={}", options.concurrent_syncs),
            format!("--concurrent-replicaset-syncs={}", options.concurrent_syncs),
            format!("--concurrent-gc-syncs={}", options.concurrent_syncs * 2),
            "--leader-elect=false".to_owned(),
            "--secure-port=0".to_owned(),
            "--use-service-account-credentials=false".to_owned(),
        ],
        &dir.join("load-controller-manager.log"),
    )?;
    kcm.check_running()?;
    Ok(kcm)
}

/// kube-scheduler from a configuration file (its client limits have no flags any more).
fn start_scheduler(
    kubeconfig: &str,
    dir: &Path,
    options: &FakeNodesOptions,
) -> Result<ChildProcess, FakeNodesError> {
    let config = dir.join("load-scheduler.yaml");
    let text = json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {
            "kubeconfig": kubeconfig,
            "qps": options.client_qps,
            "burst": options.client_qps * 2,
        },
        "leaderElection": {"leaderElect": false},
    });
    write(&config, &text.to_string())?;
    let mut scheduler = ChildProcess::start(
        "kube-scheduler",
        &Tool::KubeScheduler.path()?,
        &[
            format!("--config={}", config.display()),
            "--secure-port=0".to_owned(),
        ],
        &dir.join("load-scheduler.log"),
    )?;
    scheduler.check_running()?;
    Ok(scheduler)
}

/// kwok with its stages as setup copied them, managing the nodes annotated as fake.
fn start_kwok(kubeconfig: &str, dir: &Path) -> Result<ChildProcess, FakeNodesError> {
    let stages = ToolData::KwokStages.path()?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&stages)
        .map_err(|source| FakeNodesError::Io {
            path: stages.clone(),
            source,
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut text = String::new();
    for path in files {
        let stage =
            std::fs::read_to_string(&path).map_err(|source| FakeNodesError::Io { path, source })?;
        text.push_str("---\n");
        text.push_str(&stage);
        text.push('\n');
    }
    let config = dir.join("load-kwok.yaml");
    write(&config, &text)?;
    let mut kwok = ChildProcess::start(
        "kwok",
        &Tool::Kwok.path()?,
        &[
            format!("--kubeconfig={kubeconfig}"),
            format!("--config={}", config.display()),
            "--manage-all-nodes=false".to_owned(),
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake".to_owned(),
            "--cidr=10.244.0.1/16".to_owned(),
            "--node-ip=10.244.0.1".to_owned(),
        ],
        &dir.join("load-kwok.log"),
    )?;
    kwok.check_running()?;
    Ok(kwok)
}

async fn create_node(client: &Client, name: &str) -> Result<(), FakeNodesError> {
    let api: Api<Node> = Api::all(client.clone());
    let node: Node = serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok"},
        },
    }))
    .expect("a static Node is valid");
    api.create(&PostParams::default(), &node)
        .await
        .map_err(|source| FakeNodesError::Api {
            action: format!("create Node {name}"),
            source,
        })?;
    Ok(())
}

fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}
