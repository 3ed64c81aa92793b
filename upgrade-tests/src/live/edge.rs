//! One live edge, step by step (see the module docs of [`super`]).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{DynamicObject, PostParams};
use olmpack_model::file_name::FileName;
use olmpack_model::report::{Consumer, Finding, Severity};
use olmpack_model::upgrade::Verdict;
use serde_json::{Value, json};

use super::admission;
use super::api::{self, apiserver_message, crd_name, status_code};
use super::compare::FieldChange;
use super::identity::{self, OperatorIdentity};
use super::lease;
use super::webhook::{CertFiles, ProcessEnv, RunningWebhook, WebhookError};
use super::{
    EdgeOptions, EdgeReport, LiveError, ProcessLog, ReleaseUnderTest, StepRecord, Webhook, refused,
    rules,
};
use crate::container::{PodIdentity, Prepared};

/// Requests in flight at once for per-object work.
const CONCURRENCY: usize = 16;
/// How long an expected change in the apiserver's behaviour (outage, recovery) may take.
const CHANGE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the operator's controllers must leave every object alone to count as settled.
const QUIET: Duration = Duration::from_secs(2);

/// Objects as read: (CRD, version) → object name → user data.
type Snapshot = BTreeMap<(String, String), BTreeMap<String, Value>>;

/// Per CRD with a storage version (in the order given), object name → `resourceVersion`;
/// `None` when the list failed.
type ResourceVersions = Vec<Option<BTreeMap<String, String>>>;

/// Runs the edge `from → to` on the cluster of `client` (see the module docs of [`super`]).
pub async fn run_edge(
    client: &Client,
    from: &ReleaseUnderTest,
    to: &ReleaseUnderTest,
    options: &EdgeOptions,
) -> Result<EdgeReport, LiveError> {
    let started = Instant::now();
    let names: BTreeSet<String> = from.crds.iter().chain(&to.crds).map(crd_name).collect();
    for name in &names {
        let exists = api::get_crd(client, name).await.is_ok();
        if exists {
            return Err(LiveError::CrdExists { crd: name.clone() });
        }
    }
    let mut run = Run::new(client, options, &from.name, &to.name)?;
    let outcome = run.steps(from, to).await;
    run.stop_webhook().await;
    if options.cleanup {
        for name in &names {
            api::delete_crd(client, name).await;
        }
        identity::revoke(client, &run.granted).await;
    }
    outcome?;
    let mut report = run.report;
    report.findings.extend(run.losses.into_findings());
    report.seconds = started.elapsed().as_secs_f64();
    report.verdict = report.judge();
    if report.verdict != Verdict::Passed {
        report.processes = run.processes;
    }
    Ok(report)
}

/// A loss's rule, version and field path.
type LossKey = (&'static str, String, String);
/// The first object with a loss, the change, how it was seen, and how many objects had it.
type LossGroup = (String, FieldChange, String, usize);

/// Lost fields, grouped so that 100 copies of one loss make one finding.
#[derive(Default)]
struct Losses {
    seen: BTreeSet<(String, String, String)>,
    groups: BTreeMap<LossKey, LossGroup>,
}

impl Losses {
    /// Records a lost or changed field. A change inside a list counts for the whole list
    /// (`status.conditions`, not `status.conditions[1].reason`): which item shows it depends
    /// on what a controller rewrote since, the list is what lost data.
    fn add(
        &mut self,
        rule: &'static str,
        object: &str,
        version: &str,
        change: FieldChange,
        how: &str,
    ) {
        let field = list_level(&change.path).to_owned();
        if !self
            .seen
            .insert((object.to_owned(), version.to_owned(), field.clone()))
        {
            return;
        }
        let key = (rule, version.to_owned(), field);
        self.groups.entry(key).and_modify(|g| g.3 += 1).or_insert((
            object.to_owned(),
            change,
            how.to_owned(),
            1,
        ));
    }

    fn into_findings(self) -> Vec<Finding> {
        self.groups
            .into_iter()
            .map(|((rule, version, path), (object, change, how, count))| {
                let more = if count > 1 {
                    format!(" (and in {} more objects)", count - 1)
                } else {
                    String::new()
                };
                let severity = if rule == rules::ROLLBACK_DATA_LOST {
                    Severity::Warning
                } else {
                    Severity::Error
                };
                Finding::new(rule, severity, format!("{how}: {change}{more}"))
                    .object(object)
                    .version(version)
                    .field(path)
            })
            .collect()
    }
}

/// `status.conditions[1].reason` → `status.conditions`.
fn list_level(path: &str) -> &str {
    path.split_once('[').map_or(path, |(list, _)| list)
}

/// One example object as created.
#[derive(Clone, Debug)]
struct Created {
    crd: String,
    kind: String,
    name: String,
    written_at: String,
}

impl Created {
    fn display(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }
}

struct Run<'a> {
    client: &'a Client,
    options: &'a EdgeOptions,
    dir: tempfile::TempDir,
    certs: CertFiles,
    ca_pem: String,
    port: u16,
    /// The running webhook and the release it serves.
    webhook: Option<(String, RunningWebhook)>,
    /// The output of every webhook process stopped so far.
    processes: Vec<ProcessLog>,
    /// Cluster-scoped RBAC objects granted to operator processes.
    granted: Vec<String>,
    created: Vec<Created>,
    /// The `resourceVersion`s (see [`Self::resource_versions`]) at the end of the last
    /// quiet period of the running operator; cleared when the operator process changes.
    settled: Option<ResourceVersions>,
    report: EdgeReport,
    losses: Losses,
    last_step: Instant,
}

impl<'a> Run<'a> {
    fn new(
        client: &'a Client,
        options: &'a EdgeOptions,
        from: &str,
        to: &str,
    ) -> Result<Self, LiveError> {
        let dir = tempfile::Builder::new()
            .prefix("olmpack-live-")
            .tempdir_in(&options.work_dir)
            .map_err(|source| LiveError::WorkDir {
                path: options.work_dir.clone(),
                source,
            })?;
        let ca = crate::pki::CertificateAuthority::new("olmpack-upgrade-test-webhook-ca")?;
        let pem = ca.issue_server(&[options.webhook_host.as_str(), "localhost"])?;
        let certs = CertFiles::write(dir.path(), pem)?;
        let port = crate::process::free_port().map_err(LiveError::Port)?;
        Ok(Self {
            client,
            options,
            certs,
            ca_pem: ca.cert_pem().to_owned(),
            port,
            dir,
            webhook: None,
            processes: Vec::new(),
            granted: Vec::new(),
            created: Vec::new(),
            settled: None,
            report: EdgeReport::new(from, to),
            losses: Losses::default(),
            last_step: Instant::now(),
        })
    }

    fn step(&mut self, step: &'static str, outcome: impl Into<String>) {
        self.report.steps.push(StepRecord {
            step,
            outcome: outcome.into(),
            seconds: self.last_step.elapsed().as_secs_f64(),
        });
        self.last_step = Instant::now();
    }

    fn find(&mut self, finding: Finding) {
        self.report.findings.push(finding);
    }

    fn prepared(&self, crd: &CustomResourceDefinition) -> CustomResourceDefinition {
        api::prepare_crd(crd, &self.options.webhook_host, self.port, &self.ca_pem)
    }

    fn objects(&self, crd: &CustomResourceDefinition, version: &str) -> kube::Api<DynamicObject> {
        api::objects_api(self.client, crd, version, &self.options.namespace)
    }

    async fn steps(
        &mut self,
        from: &ReleaseUnderTest,
        to: &ReleaseUnderTest,
    ) -> Result<(), LiveError> {
        self.ensure_namespace().await?;
        if !self.serve(from).await? || !self.install(from).await {
            return Ok(());
        }
        self.own_conversions(from).await;
        self.create_examples(from).await;
        self.settle(from).await;
        let before = self.snapshot(&from.crds).await;
        let versions_before = self.resource_versions(&from.crds).await;
        if !self.serve(to).await? || !self.upgrade(to).await {
            return Ok(());
        }
        self.settle(to).await;
        let rewritten = self.rewritten_since(&from.crds, &versions_before).await;
        let after = self.read_back(from, to, &before, &rewritten).await;
        self.round_trip(to, &after).await;
        self.own_conversions(to).await;
        self.migrate_and_drop(to).await;
        self.outage(to, &after).await?;
        self.rollback(from, &before).await
    }

    async fn ensure_namespace(&self) -> Result<(), LiveError> {
        let api: kube::Api<k8s_openapi::api::core::v1::Namespace> =
            kube::Api::all(self.client.clone());
        let ns = serde_json::from_value(json!({"metadata": {"name": self.options.namespace}}))
            .expect("a namespace with a name is valid");
        match api.create(&PostParams::default(), &ns).await {
            Ok(_) => Ok(()),
            Err(err) if status_code(&err) == Some(409) => Ok(()),
            Err(source) => Err(LiveError::Kube {
                action: format!("create namespace {}", self.options.namespace),
                source,
            }),
        }
    }

    /// Replaces the running webhook with `release`'s: a command always (it is the
    /// operator), a router only when a CRD converts through a webhook. False (with a
    /// finding) when the release's pod would not run: the kubelet refuses its container, or
    /// it crash-loops.
    async fn serve(&mut self, release: &ReleaseUnderTest) -> Result<bool, LiveError> {
        self.stop_webhook().await;
        if !release.admission.is_empty() && !matches!(release.webhook, Some(Webhook::Command(_))) {
            self.step(
                "admission",
                format!(
                    "{}: {} admission webhook(s) not run: no webhook command was given, so objects are stored without them",
                    release.name,
                    release.admission.len()
                ),
            );
        }
        let needed = release.crds.iter().find(|c| api::has_webhook(c));
        let webhook = match (&release.webhook, needed) {
            (None, Some(crd)) => {
                return Err(LiveError::NoWebhook {
                    release: release.name.clone(),
                    crd: crd_name(crd),
                });
            }
            (None, None) | (Some(Webhook::Router(_)), None) => return Ok(true),
            (Some(webhook), _) => webhook,
        };
        let env = match webhook {
            Webhook::Command(_) => match self.process_env(release).await? {
                Ok(env) => env,
                Err(finding) => {
                    self.find(finding);
                    return Ok(false);
                }
            },
            Webhook::Router(_) => ProcessEnv::default(),
        };
        for note in env.container.iter().flat_map(|c| &c.notes) {
            self.step("container", format!("{}: {note}", release.name));
        }
        let held = match webhook {
            Webhook::Command(_) => lease::held(self.client, &self.options.namespace).await,
            Webhook::Router(_) => Vec::new(),
        };
        let log = self.dir.path().join(format!(
            "webhook-{}-{}.log",
            self.processes.len() + 1,
            FileName::or_hash(&release.name)
        ));
        let started = RunningWebhook::start(
            webhook,
            &release.name,
            self.port,
            &self.certs,
            &env,
            &log,
            needed.is_some(),
        )
        .await;
        match started {
            Ok(running) => {
                let process = matches!(running, RunningWebhook::Process { .. });
                self.webhook = Some((release.name.clone(), running));
                if process {
                    self.register_admission(release).await?;
                    self.await_leases(&release.name, &held).await;
                }
                Ok(true)
            }
            Err(err @ WebhookError::CrashLoop { .. }) => {
                self.processes.push(ProcessLog::of(&release.name, &log));
                self.find(crash_finding(&release.name, &err.to_string()));
                Ok(false)
            }
            Err(err) => {
                self.processes.push(ProcessLog::of(&release.name, &log));
                Err(err.into())
            }
        }
    }

    /// Stops the running webhook, keeping its output, and waits (at most 5 s) until its
    /// port is closed: the programs of a killed process group exit a moment after the
    /// shell that led it, an in-process router's listener closes when its aborted task is
    /// dropped, and the next webhook binds the same port.
    pub(super) async fn stop_webhook(&mut self) {
        self.settled = None;
        let Some((release, running)) = self.webhook.take() else {
            return;
        };
        admission::unregister(self.client, &release).await;
        let log = running.log_path();
        drop(running);
        if let Some(log) = log {
            self.processes.push(ProcessLog::of(&release, &log));
        }
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5)
            && tokio::net::TcpStream::connect(("127.0.0.1", self.port))
                .await
                .is_ok()
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until `release`'s process has taken the leader-election Leases that the stopped
    /// process held (see [`lease`]), so the windows that watch its controllers start once they
    /// run; records what became of each, and a warning when one was not taken.
    async fn await_leases(&mut self, release: &str, held: &[lease::Held]) {
        let namespace = self.options.namespace.clone();
        for outcome in lease::await_takeover(self.client, &namespace, held).await {
            let words = match &outcome {
                lease::Takeover::Taken { lease, after } => format!(
                    "{release}'s process took the leader-election Lease {namespace}/{lease} after {:.1} s (the stopped process held it; a rolling update waits the same)",
                    after.as_secs_f64()
                ),
                lease::Takeover::Released { lease } => {
                    format!("the leader-election Lease {namespace}/{lease} was given back")
                }
                lease::Takeover::NotTaken { lease, waited } => {
                    let words = format!(
                        "{release}'s process did not take the leader-election Lease {namespace}/{lease} within {:.1} s, {:?} after it expired: if {release} elects its leader with this Lease, its controllers did not run, and what they write was not compared",
                        waited.as_secs_f64(),
                        lease::GRACE
                    );
                    self.find(
                        Finding::new(rules::LEASE_NOT_TAKEN, Severity::Warning, words.clone())
                            .object(format!("Lease/{lease}")),
                    );
                    words
                }
                lease::Takeover::Unread { lease, error } => format!(
                    "the leader-election Lease {namespace}/{lease} could not be read: {error}"
                ),
            };
            self.step("lease", words);
        }
    }

    /// Registers `release`'s admission webhooks against its running process, as OLM v0 does
    /// for its Deployment, so objects written from now on are stored as a cluster stores them.
    async fn register_admission(&mut self, release: &ReleaseUnderTest) -> Result<(), LiveError> {
        if release.admission.is_empty() {
            return Ok(());
        }
        let to = admission::Endpoint {
            host: &self.options.webhook_host,
            port: self.port,
            ca_pem: &self.ca_pem,
            namespace: &self.options.namespace,
        };
        let count = admission::register(self.client, &release.name, &release.admission, to)
            .await
            .map_err(|source| LiveError::Kube {
                action: format!("register the admission webhooks of {}", release.name),
                source,
            })?;
        self.step(
            "admission",
            format!(
                "{}: {count} admission webhook(s) registered against its process",
                release.name
            ),
        );
        Ok(())
    }

    /// When an operator process runs, waits until its controllers have left every object of
    /// `release`'s CRDs unchanged for [`QUIET`] (at most [`CHANGE_TIMEOUT`]): what they write
    /// (status) is then part of what is compared. Records how long it took.
    async fn settle(&mut self, release: &ReleaseUnderTest) {
        if !self.operator_runs() {
            return;
        }
        let outcome = if self.quiet(&release.crds).await {
            format!(
                "{}'s controllers left every object unchanged for {QUIET:?}",
                release.name
            )
        } else {
            format!(
                "{}'s controllers still changed objects after {CHANGE_TIMEOUT:?}; comparing anyway",
                release.name
            )
        };
        self.step("settle", outcome);
    }

    /// Waits until no object of `crds` changed for [`QUIET`]; false after
    /// [`CHANGE_TIMEOUT`]. Returns at once when nothing changed since the running operator
    /// was last seen quiet: no change means no event its controllers could act on.
    pub(super) async fn quiet(&mut self, crds: &[CustomResourceDefinition]) -> bool {
        let started = Instant::now();
        let mut last = None;
        let mut quiet_since = Instant::now();
        while started.elapsed() < CHANGE_TIMEOUT {
            let now = self.resource_versions(crds).await;
            if last.is_none() && self.settled.as_ref() == Some(&now) {
                return true;
            }
            if last.as_ref() != Some(&now) {
                last = Some(now);
                quiet_since = Instant::now();
            } else if quiet_since.elapsed() >= QUIET {
                self.settled = last;
                return true;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        false
    }

    /// The objects (CRD name, object name) whose `resourceVersion` changed since
    /// `before`: only a controller writes objects while the CRDs are upgraded.
    async fn rewritten_since(
        &self,
        crds: &[CustomResourceDefinition],
        before: &[Option<BTreeMap<String, String>>],
    ) -> BTreeSet<(String, String)> {
        let now = self.resource_versions(crds).await;
        let mut out = BTreeSet::new();
        let storage_crds = crds
            .iter()
            .filter(|c| crd_migrate::storage_version(c).is_some());
        for ((crd, old), new) in storage_crds.zip(before).zip(&now) {
            let (Some(old), Some(new)) = (old, new) else {
                continue;
            };
            for (name, version) in old {
                if new.get(name).is_some_and(|v| v != version) {
                    out.insert((crd_name(crd), name.clone()));
                }
            }
        }
        out
    }

    /// Whether an operator process (a webhook command) runs: objects may change under the
    /// test's feet.
    pub(super) fn operator_runs(&self) -> bool {
        matches!(self.webhook, Some((_, RunningWebhook::Process { .. })))
    }

    /// The `resourceVersion` of every object of `crds` (read at each storage version), by
    /// CRD and name; a CRD whose list fails maps to `None`.
    pub(super) async fn resource_versions(
        &self,
        crds: &[CustomResourceDefinition],
    ) -> ResourceVersions {
        let mut out = Vec::new();
        for crd in crds {
            if let Some(storage) = crd_migrate::storage_version(crd) {
                out.push(api::resource_versions(&self.objects(crd, storage)).await);
            }
        }
        out
    }

    /// Grants `release`'s operator identity its permissions, writes its kubeconfig and
    /// prepares its container; `Ok(Err(finding))` when the kubelet would not start it.
    async fn process_env(
        &mut self,
        release: &ReleaseUnderTest,
    ) -> Result<Result<ProcessEnv, Finding>, LiveError> {
        let identity = release
            .operator
            .clone()
            .unwrap_or_else(|| OperatorIdentity {
                deployment: release.name.clone(),
                service_account: "default".to_owned(),
                ..OperatorIdentity::default()
            });
        let namespace = self.options.namespace.clone();
        let granted = identity::grant(self.client, &namespace, &release.name, &identity).await?;
        self.granted.extend(granted);
        identity::apply_config(self.client, &namespace, &identity).await?;
        let kubeconfig = match &self.options.kubeconfig {
            Some(admin) => {
                let file = format!("kubeconfig-{}", FileName::or_hash(&release.name));
                let out = self.dir.path().join(file);
                identity::write_kubeconfig(admin, &out, &namespace, &identity.service_account)?;
                Some(out)
            }
            None => None,
        };
        let container = match self.container(release, &identity).await? {
            Ok(container) => container,
            Err(finding) => return Ok(Err(finding)),
        };
        Ok(Ok(ProcessEnv {
            kubeconfig,
            namespace,
            deployment: identity.deployment,
            image: identity.image,
            container,
        }))
    }

    /// The Deployment's first container as the kubelet would start it, with the serving
    /// certificate where OLM v0 mounts it (Secret `<deployment>-service-cert`, created as OLM
    /// creates it); `None` without a pod template.
    async fn container(
        &mut self,
        release: &ReleaseUnderTest,
        identity: &OperatorIdentity,
    ) -> Result<Result<Option<Prepared>, Finding>, LiveError> {
        let template = &identity.pod_template;
        if !template["spec"].is_object() {
            return Ok(Ok(None));
        }
        let secret = format!("{}-service-cert", identity.deployment);
        self.apply_cert_secret(&secret).await?;
        let pod_spec = olmpack_model::pod::with_olm_certificates(&template["spec"], &secret);
        let strings = |v: &Value| -> std::collections::BTreeMap<String, String> {
            serde_json::from_value(v.clone()).unwrap_or_default()
        };
        let mut annotations = strings(&template["metadata"]["annotations"]);
        for (key, value) in [
            ("olm.operatorNamespace", self.options.namespace.as_str()),
            ("olm.operatorGroup", "olmpack"),
            ("olm.targetNamespaces", ""),
        ] {
            annotations.insert(key.to_owned(), value.to_owned());
        }
        let pod = PodIdentity {
            name: format!("{}-olmpack", identity.deployment),
            namespace: self.options.namespace.clone(),
            labels: strings(&template["metadata"]["labels"]),
            annotations,
            ca_pem: self
                .options
                .kubeconfig
                .as_deref()
                .map(crate::container::cluster_ca)
                .unwrap_or_default(),
        };
        let dir = self.dir.path().join(format!(
            "volumes-{}-{}",
            self.processes.len() + 1,
            release.name
        ));
        match crate::container::prepare(self.client, &pod, &pod_spec, &dir).await? {
            Ok(prepared) => Ok(Ok(Some(prepared))),
            Err((container, why)) => Ok(Err(refused(
                rules::POD_CANNOT_START,
                Consumer::PodCannotStart,
                format!(
                    "{}: the kubelet does not start container {container} of Deployment {}: {why}",
                    release.name, identity.deployment
                ),
            )
            .object(format!("Deployment/{}", identity.deployment)))),
        }
    }

    /// Creates (or updates) the Secret OLM makes for a Deployment that serves webhooks,
    /// holding the run's serving certificate.
    async fn apply_cert_secret(&self, name: &str) -> Result<(), LiveError> {
        use base64::Engine as _;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let pem = &self.certs.pem;
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": self.options.namespace},
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": b64(&pem.cert_pem), "tls.key": b64(&pem.key_pem)}});
        let api: kube::Api<k8s_openapi::api::core::v1::Secret> =
            kube::Api::namespaced(self.client.clone(), &self.options.namespace);
        api.patch(
            name,
            &kube::api::PatchParams::apply("olmpack-upgrade-test").force(),
            &kube::api::Patch::Apply(&secret),
        )
        .await
        .map(drop)
        .map_err(|source| LiveError::Kube {
            action: format!("apply Secret {name} for the operator's pod"),
            source,
        })
    }

    /// Installs `from`'s CRDs; false (with a finding) when the apiserver refuses one.
    async fn install(&mut self, from: &ReleaseUnderTest) -> bool {
        for crd in &from.crds {
            if let Err(err) = api::apply_crd(self.client, &self.prepared(crd)).await {
                let finding = refused(
                    rules::CRD_REFUSED,
                    Consumer::KubeApiserver,
                    format!(
                        "{} (the release being upgraded from) does not install: {}",
                        from.name,
                        apiserver_message(&err)
                    ),
                )
                .object(format!("CustomResourceDefinition/{}", crd_name(crd)));
                self.find(finding);
                return false;
            }
        }
        let webhook = match &self.webhook {
            Some((_, running)) => format!(
                ", webhook on {}:{}{}",
                self.options.webhook_host,
                self.port,
                running.network_words()
            ),
            None => String::new(),
        };
        self.step(
            "install",
            format!(
                "{}: {} CRD(s) established{webhook}",
                from.name,
                from.crds.len()
            ),
        );
        true
    }
}

mod conversions;
mod examples;
mod phases;

/// The finding of a release whose container exits again after every restart.
fn crash_finding(release: &str, words: &str) -> Finding {
    refused(
        rules::POD_CANNOT_START,
        Consumer::PodCannotStart,
        words.to_owned(),
    )
    .object(format!("release {release}"))
}
