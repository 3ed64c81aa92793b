//! A custom resource against its CRD's structural schema, as kube-apiserver creates it: the
//! object as stored ([`as_created`]: `status` dropped under a status subresource, `null`s of
//! fields that are not nullable and have no default pruned, defaults applied), then every
//! reason the apiserver refuses it ([`validate_object`]), in the apiserver's own words
//! (`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer:
//! "string"`, `spec: Required value`).
//!
//! Checked: `type` (with `x-kubernetes-int-or-string`), `nullable`, `enum`, `required`,
//! `maximum`/`minimum` (and their exclusive forms), `multipleOf`, `maxLength`/`minLength`
//! (in characters), `pattern` (Go RE2 syntax, compiled with the `regex` crate),
//! `maxItems`/`minItems`, `uniqueItems`, `maxProperties`/`minProperties`, `items`,
//! `properties`, `additionalProperties`, `allOf`/`anyOf`/`oneOf`/`not`, the formats of
//! [`super::cr_format`], `x-kubernetes-list-type` `set` and `map` (no duplicate item or
//! key), and `x-kubernetes-embedded-resource` (`apiVersion` and `kind` required).
//! Unknown fields are not errors: the apiserver prunes them (or keeps them under
//! `x-kubernetes-preserve-unknown-fields`). Not checked: CEL rules
//! (`x-kubernetes-validations`), which [`has_cel_rules`] tells callers to say. At the root,
//! `apiVersion`, `kind` and `metadata` are the apiserver's and are skipped.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use serde_json::Value;

use super::cr_format;

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

/// One reason the apiserver refuses a value: where (`spec.replicas`, `spec.items[2]`) and
/// why, as the apiserver words it after the path (`Required value`, `Invalid value: …`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    /// Where the value is, e.g. `spec.items[2]`.
    pub path: String,
    /// The apiserver's message after the path.
    pub message: String,
}

impl Invalid {
    /// `PATH: MESSAGE`, as the apiserver prints it (`<nil>` for the object itself).
    pub fn text(&self) -> String {
        let path = if self.path.is_empty() {
            "<nil>"
        } else {
            &self.path
        };
        format!("{path}: {}", self.message)
    }
}

/// `object` as kube-apiserver stores it on create under `root`: `status` dropped when the
/// version has a status subresource, `null`s of fields that are neither nullable nor
/// defaulted removed, then every default applied where its field is absent (or `null` and
/// not nullable), recursively.
pub fn as_created(object: &Value, root: &JSONSchemaProps, status_subresource: bool) -> Value {
    let mut out = object.clone();
    if status_subresource && let Some(map) = out.as_object_mut() {
        map.remove("status");
    }
    prune_nulls(&mut out, Some(root));
    apply_defaults(&mut out, root);
    out
}

/// The schema of `name` in an object under `s`: its property, else `additionalProperties`.
fn field_schema<'s>(s: &'s JSONSchemaProps, name: &str) -> Option<&'s JSONSchemaProps> {
    match s.properties.as_ref().and_then(|p| p.get(name)) {
        Some(schema) => Some(schema),
        None => match &s.additional_properties {
            Some(JSONSchemaPropsOrBool::Schema(extra)) => Some(extra),
            _ => None,
        },
    }
}

fn item_schema(s: &JSONSchemaProps) -> Option<&JSONSchemaProps> {
    match &s.items {
        Some(JSONSchemaPropsOrArray::Schema(item)) => Some(item),
        _ => None,
    }
}

/// Whether `value` is a `null` the apiserver drops (or defaults) under `s`.
fn non_nullable_null(value: &Value, s: Option<&JSONSchemaProps>) -> bool {
    value.is_null() && s.is_some_and(|s| s.nullable != Some(true))
}

fn prune_nulls(value: &mut Value, s: Option<&JSONSchemaProps>) {
    match value {
        Value::Object(map) => {
            map.retain(|name, v| {
                let schema = s.and_then(|s| field_schema(s, name));
                !(non_nullable_null(v, schema) && schema.is_some_and(|s| s.default.is_none()))
            });
            for (name, v) in map.iter_mut() {
                prune_nulls(v, s.and_then(|s| field_schema(s, name)));
            }
        }
        Value::Array(items) => {
            for item in items {
                prune_nulls(item, s.and_then(item_schema));
            }
        }
        _ => {}
    }
}

fn apply_defaults(value: &mut Value, s: &JSONSchemaProps) {
    match value {
        Value::Object(map) => {
            for (name, property) in s.properties.iter().flatten() {
                let Some(default) = &property.default else {
                    continue;
                };
                let absent = map
                    .get(name)
                    .is_none_or(|v| non_nullable_null(v, Some(property)));
                if absent {
                    map.insert(name.clone(), default.0.clone());
                }
            }
            for (name, v) in map.iter_mut() {
                if let Some(schema) = field_schema(s, name) {
                    if non_nullable_null(v, Some(schema))
                        && let Some(default) = &schema.default
                    {
                        *v = default.0.clone();
                    }
                    apply_defaults(v, schema);
                }
            }
        }
        Value::Array(items) => {
            if let Some(schema) = item_schema(s) {
                for item in items {
                    if non_nullable_null(item, Some(schema))
                        && let Some(default) = &schema.default
                    {
                        *item = default.0.clone();
                    }
                    apply_defaults(item, schema);
                }
            }
        }
        _ => {}
    }
}

/// Every reason the apiserver refuses `object` (a whole custom resource, as stored: see
/// [`as_created`]) under `root`, sorted by path.
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
            validator.size(&Value::Object(rest.clone()), root, "");
            validator.combinators(&Value::Object(rest), root, "");
        }
        _ => validator.fail("", "Invalid value: \"\": must be an object"),
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

/// A value as Go's field errors print it: strings quoted, numbers and booleans bare, lists
/// and objects as JSON.
pub fn go_value(value: &Value) -> String {
    match value {
        Value::String(text) => format!("{text:?}"),
        Value::Number(n) if n.is_f64() => go_float(n.as_f64().unwrap_or_default()),
        _ => value.to_string(),
    }
}

/// A float as Go's `%v` prints it: the shortest form, with an exponent (`1e+06`) from 7
/// digits before the point or 4 zeros after it.
pub fn go_float(f: f64) -> String {
    let exponent = if f == 0.0 {
        0
    } else {
        #[allow(clippy::cast_possible_truncation)]
        let e = f.abs().log10().floor() as i32;
        e
    };
    if (-4..6).contains(&exponent) {
        return format!("{f}");
    }
    let scientific = format!("{f:e}");
    let (mantissa, power) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let (sign, digits) = match power.strip_prefix('-') {
        Some(digits) => ('-', digits),
        None => ('+', power),
    };
    format!("{mantissa}e{sign}{digits:0>2}")
}

/// The JSON type name kube-openapi gives `value`.
fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl Validator<'_> {
    fn fail(&mut self, path: &str, message: impl Into<String>) {
        self.out.push(Invalid {
            path: path.to_owned(),
            message: message.into(),
        });
    }

    /// `Invalid value: VALUE: PATH in body DETAIL`, the apiserver's words for most rules.
    fn invalid(&mut self, path: &str, value: &Value, detail: &str) {
        let message = format!(
            "Invalid value: {}: {path} in body {detail}",
            go_value(value)
        );
        self.fail(path, message);
    }

    /// Validates `value` against `s`.
    fn value(&mut self, value: &Value, s: &JSONSchemaProps, path: &str) {
        if !self.type_ok(value, s, path) || value.is_null() {
            return;
        }
        if let Some(allowed) = s.enum_.as_ref().filter(|a| !a.is_empty())
            && !allowed.iter().any(|a| same_json(&a.0, value))
        {
            let list: Vec<String> = allowed
                .iter()
                .map(|a| match &a.0 {
                    Value::String(text) => format!("{text:?}"),
                    other => format!("{:?}", other.to_string()),
                })
                .collect();
            let message = format!(
                "Unsupported value: {}: supported values: {}",
                go_value(value),
                list.join(", ")
            );
            self.fail(path, message);
        }
        self.size(value, s, path);
        match value {
            Value::Object(map) => self.object(map, s, path),
            Value::Array(items) => self.array(items, s, path),
            _ => {}
        }
        self.combinators(value, s, path);
    }

    fn type_ok(&mut self, value: &Value, s: &JSONSchemaProps, path: &str) -> bool {
        let mut types: Vec<&str> = s.type_.as_deref().into_iter().collect();
        if s.x_kubernetes_int_or_string == Some(true) {
            types = vec!["integer", "string"];
        }
        if types.is_empty() || (value.is_null() && s.nullable == Some(true)) {
            return true;
        }
        let got = type_of(value);
        let integral = value.as_f64().is_some_and(|f| f.fract() == 0.0);
        let ok = types.contains(&got)
            || (got == "number" && integral && types.contains(&"integer"))
            || (got == "integer" && types.contains(&"number"));
        if !ok {
            let message = format!(
                "Invalid value: {got:?}: {path} in body must be of type {}: {got:?}",
                types.join(",")
            );
            self.fail(path, message);
            // The number check runs too, and words the same mistake at the root.
            if got == "number" && s.type_.as_deref() == Some("integer") {
                let message = format!(
                    "Invalid value: \"\": Checked value must be of type integer (default format) in {path}"
                );
                self.fail("", message);
            }
        }
        ok
    }

    /// Bounds of numbers, strings (with pattern and format), lists and objects.
    fn size(&mut self, value: &Value, s: &JSONSchemaProps, path: &str) {
        match value {
            Value::Number(_) => self.number(value, s, path),
            Value::String(text) => self.string(value, text, s, path),
            Value::Array(items) => {
                let len = items.len();
                if let Some(max) = s.max_items.filter(|m| too_many(len, *m)) {
                    let unit = if max == 1 { "item" } else { "items" };
                    self.fail(
                        path,
                        format!("Too many: {len}: must have at most {max} {unit}"),
                    );
                }
                if let Some(min) = s.min_items.filter(|m| too_few(len, *m)) {
                    let detail = format!("should have at least {min} items");
                    self.invalid(path, &Value::from(len), &detail);
                }
            }
            Value::Object(map) => {
                let len = map.len();
                if let Some(max) = s.max_properties.filter(|m| too_many(len, *m)) {
                    let unit = if max == 1 { "item" } else { "items" };
                    self.fail(
                        path,
                        format!("Too many: {len}: must have at most {max} {unit}"),
                    );
                }
                if let Some(min) = s.min_properties.filter(|m| too_few(len, *m)) {
                    let detail = format!("should have at least {min} properties");
                    self.invalid(path, &Value::from(len), &detail);
                }
            }
            _ => {}
        }
    }

    fn number(&mut self, value: &Value, s: &JSONSchemaProps, path: &str) {
        let Some(n) = value.as_f64() else { return };
        let bound = |b: f64| {
            if value.is_f64() {
                go_float(b)
            } else {
                #[allow(clippy::cast_possible_truncation)]
                let i = b as i64;
                i.to_string()
            }
        };
        if let Some(max) = s.maximum {
            let exclusive = s.exclusive_maximum == Some(true);
            if n > max || (exclusive && n >= max) {
                let op = if exclusive { "" } else { " or equal to" };
                let detail = format!("should be less than{op} {}", bound(max));
                self.invalid(path, value, &detail);
            }
        }
        if let Some(min) = s.minimum {
            let exclusive = s.exclusive_minimum == Some(true);
            if n < min || (exclusive && n <= min) {
                let op = if exclusive { "" } else { " or equal to" };
                let detail = format!("should be greater than{op} {}", bound(min));
                self.invalid(path, value, &detail);
            }
        }
        if let Some(m) = s.multiple_of
            && m > 0.0
            && (n / m).fract().abs() > 1e-9
        {
            let detail = format!("should be a multiple of {}", go_float(m));
            self.invalid(path, value, &detail);
        }
    }

    fn string(&mut self, value: &Value, text: &str, s: &JSONSchemaProps, path: &str) {
        let len = text.chars().count();
        if let Some(max) = s.max_length.filter(|m| too_many(len, *m)) {
            let unit = if max == 1 { "byte" } else { "bytes" };
            self.fail(path, format!("Too long: may not be more than {max} {unit}"));
        }
        if let Some(min) = s.min_length.filter(|m| too_few(len, *m)) {
            let detail = format!("should be at least {min} chars long");
            self.invalid(path, value, &detail);
        }
        if let Some(pattern) = &s.pattern {
            self.pattern(value, text, pattern, path);
        }
        if let Some(format) = s.format.as_deref()
            && !cr_format::valid(format, text)
        {
            let message = format!(
                "Invalid value: {text:?}: {path} in body must be of type {format}: {text:?}"
            );
            self.fail(path, message);
        }
    }

    fn pattern(&mut self, value: &Value, text: &str, pattern: &str, path: &str) {
        let compiled = self
            .patterns
            .entry(pattern.to_owned())
            .or_insert_with(|| regex::Regex::new(pattern).ok());
        match compiled {
            Some(re) if !re.is_match(text) => {
                let detail = format!("should match '{pattern}'");
                self.invalid(path, value, &detail);
            }
            Some(_) => {}
            // The apiserver refuses such a CRD: `crd/schema` reports it there.
            None => {}
        }
    }

    fn object(&mut self, map: &serde_json::Map<String, Value>, s: &JSONSchemaProps, path: &str) {
        for name in s.required.iter().flatten() {
            if !map.contains_key(name) {
                self.fail(&child(path, name), "Required value");
            }
        }
        if s.x_kubernetes_embedded_resource == Some(true) && !path.is_empty() {
            for name in ["apiVersion", "kind"] {
                if !map.contains_key(name) {
                    self.fail(&child(path, name), "Required value");
                }
            }
        }
        for (name, value) in map {
            // A field without a schema is pruned by the apiserver, or kept unvalidated.
            if let Some(schema) = field_schema(s, name) {
                self.value(value, schema, &child(path, name));
            }
        }
    }

    fn array(&mut self, items: &[Value], s: &JSONSchemaProps, path: &str) {
        if s.unique_items == Some(true)
            && items
                .iter()
                .enumerate()
                .any(|(i, item)| items[..i].iter().any(|e| same_json(e, item)))
        {
            self.invalid(
                path,
                &Value::String(String::new()),
                "shouldn't contain duplicates",
            );
        }
        if let Some(item_schema) = item_schema(s) {
            for (i, item) in items.iter().enumerate() {
                self.value(item, item_schema, &format!("{path}[{i}]"));
            }
        }
        self.list_type(items, s, path);
    }

    /// `x-kubernetes-list-type`: no item of a `set`, no key of a `map`, twice.
    fn list_type(&mut self, items: &[Value], s: &JSONSchemaProps, path: &str) {
        let keys: Vec<Value> = match s.x_kubernetes_list_type.as_deref() {
            Some("set") => items.to_vec(),
            Some("map") => {
                let fields = s.x_kubernetes_list_map_keys.clone().unwrap_or_default();
                if items.iter().any(|i| !i.is_object() && !i.is_null()) {
                    return; // the type check above refuses it
                }
                items.iter().map(|item| map_key(item, &fields)).collect()
            }
            _ => return,
        };
        for (i, key) in keys.iter().enumerate() {
            if keys[..i].iter().any(|earlier| same_json(earlier, key)) {
                let message = format!("Duplicate value: {}", go_value(key));
                self.fail(&format!("{path}[{i}]"), message);
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
        let composite = |what: &str| format!("Invalid value: \"\": {path:?} {what}");
        let all = s.all_of.iter().flatten();
        if all.clone().any(|b| !passes(b)) {
            self.fail(path, composite("must validate all the schemas (allOf)"));
            for branch in all {
                self.value(value, branch, path);
            }
        }
        if let Some(any) = s.any_of.as_ref().filter(|a| !a.is_empty())
            && !any.iter().any(passes)
        {
            self.fail(path, composite("must validate at least one schema (anyOf)"));
        }
        if let Some(one) = s.one_of.as_ref().filter(|a| !a.is_empty()) {
            let matched = one.iter().filter(|b| passes(b)).count();
            if matched != 1 {
                let found = match matched {
                    0 => "Found none valid".to_owned(),
                    n => format!("Found {n} valid alternatives"),
                };
                let what = format!("must validate one and only one schema (oneOf). {found}");
                self.fail(path, composite(&what));
            }
        }
        if let Some(not) = &s.not
            && passes(not)
        {
            self.fail(path, composite("must not validate the schema (not)"));
        }
    }
}

fn too_many(len: usize, max: i64) -> bool {
    i64::try_from(len).unwrap_or(i64::MAX) > max
}

fn too_few(len: usize, min: i64) -> bool {
    i64::try_from(len).unwrap_or(i64::MAX) < min
}

/// The key of a `map` list's item: its key fields, as the apiserver compares them (`{}`
/// for a `null` item or one without them).
fn map_key(item: &Value, fields: &[String]) -> Value {
    let mut key = serde_json::Map::new();
    for field in fields {
        if let Some(v) = item.get(field) {
            key.insert(field.clone(), v.clone());
        }
    }
    Value::Object(key)
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
mod tests;
