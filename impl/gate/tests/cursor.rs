//! The read_notes cursor codec (spec: `paging.cursor.*`).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use proptest::prelude::*;
use serde_json::json;
use tc_gate::clock::{Clock, ManualClock, OsEntropy, SeededEntropy};
use tc_gate::cursor::{
    CURSOR_TTL_MS, CursorClaims, CursorCodec, CursorError, CursorSealError, MAX_CURSOR_LEN,
    MAX_POSITION_LEN, request_digest,
};
use tc_gate::keys::ServerSecret;
use tc_gate::request_state::{RequestStateSealer, StateBinding};

const T0: i64 = 1_800_000_000_000;

fn codec(seed: u64) -> CursorCodec {
    CursorCodec::new(&ServerSecret::ephemeral(&SeededEntropy::new(seed)))
}

fn request() -> serde_json::Value {
    json!({"vault": "main", "folder": "projects", "recursive": true})
}

fn seal(codec: &CursorCodec, caller: &str, position: &str, now: i64) -> String {
    let digest = request_digest(&request());
    let claims = CursorClaims {
        caller,
        tool: "read_notes",
        request_digest: &digest,
        position,
        page: 3,
    };
    codec
        .seal(&claims, now)
        .unwrap_or_else(|error| panic!("seal: {error}"))
}

fn open(codec: &CursorCodec, token: &str, caller: &str, now: i64) -> Result<String, CursorError> {
    codec
        .open(
            token,
            caller,
            "read_notes",
            &request_digest(&request()),
            now,
        )
        .map(|p| p.position)
}

// r[verify paging.cursor.signed]
#[test]
fn round_trip_returns_the_position() {
    let codec = codec(1);
    let token = seal(&codec, "alice", "projects/b/ünï 📝.md", T0);
    assert!(token.starts_with("c1."));
    let opened = codec.open(
        &token,
        "alice",
        "read_notes",
        &request_digest(&request()),
        T0 + 1,
    );
    let opened = opened.unwrap_or_else(|error| panic!("open: {error}"));
    assert_eq!(opened.position, "projects/b/ünï 📝.md");
    assert_eq!(opened.page, 3);
    assert_eq!(opened.issued_at_ms, T0);
    assert_eq!(opened.expires_at_ms, T0 + CURSOR_TTL_MS);
    assert!(
        token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    );
}

// r[verify paging.cursor.bound]
// r[verify paging.cursor.refusals]
#[test]
fn another_caller_is_foreign() {
    let codec = codec(1);
    let token = seal(&codec, "alice", "a.md", T0);
    assert_eq!(open(&codec, &token, "bob", T0), Err(CursorError::Foreign));
    assert_eq!(CursorError::Foreign.reason(), "foreign");
}

// r[verify paging.cursor.bound]
// r[verify paging.cursor.refusals]
#[test]
fn another_tool_is_foreign() {
    let codec = codec(1);
    let token = seal(&codec, "alice", "a.md", T0);
    let other_tool = codec.open(
        &token,
        "alice",
        "list_notes",
        &request_digest(&request()),
        T0,
    );
    assert_eq!(other_tool.map(|p| p.position), Err(CursorError::Foreign));
}

// r[verify paging.cursor.bound]
// r[verify paging.cursor.refusals]
#[test]
fn other_arguments_are_a_request_mismatch() {
    let codec = codec(1);
    let token = seal(&codec, "alice", "a.md", T0);
    for changed in [
        json!({"vault": "main", "folder": "projects", "recursive": false}),
        json!({"vault": "main", "folder": "archive", "recursive": true}),
        json!({"vault": "other", "folder": "projects", "recursive": true}),
        json!({"vault": "main", "folder": "projects"}),
    ] {
        let result = codec.open(&token, "alice", "read_notes", &request_digest(&changed), T0);
        assert_eq!(
            result.map(|p| p.position),
            Err(CursorError::RequestMismatch),
            "{changed}"
        );
    }
    assert_eq!(CursorError::RequestMismatch.reason(), "request_mismatch");
}

// r[verify paging.cursor.bound]
#[test]
fn the_request_digest_ignores_the_cursor_and_key_order() {
    let first_page = json!({"folder": "projects", "recursive": true, "vault": "main"});
    let next_page =
        json!({"vault": "main", "cursor": "c1.xyz", "recursive": true, "folder": "projects"});
    assert_eq!(request_digest(&first_page), request_digest(&next_page));
    let nested = json!({"vault": "main", "filter": {"cursor": 1}});
    let nested_other = json!({"vault": "main", "filter": {"cursor": 2}});
    assert_ne!(request_digest(&nested), request_digest(&nested_other));
    assert_eq!(request_digest(&first_page).to_string().len(), 64);
}

// r[verify paging.cursor.expiry]
// r[verify paging.cursor.refusals]
#[test]
fn a_cursor_expires_after_ten_minutes() {
    assert_eq!(CURSOR_TTL_MS, 600_000);
    let clock = ManualClock::new(T0);
    let codec = codec(2);
    let token = seal(&codec, "alice", "a.md", clock.now_ms());
    clock.advance_ms(CURSOR_TTL_MS - 1);
    assert!(open(&codec, &token, "alice", clock.now_ms()).is_ok());
    clock.advance_ms(1);
    assert_eq!(
        open(&codec, &token, "alice", clock.now_ms()),
        Err(CursorError::Expired)
    );
    assert_eq!(CursorError::Expired.reason(), "expired");
}

// r[verify paging.cursor.refusals]
#[test]
fn a_foreign_replay_is_reported_as_foreign_even_when_expired() {
    let codec = codec(2);
    let token = seal(&codec, "alice", "a.md", T0);
    assert_eq!(
        open(&codec, &token, "bob", T0 + CURSOR_TTL_MS * 2),
        Err(CursorError::Foreign)
    );
}

// r[verify paging.cursor.signed]
// r[verify paging.cursor.refusals]
#[test]
fn another_servers_cursor_is_invalid() {
    let token = seal(&codec(3), "alice", "a.md", T0);
    assert_eq!(
        open(&codec(4), &token, "alice", T0),
        Err(CursorError::Invalid)
    );
    assert_eq!(CursorError::Invalid.reason(), "invalid");
}

// r[verify state.key.hkdf-label]
#[test]
fn cursor_and_request_state_keys_do_not_cross() {
    let secret = ServerSecret::ephemeral(&SeededEntropy::new(5));
    let cursor_codec = CursorCodec::new(&secret);
    let sealer = RequestStateSealer::new(&secret);
    let binding = StateBinding {
        caller: "alice",
        vault: "main",
        tool: "read_notes",
        args_hash: "0123456789abcdef0123456789abcdef",
        state_fp: "",
    };
    let state = sealer.seal(&binding, 300_000, T0, &OsEntropy);
    assert_eq!(
        open(&cursor_codec, &state.token, "alice", T0),
        Err(CursorError::Invalid)
    );
    let cursor = seal(&cursor_codec, "alice", "a.md", T0);
    assert!(sealer.open(&cursor, &binding, T0).is_err());
}

/// Re-signing is impossible without the key: changing any claim in the clear breaks the MAC.
// r[verify paging.cursor.signed]
#[test]
fn editing_the_clear_claims_is_invalid() {
    let codec = codec(6);
    let token = seal(&codec, "alice", "a.md", T0);
    let (body_b64, tag_b64) = token
        .strip_prefix("c1.")
        .and_then(|rest| rest.split_once('.'))
        .unwrap_or_default();
    let body = URL_SAFE_NO_PAD.decode(body_b64).unwrap_or_default();
    assert!(!body.is_empty());
    for index in 0..body.len() {
        let mut edited = body.clone();
        edited[index] ^= 0x01;
        let forged = format!("c1.{}.{tag_b64}", URL_SAFE_NO_PAD.encode(&edited));
        assert_eq!(
            open(&codec, &forged, "alice", T0),
            Err(CursorError::Invalid),
            "byte {index}"
        );
    }
    // Extending the expiry (last 8 bytes) is one such edit.
    let mut extended = body.clone();
    let len = extended.len();
    extended[len - 8..].copy_from_slice(&i64::MAX.to_be_bytes());
    let forged = format!("c1.{}.{tag_b64}", URL_SAFE_NO_PAD.encode(&extended));
    assert_eq!(
        open(&codec, &forged, "alice", T0 + CURSOR_TTL_MS),
        Err(CursorError::Invalid)
    );
}

#[test]
fn truncations_and_garbage_are_invalid() {
    let codec = codec(7);
    let token = seal(&codec, "alice", "a.md", T0);
    for end in 0..token.len() {
        assert_eq!(
            open(&codec, &token[..end], "alice", T0),
            Err(CursorError::Invalid),
            "prefix {end}"
        );
    }
    for garbage in [
        "",
        "c1",
        "c1.",
        "c1..",
        "c2.AAAA.AAAA",
        "c1.!!!!.AAAA",
        "💥",
        "c1.💥.💥",
    ] {
        assert_eq!(
            open(&codec, garbage, "alice", T0),
            Err(CursorError::Invalid)
        );
    }
    let oversized = format!("{token}{}", "A".repeat(MAX_CURSOR_LEN));
    assert_eq!(
        open(&codec, &oversized, "alice", T0),
        Err(CursorError::Invalid)
    );
}

// r[verify paging.cursor.size]
#[test]
fn every_real_path_fits_and_longer_positions_are_refused_at_seal() {
    let codec = codec(8);
    let longest = "é".repeat(MAX_POSITION_LEN / 2);
    let token = seal(&codec, "alice", &longest, T0);
    assert!(token.len() <= MAX_CURSOR_LEN, "{}", token.len());
    assert_eq!(open(&codec, &token, "alice", T0), Ok(longest));
    let digest = request_digest(&request());
    let too_long = "x".repeat(MAX_POSITION_LEN + 1);
    let refused = codec.seal(
        &CursorClaims {
            caller: "alice",
            tool: "read_notes",
            request_digest: &digest,
            position: &too_long,
            page: 0,
        },
        T0,
    );
    assert_eq!(
        refused,
        Err(CursorSealError::PositionTooLong {
            len: MAX_POSITION_LEN + 1
        })
    );
    let long_tool = "t".repeat(256);
    let refused = codec.seal(
        &CursorClaims {
            caller: "alice",
            tool: &long_tool,
            request_digest: &digest,
            position: "a.md",
            page: 0,
        },
        T0,
    );
    assert_eq!(refused, Err(CursorSealError::ToolTooLong { len: 256 }));
}

#[test]
fn debug_output_hides_the_key() {
    let rendered = format!("{:?}", codec(9));
    assert!(rendered.contains("<redacted>"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_strings_never_panic_and_never_open(garbage in ".{0,400}") {
        prop_assert_eq!(open(&codec(10), &garbage, "alice", T0), Err(CursorError::Invalid));
    }

    #[test]
    fn well_shaped_garbage_never_panics(
        body in prop::collection::vec(any::<u8>(), 0..200),
        tag in prop::collection::vec(any::<u8>(), 0..40),
    ) {
        let token = format!("c1.{}.{}", URL_SAFE_NO_PAD.encode(&body), URL_SAFE_NO_PAD.encode(&tag));
        prop_assert_eq!(open(&codec(10), &token, "alice", T0), Err(CursorError::Invalid));
    }

    #[test]
    fn any_position_and_caller_round_trip(position in ".{0,80}", caller in ".{0,20}", page in any::<u64>()) {
        let codec = codec(11);
        let digest = request_digest(&request());
        let claims = CursorClaims { caller: &caller, tool: "read_notes", request_digest: &digest, position: &position, page };
        let token = codec.seal(&claims, T0).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let opened = codec.open(&token, &caller, "read_notes", &digest, T0)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(opened.position, position);
        prop_assert_eq!(opened.page, page);
    }
}

/// The digest renders as its hex in logs and test failures (cargo-mutants: nothing read it).
#[test]
fn a_request_digest_renders_as_its_hex() {
    let digest = request_digest(&request());
    let hex = digest.to_string();
    assert_eq!(hex.len(), 64);
    assert_eq!(hex, hex::encode(digest.as_bytes()));
    assert_eq!(format!("{digest:?}"), format!("RequestDigest({hex})"));
}
