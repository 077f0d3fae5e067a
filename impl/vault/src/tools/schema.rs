//! Validation of tool arguments against the tool's input schema, with defaults filled
//! (spec `dispatch.schema`, `tools.schema`, `results.validation-error`,
//! `gate.hash.uniform`).
//!
//! The tools' schemas are hand-written JSON Schema (see `tools::defs`), and they use a
//! small subset of it; this module validates exactly that subset rather than pulling in a
//! general validator (the `jsonschema` crate brings a regex engine, URL resolution and a
//! network client for remote `$ref`s, none of which a closed set of local schemas needs):
//!
//! - `type`: `object`, `string`, `boolean`, `integer`, `array` (one name);
//! - `properties`, `required`, `additionalProperties: false` on objects;
//! - `enum` of strings; `minLength` on strings; `minimum` on integers; `minItems` and
//!   `items` on arrays; `default` on any property.
//!
//! Any other keyword (`description`, `title`) is documentation and ignored. The result is
//! the arguments with every absent defaulted property filled in, and an explicit `null` on
//! an optional property treated as absent, so a call that omits a default and one that
//! states it validate (and hash) alike.

use serde_json::{Map, Value};

/// One thing wrong with the arguments: where (a JSON pointer) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolation {
    pub pointer: String,
    pub message: String,
}

/// Validates `args` against `schema` (an object schema) and returns them with defaults
/// filled; every violation found is reported, in document order.
pub fn validate_and_fill(schema: &Value, args: &Value) -> Result<Value, Vec<SchemaViolation>> {
    let mut errors = Vec::new();
    let filled = check(schema, args, "", &mut errors);
    if errors.is_empty() {
        Ok(filled)
    } else {
        Err(errors)
    }
}

fn push(errors: &mut Vec<SchemaViolation>, pointer: &str, message: impl Into<String>) {
    errors.push(SchemaViolation {
        pointer: if pointer.is_empty() {
            "/".to_owned()
        } else {
            pointer.to_owned()
        },
        message: message.into(),
    });
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check(schema: &Value, value: &Value, pointer: &str, errors: &mut Vec<SchemaViolation>) -> Value {
    let expected = schema.get("type").and_then(Value::as_str);
    if let Some(expected) = expected
        && type_name(value) != expected
    {
        push(
            errors,
            pointer,
            format!("expected {expected}, found {}", type_name(value)),
        );
        return value.clone();
    }
    match value {
        Value::String(text) => {
            if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
                && !allowed.iter().any(|a| a.as_str() == Some(text))
            {
                let names: Vec<&str> = allowed.iter().filter_map(Value::as_str).collect();
                push(
                    errors,
                    pointer,
                    format!("must be one of {}", names.join(", ")),
                );
            }
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && (text.chars().count() as u64) < min
            {
                push(
                    errors,
                    pointer,
                    format!("must be at least {min} character(s) long"),
                );
            }
            value.clone()
        }
        Value::Number(number) => {
            if let Some(min) = schema.get("minimum").and_then(Value::as_i64)
                // A u64 beyond i64 is above any minimum we write.
                && number.as_i64().is_some_and(|n| n < min)
            {
                push(errors, pointer, format!("must be at least {min}"));
            }
            value.clone()
        }
        Value::Array(items) => {
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && (items.len() as u64) < min
            {
                push(errors, pointer, format!("must hold at least {min} item(s)"));
            }
            match schema.get("items") {
                Some(item_schema) => Value::Array(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, item)| {
                            check(item_schema, item, &format!("{pointer}/{i}"), errors)
                        })
                        .collect(),
                ),
                None => value.clone(),
            }
        }
        Value::Object(object) => check_object(schema, object, pointer, errors),
        Value::Null | Value::Bool(_) => value.clone(),
    }
}

fn check_object(
    schema: &Value,
    object: &Map<String, Value>,
    pointer: &str,
    errors: &mut Vec<SchemaViolation>,
) -> Value {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    let mut out = Map::new();
    for (key, value) in object {
        let here = format!("{pointer}/{}", escape_pointer(key));
        match properties.get(key) {
            // An explicit null on an optional property means "not given".
            Some(_) if value.is_null() && !required.contains(&key.as_str()) => {}
            Some(property) => {
                out.insert(key.clone(), check(property, value, &here, errors));
            }
            None if closed => push(errors, &here, "is not an argument of this tool"),
            None => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    for (key, property) in properties {
        if out.contains_key(key) {
            continue;
        }
        if let Some(default) = property.get("default") {
            out.insert(key.clone(), default.clone());
        } else if required.contains(&key.as_str()) {
            push(
                errors,
                &format!("{pointer}/{}", escape_pointer(key)),
                "is required",
            );
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["path"],
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "line": {"type": "integer", "minimum": 1},
                "keys": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "flag": {"type": "boolean", "default": true}
            }
        })
    }

    #[test]
    fn fills_defaults_and_drops_optional_nulls() {
        let filled = validate_and_fill(&schema(), &json!({"path": "x", "line": null})).unwrap();
        assert_eq!(filled, json!({"path": "x", "mode": "a", "flag": true}));
        let stated =
            validate_and_fill(&schema(), &json!({"path": "x", "mode": "a", "flag": true})).unwrap();
        assert_eq!(filled, stated);
    }

    #[test]
    fn reports_every_violation_with_its_pointer() {
        let errors = validate_and_fill(
            &schema(),
            &json!({"mode": "c", "line": 0, "keys": [1], "extra/x": 1, "flag": "yes"}),
        )
        .unwrap_err();
        let pointers: Vec<&str> = errors.iter().map(|e| e.pointer.as_str()).collect();
        assert!(pointers.contains(&"/mode"));
        assert!(pointers.contains(&"/line"));
        assert!(pointers.contains(&"/keys/0"));
        assert!(pointers.contains(&"/extra~1x"));
        assert!(pointers.contains(&"/flag"));
        assert!(pointers.contains(&"/path"));
        assert_eq!(errors.len(), 6);
    }

    #[test]
    fn non_object_arguments_are_refused() {
        let errors = validate_and_fill(&schema(), &json!([1])).unwrap_err();
        assert_eq!(errors[0].pointer, "/");
        assert!(validate_and_fill(&schema(), &json!({"path": "x", "line": 1.5})).is_err());
        assert!(validate_and_fill(&schema(), &json!({"path": "x", "line": 3})).is_ok());
    }
}
