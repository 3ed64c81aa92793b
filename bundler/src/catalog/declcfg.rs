//! The File-Based Catalog serialisation layer: the four OLM schemas as typed values, anything
//! else kept as raw JSON.
//!
//! Contract:
//! - [`Meta::from_value`] accepts what opm's loader accepts: `schema`, `package` and `name` are
//!   found case-insensitively (two keys that differ only by case are an error), and the typed
//!   fields of the OLM schemas are matched the way Go's `encoding/json` matches struct fields
//!   (exact key first, then case-insensitive). Unknown keys are ignored, as opm does.
//! - Parsing never panics; every failure names the schema, object and field.
//! - Serialising writes the fields in opm's order and omits the fields opm omits when empty, so
//!   `olmpack` output and `opm render` output compare equal as JSON.
#![warn(missing_docs)]

use serde::Serialize;
use serde_json::{Map, Value};

use olmpack_model::csv::Icon;

/// `schema` value of a package blob.
pub const SCHEMA_PACKAGE: &str = "olm.package";
/// `schema` value of a channel blob.
pub const SCHEMA_CHANNEL: &str = "olm.channel";
/// `schema` value of a bundle blob.
pub const SCHEMA_BUNDLE: &str = "olm.bundle";
/// `schema` value of a deprecations blob.
pub const SCHEMA_DEPRECATIONS: &str = "olm.deprecations";

/// A blob that does not fit its schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeclcfgError {
    /// A catalog document is a scalar or list where a JSON object is required.
    #[error("object is not a mapping")]
    NotAnObject,
    /// A catalog object lacks the `schema` key, so opm cannot tell what it is.
    #[error("object has no `schema` field")]
    MissingSchema,
    /// Two keys of one object differ only by letter case, which opm rejects as ambiguous.
    #[error("duplicate keys for key {folded:?}: {keys:?}")]
    DuplicateKeys {
        /// The key in lower case.
        folded: String,
        /// The keys as written.
        keys: Vec<String>,
    },
    /// A typed field of an OLM schema has the wrong JSON type (e.g. a number where a string belongs).
    #[error("{schema} {name:?}: field `{field}` must be {expected}")]
    FieldType {
        /// The object's schema, e.g. `olm.bundle`.
        schema: String,
        /// The object's name.
        name: String,
        /// The field as opm names it, e.g. `defaultChannel`.
        field: String,
        /// The JSON type it must have, e.g. "a string".
        expected: &'static str,
    },
}

/// Everything read from a catalog: the OLM schemas in file order, and every other blob.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeclarativeConfig {
    /// The `olm.package` blobs.
    pub packages: Vec<Package>,
    /// The `olm.channel` blobs.
    pub channels: Vec<Channel>,
    /// The `olm.bundle` blobs.
    pub bundles: Vec<Bundle>,
    /// The `olm.deprecations` blobs.
    pub deprecations: Vec<Deprecation>,
    /// Blobs of any other schema, kept as read.
    pub others: Vec<Meta>,
}

impl DeclarativeConfig {
    /// Appends every object of `other` (moving its lists whole where this one has none, so a
    /// catalog of one file is not copied).
    pub fn merge(&mut self, other: DeclarativeConfig) {
        append(&mut self.packages, other.packages);
        append(&mut self.channels, other.channels);
        append(&mut self.bundles, other.bundles);
        append(&mut self.deprecations, other.deprecations);
        append(&mut self.others, other.others);
    }

    /// Number of objects of every schema.
    pub fn len(&self) -> usize {
        self.packages.len()
            + self.channels.len()
            + self.bundles.len()
            + self.deprecations.len()
            + self.others.len()
    }

    /// True when the catalog holds no object of any schema.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds one blob, typed by its schema.
    pub fn push_meta(&mut self, meta: Meta) -> Result<(), DeclcfgError> {
        match meta.schema.as_str() {
            SCHEMA_PACKAGE => self.packages.push(Package::from_meta(meta)?),
            SCHEMA_CHANNEL => self.channels.push(Channel::from_meta(meta)?),
            SCHEMA_BUNDLE => self.bundles.push(Bundle::from_meta(meta)?),
            SCHEMA_DEPRECATIONS => self.deprecations.push(Deprecation::from_meta(meta)?),
            "" => return Err(DeclcfgError::MissingSchema),
            _ => self.others.push(meta),
        }
        Ok(())
    }

    /// Every object as JSON values, in opm's write order: per package (sorted by name) the
    /// package, its channels by name, its bundles by name, other blobs by schema, then the
    /// deprecations; blobs of no package last, in the order read.
    pub fn to_values(&self) -> Vec<Value> {
        use std::collections::BTreeMap;
        #[derive(Default)]
        struct Group<'a> {
            packages: Vec<&'a Package>,
            channels: Vec<&'a Channel>,
            bundles: Vec<&'a Bundle>,
            others: Vec<&'a Meta>,
            deprecations: Vec<&'a Deprecation>,
        }
        let mut groups: BTreeMap<&str, Group<'_>> = BTreeMap::new();
        let mut root_others: Vec<&Meta> = Vec::new();
        for p in &self.packages {
            groups.entry(&p.name).or_default().packages.push(p);
        }
        for c in &self.channels {
            groups.entry(&c.package).or_default().channels.push(c);
        }
        for b in &self.bundles {
            groups.entry(&b.package).or_default().bundles.push(b);
        }
        for d in &self.deprecations {
            groups.entry(&d.package).or_default().deprecations.push(d);
        }
        for o in &self.others {
            if o.package.is_empty() {
                root_others.push(o);
            } else {
                groups.entry(&o.package).or_default().others.push(o);
            }
        }
        let mut out = Vec::with_capacity(self.len());
        for (_, mut g) in groups {
            // Go's `sort.Slice`, as opm sorts them: equal names end where Go leaves them.
            super::gosort::sort_slice(&mut g.channels, |a, b| a.name < b.name);
            super::gosort::sort_slice(&mut g.bundles, |a, b| a.name < b.name);
            g.others.sort_by(|a, b| a.schema.cmp(&b.schema));
            out.extend(g.packages.iter().map(|p| to_value(*p)));
            out.extend(g.channels.iter().map(|c| to_value(*c)));
            out.extend(g.bundles.iter().map(|b| to_value(*b)));
            out.extend(g.others.iter().map(|o| o.blob.clone()));
            out.extend(g.deprecations.iter().map(|d| to_value(*d)));
        }
        // Blobs of no package come last, in the order read (opm does not sort them).
        out.extend(root_others.iter().map(|o| o.blob.clone()));
        out
    }
}

/// `more` after `to`'s items: `more` itself when `to` is empty.
fn append<T>(to: &mut Vec<T>, more: Vec<T>) {
    if to.is_empty() {
        *to = more;
    } else {
        to.extend(more);
    }
}

/// A typed blob as JSON (the typed schemas always serialise).
pub fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// Any blob: its schema, package and name (found case-insensitively) and the blob itself.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// Where the blob was read from, when it was read from a file.
    pub origin: Option<Origin>,
    /// The `schema` value.
    pub schema: String,
    /// The `package` value (empty when absent).
    pub package: String,
    /// The `name` value (empty when absent).
    pub name: String,
    /// The whole blob as read.
    pub blob: Value,
}

impl Meta {
    /// Reads the identifying keys of a blob (see the module contract).
    pub fn from_value(blob: Value) -> Result<Meta, DeclcfgError> {
        let Value::Object(map) = &blob else {
            return Err(DeclcfgError::NotAnObject);
        };
        let mut folded: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for key in map.keys() {
            folded
                .entry(key.to_lowercase())
                .or_default()
                .push(key.clone());
        }
        if let Some((folded, keys)) = folded.iter().find(|(_, keys)| keys.len() > 1) {
            return Err(DeclcfgError::DuplicateKeys {
                folded: folded.clone(),
                keys: keys.clone(),
            });
        }
        let field = |name: &str| -> Result<String, DeclcfgError> {
            match folded.get(name).and_then(|k| map.get(&k[0])) {
                None => Ok(String::new()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(DeclcfgError::FieldType {
                    schema: String::new(),
                    name: String::new(),
                    field: name.to_owned(),
                    expected: "a string",
                }),
            }
        };
        Ok(Meta {
            origin: None,
            schema: field("schema")?,
            package: field("package")?,
            name: field("name")?,
            blob,
        })
    }
}

/// The file and document index a blob came from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin {
    /// Relative to the catalog root.
    pub file: std::sync::Arc<std::path::Path>,
    /// The document's index within the file.
    pub index: usize,
}

/// One `{type, value}` property.
#[derive(Clone, Debug)]
pub struct Property {
    /// The property type, e.g. `olm.gvk`.
    pub type_: String,
    /// The property value; its shape depends on the type.
    pub value: Value,
    /// Whether opm holds the value's bytes with `<`, `>` and `&` escaped (`\u003c`, `\u003e`,
    /// `\u0026`): a value it copied from a YAML metadata file went through Go's YAML-to-JSON
    /// conversion, which escapes them, and opm's JSON output keeps a value's bytes as they are.
    /// Values opm builds itself or reads from JSON are not escaped. Not part of equality.
    pub html_escaped: bool,
}

impl Property {
    /// A property of this type with this value.
    pub fn new(type_: impl Into<String>, value: Value) -> Self {
        Self {
            type_: type_.into(),
            value,
            html_escaped: false,
        }
    }
}

impl PartialEq for Property {
    fn eq(&self, other: &Self) -> bool {
        self.type_ == other.type_ && self.value == other.value
    }
}

impl Serialize for Property {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut s = serializer.serialize_struct("Property", 2)?;
        s.serialize_field("type", &self.type_)?;
        if self.html_escaped {
            s.serialize_field("value", &super::gojson::HtmlEscaped(&self.value))?;
        } else {
            s.serialize_field("value", &self.value)?;
        }
        s.end()
    }
}

/// An `olm.package` blob: one operator package and its default channel.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    /// Where the blob was read from (never serialised).
    #[serde(skip)]
    pub origin: Option<Origin>,
    /// Always [`SCHEMA_PACKAGE`].
    pub schema: String,
    /// The package name.
    pub name: String,
    /// The channel installed when the user names none.
    pub default_channel: String,
    /// The package icon, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon: Option<Icon>,
    /// Package description (may be long Markdown).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Package-level properties.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
}

/// An `olm.channel` blob: an upgrade channel of one package and its entries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Channel {
    /// Where the blob was read from (never serialised).
    #[serde(skip)]
    pub origin: Option<Origin>,
    /// Always [`SCHEMA_CHANNEL`].
    pub schema: String,
    /// The channel name.
    pub name: String,
    /// The package the channel belongs to.
    pub package: String,
    /// The bundles in the channel with their upgrade edges.
    pub entries: Vec<ChannelEntry>,
    /// Channel-level properties.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
}

/// One bundle in a channel and the bundles it upgrades from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelEntry {
    /// The bundle name (a CSV name).
    pub name: String,
    /// The bundle this one replaces (empty for none).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub replaces: String,
    /// Bundles this one skips (upgrades directly from).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skips: Vec<String>,
    /// Semver range of versions this one upgrades from, e.g. `>=1.0.0 <1.2.0` (empty for none).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub skip_range: String,
}

/// An `olm.bundle` blob: one bundle image and what it provides and requires.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bundle {
    /// Where the blob was read from (never serialised).
    #[serde(skip)]
    pub origin: Option<Origin>,
    /// Always [`SCHEMA_BUNDLE`].
    pub schema: String,
    /// The bundle name (a CSV name).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The package the bundle belongs to.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub package: String,
    /// Pull spec of the bundle image.
    pub image: String,
    /// Bundle properties (package, GVKs, requirements, bundle objects, ...).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
    /// Images the bundle uses, for mirroring.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub related_images: Vec<RelatedImage>,
}

/// One image a bundle uses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RelatedImage {
    /// What the image is for (may be empty).
    pub name: String,
    /// The image pull spec.
    pub image: String,
}

/// An `olm.deprecations` blob: deprecation notices for one package.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Deprecation {
    /// Where the blob was read from (never serialised).
    #[serde(skip)]
    pub origin: Option<Origin>,
    /// Always [`SCHEMA_DEPRECATIONS`].
    pub schema: String,
    /// The package the notices are about.
    pub package: String,
    /// The notices.
    pub entries: Vec<DeprecationEntry>,
}

/// One deprecation notice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeprecationEntry {
    /// The package, channel or bundle that is deprecated.
    pub reference: Reference,
    /// The message shown to users.
    pub message: String,
}

/// A reference to a package, channel or bundle within one package.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Reference {
    /// What is referenced: `olm.package`, `olm.channel` or `olm.bundle`.
    pub schema: String,
    /// The channel or bundle name (empty for the package itself).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// Reads typed fields out of a blob the way Go's `encoding/json` does for a struct.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    schema: &'a str,
    name: String,
}

impl<'a> Fields<'a> {
    fn new(value: &'a Value, schema: &'a str) -> Result<Self, DeclcfgError> {
        let map = value.as_object().ok_or(DeclcfgError::NotAnObject)?;
        let mut fields = Fields {
            map,
            schema,
            name: String::new(),
        };
        fields.name = fields.string("name").unwrap_or_default();
        Ok(fields)
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        lookup(self.map, key).filter(|v| !v.is_null())
    }

    fn err(&self, field: &str, expected: &'static str) -> DeclcfgError {
        DeclcfgError::FieldType {
            schema: self.schema.to_owned(),
            name: self.name.clone(),
            field: field.to_owned(),
            expected,
        }
    }

    fn string(&self, key: &str) -> Result<String, DeclcfgError> {
        match self.get(key) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(self.err(key, "a string")),
        }
    }

    fn array(&self, key: &str) -> Result<&'a [Value], DeclcfgError> {
        match self.get(key) {
            None => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(_) => Err(self.err(key, "a list")),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, DeclcfgError> {
        self.array(key)?
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Null => Ok(String::new()),
                _ => Err(self.err(key, "a list of strings")),
            })
            .collect()
    }

    fn sub(&self, value: &'a Value, field: &str) -> Result<Fields<'a>, DeclcfgError> {
        let map = value
            .as_object()
            .ok_or_else(|| self.err(field, "a mapping"))?;
        Ok(Fields {
            map,
            schema: self.schema,
            name: self.name.clone(),
        })
    }
}

/// Removes a field from a blob (Go's field matching, like [`lookup`]), so large values move
/// instead of being copied.
fn take(blob: &mut Value, key: &str) -> Option<Value> {
    let map = blob.as_object_mut()?;
    let found = if map.contains_key(key) {
        key.to_owned()
    } else {
        map.keys().find(|k| k.eq_ignore_ascii_case(key))?.clone()
    };
    map.remove(&found)
}

/// Takes the `properties` list out of a blob (moving every value).
fn take_properties(
    blob: &mut Value,
    schema: &str,
    name: &str,
) -> Result<Vec<Property>, DeclcfgError> {
    let err = |field: String, expected: &'static str| DeclcfgError::FieldType {
        schema: schema.to_owned(),
        name: name.to_owned(),
        field,
        expected,
    };
    let items = match take(blob, "properties") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(err("properties".to_owned(), "a list")),
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, mut v)| {
            let field = format!("properties[{i}]");
            if !v.is_object() {
                return Err(err(field, "a mapping"));
            }
            let type_ = match take(&mut v, "type") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s,
                Some(_) => return Err(err(format!("{field}.type"), "a string")),
            };
            let value = take(&mut v, "value").unwrap_or(Value::Null);
            Ok(Property::new(type_, value))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(exact)
}

/// A list without spare capacity: a catalog holds hundreds of thousands of short lists, which
/// collecting leaves with room for four items.
fn exact<T>(mut items: Vec<T>) -> Vec<T> {
    items.shrink_to_fit();
    items
}

/// Go's struct-field matching: the exact key, else the first key equal ignoring case.
pub(crate) fn lookup<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    map.get(key).or_else(|| {
        map.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

impl Package {
    /// Reads the typed package fields out of a blob of schema `olm.package`.
    pub fn from_meta(mut meta: Meta) -> Result<Self, DeclcfgError> {
        let properties = take_properties(&mut meta.blob, SCHEMA_PACKAGE, &meta.name)?;
        let f = Fields::new(&meta.blob, SCHEMA_PACKAGE)?;
        let icon = match f.get("icon") {
            None => None,
            Some(v) => {
                let i = f.sub(v, "icon")?;
                Some(Icon::new(i.string("base64data")?, i.string("mediatype")?))
            }
        };
        Ok(Package {
            origin: meta.origin.clone(),
            schema: meta.schema.clone(),
            name: f.string("name")?,
            default_channel: f.string("defaultChannel")?,
            icon,
            description: f.string("description")?,
            properties,
        })
    }
}

impl Channel {
    /// Reads the typed channel fields out of a blob of schema `olm.channel`.
    pub fn from_meta(mut meta: Meta) -> Result<Self, DeclcfgError> {
        let properties = take_properties(&mut meta.blob, SCHEMA_CHANNEL, &meta.name)?;
        let f = Fields::new(&meta.blob, SCHEMA_CHANNEL)?;
        let entries = f
            .array("entries")?
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let e = f.sub(v, &format!("entries[{i}]"))?;
                Ok(ChannelEntry {
                    name: e.string("name")?,
                    replaces: e.string("replaces")?,
                    skips: e.strings("skips")?,
                    skip_range: e.string("skipRange")?,
                })
            })
            .collect::<Result<Vec<_>, DeclcfgError>>()?;
        Ok(Channel {
            origin: meta.origin.clone(),
            schema: meta.schema.clone(),
            name: f.string("name")?,
            package: f.string("package")?,
            entries: exact(entries),
            properties,
        })
    }
}

impl Bundle {
    /// Reads the typed bundle fields out of a blob of schema `olm.bundle`.
    pub fn from_meta(mut meta: Meta) -> Result<Self, DeclcfgError> {
        let properties = take_properties(&mut meta.blob, SCHEMA_BUNDLE, &meta.name)?;
        let f = Fields::new(&meta.blob, SCHEMA_BUNDLE)?;
        let related_images = f
            .array("relatedImages")?
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let r = f.sub(v, &format!("relatedImages[{i}]"))?;
                Ok(RelatedImage {
                    name: r.string("name")?,
                    image: r.string("image")?,
                })
            })
            .collect::<Result<Vec<_>, DeclcfgError>>()?;
        Ok(Bundle {
            origin: meta.origin.clone(),
            schema: meta.schema.clone(),
            name: f.string("name")?,
            package: f.string("package")?,
            image: f.string("image")?,
            properties,
            related_images: exact(related_images),
        })
    }

    /// Whether this blob has only `schema` and `image`, the form templates expand.
    pub fn is_image_reference(&self) -> bool {
        !self.schema.is_empty()
            && !self.image.is_empty()
            && self.package.is_empty()
            && self.properties.is_empty()
            && self.related_images.is_empty()
    }
}

impl Deprecation {
    /// Reads the typed deprecation entries out of a blob of schema `olm.deprecations`.
    pub fn from_meta(meta: Meta) -> Result<Self, DeclcfgError> {
        let f = Fields::new(&meta.blob, SCHEMA_DEPRECATIONS)?;
        let entries = f
            .array("entries")?
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let e = f.sub(v, &format!("entries[{i}]"))?;
                let reference = match e.get("reference") {
                    None => Reference {
                        schema: String::new(),
                        name: String::new(),
                    },
                    Some(r) => {
                        let r = e.sub(r, &format!("entries[{i}].reference"))?;
                        Reference {
                            schema: r.string("schema")?,
                            name: r.string("name")?,
                        }
                    }
                };
                Ok(DeprecationEntry {
                    reference,
                    message: e.string("message")?,
                })
            })
            .collect::<Result<_, DeclcfgError>>()?;
        Ok(Deprecation {
            origin: meta.origin.clone(),
            schema: meta.schema.clone(),
            package: f.string("package")?,
            entries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_case_insensitive_and_duplicates_by_case_fail() {
        let meta = Meta::from_value(json!({"Schema": "olm.package", "NAME": "p"})).unwrap();
        assert_eq!(
            (meta.schema.as_str(), meta.name.as_str()),
            ("olm.package", "p")
        );
        let err = Meta::from_value(json!({"schema": "x", "Schema": "y"})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "duplicate keys for key \"schema\": [\"Schema\", \"schema\"]"
        );
    }

    #[test]
    fn bundle_round_trips_in_opm_field_order() {
        let blob = json!({"schema": "olm.bundle", "name": "b", "package": "p", "image": "",
            "properties": [{"type": "olm.package", "value": {"packageName": "p", "version": "1.0.0"}}]});
        let mut cfg = DeclarativeConfig::default();
        cfg.push_meta(Meta::from_value(blob.clone()).unwrap())
            .unwrap();
        let text = serde_json::to_string(&cfg.bundles[0]).unwrap();
        assert!(text.starts_with(r#"{"schema":"olm.bundle","name":"b","package":"p","image":"""#));
        assert_eq!(cfg.to_values(), vec![blob]);
    }

    #[test]
    fn blobs_of_no_package_stay_in_the_order_read() {
        let mut cfg = DeclarativeConfig::default();
        let blobs = [
            json!({"schema": "z.custom", "x": 1}),
            json!({"schema": "a.custom", "x": 2}),
            json!({"schema": "olm.package", "name": "p"}),
        ];
        for b in &blobs {
            cfg.push_meta(Meta::from_value(b.clone()).unwrap()).unwrap();
        }
        let values = cfg.to_values();
        assert_eq!(values[0]["schema"], "olm.package");
        assert_eq!(values[1..], blobs[..2]);
    }

    #[test]
    fn wrong_field_types_name_the_field() {
        let meta =
            Meta::from_value(json!({"schema": "olm.channel", "name": "c", "entries": {}})).unwrap();
        let err = Channel::from_meta(meta).unwrap_err();
        assert_eq!(
            err.to_string(),
            "olm.channel \"c\": field `entries` must be a list"
        );
    }
}
