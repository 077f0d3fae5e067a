//! The bodies of the fuzz targets (fuzz/fuzz_targets/*.rs call these, and
//! tests/fuzz_seeds.rs replays every committed seed through them with plain `cargo test`).
//!
//! Each body takes arbitrary bytes, never fails on them, and panics only when a property of
//! the code under test is broken, which is what the fuzzer reports:
//!
//! - [`request_state_open`]: arbitrary text never opens as a requestState; a state sealed for
//!   a binding derived from the input opens for exactly that binding until its expiry
//!   (state.seal.aad, state.ttl), and an altered copy either fails or says the same thing.
//! - [`cursor_open`]: the same for the `read_notes` cursor, with its refusals in their order
//!   (paging.cursor.signed, paging.cursor.bound, paging.cursor.expiry, paging.cursor.refusals).
//! - [`args_hash_json`]: any JSON hashes without panicking, to 32 lowercase hex digits; the hash
//!   ignores key order and a top-level `elicit_token`, and canonical JSON parses back to the same
//!   value (gate.hash.args-hash, gate.hash.canonical-json).
//! - [`lifecycle`]: an arbitrary configuration and action sequence runs through the
//!   conformance [`crate::harness`], and tc-gate must answer every action as tc-model does.
//! - [`summary_render`]: any text in a summary renders within its bound, with no raw control,
//!   bidi or zero-width character, the full args_hash on its own line, and nothing that looks
//!   like a credential (tools.summary.bounded, tools.summary.escaped, tools.summary.redacted).
//! - [`jsonrpc_tools_call`]: any bytes as one JSON-RPC message into the in-process server's
//!   stdio framing and dispatch: it keeps answering, writes only JSON-RPC, answers a
//!   `tools/call` once with the failure envelope, and runs nothing on an approval nobody
//!   gave (its module, `fuzz_jsonrpc`, says it whole).

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use serde_json::Value;
use tc_gate::args_hash::{args_hash, canonical_json};
use tc_gate::clock::SeededEntropy;
use tc_gate::cursor::{CURSOR_TTL_MS, CursorClaims, CursorCodec, CursorError, request_digest};
use tc_gate::keys::ServerSecret;
use tc_gate::request_state::{RequestStateSealer, StateBinding, StateError};
use tc_model::{Action, ModelConfig, RequestStateMode};

pub use crate::fuzz_jsonrpc::jsonrpc_tools_call;

use crate::envelope;
use crate::harness::{ReplayError, replay};
use crate::sut::{Backing, SutOptions};

/// Around "now" for the codecs; any fixed instant does.
const NOW_MS: i64 = 1_800_000_000_000;
/// Longest action sequence a lifecycle input runs (model handles saturate at 255).
pub const MAX_LIFECYCLE_ACTIONS: usize = 64;

fn secret() -> &'static ServerSecret {
    static SECRET: OnceLock<ServerSecret> = OnceLock::new();
    SECRET.get_or_init(|| ServerSecret::ephemeral(&SeededEntropy::new(11)))
}

fn sealer() -> &'static RequestStateSealer {
    static SEALER: OnceLock<RequestStateSealer> = OnceLock::new();
    SEALER.get_or_init(|| RequestStateSealer::new(secret()))
}

fn cursor_codec() -> &'static CursorCodec {
    static CODEC: OnceLock<CursorCodec> = OnceLock::new();
    CODEC.get_or_init(|| CursorCodec::new(secret()))
}

/// `text` with the character at `position` (modulo its length) replaced by `replacement`
/// (another character of the same class, so the structure stays plausible).
fn altered(text: &str, position: usize, replacement: u8) -> Option<String> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~";
    let bytes = text.as_bytes();
    if bytes.is_empty() {
        return None;
    }
    let index = position % bytes.len();
    let new = ALPHABET[usize::from(replacement) % ALPHABET.len()];
    if bytes[index] == new {
        return None;
    }
    let mut out = bytes.to_vec();
    out[index] = new;
    String::from_utf8(out).ok()
}

#[derive(Debug, Arbitrary)]
struct StateInput {
    caller: String,
    vault: String,
    tool: String,
    args_hash: String,
    state_fp: String,
    /// Which binding field a stranger changes (modulo 5).
    changed_field: u8,
    ttl_seconds: u16,
    position: u16,
    replacement: u8,
}

/// requestState open. Never panics on input; panics when a property fails.
// r[verify state.seal.aad]
// r[verify state.ttl]
pub fn request_state_open(data: &[u8]) {
    let sealer = sealer();
    let text = String::from_utf8_lossy(data);
    let anyone = StateBinding {
        caller: "c0",
        vault: "v0",
        tool: "delete_note",
        args_hash: "0123456789abcdef0123456789abcdef",
        state_fp: "",
    };
    // Arbitrary text is no requestState of ours, raw or in the harness's envelope.
    assert!(
        sealer.open(&text, &anyone, NOW_MS).is_err(),
        "arbitrary input opened as a requestState: {text:?}"
    );
    if let Some((fp, sealed)) = envelope::unwrap(&text) {
        let binding = StateBinding {
            state_fp: fp.as_str(),
            ..anyone
        };
        assert!(
            sealer.open(sealed, &binding, NOW_MS).is_err(),
            "arbitrary input opened inside an envelope: {text:?}"
        );
    }

    let Ok(input) = StateInput::arbitrary(&mut Unstructured::new(data)) else {
        return;
    };
    let binding = StateBinding {
        caller: &input.caller,
        vault: &input.vault,
        tool: &input.tool,
        args_hash: &input.args_hash,
        state_fp: &input.state_fp,
    };
    let ttl_ms = 1000 * u64::from(input.ttl_seconds.max(1));
    let sealed = sealer.seal(&binding, ttl_ms, NOW_MS, &SeededEntropy::new(3));
    let opened = sealer
        .open(&sealed.token, &binding, NOW_MS)
        .unwrap_or_else(|error| panic!("a fresh state does not open for its binding: {error}"));
    assert_eq!(opened.id, sealed.id);
    assert_eq!(opened.expires_at_ms, sealed.expires_at_ms);
    let last_valid = NOW_MS + i64::try_from(ttl_ms).unwrap_or(i64::MAX) - 1;
    assert!(sealer.open(&sealed.token, &binding, last_valid).is_ok());
    assert_eq!(
        sealer.open(&sealed.token, &binding, last_valid + 1),
        Err(StateError::Expired),
        "a state opened at its expiry"
    );

    // Any one field different: the state does not open (it is associated data).
    let other = format!("{}\u{0}other", field(&binding, input.changed_field));
    let stranger = with_field(&binding, input.changed_field, &other);
    assert_eq!(
        sealer.open(&sealed.token, &stranger, NOW_MS),
        Err(StateError::Invalid),
        "a state opened for another binding (field {})",
        input.changed_field % 5
    );

    // An altered state either fails or carries exactly what the original did.
    if let Some(tampered) = altered(
        &sealed.token,
        usize::from(input.position),
        input.replacement,
    ) && let Ok(reopened) = sealer.open(&tampered, &binding, NOW_MS)
    {
        assert_eq!(reopened, opened, "an altered state opened differently");
    }
}

fn field<'a>(binding: &StateBinding<'a>, which: u8) -> &'a str {
    match which % 5 {
        0 => binding.caller,
        1 => binding.vault,
        2 => binding.tool,
        3 => binding.args_hash,
        _ => binding.state_fp,
    }
}

fn with_field<'a>(binding: &StateBinding<'a>, which: u8, value: &'a str) -> StateBinding<'a> {
    let mut out = *binding;
    match which % 5 {
        0 => out.caller = value,
        1 => out.vault = value,
        2 => out.tool = value,
        3 => out.args_hash = value,
        _ => out.state_fp = value,
    }
    out
}

#[derive(Debug, Arbitrary)]
struct CursorInput {
    caller: String,
    tool: String,
    position: String,
    page: u64,
    args: Vec<(String, i64)>,
    position_in_token: u16,
    replacement: u8,
}

/// read_notes cursor open. Never panics on input; panics when a property
/// fails.
// r[verify paging.cursor.signed]
// r[verify paging.cursor.bound]
// r[verify paging.cursor.expiry]
// r[verify paging.cursor.refusals]
pub fn cursor_open(data: &[u8]) {
    let codec = cursor_codec();
    let text = String::from_utf8_lossy(data);
    let digest = request_digest(&serde_json::json!({ "folder": "" }));
    assert_eq!(
        codec.open(&text, "c0", "read_notes", &digest, NOW_MS),
        Err(CursorError::Invalid),
        "arbitrary input opened as a cursor: {text:?}"
    );

    let Ok(input) = CursorInput::arbitrary(&mut Unstructured::new(data)) else {
        return;
    };
    let args = Value::Object(
        input
            .args
            .iter()
            .map(|(key, value)| (key.clone(), Value::from(*value)))
            .collect(),
    );
    let digest = request_digest(&args);
    let claims = CursorClaims {
        caller: &input.caller,
        tool: &input.tool,
        request_digest: &digest,
        position: &input.position,
        page: input.page,
    };
    // Over-long positions and tools are refused at sealing, with a typed error.
    let Ok(token) = codec.seal(&claims, NOW_MS) else {
        return;
    };
    let opened = codec
        .open(&token, &input.caller, &input.tool, &digest, NOW_MS)
        .unwrap_or_else(|error| panic!("a fresh cursor does not open for its request: {error}"));
    assert_eq!(opened.position, input.position);
    assert_eq!(opened.page, input.page);
    let expiry = NOW_MS + CURSOR_TTL_MS;
    assert!(
        codec
            .open(&token, &input.caller, &input.tool, &digest, expiry - 1)
            .is_ok()
    );
    assert_eq!(
        codec.open(&token, &input.caller, &input.tool, &digest, expiry),
        Err(CursorError::Expired)
    );
    let stranger = format!("{}\u{0}other", input.caller);
    // Foreign is reported before expiry: a replay by someone else is named as such.
    assert_eq!(
        codec.open(&token, &stranger, &input.tool, &digest, expiry),
        Err(CursorError::Foreign)
    );
    let other_tool = format!("{}\u{0}other", input.tool);
    assert_eq!(
        codec.open(&token, &input.caller, &other_tool, &digest, NOW_MS),
        Err(CursorError::Foreign)
    );
    let mut other_args = args.clone();
    if let Value::Object(map) = &mut other_args {
        map.insert("\u{0}changed".into(), Value::Bool(true));
    }
    assert_eq!(
        codec.open(
            &token,
            &input.caller,
            &input.tool,
            &request_digest(&other_args),
            NOW_MS
        ),
        Err(CursorError::RequestMismatch)
    );
    if let Some(tampered) = altered(
        &token,
        usize::from(input.position_in_token),
        input.replacement,
    ) && let Ok(reopened) = codec.open(&tampered, &input.caller, &input.tool, &digest, NOW_MS)
    {
        assert_eq!(reopened, opened, "an altered cursor opened differently");
    }
}

/// `value` as JSON text with every object's keys in reverse order.
fn reversed_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            out.push('{');
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| b.0.cmp(a.0));
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push_str(" : ");
                reversed_json(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                reversed_json(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// args_hash over arbitrary JSON. Never panics on input; panics when a
/// property fails.
// r[verify gate.hash.args-hash]
// r[verify gate.hash.canonical-json]
pub fn args_hash_json(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let tool = "delete_note";
    let hash = args_hash(tool, &value);
    assert!(
        hash.as_str().len() == 32
            && hash
                .as_str()
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "args_hash is not 32 lowercase hex digits: {hash}"
    );

    let canonical = canonical_json(&value);
    let back: Value = serde_json::from_str(&canonical)
        .unwrap_or_else(|error| panic!("canonical JSON does not parse: {error}: {canonical}"));
    assert_eq!(back, value, "canonical JSON does not round-trip");
    assert_eq!(
        canonical_json(&back),
        canonical,
        "canonical JSON is not a fixed point"
    );
    assert_eq!(
        args_hash(tool, &back),
        hash,
        "args_hash changed over a round trip"
    );

    // The same text with every object's keys reversed and whitespace added (numbers spelled as
    // in the canonical text) hashes alike.
    let mut reordered = String::new();
    reversed_json(&back, &mut reordered);
    let reparsed: Value = serde_json::from_str(&reordered)
        .unwrap_or_else(|error| panic!("re-serialized JSON does not parse: {error}"));
    assert_eq!(
        args_hash(tool, &reparsed),
        hash,
        "args_hash depends on key order or whitespace"
    );

    if let Value::Object(map) = &value {
        let mut with_token = map.clone();
        with_token.insert(
            "elicit_token".into(),
            Value::String("0123456789abcdef0123456789abcdef".into()),
        );
        let without_token: serde_json::Map<String, Value> = map
            .iter()
            .filter(|(key, _)| key.as_str() != "elicit_token")
            .map(|(key, item)| (key.clone(), item.clone()))
            .collect();
        assert_eq!(
            args_hash(tool, &Value::Object(with_token)),
            args_hash(tool, &Value::Object(without_token)),
            "a top-level elicit_token changed the args_hash"
        );
    }
}

/// The configuration and actions a lifecycle input stands for.
#[derive(Debug)]
pub struct LifecycleInput {
    pub config: ModelConfig,
    pub actions: Vec<Action>,
}

impl LifecycleInput {
    /// Decodes an input; small counts so that handles collide.
    pub fn decode(data: &[u8]) -> arbitrary::Result<Self> {
        let mut u = Unstructured::new(data);
        let config = ModelConfig {
            callers: u.int_in_range(1..=2)?,
            vaults: u.int_in_range(1..=2)?,
            notes: u.int_in_range(1..=2)?,
            ttl_ticks: u.int_in_range(1..=3)?,
            request_state_mode: if bool::arbitrary(&mut u)? {
                RequestStateMode::SingleUse
            } else {
                RequestStateMode::Replayable
            },
            ..ModelConfig::default()
        };
        let mut actions = Vec::new();
        while !u.is_empty() && actions.len() < MAX_LIFECYCLE_ACTIONS {
            actions.push(Action::arbitrary(&mut u)?);
        }
        Ok(LifecycleInput { config, actions })
    }
}

/// The whole lifecycle through the conformance harness: panics with the
/// divergence when tc-gate and tc-model disagree.
pub fn lifecycle(data: &[u8]) {
    let Ok(input) = LifecycleInput::decode(data) else {
        return;
    };
    // Reopen needs cache.db on a file; everything else runs faster in memory.
    let backing = if input.actions.contains(&Action::Reopen) {
        Backing::fast_temp_dir()
    } else {
        Backing::Memory
    };
    match replay(input.config, SutOptions::new(backing), &input.actions) {
        Ok(()) => {}
        Err(ReplayError::Diverged(divergence)) => {
            panic!(
                "{divergence}\nconfig: {:?}\nactions: {:#?}",
                input.config, input.actions
            )
        }
        Err(other) => panic!("{other}"),
    }
}

/// What a summary renders (tools.summary.bounded, tools.summary.escaped,
/// tools.summary.redacted). Never panics on input; panics when a property fails.
pub fn summary_render(data: &[u8]) {
    use tc_tools::summary::{MAX_SUMMARY_BYTES, Summary};
    let mut input = Unstructured::new(data);
    let text = |input: &mut Unstructured<'_>| String::arbitrary(input).unwrap_or_default();
    let tool = text(&mut input);
    let vault = text(&mut input);
    let caller = text(&mut input);
    let args_hash = hex::encode(<[u8; 16]>::arbitrary(&mut input).unwrap_or_default());
    let mut summary = Summary::new(text(&mut input));
    for _ in 0..u8::arbitrary(&mut input).unwrap_or(0) % 8 {
        summary = summary.target(text(&mut input));
    }
    for _ in 0..u16::arbitrary(&mut input).unwrap_or(0) % 300 {
        summary = summary.detail(text(&mut input));
    }
    if bool::arbitrary(&mut input).unwrap_or(false) {
        let (old, new) = (text(&mut input), text(&mut input));
        summary = summary.diff(&old, &new);
    }
    let shown = summary.render(&tool, &vault, &caller, &args_hash);
    assert!(shown.len() <= MAX_SUMMARY_BYTES, "{} bytes", shown.len());
    for c in shown.chars() {
        let hidden = matches!(c, '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}');
        assert!(c == '\n' || !(c.is_control() || hidden), "raw {c:?} shown");
    }
    assert_eq!(
        shown.lines().nth(1),
        Some(format!("args_hash {args_hash}").as_str()),
        "the args_hash line"
    );
    assert!(
        !tc_tools::summary::shows_credential(&shown),
        "a credential shown:\n{shown}"
    );
}
