//! `webhook/` rules: the CSV's `webhookdefinitions`, as OLM v0 and OLM v1 check them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{Context, array_at, str_at};
use olmpack_model::csv::WebhookDescription;
use olmpack_model::decode::text;
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
        deployments: ctx.deployments().iter().map(|d| text(&d.name)).collect(),
        owned: ctx
            .spec
            .owned_crds()
            .iter()
            .map(|o| text(&o.name))
            .collect(),
        names: BTreeSet::new(),
        converted: BTreeMap::new(),
        has_conversion: false,
    };
    for (i, def) in ctx.spec.webhookdefinitions.iter().flatten().enumerate() {
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
    fn check(
        &mut self,
        ctx: &Context<'a>,
        i: usize,
        def: &'a WebhookDescription,
        out: &mut Vec<Finding>,
    ) {
        let kind = text(&def.type_);
        self.check_identity(ctx, i, def, out);
        check_admission_fields(ctx, i, def, out);
        // Upstream's meaning: conversionCRDs on any definition, whatever its type.
        self.has_conversion |= def.conversion_crds.as_ref().is_some_and(|c| !c.is_empty());
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
        def: &'a WebhookDescription,
        out: &mut Vec<Finding>,
    ) {
        let field = |f: &str| format!("spec.webhookdefinitions[{i}].{f}");
        let kind = text(&def.type_);
        if !TYPES.contains(&kind) {
            out.push(ctx.at(
                Finding::error("webhook/type", format!("unknown webhook type {kind:?}")),
                field("type"),
            ));
        }
        let name = text(&def.generate_name);
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
        let deployment = text(&def.deployment_name);
        if !self.deployments.contains(deployment) {
            out.push(ctx.at(
                Finding::error(
                    "webhook/deployment",
                    format!("deploymentName {deployment:?} is not a deployment of this CSV"),
                ),
                field("deploymentName"),
            ));
        }
        // A number out of OLM's 32-bit range is kept aside by the typed model; it is judged too.
        let port = (def.container_port.map(i64::from))
            .or_else(|| def.extra.get("containerPort").and_then(Value::as_i64));
        match port {
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
        def: &'a WebhookDescription,
        out: &mut Vec<Finding>,
    ) {
        let field = format!("spec.webhookdefinitions[{i}].conversionCRDs");
        let crds = def.conversion_crds.as_deref().unwrap_or_default();
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
            let crd = crd.as_str();
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
                && object.typed().spec.and_then(|s| s.preserve_unknown_fields) == Some(true)
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
fn check_admission_fields(
    ctx: &Context<'_>,
    i: usize,
    def: &WebhookDescription,
    out: &mut Vec<Finding>,
) {
    let field = |f: &str| format!("spec.webhookdefinitions[{i}].{f}");
    let reviews = def.admission_review_versions.as_ref();
    if reviews.is_none_or(Vec::is_empty) {
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
    match text(&def.side_effects) {
        "None" | "NoneOnDryRun" => {}
        "" => out.push(ctx.at(Finding::error("webhook/side-effects", "sideEffects is required"), field("sideEffects"))),
        other => out.push(ctx.at(Finding::error("webhook/side-effects", format!("sideEffects {other:?} is not allowed for admissionregistration.k8s.io/v1 (None or NoneOnDryRun)")), field("sideEffects"))),
    }
}

/// An admission webhook's rules may not intercept OLM's groups or webhook configurations.
fn check_rules(ctx: &Context<'_>, i: usize, def: &WebhookDescription, out: &mut Vec<Finding>) {
    let field = format!("spec.webhookdefinitions[{i}].rules");
    for (j, rule) in def.rules.iter().flatten().enumerate() {
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
    let modes = ctx.spec.install_modes.as_deref().unwrap_or_default();
    let supported = |t: &str| {
        modes
            .iter()
            .any(|m| text(&m.type_) == t && m.supported == Some(true))
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
