//! The index's tables in cache.db (spec/index.md `index.store`), migrated through
//! [`tc_tools::SubsystemDb`] under the component name [`COMPONENT`].
//!
//! Every table carries the vault id, since one cache.db serves every vault of a server.
//! `index_fts` is an FTS5 table whose rowid is `index_chunks.id`: the chunk's place (vault,
//! note, order, heading path) lives in the ordinary table, which an index on `(vault, path)`
//! makes cheap to replace note by note; the text lives in the FTS5 table alone.

/// The component name of the index's tables in `subsystem_schema`.
pub const COMPONENT: &str = "index";

/// Append only: `MIGRATIONS[i]` takes the tables from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    "CREATE TABLE index_files (
         vault     TEXT NOT NULL,
         path      TEXT NOT NULL,
         size      INTEGER NOT NULL,
         mtime_ns  INTEGER NOT NULL,
         is_note   INTEGER NOT NULL,
         hash      TEXT,
         frontmatter_keys TEXT,
         headings  TEXT,
         PRIMARY KEY (vault, path)
     ) STRICT, WITHOUT ROWID;
     CREATE TABLE index_links (
         vault    TEXT NOT NULL,
         src      TEXT NOT NULL,
         name_key TEXT NOT NULL,
         target   TEXT NOT NULL,
         embed    INTEGER NOT NULL
     ) STRICT;
     CREATE INDEX index_links_by_name ON index_links (vault, name_key);
     CREATE INDEX index_links_by_src ON index_links (vault, src);
     CREATE TABLE index_tags (
         vault TEXT NOT NULL,
         path  TEXT NOT NULL,
         tag   TEXT NOT NULL,
         PRIMARY KEY (vault, path, tag)
     ) STRICT, WITHOUT ROWID;
     CREATE INDEX index_tags_by_tag ON index_tags (vault, tag);
     CREATE TABLE index_chunks (
         id      INTEGER PRIMARY KEY,
         vault   TEXT NOT NULL,
         path    TEXT NOT NULL,
         ord     INTEGER NOT NULL,
         heading TEXT NOT NULL
     ) STRICT;
     CREATE INDEX index_chunks_by_path ON index_chunks (vault, path);
     CREATE VIRTUAL TABLE index_fts USING fts5 (
         heading, body, tokenize = 'unicode61 remove_diacritics 2'
     );
     CREATE TABLE index_embeddings (
         chunk_id   INTEGER PRIMARY KEY REFERENCES index_chunks (id) ON DELETE CASCADE,
         vault      TEXT NOT NULL,
         model      TEXT NOT NULL,
         generation INTEGER NOT NULL,
         vector     BLOB NOT NULL
     ) STRICT;
     CREATE INDEX index_embeddings_by_vault ON index_embeddings (vault, generation);
     CREATE TABLE index_meta (
         vault      TEXT PRIMARY KEY NOT NULL,
         embedding_generation INTEGER NOT NULL DEFAULT 0
     ) STRICT;
     CREATE TABLE captures (
         id          INTEGER PRIMARY KEY AUTOINCREMENT,
         vault       TEXT NOT NULL,
         content     TEXT NOT NULL,
         tags        TEXT NOT NULL,
         source      TEXT,
         target_path_hint TEXT,
         created_ms  INTEGER NOT NULL,
         status      TEXT NOT NULL CHECK (status IN ('pending', 'committed')),
         committed_path TEXT,
         committed_ms INTEGER
     ) STRICT;
     CREATE INDEX captures_by_status ON captures (vault, status, id);",
    // The write epoch of the chunks (spec/index.md `search.bm25.common-words`): one counter
    // for the whole file, since FTS5's statistics are the whole table's.
    "CREATE TABLE index_epoch (
         id INTEGER PRIMARY KEY CHECK (id = 0),
         n  INTEGER NOT NULL
     ) STRICT;
     INSERT INTO index_epoch (id, n) VALUES (0, 0);",
    // A deleted chunk's words leave the full-text index at once (FTS5's secure-delete
    // option) instead of lingering in older segments until a merge: a permanent delete
    // leaves no word of the note in cache.db (spec `vault.delete.permanent-gone`).
    "INSERT INTO index_fts (index_fts, rank) VALUES ('secure-delete', 1);",
    // Frontmatter properties (spec/metadata.md `metadata.properties.index`): one row per key,
    // nested keys by their dotted path, with the value as JSON and its type; the values a key
    // matches, lowercased, each list item apart, so a lookup by key and value is one range of
    // an index; notes by modification time for recent_changes. Every note is read again to
    // fill them.
    "CREATE TABLE index_properties (
         vault TEXT NOT NULL,
         key   TEXT NOT NULL,
         path  TEXT NOT NULL,
         top   INTEGER NOT NULL,
         type  TEXT NOT NULL,
         value TEXT NOT NULL,
         PRIMARY KEY (vault, key, path)
     ) STRICT, WITHOUT ROWID;
     CREATE INDEX index_properties_by_path ON index_properties (vault, path);
     CREATE TABLE index_property_values (
         vault TEXT NOT NULL,
         key   TEXT NOT NULL,
         norm  TEXT NOT NULL,
         path  TEXT NOT NULL,
         PRIMARY KEY (vault, key, norm, path)
     ) STRICT, WITHOUT ROWID;
     CREATE INDEX index_property_values_by_path ON index_property_values (vault, path);
     CREATE INDEX index_files_by_mtime ON index_files (vault, is_note, mtime_ns);
     UPDATE index_files SET mtime_ns = -1, hash = NULL;",
    // Markdown links beside wikilinks, each with its line and text as written (spec/index.md
    // `index.links.markdown`): every note is read again, since the rows it had lack them.
    "ALTER TABLE index_links ADD COLUMN markdown INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE index_links ADD COLUMN line INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE index_links ADD COLUMN raw TEXT NOT NULL DEFAULT '';
     DELETE FROM index_links;
     UPDATE index_files SET mtime_ns = -1, hash = NULL;",
    // Task lines (spec/tasks.md `tasks.index`): one row per task line in (path, line) order,
    // the listing's order; every note is read again to fill it.
    "CREATE TABLE index_tasks (
         vault      TEXT NOT NULL,
         path       TEXT NOT NULL,
         line       INTEGER NOT NULL,
         status     TEXT NOT NULL,
         marker     TEXT NOT NULL,
         text       TEXT NOT NULL,
         due        TEXT,
         scheduled  TEXT,
         start      TEXT,
         created    TEXT,
         done       TEXT,
         cancelled  TEXT,
         priority   TEXT,
         recurrence TEXT,
         tags       TEXT NOT NULL,
         PRIMARY KEY (vault, path, line)
     ) STRICT, WITHOUT ROWID;
     UPDATE index_files SET mtime_ns = -1, hash = NULL;",
    // Tag counts (spec/index.md `index.tag-counts`): each note's tags with their ancestors,
    // and per vault and tag the number of such rows, kept by triggers in the transaction that
    // changes a note's rows; filled from the tags already indexed (every prefix of a tag up to
    // a `/`, then the tag), so no note is read again.
    "CREATE TABLE index_tag_notes (
         vault TEXT NOT NULL,
         path  TEXT NOT NULL,
         tag   TEXT NOT NULL,
         PRIMARY KEY (vault, path, tag)
     ) STRICT, WITHOUT ROWID;
     CREATE TABLE index_tag_counts (
         vault TEXT NOT NULL,
         tag   TEXT NOT NULL,
         notes INTEGER NOT NULL,
         PRIMARY KEY (vault, tag)
     ) STRICT, WITHOUT ROWID;
     CREATE TRIGGER index_tag_notes_added AFTER INSERT ON index_tag_notes BEGIN
         INSERT INTO index_tag_counts (vault, tag, notes) VALUES (NEW.vault, NEW.tag, 1)
         ON CONFLICT (vault, tag) DO UPDATE SET notes = notes + 1;
     END;
     CREATE TRIGGER index_tag_notes_removed AFTER DELETE ON index_tag_notes BEGIN
         UPDATE index_tag_counts SET notes = notes - 1 WHERE vault = OLD.vault AND tag = OLD.tag;
         DELETE FROM index_tag_counts WHERE vault = OLD.vault AND tag = OLD.tag AND notes <= 0;
     END;
     WITH RECURSIVE cut(vault, path, tag, at) AS (
         SELECT vault, path, tag, instr(tag, '/') FROM index_tags
         UNION ALL
         SELECT vault, path, tag,
                CASE instr(substr(tag, at + 1), '/') WHEN 0 THEN 0
                     ELSE at + instr(substr(tag, at + 1), '/') END
         FROM cut WHERE at > 0
     )
     INSERT OR IGNORE INTO index_tag_notes (vault, path, tag)
     SELECT vault, path, CASE at WHEN 0 THEN tag ELSE substr(tag, 1, at - 1) END
     FROM cut WHERE true;",
    // Task lines by tag and by status (spec/index.md `index.task-filters`): each task line's
    // tags with their ancestors, and the lines by status in listing order, so a page filtered
    // by either is one range of an index in `(path, line)` order rather than a scan of every
    // task line. Every note is read again to fill the tags.
    "CREATE TABLE index_task_tags (
         vault TEXT NOT NULL,
         tag   TEXT NOT NULL,
         path  TEXT NOT NULL,
         line  INTEGER NOT NULL,
         PRIMARY KEY (vault, tag, path, line)
     ) STRICT, WITHOUT ROWID;
     CREATE INDEX index_task_tags_by_path ON index_task_tags (vault, path);
     CREATE INDEX index_tasks_by_status ON index_tasks (vault, status, path, line, due);
     UPDATE index_files SET mtime_ns = -1, hash = NULL;",
];
