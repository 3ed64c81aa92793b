//! A real control plane with the operator's CRD, RBAC and webhook server installed, and
//! in-process operator instances that act as the operator's ServiceAccount.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use olmpack_envtest::{control_plane::TestEnv, control_plane::TestEnvOptions};
use serde_json::json;
use webapp_operator::api::Version;
use webapp_operator::controller::{LeaderElection, Settings};
use webapp_operator::manifests::crd::{WebhookTarget, crd};
use webapp_operator::manifests::{NAME, rbac};
use webapp_operator::releases::OperatorRelease;
use webapp_operator::run::{self, Options, Running, TlsFiles};

/// The operator's namespace in tests.
pub const OPERATOR_NS: &str = "webapp-operator-system";
/// Where test WebApps live.
pub const APPS_NS: &str = "apps";

/// A control plane prepared for the operator.
pub struct Cluster {
    pub env: TestEnv,
    /// Webhook-only operator instance the CRD's conversion stanza points at.
    pub webhook: Running,
    pub cert_dir: tempfile::TempDir,
}

impl Cluster {
    /// The serving certificate files of [`Cluster::webhook`].
    pub fn cert_files(&self) -> (PathBuf, PathBuf) {
        (
            self.cert_dir.path().join("apiserver.crt"),
            self.cert_dir.path().join("apiserver.key"),
        )
    }

    /// `https://127.0.0.1:<port>` of the webhook server.
    pub fn webhook_url(&self) -> String {
        format!(
            "https://{}",
            self.webhook.webhook_addr.expect("webhook runs")
        )
    }

    /// A `kube::Config` that impersonates the operator's ServiceAccount (RBAC applies).
    pub fn operator_config(&self) -> kube::Config {
        let mut config = self.env.config().clone();
        config.auth_info.impersonate = Some(format!("system:serviceaccount:{OPERATOR_NS}:{NAME}"));
        config.auth_info.impersonate_groups = Some(vec![
            "system:serviceaccounts".to_owned(),
            format!("system:serviceaccounts:{OPERATOR_NS}"),
            "system:authenticated".to_owned(),
        ]);
        config
    }

    /// An admin `Api` for WebApps at `version` in [`APPS_NS`].
    pub fn webapps(&self, version: Version) -> Api<DynamicObject> {
        Api::namespaced_with(self.env.client(), APPS_NS, &resource(version))
    }

    /// Writes a kubeconfig that impersonates the operator's ServiceAccount (for the binary).
    pub fn operator_kubeconfig(&self) -> PathBuf {
        let text = std::fs::read_to_string(self.env.kubeconfig_path()).expect("kubeconfig");
        let mut value: serde_json::Value =
            serde_saphyr::from_str(&text).expect("kubeconfig parses");
        let user = &mut value["users"][0]["user"];
        user["as"] = json!(format!("system:serviceaccount:{OPERATOR_NS}:{NAME}"));
        user["as-groups"] = json!([
            "system:serviceaccounts",
            format!("system:serviceaccounts:{OPERATOR_NS}"),
            "system:authenticated"
        ]);
        let path = self.cert_dir.path().join("operator.kubeconfig");
        std::fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
        path
    }
}

/// The API resource of WebApps at `version`.
pub fn resource(version: Version) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps.olmpack.dev", version.name(), "WebApp"),
        "webapps",
    )
}

/// Polls `check` every 100 ms until it returns true; panics after `timeout`.
pub async fn eventually<F, Fut>(what: &str, timeout: Duration, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    eventually_or(what, timeout, check, String::new).await;
}

/// [`eventually`], with `context()` appended to the timeout's message.
async fn eventually_or<F, Fut>(
    what: &str,
    timeout: Duration,
    mut check: F,
    context: impl Fn() -> String,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}{}",
            context()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn localhost() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// Starts a control plane, creates the namespaces, applies the release's RBAC exactly as
/// `webapp-operator manifests` renders it, starts the webhook server on a certificate the
/// apiserver trusts and installs the release's CRD pointing at it.
pub async fn cluster(release: &OperatorRelease, controller_manager: bool) -> Cluster {
    cluster_with(
        release,
        TestEnvOptions {
            controller_manager,
            ..Default::default()
        },
    )
    .await
}

/// [`cluster`] on a control plane started with `options`.
pub async fn cluster_with(release: &OperatorRelease, options: TestEnvOptions) -> Cluster {
    olmpack_envtest::install_crypto_provider();
    let env = TestEnv::start_with(options)
        .await
        .expect("test environment starts");
    let client = env.client();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for ns in [OPERATOR_NS, APPS_NS] {
        let object: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
        namespaces
            .create(&PostParams::default(), &object)
            .await
            .unwrap();
    }
    let v = release.version;
    apply(&client, &rbac::service_account(OPERATOR_NS, v)).await;
    apply(&client, &rbac::cluster_role(v)).await;
    apply(&client, &rbac::cluster_role_binding(OPERATOR_NS, v)).await;
    apply(&client, &rbac::role(OPERATOR_NS, v)).await;
    apply(&client, &rbac::role_binding(OPERATOR_NS, v)).await;

    let cert_dir = tempfile::tempdir().unwrap();
    let cert = env.ca().issue_server(&["127.0.0.1"]).unwrap();
    std::fs::write(cert_dir.path().join("apiserver.crt"), &cert.cert_pem).unwrap();
    std::fs::write(cert_dir.path().join("apiserver.key"), &cert.key_pem).unwrap();
    let webhook = run::start(
        Options {
            settings: settings(None),
            webhook_addr: localhost(),
            tls: Some(TlsFiles {
                cert: cert_dir.path().join("apiserver.crt"),
                key: cert_dir.path().join("apiserver.key"),
                poll: Duration::from_millis(200),
            }),
            metrics_addr: localhost(),
            controller: false,
        },
        env.config().clone(),
    )
    .await
    .expect("webhook server starts");
    let url = format!("https://{}", webhook.webhook_addr.unwrap());
    let target = WebhookTarget::Url {
        url,
        ca_pem: env.ca().cert_pem().to_owned(),
    };
    env.install_crd(&crd(release, &target).unwrap())
        .await
        .expect("CRD is established");
    Cluster {
        env,
        webhook,
        cert_dir,
    }
}

async fn apply<K>(client: &kube::Client, object: &K)
where
    K: kube::Resource<DynamicType = ()>
        + serde::Serialize
        + serde::de::DeserializeOwned
        + Clone
        + std::fmt::Debug,
{
    let name = object.meta().name.clone().unwrap();
    let resource = ApiResource::erase::<K>(&());
    let api: Api<DynamicObject> = match &object.meta().namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let mut value = serde_json::to_value(object).unwrap();
    value["apiVersion"] = json!(K::api_version(&()));
    value["kind"] = json!(K::kind(&()));
    api.patch(
        &name,
        &PatchParams::apply("test-setup"),
        &Patch::Apply(&value),
    )
    .await
    .unwrap();
}

/// Controller settings for tests, with leader election when `identity` is given.
pub fn settings(identity: Option<&str>) -> Settings {
    Settings {
        operator_namespace: OPERATOR_NS.to_owned(),
        watch_namespace: None,
        leader_election: identity.map(|id| LeaderElection {
            identity: id.to_owned(),
            duration_secs: 4,
            grace_secs: 1,
        }),
        ..Settings::default()
    }
}

/// Starts an in-process operator (controller only) as the operator's ServiceAccount.
pub async fn start_operator(cluster: &Cluster, identity: Option<&str>) -> Running {
    run::start(
        Options {
            settings: settings(identity),
            webhook_addr: localhost(),
            tls: None,
            metrics_addr: localhost(),
            controller: true,
        },
        cluster.operator_config(),
    )
    .await
    .expect("operator starts")
}

/// Creates a WebApp at `version` from `spec`, retrying while the new CRD's endpoint settles.
pub async fn create_webapp(
    cluster: &Cluster,
    version: Version,
    name: &str,
    spec: serde_json::Value,
) -> DynamicObject {
    let api = cluster.webapps(version);
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": version.api_version(),
        "kind": "WebApp",
        "metadata": {"name": name, "namespace": APPS_NS},
        "spec": spec,
    }))
    .unwrap();
    let started = Instant::now();
    loop {
        match api.create(&PostParams::default(), &object).await {
            Ok(created) => return created,
            Err(err) if started.elapsed() < Duration::from_secs(30) => {
                if let kube::Error::Api(status) = &err {
                    assert!(
                        status.code != 422 && status.code != 400,
                        "WebApp {name} rejected: {err}"
                    );
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(err) => panic!("creating WebApp {name} failed: {err}"),
        }
    }
}

/// The operator binary as a child process (killed when dropped).
pub struct OperatorProcess {
    pub child: tokio::process::Child,
    pub log: PathBuf,
}

impl OperatorProcess {
    /// Starts `webapp-operator run` as the operator's ServiceAccount with `extra` arguments
    /// and `env`.
    pub fn start(cluster: &Cluster, label: &str, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let kubeconfig = cluster.operator_kubeconfig();
        let log = cluster.cert_dir.path().join(format!("{label}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_webapp-operator"));
        command
            .arg("run")
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg(format!("--namespace={OPERATOR_NS}"))
            .args([
                "--bind-address=127.0.0.1",
                "--metrics-port=0",
                "--log-format=json",
            ])
            .args(extra)
            .env_remove(webapp_operator::controller::crash::CRASH_ENV)
            .stdout(std::process::Stdio::null())
            .stderr(file)
            .kill_on_drop(true);
        for (k, v) in env {
            command.env(k, v);
        }
        let child = command.spawn().expect("the operator binary starts");
        Self { child, log }
    }

    /// Waits for the process to exit by itself; panics after `timeout`.
    pub async fn exit_code(&mut self, timeout: Duration) -> Option<i32> {
        match tokio::time::timeout(timeout, self.child.wait()).await {
            Ok(status) => status.unwrap().code(),
            Err(_) => panic!(
                "the operator did not exit within {timeout:?}; log:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            ),
        }
    }

    /// Like [`eventually`], but a timeout panics with this process's log.
    pub async fn eventually<F, Fut>(&self, what: &str, timeout: Duration, check: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bool>,
    {
        let log = || format!("; operator log:\n{}", self.log());
        eventually_or(what, timeout, check, log).await;
    }

    /// The process's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then waits for a graceful exit.
    pub async fn terminate(mut self) -> Option<i32> {
        let pid = self.child.id().expect("running");
        std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        self.exit_code(Duration::from_secs(30)).await
    }
}
