//! tc-conformance: drives tc-model and tc-gate with one action vocabulary and compares them
//!.
//!
//! - [`sut::Sut`] executes each model [`tc_model::Action`] on the real tc-gate, playing the
//!   server around it (notes, clock, tokens, requestStates, shim prompts, reopen): it stays
//!   for what the server has no counterpart of (custom verifiers, `update_task`, several
//!   callers on one transport, the stages no local stand-in arranges).
//! - [`harness`] applies the same action to [`tc_model::GateModel`] and the `Sut` and reports
//!   the first [`harness::Divergence`], named by the clause the model's answer stands for.
//! - [`server::ServerSut`] executes the same actions against tc-server in process (the MCP
//!   dispatch, the round trips, the CLI's mint code, the files on disk), and
//!   [`server::compare`] compares it with the model step by step.
//! - [`fuzz_bodies`] are the bodies of the cargo-fuzz targets in `fuzz/`; the committed seeds
//!   are replayed through them by `tests/fuzz_seeds.rs`.
//! - [`envelope`] and [`world`] are the harness's mapping of handles and fingerprints to what
//!   tc-gate sees.
//!
//! The test suites: `tests/proptest_state_machine.rs` (random action sequences, shrunk),
//! `tests/exhaustive_replay.rs` (every path of the stateright checker's action generator to a
//! bounded depth), `tests/scenarios.rs` (named regressions), `tests/fuzz_seeds.rs`.

pub mod envelope;
pub mod fuzz_bodies;
mod fuzz_jsonrpc;
pub mod harness;
pub mod server;
pub mod sut;
pub mod world;

pub use harness::{Divergence, Harness, ReplayError, replay};
pub use sut::{Backing, Sut, SutError, SutOptions};
