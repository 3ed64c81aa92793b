//! CRDs: the CSV's `customresourcedefinitions.owned` entries, and the CRDs shipped in
//! `manifests/`. A CRD that converts through a webhook ships `spec.conversion` in the shape
//! OLM v0 itself writes for its `ConversionWebhook` (`<deployment>-service`, the definition's
//! port, path and review versions), without a CA: catalog-operator re-applies a bundle's CRD
//! while an InstallPlan is still running, after olm-operator has set the conversion. A CRD
//! shipped without the webhook is then reset to strategy `None`, and until olm-operator writes
//! it again the apiserver only relabels objects between versions; with the webhook kept,
//! conversions fail loudly in that window instead, and OLM's upgrade check of existing
//! objects (which trusts a webhook conversion) sees what it will see once installed.

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::super::inputs::Sourced;
use super::ReleaseSpec;
use super::objects::clean_object;
use crate::json::str_at;
use olmpack_model::csv::{CrdDescription, WebhookDescription};
use olmpack_model::decode::{self, ReadLenient};

/// One `owned` entry per served version of every CRD, sorted by (name, version).
pub(super) fn owned(spec: &ReleaseSpec<'_>, crds: &[Sourced]) -> Vec<CrdDescription> {
    let mut owned = Vec::new();
    for crd in crds {
        let v1 = crd.crd_v1();
        for version in v1.served_versions() {
            owned.push(owned_entry(spec, crd.name(), v1.kind(), version.name()));
        }
    }
    owned.sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
    owned
}

/// The `owned` entry for `version` of the CRD `name` (of `kind`), with the display metadata
/// the plan gives it.
fn owned_entry(spec: &ReleaseSpec<'_>, name: &str, kind: &str, version: &str) -> CrdDescription {
    let display = spec.csv.crds.get(name).cloned().unwrap_or_default();
    let per_version = display.versions.get(version);
    let spec_descriptors = per_version.map_or(&display.spec_descriptors, |p| &p.spec_descriptors);
    let status_descriptors =
        per_version.map_or(&display.status_descriptors, |p| &p.status_descriptors);
    CrdDescription {
        name: Some(name.to_owned()),
        version: Some(version.to_owned()),
        kind: Some(kind.to_owned()),
        display_name: Some(
            display
                .display_name
                .clone()
                .unwrap_or_else(|| kind.to_owned()),
        ),
        description: display.description.clone(),
        resources: listed(&display.resources),
        spec_descriptors: listed(spec_descriptors),
        status_descriptors: listed(status_descriptors),
        ..CrdDescription::default()
    }
}

/// The plan's list as the CSV's type (the plan's types print the CSV's fields), when not empty.
fn listed<P: serde::Serialize, T: DeserializeOwned + ReadLenient + Default>(
    list: &[P],
) -> Option<T> {
    (!list.is_empty()).then(|| decode::read(&json!(list)).0)
}

/// The CRDs as the bundle ships them: cleaned, with `spec.conversion` as OLM writes it for
/// the `ConversionWebhook` definition (of `webhook_definitions`) that lists the CRD, and
/// without one otherwise.
pub(super) fn shipped(crds: &[Sourced], webhook_definitions: &[WebhookDescription]) -> Vec<Value> {
    crds.iter()
        .map(|crd| {
            let mut value = clean_object(&crd.value);
            let conversion = conversion_as_olm_writes(crd, webhook_definitions);
            if let Some(spec) = value.get_mut("spec").and_then(Value::as_object_mut) {
                match conversion {
                    Some(conversion) => spec.insert("conversion".to_owned(), conversion),
                    None => spec.remove("conversion"),
                };
            }
            value
        })
        .collect()
}

/// `spec.conversion` as olm-operator writes it for the `ConversionWebhook` definition that
/// lists `crd`, without the CA and in the namespace the input named (OLM replaces both with
/// the install's); `None` for a CRD no definition lists, or one not in apiextensions v1.
fn conversion_as_olm_writes(
    crd: &Sourced,
    webhook_definitions: &[WebhookDescription],
) -> Option<Value> {
    if str_at(&crd.value, "/apiVersion") != "apiextensions.k8s.io/v1" {
        return None;
    }
    let definition = definition_converting(webhook_definitions, crd.name())?;
    let namespace = str_at(
        &crd.value,
        "/spec/conversion/webhook/clientConfig/service/namespace",
    );
    Some(olm_conversion(definition, namespace))
}

/// The `ConversionWebhook` definition among `webhook_definitions` that lists the CRD `name`.
pub fn definition_converting<'d>(
    webhook_definitions: &'d [WebhookDescription],
    name: &str,
) -> Option<&'d WebhookDescription> {
    webhook_definitions.iter().find(|d| {
        d.type_.as_deref() == Some("ConversionWebhook")
            && (d.conversion_crds.iter().flatten()).any(|n| n == name)
    })
}

/// `spec.conversion` (apiextensions v1, as JSON) as olm-operator writes it for a
/// `ConversionWebhook` definition, apart from the CA bundle it adds: strategy `Webhook`, the
/// Service OLM creates for the deployment (`<deploymentName>-service`, dots made dashes) in
/// `namespace` (`default` when empty), at `webhookPath` (`/` when unset) and
/// `containerPort`, with `admissionReviewVersions` as the review versions.
pub fn olm_conversion(definition: &WebhookDescription, namespace: &str) -> Value {
    let text = |field: &Option<String>| field.clone().unwrap_or_default();
    let deployment = text(&definition.deployment_name).replace('.', "-");
    let path = match text(&definition.webhook_path) {
        path if path.is_empty() => "/".to_owned(),
        path => path,
    };
    let extra = &definition.extra;
    json!({
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {
                    "name": format!("{deployment}-service"),
                    "namespace": if namespace.is_empty() { "default" } else { namespace },
                    "path": path,
                    "port": decode::as_read(&definition.container_port, extra, "containerPort")
                        .unwrap_or(json!(443)),
                },
            },
            "conversionReviewVersions": decode::as_read(
                &definition.admission_review_versions,
                extra,
                "admissionReviewVersions",
            )
            .unwrap_or(json!(["v1"])),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str, api_version: &str, conversion: Value) -> Sourced {
        Sourced {
            file: "crds.yaml".into(),
            index: 0,
            value: json!({
                "apiVersion": api_version,
                "kind": "CustomResourceDefinition",
                "metadata": {"name": name},
                "spec": {"group": "example.com", "conversion": conversion},
            }),
        }
    }

    #[test]
    fn olms_conversion_shape_for_a_definition() {
        let cases = [
            (
                json!({"deploymentName": "op.manager", "containerPort": 9443, "webhookPath": "/convert", "admissionReviewVersions": ["v1", "v1beta1"]}),
                "op-system",
                json!({"name": "op-manager-service", "namespace": "op-system", "path": "/convert", "port": 9443}),
                json!(["v1", "v1beta1"]),
            ),
            (
                json!({"deploymentName": "op"}),
                "",
                json!({"name": "op-service", "namespace": "default", "path": "/", "port": 443}),
                json!(["v1"]),
            ),
        ];
        for (definition, namespace, service, versions) in cases {
            let conversion = olm_conversion(&decode::read(&definition).0, namespace);
            assert_eq!(conversion["strategy"], "Webhook");
            assert_eq!(conversion["webhook"]["clientConfig"]["service"], service);
            assert_eq!(conversion["webhook"]["conversionReviewVersions"], versions);
            assert!(
                conversion["webhook"]["clientConfig"]
                    .get("caBundle")
                    .is_none()
            );
        }
    }

    #[test]
    fn shipped_crds_carry_olms_conversion_only_when_a_definition_lists_them() {
        let input = json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"service": {"name": "webhook-service", "namespace": "op-system", "path": "/convert"}}}});
        let crds = [
            crd("a.example.com", "apiextensions.k8s.io/v1", input.clone()),
            crd(
                "b.example.com",
                "apiextensions.k8s.io/v1",
                json!({"strategy": "None"}),
            ),
            crd("c.example.com", "apiextensions.k8s.io/v1beta1", input),
        ];
        let definitions = [decode::read(&json!({
            "type": "ConversionWebhook", "deploymentName": "op", "containerPort": 9443,
            "webhookPath": "/convert", "admissionReviewVersions": ["v1"],
            "conversionCRDs": ["a.example.com", "c.example.com"],
        }))
        .0];
        let shipped = shipped(&crds, &definitions);
        assert_eq!(
            shipped[0]["spec"]["conversion"]["webhook"]["clientConfig"]["service"],
            json!({"name": "op-service", "namespace": "op-system", "path": "/convert", "port": 9443})
        );
        assert!(shipped[1]["spec"].get("conversion").is_none());
        assert!(
            shipped[2]["spec"].get("conversion").is_none(),
            "v1beta1 CRDs keep no conversion"
        );
    }
}
