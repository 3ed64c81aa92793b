//! Building a bundle's ClusterServiceVersion and objects from the plan and the input manifests.
//! Pure: no I/O, no clock, no environment.
//!
//! What goes where (the rules a careful human would apply to operator-sdk's output by hand):
//! - Deployments become the `deployment` install strategy; `WATCH_NAMESPACE` env vars are
//!   wired to OLM's `olm.targetNamespaces` annotation.
//! - (Cluster)Roles bound to a deployment's ServiceAccount become `permissions` /
//!   `clusterPermissions`; those bindings, roles and ServiceAccounts leave the manifests
//!   (OLM creates them). Other RBAC objects are shipped as they are.
//! - Admission webhook configurations become `webhookdefinitions`; CRDs with a webhook
//!   conversion get one `ConversionWebhook` definition per serving endpoint, and ship their
//!   `spec.conversion` in the shape OLM writes for it (OLM adds the CA it manages and the
//!   install's namespace; see `crds`). Services that only route
//!   to webhooks leave the manifests (OLM creates `<deployment>-service`).
//! - With a conversion webhook, only AllNamespaces can be supported (OLM refuses anything
//!   else); a plan that asks for more gets AllNamespaces and a warning.
//! - Every list is sorted by a stable key, so the output never depends on input order.
//!
//! One private submodule per concern: `deployments`, `rbac`, `webhooks`, `crds`, `examples`,
//! `images`, `install_modes` and `objects`; [`build`] runs them and assembles the CSV.
#![warn(missing_docs)]

mod crds;
mod deployments;
mod examples;
mod images;
mod install_modes;
mod objects;
mod rbac;
mod webhooks;

use olmpack_model::csv::examples::ALM_EXAMPLES;
use std::collections::BTreeMap;

use serde_json::Value;

pub use self::crds::{definition_converting, olm_conversion};
pub use self::deployments::OLM_CERT_PATHS;
pub use self::objects::clean_object;
use super::inputs::{Inputs, Sourced};
use olmpack_model::csv::{
    AppLink, ClusterServiceVersion, CrdDefinitions, CrdDescription, CsvSpec, InstallMode,
    InstallStrategy, Maintainer, RelatedImage, StrategyDeployment, StrategyDetails,
    WebhookDescription,
};
use olmpack_model::objects::ObjectMeta;
use olmpack_model::plan::CsvMetadata;
use olmpack_model::report::Finding;
use olmpack_model::upgrade_graph::Edges;

/// What the plan says about one release, resolved (files read, edges computed).
#[derive(Clone, Debug)]
pub struct ReleaseSpec<'a> {
    /// The package name.
    pub package: &'a str,
    /// The release's version.
    pub version: &'a semver::Version,
    /// The plan's CSV metadata.
    pub csv: &'a CsvMetadata,
    /// The icon: its data and media type.
    pub icon: Option<olmpack_model::csv::Icon>,
    /// The release's `replaces`, `skips` and `olm.skipRange`.
    pub edges: Edges,
    /// The `createdAt` annotation, when the plan sets one.
    pub created_at: Option<String>,
    /// Sample custom resources from the plan's sample files.
    pub samples: &'a [Sourced],
    /// Samples from files listed for this release only: each must match an owned CRD.
    pub release_samples: &'a [Sourced],
}

/// A built bundle, before it is laid out as files.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltBundle {
    /// The ClusterServiceVersion.
    pub csv: ClusterServiceVersion,
    /// The CRDs, in input order.
    pub crds: Vec<Value>,
    /// Other objects shipped in `manifests/`, sorted by kind then name.
    pub others: Vec<Value>,
    /// Warnings: what was changed or left out, and why.
    pub notes: Vec<Finding>,
}

/// The builder's name, as CSVs record it.
pub const BUILDER: &str = concat!("olmpack-v", env!("CARGO_PKG_VERSION"));

/// CSV annotations olmpack computes; the plan may not set them directly.
const COMPUTED_ANNOTATIONS: [&str; 4] = [
    ALM_EXAMPLES,
    "olm.skipRange",
    "createdAt",
    "operators.operatorframework.io/builder",
];

/// The parts of the CSV's `spec` that are built from the manifests.
struct SpecParts {
    owned: Vec<CrdDescription>,
    deployments: Vec<StrategyDeployment>,
    rbac: rbac::Rbac,
    install_modes: Vec<InstallMode>,
    related_images: Vec<RelatedImage>,
    webhook_definitions: Vec<WebhookDescription>,
}

/// Builds the CSV and the objects of one bundle; `Err` holds every problem.
pub fn build(spec: &ReleaseSpec<'_>, inputs: &Inputs) -> Result<BuiltBundle, Vec<Finding>> {
    let mut problems = computed_annotation_problems(spec.csv);
    let mut notes = inputs.notes.clone();

    let accounts = deployments::service_accounts(&inputs.deployments);
    let deployments =
        deployments::strategy_deployments(&inputs.deployments, webhooks::any(inputs), &mut notes);
    let rbac = rbac::permissions(
        inputs,
        &inputs.permission_accounts(&accounts),
        &mut problems,
    );
    let webhooks = webhooks::definitions(inputs, &mut problems);
    let shipped_crds = crds::shipped(&inputs.crds, &webhooks.definitions);
    let owned = crds::owned(spec, &inputs.crds);
    let examples = examples::alm_examples(spec, inputs, &owned, &mut problems);
    let install_modes = install_modes::install_modes(spec.csv, webhooks.has_conversion, &mut notes);
    let related_images = images::related_images(&inputs.deployments, &mut notes);

    let others = objects::others(inputs, &rbac, &accounts, &webhooks.services);
    let annotations = annotations(spec, examples, images::container_image(&inputs.deployments));
    let parts = SpecParts {
        owned,
        deployments,
        rbac,
        install_modes,
        related_images,
        webhook_definitions: webhooks.definitions,
    };
    let csv = csv_document(spec, annotations, parts);

    // A warning (a webhook's namespaceSelector that OLM replaces, say) is reported with the
    // bundle; only an error stops it.
    if problems
        .iter()
        .all(|f| f.severity != olmpack_model::report::Severity::Error)
    {
        notes.extend(problems);
        Ok(BuiltBundle {
            csv,
            crds: shipped_crds,
            others,
            notes,
        })
    } else {
        Err(problems)
    }
}

/// An error for each annotation the plan sets that olmpack computes.
fn computed_annotation_problems(csv: &CsvMetadata) -> Vec<Finding> {
    COMPUTED_ANNOTATIONS
        .into_iter()
        .filter(|key| csv.annotations.contains_key(*key))
        .map(|key| {
            Finding::error(
                "plan/computed-annotation",
                format!("annotation {key} is generated by olmpack"),
            )
            .field(format!("csv.annotations.{key}"))
            .hint("use `samples`, `skipRange` or `createdAt` in the plan instead")
        })
        .collect()
}

/// The CSV's annotations: the plan's, and those olmpack computes.
fn annotations(
    spec: &ReleaseSpec<'_>,
    examples: String,
    container_image: Option<String>,
) -> BTreeMap<String, String> {
    let mut annotations: BTreeMap<String, String> = spec.csv.annotations.clone();
    annotations.insert(ALM_EXAMPLES.into(), examples);
    annotations.insert(
        "capabilities".into(),
        spec.csv
            .capabilities
            .clone()
            .unwrap_or_else(|| "Basic Install".into()),
    );
    if !spec.csv.categories.is_empty() {
        annotations.insert("categories".into(), spec.csv.categories.join(", "));
    }
    if let Some(image) = container_image {
        annotations.entry("containerImage".into()).or_insert(image);
    }
    if let Some(created_at) = &spec.created_at {
        annotations.insert("createdAt".into(), created_at.clone());
    }
    if let Some(short) = &spec.csv.short_description {
        annotations.insert("description".into(), short.clone());
    }
    if let Some(range) = &spec.edges.skip_range {
        annotations.insert("olm.skipRange".into(), range.clone());
    }
    annotations.insert(
        "operators.operatorframework.io/builder".into(),
        BUILDER.into(),
    );
    annotations
}

/// The ClusterServiceVersion object.
fn csv_document(
    spec: &ReleaseSpec<'_>,
    annotations: BTreeMap<String, String>,
    parts: SpecParts,
) -> ClusterServiceVersion {
    let metadata = ObjectMeta {
        name: Some(format!("{}.v{}", spec.package, spec.version)),
        namespace: Some("placeholder".to_owned()),
        annotations: Some(annotations.into()),
        labels: (!spec.csv.labels.is_empty()).then(|| spec.csv.labels.clone().into()),
        ..ObjectMeta::default()
    };
    ClusterServiceVersion {
        api_version: Some("operators.coreos.com/v1alpha1".to_owned()),
        kind: Some("ClusterServiceVersion".to_owned()),
        metadata: Some(metadata),
        spec: Some(csv_spec(spec, parts)),
        ..ClusterServiceVersion::default()
    }
}

/// `Some(list)` unless the list is empty (empty lists are left out of the CSV).
fn listed<T>(list: Vec<T>) -> Option<Vec<T>> {
    (!list.is_empty()).then_some(list)
}

/// The CSV's `spec`; empty lists and unset fields are left out.
fn csv_spec(spec: &ReleaseSpec<'_>, parts: SpecParts) -> CsvSpec {
    let csv = spec.csv;
    let link = |name: &str, url: Option<&str>| AppLink {
        name: Some(name.to_owned()),
        url: url.map(str::to_owned),
        ..AppLink::default()
    };
    let maintainers = (csv.maintainers.iter()).map(|m| Maintainer {
        name: Some(m.name.clone()),
        email: Some(m.email.clone()),
        ..Maintainer::default()
    });
    CsvSpec {
        customresourcedefinitions: listed(parts.owned).map(|owned| CrdDefinitions {
            owned: Some(owned),
            ..CrdDefinitions::default()
        }),
        description: Some(csv.description.clone()),
        display_name: Some(csv.display_name.clone()),
        icon: spec.icon.clone().map(|icon| vec![icon]),
        install: Some(install_strategy(parts.deployments, parts.rbac)),
        install_modes: Some(parts.install_modes),
        keywords: listed(csv.keywords.clone()),
        links: listed(
            csv.links
                .iter()
                .map(|l| link(&l.name, Some(&l.url)))
                .collect(),
        ),
        maintainers: listed(maintainers.collect()),
        maturity: csv.maturity.clone(),
        min_kube_version: csv.min_kube_version.clone(),
        provider: Some(link(&csv.provider.name, csv.provider.url.as_deref())),
        related_images: listed(parts.related_images),
        replaces: spec.edges.replaces.clone(),
        skips: listed(spec.edges.skips.clone()),
        version: Some(spec.version.to_string()),
        webhookdefinitions: listed(parts.webhook_definitions),
        ..CsvSpec::default()
    }
}

/// The `deployment` install strategy: deployments and the permissions they run with.
fn install_strategy(deployments: Vec<StrategyDeployment>, rbac: rbac::Rbac) -> InstallStrategy {
    let details = StrategyDetails {
        cluster_permissions: listed(rbac.cluster),
        deployments: Some(deployments),
        permissions: listed(rbac.namespaced),
        ..StrategyDetails::default()
    };
    InstallStrategy {
        strategy: Some("deployment".to_owned()),
        spec: Some(details),
        ..InstallStrategy::default()
    }
}
