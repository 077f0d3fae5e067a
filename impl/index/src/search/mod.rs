//! `search_notes` (spec/tools.md; spec/index.md `search.*`): BM25 over the chunks (FTS5,
//! [`text`]), or by embedding ([`semantic`]: cosine nearest chunks, or hybrid: both ranks
//! fused), one hit per note (its best chunk) with a snippet, filtered by folder and tags,
//! paged with a signed cursor bound to the caller, the tool and the request (mode
//! included), and bounded by the governor's cap.
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
use text::{Ranked, hit_of, ranked};

pub(crate) mod common;
pub(crate) mod semantic;
pub(crate) mod text;

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
    /// Words to find, all required (a trailing * matches a prefix).
    #[schemars(length(min = 1, max = 1000))]
    pub query: String,
    /// Only notes under this folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub folder: Option<String>,
    /// Only notes with all these tags (frontmatter or inline; `area` matches `area/work`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20))]
    pub tags: Vec<String>,
    /// The most hits on one page.
    #[serde(default = "twenty")]
    #[schemars(range(min = 1, max = 100))]
    pub limit: u32,
    #[serde(default)]
    pub mode: SearchMode,
    /// The previous page's next_cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 8192))]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

/// One note found.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchHit {
    pub path: String,
    /// The headings the best chunk sits under (` > `-joined; empty before the first).
    pub heading: String,
    /// The best chunk's passage, matches between `**` (by embedding alone: its start).
    pub snippet: String,
    /// text: FTS5 BM25 (lower is better); semantic: cosine; hybrid: RRF (higher is better).
    pub score: f64,
    pub tags: Vec<String>,
}

/// `search_notes`' result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchNotesOutput {
    pub vault: String,
    pub mode: String,
    pub results: Vec<SearchHit>,
    /// Cursor for the next page; null at the end.
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

fn cursor_error(error: tc_gate::cursor::CursorError) -> ToolError {
    ToolError::new(ErrorCode::InvalidInput, error.to_string())
        .detail("reason", serde_json::json!(error.reason()))
}

impl Tool for SearchNotes {
    type Args = SearchNotesArgs;
    type Output = SearchNotesOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SEARCH_NOTES,
            description: "Search notes for words (BM25), optionally by folder and tags; one hit per note with a snippet. semantic and hybrid need [search.embeddings]. Pages via cursor.",
            annotations: Annotations::READS,
            scopes: &["read:notes"],
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
        let fts = fts_query(&args.query);
        if fts.is_none() && args.mode != SearchMode::Semantic {
            return Err(
                ToolError::validation("/query", "holds no word that can be searched for").into(),
            );
        }
        let folder = match &args.folder {
            Some(folder) => FolderPath::parse(folder)?,
            None => FolderPath::root(),
        };
        let tags: Vec<String> = args.tags.iter().map(|t| normalize_tag(t)).collect();
        let index = index_of(cx)?;
        index.wait_ready(cx)?;
        index
            .refresh()
            .map_err(|e| e.to_tool_error("reconciling the vault index"))?;

        let mut canonical =
            serde_json::to_value(args).map_err(|_| ToolError::internal("encoding the request"))?;
        // r[impl paging.max-bytes]
        // max_bytes is not part of the request a cursor is bound to: a walk may change it.
        if let Some(request) = canonical.as_object_mut() {
            request.remove("max_bytes");
        }
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
        let root = cx.vault().root();
        // r[impl search.acl]
        let keep = |path: &str| {
            tc_vault::path::VaultPath::parse(path).is_ok_and(|p| acl.can_read_at(root, &p, scopes))
        };
        let searched = match args.mode {
            SearchMode::Text => {
                let fts = fts.as_deref().unwrap_or_default();
                ranked(index, fts, &folder, &tags, keep, skip, limit + 1)
            }
            SearchMode::Semantic | SearchMode::Hybrid => {
                let mode = args.mode.as_str();
                let (model, vector) = semantic::query_vector(index, mode, &args.query)?;
                if args.mode == SearchMode::Semantic {
                    semantic::semantic_ranked(
                        index,
                        &model,
                        &vector,
                        &folder,
                        &tags,
                        keep,
                        skip,
                        limit + 1,
                    )
                } else {
                    semantic::hybrid_ranked(
                        index,
                        fts.as_deref(),
                        &model,
                        &vector,
                        &folder,
                        &tags,
                        keep,
                        skip,
                        limit + 1,
                    )
                }
            }
        };
        let found: Vec<Ranked> = searched.map_err(|e| {
            tracing::warn!("search_notes: {e}");
            ToolError::internal("searching the vault index")
        })?;
        let more = found.len() > limit;

        // r[impl search.bounded]
        let budget = cx
            .paging
            .limits
            .lowered_to(args.max_bytes)
            .page_budget()
            .saturating_sub(ENVELOPE_BYTES + 2 * wire_cost(args.query.as_bytes()));
        let mut results = Vec::with_capacity(limit);
        let mut spent = 0usize;
        let mut cut = false;
        for ranked in found.iter().take(limit) {
            let hit = hit_of(index, fts.as_deref(), ranked)
                .map_err(|_| ToolError::internal("reading a hit"))?;
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
