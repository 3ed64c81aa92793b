//! Rendered manifests: snapshots, determinism, and the release table's invariants as they
//! show in the YAML.

use webapp_operator::manifests::{self, DEFAULT_NAMESPACE};
use webapp_operator::releases::{OperatorRelease, RELEASES};

#[test]
fn operator_manifests_snapshot_every_release() {
    for release in RELEASES {
        let yaml = manifests::to_yaml(release, DEFAULT_NAMESPACE).unwrap();
        insta::assert_snapshot!(format!("manifests-{}", release.version), yaml);
    }
}

#[test]
fn operator_crd_snapshot_latest() {
    let objects = manifests::objects(OperatorRelease::latest(), DEFAULT_NAMESPACE).unwrap();
    insta::assert_yaml_snapshot!("crd-latest", objects[0]);
}

#[test]
fn operator_manifests_are_deterministic() {
    for release in RELEASES {
        let first = manifests::to_yaml(release, DEFAULT_NAMESPACE).unwrap();
        for _ in 0..3 {
            assert_eq!(
                manifests::to_yaml(release, DEFAULT_NAMESPACE).unwrap(),
                first
            );
        }
    }
}

#[test]
fn operator_manifests_list_only_the_release_versions() {
    for release in RELEASES {
        let yaml = manifests::to_yaml(release, DEFAULT_NAMESPACE).unwrap();
        let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&yaml).unwrap();
        let crd = &docs[0];
        let names: Vec<&str> = crd["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        let expected: Vec<&str> = release
            .crd_versions
            .iter()
            .map(|e| e.version.name())
            .collect();
        assert_eq!(names, expected, "release {}", release.version);
        assert_eq!(
            crd["spec"].get("conversion").is_some(),
            expected.len() > 1,
            "release {}",
            release.version
        );
        let image = format!("quay.io/olmpack/webapp-operator:v{}", release.version);
        let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["image"], image.as_str());
        let sc = &container["securityContext"];
        assert_eq!(sc["allowPrivilegeEscalation"], false);
        assert_eq!(sc["readOnlyRootFilesystem"], true);
        assert_eq!(sc["capabilities"]["drop"][0], "ALL");
        assert_eq!(
            deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"],
            true
        );
        let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "CustomResourceDefinition",
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "Role",
                "RoleBinding",
                "Service",
                "Deployment",
                "ValidatingWebhookConfiguration",
                "MutatingWebhookConfiguration"
            ]
        );
    }
}
