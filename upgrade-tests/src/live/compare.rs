//! Field-by-field comparison of an object as read before and after a step.
//!
//! Only what a user wrote or a controller reported counts: every top-level field except
//! `apiVersion`, `kind` and `metadata`, plus `metadata.labels` and `metadata.annotations`.
//! Server-managed metadata (`resourceVersion`, `generation`, `managedFields`, …) is ignored.
//! A field that appears (a new default) is not a loss; a field that disappears or changes
//! value is.

use serde_json::{Map, Value};

/// One field that was lost or changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldChange {
    /// Dotted path, with `[i]` for list items, e.g. `spec.database.key`.
    pub path: String,
    pub before: Value,
    /// `None` when the field is gone.
    pub after: Option<Value>,
}

impl std::fmt::Display for FieldChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.after {
            None => write!(f, "{} ({}) is gone", self.path, self.before),
            Some(after) => write!(f, "{} changed from {} to {}", self.path, self.before, after),
        }
    }
}

/// The part of `object` that [`lost_fields`] compares (module docs).
pub fn user_data(object: &Value) -> Value {
    let mut out = Map::new();
    if let Some(map) = object.as_object() {
        for (key, value) in map {
            if !matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                out.insert(key.clone(), value.clone());
            }
        }
        if let Some(meta) = map.get("metadata").and_then(Value::as_object) {
            let mut kept = Map::new();
            for key in ["labels", "annotations"] {
                if let Some(value) = meta.get(key) {
                    kept.insert(key.to_owned(), value.clone());
                }
            }
            if !kept.is_empty() {
                out.insert("metadata".to_owned(), Value::Object(kept));
            }
        }
    }
    Value::Object(out)
}

/// Every field of `before` that `after` lost or changed, in path order.
pub fn lost_fields(before: &Value, after: &Value) -> Vec<FieldChange> {
    let mut out = Vec::new();
    walk(String::new(), before, Some(after), &mut out);
    out
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

fn walk(path: String, before: &Value, after: Option<&Value>, out: &mut Vec<FieldChange>) {
    let Some(after) = after else {
        // A whole object gone is reported field by field (`status.conditions`, not
        // `status`): the fields are what was written.
        if let Value::Object(fields) = before
            && !fields.is_empty()
            && !path.is_empty()
        {
            for (key, value) in fields {
                walk(join(&path, key), value, None, out);
            }
            return;
        }
        out.push(FieldChange {
            path,
            before: before.clone(),
            after: None,
        });
        return;
    };
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            for (key, value) in b {
                walk(join(&path, key), value, a.get(key), out);
            }
        }
        (Value::Array(b), Value::Array(a)) => {
            for (i, value) in b.iter().enumerate() {
                walk(format!("{path}[{i}]"), value, a.get(i), out);
            }
        }
        (b, a) if b == a => {}
        (b, a) => out.push(FieldChange {
            path,
            before: b.clone(),
            after: Some(a.clone()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn additions_are_not_losses_removals_and_changes_are() {
        let before = json!({"spec": {"a": 1, "b": {"c": "x"}, "list": [1, 2]}});
        let after = json!({"spec": {"a": 2, "b": {}, "list": [1], "new": true}});
        let lost: Vec<String> = lost_fields(&before, &after)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            lost,
            [
                "spec.a changed from 1 to 2",
                "spec.b.c (\"x\") is gone",
                "spec.list[1] (2) is gone"
            ]
        );
        assert!(lost_fields(&after, &after).is_empty());
        let gone: Vec<String> = lost_fields(
            &json!({"status": {"conditions": [{"type": "Ready"}], "phase": "Up"}}),
            &json!({}),
        )
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            gone,
            [
                "status.conditions ([{\"type\":\"Ready\"}]) is gone",
                "status.phase (\"Up\") is gone"
            ]
        );
    }

    #[test]
    fn user_data_drops_server_metadata_only() {
        let object = json!({
            "apiVersion": "g/v1", "kind": "K",
            "metadata": {"name": "x", "resourceVersion": "5", "labels": {"l": "1"}},
            "spec": {"a": 1}, "status": {"ready": true}
        });
        assert_eq!(
            user_data(&object),
            json!({"metadata": {"labels": {"l": "1"}}, "spec": {"a": 1}, "status": {"ready": true}})
        );
    }
}
