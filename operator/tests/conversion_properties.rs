//! Lossless round trips of hub-and-spoke conversion: 10,000 random objects per direction per
//! version pair (v1alpha1↔v1, v1beta1↔v1, v1alpha1↔v1beta1 through the hub), typed and at
//! the JSON level the webhook uses (2,000 each).

mod common;

use common::strategies;
use proptest::prelude::*;
use serde_json::Value;
use webapp_operator::api::{Version, v1, v1alpha1, v1beta1};
use webapp_operator::conversion::{PRESERVED_ANNOTATION, Spoke, convert_object};

const CASES: u32 = 10_000;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn operator_v1alpha1_hub_v1alpha1(spoke in strategies::v1alpha1()) {
        prop_assert_eq!(v1alpha1::WebApp::from_hub(spoke.clone().to_hub()), spoke);
    }

    #[test]
    fn operator_hub_v1alpha1_hub(hub in strategies::hub()) {
        prop_assert_eq!(v1alpha1::WebApp::from_hub(hub.clone()).to_hub(), hub);
    }

    #[test]
    fn operator_v1beta1_hub_v1beta1(spoke in strategies::v1beta1()) {
        prop_assert_eq!(v1beta1::WebApp::from_hub(spoke.clone().to_hub()), spoke);
    }

    #[test]
    fn operator_hub_v1beta1_hub(hub in strategies::hub()) {
        prop_assert_eq!(v1beta1::WebApp::from_hub(hub.clone()).to_hub(), hub);
    }

    #[test]
    fn operator_v1alpha1_v1beta1_v1alpha1(spoke in strategies::v1alpha1()) {
        let there = v1beta1::WebApp::from_hub(spoke.clone().to_hub());
        prop_assert_eq!(v1alpha1::WebApp::from_hub(there.to_hub()), spoke);
    }

    #[test]
    fn operator_v1beta1_v1alpha1_v1beta1(spoke in strategies::v1beta1()) {
        let there = v1alpha1::WebApp::from_hub(spoke.clone().to_hub());
        prop_assert_eq!(v1beta1::WebApp::from_hub(there.to_hub()), spoke);
    }
}

fn to_json<T: serde::Serialize>(object: &T, version: Version) -> Value {
    let mut value = serde_json::to_value(object).unwrap();
    value["apiVersion"] = Value::String(version.api_version());
    value["kind"] = Value::String("WebApp".to_owned());
    value
}

/// Metadata without annotations: what the apiserver requires to stay unchanged.
fn metadata_but_annotations(object: &Value) -> Value {
    let mut meta = object["metadata"].clone();
    if let Some(map) = meta.as_object_mut() {
        map.remove("annotations");
    }
    meta
}

/// The JSON-level tests check the same property as the typed ones plus the metadata rule;
/// 2,000 cases each keep the debug-build suite fast.
const JSON_CASES: u32 = 2_000;

proptest! {
    #![proptest_config(ProptestConfig { cases: JSON_CASES, ..config() })]

    /// The webhook's JSON path: hub → every spoke → hub is the identity, agrees with the typed
    /// conversion, and touches no metadata but annotations.
    #[test]
    fn operator_json_hub_roundtrip_through_every_version(hub in strategies::hub()) {
        let original = to_json(&hub, Version::V1);
        for version in [Version::V1alpha1, Version::V1beta1] {
            let down = convert_object(original.clone(), version, 0).unwrap();
            prop_assert_eq!(&down["apiVersion"], &Value::String(version.api_version()));
            prop_assert_eq!(metadata_but_annotations(&down), metadata_but_annotations(&original));
            let typed = match version {
                Version::V1alpha1 => to_json(&v1alpha1::WebApp::from_hub(hub.clone()), version),
                _ => to_json(&v1beta1::WebApp::from_hub(hub.clone()), version),
            };
            prop_assert_eq!(&down, &typed);
            let up = convert_object(down, Version::V1, 0).unwrap();
            prop_assert_eq!(&up, &original);
            prop_assert!(up["metadata"]["annotations"].get(PRESERVED_ANNOTATION).is_none());
        }
    }

    /// Spoke → hub → spoke at the JSON level, for both spokes.
    #[test]
    fn operator_json_spoke_roundtrip(a in strategies::v1alpha1(), b in strategies::v1beta1()) {
        for (original, version) in [
            (to_json(&a, Version::V1alpha1), Version::V1alpha1),
            (to_json(&b, Version::V1beta1), Version::V1beta1),
        ] {
            let up = convert_object(original.clone(), Version::V1, 0).unwrap();
            prop_assert_eq!(metadata_but_annotations(&up), metadata_but_annotations(&original));
            let back = convert_object(up, version, 0).unwrap();
            prop_assert_eq!(back, original);
        }
    }
}

#[test]
fn operator_hub_only_fields_survive_in_an_annotation() {
    let hub: v1::WebApp = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps.olmpack.dev/v1", "kind": "WebApp",
        "metadata": {"name": "shop", "namespace": "prod"},
        "spec": {"image": "shop:1", "containerPort": 9000, "logLevel": "Warn",
                 "database": {"secretName": "db", "key": "dsn"}},
    }))
    .unwrap();
    let alpha = v1alpha1::WebApp::from_hub(hub.clone());
    assert_eq!(alpha.spec.port, Some(9000));
    assert_eq!(alpha.spec.database_secret.as_deref(), Some("db"));
    let annotations = alpha.metadata.annotations.clone().unwrap();
    assert_eq!(
        annotations[PRESERVED_ANNOTATION],
        r#"{"logLevel":"Warn","databaseKey":"dsn"}"#
    );
    // A user who removes the database at v1alpha1 removes the preserved key with it.
    let mut edited = alpha;
    edited.spec.database_secret = None;
    let back = edited.to_hub();
    assert_eq!(back.spec.database, None);
    assert_eq!(back.spec.log_level, Some(v1::LogLevel::Warn));
    assert_eq!(back.metadata.annotations, None);
}

#[test]
fn operator_conversion_errors_name_the_object() {
    let cases = [
        (serde_json::json!(7), "object 3 is not a JSON object"),
        (
            serde_json::json!({"kind": "WebApp"}),
            "object 3 has no string apiVersion",
        ),
        (
            serde_json::json!({"apiVersion": "apps.olmpack.dev/v9", "kind": "WebApp", "metadata": {"name": "x"}}),
            "object 3 (x) has apiVersion apps.olmpack.dev/v9, which is not a WebApp version",
        ),
        (
            serde_json::json!({"apiVersion": "apps.olmpack.dev/v1", "kind": "Gadget", "metadata": {"name": "x"}}),
            "object 3 (x) has kind \"\\\"Gadget\\\"\", expected WebApp",
        ),
        (
            serde_json::json!({"apiVersion": "apps.olmpack.dev/v1", "kind": "WebApp", "spec": {"image": "i"}}),
            "object 3 (<unnamed>) has no metadata object",
        ),
        (
            serde_json::json!({"apiVersion": "apps.olmpack.dev/v1", "kind": "WebApp",
                               "metadata": {"name": "x", "annotations": {"a": 1}}, "spec": {"image": "i"}}),
            "object 3 (x) has metadata.annotations that are not a map of strings",
        ),
        (
            serde_json::json!({"apiVersion": "apps.olmpack.dev/v1", "kind": "WebApp",
                               "metadata": {"name": "x"}, "spec": {"image": 5}}),
            "object 3 (x) does not match the v1 schema: invalid type: integer `5`, expected a string",
        ),
    ];
    for (input, message) in cases {
        let err = convert_object(input, Version::V1alpha1, 3).unwrap_err();
        assert_eq!(err.to_string(), message);
    }
}
