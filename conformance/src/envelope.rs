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
//! So the harness, playing the server, sends the fingerprint in clear next to the sealed value:
//! `<state_fp>~<sealed>`. It is not secret (elicit_required already shows it), and it cannot be
//! altered: it is associated data of the seal, so a state presented with another fingerprint
//! does not open. tc-gate (or tc-server) should adopt this or an equivalent; see the
//! conformance report.

use tc_gate::StateFp;

/// Separates the fingerprint from the sealed value; neither contains it.
const SEPARATOR: char = '~';

/// The requestState string sent to the client.
pub fn wrap(state_fp: &StateFp, sealed: &str) -> String {
    format!("{}{SEPARATOR}{sealed}", state_fp.as_str())
}

/// Splits a presented requestState into the fingerprint it claims and the sealed value.
/// `None` when it is not of that shape (it then cannot be one of ours).
pub fn unwrap(presented: &str) -> Option<(StateFp, &str)> {
    let (fp, sealed) = presented.split_once(SEPARATOR)?;
    let fp = StateFp::parse(fp).ok()?;
    Some((fp, sealed))
}
