//! Catalog templates: `olm.template.basic` and `olm.semver`, with the input formats and output
//! of `opm alpha render-template`.
//!
//! Bundle references in templates are image references; templates never pull anything
//! themselves: a [`BundleResolver`] turns each reference into a rendered bundle (the image
//! module pulls and unpacks; tests and `olmpack` itself can map references to local bundle
//! directories with [`DirResolver`]).

pub mod basic;
pub mod semver;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use super::declcfg::{Bundle, DeclarativeConfig};
use super::render::{self, MigrateLevel, RenderError, RenderOptions};

/// A rendered bundle and its CSV (templates read the package description and icon from it).
#[derive(Clone, Debug)]
pub struct Rendered {
    pub bundle: Bundle,
    pub csv: Option<Value>,
}

/// Turns a bundle image reference into a rendered bundle.
pub trait BundleResolver {
    fn resolve(&self, image: &str) -> Result<Rendered, Box<dyn std::error::Error + Send + Sync>>;
}

/// Resolves image references to local bundle directories, rendering each as if it had been
/// pulled from that reference.
#[derive(Clone, Debug, Default)]
pub struct DirResolver {
    pub dirs: BTreeMap<String, PathBuf>,
    pub migrate: MigrateLevel,
}

impl BundleResolver for DirResolver {
    fn resolve(&self, image: &str) -> Result<Rendered, Box<dyn std::error::Error + Send + Sync>> {
        let dir = self
            .dirs
            .get(image)
            .ok_or_else(|| TemplateError::UnknownImage(image.to_owned()))?;
        let loaded = crate::bundle::load::load_dir(dir).map_err(RenderError::from)?;
        let bundle = render::render_loaded(
            &loaded,
            &RenderOptions {
                image: image.to_owned(),
                migrate: self.migrate,
            },
        )?;
        Ok(Rendered {
            bundle,
            csv: loaded.csv().map(|o| o.value.clone()),
        })
    }
}

/// A template that cannot be expanded.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("template is not valid YAML or JSON: {0}")]
    Parse(String),
    #[error("template has unknown schema ({found:?}), should be {expected:?}")]
    Schema {
        found: String,
        expected: &'static str,
    },
    #[error("template entry {index}: {message}")]
    Entry { index: usize, message: String },
    #[error(
        "unexpected fields present in basic template bundle (entry {index}): only `schema` and `image` are allowed"
    )]
    BundleFields { index: usize },
    #[error("no bundle directory is known for image {0:?}")]
    UnknownImage(String),
    #[error("failed to render bundle {image:?}")]
    Resolve {
        image: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("unknown field {0:?} in olm.semver template")]
    UnknownField(String),
    #[error("olm.semver template: {0}")]
    Semver(String),
}

/// Which template a document is, from its `schema`.
pub fn render_any(
    text: &str,
    resolver: &dyn BundleResolver,
) -> Result<DeclarativeConfig, TemplateError> {
    let doc = parse_doc(text)?;
    match doc.get("schema").and_then(Value::as_str) {
        Some(semver::SCHEMA) => semver::render_value(&doc, resolver),
        _ => basic::render_value(&doc, resolver),
    }
}

pub(crate) fn parse_doc(text: &str) -> Result<Value, TemplateError> {
    let docs = super::load::parse_stream(text.as_bytes()).map_err(TemplateError::Parse)?;
    docs.into_iter()
        .next()
        .ok_or_else(|| TemplateError::Parse("empty document".to_owned()))
}
