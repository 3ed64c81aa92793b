use super::*;
use serde_json::json;

/// The table `bundler/tests/cr_schema.rs` also holds against the real kube-apiserver: each
/// case's schema, object and the apiserver's refusals, word for word.
const CASES: &str = include_str!("../../../tests/fixtures/cr_schema/cases.json");

fn refusals(object: &Value, root: &JSONSchemaProps, status: bool) -> Vec<String> {
    let stored = as_created(object, root, status);
    let mut got: Vec<String> = validate_object(&stored, root)
        .iter()
        .map(Invalid::text)
        .collect();
    got.sort();
    got
}

#[test]
fn every_case_is_refused_in_the_apiservers_words() {
    let cases: Vec<Value> = serde_json::from_str(CASES).unwrap();
    assert!(cases.len() >= 30);
    for case in &cases {
        let root: JSONSchemaProps = serde_json::from_value(case["schema"].clone()).unwrap();
        let status = case["statusSubresource"] == json!(true);
        let mut want: Vec<String> = serde_json::from_value(case["refusals"].clone()).unwrap();
        want.sort();
        assert_eq!(
            refusals(&case["object"], &root, status),
            want,
            "{}",
            case["name"]
        );
    }
}

#[test]
fn defaults_apply_inside_defaults_and_lists() {
    let root: JSONSchemaProps = serde_json::from_value(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "default": {}, "properties": {
            "mode": {"type": "string", "default": "fast"},
            "ports": {"type": "array", "items": {"type": "object", "properties": {
                "protocol": {"type": "string", "default": "TCP"}
            }}}
        }}}
    }))
    .unwrap();
    let stored = as_created(&json!({"spec": null, "kind": "X"}), &root, false);
    assert_eq!(stored, json!({"kind": "X", "spec": {"mode": "fast"}}));
    let stored = as_created(
        &json!({"spec": {"ports": [{}, {"protocol": "UDP"}]}}),
        &root,
        false,
    );
    assert_eq!(
        stored,
        json!({"spec": {"mode": "fast", "ports": [{"protocol": "TCP"}, {"protocol": "UDP"}]}})
    );
}

#[test]
fn go_prints_floats_shortest_with_exponents_far_out() {
    let cases = [
        (3.0, "3"),
        (4.5, "4.5"),
        (1e6, "1e+06"),
        (123_456.0, "123456"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1.5e21, "1.5e+21"),
    ];
    for (f, want) in cases {
        assert_eq!(go_float(f), want, "{f}");
    }
}
