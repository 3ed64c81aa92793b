//! Walking and comparing `JSONSchemaProps` the way Go's apiextensions types compare them.
//!
//! Paths use crdify's notation: `^` is a version's `openAPIV3Schema`; a property is `.name`,
//! an array's item schema `.items`, a positional item schema `.items[i]`, a combinator branch
//! `.allOf[i]` / `.anyOf[i]` / `.oneOf[i]`, `.not`, `.additionalProperties`,
//! `.additionalItems`, `.patternProperties[re]`, `.definitions[name]`,
//! `.dependencies[name]`.
//!
//! Equality follows Go's semantic equality of the typed structs: a string field that is empty
//! equals one that is absent, a non-pointer boolean that is `false` equals one that is absent,
//! an empty list or map equals an absent one, and JSON values (`default`, `enum`, `example`)
//! compare by their JSON encoding (so `1.0` equals `1`, as Go's YAML-to-JSON step makes them).

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinitionVersion, JSON, JSONSchemaProps, JSONSchemaPropsOrArray,
    JSONSchemaPropsOrBool, JSONSchemaPropsOrStringArray,
};
use serde_json::Value;

/// Every schema node of a version by path (see the module docs), the root included.
pub fn flatten(version: &CustomResourceDefinitionVersion) -> BTreeMap<String, &JSONSchemaProps> {
    let mut out = BTreeMap::new();
    if let Some(root) = version
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
    {
        walk(root, "^".to_owned(), &mut out);
    }
    out
}

fn walk<'a>(s: &'a JSONSchemaProps, path: String, out: &mut BTreeMap<String, &'a JSONSchemaProps>) {
    match &s.items {
        Some(JSONSchemaPropsOrArray::Schema(item)) => walk(item, format!("{path}.items"), out),
        Some(JSONSchemaPropsOrArray::Schemas(items)) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, format!("{path}.items[{i}]"), out);
            }
        }
        None => {}
    }
    for (word, list) in [
        ("allOf", &s.all_of),
        ("anyOf", &s.any_of),
        ("oneOf", &s.one_of),
    ] {
        for (i, branch) in list.iter().flatten().enumerate() {
            walk(branch, format!("{path}.{word}[{i}]"), out);
        }
    }
    if let Some(not) = &s.not {
        walk(not, format!("{path}.not"), out);
    }
    for (name, child) in s.properties.iter().flatten() {
        walk(child, format!("{path}.{name}"), out);
    }
    if let Some(JSONSchemaPropsOrBool::Schema(child)) = &s.additional_properties {
        walk(child, format!("{path}.additionalProperties"), out);
    }
    for (key, child) in s.pattern_properties.iter().flatten() {
        walk(child, format!("{path}.patternProperties[{key}]"), out);
    }
    if let Some(JSONSchemaPropsOrBool::Schema(child)) = &s.additional_items {
        walk(child, format!("{path}.additionalItems"), out);
    }
    for (key, child) in s.definitions.iter().flatten() {
        walk(child, format!("{path}.definitions[{key}]"), out);
    }
    for (key, dep) in s.dependencies.iter().flatten() {
        if let JSONSchemaPropsOrStringArray::Schema(child) = dep {
            walk(child, format!("{path}.dependencies[{key}]"), out);
        }
    }
    out.insert(path, s);
}

/// The node itself, without its `properties` and `items` (those are compared at their own
/// paths), normalized (see [`normalize`]).
pub fn own(s: &JSONSchemaProps) -> JSONSchemaProps {
    // Field by field, so that the children (often the whole tree below) are never cloned; a
    // field k8s-openapi adds makes this fail to compile instead of being skipped.
    let mut copy = JSONSchemaProps {
        properties: None,
        items: None,
        ref_path: s.ref_path.clone(),
        schema: s.schema.clone(),
        additional_items: s.additional_items.clone(),
        additional_properties: s.additional_properties.clone(),
        all_of: s.all_of.clone(),
        any_of: s.any_of.clone(),
        default: s.default.clone(),
        definitions: s.definitions.clone(),
        dependencies: s.dependencies.clone(),
        description: s.description.clone(),
        enum_: s.enum_.clone(),
        example: s.example.clone(),
        exclusive_maximum: s.exclusive_maximum,
        exclusive_minimum: s.exclusive_minimum,
        external_docs: s.external_docs.clone(),
        format: s.format.clone(),
        id: s.id.clone(),
        max_items: s.max_items,
        max_length: s.max_length,
        max_properties: s.max_properties,
        maximum: s.maximum,
        min_items: s.min_items,
        min_length: s.min_length,
        min_properties: s.min_properties,
        minimum: s.minimum,
        multiple_of: s.multiple_of,
        not: s.not.clone(),
        nullable: s.nullable,
        one_of: s.one_of.clone(),
        pattern: s.pattern.clone(),
        pattern_properties: s.pattern_properties.clone(),
        required: s.required.clone(),
        title: s.title.clone(),
        type_: s.type_.clone(),
        unique_items: s.unique_items,
        x_kubernetes_embedded_resource: s.x_kubernetes_embedded_resource,
        x_kubernetes_int_or_string: s.x_kubernetes_int_or_string,
        x_kubernetes_list_map_keys: s.x_kubernetes_list_map_keys.clone(),
        x_kubernetes_list_type: s.x_kubernetes_list_type.clone(),
        x_kubernetes_map_type: s.x_kubernetes_map_type.clone(),
        x_kubernetes_preserve_unknown_fields: s.x_kubernetes_preserve_unknown_fields,
        x_kubernetes_validations: s.x_kubernetes_validations.clone(),
    };
    normalize(&mut copy);
    copy
}

/// Rewrites a schema so that derived equality is Go's semantic equality (see module docs).
pub fn normalize(s: &mut JSONSchemaProps) {
    for text in [
        &mut s.description,
        &mut s.format,
        &mut s.pattern,
        &mut s.title,
        &mut s.type_,
        &mut s.id,
        &mut s.schema,
    ] {
        if text.as_deref() == Some("") {
            *text = None;
        }
    }
    for flag in [
        &mut s.exclusive_maximum,
        &mut s.exclusive_minimum,
        &mut s.nullable,
        &mut s.unique_items,
        &mut s.x_kubernetes_embedded_resource,
        &mut s.x_kubernetes_int_or_string,
    ] {
        if *flag == Some(false) {
            *flag = None;
        }
    }
    drop_empty(&mut s.required);
    drop_empty(&mut s.x_kubernetes_list_map_keys);
    drop_empty(&mut s.x_kubernetes_validations);
    drop_empty(&mut s.enum_);
    for value in s.enum_.iter_mut().flatten() {
        canonical(&mut value.0);
    }
    for value in [&mut s.default, &mut s.example].into_iter().flatten() {
        canonical(&mut value.0);
    }
    for list in [&mut s.all_of, &mut s.any_of, &mut s.one_of] {
        drop_empty(list);
        list.iter_mut().flatten().for_each(normalize);
    }
    if let Some(not) = &mut s.not {
        normalize(not);
    }
    for map in [
        &mut s.properties,
        &mut s.pattern_properties,
        &mut s.definitions,
    ] {
        if map.as_ref().is_some_and(BTreeMap::is_empty) {
            *map = None;
        }
        map.iter_mut().flatten().for_each(|(_, c)| normalize(c));
    }
    if s.dependencies.as_ref().is_some_and(BTreeMap::is_empty) {
        s.dependencies = None;
    }
    for dep in s.dependencies.iter_mut().flatten().map(|(_, d)| d) {
        if let JSONSchemaPropsOrStringArray::Schema(child) = dep {
            normalize(child);
        }
    }
    for extra in [&mut s.additional_properties, &mut s.additional_items] {
        if let Some(JSONSchemaPropsOrBool::Schema(child)) = extra {
            normalize(child);
        }
    }
    match &mut s.items {
        Some(JSONSchemaPropsOrArray::Schema(item)) => normalize(item),
        Some(JSONSchemaPropsOrArray::Schemas(items)) => items.iter_mut().for_each(normalize),
        None => {}
    }
}

fn drop_empty<T>(list: &mut Option<Vec<T>>) {
    if list.as_ref().is_some_and(Vec::is_empty) {
        *list = None;
    }
}

/// Integral floats become integers, as Go's YAML-to-JSON conversion prints them.
fn canonical(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 9.0e15
            {
                #[allow(clippy::cast_possible_truncation)]
                let i = f as i64;
                *value = Value::from(i);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(canonical),
        Value::Object(map) => map.values_mut().for_each(canonical),
        _ => {}
    }
}

/// A JSON value as Go prints it in messages (`null` for an absent one).
pub fn json_text(value: &JSON) -> String {
    serde_json::to_string(&value.0).unwrap_or_default()
}

/// The top-level fields (by their JSON name) in which two normalized schemas differ, each
/// with its old and new value, in name order.
pub fn differing_fields(a: &JSONSchemaProps, b: &JSONSchemaProps) -> Vec<(String, String, String)> {
    let to_map = |s: &JSONSchemaProps| match serde_json::to_value(s) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let (a, b) = (to_map(a), to_map(b));
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            let text = |v: Option<&Value>| v.map_or_else(|| "none".to_owned(), Value::to_string);
            ((*k).clone(), text(a.get(k)), text(b.get(k)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_equality_ignores_empty_and_false_and_float_spelling() {
        let a = JSONSchemaProps {
            description: Some(String::new()),
            nullable: Some(false),
            required: Some(vec![]),
            default: Some(JSON(serde_json::json!(1.0))),
            ..Default::default()
        };
        let b = JSONSchemaProps {
            default: Some(JSON(serde_json::json!(1))),
            ..Default::default()
        };
        assert_eq!(own(&a), own(&b));
        let c = JSONSchemaProps {
            x_kubernetes_preserve_unknown_fields: Some(false),
            ..Default::default()
        };
        assert_ne!(own(&c), own(&JSONSchemaProps::default()));
    }
}
