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
}

impl PageLimits {
    pub fn new(max_response_bytes: usize) -> Self {
        PageLimits { max_response_bytes }
    }

    /// The most wire cost ([`wire_cost`]) a page's JSON may have: the cap less the frame.
    pub fn page_budget(&self) -> usize {
        self.max_response_bytes.saturating_sub(RESPONSE_FRAME_BYTES)
    }
}

/// The cursor key and page limits the paged tools share.
#[derive(Debug)]
pub struct PagingSetup {
    pub codec: CursorCodec,
    pub limits: PageLimits,
}
