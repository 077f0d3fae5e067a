//! `search_notes` (CONTRACT §3; spec/index.md `search.*`): BM25 over the chunks (FTS5),
//! one hit per note (its best chunk) with a highlighted snippet, filtered by folder and
//! tags, paged with a signed cursor bound to the caller, the tool and the request, and
//! bounded by the governor's cap.
//!
//! The folder ACL is applied to every hit before it is counted, so a note the caller may not
//! read is never named, never snippeted, and never shifts the pages (the cursor counts the
//! readable hits only). The index is reconciled with the files before the query runs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::cursor::{CursorClaims, request_digest};
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError,
    ToolSpec, wire_cost,
};
use tc_vault::path::FolderPath;

use crate::index::VaultIndex;

/// The tool's name (the cursor is bound to it).
pub const SEARCH_NOTES: &str = "search_notes";
/// The most characters of a heading path a hit carries.
const HEADING_CHARS: usize = 200;
/// What a page's envelope (vault, query, mode, next_cursor, braces) may cost at most, less
/// the query itself which is counted apart.
const ENVELOPE_BYTES: usize = 1_024;

fn twenty() -> u32 {
    20
}

/// How the hits are found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// BM25 over the words of the chunks.
    #[default]
    Text,
    /// Nearest chunks by embedding (needs `[search.embeddings]`).
    Semantic,
    /// Text and semantic ranks fused (reciprocal-rank fusion; needs `[search.embeddings]`).
    Hybrid,
}

impl SearchMode {
    fn as_str(self) -> &'static str {
        match self {
            SearchMode::Text => "text",
            SearchMode::Semantic => "semantic",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

/// `search_notes` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchNotesArgs {
    /// The words to find (all of them; a word ending in * matches as a prefix).
    #[schemars(length(min = 1, max = 1000))]
    pub query: String,
    /// Only notes under this folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub folder: Option<String>,
    /// Only notes carrying every one of these tags (frontmatter or inline; `area` also
    /// matches `area/work`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20))]
    pub tags: Vec<String>,
    /// The most hits on one page.
    #[serde(default = "twenty")]
    #[schemars(range(min = 1, max = 100))]
    pub limit: u32,
    #[serde(default)]
    pub mode: SearchMode,
    /// The next_cursor of the previous page of the same request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 8192))]
    pub cursor: Option<String>,
}

/// One note found.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchHit {
    pub path: String,
    /// The headings the best chunk sits under (` > `-joined; empty before the first).
    pub heading: String,
    /// The best chunk's matching passage, matches between `**`.
    pub snippet: String,
    /// BM25 (lower is better, as SQLite's FTS5 reports it).
    pub score: f64,
    pub tags: Vec<String>,
}

/// `search_notes`' result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchNotesOutput {
    pub vault: String,
    pub mode: String,
    pub results: Vec<SearchHit>,
    /// Repeat the same request with cursor set to this for more; null when there is none.
    pub next_cursor: Option<String>,
}

#[derive(Debug)]
pub struct SearchNotes;

// r[impl search.query]
/// The caller's words as an FTS5 query: every word quoted (so no FTS5 syntax can be
/// injected), all required, a trailing `*` kept as a prefix match.
pub fn fts_query(query: &str) -> Option<String> {
    let terms: Vec<String> = query
        .split_whitespace()
        .filter_map(|word| {
            let prefix = word.ends_with('*');
            let core: String = word
                .chars()
                .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '\'' | '.' | '/'))
                .collect();
            let core = core.trim_matches(|c: char| !c.is_alphanumeric());
            if core.is_empty() {
                return None;
            }
            let quoted = format!("\"{}\"", core.replace('"', "\"\""));
            Some(if prefix { format!("{quoted}*") } else { quoted })
        })
        .collect();
    (!terms.is_empty()).then(|| terms.join(" "))
}

pub(crate) fn index_of<'a>(cx: &ToolCx<'a>) -> Result<&'a VaultIndex, ToolError> {
    cx.binding
        .index()
        .and_then(|index| index.as_any().downcast_ref::<VaultIndex>())
        .ok_or_else(|| {
            ToolError::new(
                ErrorCode::InvalidInput,
                format!(
                    "vault {} has no index (search is disabled in the configuration)",
                    cx.vault().id()
                ),
            )
        })
}

fn normalize_tag(tag: &str) -> String {
    tag.trim().trim_start_matches('#').to_lowercase()
}

struct Ranked {
    path: String,
    chunk: i64,
    score: f64,
}

fn ranked(
    index: &VaultIndex,
    fts: &str,
    folder: &FolderPath,
    tags: &[String],
    mut keep: impl FnMut(&str) -> bool,
    skip: usize,
    take: usize,
) -> rusqlite::Result<Vec<Ranked>> {
    let mut sql = String::from(
        // bm25() is only defined in a query over the FTS5 table alone: the matches are
        // ranked first, then joined to their notes and grouped to one hit per note.
        "WITH m AS MATERIALIZED (
             SELECT rowid AS id, bm25(index_fts, 2.0, 1.0) AS score
             FROM index_fts WHERE index_fts MATCH ?1
         )
         SELECT c.path, c.id, MIN(m.score) FROM m JOIN index_chunks c ON c.id = m.id
         WHERE c.vault = ?2",
    );
    let mut values: Vec<rusqlite::types::Value> =
        vec![fts.to_owned().into(), index.vault_id().to_owned().into()];
    if !folder.is_root() {
        values.push(format!("{}/", folder.as_str()).into());
        sql.push_str(&format!(
            " AND substr(c.path, 1, length(?{n})) = ?{n}",
            n = values.len()
        ));
    }
    for tag in tags {
        values.push(tag.clone().into());
        let n = values.len();
        sql.push_str(&format!(
            " AND c.path IN (SELECT path FROM index_tags WHERE vault = ?2
                 AND (tag = ?{n} OR substr(tag, 1, length(?{n}) + 1) = ?{n} || '/'))"
        ));
    }
    sql.push_str(" GROUP BY c.path ORDER BY 3, 1");
    let conn = index.conn();
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(values))?;
    let mut out = Vec::with_capacity(take);
    let mut readable = 0usize;
    while let Some(row) = rows.next()? {
        let path: String = row.get(0)?;
        if !keep(&path) {
            continue;
        }
        readable += 1;
        if readable <= skip {
            continue;
        }
        out.push(Ranked {
            path,
            chunk: row.get(1)?,
            score: row.get(2)?,
        });
        if out.len() >= take {
            break;
        }
    }
    Ok(out)
}

fn hit_of(index: &VaultIndex, fts: &str, ranked: &Ranked) -> rusqlite::Result<SearchHit> {
    let conn = index.conn();
    let (snippet, heading): (String, String) = conn
        .prepare_cached(
            "SELECT snippet(index_fts, -1, '**', '**', '…', 24), heading
             FROM index_fts WHERE index_fts MATCH ?1 AND rowid = ?2",
        )?
        .query_row(rusqlite::params![fts, ranked.chunk], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?;
    let mut stmt =
        conn.prepare_cached("SELECT tag FROM index_tags WHERE vault = ?1 AND path = ?2")?;
    let tags = stmt
        .query_map(rusqlite::params![index.vault_id(), ranked.path], |row| {
            row.get::<_, String>(0)
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(SearchHit {
        path: ranked.path.clone(),
        heading: heading.chars().take(HEADING_CHARS).collect(),
        snippet,
        score: ranked.score,
        tags,
    })
}

fn cursor_error(error: tc_gate::cursor::CursorError) -> ToolError {
    ToolError::new(ErrorCode::InvalidInput, error.to_string())
        .detail("reason", serde_json::json!(error.reason()))
}

impl Tool for SearchNotes {
    type Args = SearchNotesArgs;
    type Output = SearchNotesOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SEARCH_NOTES,
            description: "Search the vault's notes for words (BM25 over heading-aware chunks), optionally under a folder and with tags; one hit per note with a highlighted snippet. mode semantic or hybrid needs an embeddings endpoint. Repeat the same request with cursor = next_cursor for more hits.",
            annotations: Annotations::READS,
            scope: "read:notes",
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, _cx: &ToolCx<'_>, _args: &SearchNotesArgs) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &SearchNotesArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<SearchNotesOutput, HandlerFailure> {
        if args.mode != SearchMode::Text {
            // r[impl search.embeddings.unavailable]
            return Err(ToolError::new(
                ErrorCode::EmbeddingsUnavailable,
                format!(
                    "mode {} needs embeddings, and this server has no [search.embeddings] endpoint; use mode text",
                    args.mode.as_str()
                ),
            )
            .into());
        }
        let fts = fts_query(&args.query).ok_or_else(|| {
            ToolError::validation("/query", "holds no word that can be searched for")
        })?;
        let folder = match &args.folder {
            Some(folder) => FolderPath::parse(folder)?,
            None => FolderPath::root(),
        };
        let tags: Vec<String> = args.tags.iter().map(|t| normalize_tag(t)).collect();
        let index = index_of(cx)?;
        index.wait_ready(cx)?;
        index
            .reconcile()
            .map_err(|e| e.to_tool_error("reconciling the vault index"))?;

        let canonical =
            serde_json::to_value(args).map_err(|_| ToolError::internal("encoding the request"))?;
        let digest = request_digest(&canonical);
        let now = cx.clock.now_ms();
        let (skip, page) = match &args.cursor {
            Some(token) => {
                let resume = cx
                    .paging
                    .codec
                    .open(token, &cx.caller.id, SEARCH_NOTES, &digest, now)
                    .map_err(cursor_error)?;
                let skip = resume
                    .position
                    .parse::<usize>()
                    .map_err(|_| cursor_error(tc_gate::cursor::CursorError::Invalid))?;
                (skip, resume.page.saturating_add(1))
            }
            None => (0, 0),
        };
        let limit = args.limit.clamp(1, 100) as usize;
        let acl = &cx.binding.acl;
        let scopes = &cx.caller.scopes;
        // r[impl search.acl]
        let keep = |path: &str| {
            tc_vault::path::VaultPath::parse(path).is_ok_and(|p| acl.can_read(&p, scopes))
        };
        let found = ranked(index, &fts, &folder, &tags, keep, skip, limit + 1).map_err(|e| {
            tracing::warn!("search_notes: {e}");
            ToolError::internal("searching the vault index")
        })?;
        let more = found.len() > limit;

        // r[impl search.bounded]
        let budget = cx
            .paging
            .limits
            .page_budget()
            .saturating_sub(ENVELOPE_BYTES + 2 * wire_cost(args.query.as_bytes()));
        let mut results = Vec::with_capacity(limit);
        let mut spent = 0usize;
        let mut cut = false;
        for ranked in found.iter().take(limit) {
            let hit =
                hit_of(index, &fts, ranked).map_err(|_| ToolError::internal("reading a hit"))?;
            let cost = serde_json::to_vec(&hit)
                .map(|bytes| wire_cost(&bytes) + 1)
                .map_err(|_| ToolError::internal("encoding a hit"))?;
            if spent + cost > budget && !results.is_empty() {
                cut = true;
                break;
            }
            spent += cost;
            results.push(hit);
        }
        let next_cursor = if more || cut {
            let position = (skip + results.len()).to_string();
            Some(
                cx.paging
                    .codec
                    .seal(
                        &CursorClaims {
                            caller: &cx.caller.id,
                            tool: SEARCH_NOTES,
                            request_digest: &digest,
                            position: &position,
                            page,
                        },
                        now,
                    )
                    .map_err(|_| ToolError::internal("sealing the cursor"))?,
            )
        } else {
            None
        };
        Ok(SearchNotesOutput {
            vault: cx.vault().id().to_owned(),
            mode: args.mode.as_str().to_owned(),
            results,
            next_cursor,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // r[verify search.query]
    #[test]
    fn queries_are_quoted_words() {
        assert_eq!(
            fts_query("hello world").as_deref(),
            Some("\"hello\" \"world\"")
        );
        assert_eq!(fts_query("proj*").as_deref(), Some("\"proj\"*"));
        assert_eq!(
            fts_query("a\" OR b NEAR(c)").as_deref(),
            Some("\"a\" \"OR\" \"b\" \"NEARc\"")
        );
        assert_eq!(fts_query("  ** ( ) "), None);
    }
}
