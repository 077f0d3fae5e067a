//! requestState sealing (spec/state.md: `state.seal.aad`, `state.ttl`,
//! `state.shared-cachedir`, `state.delete-voids`, `state.upgrade-refuse-once`).

use std::fs;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use proptest::prelude::*;
use rmcp::model::{RequestStateCodec, SealOptions};
use tc_gate::clock::{Clock, ManualClock, OsEntropy, SeededEntropy};
use tc_gate::keys::ServerSecret;
use tc_gate::request_state::{
    LEGACY_KEY_ID, MAX_STATE_LEN, RequestStateSealer, StateBinding, StateError, StateId,
};

const TTL_MS: u64 = 300_000;
const T0: i64 = 1_800_000_000_000;

fn binding() -> StateBinding<'static> {
    StateBinding {
        caller: "stdio",
        vault: "main",
        tool: "delete_note",
        args_hash: "0123456789abcdef0123456789abcdef",
        state_fp: "fp:abc",
    }
}

fn sealer(seed: u64) -> RequestStateSealer {
    RequestStateSealer::new(&ServerSecret::ephemeral(&SeededEntropy::new(seed)))
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|error| panic!("tempdir: {error}"))
}

fn cache_sealer(dir: &std::path::Path) -> RequestStateSealer {
    let secret = ServerSecret::load_or_create(dir, &OsEntropy)
        .unwrap_or_else(|error| panic!("load secret: {error}"));
    RequestStateSealer::new(&secret)
}

// r[verify state.seal.aad]
// r[verify state.ttl]
#[test]
fn round_trip_returns_the_id_and_times() {
    let sealer = sealer(1);
    let sealed = sealer.seal(&binding(), TTL_MS, T0, &OsEntropy);
    assert_eq!(sealed.expires_at_ms, T0 + 300_000);
    assert_eq!(sealed.id.as_str().len(), 32);
    let opened = sealer.open(&sealed.token, &binding(), T0 + 1);
    let opened = opened.unwrap_or_else(|error| panic!("open: {error}"));
    assert_eq!(opened.id, sealed.id);
    assert_eq!(opened.issued_at_ms, T0);
    assert_eq!(opened.expires_at_ms, sealed.expires_at_ms);
    assert!(sealed.token.len() < 400, "{}", sealed.token.len());
}

// r[verify state.replayable]
#[test]
fn opening_does_not_consume_the_state() {
    let sealer = sealer(1);
    let sealed = sealer.seal(&binding(), TTL_MS, T0, &OsEntropy);
    for offset in [0, 1, 1_000, 299_999] {
        assert!(sealer.open(&sealed.token, &binding(), T0 + offset).is_ok());
    }
}

#[test]
fn state_ids_are_random_per_seal() {
    let sealer = sealer(1);
    let a = sealer.seal(&binding(), TTL_MS, T0, &OsEntropy);
    let b = sealer.seal(&binding(), TTL_MS, T0, &OsEntropy);
    assert_ne!(a.id, b.id);
    assert_ne!(a.token, b.token);
}

// r[verify state.seal.aad]
#[test]
fn every_binding_field_is_bound() {
    let sealer = sealer(2);
    let sealed = sealer.seal(&binding(), TTL_MS, T0, &OsEntropy);
    let changed = [
        StateBinding {
            caller: "alice",
            ..binding()
        },
        StateBinding {
            vault: "other",
            ..binding()
        },
        StateBinding {
            tool: "restore_note",
            ..binding()
        },
        StateBinding {
            args_hash: "0123456789abcdef0123456789abcdee",
            ..binding()
        },
        StateBinding {
            state_fp: "fp:abd",
            ..binding()
        },
        StateBinding {
            state_fp: "",
            ..binding()
        },
    ];
    for other in changed {
        assert_eq!(
            sealer.open(&sealed.token, &other, T0 + 1),
            Err(StateError::Invalid),
            "{other:?}"
        );
    }
}

// r[verify state.seal.aad]
#[test]
fn field_boundaries_cannot_be_shifted() {
    let sealer = sealer(2);
    let split_one = StateBinding {
        caller: "ab",
        vault: "c",
        ..binding()
    };
    let split_two = StateBinding {
        caller: "a",
        vault: "bc",
        ..binding()
    };
    assert_ne!(split_one.associated_data(), split_two.associated_data());
    let sealed = sealer.seal(&split_one, TTL_MS, T0, &OsEntropy);
    assert_eq!(
        sealer.open(&sealed.token, &split_two, T0),
        Err(StateError::Invalid)
    );
}

// r[verify state.ttl]
#[test]
fn expiry_follows_the_injected_clock() {
    let clock = ManualClock::new(T0);
    let sealer = sealer(3);
    let sealed = sealer.seal(&binding(), TTL_MS, clock.now_ms(), &OsEntropy);
    clock.advance_ms(299_999);
    assert!(
        sealer
            .open(&sealed.token, &binding(), clock.now_ms())
            .is_ok()
    );
    clock.advance_ms(1);
    assert_eq!(
        sealer.open(&sealed.token, &binding(), clock.now_ms()),
        Err(StateError::Expired)
    );
    clock.advance_ms(86_400_000);
    assert_eq!(
        sealer.open(&sealed.token, &binding(), clock.now_ms()),
        Err(StateError::Expired)
    );
}

/// The manual clock may be far from the wall clock; rmcp's wall-clock backstop must not
/// decide a test that lives on manual time.
// r[verify state.ttl]
#[test]
fn a_short_ttl_on_manual_time_is_not_cut_by_the_wall_clock() {
    let sealer = sealer(3);
    let sealed = sealer.seal(&binding(), 5, 0, &OsEntropy);
    std::thread::sleep(Duration::from_millis(20));
    assert!(sealer.open(&sealed.token, &binding(), 4).is_ok());
    assert_eq!(
        sealer.open(&sealed.token, &binding(), 5),
        Err(StateError::Expired)
    );
}

/// rmcp's wall-clock expiry is inside the signed body: it cannot be moved either.
#[test]
fn restamping_the_wall_clock_expiry_is_a_forgery() {
    let sealer = sealer(3);
    let sealed = sealer.seal(&binding(), TTL_MS, T0, &OsEntropy);
    // Re-stamp the body's rmcp expiry to 1 ms after the epoch: the tag no longer matches,
    // so this is Invalid, not Expired (rmcp checks the tag before the expiry).
    let parts: Vec<&str> = sealed.token.split('.').collect();
    let mut body = URL_SAFE_NO_PAD.decode(parts[2]).unwrap_or_default();
    body[..8].copy_from_slice(&1i64.to_be_bytes());
    let restamped = format!(
        "{}.{}.{}.{}",
        parts[0],
        parts[1],
        URL_SAFE_NO_PAD.encode(&body),
        parts[3]
    );
    assert_eq!(
        sealer.open(&restamped, &binding(), T0),
        Err(StateError::Invalid)
    );
}

// r[verify state.shared-cachedir]
#[test]
fn processes_sharing_a_cache_dir_accept_each_others_states() {
    let shared = tempdir();
    let first = cache_sealer(shared.path());
    let second = cache_sealer(shared.path());
    let from_first = first.seal(&binding(), TTL_MS, T0, &OsEntropy);
    let from_second = second.seal(&binding(), TTL_MS, T0, &OsEntropy);
    assert!(second.open(&from_first.token, &binding(), T0).is_ok());
    assert!(first.open(&from_second.token, &binding(), T0).is_ok());

    let other = tempdir();
    let stranger = cache_sealer(other.path());
    assert_eq!(
        stranger.open(&from_first.token, &binding(), T0),
        Err(StateError::Invalid)
    );
    assert_eq!(
        first.open(
            &stranger.seal(&binding(), TTL_MS, T0, &OsEntropy).token,
            &binding(),
            T0
        ),
        Err(StateError::Invalid)
    );
}

// r[verify state.delete-voids]
#[test]
fn deleting_server_secrets_voids_pending_states() {
    let cache = tempdir();
    let before = cache_sealer(cache.path());
    let pending = before.seal(&binding(), TTL_MS, T0, &OsEntropy);
    assert!(
        fs::remove_dir_all(cache.path().join("server-secrets")).is_ok(),
        "remove server-secrets"
    );
    let after = cache_sealer(cache.path());
    assert_eq!(
        after.open(&pending.token, &binding(), T0 + 1),
        Err(StateError::Invalid)
    );
    // A fresh confirmation works under the regenerated secret.
    let fresh = after.seal(&binding(), TTL_MS, T0 + 1, &OsEntropy);
    assert!(after.open(&fresh.token, &binding(), T0 + 2).is_ok());
}

/// A state in the pre-upgrade format: rmcp's rs2 envelope under key id "jwt", keyed
/// from an auth.jwtSecret.
fn legacy_state(jwt_secret: &[u8], binding: &StateBinding<'_>) -> String {
    let codec = RequestStateCodec::new_with_keyring(LEGACY_KEY_ID, [(LEGACY_KEY_ID, jwt_secret)])
        .unwrap_or_else(|error| panic!("legacy codec: {error}"));
    let aad = binding.associated_data();
    codec.seal_with(
        br#"{"approve":"pending"}"#,
        &SealOptions::new()
            .associated_data(&aad)
            .ttl(Duration::from_secs(300)),
    )
}

// r[verify state.upgrade-refuse-once]
#[test]
fn a_jwt_keyed_state_is_refused_once_and_a_fresh_one_works() {
    let sealer = sealer(4);
    let jwt_secret = b"an-auth-jwtSecret-of-at-least-32-bytes!!";
    let legacy = legacy_state(jwt_secret, &binding());
    assert_eq!(
        sealer.open(&legacy, &binding(), T0),
        Err(StateError::LegacyKeyed)
    );
    assert_eq!(StateError::LegacyKeyed.reason(), "legacy_keyed");
    // The server answers with a fresh confirmation; its state is ours and opens.
    let fresh = sealer.seal(&binding(), TTL_MS, T0, &OsEntropy);
    assert!(sealer.open(&fresh.token, &binding(), T0 + 1).is_ok());
    // No dual-key verify: relabelling the legacy state with our key id does not make it
    // verify, since the JWT secret is not our key.
    let kid_swapped = legacy.replacen(
        &URL_SAFE_NO_PAD.encode(LEGACY_KEY_ID),
        &URL_SAFE_NO_PAD.encode("tc1"),
        1,
    );
    assert_eq!(
        sealer.open(&kid_swapped, &binding(), T0),
        Err(StateError::Invalid)
    );
}

// r[verify state.upgrade-refuse-once]
// r[verify state.ext.legacy-format]
#[test]
fn only_a_well_formed_legacy_envelope_is_legacy() {
    let sealer = sealer(4);
    let jwt = URL_SAFE_NO_PAD.encode(LEGACY_KEY_ID);
    let body = URL_SAFE_NO_PAD.encode([0u8; 12]);
    let tag = URL_SAFE_NO_PAD.encode([0u8; 32]);
    let short_tag = URL_SAFE_NO_PAD.encode([0u8; 8]);
    assert_eq!(
        sealer.open(&format!("rs2.{jwt}.{body}.{tag}"), &binding(), T0),
        Err(StateError::LegacyKeyed)
    );
    for malformed in [
        format!("rs2.{jwt}.{body}.{short_tag}"),
        format!("rs2.{jwt}.!!.{tag}"),
        format!("rs2.{jwt}.{body}"),
        format!("rs2.{jwt}.{body}.{tag}.x"),
        format!("rs1.{body}.{tag}"),
    ] {
        assert_eq!(
            sealer.open(&malformed, &binding(), T0),
            Err(StateError::Invalid),
            "{malformed}"
        );
    }
}

#[test]
fn an_rs1_or_foreign_kid_state_is_invalid() {
    let sealer = sealer(5);
    let key = [9u8; 32];
    let rs1 = RequestStateCodec::try_new(key.to_vec())
        .map(|codec| codec.seal(b"{}"))
        .unwrap_or_default();
    assert_eq!(sealer.open(&rs1, &binding(), T0), Err(StateError::Invalid));
    let other_kid = RequestStateCodec::new_with_keyring("x", [("x", key.to_vec())])
        .map(|codec| codec.seal(b"{}"))
        .unwrap_or_default();
    assert_eq!(
        sealer.open(&other_kid, &binding(), T0),
        Err(StateError::Invalid)
    );
}

#[test]
fn every_single_character_tamper_is_refused() {
    let sealer = sealer(6);
    let sealed = sealer.seal(&binding(), TTL_MS, T0, &OsEntropy);
    let token = sealed.token.as_bytes();
    for index in 0..token.len() {
        for replacement in [b'A', b'_', b'.', b'!'] {
            if token[index] == replacement {
                continue;
            }
            let mut bytes = token.to_vec();
            bytes[index] = replacement;
            let tampered = String::from_utf8(bytes).unwrap_or_default();
            let result = sealer.open(&tampered, &binding(), T0);
            // A changed trailing base64 character may decode to the same bytes (unused
            // low bits); anything else must be refused.
            if result.is_ok() {
                let same = tampered
                    .split('.')
                    .zip(sealed.token.split('.'))
                    .all(|(a, b)| URL_SAFE_NO_PAD.decode(a).ok() == URL_SAFE_NO_PAD.decode(b).ok());
                assert!(same, "accepted a tamper at {index}");
            } else {
                assert_eq!(result, Err(StateError::Invalid), "at {index}");
            }
        }
    }
    for end in 0..token.len() {
        assert_eq!(
            sealer.open(&sealed.token[..end], &binding(), T0),
            Err(StateError::Invalid)
        );
    }
}

#[test]
fn oversized_input_is_refused_without_decoding() {
    let sealer = sealer(7);
    let sealed = sealer.seal(&binding(), TTL_MS, T0, &OsEntropy);
    let padded = format!("{}{}", sealed.token, "A".repeat(MAX_STATE_LEN));
    assert_eq!(
        sealer.open(&padded, &binding(), T0),
        Err(StateError::Invalid)
    );
    let huge = format!("rs2.{}", "A".repeat(8 * 1024 * 1024));
    assert_eq!(sealer.open(&huge, &binding(), T0), Err(StateError::Invalid));
}

#[test]
fn state_id_parses_only_32_lowercase_hex() {
    let id = StateId::parse("0123456789abcdef0123456789abcdef").unwrap();
    // What events and the consumed_states table record: the hex as it is.
    assert_eq!(id.to_string(), "0123456789abcdef0123456789abcdef");
    assert_eq!(
        format!("{id:?}"),
        "StateId(0123456789abcdef0123456789abcdef)"
    );
    for bad in [
        "",
        "0123",
        "0123456789ABCDEF0123456789ABCDEF",
        "g".repeat(32).as_str(),
    ] {
        assert_eq!(StateId::parse(bad), Err(StateError::Invalid));
    }
}

#[test]
fn debug_output_hides_the_token() {
    let sealer = sealer(8);
    let sealed = sealer.seal(&binding(), TTL_MS, T0, &OsEntropy);
    let rendered = format!("{sealed:?} {sealer:?}");
    assert!(!rendered.contains(&sealed.token));
    assert!(rendered.contains(sealed.id.as_str()));
}

fn bind(f: &[String]) -> StateBinding<'_> {
    StateBinding {
        caller: &f[0],
        vault: &f[1],
        tool: &f[2],
        args_hash: &f[3],
        state_fp: &f[4],
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_strings_never_panic_and_never_open(garbage in ".{0,600}") {
        let sealer = sealer(9);
        prop_assert!(sealer.open(&garbage, &binding(), T0).is_err());
    }

    #[test]
    fn envelope_shaped_garbage_never_panics(
        version in prop_oneof![Just("rs1".to_owned()), Just("rs2".to_owned()), Just("rs3".to_owned()), "[a-z0-9]{0,4}"],
        parts in prop::collection::vec("[A-Za-z0-9_=!.-]{0,60}", 0..6),
    ) {
        let sealer = sealer(9);
        let token = std::iter::once(version).chain(parts).collect::<Vec<_>>().join(".");
        let result = sealer.open(&token, &binding(), T0);
        prop_assert!(matches!(result, Err(StateError::Invalid | StateError::LegacyKeyed)));
    }

    #[test]
    fn random_bindings_round_trip_and_do_not_cross(
        fields in prop::collection::vec(".{0,12}", 5),
        other in prop::collection::vec(".{0,12}", 5),
    ) {
        let sealer = sealer(10);
        let sealed = sealer.seal(&bind(&fields), TTL_MS, T0, &OsEntropy);
        prop_assert!(sealer.open(&sealed.token, &bind(&fields), T0).is_ok());
        if other != fields {
            prop_assert_eq!(sealer.open(&sealed.token, &bind(&other), T0), Err(StateError::Invalid));
        }
    }
}

// r[verify drift.every-route]
#[test]
fn a_presented_state_carries_its_fingerprint_beside_the_seal() {
    use tc_gate::request_state::{present, split_presented};
    let presented = present("ab", "rs2.x.y.z");
    assert_eq!(split_presented(&presented), (Some("ab"), "rs2.x.y.z"));
    assert_eq!(split_presented("rs2.x.y.z"), (None, "rs2.x.y.z"));
    assert_eq!(split_presented(&present("", "s")), (Some(""), "s"));
}

/// The sealer shows which key id it seals under and never the key (a cargo-mutants
/// survivor: no test looked at its Debug).
#[test]
fn the_sealer_renders_its_key_redacted() {
    let secret = ServerSecret::ephemeral(&SeededEntropy::new(3));
    let shown = format!("{:?}", RequestStateSealer::new(&secret));
    assert!(shown.starts_with("RequestStateSealer {"), "{shown}");
    assert!(shown.contains("<redacted>"), "{shown}");
    let key = secret.derive(tc_gate::keys::KeyPurpose::RequestState);
    assert!(!shown.contains(&hex::encode(key.as_bytes())), "{shown}");
}
