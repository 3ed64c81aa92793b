//! `webhook/` rules: the CSV's `webhookdefinitions`, as OLM v0 and OLM v1 check them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{Context, array_at, str_at};
use olmpack_model::names::is_dns1123_subdomain;
use olmpack_model::report::Finding;

const TYPES: [&str; 3] = [
    "ValidatingAdmissionWebhook",
    "MutatingAdmissionWebhook",
    "ConversionWebhook",
];
const FORBIDDEN_GROUPS: [&str; 3] = ["*", "operators.coreos.com", "olm.operatorframework.io"];
const FORBIDDEN_ADMISSION_RESOURCES: [&str; 5] = [
    "*",
    "validatingwebhookconfigurations",
    "mutatingwebhookconfigurations",
    "validatingwebhookconfiguration",
    "mutatingwebhookconfiguration",
];

pub(super) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let mut defs = Definitions {
        deployments: ctx
            .deployments()
            .iter()
            .map(|d| str_at(d, "/name"))
            .collect(),
        owned: array_at(ctx.spec(), "/customresourcedefinitions/owned")
            .iter()
            .map(|o| str_at(o, "/name"))
            .collect(),
        names: BTreeSet::new(),
        converted: BTreeMap::new(),
        has_conversion: false,
    };
    for (i, def) in array_at(ctx.spec(), "/webhookdefinitions")
        .iter()
        .enumerate()
    {
        defs.check(ctx, i, def, out);
    }
    if defs.has_conversion {
        check_conversion_install_modes(ctx, out);
    }
    check_undeclared_conversions(ctx, &defs.converted, out);
}

/// What the webhook definitions are checked against, and what they have declared so far.
struct Definitions<'a> {
    /// The CSV's deployment names.
    deployments: BTreeSet<&'a str>,
    /// The names of the CRDs the CSV owns.
    owned: BTreeSet<&'a str>,
    /// `(type, generateName)` of every definition seen.
    names: BTreeSet<(&'a str, &'a str)>,
    /// CRD name → index of the definition converting it.
    converted: BTreeMap<&'a str, usize>,
    /// Whether any definition converts CRDs.
    has_conversion: bool,
}

impl<'a> Definitions<'a> {
    /// Checks webhook definition `i`.
    fn check(&mut self, ctx: &Context<'a>, i: usize, def: &'a Value, out: &mut Vec<Finding>) {
        let kind = str_at(def, "/type");
        self.check_identity(ctx, i, def, out);
        check_admission_fields(ctx, i, def, out);
        // Upstream's meaning: conversionCRDs on any definition, whatever its type.
        self.has_conversion |= !array_at(def, "/conversionCRDs").is_empty();
        if kind == "ConversionWebhook" {
            self.has_conversion = true;
            self.check_conversion_crds(ctx, i, def, out);
        } else {
            check_rules(ctx, i, def, out);
        }
    }

    /// Type, `generateName` (valid and unique per type), `deploymentName` and `containerPort`.
    fn check_identity(
        &mut self,
        ctx: &Context<'_>,
        i: usize,
        def: &'a Value,
        out: &mut Vec<Finding>,
    ) {
        let field = |f: &str| format!("spec.webhookdefinitions[{i}].{f}");
        let kind = str_at(def, "/type");
        if !TYPES.contains(&kind) {
            out.push(ctx.at(
                Finding::error("webhook/type", format!("unknown webhook type {kind:?}")),
                field("type"),
            ));
        }
        let name = str_at(def, "/generateName");
        if !is_dns1123_subdomain(name) {
            out.push(ctx.at(
                Finding::error(
                    "webhook/name",
                    format!("generateName {name:?} is not a DNS-1123 subdomain"),
                ),
                field("generateName"),
            ));
        } else if !self.names.insert((kind, name)) {
            out.push(ctx.at(
                Finding::error(
                    "webhook/name",
                    format!("two {kind} definitions are named {name}"),
                ),
                field("generateName"),
            ));
        }
        let deployment = str_at(def, "/deploymentName");
        if !self.deployments.contains(deployment) {
            out.push(ctx.at(
                Finding::error(
                    "webhook/deployment",
                    format!("deploymentName {deployment:?} is not a deployment of this CSV"),
                ),
                field("deploymentName"),
            ));
        }
        match def.get("containerPort").and_then(Value::as_i64) {
            None => {}
            Some(port) if (1..=65535).contains(&port) => {}
            Some(port) => out.push(ctx.at(
                Finding::error(
                    "webhook/port",
                    format!("containerPort {port} is not between 1 and 65535"),
                ),
                field("containerPort"),
            )),
        }
    }

    /// A ConversionWebhook's `conversionCRDs`: present, owned by the CSV, each converted by one
    /// definition only, none with `preserveUnknownFields: true`.
    fn check_conversion_crds(
        &mut self,
        ctx: &Context<'_>,
        i: usize,
        def: &'a Value,
        out: &mut Vec<Finding>,
    ) {
        let field = format!("spec.webhookdefinitions[{i}].conversionCRDs");
        let crds = array_at(def, "/conversionCRDs");
        if crds.is_empty() {
            out.push(ctx.at(
                Finding::error(
                    "webhook/conversion-crds",
                    "a ConversionWebhook needs conversionCRDs",
                ),
                field.clone(),
            ));
        }
        for (j, crd) in crds.iter().enumerate() {
            let crd = crd.as_str().unwrap_or("");
            if !self.owned.contains(crd) {
                out.push(ctx.at(
                    Finding::error(
                        "webhook/conversion-crds",
                        format!("conversion CRD {crd} is not owned by this CSV"),
                    ),
                    format!("{field}[{j}]"),
                ));
            }
            if let Some(prev) = self.converted.insert(crd, i) {
                out.push(ctx.at(
                    Finding::error(
                        "webhook/conversion-crds",
                        format!("CRD {crd} is also converted by webhookdefinitions[{prev}]"),
                    ),
                    format!("{field}[{j}]"),
                ));
            }
            if let Some(object) = ctx.bundle.crds().find(|c| c.name() == crd)
                && object
                    .v1
                    .pointer("/spec/preserveUnknownFields")
                    .and_then(Value::as_bool)
                    == Some(true)
            {
                out.push(
                    super::on(
                        object.object,
                        Finding::error(
                            "webhook/conversion-crds",
                            "a CRD converted by a webhook must not set preserveUnknownFields: true",
                        ),
                    )
                    .field("spec.preserveUnknownFields"),
                );
            }
        }
    }
}

/// `admissionReviewVersions` set and `sideEffects` allowed by admissionregistration.k8s.io/v1.
fn check_admission_fields(ctx: &Context<'_>, i: usize, def: &Value, out: &mut Vec<Finding>) {
    let field = |f: &str| format!("spec.webhookdefinitions[{i}].{f}");
    if array_at(def, "/admissionReviewVersions").is_empty() {
        out.push(
            ctx.at(
                Finding::error(
                    "webhook/review-versions",
                    "admissionReviewVersions is required",
                )
                .hint("use [v1]"),
                field("admissionReviewVersions"),
            ),
        );
    }
    match str_at(def, "/sideEffects") {
        "None" | "NoneOnDryRun" => {}
        "" => out.push(ctx.at(Finding::error("webhook/side-effects", "sideEffects is required"), field("sideEffects"))),
        other => out.push(ctx.at(Finding::error("webhook/side-effects", format!("sideEffects {other:?} is not allowed for admissionregistration.k8s.io/v1 (None or NoneOnDryRun)")), field("sideEffects"))),
    }
}

/// An admission webhook's rules may not intercept OLM's groups or webhook configurations.
fn check_rules(ctx: &Context<'_>, i: usize, def: &Value, out: &mut Vec<Finding>) {
    let field = format!("spec.webhookdefinitions[{i}].rules");
    for (j, rule) in array_at(def, "/rules").iter().enumerate() {
        for group in array_at(rule, "/apiGroups") {
            let group = group.as_str().unwrap_or("");
            if FORBIDDEN_GROUPS.contains(&group) {
                out.push(ctx.at(
                    Finding::error(
                        "webhook/rules",
                        format!("a webhook may not intercept API group {group:?} (OLM refuses it)"),
                    ),
                    format!("{field}[{j}].apiGroups"),
                ));
            }
            if group == "admissionregistration.k8s.io" {
                for resource in array_at(rule, "/resources") {
                    let resource = resource.as_str().unwrap_or("");
                    if FORBIDDEN_ADMISSION_RESOURCES.contains(&resource) {
                        out.push(ctx.at(Finding::error("webhook/rules", format!("a webhook may not intercept admissionregistration.k8s.io {resource}")), format!("{field}[{j}].resources")));
                    }
                }
            }
        }
    }
}

/// A CSV with a conversion webhook must support AllNamespaces and no other install mode.
fn check_conversion_install_modes(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let modes = array_at(ctx.spec(), "/installModes");
    let supported = |t: &str| {
        modes.iter().any(|m| {
            str_at(m, "/type") == t && m.get("supported").and_then(Value::as_bool) == Some(true)
        })
    };
    let others = ["OwnNamespace", "SingleNamespace", "MultiNamespace"]
        .into_iter()
        .any(supported);
    if !supported("AllNamespaces") || others {
        out.push(ctx.at(
            Finding::error("webhook/conversion-install-modes", "a CSV with a conversion webhook must support AllNamespaces and no other install mode")
                .hint("OLM v0 and v1 both refuse it otherwise"),
            "spec.installModes",
        ));
    }
}

/// CRDs that still carry their own webhook conversion fight OLM's (the classic upgrade 404).
fn check_undeclared_conversions(
    ctx: &Context<'_>,
    converted: &BTreeMap<&str, usize>,
    out: &mut Vec<Finding>,
) {
    for crd in ctx.bundle.crds() {
        if str_at(&crd.v1, "/spec/conversion/strategy") == "Webhook"
            && !converted.contains_key(crd.name())
        {
            out.push(super::on(crd.object, Finding::warning("webhook/conversion-not-declared", "the CRD converts through a webhook, but no ConversionWebhook in the CSV lists it; OLM will not inject the CA and conversions will fail")
                .field("spec.conversion")
                .hint("declare a ConversionWebhook listing the CRD in webhookdefinitions (olmpack bundle generate does)")));
        }
    }
}
