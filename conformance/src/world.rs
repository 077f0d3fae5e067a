//! The world around the gate as the harness stages it: the model's small handles mapped to the
//! real strings tc-gate sees, and the notes whose content
//! the confirmation targets fingerprint (spec/drift.md: drift.path-fingerprint,
//! drift.none-empty; gate.hash.args-hash).
//!
//! - `Caller(n)` is the caller `"c<n>"`, `Vault(n)` the vault `"v<n>"`.
//! - A call of tool `t` with `Args(n)` has the arguments `{"args": n}`, so its args_hash is
//!   `tc_gate::args_hash::args_hash(t, {"args": n})`: two calls share an approval exactly when
//!   tool and `Args` agree, as the model assumes.
//! - `Note(n)` of any vault is the vault-relative path `"n<n>.md"`. Its content after `k`
//!   changes is a text naming vault, note and `k`; version 0 is "no such note yet", so the
//!   missing-note state of a fingerprint is exercised too.

use serde_json::json;
use sha2::{Digest, Sha256};
use tc_gate::{CallBinding, StateFp, fingerprint_custom, fingerprint_targets};
use tc_model::{Call, Caller, Note, Tool, Vault};

/// The real strings of one model [`Call`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RealCall {
    pub vault: String,
    pub tool: &'static str,
    pub args_hash: String,
    pub caller: String,
}

impl RealCall {
    pub fn of(call: &Call) -> Self {
        RealCall {
            vault: vault_id(call.vault),
            tool: call.tool.name(),
            args_hash: args_hash_of(call.tool, call.args.0),
            caller: caller_id(call.caller),
        }
    }

    pub fn binding(&self) -> CallBinding<'_> {
        CallBinding {
            vault: &self.vault,
            tool: self.tool,
            args_hash: &self.args_hash,
            caller: &self.caller,
        }
    }
}

pub fn caller_id(caller: Caller) -> String {
    format!("c{}", caller.0)
}

pub fn vault_id(vault: Vault) -> String {
    format!("v{}", vault.0)
}

/// The args_hash of `tool` called with the argument variant `args`.
pub fn args_hash_of(tool: Tool, args: u8) -> String {
    tc_gate::args_hash::args_hash(tool.name(), &json!({ "args": args }))
        .as_str()
        .to_owned()
}

/// The vault-relative path of a note.
pub fn note_path(note: Note) -> String {
    format!("n{}.md", note.0)
}

/// The content hash of a note after `version` changes; `None` before its first write.
pub fn content_hash(vault: Vault, note: Note, version: u8) -> Option<String> {
    (version > 0).then(|| {
        let content = format!("vault {} note {} version {}", vault.0, note.0, version);
        hex::encode(Sha256::digest(content.as_bytes()))
    })
}

/// What the tool's confirmation targets fingerprint to when its note has `version`: the
/// note's path with its content hash for a path tool, the empty fingerprint for a `"none"`
/// tool.
pub fn target_fp(call: &Call, version: u8) -> StateFp {
    match call.target() {
        None => StateFp::none(),
        Some((vault, note)) => {
            fingerprint_targets(&[(note_path(note), content_hash(vault, note, version))])
        }
    }
}

/// A well-formed fingerprint that no raise ever records: what a driver passes as
/// `--state-fp` for a fingerprint that was never stored.
pub fn never_stored_fp() -> StateFp {
    fingerprint_custom(&[b"tc-conformance: a fingerprint no request recorded"])
}
