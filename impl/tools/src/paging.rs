//! What paged tools need beyond the vault: the cursor key and the size a page may have on
//! the wire (spec/paging.md `paging.read-notes.no-overflow`; spec/governor.md `governor.measure`).
//!
//! A page is judged the way the governor judges any response: the result object's JSON,
//! its copy escaped in the text block, and the frame around both
//! ([`tc_gate::governor::RESPONSE_FRAME_BYTES`]). [`wire_cost`] is what one piece of a
//! page's JSON costs of that budget.

use serde::Serialize;
use serde_json::Value;
use tc_gate::cursor::{CursorClaims, CursorCodec, CursorError, RequestDigest, request_digest};

use crate::{ErrorCode, ToolCx, ToolError};
pub use tc_gate::governor::{RESPONSE_FRAME_BYTES, wire_cost};

/// The size limits of one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLimits {
    /// `governor.maxResponseBytes`.
    pub max_response_bytes: usize,
    /// `governor.pageBytes`: what one page may take as sent, at most the cap.
    pub page_bytes: usize,
}

impl PageLimits {
    /// Pages as large as the cap allows.
    pub fn new(max_response_bytes: usize) -> Self {
        PageLimits {
            max_response_bytes,
            page_bytes: max_response_bytes,
        }
    }

    // r[impl config.governor.page-bytes]
    /// Pages of at most `page_bytes` as sent, under the cap `max_response_bytes`.
    pub fn with_page_bytes(max_response_bytes: usize, page_bytes: usize) -> Self {
        PageLimits {
            max_response_bytes,
            page_bytes: page_bytes.min(max_response_bytes),
        }
    }

    /// The smallest `max_bytes` a paged tool accepts.
    pub const MIN_MAX_BYTES: u64 = 1_024;

    // r[impl paging.max-bytes]
    /// These limits for one call whose `max_bytes` argument lowers the page budget: held to
    /// `page_bytes` above it; the cap is unchanged, so a lone entry over a small page is still
    /// served (`paging.alone-under-cap`).
    pub fn lowered_to(self, max_bytes: Option<u64>) -> Self {
        match max_bytes {
            Some(max) => PageLimits {
                max_response_bytes: self.max_response_bytes,
                page_bytes: self
                    .page_bytes
                    .min(usize::try_from(max).unwrap_or(usize::MAX)),
            },
            None => self,
        }
    }

    /// The most wire cost a response's JSON may have: the cap less the frame. A page holding
    /// one entry that is over [`PageLimits::page_budget`] may use this much.
    pub fn ceiling_budget(&self) -> usize {
        self.max_response_bytes.saturating_sub(RESPONSE_FRAME_BYTES)
    }

    /// The most wire cost ([`wire_cost`]) a page's JSON may have: the page budget less the
    /// frame.
    pub fn page_budget(&self) -> usize {
        self.page_bytes
            .min(self.max_response_bytes)
            .saturating_sub(RESPONSE_FRAME_BYTES)
    }
}

/// The cursor key and page limits the paged tools share.
#[derive(Debug)]
pub struct PagingSetup {
    pub codec: CursorCodec,
    pub limits: PageLimits,
}

/// A paged call that resumes after a key (spec/paging.md `paging.cursor.bound`,
/// `paging.max-bytes`): the request its cursor is bound to (the arguments without `cursor`
/// and `max_bytes`, so a walk may change its page size), the key the page starts after, and
/// the page's budget. The index-backed listing tools (tags, properties, links, recent
/// changes, tasks, periodic notes, attachments) page through this one type.
#[derive(Debug)]
pub struct KeysetPaging {
    tool: &'static str,
    digest: RequestDigest,
    now: i64,
    /// The last key of the previous page (the page starts after it).
    pub after: Option<String>,
    page: u64,
    limits: PageLimits,
}

/// What a keyset page's envelope (vault, next_cursor, counts, braces) may cost at most.
pub const KEYSET_ENVELOPE_BYTES: usize = 1_024;

impl KeysetPaging {
    /// Opens `cursor` (if any) for `tool` and `args` (the validated arguments), with the page
    /// budget lowered to `max_bytes` when given.
    pub fn open<A: Serialize>(
        cx: &ToolCx<'_>,
        tool: &'static str,
        args: &A,
        cursor: Option<&str>,
        max_bytes: Option<u64>,
    ) -> Result<KeysetPaging, ToolError> {
        let mut canonical: Value =
            serde_json::to_value(args).map_err(|_| ToolError::internal("encoding the request"))?;
        if let Some(request) = canonical.as_object_mut() {
            request.remove("max_bytes");
        }
        let digest = request_digest(&canonical);
        let now = cx.clock.now_ms();
        let (after, page) = match cursor {
            Some(token) => {
                let resume = cx
                    .paging
                    .codec
                    .open(token, &cx.caller.id, tool, &digest, now)
                    .map_err(cursor_error)?;
                (Some(resume.position), resume.page.saturating_add(1))
            }
            None => (None, 0),
        };
        Ok(KeysetPaging {
            tool,
            digest,
            now,
            after,
            page,
            limits: cx.paging.limits.lowered_to(max_bytes),
        })
    }

    /// The page budget for the entries, the envelope taken off.
    pub fn budget(&self) -> usize {
        self.limits
            .page_budget()
            .saturating_sub(KEYSET_ENVELOPE_BYTES)
    }

    /// The cursor resuming after `last`.
    pub fn next(&self, cx: &ToolCx<'_>, last: &str) -> Result<String, ToolError> {
        cx.paging
            .codec
            .seal(
                &CursorClaims {
                    caller: &cx.caller.id,
                    tool: self.tool,
                    request_digest: &self.digest,
                    position: last,
                    page: self.page,
                },
                self.now,
            )
            .map_err(|_| ToolError::internal("sealing the cursor"))
    }

    // r[impl paging.alone-under-cap]
    /// Fills a page from `entries` (in key order, after [`KeysetPaging::after`]) under the
    /// budget: the entries taken and the key to resume after, when some are left. The first
    /// entry is always taken, so a walk makes progress; the governor judges it against the
    /// cap.
    pub fn fill<T: Serialize>(
        &self,
        entries: impl Iterator<Item = (String, T)>,
    ) -> Result<(Vec<T>, Option<String>), ToolError> {
        let budget = self.budget();
        let mut page = Vec::new();
        let mut spent = 0usize;
        let mut last: Option<String> = None;
        for (key, entry) in entries {
            let cost = serde_json::to_vec(&entry)
                .map(|bytes| wire_cost(&bytes) + 1)
                .map_err(|_| ToolError::internal("encoding a page entry"))?;
            if spent + cost > budget && !page.is_empty() {
                return Ok((page, last));
            }
            spent += cost;
            page.push(entry);
            last = Some(key);
        }
        Ok((page, None))
    }
}

fn cursor_error(error: CursorError) -> ToolError {
    ToolError::new(ErrorCode::InvalidInput, error.to_string())
        .detail("reason", serde_json::json!(error.reason()))
}
