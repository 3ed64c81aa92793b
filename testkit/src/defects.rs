//! Deliberately broken "next releases" of a CRD, one defect each, for upgrade-safety tests.
//!
//! Given the newest CRD of an operator (for olmpack: the reference operator's
//! `webapps.apps.olmpack.dev`), [`broken_next_releases`] returns one copy per [`Defect`], each
//! changed in exactly one way that breaks clusters running the base CRD. The static checker
//! (`olmpack upgrade check`) must refuse every defect it can see with
//! [`BrokenRelease::expected_rule`]; the live tests apply the same CRDs to a real apiserver.
//!
//! Property paths use crdify's notation: `^` is the root of a version's `openAPIV3Schema`,
//! children are joined with `.` (`^.spec.logLevel`).
//!
//! ```
//! use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
//! # fn demo(base: &CustomResourceDefinition) {
//! for broken in olmpack_testkit::defects::broken_next_releases(base) {
//!     println!("{}: expect {}", broken.defect, broken.expected_rule);
//! }
//! # }
//! ```

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, CustomResourceDefinitionVersion,
    JSONSchemaProps,
};

/// One way a next release can break the clusters that run the base CRD.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Defect {
    /// A property of an existing version is gone (crdify `existingFieldRemoval`).
    FieldRemoved,
    /// An existing version gains a required property (crdify `required`).
    NewRequiredField,
    /// An allowed enum value is gone (crdify `enum`).
    EnumValueRemoved,
    /// A property changes its `type` (crdify `type`).
    TypeChanged,
    /// The storage version leaves `spec.versions` although the cluster's
    /// `status.storedVersions` lists it: no storage migration happened (OLM v0
    /// SafeStorageVersionUpgrade, crdify `storedVersionRemoval`, kube-apiserver).
    StorageVersionDropped,
    /// A served, not deprecated version stops being served.
    ServedVersionRemoved,
    /// `spec.conversion.strategy: None` while served versions differ in schema: the
    /// apiserver only rewrites `apiVersion`, so objects lose fields at the other versions.
    ConversionWebhookMissing,
    /// The conversion webhook drops data on a round trip. The CRD itself is unchanged, so a
    /// static check cannot see it: live only.
    LossyConversion,
}

impl Defect {
    /// Every defect, in a stable order.
    pub const ALL: [Defect; 8] = [
        Defect::FieldRemoved,
        Defect::NewRequiredField,
        Defect::EnumValueRemoved,
        Defect::TypeChanged,
        Defect::StorageVersionDropped,
        Defect::ServedVersionRemoved,
        Defect::ConversionWebhookMissing,
        Defect::LossyConversion,
    ];

    /// A short kebab-case name, stable for test names and tables.
    pub fn name(self) -> &'static str {
        match self {
            Defect::FieldRemoved => "field-removed",
            Defect::NewRequiredField => "new-required-field",
            Defect::EnumValueRemoved => "enum-value-removed",
            Defect::TypeChanged => "type-changed",
            Defect::StorageVersionDropped => "storage-version-dropped",
            Defect::ServedVersionRemoved => "served-version-removed",
            Defect::ConversionWebhookMissing => "conversion-webhook-missing",
            Defect::LossyConversion => "lossy-conversion",
        }
    }

    /// Whether a static comparison of the two CRDs can see this defect (false only for
    /// [`Defect::LossyConversion`], which lives in the webhook, not in the CRD).
    pub fn statically_visible(self) -> bool {
        self != Defect::LossyConversion
    }
}

impl fmt::Display for Defect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A next release of the base CRD with one [`Defect`].
#[derive(Clone, Debug)]
pub struct BrokenRelease {
    pub defect: Defect,
    /// The broken CRD (the base with the one defect applied).
    pub crd: CustomResourceDefinition,
    /// The rule id `olmpack upgrade check` reports for it (for
    /// [`Defect::LossyConversion`], the rule of the live round-trip check).
    pub expected_rule: &'static str,
    /// The version the defect is in.
    pub version: String,
    /// The property path the defect is at, when it is about one property.
    pub path: Option<String>,
}

/// Property name added by [`Defect::NewRequiredField`].
pub const NEW_REQUIRED_FIELD: &str = "olmpackRequiredField";

/// One broken next release per [`Defect`] that can be made from `base`, in [`Defect::ALL`]
/// order. A defect is left out when `base` lacks what it needs: a storage version with a
/// `spec` object (field, required, type), an enum with two or more values (enum), a second
/// version (storage version dropped), a served, non-storage version (served version removed,
/// conversion webhook missing). The reference operator's CRD yields all eight.
pub fn broken_next_releases(base: &CustomResourceDefinition) -> Vec<BrokenRelease> {
    Defect::ALL
        .iter()
        .filter_map(|&defect| broken_release(base, defect))
        .collect()
}

/// The broken next release for one defect, or `None` when `base` cannot carry it.
pub fn broken_release(base: &CustomResourceDefinition, defect: Defect) -> Option<BrokenRelease> {
    let mut crd = base.clone();
    let storage = storage_version(&crd)?.name.clone();
    let (version, path) = match defect {
        Defect::FieldRemoved => (storage.clone(), Some(remove_field(&mut crd, &storage)?)),
        Defect::NewRequiredField => (storage.clone(), Some(add_required(&mut crd, &storage)?)),
        Defect::EnumValueRemoved => (
            storage.clone(),
            Some(remove_enum_value(&mut crd, &storage)?),
        ),
        Defect::TypeChanged => (storage.clone(), Some(change_type(&mut crd, &storage)?)),
        Defect::StorageVersionDropped => (drop_storage_version(&mut crd)?, None),
        Defect::ServedVersionRemoved => (unserve_version(&mut crd)?, None),
        Defect::ConversionWebhookMissing => {
            other_served_version(&crd)?;
            crd.spec.conversion = Some(CustomResourceConversion {
                strategy: "None".into(),
                webhook: None,
            });
            (storage.clone(), None)
        }
        Defect::LossyConversion => (storage.clone(), None),
    };
    Some(BrokenRelease {
        defect,
        crd,
        expected_rule: expected_rule(defect),
        version,
        path,
    })
}

/// The rule id `olmpack upgrade check` (or, for lossy conversion, `olmpack upgrade test`)
/// reports for `defect`.
pub fn expected_rule(defect: Defect) -> &'static str {
    match defect {
        Defect::FieldRemoved => "crd-upgrade/existing-field-removal",
        Defect::NewRequiredField => "crd-upgrade/required",
        Defect::EnumValueRemoved => "crd-upgrade/enum",
        Defect::TypeChanged => "crd-upgrade/type",
        Defect::StorageVersionDropped => "crd-upgrade/stored-version-removal",
        Defect::ServedVersionRemoved => "crd-upgrade/served-version-removal",
        Defect::ConversionWebhookMissing => "crd-upgrade/conversion-webhook-missing",
        Defect::LossyConversion => "crd-upgrade/lossy-conversion",
    }
}

fn storage_version(crd: &CustomResourceDefinition) -> Option<&CustomResourceDefinitionVersion> {
    crd.spec.versions.iter().find(|v| v.storage)
}

fn version_mut<'a>(
    crd: &'a mut CustomResourceDefinition,
    name: &str,
) -> Option<&'a mut CustomResourceDefinitionVersion> {
    crd.spec.versions.iter_mut().find(|v| v.name == name)
}

fn root_schema_mut<'a>(
    crd: &'a mut CustomResourceDefinition,
    version: &str,
) -> Option<&'a mut JSONSchemaProps> {
    version_mut(crd, version)?
        .schema
        .as_mut()?
        .open_api_v3_schema
        .as_mut()
}

fn spec_schema_mut<'a>(
    crd: &'a mut CustomResourceDefinition,
    version: &str,
) -> Option<&'a mut JSONSchemaProps> {
    root_schema_mut(crd, version)?
        .properties
        .as_mut()?
        .get_mut("spec")
}

/// Removes the first optional property of `spec` (by name).
fn remove_field(crd: &mut CustomResourceDefinition, version: &str) -> Option<String> {
    let spec = spec_schema_mut(crd, version)?;
    let required = spec.required.clone().unwrap_or_default();
    let properties = spec.properties.as_mut()?;
    let name = properties
        .keys()
        .find(|name| !required.contains(name))?
        .clone();
    properties.remove(&name);
    Some(format!("^.spec.{name}"))
}

/// Adds a required string property to `spec`.
fn add_required(crd: &mut CustomResourceDefinition, version: &str) -> Option<String> {
    let spec = spec_schema_mut(crd, version)?;
    spec.properties.get_or_insert_with(BTreeMap::new).insert(
        NEW_REQUIRED_FIELD.into(),
        JSONSchemaProps {
            type_: Some("string".into()),
            ..Default::default()
        },
    );
    spec.required
        .get_or_insert_with(Vec::new)
        .push(NEW_REQUIRED_FIELD.into());
    Some("^.spec".into())
}

/// Removes the last non-null value of the first enum (depth first, properties by name) with
/// at least two non-null values.
fn remove_enum_value(crd: &mut CustomResourceDefinition, version: &str) -> Option<String> {
    fn walk(schema: &mut JSONSchemaProps, path: &str) -> Option<String> {
        if let Some(values) = schema.enum_.as_mut()
            && values.iter().filter(|v| !v.0.is_null()).count() >= 2
        {
            let last = values.iter().rposition(|v| !v.0.is_null())?;
            values.remove(last);
            return Some(path.to_owned());
        }
        for (name, child) in schema.properties.iter_mut().flatten() {
            if let Some(found) = walk(child, &format!("{path}.{name}")) {
                return Some(found);
            }
        }
        None
    }
    walk(root_schema_mut(crd, version)?, "^")
}

/// Changes the type of the first `spec` property (by name) typed integer, boolean or string:
/// integer and boolean become string, string becomes integer.
fn change_type(crd: &mut CustomResourceDefinition, version: &str) -> Option<String> {
    let spec = spec_schema_mut(crd, version)?;
    for (name, property) in spec.properties.iter_mut().flatten() {
        let new_type = match property.type_.as_deref() {
            Some("integer" | "boolean") => "string",
            Some("string") if property.enum_.is_none() => "integer",
            _ => continue,
        };
        property.type_ = Some(new_type.into());
        property.format = None;
        property.pattern = None;
        property.max_length = None;
        property.min_length = None;
        property.maximum = None;
        property.minimum = None;
        return Some(format!("^.spec.{name}"));
    }
    None
}

/// Drops the storage version from `spec.versions`; the highest-priority remaining version
/// (last in file order among the served ones) becomes the storage version. Returns the
/// dropped version.
fn drop_storage_version(crd: &mut CustomResourceDefinition) -> Option<String> {
    let dropped = storage_version(crd)?.name.clone();
    let next = other_served_version(crd)?;
    crd.spec.versions.retain(|v| v.name != dropped);
    version_mut(crd, &next)?.storage = true;
    Some(dropped)
}

/// Stops serving a served, non-storage version (the last such in file order, preferring one
/// that is not deprecated), as if it were dropped without notice.
fn unserve_version(crd: &mut CustomResourceDefinition) -> Option<String> {
    let name = other_served_version(crd)?;
    let version = version_mut(crd, &name)?;
    version.served = false;
    Some(name)
}

/// The last served, non-storage version in file order, preferring one not deprecated.
fn other_served_version(crd: &CustomResourceDefinition) -> Option<String> {
    let candidates: Vec<&CustomResourceDefinitionVersion> = crd
        .spec
        .versions
        .iter()
        .filter(|v| v.served && !v.storage)
        .collect();
    candidates
        .iter()
        .rev()
        .find(|v| v.deprecated != Some(true))
        .or_else(|| candidates.last())
        .map(|v| v.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        CustomResourceDefinitionNames, CustomResourceDefinitionSpec, CustomResourceValidation, JSON,
    };

    fn version(
        name: &str,
        storage: bool,
        spec: JSONSchemaProps,
    ) -> CustomResourceDefinitionVersion {
        CustomResourceDefinitionVersion {
            name: name.into(),
            served: true,
            storage,
            schema: Some(CustomResourceValidation {
                open_api_v3_schema: Some(JSONSchemaProps {
                    type_: Some("object".into()),
                    properties: Some(BTreeMap::from([("spec".into(), spec)])),
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }
    }

    fn base() -> CustomResourceDefinition {
        let prop = |t: &str| JSONSchemaProps {
            type_: Some(t.into()),
            ..Default::default()
        };
        let spec = JSONSchemaProps {
            type_: Some("object".into()),
            required: Some(vec!["image".into()]),
            properties: Some(BTreeMap::from([
                ("image".into(), prop("string")),
                (
                    "level".into(),
                    JSONSchemaProps {
                        enum_: Some(vec![
                            JSON("a".into()),
                            JSON("b".into()),
                            JSON(serde_json::Value::Null),
                        ]),
                        ..prop("string")
                    },
                ),
                ("replicas".into(), prop("integer")),
            ])),
            ..Default::default()
        };
        CustomResourceDefinition {
            metadata: Default::default(),
            spec: CustomResourceDefinitionSpec {
                group: "example.com".into(),
                names: CustomResourceDefinitionNames {
                    kind: "Thing".into(),
                    plural: "things".into(),
                    ..Default::default()
                },
                scope: "Namespaced".into(),
                versions: vec![
                    version("v1beta1", false, spec.clone()),
                    version("v1", true, spec),
                ],
                ..Default::default()
            },
            status: None,
        }
    }

    #[test]
    fn every_defect_from_a_two_version_crd() {
        let releases = broken_next_releases(&base());
        let got: Vec<(Defect, String, Option<String>)> = releases
            .iter()
            .map(|r| (r.defect, r.version.clone(), r.path.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    Defect::FieldRemoved,
                    "v1".into(),
                    Some("^.spec.level".into())
                ),
                (Defect::NewRequiredField, "v1".into(), Some("^.spec".into())),
                (
                    Defect::EnumValueRemoved,
                    "v1".into(),
                    Some("^.spec.level".into())
                ),
                (
                    Defect::TypeChanged,
                    "v1".into(),
                    Some("^.spec.image".into())
                ),
                (Defect::StorageVersionDropped, "v1".into(), None),
                (Defect::ServedVersionRemoved, "v1beta1".into(), None),
                (Defect::ConversionWebhookMissing, "v1".into(), None),
                (Defect::LossyConversion, "v1".into(), None),
            ]
        );
        let dropped = &releases[4].crd;
        assert_eq!(dropped.spec.versions.len(), 1);
        assert!(dropped.spec.versions[0].storage);
        assert_eq!(dropped.spec.versions[0].name, "v1beta1");
        assert!(!releases[5].crd.spec.versions[0].served);
    }

    #[test]
    fn a_single_version_crd_skips_the_version_defects() {
        let mut one = base();
        one.spec.versions.remove(0);
        let defects: Vec<Defect> = broken_next_releases(&one)
            .iter()
            .map(|r| r.defect)
            .collect();
        assert_eq!(
            defects,
            vec![
                Defect::FieldRemoved,
                Defect::NewRequiredField,
                Defect::EnumValueRemoved,
                Defect::TypeChanged,
                Defect::LossyConversion,
            ]
        );
    }
}
