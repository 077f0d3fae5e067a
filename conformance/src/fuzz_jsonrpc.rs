//! The body of the `jsonrpc_tools_call` fuzz target: arbitrary bytes as one JSON-RPC message
//! into the server's stdio framing ([`tc_server::stdio::JsonLines`]) and dispatch, after a
//! real `initialize` handshake (spec/cli.md `cli.serve.stdio-parse-error`,
//! `cli.serve.stdio-invalid-params`; spec/dispatch.md `dispatch.one-pipeline`,
//! `dispatch.unknown-tool`; spec/gate.md `gate.token.single-use`; spec/results.md).
//!
//! What must hold for any input:
//! - the server keeps answering: a `ping` sent after the input is answered;
//! - every line it writes is one JSON-RPC message;
//! - a line that is not JSON is answered with -32700 and `"id": null`;
//! - a `tools/call` request with an id gets exactly one response with that id, and a tool
//!   result that is a failure is the spec/results.md envelope: a known code, and the text block
//!   `Error [code]: message`;
//! - nothing runs on an approval, since nobody approved anything: no `tc.elicit.consumed`
//!   and no `elicit_minted` event is ever recorded.
//!
//! One server (its vault, cacheDir and runtime) serves every input; each input gets its own
//! session, and the vault is emptied and its notes written afresh before it, so an input
//! means the same thing whenever it runs. Only the events an input added are read after it,
//! so a long campaign does not slow down as the event log grows.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};
use tc_gate::EventName;
use tc_gate::clock::{OsEntropy, SystemClock};
use tc_gate::keys::ServerSecret;
use tc_gate::{CACHE_DB_FILE, Store};
use tc_server::config::Config;
use tc_server::handler::ObsidianTc;
use tc_server::metrics::Metrics;
use tc_server::routes::Transport;
use tc_server::server::{CoreParts, ServerCore};
use tc_server::stdio::JsonLines;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The longest input sent (longer ones are cut): the framing's own limit is tested elsewhere.
const MAX_INPUT: usize = 64 * 1024;
/// The id of the `ping` that shows the server still answers.
const SENTINEL: &str = "tc-fuzz-sentinel";
/// How long the server may take to answer the sentinel.
const PATIENCE: Duration = Duration::from_secs(20);

/// The failure codes of spec/results.md (tc_tools::ErrorCode names the same set; the fuzz target
/// checks the wire against the contract, not against the enum).
const CODES: [&str; 34] = [
    "elicit_required",
    "approval_declined",
    "approval_not_obtained",
    "replay_drift",
    "convention_blocked",
    "acl_denied",
    "path_invalid",
    "note_not_found",
    "note_exists",
    "concurrent_modification",
    "validation_error",
    "overflow",
    "invalid_input",
    "internal_error",
    "entity_not_found",
    "entity_has_relations",
    "capture_not_found",
    "session_not_found",
    "capability_not_found",
    "git_no_repo",
    "git_head_moved",
    "ocr_unavailable",
    "execute_command_disabled",
    "command_not_allowlisted",
    "plugin_unreachable",
    "operation_timeout",
    "embeddings_unavailable",
    "git_locked",
    "anchor_not_found",
    "anchor_ambiguous",
    "attachment_not_found",
    "snapshot_not_found",
    "template_not_found",
    "periodic_not_configured",
];

/// The notes every input starts with.
const NOTES: [(&str, &str); 3] = [
    (
        "keep.md",
        "# Keep\n\n- [ ] a task\n- [x] done ✅ 2020-01-01\n",
    ),
    (
        "inbox/draft.md",
        "---\nstatus: draft\n---\nDraft with [[keep]].\n",
    ),
    ("private/secret.md", "nothing to see\n"),
];

struct Fixture {
    runtime: tokio::runtime::Runtime,
    core: Arc<ServerCore>,
    vault: PathBuf,
    /// The id of the last event already judged.
    judged: std::sync::Mutex<i64>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        // Kept for the life of the process: every input is served by this one server.
        let root = tempfile::Builder::new()
            .prefix("tc-fuzz-jsonrpc-")
            .tempdir()
            .map(tempfile::TempDir::keep)
            .unwrap_or_else(|e| panic!("a temporary folder: {e}"));
        let vault = root.join("vault");
        let cache = root.join("cache");
        std::fs::create_dir_all(&cache).unwrap_or_else(|e| panic!("the cacheDir: {e}"));
        reset_notes(&vault);
        let text = format!(
            "[search]\nenabled = false\n\n[[vaults]]\nid = \"main\"\nroot = {:?}\n\
             [vaults.acl]\nreadPaths = [\"**\"]\nwritePaths = [\"**\"]\ndeletePaths = [\"inbox/**\"]\n\
             rules = [{{ glob = \"private/**\", scopes = [\"read:private\"] }}]\n",
            vault.display().to_string()
        );
        let config = Config::parse(&text, "fuzz.toml", &root)
            .unwrap_or_else(|e| panic!("the fuzz config: {e}"));
        let secret = ServerSecret::load_or_create(&cache, &OsEntropy)
            .unwrap_or_else(|e| panic!("the server secret: {e}"));
        let store = Store::open(cache.join(CACHE_DB_FILE))
            .unwrap_or_else(|e| panic!("cache.db: {e}"));
        let core = ServerCore::build(
            &config,
            CoreParts {
                cache_dir: &cache,
                secret: &secret,
                store,
                clock: Arc::new(SystemClock),
                entropy: Arc::new(OsEntropy),
                metrics: Arc::new(Metrics::new()),
                legacy_shim: false,
                approval_flags: Vec::new(),
                approval_program: None,
            },
        )
        .unwrap_or_else(|e| panic!("the server: {e}"));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("a runtime: {e}"));
        Fixture {
            runtime,
            core: Arc::new(core),
            vault,
            judged: std::sync::Mutex::new(0),
        }
    })
}

/// Empties the vault (what an earlier input created goes) and writes its notes afresh.
fn reset_notes(vault: &std::path::Path) {
    if let Ok(entries) = std::fs::read_dir(vault) {
        for entry in entries.flatten() {
            let path = entry.path();
            let removed = if entry.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            removed.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
    for (path, text) in NOTES {
        let path = vault.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{}: {e}", parent.display()));
        }
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

fn line_of(value: &Value) -> Vec<u8> {
    let mut line = value.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// Every `tools/call` result that is a failure has the two-block shape of spec
/// results.error-blocks.
fn check_tool_result(result: &Value) {
    if result["isError"] != json!(true) {
        return;
    }
    assert!(
        result.get("structuredContent").is_none(),
        "a failure with structuredContent: {result}"
    );
    let envelope = crate::server::failure_envelope(result);
    let code = envelope["code"]
        .as_str()
        .unwrap_or_else(|| panic!("a failure without a code: {result}"));
    assert!(
        CODES.contains(&code),
        "a failure with the unknown code {code:?}: {result}"
    );
    let message = envelope["message"].as_str().unwrap_or_default();
    assert_eq!(
        result["content"][0]["text"].as_str(),
        Some(format!("Error [{code}]: {message}").as_str()),
        "the text block of a failure: {result}"
    );
}

/// Runs one input through a fresh session (see the module documentation).
pub fn jsonrpc_tools_call(data: &[u8]) {
    let fixture = fixture();
    reset_notes(&fixture.vault);
    let mut input: Vec<u8> = data
        .iter()
        .take(MAX_INPUT)
        .map(|&b| if b == b'\n' { b' ' } else { b })
        .collect();
    input.push(b'\n');
    // Whatever ran before this input (the handshake of an earlier one, say) is not its doing.
    let mut judged = fixture
        .judged
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let _ = approvals_since(&fixture.core, &mut judged);
    let awaited = call_id(&input);
    let lines = fixture.runtime.block_on(session(
        fixture.core.clone(),
        input.clone(),
        awaited.clone(),
    ));
    check_replies(&input, awaited.as_ref(), &lines);
    assert_eq!(
        approvals_since(&fixture.core, &mut judged),
        0,
        "a handler ran on an approval, or a token was minted, though nobody approved anything"
    );
}

/// How many `tc.elicit.consumed` and `elicit_minted` events came after `judged`, which
/// moves to the last event read.
fn approvals_since(core: &ServerCore, judged: &mut i64) -> usize {
    let mut approvals = 0;
    loop {
        let events = core
            .gate()
            .events(*judged, 256)
            .unwrap_or_else(|e| panic!("reading the events: {e}"));
        let Some(last) = events.last() else {
            return approvals;
        };
        *judged = last.id;
        approvals += events
            .iter()
            .filter(|e| matches!(e.name, EventName::Consumed | EventName::Minted))
            .count();
    }
}

/// The input line as the framing reads it (its `\n`, then one trailing `\r`, then a leading
/// BOM removed), as text; `None` when it is not UTF-8 (and so no JSON, RFC 8259 §8.1). Nothing
/// else is trimmed: JSON's own whitespace is the parser's business, and a character Rust
/// calls whitespace but JSON does not (a form feed, say) makes the line no JSON.
fn input_text(input: &[u8]) -> Option<&str> {
    let line = &input[..input.len() - 1];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    std::str::from_utf8(line).ok()
}

/// A line the framing skips: nothing but ASCII whitespace.
fn is_blank(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_whitespace())
}

/// The id of the `tools/call` request the input is, if it is one.
fn call_id(input: &[u8]) -> Option<Value> {
    let message: Value = serde_json::from_str(input_text(input)?).ok()?;
    let id = &message["id"];
    let is_call = message["jsonrpc"] == json!("2.0")
        && message["method"] == json!("tools/call")
        && (id.is_string() || id.is_i64() || id.is_u64())
        && *id != json!(SENTINEL);
    is_call.then(|| id.clone())
}

/// Handshake, the input, the sentinel; every line the server wrote until it answered the
/// sentinel and, if the input is a `tools/call`, that call (requests are served
/// concurrently, so the two answers come in either order), parsed.
async fn session(core: Arc<ServerCore>, input: Vec<u8>, awaited: Option<Value>) -> Vec<Value> {
    let (server_io, client_io) = tokio::io::duplex(1 << 22);
    let (server_read, server_write) = tokio::io::split(server_io);
    let served = tokio::spawn(async move {
        use rmcp::ServiceExt as _;
        let transport = JsonLines::new(server_read, server_write);
        if let Ok(running) = ObsidianTc::new(core, Transport::Stdio)
            .serve(transport)
            .await
        {
            let _ = running.waiting().await;
        }
    });
    let (client_read, mut client_write) = tokio::io::split(client_io);
    let mut replies = BufReader::new(client_read).lines();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "tc-fuzz", "version": "0"}}
    });
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let ping = json!({"jsonrpc": "2.0", "id": SENTINEL, "method": "ping"});
    let mut lines = Vec::new();
    let exchange = async {
        client_write.write_all(&line_of(&initialize)).await?;
        let answer = replies.next_line().await?.unwrap_or_default();
        lines.push(parse(&answer));
        client_write.write_all(&line_of(&initialized)).await?;
        client_write.write_all(&input).await?;
        client_write.write_all(&line_of(&ping)).await?;
        let (mut pinged, mut called) = (false, awaited.is_none());
        while let Some(line) = replies.next_line().await? {
            let value = parse(&line);
            pinged |= value["id"] == json!(SENTINEL);
            called |= awaited.as_ref().is_some_and(|id| value["id"] == *id);
            lines.push(value);
            if pinged && called {
                break;
            }
        }
        Ok::<_, std::io::Error>(())
    };
    match tokio::time::timeout(PATIENCE, exchange).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("the session broke: {e}"),
        Err(_) => panic!(
            "the server did not answer the ping after the input, or the tools/call itself: \
             {lines:?}"
        ),
    }
    drop(client_write);
    served.abort();
    lines
}

fn parse(line: &str) -> Value {
    serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("the server wrote a line that is not JSON ({e}): {line:?}"))
}

fn check_replies(input: &[u8], awaited: Option<&Value>, lines: &[Value]) {
    assert!(
        lines
            .iter()
            .any(|l| l["id"] == json!(SENTINEL) && l.get("result").is_some()),
        "the sentinel ping was not answered: {lines:?}"
    );
    // Replies after the handshake's.
    let replies = &lines[1..];
    let parse_error = replies
        .iter()
        .any(|r| r["error"]["code"] == json!(-32700) && r["id"].is_null());
    match input_text(input) {
        Some(text) if is_blank(text) => return,
        Some(text) if serde_json::from_str::<Value>(text).is_ok() => {}
        _ => {
            assert!(
                parse_error,
                "a line that is not JSON got no parse error: {replies:?}"
            );
            return;
        }
    }
    let Some(id) = awaited else {
        return;
    };
    let answers: Vec<&Value> = replies.iter().filter(|r| r["id"] == *id).collect();
    assert_eq!(
        answers.len(),
        1,
        "a tools/call with id {id} got {answers:?}"
    );
    if let Some(result) = answers[0].get("result") {
        check_tool_result(result);
    }
}
