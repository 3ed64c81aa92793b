//! [`TestEnv`]: a real etcd + kube-apiserver (+ optionally kube-controller-manager) per test.
//!
//! Guarantees:
//! - Everything lives in one temp directory (`$TMPDIR/olmpack-env-*`): etcd data, PKI,
//!   kubeconfig, process logs. Dropping the [`TestEnv`] kills every process it started (by PID,
//!   also while a test unwinds from a panic) and removes that directory.
//! - Ports are chosen free on 127.0.0.1; a start that loses a port race is retried with new
//!   ports, so any number of environments can run at once, in one process or in many.
//! - The API server authorizes with `Node,RBAC`. The admin client authenticates with a client
//!   certificate in `system:masters`; [`TestEnv::client_as`] impersonates any other user.
//!
//! Assumptions: the binaries are found as described in [`crate::binaries`]. The processes are
//! killed, not shut down gracefully: a test environment's data is never reused.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine as _;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::binaries::{KubeMinor, KubeMinorNotInstalled, Tool, ToolNotFound};
use crate::pki::{CertificateAuthority, PkiError};
use crate::process::{ChildProcess, ProcessError, free_port, wait_until};

/// How long each component may take to become ready.
const START_TIMEOUT: Duration = Duration::from_secs(90);
/// How many times a start is retried with fresh ports after a failure.
const START_ATTEMPTS: usize = 3;

/// Failure to start or use a test environment.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error(transparent)]
    ToolNotFound(#[from] ToolNotFound),
    #[error(transparent)]
    KubeMinorNotInstalled(#[from] KubeMinorNotInstalled),
    #[error("failed to create the test environment's certificates")]
    Pki(#[from] PkiError),
    #[error("failed to write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to create a temp directory")]
    TempDir(#[source] std::io::Error),
    #[error("failed to pick a free port")]
    Port(#[source] std::io::Error),
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error("failed to build a client from the kubeconfig")]
    Kubeconfig(#[source] kube::config::KubeconfigError),
    #[error("failed to create a Kubernetes client")]
    Client(#[source] kube::Error),
    #[error("the test environment did not start after {attempts} attempts")]
    GaveUp {
        attempts: usize,
        #[source]
        last: Box<EnvError>,
    },
    #[error("failed to install CustomResourceDefinition {name}")]
    InstallCrd {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("CustomResourceDefinition {name} was not established after {waited:?}")]
    CrdNotEstablished { name: String, waited: Duration },
}

/// Options for [`TestEnv::start_with`].
#[derive(Clone, Debug, Default)]
pub struct TestEnvOptions {
    /// Also run kube-controller-manager with the garbage collector, namespace, service
    /// account, deployment and root-CA publisher controllers (no scheduler or kubelet here:
    /// pods never run; [`crate::olm::v0::OlmEnv`] adds both).
    pub controller_manager: bool,
    /// Extra `--flag=value` arguments for kube-apiserver.
    pub apiserver_args: Vec<String>,
    /// The Kubernetes minor whose kube-apiserver and kube-controller-manager run (`None`:
    /// the default one `tools.toml` pins).
    pub kubernetes: Option<KubeMinor>,
}

/// A running control plane. See the module docs for its guarantees.
pub struct TestEnv {
    // Field order is drop order: processes die before their directory is removed.
    controller_manager: Option<ChildProcess>,
    apiserver: ChildProcess,
    etcd: ChildProcess,
    ca: CertificateAuthority,
    kubernetes: KubeMinor,
    config: Config,
    client: Client,
    kubeconfig: PathBuf,
    server: String,
    dir: tempfile::TempDir,
}

impl std::fmt::Debug for TestEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestEnv")
            .field("server", &self.server)
            .field("dir", &self.dir.path())
            .field("pids", &self.pids())
            .finish_non_exhaustive()
    }
}

impl TestEnv {
    /// Starts etcd and kube-apiserver and waits until the API server is ready.
    pub async fn start() -> Result<Self, EnvError> {
        Self::start_with(TestEnvOptions::default()).await
    }

    /// Starts an environment with `options`; see [`TestEnvOptions`].
    pub async fn start_with(options: TestEnvOptions) -> Result<Self, EnvError> {
        crate::install_crypto_provider();
        let mut last = None;
        for _ in 0..START_ATTEMPTS {
            match Self::try_start(&options).await {
                Ok(env) => return Ok(env),
                // Missing binaries will not appear on a retry.
                Err(err @ (EnvError::ToolNotFound(_) | EnvError::KubeMinorNotInstalled(_))) => {
                    return Err(err);
                }
                Err(err) => {
                    tracing::warn!(error = %err, "test environment failed to start; retrying");
                    last = Some(err);
                }
            }
        }
        Err(EnvError::GaveUp {
            attempts: START_ATTEMPTS,
            last: Box::new(last.expect("at least one attempt ran")),
        })
    }

    async fn try_start(options: &TestEnvOptions) -> Result<Self, EnvError> {
        let kubernetes = options.kubernetes.unwrap_or_default();
        let etcd_bin = Tool::Etcd.path()?;
        let apiserver_bin = kube_binary(kubernetes, Tool::KubeApiserver)?;
        let kcm_bin = if options.controller_manager {
            Some(kube_binary(kubernetes, Tool::KubeControllerManager)?)
        } else {
            None
        };

        let dir = tempfile::Builder::new()
            .prefix("olmpack-env-")
            .tempdir()
            .map_err(EnvError::TempDir)?;
        let path = dir.path();
        let pki = Pki::write(path)?;
        let (etcd, client_url) = start_etcd(&etcd_bin, path).await?;

        // kube-apiserver
        let port = free_port().map_err(EnvError::Port)?;
        let args = apiserver_args(options, &client_url, port, path, &pki);
        let mut apiserver = ChildProcess::start(
            "kube-apiserver",
            &apiserver_bin,
            &args,
            &path.join("apiserver.log"),
        )?;

        let server = format!("https://127.0.0.1:{port}");
        let kubeconfig_text = kubeconfig_json(
            &server,
            pki.ca.cert_pem(),
            &pki.admin.cert_pem,
            &pki.admin.key_pem,
        );
        let kubeconfig = write(path, "admin.kubeconfig", &kubeconfig_text)?;
        let config = config_from(&kubeconfig_text).await?;
        let client = Client::try_from(config.clone()).map_err(EnvError::Client)?;
        wait_until(&mut apiserver, START_TIMEOUT, || readyz(&client)).await?;

        let controller_manager = match kcm_bin {
            Some(bin) => {
                let keys = (pki.sa_key_file.as_path(), pki.ca_file.as_path());
                let kcm = ControllerManager {
                    bin: &bin,
                    kubernetes,
                    keys,
                };
                Some(kcm.start(path, &kubeconfig, &client).await?)
            }
            None => None,
        };

        Ok(Self {
            controller_manager,
            apiserver,
            etcd,
            ca: pki.ca,
            kubernetes,
            config,
            client,
            kubeconfig,
            server,
            dir,
        })
    }

    /// A client authenticated as the cluster admin (`system:masters`).
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// The Kubernetes minor this control plane runs.
    pub fn kubernetes(&self) -> KubeMinor {
        self.kubernetes
    }

    /// The admin client's configuration, e.g. to derive clients with other settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// A client that impersonates `user` in `groups` (subject to RBAC like that user).
    pub fn client_as(&self, user: &str, groups: &[&str]) -> Result<Client, EnvError> {
        let mut config = self.config.clone();
        config.auth_info.impersonate = Some(user.to_owned());
        config.auth_info.impersonate_groups =
            Some(groups.iter().map(|g| (*g).to_owned()).collect());
        Client::try_from(config).map_err(EnvError::Client)
    }

    /// A client that acts as ServiceAccount `namespace/name`, with the groups the API server
    /// gives a real service-account token.
    pub fn client_as_service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Client, EnvError> {
        self.client_as(
            &format!("system:serviceaccount:{namespace}:{name}"),
            &[
                "system:serviceaccounts",
                &format!("system:serviceaccounts:{namespace}"),
                "system:authenticated",
            ],
        )
    }

    /// The path of an admin kubeconfig file (for other tools: opm, kubectl, operators).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The API server's URL, `https://127.0.0.1:<port>`.
    pub fn server_url(&self) -> &str {
        &self.server
    }

    /// The CA that signed the API server's certificate; it can issue more certificates
    /// (webhook servers, clients) that the API server trusts.
    pub fn ca(&self) -> &CertificateAuthority {
        &self.ca
    }

    /// The directory holding this environment's data and logs (removed on drop).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The PIDs of every process this environment started.
    pub fn pids(&self) -> Vec<u32> {
        let mut pids = vec![self.etcd.pid(), self.apiserver.pid()];
        pids.extend(self.controller_manager.as_ref().map(ChildProcess::pid));
        pids
    }

    /// The end of the API server's log, for failure messages.
    pub fn apiserver_log_tail(&self) -> String {
        self.apiserver.log_tail()
    }

    /// Stops kube-controller-manager, when one runs, and starts it anew: its garbage
    /// collector then watches every kind served now, the kinds of CRDs installed since the
    /// environment came up among them (it would otherwise find those only at its next
    /// discovery resync, every 30 s, and until then not act on their objects' deletion).
    pub async fn restart_controller_manager(&mut self) -> Result<(), EnvError> {
        let Some(running) = self.controller_manager.take() else {
            return Ok(());
        };
        drop(running);
        let bin = kube_binary(self.kubernetes, Tool::KubeControllerManager)?;
        let path = self.dir.path();
        let keys = (path.join("sa.key"), path.join("ca.crt"));
        let kcm = ControllerManager {
            bin: &bin,
            kubernetes: self.kubernetes,
            keys: (&keys.0, &keys.1),
        }
        .start(path, &self.kubeconfig, &self.client)
        .await?;
        self.controller_manager = Some(kcm);
        Ok(())
    }

    /// Creates (or replaces) a CRD and waits until it is established and served.
    pub async fn install_crd(&self, crd: &CustomResourceDefinition) -> Result<(), EnvError> {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let api: Api<CustomResourceDefinition> = Api::all(self.client());
        let install_err = |source| EnvError::InstallCrd {
            name: name.clone(),
            source,
        };
        match api.get_opt(&name).await.map_err(install_err)? {
            Some(existing) => {
                let mut crd = crd.clone();
                crd.metadata.resource_version = existing.metadata.resource_version;
                api.replace(&name, &PostParams::default(), &crd)
                    .await
                    .map_err(install_err)?;
            }
            None => {
                api.create(&PostParams::default(), crd)
                    .await
                    .map_err(install_err)?;
            }
        }
        let started = Instant::now();
        loop {
            if let Ok(Some(current)) = api.get_opt(&name).await
                && crd_condition_true(&current, "Established")
            {
                return Ok(());
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(EnvError::CrdNotEstablished {
                    name,
                    waited: START_TIMEOUT,
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// One environment's PKI, written to its directory: one CA for serving and client
/// certificates, and one service-account signing key.
struct Pki {
    ca: CertificateAuthority,
    /// The `system:masters` client certificate.
    admin: crate::pki::CertifiedKey,
    ca_file: PathBuf,
    cert_file: PathBuf,
    key_file: PathBuf,
    sa_key_file: PathBuf,
    sa_pub_file: PathBuf,
}

impl Pki {
    /// Issues the certificates and keys and writes them under `path`.
    fn write(path: &Path) -> Result<Self, EnvError> {
        let ca = CertificateAuthority::new("olmpack-test-ca")?;
        let serving = ca.issue_server(&[
            "127.0.0.1",
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "10.0.0.1",
        ])?;
        let admin = ca.issue_client("olmpack-admin", &["system:masters"])?;
        let ca_file = write(path, "ca.crt", ca.cert_pem())?;
        let cert_file = write(path, "apiserver.crt", &serving.cert_pem)?;
        let key_file = write(path, "apiserver.key", &serving.key_pem)?;
        let (sa_private, sa_public) = crate::pki::key_pair_pem()?;
        let sa_key_file = write(path, "sa.key", &sa_private)?;
        let sa_pub_file = write(path, "sa.pub", &sa_public)?;
        Ok(Self {
            ca,
            admin,
            ca_file,
            cert_file,
            key_file,
            sa_key_file,
            sa_pub_file,
        })
    }
}

/// Starts a single-member etcd with its data under `path` and waits until it is healthy;
/// returns the process and its client URL.
async fn start_etcd(bin: &Path, path: &Path) -> Result<(ChildProcess, String), EnvError> {
    let etcd_client = free_port().map_err(EnvError::Port)?;
    let etcd_peer = free_port().map_err(EnvError::Port)?;
    let client_url = format!("http://127.0.0.1:{etcd_client}");
    let peer_url = format!("http://127.0.0.1:{etcd_peer}");
    let mut etcd = ChildProcess::start(
        "etcd",
        bin,
        &[
            "--name=default".to_owned(),
            format!("--data-dir={}", path.join("etcd").display()),
            format!("--listen-client-urls={client_url}"),
            format!("--advertise-client-urls={client_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=default={peer_url}"),
            "--unsafe-no-fsync=true".to_owned(),
            "--log-level=warn".to_owned(),
        ],
        &path.join("etcd.log"),
    )?;
    wait_until(&mut etcd, START_TIMEOUT, || etcd_healthy(etcd_client)).await?;
    Ok((etcd, client_url))
}

/// kube-apiserver's command line: serving on `port` with the environment's PKI, RBAC, and
/// the caller's extra arguments last. The same for every pinned minor: 1.27's apiserver
/// takes each of these flags.
fn apiserver_args(
    options: &TestEnvOptions,
    etcd_url: &str,
    port: u16,
    path: &Path,
    pki: &Pki,
) -> Vec<String> {
    let mut args = vec![
        format!("--etcd-servers={etcd_url}"),
        "--bind-address=127.0.0.1".to_owned(),
        "--advertise-address=127.0.0.1".to_owned(),
        format!("--secure-port={port}"),
        format!("--cert-dir={}", path.join("apiserver-certs").display()),
        format!("--tls-cert-file={}", pki.cert_file.display()),
        format!("--tls-private-key-file={}", pki.key_file.display()),
        format!("--client-ca-file={}", pki.ca_file.display()),
        "--authorization-mode=Node,RBAC".to_owned(),
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local".to_owned(),
        format!("--service-account-key-file={}", pki.sa_pub_file.display()),
        format!(
            "--service-account-signing-key-file={}",
            pki.sa_key_file.display()
        ),
        "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
        "--allow-privileged=true".to_owned(),
        "--endpoint-reconciler-type=none".to_owned(),
        "--enable-priority-and-fairness=false".to_owned(),
        "--profiling=false".to_owned(),
    ];
    if !options.controller_manager {
        // Without the service-account controllers no namespace has a default
        // ServiceAccount, and this plugin would reject every pod.
        args.push("--disable-admission-plugins=ServiceAccount".to_owned());
    }
    args.extend(options.apiserver_args.iter().cloned());
    args
}

/// The binary or cache path of `tool` of `kubernetes`: the default minor's as [`Tool::path`]
/// finds it, another's from the tool cache.
fn kube_binary(kubernetes: KubeMinor, tool: Tool) -> Result<PathBuf, EnvError> {
    if kubernetes.is_default() {
        Ok(tool.path()?)
    } else {
        Ok(kubernetes.tool_path(tool)?)
    }
}

/// The controllers the tests rely on, as `--controllers` of `kubernetes` names them: 1.28
/// renamed them (`garbagecollector` became `garbage-collector-controller`, …; the old names
/// stay as aliases), and 1.27 knows only the old names (its `NewControllerInitializers`).
fn controllers(kubernetes: KubeMinor) -> &'static str {
    if kubernetes.minor() < 28 {
        "garbagecollector,namespace,serviceaccount,serviceaccount-token,deployment,replicaset,root-ca-cert-publisher"
    } else {
        "garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller,deployment-controller,replicaset-controller,root-ca-certificate-publisher-controller"
    }
}

/// A kube-controller-manager to start: its binary, its minor, and the service-account
/// signing key and CA files.
struct ControllerManager<'a> {
    bin: &'a Path,
    kubernetes: KubeMinor,
    keys: (&'a Path, &'a Path),
}

impl ControllerManager<'_> {
    /// Starts kube-controller-manager with the controllers the tests rely on and waits until
    /// they run.
    async fn start(
        &self,
        path: &Path,
        kubeconfig: &Path,
        client: &Client,
    ) -> Result<ChildProcess, EnvError> {
        let (sa_key_file, ca_file) = self.keys;
        let mut kcm = ChildProcess::start(
            "kube-controller-manager",
            self.bin,
            &[
                format!("--kubeconfig={}", kubeconfig.display()),
                format!("--controllers={}", controllers(self.kubernetes)),
                format!(
                    "--service-account-private-key-file={}",
                    sa_key_file.display()
                ),
                format!("--root-ca-file={}", ca_file.display()),
                "--leader-elect=false".to_owned(),
                "--secure-port=0".to_owned(),
                "--use-service-account-credentials=false".to_owned(),
            ],
            &path.join("controller-manager.log"),
        )?;
        // The service-account controller creating `default` in `default` shows the
        // controllers are connected and running.
        let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
        wait_until(&mut kcm, START_TIMEOUT, || {
            let accounts = accounts.clone();
            async move { matches!(accounts.get_opt("default").await, Ok(Some(_))) }
        })
        .await?;
        Ok(kcm)
    }
}

fn write(dir: &Path, name: &str, contents: &str) -> Result<PathBuf, EnvError> {
    let path = dir.join(name);
    std::fs::write(&path, contents).map_err(|source| EnvError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// A kubeconfig (JSON, which every YAML reader also reads) with embedded credentials.
fn kubeconfig_json(server: &str, ca_pem: &str, cert_pem: &str, key_pem: &str) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": "olmpack-test",
            "cluster": {"server": server, "certificate-authority-data": b64(ca_pem)},
        }],
        "users": [{
            "name": "olmpack-admin",
            "user": {"client-certificate-data": b64(cert_pem), "client-key-data": b64(key_pem)},
        }],
        "contexts": [{
            "name": "olmpack-test",
            "context": {"cluster": "olmpack-test", "user": "olmpack-admin"},
        }],
        "current-context": "olmpack-test",
    })
    .to_string()
}

async fn config_from(kubeconfig: &str) -> Result<Config, EnvError> {
    let parsed = Kubeconfig::from_yaml(kubeconfig).map_err(EnvError::Kubeconfig)?;
    Config::from_custom_kubeconfig(parsed, &KubeConfigOptions::default())
        .await
        .map_err(EnvError::Kubeconfig)
}

/// Whether the apiserver answers `/readyz` with `ok`. Until it does, every probe fails
/// (connection refused, then 500s while its post-start hooks run); the kube client logs each
/// failure as an error, so the probes run without a tracing subscriber.
async fn readyz(client: &Client) -> bool {
    use tracing::instrument::WithSubscriber as _;
    let request = http::Request::get("/readyz")
        .body(Vec::new())
        .expect("a static request is valid");
    let probe = tokio::time::timeout(Duration::from_secs(5), client.request_text(request))
        .with_subscriber(tracing::subscriber::NoSubscriber::default());
    matches!(probe.await, Ok(Ok(body)) if body.trim() == "ok")
}

/// etcd's `/health` over plain HTTP/1.0 (no client library needed for one GET).
async fn etcd_healthy(port: u16) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let probe = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        stream
            .write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await.ok()?;
        Some(response.contains("\"health\":\"true\""))
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(2), probe).await,
        Ok(Some(true))
    )
}

/// Whether `crd`'s status has condition `kind` (`Established`, `NamesAccepted`, …) `True`.
pub(crate) fn crd_condition_true(crd: &CustomResourceDefinition, kind: &str) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == kind && c.status == "True")
}
