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
    parse_as(index, p, true)
}

/// [`parse`]; with `decode` false an `olm.bundle.object`'s data is only checked, and comes
/// back empty.
fn parse_as(index: usize, p: &Property, decode: bool) -> Result<Typed, PropertyError> {
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
            let data = d.str_of(m, "BundleObject", "data")?;
            if !decode && go_base64_valid(data.as_bytes()) {
                return Ok(Typed::BundleObject(Vec::new()));
            }
            let bytes = go_base64(data).map_err(|e| d.fail(base64_problem(&e)))?;
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
        self.str_of(map, go, key).map(str::to_owned)
    }

    /// [`Self::string`], borrowed.
    fn str_of<'m>(
        &self,
        map: &'m serde_json::Map<String, Value>,
        go: &str,
        key: &str,
    ) -> Result<&'m str, PropertyError> {
        match lookup(map, key) {
            None | Some(Value::Null) => Ok(""),
            Some(Value::String(s)) => Ok(s),
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
/// and `olm.bundle.object` become `{}`, other non-OLM types `true`. A value that
/// does not decode is kept, so the validator still reports it.
pub fn slim(index: usize, p: &mut Property) {
    match parse_as(index, p, false) {
        Ok(Typed::CsvMetadata) => p.value = json!({}),
        // `{}` reads as `{"data": ""}` (an absent field is empty) and allocates nothing.
        Ok(Typed::BundleObject(_)) => p.value = Value::Object(serde_json::Map::new()),
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

/// Base64 as Go's `encoding/json` decodes a `[]byte` field (`base64.StdEncoding`): standard
/// alphabet, padding required, line breaks (`\r`, `\n`) anywhere ignored, unused bits of the
/// last character not checked (Go's encoding is not strict).
fn go_base64(data: &str) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::engine::{GeneralPurpose, GeneralPurposeConfig};
    const GO_STD: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
    );
    let engine = &GO_STD;
    if memchr::memchr2(b'\r', b'\n', data.as_bytes()).is_some() {
        let joined: Vec<u8> = data
            .bytes()
            .filter(|b| *b != b'\r' && *b != b'\n')
            .collect();
        return engine.decode(joined);
    }
    engine.decode(data.as_bytes())
}

/// Why base64 data does not decode, in our words (Go names the byte too: "illegal base64
/// data at input byte N"); offsets count the data without its line breaks.
fn base64_problem(e: &base64::DecodeError) -> String {
    match e {
        base64::DecodeError::InvalidByte(at, b) | base64::DecodeError::InvalidLastSymbol(at, b) => {
            format!(
                "illegal base64 data at input byte {at}: {:?} is not a base64 character here",
                char::from(*b)
            )
        }
        base64::DecodeError::InvalidLength(n) => format!(
            "illegal base64 data: {n} characters, not a multiple of 4 (the padding `=` is required)"
        ),
        base64::DecodeError::InvalidPadding => {
            "illegal base64 data: the padding `=` is missing or misplaced".to_owned()
        }
    }
}

/// Whether [`go_base64`] accepts `data`, checked without decoding it (a fast path for
/// validation: `false` when unsure, e.g. with line breaks, and the caller decodes).
fn go_base64_valid(data: &[u8]) -> bool {
    if !data.len().is_multiple_of(4) || memchr::memchr2(b'\r', b'\n', data).is_some() {
        return false;
    }
    let pad = data
        .iter()
        .rev()
        .take(2)
        .take_while(|b| **b == b'=')
        .count();
    let body = &data[..data.len() - pad];
    // In 64-byte chunks, without branches per byte, so the check runs on vector units.
    let alphabet = |b: u8| {
        b.is_ascii_uppercase()
            | b.is_ascii_lowercase()
            | b.is_ascii_digit()
            | (b == b'+')
            | (b == b'/')
    };
    let mut chunks = body.chunks_exact(64);
    let whole = chunks
        .by_ref()
        .all(|c| c.iter().fold(true, |ok, b| ok & alphabet(*b)));
    whole && chunks.remainder().iter().all(|b| alphabet(*b))
}

/// An `olm.bundle.object` property carrying this manifest (JSON bytes, base64-encoded here).
pub fn bundle_object(manifest_json: &[u8]) -> Property {
    let data = base64::engine::general_purpose::STANDARD.encode(manifest_json);
    // Built by hand: `json!` would copy the (often megabytes of) text once more.
    let value = serde_json::Map::from_iter([("data".to_owned(), Value::String(data))]);
    Property::new(TYPE_BUNDLE_OBJECT, Value::Object(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The fast check never accepts what the decoder refuses, and never refuses clean
        /// base64 (it may only be unsure, with line breaks).
        #[test]
        fn fast_base64_check_agrees_with_the_decoder(data in "[A-Za-z0-9+/= \\n]{0,24}") {
            if go_base64_valid(data.as_bytes()) {
                proptest::prop_assert!(go_base64(&data).is_ok(), "{:?}", data);
            } else if !data.contains('\n') {
                proptest::prop_assert!(go_base64(&data).is_err(), "{:?}", data);
            }
        }
    }

    #[test]
    fn wrong_shapes_fail_like_opm() {
        let bad = Property::new(TYPE_PACKAGE, json!({"packageName": 3}));
        assert_eq!(
            parse(2, &bad).unwrap_err().to_string(),
            "parse property[2] of type \"olm.package\": json: cannot unmarshal number into Go struct field Package.packageName of type string"
        );
        let obj = bundle_object(b"{}");
        assert_eq!(parse(0, &obj).unwrap(), Typed::BundleObject(b"{}".to_vec()));
        // Go's decoder skips line breaks inside base64 (a wrapped encoding is accepted).
        let wrapped = Property::new(TYPE_BUNDLE_OBJECT, json!({"data": "e3\r\n0="}));
        assert_eq!(
            parse(0, &wrapped).unwrap(),
            Typed::BundleObject(b"{}".to_vec())
        );
        for (data, valid) in [
            ("", true),
            ("e30=", true),
            ("e31=", true),
            ("YWJj", true),
            ("YQ==", true),
            ("YQ=", false),
            ("Y===", false),
            ("====", false),
            ("e3=0", false),
            ("e3 0", false),
            ("e3\n0=", false),
        ] {
            assert_eq!(go_base64_valid(data.as_bytes()), valid, "{data:?}");
            if valid {
                assert!(go_base64(data).is_ok(), "{data:?}");
            }
        }
        let loose = Property::new(TYPE_BUNDLE_OBJECT, json!({"data": "e31="}));
        assert_eq!(
            parse(0, &loose).unwrap(),
            Typed::BundleObject(b"{}".to_vec())
        );
        for (data, problem) in [
            (
                "e3 0=",
                "illegal base64 data at input byte 2: ' ' is not a base64 character here",
            ),
            (
                "YQ=",
                "illegal base64 data: the padding `=` is missing or misplaced",
            ),
            (
                "YWJjZ",
                "illegal base64 data: 5 characters, not a multiple of 4 (the padding `=` is required)",
            ),
        ] {
            let bad = Property::new(TYPE_BUNDLE_OBJECT, json!({"data": data}));
            assert_eq!(
                parse(0, &bad).unwrap_err().to_string(),
                format!("parse property[0] of type \"olm.bundle.object\": {problem}")
            );
        }
        assert_eq!(
            parse(0, &Property::new("x.custom", json!(1))).unwrap(),
            Typed::Other
        );
    }
}
