//! The severity model's proof: for every rule that may report an error (the table
//! `validate::consumers::RULES`), a bundle that makes olmpack report that rule at error level,
//! and the consumer the table names refusing the same input for real:
//!
//! - **opm**: the built `opm` renders the bundle directory, then validates a catalog of it
//!   (its package, one channel with its upgrade edges, the rendered bundle);
//! - **kube-apiserver**: the test control plane (`olmpack_envtest::control_plane::TestEnv`, with OLM v0's CRDs
//!   installed) refuses, in a server-side dry run, the object as written, the CSV itself, the
//!   CSV's examples against the bundle's own CRDs, or
//!   what OLM creates from the CSV (Deployments, Pods, webhook configurations, a CRD with OLM's
//!   conversion webhook);
//! - **OLM v0** and **the pod cannot start**: shown by a test that runs the real OLM v0 on the
//!   same defect (`olm_e2e_broken.rs`), named in the case and checked to exist.
//!
//! Each proof also runs on the unbroken example bundle, which every consumer accepts: the
//! refusal comes from the defect. A rule added to the table without a case here fails
//! `bundle_consumers_every_error_rule_has_a_consumer_case`.

use std::collections::BTreeSet;
use std::path::Path;

mod apiserver_support;
mod bundle_cases;

use bundle_cases::*;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use olmpack::bundle::load::LoadedBundle;
use olmpack::bundle::validate::consumers::RULES;
use olmpack_model::report::{Consumer, Severity};
use serde_json::{Value, json};

/// How a case shows its consumer refusing.
#[derive(Clone, Copy)]
enum Proof {
    /// `opm render` of the bundle directory, then `opm validate` of a catalog of it, fails.
    Opm,
    /// The API server refuses an object of this bundle file, as written.
    Object(&'static str),
    /// The API server, with OLM's CRDs, refuses the ClusterServiceVersion itself.
    Csv,
    /// The API server refuses an object OLM creates from the bundle.
    Derived(fn(&LoadedBundle) -> Vec<Value>),
    /// The API server, serving the bundle's own CRDs (the unbroken bundle's, conversion
    /// `None`: the schemas decide), refuses an `alm-examples` object as a user creates it.
    Example,
    /// A test that runs the real OLM v0 on the same defect: (test file, test function).
    OlmE2e(&'static str, &'static str),
    /// The real OLM v0 refuses the `invalid-install-mode` OLM fixture's operator (its install
    /// mode fixed) with this change to its CSV and this file added to `manifests/` (name,
    /// YAML), saying one of `says` (in the reason or message).
    OlmV0 {
        change: fn(&mut Value),
        extra: Option<(&'static str, &'static str)>,
        says: &'static [&'static str],
    },
}

impl Proof {
    /// The consumers this kind of proof can stand for.
    fn shows(self, consumer: Consumer) -> bool {
        match self {
            Proof::Opm => consumer == Consumer::Opm,
            Proof::Object(_) | Proof::Csv | Proof::Example => consumer == Consumer::KubeApiserver,
            Proof::Derived(_) => {
                matches!(consumer, Consumer::KubeApiserver | Consumer::PodCannotStart)
            }
            Proof::OlmE2e(..) => matches!(consumer, Consumer::OlmV0 | Consumer::PodCannotStart),
            Proof::OlmV0 { .. } => consumer == Consumer::OlmV0,
        }
    }
}

struct Case {
    rule: &'static str,
    name: &'static str,
    breaks: Box<dyn Fn(&mut Files)>,
    proof: Proof,
}

fn case(
    rule: &'static str,
    name: &'static str,
    proof: Proof,
    breaks: impl Fn(&mut Files) + 'static,
) -> Case {
    Case {
        rule,
        name,
        breaks: Box::new(breaks),
        proof,
    }
}

impl Case {
    fn files(&self) -> Files {
        let mut files = example_bundle();
        (self.breaks)(&mut files);
        files
    }
}

/// Like [`csv`], but callable more than once.
fn csv_edit(change: fn(&mut Value)) -> impl Fn(&mut Files) {
    move |files| edit(files, CSV, change)
}

fn crd_edit(change: fn(&mut Value)) -> impl Fn(&mut Files) {
    move |files| edit(files, CRD, change)
}

fn annotation_set(key: &'static str, value: Option<&'static str>) -> impl Fn(&mut Files) {
    move |files| annotation(key, value)(files)
}

/// A case shown by the real OLM v0: `change` breaks the example's CSV for olmpack and the OLM
/// fixture's CSV for OLM.
fn olm_case(
    rule: &'static str,
    name: &'static str,
    change: fn(&mut Value),
    says: &'static [&'static str],
) -> Case {
    let proof = Proof::OlmV0 {
        change,
        extra: None,
        says,
    };
    case(rule, name, proof, csv_edit(change))
}

/// A case shown by the real OLM v0: `file` (name, YAML) added to `manifests/` of both bundles.
fn olm_file_case(
    rule: &'static str,
    name: &'static str,
    file: (&'static str, &'static str),
    says: &'static [&'static str],
) -> Case {
    let proof = Proof::OlmV0 {
        change: |_| {},
        extra: Some(file),
        says,
    };
    case(rule, name, proof, move |files| {
        files.insert(format!("manifests/{}", file.0), file.1.as_bytes().to_vec());
    })
}

/// A kind OLM v0 does not create from a bundle.
const RESOURCE_QUOTA: (&str, &str) = (
    "quota.yaml",
    "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: widgets\nspec:\n  hard:\n    pods: \"10\"\n",
);

fn webhook(csv: &mut Value, i: usize) -> &mut Value {
    &mut csv["spec"]["webhookdefinitions"][i]
}

fn cases() -> Vec<Case> {
    use Proof::*;
    vec![
        // opm's bundle loader, `opm render` and `opm validate`.
        case(
            "bundle/annotation-missing",
            "no package annotation",
            Opm,
            annotation_set("operators.operatorframework.io.bundle.package.v1", None),
        ),
        case(
            "bundle/missing-annotations",
            "no annotations.yaml",
            Opm,
            |f| {
                f.remove(ANNOTATIONS);
            },
        ),
        case("bundle/no-csv", "no CSV", Opm, |f| {
            f.remove(CSV);
        }),
        case("bundle/no-manifests", "empty manifests/", Opm, |f| {
            f.retain(|p, _| !p.starts_with("manifests/"));
        }),
        case(
            "csv/owned-crd",
            "owned CRD name without a group",
            Opm,
            csv_edit(|c| {
                c["spec"]["customresourcedefinitions"]["owned"][0]["name"] = json!("guestbooks")
            }),
        ),
        case(
            "csv/owned-crd-not-in-bundle",
            "owned CRD version not in the bundle",
            Opm,
            csv_edit(|c| {
                c["spec"]["customresourcedefinitions"]["owned"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "guestbooks.demo.olmpack.dev", "version": "v2", "kind": "Guestbook", "displayName": "G"}))
            }),
        ),
        case(
            "csv/version",
            "version not semver",
            Opm,
            csv_edit(|c| c["spec"]["version"] = json!("1.1")),
        ),
        case(
            "csv/replaces",
            "replaces itself",
            Opm,
            csv_edit(|c| c["spec"]["replaces"] = json!("guestbook-operator.v1.1.1")),
        ),
        case(
            "csv/skips",
            "empty skips entry",
            Opm,
            csv_edit(|c| c["spec"]["skips"] = json!([""])),
        ),
        case(
            "csv/skip-range",
            "invalid skipRange",
            Opm,
            csv_edit(|c| c["metadata"]["annotations"]["olm.skipRange"] = json!(">=1.0 <1.1.1")),
        ),
        case(
            "bundle/package-name",
            "package name not a DNS-1123 label",
            Opm,
            annotation_set(
                "operators.operatorframework.io.bundle.package.v1",
                Some("Guestbook_Operator"),
            ),
        ),
        // The API server, on an object of the bundle as written.
        case(
            "bundle/object-metadata",
            "ServiceAccount whose namespace is a number",
            Object("manifests/sa.yaml"),
            |f| {
                f.insert(
                    "manifests/sa.yaml".into(),
                    b"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: etcd\n  namespace: 0\n".to_vec(),
                );
            },
        ),
        case(
            "bundle/object-name",
            "ConfigMap whose name is not a DNS-1123 subdomain",
            Object("manifests/cm.yaml"),
            |f| {
                f.insert(
                    "manifests/cm.yaml".into(),
                    b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Settings_1\ndata: {a: b}\n".to_vec(),
                );
            },
        ),
        case(
            "crd/api-version",
            "CRD of apiextensions.k8s.io/v2",
            Object(CRD),
            crd_edit(|c| c["apiVersion"] = json!("apiextensions.k8s.io/v2")),
        ),
        case(
            "crd/conversion",
            "webhook conversion without review versions",
            Object(CRD),
            crd_edit(
                |c| c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "guestbook-webhook", "namespace": "default", "path": "/convert"}}}}),
            ),
        ),
        case(
            "crd/group",
            "group without a dot",
            Object(CRD),
            crd_edit(|c| {
                c["spec"]["group"] = json!("demo");
                c["metadata"]["name"] = json!("guestbooks.demo");
            }),
        ),
        case(
            "crd/name",
            "name is not plural.group",
            Object(CRD),
            crd_edit(|c| c["metadata"]["name"] = json!("guestbook.demo.olmpack.dev")),
        ),
        case(
            "crd/names",
            "uppercase plural",
            Object(CRD),
            crd_edit(|c| {
                c["spec"]["names"]["plural"] = json!("Guestbooks");
                c["metadata"]["name"] = json!("Guestbooks.demo.olmpack.dev");
            }),
        ),
        case(
            "crd/printer-columns",
            "printer column path without a dot",
            Object(CRD),
            crd_edit(|c| {
                c["spec"]["versions"][1]["additionalPrinterColumns"][0]["jsonPath"] =
                    json!("spec.replicas")
            }),
        ),
        case(
            "crd/schema",
            "schema without type",
            Object(CRD),
            crd_edit(|c| {
                c["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                    ["properties"]["replicas"]
                    .as_object_mut()
                    .unwrap()
                    .remove("type");
            }),
        ),
        case(
            "crd/scope",
            "unknown scope",
            Object(CRD),
            crd_edit(|c| c["spec"]["scope"] = json!("Cluster-wide")),
        ),
        case(
            "crd/storage-version",
            "two storage versions",
            Object(CRD),
            crd_edit(|c| c["spec"]["versions"][0]["storage"] = json!(true)),
        ),
        case(
            "crd/subresources",
            "scale path outside spec",
            Object(CRD),
            crd_edit(|c| {
                c["spec"]["versions"][1]["subresources"]["scale"]["specReplicasPath"] =
                    json!(".replicas")
            }),
        ),
        case(
            "crd/versions",
            "no versions",
            Object(CRD),
            crd_edit(|c| c["spec"]["versions"] = json!([])),
        ),
        case(
            "deprecated-api/removed",
            "policy/v1beta1 PodDisruptionBudget",
            Object("manifests/pdb.yaml"),
            |f| {
                f.insert("manifests/pdb.yaml".into(), b"apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: guestbook}\nspec: {minAvailable: 1}\n".to_vec());
            },
        ),
        // The API server, on the CSV itself (OLM v0's ClusterServiceVersion CRD).
        case(
            "csv/name",
            "CSV name not a DNS-1123 subdomain",
            Csv,
            csv_edit(|c| c["metadata"]["name"] = json!("Guestbook.v1.1.1")),
        ),
        case(
            "csv/missing-field",
            "no displayName",
            Csv,
            csv_edit(|c| {
                c["spec"].as_object_mut().unwrap().remove("displayName");
            }),
        ),
        case(
            "csv/permissions",
            "permission without a service account",
            Csv,
            csv_edit(|c| {
                c["spec"]["install"]["spec"]["clusterPermissions"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("serviceAccountName");
            }),
        ),
        case(
            "csv/annotation-type",
            "annotation value that is a number",
            Csv,
            csv_edit(|c| c["metadata"]["annotations"]["olmpack.dev/revision"] = json!(3)),
        ),
        case(
            "csv/field-type",
            "minKubeVersion as an unquoted number",
            Csv,
            csv_edit(|c| c["spec"]["minKubeVersion"] = json!(1.16)),
        ),
        case(
            "webhook/review-versions",
            "webhook without admissionReviewVersions",
            Csv,
            csv_edit(|c| {
                webhook(c, 1)
                    .as_object_mut()
                    .unwrap()
                    .remove("admissionReviewVersions");
            }),
        ),
        case(
            "webhook/port",
            "webhook container port out of range",
            Csv,
            csv_edit(|c| webhook(c, 1)["containerPort"] = json!(70000)),
        ),
        case(
            "webhook/type",
            "unknown webhook type",
            Csv,
            csv_edit(|c| webhook(c, 1)["type"] = json!("AuditWebhook")),
        ),
        // The API server, on the CSV's examples as a user creates them.
        case(
            "csv/example-invalid",
            "example with a string where its CRD wants an integer",
            Example,
            csv_edit(|c| edit_examples(c, |e| e["spec"]["replicas"] = json!("two"))),
        ),
        case(
            "csv/example-not-served",
            "example at a version its CRD does not serve",
            Example,
            csv_edit(|c| edit_examples(c, |e| e["apiVersion"] = json!("demo.olmpack.dev/v2"))),
        ),
        // The API server, on what OLM creates from the bundle.
        case(
            "csv/deployment-name",
            "deployment name not a DNS-1123 subdomain",
            Derived(deployments),
            csv_edit(|c| first_deployment(c)["name"] = json!("Guestbook_Controller")),
        ),
        case(
            "webhook/side-effects",
            "webhook side effects Some",
            Derived(webhook_configurations),
            csv_edit(|c| webhook(c, 1)["sideEffects"] = json!("Some")),
        ),
        case(
            "webhook/name",
            "webhook name not a DNS-1123 subdomain",
            Derived(webhook_configurations),
            csv_edit(|c| webhook(c, 1)["generateName"] = json!("Validate_Guestbooks")),
        ),
        case(
            "webhook/conversion-crds",
            "webhook-converted CRD preserving unknown fields",
            Derived(converted_crds),
            crd_edit(|c| c["spec"]["preserveUnknownFields"] = json!(true)),
        ),
        case(
            "csv/container-image",
            "container without an image",
            Derived(pods),
            csv_edit(|c| {
                first_deployment(c)["spec"]["template"]["spec"]["containers"][0]["image"] =
                    json!("")
            }),
        ),
        // The real OLM v0.
        olm_case(
            "csv/install-strategy",
            "helm install strategy",
            |c| c["spec"]["install"]["strategy"] = json!("helm"),
            &["unrecognized install strategy"],
        ),
        olm_case(
            "csv/min-kube-version",
            "minKubeVersion not a semantic version",
            |c| c["spec"]["minKubeVersion"] = json!("1.28"),
            &["RequirementsNotMet"],
        ),
        olm_case(
            "webhook/rules",
            "webhook on OLM's API group",
            |c| {
                c["spec"]["webhookdefinitions"] = json!([{
                    "type": "ValidatingAdmissionWebhook",
                    "generateName": "vwidget.modes.olmpack.dev",
                    "deploymentName": "widgets",
                    "containerPort": 9443,
                    "webhookPath": "/validate",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "rules": [{"apiGroups": ["operators.coreos.com"], "apiVersions": ["*"], "operations": ["CREATE"], "resources": ["*"]}],
                }])
            },
            &["webhook rules cannot include the OLM group"],
        ),
        olm_file_case(
            "bundle/unsupported-kind",
            "ResourceQuota in the bundle",
            RESOURCE_QUOTA,
            &["InstallPlan"],
        ),
        // OLM v0 never reports the install healthy: no deployment serves the webhook, so the
        // deployment it calculates is bad and the CSV goes round Pending (NeedsReinstall),
        // InstallReady and Installing; the snapshot at the time-out may catch it in any of them.
        olm_case(
            "webhook/deployment",
            "webhook served by a deployment the CSV does not have",
            |c| {
                c["spec"]["webhookdefinitions"] = json!([{
                    "type": "ValidatingAdmissionWebhook",
                    "generateName": "vwidget.modes.olmpack.dev",
                    "deploymentName": "nope",
                    "containerPort": 9443,
                    "webhookPath": "/validate",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "rules": [{"apiGroups": ["modes.olmpack.dev"], "apiVersions": ["*"], "operations": ["CREATE"], "resources": ["widgets"]}],
                }])
            },
            &[
                "calculated deployment install is bad",
                "attempting install",
                "waiting for install components to report healthy",
                "Webhooks not installed",
            ],
        ),
        olm_case(
            "webhook/conversion-install-modes",
            "conversion webhook with OwnNamespace supported",
            |c| {
                c["spec"]["installModes"][0]["supported"] = json!(true);
                c["spec"]["webhookdefinitions"] = json!([{
                    "type": "ConversionWebhook",
                    "generateName": "cwidget.modes.olmpack.dev",
                    "deploymentName": "widgets",
                    "containerPort": 9443,
                    "webhookPath": "/convert",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "conversionCRDs": ["widgets.modes.olmpack.dev"],
                }])
            },
            &["AllNamespaces"],
        ),
        case(
            "csv/install-modes",
            "unknown install mode",
            OlmE2e(
                "olm_e2e_broken.rs",
                "olm_e2e_broken_invalid_install_mode_is_refused",
            ),
            csv_edit(|c| c["spec"]["installModes"][0]["type"] = json!("AllNamespace")),
        ),
        case(
            "csv/missing-volume-source",
            "a deployment no webhook names mounts kubebuilder's webhook certificate Secret",
            OlmE2e(
                "olm_e2e_broken.rs",
                "olm_e2e_broken_deployment_mounting_a_missing_secret_never_installs",
            ),
            csv_edit(|c| {
                let mut extra = first_deployment(c).clone();
                extra["name"] = json!("webhook-server");
                let pod = &mut extra["spec"]["template"]["spec"];
                pod["volumes"] = json!([
                    {"name": "cert", "secret": {"secretName": "webhook-server-cert"}}
                ]);
                pod["containers"][0]["volumeMounts"] = json!([
                    {"name": "cert", "mountPath": "/tmp/k8s-webhook-server/serving-certs"}
                ]);
                c["spec"]["install"]["spec"]["deployments"]
                    .as_array_mut()
                    .unwrap()
                    .push(extra);
            }),
        ),
    ]
}

/// The CSV's deployments as OLM v0 creates them.
fn deployments(bundle: &LoadedBundle) -> Vec<Value> {
    csv_deployments(bundle)
        .iter()
        .map(|d| {
            json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": d["name"]},
                "spec": d["spec"],
            })
        })
        .collect()
}

/// The pods the deployments' ReplicaSets create.
fn pods(bundle: &LoadedBundle) -> Vec<Value> {
    csv_deployments(bundle)
        .iter()
        .map(|d| {
            json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "guestbook-pod", "labels": d["spec"]["template"]["metadata"]["labels"]},
                "spec": d["spec"]["template"]["spec"],
            })
        })
        .collect()
}

fn csv_deployments(bundle: &LoadedBundle) -> Vec<Value> {
    let csv = bundle.csv().expect("the case keeps the CSV");
    csv.value["spec"]["install"]["spec"]["deployments"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The admission webhook configurations OLM v0 creates for the CSV's webhook definitions:
/// one per definition, its webhook named after `generateName`, served by the deployment's
/// service.
fn webhook_configurations(bundle: &LoadedBundle) -> Vec<Value> {
    let csv = bundle.csv().expect("the case keeps the CSV");
    let mut out = Vec::new();
    for def in csv.value["spec"]["webhookdefinitions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let kind = match def["type"].as_str() {
            Some("ValidatingAdmissionWebhook") => "ValidatingWebhookConfiguration",
            Some("MutatingAdmissionWebhook") => "MutatingWebhookConfiguration",
            _ => continue,
        };
        let mut webhook = json!({
            "name": def["generateName"],
            "clientConfig": {"service": {
                "namespace": "default",
                "name": format!("{}-service", def["deploymentName"].as_str().unwrap_or("")),
                "path": def.get("webhookPath").cloned().unwrap_or(json!("/")),
                "port": def.get("containerPort").cloned().unwrap_or(json!(443)),
            }},
        });
        for key in [
            "rules",
            "sideEffects",
            "admissionReviewVersions",
            "failurePolicy",
            "matchPolicy",
            "objectSelector",
            "timeoutSeconds",
            "reinvocationPolicy",
        ] {
            if let Some(v) = def.get(key) {
                webhook[key] = v.clone();
            }
        }
        out.push(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": "olmpack-consumer-test"},
            "webhooks": [webhook],
        }));
    }
    out
}

/// The CRDs a ConversionWebhook definition lists, with the conversion OLM v0 writes into them.
fn converted_crds(bundle: &LoadedBundle) -> Vec<Value> {
    let csv = bundle.csv().expect("the case keeps the CSV");
    let mut out = Vec::new();
    for def in csv.value["spec"]["webhookdefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["type"] == "ConversionWebhook")
    {
        for name in def["conversionCRDs"].as_array().into_iter().flatten() {
            for crd in bundle.crds().filter(|c| c.object.name() == name) {
                let mut crd = crd.object.value.clone();
                crd["spec"]["conversion"] = json!({
                    "strategy": "Webhook",
                    "webhook": {
                        "conversionReviewVersions": def["admissionReviewVersions"],
                        "clientConfig": {"service": {
                            "namespace": "default",
                            "name": format!("{}-service", def["deploymentName"].as_str().unwrap_or("")),
                            "path": def.get("webhookPath").cloned().unwrap_or(json!("/")),
                            "port": def.get("containerPort").cloned().unwrap_or(json!(443)),
                        }},
                    },
                });
                out.push(crd);
            }
        }
    }
    out
}

/// The CSV as OLM v0 sends it to the API server: decoded into OLM's Go type first, so with
/// that type's apiVersion, in the operator's namespace, and with a CRD resource reference
/// without `name` sent as `name: ""` (the field has no `omitempty`).
fn as_olm_sends(csv: &Value) -> Value {
    let mut csv = csv.clone();
    csv["apiVersion"] = json!("operators.coreos.com/v1alpha1");
    csv["metadata"]["namespace"] = json!("default");
    for list in ["owned", "required"] {
        let Some(crds) = csv["spec"]["customresourcedefinitions"][list].as_array_mut() else {
            continue;
        };
        for crd in crds {
            for resource in crd["resources"].as_array_mut().into_iter().flatten() {
                if let Some(resource) = resource.as_object_mut() {
                    resource.entry("name").or_insert(json!(""));
                }
            }
        }
    }
    csv
}

/// Changes the CSV's `alm-examples` object at `demo.olmpack.dev/v1`.
fn edit_examples(csv: &mut Value, change: fn(&mut Value)) {
    let key = &mut csv["metadata"]["annotations"]["alm-examples"];
    let mut examples: Vec<Value> = serde_json::from_str(key.as_str().unwrap()).unwrap();
    let v1 = examples
        .iter_mut()
        .find(|e| e["apiVersion"] == "demo.olmpack.dev/v1")
        .expect("the example bundle has a v1 example");
    change(v1);
    *key = json!(serde_json::to_string(&examples).unwrap());
}

/// The CSV's `alm-examples` objects.
fn examples(bundle: &LoadedBundle) -> Vec<Value> {
    let csv = bundle.csv().expect("the bundle has a CSV");
    let text = csv.value["metadata"]["annotations"]["alm-examples"]
        .as_str()
        .unwrap_or("[]");
    serde_json::from_str(text).unwrap()
}

/// The unbroken bundle's CRDs as an [`Proof::Example`] serves them: conversion `None`, so
/// each version's schema decides (no webhook runs here).
fn example_crds() -> Vec<CustomResourceDefinition> {
    let bundle = load_files(&example_bundle());
    bundle
        .objects
        .iter()
        .filter(|o| o.value["kind"] == "CustomResourceDefinition")
        .map(|o| {
            let mut crd = o.value.clone();
            crd["spec"]["conversion"] = json!({"strategy": "None"});
            serde_json::from_value(crd).unwrap()
        })
        .collect()
}

/// The objects a kube-apiserver proof submits for `files`.
fn apiserver_objects(proof: Proof, files: &Files) -> Vec<Value> {
    let bundle = load_files(files);
    match proof {
        Proof::Object(file) => bundle
            .objects
            .iter()
            .filter(|o| o.file == Path::new(file))
            .map(|o| o.value.clone())
            .collect(),
        Proof::Csv => bundle
            .csv()
            .map(|c| as_olm_sends(&c.value))
            .into_iter()
            .collect(),
        Proof::Derived(derive) => derive(&bundle),
        Proof::Example => examples(&bundle),
        Proof::Opm | Proof::OlmE2e(..) | Proof::OlmV0 { .. } => Vec::new(),
    }
}

#[test]
fn bundle_consumers_every_error_rule_has_a_consumer_case() {
    let table: BTreeSet<&str> = RULES.iter().map(|(r, _)| *r).collect();
    let cases = cases();
    let covered: BTreeSet<&str> = cases.iter().map(|c| c.rule).collect();
    assert_eq!(
        table.difference(&covered).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "rules that report errors without a test showing their consumer refusing"
    );
    assert_eq!(
        covered.difference(&table).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "cases for rules that are not in the table"
    );
    for case in &cases {
        let consumer = olmpack::bundle::validate::consumers::consumer(case.rule).unwrap();
        assert!(
            case.proof.shows(consumer),
            "{} ({}): the table names {consumer:?}, which this case's proof does not show",
            case.name,
            case.rule
        );
        if let Proof::OlmE2e(file, test) = case.proof {
            let source = std::fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests")
                    .join(file),
            )
            .unwrap();
            assert!(
                source.contains(&format!("async fn {test}()"))
                    && source.contains(&format!("error[{}]", case.rule)),
                "{file} has no test {test} asserting error[{}]",
                case.rule
            );
        }
    }
}

#[test]
fn bundle_consumers_olmpack_reports_each_case_at_error_with_its_consumer() {
    let mut failures = Vec::new();
    for case in cases() {
        let findings = validate_files(&case.files());
        let hit = findings
            .iter()
            .find(|f| f.rule == case.rule && f.severity == Severity::Error);
        let want = olmpack::bundle::validate::consumers::consumer(case.rule);
        match hit {
            Some(f) if f.consumer == want => {}
            _ => failures.push(format!(
                "{} ({}): no error with consumer {want:?}; findings: {:#?}",
                case.name,
                case.rule,
                findings
                    .iter()
                    .filter(|f| f.severity == Severity::Error)
                    .collect::<Vec<_>>()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn bundle_consumers_opm_refuses_each_opm_case() {
    let opm = olmpack_envtest::binaries::Tool::Opm
        .path()
        .expect("opm is installed by cargo xtask setup");
    let clean = write_bundle(&example_bundle());
    opm_consumes(&opm, clean.path()).expect("opm accepts the example bundle");
    let mut accepted = Vec::new();
    for case in cases() {
        if !matches!(case.proof, Proof::Opm) {
            continue;
        }
        let dir = write_bundle(&case.files());
        match opm_consumes(&opm, dir.path()) {
            Ok(()) => accepted.push(format!("{} ({})", case.name, case.rule)),
            Err(message) => eprintln!("opm refuses {}: {}", case.rule, message.trim()),
        }
    }
    assert!(accepted.is_empty(), "opm accepts: {accepted:#?}");
}

/// OLM v0's CRDs (the ClusterServiceVersion's among them), as `cargo xtask setup` left them.
fn olm_crds() -> Vec<CustomResourceDefinition> {
    let dir = olmpack_envtest::binaries::ToolData::OlmCrds
        .path()
        .expect("OLM's CRDs are installed by cargo xtask setup");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            serde_json::from_value(olmpack_model::yaml::from_str(&text).unwrap()).unwrap()
        })
        .collect()
}

#[tokio::test]
async fn bundle_consumers_apiserver_refuses_each_apiserver_case() {
    let env = olmpack_envtest::control_plane::TestEnv::start()
        .await
        .expect("test environment starts");
    for crd in olm_crds() {
        env.install_crd(&crd).await.unwrap();
    }
    let cases = cases();
    let failures = apiserver_failures(&env.client(), &cases, |p| {
        matches!(p, Proof::Object(_) | Proof::Csv | Proof::Derived(_))
    })
    .await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The examples' cases on a control plane of their own: it serves the example bundle's CRDs,
/// which the CRD cases above create in a dry run.
#[tokio::test]
async fn bundle_consumers_apiserver_refuses_each_example_case() {
    let env = olmpack_envtest::control_plane::TestEnv::start()
        .await
        .expect("test environment starts");
    for crd in example_crds() {
        env.install_crd(&crd).await.unwrap();
    }
    let cases = cases();
    assert!(cases.iter().any(|c| matches!(c.proof, Proof::Example)));
    let failures = apiserver_failures(&env.client(), &cases, |p| matches!(p, Proof::Example)).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Submits each case whose proof `runs` picks (and the same objects of the unbroken bundle):
/// what went otherwise than the case says, one line each.
async fn apiserver_failures(
    client: &kube::Client,
    cases: &[Case],
    runs: fn(Proof) -> bool,
) -> Vec<String> {
    let clean = example_bundle();
    let mut failures = Vec::new();
    for case in cases.iter().filter(|c| runs(c.proof)) {
        let objects = apiserver_objects(case.proof, &case.files());
        // The same objects from the unbroken bundle are accepted.
        for object in apiserver_objects(case.proof, &clean) {
            if let Err(e) = apiserver_support::apiserver_dry_run(client, &object).await {
                failures.push(format!(
                    "{}: the unbroken object is refused: {e}",
                    case.name
                ));
            }
        }
        assert!(!objects.is_empty(), "{}: nothing to submit", case.name);
        let mut refusals = Vec::new();
        for object in &objects {
            if let Err(e) = apiserver_support::apiserver_dry_run(client, object).await {
                refusals.push(e);
            }
        }
        if refusals.is_empty() {
            failures.push(format!(
                "{} ({}): the apiserver accepts {}",
                case.name,
                case.rule,
                serde_json::to_string(&objects).unwrap()
            ));
        } else {
            eprintln!("kube-apiserver refuses {}: {}", case.rule, refusals[0]);
        }
    }
    failures
}

/// The `invalid-install-mode` OLM fixture's bundle (install mode fixed) with `change` applied
/// to its CSV, rendered by opm into `dir/catalog` next to the fixture's package and channel.
fn olm_catalog(
    dir: &Path,
    change: fn(&mut Value),
    extra: Option<(&str, &str)>,
) -> std::path::PathBuf {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/olm_e2e/invalid-install-mode");
    let bundle = dir.join("bundle");
    for sub in ["manifests", "metadata"] {
        std::fs::create_dir_all(bundle.join(sub)).unwrap();
        for entry in std::fs::read_dir(fixture.join("bundles/1.0.0").join(sub)).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, bundle.join(sub).join(path.file_name().unwrap())).unwrap();
        }
    }
    let csv_path = bundle.join("manifests/modes.clusterserviceversion.yaml");
    let mut csv: Value =
        olmpack_model::yaml::from_str(&std::fs::read_to_string(&csv_path).unwrap()).unwrap();
    assert_eq!(csv["spec"]["installModes"][3]["type"], "AllNamespace");
    csv["spec"]["installModes"][3]["type"] = json!("AllNamespaces");
    change(&mut csv);
    std::fs::write(&csv_path, olmpack_model::yaml::to_string(&csv).unwrap()).unwrap();
    if let Some((name, yaml)) = extra {
        std::fs::write(bundle.join("manifests").join(name), yaml).unwrap();
    }
    let catalog = dir.join("catalog");
    std::fs::create_dir_all(&catalog).unwrap();
    std::fs::copy(fixture.join("package.json"), catalog.join("package.json")).unwrap();
    let out = std::process::Command::new(olmpack_envtest::binaries::Tool::Opm.path().unwrap())
        .args(["render", "--output", "json"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(catalog.join("bundles.json"), out.stdout).unwrap();
    catalog
}

/// OLM environments of this test binary at once (its tests run in parallel): two, one per core.
static OLM_SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// How OLM v0 ends the install of the fixture changed by `change` (an OLM of its own from
/// `envs`, reset after the install before, at most [`OLM_SLOTS`] at once).
async fn olm_install(
    change: fn(&mut Value),
    extra: Option<(&str, &str)>,
    envs: olmpack::upgrade::olm::EnvPool,
) -> olmpack_envtest::olm::Outcome {
    let _slot = OLM_SLOTS.acquire().await.expect("never closed");
    use olmpack::upgrade::olm::{self, RunOptions};
    let dir = tempfile::Builder::new()
        .prefix("olmpack-consumers-")
        .tempdir()
        .unwrap();
    let catalog = olm_catalog(dir.path(), change, extra);
    let cases = olm::load_cases(&catalog, None).unwrap();
    assert_eq!(cases.len(), 1, "{cases:#?}");
    let options = RunOptions {
        timeouts: olmpack_envtest::olm::Timeouts {
            // One case never ends (OLM goes round the CSV's phases) and runs out this time;
            // the one OLM holds back (its minKubeVersion) ends as stuck after 20 s. The
            // unbroken install takes about 15 s, two at once.
            step: std::time::Duration::from_secs(60),
            // The InstallPlan OLM fails (a kind it does not create) fails with the same
            // words after 20 s of retries as after its default minute.
            install_plan_retry: std::time::Duration::from_secs(20),
            ..Default::default()
        },
        envs: Some(envs),
        ..RunOptions::default()
    };
    let mut reports = olm::run(&catalog, &cases, &options).await.unwrap();
    reports.pop().unwrap().install.outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bundle_consumers_olm_v0_refuses_each_olm_case() {
    use olmpack_envtest::olm::Outcome;
    let mut installs = vec![OlmInstall {
        name: "unbroken",
        rule: "-",
        change: |_| {},
        extra: None,
        says: &[],
    }];
    for case in cases() {
        if let Proof::OlmV0 {
            change,
            extra,
            says,
        } = case.proof
        {
            installs.push(OlmInstall {
                name: case.name,
                rule: case.rule,
                change,
                extra,
                says,
            });
        }
    }
    let outcomes = olm_installs(&installs).await;
    let mut failures = Vec::new();
    for (install, outcome) in installs.iter().zip(outcomes) {
        let OlmInstall {
            name, rule, says, ..
        } = install;
        if *name == "unbroken" {
            assert!(
                matches!(outcome, Outcome::Succeeded { .. }),
                "OLM v0 installs the unbroken fixture: {outcome:?}"
            );
            continue;
        }
        let said = match &outcome {
            // Refused, or held back for good (OLM does not retry a requirement it cannot parse).
            Outcome::Refused {
                reason, message, ..
            }
            | Outcome::TimedOut {
                reason, message, ..
            } => format!("{reason}: {message}"),
            Outcome::Succeeded { .. } | Outcome::Unfinished { .. } => String::new(),
        };
        if says.iter().any(|s| said.contains(s)) {
            eprintln!("OLM v0 refuses {rule}: {said}");
        } else {
            failures.push(format!("{name} ({rule}): {outcome:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// One install of the OLM fixture: its change, the file it adds, and what OLM must say.
struct OlmInstall {
    name: &'static str,
    rule: &'static str,
    change: fn(&mut Value),
    extra: Option<(&'static str, &'static str)>,
    says: &'static [&'static str],
}

/// [`olm_install`] of each, two at a time (each in an OLM of its own, reset after the one
/// before); outcomes in the order given.
async fn olm_installs(installs: &[OlmInstall]) -> Vec<olmpack_envtest::olm::Outcome> {
    use futures::StreamExt as _;
    let envs = olmpack::upgrade::olm::EnvPool::default();
    futures::stream::iter(installs)
        .map(|i| olm_install(i.change, i.extra, envs.clone()))
        .buffered(2)
        .collect()
        .await
}

/// A defect olmpack only warns about, with the change that makes it in the OLM fixture's CSV
/// and the file it adds to `manifests/` (name, YAML).
struct Accepted {
    rule: &'static str,
    change: fn(&mut Value),
    extra: Option<(&'static str, &'static str)>,
}

/// The ServiceAccount the fixture's deployment runs as, shipped in the bundle too.
const OWN_SERVICE_ACCOUNT: (&str, &str) = (
    "sa.yaml",
    "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: widgets\n",
);

/// A CRD in the bundle that the CSV does not own.
const UNOWNED_CRD: (&str, &str) = (
    "gadgets.crd.yaml",
    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.modes.olmpack.dev\nspec:\n  group: modes.olmpack.dev\n  names: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}\n  scope: Namespaced\n  versions:\n  - name: v1alpha1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
);

/// Rules that upstream validators call errors but OLM v0 installs: the warnings' evidence.
fn accepted_by_olm() -> Vec<Accepted> {
    vec![
        Accepted {
            rule: "csv/no-deployments",
            change: |c| c["spec"]["install"]["spec"]["deployments"] = json!([]),
            extra: None,
        },
        Accepted {
            rule: "csv/duplicate-deployment",
            change: |c| {
                let deployments = &mut c["spec"]["install"]["spec"]["deployments"];
                let first = deployments[0].clone();
                deployments.as_array_mut().unwrap().push(first);
            },
            extra: None,
        },
        Accepted {
            rule: "bundle/service-account-conflict",
            change: |_| {},
            extra: Some(OWN_SERVICE_ACCOUNT),
        },
        Accepted {
            rule: "csv/crd-not-owned",
            change: |_| {},
            extra: Some(UNOWNED_CRD),
        },
    ]
}

#[test]
fn bundle_consumers_olmpack_warns_about_each_case_olm_installs() {
    let mut failures = Vec::new();
    for case in accepted_by_olm() {
        let mut files = example_bundle();
        edit(&mut files, CSV, case.change);
        if let Some((name, yaml)) = case.extra {
            // The example runs as its own service account, not the fixture's `widgets`.
            let csv = bundle_cases::yaml(&files, CSV);
            let pod = &csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"];
            let account = pod["spec"]["serviceAccountName"].as_str().unwrap();
            let yaml = yaml.replace("name: widgets", &format!("name: {account}"));
            files.insert(format!("manifests/{name}"), yaml.into_bytes());
        }
        let findings = validate_files(&files);
        let ours: Vec<_> = findings.iter().filter(|f| f.rule == case.rule).collect();
        if ours.is_empty() || ours.iter().any(|f| f.severity != Severity::Warning) {
            failures.push(format!("{}: {ours:#?}", case.rule));
        }
    }
    assert!(
        failures.is_empty(),
        "not warned about:\n{}",
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bundle_consumers_olm_v0_installs_each_case_olmpack_only_warns_about() {
    use olmpack_envtest::olm::Outcome;
    let cases = accepted_by_olm();
    let installs: Vec<OlmInstall> = cases
        .iter()
        .map(|c| OlmInstall {
            name: c.rule,
            rule: c.rule,
            change: c.change,
            extra: c.extra,
            says: &[],
        })
        .collect();
    let outcomes = olm_installs(&installs).await;
    let mut failures = Vec::new();
    for (case, outcome) in cases.iter().zip(outcomes) {
        if matches!(outcome, Outcome::Succeeded { .. }) {
            eprintln!("OLM v0 installs {}", case.rule);
        } else {
            failures.push(format!("{}: {outcome:?}", case.rule));
        }
    }
    assert!(
        failures.is_empty(),
        "OLM v0 did not install:\n{}",
        failures.join("\n")
    );
}

/// operator-sdk v1.42's manager reads its metrics certificate from a flag's path with no
/// volume behind it: a warning names the container, the flag and the path; the same flag at
/// a mounted path says nothing.
#[test]
fn bundle_consumers_a_certificate_flag_under_no_volume_is_a_warning() {
    let with_arg = |arg: &'static str| {
        let mut files = example_bundle();
        edit(&mut files, CSV, |c| {
            let container = &mut first_deployment(c)["spec"]["template"]["spec"]["containers"][0];
            let args = container["args"].as_array().cloned().unwrap_or_default();
            let mut args = args;
            args.push(json!(arg));
            container["args"] = json!(args);
            container["volumeMounts"] =
                json!([{"name": "metrics-certs", "mountPath": "/tmp/metrics"}]);
            let pod = &mut first_deployment(c)["spec"]["template"]["spec"];
            pod["volumes"] = json!([{"name": "metrics-certs", "emptyDir": {}}]);
        });
        let findings = validate_files(&files);
        findings
            .into_iter()
            .filter(|f| f.rule == "csv/unmounted-path")
            .collect::<Vec<_>>()
    };
    let found = with_arg("--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].severity, Severity::Warning);
    assert_eq!(
        found[0].message,
        "container manager of deployment guestbook-controller is told --metrics-cert-path /tmp/k8s-metrics-server/metrics-certs but no volume is mounted there; unless the image holds that file the process cannot open it and the pod crash-loops"
    );
    assert!(
        found[0].field.as_deref().is_some_and(|f| f.starts_with(
            "spec.install.spec.deployments[0].spec.template.spec.containers[0].args["
        )),
        "{:?}",
        found[0].field
    );
    assert!(with_arg("--metrics-cert-path=/tmp/metrics/certs").is_empty());
}
