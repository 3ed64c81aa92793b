//! Fuzzing the webhook handlers with proptest: arbitrary bytes, arbitrary JSON, and
//! review-shaped JSON with arbitrary objects. Every input must get a well-formed review back
//! (no panic, never an empty body), with the request's uid echoed and, on success, the same
//! number of objects at the desired version.

mod common;

use common::strategies;
use proptest::prelude::*;
use serde_json::{Value, json};
use webapp_operator::webhook::{admission, convert};

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn json_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
        prop_oneof![
            Just("apps.olmpack.dev/v1"),
            Just("apps.olmpack.dev/v1alpha1"),
            Just("apps.olmpack.dev/v1beta1"),
            Just("WebApp"),
            Just("apps.olmpack.dev/conversion-data"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("apiVersion".to_owned()),
                    Just("kind".to_owned()),
                    Just("metadata".to_owned()),
                    Just("spec".to_owned()),
                    Just("status".to_owned()),
                    Just("annotations".to_owned()),
                    Just("image".to_owned()),
                    Just("database".to_owned()),
                    "[a-zA-Z]{1,10}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

/// A WebApp-like object: right shape, arbitrary values.
fn webapp_like() -> BoxedStrategy<Value> {
    (
        prop_oneof![
            Just("apps.olmpack.dev/v1"),
            Just("apps.olmpack.dev/v1alpha1"),
            Just("apps.olmpack.dev/v1beta1"),
            Just("apps.olmpack.dev/v9"),
        ],
        json_value(),
        json_value(),
        proptest::option::of(proptest::collection::btree_map(
            "[a-z./-]{1,40}",
            ".{0,30}",
            0..3,
        )),
    )
        .prop_map(|(api_version, spec, status, annotations)| {
            json!({
                "apiVersion": api_version,
                "kind": "WebApp",
                "metadata": {"name": "x", "namespace": "y", "uid": "u", "annotations": annotations},
                "spec": spec,
                "status": status,
            })
        })
        .boxed()
}

/// A valid WebApp at a random version (these convert successfully).
fn valid_object() -> BoxedStrategy<Value> {
    fn typed<T: serde::Serialize>(object: T, api_version: &str) -> Value {
        let mut value = serde_json::to_value(object).unwrap();
        value["apiVersion"] = json!(api_version);
        value["kind"] = json!("WebApp");
        value
    }
    prop_oneof![
        strategies::hub().prop_map(|o| typed(o, "apps.olmpack.dev/v1")),
        strategies::v1beta1().prop_map(|o| typed(o, "apps.olmpack.dev/v1beta1")),
        strategies::v1alpha1().prop_map(|o| typed(o, "apps.olmpack.dev/v1alpha1")),
    ]
    .boxed()
}

fn conversion_review() -> impl Strategy<Value = Value> {
    (
        "[a-z0-9-]{0,12}",
        prop_oneof![
            Just("apps.olmpack.dev/v1".to_owned()),
            Just("apps.olmpack.dev/v1alpha1".to_owned()),
            Just("apps.olmpack.dev/v1beta1".to_owned()),
            ".{0,10}",
        ],
        prop_oneof![
            proptest::collection::vec(prop_oneof![webapp_like(), json_value()], 0..5),
            proptest::collection::vec(valid_object(), 0..5),
        ],
    )
        .prop_map(|(uid, desired, objects)| {
            json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "ConversionReview",
                "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
            })
        })
}

fn admission_review() -> impl Strategy<Value = Value> {
    (
        "[a-z0-9-]{0,12}",
        prop_oneof![webapp_like(), json_value(), valid_object()],
    )
        .prop_map(|(uid, object)| {
            json!({
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "request": {"uid": uid, "operation": "CREATE", "object": object},
            })
        })
}

fn check_conversion(request: &[u8]) -> Result<(), TestCaseError> {
    let (body, outcome) = convert::handle(request);
    prop_assert!(!body.is_empty());
    let response: Value = serde_json::from_slice(&body).expect("the response is JSON");
    prop_assert_eq!(&response["apiVersion"], "apiextensions.k8s.io/v1");
    prop_assert_eq!(&response["kind"], "ConversionReview");
    let status = response["response"]["result"]["status"].as_str().unwrap();
    let parsed: Option<Value> = serde_json::from_slice(request).ok();
    if let Some(uid) = parsed.as_ref().and_then(|r| r["request"]["uid"].as_str()) {
        prop_assert_eq!(response["response"]["uid"].as_str(), Some(uid));
    }
    match outcome {
        convert::Outcome::Success => {
            prop_assert_eq!(status, "Success");
            let request = parsed.unwrap();
            let sent = request["request"]["objects"].as_array().unwrap();
            let got = response["response"]["convertedObjects"].as_array().unwrap();
            prop_assert_eq!(sent.len(), got.len());
            for (before, after) in sent.iter().zip(got) {
                prop_assert_eq!(
                    &after["apiVersion"],
                    &request["request"]["desiredAPIVersion"]
                );
                prop_assert_eq!(&after["kind"], &before["kind"]);
                let strip = |v: &Value| {
                    let mut m = v["metadata"].clone();
                    if let Some(m) = m.as_object_mut() {
                        m.remove("annotations");
                    }
                    m
                };
                prop_assert_eq!(strip(after), strip(before));
            }
        }
        convert::Outcome::Failure => {
            prop_assert_eq!(status, "Failure");
            prop_assert!(
                !response["response"]["result"]["message"]
                    .as_str()
                    .unwrap()
                    .is_empty()
            );
        }
    }
    Ok(())
}

fn check_admission(request: &[u8]) -> Result<(), TestCaseError> {
    for (body, _) in [
        admission::handle_validate(request),
        admission::handle_mutate(request),
    ] {
        prop_assert!(!body.is_empty());
        let response: Value = serde_json::from_slice(&body).expect("the response is JSON");
        prop_assert_eq!(&response["kind"], "AdmissionReview");
        prop_assert!(response["response"]["allowed"].is_boolean());
        let parsed: Option<Value> = serde_json::from_slice(request).ok();
        if let Some(uid) = parsed.as_ref().and_then(|r| r["request"]["uid"].as_str()) {
            prop_assert_eq!(response["response"]["uid"].as_str(), Some(uid));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(5_000))]

    #[test]
    fn operator_fuzz_webhooks_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        check_conversion(&bytes)?;
        check_admission(&bytes)?;
    }

    #[test]
    fn operator_fuzz_webhooks_arbitrary_json(value in json_value()) {
        let bytes = serde_json::to_vec(&value).unwrap();
        check_conversion(&bytes)?;
        check_admission(&bytes)?;
    }

    #[test]
    fn operator_fuzz_conversion_reviews(review in conversion_review()) {
        check_conversion(&serde_json::to_vec(&review).unwrap())?;
    }

    #[test]
    fn operator_fuzz_admission_reviews(review in admission_review()) {
        check_admission(&serde_json::to_vec(&review).unwrap())?;
    }
}

#[test]
fn operator_malformed_review_gets_a_failure_with_message() {
    let cases: [(&[u8], &str); 5] = [
        (b"", "the request body is not JSON: EOF while parsing a value at line 1 column 0"),
        (b"[]", "the request body is not JSON: not a JSON object"),
        (
            br#"{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"ConversionReview","request":{"uid":"u1"}}"#,
            "expected a ConversionReview of apiextensions.k8s.io/v1, got apiextensions.k8s.io/v1beta1 ConversionReview",
        ),
        (
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u1","desiredAPIVersion":"apps/v1","objects":[]}}"#,
            "request.desiredAPIVersion \"apps/v1\" is not a WebApp version",
        ),
        (
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u1","desiredAPIVersion":"apps.olmpack.dev/v1","objects":[{"apiVersion":"apps.olmpack.dev/v1alpha1","kind":"WebApp","metadata":{"name":"a"},"spec":{"image":1}}]}}"#,
            "object 0 (a) does not match the v1alpha1 schema: invalid type: integer `1`, expected a string",
        ),
    ];
    for (request, message) in cases {
        let (body, outcome) = convert::handle(request);
        assert_eq!(outcome, convert::Outcome::Failure);
        let response: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(response["response"]["result"]["status"], "Failure");
        assert_eq!(response["response"]["result"]["message"], message);
        if request.starts_with(b"{") {
            assert_eq!(
                response["response"]["uid"], "u1",
                "uid echoed even on failure"
            );
        }
    }
}
