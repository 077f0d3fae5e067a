//! What a confirmation is about: the state fingerprint (clauses drift.targets-declared,
//! drift.startup-refusal, gate.token.state-bound; seed "Stale confirmations are refused").
//!
//! Every gated tool declares its confirmation targets: the paths of its folder-ACL
//! declaration (`PathAcl`), a custom fingerprint function (`Custom`), or nothing (`None`,
//! for tools whose effects the server cannot observe). The fingerprint recorded when a
//! request is raised is compared with the one recomputed at redemption; any difference is
//! drift.

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use crate::keys::{KeyPurpose, ServerSecret};

/// Hex digits kept from the SHA-256 of a fingerprint (128 bits, like args_hash).
const FP_HEX_LEN: usize = 32;

/// Domain tags so a path-target fingerprint can never equal a custom one by construction.
const TAG_PATHS: &[u8] = b"tc-gate/state-fp/paths/v1";
const TAG_CUSTOM: &[u8] = b"tc-gate/state-fp/custom/v1";
/// The MAC's domain, so this key's tags can be mistaken for no other use of HMAC.
const TAG_KEYED: &[u8] = b"tc-gate/state-fp/keyed/v1";

/// The fingerprint of a confirmation's targets: 32 lowercase hex digits, or the empty
/// string for tools that declare `confirmationTargets: "none"`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct StateFp(String);

impl StateFp {
    /// The fingerprint of a tool that binds on nothing but its arguments.
    pub fn none() -> Self {
        StateFp(String::new())
    }

    /// Whether this is the empty fingerprint of a `"none"` tool.
    pub fn is_none(&self) -> bool {
        self.0.is_empty()
    }

    /// Parses a fingerprint as carried in `elicit_required` details or `--state-fp`.
    pub fn parse(text: &str) -> Result<Self, InvalidStateFp> {
        let well_formed = text.is_empty()
            || (text.len() == FP_HEX_LEN
                && text
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        if well_formed {
            Ok(StateFp(text.to_owned()))
        } else {
            Err(InvalidStateFp)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn from_digest(hasher: Sha256) -> Self {
        let mut hex = hex::encode(hasher.finalize());
        hex.truncate(FP_HEX_LEN);
        StateFp(hex)
    }
}

impl fmt::Debug for StateFp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StateFp({:?})", self.0)
    }
}

impl fmt::Display for StateFp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A fingerprint that is neither empty nor 32 lowercase hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a state fingerprint is empty or 32 lowercase hex digits")]
pub struct InvalidStateFp;

fn absorb_len_prefixed(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_be_bytes());
    hasher.update(bytes);
}

/// Fingerprints path targets: each `(path, content hash)`, with `None` for a file that does
/// not exist (a missing file is a state too, so a note appearing is drift). Order-independent
/// and length-prefixed, so no two different target sets share an encoding.
pub fn fingerprint_targets(targets: &[(String, Option<String>)]) -> StateFp {
    let mut sorted: Vec<&(String, Option<String>)> = targets.iter().collect();
    sorted.sort();
    sorted.dedup();
    let mut hasher = Sha256::new();
    absorb_len_prefixed(&mut hasher, TAG_PATHS);
    hasher.update((sorted.len() as u64).to_be_bytes());
    for (path, content_hash) in sorted {
        absorb_len_prefixed(&mut hasher, path.as_bytes());
        match content_hash {
            None => hasher.update([0u8]),
            Some(hash) => {
                hasher.update([1u8]);
                absorb_len_prefixed(&mut hasher, hash.as_bytes());
            }
        }
    }
    StateFp::from_digest(hasher)
}

/// Fingerprints the parts a custom `confirmationTargets` function gathered (for example
/// HEAD and the staged index for git_commit). The order of `parts` is significant: the
/// function decides it.
pub fn fingerprint_custom(parts: &[&[u8]]) -> StateFp {
    let mut hasher = Sha256::new();
    absorb_len_prefixed(&mut hasher, TAG_CUSTOM);
    hasher.update((parts.len() as u64).to_be_bytes());
    for part in parts {
        absorb_len_prefixed(&mut hasher, part);
    }
    StateFp::from_digest(hasher)
}

// r[impl drift.fingerprint-keyed]
/// The server's key for the fingerprints it shows. A tool's own fingerprint is a plain
/// SHA-256 of what it observed, content hashes included, so shown as it is it would let a
/// caller that may not read a target test guesses of the target's content offline; keyed,
/// it says only whether two states differ, to those who hold the server secret.
pub struct FingerprintKey {
    key: [u8; 32],
}

impl fmt::Debug for FingerprintKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FingerprintKey")
            .field("key", &"<redacted>")
            .finish()
    }
}

impl FingerprintKey {
    /// The key derived from the server secret for [`KeyPurpose::StateFingerprint`].
    pub fn new(secret: &ServerSecret) -> Self {
        Self {
            key: *secret.derive(KeyPurpose::StateFingerprint).as_bytes(),
        }
    }

    /// The fingerprint shown for `raw`, a tool's own; the empty fingerprint stays empty.
    pub fn key(&self, raw: &StateFp) -> StateFp {
        if raw.is_none() {
            return StateFp::none();
        }
        // HMAC takes keys of any length; a 32-byte key is always accepted.
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC accepts 32-byte keys");
        mac.update(TAG_KEYED);
        mac.update(raw.as_str().as_bytes());
        let mut hex = hex::encode(mac.finalize().into_bytes());
        hex.truncate(FP_HEX_LEN);
        StateFp(hex)
    }
}

/// What a gated tool declares its confirmation to be about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConfirmationTargets {
    /// The target paths the tool declares for the folder ACL, with their content.
    PathAcl,
    /// A fingerprint function of the tool's own (see [`fingerprint_custom`]).
    Custom,
    /// Nothing the server can observe: binds on args_hash alone (empty fingerprint).
    None,
}

/// A gated tool registered without a declaration of what its confirmation is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error(
        "gated tool `{tool}` declares neither pathAcl targets nor confirmationTargets; \
         declare what its confirmation is about (use \"none\" only for effects the server cannot observe)"
    )]
    MissingConfirmationTargets { tool: String },
}

/// The start-up check every HITL-gated tool passes through: a gated tool must say what its
/// confirmation is bound to, so none can silently bind on its arguments alone.
pub fn validate_gated_tool(
    name: &str,
    targets: Option<&ConfirmationTargets>,
) -> Result<(), RegistryError> {
    match targets {
        Some(_) => Ok(()),
        None => Err(RegistryError::MissingConfirmationTargets {
            tool: name.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // r[verify drift.fingerprint-keyed]
    #[test]
    fn a_keyed_fingerprint_is_stable_per_secret_and_unlike_the_raw_one() {
        use crate::clock::SeededEntropy;
        let secret = ServerSecret::ephemeral(&SeededEntropy::new(1));
        let other = ServerSecret::ephemeral(&SeededEntropy::new(2));
        let raw = fingerprint_targets(&[("a.md".to_owned(), Some("h".to_owned()))]);
        let keyed = FingerprintKey::new(&secret).key(&raw);
        assert_ne!(keyed, raw, "the raw SHA-256 is never shown");
        assert_eq!(StateFp::parse(keyed.as_str()), Ok(keyed.clone()));
        assert_eq!(
            keyed,
            FingerprintKey::new(&ServerSecret::ephemeral(&SeededEntropy::new(1))).key(&raw),
            "servers on one secret agree"
        );
        assert_ne!(keyed, FingerprintKey::new(&other).key(&raw));
        let changed = fingerprint_targets(&[("a.md".to_owned(), Some("i".to_owned()))]);
        assert_ne!(keyed, FingerprintKey::new(&secret).key(&changed));
        assert!(FingerprintKey::new(&secret).key(&StateFp::none()).is_none());
        assert!(
            !format!("{:?}", FingerprintKey::new(&secret)).contains(&hex::encode(
                secret.derive(KeyPurpose::StateFingerprint).as_bytes()
            ))
        );
    }

    // The printed `--state-fp` and the details of `elicit_required` are this text: an empty
    // or wrong rendering would print a command that approves nothing.
    #[test]
    fn a_fingerprint_renders_as_its_hex_and_only_none_is_none() {
        let hex = "0123456789abcdef0123456789abcdef";
        let fp = StateFp::parse(hex).unwrap();
        assert!(!fp.is_none());
        assert!(StateFp::none().is_none());
        assert_eq!(fp.to_string(), hex);
        assert_eq!(format!("{fp:?}"), format!("StateFp({hex:?})"));
        assert_eq!(StateFp::none().to_string(), "");
    }
}
