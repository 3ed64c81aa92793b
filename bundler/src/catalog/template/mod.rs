//! Catalog templates: `olm.template.basic` and `olm.semver`, with the input formats and output
//! of `opm alpha render-template`.
//!
//! Bundle references in templates are image references; templates never pull anything
//! themselves: a [`BundleResolver`] turns each reference into a rendered bundle (the image
//! module pulls and unpacks; tests and `olmpack` itself can map references to local bundle
//! directories with [`DirResolver`]).
#![warn(missing_docs)]

pub mod basic;
pub mod semver;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use super::declcfg::{Bundle, DeclarativeConfig};
use super::render::{self, MigrateLevel, RenderError, RenderOptions};
use crate::refusal::Refusal;

/// A rendered bundle and its CSV (templates read the package description and icon from it).
#[derive(Clone, Debug)]
pub struct Rendered {
    /// The bundle as an `olm.bundle` blob.
    pub bundle: Bundle,
    /// The bundle's CSV as JSON, when it has one.
    pub csv: Option<Value>,
}

/// Turns a bundle image reference into a rendered bundle.
pub trait BundleResolver {
    /// Renders the bundle that `image` names, or says why it cannot.
    fn resolve(&self, image: &str) -> Result<Rendered, BundleResolveError>;
}

/// Why a bundle a template names cannot be rendered.
#[derive(Debug, thiserror::Error)]
pub enum BundleResolveError {
    /// No bundle directory is known for the image.
    #[error("no bundle directory is known for image {0:?}")]
    UnknownImage(String),
    /// The bundle cannot be read or rendered.
    #[error(transparent)]
    Render(#[from] RenderError),
}

/// A bundle that is invalid, or that olmpack refuses to read, is refused; one that is not
/// there, or that the system cannot read, is not.
impl Refusal for BundleResolveError {
    fn refuses_input(&self) -> bool {
        match self {
            BundleResolveError::UnknownImage(_) => false,
            BundleResolveError::Render(render) => render.refuses_input(),
        }
    }
}

/// Resolves image references to local bundle directories, rendering each as if it had been
/// pulled from that reference.
#[derive(Clone, Debug, Default)]
pub struct DirResolver {
    /// Bundle directory for each image reference the template may name.
    pub dirs: BTreeMap<String, PathBuf>,
    /// How far to migrate the rendered bundles (like `opm render --migrate-level`).
    pub migrate: MigrateLevel,
    /// How much of each bundle directory is read at most.
    pub limits: olmpack_oci::input::Limits,
}

impl BundleResolver for DirResolver {
    fn resolve(&self, image: &str) -> Result<Rendered, BundleResolveError> {
        let dir = self
            .dirs
            .get(image)
            .ok_or_else(|| BundleResolveError::UnknownImage(image.to_owned()))?;
        let loaded =
            crate::bundle::load::load_dir_with(dir, &self.limits).map_err(RenderError::from)?;
        let bundle = render::render_loaded(
            &loaded,
            &RenderOptions {
                image: image.to_owned(),
                migrate: self.migrate,
                limits: self.limits,
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
    /// The template text parses as neither YAML nor JSON; the parser's complaint follows.
    #[error("template is not valid YAML or JSON: {0}")]
    Parse(String),
    /// The template is JSON behind a UTF-8 byte-order mark, which opm reads as YAML, and
    /// YAML refuses it; the reason follows.
    #[error(
        "the template begins with a UTF-8 byte-order mark, so opm reads it as YAML, and refuses it: {0}"
    )]
    ByteOrderMark(String),
    /// The template's `schema` is not the one for this kind of template.
    #[error("template has unknown schema ({found:?}), should be {expected:?}")]
    Schema {
        /// The `schema` value found.
        found: String,
        /// The `schema` value this template kind needs.
        expected: &'static str,
    },
    /// A template entry is malformed.
    #[error("template entry {index}: {message}")]
    Entry {
        /// Position of the entry in the template's `entries`.
        index: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A bundle entry of a basic template has keys other than `schema` and `image`, which opm refuses.
    #[error(
        "unexpected fields present in basic template bundle (entry {index}): only `schema` and `image` are allowed"
    )]
    BundleFields {
        /// Position of the entry in the template's `entries`.
        index: usize,
    },
    /// A basic template's `schema` or `entries` is of a type opm refuses while reading it.
    #[error("olm.template.basic template: {at}: {problem}; opm refuses it")]
    BasicRefused {
        /// The field, as written (`entries`, `Entries[2]`).
        at: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A template names a bundle image for which no bundle directory was given.
    #[error("no bundle directory is known for image {0:?}")]
    UnknownImage(String),
    /// Rendering a bundle named by the template failed.
    #[error("failed to render bundle {image:?}")]
    Resolve {
        /// The bundle image reference.
        image: String,
        /// The resolver's error.
        #[source]
        source: Box<BundleResolveError>,
    },
    /// A semver template has a field opm refuses while reading it (unknown, of the wrong
    /// type, or out of line with another field).
    #[error("olm.semver template: {at}: {problem}; opm refuses it")]
    SemverRefused {
        /// The field, as a path of the keys as written (`stable.bundles[0].image`).
        at: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The template's first YAML document is empty and another follows: opm reads the
    /// template's schema from the first document only.
    #[error(
        "the template's first YAML document is empty (another follows it); opm reads only the first document, and refuses the template"
    )]
    EmptyFirstDocument,
    /// A semver template's first document is not YAML opm reads (e.g. a key given twice in
    /// one mapping); the reason follows, with its line.
    #[error("olm.semver template: {0}; opm refuses it")]
    SemverYaml(String),
    /// A semver template's content is wrong (e.g. a bundle without a version); the reason follows.
    #[error("olm.semver template: {0}")]
    Semver(String),
}

/// Expands a template of either kind, chosen by its first document's `schema` as opm
/// chooses (`opm alpha render-template FILE`): the key matches ignoring case, as Go's JSON
/// decoder matches it (`Schema: olm.semver` is a semver template). A semver template is then
/// read as opm reads it ([`semver::read`]).
pub fn expand_any(
    text: &str,
    resolver: &dyn BundleResolver,
) -> Result<DeclarativeConfig, TemplateError> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first = semver::first_document(body);
    // Read leniently, only to find the schema; a document this cannot read is left to the
    // basic reader, which says why it is refused.
    match super::load::parse_stream(first.as_bytes()).as_deref() {
        Ok([Value::Object(map), ..]) if semver_schema(map) => semver::expand(text, resolver),
        Ok([]) if !body[first.len()..].trim().is_empty() => Err(TemplateError::EmptyFirstDocument),
        _ => basic::expand_value(&parse_doc(text)?, resolver),
    }
}

/// Whether a document's `schema` is `olm.semver`, the key matched ignoring case (of two
/// spellings the later in byte order wins, and `null` counts as absent, as in Go).
fn semver_schema(map: &serde_json::Map<String, Value>) -> bool {
    let mut keys: Vec<&String> = map
        .keys()
        .filter(|k| semver::go_fold(k) == "SCHEMA" && !map[*k].is_null())
        .collect();
    keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    keys.last()
        .is_some_and(|k| map[*k].as_str() == Some(semver::SCHEMA))
}

/// The template's first document. JSON behind a byte-order mark is read as opm reads it: as
/// YAML (so YAML's rules apply, e.g. no `\/` escape).
pub(crate) fn parse_doc(text: &str) -> Result<Value, TemplateError> {
    if let Some(read) = super::load::bom_json_first(text) {
        return read.map_err(TemplateError::ByteOrderMark);
    }
    let docs = super::load::parse_stream(text.as_bytes()).map_err(TemplateError::Parse)?;
    docs.into_iter()
        .next()
        .ok_or_else(|| TemplateError::Parse("empty document".to_owned()))
}
