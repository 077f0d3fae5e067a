//! tc-gate: the confirmation gate as an embeddable, SQLite-backed library.
//!
//! Realizes spec/gate.md, spec/release.md, spec/drift.md, spec/state.md and the
//! governor, paging-cursor and events sections of the specification. Time and randomness
//! come in as parameters ([`clock::Clock`], [`clock::Entropy`]) so tests are deterministic,
//! and no rusqlite type appears in the public API.

pub mod args_hash;
pub mod clock;
pub mod cursor;
pub mod events;
pub mod gate;
pub mod governor;
pub mod keys;
pub mod private_fs;
pub mod request_state;
pub mod state_fp;
pub mod store;
pub mod verifier;

pub use events::{CountersSnapshot, Event, EventName, RefusalReason, caller_hash};
pub use gate::EVENT_RETENTION_MS;
pub use gate::{
    AdmitError, BindingMismatch, BoundCall, CallBinding, ElicitToken, Gate, GateConfig, HandlerRun,
    InHandlerNoEffect, InvalidTtl, IssuedToken, MintError, NoEffect, NonTokenRoute, RaisedRequest,
    RedeemError, Redemption, ReleaseOutcome, ReleaseReason, ReleaseTicket, ReplayDrift,
    RequestStateMode, SpentReason,
};
pub use state_fp::{
    ConfirmationTargets, FingerprintKey, InvalidStateFp, RegistryError, StateFp,
    fingerprint_custom, fingerprint_targets, validate_gated_tool,
};
pub use store::{CACHE_DB_FILE, LATEST_SCHEMA_VERSION, Store, StoreError, StoredRows, SweepReport};
pub use verifier::{BuiltinVerifier, Verifier};
