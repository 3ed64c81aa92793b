//! YAML in and out, the one way olmpack does it.
//!
//! Output is deterministic: object keys sorted (serde_json's map is ordered), block style,
//! strings quoted only where YAML would misread them. Input accepts multi-document streams,
//! anchors and aliases; errors carry line and column.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Failure to parse or print YAML.
#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    #[error("invalid YAML: {0}")]
    Parse(String),
    #[error("failed to print YAML: {0}")]
    Print(String),
}

/// Parses one YAML document.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    serde_saphyr::from_str(text).map_err(parse_error)
}

/// The parser's first line (`line L column C: what`), without its source snippet.
fn parse_error(err: impl std::fmt::Display) -> YamlError {
    let text = err.to_string();
    let first = text.lines().next().unwrap_or("").trim();
    YamlError::Parse(first.strip_prefix("error: ").unwrap_or(first).to_owned())
}

/// Parses every document of a `---`-separated stream; empty documents are skipped.
pub fn from_multi_str(text: &str) -> Result<Vec<serde_json::Value>, YamlError> {
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(text).map_err(parse_error)?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// [`from_multi_str`], lenient about repeated keys the way Go's `sigs.k8s.io/yaml` is (the
/// decoder Kubernetes tools such as crdify read CRD files with): a repeated key keeps its
/// last value instead of failing.
pub fn from_multi_str_last_key_wins(text: &str) -> Result<Vec<serde_json::Value>, YamlError> {
    let mut options = serde_saphyr::Options::default();
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::LastWins;
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple_with_options(text, options).map_err(parse_error)?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// Prints a value as one YAML document (no leading `---`, one trailing newline).
pub fn to_string<T: Serialize>(value: &T) -> Result<String, YamlError> {
    // Go through serde_json::Value so that every map is key-sorted, whatever `T` is.
    let value = serde_json::to_value(value).map_err(|e| YamlError::Print(e.to_string()))?;
    // Long single-line strings (image references, base64 icons) stay on one line, as
    // kubectl writes them; multi-line strings still use literal `|` blocks.
    let mut options = serde_saphyr::SerializerOptions::default();
    options.folded_wrap_chars = usize::MAX;
    let mut text = serde_saphyr::to_string_with_options(&value, options)
        .map_err(|e| YamlError::Print(e.to_string()))?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_tricky_scalars_and_sorts_keys() {
        let value =
            serde_json::json!({"z": "yes", "a": "123", "m": "x: y", "n": null, "t": "multi\nline"});
        let text = to_string(&value).unwrap();
        assert!(text.starts_with("a: \"123\"\n"));
        let back: serde_json::Value = from_str(&text).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn long_single_line_strings_are_not_folded() {
        let long = "x".repeat(50) + " " + &"y".repeat(50);
        let text = to_string(&serde_json::json!({ "k": long })).unwrap();
        assert_eq!(text, format!("k: {long}\n"));
    }

    #[test]
    fn multi_document_streams_with_aliases() {
        let docs = from_multi_str("a: 1\n---\n---\nb: &x 2\nc: *x\n").unwrap();
        assert_eq!(
            docs,
            vec![
                serde_json::json!({"a": 1}),
                serde_json::json!({"b": 2, "c": 2})
            ]
        );
    }

    #[test]
    fn errors_carry_the_line() {
        let err = from_str::<serde_json::Value>("a: [1, 2\nb: 3").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid YAML: line 2 column 2: illegal placement of ':' indicator"
        );
    }
}
