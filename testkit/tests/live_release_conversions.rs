//! Each release's own conversions, live, on the real test control plane: a release whose
//! conversion of a kind new in it is a stub (kubebuilder v4.15.0's scaffold converts
//! FirstMate v1 ↔ v2 by copying only the metadata) is found in that release, although no
//! edge carries an older object through it; the same release with a lossless conversion
//! passes.

use axum::Json;
use axum::routing::post;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use olmpack_envtest::binaries::Tool;
use olmpack_envtest::control_plane::TestEnv;
use olmpack_envtest::live::{EdgeOptions, EdgeReport, ReleaseUnderTest, Webhook, rules, run_edge};
use olmpack_model::report::{Finding, Severity};
use olmpack_model::upgrade::Verdict;
use serde_json::{Value, json};

const GROUP: &str = "crew.example.com";

/// A CRD of `kind` serving v1 (storage) and v2 with one schema, converted by webhook.
fn crd(kind: &str, plural: &str) -> CustomResourceDefinition {
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "size": {"type": "integer"}, "colour": {"type": "string"},
        }},
    }}});
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v2", "served": true, "storage": false, "schema": schema},
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"service": {"name": "webhook", "namespace": "system", "path": "/convert"}},
            }},
        },
    }))
    .expect("the CRD fixture is valid")
}

fn example(kind: &str, name: &str) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"size": 3, "colour": "blue"},
    })
}

/// A conversion webhook: every object gets the desired apiVersion; objects of a kind in
/// `stubbed` keep only their metadata, as a scaffold's unfilled `ConvertTo`/`ConvertFrom`.
fn router(stubbed: &'static [&'static str]) -> axum::Router {
    axum::Router::new().route(
        "/convert",
        post(move |Json(review): Json<ConversionReview>| async move {
            let Ok(request) = ConversionRequest::from_review(review) else {
                let status = kube::core::Status::failure("no request", "BadRequest");
                return Json(ConversionResponse::invalid(status).into_review());
            };
            let desired = request.desired_api_version.clone();
            let converted = request
                .objects
                .iter()
                .map(|object| {
                    let kind = object["kind"].as_str().unwrap_or_default();
                    let mut out = if stubbed.contains(&kind) {
                        json!({"kind": kind, "metadata": object["metadata"]})
                    } else {
                        object.clone()
                    };
                    out["apiVersion"] = json!(desired);
                    out
                })
                .collect();
            Json(
                ConversionResponse::for_request(request)
                    .success(converted)
                    .into_review(),
            )
        }),
    )
}

/// `op.v1` (Ship) → `op.v2` (Ship, and FirstMate new in it); `op.v2`'s webhook stubs the
/// kinds in `stubbed`.
async fn edge(stubbed: &'static [&'static str]) -> Option<EdgeReport> {
    if !olmpack_testkit::tools::require(
        &[Tool::Etcd, Tool::KubeApiserver],
        "the test control plane",
    ) {
        return None;
    }
    let from = ReleaseUnderTest {
        name: "op.v1".into(),
        crds: vec![crd("Ship", "ships")],
        examples: vec![example("Ship", "ship-sample")],
        webhook: Some(Webhook::Router(router(&[]))),
        operator: None,
        admission: Vec::new(),
    };
    let to = ReleaseUnderTest {
        name: "op.v2".into(),
        crds: vec![crd("Ship", "ships"), crd("FirstMate", "firstmates")],
        examples: vec![
            example("Ship", "ship-sample"),
            example("FirstMate", "firstmate-sample"),
        ],
        webhook: Some(Webhook::Router(router(stubbed))),
        ..from.clone()
    };
    let env = TestEnv::start()
        .await
        .expect("the test control plane starts");
    let options = EdgeOptions {
        cleanup: false,
        ..EdgeOptions::default()
    };
    let report = run_edge(&env.client(), &from, &to, &options)
        .await
        .expect("the edge runs");
    for step in &report.steps {
        eprintln!("{}: {}", step.step, step.outcome);
    }
    Some(report)
}

fn own_conversion_findings(report: &EdgeReport) -> Vec<&Finding> {
    report
        .findings
        .iter()
        .filter(|f| f.rule == rules::RELEASE_CONVERSION_LOSSY)
        .collect()
}

#[tokio::test]
async fn live_a_stub_conversion_of_a_new_kind_is_found_in_its_release() {
    let Some(report) = edge(&["FirstMate"]).await else {
        return;
    };
    assert_eq!(report.verdict, Verdict::DataLost, "{:#?}", report.findings);
    let found = own_conversion_findings(&report);
    let shown: Vec<String> = found
        .iter()
        .map(|f| {
            format!(
                "{} {} {} {}",
                f.object.as_deref().unwrap_or("-"),
                f.version.as_deref().unwrap_or("-"),
                f.field.as_deref().unwrap_or("-"),
                f.message
            )
        })
        .collect();
    // Created at v1 and read, written back and read through v2; and the copy made at v2
    // (from the stub's empty object) has nothing to lose.
    assert_eq!(
        shown,
        [
            "FirstMate/firstmate-sample-conv-v1 v1 spec.colour op.v2's own conversion: created at v1, read and written back unchanged at v2, read at v1: spec.colour (\"blue\") is gone",
            "FirstMate/firstmate-sample-conv-v1 v1 spec.size op.v2's own conversion: created at v1, read and written back unchanged at v2, read at v1: spec.size (3) is gone",
        ],
        "{:#?}",
        report.findings
    );
    assert!(found.iter().all(|f| f.severity == Severity::Error));
    // The edge's own objects (op.v1's Ship) never met the stub: only this phase found it.
    assert!(
        report
            .findings
            .iter()
            .all(|f| f.rule == rules::RELEASE_CONVERSION_LOSSY),
        "{:#?}",
        report.findings
    );
}

#[tokio::test]
async fn live_lossless_conversions_of_every_release_pass() {
    let Some(report) = edge(&[]).await else {
        return;
    };
    assert_eq!(report.verdict, Verdict::Passed, "{:#?}", report.findings);
    assert!(own_conversion_findings(&report).is_empty());
    let own: Vec<&str> = report
        .steps
        .iter()
        .filter(|s| s.step == "own-conversions")
        .map(|s| s.outcome.as_str())
        .collect();
    assert_eq!(
        own,
        [
            "op.v1: 2 object(s) made from its examples at every version its multi-version CRD(s) serve; 2 round trip(s) through every other served version",
            "op.v2: 4 object(s) made from its examples at every version its multi-version CRD(s) serve; 4 round trip(s) through every other served version",
        ]
    );
}
