//! Frontmatter properties in the index (spec/metadata.md `## Properties`): what a note's
//! frontmatter holds, kept as rows when the index reads the note, and the queries the
//! property tools and `search_notes`' `property` filter ask.
//!
//! Each key is a row of `index_properties` (its value as JSON and its type), and so is each
//! key nested in an object, under its dotted path (`project.status`), so reading or finding a
//! nested key is one lookup. The values a key matches are rows of `index_property_values`,
//! lowercased, a list's items each apart: finding the notes where `status` is `active` (or
//! where `tags` holds it) is one range of that table's primary key, in path order, whatever
//! the vault's size. The caller judges the folder ACL on every path returned.

use std::collections::HashSet;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;
use tc_tools::ToolError;
use tc_vault::path::FolderPath;

use crate::VaultIndex;

/// How deep nested objects are followed.
const MAX_DEPTH: usize = 8;
/// The most keys (nested ones included) kept of one note.
const MAX_KEYS: usize = 512;

/// One key of a note's frontmatter, as the index keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyFact {
    /// The key, nested keys joined to their parents' with `.`.
    pub key: String,
    /// A top-level key (what `list_properties` lists).
    pub top: bool,
    /// [`type_of`] the value.
    pub kind: &'static str,
    /// The value as JSON.
    pub value: String,
    /// What the value matches ([`norm_of`] it, or of each item of a list).
    pub norms: Vec<String>,
}

// r[impl metadata.properties.types]
/// The type of a property value, in Obsidian's names where it has one: `text`, `number`,
/// `checkbox`, `date` (`YYYY-MM-DD`), `datetime` (`YYYY-MM-DDTHH:MM…`), `list`, and `object`
/// or `null` for what Obsidian shows as raw YAML.
pub fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "checkbox",
        Value::Number(_) => "number",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
        Value::String(text) => {
            if is_date(text) {
                "date"
            } else if text.len() > 11
                && is_date(&text[..10])
                && matches!(text.as_bytes()[10], b'T' | b' ')
                && text.as_bytes()[11].is_ascii_digit()
            {
                "datetime"
            } else {
                "text"
            }
        }
    }
}

fn is_date(text: &str) -> bool {
    tc_vault::tasks::Date::parse(text).is_some()
}

// r[impl metadata.properties.match]
/// What a scalar matches: a string lowercased, a number in its shortest form (`5.0` as `5`),
/// a boolean as `true`/`false`; a list, an object or null matches nothing by itself.
pub fn norm_of(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.to_lowercase()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(if let Some(i) = n.as_i64() {
            i.to_string()
        } else if let Some(u) = n.as_u64() {
            u.to_string()
        } else {
            match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => (f as i64).to_string(),
                _ => n.to_string(),
            }
        }),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

// r[impl metadata.properties.index]
/// The rows of a note's frontmatter (its JSON object): every key, nested keys of objects
/// under their dotted path (a key written with a dot comes first, so it wins a clash).
pub fn facts_of(frontmatter: &Value) -> Vec<PropertyFact> {
    let mut out = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    if let Value::Object(map) = frontmatter {
        let mut level: Vec<(String, &Value, bool)> = map
            .iter()
            .map(|(key, value)| (key.clone(), value, true))
            .collect();
        for _ in 0..MAX_DEPTH {
            let mut next = Vec::new();
            for (key, value, top) in level {
                if out.len() >= MAX_KEYS {
                    return out;
                }
                if !seen.insert(key.clone()) {
                    continue;
                }
                let mut norms: Vec<String> = match value {
                    Value::Array(items) => items.iter().filter_map(norm_of).collect(),
                    other => norm_of(other).into_iter().collect(),
                };
                norms.sort();
                norms.dedup();
                out.push(PropertyFact {
                    key: key.clone(),
                    top,
                    kind: type_of(value),
                    value: value.to_string(),
                    norms,
                });
                if let Value::Object(inner) = value {
                    next.extend(inner.iter().map(|(k, v)| (format!("{key}.{k}"), v, false)));
                }
            }
            level = next;
        }
    }
    out
}

/// Writes a note's property rows (its old ones were dropped by [`forget`]).
pub(crate) fn store(
    conn: &Connection,
    vault: &str,
    path: &str,
    facts: &[PropertyFact],
) -> rusqlite::Result<()> {
    let mut own = conn.prepare_cached(
        "INSERT OR IGNORE INTO index_properties (vault, key, path, top, type, value)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut matches = conn.prepare_cached(
        "INSERT OR IGNORE INTO index_property_values (vault, key, norm, path)
         VALUES (?1, ?2, ?3, ?4)",
    )?;
    for fact in facts {
        own.execute(params![
            vault, fact.key, path, fact.top, fact.kind, fact.value
        ])?;
        for norm in &fact.norms {
            matches.execute(params![vault, fact.key, norm, path])?;
        }
    }
    Ok(())
}

/// Drops a note's property rows.
pub(crate) fn forget(conn: &Connection, vault: &str, path: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM index_properties WHERE vault = ?1 AND path = ?2")?
        .execute(params![vault, path])?;
    conn.prepare_cached("DELETE FROM index_property_values WHERE vault = ?1 AND path = ?2")?
        .execute(params![vault, path])?;
    Ok(())
}

fn failed(error: rusqlite::Error) -> ToolError {
    tracing::warn!("reading the properties of the vault index: {error}");
    ToolError::internal("reading the properties of the vault index")
}

/// The range of paths under `folder` in the index's order (`folder/` up to `folder0`, `0`
/// following `/`); the whole vault for the root.
pub fn folder_range(folder: &FolderPath) -> (String, String) {
    if folder.is_root() {
        (String::new(), "\u{10FFFF}".to_owned())
    } else {
        (
            format!("{}/", folder.as_str()),
            format!("{}0", folder.as_str()),
        )
    }
}

/// One property of one note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyRow {
    pub path: String,
    pub key: String,
    pub kind: String,
    /// The value as JSON.
    pub value: String,
}

fn row(row: &rusqlite::Row<'_>) -> rusqlite::Result<PropertyRow> {
    Ok(PropertyRow {
        path: row.get(0)?,
        key: row.get(1)?,
        kind: row.get(2)?,
        value: row.get(3)?,
    })
}

/// Every top-level key of the notes under `folder` with a key after `after`, ordered by key
/// then path (`list_properties` counts them per key).
pub fn top_keys(
    index: &VaultIndex,
    folder: &FolderPath,
    after: Option<&str>,
) -> Result<Vec<(String, String, String)>, ToolError> {
    let (low, high) = folder_range(folder);
    let conn = index.conn();
    let mut query = conn
        .prepare_cached(
            "SELECT key, path, type FROM index_properties
             WHERE vault = ?1 AND top = 1 AND key > ?2 AND path >= ?3 AND path < ?4
             ORDER BY key, path",
        )
        .map_err(failed)?;
    let rows = query
        .query_map(
            params![index.vault_id(), after.unwrap_or(""), low, high],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .map_err(failed)?;
    rows.collect::<Result<_, _>>().map_err(failed)
}

/// The property `key` (a dotted path for a nested key) of the note at `path`, if it has it.
pub fn property_of(
    index: &VaultIndex,
    path: &str,
    key: &str,
) -> Result<Option<PropertyRow>, ToolError> {
    let conn = index.conn();
    let mut query = conn
        .prepare_cached(
            "SELECT path, key, type, value FROM index_properties
             WHERE vault = ?1 AND key = ?2 AND path = ?3",
        )
        .map_err(failed)?;
    query
        .query_row(params![index.vault_id(), key, path], row)
        .optional()
        .map_err(failed)
}

/// At most `take` notes under `folder` with a path after `after` having `key`, and when
/// `norm` is given a value matching it (an equal scalar, or a list holding one), in path
/// order, each with the key's value.
pub fn notes_with(
    index: &VaultIndex,
    key: &str,
    norm: Option<&str>,
    folder: &FolderPath,
    after: Option<&str>,
    take: usize,
) -> Result<Vec<PropertyRow>, ToolError> {
    let (low, high) = folder_range(folder);
    let low = match after {
        Some(after) if after >= low.as_str() => format!("{after}\u{0}"),
        _ => low,
    };
    let conn = index.conn();
    let take = i64::try_from(take).unwrap_or(i64::MAX);
    let vault = index.vault_id();
    let rows = match norm {
        None => {
            let mut query = conn
                .prepare_cached(
                    "SELECT path, key, type, value FROM index_properties
                     WHERE vault = ?1 AND key = ?2 AND path >= ?3 AND path < ?4
                     ORDER BY path LIMIT ?5",
                )
                .map_err(failed)?;
            query
                .query_map(params![vault, key, low, high, take], row)
                .map_err(failed)?
                .collect::<Result<Vec<_>, _>>()
        }
        Some(norm) => {
            let mut query = conn
                .prepare_cached(
                    "SELECT p.path, p.key, p.type, p.value FROM index_property_values v
                     JOIN index_properties p
                       ON p.vault = v.vault AND p.key = v.key AND p.path = v.path
                     WHERE v.vault = ?1 AND v.key = ?2 AND v.norm = ?3
                       AND v.path >= ?4 AND v.path < ?5
                     ORDER BY v.path LIMIT ?6",
                )
                .map_err(failed)?;
            query
                .query_map(params![vault, key, norm, low, high, take], row)
                .map_err(failed)?
                .collect::<Result<Vec<_>, _>>()
        }
    };
    rows.map_err(failed)
}

/// Every note having `key`, and when `norm` is given a value matching it (the
/// `search_notes` filter).
pub(crate) fn paths_with(
    index: &VaultIndex,
    key: &str,
    norm: Option<&str>,
) -> rusqlite::Result<HashSet<String>> {
    let conn = index.conn();
    let vault = index.vault_id();
    match norm {
        None => conn
            .prepare_cached("SELECT path FROM index_properties WHERE vault = ?1 AND key = ?2")?
            .query_map(params![vault, key], |r| r.get(0))?
            .collect(),
        Some(norm) => conn
            .prepare_cached(
                "SELECT path FROM index_property_values WHERE vault = ?1 AND key = ?2 AND norm = ?3",
            )?
            .query_map(params![vault, key, norm], |r| r.get(0))?
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_keys_lists_and_types() {
        let facts = facts_of(&json!({
            "status": "Active",
            "tags": ["A", "b", 3],
            "due": "2026-01-05",
            "at": "2026-01-05T10:00:00Z",
            "done": false,
            "score": 5.0,
            "project": {"name": "X", "meta": {"level": 2}},
            "project.name": "dotted",
            "empty": null
        }));
        let find = |k: &str| facts.iter().find(|f| f.key == k).unwrap();
        assert_eq!(find("status").norms, ["active"]);
        assert_eq!(find("status").kind, "text");
        assert_eq!(find("tags").norms, ["3", "a", "b"]);
        assert_eq!(find("tags").kind, "list");
        assert_eq!(find("due").kind, "date");
        assert_eq!(find("at").kind, "datetime");
        assert_eq!(find("done").norms, ["false"]);
        assert_eq!(find("done").kind, "checkbox");
        assert_eq!(find("score").norms, ["5"]);
        assert_eq!(find("project").kind, "object");
        assert!(find("project").top);
        assert!(!find("project.meta.level").top);
        assert_eq!(find("project.meta.level").norms, ["2"]);
        // The key written with a dot wins the clash with the nested path.
        assert_eq!(find("project.name").value, "\"dotted\"");
        assert!(find("empty").norms.is_empty());
        assert_eq!(facts.iter().filter(|f| f.key == "project.name").count(), 1);
    }
}
