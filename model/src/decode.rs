//! Reading Kubernetes objects given as values into this crate's typed views
//! ([`crate::csv`], [`crate::objects`]): structs whose fields are all optional and whose other
//! keys are kept as read, so that absent stays absent, `null` stays `null` (kept in `extra`)
//! and a value read prints back as it was.
//!
//! [`decode`] is as strict about types as Go's decoder (a field of the wrong type fails the
//! read, with its path and a message in OLM's words); [`read`] is lenient, keeping such a
//! field in `extra` (where it reads as absent) and returning the first one. The two are
//! separate decoders: serde's `Deserialize` is the strict one, [`ReadLenient`] the lenient one.
//!
//! Each typed view's declaration also gives its field table ([`Fields`]), for what reads
//! these fields by name elsewhere.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::{Deserialize, DeserializeOwned, Deserializer};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

/// Declares a struct whose fields are all optional and whose other keys are kept in `extra`,
/// with (de)serialization that keeps absent absent and `null` as `null` (see the module).
macro_rules! passthrough_struct {
    (@omitempty) => { false };
    (@omitempty omitempty) => { true };
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $field:ident: $ty:ty = $key:literal $($omitempty:ident)?, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: Option<$ty>, )*
            /// Fields OLM does not define here, and defined fields given as `null`, as read.
            pub extra: ::serde_json::Map<String, ::serde_json::Value>,
        }

        impl $name {
            /// The fields declared above, in their order, as Go's JSON decoding sees them.
            pub const FIELDS: $crate::decode::Fields = $crate::decode::Fields {
                name: stringify!($name),
                fields: &[$( $crate::decode::Field {
                    key: $key,
                    omitempty: $crate::decode::passthrough_struct!(@omitempty $($omitempty)?),
                    kind: <$ty as $crate::decode::GoKind>::KIND,
                }, )*],
            };
        }

        impl $crate::decode::GoKind for $name {
            const KIND: $crate::decode::Kind = $crate::decode::Kind::Struct(&$name::FIELDS);
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(None)?;
                $( if let Some(value) = &self.$field {
                    map.serialize_entry($key, value)?;
                } )*
                for (key, value) in &self.extra {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Fields;
                impl<'de> ::serde::de::Visitor<'de> for Fields {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("an object")
                    }
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        let mut out = $name::default();
                        while let Some(key) = map.next_key::<String>()? {
                            match key.as_str() {
                                $( $key => match map.next_value::<Option<$ty>>()? {
                                    Some(value) => out.$field = Some(value),
                                    None => {
                                        out.extra.insert(key, ::serde_json::Value::Null);
                                    }
                                }, )*
                                _ => {
                                    let value = map.next_value::<::serde_json::Value>()?;
                                    out.extra.insert(key, value);
                                }
                            }
                        }
                        Ok(out)
                    }
                }
                deserializer.deserialize_map(Fields)
            }
        }

        impl $crate::decode::ReadLenient for $name {
            fn read_lenient(value: &::serde_json::Value) -> Option<Self> {
                let mut out = $name::default();
                for (key, raw) in value.as_object()? {
                    match key.as_str() {
                        $( $key => match $crate::decode::lenient_field::<$ty>(raw) {
                            Some(value) => out.$field = Some(value),
                            None => {
                                out.extra.insert(key.clone(), raw.clone());
                            }
                        }, )*
                        _ => {
                            out.extra.insert(key.clone(), raw.clone());
                        }
                    }
                }
                Some(out)
            }
        }
    };
}

pub(crate) use passthrough_struct;

/// A field of a typed view as Go's JSON decoding sees it: its key, whether Go's declaration
/// tags it `omitempty`, and what its value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// The JSON key (`displayName`).
    pub key: &'static str,
    /// Whether Go's JSON tag says `omitempty` (the CSV's types in [`crate::csv`] mark it as
    /// OLM declares it; the Kubernetes views of [`crate::objects`] do not mark it).
    pub omitempty: bool,
    /// What the value is.
    pub kind: Kind,
}

/// The fields of one typed view, as its declaration lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields {
    /// The view's type name in this crate (`CsvSpec`, `ObjectMeta`, ...).
    pub name: &'static str,
    /// Its fields, in declaration order (Go's struct order for the CSV's types).
    pub fields: &'static [Field],
}

impl Fields {
    /// The field with JSON key `key` (exact spelling).
    pub fn get(&self, key: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.key == key)
    }

    /// The JSON keys, in declaration order.
    pub fn keys(&self) -> impl Iterator<Item = &'static str> + 'static {
        self.fields.iter().map(|f| f.key)
    }
}

/// What a field's value is, as far as Go's decoding of it matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A string (Go `string`).
    String,
    /// A boolean (Go `bool`).
    Bool,
    /// A 32-bit integer (Go `int32`).
    Int32,
    /// An integer read as 64 bits (a port, which Kubernetes reads as `int32`; see
    /// [`crate::objects`]).
    Int64,
    /// A map of strings (Go `map[string]string`): its keys are data, not fields.
    StringMap,
    /// Any value, kept as read (a Kubernetes type this crate does not model).
    Any,
    /// A list of values of one kind.
    List(&'static Kind),
    /// One of this crate's typed views.
    Struct(&'static Fields),
}

/// A type a typed view's field can have, and its [`Kind`].
pub trait GoKind {
    /// The field's kind.
    const KIND: Kind;
}

impl GoKind for String {
    const KIND: Kind = Kind::String;
}

impl GoKind for bool {
    const KIND: Kind = Kind::Bool;
}

impl GoKind for i32 {
    const KIND: Kind = Kind::Int32;
}

impl GoKind for i64 {
    const KIND: Kind = Kind::Int64;
}

impl GoKind for StringMap {
    const KIND: Kind = Kind::StringMap;
}

impl GoKind for Value {
    const KIND: Kind = Kind::Any;
}

impl GoKind for Map<String, Value> {
    const KIND: Kind = Kind::Any;
}

impl<T: GoKind> GoKind for Vec<T> {
    const KIND: Kind = Kind::List(&T::KIND);
}

/// A value that does not decode into a typed view.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("field {path}: {message}")]
pub struct DecodeError {
    /// The field's path, as `spec.installModes[0].supported` (`.` for the whole object).
    pub path: String,
    /// What is wrong with it, in OLM's terms.
    pub message: String,
}

/// A string-to-string map (labels, annotations), as Kubernetes defines them.
///
/// A value given as `null` reads as `""`, as Go's decoder reads it into a `map[string]string`;
/// the key is remembered so that it prints back as `null` while its value stays `""`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StringMap {
    entries: BTreeMap<String, String>,
    nulls: BTreeSet<String>,
}

impl StringMap {
    /// Whether `key` was given as `null` (it reads as `""`).
    pub fn was_null(&self, key: &str) -> bool {
        self.nulls.contains(key)
    }

    /// Whether every entry of `other` is in this map (a label selector matching labels).
    pub fn includes(&self, other: &StringMap) -> bool {
        other.iter().all(|(k, v)| self.get(k) == Some(v))
    }
}

impl std::ops::Deref for StringMap {
    type Target = BTreeMap<String, String>;
    fn deref(&self) -> &Self::Target {
        &self.entries
    }
}

impl std::ops::DerefMut for StringMap {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.entries
    }
}

impl From<BTreeMap<String, String>> for StringMap {
    fn from(entries: BTreeMap<String, String>) -> Self {
        Self {
            entries,
            nulls: BTreeSet::new(),
        }
    }
}

impl Serialize for StringMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (key, value) in &self.entries {
            if value.is_empty() && self.nulls.contains(key) {
                map.serialize_entry(key, &Value::Null)?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for StringMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = BTreeMap::<String, Option<String>>::deserialize(deserializer)?;
        let mut out = StringMap::default();
        for (key, value) in raw {
            if value.is_none() {
                out.nulls.insert(key.clone());
            }
            out.entries.insert(key, value.unwrap_or_default());
        }
        Ok(out)
    }
}

/// A text field, `""` when absent.
pub fn text(field: &Option<String>) -> &str {
    field.as_deref().unwrap_or("")
}

/// A field as it was read: its typed value, or what stands in `extra` under its key (`null`,
/// or a value of a type OLM does not read there).
pub fn as_read<T: Serialize>(
    typed: &Option<T>,
    extra: &Map<String, Value>,
    key: &str,
) -> Option<Value> {
    match typed {
        Some(value) => serde_json::to_value(value).ok(),
        None => extra.get(key).cloned(),
    }
}

/// Reads any part of a CSV (`T` one of this module's structs) as
/// [`ClusterServiceVersion::read`] reads a whole one.
/// Reads `value` as `T` leniently (see the module): every field of the type Go reads lands
/// typed, any other stays in `extra`; the first such field comes with it. A value that is not
/// an object reads as the empty `T`.
pub fn read<T: DeserializeOwned + ReadLenient + Default>(
    value: &Value,
) -> (T, Option<DecodeError>) {
    let refused = match decode::<T>(value) {
        Ok(typed) => return (typed, None),
        Err(refused) => refused,
    };
    (lenient(value), Some(refused))
}

/// Reads `value` as `T` leniently, in one pass, without the first refusal [`read`] reports
/// (a value that reads strictly reads the same way here).
pub fn lenient<T: ReadLenient + Default>(value: &Value) -> T {
    T::read_lenient(value).unwrap_or_default()
}

/// The lenient decoder ([`lenient`]), beside the strict one (serde's `Deserialize`, which
/// the typed views implement as Go's decoder reads): each typed view reads a field of a type
/// Go does not read there into its `extra`, where the strict read fails.
pub trait ReadLenient: Sized {
    /// `value` read as this type, leniently; `None` when the value itself is not of a type Go
    /// reads here (a string for a struct, a list with an item of another type).
    fn read_lenient(value: &Value) -> Option<Self>;
}

/// Types read the same way by both decoders: as serde reads them.
macro_rules! read_strictly {
    ($($ty:ty),*) => {$(
        impl ReadLenient for $ty {
            fn read_lenient(value: &Value) -> Option<Self> {
                Self::deserialize(value).ok()
            }
        }
    )*};
}

read_strictly!(String, bool, i32, i64, StringMap, Value, Map<String, Value>);

impl<T: ReadLenient> ReadLenient for Vec<T> {
    fn read_lenient(value: &Value) -> Option<Self> {
        value.as_array()?.iter().map(T::read_lenient).collect()
    }
}

/// A field's value read leniently: `None` (the value is kept in `extra`) when it is `null` or
/// not of a type Go reads there.
pub fn lenient_field<T: ReadLenient>(value: &Value) -> Option<T> {
    if value.is_null() {
        return None;
    }
    T::read_lenient(value)
}

/// Decodes `value` into `T` with the failing field's path and a message in OLM's terms.
pub fn decode<T: DeserializeOwned>(value: &Value) -> Result<T, DecodeError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        DecodeError {
            path,
            message: olm_message(err.inner()),
        }
    })
}

/// A decoding error of a CSV field (or of a Kubernetes object nested in one) in OLM's words:
/// what OLM's type reads at the field, what was found, and that OLM's decoder refuses it as
/// well; without the JSON position, which a value read from YAML does not have.
pub fn olm_message(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let message = match text.split_once(" at line ") {
        Some((message, _)) => message,
        None => &text,
    };
    let Some(rest) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
    else {
        return message.to_owned();
    };
    let (found, expected) = rest.rsplit_once(", expected ").unwrap_or((rest, "?"));
    let expected = match expected {
        "a string" => "a string",
        "a boolean" => "a boolean",
        "i32" => "a 32-bit integer",
        "a sequence" => "a list",
        "a map" | "an object" => "an object",
        other => other,
    };
    if found == "null" {
        // Go reads `null` as the zero value where the typed model has no place to keep it.
        return format!(
            "OLM reads {expected} here, found null (Go's decoder reads it as empty; olmpack does not)"
        );
    }
    format!("OLM reads {expected} here, found {found} (OLM v0's decoder refuses it too)")
}
