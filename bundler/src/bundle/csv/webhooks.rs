//! Webhooks: admission webhook configurations become `webhookdefinitions`; CRDs with a webhook
//! conversion get one `ConversionWebhook` definition per serving endpoint. Each must reach the
//! operator's deployment through a Service in the manifests, which then leaves the manifests
//! (OLM creates `<deployment>-service`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::super::inputs::{Inputs, Sourced};
use crate::json::str_at;
use olmpack_model::csv::{SHARED_ADMISSION_FIELDS, WebhookDescription};
use olmpack_model::decode;
use olmpack_model::objects::{self, ServiceReference};
use olmpack_model::report::Finding;

/// The CSV's webhook definitions and what they imply for the rest of the bundle.
pub(super) struct Webhooks {
    /// Admission and conversion definitions, sorted by (type, generateName).
    pub(super) definitions: Vec<WebhookDescription>,
    /// Whether a CRD converts through a webhook (which limits the install modes).
    pub(super) has_conversion: bool,
    /// The Services webhooks are routed through; OLM replaces them.
    pub(super) services: BTreeSet<String>,
}

/// Whether the inputs have any webhook (admission, or a CRD converting through one).
pub(super) fn any(inputs: &Inputs) -> bool {
    !inputs.validating_webhooks.is_empty()
        || !inputs.mutating_webhooks.is_empty()
        || inputs
            .crds
            .iter()
            .any(|c| c.crd_v1().webhook_conversion().is_some())
}

/// Every webhook definition of the inputs; a webhook OLM could not serve is a problem.
pub(super) fn definitions(inputs: &Inputs, problems: &mut Vec<Finding>) -> Webhooks {
    let mut definitions = admission_webhooks(inputs, problems);
    let (conversions, conversion_services) = conversion_webhooks(inputs, problems);
    let has_conversion = !conversions.is_empty();
    definitions.extend(conversions);
    definitions.sort_by(|a, b| (&a.type_, &a.generate_name).cmp(&(&b.type_, &b.generate_name)));
    Webhooks {
        definitions,
        has_conversion,
        services: webhook_service_names(inputs, &conversion_services),
    }
}

/// The deployment whose pod labels match the Service's selector.
fn deployment_behind_service<'a>(
    inputs: &'a Inputs,
    service: &str,
) -> Option<(&'a Sourced, &'a Sourced)> {
    let svc = inputs.services.iter().find(|s| s.name() == service)?;
    let typed = svc.service();
    let deployment =
        (inputs.deployments.iter()).find(|d| typed.selects(d.deployment().pod_labels()))?;
    Some((svc, deployment))
}

/// `(containerPort, targetPort)` for a webhook that calls `service` on `port`.
fn ports(service: &Sourced, port: i64) -> (i64, Option<Value>) {
    (port, service.service().target_port(port).cloned())
}

/// The `webhooks` of an admission webhook configuration.
fn hooks_of(config: &Sourced) -> impl Iterator<Item = &Value> {
    config
        .value
        .get("webhooks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// One definition per webhook of every Validating/MutatingWebhookConfiguration.
fn admission_webhooks(inputs: &Inputs, problems: &mut Vec<Finding>) -> Vec<WebhookDescription> {
    let mut out = Vec::new();
    for (configs, kind) in [
        (&inputs.validating_webhooks, "ValidatingAdmissionWebhook"),
        (&inputs.mutating_webhooks, "MutatingAdmissionWebhook"),
    ] {
        for config in configs {
            for (i, hook) in hooks_of(config).enumerate() {
                let hook = AdmissionHook {
                    config,
                    index: i,
                    hook,
                    kind,
                };
                out.extend(hook.definition(inputs, problems));
            }
        }
    }
    out
}

/// One webhook of an admission webhook configuration.
struct AdmissionHook<'a> {
    config: &'a Sourced,
    index: usize,
    hook: &'a Value,
    /// `ValidatingAdmissionWebhook` or `MutatingAdmissionWebhook`.
    kind: &'static str,
}

impl AdmissionHook<'_> {
    fn service(&self) -> ServiceReference {
        objects::webhook_service(self.hook)
    }

    fn field(&self, field: &str) -> String {
        format!("webhooks[{}].{field}", self.index)
    }

    fn report(&self, problems: &mut Vec<Finding>, finding: Finding, field: &str) {
        problems.push(self.config.finding(finding.field(self.field(field))));
    }

    /// The definition; `None`, with an error, when OLM could not serve the webhook.
    fn definition(
        &self,
        inputs: &Inputs,
        problems: &mut Vec<Finding>,
    ) -> Option<WebhookDescription> {
        let (svc, deployment) = self.target(inputs, problems)?;
        if self.hook.get("admissionReviewVersions").is_none() {
            let finding = Finding::error(
                "input/webhook-review-versions",
                "admissionReviewVersions is required",
            )
            .hint("set [v1]");
            self.report(problems, finding, "admissionReviewVersions");
            return None;
        }
        if self.hook.get("namespaceSelector").is_some() {
            let finding = Finding::warning(
                "input/webhook-namespace-selector",
                "OLM replaces namespaceSelector with one for the OperatorGroup's namespaces",
            );
            self.report(problems, finding, "namespaceSelector");
        }
        Some(self.definition_for(svc, deployment))
    }

    /// The Service the webhook calls and the deployment behind it; `None`, with an error,
    /// when there is none.
    fn target<'i>(
        &self,
        inputs: &'i Inputs,
        problems: &mut Vec<Finding>,
    ) -> Option<(&'i Sourced, &'i Sourced)> {
        let reference = self.service();
        let service = decode::text(&reference.name);
        if service.is_empty() {
            let finding = Finding::error(
                "input/webhook-without-service",
                "OLM can only route webhooks to a Service in front of the operator's deployment",
            );
            self.report(problems, finding, "clientConfig.service");
            return None;
        }
        let target = deployment_behind_service(inputs, service);
        if target.is_none() {
            let finding = Finding::error(
                "input/webhook-service-unresolved",
                format!(
                    "Service {service} is not in the manifests or selects no Deployment's pods"
                ),
            );
            self.report(problems, finding, "clientConfig.service.name");
        }
        target
    }

    /// The `webhookdefinitions` entry for a webhook served by `deployment` behind `svc`.
    fn definition_for(&self, svc: &Sourced, deployment: &Sourced) -> WebhookDescription {
        let hook = self.hook;
        let service = self.service();
        let port = service.port();
        let (container_port, target_port) = ports(svc, port);
        let mut def = json!({
            "admissionReviewVersions": hook["admissionReviewVersions"],
            "containerPort": container_port,
            "deploymentName": deployment.name(),
            "generateName": str_at(hook, "/name"),
            "sideEffects": hook.get("sideEffects").cloned().unwrap_or(json!("None")),
            "type": self.kind,
        });
        for key in SHARED_ADMISSION_FIELDS {
            if let Some(v) = hook.get(key) {
                def[key] = v.clone();
            }
        }
        if self.kind == "MutatingAdmissionWebhook"
            && let Some(v) = hook.get("reinvocationPolicy")
        {
            def["reinvocationPolicy"] = v.clone();
        }
        if let Some(t) = target_port {
            def["targetPort"] = t;
        }
        if let Some(path) = decode::as_read(&service.path, &service.extra, "path") {
            def["webhookPath"] = path;
        }
        typed(&def)
    }
}

/// `(deployment, port, path)` a conversion webhook is served at.
type Endpoint = (String, i64, String);
/// CRDs converted at one endpoint, their review versions and the Service's target port.
type ConversionGroup = (BTreeSet<String>, Value, Option<Value>);

/// One ConversionWebhook definition per (deployment, port, path) that CRDs convert through,
/// and the Services those CRDs named.
fn conversion_webhooks(
    inputs: &Inputs,
    problems: &mut Vec<Finding>,
) -> (Vec<WebhookDescription>, BTreeSet<String>) {
    let mut groups: BTreeMap<Endpoint, ConversionGroup> = BTreeMap::new();
    let mut services = BTreeSet::new();
    for crd in &inputs.crds {
        let v1 = crd.crd_v1();
        let Some(conversion) = v1.webhook_conversion() else {
            continue;
        };
        let reference = conversion.service().cloned().unwrap_or_default();
        let Some((svc, deployment)) = conversion_target(inputs, crd, &reference, problems) else {
            continue;
        };
        services.insert(decode::text(&reference.name).to_owned());
        let port = reference.port();
        let path = decode::text(&reference.path).to_owned();
        let versions = conversion.review_versions().unwrap_or(json!(["v1"]));
        let (_, target) = ports(svc, port);
        let entry = groups
            .entry((deployment.name().to_owned(), port, path))
            .or_insert_with(|| (BTreeSet::new(), versions, target));
        entry.0.insert(crd.name().to_owned());
    }
    let defs = groups.into_iter().map(conversion_definition).collect();
    (defs, services)
}

/// The Service a CRD's conversion webhook names, that Service and the deployment behind it;
/// `None`, with an error, when there is none.
fn conversion_target<'i>(
    inputs: &'i Inputs,
    crd: &Sourced,
    reference: &ServiceReference,
    problems: &mut Vec<Finding>,
) -> Option<(&'i Sourced, &'i Sourced)> {
    let service = decode::text(&reference.name);
    if service.is_empty() {
        problems.push(
            crd.finding(
                Finding::error(
                    "input/conversion-without-service",
                    "a conversion webhook must be reached through a Service for OLM to manage it",
                )
                .field("spec.conversion.webhook.clientConfig"),
            ),
        );
        return None;
    }
    let Some((svc, deployment)) = deployment_behind_service(inputs, service) else {
        problems.push(
            crd.finding(
                Finding::error(
                    "input/webhook-service-unresolved",
                    format!(
                        "Service {service} is not in the manifests or selects no Deployment's pods"
                    ),
                )
                .field("spec.conversion.webhook.clientConfig.service.name"),
            ),
        );
        return None;
    };
    Some((svc, deployment))
}

/// The `ConversionWebhook` definition for the CRDs converted at one endpoint.
fn conversion_definition(
    ((deployment, port, path), (crds, versions, target)): (Endpoint, ConversionGroup),
) -> WebhookDescription {
    let first = crds.iter().next().cloned().unwrap_or_default();
    let mut def = json!({
        "admissionReviewVersions": versions,
        "containerPort": port,
        "conversionCRDs": crds.into_iter().collect::<Vec<_>>(),
        "deploymentName": deployment,
        "generateName": format!("c{first}"),
        "sideEffects": "None",
        "type": "ConversionWebhook",
    });
    if let Some(t) = target {
        def["targetPort"] = t;
    }
    if !path.is_empty() {
        def["webhookPath"] = json!(path);
    }
    typed(&def)
}

/// A definition assembled from the input's values, typed; a value of a type OLM does not read
/// there (copied from the input as it was) stays in `extra`, so it is written as given and
/// the validators judge it.
fn typed(definition: &Value) -> WebhookDescription {
    decode::read(definition).0
}

/// Every Service a webhook names: the conversion ones and those of admission webhooks.
fn webhook_service_names(
    inputs: &Inputs,
    conversion_services: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut names = conversion_services.clone();
    for config in inputs
        .validating_webhooks
        .iter()
        .chain(&inputs.mutating_webhooks)
    {
        for hook in hooks_of(config) {
            let name = objects::webhook_service(hook).name.unwrap_or_default();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}
