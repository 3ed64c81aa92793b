//! `olm.template.basic`: an FBC whose `olm.bundle` entries are only `{schema, image}`; each
//! is replaced by the rendered bundle. Any other bundle field is an error, as in opm.

use serde_json::Value;

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
    let schema = doc.get("schema").and_then(Value::as_str).unwrap_or("");
    if schema != SCHEMA {
        return Err(TemplateError::Schema {
            found: schema.to_owned(),
            expected: SCHEMA,
        });
    }
    let entries = doc
        .get("entries")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
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
                source,
            })?;
        cfg.bundles.push(rendered.bundle);
    }
    Ok(cfg)
}
