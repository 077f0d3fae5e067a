//! The clause IDs (from `coord/CORE_IDS.md`, restated in `spec/*.md`) that the model's refusals
//! and properties name.
//!
//! These mirror the consts tc-spec generates from `spec/*.md` (ID uppercased, `.` and `-` → `_`),
//! spelled out here while that generator is not yet in place; once `tc_spec::GATE_TOKEN_SINGLE_USE`
//! and its siblings exist, this module should re-export them instead so that a renamed clause
//! breaks the build here.

pub const GATE_RAISE_SUPERSEDE: &str = "gate.raise.supersede";
pub const GATE_TOKEN_BOUND: &str = "gate.token.bound";
pub const GATE_TOKEN_STATE_BOUND: &str = "gate.token.state-bound";
pub const GATE_TOKEN_SINGLE_USE: &str = "gate.token.single-use";
pub const GATE_TOKEN_CHECK_BEFORE_CONSUME: &str = "gate.token.check-before-consume";
pub const GATE_TOKEN_EXPIRED: &str = "gate.token.expired";
pub const GATE_TOKEN_UNBOUND_LIBRARY: &str = "gate.token.unbound-library";
pub const CLI_ELICIT_REQUIRES_RAISE: &str = "cli.elicit.requires-raise";
pub const CLI_ELICIT_STATE_FP: &str = "cli.elicit.state-fp";
pub const RELEASE_NO_EFFECT_ONLY: &str = "release.no-effect-only";
pub const RELEASE_ACL: &str = "release.acl";
pub const RELEASE_CANCEL: &str = "release.cancel";
pub const RELEASE_CONVENTION: &str = "release.convention";
pub const RELEASE_KEEPS_SPENT: &str = "release.keeps-spent";
pub const RELEASE_RESTORES: &str = "release.restores";
pub const RELEASE_CUSTOM_VERIFIER: &str = "release.custom-verifier";
pub const RELEASE_BUILTIN_VERIFIER: &str = "release.builtin-verifier";
pub const DRIFT_REFUSE: &str = "drift.refuse";
pub const DRIFT_TOKEN_SPENT: &str = "drift.token-spent";
pub const DRIFT_EVERY_ROUTE: &str = "drift.every-route";
pub const APPROVAL_BOUND: &str = "approval.bound";
pub const APPROVAL_EXPIRY: &str = "approval.expiry";
pub const STATE_SEAL_AAD: &str = "state.seal.aad";
pub const STATE_TTL: &str = "state.ttl";
pub const STATE_REPLAYABLE: &str = "state.replayable";
pub const STATE_EXT_SINGLE_USE: &str = "state.ext.single-use";
pub const TRIP_ACCEPT_ONLY: &str = "trip.accept-only";
pub const TRIP_DECLINE: &str = "trip.decline";
pub const TRIP_CANCEL: &str = "trip.cancel";
pub const TRIP_NEVER_TWICE: &str = "trip.never-twice";
