//! `search_notes`' filters beyond the folder, the sort, and the hits of a call without a
//! query (spec/index.md `search.filters.*`, `search.sort`).
//!
//! Every filter but the folder becomes one set of notes (the tags, the property, the
//! modification range), intersected before the ranking runs, so each mode filters the same
//! way and a filter costs one index range whatever the query.

use std::collections::{HashMap, HashSet};

use rusqlite::params;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tc_tools::ToolError;
use tc_vault::path::FolderPath;

use super::text::{Ranked, in_scope, tagged};
use crate::index::VaultIndex;
use crate::meta::{properties, recent};

// `property`: notes having `key`, with a value matching `value` when given (no doc comment:
// it would be advertised; the field says it once).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PropertyFilter {
    #[schemars(length(min = 1, max = 1024))]
    pub key: String,
    // Any JSON here, so a `null` (absent) passes as it does for a top-level argument; a list
    // or an object is refused by `value_norm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_schema")]
    pub value: Option<Value>,
}

// The order of the hits: `modified` is newest first (no doc comments: they would be
// advertised).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    #[default]
    Relevance,
    Modified,
}

impl SortOrder {
    pub(crate) fn is_relevance(&self) -> bool {
        *self == SortOrder::Relevance
    }
}

/// The schema of a property `value` argument: a string, a number or a boolean (a list or an
/// object matches nothing; and a schema that is only `true` is refused by some clients).
pub fn scalar_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": ["string", "number", "boolean"]})
}

/// Any JSON value, as an empty schema.
pub fn any_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({})
}

/// What a `value` argument matches ([`properties::norm_of`]), refused when it is a list or an
/// object (null is as absent).
pub fn value_norm(value: Option<&Value>, pointer: &str) -> Result<Option<String>, ToolError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => properties::norm_of(value).map(Some).ok_or_else(|| {
            ToolError::validation(pointer, "must be a string, a number or a boolean")
        }),
    }
}

/// A time argument in nanoseconds since 1970, refused unless RFC 3339 or a date.
pub fn time_arg(text: Option<&str>, pointer: &str) -> Result<Option<i64>, ToolError> {
    text.map(|t| {
        recent::parse_time(t).ok_or_else(|| {
            ToolError::validation(
                pointer,
                "must be an RFC 3339 date-time (2026-01-05T10:00:00Z) or a date (2026-01-05)",
            )
        })
    })
    .transpose()
}

/// The filters that become a set of notes.
pub(crate) struct Narrowing<'a> {
    pub tags: &'a [String],
    pub property: Option<(&'a str, Option<String>)>,
    pub after_ns: Option<i64>,
    pub before_ns: Option<i64>,
}

impl Narrowing<'_> {
    /// Whether any of them is given.
    pub fn any(&self) -> bool {
        !self.tags.is_empty()
            || self.property.is_some()
            || self.after_ns.is_some()
            || self.before_ns.is_some()
    }

    // r[impl search.filters.property]
    // r[impl search.filters.modified]
    /// The notes every given filter keeps (`None`: no filter given, every note).
    pub fn notes(&self, index: &VaultIndex) -> rusqlite::Result<Option<HashSet<String>>> {
        let mut sets: Vec<HashSet<String>> = Vec::new();
        if let Some(set) = tagged(index, self.tags)? {
            sets.push(set);
        }
        if let Some((key, norm)) = &self.property {
            sets.push(properties::paths_with(index, key, norm.as_deref())?);
        }
        if self.after_ns.is_some() || self.before_ns.is_some() {
            sets.push(recent::paths_modified(
                index,
                self.after_ns.unwrap_or(i64::MIN),
                self.before_ns.unwrap_or(i64::MAX),
            )?);
        }
        sets.sort_by_key(HashSet::len);
        let mut sets = sets.into_iter();
        Ok(sets.next().map(|first| {
            sets.fold(first, |kept, other| {
                kept.into_iter().filter(|p| other.contains(p)).collect()
            })
        }))
    }
}

// r[impl search.filters.query-optional]
/// The notes under `folder` in `only` (every note when `None`) that `keep` lets through, in
/// path order or newest first, past the first `skip`, at most `take` of them: the hits of a
/// call without a query (each to be shown by its first chunk). `keep` (the ACL, which stats
/// a path's links) is asked only of the notes up to the page's end.
pub(crate) fn listed(
    index: &VaultIndex,
    folder: &FolderPath,
    only: Option<&HashSet<String>>,
    keep: impl Fn(&str) -> bool,
    by_time: bool,
    skip: usize,
    take: usize,
) -> rusqlite::Result<Vec<Ranked>> {
    let mut out = Vec::new();
    let mut skipped = 0usize;
    // Whether the page is full once `path` is considered.
    let mut consider = |path: String| -> bool {
        if !in_scope(&path, folder, only) || !keep(&path) {
            return false;
        }
        if skipped < skip {
            skipped += 1;
            return false;
        }
        out.push(Ranked {
            path,
            chunk: NO_CHUNK,
            score: 0.0,
            text_match: false,
        });
        out.len() >= take
    };
    if let (Some(set), false) = (only, by_time) {
        let mut paths: Vec<&String> = set.iter().collect();
        paths.sort_unstable();
        for path in paths {
            if consider(path.clone()) {
                break;
            }
        }
        return Ok(out);
    }
    let (low, high) = properties::folder_range(folder);
    let conn = index.conn();
    let mut query = conn.prepare_cached(if by_time {
        "SELECT path FROM index_files INDEXED BY index_files_by_mtime
         WHERE vault = ?1 AND is_note = 1 AND path >= ?2 AND path < ?3
         ORDER BY mtime_ns DESC, path"
    } else {
        "SELECT path FROM index_files
         WHERE vault = ?1 AND is_note = 1 AND path >= ?2 AND path < ?3 ORDER BY path"
    })?;
    let mut rows = query.query(params![index.vault_id(), low, high])?;
    while let Some(row) = rows.next()? {
        if consider(row.get(0)?) {
            break;
        }
    }
    drop(rows);
    Ok(out)
}

/// The chunk of a hit listed without a query, until its first chunk is looked up.
pub(crate) const NO_CHUNK: i64 = -1;

/// The first chunk of the note at `path` ([`NO_CHUNK`] for a note without text).
pub(crate) fn first_chunk(index: &VaultIndex, path: &str) -> rusqlite::Result<i64> {
    use rusqlite::OptionalExtension;
    Ok(index
        .conn()
        .prepare_cached(
            "SELECT id FROM index_chunks WHERE vault = ?1 AND path = ?2 ORDER BY ord LIMIT 1",
        )?
        .query_row(params![index.vault_id(), path], |r| r.get(0))
        .optional()?
        .unwrap_or(NO_CHUNK))
}

// r[impl search.sort]
/// `hits` newest first by modification time, equal times in path order.
pub(crate) fn by_modified(index: &VaultIndex, hits: Vec<Ranked>) -> rusqlite::Result<Vec<Ranked>> {
    let mut times: HashMap<String, i64> = HashMap::with_capacity(hits.len());
    for hit in &hits {
        let time = recent::mtime_of(index, &hit.path)?.unwrap_or(i64::MIN);
        times.insert(hit.path.clone(), time);
    }
    let mut hits = hits;
    hits.sort_by(|a, b| {
        times[&b.path]
            .cmp(&times[&a.path])
            .then_with(|| a.path.cmp(&b.path))
    });
    Ok(hits)
}
