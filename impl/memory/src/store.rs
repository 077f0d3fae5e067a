//! The entity graph in cache.db (spec/memory.md `memory.store.*`, `memory.search.*`).
//!
//! `memory_entities` holds one row per entity, unique per (vault, type, name), with its
//! observations (a JSON array, in the order first recorded), whether it is materialized,
//! its note's path (unique per vault) and the hash of the store's section of the note as
//! last written ([`crate::render::owned_hash`]), which tells a person's edit inside that
//! section from one outside it. `memory_relations` holds (source, target, relation),
//! unique per triple, removed with either end by a foreign-key cascade. `memory_fts`
//! (FTS5, kept by triggers in the same transaction as the row) indexes name, type and
//! observation text for `search_entities`.
//!
//! Every function takes a `&Connection` so the tools run it inside their own transaction.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

/// The migrations of the memory tables (append only).
pub const MIGRATIONS: &[&str] = &[V1, V2, V3];

/// A deleted entity's words leave the full-text index at once (FTS5's secure-delete
/// option) instead of lingering in older segments: a permanent delete leaves no
/// observation in cache.db (spec `memory.delete.permanent-gone`).
const V2: &str = "INSERT INTO memory_fts (memory_fts, rank) VALUES ('secure-delete', 1);";

/// The ids of committed changes whose journal may still be on disk (spec
/// `memory.sync.recovered`): a journal whose id is here belongs to a change that happened.
const V3: &str = "CREATE TABLE memory_commits (id TEXT PRIMARY KEY NOT NULL) STRICT;";

const V1: &str = "
CREATE TABLE memory_entities (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    vault         TEXT NOT NULL,
    type          TEXT NOT NULL,
    name          TEXT NOT NULL,
    observations  TEXT NOT NULL,
    status        TEXT NOT NULL,
    materialized  INTEGER NOT NULL,
    note_path     TEXT,
    owned_hash    TEXT,
    created_ms    INTEGER NOT NULL,
    updated_ms    INTEGER NOT NULL,
    UNIQUE (vault, type, name),
    UNIQUE (vault, note_path)
) STRICT;
CREATE TABLE memory_relations (
    source      INTEGER NOT NULL REFERENCES memory_entities (id) ON DELETE CASCADE,
    target      INTEGER NOT NULL REFERENCES memory_entities (id) ON DELETE CASCADE,
    relation    TEXT NOT NULL,
    created_ms  INTEGER NOT NULL,
    PRIMARY KEY (source, target, relation)
) STRICT, WITHOUT ROWID;
CREATE INDEX memory_relations_by_target ON memory_relations (target);
CREATE VIRTUAL TABLE memory_fts USING fts5 (
    name, type, observations, tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER memory_entities_fts_insert AFTER INSERT ON memory_entities BEGIN
    INSERT INTO memory_fts (rowid, name, type, observations) VALUES (
        NEW.id, NEW.name, NEW.type,
        (SELECT group_concat(value, char(10)) FROM json_each(NEW.observations)));
END;
CREATE TRIGGER memory_entities_fts_update AFTER UPDATE OF name, type, observations
ON memory_entities BEGIN
    DELETE FROM memory_fts WHERE rowid = OLD.id;
    INSERT INTO memory_fts (rowid, name, type, observations) VALUES (
        NEW.id, NEW.name, NEW.type,
        (SELECT group_concat(value, char(10)) FROM json_each(NEW.observations)));
END;
CREATE TRIGGER memory_entities_fts_delete AFTER DELETE ON memory_entities BEGIN
    DELETE FROM memory_fts WHERE rowid = OLD.id;
END;
";

/// Whether an entity is current or kept for the record.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    #[default]
    Active,
    Archived,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Archived => "archived",
        }
    }

    fn parse(text: &str) -> Status {
        match text {
            "archived" => Status::Archived,
            _ => Status::Active,
        }
    }
}

/// An entity row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entity {
    pub id: i64,
    pub vault: String,
    pub kind: String,
    pub name: String,
    pub observations: Vec<String>,
    pub status: Status,
    pub materialized: bool,
    pub note_path: Option<String>,
    pub owned_hash: Option<String>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

/// The public form of an entity id: `e` and the row id.
pub fn entity_id(id: i64) -> String {
    format!("e{id}")
}

/// The row id of a public entity id, if it is one.
pub fn parse_entity_id(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('e')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|n| *n > 0)
}

const ENTITY_COLUMNS: &str = "id, vault, type, name, observations, status, materialized, \
     note_path, owned_hash, created_ms, updated_ms";

fn entity_of(row: &Row<'_>) -> rusqlite::Result<Entity> {
    let observations: String = row.get(4)?;
    let status: String = row.get(5)?;
    Ok(Entity {
        id: row.get(0)?,
        vault: row.get(1)?,
        kind: row.get(2)?,
        name: row.get(3)?,
        observations: serde_json::from_str(&observations).unwrap_or_default(),
        status: Status::parse(&status),
        materialized: row.get::<_, i64>(6)? != 0,
        note_path: row.get(7)?,
        owned_hash: row.get(8)?,
        created_ms: row.get(9)?,
        updated_ms: row.get(10)?,
    })
}

/// The entity `id` of `vault`.
pub fn get(conn: &Connection, vault: &str, id: i64) -> rusqlite::Result<Option<Entity>> {
    conn.query_row(
        &format!("SELECT {ENTITY_COLUMNS} FROM memory_entities WHERE id = ?1 AND vault = ?2"),
        params![id, vault],
        entity_of,
    )
    .optional()
}

/// The entity of `vault` with this type and name.
pub fn find(
    conn: &Connection,
    vault: &str,
    kind: &str,
    name: &str,
) -> rusqlite::Result<Option<Entity>> {
    conn.query_row(
        &format!(
            "SELECT {ENTITY_COLUMNS} FROM memory_entities \
             WHERE vault = ?1 AND type = ?2 AND name = ?3"
        ),
        params![vault, kind, name],
        entity_of,
    )
    .optional()
}

/// Whether another entity of `vault` than `except` has its note at `path`.
pub fn path_taken(
    conn: &Connection,
    vault: &str,
    path: &str,
    except: Option<i64>,
) -> rusqlite::Result<bool> {
    let other: Option<i64> = conn
        .query_row(
            "SELECT id FROM memory_entities WHERE vault = ?1 AND note_path = ?2",
            params![vault, path],
            |row| row.get(0),
        )
        .optional()?;
    Ok(other.is_some_and(|id| Some(id) != except))
}

/// Inserts `entity` (its id is ignored) and returns it with the id it was given.
pub fn insert(conn: &Connection, entity: &Entity) -> rusqlite::Result<Entity> {
    conn.execute(
        "INSERT INTO memory_entities (vault, type, name, observations, status, materialized, \
         note_path, owned_hash, created_ms, updated_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            entity.vault,
            entity.kind,
            entity.name,
            observations_json(&entity.observations),
            entity.status.as_str(),
            i64::from(entity.materialized),
            entity.note_path,
            entity.owned_hash,
            entity.created_ms,
            entity.updated_ms,
        ],
    )?;
    Ok(Entity {
        id: conn.last_insert_rowid(),
        ..entity.clone()
    })
}

/// Writes every column of `entity` but its identity (id, vault, type, name).
pub fn update(conn: &Connection, entity: &Entity) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE memory_entities SET observations = ?2, status = ?3, materialized = ?4, \
         note_path = ?5, owned_hash = ?6, updated_ms = ?7 WHERE id = ?1",
        params![
            entity.id,
            observations_json(&entity.observations),
            entity.status.as_str(),
            i64::from(entity.materialized),
            entity.note_path,
            entity.owned_hash,
            entity.updated_ms,
        ],
    )?;
    Ok(())
}

/// Records the note an entity's section was last written to.
pub fn set_note(
    conn: &Connection,
    id: i64,
    note_path: &str,
    owned_hash: &str,
) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE memory_entities SET note_path = ?2, owned_hash = ?3 WHERE id = ?1",
        params![id, note_path, owned_hash],
    )?;
    Ok(())
}

/// Gives an entity the path its note goes to (before the note is rendered).
pub fn set_note_path(conn: &Connection, id: i64, note_path: &str) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE memory_entities SET note_path = ?2 WHERE id = ?1",
        params![id, note_path],
    )?;
    Ok(())
}

/// Removes an entity; its relations go with it (foreign-key cascade).
pub fn delete(conn: &Connection, id: i64) -> rusqlite::Result<bool> {
    Ok(conn.execute("DELETE FROM memory_entities WHERE id = ?1", [id])? > 0)
}

fn observations_json(observations: &[String]) -> String {
    serde_json::to_string(observations).unwrap_or_else(|_| "[]".to_owned())
}

/// A relation as the tools show it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Relation {
    pub source: i64,
    pub target: i64,
    pub relation: String,
}

/// One end of a relation, as a note renders it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Neighbour {
    pub id: i64,
    pub kind: String,
    pub name: String,
    pub note_path: Option<String>,
}

/// A relation seen from one entity: the relation, and the entity at its other end.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Link {
    pub relation: String,
    pub other: Neighbour,
}

/// Adds a relation; false when it was there already.
pub fn relate(conn: &Connection, relation: &Relation, now_ms: i64) -> rusqlite::Result<bool> {
    Ok(conn.execute(
        "INSERT OR IGNORE INTO memory_relations (source, target, relation, created_ms) \
         VALUES (?1, ?2, ?3, ?4)",
        params![relation.source, relation.target, relation.relation, now_ms],
    )? > 0)
}

/// Removes a relation; false when it was not there.
pub fn unrelate(conn: &Connection, relation: &Relation) -> rusqlite::Result<bool> {
    Ok(conn.execute(
        "DELETE FROM memory_relations WHERE source = ?1 AND target = ?2 AND relation = ?3",
        params![relation.source, relation.target, relation.relation],
    )? > 0)
}

/// Every relation `id` takes part in, sorted (source, target, relation).
pub fn relations_of(conn: &Connection, id: i64) -> rusqlite::Result<Vec<Relation>> {
    let mut statement = conn.prepare_cached(
        "SELECT source, target, relation FROM memory_relations \
         WHERE source = ?1 OR target = ?1 ORDER BY source, target, relation",
    )?;
    let rows = statement.query_map([id], |row| {
        Ok(Relation {
            source: row.get(0)?,
            target: row.get(1)?,
            relation: row.get(2)?,
        })
    })?;
    rows.collect()
}

/// The relations from `id` (outgoing) and to it (incoming), each with the other end,
/// sorted by relation, then the other end's type, name and id.
pub fn links_of(conn: &Connection, id: i64) -> rusqlite::Result<(Vec<Link>, Vec<Link>)> {
    let query = |sql: &str| -> rusqlite::Result<Vec<Link>> {
        let mut statement = conn.prepare_cached(sql)?;
        let rows = statement.query_map([id], |row| {
            Ok(Link {
                relation: row.get(0)?,
                other: Neighbour {
                    id: row.get(1)?,
                    kind: row.get(2)?,
                    name: row.get(3)?,
                    note_path: row.get(4)?,
                },
            })
        })?;
        rows.collect()
    };
    let outgoing = query(
        "SELECT r.relation, e.id, e.type, e.name, e.note_path FROM memory_relations r \
         JOIN memory_entities e ON e.id = r.target WHERE r.source = ?1 \
         ORDER BY r.relation, e.type, e.name, e.id",
    )?;
    let incoming = query(
        "SELECT r.relation, e.id, e.type, e.name, e.note_path FROM memory_relations r \
         JOIN memory_entities e ON e.id = r.source WHERE r.target = ?1 \
         ORDER BY r.relation, e.type, e.name, e.id",
    )?;
    Ok((outgoing, incoming))
}

/// How many relations `id` takes part in.
pub fn relation_count(conn: &Connection, id: i64) -> rusqlite::Result<u64> {
    conn.query_row(
        "SELECT count(*) FROM memory_relations WHERE source = ?1 OR target = ?1",
        [id],
        |row| row.get::<_, i64>(0),
    )
    .map(|n| n.max(0) as u64)
}

/// One hit of a search, in rank order.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub entity: Entity,
    /// A short excerpt of the matching observation text (empty when none matched).
    pub snippet: String,
}

/// The FTS5 query for a caller's text: each word a quoted prefix term (so no caller text is
/// read as FTS5 syntax), all of them required. `None` when the text has no word.
pub fn fts_query(text: &str) -> Option<String> {
    let terms: Vec<String> = text
        .split_whitespace()
        .map(|word| format!("\"{}\"*", word.replace('"', "\"\"")))
        .collect();
    if terms.is_empty() {
        None
    } else {
        Some(terms.join(" "))
    }
}

/// Up to `limit` entities of `vault` (of type `kind` when given) matching `query` in name,
/// type or observation text, best first, skipping the first `offset`. With no word to
/// match, every entity in (type, name) order.
pub fn search(
    conn: &Connection,
    vault: &str,
    query: &str,
    kind: Option<&str>,
    offset: u64,
    limit: u64,
) -> rusqlite::Result<Vec<Hit>> {
    let offset = i64::try_from(offset).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let columns = ENTITY_COLUMNS
        .split(", ")
        .map(|c| format!("e.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ");
    match fts_query(query) {
        Some(fts) => {
            // Rank first, then read the page's rows and excerpts: the sort carries only
            // (id, rank), not every matching row's observations and excerpt.
            let mut statement = conn.prepare_cached(&format!(
                "WITH ranked AS ( \
                     SELECT f.rowid AS id, bm25(memory_fts, 10.0, 2.0, 1.0) AS rank \
                     FROM memory_fts f JOIN memory_entities e ON e.id = f.rowid \
                     WHERE memory_fts MATCH ?1 AND e.vault = ?2 AND (?3 IS NULL OR e.type = ?3) \
                     ORDER BY rank, id LIMIT ?4 OFFSET ?5) \
                 SELECT {columns} FROM ranked r JOIN memory_entities e ON e.id = r.id \
                 ORDER BY r.rank, r.id"
            ))?;
            let entities = statement
                .query_map(params![fts, vault, kind, limit, offset], entity_of)?
                .collect::<rusqlite::Result<Vec<Entity>>>()?;
            let mut excerpt = conn.prepare_cached(
                "SELECT snippet(memory_fts, 2, '', '', '…', 16) FROM memory_fts \
                 WHERE memory_fts MATCH ?1 AND rowid = ?2",
            )?;
            entities
                .into_iter()
                .map(|entity| {
                    let snippet: Option<String> = excerpt
                        .query_row(params![fts, entity.id], |row| row.get(0))
                        .optional()?
                        .flatten();
                    Ok(Hit {
                        entity,
                        snippet: snippet.unwrap_or_default(),
                    })
                })
                .collect()
        }
        None => {
            let mut statement = conn.prepare_cached(&format!(
                "SELECT {columns} FROM memory_entities e \
                 WHERE e.vault = ?1 AND (?2 IS NULL OR e.type = ?2) \
                 ORDER BY e.type, e.name, e.id LIMIT ?3 OFFSET ?4"
            ))?;
            let rows = statement.query_map(params![vault, kind, limit, offset], |row| {
                Ok(Hit {
                    entity: entity_of(row)?,
                    snippet: String::new(),
                })
            })?;
            rows.collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tc_tools::SubsystemDb;

    fn db() -> SubsystemDb {
        SubsystemDb::open_in_memory(crate::COMPONENT, MIGRATIONS).unwrap()
    }

    fn entity(vault: &str, kind: &str, name: &str, observations: &[&str]) -> Entity {
        Entity {
            id: 0,
            vault: vault.into(),
            kind: kind.into(),
            name: name.into(),
            observations: observations.iter().map(|s| (*s).to_owned()).collect(),
            status: Status::Active,
            materialized: false,
            note_path: None,
            owned_hash: None,
            created_ms: 1,
            updated_ms: 1,
        }
    }

    // r[verify memory.store.unique]
    #[test]
    fn an_entity_is_unique_per_vault_type_and_name() {
        let db = db();
        let conn = db.lock();
        insert(&conn, &entity("main", "person", "Ada", &[])).unwrap();
        assert!(insert(&conn, &entity("main", "person", "Ada", &[])).is_err());
        insert(&conn, &entity("main", "city", "Ada", &[])).unwrap();
        insert(&conn, &entity("other", "person", "Ada", &[])).unwrap();
        assert!(find(&conn, "main", "person", "Ada").unwrap().is_some());
        assert!(find(&conn, "main", "person", "ada").unwrap().is_none());
    }

    // r[verify memory.store.relations-cascade]
    #[test]
    fn relations_are_unique_per_triple_and_go_with_their_entities() {
        let db = db();
        let conn = db.lock();
        let a = insert(&conn, &entity("main", "person", "A", &[])).unwrap();
        let b = insert(&conn, &entity("main", "person", "B", &[])).unwrap();
        let knows = Relation {
            source: a.id,
            target: b.id,
            relation: "knows".into(),
        };
        assert!(relate(&conn, &knows, 1).unwrap());
        assert!(!relate(&conn, &knows, 2).unwrap());
        let likes = Relation {
            relation: "likes".into(),
            ..knows.clone()
        };
        assert!(relate(&conn, &likes, 1).unwrap());
        assert_eq!(relation_count(&conn, b.id).unwrap(), 2);
        let (out, inc) = links_of(&conn, a.id).unwrap();
        assert_eq!(out.len(), 2);
        assert!(inc.is_empty());
        assert!(delete(&conn, b.id).unwrap());
        assert_eq!(relation_count(&conn, a.id).unwrap(), 0);
    }

    // r[verify memory.search.fields]
    #[test]
    fn search_matches_name_type_and_observations_and_reads_no_syntax() {
        let db = db();
        let conn = db.lock();
        insert(
            &conn,
            &entity(
                "main",
                "person",
                "Ada Lovelace",
                &["wrote the first program"],
            ),
        )
        .unwrap();
        insert(
            &conn,
            &entity(
                "main",
                "machine",
                "Analytical Engine",
                &["designed by Babbage"],
            ),
        )
        .unwrap();
        insert(&conn, &entity("other", "person", "Ada Other", &[])).unwrap();
        let names = |q: &str, kind: Option<&str>| -> Vec<String> {
            search(&conn, "main", q, kind, 0, 10)
                .unwrap()
                .into_iter()
                .map(|h| h.entity.name)
                .collect()
        };
        assert_eq!(names("ada", None), ["Ada Lovelace"]);
        assert_eq!(names("machine", None), ["Analytical Engine"]);
        assert_eq!(names("progr", None), ["Ada Lovelace"]);
        assert_eq!(names("babbage", Some("person")), Vec::<String>::new());
        assert_eq!(names("", Some("person")), ["Ada Lovelace"]);
        assert_eq!(names("\" OR * NEAR(", None), Vec::<String>::new());
        let hit = &search(&conn, "main", "program", None, 0, 10).unwrap()[0];
        assert!(hit.snippet.contains("program"), "{}", hit.snippet);
    }

    #[test]
    fn entity_ids_round_trip() {
        assert_eq!(parse_entity_id(&entity_id(42)), Some(42));
        for bad in ["", "e", "42", "e-1", "e0", "e1x", "E1"] {
            assert_eq!(parse_entity_id(bad), None, "{bad}");
        }
    }
}
