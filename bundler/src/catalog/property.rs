//! Typed bundle properties: the property types OLM interprets, checked the way opm decodes
//! them; every other type is kept as opaque JSON.
#![warn(missing_docs)]

use base64::Engine as _;
use serde_json::{Value, json};

use super::declcfg::{Property, lookup};

/// Property type naming a bundle's package and version.
pub const TYPE_PACKAGE: &str = "olm.package";
/// Property type: the bundle needs a package in a version range.
pub const TYPE_PACKAGE_REQUIRED: &str = "olm.package.required";
/// Property type: the bundle provides an API (group, version, kind).
pub const TYPE_GVK: &str = "olm.gvk";
/// Property type: the bundle needs an API provided by another bundle.
pub const TYPE_GVK_REQUIRED: &str = "olm.gvk.required";
/// Property type: a manifest of the bundle, base64-encoded.
pub const TYPE_BUNDLE_OBJECT: &str = "olm.bundle.object";
/// Property type: the CSV's metadata, instead of the whole CSV as a bundle object.
pub const TYPE_CSV_METADATA: &str = "olm.csv.metadata";
/// Property type: the channel a bundle is in (old sqlite-era catalogs).
pub const TYPE_CHANNEL: &str = "olm.channel";
/// Property type: a generic dependency constraint (CEL, all/any/not).
pub const TYPE_CONSTRAINT: &str = "olm.constraint";
/// Property type: the bundle is deprecated (old sqlite-era catalogs).
pub const TYPE_DEPRECATED: &str = "olm.deprecated";

/// A property whose value does not decode as its type requires.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("parse property[{index}] of type {type_:?}: {reason}")]
pub struct PropertyError {
    /// Position of the property in its list.
    pub index: usize,
    /// The property type as written.
    pub type_: String,
    /// What is wrong with the value, in our words.
    pub reason: String,
}

/// The interpreted form of one property.
#[derive(Clone, Debug, PartialEq)]
pub enum Typed {
    /// `olm.package`: the package and version of the bundle.
    Package {
        /// The package name.
        package_name: String,
        /// The bundle version (semver).
        version: String,
        /// The release suffix (empty for none).
        release: String,
    },
    /// `olm.package.required`: the bundle needs this package.
    PackageRequired {
        /// The package needed.
        package_name: String,
        /// Semver range its version must be in.
        version_range: String,
    },
    /// `olm.gvk`: the bundle provides this API.
    Gvk {
        /// The API group (empty for the core group).
        group: String,
        /// The API version, e.g. `v1alpha1`.
        version: String,
        /// The kind.
        kind: String,
    },
    /// `olm.gvk.required`: the bundle needs another bundle to provide this API.
    GvkRequired {
        /// The API group (empty for the core group).
        group: String,
        /// The API version.
        version: String,
        /// The kind.
        kind: String,
    },
    /// The decoded manifest bytes.
    BundleObject(Vec<u8>),
    /// Checked to be an object; the value is not copied.
    CsvMetadata,
    /// `olm.channel`: the channel the bundle is in.
    Channel {
        /// The channel name.
        channel_name: String,
    },
    /// Any other property type; not decoded.
    Other,
}

/// Decodes one property (see the module docs).
pub fn parse(index: usize, p: &Property) -> Result<Typed, PropertyError> {
    let d = Decoder { index, p };
    if p.value.is_null() {
        return Err(d.fail("unexpected end of JSON input".to_owned()));
    }
    Ok(match p.type_.as_str() {
        TYPE_PACKAGE => {
            let m = d.struct_of("Package")?;
            Typed::Package {
                package_name: d.string(m, "Package", "packageName")?,
                version: d.string(m, "Package", "version")?,
                release: match lookup(m, "release") {
                    Some(Value::Number(n)) => n.to_string(),
                    _ => d.string(m, "Package", "release")?,
                },
            }
        }
        TYPE_PACKAGE_REQUIRED => {
            let m = d.struct_of("PackageRequired")?;
            Typed::PackageRequired {
                package_name: d.string(m, "PackageRequired", "packageName")?,
                version_range: d.string(m, "PackageRequired", "versionRange")?,
            }
        }
        TYPE_GVK | TYPE_GVK_REQUIRED => d.gvk()?,
        TYPE_BUNDLE_OBJECT => {
            let m = d.struct_of("BundleObject")?;
            let data = d.string(m, "BundleObject", "data")?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.as_bytes())
                .map_err(|e| d.fail(format!("illegal base64 data: {e}")))?;
            Typed::BundleObject(bytes)
        }
        TYPE_CSV_METADATA => {
            d.struct_of("CSVMetadata")?;
            Typed::CsvMetadata
        }
        TYPE_CHANNEL => {
            let m = d.struct_of("Channel")?;
            Typed::Channel {
                channel_name: d.string(m, "Channel", "channelName")?,
            }
        }
        _ => Typed::Other,
    })
}

/// Decodes one property's value the way Go's `encoding/json` decodes it into opm's types,
/// with Go's error wording.
struct Decoder<'p> {
    /// The property's position in its list.
    index: usize,
    p: &'p Property,
}

impl<'p> Decoder<'p> {
    /// The error for this property, with `reason`.
    fn fail(&self, reason: String) -> PropertyError {
        PropertyError {
            index: self.index,
            type_: self.p.type_.clone(),
            reason,
        }
    }

    /// The value as a JSON object, as Go requires for struct `property.<name>`.
    fn struct_of(&self, name: &str) -> Result<&'p serde_json::Map<String, Value>, PropertyError> {
        self.p.value.as_object().ok_or_else(|| {
            self.fail(format!(
                "json: cannot unmarshal {} into Go value of type property.{name}",
                json_kind(&self.p.value)
            ))
        })
    }

    /// A string field of Go struct `go` (absent or null is empty).
    fn string(
        &self,
        map: &serde_json::Map<String, Value>,
        go: &str,
        key: &str,
    ) -> Result<String, PropertyError> {
        match lookup(map, key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.fail(format!(
                "json: cannot unmarshal {} into Go struct field {go}.{key} of type string",
                json_kind(other)
            ))),
        }
    }

    /// An `olm.gvk` or `olm.gvk.required` value.
    fn gvk(&self) -> Result<Typed, PropertyError> {
        let provided = self.p.type_ == TYPE_GVK;
        let go = if provided { "GVK" } else { "GVKRequired" };
        let m = self.struct_of(go)?;
        let (group, version, kind) = (
            self.string(m, go, "group")?,
            self.string(m, go, "version")?,
            self.string(m, go, "kind")?,
        );
        Ok(if provided {
            Typed::Gvk {
                group,
                version,
                kind,
            }
        } else {
            Typed::GvkRequired {
                group,
                version,
                kind,
            }
        })
    }
}

/// Replaces a large property value that decodes correctly by the smallest value of the same
/// type, for validation-only loads ([`super::load::LoadOptions::lean`]): `olm.csv.metadata`
/// becomes `{}`, `olm.bundle.object` `{"data": ""}`, other non-OLM types `true`. A value that
/// does not decode is kept, so the validator still reports it.
pub fn slim(index: usize, p: &mut Property) {
    match parse(index, p) {
        Ok(Typed::CsvMetadata) => p.value = json!({}),
        Ok(Typed::BundleObject(_)) => p.value = json!({"data": ""}),
        Ok(Typed::Other) if p.value.is_object() || p.value.is_array() => {
            p.value = Value::Bool(true)
        }
        _ => {}
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `olm.package` with opm's field order (`release` only when set).
pub fn package(name: &str, version: &str, release: &str) -> Property {
    let value = if release.is_empty() {
        json!({"packageName": name, "version": version})
    } else {
        json!({"packageName": name, "version": version, "release": release})
    };
    Property::new(TYPE_PACKAGE, value)
}

/// An `olm.gvk` property for this API.
pub fn gvk(group: &str, version: &str, kind: &str) -> Property {
    Property::new(
        TYPE_GVK,
        json!({"group": group, "kind": kind, "version": version}),
    )
}

/// An `olm.gvk.required` property for this API.
pub fn gvk_required(group: &str, version: &str, kind: &str) -> Property {
    Property::new(
        TYPE_GVK_REQUIRED,
        json!({"group": group, "kind": kind, "version": version}),
    )
}

/// An `olm.package.required` property: package `name` in version `range`.
pub fn package_required(name: &str, range: &str) -> Property {
    Property::new(
        TYPE_PACKAGE_REQUIRED,
        json!({"packageName": name, "versionRange": range}),
    )
}

/// An `olm.bundle.object` property carrying this manifest (JSON bytes, base64-encoded here).
pub fn bundle_object(manifest_json: &[u8]) -> Property {
    Property::new(
        TYPE_BUNDLE_OBJECT,
        json!({"data": base64::engine::general_purpose::STANDARD.encode(manifest_json)}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_shapes_fail_like_opm() {
        let bad = Property::new(TYPE_PACKAGE, json!({"packageName": 3}));
        assert_eq!(
            parse(2, &bad).unwrap_err().to_string(),
            "parse property[2] of type \"olm.package\": json: cannot unmarshal number into Go struct field Package.packageName of type string"
        );
        let obj = bundle_object(b"{}");
        assert_eq!(parse(0, &obj).unwrap(), Typed::BundleObject(b"{}".to_vec()));
        assert_eq!(
            parse(0, &Property::new("x.custom", json!(1))).unwrap(),
            Typed::Other
        );
    }
}
