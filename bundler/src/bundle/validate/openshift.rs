//! `openshift/` findings (`bundle validate --platform openshift-4.N`): OpenShift's own version
//! gates on the bundle, judged against release 4.N by [`olmpack_model::openshift`].
//!
//! Every finding here is a warning, never an error: nobody refuses the bundle.
//! - `openshift/catalog`: `com.redhat.openshift.versions` leaves 4.N out. Red Hat's pipeline
//!   then does not add the bundle to 4.N's catalog; the bundle itself is accepted, and OLM on
//!   4.N installs it from any catalog that has it (no cluster reads the annotation).
//! - `openshift/versions`: the annotation is not one the pipeline reads (it adds such a bundle
//!   to no catalog, or refuses its submission); olmpack cannot say which catalogs carry it.
//! - `openshift/max-version`: `olm.maxOpenShiftVersion` is below 4.(N+1) or invalid. OLM
//!   installs the bundle; while it is installed, the cluster cannot be upgraded to the next
//!   minor release. The message quotes the line OLM writes into the `operator-lifecycle-manager`
//!   ClusterOperator's `Upgradeable=False` condition.

use std::path::PathBuf;

use serde_json::Value;

use super::{Finding, LoadedBundle};
use crate::json::str_at;
use olmpack_model::openshift::{
    self, CatalogGap, MAX_VERSION_PROPERTY, OpenShiftRelease, UpgradeGate, VERSIONS_ANNOTATION,
};

/// The `openshift/` findings of `bundle` on OpenShift `release`.
pub(super) fn check(bundle: &LoadedBundle, release: OpenShiftRelease, out: &mut Vec<Finding>) {
    catalog(bundle, release, out);
    max_version(bundle, release, out);
}

/// Whether OpenShift `release`'s catalog carries the bundle, by its annotation.
fn catalog(bundle: &LoadedBundle, release: OpenShiftRelease, out: &mut Vec<Finding>) {
    let Some(value) = bundle
        .annotations
        .as_ref()
        .and_then(|a| a.get(VERSIONS_ANNOTATION))
    else {
        return;
    };
    let (rule, gap) = match openshift::catalog_gap(value, release) {
        None => return,
        Some(gap @ CatalogGap::LeftOut { .. }) => ("openshift/catalog", gap),
        Some(gap @ CatalogGap::Unreadable(_)) => ("openshift/versions", gap),
    };
    out.push(
        Finding::warning(rule, gap.to_string())
            .file("metadata/annotations.yaml")
            .field(VERSIONS_ANNOTATION),
    );
}

/// A property value and where it was declared.
struct Declared {
    value: Value,
    file: PathBuf,
    object: Option<String>,
    field: String,
}

/// Whether OpenShift `release`'s OLM blocks cluster upgrades while the bundle is installed.
fn max_version(bundle: &LoadedBundle, release: OpenShiftRelease, out: &mut Vec<Finding>) {
    let declared = max_versions(bundle);
    let values: Vec<Value> = declared.iter().map(|d| d.value.clone()).collect();
    let gate = openshift::upgrade_gate(release, &values);
    let csv = bundle
        .csv()
        .map(|o| o.name().to_owned())
        .unwrap_or_else(|| "the bundle's CSV".to_owned());
    let Some(line) = gate.condition_line("<namespace>", &csv) else {
        return;
    };
    let next = release.next_minor();
    let why = match &gate {
        UpgradeGate::Blocked { max, .. } => format!("its {MAX_VERSION_PROPERTY} is {max}"),
        _ => format!("its {MAX_VERSION_PROPERTY} is invalid"),
    };
    let message = format!(
        "OpenShift {release}'s OLM blocks upgrades of the cluster to {next} while {csv} is installed: {why}; the operator-lifecycle-manager ClusterOperator reports Upgradeable=False (IncompatibleOperatorsInstalled): {line:?}"
    );
    let first = &declared[0];
    let mut finding = Finding::warning("openshift/max-version", message)
        .file(first.file.clone())
        .field(first.field.clone());
    if let Some(object) = &first.object {
        finding = finding.object(object.clone());
    }
    out.push(finding);
}

/// The bundle's `olm.maxOpenShiftVersion` properties, as the catalog lists them and OLM
/// projects them onto the installed CSV: `metadata/properties.yaml`'s, then the CSV's
/// `olm.properties` annotation's; the same value declared twice counts once.
fn max_versions(bundle: &LoadedBundle) -> Vec<Declared> {
    let mut declared = Vec::new();
    for (i, item) in bundle.properties.iter().flatten().enumerate() {
        if let (MAX_VERSION_PROPERTY, Some(value)) = (str_at(item, "/type"), item.get("value")) {
            declared.push(Declared {
                value: value.clone(),
                file: "metadata/properties.yaml".into(),
                object: None,
                field: format!("properties[{i}]"),
            });
        }
    }
    if let Some(csv) = bundle.csv() {
        let annotation = csv
            .value
            .pointer("/metadata/annotations/olm.properties")
            .and_then(Value::as_str)
            .and_then(|text| serde_json::from_str::<Vec<Value>>(text).ok())
            .unwrap_or_default();
        for item in annotation {
            if let (MAX_VERSION_PROPERTY, Some(value)) = (str_at(&item, "/type"), item.get("value"))
            {
                declared.push(Declared {
                    value: value.clone(),
                    file: csv.file.clone(),
                    object: Some(csv.display_name()),
                    field: "metadata.annotations.olm.properties".to_owned(),
                });
            }
        }
    }
    let mut seen = Vec::new();
    declared.retain(|d| {
        let new = !seen.contains(&d.value);
        seen.push(d.value.clone());
        new
    });
    declared
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::bundle::load::load_files;

    /// The `openshift/` findings on 4.14 of a bundle with these annotations, properties file
    /// and CSV `olm.properties` annotation, as `rule file field: message`.
    fn findings(versions: Option<&str>, properties: &str, csv_properties: &str) -> Vec<String> {
        let mut annotations =
            "annotations:\n  operators.operatorframework.io.bundle.package.v1: op\n".to_owned();
        if let Some(v) = versions {
            annotations.push_str(&format!("  com.redhat.openshift.versions: {v:?}\n"));
        }
        let csv = format!(
            "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: op.v1\n  annotations:\n    olm.properties: '{csv_properties}'\nspec: {{}}\n"
        );
        let files: [(&Path, &[u8]); 3] = [
            (
                Path::new("metadata/annotations.yaml"),
                annotations.as_bytes(),
            ),
            (Path::new("metadata/properties.yaml"), properties.as_bytes()),
            (Path::new("manifests/op.csv.yaml"), csv.as_bytes()),
        ];
        let bundle = load_files(Path::new("b"), files);
        let mut out = Vec::new();
        check(&bundle, OpenShiftRelease::four(14), &mut out);
        out.iter()
            .map(|f| {
                format!(
                    "{} {} {}: {}",
                    f.rule,
                    f.file.as_ref().unwrap().display(),
                    f.field.as_deref().unwrap(),
                    f.message
                )
            })
            .collect()
    }

    #[test]
    fn openshift_gates_are_named_with_their_file_and_field() {
        let none = "properties: []\n";
        let max =
            |v: &str| format!("properties:\n- type: olm.maxOpenShiftVersion\n  value: {v:?}\n");
        let blocked = |max: &str, at: &str| {
            format!(
                "openshift/max-version {at}: OpenShift 4.14's OLM blocks upgrades of the cluster to 4.15 while op.v1 is installed: its olm.maxOpenShiftVersion is {max}; the operator-lifecycle-manager ClusterOperator reports Upgradeable=False (IncompatibleOperatorsInstalled): \"maximum supported OCP version for <namespace>/op.v1 is {max}\""
            )
        };
        let table: [(Option<&str>, String, &str, Vec<String>); 9] = [
            (None, none.to_owned(), "[]", vec![]),
            (Some("v4.12-v4.14"), max("4.15"), "[]", vec![]),
            (
                Some("v4.15"),
                none.to_owned(),
                "[]",
                vec!["openshift/catalog metadata/annotations.yaml com.redhat.openshift.versions: OpenShift's catalog for 4.14 does not carry the bundle: \"v4.15\" names 4.15 and later".to_owned()],
            ),
            (
                Some("=v4.13"),
                none.to_owned(),
                "[]",
                vec!["openshift/catalog metadata/annotations.yaml com.redhat.openshift.versions: OpenShift's catalog for 4.14 does not carry the bundle: \"=v4.13\" names 4.13 only".to_owned()],
            ),
            (
                Some("v4.12,v4.13"),
                none.to_owned(),
                "[]",
                vec!["openshift/versions metadata/annotations.yaml com.redhat.openshift.versions: \"v4.12,v4.13\": Red Hat's pipeline allows a comma only in the legacy values v4.5,v4.6 and v4.6,v4.5 (both meaning v4.5 and later) and adds a bundle with any other list to no OpenShift catalog; which OpenShift catalogs carry the bundle cannot be told".to_owned()],
            ),
            (None, max("4.14"), "[]", vec![blocked("4.14", "metadata/properties.yaml properties[0]")]),
            (
                None,
                none.to_owned(),
                r#"[{"type":"olm.maxOpenShiftVersion","value":"4.8"}]"#,
                vec![blocked("4.8", "manifests/op.csv.yaml metadata.annotations.olm.properties")],
            ),
            // The same value in both places is one property, as the catalog lists it.
            (
                None,
                max("4.8"),
                r#"[{"type":"olm.maxOpenShiftVersion","value":"4.8"}]"#,
                vec![blocked("4.8", "metadata/properties.yaml properties[0]")],
            ),
            (
                None,
                max("4.15"),
                r#"[{"type":"olm.maxOpenShiftVersion","value":"4.16"}]"#,
                vec!["openshift/max-version metadata/properties.yaml properties[0]: OpenShift 4.14's OLM blocks upgrades of the cluster to 4.15 while op.v1 is installed: its olm.maxOpenShiftVersion is invalid; the operator-lifecycle-manager ClusterOperator reports Upgradeable=False (IncompatibleOperatorsInstalled): \"<namespace>/op.v1 has invalid olm.maxOpenShiftVersion properties: defining more than one \\\"olm.maxOpenShiftVersion\\\" property is not allowed\"".to_owned()],
            ),
        ];
        for (versions, properties, csv_properties, want) in table {
            assert_eq!(
                findings(versions, &properties, csv_properties),
                want,
                "{versions:?} {properties:?} {csv_properties:?}"
            );
        }
    }
}
