//! Starting the components of an [`OlmV1Env`] and reading OLM v1's objects back.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

use super::{Condition, OlmError, SYSTEM_NAMESPACE, conditions, registries_conf};
use crate::binaries::{KubeMinor, Tool, ToolData};
use crate::control_plane::{TestEnv, TestEnvOptions};
use crate::olm::webhooks::{WebhookCommand, WebhookHost};
use crate::process::{ChildProcess, free_port};
use crate::service_ca::{ServiceCa, ServiceCaTask};

/// How long a component may take to come up.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// Field manager of everything this environment applies.
const MANAGER: &str = "olmpack";
/// The path of catalogd's mutating webhook (OLM's own manifest names it).
const CATALOGD_WEBHOOK_PATH: &str = "/mutate-olm-operatorframework-io-v1-clustercatalog";
/// The feature gates operator-controller runs with (module docs): the certificate provider of
/// bundles' webhooks is OpenShift's service-ca, not cert-manager (on by default, its
/// `Certificate` and `Issuer` kinds are not served here); OwnNamespace and SingleNamespace
/// installs (a `watchNamespace` in the ClusterExtension's config) are on (alpha).
const OPERATOR_CONTROLLER_GATES: &str = "WebhookProviderCertManager=false,WebhookProviderOpenshiftServiceCA=true,SingleOwnNamespaceInstallSupport=true";

/// A running OLM v1 environment. See the [module docs](super).
pub struct OlmV1Env {
    // Field order is drop order: the operator's processes, OLM v1's, then the control plane.
    webhooks: Option<WebhookHost>,
    /// The CRDs of [`Self::install_cluster_crd`]: the cluster's, not an operator's.
    cluster_crds: Vec<String>,
    /// What olmpack did to OLM v1's objects during a step, for the report.
    pub(super) notes: Vec<String>,
    operator_controller: ChildProcess,
    catalogd: ChildProcess,
    service_ca: ServiceCaTask,
    env: TestEnv,
}

impl std::fmt::Debug for OlmV1Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OlmV1Env")
            .field("env", &self.env)
            .finish_non_exhaustive()
    }
}

/// Where a component's files are, and what it runs as.
struct Component<'a> {
    name: &'a str,
    service_account: &'a str,
    program: PathBuf,
}

impl OlmV1Env {
    /// Starts the control plane of the default Kubernetes minor, OLM v1's CRDs, catalogd and
    /// operator-controller; images are pulled from `insecure_registries` (`host:port`) over
    /// plain HTTP.
    pub async fn start(insecure_registries: &[String]) -> Result<Self, OlmError> {
        Self::start_on(insecure_registries, KubeMinor::default()).await
    }

    /// As [`Self::start`], on the control plane of Kubernetes `kubernetes`.
    pub async fn start_on(
        insecure_registries: &[String],
        kubernetes: KubeMinor,
    ) -> Result<Self, OlmError> {
        let catalogd = Tool::Catalogd.path()?;
        let operator_controller = Tool::OperatorController.path()?;
        // The experimental set: a ClusterExtension's `config` (watchNamespace) is in it.
        let crds = ToolData::OlmV1ExperimentalCrds.path()?;
        // With the garbage collector, as in a cluster: a deleted ClusterExtension's objects
        // (each owned by it) go with it.
        // Webhook calls go to the endpoints of a Service (the operator's process, see
        // [`Self::host_webhooks`]), as in OLM v0's environment.
        let mut env = TestEnv::start_with(TestEnvOptions {
            controller_manager: true,
            apiserver_args: vec!["--enable-aggregator-routing=true".to_owned()],
            kubernetes: Some(kubernetes),
        })
        .await?;
        install_crds(&env, &crds).await?;
        // So that its garbage collector watches ClusterExtensions from the start.
        env.restart_controller_manager().await?;
        let client = env.client();
        create(
            &client,
            namespace(SYSTEM_NAMESPACE),
            "create the OLM v1 namespace",
        )
        .await?;
        let dir = env.dir().join("olmv1");
        let conf = dir.join("registries.conf");
        write(&conf, &registries_conf(insecure_registries))?;
        let tls = dir.join("tls");
        let served = env.ca().issue_server(&["127.0.0.1", "localhost"])?;
        write(&tls.join("tls.crt"), &served.cert_pem)?;
        write(&tls.join("tls.key"), &served.key_pem)?;
        write(&dir.join("ca/ca.crt"), env.ca().cert_pem())?;
        let ports = [free_port(), free_port(), free_port()];
        let [catalogs, webhook, metrics] = ports.map(|p| p.map_err(OlmError::Port));
        let (catalogs, webhook, metrics) = (catalogs?, webhook?, metrics?);
        let catalogd_args = vec![
            format!("--catalogs-server-addr=127.0.0.1:{catalogs}"),
            format!("--external-address=127.0.0.1:{catalogs}"),
            format!("--webhook-server-port={webhook}"),
            format!("--metrics-bind-address=127.0.0.1:{metrics}"),
            "--health-probe-bind-address=0".to_owned(),
            format!("--system-namespace={SYSTEM_NAMESPACE}"),
            format!("--tls-cert={}", tls.join("tls.crt").display()),
            format!("--tls-key={}", tls.join("tls.key").display()),
            format!("--cache-dir={}", dir.join("catalogd-cache").display()),
        ];
        let component = Component {
            name: "catalogd",
            service_account: "catalogd-controller-manager",
            program: catalogd,
        };
        let mut catalogd = start_component(&env, &component, &catalogd_args, &conf).await?;
        wait_for_port(&mut catalogd, webhook).await?;
        register_catalogd_webhook(&env, webhook).await?;
        let mut operator_controller =
            start_operator_controller(&env, operator_controller, &dir, &conf).await?;
        operator_controller.check_running()?;
        // The certificate provider operator-controller is started with.
        let service_ca = ServiceCa::new()?.spawn(client);
        Ok(Self {
            webhooks: None,
            cluster_crds: Vec::new(),
            notes: Vec::new(),
            operator_controller,
            catalogd,
            service_ca,
            env,
        })
    }

    /// Installs `crd` as a CRD the cluster already serves (another operator's API, such as
    /// prometheus-operator's ServiceMonitor): it stays for every install, never taken for
    /// an installed operator's ([`Self::operator_crds`]).
    pub async fn install_cluster_crd(
        &mut self,
        crd: &CustomResourceDefinition,
    ) -> Result<(), OlmError> {
        self.env.install_crd(crd).await?;
        self.cluster_crds
            .push(crd.metadata.name.clone().unwrap_or_default());
        Ok(())
    }

    /// What olmpack did to OLM v1's objects since the last call (e.g. deleting what a failed
    /// install attempt of OLM v1's left), one line each.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// The CRDs of [`Self::install_cluster_crd`].
    pub fn cluster_crds(&self) -> &[String] {
        &self.cluster_crds
    }

    /// Starts `command` as the process of every Deployment in `namespace` (OLM v0's host,
    /// [`crate::olm::webhooks`]; for a Deployment serving webhooks, with the serving
    /// certificate service-ca issued for its Service and an EndpointSlice to the process),
    /// replacing any hosting started before; `None` hosts nothing.
    pub fn host_webhooks(
        &mut self,
        namespace: &str,
        command: Option<WebhookCommand>,
    ) -> Result<(), OlmError> {
        self.stop_webhooks();
        let dir = self.env.dir().join(format!("webhooks-{namespace}"));
        let host = WebhookHost::start(
            self.client(),
            namespace,
            command,
            self.env.kubeconfig_path().to_owned(),
            dir,
        )?;
        self.webhooks = Some(host);
        Ok(())
    }

    /// Stops the webhook processes of [`Self::host_webhooks`].
    pub fn stop_webhooks(&mut self) {
        if let Some(mut host) = self.webhooks.take() {
            host.stop();
        }
    }

    /// The webhook host of [`Self::host_webhooks`], if hosting.
    pub fn webhooks(&self) -> Option<&WebhookHost> {
        self.webhooks.as_ref()
    }

    /// Waits until a process serves each of `deployments` in `namespace` at its current
    /// generation ([`WebhookHost::wait_serving`]) and service-ca's CA is in every object that
    /// asks for it ([`ServiceCaTask::uninjected`]); `Err` says why not.
    pub async fn wait_for_webhooks(
        &self,
        namespace: &str,
        deployments: &[String],
        timeout: Duration,
    ) -> Result<(), String> {
        let Some(host) = &self.webhooks else {
            return Err("no webhook command was given".to_owned());
        };
        let started = Instant::now();
        host.wait_serving(&self.client(), namespace, deployments, timeout)
            .await?;
        // service-ca injects its CA a moment after OLM v1 applies a webhook's configuration or
        // CRD (on a loaded machine the apiserver called a webhook before: "certificate signed
        // by unknown authority"); OLM v0 injects before it says the install succeeded.
        loop {
            let missing = self.service_ca.uninjected(&self.client()).await;
            let Some(first) = missing.first() else {
                return Ok(());
            };
            if started.elapsed() > timeout {
                return Err(format!(
                    "the service CA was not injected after {timeout:?}: {first} does not hold it"
                ));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// The control plane underneath.
    pub fn env(&self) -> &TestEnv {
        &self.env
    }

    /// An admin client.
    pub fn client(&self) -> Client {
        self.env.client()
    }

    /// The ends of catalogd's and operator-controller's logs, for failure messages.
    pub fn log_tails(&self) -> String {
        let webhooks = self.webhooks.as_ref().map(WebhookHost::log_tails);
        format!(
            "catalogd:\n{}\noperator-controller:\n{}\n{}",
            self.catalogd.log_tail(),
            self.operator_controller.log_tail(),
            webhooks.unwrap_or_default()
        )
    }

    /// `Err` when catalogd or operator-controller is no longer running.
    pub fn check_running(&mut self) -> Result<(), OlmError> {
        self.catalogd.check_running()?;
        self.operator_controller.check_running()?;
        Ok(())
    }

    /// The PIDs of every process this environment started.
    pub fn pids(&self) -> Vec<u32> {
        let mut pids = self.env.pids();
        pids.extend([self.catalogd.pid(), self.operator_controller.pid()]);
        pids.extend(self.webhooks.iter().flat_map(WebhookHost::pids));
        pids
    }

    /// Applies `object` (server-side apply, as olmpack); cluster-scoped or namespaced by its
    /// `metadata.namespace`.
    pub async fn apply(&self, object: &serde_json::Value) -> Result<(), OlmError> {
        let api = dynamic_api(&self.client(), object);
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        api.patch(
            name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(object),
        )
        .await
        .map(drop)
        .map_err(|source| OlmError::Api {
            action: format!(
                "apply {} {name}",
                object["kind"].as_str().unwrap_or("object")
            ),
            source,
        })
    }

    /// The conditions of the OLM v1 object `kind`/`name` (`ClusterCatalog` or
    /// `ClusterExtension`) and its whole body; `None` while it does not exist.
    pub async fn read(
        &self,
        kind: &str,
        name: &str,
    ) -> Result<Option<(Vec<Condition>, serde_json::Value)>, OlmError> {
        let gvk = GroupVersionKind::gvk("olm.operatorframework.io", "v1", kind);
        let resource = ApiResource::from_gvk(&gvk);
        let api: Api<DynamicObject> = Api::all_with(self.client(), &resource);
        let found = api.get_opt(name).await.map_err(|source| OlmError::Api {
            action: format!("read {kind} {name}"),
            source,
        })?;
        Ok(found.map(|object| {
            let value = serde_json::to_value(object).unwrap_or_default();
            (conditions(&value), value)
        }))
    }

    /// Polls `kind`/`name` until `done` says yes of its conditions and body (returned), or
    /// `timeout` passes (an error quoting the last conditions and the components' logs).
    pub async fn wait_for(
        &mut self,
        kind: &str,
        name: &str,
        timeout: Duration,
        done: impl Fn(&[Condition], &serde_json::Value) -> bool,
    ) -> Result<(Vec<Condition>, serde_json::Value), OlmError> {
        let started = Instant::now();
        let mut last = String::from("(not created)");
        loop {
            self.catalogd.check_running()?;
            self.operator_controller.check_running()?;
            if let Some((conditions, body)) = self.read(kind, name).await? {
                if done(&conditions, &body) {
                    return Ok((conditions, body));
                }
                last = conditions.iter().map(|c| format!("{c}; ")).collect();
            }
            if started.elapsed() > timeout {
                return Err(OlmError::Stalled {
                    what: format!("{kind} {name}"),
                    waited: timeout,
                    last,
                    logs: self.log_tails(),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Whether `conditions` hold `type_` with status `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == "True")
}

/// Starts operator-controller (`program`) with its caches under `dir`, trusting catalogd's CA
/// there, with [`OPERATOR_CONTROLLER_GATES`].
async fn start_operator_controller(
    env: &TestEnv,
    program: PathBuf,
    dir: &Path,
    conf: &Path,
) -> Result<ChildProcess, OlmError> {
    let args = vec![
        "--health-probe-bind-address=0".to_owned(),
        format!("--system-namespace={SYSTEM_NAMESPACE}"),
        format!("--catalogd-cas-dir={}", dir.join("ca").display()),
        format!(
            "--cache-path={}",
            dir.join("operator-controller-cache").display()
        ),
        format!("--feature-gates={OPERATOR_CONTROLLER_GATES}"),
    ];
    let component = Component {
        name: "operator-controller",
        service_account: "operator-controller-controller-manager",
        program,
    };
    start_component(env, &component, &args, conf).await
}

fn dynamic_api(client: &Client, object: &serde_json::Value) -> Api<DynamicObject> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = object["kind"].as_str().unwrap_or_default();
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

fn namespace(name: &str) -> Namespace {
    serde_json::from_value(json!({"metadata": {"name": name}})).unwrap_or_default()
}

async fn create<K>(client: &Client, object: K, action: &str) -> Result<(), OlmError>
where
    K: kube::Resource<Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    Api::<K>::all(client.clone())
        .create(&PostParams::default(), &object)
        .await
        .map(drop)
        .map_err(|source| OlmError::Api {
            action: action.to_owned(),
            source,
        })
}

fn write(path: &Path, text: &str) -> Result<(), OlmError> {
    let wrap = |source| OlmError::Write {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(wrap)?;
    }
    std::fs::write(path, text).map_err(wrap)
}

/// Installs every CRD of the `*.yaml` files in `dir`.
async fn install_crds(env: &TestEnv, dir: &Path) -> Result<(), OlmError> {
    let read_err = |path: &Path, source| OlmError::Read {
        path: path.to_owned(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| read_err(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| read_err(&file, e))?;
        let crd: CustomResourceDefinition =
            olmpack_model::yaml::from_str(&text).map_err(|e| OlmError::Invalid {
                path: file.clone(),
                message: format!("not a CustomResourceDefinition: {e}"),
            })?;
        env.install_crd(&crd).await?;
    }
    Ok(())
}

/// A token the apiserver mints for ServiceAccount `name` of [`SYSTEM_NAMESPACE`] (created).
async fn service_account_token(client: &Client, name: &str) -> Result<String, OlmError> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": name}})).unwrap_or_default();
    let api_err = |action: &str| {
        let action = format!("{action} ServiceAccount {SYSTEM_NAMESPACE}/{name}");
        move |source| OlmError::Api { action, source }
    };
    api.create(&PostParams::default(), &account)
        .await
        .map_err(api_err("create"))?;
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(24 * 3600),
            ..Default::default()
        }),
        ..Default::default()
    };
    let minted = api
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .map_err(api_err("mint a token for"))?;
    Ok(minted.status.and_then(|s| s.token).unwrap_or_default())
}

/// Starts `component` with `args` under `unshare --mount`, with its own directory bound over
/// `/var/run` holding its ServiceAccount token, namespace and CA (module docs).
async fn start_component(
    env: &TestEnv,
    component: &Component<'_>,
    args: &[String],
    registries_conf: &Path,
) -> Result<ChildProcess, OlmError> {
    let dir = env.dir().join("olmv1").join(component.name);
    let secrets = dir.join("run/secrets/kubernetes.io/serviceaccount");
    let token = service_account_token(&env.client(), component.service_account).await?;
    write(&secrets.join("token"), &token)?;
    write(&secrets.join("namespace"), SYSTEM_NAMESPACE)?;
    write(&secrets.join("ca.crt"), env.ca().cert_pem())?;
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).map_err(|source| OlmError::Write {
        path: tmp.clone(),
        source,
    })?;
    // The script binds the run directory, then becomes the component: `$0` is the directory,
    // `$@` the program and its arguments.
    let mut unshare_args = vec![
        "--mount".to_owned(),
        "--propagation=private".to_owned(),
        "sh".to_owned(),
        "-c".to_owned(),
        r#"mount --bind "$0" /var/run && exec "$@""#.to_owned(),
        dir.join("run").display().to_string(),
        component.program.display().to_string(),
    ];
    unshare_args.extend(args.iter().cloned());
    let vars = [
        ("KUBECONFIG", env.kubeconfig_path().display().to_string()),
        ("TMPDIR", tmp.display().to_string()),
        (
            "CONTAINERS_REGISTRIES_CONF",
            registries_conf.display().to_string(),
        ),
    ]
    .map(|(k, v)| (k.to_owned(), v));
    let mut process = ChildProcess::start_with_env(
        component.name,
        Path::new("unshare"),
        &unshare_args,
        &vars,
        &dir.join(format!("{}.log", component.name)),
    )?;
    process.check_running()?;
    Ok(process)
}

/// Waits until something listens on 127.0.0.1:`port` (the process still running).
async fn wait_for_port(process: &mut ChildProcess, port: u16) -> Result<(), OlmError> {
    crate::process::wait_until(process, READY_TIMEOUT, || async move {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
    })
    .await
    .map_err(OlmError::from)
}

/// Registers catalogd's mutating webhook (as OLM's manifest does) at its port on loopback.
async fn register_catalogd_webhook(env: &TestEnv, port: u16) -> Result<(), OlmError> {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(env.ca().cert_pem());
    let config = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "catalogd-mutating-webhook-configuration"},
        "webhooks": [{
            "name": "inject-metadata-name.olm.operatorframework.io",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {
                "url": format!("https://127.0.0.1:{port}{CATALOGD_WEBHOOK_PATH}"),
                "caBundle": ca,
            },
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "timeoutSeconds": 10,
            "rules": [{
                "apiGroups": ["olm.operatorframework.io"],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["clustercatalogs"],
            }],
        }],
    });
    let api = dynamic_api(&env.client(), &config);
    api.patch(
        "catalogd-mutating-webhook-configuration",
        &PatchParams::apply(MANAGER),
        &Patch::Apply(&config),
    )
    .await
    .map(drop)
    .map_err(|source| OlmError::Api {
        action: "register catalogd's mutating webhook".to_owned(),
        source,
    })
}
