//! An Obsidian base (`.base`): a YAML mapping whose known keys are `filters`, `formulas`,
//! `properties`, `summaries` and `views` (spec/formats.md `formats.bases.*`). It is read as
//! JSON, written new by the YAML serializer, and patched (RFC 7396) by editing only the
//! lines of the top-level keys the patch changes, with the lossless frontmatter editor: a
//! base is a frontmatter block without its `---` lines.

use serde_json::{Map, Value};
use tc_vault::Frontmatter;
use tc_vault::frontmatter_edit;

const BOM: char = '\u{feff}';

/// A base's text as a JSON object (an empty file is an empty base).
pub fn parse(text: &str) -> Result<Map<String, Value>, String> {
    let text = text.strip_prefix(BOM).unwrap_or(text);
    let yaml = Frontmatter::parse_yaml(text).map_err(|e| e.reason)?;
    match yaml.to_json() {
        Value::Object(map) => Ok(map),
        _ => Err("it is not a mapping of keys".into()),
    }
}

/// A new base's text: `definition` as the YAML serializer writes it (block style, keys in
/// order).
pub fn write(definition: &Map<String, Value>) -> Result<String, String> {
    let mut yaml = Frontmatter::new();
    yaml.merge(definition).map_err(|e| e.reason)?;
    yaml.to_yaml().map_err(|e| e.reason)
}

/// A filter: an expression string, or an object of `and`, `or` or `not` holding a list of
/// filters.
fn check_filter(filter: &Value, at: &str) -> Result<(), String> {
    match filter {
        Value::String(_) => Ok(()),
        Value::Object(map) if !map.is_empty() => {
            for (key, inner) in map {
                if !matches!(key.as_str(), "and" | "or" | "not") {
                    return Err(format!(
                        "{at}: a filter object has `and`, `or` or `not`, not `{key}`"
                    ));
                }
                let Value::Array(items) = inner else {
                    return Err(format!("{at}.{key} must be a list of filters"));
                };
                for item in items {
                    check_filter(item, &format!("{at}.{key}"))?;
                }
            }
            Ok(())
        }
        _ => Err(format!(
            "{at} must be an expression or an object of and/or/not"
        )),
    }
}

// r[impl formats.bases.check]
/// Checks the keys Obsidian knows (other keys are kept as they are): `filters` a filter,
/// `formulas` and `summaries` objects of expressions, `properties` an object of objects,
/// `views` a list of objects with a string `type`.
pub fn check(definition: &Map<String, Value>) -> Result<(), String> {
    if let Some(filters) = definition.get("filters") {
        check_filter(filters, "filters")?;
    }
    for key in ["formulas", "summaries"] {
        match definition.get(key) {
            None => {}
            Some(Value::Object(map)) if map.values().all(Value::is_string) => {}
            Some(_) => return Err(format!("`{key}` must map names to expressions")),
        }
    }
    match definition.get("properties") {
        None => {}
        Some(Value::Object(map)) if map.values().all(Value::is_object) => {}
        Some(_) => return Err("`properties` must map properties to objects".into()),
    }
    match definition.get("views") {
        None => {}
        Some(Value::Array(views)) => {
            for (i, view) in views.iter().enumerate() {
                if let Some(filters) = view.get("filters") {
                    check_filter(filters, &format!("views.{i}.filters"))?;
                }
                if !view.get("type").is_some_and(Value::is_string) {
                    return Err(format!("views.{i} must be an object with a string `type`"));
                }
            }
        }
        Some(_) => return Err("`views` must be a list of views".into()),
    }
    Ok(())
}

/// `target` with the JSON merge patch `patch` applied (RFC 7396).
pub fn merge_patch(target: Option<&Value>, patch: &Value) -> Value {
    let Value::Object(patch) = patch else {
        return patch.clone();
    };
    let mut out = match target {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    for (key, value) in patch {
        if value.is_null() {
            out.remove(key);
        } else {
            let merged = merge_patch(out.get(key), value);
            out.insert(key.clone(), merged);
        }
    }
    Value::Object(out)
}

/// A patched base: its new text and JSON, and the top-level keys the patch changes.
#[derive(Debug, Clone)]
pub struct Patched {
    pub text: String,
    pub definition: Map<String, Value>,
    pub changed: Vec<String>,
}

// r[impl formats.bases.lossless]
/// `text` with `patch` applied, every line of a top-level key the patch leaves as it was
/// kept byte for byte; refused when the edit cannot be made in place or would not read back
/// as the patched base.
pub fn patch(text: &str, patch: &Map<String, Value>) -> Result<Patched, String> {
    let (bom, body) = match text.strip_prefix(BOM) {
        Some(rest) => (BOM.to_string(), rest),
        None => (String::new(), text),
    };
    let old = parse(body)?;
    let mut set = Map::new();
    let mut remove = Vec::new();
    for (key, value) in patch {
        if value.is_null() {
            if old.contains_key(key) {
                remove.push(key.clone());
            }
        } else {
            let new = merge_patch(old.get(key), value);
            if old.get(key) != Some(&new) {
                set.insert(key.clone(), new);
            }
        }
    }
    let mut expected = old.clone();
    for key in &remove {
        expected.remove(key);
    }
    for (key, value) in &set {
        expected.insert(key.clone(), value.clone());
    }
    let mut changed: Vec<String> = set.keys().cloned().chain(remove.iter().cloned()).collect();
    changed.sort();
    if changed.is_empty() {
        return Ok(Patched {
            text: text.to_owned(),
            definition: old,
            changed,
        });
    }
    // The base as a note's frontmatter block, so the lossless editor works on it.
    let nl = if body.contains("\r\n") { "\r\n" } else { "\n" };
    let ends = body.is_empty() || body.ends_with('\n');
    let mut wrapped = format!("---{nl}{body}{}---{nl}", if ends { "" } else { nl });
    let refused = |e: tc_vault::FrontmatterError| e.reason;
    if !set.is_empty() {
        wrapped = frontmatter_edit::merge(&wrapped, &set).map_err(refused)?;
    }
    if !remove.is_empty() {
        wrapped = frontmatter_edit::remove(&wrapped, &remove).map_err(refused)?;
    }
    let open = format!("---{nl}");
    let mut new_body = match wrapped.strip_prefix(&open) {
        Some(rest) => rest.strip_suffix(&open).unwrap_or(rest).to_owned(),
        // A block left with no key is dropped whole: the base is empty.
        None => wrapped,
    };
    if !ends && new_body.ends_with(nl) {
        new_body.truncate(new_body.len() - nl.len());
    }
    // The edit is checked on the file's own text: a line of `---` in it, for one, would
    // have been read as the block's end.
    if parse(&new_body).ok().as_ref() != Some(&expected) {
        return Err("the base cannot be edited in place (the edited text would not read as the patched base); nothing was changed".into());
    }
    Ok(Patched {
        text: format!("{bom}{new_body}"),
        definition: expected,
        changed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    /// A base as a person keeps it: comments, quoting styles, a key Obsidian does not know.
    const BASE: &str = "# reading list\nfilters:\n  and:\n    - file.hasTag(\"book\")\n    - 'status != \"done\"'   # open ones\nformulas:\n  ppu: \"(price / pages).toFixed(2)\"\nx-plugin: {keep: true}\nviews:\n  - type: table\n    name: \"Books\"\n    order:\n      - file.name\n";

    #[test]
    fn a_base_reads_as_json_with_unknown_keys() {
        let base = parse(BASE).unwrap();
        assert_eq!(base["x-plugin"], json!({"keep": true}));
        assert_eq!(base["views"][0]["name"], "Books");
        assert!(check(&base).is_ok());
    }

    // r[verify formats.bases.lossless]
    #[test]
    fn a_patch_rewrites_only_the_keys_it_changes() {
        let out = patch(BASE, &obj(json!({"formulas": {"half": "price / 2"}}))).unwrap();
        assert_eq!(out.changed, vec!["formulas"]);
        assert!(out.text.starts_with("# reading list\nfilters:\n  and:\n    - file.hasTag(\"book\")\n    - 'status != \"done\"'   # open ones\n"), "{}", out.text);
        assert!(
            out.text
                .contains("x-plugin: {keep: true}\nviews:\n  - type: table\n    name: \"Books\"\n"),
            "{}",
            out.text
        );
        assert_eq!(
            out.definition["formulas"],
            json!({"ppu": "(price / pages).toFixed(2)", "half": "price / 2"})
        );
        // Removing a key drops its lines only; a patch that changes nothing changes no byte.
        let out = patch(BASE, &obj(json!({"x-plugin": null}))).unwrap();
        assert_eq!(out.text, BASE.replace("x-plugin: {keep: true}\n", ""));
        assert_eq!(
            patch(
                BASE,
                &obj(json!({"formulas": {"ppu": "(price / pages).toFixed(2)"}}))
            )
            .unwrap()
            .text,
            BASE
        );
        // A nested null removes the nested key.
        let out = patch(BASE, &obj(json!({"x-plugin": {"keep": null, "v": 2}}))).unwrap();
        assert_eq!(out.definition["x-plugin"], json!({"v": 2}));
    }

    #[test]
    fn a_base_that_cannot_be_edited_in_place_is_refused() {
        // A document marker reads as a base, but the editor would take it for a block's end.
        let marked = "---\nfilters: a\n";
        assert!(parse(marked).is_ok());
        assert!(patch(marked, &obj(json!({"views": []}))).is_err());
        let tabbed = "filters: a\n\tviews: []\n";
        assert!(parse(tabbed).is_err());
    }

    #[test]
    fn merge_patch_follows_rfc_7396() {
        // RFC 7396 appendix A, a few rows.
        let rows = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
            (json!(["a", "b"]), json!({"a": "b"}), json!({"a": "b"})),
        ];
        for (target, p, want) in rows {
            assert_eq!(merge_patch(Some(&target), &p), want, "{target} + {p}");
        }
    }

    #[test]
    fn the_known_keys_are_checked() {
        for bad in [
            json!({"filters": 3}),
            json!({"filters": {"nand": ["a"]}}),
            json!({"views": [{"name": "no type"}]}),
            json!({"formulas": {"a": 1}}),
            json!({"properties": {"status": "x"}}),
        ] {
            assert!(check(&obj(bad.clone())).is_err(), "{bad}");
        }
        assert!(check(&obj(json!({"filters": {"or": ["a", {"not": ["b"]}]}, "views": [{"type": "cards"}], "mine": 1}))).is_ok());
    }
}
