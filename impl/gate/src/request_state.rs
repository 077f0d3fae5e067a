//! The SEP-2260/2322 `requestState` of the confirmation round trip (spec/state.md:
//! `state.seal.aad`, `state.ttl`, `state.shared-cachedir`, `state.delete-voids`,
//! `state.upgrade-refuse-once`, `state.key.*`).
//!
//! Sealed with rmcp's [`RequestStateCodec`] under the [`KeyPurpose::RequestState`] key, as
//! an `rs2` value with key id [`STATE_KEY_ID`]. The caller, vault, tool, args_hash and
//! state_fp are the associated data: authenticated, not stored, so a state opens only for
//! the exact binding it was sealed for (a mismatch is indistinguishable from a forgery, by
//! design). The signed payload carries a random [`StateId`] (the key of the opt-in
//! single-use table, kept by the store) and the issue and expiry times.
//!
//! Time: rmcp stamps and checks its own TTL with the wall clock, which tests cannot steer.
//! So the exact expiry is ours: `expires_at_ms = now_ms + ttl_ms` from the gate's
//! [`Clock`](crate::clock::Clock), signed in the payload and checked against the `now_ms`
//! given to [`RequestStateSealer::open`]. rmcp's wall-clock TTL stays on as a backstop, set
//! [`WALL_CLOCK_SLACK_MS`] longer, so a wrong injected clock can never keep a state alive
//! for long, while a test on a `ManualClock` is decided by the manual time alone.
//!
//! Upgrade: a state minted before this keying was keyed from `auth.jwtSecret`. Since no
//! earlier release of ours exists, that format is defined here as rmcp's `rs2` envelope
//! with the key id [`LEGACY_KEY_ID`] (`"jwt"`). Such a state is refused as
//! [`StateError::LegacyKeyed`] without any attempt to verify it (no dual-key verify: that
//! would keep the old coupling alive); the server answers with a fresh confirmation, and
//! the next state it sees is ours, so the refusal happens once.
//!
//! Nothing here panics on input: oversized values are refused before decoding, and every
//! decoding and verification failure is a typed [`StateError`].

use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde::{Deserialize, Serialize};

use crate::clock::Entropy;
use crate::keys::{KeyPurpose, ServerSecret};

/// The rmcp key id of states keyed from the server secret.
pub const STATE_KEY_ID: &str = "tc1";
/// The key id that marks a state keyed the pre-upgrade way (from `auth.jwtSecret`).
pub const LEGACY_KEY_ID: &str = "jwt";
/// Longest `requestState` accepted; ours are about 200 bytes. Longer input is refused
/// before any decoding, so a hostile client cannot make the server base64-decode megabytes.
pub const MAX_STATE_LEN: usize = 4096;
/// How much longer rmcp's wall-clock TTL is than ours (see the module notes).
pub const WALL_CLOCK_SLACK_MS: u64 = 60_000;

const PAYLOAD_VERSION: u8 = 1;
const AAD_DOMAIN: &[u8] = b"obsidian-tc/v1/request-state/binding";
const STATE_ID_BYTES: usize = 16;
/// Separates the approved fingerprint from the seal in a presented requestState.
const PRESENTED_SEPARATOR: char = '~';

// r[impl drift.every-route]
/// The requestState a client is given: the approved `state_fp` in clear, then the seal.
///
/// The fingerprint is associated data of the seal (authenticated, not stored), so the server
/// must present it again to open the state. Carrying it beside the seal lets a state whose
/// target changed open under its own fingerprint and be answered `replay_drift`, instead of
/// failing like a forgery once its raised request was superseded. It is not secret
/// (`elicit_required` shows it) and cannot be altered: another fingerprint does not open.
pub fn present(state_fp: &str, sealed: &str) -> String {
    format!("{state_fp}{PRESENTED_SEPARATOR}{sealed}")
}

/// Splits a presented requestState into the fingerprint it claims (`None` when it carries
/// none) and the sealed value. Neither part contains the separator.
pub fn split_presented(presented: &str) -> (Option<&str>, &str) {
    match presented.split_once(PRESENTED_SEPARATOR) {
        Some((state_fp, sealed)) => (Some(state_fp), sealed),
        None => (None, presented),
    }
}

/// What a state is bound to; all five fields are associated data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateBinding<'a> {
    pub caller: &'a str,
    pub vault: &'a str,
    pub tool: &'a str,
    pub args_hash: &'a str,
    pub state_fp: &'a str,
}

impl StateBinding<'_> {
    /// The associated data: a domain label, then each field as a big-endian u64 length
    /// and its bytes, in a fixed order, so no two bindings encode alike.
    // r[impl state.seal.aad]
    pub fn associated_data(&self) -> Vec<u8> {
        let fields = [
            self.caller,
            self.vault,
            self.tool,
            self.args_hash,
            self.state_fp,
        ];
        let len: usize = fields.iter().map(|f| 8 + f.len()).sum();
        let mut out = Vec::with_capacity(AAD_DOMAIN.len() + len);
        out.extend_from_slice(AAD_DOMAIN);
        for field in fields {
            out.extend_from_slice(&(field.len() as u64).to_be_bytes());
            out.extend_from_slice(field.as_bytes());
        }
        out
    }
}

/// The random id inside a state (128 bits, 32 lowercase hex), for the single-use extension.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct StateId(String);

impl StateId {
    fn random(entropy: &dyn Entropy) -> Self {
        let mut bytes = [0u8; STATE_ID_BYTES];
        entropy.fill(&mut bytes);
        Self(hex::encode(bytes))
    }

    /// Accepts exactly 32 lowercase hex digits.
    pub fn parse(text: &str) -> Result<Self, StateError> {
        let well_formed = text.len() == 2 * STATE_ID_BYTES
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if well_formed {
            Ok(Self(text.to_owned()))
        } else {
            Err(StateError::Invalid)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for StateId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for StateId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StateId({})", self.0)
    }
}

impl TryFrom<String> for StateId {
    type Error = StateError;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        Self::parse(&text)
    }
}

impl From<StateId> for String {
    fn from(id: StateId) -> Self {
        id.0
    }
}

/// A freshly sealed state. `token` is the `requestState` string sent to the client.
#[derive(Clone, PartialEq, Eq)]
pub struct SealedState {
    pub token: String,
    pub id: StateId,
    pub expires_at_ms: i64,
}

impl fmt::Debug for SealedState {
    // The token is a bearer credential within its TTL; keep it out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealedState")
            .field("token", &"<redacted>")
            .field("id", &self.id)
            .field("expires_at_ms", &self.expires_at_ms)
            .finish()
    }
}

/// What a verified state says. Authentic only: whether the human approved is the answer's
/// business, checked separately.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenedState {
    pub id: StateId,
    pub issued_at_ms: i64,
    pub expires_at_ms: i64,
}

/// Why a `requestState` was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Forged, tampered, garbage, too long, sealed under another key (another cacheDir, a
    /// deleted and regenerated secret), or for another binding.
    #[error("the requestState is not valid for this call; ask for a fresh confirmation")]
    Invalid,
    /// Authentic, but its TTL has passed.
    #[error("the requestState has expired; ask for a fresh confirmation")]
    Expired,
    /// In the pre-upgrade format keyed from auth.jwtSecret; refused without verification.
    #[error(
        "the requestState was keyed the pre-upgrade way (from auth.jwtSecret) and is no longer accepted; ask for a fresh confirmation"
    )]
    LegacyKeyed,
}

impl StateError {
    /// A short stable name for metrics and events.
    pub fn reason(self) -> &'static str {
        match self {
            StateError::Invalid => "invalid",
            StateError::Expired => "expired",
            StateError::LegacyKeyed => "legacy_keyed",
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Payload {
    v: u8,
    id: StateId,
    iat: i64,
    exp: i64,
}

/// Seals and opens `requestState` values under the server secret's request-state key.
pub struct RequestStateSealer {
    codec: RequestStateCodec,
}

impl fmt::Debug for RequestStateSealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestStateSealer")
            .field("key_id", &STATE_KEY_ID)
            .field("key", &"<redacted>")
            .finish()
    }
}

impl RequestStateSealer {
    // r[impl state.key.hkdf-label]
    pub fn new(secret: &ServerSecret) -> Self {
        let key = secret.derive(KeyPurpose::RequestState);
        // A 32-byte key under a constant, non-empty key id always forms a valid keyring.
        let codec = RequestStateCodec::new_with_keyring(
            STATE_KEY_ID,
            [(STATE_KEY_ID, key.as_bytes().to_vec())],
        )
        .expect("a 32-byte key under a valid key id is a valid keyring");
        Self { codec }
    }

    /// Seals a state for `binding` that expires `ttl_ms` after `now_ms`.
    // r[impl state.seal.aad]
    // r[impl state.ttl]
    pub fn seal(
        &self,
        binding: &StateBinding<'_>,
        ttl_ms: u64,
        now_ms: i64,
        entropy: &dyn Entropy,
    ) -> SealedState {
        let id = StateId::random(entropy);
        let expires_at_ms = now_ms.saturating_add(i64::try_from(ttl_ms).unwrap_or(i64::MAX));
        let payload = Payload {
            v: PAYLOAD_VERSION,
            id: id.clone(),
            iat: now_ms,
            exp: expires_at_ms,
        };
        // Serializing four plain fields to JSON cannot fail; an empty payload would be
        // refused on open, never accepted.
        let bytes = serde_json::to_vec(&payload).unwrap_or_default();
        let aad = binding.associated_data();
        let wall_ttl = Duration::from_millis(ttl_ms.saturating_add(WALL_CLOCK_SLACK_MS));
        let token = self.codec.seal_with(
            &bytes,
            &SealOptions::new().associated_data(&aad).ttl(wall_ttl),
        );
        SealedState {
            token,
            id,
            expires_at_ms,
        }
    }

    /// Verifies `token` for `binding` at `now_ms`. Accepts any string.
    pub fn open(
        &self,
        token: &str,
        binding: &StateBinding<'_>,
        now_ms: i64,
    ) -> Result<OpenedState, StateError> {
        if token.len() > MAX_STATE_LEN {
            return Err(StateError::Invalid);
        }
        let aad = binding.associated_data();
        let bytes = match self.codec.open_with(token, &aad) {
            Ok(bytes) => bytes,
            Err(RequestStateError::Expired) => return Err(StateError::Expired),
            Err(RequestStateError::UnknownKeyId) if is_legacy_envelope(token) => {
                return Err(StateError::LegacyKeyed);
            }
            Err(_) => return Err(StateError::Invalid),
        };
        let payload: Payload = serde_json::from_slice(&bytes).map_err(|_| StateError::Invalid)?;
        if payload.v != PAYLOAD_VERSION || payload.exp < payload.iat {
            return Err(StateError::Invalid);
        }
        if now_ms >= payload.exp {
            return Err(StateError::Expired);
        }
        Ok(OpenedState {
            id: payload.id,
            issued_at_ms: payload.iat,
            expires_at_ms: payload.exp,
        })
    }
}

/// A well-formed rmcp `rs2` envelope whose key id is [`LEGACY_KEY_ID`]: the pre-upgrade
/// format. Structure only; nothing in it is (or can be) verified.
// r[impl state.upgrade-refuse-once]
fn is_legacy_envelope(token: &str) -> bool {
    let mut parts = token.split('.');
    let (Some("rs2"), Some(kid), Some(body), Some(tag), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return false;
    };
    let decodes = |text: &str| URL_SAFE_NO_PAD.decode(text).ok();
    decodes(kid).is_some_and(|kid| kid == LEGACY_KEY_ID.as_bytes())
        && decodes(body).is_some_and(|body| body.len() >= 8)
        && decodes(tag).is_some_and(|tag| tag.len() == 32)
}
