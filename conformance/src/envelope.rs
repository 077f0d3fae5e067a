//! How the harness carries a requestState's fingerprint to the redemption (spec/state.md
//! state.seal.aad; spec/drift.md drift.every-route, drift.refuse).
//!
//! tc-gate seals a requestState with the caller, vault, tool, args_hash *and state_fp* as
//! associated data: authenticated, not stored. To open it, the server must present the same
//! five values. The first four come with the resubmitted call; the fingerprint does not. If the
//! server opened with the *current* fingerprint, a state whose target changed would simply not
//! open, indistinguishable from a forgery, and the client would get a fresh confirmation instead
//! of `replay_drift` (the model, and drift.every-route, say `replay_drift`). Looking the
//! fingerprint up in the raised request fails as soon as a newer raise superseded it or the
//! raise was swept.
//!
//! tc-gate's [`present`] and [`split_presented`] carry the fingerprint in clear next to the
//! seal (`<state_fp>~<sealed>`); the harness, playing the server, uses them as tc-server does and
//! only adds the parsing of the fingerprint.

use tc_gate::StateFp;
use tc_gate::request_state::{present, split_presented};

/// The requestState sent to the client.
pub fn wrap(state_fp: &StateFp, sealed: &str) -> String {
    present(state_fp.as_str(), sealed)
}

/// Splits a presented requestState into the fingerprint it claims and the sealed value.
/// `None` when it is not of that shape (it then cannot be one of ours).
pub fn unwrap(presented: &str) -> Option<(StateFp, &str)> {
    let (fp, sealed) = split_presented(presented);
    Some((StateFp::parse(fp?).ok()?, sealed))
}
