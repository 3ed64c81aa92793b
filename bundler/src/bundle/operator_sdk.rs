//! operator-sdk output as the generator's input: a `manifests:` directory that holds a
//! ClusterServiceVersion — an operator-sdk bundle's `manifests/`, or `kustomize build
//! config/manifests` (a CSV *base* with an empty install strategy plus the config/default
//! objects and samples).
//!
//! Contract:
//! - At most one CSV; its install strategy must be `deployment` (the only one OLM v0 installs).
//! - The strategy becomes input objects the generator already understands: each deployment a
//!   Deployment, each `permissions`/`clusterPermissions` entry a (Cluster)Role bound to its
//!   service account, each admission webhook definition a webhook configuration behind a
//!   Service selecting the deployment's pods, each ConversionWebhook definition the CRDs'
//!   `spec.conversion`. Deployments or webhooks given both ways are an error (which one?).
//! - The CSV's metadata fills what the plan does not set ([`fill`]); the plan wins, and every
//!   field group taken from the CSV is an info finding.
//! - What the plan cannot express (required CRDs, API services, native APIs, upgrade edges) is
//!   a warning, never silently dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Map, Value, json};

use super::inputs::{Imported, Inputs, Sourced};
use crate::json::str_at;
use olmpack_model::csv::examples::ALM_EXAMPLES;
use olmpack_model::csv::{
    self, ClusterServiceVersion, CsvSpec, SHARED_ADMISSION_FIELDS, StrategyDetails,
    WebhookDescription,
};
use olmpack_model::decode;
use olmpack_model::objects::{DeploymentSpec, PodSpec};
use olmpack_model::plan::{
    CrdDisplay, CrdResource, CsvMetadata, Descriptor, InstallModeType, Link, Maintainer, Provider,
    VersionDescriptors,
};
use olmpack_model::report::Finding;
use olmpack_oci::input::{Limits, Policy};

/// CSV annotations the generator computes or takes from their own plan fields.
const NOT_COPIED_ANNOTATIONS: [&str; 7] = [
    ALM_EXAMPLES,
    "olm.skipRange",
    "createdAt",
    "operators.operatorframework.io/builder",
    "capabilities",
    "categories",
    "description",
];

/// Folds the CSV in `csvs` (if any) into `inputs`; problems go to `problems`, notes to
/// `inputs.notes`.
pub fn import(inputs: &mut Inputs, csvs: Vec<Sourced>, problems: &mut Vec<Finding>) {
    let mut csvs = csvs.into_iter();
    let Some(csv) = csvs.next() else {
        return;
    };
    for second in csvs {
        problems.push(second.finding(
            Finding::error(
                "input/csv-multiple",
                format!("a second ClusterServiceVersion; the manifests may hold one, and {} is in {}", csv.display(), csv.location()),
            )
            .field("kind")
            .hint("point `manifests` at one bundle's manifests/ directory"),
        ));
    }
    let (model, refused) = ClusterServiceVersion::read(&csv.value);
    if let Some(refused) = refused {
        inputs.notes.push(
            csv.finding(
                Finding::warning(
                    "import/csv-field-type",
                    format!("{}; olmpack reads the field as absent", refused.message),
                )
                .field(refused.path),
            ),
        );
    }
    let spec = model.spec.clone().unwrap_or_default();
    let strategy_name = spec
        .install
        .as_ref()
        .and_then(|i| i.strategy.as_deref())
        .unwrap_or("");
    if !strategy_name.is_empty() && strategy_name != "deployment" {
        problems.push(csv.finding(
            Finding::error(
                "input/csv-strategy",
                format!("install strategy {strategy_name:?} is not `deployment`, the only one OLM v0 installs"),
            )
            .field("spec.install.strategy"),
        ));
        return;
    }
    let strategy = model.strategy().cloned().unwrap_or_default();
    let before = problems.len();
    import_deployments(inputs, &csv, &strategy, problems);
    if problems.len() > before {
        return;
    }
    let accounts = import_permissions(inputs, &csv, &strategy);
    import_webhooks(inputs, &csv, &spec, problems);
    inputs
        .custom_resources
        .extend(samples(&csv, &model, &mut inputs.notes));
    inputs.notes.extend(not_carried(&csv, &model));
    inputs.notes.extend(conversions_added(inputs, &spec));
    inputs.notes.extend(owned_differences(inputs, &csv, &model));
    let (metadata, mut notes) = metadata(&csv, &model);
    inputs.notes.append(&mut notes);
    inputs.imported = Some(Imported {
        location: csv.location(),
        object: csv.display(),
        metadata,
        icon: csv::Icon::first_of(&spec),
        bundle_package: None,
        accounts,
    });
}

/// A synthesized object located at the CSV's field.
fn synthesized(csv: &Sourced, value: Value) -> Sourced {
    Sourced {
        file: csv.file.clone(),
        index: csv.index,
        value,
    }
}

fn import_deployments(
    inputs: &mut Inputs,
    csv: &Sourced,
    strategy: &StrategyDetails,
    problems: &mut Vec<Finding>,
) {
    let entries = strategy.deployments.as_deref().unwrap_or_default();
    if entries.is_empty() {
        return;
    }
    if let Some(plain) = inputs.deployments.first() {
        problems.push(csv.finding(
            Finding::error(
                "input/csv-conflict",
                format!("the CSV's install strategy defines deployments and the manifests also hold {} ({}): which one is the operator?", plain.display(), plain.location()),
            )
            .field("spec.install.spec.deployments")
            .hint("keep one: the bundle's CSV, or the kustomize output with a CSV base whose install strategy is empty"),
        ));
        return;
    }
    for (i, entry) in entries.iter().enumerate() {
        let name = entry.name.as_deref().unwrap_or("");
        if name.is_empty() {
            problems.push(
                csv.finding(
                    Finding::error("input/missing-field", "a deployment needs a name")
                        .field(format!("spec.install.spec.deployments[{i}].name")),
                ),
            );
            continue;
        }
        let mut metadata = json!({ "name": name });
        if let Some(labels) = &entry.label {
            metadata["labels"] = json!(labels);
        }
        let spec = entry.spec.clone().unwrap_or_default();
        if has_literal_watch_namespace(&spec) {
            inputs.notes.push(csv.finding(
                Finding::info(
                    "import/watch-namespace-rewired",
                    format!("deployment {name}: WATCH_NAMESPACE with a literal value is set from OLM's olm.targetNamespaces annotation instead"),
                )
                .field(format!("spec.install.spec.deployments[{i}].spec")),
            ));
        }
        let value = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": metadata,
            "spec": spec,
        });
        inputs.deployments.push(synthesized(csv, value));
    }
}

/// Whether a container of the deployment spec sets `WATCH_NAMESPACE` to a literal value.
fn has_literal_watch_namespace(spec: &DeploymentSpec) -> bool {
    let containers = spec.pod().into_iter().flat_map(PodSpec::all_containers);
    containers
        .flat_map(|c| c.env.iter().flatten())
        .any(|v| v.is_literal("WATCH_NAMESPACE"))
}

fn service_account(deployment: &Sourced) -> String {
    deployment.deployment().service_account().to_owned()
}

/// A name not yet used by any object of `pool`.
fn unused_name(pool: &[Sourced], base: &str) -> String {
    let mut name = base.to_owned();
    let mut n = 1;
    while pool.iter().any(|o| o.name() == name) {
        n += 1;
        name = format!("{base}-{n}");
    }
    name
}

/// Returns the service accounts the CSV grants permissions to that no deployment runs as
/// (OLM creates and grants them all the same: operands run as them).
fn import_permissions(
    inputs: &mut Inputs,
    csv: &Sourced,
    strategy: &StrategyDetails,
) -> BTreeSet<String> {
    let mut extra = BTreeSet::new();
    let accounts: BTreeSet<String> = inputs.deployments.iter().map(service_account).collect();
    if strategy.deployments.as_ref().is_some_and(|d| !d.is_empty()) {
        ship_plain_bindings(inputs);
    }
    for (key, cluster, entries) in [
        ("permissions", false, &strategy.permissions),
        ("clusterPermissions", true, &strategy.cluster_permissions),
    ] {
        for (i, entry) in entries.iter().flatten().enumerate() {
            let account = entry.service_account_name.as_deref().unwrap_or("");
            if account.is_empty() {
                inputs.notes.push(csv.finding(
                    Finding::warning(
                        "import/permissions-unused",
                        format!("{key} without a serviceAccountName are left out: OLM grants them to no one"),
                    )
                    .field(format!("spec.install.spec.{key}[{i}].serviceAccountName")),
                ));
                continue;
            }
            if !accounts.contains(account) {
                extra.insert(account.to_owned());
            }
            let (role_kind, binding_kind) = if cluster {
                ("ClusterRole", "ClusterRoleBinding")
            } else {
                ("Role", "RoleBinding")
            };
            let (roles, bindings) = if cluster {
                (&inputs.cluster_roles, &inputs.cluster_role_bindings)
            } else {
                (&inputs.roles, &inputs.role_bindings)
            };
            let role_name = unused_name(roles, &format!("{account}-csv-{key}-{i}").to_lowercase());
            let binding_name = unused_name(bindings, &role_name);
            let role = json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": role_kind,
                "metadata": {"name": role_name},
                "rules": entry.rules.clone().unwrap_or_default(),
            });
            let binding = json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": binding_kind,
                "metadata": {"name": binding_name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
                "subjects": [{"kind": "ServiceAccount", "name": account}],
            });
            let (roles, bindings) = if cluster {
                (&mut inputs.cluster_roles, &mut inputs.cluster_role_bindings)
            } else {
                (&mut inputs.roles, &mut inputs.role_bindings)
            };
            roles.insert(0, synthesized(csv, role));
            bindings.insert(0, synthesized(csv, binding));
        }
    }
    extra
}

/// A bundle's own RoleBindings and ClusterRoleBindings are shipped as they are, as OLM would
/// create them from the bundle: the CSV's permissions already say what its service accounts
/// may do, so they are not folded into them (as a kustomize base's bindings are).
fn ship_plain_bindings(inputs: &mut Inputs) {
    let bindings = std::mem::take(&mut inputs.role_bindings)
        .into_iter()
        .chain(std::mem::take(&mut inputs.cluster_role_bindings));
    inputs.others.extend(bindings);
}

fn import_webhooks(
    inputs: &mut Inputs,
    csv: &Sourced,
    spec: &CsvSpec,
    problems: &mut Vec<Finding>,
) {
    let defs = spec.webhookdefinitions.as_deref().unwrap_or_default();
    if defs.is_empty() {
        return;
    }
    let plain = inputs
        .validating_webhooks
        .iter()
        .chain(&inputs.mutating_webhooks)
        .next();
    if let Some(plain) = plain {
        problems.push(csv.finding(
            Finding::error(
                "input/csv-conflict",
                format!("the CSV defines webhooks and the manifests also hold {} ({}): which ones does the operator serve?", plain.display(), plain.location()),
            )
            .field("spec.webhookdefinitions"),
        ));
        return;
    }
    let mut names = BTreeSet::new();
    for (i, def) in defs.iter().enumerate() {
        let field = format!("spec.webhookdefinitions[{i}]");
        let Some(service) = webhook_service(inputs, csv, def, &field) else {
            continue;
        };
        match def.type_.as_deref().unwrap_or("") {
            "ConversionWebhook" => conversion(inputs, csv, def, &service, &field),
            kind @ ("ValidatingAdmissionWebhook" | "MutatingAdmissionWebhook") => {
                let mut name = def.generate_name.clone().unwrap_or_default();
                while !names.insert(name.clone()) {
                    name.push('x');
                }
                if decode::as_read(&def.side_effects, &def.extra, "sideEffects").is_none() {
                    inputs.notes.push(csv.finding(
                        Finding::info(
                            "import/webhook-defaults",
                            "the webhook sets no sideEffects; the generated definition says None",
                        )
                        .field(format!("{field}.sideEffects")),
                    ));
                }
                let config = admission_config(def, kind, &name, &service);
                if kind == "ValidatingAdmissionWebhook" {
                    inputs.validating_webhooks.push(synthesized(csv, config));
                } else {
                    inputs.mutating_webhooks.push(synthesized(csv, config));
                }
            }
            other => problems.push(csv.finding(
                Finding::error("input/csv-webhook-type", format!("webhook type {other:?} is not one OLM knows"))
                    .field(format!("{field}.type"))
                    .hint("use ValidatingAdmissionWebhook, MutatingAdmissionWebhook or ConversionWebhook"),
            )),
        }
    }
}

/// A Service in front of the definition's deployment (one per deployment and ports), added to
/// the inputs; `None` (with a warning) when the deployment is not in the strategy.
fn webhook_service(
    inputs: &mut Inputs,
    csv: &Sourced,
    def: &WebhookDescription,
    field: &str,
) -> Option<String> {
    let deployment_name = def.deployment_name.as_deref().unwrap_or("");
    let Some(deployment) = inputs
        .deployments
        .iter()
        .find(|d| d.name() == deployment_name)
    else {
        inputs.notes.push(csv.finding(
            Finding::warning(
                "import/webhook-deployment",
                format!("the webhook names deployment {deployment_name:?}, which the install strategy does not define; it is left out"),
            )
            .field(format!("{field}.deploymentName")),
        ));
        return None;
    };
    let selector = pod_labels(deployment);
    let mut port_entry = json!({ "port": container_port(def) });
    if let Some(target) = decode::as_read(&def.target_port, &def.extra, "targetPort") {
        port_entry["targetPort"] = target;
    }
    let wanted = json!({ "selector": selector, "ports": [port_entry] });
    if let Some(existing) = inputs
        .services
        .iter()
        .find(|s| s.value.get("spec") == Some(&wanted) && s.name().starts_with(deployment_name))
    {
        return Some(existing.name().to_owned());
    }
    // The generator routes a Service to the first deployment its selector matches.
    let first_match = inputs
        .deployments
        .iter()
        .position(|d| pod_labels(d).includes(&selector));
    let shadowed = first_match
        != inputs
            .deployments
            .iter()
            .position(|d| d.name() == deployment_name);
    if shadowed {
        inputs.notes.push(csv.finding(
            Finding::warning(
                "import/webhook-selector-ambiguous",
                format!("deployment {deployment_name}'s pod labels also match another deployment listed before it; the webhook may be routed there"),
            )
            .field(format!("{field}.deploymentName")),
        ));
    }
    let name = unused_name(
        &inputs.services,
        &format!("{deployment_name}-webhook-service"),
    );
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": wanted,
    });
    inputs.services.push(synthesized(csv, service));
    Some(name)
}

/// The labels of a deployment's pods (none when it gives none).
fn pod_labels(deployment: &Sourced) -> decode::StringMap {
    deployment
        .deployment()
        .pod_labels()
        .cloned()
        .unwrap_or_default()
}

/// The definition's `containerPort` as read, 443 when it has none.
fn container_port(def: &WebhookDescription) -> Value {
    decode::as_read(&def.container_port, &def.extra, "containerPort").unwrap_or(json!(443))
}

fn client_service(def: &WebhookDescription, service: &str) -> Value {
    let mut svc = json!({
        "name": service,
        "namespace": "placeholder",
        "port": container_port(def),
    });
    if let Some(path) = decode::as_read(&def.webhook_path, &def.extra, "webhookPath") {
        svc["path"] = path;
    }
    svc
}

fn admission_config(def: &WebhookDescription, kind: &str, name: &str, service: &str) -> Value {
    let mut hook = json!({
        "name": def.generate_name.as_deref().unwrap_or(""),
        "clientConfig": {"service": client_service(def, service)},
    });
    // Copied as the definition gives them, whatever their type: the apiserver judges them.
    let given = json!(def);
    let own = [
        "admissionReviewVersions",
        "sideEffects",
        "reinvocationPolicy",
    ];
    for key in own.into_iter().chain(SHARED_ADMISSION_FIELDS) {
        if let Some(v) = given.get(key) {
            hook[key] = v.clone();
        }
    }
    let config_kind = if kind == "ValidatingAdmissionWebhook" {
        "ValidatingWebhookConfiguration"
    } else {
        "MutatingWebhookConfiguration"
    };
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": config_kind,
        "metadata": {"name": name},
        "webhooks": [hook],
    })
}

/// Points each of the definition's CRDs at the webhook's Service.
fn conversion(
    inputs: &mut Inputs,
    csv: &Sourced,
    def: &WebhookDescription,
    service: &str,
    field: &str,
) {
    let reviews = decode::as_read(
        &def.admission_review_versions,
        &def.extra,
        "admissionReviewVersions",
    )
    .unwrap_or(json!(["v1"]));
    let client = json!({"service": client_service(def, service)});
    for name in def.conversion_crds.iter().flatten() {
        let Some(crd) = inputs.crds.iter_mut().find(|c| c.name() == name) else {
            inputs.notes.push(
                csv.finding(
                    Finding::warning(
                        "import/conversion-crd-missing",
                        format!("conversion CRD {name} is not in the manifests"),
                    )
                    .field(format!("{field}.conversionCRDs")),
                ),
            );
            continue;
        };
        let conversion = if crd.api_version().ends_with("/v1beta1") {
            json!({"strategy": "Webhook", "webhookClientConfig": client, "conversionReviewVersions": reviews})
        } else {
            json!({"strategy": "Webhook", "webhook": {"clientConfig": client, "conversionReviewVersions": reviews}})
        };
        if let Some(spec) = crd.value.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("conversion".into(), conversion);
        }
    }
}

/// CRDs that convert through a webhook the CSV does not define: the generator defines one.
fn conversions_added(inputs: &Inputs, spec: &CsvSpec) -> Vec<Finding> {
    let defined: BTreeSet<&str> = spec
        .webhookdefinitions
        .iter()
        .flatten()
        .filter(|d| d.type_.as_deref() == Some("ConversionWebhook"))
        .flat_map(|d| d.conversion_crds.iter().flatten())
        .map(String::as_str)
        .collect();
    inputs
        .crds
        .iter()
        .filter(|crd| !defined.contains(crd.name()))
        .filter(|crd| {
            let v1 = crate::bundle::crd_v1beta1::to_v1(&crd.value);
            str_at(&v1, "/spec/conversion/strategy") == "Webhook"
        })
        .map(|crd| {
            crd.finding(
                Finding::warning(
                    "import/conversion-added",
                    "the CRD converts through a webhook the CSV does not define; the generated CSV defines a ConversionWebhook for it, so OLM serves it with the certificate it manages",
                )
                .field("spec.conversion"),
            )
        })
        .collect()
}

/// `alm-examples` as sample custom resources.
fn samples(csv: &Sourced, model: &ClusterServiceVersion, notes: &mut Vec<Finding>) -> Vec<Sourced> {
    match model.alm_examples() {
        Ok(values) => values
            .into_iter()
            .map(|value| synthesized(csv, value))
            .collect(),
        Err(e) => {
            notes.push(
                csv.finding(
                    Finding::warning(
                        "import/alm-examples",
                        format!("{}; its samples are left out", e.problem()),
                    )
                    .field(e.field()),
                ),
            );
            Vec::new()
        }
    }
}

/// Warnings for what the CSV says that the plan has no place for.
fn not_carried(csv: &Sourced, model: &ClusterServiceVersion) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut warn = |field: &str, what: &str| {
        out.push(
            csv.finding(
                Finding::warning(
                    "import/not-carried",
                    format!("{what} is not carried into the generated CSV"),
                )
                .field(field.to_owned()),
            ),
        );
    };
    let spec = model.spec.clone().unwrap_or_default();
    let crds = spec.customresourcedefinitions.unwrap_or_default();
    if crds.required.is_some_and(|r| !r.is_empty()) {
        warn(
            "spec.customresourcedefinitions.required",
            "required CRDs (declare a package or GVK dependency in the release's `dependencies`)",
        );
    }
    let api_services = spec.apiservicedefinitions.unwrap_or_default();
    let any_api_service = [&api_services.owned, &api_services.required]
        .into_iter()
        .any(|list| list.as_ref().is_some_and(|l| !l.is_empty()))
        || api_services.extra.values().any(non_empty_list);
    if any_api_service {
        warn("spec.apiservicedefinitions", "API service definitions");
    }
    if spec.native_apis.is_some_and(|a| !a.is_empty()) {
        warn("spec.nativeAPIs", "native APIs");
    }
    let annotations = model.metadata.as_ref().and_then(|m| m.annotations.as_ref());
    if annotations.is_some_and(|a| a.contains_key("createdAt")) {
        out.push(
            csv.finding(
                Finding::info(
                    "import/not-carried",
                    "createdAt comes from the plan or SOURCE_DATE_EPOCH; the CSV's is not used",
                )
                .field("metadata.annotations.createdAt"),
            ),
        );
    }
    let set = |typed: bool, key: &str| typed || spec.extra.get(key).is_some_and(|v| !v.is_null());
    let edges = [
        (set(spec.replaces.is_some(), "replaces"), "spec.replaces"),
        (set(spec.skips.is_some(), "skips"), "spec.skips"),
        (
            annotations
                .is_some_and(|a| a.contains_key("olm.skipRange") && !a.was_null("olm.skipRange")),
            "metadata.annotations.olm.skipRange",
        ),
    ];
    for (_, field) in edges.into_iter().filter(|(given, _)| *given) {
        out.push(
            csv.finding(
                Finding::info(
                    "import/upgrade-edges",
                    "upgrade edges come from the plan's releases; the CSV's are not used",
                )
                .field(field),
            ),
        );
    }
    out
}

/// Whether `value` is a list with something in it.
fn non_empty_list(value: &Value) -> bool {
    value.as_array().is_some_and(|a| !a.is_empty())
}

/// `(name, version, kind)` of every served version of every CRD, as the generator owns them.
pub fn served_crds(crds: &[Sourced]) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for crd in crds {
        let v1 = crd.crd_v1();
        for version in v1.served_versions() {
            let name = (crd.name().to_owned(), version.name().to_owned());
            out.insert((name.0, name.1, v1.kind().to_owned()));
        }
    }
    out
}

/// `(name, version, kind)` of the CSV's owned CRDs.
pub fn owned_of(csv: &ClusterServiceVersion) -> BTreeSet<(String, String, String)> {
    csv.spec
        .as_ref()
        .map_or(&[][..], CsvSpec::owned_crds)
        .iter()
        .map(|o| {
            (
                decode::text(&o.name).to_owned(),
                decode::text(&o.version).to_owned(),
                decode::text(&o.kind).to_owned(),
            )
        })
        .collect()
}

/// A text field, `None` when absent or empty.
fn some_text(field: &Option<String>) -> Option<String> {
    field.clone().filter(|s| !s.is_empty())
}

/// The generator owns every served version of every CRD in the manifests; a warning for each
/// owned entry of the CSV that differs.
fn owned_differences(
    inputs: &Inputs,
    csv: &Sourced,
    model: &ClusterServiceVersion,
) -> Vec<Finding> {
    let served = served_crds(&inputs.crds);
    let owned = owned_of(model);
    let mut out = Vec::new();
    for (name, version, kind) in owned.difference(&served) {
        out.push(csv.finding(
            Finding::warning(
                "import/owned-crds-differ",
                format!("owned CRD {name} {version} (kind {kind:?}) is not a served version of a CRD in the manifests; the generated CSV owns what the CRDs serve"),
            )
            .field("spec.customresourcedefinitions.owned"),
        ));
    }
    for (name, version, kind) in served.difference(&owned) {
        out.push(csv.finding(
            Finding::warning(
                "import/owned-crds-differ",
                format!("CRD {name} serves {version} (kind {kind}), which the CSV does not own; the generated CSV owns it"),
            )
            .field("spec.customresourcedefinitions.owned"),
        ));
    }
    out
}

/// The CSV's metadata in the plan's terms, and warnings for what does not fit.
fn metadata(csv: &Sourced, model: &ClusterServiceVersion) -> (CsvMetadata, Vec<Finding>) {
    let mut notes = Vec::new();
    let meta = model.metadata.clone().unwrap_or_default();
    let spec = model.spec.clone().unwrap_or_default();
    let annotations = strings_given(meta.annotations.as_ref())
        .filter(|(k, _)| !NOT_COPIED_ANNOTATIONS.contains(&k.as_str()))
        .collect();
    let labels = strings_given(meta.labels.as_ref()).collect();
    let provider = spec.provider.clone().unwrap_or_default();
    let metadata = CsvMetadata {
        display_name: decode::text(&spec.display_name).to_owned(),
        description: decode::text(&spec.description).to_owned(),
        short_description: model.annotation("description").map(str::to_owned),
        icon: None,
        keywords: spec.keywords.clone().unwrap_or_default(),
        maintainers: (spec.maintainers.iter().flatten())
            .map(|m| Maintainer {
                name: decode::text(&m.name).to_owned(),
                email: second(&m.email, &m.extra, "url"),
            })
            .collect(),
        provider: Provider {
            name: decode::text(&provider.name).to_owned(),
            url: some_text(&provider.url),
        },
        links: (spec.links.iter().flatten())
            .map(|l| Link {
                name: decode::text(&l.name).to_owned(),
                url: second(&l.url, &l.extra, "email"),
            })
            .collect(),
        maturity: some_text(&spec.maturity),
        capabilities: model.annotation("capabilities").map(str::to_owned),
        categories: model
            .annotation("categories")
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        min_kube_version: some_text(&spec.min_kube_version),
        install_modes: install_modes(csv, &spec, &mut notes),
        annotations,
        labels,
        crds: crd_displays(csv, model, &mut notes),
    };
    (metadata, notes)
}

/// The entries of a string map that are given as strings (not `null`).
fn strings_given(map: Option<&decode::StringMap>) -> impl Iterator<Item = (String, String)> + '_ {
    map.into_iter().flat_map(|m| {
        m.iter()
            .filter(|(k, _)| !m.was_null(k))
            .map(|(k, v)| (k.clone(), v.clone()))
    })
}

/// A maintainer's e-mail or a link's URL; operator-sdk's output sometimes gives the other
/// key, which is read in its place.
fn second(field: &Option<String>, extra: &Map<String, Value>, other: &str) -> String {
    match field {
        Some(value) => value.clone(),
        None => extra
            .get(other)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
    }
}

fn install_modes(
    csv: &Sourced,
    spec: &CsvSpec,
    notes: &mut Vec<Finding>,
) -> Option<Vec<InstallModeType>> {
    let modes = spec.install_modes.as_ref()?;
    let mut out = Vec::new();
    for (i, mode) in modes.iter().enumerate() {
        if mode.supported != Some(true) {
            continue;
        }
        let kind = mode.type_.as_deref().unwrap_or("");
        match InstallModeType::ALL.iter().find(|m| m.as_str() == kind) {
            Some(m) => out.push(*m),
            None => notes.push(
                csv.finding(
                    Finding::warning(
                        "import/install-mode",
                        format!("install mode {kind:?} is not one OLM knows; it is left out"),
                    )
                    .field(format!("spec.installModes[{i}].type")),
                ),
            ),
        }
    }
    Some(out)
}

/// A descriptor in the plan's terms; a warning names what does not fit.
fn descriptor(
    csv: &Sourced,
    d: &csv::Descriptor,
    field: String,
    notes: &mut Vec<Finding>,
) -> Descriptor {
    let path = d.path.as_deref().unwrap_or("");
    let known = ["path", "displayName", "description", "x-descriptors"];
    let mut extra: Vec<&str> = (d.value.as_ref().map(|_| "value").into_iter())
        .chain(d.extra.keys().map(String::as_str))
        .filter(|k| !known.contains(k))
        .collect();
    extra.sort_unstable();
    if !extra.is_empty() {
        notes.push(
            csv.finding(
                Finding::warning(
                    "import/descriptor-fields",
                    format!("descriptor {path:?}: {} not carried", extra.join(", ")),
                )
                .field(field.clone()),
            ),
        );
    }
    Descriptor {
        path: path.to_owned(),
        display_name: decode::text(&d.display_name).to_owned(),
        description: some_text(&d.description),
        x_descriptors: d.x_descriptors.clone().unwrap_or_default(),
    }
}

/// Display metadata of the CSV's owned CRDs, per CRD, with the descriptors of each version.
fn crd_displays(
    csv: &Sourced,
    model: &ClusterServiceVersion,
    notes: &mut Vec<Finding>,
) -> BTreeMap<String, CrdDisplay> {
    let mut out: BTreeMap<String, CrdDisplay> = BTreeMap::new();
    for (i, entry) in model
        .spec
        .as_ref()
        .map_or(&[][..], CsvSpec::owned_crds)
        .iter()
        .enumerate()
    {
        let display = out.entry(decode::text(&entry.name).to_owned()).or_default();
        display.display_name = display
            .display_name
            .take()
            .or(some_text(&entry.display_name));
        display.description = display.description.take().or(some_text(&entry.description));
        if display.resources.is_empty() {
            display.resources = (entry.resources.iter().flatten())
                .map(|r| CrdResource {
                    kind: decode::text(&r.kind).to_owned(),
                    version: decode::text(&r.version).to_owned(),
                    name: some_text(&r.name),
                })
                .collect();
        }
        let mut per_version = VersionDescriptors::default();
        for (key, list, given) in [
            (
                "specDescriptors",
                &mut per_version.spec_descriptors,
                &entry.spec_descriptors,
            ),
            (
                "statusDescriptors",
                &mut per_version.status_descriptors,
                &entry.status_descriptors,
            ),
        ] {
            for (j, d) in given.iter().flatten().enumerate() {
                let field = format!("spec.customresourcedefinitions.owned[{i}].{key}[{j}]");
                list.push(descriptor(csv, d, field, notes));
            }
        }
        display
            .versions
            .insert(decode::text(&entry.version).to_owned(), per_version);
    }
    out
}

/// A field group of the CSV metadata: its name, whether it is set, and how to copy it.
type Group = (
    &'static str,
    fn(&CsvMetadata) -> bool,
    fn(&mut CsvMetadata, &CsvMetadata),
);

/// The field groups taken whole from the CSV when the plan leaves them unset.
const GROUPS: [Group; 12] = [
    (
        "displayName",
        |m| !m.display_name.is_empty(),
        |o, f| o.display_name = f.display_name.clone(),
    ),
    (
        "description",
        |m| !m.description.is_empty(),
        |o, f| o.description = f.description.clone(),
    ),
    (
        "shortDescription",
        |m| m.short_description.is_some(),
        |o, f| o.short_description = f.short_description.clone(),
    ),
    (
        "keywords",
        |m| !m.keywords.is_empty(),
        |o, f| o.keywords = f.keywords.clone(),
    ),
    (
        "maintainers",
        |m| !m.maintainers.is_empty(),
        |o, f| o.maintainers = f.maintainers.clone(),
    ),
    (
        "provider",
        |m| !m.provider.name.is_empty(),
        |o, f| o.provider = f.provider.clone(),
    ),
    (
        "links",
        |m| !m.links.is_empty(),
        |o, f| o.links = f.links.clone(),
    ),
    (
        "maturity",
        |m| m.maturity.is_some(),
        |o, f| o.maturity = f.maturity.clone(),
    ),
    (
        "capabilities",
        |m| m.capabilities.is_some(),
        |o, f| o.capabilities = f.capabilities.clone(),
    ),
    (
        "categories",
        |m| !m.categories.is_empty(),
        |o, f| o.categories = f.categories.clone(),
    ),
    (
        "minKubeVersion",
        |m| m.min_kube_version.is_some(),
        |o, f| o.min_kube_version = f.min_kube_version.clone(),
    ),
    (
        "installModes",
        |m| m.install_modes.is_some(),
        |o, f| o.install_modes = f.install_modes.clone(),
    ),
];

/// Adds the entries of `from` whose key `into` lacks; true when there were any.
fn merge<V: Clone>(into: &mut BTreeMap<String, V>, from: &BTreeMap<String, V>) -> bool {
    let mut added = false;
    for (key, value) in from {
        if !into.contains_key(key) {
            into.insert(key.clone(), value.clone());
            added = true;
        }
    }
    added
}

/// The plan's CSV metadata with what it leaves unset taken from the imported CSV; an info
/// finding (in `inputs.notes`) for every field group taken. Empty strings count as unset.
pub fn fill(plan: &CsvMetadata, inputs: &mut Inputs) -> CsvMetadata {
    let Some(imported) = inputs.imported.clone() else {
        return plan.clone();
    };
    let from = &imported.metadata;
    let mut out = plan.clone();
    let mut taken: Vec<&str> = Vec::new();
    for (name, is_set, copy) in GROUPS {
        if !is_set(plan) && is_set(from) {
            copy(&mut out, from);
            taken.push(name);
        }
    }
    if plan.icon.is_none() && imported.icon.is_some() {
        taken.push("icon");
    }
    if merge(&mut out.annotations, &from.annotations) {
        taken.push("annotations");
    }
    if merge(&mut out.labels, &from.labels) {
        taken.push("labels");
    }
    if merge(&mut out.crds, &from.crds) {
        taken.push("owned CRD descriptions");
    }
    for name in taken {
        inputs.notes.push(imported.finding(Finding::info(
            "import/csv-metadata",
            format!("{name}: taken from the CSV, as the plan does not set it (the plan wins where it does)"),
        )));
    }
    out
}

/// The imported CSV's icon, when the plan has none.
pub fn icon_of(plan: &CsvMetadata, inputs: &Inputs) -> Option<csv::Icon> {
    if plan.icon.is_some() {
        return None;
    }
    inputs.imported.as_ref().and_then(|i| i.icon.clone())
}

/// The label of a bundle's package in `metadata/annotations.yaml`.
const PACKAGE_LABEL: &str = "operators.operatorframework.io.bundle.package.v1";

/// Reads the package of the bundle whose `manifests/` is `dir` from `../metadata/
/// annotations.yaml` (when the CSV was imported and the file is there, inside `root`).
pub fn read_bundle_metadata(dir: &Path, root: Option<&Path>, inputs: &mut Inputs, limits: &Limits) {
    let Some(imported) = inputs.imported.as_mut() else {
        return;
    };
    let file = dir.join("../metadata/annotations.yaml");
    if !file.is_file() {
        return;
    }
    if let Some(root) = root
        && let Ok(relative) = file.strip_prefix(root)
        && olmpack_oci::input::inside(
            root,
            relative,
            &Policy {
                limits: *limits,
                allow_outside_paths: false,
            },
        )
        .is_err()
    {
        return;
    }
    let Ok(text) = olmpack_oci::input::text(&file, limits) else {
        return;
    };
    let Ok(value) = olmpack_model::yaml::from_str(&text) else {
        return;
    };
    let package = str_at(&value, &format!("/annotations/{PACKAGE_LABEL}"));
    if !package.is_empty() {
        imported.bundle_package = Some((file, package.to_owned()));
    }
}

/// The bundle's own package name against the plan's: the plan's is used, so a difference is
/// a warning (a catalog would list the bundle under another package than before).
pub fn check_package(package: &str, inputs: &mut Inputs) {
    let Some((file, theirs)) = inputs
        .imported
        .as_ref()
        .and_then(|i| i.bundle_package.clone())
    else {
        return;
    };
    let finding = if theirs == package {
        Finding::info(
            "import/bundle-metadata",
            "the bundle's metadata is not read beyond its package name: channels and labels come from the plan",
        )
    } else {
        Finding::warning(
            "import/bundle-metadata",
            format!(
                "the bundle says package {theirs:?}, the plan {package:?}: the plan's is used, so catalogs list the generated bundle under another package"
            ),
        )
    };
    inputs.notes.push(
        finding
            .file(file)
            .field(format!("annotations.{PACKAGE_LABEL}")),
    );
}
