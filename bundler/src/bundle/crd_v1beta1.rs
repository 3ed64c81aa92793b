//! `apiextensions.k8s.io/v1beta1` CustomResourceDefinitions, read as the v1 model.
//!
//! The one place olmpack understands v1beta1 CRDs: every reader of CRDs (validator rules,
//! the CSV's owned-CRD matching, catalog render's `olm.gvk` derivation, the generator) asks
//! [`to_v1`] and reads the v1 shape. The conversion follows what the API server did when it
//! still served v1beta1: first the v1beta1 defaults, then the conversion to v1.
//!
//! Defaults (as the API server applied them to v1beta1 objects):
//! - `spec.scope` → `Namespaced`; `spec.names.singular` → lowercase kind;
//!   `spec.names.listKind` → `<kind>List`;
//! - no `spec.versions` but a `spec.version` → one version, served and the storage version;
//! - `spec.conversion` → strategy `None`; a `Webhook` strategy without
//!   `conversionReviewVersions` → `["v1beta1"]`;
//! - `spec.preserveUnknownFields` → `true`.
//!
//! Conversion to v1:
//! - top-level `spec.validation`, `spec.subresources` and `spec.additionalPrinterColumns`
//!   apply to every version (they replace per-version values, as the API server's conversion
//!   does; v1beta1 refused CRDs that set both);
//! - printer columns' `JSONPath` key becomes `jsonPath`;
//! - `spec.conversion.webhookClientConfig` and `conversionReviewVersions` move under
//!   `spec.conversion.webhook`;
//! - `spec.version` is dropped; `apiVersion` becomes `apiextensions.k8s.io/v1`.
//!
//! Conversion is pure and total: fields of the wrong type are left as they are, for the
//! validator to report on the v1 shape.
#![warn(missing_docs)]

use std::borrow::Cow;

use serde_json::{Map, Value, json};

/// `apiVersion` of the removed CRD API.
pub const V1BETA1: &str = "apiextensions.k8s.io/v1beta1";
/// `apiVersion` of the current CRD API.
pub const V1: &str = "apiextensions.k8s.io/v1";

/// Whether `crd` is written in the v1beta1 API.
pub fn is_v1beta1(crd: &Value) -> bool {
    crd.get("apiVersion").and_then(Value::as_str) == Some(V1BETA1)
}

/// The CRD in the v1 shape: borrowed unless it is a v1beta1 CRD (see the module docs).
pub fn to_v1(crd: &Value) -> Cow<'_, Value> {
    if !is_v1beta1(crd) {
        return Cow::Borrowed(crd);
    }
    let mut out = crd.clone();
    if let Some(object) = out.as_object_mut() {
        object.insert("apiVersion".to_owned(), Value::String(V1.to_owned()));
        if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
            apply_defaults(spec);
            convert_spec(spec);
        }
    }
    Cow::Owned(out)
}

/// The v1beta1 defaults the API server applied on read and write.
fn apply_defaults(spec: &mut Map<String, Value>) {
    if is_empty_str(spec.get("scope")) {
        spec.insert("scope".to_owned(), json!("Namespaced"));
    }
    default_names(spec);
    let has_versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .is_some_and(|v| !v.is_empty());
    let legacy = spec.get("version").and_then(Value::as_str).unwrap_or("");
    if !has_versions && !legacy.is_empty() {
        let version = json!([{ "name": legacy, "served": true, "storage": true }]);
        spec.insert("versions".to_owned(), version);
    }
    let conversion = spec
        .entry("conversion")
        .or_insert_with(|| json!({ "strategy": "None" }));
    if let Some(conversion) = conversion.as_object_mut() {
        let webhook = conversion.get("strategy").and_then(Value::as_str) == Some("Webhook");
        let reviews_empty = conversion
            .get("conversionReviewVersions")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if webhook && reviews_empty {
            conversion.insert("conversionReviewVersions".to_owned(), json!(["v1beta1"]));
        }
    }
    spec.entry("preserveUnknownFields")
        .or_insert(Value::Bool(true));
}

fn default_names(spec: &mut Map<String, Value>) {
    let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) else {
        return;
    };
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if is_empty_str(names.get("singular")) {
        names.insert("singular".to_owned(), json!(kind.to_lowercase()));
    }
    if is_empty_str(names.get("listKind")) && !kind.is_empty() {
        names.insert("listKind".to_owned(), json!(format!("{kind}List")));
    }
}

/// The v1beta1 → v1 conversion of a defaulted spec.
fn convert_spec(spec: &mut Map<String, Value>) {
    spec.remove("version");
    let schema = spec.remove("validation");
    let subresources = spec.remove("subresources");
    let columns = spec.remove("additionalPrinterColumns");
    if let Some(versions) = spec.get_mut("versions").and_then(Value::as_array_mut) {
        for version in versions.iter_mut().filter_map(Value::as_object_mut) {
            for (key, top) in [
                ("schema", &schema),
                ("subresources", &subresources),
                ("additionalPrinterColumns", &columns),
            ] {
                if let Some(top) = top {
                    version.insert(key.to_owned(), top.clone());
                }
            }
            if let Some(columns) = version
                .get_mut("additionalPrinterColumns")
                .and_then(Value::as_array_mut)
            {
                columns.iter_mut().for_each(convert_column);
            }
        }
    }
    if let Some(conversion) = spec.get_mut("conversion").and_then(Value::as_object_mut) {
        convert_conversion(conversion);
    }
}

/// A v1beta1 printer column names its path `JSONPath`; v1 calls it `jsonPath`.
fn convert_column(column: &mut Value) {
    if let Some(column) = column.as_object_mut()
        && let Some(path) = column.remove("JSONPath")
    {
        column.insert("jsonPath".to_owned(), path);
    }
}

/// v1beta1 keeps the webhook's client config and review versions next to the strategy; v1
/// nests them under `webhook`.
fn convert_conversion(conversion: &mut Map<String, Value>) {
    let client = conversion.remove("webhookClientConfig");
    let reviews = conversion.remove("conversionReviewVersions");
    if client.is_none() && reviews.is_none() {
        return;
    }
    let mut webhook = Map::new();
    if let Some(client) = client {
        webhook.insert("clientConfig".to_owned(), client);
    }
    if let Some(reviews) = reviews {
        webhook.insert("conversionReviewVersions".to_owned(), reviews);
    }
    conversion.insert("webhook".to_owned(), Value::Object(webhook));
}

fn is_empty_str(value: Option<&Value>) -> bool {
    value.and_then(Value::as_str).is_none_or(str::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1beta1(spec: Value) -> Value {
        json!({
            "apiVersion": V1BETA1,
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": spec,
        })
    }

    #[test]
    fn v1_crds_are_borrowed_unchanged() {
        let crd = json!({"apiVersion": V1, "kind": "CustomResourceDefinition", "spec": {}});
        assert!(matches!(to_v1(&crd), Cow::Borrowed(_)));
    }

    #[test]
    fn legacy_version_validation_subresources_and_columns_apply_to_every_version() {
        let crd = v1beta1(json!({
            "group": "example.com",
            "version": "v1alpha1",
            "names": {"kind": "Widget", "plural": "widgets"},
            "validation": {"openAPIV3Schema": {"type": "object"}},
            "subresources": {"status": {}},
            "additionalPrinterColumns": [
                {"name": "Ready", "type": "string", "JSONPath": ".status.ready"}
            ],
        }));
        let v1 = to_v1(&crd).into_owned();
        assert_eq!(
            v1,
            json!({
                "apiVersion": V1,
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.example.com"},
                "spec": {
                    "group": "example.com",
                    "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                    "scope": "Namespaced",
                    "conversion": {"strategy": "None"},
                    "preserveUnknownFields": true,
                    "versions": [{
                        "name": "v1alpha1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object"}},
                        "subresources": {"status": {}},
                        "additionalPrinterColumns": [
                            {"name": "Ready", "type": "string", "jsonPath": ".status.ready"}
                        ],
                    }],
                },
            })
        );
    }

    #[test]
    fn per_version_fields_and_explicit_values_are_kept() {
        let crd = v1beta1(json!({
            "group": "example.com",
            "version": "v1",
            "scope": "Cluster",
            "preserveUnknownFields": false,
            "names": {"kind": "Widget", "plural": "widgets", "singular": "wid"},
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "additionalPrinterColumns": [{"name": "A", "type": "date", "JSONPath": ".metadata.creationTimestamp"}]},
                {"name": "v2", "served": false, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object"}}},
            ],
        }));
        let v1 = to_v1(&crd).into_owned();
        assert_eq!(v1["spec"]["scope"], "Cluster");
        assert_eq!(v1["spec"]["preserveUnknownFields"], false);
        assert_eq!(v1["spec"]["names"]["singular"], "wid");
        assert_eq!(v1["spec"].get("version"), None);
        let versions = v1["spec"]["versions"].as_array().unwrap();
        assert_eq!(versions.len(), 2);
        assert_eq!(
            versions[0]["additionalPrinterColumns"][0]["jsonPath"],
            ".metadata.creationTimestamp"
        );
        assert_eq!(versions[1]["schema"]["openAPIV3Schema"]["type"], "object");
    }

    #[test]
    fn webhook_conversion_moves_under_webhook_with_the_default_review_version() {
        let crd = v1beta1(json!({
            "group": "example.com",
            "version": "v1",
            "names": {"kind": "Widget", "plural": "widgets"},
            "conversion": {
                "strategy": "Webhook",
                "webhookClientConfig": {"service": {"name": "s", "namespace": "n"}},
            },
        }));
        let v1 = to_v1(&crd).into_owned();
        assert_eq!(
            v1["spec"]["conversion"],
            json!({
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {"service": {"name": "s", "namespace": "n"}},
                    "conversionReviewVersions": ["v1beta1"],
                },
            })
        );
    }

    #[test]
    fn malformed_specs_are_left_for_the_validator() {
        let crd = v1beta1(json!("not a mapping"));
        assert_eq!(to_v1(&crd)["spec"], json!("not a mapping"));
        let crd = v1beta1(json!({"versions": "x", "names": 3}));
        assert_eq!(to_v1(&crd)["spec"]["versions"], json!("x"));
    }
}
