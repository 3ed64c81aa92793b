//! The CSV's example objects (`metadata.annotations.alm-examples`): the one reader every part
//! of olmpack uses, whatever it does with the examples (validating them, importing them as
//! samples, creating them on a cluster).
//!
//! The text is read as Go's `encoding/json` reads it into a list of objects: `null` is no
//! examples, duplicate keys keep the last value, any other shape than an array of objects is
//! refused. Where this differs:
//! - lenient: an absent annotation and one of only whitespace are no examples (Go's decoder
//!   refuses empty text; operator-sdk's validator, which reads the annotation with a
//!   YAML-or-JSON decoder, finds no document in it and no error, and consoles offer nothing);
//! - lenient: an object without `kind` is an example (operator-sdk's validator decodes each
//!   into an `unstructured.Unstructured`, which refuses one); the validators name it;
//! - stricter: a `\u` escape of half a surrogate pair, and nesting deeper than 128 levels,
//!   are refused (Go reads the first as U+FFFD).
//!
//! Only JSON: operator-sdk's validator would also take YAML text here, the OpenShift console
//! (`JSON.parse`) would not.

use serde_json::Value;

/// The annotation consoles read examples from.
pub const ALM_EXAMPLES: &str = "alm-examples";

/// The annotation operator-sdk's validator reads when `alm-examples` is absent.
pub const OLM_EXAMPLES: &str = "olm.examples";

/// An examples annotation that is not a JSON array of objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExamplesError {
    /// The CSV's `metadata.name`.
    pub csv: String,
    /// The annotation ([`ALM_EXAMPLES`], or [`OLM_EXAMPLES`]).
    pub key: String,
    /// What is wrong, e.g. `expected value at line 1 column 1` or `element 2 is a string`.
    pub reason: String,
}

impl std::fmt::Display for ExamplesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClusterServiceVersion/{}: {}", self.csv, self.at_field())
    }
}

impl std::error::Error for ExamplesError {}

impl ExamplesError {
    /// The field, `metadata.annotations.<key>`.
    pub fn field(&self) -> String {
        format!("metadata.annotations.{}", self.key)
    }

    /// What is wrong, at the field's path but without the CSV (for an error that names the
    /// CSV itself).
    pub fn at_field(&self) -> String {
        format!("metadata.annotations.{}", self.problem())
    }

    /// What is wrong without the CSV and the field's path, for a finding that names both:
    /// `alm-examples is not a JSON array of objects: <reason>`.
    pub fn problem(&self) -> String {
        format!(
            "{} is not a JSON array of objects: {}",
            self.key, self.reason
        )
    }
}

/// The example objects in annotation `key` of CSV `csv` (its name), whose value is `text`
/// (`None` when the annotation is absent or `null`), read as the module says.
pub fn read(csv: &str, key: &str, text: Option<&str>) -> Result<Vec<Value>, ExamplesError> {
    let refused = |reason: String| ExamplesError {
        csv: csv.to_owned(),
        key: key.to_owned(),
        reason,
    };
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(Vec::new());
    };
    let list = match serde_json::from_str::<Value>(text).map_err(|e| refused(e.to_string()))? {
        Value::Null => return Ok(Vec::new()),
        Value::Array(list) => list,
        other => return Err(refused(format!("it is {}", a(&other)))),
    };
    if let Some((index, other)) = list.iter().enumerate().find(|(_, v)| !v.is_object()) {
        return Err(refused(format!("element {index} is {}", a(other))));
    }
    Ok(list)
}

/// The JSON type of `value`, with its article: `an object`, `a string`, ...
fn a(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_as_go_reads_a_list_of_objects() {
        let read = |text: Option<&str>| read("op.v1", ALM_EXAMPLES, text);
        let ok: &[(Option<&str>, Vec<Value>)] = &[
            (None, vec![]),
            (Some(""), vec![]),
            (Some(" \n"), vec![]),
            (Some("null"), vec![]),
            (Some("[]"), vec![]),
            (
                Some(r#"[{"kind":"A","x":1,"x":2},{}]"#),
                vec![json!({"kind": "A", "x": 2}), json!({})],
            ),
        ];
        for (text, want) in ok {
            assert_eq!(read(*text).as_ref(), Ok(want), "{text:?}");
        }
        let refused = [
            ("kind: A", "expected value at line 1 column 1"),
            ("[{}", "EOF while parsing a list at line 1 column 3"),
            (r#"{"kind":"A"}"#, "it is an object"),
            ("[{}, 1]", "element 1 is a number"),
            ("[null]", "element 0 is null"),
            (r#"[["x"]]"#, "element 0 is an array"),
        ];
        for (text, reason) in refused {
            let err = read(Some(text)).unwrap_err();
            assert_eq!(err.reason, reason, "{text:?}");
            assert_eq!(
                err.to_string(),
                format!(
                    "ClusterServiceVersion/op.v1: metadata.annotations.alm-examples is not a JSON array of objects: {reason}"
                )
            );
            assert_eq!(
                err.problem(),
                format!("alm-examples is not a JSON array of objects: {reason}")
            );
            assert_eq!(err.field(), "metadata.annotations.alm-examples");
            assert_eq!(
                err.at_field(),
                format!(
                    "metadata.annotations.alm-examples is not a JSON array of objects: {reason}"
                )
            );
        }
    }
}
