//! Task lines in the index (spec/tasks.md `tasks.index`, `tasks.list`): one row of
//! `index_tasks` per task line of a note, written when the index reads the note, and the
//! query `list_tasks` asks.
//!
//! A task is read by tc-vault's parser ([`tc_vault::tasks::parse_task_line`], the one
//! `update_task` edits with, so a listed line number is one `update_task` accepts) and its
//! fields by [`tc_vault::tasks::fields::fields_of`]. Rows are kept in `(path, line)` order,
//! the listing's order, so a page is one range of the primary key after the cursor's
//! position. Dates are stored as `YYYY-MM-DD` text, whose order is the dates' order. The
//! line's tags are stored as `|a|b/c|` so a tag and its nested tags are one `instr` each.
//! The caller judges the folder ACL on every path returned.

use rusqlite::{Connection, params};
use tc_tools::ToolError;
use tc_vault::tasks::fields::fields_of;
use tc_vault::tasks::parse_task_line;

use crate::VaultIndex;
use crate::parse::{closes_fence, fence_marker, line_tag_spans};

/// The most task lines kept of one note (a generated note of a million checkboxes is not a
/// to-do list anyone reads through this tool).
const MAX_TASKS: usize = 10_000;

/// One task line of a note, as the index keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFact {
    /// 1-based line in the file.
    pub line: usize,
    /// `todo`, `done`, `in_progress`, `cancelled` or `other`.
    pub status: &'static str,
    /// The box's character.
    pub marker: char,
    /// The description after the box, as written.
    pub text: String,
    pub due: Option<String>,
    pub scheduled: Option<String>,
    pub start: Option<String>,
    pub created: Option<String>,
    pub done: Option<String>,
    pub cancelled: Option<String>,
    pub priority: Option<&'static str>,
    pub recurrence: Option<String>,
    /// The line's inline tags, lowercase, without `#`.
    pub tags: Vec<String>,
}

// r[impl tasks.index]
/// The task lines of a note's text; `body` is the part of `text` after its frontmatter (a
/// suffix of it), so line numbers count the frontmatter's lines too.
pub fn facts_of(text: &str, body: &str) -> Vec<TaskFact> {
    if !body.contains('[') {
        return Vec::new();
    }
    let head = text.len().saturating_sub(body.len());
    let before = text
        .get(..head)
        .map_or(0, |before| before.matches('\n').count());
    let mut facts = Vec::new();
    let mut fence: Option<(u8, usize)> = None;
    for (index, raw) in body.split_inclusive('\n').enumerate() {
        let number = before + index + 1;
        let line = raw.trim_end_matches(['\n', '\r']);
        if let Some((ch, len)) = fence {
            if closes_fence(line, ch, len) {
                fence = None;
            }
            continue;
        }
        if let Some(marker) = fence_marker(line) {
            fence = Some(marker);
            continue;
        }
        let Some(task) = parse_task_line(line) else {
            continue;
        };
        let fields = fields_of(&task.text);
        let date = |d: Option<tc_vault::tasks::Date>| d.map(|d| d.to_string());
        let mut tags: Vec<String> = line_tag_spans(line)
            .into_iter()
            .map(|range| line[range].to_lowercase())
            .collect();
        tags.sort();
        tags.dedup();
        facts.push(TaskFact {
            line: number,
            status: task.status.name(),
            marker: task.status.marker(),
            // The completion record update_task keeps, wherever it is on the line.
            done: date(task.done_date.or(fields.done)),
            text: task.text,
            due: date(fields.due),
            scheduled: date(fields.scheduled),
            start: date(fields.start),
            created: date(fields.created),
            cancelled: date(fields.cancelled),
            priority: fields.priority.map(|p| p.name()),
            recurrence: fields.recurrence,
            tags,
        });
        if facts.len() == MAX_TASKS {
            break;
        }
    }
    facts
}

/// Writes a note's task lines (its old rows are gone already: [`forget`]).
pub(crate) fn store(
    conn: &Connection,
    vault: &str,
    path: &str,
    facts: &[TaskFact],
) -> rusqlite::Result<()> {
    if facts.is_empty() {
        return Ok(());
    }
    let mut insert = conn.prepare_cached(
        "INSERT OR REPLACE INTO index_tasks (vault, path, line, status, marker, text, due,
             scheduled, start, created, done, cancelled, priority, recurrence, tags)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    )?;
    let mut by_tag = conn.prepare_cached(
        "INSERT OR IGNORE INTO index_task_tags (vault, tag, path, line) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for t in facts {
        let tags = if t.tags.is_empty() {
            String::new()
        } else {
            format!("|{}|", t.tags.join("|"))
        };
        insert.execute(params![
            vault,
            path,
            t.line as i64,
            t.status,
            t.marker.to_string(),
            t.text,
            t.due,
            t.scheduled,
            t.start,
            t.created,
            t.done,
            t.cancelled,
            t.priority,
            t.recurrence,
            tags,
        ])?;
        // r[impl index.task-filters]
        // Each tag with its ancestors (`a/b/c` also as `a` and `a/b`), once per line: a tag
        // filter asks for one tag and finds its nested tags under it.
        for tag in &t.tags {
            for (at, _) in tag.match_indices('/') {
                by_tag.execute(params![vault, &tag[..at], path, t.line as i64])?;
            }
            by_tag.execute(params![vault, tag, path, t.line as i64])?;
        }
    }
    Ok(())
}

/// Drops a note's task lines.
pub(crate) fn forget(conn: &Connection, vault: &str, path: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM index_tasks WHERE vault = ?1 AND path = ?2")?
        .execute(params![vault, path])?;
    conn.prepare_cached("DELETE FROM index_task_tags WHERE vault = ?1 AND path = ?2")?
        .execute(params![vault, path])?;
    Ok(())
}

/// What `list_tasks` filters on; every filter given must hold.
#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    /// Paths starting with this (a folder with its trailing `/`); `None` for the whole vault.
    pub prefix: Option<String>,
    /// A [`TaskFact::status`] name.
    pub status: Option<String>,
    /// `YYYY-MM-DD`: due on or before.
    pub due_before: Option<String>,
    /// `YYYY-MM-DD`: due on or after.
    pub due_after: Option<String>,
    /// A lowercase tag without `#`: the line carries it or a tag nested under it.
    pub tag: Option<String>,
}

/// One task row, as `list_tasks` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRow {
    pub path: String,
    pub line: u64,
    pub status: String,
    pub marker: String,
    pub text: String,
    pub due: Option<String>,
    pub scheduled: Option<String>,
    pub start: Option<String>,
    pub done: Option<String>,
    pub cancelled: Option<String>,
    pub priority: Option<String>,
    pub recurrence: Option<String>,
    pub tags: Vec<String>,
}

fn failed(error: rusqlite::Error) -> ToolError {
    tracing::warn!("reading the tasks of the vault index: {error}");
    ToolError::internal("reading the tasks of the vault index")
}

/// Up to `limit` tasks matching `filter`, in `(path, line)` order, after `after` (a
/// position `(path, line)` of a previous batch).
pub fn tasks(
    index: &VaultIndex,
    filter: &TaskFilter,
    after: Option<(&str, u64)>,
    limit: usize,
) -> Result<Vec<TaskRow>, ToolError> {
    let (after_path, after_line) = after.unwrap_or(("", 0));
    let prefix = filter.prefix.clone().unwrap_or_default();
    // The range of paths under the prefix: [prefix, prefix + U+10FFFF).
    let prefix_end = if prefix.is_empty() {
        None
    } else {
        Some(format!("{prefix}\u{10FFFF}"))
    };
    // r[impl index.task-filters]
    // The most selective filter given picks the index walked, each in (path, line) order, so
    // the page is read from where it starts: a tag's lines, a status's lines, or every line.
    let sql = match (&filter.tag, &filter.status) {
        (Some(_), _) => {
            "SELECT t.path, t.line, t.status, t.marker, t.text, t.due, t.scheduled, t.start,
                    t.done, t.cancelled, t.priority, t.recurrence, t.tags
             FROM index_task_tags AS g
             JOIN index_tasks AS t ON t.vault = g.vault AND t.path = g.path AND t.line = g.line
             WHERE g.vault = ?1 AND g.tag = ?9
               AND (g.path > ?2 OR (g.path = ?2 AND g.line > ?3))
               AND g.path >= ?4 AND (?5 IS NULL OR g.path < ?5)
               AND (?6 IS NULL OR t.status = ?6)
               AND (?7 IS NULL OR t.due <= ?7)
               AND (?8 IS NULL OR t.due >= ?8)
             ORDER BY g.path, g.line
             LIMIT ?10"
        }
        (None, Some(_)) => {
            "SELECT path, line, status, marker, text, due, scheduled, start, done, cancelled,
                    priority, recurrence, tags
             FROM index_tasks INDEXED BY index_tasks_by_status
             WHERE vault = ?1 AND status = ?6
               AND (path > ?2 OR (path = ?2 AND line > ?3))
               AND path >= ?4 AND (?5 IS NULL OR path < ?5)
               AND (?7 IS NULL OR due <= ?7)
               AND (?8 IS NULL OR due >= ?8)
               AND ?9 IS NULL
             ORDER BY path, line
             LIMIT ?10"
        }
        (None, None) => {
            "SELECT path, line, status, marker, text, due, scheduled, start, done, cancelled,
                    priority, recurrence, tags
             FROM index_tasks
             WHERE vault = ?1
               AND (path > ?2 OR (path = ?2 AND line > ?3))
               AND path >= ?4 AND (?5 IS NULL OR path < ?5)
               AND ?6 IS NULL
               AND (?7 IS NULL OR due <= ?7)
               AND (?8 IS NULL OR due >= ?8)
               AND ?9 IS NULL
             ORDER BY path, line
             LIMIT ?10"
        }
    };
    let conn = index.conn();
    let mut query = conn.prepare_cached(sql).map_err(failed)?;
    let rows = query
        .query_map(
            params![
                index.vault_id(),
                after_path,
                after_line as i64,
                prefix,
                prefix_end,
                filter.status,
                filter.due_before,
                filter.due_after,
                filter.tag,
                limit as i64,
            ],
            |row| {
                let tags: String = row.get(12)?;
                Ok(TaskRow {
                    path: row.get(0)?,
                    line: row.get::<_, i64>(1)?.max(0) as u64,
                    status: row.get(2)?,
                    marker: row.get(3)?,
                    text: row.get(4)?,
                    due: row.get(5)?,
                    scheduled: row.get(6)?,
                    start: row.get(7)?,
                    done: row.get(8)?,
                    cancelled: row.get(9)?,
                    priority: row.get(10)?,
                    recurrence: row.get(11)?,
                    tags: tags
                        .split('|')
                        .filter(|t| !t.is_empty())
                        .map(str::to_owned)
                        .collect(),
                })
            },
        )
        .map_err(failed)?;
    rows.collect::<Result<_, _>>().map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    // r[verify tasks.index]
    #[test]
    fn task_lines_outside_code_and_frontmatter_with_file_line_numbers() {
        let text = "---\ntags: [a]\n---\n# T\n- [ ] one 📅 2026-01-02 #Work/x\n```\n- [ ] code\n```\n  - [x] two ✅ 2026-01-01\r\n- [?] three [due:: 2026-02-01]\nplain - [ ] no\n";
        let body = tc_vault::note::split_frontmatter(text).unwrap().body;
        let facts = facts_of(text, body);
        let lines: Vec<(usize, &str, char)> =
            facts.iter().map(|f| (f.line, f.status, f.marker)).collect();
        assert_eq!(
            lines,
            [(5, "todo", ' '), (9, "done", 'x'), (10, "other", '?')]
        );
        assert_eq!(facts[0].due.as_deref(), Some("2026-01-02"));
        assert_eq!(facts[0].tags, ["work/x"]);
        assert_eq!(facts[1].done.as_deref(), Some("2026-01-01"));
        assert_eq!(facts[2].due.as_deref(), Some("2026-02-01"));
        // Without frontmatter the body is the text.
        let facts = facts_of("- [ ] a\n", "- [ ] a\n");
        assert_eq!(facts[0].line, 1);
        // The same line numbers as update_task's.
        let found = tc_vault::tasks::find_tasks(text);
        assert!(found.iter().any(|(n, _)| *n == 5));
    }
}
