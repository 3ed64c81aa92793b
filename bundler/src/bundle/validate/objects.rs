//! `objects/` rules: extra objects and RBAC that install fine but can hurt the cluster they land
//! on — a PodDisruptionBudget that blocks every eviction (node drains and cluster upgrades hang),
//! a PriorityClass that becomes the cluster-wide default, permission to write
//! PodDisruptionBudgets, permission to change or delete OpenShift's default
//! SecurityContextConstraints.
//!
//! operator-sdk's optional object validator flags the same inputs; neither the API server nor
//! OLM refuses them, so every rule here is a warning (`--strict` makes them errors). Unlike that
//! validator, RBAC is checked where OLM takes it from too: the CSV's `permissions` and
//! `clusterPermissions`, not only Role and ClusterRole objects in `manifests/`.

use serde_json::Value;

use super::{array_at, on};
use crate::bundle::load::{LoadedBundle, Object};
use olmpack_model::csv::ClusterServiceVersion;
use olmpack_model::objects::{self, PolicyRule};
use olmpack_model::report::Finding;

/// The SecurityContextConstraints every OpenShift cluster ships.
const DEFAULT_SCCS: [&str; 8] = [
    "privileged",
    "restricted",
    "anyuid",
    "hostaccess",
    "hostmount-anyuid",
    "hostnetwork",
    "node-exporter",
    "nonroot",
];

pub(super) fn check(bundle: &LoadedBundle, out: &mut Vec<Finding>) {
    for object in &bundle.objects {
        needs_cluster_crd(bundle, object, out);
        match object.kind() {
            "PodDisruptionBudget" => disruption_budget(object, out),
            "PriorityClass" => priority_class(object, out),
            "Role" | "ClusterRole" => {
                let rules = array_at(&object.value, "/rules");
                for (i, rule) in rules.iter().enumerate() {
                    let finding = |f: Finding| on(object, f).field(format!("rules[{i}]"));
                    out.extend(policy_rule(rule).into_iter().map(finding));
                }
            }
            "ClusterServiceVersion" => csv_permissions(object, out),
            _ => {}
        }
    }
}

/// An object of another operator's kind (ServiceMonitor, …) whose CRD the bundle does not
/// carry: OLM v0 creates it only where the cluster already serves the kind.
fn needs_cluster_crd(bundle: &LoadedBundle, object: &Object, out: &mut Vec<Finding>) {
    let api_version = object.api_version();
    let group = api_version.split_once('/').map_or("", |(g, _)| g);
    let Some(known) = crate::cluster_crds::for_kind(group, object.kind()) else {
        return;
    };
    let carried = bundle.crds().any(|crd| {
        let crd = crd.typed();
        crd.group() == group && crd.kind() == object.kind()
    });
    if carried {
        return;
    }
    out.push(on(
        object,
        Finding::warning(
            "objects/kind-needs-cluster-crd",
            format!(
                "{} ({api_version}) is {}'s kind and this bundle carries no CRD for it: OLM v0 creates the object only on a cluster that already serves the kind, elsewhere the install fails; test with `olmpack upgrade olm --cluster-crd {}`",
                known.kind, known.owner, known.name
            ),
        ),
    ));
}

fn disruption_budget(object: &Object, out: &mut Vec<Finding>) {
    let spec = object.value.get("spec").unwrap_or(&Value::Null);
    let blocks = match (spec.get("maxUnavailable"), spec.get("minAvailable")) {
        (Some(max), _) if is_zero(max) => Some(("spec.maxUnavailable", "maxUnavailable is 0")),
        (_, Some(Value::String(min))) if min.trim() == "100%" => {
            Some(("spec.minAvailable", "minAvailable is 100%"))
        }
        _ => None,
    };
    if let Some((field, what)) = blocks {
        out.push(
            on(
                object,
                Finding::warning(
                    "objects/pdb-blocks-eviction",
                    format!(
                        "{what}: no pod it selects can ever be evicted, so node drains and cluster upgrades wait forever"
                    ),
                ),
            )
            .field(field),
        );
    }
}

/// `0`, `"0"` or `"0%"` (an int-or-string, read the way Kubernetes reads it).
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => matches!(s.trim(), "0" | "0%"),
        _ => false,
    }
}

fn priority_class(object: &Object, out: &mut Vec<Finding>) {
    if object.value.get("globalDefault").and_then(Value::as_bool) == Some(true) {
        out.push(
            on(
                object,
                Finding::warning(
                    "objects/priority-class-global-default",
                    "globalDefault is true: every pod created without a priority class on the cluster gets this one",
                ),
            )
            .field("globalDefault"),
        );
    }
}

/// The rules the CSV asks OLM to grant, per service account.
fn csv_permissions(csv: &Object, out: &mut Vec<Finding>) {
    let spec = ClusterServiceVersion::read(&csv.value)
        .0
        .spec
        .unwrap_or_default();
    for (list, grants) in spec.permissions() {
        for (i, grant) in grants.iter().enumerate() {
            for (j, rule) in grant.rules.iter().flatten().enumerate() {
                let field = format!("spec.install.spec.{list}[{i}].rules[{j}]");
                let finding = |f: Finding| on(csv, f).field(field.clone());
                out.extend(policy_rule(rule).into_iter().map(finding));
            }
        }
    }
}

/// What one RBAC policy rule grants that can hurt the cluster.
fn policy_rule(rule: &Value) -> Vec<Finding> {
    let rule: PolicyRule = objects::view(rule);
    let mut found = Vec::new();
    if rule.allows(
        &["policy", "*"],
        &["poddisruptionbudgets", "*"],
        &["create", "update", "patch", "*"],
    ) {
        found.push(Finding::warning(
            "objects/rbac-pdb-write",
            "the rule lets the operator create or change PodDisruptionBudgets, which can block node drains cluster-wide",
        ));
    }
    if rule.allows(
        &["security.openshift.io", "*"],
        &["securitycontextconstraints", "*"],
        &["update", "patch", "delete", "*"],
    ) && PolicyRule::names_any(&rule.resource_names, &DEFAULT_SCCS)
    {
        found.push(Finding::warning(
            "objects/rbac-default-scc",
            "the rule lets the operator change or delete one of OpenShift's default SecurityContextConstraints, which every workload on the cluster relies on",
        ));
    }
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules_of(rule: Value) -> Vec<String> {
        policy_rule(&rule).into_iter().map(|f| f.rule).collect()
    }

    #[test]
    fn a_rule_is_flagged_only_when_group_resource_and_verb_all_match() {
        let table = [
            (
                json!({"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["get", "patch"]}),
                vec!["objects/rbac-pdb-write"],
            ),
            (
                json!({"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["get", "list"]}),
                vec![],
            ),
            (
                json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}),
                vec!["objects/rbac-pdb-write"],
            ),
            (
                json!({"apiGroups": ["security.openshift.io"], "resources": ["securitycontextconstraints"], "resourceNames": ["anyuid"], "verbs": ["delete"]}),
                vec!["objects/rbac-default-scc"],
            ),
            (
                json!({"apiGroups": ["security.openshift.io"], "resources": ["securitycontextconstraints"], "resourceNames": ["my-own-scc"], "verbs": ["update"]}),
                vec![],
            ),
            (
                json!({"apiGroups": ["security.openshift.io"], "resources": ["securitycontextconstraints"], "resourceNames": ["privileged"], "verbs": ["use"]}),
                vec![],
            ),
        ];
        for (rule, expected) in table {
            assert_eq!(rules_of(rule.clone()), expected, "{rule}");
        }
    }

    fn object(file: &str, value: Value) -> Object {
        Object {
            file: file.into(),
            index: 0,
            value,
        }
    }

    #[test]
    fn another_operators_kind_without_its_crd_names_the_cluster_crd() {
        let monitor = object(
            "manifests/metrics.yaml",
            json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "metrics"}}),
        );
        let crd = object(
            "manifests/crd.yaml",
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
                "spec": {"group": "monitoring.coreos.com", "names": {"kind": "ServiceMonitor", "plural": "servicemonitors"},
                    "scope": "Namespaced", "versions": [{"name": "v1", "served": true, "storage": true}]}}),
        );
        let messages = |objects: Vec<Object>| -> Vec<String> {
            let bundle = LoadedBundle {
                objects,
                ..LoadedBundle::default()
            };
            let mut out = Vec::new();
            for object in &bundle.objects {
                needs_cluster_crd(&bundle, object, &mut out);
            }
            out.iter()
                .map(|f| {
                    format!(
                        "{} {}: {}: {}",
                        f.rule,
                        f.file
                            .as_ref()
                            .map(|p| p.display().to_string())
                            .unwrap_or_default(),
                        f.object.clone().unwrap_or_default(),
                        f.message
                    )
                })
                .collect()
        };
        assert_eq!(
            messages(vec![monitor.clone()]),
            [
                "objects/kind-needs-cluster-crd manifests/metrics.yaml: ServiceMonitor/metrics: ServiceMonitor (monitoring.coreos.com/v1) is prometheus-operator's kind and this bundle carries no CRD for it: OLM v0 creates the object only on a cluster that already serves the kind, elsewhere the install fails; test with `olmpack upgrade olm --cluster-crd servicemonitors.monitoring.coreos.com`"
            ]
        );
        assert!(messages(vec![monitor, crd]).is_empty());
    }

    #[test]
    fn zero_is_read_as_kubernetes_reads_an_int_or_string() {
        for zero in [json!(0), json!("0"), json!("0%"), json!(" 0% ")] {
            assert!(is_zero(&zero), "{zero}");
        }
        for other in [json!(1), json!("1"), json!("10%"), json!(null)] {
            assert!(!is_zero(&other), "{other}");
        }
    }
}
