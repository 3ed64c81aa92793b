//! operator-sdk output as `generate` input: a bundle's `manifests/` and `kustomize build
//! config/manifests` output (fixtures in `fixtures/import/`), with a plan that sets only the
//! package and the release; and the input errors a CSV in the manifests can cause.

use std::path::{Path, PathBuf};

use olmpack::bundle::generate::{GenerateOptions, Generated, generate};
use olmpack::bundle::inputs::Sourced;
use olmpack::bundle::manifests::{ImportChoices, classify};
use olmpack_model::plan::ErrorOrDrop;
use olmpack_model::report::{Finding, Severity};
use serde_json::{Value, json};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

/// The CSV section of a plan that leaves the CSV metadata unset (empty strings are unset).
const UNSET: &str = "displayName: \"\", description: \"\", provider: {name: \"\"}";

/// A plan next to `dir`'s manifests with `csv` as its CSV section.
fn generate_from(dir: &Path, manifests: &str, csv: &str) -> Generated {
    let text = format!(
        "package: memcached-operator\ndefaultChannel: alpha\nchannels: [alpha]\n\
         csv: {{{csv}}}\n\
         releases:\n- {{version: 0.0.1, manifests: {manifests}}}\n"
    );
    let plan = olmpack_model::plan::parse(&dir.join("olmpack.yaml"), &text).unwrap();
    match generate(&plan, &GenerateOptions::default()) {
        Ok(generated) => generated,
        Err(olmpack::bundle::generate::GenerateError::Invalid(found)) => {
            panic!("generate refused: {found:#?}")
        }
        Err(e) => panic!("{e}"),
    }
}

fn generated_csv(generated: &Generated) -> Value {
    let (_, bytes) = generated
        .tree
        .iter()
        .find(|(path, _)| {
            path.to_string_lossy()
                .ends_with(".clusterserviceversion.yaml")
        })
        .expect("a CSV");
    olmpack_model::yaml::from_str(std::str::from_utf8(bytes).unwrap()).unwrap()
}

fn findings(generated: &Generated) -> Vec<&Finding> {
    generated.reports.iter().flat_map(|r| &r.findings).collect()
}

fn infos_of<'a>(generated: &'a Generated, rule: &str) -> Vec<&'a str> {
    findings(generated)
        .into_iter()
        .filter(|f| f.rule == rule)
        .map(|f| f.message.as_str())
        .collect()
}

fn original_csv() -> Value {
    let text = std::fs::read_to_string(fixture(
        "sdk-bundle/manifests/memcached-operator.clusterserviceversion.yaml",
    ))
    .unwrap();
    olmpack_model::yaml::from_str(&text).unwrap()
}

#[test]
fn import_operator_sdk_bundle_keeps_the_install_strategy_and_metadata() {
    let generated = generate_from(&fixture("sdk-bundle"), "manifests", UNSET);
    let csv = generated_csv(&generated);
    let original = original_csv();
    let strategy = |v: &Value, key: &str| v["spec"]["install"]["spec"][key].clone();
    assert_eq!(
        strategy(&csv, "deployments")[0]["spec"],
        strategy(&original, "deployments")[0]["spec"]
    );
    assert_eq!(
        strategy(&csv, "deployments")[0]["name"],
        "memcached-operator-controller-manager"
    );
    for key in ["permissions", "clusterPermissions"] {
        assert_eq!(strategy(&csv, key), strategy(&original, key), "{key}");
    }
    assert_eq!(
        csv["spec"]["webhookdefinitions"],
        original["spec"]["webhookdefinitions"]
    );
    assert_eq!(
        csv["spec"]["installModes"],
        original["spec"]["installModes"]
    );
    let owned = &csv["spec"]["customresourcedefinitions"]["owned"][0];
    let want = &original["spec"]["customresourcedefinitions"]["owned"][0];
    for key in [
        "name",
        "version",
        "kind",
        "displayName",
        "description",
        "specDescriptors",
        "statusDescriptors",
    ] {
        assert_eq!(owned[key], want[key], "owned {key}");
    }
    assert_eq!(
        owned["resources"],
        json!([{"kind": "Deployment", "version": "v1"}])
    );
    for key in [
        "displayName",
        "description",
        "icon",
        "keywords",
        "links",
        "maintainers",
        "maturity",
        "provider",
    ] {
        assert_eq!(csv["spec"][key], original["spec"][key], "spec.{key}");
    }
    let annotations = &csv["metadata"]["annotations"];
    assert_eq!(annotations["categories"], "Database, Developer Tools");
    assert_eq!(annotations["capabilities"], "Basic Install");
    assert_eq!(
        annotations["repository"],
        original["metadata"]["annotations"]["repository"]
    );
    assert_eq!(
        annotations["operators.operatorframework.io/builder"],
        olmpack::bundle::csv::BUILDER
    );
    let examples: Value =
        serde_json::from_str(annotations["alm-examples"].as_str().unwrap()).unwrap();
    assert_eq!(examples[0]["metadata"]["name"], "memcached-sample");
    // What OLM creates from the CSV is not shipped; the other objects are.
    let files: Vec<String> = generated
        .tree
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    assert!(files.iter().any(|f| f.contains("configmap")), "{files:?}");
    // The bundle's own binding (of a role OLM does not ship) stays an object, as OLM creates it.
    assert!(
        files.iter().any(|f| f.contains("auth-delegator")),
        "{files:?}"
    );
    assert!(
        files.iter().any(|f| f.contains("metrics-service")),
        "{files:?}"
    );
    assert!(
        !files.iter().any(|f| f.contains("webhook-service")),
        "{files:?}"
    );
    let taken = infos_of(&generated, "import/csv-metadata");
    for group in [
        "displayName:",
        "description:",
        "icon:",
        "keywords:",
        "maintainers:",
        "provider:",
        "links:",
        "maturity:",
        "capabilities:",
        "categories:",
        "installModes:",
        "annotations:",
        "owned CRD descriptions:",
    ] {
        assert!(
            taken.iter().any(|m| m.starts_with(group)),
            "no info for {group} in {taken:#?}"
        );
    }
    assert!(
        findings(&generated)
            .iter()
            .all(|f| f.severity != Severity::Error)
    );
    let metadata = infos_of(&generated, "import/bundle-metadata");
    assert_eq!(
        metadata,
        [
            "the bundle's metadata is not read beyond its package name: channels and labels come from the plan"
        ]
    );
}

#[test]
fn import_the_plan_wins_over_the_csv() {
    let generated = generate_from(
        &fixture("sdk-bundle"),
        "manifests",
        "displayName: Mine, description: \"\", provider: {name: \"\"}, keywords: [own], installModes: [OwnNamespace, AllNamespaces]",
    );
    let csv = generated_csv(&generated);
    assert_eq!(csv["spec"]["displayName"], "Mine");
    assert_eq!(csv["spec"]["keywords"], json!(["own"]));
    let supported: Vec<&str> = csv["spec"]["installModes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["supported"] == json!(true))
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert_eq!(supported, ["OwnNamespace", "AllNamespaces"]);
    assert_eq!(
        csv["spec"]["description"],
        "Memcached operator, the long story."
    );
    let taken = infos_of(&generated, "import/csv-metadata");
    assert!(
        !taken.iter().any(|m| m.starts_with("displayName:")
            || m.starts_with("keywords:")
            || m.starts_with("installModes:")),
        "{taken:#?}"
    );
    assert!(
        taken.iter().any(|m| m.starts_with("description:")),
        "{taken:#?}"
    );
}

#[test]
fn import_kustomize_config_manifests_uses_the_objects_and_the_csv_base() {
    let generated = generate_from(&fixture("sdk-config"), ".", UNSET);
    let csv = generated_csv(&generated);
    let strategy = &csv["spec"]["install"]["spec"];
    assert_eq!(
        strategy["deployments"][0]["name"],
        "memcached-operator-controller-manager"
    );
    assert_eq!(
        strategy["permissions"][0]["rules"][0]["resources"],
        json!(["leases"])
    );
    assert_eq!(
        strategy["clusterPermissions"][0]["rules"][0]["resources"],
        json!(["memcacheds"])
    );
    let supported: Vec<&str> = csv["spec"]["installModes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["supported"] == json!(true))
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        supported,
        ["OwnNamespace", "SingleNamespace", "AllNamespaces"]
    );
    assert_eq!(csv["spec"]["displayName"], "Memcached Operator");
    assert!(
        csv["spec"].get("icon").is_none(),
        "an empty icon is not an icon"
    );
    let examples: Value = serde_json::from_str(
        csv["metadata"]["annotations"]["alm-examples"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(examples[0]["kind"], "Memcached");
    // The scorecard Configuration goes where operator-sdk puts it, and into the image.
    let scorecard: Vec<&Finding> = findings(&generated)
        .into_iter()
        .filter(|f| f.rule.starts_with("input/scorecard"))
        .collect();
    assert_eq!(scorecard.len(), 1, "{:#?}", findings(&generated));
    assert_eq!(scorecard[0].rule, "input/scorecard-kept");
    assert_eq!(scorecard[0].severity, Severity::Info);
    assert_eq!(scorecard[0].object.as_deref(), Some("Configuration/config"));
    let config = generated
        .tree
        .get(Path::new("0.0.1/tests/scorecard/config.yaml"))
        .expect("tests/scorecard/config.yaml");
    let config: Value =
        olmpack_model::yaml::from_str(std::str::from_utf8(config).unwrap()).unwrap();
    assert_eq!(config["kind"], "Configuration");
    assert_eq!(
        config["stages"][0]["tests"][0]["labels"]["test"],
        "basic-check-spec-test"
    );
    let dockerfile = generated
        .tree
        .get(Path::new("0.0.1/bundle.Dockerfile"))
        .unwrap();
    assert!(
        String::from_utf8_lossy(dockerfile)
            .ends_with("COPY manifests /manifests/\nCOPY metadata /metadata/\nCOPY tests/scorecard /tests/scorecard/\n")
    );
    let files: Vec<String> = generated
        .tree
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    assert!(
        !files.iter().any(|f| f.contains("configuration")),
        "{files:?}"
    );
    assert_eq!(infos_of(&generated, "input/namespace-dropped").len(), 1);
}

fn sourced(yaml: &str) -> Vec<Sourced> {
    olmpack_model::yaml::from_multi_str(yaml)
        .unwrap()
        .into_iter()
        .enumerate()
        .map(|(index, value)| Sourced {
            file: PathBuf::from("m.yaml"),
            index,
            value,
        })
        .collect()
}

/// `rule: file: object: field: message` of every problem.
fn problems_of(yaml: &str) -> Vec<String> {
    let mut problems = Vec::new();
    classify(sourced(yaml), ImportChoices::default(), &mut problems);
    problems
        .iter()
        .map(|f| {
            format!(
                "{} {}: {}: {}: {}",
                f.rule,
                f.file
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                f.object.as_deref().unwrap_or(""),
                f.field.as_deref().unwrap_or(""),
                f.message
            )
        })
        .collect()
}

const CSV_WITH_DEPLOYMENT: &str = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: op.v1.0.0}\nspec:\n  install:\n    strategy: deployment\n    spec:\n      deployments:\n      - name: op\n        spec: {template: {metadata: {labels: {app: op}}, spec: {containers: [{name: m, image: i}]}}}\n";

#[test]
fn import_errors_name_file_object_and_field() {
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: other}\nspec: {}\n";
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "two CSVs",
            format!(
                "{CSV_WITH_DEPLOYMENT}---\napiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {{name: op.v2.0.0}}\n"
            ),
            vec![
                "input/csv-multiple m.yaml (document 2): ClusterServiceVersion/op.v2.0.0: kind: a second ClusterServiceVersion; the manifests may hold one, and ClusterServiceVersion/op.v1.0.0 is in m.yaml (document 1)",
            ],
        ),
        (
            "strategy not deployment",
            CSV_WITH_DEPLOYMENT.replace("strategy: deployment", "strategy: helm"),
            vec![
                "input/csv-strategy m.yaml (document 1): ClusterServiceVersion/op.v1.0.0: spec.install.strategy: install strategy \"helm\" is not `deployment`, the only one OLM v0 installs",
            ],
        ),
        (
            "deployments twice",
            format!("{CSV_WITH_DEPLOYMENT}---\n{deployment}"),
            vec![
                "input/csv-conflict m.yaml (document 1): ClusterServiceVersion/op.v1.0.0: spec.install.spec.deployments: the CSV's install strategy defines deployments and the manifests also hold Deployment/other (m.yaml (document 2)): which one is the operator?",
            ],
        ),
        (
            "webhooks twice",
            format!(
                "{CSV_WITH_DEPLOYMENT}  webhookdefinitions:\n  - {{type: ValidatingAdmissionWebhook, deploymentName: op, generateName: v.x.io}}\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {{name: vwc}}\nwebhooks: []\n"
            ),
            vec![
                "input/csv-conflict m.yaml (document 1): ClusterServiceVersion/op.v1.0.0: spec.webhookdefinitions: the CSV defines webhooks and the manifests also hold ValidatingWebhookConfiguration/vwc (m.yaml (document 2)): which ones does the operator serve?",
            ],
        ),
        (
            "unknown webhook type",
            format!(
                "{CSV_WITH_DEPLOYMENT}  webhookdefinitions:\n  - {{type: AuditWebhook, deploymentName: op, generateName: v.x.io}}\n"
            ),
            vec![
                "input/csv-webhook-type m.yaml (document 1): ClusterServiceVersion/op.v1.0.0: spec.webhookdefinitions[0].type: webhook type \"AuditWebhook\" is not one OLM knows",
            ],
        ),
        (
            "unnamed deployment",
            CSV_WITH_DEPLOYMENT.replace("- name: op\n", "- name: \"\"\n"),
            vec![
                "input/missing-field m.yaml (document 1): ClusterServiceVersion/op.v1.0.0: spec.install.spec.deployments[0].name: a deployment needs a name",
            ],
        ),
    ];
    for (name, yaml, want) in cases {
        assert_eq!(problems_of(&yaml), want, "{name}");
    }
}

#[test]
fn import_a_csv_base_with_an_empty_strategy_is_no_conflict() {
    let yaml = format!(
        "{}---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: op}}\nspec: {{}}\n",
        CSV_WITH_DEPLOYMENT.replace(
            "    strategy: deployment\n    spec:\n      deployments:\n      - name: op\n        spec: {template: {metadata: {labels: {app: op}}, spec: {containers: [{name: m, image: i}]}}}\n",
            "    strategy: \"\"\n    spec: {deployments: null}\n"
        )
    );
    assert_eq!(problems_of(&yaml), Vec::<String>::new());
    let mut problems = Vec::new();
    let inputs = classify(sourced(&yaml), ImportChoices::default(), &mut problems);
    assert_eq!(inputs.deployments.len(), 1);
    assert!(inputs.imported.is_some());
}

#[test]
fn import_a_field_of_the_wrong_type_is_read_as_absent_and_said_so() {
    let yaml = CSV_WITH_DEPLOYMENT.replace(
        "spec:\n  install:",
        "spec:\n  installModes: [{type: OwnNamespace, supported: \"yes\"}, {type: AllNamespaces, supported: true}]\n  install:",
    );
    let mut problems = Vec::new();
    let inputs = classify(sourced(&yaml), ImportChoices::default(), &mut problems);
    assert_eq!(problems, Vec::<Finding>::new());
    let warned: Vec<String> = (inputs.notes.iter())
        .filter(|f| f.rule == "import/csv-field-type")
        .map(|f| format!("{}: {}", f.field.as_deref().unwrap_or(""), f.message))
        .collect();
    assert_eq!(
        warned,
        [
            "spec.installModes[0].supported: OLM reads a boolean here, found string \"yes\" (OLM v0's decoder refuses it too); olmpack reads the field as absent"
        ]
    );
    // The rest of the CSV is read: the deployment, and the install mode given as OLM reads it.
    assert_eq!(inputs.deployments.len(), 1);
    let modes = inputs.imported.unwrap().metadata.install_modes.unwrap();
    assert_eq!(modes, [olmpack_model::plan::InstallModeType::AllNamespaces]);
}

/// A plan for `helm template` output (its CSV metadata set, as a chart has none).
fn generate_helm(manifests_dir: &Path) -> Result<Generated, Vec<Finding>> {
    let text = "package: memcached-operator\ndefaultChannel: alpha\nchannels: [alpha]\n\
         csv: {displayName: Memcached, description: d, provider: {name: Example}}\n\
         releases:\n- {version: 0.0.1, manifests: .}\n";
    let plan = olmpack_model::plan::parse(&manifests_dir.join("olmpack.yaml"), text).unwrap();
    match generate(&plan, &GenerateOptions::default()) {
        Ok(generated) => Ok(generated),
        Err(olmpack::bundle::generate::GenerateError::Invalid(found)) => Err(found),
        Err(e) => panic!("{e}"),
    }
}

/// [`generate_helm`] of `rendered` as the only manifest file (`rendered.yaml`).
fn generate_rendered(rendered: &str) -> Result<Generated, Vec<Finding>> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rendered.yaml"), rendered).unwrap();
    generate_helm(dir.path())
}

#[test]
fn import_helm_template_output() {
    let generated = generate_helm(&fixture("helm")).unwrap_or_else(|f| panic!("{f:#?}"));
    let csv = generated_csv(&generated);
    let deployment = &csv["spec"]["install"]["spec"]["deployments"][0];
    assert_eq!(deployment["name"], "memcached-operator");
    // Helm's labels are kept as they are.
    assert_eq!(
        deployment["label"]["helm.sh/chart"],
        "memcached-operator-0.1.0"
    );
    assert_eq!(deployment["label"]["app.kubernetes.io/managed-by"], "Helm");
    // The chart's certificate volume gives way to OLM's.
    assert!(
        deployment["spec"]["template"]["spec"]
            .get("volumes")
            .is_none(),
        "{deployment:#}"
    );
    let hook = &csv["spec"]["webhookdefinitions"][0];
    assert_eq!(hook["generateName"], "vmemcached.kb.io");
    assert_eq!(hook["targetPort"], 9443);
    assert_eq!(
        csv["spec"]["install"]["spec"]["clusterPermissions"][0]["serviceAccountName"],
        "memcached-operator"
    );
    let files: Vec<String> = generated
        .tree
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    assert!(
        !files
            .iter()
            .any(|f| f.contains("secret") || f.contains("pod")),
        "{files:?}"
    );
    let all = findings(&generated);
    let secret = all
        .iter()
        .find(|f| f.rule == "input/webhook-cert-secret-dropped")
        .expect("the webhook certificate Secret is dropped with a finding");
    assert_eq!(secret.severity, Severity::Info);
    assert_eq!(
        secret.object.as_deref(),
        Some("Secret/memcached-operator-webhook-cert")
    );
    let test_hook = all
        .iter()
        .find(|f| f.rule == "input/helm-hook-dropped")
        .expect("the test hook is dropped with a finding");
    assert_eq!(test_hook.severity, Severity::Warning);
    assert_eq!(
        test_hook.object.as_deref(),
        Some("Pod/memcached-operator-test-connection")
    );
    assert_eq!(
        test_hook.message,
        "a Helm test hook is left out: only `helm test` runs it"
    );
    assert!(
        all.iter().all(|f| f.severity != Severity::Error),
        "{all:#?}"
    );
}

/// A warning the webhook definitions raise (kueue's chart sets namespaceSelectors) is reported
/// with the bundle; it once made generate build no bundle at all and still exit 0.
#[test]
fn import_helm_webhook_namespace_selector_is_a_warning_with_the_bundle() {
    let rendered = std::fs::read_to_string(fixture("helm/rendered.yaml")).unwrap();
    let selector = "  sideEffects: None\n  namespaceSelector: {matchLabels: {team: a}}\n";
    let with_selector = rendered.replacen("  sideEffects: None\n", selector, 1);
    assert_ne!(with_selector, rendered, "the fixture has the webhook");
    let generated = generate_rendered(&with_selector).unwrap_or_else(|f| panic!("{f:#?}"));
    assert_eq!(generated.reports.len(), 1);
    let csv = generated_csv(&generated);
    assert_eq!(
        csv["spec"]["webhookdefinitions"][0]["generateName"],
        "vmemcached.kb.io"
    );
    let warning = findings(&generated)
        .into_iter()
        .find(|f| f.rule == "input/webhook-namespace-selector")
        .expect("the namespaceSelector warning is reported");
    assert_eq!(warning.severity, Severity::Warning);
    assert_eq!(
        warning.message,
        "OLM replaces namespaceSelector with one for the OperatorGroup's namespaces"
    );
    assert_eq!(
        warning.field.as_deref(),
        Some("webhooks[0].namespaceSelector")
    );
}

/// An aggregated API (Kueue's chart registers one): the APIService is refused with what OLM
/// does instead, and the kube-system RoleBinding that goes with it says why it cannot work.
#[test]
fn import_helm_aggregated_api_objects_are_refused_with_what_olm_does_instead() {
    let rendered = std::fs::read_to_string(fixture("helm/rendered.yaml")).unwrap();
    let api_service = "---\napiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1beta1.visibility.example.com}\nspec: {group: visibility.example.com, version: v1beta1, groupPriorityMinimum: 100, versionPriority: 100, service: {name: memcached-operator-webhook, namespace: default}}\n";
    let mut problems = Vec::new();
    classify(
        sourced(&format!("{rendered}{api_service}")),
        ImportChoices::default(),
        &mut problems,
    );
    let [refused] = problems.as_slice() else {
        panic!("{problems:#?}")
    };
    assert_eq!(
        (refused.rule.as_str(), refused.object.as_deref()),
        (
            "input/unsupported-kind",
            Some("APIService/v1beta1.visibility.example.com")
        )
    );
    assert_eq!(
        refused.hint.as_deref(),
        Some(
            "OLM creates an aggregated API's APIService itself, with a serving certificate it mounts into the deployment, from the CSV's spec.apiservicedefinitions.owned, which olmpack does not write from an APIService; leave the APIService out (with the RoleBinding to extension-apiserver-authentication-reader in kube-system, which OLM creates for such an API too), or serve the API from a CRD"
        )
    );
    let binding = "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: memcached-auth-reader, namespace: kube-system}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}\nsubjects: [{kind: ServiceAccount, name: memcached-operator, namespace: default}]\n";
    let found = generate_rendered(&format!("{rendered}{binding}"))
        .expect_err("the binding cannot work under OLM");
    let errors: Vec<String> = found
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| {
            format!(
                "{} {}: {}",
                f.rule,
                f.object.as_deref().unwrap_or(""),
                f.message
            )
        })
        .collect();
    assert_eq!(
        errors,
        [
            "input/dangling-role-ref RoleBinding/memcached-auth-reader: refers to Role extension-apiserver-authentication-reader, which is not in the manifests"
        ]
    );
    let hint = found
        .iter()
        .find(|f| f.rule == "input/dangling-role-ref")
        .and_then(|f| f.hint.as_deref());
    assert_eq!(
        hint,
        Some(
            "the binding is for a Role in kube-system, but OLM creates a bundle's objects in the namespace the operator is installed into, where there is no Role extension-apiserver-authentication-reader; OLM binds extension-apiserver-authentication-reader itself for an API in the CSV's spec.apiservicedefinitions.owned"
        )
    );
}

/// A binding to a ClusterRole every cluster has (Kyverno's chart binds `view`): the error says
/// why the CSV cannot carry it and what to ship instead.
#[test]
fn import_helm_binding_to_a_built_in_cluster_role_says_what_to_ship() {
    let rendered = std::fs::read_to_string(fixture("helm/rendered.yaml")).unwrap();
    let binding = "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: memcached-view}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\nsubjects: [{kind: ServiceAccount, name: memcached-operator, namespace: default}]\n";
    let found = generate_rendered(&format!("{rendered}{binding}"))
        .expect_err("the CSV cannot carry the binding");
    let refused: Vec<(&str, Option<&str>)> = found
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| (f.message.as_str(), f.hint.as_deref()))
        .collect();
    assert_eq!(
        refused,
        [(
            "refers to ClusterRole view, which is not in the manifests",
            Some(
                "view is a ClusterRole every cluster has, with rules that differ between clusters; OLM grants the CSV's service accounts only the rules the CSV lists, so put a ClusterRole with the rules the operator needs in the manifests and bind that"
            )
        )]
    );
}

#[test]
fn import_helm_hooks_and_certificate_mounts() {
    let rendered = std::fs::read_to_string(fixture("helm/rendered.yaml")).unwrap();
    let job = "---\n# Source: op/templates/migrate.yaml\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install,pre-upgrade\n    helm.sh/hook-weight: \"-5\"\nspec: {template: {spec: {containers: [{name: m, image: i}], restartPolicy: Never}}}\n";
    let cleanup = "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cleanup\n  annotations: {helm.sh/hook: pre-delete}\n";
    let elsewhere = rendered.replace(
        "mountPath: /tmp/k8s-webhook-server/serving-certs",
        "mountPath: /certs",
    );
    // `document N` counts the non-empty documents: the fixture's comment-only and empty
    // documents are not objects.
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "install hook",
            format!("{rendered}{job}"),
            vec![
                "input/helm-hook m.yaml (document 10): Job/migrate: metadata.annotations.helm.sh/hook: a Helm pre-install hook: OLM never runs Helm hooks, so this work would never happen",
            ],
        ),
        ("delete hook", format!("{rendered}{cleanup}"), vec![]),
        ("certificate mounted elsewhere", elsewhere, vec![]),
    ];
    for (name, yaml, want) in cases {
        assert_eq!(problems_of(&yaml), want, "{name}");
    }
    let mut problems = Vec::new();
    let inputs = classify(
        sourced(&format!("{rendered}{cleanup}")),
        ImportChoices::default(),
        &mut problems,
    );
    let dropped: Vec<&str> = inputs
        .notes
        .iter()
        .filter(|f| f.rule == "input/helm-hook-dropped")
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(
        dropped,
        [
            "a Helm test hook is left out: only `helm test` runs it",
            "a Helm pre-delete hook is left out: OLM never runs Helm hooks"
        ]
    );
    // `helmHooks: drop`: the install hook is left out with a warning, nothing is refused.
    let mut refused = Vec::new();
    let drop = ImportChoices {
        helm_hooks: ErrorOrDrop::Drop,
        ..ImportChoices::default()
    };
    let inputs = classify(sourced(&format!("{rendered}{job}")), drop, &mut refused);
    assert_eq!(refused, Vec::<Finding>::new());
    let dropped: Vec<(&str, Severity)> = inputs
        .notes
        .iter()
        .filter(|f| f.rule == "input/helm-hook-dropped")
        .map(|f| (f.message.as_str(), f.severity))
        .collect();
    assert_eq!(
        dropped,
        [
            (
                "a Helm test hook is left out: only `helm test` runs it",
                Severity::Warning
            ),
            (
                "a Helm pre-install hook is left out (helmHooks: drop): OLM never runs Helm hooks, so the operator must do this work itself",
                Severity::Warning
            ),
        ]
    );
    let elsewhere = rendered.replace(
        "mountPath: /tmp/k8s-webhook-server/serving-certs",
        "mountPath: /certs",
    );
    let inputs = classify(sourced(&elsewhere), ImportChoices::default(), &mut problems);
    let secret = inputs
        .notes
        .iter()
        .find(|f| f.rule == "input/webhook-cert-secret-dropped")
        .unwrap();
    assert_eq!(secret.severity, Severity::Warning);
    assert!(
        secret.message.contains("it is mounted at /certs"),
        "{}",
        secret.message
    );
    // The generated bundle then states the Secret as a prerequisite: the pod mounts a Secret
    // nothing creates, and starts once the user has created it.
    let generated = generate_rendered(&elsewhere).unwrap_or_else(|f| panic!("{f:#?}"));
    let prerequisite = generated
        .reports
        .iter()
        .flat_map(|r| &r.findings)
        .find(|f| f.rule == "csv/prerequisite")
        .expect("the missing Secret is reported");
    assert_eq!(prerequisite.severity, Severity::Warning);
    assert!(
        prerequisite
            .message
            .starts_with("prerequisite: create Secret "),
        "{}",
        prerequisite.message
    );
}
