//! Starting the components of an [`OlmEnv`] and serving catalogs to it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Node};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

use super::operator_group::{self, CATALOG_NAMESPACE, Namespaces};
use super::reset::{self, Baseline};
use super::resources::{self, CatalogSource};
use super::transient::Retried;
use super::{OlmError, kubelet};
use crate::binaries::{KubeMinor, Tool, ToolData};
use crate::control_plane::{TestEnv, TestEnvOptions};
use crate::olm::step::OLM_INSTALL_PLAN_RETRY;
use crate::olm::webhooks::{WebhookCommand, WebhookHost};
use crate::process::{ChildProcess, free_port, wait_until};
use crate::service_ca::{ServiceCa, ServiceCaTask};
use olmpack_model::plan::InstallModeType;

/// The kwok node every pod is scheduled to.
const NODE: &str = "kwok-node";
/// How long a component or a catalog may take to become ready.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// Field manager of everything this environment applies.
const MANAGER: &str = "olmpack";

/// Options for [`OlmEnv::start_with`].
#[derive(Clone, Debug)]
pub struct OlmEnvOptions {
    /// Runs as the process of every Deployment OLM installs (and serves the webhooks OLM
    /// wires to it); without it webhook calls fail (and with `failurePolicy: Fail`, so do
    /// the requests they guard) and no operator process runs.
    pub webhook_command: Option<WebhookCommand>,
    /// The OperatorGroup of the operator namespace (and the namespaces it targets).
    pub install_mode: InstallModeType,
    /// The catalog-operator's `--install-plan-retry-timeout` (see
    /// [`crate::olm::Timeouts::install_plan_retry`]).
    pub install_plan_retry: Duration,
    /// CRDs the cluster has before OLM installs anything (another operator's APIs that
    /// bundles ship objects of); they stay through [`OlmEnv::reset`].
    pub cluster_crds: Vec<CustomResourceDefinition>,
    /// Plays OpenShift's service-ca ([`crate::service_ca`]): serving-certificate Secrets
    /// for annotated Services and CA bundles injected where annotated.
    pub service_ca: bool,
    /// Roles of the one node, each a `node-role.kubernetes.io/<role>` label: a single-node
    /// OpenShift's node is `master`, `control-plane` and `worker` (pods that select masters
    /// run there); none: a plain worker node.
    pub node_roles: Vec<String>,
    /// The Kubernetes minor whose kube-apiserver, kube-controller-manager and
    /// kube-scheduler run the cluster OLM runs on.
    pub kubernetes: KubeMinor,
}

impl OlmEnvOptions {
    /// Whether an environment started with `self` serves `other` after a reset: everything
    /// but the install mode is the same.
    pub fn same_but_mode(&self, other: &OlmEnvOptions) -> bool {
        self.webhook_command == other.webhook_command
            && self.install_plan_retry == other.install_plan_retry
            && self.cluster_crds == other.cluster_crds
            && self.service_ca == other.service_ca
            && self.node_roles == other.node_roles
            && self.kubernetes == other.kubernetes
    }
}

impl Default for OlmEnvOptions {
    fn default() -> Self {
        Self {
            webhook_command: None,
            install_mode: InstallModeType::AllNamespaces,
            install_plan_retry: OLM_INSTALL_PLAN_RETRY,
            cluster_crds: Vec::new(),
            service_ca: false,
            node_roles: Vec::new(),
            kubernetes: KubeMinor::default(),
        }
    }
}

/// A running OLM v0 environment. See the [module docs](super).
pub struct OlmEnv {
    // Field order is drop order: webhook processes, then OLM, then the control plane.
    webhooks: WebhookHost,
    _kubelet: AbortOnDrop,
    _service_ca: Option<ServiceCaTask>,
    options: OlmEnvOptions,
    /// The namespaces of the current install.
    namespaces: Namespaces,
    /// What the cluster held when the environment came up ([`OlmEnv::reset`]).
    baseline: Baseline,
    /// How many times the environment was reset.
    resets: u32,
    /// Calls retried since the last [`OlmEnv::retried`] (see [`super::transient`]).
    retries: Retried,
    olm_operator: ChildProcess,
    catalog_operator: ChildProcess,
    kwok: ChildProcess,
    scheduler: ChildProcess,
    env: TestEnv,
}

impl std::fmt::Debug for OlmEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OlmEnv")
            .field("env", &self.env)
            .finish_non_exhaustive()
    }
}

/// A catalog served by `opm serve` and registered as a CatalogSource; `opm` stops on drop.
#[derive(Debug)]
pub struct Catalog {
    /// The CatalogSource's name (in [`CATALOG_NAMESPACE`]).
    pub name: String,
    /// When `opm serve` was started.
    pub started: Instant,
    server: ChildProcess,
}

impl Catalog {
    /// The namespace of the CatalogSource.
    pub fn namespace(&self) -> &str {
        CATALOG_NAMESPACE
    }

    /// The PID of `opm serve`.
    pub fn pid(&self) -> u32 {
        self.server.pid()
    }
}

impl OlmEnv {
    /// Starts everything with default options (no webhook command).
    pub async fn start() -> Result<Self, OlmError> {
        Self::start_with(OlmEnvOptions::default()).await
    }

    /// Starts the control plane, kube-scheduler, kwok and OLM, and creates the operator
    /// namespace with an OperatorGroup for `options.install_mode` (and the namespaces it
    /// targets).
    pub async fn start_with(options: OlmEnvOptions) -> Result<Self, OlmError> {
        let programs = Programs::locate(options.kubernetes)?;
        let env = TestEnv::start_with(TestEnvOptions {
            controller_manager: true,
            apiserver_args: vec!["--enable-aggregator-routing=true".to_owned()],
            kubernetes: Some(options.kubernetes),
        })
        .await?;
        let dir = env.dir().to_owned();
        let kubeconfig = env.kubeconfig_path().display().to_string();
        let client = env.client();
        let namespaces = Namespaces::nth(0);

        install_crds_and_namespaces(&env, &client, &programs.crds, &namespaces.operator).await?;
        let scheduler = start_scheduler(&programs.scheduler, &kubeconfig, &dir)?;
        // OLM's operators need only their CRDs: they start while the node comes up.
        let (olm_operator, catalog_operator) =
            start_olm(&programs, &kubeconfig, &dir, options.install_plan_retry)?;
        let (node, group, copied) = tokio::join!(
            start_node(&client, &programs, &kubeconfig, &dir, &options.node_roles),
            create_operator_group(&client, &namespaces, options.install_mode),
            disable_copied_csvs(&client),
        );
        let (kwok, kubelet) = node?;
        group?;
        copied?;
        for crd in &options.cluster_crds {
            env.install_crd(crd).await?;
        }
        let service_ca = match options.service_ca {
            true => Some(ServiceCa::new()?.spawn(client.clone())),
            false => None,
        };
        let baseline = Baseline::take(&client, &namespaces).await?;

        let webhooks = WebhookHost::start(
            client.clone(),
            &namespaces.operator,
            options.webhook_command.clone(),
            env.kubeconfig_path().to_owned(),
            dir.join("webhooks"),
        )?;
        Ok(Self {
            webhooks,
            _kubelet: kubelet,
            _service_ca: service_ca,
            options,
            namespaces,
            baseline,
            resets: 0,
            retries: Retried::default(),
            olm_operator,
            catalog_operator,
            kwok,
            scheduler,
            env,
        })
    }

    /// The control plane underneath.
    pub fn env(&self) -> &TestEnv {
        &self.env
    }

    /// An admin client.
    pub fn client(&self) -> Client {
        self.env.client()
    }

    /// The namespace the current install goes to.
    pub fn operator_namespace(&self) -> &str {
        &self.namespaces.operator
    }

    /// The namespaces of the current install (see [`Namespaces::nth`]).
    pub fn namespaces(&self) -> &Namespaces {
        &self.namespaces
    }

    /// The install mode of the environment's OperatorGroup.
    pub fn install_mode(&self) -> InstallModeType {
        self.options.install_mode
    }

    /// What the environment was started with (the install mode: the current one).
    pub fn options(&self) -> &OlmEnvOptions {
        &self.options
    }

    /// The calls to the apiserver retried since the last time this was asked (or the last
    /// reset), one line per call and cause: `ACTION: CAUSE (retried N×)`.
    pub fn retried(&self) -> Vec<String> {
        self.retries.take()
    }

    pub(super) fn retries(&self) -> &Retried {
        &self.retries
    }

    /// How many times [`OlmEnv::reset`] has readied the environment for another install.
    pub fn resets(&self) -> u32 {
        self.resets
    }

    /// Readies the environment for another install, as if it had just come up with an
    /// OperatorGroup for `mode`: webhook processes stopped; what the last install left
    /// removed until the cluster holds the APIServices, webhook configurations and CRDs it
    /// held at start, and no other namespace but ones being deleted (see [`super::reset`]);
    /// the next namespaces ([`Namespaces::nth`]) made with their OperatorGroup; OLM's logs
    /// read from here on. On `Err` the environment is in an unknown state: drop it.
    pub async fn reset(&mut self, mode: InstallModeType) -> Result<(), OlmError> {
        let client = self.client();
        let kubeconfig = self.env.kubeconfig_path().to_owned();
        let next = Namespaces::nth(self.resets + 1);
        let dir = self.env.dir().join(format!("webhooks-{}", self.resets + 1));
        // Stopped before anything goes, so no process of the last install acts meanwhile.
        self.webhooks.stop();
        self.retries.take();
        reset::clean(&client, &self.baseline, &self.namespaces.operator).await?;
        create_namespace(&client, &next.operator).await?;
        create_operator_group(&client, &next, mode).await?;
        self.olm_operator.mark_log();
        self.catalog_operator.mark_log();
        self.webhooks = WebhookHost::start(
            client,
            &next.operator,
            self.options.webhook_command.clone(),
            kubeconfig,
            dir,
        )?;
        self.namespaces = next;
        self.options.install_mode = mode;
        self.resets += 1;
        Ok(())
    }

    /// Whether webhook calls can reach a [`WebhookCommand`]: one was given and this machine
    /// has a non-loopback IPv4 address for the EndpointSlices. `Err` says why not.
    pub fn webhooks_available(&self) -> Result<(), String> {
        self.webhooks.available()
    }

    /// The webhook host (processes started, their logs).
    pub fn webhooks(&self) -> &WebhookHost {
        &self.webhooks
    }

    /// The PIDs of every process of this environment (control plane, OLM, webhooks).
    pub fn pids(&self) -> Vec<u32> {
        let mut pids = self.env.pids();
        pids.extend([
            self.scheduler.pid(),
            self.kwok.pid(),
            self.olm_operator.pid(),
            self.catalog_operator.pid(),
        ]);
        pids.extend(self.webhooks.pids());
        pids
    }

    /// The end of OLM's two logs, for failure messages.
    pub fn olm_log_tail(&self) -> String {
        format!(
            "--- olm-operator ---\n{}\n--- catalog-operator ---\n{}",
            self.olm_operator.log_tail(),
            self.catalog_operator.log_tail()
        )
    }

    /// The catalog-operator's last lines that name `object` (what it last did with it).
    pub fn catalog_operator_lines_about(&self, object: &str) -> Vec<String> {
        self.catalog_operator
            .log_lines_containing(object, 5)
            .into_iter()
            .map(|l| format!("catalog-operator: {l}"))
            .collect()
    }

    /// The catalog-operator's last error lines (resolution problems show up there).
    pub fn catalog_operator_errors(&self) -> Vec<String> {
        let tail = self.catalog_operator.log_tail();
        let errors: Vec<String> = tail
            .lines()
            .filter(|l| l.contains("level=error") || l.contains("level=warn"))
            .map(|l| format!("catalog-operator: {l}"))
            .collect();
        errors[errors.len().saturating_sub(3)..].to_vec()
    }

    /// Serves the File-Based Catalog `dir` with `opm serve` and registers it as CatalogSource
    /// `name`; returns once OLM reports the connection READY.
    pub async fn serve_catalog(&self, name: &str, dir: &Path) -> Result<Catalog, OlmError> {
        let opm = Tool::Opm.path()?;
        let mut last = None;
        for _ in 0..3 {
            let port = free_port().map_err(OlmError::Port)?;
            let started = Instant::now();
            // opm builds its cache in a temp directory: keep it inside the environment's.
            let mut server = ChildProcess::start_with_env(
                "opm serve",
                &opm,
                &[
                    "serve".to_owned(),
                    dir.display().to_string(),
                    format!("--port={port}"),
                    "--pprof-addr=127.0.0.1:0".to_owned(),
                ],
                &[("TMPDIR".to_owned(), self.env.dir().display().to_string())],
                &self.env.dir().join(format!("opm-{name}-{port}.log")),
            )?;
            match wait_until(&mut server, READY_TIMEOUT, || tcp_open(port)).await {
                Ok(()) => {
                    self.register_catalog(name, port).await?;
                    return Ok(Catalog {
                        name: name.to_owned(),
                        started,
                        server,
                    });
                }
                Err(err) => last = Some(err),
            }
        }
        Err(last.expect("at least one attempt ran").into())
    }

    async fn register_catalog(&self, name: &str, port: u16) -> Result<(), OlmError> {
        let api: Api<DynamicObject> = Api::namespaced_with(
            self.client(),
            CATALOG_NAMESPACE,
            &resources::catalog_source(),
        );
        let source = json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": {"name": name, "namespace": CATALOG_NAMESPACE},
            "spec": {
                "sourceType": "grpc",
                "address": format!("127.0.0.1:{port}"),
                "displayName": name,
                "publisher": "olmpack",
            },
        });
        api.patch(
            name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&source),
        )
        .await
        .map_err(OlmError::api(format!("create CatalogSource {name}")))?;
        let typed: Api<CatalogSource> = Api::namespaced_with(
            self.client(),
            CATALOG_NAMESPACE,
            &resources::catalog_source(),
        );
        let started = Instant::now();
        loop {
            if let Ok(Some(source)) = typed.get_opt(name).await
                && source
                    .status
                    .as_ref()
                    .and_then(|s| s.connection_state.as_ref())
                    .is_some_and(|c| c.last_observed_state == "READY")
            {
                return Ok(());
            }
            if started.elapsed() > READY_TIMEOUT {
                return Err(OlmError::Timeout {
                    what: format!(
                        "CatalogSource {name} was not READY\n{}",
                        self.olm_log_tail()
                    ),
                    waited: READY_TIMEOUT,
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// The programs and data the environment runs, located before anything starts.
struct Programs {
    scheduler: PathBuf,
    kwok: PathBuf,
    olm_operator: PathBuf,
    catalog_operator: PathBuf,
    /// The directory of OLM's CRDs.
    crds: PathBuf,
    /// kwok's pod and node stages.
    kwok_stages: PathBuf,
}

impl Programs {
    /// Everything but the control plane; kube-scheduler of Kubernetes `minor`.
    fn locate(minor: KubeMinor) -> Result<Self, OlmError> {
        let scheduler = minor.tool_path(Tool::KubeScheduler);
        Ok(Programs {
            scheduler: scheduler.map_err(crate::control_plane::EnvError::from)?,
            kwok: Tool::Kwok.path()?,
            olm_operator: Tool::OlmOperator.path()?,
            catalog_operator: Tool::CatalogOperator.path()?,
            crds: ToolData::OlmCrds.path()?,
            kwok_stages: ToolData::KwokStages.path()?,
        })
    }
}

/// Creates OLM's CRDs at once and waits for them in parallel (each for its own Established
/// condition), while the namespaces are created.
async fn install_crds_and_namespaces(
    env: &TestEnv,
    client: &Client,
    crds_dir: &Path,
    operator_namespace: &str,
) -> Result<(), OlmError> {
    let crds = read_crds(crds_dir)?;
    let (installed, namespaces) = tokio::join!(
        futures::future::try_join_all(crds.iter().map(|crd| env.install_crd(crd))),
        futures::future::try_join_all(
            [CATALOG_NAMESPACE, operator_namespace].map(|ns| create_namespace(client, ns))
        ),
    );
    installed?;
    namespaces?;
    Ok(())
}

/// kube-scheduler, without leader election or a serving port.
fn start_scheduler(bin: &Path, kubeconfig: &str, dir: &Path) -> Result<ChildProcess, OlmError> {
    let mut scheduler = ChildProcess::start(
        "kube-scheduler",
        bin,
        &[
            format!("--kubeconfig={kubeconfig}"),
            "--leader-elect=false".to_owned(),
            "--secure-port=0".to_owned(),
        ],
        &dir.join("scheduler.log"),
    )?;
    scheduler.check_running()?;
    Ok(scheduler)
}

/// The fake node: kwok manages it, the in-process kubelet runs its pods; returns once the
/// node is ready and untainted.
async fn start_node(
    client: &Client,
    programs: &Programs,
    kubeconfig: &str,
    dir: &Path,
    roles: &[String],
) -> Result<(ChildProcess, AbortOnDrop), OlmError> {
    let kwok_config = dir.join("kwok.yaml");
    write(&kwok_config, &kwok_config_text(&programs.kwok_stages)?)?;
    let mut kwok = ChildProcess::start(
        "kwok",
        &programs.kwok,
        &[
            format!("--kubeconfig={kubeconfig}"),
            format!("--config={}", kwok_config.display()),
            "--manage-all-nodes=false".to_owned(),
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake".to_owned(),
            "--cidr=10.244.0.1/24".to_owned(),
            "--node-ip=10.244.0.1".to_owned(),
        ],
        &dir.join("kwok.log"),
    )?;
    create_node(client, roles).await?;
    let kubelet = AbortOnDrop(tokio::spawn(kubelet::run(client.clone())));
    let nodes: Api<Node> = Api::all(client.clone());
    wait_until(&mut kwok, READY_TIMEOUT, || {
        let nodes = nodes.clone();
        async move { matches!(nodes.get_opt(NODE).await, Ok(Some(node)) if node_ready(&node)) }
    })
    .await?;
    // The apiserver taints new nodes not-ready; kube-controller-manager's node lifecycle
    // controller would lift it, but it would also evict pods of a node without kubelet
    // heartbeats, so it does not run and the taint is lifted here.
    nodes
        .patch(
            NODE,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": null}})),
        )
        .await
        .map_err(OlmError::api(format!("untaint Node {NODE}")))?;
    Ok((kwok, kubelet))
}

/// olm-operator and catalog-operator, both watching [`CATALOG_NAMESPACE`] for global catalogs.
fn start_olm(
    programs: &Programs,
    kubeconfig: &str,
    dir: &Path,
    install_plan_retry: Duration,
) -> Result<(ChildProcess, ChildProcess), OlmError> {
    let olm_operator = ChildProcess::start_with_env(
        "olm-operator",
        &programs.olm_operator,
        &[
            format!("--namespace={CATALOG_NAMESPACE}"),
            "--writeStatusName=".to_owned(),
            "--writePackageServerStatusName=".to_owned(),
        ],
        &[("KUBECONFIG".to_owned(), kubeconfig.to_owned())],
        &dir.join("olm-operator.log"),
    )?;
    let catalog_operator = ChildProcess::start(
        "catalog-operator",
        &programs.catalog_operator,
        &[
            format!("--kubeconfig={kubeconfig}"),
            format!("--namespace={CATALOG_NAMESPACE}"),
            "--writeStatusName=".to_owned(),
            format!(
                "--install-plan-retry-timeout={}ms",
                install_plan_retry.as_millis()
            ),
        ],
        &dir.join("catalog-operator.log"),
    )?;
    Ok((olm_operator, catalog_operator))
}

/// A background task that ends with its owner.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn write(path: &Path, contents: &str) -> Result<(), OlmError> {
    std::fs::write(path, contents).map_err(|source| OlmError::Write {
        path: path.to_owned(),
        source,
    })
}

fn read(path: &Path) -> Result<String, OlmError> {
    std::fs::read_to_string(path).map_err(|source| OlmError::Read {
        path: path.to_owned(),
        source,
    })
}

/// The `*.yaml` files of `dir`, sorted by name.
fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>, OlmError> {
    let entries = std::fs::read_dir(dir).map_err(|source| OlmError::Read {
        path: dir.to_owned(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    Ok(files)
}

fn read_crds(dir: &Path) -> Result<Vec<CustomResourceDefinition>, OlmError> {
    yaml_files(dir)?
        .into_iter()
        .map(|path| {
            let text = read(&path)?;
            serde_saphyr::from_str(&text).map_err(|err| OlmError::Invalid {
                path,
                message: err.to_string(),
            })
        })
        .collect()
}

/// Every stage file of `dir` as one multi-document stream (kwok's `--config`), with the
/// `pod-ready` stage gated on the kubelet stand-in's admission (see [`super::kubelet`]).
fn kwok_config_text(dir: &Path) -> Result<String, OlmError> {
    let mut out = String::new();
    let mut gated = false;
    for path in yaml_files(dir)? {
        let mut stage = read(&path)?;
        if path.file_name().is_some_and(|n| n == "pod-ready.yaml") {
            stage = kubelet::gate_pod_ready(&stage).ok_or_else(|| OlmError::Invalid {
                path: path.clone(),
                message: "kwok's pod-ready stage has no selector to extend".to_owned(),
            })?;
            gated = true;
        }
        out.push_str("---\n");
        out.push_str(&stage);
        out.push('\n');
    }
    if !gated {
        return Err(OlmError::Invalid {
            path: dir.join("pod-ready.yaml"),
            message: "kwok's pod-ready stage is missing".to_owned(),
        });
    }
    Ok(out)
}

async fn create_namespace(client: &Client, name: &str) -> Result<(), OlmError> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))
        .expect("a static Namespace is valid");
    api.create(&PostParams::default(), &ns)
        .await
        .map_err(OlmError::api(format!("create Namespace {name}")))?;
    Ok(())
}

async fn create_node(client: &Client, roles: &[String]) -> Result<(), OlmError> {
    let api: Api<Node> = Api::all(client.clone());
    let mut labels = json!({"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok"});
    for role in roles {
        labels[format!("node-role.kubernetes.io/{role}")] = json!("");
    }
    let node: Node = serde_json::from_value(json!({
        "metadata": {
            "name": NODE,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": labels,
        },
    }))
    .expect("a Node with string labels is valid");
    api.create(&PostParams::default(), &node)
        .await
        .map_err(OlmError::api(format!("create Node {NODE}")))?;
    Ok(())
}

fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The operator namespace's OperatorGroup for `mode`, after the namespaces it targets.
async fn create_operator_group(
    client: &Client,
    namespaces: &Namespaces,
    mode: InstallModeType,
) -> Result<(), OlmError> {
    let operator = namespaces.operator.as_str();
    let targets = namespaces.targeted(mode);
    for ns in targets.iter().filter(|ns| **ns != operator) {
        create_namespace(client, ns).await?;
    }
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), operator, &resources::operator_group());
    let spec = if targets.is_empty() {
        json!({})
    } else {
        json!({"targetNamespaces": targets})
    };
    let group = json!({
        "apiVersion": "operators.coreos.com/v1",
        "kind": "OperatorGroup",
        "metadata": {"name": operator_group::NAME, "namespace": operator},
        "spec": spec,
    });
    api.patch(
        operator_group::NAME,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&group),
    )
    .await
    .map_err(OlmError::api(format!("create the {mode} OperatorGroup")))?;
    Ok(())
}

/// OLM copies an AllNamespaces CSV into every namespace unless told not to; the copies cost
/// time and say nothing about the operator.
async fn disable_copied_csvs(client: &Client) -> Result<(), OlmError> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resources::olm_config());
    let config = json!({
        "apiVersion": "operators.coreos.com/v1",
        "kind": "OLMConfig",
        "metadata": {"name": "cluster"},
        "spec": {"features": {"disableCopiedCSVs": true}},
    });
    api.patch(
        "cluster",
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&config),
    )
    .await
    .map_err(OlmError::api("configure OLMConfig cluster"))?;
    Ok(())
}

async fn tcp_open(port: u16) -> bool {
    tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_ok()
}
