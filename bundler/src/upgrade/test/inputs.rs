//! What the live test runs on: releases (CRDs, examples) and the edges between them.
#![warn(missing_docs)]

use crate::refusal::Refusal;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use olmpack_envtest::live::admission::AdmissionWebhook;
use olmpack_envtest::live::{OperatorIdentity, ReleaseUnderTest};
use serde_json::Value;

use crate::bundle::generate::{self, GenerateOptions};
use crate::bundle::load::LoadedBundle;
use crate::catalog::model::{Model, Package};
use crate::plan::PlanInputs as _;
use crate::upgrade::check::graph::{GraphError, InstalledBundle, apply_conversion_webhook};
use k8s_openapi::api::rbac::v1::PolicyRule;
use olmpack_model::csv::examples::ExamplesError;
use olmpack_model::csv::{ClusterServiceVersion, StrategyPermissions};
use olmpack_model::plan::LoadedPlan;
use olmpack_model::upgrade::Edge;
use olmpack_oci::input::Policy;

/// Failure to prepare the live test's inputs.
#[derive(Debug, thiserror::Error)]
pub enum LiveInputsError {
    /// Generating the bundles of the plan failed.
    #[error("failed to generate the bundles of the plan")]
    Generate(#[from] generate::GenerateError),
    /// Building the plan's catalog failed.
    #[error("failed to build the catalog of the plan")]
    Release(#[from] crate::build::BuildError),
    /// The catalog under test cannot be loaded.
    #[error("failed to read catalog {path}")]
    Catalog {
        /// The catalog directory.
        path: PathBuf,
        /// The loader's error.
        #[source]
        source: crate::catalog::load::LoadError,
    },
    /// A bundle directory cannot be loaded.
    #[error("failed to read bundle directory {path}")]
    Bundle {
        /// The bundle directory.
        path: PathBuf,
        /// The loader's error.
        #[source]
        source: crate::bundle::load::BundleLoadError,
    },
    /// The directory of bundle directories cannot be listed.
    #[error("failed to list bundle directories in {path}")]
    BundlesDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error from the file system.
        #[source]
        source: std::io::Error,
    },
    /// A bundle's CRD does not decode, so its examples cannot be checked against it.
    #[error("{file}: {object}: not a valid CustomResourceDefinition: {reason}")]
    Crd {
        /// The manifest file.
        file: PathBuf,
        /// The CRD, e.g. `CustomResourceDefinition/webapps.apps.olmpack.dev`.
        object: String,
        /// Why it does not decode.
        reason: String,
    },
    /// The CSV's `alm-examples` annotation is not a JSON array of objects.
    #[error("{file}: {problem}")]
    Examples {
        /// The CSV file.
        file: PathBuf,
        /// What is wrong with the annotation (naming the CSV and the field).
        problem: ExamplesError,
    },
    /// A sample file is not a YAML mapping.
    #[error("{path}: sample is not a YAML object: {reason}")]
    Sample {
        /// The sample file.
        path: PathBuf,
        /// Why it does not parse as one.
        reason: String,
    },
    /// A bundle cannot be read as `upgrade check` reads it (for its static answer).
    #[error(transparent)]
    Static(#[from] GraphError),
    /// An upgrade edge of the catalog names a bundle for which no bundle directory was found.
    #[error(
        "the catalog names bundle {bundle} in an upgrade edge, but no bundle directory holds its CSV"
    )]
    MissingBundle {
        /// The bundle name.
        bundle: String,
    },
}

/// What the plan, catalog or bundles it is made of say (a wrapped reader's answer); the rest is
/// olmpack failing to put the inputs together (exit 2).
impl Refusal for LiveInputsError {
    fn refuses_input(&self) -> bool {
        match self {
            LiveInputsError::Generate(generate) => generate.refuses_input(),
            LiveInputsError::Release(build) => build.refuses_input(),
            LiveInputsError::Catalog { source, .. } => source.refuses_input(),
            LiveInputsError::Bundle { source, .. } => source.refuses_input(),
            LiveInputsError::BundlesDir { .. }
            | LiveInputsError::Crd { .. }
            | LiveInputsError::Examples { .. }
            | LiveInputsError::Sample { .. }
            | LiveInputsError::Static(_)
            | LiveInputsError::MissingBundle { .. } => false,
        }
    }
}

/// The releases (by bundle name) and the edges to run.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// Each release's bundle and samples, by bundle name.
    pub releases: BTreeMap<String, ReleaseUnderTest>,
    /// The upgrade edges to run, in order.
    pub edges: Vec<Edge>,
    /// Each release as `upgrade check` reads it, by bundle name: the same edges are judged
    /// statically too.
    pub installed: BTreeMap<String, InstalledBundle>,
}

/// Generates the plan's bundles and catalog in memory and takes the catalog's edges.
pub fn from_plan(plan: &LoadedPlan, policy: &Policy) -> Result<Inputs, LiveInputsError> {
    let options = GenerateOptions {
        input: *policy,
        ..GenerateOptions::default()
    };
    let output = crate::build::build(plan, &options)?;
    let (model, _) = Model::from_config(output.catalog.config);
    let samples = plan_samples(plan, policy)?;
    let (mut releases, mut installed) = (BTreeMap::new(), BTreeMap::new());
    for bundle in output.loaded.values() {
        let mut release = release_from_bundle(bundle)?;
        release.examples.extend(samples.iter().cloned());
        installed.insert(release.name.clone(), InstalledBundle::from_bundle(bundle)?);
        releases.insert(release.name.clone(), release);
    }
    finish(releases, installed, &model)
}

/// Reads a catalog directory and the bundle directories under `bundles` (each a directory
/// holding `manifests/` and `metadata/`), matched to the catalog by CSV name.
pub fn from_dirs(
    catalog: &Path,
    bundles: &Path,
    limits: &olmpack_oci::input::Limits,
) -> Result<Inputs, LiveInputsError> {
    let options = crate::catalog::load::LoadOptions {
        limits: *limits,
        ..Default::default()
    };
    let loaded = crate::catalog::load::load_dir_with(catalog, options).map_err(|source| {
        LiveInputsError::Catalog {
            path: catalog.to_owned(),
            source,
        }
    })?;
    let (model, _) = Model::from_config(loaded.config);
    let list_err = |source| LiveInputsError::BundlesDir {
        path: bundles.to_owned(),
        source,
    };
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(bundles)
        .map_err(list_err)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.join("manifests").is_dir())
        .collect();
    dirs.sort();
    let (mut releases, mut installed) = (BTreeMap::new(), BTreeMap::new());
    for dir in dirs {
        let bundle = crate::bundle::load::load_dir_with(&dir, limits).map_err(|source| {
            LiveInputsError::Bundle {
                path: dir.clone(),
                source,
            }
        })?;
        let release = release_from_bundle(&bundle)?;
        installed.insert(release.name.clone(), InstalledBundle::from_bundle(&bundle)?);
        releases.insert(release.name.clone(), release);
    }
    finish(releases, installed, &model)
}

fn finish(
    releases: BTreeMap<String, ReleaseUnderTest>,
    installed: BTreeMap<String, InstalledBundle>,
    model: &Model,
) -> Result<Inputs, LiveInputsError> {
    let edges = edges(model);
    for edge in &edges {
        for bundle in [&edge.from, &edge.to] {
            if !releases.contains_key(bundle) {
                return Err(LiveInputsError::MissingBundle {
                    bundle: bundle.clone(),
                });
            }
        }
    }
    Ok(Inputs {
        releases,
        edges,
        installed,
    })
}

/// Every edge of every channel (`replaces`, `skips`, each bundle a `skipRange` covers), as
/// the static check enumerates them; sorted oldest first, each edge once.
pub fn edges(model: &Model) -> Vec<Edge> {
    let mut out = Vec::new();
    for edge in crate::upgrade::check::graph::edges(model) {
        let Some(package) = model.packages.get(&edge.package) else {
            continue;
        };
        let key = (
            rank(package, &edge.from),
            rank(package, &edge.to),
            edge.from.clone(),
            edge.to.clone(),
        );
        out.push((key, edge));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.dedup_by(|a, b| a.0 == b.0);
    out.into_iter().map(|(_, edge)| edge).collect()
}

/// A bundle's position in version order (unknown bundles last).
fn rank(package: &Package, bundle: &str) -> usize {
    package
        .bundles_by_version()
        .iter()
        .position(|b| b.name == bundle)
        .unwrap_or(usize::MAX)
}

/// The release of one bundle: its CRDs (with the conversion webhook its CSV asks OLM to
/// inject) and its `alm-examples`; no webhook command yet.
pub fn release_from_bundle(bundle: &LoadedBundle) -> Result<ReleaseUnderTest, LiveInputsError> {
    let csv = bundle.csv();
    let mut crds = Vec::new();
    for object in bundle.crds() {
        let crd: CustomResourceDefinition = serde_json::from_value(object.v1.clone().into_owned())
            .map_err(|err| LiveInputsError::Crd {
                file: bundle.dir.join(&object.object.file),
                object: object.object.display_name(),
                reason: err.to_string(),
            })?;
        crds.push(crd);
    }
    let mut examples = Vec::new();
    let mut admission = Vec::new();
    let mut operator = None;
    if let Some(csv) = csv {
        let typed = ClusterServiceVersion::read(&csv.value).0;
        for crd in &mut crds {
            apply_conversion_webhook(crd, &typed);
        }
        admission = admission_webhooks(&typed);
        examples = typed
            .alm_examples()
            .map_err(|problem| LiveInputsError::Examples {
                file: bundle.dir.join(&csv.file),
                problem,
            })?;
        operator = operator_identity(&typed);
    }
    let name = csv
        .map(|c| c.name().to_owned())
        .unwrap_or_else(|| bundle.dir.display().to_string());
    Ok(ReleaseUnderTest {
        name,
        crds,
        examples,
        webhook: None,
        operator: operator.map(|identity| OperatorIdentity {
            config: config_objects(bundle),
            ..identity
        }),
        admission,
    })
}

/// The Secrets and ConfigMaps of `bundle`, which OLM applies in the install namespace.
fn config_objects(bundle: &LoadedBundle) -> Vec<Value> {
    bundle
        .objects
        .iter()
        .filter(|o| o.api_version() == "v1" && matches!(o.kind(), "Secret" | "ConfigMap"))
        .map(|o| o.value.clone())
        .collect()
}

/// The CSV's admission webhooks (`webhookdefinitions` of type `MutatingAdmissionWebhook` or
/// `ValidatingAdmissionWebhook`), with the fields OLM copies into the webhook configuration.
fn admission_webhooks(csv: &ClusterServiceVersion) -> Vec<AdmissionWebhook> {
    let definitions = (csv.spec.as_ref())
        .and_then(|spec| spec.webhookdefinitions.as_deref())
        .unwrap_or_default();
    definitions
        .iter()
        .filter_map(|definition| {
            let mutating = match definition.type_.as_deref() {
                Some("MutatingAdmissionWebhook") => true,
                Some("ValidatingAdmissionWebhook") => false,
                _ => return None,
            };
            let fields = serde_json::to_value(definition).ok()?;
            let fields = ADMISSION_FIELDS
                .iter()
                .filter_map(|key| Some(((*key).to_owned(), fields.get(*key)?.clone())))
                .collect();
            Some(AdmissionWebhook {
                mutating,
                name: definition.generate_name.clone().unwrap_or_default(),
                path: definition
                    .webhook_path
                    .clone()
                    .unwrap_or_else(|| "/".to_owned()),
                fields,
            })
        })
        .collect()
}

/// The fields of a `webhookdefinitions` entry OLM v0 copies into the admission webhook.
const ADMISSION_FIELDS: [&str; 8] = [
    "rules",
    "failurePolicy",
    "matchPolicy",
    "objectSelector",
    "sideEffects",
    "timeoutSeconds",
    "admissionReviewVersions",
    "reinvocationPolicy",
];

/// The CSV's first Deployment, its ServiceAccount and the permissions the CSV grants that
/// account (what OLM v0 runs the operator as); `None` when the CSV has no Deployment.
/// Rules that do not decode as RBAC rules are left out (the CSV's validation reports them).
pub fn operator_identity(csv: &ClusterServiceVersion) -> Option<OperatorIdentity> {
    let install = csv.strategy()?;
    let deployment = install.deployments.as_ref()?.first()?;
    let service_account = deployment.service_account().to_owned();
    let rules_of = |permissions: &Option<Vec<StrategyPermissions>>| -> Vec<PolicyRule> {
        (permissions.iter().flatten())
            .filter(|p| p.service_account_name.as_deref() == Some(service_account.as_str()))
            .flat_map(|p| p.rules.iter().flatten())
            .filter_map(|rule| serde_json::from_value(rule.clone()).ok())
            .collect()
    };
    let spec = deployment.spec.as_ref();
    let template = spec.and_then(|s| s.template.as_ref());
    let image = (spec.and_then(|s| s.pod()))
        .and_then(|pod| pod.containers.as_ref()?.first()?.image.clone());
    Some(OperatorIdentity {
        deployment: deployment.name.clone().unwrap_or_default(),
        image: image.unwrap_or_default(),
        rules: rules_of(&install.permissions),
        cluster_rules: rules_of(&install.cluster_permissions),
        service_account,
        pod_template: template.map_or(Value::Null, |t| {
            serde_json::to_value(t).expect("a map of JSON values always serializes")
        }),
        config: Vec::new(),
    })
}

/// The plan's sample objects (every document of every sample file).
/// The plan's samples, read as every plan input is (inside the plan's directory, bounded).
fn plan_samples(plan: &LoadedPlan, policy: &Policy) -> Result<Vec<Value>, LiveInputsError> {
    let mut out = Vec::new();
    for path in &plan.plan.samples {
        let text = plan
            .resolve_input(path, policy)
            .and_then(|file| olmpack_oci::input::text(&file, &policy.limits))
            .map_err(|err| LiveInputsError::Sample {
                path: plan.resolve(path),
                reason: err.to_string(),
            })?;
        let path = plan.resolve(path);
        let docs =
            olmpack_model::yaml::from_multi_str(&text).map_err(|err| LiveInputsError::Sample {
                path: path.clone(),
                reason: err.to_string(),
            })?;
        out.extend(docs.into_iter().filter(Value::is_object));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What OLM v0 runs the operator as, read from the typed CSV: the first Deployment, its
    /// ServiceAccount (`default` when it names none) and the rules granted that account only.
    #[test]
    fn the_operator_identity_is_read_from_the_typed_csv() {
        let template = json!({"spec": {"containers": [{"name": "m", "image": "op:1"}]}});
        let csv = json!({"spec": {"install": {"strategy": "deployment", "spec": {
            "deployments": [
                {"name": "op", "spec": {"template": template}},
                {"name": "other", "spec": {}},
            ],
            "permissions": [
                {"serviceAccountName": "default", "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
                {"serviceAccountName": "else", "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]},
            ],
            "clusterPermissions": [
                {"serviceAccountName": "default", "rules": [{"verbs": "not a list"}]},
            ],
        }}}});
        let identity =
            operator_identity(&ClusterServiceVersion::read(&csv).0).expect("a deployment");
        assert_eq!(identity.deployment, "op");
        assert_eq!(identity.service_account, "default");
        assert_eq!(identity.image, "op:1");
        assert_eq!(identity.pod_template, template);
        let resources: Vec<_> = (identity.rules.iter())
            .flat_map(|r| r.resources.clone().unwrap_or_default())
            .collect();
        assert_eq!(resources, ["pods"]);
        // A rule that is not an RBAC rule is left out.
        assert!(identity.cluster_rules.is_empty());
        let none =
            json!({"spec": {"install": {"strategy": "deployment", "spec": {"deployments": []}}}});
        assert!(operator_identity(&ClusterServiceVersion::read(&none).0).is_none());
    }
}
