//! Validates a JSON value against a structural OpenAPI v3 schema, as kube-apiserver's schema
//! validator does for custom resources (and OLM v0 for existing objects before an upgrade).
//!
//! Checked: `type` (with `x-kubernetes-int-or-string`), `nullable` (a `null` in a field that is
//! not nullable is pruned, as the apiserver does, so only `required` can then fail), `enum`,
//! `required`, `maximum`/`minimum` (and their exclusive forms), `multipleOf`,
//! `maxLength`/`minLength` (in characters), `pattern` (Go RE2 syntax, compiled with the `regex`
//! crate), `maxItems`/`minItems`, `uniqueItems`, `maxProperties`/`minProperties`, `items`,
//! `properties`, `additionalProperties`, `allOf`/`anyOf`/`oneOf`/`not`.
//! Unknown fields are not errors: the apiserver prunes them (or keeps them under
//! `x-kubernetes-preserve-unknown-fields`). Not checked: `format`, and CEL rules
//! (`x-kubernetes-validations`); [`has_cel_rules`] tells callers to say so. At the root,
//! `apiVersion`, `kind` and `metadata` are the apiserver's and are skipped.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use serde_json::Value;

/// What a document is, for a message that says it is not the object expected: `apiVersion
/// kind` as written (either may be missing), or what the document is when it is not a
/// Kubernetes object at all ("a string", "a list", "an object without apiVersion and kind").
pub fn what_document_is(doc: &Value) -> String {
    let field = |name: &str| doc.get(name).and_then(Value::as_str).unwrap_or_default();
    match doc {
        Value::Object(_) => {
            let found = format!("{} {}", field("apiVersion"), field("kind"));
            match found.trim() {
                "" => "an object without apiVersion and kind".to_owned(),
                found => found.to_owned(),
            }
        }
        Value::String(_) => "a string".to_owned(),
        Value::Number(_) => "a number".to_owned(),
        Value::Bool(_) => "a boolean".to_owned(),
        Value::Array(_) => "a list".to_owned(),
        Value::Null => "an empty document".to_owned(),
    }
}

/// One reason a value is invalid: where (`spec.replicas`, `spec.items[2]`) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    /// Where the value is, e.g. `spec.items[2]`.
    pub path: String,
    /// Why it does not fit the schema.
    pub message: String,
}

/// Every reason `object` (a whole custom resource) is invalid under `root`.
pub fn validate_object(object: &Value, root: &JSONSchemaProps) -> Vec<Invalid> {
    let mut out = Vec::new();
    let mut patterns = BTreeMap::new();
    let mut validator = Validator {
        out: &mut out,
        patterns: &mut patterns,
    };
    match object {
        Value::Object(map) => {
            let rest: serde_json::Map<String, Value> = map
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            validator.object(&rest, root, "");
            validator.number_and_size(&Value::Object(rest.clone()), root, "");
        }
        _ => validator.fail("", "must be an object"),
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Whether the schema (anywhere) has CEL rules, which [`validate_object`] does not run.
pub fn has_cel_rules(s: &JSONSchemaProps) -> bool {
    s.x_kubernetes_validations
        .as_ref()
        .is_some_and(|v| !v.is_empty())
        || children(s).any(has_cel_rules)
}

fn children(s: &JSONSchemaProps) -> impl Iterator<Item = &JSONSchemaProps> {
    let items: Vec<&JSONSchemaProps> = match &s.items {
        Some(JSONSchemaPropsOrArray::Schema(i)) => vec![i],
        Some(JSONSchemaPropsOrArray::Schemas(v)) => v.iter().collect(),
        None => vec![],
    };
    let extra = match &s.additional_properties {
        Some(JSONSchemaPropsOrBool::Schema(a)) => Some(&**a),
        _ => None,
    };
    items
        .into_iter()
        .chain(s.properties.iter().flat_map(|p| p.values()))
        .chain(extra)
        .chain(s.all_of.iter().flatten())
        .chain(s.any_of.iter().flatten())
        .chain(s.one_of.iter().flatten())
}

struct Validator<'a> {
    out: &'a mut Vec<Invalid>,
    patterns: &'a mut BTreeMap<String, Option<regex::Regex>>,
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

impl Validator<'_> {
    fn fail(&mut self, path: &str, message: impl Into<String>) {
        self.out.push(Invalid {
            path: path.to_owned(),
            message: message.into(),
        });
    }

    /// Validates `value` (not null) against `s`.
    fn value(&mut self, value: &Value, s: &JSONSchemaProps, path: &str) {
        if !self.type_ok(value, s, path) {
            return;
        }
        if let Some(allowed) = &s.enum_
            && !allowed.is_empty()
            && !allowed.iter().any(|a| same_json(&a.0, value))
        {
            let list: Vec<String> = allowed.iter().map(|a| a.0.to_string()).collect();
            self.fail(
                path,
                format!(
                    "{value} is not one of the allowed values [{}]",
                    list.join(", ")
                ),
            );
        }
        self.number_and_size(value, s, path);
        match value {
            Value::Object(map) => self.object(map, s, path),
            Value::Array(items) => self.array(items, s, path),
            _ => {}
        }
        self.combinators(value, s, path);
    }

    fn type_ok(&mut self, value: &Value, s: &JSONSchemaProps, path: &str) -> bool {
        if s.x_kubernetes_int_or_string == Some(true) {
            let ok = value.is_string() || value.as_f64().is_some_and(|f| f.fract() == 0.0);
            if !ok {
                self.fail(path, format!("{value} must be an integer or a string"));
            }
            return ok;
        }
        let ok = match s.type_.as_deref().unwrap_or("") {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "number" => value.is_number(),
            "integer" => {
                value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => true,
        };
        if !ok {
            self.fail(
                path,
                format!(
                    "{value} must be of type {}",
                    s.type_.as_deref().unwrap_or("")
                ),
            );
        }
        ok
    }

    fn number_and_size(&mut self, value: &Value, s: &JSONSchemaProps, path: &str) {
        if let Some(n) = value.as_f64().filter(|_| value.is_number()) {
            if let Some(max) = s.maximum
                && (n > max || (s.exclusive_maximum == Some(true) && n >= max))
            {
                self.fail(
                    path,
                    format!(
                        "{value} must be {} {max}",
                        if s.exclusive_maximum == Some(true) {
                            "<"
                        } else {
                            "<="
                        }
                    ),
                );
            }
            if let Some(min) = s.minimum
                && (n < min || (s.exclusive_minimum == Some(true) && n <= min))
            {
                self.fail(
                    path,
                    format!(
                        "{value} must be {} {min}",
                        if s.exclusive_minimum == Some(true) {
                            ">"
                        } else {
                            ">="
                        }
                    ),
                );
            }
            if let Some(m) = s.multiple_of
                && m > 0.0
                && (n / m).fract().abs() > 1e-9
            {
                self.fail(path, format!("{value} must be a multiple of {m}"));
            }
        }
        let (len, what) = match value {
            Value::String(text) => (text.chars().count(), "characters"),
            Value::Array(items) => (items.len(), "items"),
            Value::Object(map) => (map.len(), "properties"),
            _ => return,
        };
        let (max, min) = match value {
            Value::String(_) => (s.max_length, s.min_length),
            Value::Array(_) => (s.max_items, s.min_items),
            _ => (s.max_properties, s.min_properties),
        };
        let len = i64::try_from(len).unwrap_or(i64::MAX);
        if let Some(max) = max.filter(|m| len > *m) {
            self.fail(path, format!("has {len} {what}, at most {max} allowed"));
        }
        if let Some(min) = min.filter(|m| len < *m) {
            self.fail(path, format!("has {len} {what}, at least {min} required"));
        }
        if let (Value::String(text), Some(pattern)) = (value, &s.pattern) {
            self.pattern(text, pattern, path);
        }
    }

    fn pattern(&mut self, text: &str, pattern: &str, path: &str) {
        let compiled = self
            .patterns
            .entry(pattern.to_owned())
            .or_insert_with(|| regex::Regex::new(pattern).ok());
        match compiled {
            Some(re) if !re.is_match(text) => {
                let message = format!("{text:?} does not match the pattern {pattern:?}");
                self.fail(path, message);
            }
            Some(_) => {}
            None => self.fail(
                path,
                format!("the schema's pattern {pattern:?} is not a valid regular expression"),
            ),
        }
    }

    fn object(&mut self, map: &serde_json::Map<String, Value>, s: &JSONSchemaProps, path: &str) {
        let properties = s.properties.as_ref();
        let present = |name: &str| {
            map.get(name).is_some_and(|v| {
                !v.is_null()
                    || properties
                        .and_then(|p| p.get(name))
                        .is_some_and(|p| p.nullable == Some(true))
            })
        };
        for name in s.required.iter().flatten() {
            if !present(name) {
                self.fail(&child(path, name), "is required");
            }
        }
        for (name, value) in map {
            let schema = match properties.and_then(|p| p.get(name)) {
                Some(schema) => schema,
                None => match &s.additional_properties {
                    Some(JSONSchemaPropsOrBool::Schema(extra)) => extra,
                    _ => continue, // pruned by the apiserver, or kept unvalidated
                },
            };
            if !value.is_null() {
                self.value(value, schema, &child(path, name));
            }
        }
    }

    fn array(&mut self, items: &[Value], s: &JSONSchemaProps, path: &str) {
        if s.unique_items == Some(true) {
            for (i, item) in items.iter().enumerate() {
                if items[..i].iter().any(|earlier| same_json(earlier, item)) {
                    self.fail(
                        &format!("{path}[{i}]"),
                        "duplicate item in a list of unique items",
                    );
                }
            }
        }
        if let Some(JSONSchemaPropsOrArray::Schema(item_schema)) = &s.items {
            for (i, item) in items.iter().enumerate() {
                if item.is_null() {
                    if item_schema.nullable != Some(true) {
                        self.fail(&format!("{path}[{i}]"), "must not be null");
                    }
                    continue;
                }
                self.value(item, item_schema, &format!("{path}[{i}]"));
            }
        }
    }

    fn combinators(&mut self, value: &Value, s: &JSONSchemaProps, path: &str) {
        let passes = |branch: &JSONSchemaProps| {
            let mut out = Vec::new();
            let mut patterns = BTreeMap::new();
            Validator {
                out: &mut out,
                patterns: &mut patterns,
            }
            .value(value, branch, path);
            out.is_empty()
        };
        for branch in s.all_of.iter().flatten() {
            self.value(value, branch, path);
        }
        if let Some(any) = s.any_of.as_ref().filter(|a| !a.is_empty())
            && !any.iter().any(passes)
        {
            self.fail(path, "matches none of the anyOf schemas");
        }
        if let Some(one) = s.one_of.as_ref().filter(|a| !a.is_empty()) {
            let matched = one.iter().filter(|b| passes(b)).count();
            if matched != 1 {
                self.fail(
                    path,
                    format!("must match exactly one of the oneOf schemas, matches {matched}"),
                );
            }
        }
        if let Some(not) = &s.not
            && passes(not)
        {
            self.fail(path, "must not match the schema under not");
        }
    }
}

/// JSON equality where `1` equals `1.0`.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(value: Value) -> JSONSchemaProps {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn every_structural_rule() {
        let root = schema(json!({
            "type": "object",
            "required": ["spec"],
            "properties": {"spec": {"type": "object", "required": ["image"], "properties": {
                "image": {"type": "string", "minLength": 1, "maxLength": 5, "pattern": "^[a-z]+$"},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 3},
                "level": {"type": "string", "enum": ["a", "b"]},
                "port": {"x-kubernetes-int-or-string": true},
                "tags": {"type": "array", "maxItems": 1, "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "gone": {"type": "string"}
            }}}
        }));
        let object = json!({
            "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"},
            "spec": {"image": "ABCDEFG", "replicas": 4.5, "level": "c", "port": true,
                     "tags": ["a", 1], "labels": {"k": 2}, "gone": null, "unknown": 1}
        });
        let got: Vec<(String, String)> = validate_object(&object, &root)
            .into_iter()
            .map(|i| (i.path, i.message))
            .collect();
        let want = [
            ("spec.image", "has 7 characters, at most 5 allowed"),
            (
                "spec.image",
                "\"ABCDEFG\" does not match the pattern \"^[a-z]+$\"",
            ),
            ("spec.labels.k", "2 must be of type string"),
            (
                "spec.level",
                "\"c\" is not one of the allowed values [\"a\", \"b\"]",
            ),
            ("spec.port", "true must be an integer or a string"),
            ("spec.replicas", "4.5 must be of type integer"),
            ("spec.tags", "has 2 items, at most 1 allowed"),
            ("spec.tags[1]", "1 must be of type string"),
        ];
        assert_eq!(
            got,
            want.map(|(p, m)| (p.to_owned(), m.to_owned())).to_vec()
        );
        let missing = validate_object(&json!({"spec": {"image": null}}), &root);
        assert_eq!(
            missing,
            vec![Invalid {
                path: "spec.image".into(),
                message: "is required".into()
            }]
        );
    }
}
