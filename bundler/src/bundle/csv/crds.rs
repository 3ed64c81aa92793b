//! CRDs: the CSV's `customresourcedefinitions.owned` entries, and the CRDs shipped in
//! `manifests/` (without `spec.conversion`: OLM writes its own, with the CA it manages).

use serde_json::{Value, json};

use super::super::manifests::Sourced;
use super::ReleaseSpec;
use super::objects::clean_object;
use crate::json::str_at;

/// One `owned` entry per served version of every CRD, sorted by (name, version).
pub(super) fn owned(spec: &ReleaseSpec<'_>, crds: &[Sourced]) -> Vec<Value> {
    let mut owned = Vec::new();
    for crd in crds {
        let v1 = crate::bundle::crd_v1beta1::to_v1(&crd.value);
        for version in v1
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if version.get("served").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            owned.push(owned_entry(spec, crd.name(), &v1, str_at(version, "/name")));
        }
    }
    owned.sort_by(|a, b| {
        (str_at(a, "/name"), str_at(a, "/version"))
            .cmp(&(str_at(b, "/name"), str_at(b, "/version")))
    });
    owned
}

/// The `owned` entry for `version` of the CRD `name` (`v1`: the CRD as apiextensions v1),
/// with the display metadata the plan gives it.
fn owned_entry(spec: &ReleaseSpec<'_>, name: &str, v1: &Value, version: &str) -> Value {
    let kind = str_at(v1, "/spec/names/kind");
    let display = spec.csv.crds.get(name).cloned().unwrap_or_default();
    let per_version = display.versions.get(version);
    let spec_descriptors = per_version.map_or(&display.spec_descriptors, |p| &p.spec_descriptors);
    let status_descriptors =
        per_version.map_or(&display.status_descriptors, |p| &p.status_descriptors);
    let mut entry = json!({
        "displayName": display.display_name.clone().unwrap_or_else(|| kind.to_owned()),
        "kind": kind,
        "name": name,
        "version": version,
    });
    if let Some(description) = &display.description {
        entry["description"] = json!(description);
    }
    if !display.resources.is_empty() {
        entry["resources"] = json!(display.resources);
    }
    if !spec_descriptors.is_empty() {
        entry["specDescriptors"] = json!(spec_descriptors);
    }
    if !status_descriptors.is_empty() {
        entry["statusDescriptors"] = json!(status_descriptors);
    }
    entry
}

/// The CRDs as the bundle ships them: cleaned, and without `spec.conversion`.
pub(super) fn shipped(crds: &[Sourced]) -> Vec<Value> {
    crds.iter()
        .map(|crd| {
            let mut value = clean_object(&crd.value);
            if let Some(spec) = value.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("conversion");
            }
            value
        })
        .collect()
}
