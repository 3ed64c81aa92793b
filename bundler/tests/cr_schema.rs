//! Examples against their own CRDs: olmpack's static verdict on a custom resource (what
//! `bundle validate` and `generate` report as `csv/example-invalid`) equals the real
//! kube-apiserver's, on a table of one case per schema rule (word for word) and on real
//! examples: community-operators bundles' `alm-examples` with v1 CRDs, and kubebuilder's
//! released `project-v4` samples (v4.15.0's are `spec:` empty while its CRDs require
//! `spec`, the case that motivated the check).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use olmpack::bundle::load;
use olmpack::bundle::validate::examples::{Judged, judge};
use olmpack_envtest::binaries::Tool;
use olmpack_envtest::control_plane::TestEnv;
use serde_json::{Value, json};

const CASES: &str = include_str!("fixtures/cr_schema/cases.json");

fn tools_present(test: &str) -> bool {
    olmpack_testkit::tools::require(&[Tool::Etcd, Tool::KubeApiserver], test)
}

/// The apiserver's answer to creating `object` (server-side dry run): `Ok` when it would
/// create it, else its refusals as `FIELD: MESSAGE` (the Status's causes), sorted. A 404
/// right after a CRD is established is retried for a few seconds (discovery lags).
async fn create(
    client: &kube::Client,
    crd: &CustomResourceDefinition,
    object: &Value,
) -> Result<(), Vec<String>> {
    let version = object["apiVersion"].as_str().unwrap_or_default();
    let namespaced = crd.spec.scope == "Namespaced";
    let plural = &crd.spec.names.plural;
    let path = if namespaced {
        format!("/apis/{version}/namespaces/default/{plural}?dryRun=All")
    } else {
        format!("/apis/{version}/{plural}?dryRun=All")
    };
    let mut body = object.clone();
    if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("namespace");
    }
    let started = Instant::now();
    loop {
        let request = http::Request::post(&path)
            .header("content-type", "application/json")
            .body(kube::client::Body::from(serde_json::to_vec(&body).unwrap()))
            .unwrap();
        let response = client
            .send(request)
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let code = response.status();
        let bytes = response
            .into_body()
            .collect_bytes()
            .await
            .unwrap_or_default();
        if code.is_success() {
            return Ok(());
        }
        if code == http::StatusCode::NOT_FOUND && started.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        return Err(causes(&bytes));
    }
}

/// A refusal's causes as `FIELD: MESSAGE`, sorted (its message when it has none).
fn causes(body: &[u8]) -> Vec<String> {
    let status: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let mut out: Vec<String> = status["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let field = c["field"].as_str().unwrap_or("");
            format!("{field}: {}", c["message"].as_str().unwrap_or(""))
        })
        .collect();
    if out.is_empty() {
        out.push(
            status["message"]
                .as_str()
                .unwrap_or("(no message)")
                .to_owned(),
        );
    }
    out.sort();
    out
}

/// A namespaced CRD `case{i}s.cases.olmpack.dev` of one version `v1` with `schema`.
fn case_crd(i: usize, schema: &Value, status: bool) -> CustomResourceDefinition {
    let mut version = json!({
        "name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": schema},
    });
    if status {
        version["subresources"] = json!({"status": {}});
    }
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("case{i}s.cases.olmpack.dev")},
        "spec": {
            "group": "cases.olmpack.dev",
            "scope": "Namespaced",
            "names": {"plural": format!("case{i}s"), "singular": format!("case{i}"), "kind": format!("Case{i}"), "listKind": format!("Case{i}List")},
            "versions": [version],
        }
    }))
    .unwrap()
}

/// Static refusals as `FIELD: MESSAGE`, sorted, or `None` when the apiserver creates it.
fn static_refusals(object: &Value, crds: &[CustomResourceDefinition]) -> Option<Vec<String>> {
    match judge(object, crds) {
        Judged::Served { refusals, .. } if refusals.is_empty() => None,
        Judged::Served { refusals, .. } => {
            let mut out: Vec<String> = refusals.iter().map(|r| r.text()).collect();
            out.sort();
            Some(out)
        }
        Judged::NotServed(crd) => Some(vec![format!("not served by {crd}")]),
        Judged::NotDefined => panic!("no CRD defines {object}"),
    }
}

#[tokio::test]
async fn cr_schema_every_table_case_is_refused_by_the_apiserver_in_the_same_words() {
    if !tools_present("cr_schema table") {
        return;
    }
    let env = TestEnv::start().await.expect("test environment starts");
    let client = env.client();
    let cases: Vec<Value> = serde_json::from_str(CASES).unwrap();
    let mut differ = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let crd = case_crd(i, &case["schema"], case["statusSubresource"] == json!(true));
        env.install_crd(&crd)
            .await
            .expect("the case's CRD installs");
        let mut object = case["object"].clone();
        object["apiVersion"] = json!("cases.olmpack.dev/v1");
        object["kind"] = json!(format!("Case{i}"));
        object["metadata"] = json!({"name": "example"});
        let live = create(&client, &crd, &object).await.err();
        let statics = static_refusals(&object, std::slice::from_ref(&crd));
        let mut want: Vec<String> = serde_json::from_value(case["refusals"].clone()).unwrap();
        want.sort();
        let want = (!want.is_empty()).then_some(want);
        if live != statics || live != want {
            differ.push(format!(
                "{}:\n  live:   {live:?}\n  static: {statics:?}\n  table:  {want:?}",
                case["name"]
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// One source of examples: its CRDs and its examples (each with where it is from).
struct Source {
    name: String,
    crds: Vec<CustomResourceDefinition>,
    examples: Vec<(String, Value)>,
}

/// The CRD as the test installs it: `v1` as written, its conversion `None` (no webhook
/// runs here; validation is per version and does not involve conversion).
fn installable(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    crd.spec.conversion = None;
    crd.metadata.resource_version = None;
    crd
}

/// kubebuilder's released `project-v4` at `tag`: the CRDs of `dist/install.yaml` and the
/// samples of `config/samples/`.
fn kubebuilder_source(root: &Path, tag: &str) -> Source {
    let project = root.join(tag).join("project-v4");
    let install = std::fs::read_to_string(project.join("dist/install.yaml")).unwrap();
    let crds = olmpack_model::yaml::from_multi_str(&install)
        .unwrap()
        .into_iter()
        .filter(|d| d["kind"] == "CustomResourceDefinition")
        .map(|d| installable(serde_json::from_value(d).unwrap()))
        .collect();
    let mut examples = Vec::new();
    for file in olmpack_testkit::corpus::files(&project.join("config/samples"), &["yaml"]) {
        if file.ends_with("kustomization.yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for doc in olmpack_model::yaml::from_multi_str(&text).unwrap() {
            let name = file.file_name().unwrap().to_string_lossy();
            examples.push((format!("{tag} {name}"), doc));
        }
    }
    Source {
        name: format!("kubebuilder {tag}"),
        crds,
        examples,
    }
}

/// Bundles of the community-operators corpus whose CRDs are all apiextensions.k8s.io/v1
/// (one bundle per package: the last in name order), with their `alm-examples`, up to `limit`
/// examples in all.
fn community_sources(corpus: &Path, limit: usize) -> Vec<Source> {
    let mut newest = std::collections::BTreeMap::new();
    for (dir, bundle) in olmpack_testkit::corpus::version_dirs(corpus) {
        let package = dir.parent().and_then(Path::file_name).map(|n| n.to_owned());
        if bundle && let Some(package) = package {
            newest.insert(package, dir);
        }
    }
    let mut out = Vec::new();
    let mut count = 0;
    for dir in newest.into_values() {
        if count >= limit {
            break;
        }
        let Ok(loaded) = load::load_dir(&dir) else {
            continue;
        };
        let crds: Vec<_> = loaded.crds().collect();
        if crds.is_empty() || crds.iter().any(|c| c.is_v1beta1()) {
            continue;
        }
        let Ok(typed) = crds
            .iter()
            .map(|c| serde_json::from_value::<CustomResourceDefinition>(c.v1.clone().into_owned()))
            .collect::<Result<Vec<_>, _>>()
        else {
            continue;
        };
        let examples: Vec<Value> = loaded
            .csv()
            .and_then(|csv| csv.value["metadata"]["annotations"]["alm-examples"].as_str())
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default();
        let examples: Vec<(String, Value)> = examples
            .into_iter()
            .enumerate()
            .filter(|(_, e)| !matches!(judge(e, &typed), Judged::NotDefined))
            .map(|(i, e)| (format!("alm-examples[{i}]"), e))
            .collect();
        if examples.is_empty() {
            continue;
        }
        count += examples.len();
        let name = dir
            .strip_prefix(corpus)
            .unwrap_or(&dir)
            .display()
            .to_string();
        out.push(Source {
            name,
            crds: typed.into_iter().map(installable).collect(),
            examples,
        });
    }
    out
}

/// Every example of `source` created on the apiserver with its CRDs installed: the ones
/// where the static verdict differs, and how many were refused and created.
async fn compare(env: &TestEnv, source: &Source, tally: &mut Tally) {
    for crd in &source.crds {
        if let Err(e) = env.install_crd(crd).await {
            eprintln!(
                "{}: NOT COMPARED: CRD {} does not install: {e}",
                source.name,
                crd.metadata.name.as_deref().unwrap_or_default()
            );
            tally.skipped += source.examples.len();
            return;
        }
    }
    let client = env.client();
    for (at, example) in &source.examples {
        let judged = judge(example, &source.crds);
        if matches!(judged, Judged::Served { cel: true, .. }) {
            eprintln!(
                "{} {at}: not compared: its schema has CEL rules",
                source.name
            );
            tally.skipped += 1;
            continue;
        }
        let Some(crd) = source.crds.iter().find(|c| {
            Some(c.spec.group.as_str())
                == example["apiVersion"]
                    .as_str()
                    .and_then(|v| v.split_once('/'))
                    .map(|(g, _)| g)
                && Some(c.spec.names.kind.as_str()) == example["kind"].as_str()
        }) else {
            continue;
        };
        let live = create(&client, crd, example).await.err();
        let statics = static_refusals(example, &source.crds);
        if live.is_some() != statics.is_some() {
            tally.differ.push(format!(
                "{} {at}:\n  live:   {live:?}\n  static: {statics:?}",
                source.name
            ));
        }
        if live.is_some() {
            tally.refused.insert(format!("{} {at}", source.name));
        } else {
            tally.created += 1;
        }
    }
}

#[derive(Default)]
struct Tally {
    differ: Vec<String>,
    refused: BTreeSet<String>,
    created: usize,
    skipped: usize,
}

#[tokio::test]
async fn cr_schema_static_verdicts_equal_the_apiservers_on_real_examples() {
    let test = "cr_schema_static_verdicts_equal_the_apiservers_on_real_examples";
    if !tools_present(test) {
        return;
    }
    let Some(kubebuilder) =
        olmpack_testkit::corpus::require(olmpack_testkit::corpus::KUBEBUILDER_RELEASES, test)
    else {
        return;
    };
    let Some(community) =
        olmpack_testkit::corpus::require(olmpack_testkit::corpus::COMMUNITY_OPERATORS, test)
    else {
        return;
    };
    let mut sources = vec![
        kubebuilder_source(&kubebuilder, "v4.0.0"),
        kubebuilder_source(&kubebuilder, "v4.15.0"),
    ];
    sources.extend(community_sources(&community, 60));
    let env = TestEnv::start().await.expect("test environment starts");
    let mut tally = Tally::default();
    for source in &sources {
        compare(&env, source, &mut tally).await;
    }
    eprintln!(
        "{} sources: {} created, {} refused, {} not compared\nrefused: {:#?}",
        sources.len(),
        tally.created,
        tally.refused.len(),
        tally.skipped,
        tally.refused
    );
    assert!(
        tally.differ.is_empty(),
        "static and live differ:\n{}",
        tally.differ.join("\n")
    );
    // The motivating case: v4.15.0's samples are `spec:` empty, its CRDs require `spec`.
    assert!(
        tally
            .refused
            .contains("kubebuilder v4.15.0 v4.15.0 crew_v1_captain.yaml"),
        "{:#?}",
        tally.refused
    );
    assert!(
        tally.created >= 30,
        "only {} examples created",
        tally.created
    );
}

/// The motivating case through `olmpack generate`: kubebuilder v4.15.0's samples, unedited,
/// are `spec:` empty while its CRDs require `spec`. FirstMate's (v1 and v2) are refused in
/// kube-apiserver's words; Admiral's, Captain's and Sailor's are warnings, since the
/// release's defaulting webhooks cover those kinds and may fill `spec` in first.
#[test]
fn cr_schema_generate_refuses_kubebuilders_unedited_samples() {
    let test = "cr_schema_generate_refuses_kubebuilders_unedited_samples";
    let Some(releases) =
        olmpack_testkit::corpus::require(olmpack_testkit::corpus::KUBEBUILDER_RELEASES, test)
    else {
        return;
    };
    let project = releases.join("v4.15.0/project-v4");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("samples")).unwrap();
    std::fs::copy(
        project.join("dist/install.yaml"),
        dir.path().join("install.yaml"),
    )
    .unwrap();
    let mut plan = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/byo_release/olmpack.yaml"),
    )
    .unwrap();
    plan.push_str("releases:\n  - version: 0.2.0\n    manifests: install.yaml\n    samples:\n");
    for file in olmpack_testkit::corpus::files(&project.join("config/samples"), &["yaml"]) {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("crew_") {
            std::fs::copy(&file, dir.path().join("samples").join(&name)).unwrap();
            plan.push_str(&format!("      - samples/{name}\n"));
        }
    }
    std::fs::write(dir.path().join("olmpack.yaml"), plan).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .arg("generate")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error[")).collect();
    let csv = "0.2.0/manifests/project-v4.clusterserviceversion.yaml: ClusterServiceVersion/project-v4.v0.2.0";
    assert_eq!(
        errors,
        [
            format!(
                "error[csv/example-invalid] {csv}: metadata.annotations.alm-examples[2].spec: kube-apiserver refuses example 2 (crew.testproject.org/v1 FirstMate firstmate-sample): spec: Required value (refused by kube-apiserver)"
            ),
            format!(
                "error[csv/example-invalid] {csv}: metadata.annotations.alm-examples[4].spec: kube-apiserver refuses example 4 (crew.testproject.org/v2 FirstMate firstmate-sample): spec: Required value (refused by kube-apiserver)"
            ),
        ],
        "{stderr}"
    );
    assert!(stderr.contains("olmpack: nothing written"), "{stderr}");
}
