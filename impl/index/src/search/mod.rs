//! `search_notes` (spec/tools.md; spec/index.md `search.*`): BM25 over the chunks (FTS5,
//! [`text`]), by embedding ([`semantic`]: cosine nearest chunks, or hybrid: both ranks
//! fused) or by regular expression ([`pattern`]), one hit per note (its best chunk) with a
//! snippet, filtered by folder, tags, a property and the modification time ([`filters`]; the
//! filters alone list notes), sorted by rank or by time, paged with a signed cursor bound to
//! the caller, the tool and the request (mode, filters and sort included), and bounded by the
//! governor's cap.
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
use filters::{NO_CHUNK, Narrowing};
pub use filters::{PropertyFilter, SortOrder};
use text::{Ranked, hit_of, ranked};

pub(crate) mod common;
pub mod filters;
pub mod pattern;
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
    /// `query` is a regular expression (Rust syntax).
    Regex,
}

impl SearchMode {
    fn as_str(self) -> &'static str {
        match self {
            SearchMode::Text => "text",
            SearchMode::Semantic => "semantic",
            SearchMode::Hybrid => "hybrid",
            SearchMode::Regex => "regex",
        }
    }
}

/// `search_notes` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchNotesArgs {
    /// Words to find, all required (a trailing * matches a prefix); optional with a filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1000))]
    pub query: Option<String>,
    /// Only notes under this folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub folder: Option<String>,
    /// Only notes with all these tags (frontmatter or inline; `area` matches `area/work`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20))]
    pub tags: Vec<String>,
    /// key (dotted for nested), value (absent: any; a list matches if it holds it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property: Option<PropertyFilter>,
    /// RFC 3339 or YYYY-MM-DD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub modified_after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub modified_before: Option<String>,
    #[serde(default, skip_serializing_if = "SortOrder::is_relevance")]
    pub sort: SortOrder,
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

/// What the precheck read of the arguments.
#[derive(Debug, Default)]
pub struct SearchPlan {
    /// The words as an FTS5 query.
    fts: Option<String>,
    regex: Option<regex::Regex>,
    tags: Vec<String>,
    /// The property's key and what its value must match.
    property: Option<(String, Option<String>)>,
    after_ns: Option<i64>,
    before_ns: Option<i64>,
}

impl SearchPlan {
    fn narrowing(&self) -> Narrowing<'_> {
        Narrowing {
            tags: &self.tags,
            property: self
                .property
                .as_ref()
                .map(|(key, norm)| (key.as_str(), norm.clone())),
            after_ns: self.after_ns,
            before_ns: self.before_ns,
        }
    }
}

// r[impl search.filters.query-optional]
/// Reads the arguments: the query as the mode takes it, the filters as the index compares
/// them; what cannot be searched for is `validation_error`.
pub fn plan_of(args: &SearchNotesArgs) -> Result<SearchPlan, ToolError> {
    let property = match &args.property {
        Some(p) => Some((
            p.key.trim().to_owned(),
            filters::value_norm(p.value.as_ref(), "/property/value")?,
        )),
        None => None,
    };
    let mut plan = SearchPlan {
        fts: None,
        regex: None,
        tags: args.tags.iter().map(|t| normalize_tag(t)).collect(),
        property,
        after_ns: filters::time_arg(args.modified_after.as_deref(), "/modified_after")?,
        before_ns: filters::time_arg(args.modified_before.as_deref(), "/modified_before")?,
    };
    let filtered = args.folder.is_some() || plan.narrowing().any();
    let query = args.query.as_deref();
    match (args.mode, query) {
        (SearchMode::Text, None) if !filtered => {
            return Err(ToolError::validation(
                "/query",
                "is required unless a filter (folder, tags, property, modified_after, modified_before) is given",
            ));
        }
        (SearchMode::Text, None) => {}
        (SearchMode::Semantic | SearchMode::Hybrid | SearchMode::Regex, None) => {
            return Err(ToolError::validation(
                "/query",
                format!("is required in mode {}", args.mode.as_str()),
            ));
        }
        (SearchMode::Regex, Some(pattern)) => plan.regex = Some(pattern::compile(pattern)?),
        (mode, Some(words)) => {
            plan.fts = fts_query(words);
            if plan.fts.is_none() && mode != SearchMode::Semantic {
                return Err(ToolError::validation(
                    "/query",
                    "holds no word that can be searched for",
                ));
            }
        }
    }
    Ok(plan)
}

fn cursor_error(error: tc_gate::cursor::CursorError) -> ToolError {
    ToolError::new(ErrorCode::InvalidInput, error.to_string())
        .detail("reason", serde_json::json!(error.reason()))
}

impl Tool for SearchNotes {
    type Args = SearchNotesArgs;
    type Output = SearchNotesOutput;
    type Plan = SearchPlan;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SEARCH_NOTES,
            description: "Search notes by words (BM25), meaning or regex, or list them by folder, tags, property or modified time; one hit per note with a snippet. Pages via cursor.",
            annotations: Annotations::READS,
            scopes: &["read:notes"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(
        &self,
        _cx: &ToolCx<'_>,
        args: &SearchNotesArgs,
    ) -> Result<Precheck<SearchPlan>, ToolError> {
        Ok(Precheck::with_plan(plan_of(args)?))
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &SearchNotesArgs,
        precheck: &Precheck<SearchPlan>,
        _state: &TargetState,
    ) -> Result<SearchNotesOutput, HandlerFailure> {
        let plan = &precheck.plan;
        let fts = plan.fts.clone();
        let folder = match &args.folder {
            Some(folder) => FolderPath::parse(folder)?,
            None => FolderPath::root(),
        };
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
        // Judging a path stats its links: skipped when the caller may read every path.
        let everything = acl.reads_everything(scopes);
        // r[impl search.acl]
        let keep = |path: &str| {
            everything
                || tc_vault::path::VaultPath::parse(path)
                    .is_ok_and(|p| acl.can_read_at(root, &p, scopes))
        };
        let failed = |e: rusqlite::Error| {
            tracing::warn!("search_notes: {e}");
            ToolError::internal("searching the vault index")
        };
        let only = plan.narrowing().notes(index).map_err(failed)?;
        let only = only.as_ref();
        // r[impl search.sort]
        // Sorted by time, every hit is found first and the page cut after the sort.
        let by_time = args.sort == SortOrder::Modified;
        let (from, take) = if by_time {
            (0, usize::MAX)
        } else {
            (skip, limit + 1)
        };
        let query = args.query.as_deref().unwrap_or_default();
        let mut listed_in_order = false;
        let searched = match args.mode {
            SearchMode::Regex => {
                let re = plan
                    .regex
                    .as_ref()
                    .ok_or_else(|| ToolError::validation("/query", "is required in mode regex"))?;
                pattern::regex_ranked(index, re, &folder, only, keep)
                    .map(|all| all.into_iter().skip(from).take(take).collect())
            }
            SearchMode::Text => match fts.as_deref() {
                Some(fts) => ranked(index, fts, &folder, only, keep, from, take),
                // Listed in the sort's own order: the page is cut here.
                None => {
                    listed_in_order = true;
                    filters::listed(index, &folder, only, keep, by_time, skip, limit + 1)
                }
            },
            SearchMode::Semantic | SearchMode::Hybrid => {
                let mode = args.mode.as_str();
                let (model, vector) = semantic::query_vector(index, mode, query)?;
                if args.mode == SearchMode::Semantic {
                    semantic::semantic_ranked(
                        index, &model, &vector, &folder, only, keep, from, take,
                    )
                } else {
                    semantic::hybrid_ranked(
                        index,
                        fts.as_deref(),
                        &model,
                        &vector,
                        &folder,
                        only,
                        keep,
                        from,
                        take,
                    )
                }
            }
        };
        let mut found: Vec<Ranked> = searched.map_err(failed)?;
        if by_time && !listed_in_order {
            found = filters::by_modified(index, found)
                .map_err(failed)?
                .into_iter()
                .skip(skip)
                .take(limit + 1)
                .collect();
        }
        let more = found.len() > limit;

        // r[impl search.bounded]
        let budget = cx
            .paging
            .limits
            .lowered_to(args.max_bytes)
            .page_budget()
            .saturating_sub(ENVELOPE_BYTES + 2 * wire_cost(query.as_bytes()));
        let mut results = Vec::with_capacity(limit);
        let mut spent = 0usize;
        let mut cut = false;
        // Ranked entries the page went past (a vanished hit among them), where the next
        // page starts.
        let mut consumed = 0usize;
        for ranked in found.iter_mut().take(limit) {
            if ranked.chunk == NO_CHUNK {
                ranked.chunk = filters::first_chunk(index, &ranked.path).map_err(failed)?;
            }
            // r[impl search.hit-vanished]
            // Another server on the same cache.db may have re-indexed the note between the
            // ranking and this read, replacing its chunks: the hit is gone, not an error.
            let Some(mut hit) = hit_of(index, fts.as_deref(), ranked)
                .map_err(|_| ToolError::internal("reading a hit"))?
            else {
                consumed += 1;
                continue;
            };
            if let Some(re) = &plan.regex {
                hit.snippet = pattern::chunk_snippet(index, re, ranked.chunk).map_err(failed)?;
            }
            let cost = serde_json::to_vec(&hit)
                .map(|bytes| wire_cost(&bytes) + 1)
                .map_err(|_| ToolError::internal("encoding a hit"))?;
            if spent + cost > budget && !results.is_empty() {
                cut = true;
                break;
            }
            spent += cost;
            consumed += 1;
            results.push(hit);
        }
        let next_cursor = if more || cut {
            let position = (skip + consumed).to_string();
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
