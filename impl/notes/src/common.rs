//! What the note tools share: the checks before the gate (`prev_hash`, existence, the
//! conventions preflight) and the guards in the handler that make a write apply to exactly
//! the state its approval covers (spec/tools.md `tools.prev-hash`, `tools.not-found`;
//! spec/release.md `release.preflight`).
//!
//! A write is guarded by the content hash observed for its target when the state was taken
//! (`HashIs`, or create-only when the target was missing), so a note changed after the drift
//! check is refused as `concurrent_modification`, never silently overwritten. The one
//! exception is `write_note`'s unconfirmed `append` and `prepend`, which extend the note as
//! they find it under its lock (spec `vault.write.locked`).
//!
//! The link planning the link tools share lives in `tc_tools::backlinks`, which the bulk
//! tools plan through too.

pub(crate) use tc_tools::note_write::{
    check_observed, check_prev_hash, exists_error, guard_for, kind_for, not_found, note, preflight,
    prior_of, read_as_observed,
};

// r[impl results.bounded-mutations]
/// The most paths a result of a tool that changes notes lists (the counts say how many in
/// all), so such a result always fits the smallest cap the config accepts.
pub(crate) const LISTED_PATHS: usize = 100;

pub(crate) use tc_tools::backlinks::{link_sources, plan_over, with_canvases};
