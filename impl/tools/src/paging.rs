//! What paged tools need beyond the vault: the cursor key and the size a page may have on
//! the wire (spec/paging.md `paging.read-notes.no-overflow`; spec/governor.md `governor.measure`).
//!
//! A page is judged the way the governor judges any response: the result object's JSON,
//! its copy escaped in the text block, and the frame around both
//! ([`tc_gate::governor::RESPONSE_FRAME_BYTES`]). [`wire_cost`] is what one piece of a
//! page's JSON costs of that budget.

use tc_gate::cursor::CursorCodec;
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
