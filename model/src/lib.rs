//! tc-model: the pure state machine of obsidian-tc's confirmation gate and a stateright model
//! over it (spec/ clauses
//! gate.*, cli.elicit.*, release.*, drift.*, approval.*, state.*, trip.*).
//!
//! The abstraction:
//! - **Handles, not secrets.** Callers, vaults, notes, argument variants, tokens, requestStates
//!   and prompts are small integers ([`Caller`], [`Vault`], [`Args`], [`Tok`], …); a driver maps
//!   them to real identities, paths and sealed strings. `args_hash` is a function of
//!   `(tool, args)`; a fingerprint ([`Fp`]) is "note *n* of vault *v* after *k* changes" or the
//!   empty fingerprint of a `"none"` tool.
//! - **Ticks, not seconds.** The clock advances one tick per [`Action::AdvanceClock`]; the TTL is
//!   [`ModelConfig::ttl_ticks`] ticks and an approval issued at tick `t` expires at `t + ttl`.
//! - **Applied** means the gate let the call through and the handler ran to completion with its
//!   effect (a path tool writes its note). A call that clears the gate but fails is
//!   [`Outcome::AfterGate`] at the [`Stage`] the action chose, with the token released or kept
//!   spent.
//! - **Ghost history** (runs, releases, applications with the approval's binding next to the
//!   redeeming call, drift and expiry at application time, the answers, mint evidence) is kept in
//!   the state for the properties of [`GateChecker`]; each `always` property is named by the
//!   clause ID it checks.
//!
//! No I/O, no clock, no randomness: [`GateModel::apply`] is deterministic, so tc-conformance can
//! run the same [`Action`]s against tc-gate and compare [`Outcome`]s, and the fuzzer (feature
//! `arbitrary`) can generate them.

pub mod checker;
pub mod clause;
pub mod gate;
pub mod vocab;

pub use checker::{Bounds, GateChecker, Routes};
pub use gate::{
    Application, Defects, GateModel, MintEvidence, ModelConfig, Observation, PromptRecord,
    RaisedRequest, ReleasePoint, ReleaseRecord, RequestStateMode, RequestStateRecord, Route,
    TokenKind, TokenRecord,
};
pub use vocab::{
    Action, Answer, Args, Call, Caller, Fp, FpChoice, Note, Outcome, PromptRef, Refusal,
    RefusalKind, Stage, StateRef, Targets, Tok, TokenFate, Tool, Vault, Verifier,
};
