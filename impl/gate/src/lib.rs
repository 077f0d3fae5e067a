//! tc-gate: the confirmation gate as an embeddable, SQLite-backed library.
//!
//! Realizes spec/gate.md, spec/release.md, spec/drift.md, spec/state.md and the
//! governor, paging-cursor and events sections of the specification. Time and randomness
//! come in as parameters ([`clock::Clock`], [`clock::Entropy`]) so tests are deterministic,
//! and no rusqlite type appears in the public API.

pub mod args_hash;
pub mod clock;
pub mod cursor;
pub mod governor;
pub mod keys;
pub mod request_state;
