//! The objects shipped in `manifests/` besides the CSV and the CRDs: everything OLM does not
//! create itself, cleaned of what a cluster adds.

use std::collections::BTreeSet;

use serde_json::Value;

use super::super::inputs::{Inputs, Sourced};
use super::rbac::Rbac;
use crate::json::str_at;

/// Removes what a cluster adds and a bundle must not carry: status, server-set metadata and
/// the namespace (OLM installs into the namespace the user picks).
pub fn clean_object(value: &Value) -> Value {
    let mut value = value.clone();
    if let Some(map) = value.as_object_mut() {
        map.remove("status");
        if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            for key in [
                "creationTimestamp",
                "resourceVersion",
                "uid",
                "generation",
                "managedFields",
                "namespace",
                "selfLink",
            ] {
                meta.remove(key);
            }
            if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
                ann.remove("kubectl.kubernetes.io/last-applied-configuration");
                if ann.is_empty() {
                    meta.remove("annotations");
                }
            }
        }
    }
    value
}

/// The other objects, sorted by kind then name: RBAC not folded into the CSV, ServiceAccounts
/// no deployment runs as, Services no webhook is routed through, and the rest as they are.
pub(super) fn others(
    inputs: &Inputs,
    rbac: &Rbac,
    deployment_accounts: &BTreeSet<String>,
    webhook_services: &BTreeSet<String>,
) -> Vec<Value> {
    let rbac_objects = [
        &inputs.roles,
        &inputs.cluster_roles,
        &inputs.role_bindings,
        &inputs.cluster_role_bindings,
    ];
    let shipped = rbac_objects
        .into_iter()
        .flat_map(|objects| objects.iter().filter(|o| rbac.ships(o)))
        .chain(
            inputs
                .service_accounts
                .iter()
                .filter(|sa| !deployment_accounts.contains(sa.name())),
        )
        .chain(
            inputs
                .services
                .iter()
                .filter(|s| !webhook_services.contains(s.name())),
        )
        .chain(&inputs.others);
    let mut others: Vec<Value> = shipped.map(|o: &Sourced| clean_object(&o.value)).collect();
    others.sort_by(|a, b| {
        (str_at(a, "/kind"), str_at(a, "/metadata/name"))
            .cmp(&(str_at(b, "/kind"), str_at(b, "/metadata/name")))
    });
    others
}
