//! Hub-and-spoke conversion of `WebApp` objects: `v1` is the hub; `v1alpha1` and `v1beta1`
//! convert only to and from it (spoke → spoke goes through the hub). Pure functions, no I/O.
//!
//! Guarantees:
//! - Lossless round trips both ways: spoke → hub → spoke and hub → spoke → hub return the
//!   input. Hub fields a spoke cannot hold (`database.key` for v1alpha1, `logLevel` for both)
//!   are kept as JSON in the annotation [`PRESERVED_ANNOTATION`] on the spoke and restored (and
//!   the annotation removed) on the way up, as Cluster API does. A restored value is applied
//!   only where its parent still exists: a user who removes the database from a v1alpha1
//!   object also removes the preserved `key`.
//! - Size limit: the preserved data is at most [`MAX_PRESERVED_BYTES`]. Objects that pass
//!   the CRD's validation stay far below it (every preserved field is bounded: an enum and a
//!   253-character key, under 300 bytes). An object over the limit (only possible for data
//!   that bypassed validation) loses the preserved fields instead of failing conversion,
//!   because one failing object breaks every list and watch of the resource.
//! - [`convert_object`] changes nothing in `metadata` except `metadata.annotations`, and only
//!   when the preserved data changes; the apiserver discards any other metadata change.
//! - `status` has one schema in every version; [`convert_object`] passes it through without
//!   decoding it, so an odd status never fails a conversion.
//!
//! Caveat: a `spec` that does not match its own version's schema (types, required `image`)
//! fails the conversion with a message naming the object; the apiserver's validation on
//! write keeps such objects out of etcd.
//!
//! Assumption: objects do not carry [`PRESERVED_ANNOTATION`] set by hand on the hub; such a
//! value is overwritten or dropped on the next down-conversion.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::api::{KIND, Version, v1, v1alpha1, v1beta1};

/// Annotation that carries hub-only fields while an object is held at an older version.
pub const PRESERVED_ANNOTATION: &str = "apps.olmpack.dev/conversion-data";
/// Upper bound on the JSON stored in [`PRESERVED_ANNOTATION`] (the apiserver allows 256 KiB
/// for all annotations together).
pub const MAX_PRESERVED_BYTES: usize = 8 * 1024;

/// Failure to convert one object.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConversionError {
    #[error("object {index} is not a JSON object")]
    NotAnObject { index: usize },
    #[error("object {index} has no string apiVersion")]
    MissingApiVersion { index: usize },
    #[error("object {index} ({name}) has apiVersion {api_version}, which is not a WebApp version")]
    UnknownVersion {
        index: usize,
        name: String,
        api_version: String,
    },
    #[error("object {index} ({name}) has kind {kind:?}, expected WebApp")]
    WrongKind {
        index: usize,
        name: String,
        kind: String,
    },
    #[error("object {index} ({name}) has no metadata object")]
    MissingMetadata { index: usize, name: String },
    #[error("object {index} ({name}) has metadata.annotations that are not a map of strings")]
    BadAnnotations { index: usize, name: String },
    #[error("object {index} ({name}) does not match the {version} schema: {reason}")]
    Schema {
        index: usize,
        name: String,
        version: &'static str,
        reason: String,
    },
}

/// Hub fields that a spoke cannot hold, stored in [`PRESERVED_ANNOTATION`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Preserved {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    log_level: Option<v1::LogLevel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    database_key: Option<String>,
}

impl Preserved {
    fn is_empty(&self) -> bool {
        self.log_level.is_none() && self.database_key.is_none()
    }
}

type Annotations = Option<BTreeMap<String, String>>;

/// Removes the preserved data from `annotations` (dropping an emptied map) and returns it;
/// malformed data counts as none.
fn take_preserved(annotations: &mut Annotations) -> Preserved {
    let Some(map) = annotations.as_mut() else {
        return Preserved::default();
    };
    let raw = map.remove(PRESERVED_ANNOTATION);
    if map.is_empty() {
        *annotations = None;
    }
    raw.and_then(|raw| serde_json::from_str(&raw).ok())
        .unwrap_or_default()
}

/// Stores `preserved` in `annotations` (or removes a stale value when there is nothing to
/// keep or it exceeds [`MAX_PRESERVED_BYTES`]).
fn put_preserved(annotations: &mut Annotations, preserved: &Preserved) {
    let encoded = if preserved.is_empty() {
        None
    } else {
        serde_json::to_string(preserved)
            .ok()
            .filter(|s| s.len() <= MAX_PRESERVED_BYTES)
    };
    match encoded {
        Some(value) => {
            annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(PRESERVED_ANNOTATION.to_owned(), value);
        }
        None => {
            if let Some(map) = annotations.as_mut() {
                map.remove(PRESERVED_ANNOTATION);
                if map.is_empty() {
                    *annotations = None;
                }
            }
        }
    }
}

/// A version that converts to and from the hub.
pub trait Spoke: Sized {
    /// Converts to the hub, restoring preserved hub-only fields.
    fn to_hub(self) -> v1::WebApp;
    /// Converts from the hub, preserving hub-only fields in an annotation.
    fn from_hub(hub: v1::WebApp) -> Self;
}

impl Spoke for v1alpha1::WebApp {
    fn to_hub(mut self) -> v1::WebApp {
        let preserved = take_preserved(&mut self.metadata.annotations);
        let s = self.spec;
        let spec = v1::WebAppSpec {
            image: s.image,
            replicas: s.replicas,
            container_port: s.port,
            database: s.database_secret.map(|secret_name| v1::DatabaseRef {
                secret_name,
                key: preserved.database_key,
            }),
            resources: s.resources,
            debug: s.debug,
            log_level: preserved.log_level,
        };
        v1::WebApp {
            metadata: self.metadata,
            spec,
            status: self.status,
        }
    }

    fn from_hub(hub: v1::WebApp) -> Self {
        let s = hub.spec;
        let (database_secret, database_key) = match s.database {
            Some(db) => (Some(db.secret_name), db.key),
            None => (None, None),
        };
        let preserved = Preserved {
            log_level: s.log_level,
            database_key,
        };
        let mut metadata = hub.metadata;
        put_preserved(&mut metadata.annotations, &preserved);
        v1alpha1::WebApp {
            metadata,
            spec: v1alpha1::WebAppSpec {
                image: s.image,
                replicas: s.replicas,
                port: s.container_port,
                database_secret,
                resources: s.resources,
                debug: s.debug,
            },
            status: hub.status,
        }
    }
}

impl Spoke for v1beta1::WebApp {
    fn to_hub(mut self) -> v1::WebApp {
        let preserved = take_preserved(&mut self.metadata.annotations);
        let s = self.spec;
        v1::WebApp {
            metadata: self.metadata,
            spec: v1::WebAppSpec {
                image: s.image,
                replicas: s.replicas,
                container_port: s.container_port,
                database: s.database.map(|db| v1::DatabaseRef {
                    secret_name: db.secret_name,
                    key: db.key,
                }),
                resources: s.resources,
                debug: s.debug,
                log_level: preserved.log_level,
            },
            status: self.status,
        }
    }

    fn from_hub(hub: v1::WebApp) -> Self {
        let s = hub.spec;
        let preserved = Preserved {
            log_level: s.log_level,
            database_key: None,
        };
        let mut metadata = hub.metadata;
        put_preserved(&mut metadata.annotations, &preserved);
        v1beta1::WebApp {
            metadata,
            spec: v1beta1::WebAppSpec {
                image: s.image,
                replicas: s.replicas,
                container_port: s.container_port,
                database: s.database.map(|db| v1beta1::DatabaseRef {
                    secret_name: db.secret_name,
                    key: db.key,
                }),
                resources: s.resources,
                debug: s.debug,
            },
            status: hub.status,
        }
    }
}

/// The part of an object that differs between versions. `status` has the same schema in
/// every version, so [`convert_object`] passes it through as JSON without decoding it.
#[derive(Deserialize, Serialize)]
struct Body<S> {
    spec: S,
}

fn decode<S: serde::de::DeserializeOwned>(
    fields: Map<String, Value>,
    index: usize,
    name: &str,
    version: Version,
) -> Result<Body<S>, ConversionError> {
    serde_json::from_value(Value::Object(fields)).map_err(|err| ConversionError::Schema {
        index,
        name: name.to_owned(),
        version: version.name(),
        reason: err.to_string(),
    })
}

fn meta(annotations: Annotations) -> kube::api::ObjectMeta {
    kube::api::ObjectMeta {
        annotations,
        ..Default::default()
    }
}

/// Converts one object (as the apiserver sends it) to `desired`. `index` names the object in
/// errors. An object already at `desired` is returned unchanged.
pub fn convert_object(
    object: Value,
    desired: Version,
    index: usize,
) -> Result<Value, ConversionError> {
    let Value::Object(mut fields) = object else {
        return Err(ConversionError::NotAnObject { index });
    };
    let (name, source) = identify(&fields, index)?;
    if source == desired {
        return Ok(Value::Object(fields));
    }
    let Some(Value::Object(mut metadata)) = fields.remove("metadata") else {
        return Err(ConversionError::MissingMetadata { index, name });
    };
    let original_annotations = read_annotations(&metadata, index, &name)?;
    fields.remove("apiVersion");
    fields.remove("kind");
    let status = fields.remove("status");

    let hub = to_hub(source, fields, original_annotations.clone(), index, &name)?;
    let (annotations, body) = from_hub(hub, desired);
    let Ok(Value::Object(body)) = body else {
        return Err(ConversionError::Schema {
            index,
            name,
            version: desired.name(),
            reason: "the converted object did not serialise to a JSON object".to_owned(),
        });
    };
    if annotations != original_annotations {
        set_annotations(&mut metadata, annotations);
    }
    let mut out = Map::with_capacity(body.len() + 3);
    out.insert(
        "apiVersion".to_owned(),
        Value::String(desired.api_version()),
    );
    out.insert("kind".to_owned(), Value::String(KIND.to_owned()));
    out.insert("metadata".to_owned(), Value::Object(metadata));
    out.extend(body);
    if let Some(status) = status {
        out.insert("status".to_owned(), status);
    }
    Ok(Value::Object(out))
}

/// The object's name (for errors) and its WebApp version, checking `apiVersion` and `kind`.
fn identify(
    fields: &Map<String, Value>,
    index: usize,
) -> Result<(String, Version), ConversionError> {
    let name = fields
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("<unnamed>")
        .to_owned();
    let api_version = match fields.get("apiVersion") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(ConversionError::MissingApiVersion { index }),
    };
    let Some(source) = Version::from_api_version(&api_version) else {
        return Err(ConversionError::UnknownVersion {
            index,
            name,
            api_version,
        });
    };
    match fields.get("kind") {
        Some(Value::String(kind)) if kind == KIND => Ok((name, source)),
        other => Err(ConversionError::WrongKind {
            index,
            name,
            kind: other.map(|k| k.to_string()).unwrap_or_default(),
        }),
    }
}

/// `metadata.annotations` as a string map (absent or null is `None`).
fn read_annotations(
    metadata: &Map<String, Value>,
    index: usize,
    name: &str,
) -> Result<Annotations, ConversionError> {
    match metadata.get("annotations") {
        None | Some(Value::Null) => Ok(None),
        Some(value) => Ok(Some(serde_json::from_value(value.clone()).map_err(
            |_| ConversionError::BadAnnotations {
                index,
                name: name.to_owned(),
            },
        )?)),
    }
}

/// Decodes the object's `spec` at `source` and converts it up to the hub.
fn to_hub(
    source: Version,
    fields: Map<String, Value>,
    annotations: Annotations,
    index: usize,
    name: &str,
) -> Result<v1::WebApp, ConversionError> {
    Ok(match source {
        Version::V1 => {
            let body: Body<v1::WebAppSpec> = decode(fields, index, name, source)?;
            v1::WebApp {
                metadata: meta(annotations),
                spec: body.spec,
                status: None,
            }
        }
        Version::V1alpha1 => {
            let body: Body<v1alpha1::WebAppSpec> = decode(fields, index, name, source)?;
            v1alpha1::WebApp {
                metadata: meta(annotations),
                spec: body.spec,
                status: None,
            }
            .to_hub()
        }
        Version::V1beta1 => {
            let body: Body<v1beta1::WebAppSpec> = decode(fields, index, name, source)?;
            v1beta1::WebApp {
                metadata: meta(annotations),
                spec: body.spec,
                status: None,
            }
            .to_hub()
        }
    })
}

/// Converts the hub down to `desired`: the resulting annotations and the encoded `spec` body.
fn from_hub(hub: v1::WebApp, desired: Version) -> (Annotations, serde_json::Result<Value>) {
    match desired {
        Version::V1 => (
            hub.metadata.annotations,
            serde_json::to_value(Body { spec: hub.spec }),
        ),
        Version::V1alpha1 => {
            let spoke = v1alpha1::WebApp::from_hub(hub);
            (
                spoke.metadata.annotations,
                serde_json::to_value(Body { spec: spoke.spec }),
            )
        }
        Version::V1beta1 => {
            let spoke = v1beta1::WebApp::from_hub(hub);
            (
                spoke.metadata.annotations,
                serde_json::to_value(Body { spec: spoke.spec }),
            )
        }
    }
}

/// Writes (or removes, for `None`) `metadata.annotations`.
fn set_annotations(metadata: &mut Map<String, Value>, annotations: Annotations) {
    match annotations {
        Some(map) => {
            metadata.insert(
                "annotations".to_owned(),
                Value::Object(
                    map.into_iter()
                        .map(|(k, v)| (k, Value::String(v)))
                        .collect(),
                ),
            );
        }
        None => {
            metadata.remove("annotations");
        }
    }
}
