//! Fixtures shared by the tc-gate integration tests: a gate on a manual clock with seeded
//! randomness (deterministic), or on a file for the durability tests.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::Path;
use std::sync::Arc;

use tc_gate::clock::{ManualClock, OsEntropy, SeededEntropy, SystemClock};
use tc_gate::{CallBinding, Gate, GateConfig, StateFp, Store, fingerprint_targets};

pub const TTL_SECONDS: i64 = 300;
pub const TTL_MS: i64 = TTL_SECONDS * 1000;
pub const START_MS: i64 = 1_800_000_000_000;

pub const DELETE: CallBinding<'static> = CallBinding {
    vault: "main",
    tool: "delete_note",
    args_hash: "0123456789abcdef0123456789abcdef",
    caller: "stdio",
};

pub fn with_vault<'a>(call: CallBinding<'a>, vault: &'a str) -> CallBinding<'a> {
    CallBinding { vault, ..call }
}
pub fn with_args<'a>(call: CallBinding<'a>, args_hash: &'a str) -> CallBinding<'a> {
    CallBinding { args_hash, ..call }
}
pub fn with_caller<'a>(call: CallBinding<'a>, caller: &'a str) -> CallBinding<'a> {
    CallBinding { caller, ..call }
}

/// The fingerprint of one note with the given content hash (None: the note is missing).
pub fn fp_of(content: Option<&str>) -> StateFp {
    fingerprint_targets(&[("inbox/a.md".to_owned(), content.map(str::to_owned))])
}

pub struct Fixture {
    pub gate: Gate,
    pub clock: ManualClock,
}

pub fn in_memory(config: GateConfig) -> Fixture {
    let clock = ManualClock::new(START_MS);
    let gate = Gate::new(
        Store::open_in_memory().expect("in-memory store"),
        Arc::new(clock.clone()),
        Arc::new(SeededEntropy::new(7)),
        config,
    );
    Fixture { gate, clock }
}

pub fn fixture() -> Fixture {
    in_memory(GateConfig::new(TTL_SECONDS).expect("ttl"))
}

pub fn on_file_manual(path: &Path, clock: &ManualClock, seed: u64) -> Gate {
    Gate::new(
        Store::open(path).expect("open cache.db"),
        Arc::new(clock.clone()),
        Arc::new(SeededEntropy::new(seed)),
        GateConfig::new(TTL_SECONDS).expect("ttl"),
    )
}

/// A production-like gate: wall clock, OS randomness, the file at `path`.
pub fn on_file(path: &Path) -> Gate {
    Gate::new(
        Store::open(path).expect("open cache.db"),
        Arc::new(SystemClock),
        Arc::new(OsEntropy),
        GateConfig::new(TTL_SECONDS).expect("ttl"),
    )
}
