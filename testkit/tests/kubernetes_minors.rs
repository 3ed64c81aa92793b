//! The test environment on each Kubernetes minor `tools.toml` pins: the same CRD is served
//! differently by the default minor, Kubernetes 1.35 (OpenShift 4.22's) and Kubernetes 1.27
//! (OpenShift 4.14's), in the apiserver's own words. Fails if every minor ran the default's
//! apiserver.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use olmpack_envtest::binaries::KubeMinor;
use olmpack_envtest::control_plane::{TestEnv, TestEnvOptions};
use serde_json::json;

/// Kubernetes 1.27, the minor OpenShift 4.14 ships.
const OPENSHIFT_4_14: u64 = 27;

/// Kubernetes 1.35, the minor OpenShift 4.22 ships.
const OPENSHIFT_4_22: u64 = 35;

/// A CRD whose one field is validated by `rule` (a CEL expression on `self.size`), with
/// `extra` merged into that validation rule.
fn crd(rule: &str, extra: serde_json::Value) -> CustomResourceDefinition {
    let mut validation = json!({"rule": rule, "message": "size must be a quantity"});
    if let (Some(v), Some(e)) = (validation.as_object_mut(), extra.as_object()) {
        v.extend(e.clone());
    }
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.minors.olmpack.dev"},
        "spec": {
            "group": "minors.olmpack.dev",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {
                        "type": "object",
                        "properties": {"size": {"type": "string", "maxLength": 64}},
                        "x-kubernetes-validations": [validation],
                    }},
                }},
            }],
        },
    }))
    .expect("the CRD fixture is valid")
}

/// The control plane of `minor`, or `None` (NOT RUN said) when its tools are missing.
async fn env_of(minor: KubeMinor, what: &str) -> Option<TestEnv> {
    if !olmpack_testkit::tools::require_kubernetes(minor, what) {
        return None;
    }
    let env = TestEnv::start_with(TestEnvOptions {
        kubernetes: Some(minor),
        ..TestEnvOptions::default()
    })
    .await
    .unwrap_or_else(|e| panic!("Kubernetes {minor}'s control plane starts: {e:?}"));
    Some(env)
}

/// Creates `crd`; the apiserver's refusal message when it refuses, else the stored CRD's
/// validation rule as read back.
async fn create(
    env: &TestEnv,
    crd: &CustomResourceDefinition,
) -> Result<serde_json::Value, String> {
    let api: Api<CustomResourceDefinition> = Api::all(env.client());
    match api.create(&PostParams::default(), crd).await {
        Ok(_) => {
            let stored = api
                .get("widgets.minors.olmpack.dev")
                .await
                .expect("the CRD reads back");
            let stored = serde_json::to_value(stored).expect("a CRD is JSON");
            Ok(stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                ["x-kubernetes-validations"][0]
                .clone())
        }
        Err(kube::Error::Api(status)) => Err(status.message),
        Err(other) => panic!("creating the CRD failed without the apiserver's answer: {other}"),
    }
}

fn minors(what: &str) -> Option<(KubeMinor, KubeMinor)> {
    let old = KubeMinor::of(OPENSHIFT_4_14)
        .unwrap_or_else(|| panic!("tools.toml pins Kubernetes 1.{OPENSHIFT_4_14} ({what})"));
    Some((KubeMinor::default(), old))
}

#[tokio::test]
async fn a_cel_function_1_28_added_is_served_by_the_default_minor_and_refused_by_1_27() {
    let what = "a CEL rule calling isQuantity on two minors";
    let (default, old) = minors(what).expect("both minors are pinned");
    let crd = crd("isQuantity(self.size)", json!({}));
    if let Some(env) = env_of(default, what).await {
        let stored = create(&env, &crd).await;
        assert!(
            stored.is_ok(),
            "Kubernetes {default} takes isQuantity: {stored:?}"
        );
    }
    if let Some(env) = env_of(old, what).await {
        assert_eq!(env.kubernetes(), old);
        let refused = create(&env, &crd)
            .await
            .expect_err("Kubernetes 1.27 refuses isQuantity");
        eprintln!("Kubernetes {old} says: {refused}");
        assert!(
            refused.contains("undeclared reference to 'isQuantity'"),
            "Kubernetes {old} refuses isQuantity in its own words: {refused}"
        );
    }
}

#[tokio::test]
async fn optional_old_self_is_kept_by_the_default_minor_and_dropped_by_1_27() {
    let what = "a CEL rule with optionalOldSelf on two minors";
    let (default, old) = minors(what).expect("both minors are pinned");
    let crd = crd(
        "!oldSelf.hasValue() || self.size == oldSelf.value().size",
        json!({"optionalOldSelf": true}),
    );
    if let Some(env) = env_of(default, what).await {
        let stored = create(&env, &crd)
            .await
            .expect("the default minor takes the rule");
        assert_eq!(stored["optionalOldSelf"], json!(true), "{stored}");
    }
    if let Some(env) = env_of(old, what).await {
        let answer = create(&env, &crd).await;
        eprintln!("Kubernetes {old} answers: {answer:?}");
        // 1.27 drops the field it does not know, so `oldSelf` is the old object, not an
        // optional: the rule does not compile.
        let refused = answer.expect_err("Kubernetes 1.27 does not know optionalOldSelf");
        assert!(
            refused.contains("undeclared reference to 'hasValue'"),
            "{refused}"
        );
    }
}

#[tokio::test]
async fn the_1_27_control_plane_runs_its_controller_manager() {
    let what = "Kubernetes 1.27's kube-controller-manager";
    let (_, old) = minors(what).expect("both minors are pinned");
    if !olmpack_testkit::tools::require_kubernetes(old, what) {
        return;
    }
    let env = TestEnv::start_with(TestEnvOptions {
        kubernetes: Some(old),
        controller_manager: true,
        ..TestEnvOptions::default()
    })
    .await
    .unwrap_or_else(|e| panic!("Kubernetes {old} with its controller manager starts: {e:?}"));
    let version = env
        .client()
        .apiserver_version()
        .await
        .expect("the apiserver says its version");
    assert_eq!(version.git_version, old.version());
}

/// CEL's format library (`format.dns1123Label()`), which OLM v1's own CRDs use: a new CRD
/// may call it from Kubernetes 1.32 on (the library came with 1.31, and a new expression is
/// compiled at the previous minor's compatibility version). 1.35 takes it, 1.27 refuses it —
/// which is why `upgrade olm --olm v1` refuses minors before 1.32.
#[tokio::test]
async fn the_format_library_olm_v1s_crds_use_is_served_by_1_35_and_refused_by_1_27() {
    let what = "a CEL rule calling format.dns1123Label on two minors";
    let newer = KubeMinor::of(OPENSHIFT_4_22)
        .unwrap_or_else(|| panic!("tools.toml pins Kubernetes 1.{OPENSHIFT_4_22} ({what})"));
    let (_, old) = minors(what).expect("both minors are pinned");
    let rule = "!format.dns1123Label().validate(self.size).hasValue()";
    match olmpack_envtest::binaries::ToolData::OlmV1ExperimentalCrds.path() {
        Err(e) => eprintln!("NOT RUN: {what}: that OLM v1's CRDs call it is not checked: {e}"),
        Ok(dir) => {
            let text: String = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
                .collect();
            assert!(
                text.contains("!format.dns1123Label().validate(self).hasValue()"),
                "OLM v1's CRDs ({}) call the format library",
                dir.display()
            );
        }
    }
    let crd = crd(rule, json!({}));
    if let Some(env) = env_of(newer, what).await {
        assert_eq!(env.kubernetes(), newer);
        let stored = create(&env, &crd).await;
        assert!(
            stored.is_ok(),
            "Kubernetes {newer} takes format: {stored:?}"
        );
    }
    if let Some(env) = env_of(old, what).await {
        let refused = create(&env, &crd)
            .await
            .expect_err("Kubernetes 1.27 refuses format");
        assert!(
            refused.contains("undeclared reference to 'format'"),
            "Kubernetes {old} refuses format in its own words: {refused}"
        );
    }
}
