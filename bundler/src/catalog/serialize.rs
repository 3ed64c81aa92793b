//! Serializing catalogs to text: JSON or YAML streams in opm's order (see
//! [`DeclarativeConfig::to_values`]), deterministic byte for byte.

use serde::Serialize;
use serde_json::Value;

use super::declcfg::DeclarativeConfig;

/// Output format of a catalog stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// JSON documents one after another, indented by four spaces (`opm render -o json`).
    #[default]
    Json,
    /// YAML documents separated by `---` lines (`opm render -o yaml`).
    Yaml,
}

impl olmpack_model::choice::Choice for Format {
    const CHOICES: &'static [(&'static str, Self)] =
        &[("json", Format::Json), ("yaml", Format::Yaml)];
}

/// Failure to print a catalog.
#[derive(Debug, thiserror::Error)]
pub enum SerializeError {
    /// A blob could not be encoded as YAML; the source says which value.
    #[error("failed to print catalog as YAML")]
    Yaml(#[from] olmpack_model::yaml::YamlError),
    /// A blob could not be encoded as JSON; the source says which value.
    #[error("failed to print catalog as JSON")]
    Json(#[from] serde_json::Error),
}

/// Never about the input olmpack reads: a failure to do the job (exit 2).
impl crate::refusal::Refusal for SerializeError {
    fn refuses_input(&self) -> bool {
        false
    }
}

/// One JSON document per object, indented by four spaces like `opm render -o json`.
pub fn values_to_json(values: &[Value]) -> Result<String, SerializeError> {
    let mut out = Vec::new();
    for v in values {
        let mut ser = serde_json::Serializer::with_formatter(
            &mut out,
            serde_json::ser::PrettyFormatter::with_indent(b"    "),
        );
        v.serialize(&mut ser)?;
        out.push(b'\n');
    }
    Ok(String::from_utf8(out).unwrap_or_default())
}

/// `---`-separated YAML documents, keys sorted.
pub fn values_to_yaml(values: &[Value]) -> Result<String, SerializeError> {
    let mut out = String::new();
    for v in values {
        out.push_str("---\n");
        out.push_str(&olmpack_model::yaml::to_string(v)?);
    }
    Ok(out)
}

/// The whole catalog as one stream.
pub fn to_string(cfg: &DeclarativeConfig, format: Format) -> Result<String, SerializeError> {
    let values = cfg.to_values();
    match format {
        Format::Json => values_to_json(&values),
        Format::Yaml => values_to_yaml(&values),
    }
}
