//! Reading fields of untyped Kubernetes objects (`serde_json::Value`) by JSON pointer.
//! Missing or mistyped fields read as empty, so callers report "missing" uniformly.
#![warn(missing_docs)]

use serde_json::Value;

/// The string at `pointer`, or `""`.
pub fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The array at `pointer`, or an empty slice.
pub fn array_at<'a>(value: &'a Value, pointer: &str) -> &'a [Value] {
    value
        .pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}
