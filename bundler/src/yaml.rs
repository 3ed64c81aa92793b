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
    serde_saphyr::from_str_with_options(prepare(text), options()).map_err(parse_error)
}

/// The parser's resource budget, the same for every YAML olmpack reads: generous for real
/// manifests and catalogs, fatal to alias bombs and runaway nesting.
fn options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_documents = 100_000;
    budget.max_nodes = 2_000_000;
    budget.max_events = 5_000_000;
    budget.max_total_scalar_bytes = 256 << 20;
    budget.max_recorded_anchor_events = 200_000;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.alias_limits.max_total_replayed_events = 100_000;
    options
}

/// The parser's first line (`line L column C: what`), without its source snippet, in our
/// words ([`describe`]).
fn parse_error(err: impl std::fmt::Display) -> YamlError {
    let text = err.to_string();
    let first = text.lines().next().unwrap_or("").trim();
    YamlError::Parse(describe(first.strip_prefix("error: ").unwrap_or(first)))
}

/// Text as the parser should see it: without a byte-order mark, and without empty documents
/// before the first one (`---` lines with only blanks and comments between them), which Go's
/// decoders skip too.
fn prepare(text: &str) -> &str {
    let mut text = text.strip_prefix('\u{feff}').unwrap_or(text);
    loop {
        let mut markers = 0;
        let mut cut = None;
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let bare = line.trim_end();
            if bare == "---" {
                markers += 1;
                if markers == 2 {
                    cut = Some(offset);
                    break;
                }
            } else if !(bare.trim_start().is_empty() || bare.trim_start().starts_with('#')) {
                break;
            }
            offset += line.len();
        }
        match cut {
            Some(at) => text = &text[at..],
            None => return without_empty_trailing_documents(text),
        }
    }
}

/// Text without `---` lines that only blanks and comments follow (empty last documents).
fn without_empty_trailing_documents(mut text: &str) -> &str {
    loop {
        let last = text
            .split_inclusive('\n')
            .rev()
            .scan(text.len(), |end, line| {
                *end -= line.len();
                Some((*end, line.trim()))
            })
            .find(|(_, line)| !(line.is_empty() || line.starts_with('#')));
        match last {
            Some((start, "---")) if start > 0 => text = &text[..start],
            _ => return text,
        }
    }
}

/// The parser's message in our words: no option or function names, no debug output.
fn describe(message: &str) -> String {
    let (location, what) = match message.find(": ") {
        Some(i) if message.starts_with("line ") => (&message[..i + 2], &message[i + 2..]),
        _ => ("", message),
    };
    let ours = if let Some(rest) = what.strip_prefix("duplicate mapping key") {
        let key = rest
            .split(", set DuplicateKeyPolicy")
            .next()
            .unwrap_or("")
            .trim_start_matches(':')
            .trim();
        format!("duplicate key {key}: each key may appear only once in a mapping")
    } else if what.contains("from_str_multiple") || what.contains("multiple documents") {
        "holds more than one YAML document; this file must hold exactly one".to_owned()
    } else if let Some(breach) = what.strip_prefix("budget breached: ") {
        budget_words(breach)
    } else if what.starts_with("alias ") {
        "aliases expand to too much data (an alias bomb?); olmpack stops reading here".to_owned()
    } else if let Some(rest) = what.strip_prefix("invalid type: ") {
        format!("wrong type: {rest}")
    } else {
        what.to_owned()
    };
    format!("{location}{ours}")
}

/// `Nodes { nodes: 250001 }` → what the budget limits, in words.
fn budget_words(breach: &str) -> String {
    let name = breach.split([' ', '{']).next().unwrap_or("");
    let count: String = breach.chars().filter(char::is_ascii_digit).collect();
    let what = match name {
        "Nodes" => "values (nodes)",
        "Events" => "parser events",
        "Aliases" => "aliases",
        "Anchors" => "anchors",
        "Depth" => "levels of nesting",
        "Documents" => "documents",
        _ => "parts",
    };
    if name == "Depth" {
        return format!(
            "nested too deeply to read safely: {count} levels, over olmpack's limit for one file"
        );
    }
    format!(
        "too large to read safely: {count} {what}, over olmpack's limit for one file (this protects against alias bombs and runaway nesting); split the file"
    )
}

/// Parses every document of a `---`-separated stream; empty documents are skipped.
pub fn from_multi_str(text: &str) -> Result<Vec<serde_json::Value>, YamlError> {
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple_with_options(prepare(text), options()).map_err(parse_error)?;
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
    fn bom_and_empty_leading_documents_are_skipped() {
        let value: serde_json::Value = from_str("\u{feff}---\n# c\n---\n\n---\na: 1\n").unwrap();
        assert_eq!(value, serde_json::json!({"a": 1}));
        assert_eq!(prepare("---\na: 1\n---\n# end\n---\n"), "---\na: 1\n");
        assert_eq!(prepare("---\n"), "---\n");
    }

    #[test]
    fn library_words_are_replaced() {
        assert_eq!(
            describe(
                "line 3 column 1: duplicate mapping key: a, set DuplicateKeyPolicy in Options if acceptable"
            ),
            "line 3 column 1: duplicate key a: each key may appear only once in a mapping"
        );
        let text = describe("budget breached: Nodes { nodes: 250001 }");
        assert!(
            text.starts_with("too large to read safely: 250001 values"),
            "{text}"
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
