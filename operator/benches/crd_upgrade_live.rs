//! Benchmark (not a test): the reference operator's full live upgrade matrix — every edge of
//! its upgrade graph (5 releases), 100 objects per example version, each edge on its own
//! etcd + kube-apiserver with the operator's real conversion webhook, edges two at a time
//! (the machine's cores; `olmpack upgrade test --jobs 2`). Prints each edge's steps, the
//! wall-clock seconds, the objects/s and the Markdown table the README shows, then the floor
//! measured in the same run: the same control planes (two at a time) and the same object
//! writes (each edge's creates, one write per round trip and one for the migration), with no
//! webhook, no operator and no checks. Target: under 60 s on 2 cores.
//!
//! Run: `cargo xtask env` first (for the tool paths), then
//! `cargo bench -p webapp-operator --bench crd_upgrade_live`; `OLMPACK_BENCH_COPIES` changes
//! the 100.

use std::path::Path;
use std::time::Instant;

use olmpack_envtest::live::EdgeOptions;

fn main() {
    olmpack_envtest::install_crypto_provider();
    let copies: usize = std::env::var("OLMPACK_BENCH_COPIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace");
    let plan = olmpack::plan::load(&root.join("olmpack.yaml"), &Default::default())
        .expect("olmpack.yaml loads");
    let inputs = olmpack::upgrade::test::from_plan(&plan, &Default::default())
        .expect("the plan's bundles generate");
    let webhook = format!("'{}' webhook", env!("CARGO_BIN_EXE_webapp-operator"));
    let options = EdgeOptions {
        copies,
        ..EdgeOptions::default()
    };
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let started = Instant::now();
    let mut reports = runtime
        .block_on(olmpack::upgrade::test::run(
            &inputs,
            &olmpack::upgrade::test::Target::TestEnv {
                kubernetes: Default::default(),
                openshift: None,
            },
            Some(&webhook),
            &options,
            2,
        ))
        .expect("every edge runs");
    let seconds = started.elapsed().as_secs_f64();
    reports.sort_by(|a, b| (&a.edge.from, &a.edge.to).cmp(&(&b.edge.from, &b.edge.to)));
    let objects: usize = reports.iter().map(|r| r.objects).sum();
    for report in &reports {
        eprintln!(
            "{} → {}: {:.1} s",
            report.edge.from, report.edge.to, report.seconds
        );
        for step in &report.steps {
            eprintln!("  {:>6.1} s  {}", step.seconds, step.step);
        }
    }
    print!(
        "{}",
        olmpack::upgrade::test::format(&reports, olmpack_model::report::OutputFormat::Markdown)
    );
    println!(
        "live matrix: {} edges, {objects} objects ({copies} per example version) in {seconds:.1} s = {:.0} objects/s (target: under 60 s on 2 cores)",
        reports.len(),
        objects as f64 / seconds
    );
    let floor = runtime.block_on(floor(&inputs, &reports));
    println!(
        "floor (the same control planes and writes, no checks): {floor:.1} s; the matrix takes {:.1}× the floor",
        seconds / floor
    );
    let failed: Vec<_> = reports
        .iter()
        .filter(|r| r.verdict != olmpack_model::upgrade::Verdict::Passed)
        .collect();
    assert!(failed.is_empty(), "edges failed: {failed:#?}");
}

/// Seconds for the writes of `reports`' edges without any check: per edge a control plane
/// of its own (two at a time), a plain CRD, its objects created, then each replaced once per
/// round trip through a served version and once for the storage migration.
async fn floor(
    inputs: &olmpack::upgrade::test::Inputs,
    reports: &[olmpack::upgrade::test::EdgeAnswer],
) -> f64 {
    use futures::StreamExt as _;
    let started = Instant::now();
    futures::stream::iter(reports)
        .map(|report| {
            let trips: usize = inputs.releases[&report.edge.to]
                .crds
                .iter()
                .map(|crd| olmpack_envtest::live::api::served(crd).len())
                .filter(|served| *served >= 2)
                .sum();
            floor_edge(report.objects, trips + 1)
        })
        .buffer_unordered(2)
        .collect::<Vec<()>>()
        .await;
    started.elapsed().as_secs_f64()
}

async fn floor_edge(objects: usize, rewrites: usize) {
    use futures::StreamExt as _;
    use kube::api::{DynamicObject, PostParams};
    let env = olmpack_envtest::control_plane::TestEnv::start()
        .await
        .expect("a control plane");
    let crd = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "floors.bench.olmpack.dev"},
        "spec": {
            "group": "bench.olmpack.dev",
            "scope": "Namespaced",
            "names": {"plural": "floors", "singular": "floor", "kind": "Floor"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {
                "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }}]
        }
    }))
    .expect("a valid CRD");
    env.install_crd(&crd).await.expect("the CRD installs");
    let resource = resource_of();
    let api: kube::Api<DynamicObject> =
        kube::Api::namespaced_with(env.client(), "default", &resource);
    // As the matrix writes: every pass lists the objects once, then writes each.
    for pass in 0..=rewrites {
        let current: Vec<DynamicObject> = if pass == 0 {
            (0..objects)
                .map(|i| DynamicObject::new(&format!("floor-{i}"), &resource))
                .collect()
        } else {
            api.list(&Default::default()).await.expect("list").items
        };
        futures::stream::iter(current)
            .map(|mut object| {
                let api = api.clone();
                async move {
                    object.data =
                        serde_json::json!({"spec": {"replicas": 2 + pass, "image": "nginx:1.27"}});
                    if pass == 0 {
                        api.create(&PostParams::default(), &object)
                            .await
                            .expect("create");
                    } else {
                        let name = object.metadata.name.clone().unwrap_or_default();
                        api.replace(&name, &PostParams::default(), &object)
                            .await
                            .expect("replace");
                    }
                }
            })
            .buffer_unordered(16)
            .collect::<Vec<()>>()
            .await;
    }
}

fn resource_of() -> kube::api::ApiResource {
    kube::api::ApiResource {
        group: "bench.olmpack.dev".into(),
        version: "v1".into(),
        api_version: "bench.olmpack.dev/v1".into(),
        kind: "Floor".into(),
        plural: "floors".into(),
    }
}
