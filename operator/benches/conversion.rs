//! Benchmark (not a test): converting a 500-object ConversionReview, against the floor of
//! decoding and re-encoding the same review with plain serde_json. Prints both timings and
//! the ratio floor/ours (1.0 would mean conversion is free; the target is ≥ 0.5).
//!
//! Run: `cargo bench -p webapp-operator --bench conversion`

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use webapp_operator::webhook::convert;

const OBJECTS: usize = 500;

fn object(i: usize) -> Value {
    json!({
        "apiVersion": "apps.olmpack.dev/v1alpha1",
        "kind": "WebApp",
        "metadata": {
            "name": format!("shop-{i}"),
            "namespace": "prod",
            "uid": format!("6f1c2a3e-0000-4000-8000-{i:012}"),
            "resourceVersion": format!("{}", 100_000 + i),
            "generation": 3,
            "creationTimestamp": "2026-11-29T10:00:00Z",
            "labels": {"app.kubernetes.io/name": "shop", "team": "payments"},
            "annotations": {"example.com/owner": "payments@example.com"},
            "finalizers": ["apps.olmpack.dev/cleanup"],
            "managedFields": [{
                "apiVersion": "apps.olmpack.dev/v1alpha1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {".": {}, "f:image": {}, "f:port": {}, "f:replicas": {}}},
                "manager": "kubectl",
                "operation": "Update",
                "time": "2026-11-29T10:00:00Z",
            }],
        },
        "spec": {
            "image": format!("registry.example.com/shop:1.{i}"),
            "replicas": 3,
            "port": 8080,
            "databaseSecret": "shop-db",
            "resources": {"cpu": "250m", "memory": "256Mi"},
            "debug": false,
        },
        "status": {
            "observedGeneration": 3,
            "replicas": 3,
            "readyReplicas": 3,
            "selector": "app.kubernetes.io/instance=shop,app.kubernetes.io/name=webapp",
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "AllReplicasReady", "message": "3/3 replicas ready",
                 "observedGeneration": 3, "lastTransitionTime": "2026-11-29T10:01:00Z"},
                {"type": "Progressing", "status": "False", "reason": "RolloutComplete", "message": "3/3 replicas updated",
                 "observedGeneration": 3, "lastTransitionTime": "2026-11-29T10:01:00Z"},
                {"type": "Degraded", "status": "False", "reason": "AsExpected", "message": "",
                 "observedGeneration": 3, "lastTransitionTime": "2026-11-29T10:01:00Z"},
            ],
        },
    })
}

fn time(mut f: impl FnMut(), min: Duration) -> (Duration, u32) {
    // Warm up, then run for at least `min`.
    for _ in 0..3 {
        f();
    }
    let started = Instant::now();
    let mut runs = 0;
    while started.elapsed() < min {
        f();
        runs += 1;
    }
    (started.elapsed() / runs, runs)
}

fn main() {
    let objects: Vec<Value> = (0..OBJECTS).map(object).collect();
    let review = serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "bench", "desiredAPIVersion": "apps.olmpack.dev/v1", "objects": objects},
    }))
    .expect("encodes");

    // Sanity: the conversion succeeds and converts every object.
    let (body, outcome) = convert::handle(&review);
    assert_eq!(outcome, convert::Outcome::Success);
    let response: Value = serde_json::from_slice(&body).expect("decodes");
    assert_eq!(
        response["response"]["convertedObjects"]
            .as_array()
            .map(Vec::len),
        Some(OBJECTS)
    );

    // Alternate the two in rounds so that machine load hits both alike; report medians.
    let round = Duration::from_millis(300);
    let mut floors = Vec::new();
    let mut ours = Vec::new();
    let mut ratios = Vec::new();
    for _ in 0..10 {
        let (floor, _) = time(
            || {
                let value: Value = serde_json::from_slice(black_box(&review)).expect("decodes");
                black_box(serde_json::to_vec(&value).expect("encodes"));
            },
            round,
        );
        let (conversion, _) = time(
            || {
                black_box(convert::handle(black_box(&review)));
            },
            round,
        );
        floors.push(floor);
        ours.push(conversion);
        ratios.push(floor.as_secs_f64() / conversion.as_secs_f64());
    }
    floors.sort();
    ours.sort();
    ratios.sort_by(f64::total_cmp);
    let (floor, ours, ratio) = (floors[5], ours[5], ratios[5]);
    println!(
        "review: {OBJECTS} objects, {} bytes; 10 alternating rounds, medians",
        review.len()
    );
    println!("floor (serde_json decode+encode): {floor:?} per review");
    println!("conversion (convert::handle):     {ours:?} per review");
    println!(
        "per object: floor {:?}, conversion {:?}",
        floor / OBJECTS as u32,
        ours / OBJECTS as u32
    );
    println!("ratio floor/conversion: {ratio:.2} (target >= 0.5)");
}
