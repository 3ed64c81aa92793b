//! Benchmark (not a test): the reference operator at scale. A local control plane (etcd,
//! kube-apiserver with priority and fairness on, kube-controller-manager, kube-scheduler and
//! kwok with 6 fake nodes, see `olmpack_testkit::fake_nodes`), the release-built operator
//! binary as its own ServiceAccount under `deploy/`'s RBAC with `--leader-elect`; then
//! 5,000 WebApps created at once (v1), 100 of them updated, 1,000 deleted.
//!
//! First, in a control plane of its own, the baseline: the same 5,000 Deployments and
//! Services the operator would make, applied by the benchmark itself with no operator; the
//! time until all are ready is the floor this machine's control plane sets for "all Ready"
//! (`OLMPACK_SCALE_BASELINE=0` skips it).
//!
//! Prints time to all Ready (p50/p99/max), objects/s and its ratio to the baseline, the
//! update and delete times, the 429/5xx responses the operator's client saw (every attempt,
//! its metrics) and the apiserver's priority-and-fairness rejections of ServiceAccount
//! requests (the operator is the only ServiceAccount client here), writes per minute while
//! idle after convergence once every rollout is complete (the Lease has a client of its own
//! and is not counted), peak RSS, and SIGTERM-to-exit.
//! The last line is exactly
//! `scale: ready_s=<max> throttled=<n> delete_s=<s> idle_writes_per_min=<n> rss_mb=<n> sigterm_s=<s>`.
//!
//! Run: `eval "$(cargo xtask env)"`, then `cargo bench -p webapp-operator --bench scale`.
//! `OLMPACK_SCALE_WEBAPPS`, `OLMPACK_SCALE_UPDATES`, `OLMPACK_SCALE_DELETES` change the
//! 5,000 / 100 / 1,000; `OLMPACK_SCALE_OPERATOR_ARGS` adds operator flags (space-separated);
//! `OLMPACK_SCALE_LOG=FILE` keeps the operator's log (`RUST_LOG` reaches the operator).

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::harness::{self, APPS_NS, OPERATOR_NS, OperatorProcess};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use olmpack_envtest::control_plane::TestEnvOptions;
use olmpack_testkit::fake_nodes::{FakeNodes, FakeNodesOptions};
use serde_json::json;
use webapp_operator::api::{Version, v1};
use webapp_operator::controller::{LEASE_NAME, apply};
use webapp_operator::releases::OperatorRelease;

/// Longest any phase may take before the benchmark gives up.
const PHASE_TIMEOUT: Duration = Duration::from_secs(3600);
/// Requests the benchmark's own client sends at once.
const CLIENT_CONCURRENCY: usize = 32;

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What the benchmark's watch saw of each WebApp.
#[derive(Default)]
struct Seen {
    /// Generation at which it was last seen Ready, and when that was first seen.
    ready: HashMap<String, (i64, Instant)>,
    present: HashSet<String>,
    /// Ready with the rollout of the current generation complete (Progressing False).
    settled: HashSet<String>,
    /// What a re-list has shown so far (it replaces `present` when done).
    relisting: HashSet<String>,
}

fn condition_is(app: &v1::WebApp, type_: &str, value: &str) -> bool {
    app.status.as_ref().is_some_and(|s| {
        s.observed_generation == app.metadata.generation
            && s.conditions
                .iter()
                .any(|c| c.type_ == type_ && c.status == value)
    })
}

fn ready_generation(app: &v1::WebApp) -> Option<i64> {
    condition_is(app, "Ready", "True").then_some(app.metadata.generation.unwrap_or(0))
}

/// Ready, and the Deployment's rollout of the current generation is over: nothing left
/// for the operator to report on this WebApp.
fn settled(app: &v1::WebApp) -> bool {
    condition_is(app, "Ready", "True") && condition_is(app, "Progressing", "False")
}

fn spawn_watch(api: Api<v1::WebApp>, seen: Arc<Mutex<Seen>>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let stream = watcher(api, watcher::Config::default()).default_backoff();
        let mut stream = std::pin::pin!(stream);
        while let Ok(Some(event)) = stream.try_next().await {
            let mut seen = seen.lock().unwrap();
            match event {
                watcher::Event::Apply(app) | watcher::Event::InitApply(app) => {
                    let name = app.metadata.name.clone().unwrap_or_default();
                    seen.present.insert(name.clone());
                    seen.relisting.insert(name.clone());
                    match settled(&app) {
                        true => seen.settled.insert(name.clone()),
                        false => seen.settled.remove(&name),
                    };
                    if let Some(generation) = ready_generation(&app) {
                        let entry = seen
                            .ready
                            .entry(name)
                            .or_insert((generation, Instant::now()));
                        if entry.0 != generation {
                            *entry = (generation, Instant::now());
                        }
                    }
                }
                watcher::Event::Delete(app) => {
                    let name = app.metadata.name.unwrap_or_default();
                    seen.present.remove(&name);
                    seen.settled.remove(&name);
                }
                watcher::Event::Init => seen.relisting.clear(),
                watcher::Event::InitDone => seen.present = std::mem::take(&mut seen.relisting),
            }
        }
    })
}

async fn wait_for(what: &str, mut done: impl FnMut() -> (bool, String)) {
    let started = Instant::now();
    let mut last_print = Instant::now();
    loop {
        let (ok, progress) = done();
        if ok {
            return;
        }
        assert!(
            started.elapsed() < PHASE_TIMEOUT,
            "gave up waiting for {what}: {progress}"
        );
        if last_print.elapsed() > Duration::from_secs(30) {
            eprintln!(
                "  … {what}: {progress} after {:.0} s",
                started.elapsed().as_secs_f64()
            );
            last_print = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

/// The operator's `/metrics` text.
async fn scrape(addr: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await else {
        return String::new();
    };
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_err() {
        return String::new();
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response).await;
    response
}

/// Sum of the samples of `name` whose labels contain every one of `labels`.
fn sample_sum(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            l.split(['{', ' '])
                .next()
                .is_some_and(|metric| metric == name)
        })
        .filter(|l| labels.iter().all(|label| l.contains(label)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .fold(0.0, |a, b| a + b)
}

fn operator_writes(text: &str) -> f64 {
    ["POST", "PUT", "PATCH", "DELETE"]
        .iter()
        .map(|v| {
            sample_sum(
                text,
                "webapp_api_requests_total",
                &[&format!("verb=\"{v}\"")],
            )
        })
        .fold(0.0, |a, b| a + b)
}

fn server_errors(text: &str) -> f64 {
    ["500", "502", "503", "504"]
        .iter()
        .map(|c| {
            sample_sum(
                text,
                "webapp_api_responses_total",
                &[&format!("code=\"{c}\"")],
            )
        })
        .fold(0.0, |a, b| a + b)
}

/// The operator's metrics address from its JSON log (it binds port 0).
async fn metrics_addr(operator: &OperatorProcess) -> String {
    let started = Instant::now();
    loop {
        for line in operator.log().lines() {
            let Ok(entry) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if entry["fields"]["message"] == "operator started"
                && let Some(addr) = entry["fields"]["metrics"].as_str()
            {
                return addr.to_owned();
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the operator did not start:\n{}",
            operator.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Peak resident set of `pid` in MB (`VmHWM`).
fn peak_rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The apiserver's priority-and-fairness rejections of ServiceAccount requests.
async fn apiserver_rejections(client: &kube::Client) -> f64 {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("a static request");
    let text = client.request_text(request).await.unwrap_or_default();
    sample_sum(
        &text,
        "apiserver_flowcontrol_rejected_requests_total",
        &["flow_schema=\"service-accounts\""],
    )
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split(' ')
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let total = count("OLMPACK_SCALE_WEBAPPS", 5000);
    let updates = count("OLMPACK_SCALE_UPDATES", 100).min(total);
    let deletes = count("OLMPACK_SCALE_DELETES", 1000).min(total);
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(run(total, updates, deletes));
}

/// A fresh control plane with kwok nodes, as both phases use it.
async fn control_plane() -> (harness::Cluster, FakeNodes) {
    let options = TestEnvOptions {
        controller_manager: false,
        apiserver_args: vec![
            "--enable-priority-and-fairness=true".to_owned(),
            // One ClusterIP per WebApp: the test environment's /24 holds 254.
            "--service-cluster-ip-range=10.96.0.0/16".to_owned(),
        ],
        ..TestEnvOptions::default()
    };
    let cluster = harness::cluster_with(OperatorRelease::latest(), options).await;
    let nodes = FakeNodes::start(&cluster.env, &FakeNodesOptions::default())
        .await
        .expect("kube-controller-manager, kube-scheduler and kwok start");
    eprintln!(
        "control plane with {} kwok nodes ready",
        nodes.nodes().len()
    );
    (cluster, nodes)
}

/// The baseline: the Deployments and Services the operator would make for `names`
/// (without owner references), applied by the benchmark's own client, with no operator, in
/// a control plane of their own. Seconds until every Deployment has its replicas ready: what
/// this machine's control plane needs for the same objects, the floor of "all Ready".
async fn floor_seconds(names: &[String]) -> f64 {
    let (cluster, nodes) = control_plane().await;
    let client = cluster.env.client();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), APPS_NS);
    let services: Api<Service> = Api::namespaced(client.clone(), APPS_NS);
    let ready = Arc::new(Mutex::new(HashSet::<String>::new()));
    let watch = {
        let (api, ready) = (deployments.clone(), ready.clone());
        tokio::spawn(async move {
            let stream = watcher(api, watcher::Config::default()).default_backoff();
            let mut stream = std::pin::pin!(stream.applied_objects());
            while let Ok(Some(d)) = stream.try_next().await {
                let want = d.spec.replicas.unwrap_or(1);
                let have = d
                    .status
                    .as_ref()
                    .and_then(|s| s.ready_replicas)
                    .unwrap_or(0);
                if have >= want {
                    ready
                        .lock()
                        .unwrap()
                        .insert(d.metadata.name.unwrap_or_default());
                }
            }
        })
    };
    let params = PatchParams::apply("scale-floor");
    let started = Instant::now();
    futures::stream::iter(names)
        .map(|name| {
            let (deployments, services, params) = (&deployments, &services, &params);
            async move {
                let app: v1::WebApp = serde_json::from_value(json!({
                    "apiVersion": "apps.olmpack.dev/v1", "kind": "WebApp",
                    "metadata": {"name": name, "namespace": APPS_NS, "uid": "floor"},
                    "spec": {"image": "shop:1"},
                }))
                .expect("a WebApp");
                let mut deployment = apply::deployment(&app);
                let mut service = apply::service(&app);
                for object in [&mut deployment, &mut service] {
                    if let Some(metadata) = object["metadata"].as_object_mut() {
                        metadata.remove("ownerReferences");
                    }
                }
                deployments
                    .patch(name, params, &Patch::Apply(&deployment))
                    .await
                    .expect("apply a Deployment");
                services
                    .patch(name, params, &Patch::Apply(&service))
                    .await
                    .expect("apply a Service");
            }
        })
        .buffer_unordered(CLIENT_CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    wait_for("baseline Deployments ready", || {
        let done = ready.lock().unwrap().len();
        (done >= names.len(), format!("{done}/{}", names.len()))
    })
    .await;
    let seconds = started.elapsed().as_secs_f64();
    watch.abort();
    drop(nodes);
    drop(cluster);
    seconds
}

async fn run(total: usize, updates: usize, deletes: usize) {
    eprintln!(
        "scale: {total} WebApps, {updates} updates, {deletes} deletes; load {}",
        load_average()
    );
    let names: Vec<String> = (0..total).map(|i| format!("app-{i:05}")).collect();
    let floor_s = match std::env::var("OLMPACK_SCALE_BASELINE").as_deref() {
        Ok("0") => None,
        _ => Some(floor_seconds(&names).await),
    };
    let (cluster, nodes) = control_plane().await;
    let client = cluster.env.client();
    let extra: Vec<String> = std::env::var("OLMPACK_SCALE_OPERATOR_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let mut args = vec!["--leader-elect", "--identity=scale"];
    args.extend(extra.iter().map(String::as_str));
    let operator = OperatorProcess::start(&cluster, "scale", &args, &[]);
    let operator_log = operator.log.clone();
    let pid = operator.child.id().expect("running");
    let addr = metrics_addr(&operator).await;

    let apps: Api<v1::WebApp> = Api::namespaced(client.clone(), APPS_NS);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let watch = spawn_watch(apps.clone(), seen.clone());

    // Create everything at once.
    let started = Instant::now();
    futures::stream::iter(&names)
        .map(|name| harness::create_webapp(&cluster, Version::V1, name, json!({"image": "shop:1"})))
        .buffer_unordered(CLIENT_CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    let created_s = started.elapsed().as_secs_f64();
    wait_for("all Ready", || {
        let seen = seen.lock().unwrap();
        (
            seen.ready.len() >= total,
            format!(
                "{}/{total} Ready, load {}",
                seen.ready.len(),
                load_average()
            ),
        )
    })
    .await;
    let mut ready: Vec<f64> = {
        let seen = seen.lock().unwrap();
        names
            .iter()
            .filter_map(|n| seen.ready.get(n))
            .map(|(_, at)| at.duration_since(started).as_secs_f64())
            .collect()
    };
    ready.sort_by(f64::total_cmp);
    let ready_max = percentile(&ready, 1.0);

    // Update some.
    let update_started = Instant::now();
    futures::stream::iter(&names[..updates])
        .map(|name| {
            let apps = apps.clone();
            async move {
                apps.patch(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(&json!({"spec": {"image": "shop:2"}})),
                )
                .await
                .expect("update")
            }
        })
        .buffer_unordered(CLIENT_CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    wait_for("updates Ready", || {
        let seen = seen.lock().unwrap();
        let done = names[..updates]
            .iter()
            .filter(|n| seen.ready.get(*n).is_some_and(|(g, _)| *g >= 2))
            .count();
        (done >= updates, format!("{done}/{updates}"))
    })
    .await;
    let update_s = update_started.elapsed().as_secs_f64();

    // Idle: writes per minute after convergence, that is once every rollout is over (the
    // updates' old pods gone), so that status writes reporting a rollout are not counted.
    let settle_started = Instant::now();
    wait_for("rollouts complete", || {
        let seen = seen.lock().unwrap();
        let done = seen
            .present
            .iter()
            .filter(|n| seen.settled.contains(*n))
            .count();
        (
            done == seen.present.len(),
            format!("{done}/{}", seen.present.len()),
        )
    })
    .await;
    println!(
        "rollouts complete {:.1} s after the updates were Ready",
        settle_started.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(10)).await;
    let before = operator_writes(&scrape(&addr).await);
    let idle_from = k8s_openapi::jiff::Timestamp::now();
    tokio::time::sleep(Duration::from_secs(60)).await;
    let idle_writes = operator_writes(&scrape(&addr).await) - before;
    println!(
        "idle window: {idle_from} to {}",
        k8s_openapi::jiff::Timestamp::now()
    );

    // Delete some.
    let delete_started = Instant::now();
    futures::stream::iter(&names[total - deletes..])
        .map(|name| {
            let apps = apps.clone();
            async move {
                apps.delete(name, &DeleteParams::default())
                    .await
                    .expect("delete")
            }
        })
        .buffer_unordered(CLIENT_CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    wait_for("deletes done", || {
        let seen = seen.lock().unwrap();
        let left = names[total - deletes..]
            .iter()
            .filter(|n| seen.present.contains(*n))
            .count();
        (left == 0, format!("{left}/{deletes} left"))
    })
    .await;
    let delete_s = delete_started.elapsed().as_secs_f64();

    let metrics = scrape(&addr).await;
    let throttled = sample_sum(&metrics, "webapp_api_responses_total", &["code=\"429\""]);
    let lease_throttled = sample_sum(
        &metrics,
        "webapp_leader_election_responses_total",
        &["code=\"429\""],
    );
    let server_errors = server_errors(&metrics);
    let requests = sample_sum(&metrics, "webapp_api_requests_total", &[]);
    let rejected = apiserver_rejections(&client).await;
    let rss_mb = peak_rss_mb(pid);

    // SIGTERM to exit; the Lease must be released.
    let terminated = Instant::now();
    let code = operator.terminate().await;
    let sigterm_s = terminated.elapsed().as_secs_f64();
    let leases: Api<Lease> = Api::namespaced(client.clone(), OPERATOR_NS);
    let holder = leases
        .get_opt(LEASE_NAME)
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec.and_then(|s| s.holder_identity));
    watch.abort();

    println!("WebApps: {total} created in {created_s:.1} s");
    println!(
        "all Ready: p50 {:.1} s, p99 {:.1} s, max {ready_max:.1} s; {:.1} objects/s",
        percentile(&ready, 0.5),
        percentile(&ready, 0.99),
        total as f64 / ready_max.max(0.001)
    );
    match floor_s {
        Some(floor) => println!(
            "baseline (the same Deployments and Services without the operator, own control plane): all ready in {floor:.1} s; all Ready with the operator / baseline = {:.2}",
            ready_max / floor.max(0.001)
        ),
        None => println!("baseline not run (OLMPACK_SCALE_BASELINE=0)"),
    }
    println!(
        "{updates} updates Ready in {update_s:.1} s; {deletes} deletes done in {delete_s:.1} s"
    );
    println!(
        "operator client: {requests:.0} request attempts, {throttled:.0} × 429, {server_errors:.0} × 5xx; \
         Lease client {lease_throttled:.0} × 429; apiserver rejected {rejected:.0} ServiceAccount requests"
    );
    println!("idle writes per minute (Lease excluded): {idle_writes:.0}; peak RSS {rss_mb:.0} MB");
    println!(
        "SIGTERM to exit: {sigterm_s:.2} s (exit code {code:?}); Lease holder after exit: {holder:?}"
    );
    println!("load average at the end: {}", load_average());
    println!(
        "scale: ready_s={ready_max:.1} throttled={:.0} delete_s={delete_s:.1} idle_writes_per_min={idle_writes:.0} rss_mb={rss_mb:.0} sigterm_s={sigterm_s:.2}",
        throttled.max(rejected)
    );
    if let Ok(path) = std::env::var("OLMPACK_SCALE_LOG") {
        std::fs::copy(&operator_log, &path).expect("copy the operator's log");
        println!("operator log copied to {path}");
    }
    drop(nodes);
}
