//! `olm.template.basic`: an FBC whose `olm.bundle` entries are only `{schema, image}`; each
//! is replaced by the rendered bundle. Any other bundle field is an error, as in opm.
//!
//! The template is read as opm reads it, with Go's JSON decoder: `schema` and `entries` match
//! their keys ignoring case (`Entries:`, `SCHEMA:`; of two spellings the later in byte order
//! wins), other keys are ignored, `null` leaves a field empty, and a value of another type
//! (`entries: 5`, an entry that is not a mapping) is refused, as opm refuses it.

use serde_json::Value;

use super::semver::{describe, go_fold, sorted};
use super::{BundleResolver, TemplateError};
use crate::catalog::declcfg::{DeclarativeConfig, Meta};

/// `schema` value of a basic catalog template.
pub const SCHEMA: &str = "olm.template.basic";

/// Expands a basic template given as text.
pub fn expand(
    text: &str,
    resolver: &dyn BundleResolver,
) -> Result<DeclarativeConfig, TemplateError> {
    expand_value(&super::parse_doc(text)?, resolver)
}

/// Expands a basic template that is already parsed into JSON.
pub fn expand_value(
    doc: &Value,
    resolver: &dyn BundleResolver,
) -> Result<DeclarativeConfig, TemplateError> {
    let (schema, entries) = read(doc)?;
    if schema != SCHEMA {
        return Err(TemplateError::Schema {
            found: schema.to_owned(),
            expected: SCHEMA,
        });
    }
    let mut cfg = DeclarativeConfig::default();
    for (index, entry) in entries.iter().enumerate() {
        let entry_err = |message: String| TemplateError::Entry { index, message };
        let meta = Meta::from_value(entry.clone()).map_err(|e| entry_err(e.to_string()))?;
        cfg.push_meta(meta).map_err(|e| entry_err(e.to_string()))?;
    }
    let templates = std::mem::take(&mut cfg.bundles);
    for (index, b) in templates.into_iter().enumerate() {
        if !b.is_image_reference() {
            return Err(TemplateError::BundleFields { index });
        }
        let rendered = resolver
            .resolve(&b.image)
            .map_err(|source| TemplateError::Resolve {
                image: b.image.clone(),
                source: Box::new(source),
            })?;
        cfg.bundles.push(rendered.bundle);
    }
    Ok(cfg)
}

/// The template's `schema` and `entries` as opm's decoder fills them (see the module docs).
fn read(doc: &Value) -> Result<(&str, &[Value]), TemplateError> {
    let refused = |at: &str, problem: String| TemplateError::BasicRefused {
        at: at.to_owned(),
        problem,
    };
    let map = match doc {
        Value::Object(map) => map,
        Value::Null => return Ok(("", &[])),
        other => {
            let problem = format!(
                "must be a mapping with schema and entries, not {}",
                describe(other)
            );
            return Err(refused("the template", problem));
        }
    };
    let (mut schema, mut entries) = ("", ("entries", &[][..]));
    for (key, value) in sorted(map) {
        match (go_fold(key).as_str(), value) {
            ("SCHEMA", Value::Null) => {}
            ("SCHEMA", Value::String(text)) => schema = text,
            ("SCHEMA", other) => {
                return Err(refused(
                    key,
                    format!("must be a string, not {}", describe(other)),
                ));
            }
            ("ENTRIES", Value::Null) => entries = (key.as_str(), &[][..]),
            ("ENTRIES", Value::Array(list)) => entries = (key.as_str(), list.as_slice()),
            ("ENTRIES", other) => {
                let problem = format!("must be a list of catalog objects, not {}", describe(other));
                return Err(refused(key, problem));
            }
            _ => {}
        }
    }
    let (key, list) = entries;
    if let Some((i, entry)) = list.iter().enumerate().find(|(_, e)| !e.is_object()) {
        let problem = format!(
            "must be a catalog object (a mapping), not {}",
            describe(entry)
        );
        return Err(refused(&format!("{key}[{i}]"), problem));
    }
    Ok((schema, list))
}
