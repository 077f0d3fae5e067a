//! The `read_notes` paging cursor (spec: `paging.cursor.signed`, `paging.cursor.bound`,
//! `paging.cursor.expiry`, `paging.cursor.refusals`; spec/paging.md).
//!
//! A cursor is not secret (it only names the last path the caller was already sent), so
//! its claims travel in the clear and are authenticated, not encrypted: HMAC-SHA256 under
//! the [`KeyPurpose::ReadNotesCursor`] key, verified in constant time. Because the claims
//! are readable once the MAC holds, a refusal can say *why*: another caller or tool
//! (`foreign`), the same caller with different arguments (`request_mismatch`), too old
//! (`expired`), or anything not made by this server (`invalid`). The checks run in that
//! order, so a cursor replayed by someone else is reported as foreign even when it has
//! also expired.
//!
//! Wire form: `c1.<body>.<tag>`, both parts base64url without padding. The body is binary
//! and length-prefixed (so no field can bleed into another):
//!
//! ```text
//! u8  version (1)
//! [16] SHA-256(caller)[..16]      [32] request digest
//! u8  tool length,  tool bytes    u16 position length, position bytes
//! u64 page          i64 issued_at_ms        i64 expires_at_ms      (all big-endian)
//! ```
//!
//! Input longer than [`MAX_CURSOR_LEN`] is refused as invalid before any decoding. That
//! limit is 8 KiB rather than 4 so that any position up to [`MAX_POSITION_LEN`] (Linux's
//! PATH_MAX, longer than any vault-relative path) always yields an acceptable cursor.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::args_hash::canonical_json_without_top_level_key;
use crate::keys::{KeyPurpose, ServerSecret};

/// How long a cursor stays valid: ten minutes.
pub const CURSOR_TTL_MS: i64 = 10 * 60 * 1000;
/// Longest cursor string accepted by [`CursorCodec::open`].
pub const MAX_CURSOR_LEN: usize = 8 * 1024;
/// Longest position (bytes) a cursor can carry.
pub const MAX_POSITION_LEN: usize = 4096;
/// Longest tool name (bytes) a cursor can carry.
pub const MAX_TOOL_LEN: usize = 255;
/// The argument that carries the cursor; left out of the request digest.
pub const CURSOR_KEY: &str = "cursor";

const PREFIX: &str = "c1.";
const VERSION: u8 = 1;
const MAC_DOMAIN: &[u8] = b"obsidian-tc/v1/read-notes-cursor/mac";
const CALLER_DIGEST_LEN: usize = 16;
const TAG_LEN: usize = 32;

type HmacSha256 = Hmac<Sha256>;

/// SHA-256 of the canonical JSON of a request's arguments without `cursor`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestDigest([u8; 32]);

impl RequestDigest {
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for RequestDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for RequestDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestDigest({self})")
    }
}

/// The digest a cursor is bound to: pass the validated, default-filled arguments.
// r[impl paging.cursor.bound]
pub fn request_digest(args: &Value) -> RequestDigest {
    let canonical = canonical_json_without_top_level_key(args, CURSOR_KEY);
    RequestDigest(Sha256::digest(canonical.as_bytes()).into())
}

fn caller_digest(caller: &str) -> [u8; CALLER_DIGEST_LEN] {
    let digest = Sha256::digest(caller.as_bytes());
    let mut out = [0u8; CALLER_DIGEST_LEN];
    out.copy_from_slice(&digest[..CALLER_DIGEST_LEN]);
    out
}

/// What a new cursor says: who may use it, for which request, and where to resume.
#[derive(Debug, Clone, Copy)]
pub struct CursorClaims<'a> {
    pub caller: &'a str,
    pub tool: &'a str,
    pub request_digest: &'a RequestDigest,
    /// The last vault-relative path emitted; the next page starts after it.
    pub position: &'a str,
    /// How many pages came before the one this cursor resumes (informational).
    pub page: u64,
}

/// Where to resume, from a cursor that verified and matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorPosition {
    pub position: String,
    pub page: u64,
    pub issued_at_ms: i64,
    pub expires_at_ms: i64,
}

/// Why a cursor was refused; `reason()` is `details.reason` of the `invalid_input` error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    #[error("the cursor has expired (cursors last ten minutes); repeat the request without cursor")]
    Expired,
    #[error(
        "the cursor was not issued by this server or was altered; repeat the request without cursor"
    )]
    Invalid,
    #[error("the cursor was issued to another caller or for another tool")]
    Foreign,
    #[error(
        "the cursor belongs to a different request; repeat the same arguments, or start again without cursor"
    )]
    RequestMismatch,
}

impl CursorError {
    // r[impl paging.cursor.refusals]
    pub fn reason(self) -> &'static str {
        match self {
            CursorError::Expired => "expired",
            CursorError::Invalid => "invalid",
            CursorError::Foreign => "foreign",
            CursorError::RequestMismatch => "request_mismatch",
        }
    }
}

/// Claims that cannot be put in a cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CursorSealError {
    #[error(
        "the cursor position is {len} bytes, more than the {MAX_POSITION_LEN} a cursor carries"
    )]
    PositionTooLong { len: usize },
    #[error("the tool name is {len} bytes, more than the {MAX_TOOL_LEN} a cursor carries")]
    ToolTooLong { len: usize },
}

/// Signs and verifies `read_notes` cursors under the server secret's cursor key.
pub struct CursorCodec {
    key: [u8; 32],
}

impl fmt::Debug for CursorCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CursorCodec")
            .field("key", &"<redacted>")
            .finish()
    }
}

impl CursorCodec {
    // r[impl paging.cursor.signed]
    pub fn new(secret: &ServerSecret) -> Self {
        Self {
            key: *secret.derive(KeyPurpose::ReadNotesCursor).as_bytes(),
        }
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC takes keys of any length; a 32-byte key is always accepted.
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC accepts 32-byte keys");
        mac.update(MAC_DOMAIN);
        mac
    }

    /// A cursor for `claims`, valid for [`CURSOR_TTL_MS`] from `now_ms`.
    // r[impl paging.cursor.expiry]
    pub fn seal(&self, claims: &CursorClaims<'_>, now_ms: i64) -> Result<String, CursorSealError> {
        if claims.position.len() > MAX_POSITION_LEN {
            return Err(CursorSealError::PositionTooLong {
                len: claims.position.len(),
            });
        }
        let tool_len =
            u8::try_from(claims.tool.len()).map_err(|_| CursorSealError::ToolTooLong {
                len: claims.tool.len(),
            })?;
        let position_len =
            u16::try_from(claims.position.len()).map_err(|_| CursorSealError::PositionTooLong {
                len: claims.position.len(),
            })?;
        let mut body = Vec::with_capacity(
            1 + CALLER_DIGEST_LEN + 32 + 1 + claims.tool.len() + 2 + claims.position.len() + 24,
        );
        body.push(VERSION);
        body.extend_from_slice(&caller_digest(claims.caller));
        body.extend_from_slice(claims.request_digest.as_bytes());
        body.push(tool_len);
        body.extend_from_slice(claims.tool.as_bytes());
        body.extend_from_slice(&position_len.to_be_bytes());
        body.extend_from_slice(claims.position.as_bytes());
        body.extend_from_slice(&claims.page.to_be_bytes());
        body.extend_from_slice(&now_ms.to_be_bytes());
        body.extend_from_slice(&now_ms.saturating_add(CURSOR_TTL_MS).to_be_bytes());
        let mut mac = self.mac();
        mac.update(&body);
        let tag = mac.finalize().into_bytes();
        let mut token = String::with_capacity(PREFIX.len() + (body.len() + TAG_LEN) * 4 / 3 + 4);
        token.push_str(PREFIX);
        URL_SAFE_NO_PAD.encode_string(&body, &mut token);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(tag.as_slice(), &mut token);
        Ok(token)
    }

    /// Verifies `token` and checks it belongs to this caller, tool and request and is not
    /// expired at `now_ms`. Accepts any string.
    // r[impl paging.cursor.refusals]
    pub fn open(
        &self,
        token: &str,
        caller: &str,
        tool: &str,
        request_digest: &RequestDigest,
        now_ms: i64,
    ) -> Result<CursorPosition, CursorError> {
        if token.len() > MAX_CURSOR_LEN {
            return Err(CursorError::Invalid);
        }
        let rest = token.strip_prefix(PREFIX).ok_or(CursorError::Invalid)?;
        let (body_b64, tag_b64) = rest.split_once('.').ok_or(CursorError::Invalid)?;
        let body = URL_SAFE_NO_PAD
            .decode(body_b64)
            .map_err(|_| CursorError::Invalid)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag_b64)
            .map_err(|_| CursorError::Invalid)?;
        let mut mac = self.mac();
        mac.update(&body);
        mac.verify_slice(&tag).map_err(|_| CursorError::Invalid)?;

        // Authentic from here on; the parse still never trusts a length blindly.
        let claims = Body::parse(&body).ok_or(CursorError::Invalid)?;
        if claims.caller_digest != caller_digest(caller) || claims.tool != tool.as_bytes() {
            return Err(CursorError::Foreign);
        }
        if claims.request_digest != request_digest.as_bytes() {
            return Err(CursorError::RequestMismatch);
        }
        if now_ms >= claims.expires_at_ms {
            return Err(CursorError::Expired);
        }
        let position =
            String::from_utf8(claims.position.to_vec()).map_err(|_| CursorError::Invalid)?;
        Ok(CursorPosition {
            position,
            page: claims.page,
            issued_at_ms: claims.issued_at_ms,
            expires_at_ms: claims.expires_at_ms,
        })
    }
}

/// A borrowed view of a verified body.
struct Body<'a> {
    caller_digest: &'a [u8],
    request_digest: &'a [u8],
    tool: &'a [u8],
    position: &'a [u8],
    page: u64,
    issued_at_ms: i64,
    expires_at_ms: i64,
}

impl<'a> Body<'a> {
    fn parse(bytes: &'a [u8]) -> Option<Self> {
        let mut reader = Reader(bytes);
        if reader.take(1)? != [VERSION] {
            return None;
        }
        let caller_digest = reader.take(CALLER_DIGEST_LEN)?;
        let request_digest = reader.take(32)?;
        let tool_len = usize::from(reader.take(1)?[0]);
        let tool = reader.take(tool_len)?;
        let position_len = usize::from(u16::from_be_bytes(reader.array()?));
        let position = reader.take(position_len)?;
        let page = u64::from_be_bytes(reader.array()?);
        let issued_at_ms = i64::from_be_bytes(reader.array()?);
        let expires_at_ms = i64::from_be_bytes(reader.array()?);
        if !reader.0.is_empty() {
            return None;
        }
        Some(Self {
            caller_digest,
            request_digest,
            tool,
            position,
            page,
            issued_at_ms,
            expires_at_ms,
        })
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        if self.0.len() < len {
            return None;
        }
        let (head, tail) = self.0.split_at(len);
        self.0 = tail;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }
}
