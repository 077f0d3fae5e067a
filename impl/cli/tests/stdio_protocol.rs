//! JSON-RPC over stdio as a client can get it wrong, driven through the built binary with raw
//! lines: a line that is not JSON, a request whose params have the wrong types, and sessions
//! that only probe before closing stdin (spec/cli.md `cli.serve.stdio-parse-error`,
//! `cli.serve.stdio-invalid-params`, `cli.serve.stdio-eof-exit`).

mod support;

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, ExitStatus};
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// How long a reply may take before the test calls it missing.
const REPLY_TIMEOUT: Duration = Duration::from_secs(20);

/// `obsidian-tc serve <vault> --cache-dir <temp>` over stdio, fed raw lines.
struct Served {
    _dir: tempfile::TempDir,
    child: Child,
    stdin: Option<ChildStdin>,
    replies: Receiver<Result<Value, String>>,
    stderr: Option<JoinHandle<String>>,
}

impl Served {
    fn start() -> Served {
        let dir = tempfile::tempdir().unwrap();
        let vault = dir.path().join("vault");
        std::fs::create_dir_all(&vault).unwrap();
        std::fs::write(vault.join("note.md"), "# A note\n").unwrap();
        let mut child = support::serve(&vault, &dir.path().join("cache"))
            .spawn()
            .expect("spawn obsidian-tc serve");
        let replies = support::json_lines(child.stdout.take().unwrap());
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        Served {
            _dir: dir,
            stdin: child.stdin.take(),
            child,
            replies,
            stderr: Some(stderr),
        }
    }

    fn send_bytes(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send_raw(&mut self, line: &str) {
        self.send_bytes(line.as_bytes());
    }

    fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string());
    }

    /// The next line the server writes, or a panic naming what was expected.
    fn reply(&self, expected: &str) -> Value {
        self.replies
            .recv_timeout(REPLY_TIMEOUT)
            .unwrap_or_else(|_| panic!("no reply within {REPLY_TIMEOUT:?}: expected {expected}"))
            .unwrap_or_else(|line| panic!("stdout carried a line that is not JSON ({line})"))
    }

    fn initialize(&mut self) {
        let [initialize, initialized] = support::handshake("stdio-protocol-test");
        self.send(initialize);
        let reply = self.reply("the initialize result");
        assert_eq!(reply["id"], "init", "{reply}");
        assert!(reply["result"]["serverInfo"].is_object(), "{reply}");
        self.send(initialized);
    }

    /// `tools/list` still answers: the session went on.
    fn assert_still_serving(&mut self, id: u64) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        let reply = self.reply("the tools/list result");
        assert_eq!(reply["id"], id, "{reply}");
        assert!(reply["result"]["tools"].is_array(), "{reply}");
    }

    /// Closes stdin and waits for the process: its exit status and its stderr.
    fn finish(mut self) -> (ExitStatus, String) {
        drop(self.stdin.take());
        let status = wait_at_most(&mut self.child, REPLY_TIMEOUT);
        let stderr = self.stderr.take().unwrap().join().unwrap();
        if let Ok(extra) = self.replies.try_recv() {
            panic!("an unexpected reply after the last request: {extra:?}");
        }
        (status, stderr)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_at_most(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "serve did not exit within {limit:?} of stdin closing"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The session ended as a normal one: exit 0, and no error line on stderr (neither the
/// binary's `obsidian-tc: …` refusal line nor a log line at ERROR).
fn assert_clean_end(status: ExitStatus, stderr: &str) {
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("obsidian-tc:") || line.contains(" ERROR "))
        .collect();
    assert!(
        status.success() && errors.is_empty(),
        "expected exit 0 and no error line, got {status} with {errors:?}\nstderr:\n{stderr}"
    );
}

/// A JSON-RPC error reply with `"id": null` and this code.
fn assert_unaddressed_error(reply: &Value, code: i64) {
    assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
    assert_eq!(
        reply.get("id"),
        Some(&Value::Null),
        "id must be null: {reply}"
    );
    assert_eq!(reply["error"]["code"], code, "{reply}");
    assert!(reply["error"]["message"].is_string(), "{reply}");
    assert!(reply.get("result").is_none(), "{reply}");
}

// r[verify cli.serve.stdio-parse-error]
#[test]
fn a_line_that_is_not_json_gets_a_parse_error_and_the_session_goes_on() {
    let mut served = Served::start();
    // Before the handshake: answered, and the handshake still works after it.
    served.send_raw("not json");
    assert_unaddressed_error(&served.reply("a parse error for `not json`"), -32700);
    served.initialize();
    // After it: a truncated message, and bytes that are not UTF-8.
    served.send_raw(r#"{"jsonrpc":"2.0","id":7,"method":"tools/li"#);
    assert_unaddressed_error(&served.reply("a parse error for a truncated line"), -32700);
    served.send_bytes(b"\xff\xfe{\"id\":1}");
    assert_unaddressed_error(
        &served.reply("a parse error for bytes that are not UTF-8"),
        -32700,
    );
    // Blank lines are no messages: no reply to them.
    served.send_raw("");
    served.send_raw("   ");
    served.assert_still_serving(8);
    let (status, stderr) = served.finish();
    assert_clean_end(status, &stderr);
}

// r[verify cli.serve.stdio-invalid-params]
#[test]
fn wrong_parameter_types_get_invalid_params_and_the_session_goes_on() {
    let mut served = Served::start();
    served.initialize();
    let bad = [
        json!({"name": "list_notes", "arguments": 5}),
        json!({"name": 7}),
        json!({"name": "list_notes", "arguments": "folder"}),
        json!({"arguments": {}}),
    ];
    for (id, params) in (10..).zip(&bad) {
        served.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
        let reply = served.reply(&format!("an invalid-params error for {params}"));
        assert_eq!(reply["id"], id, "{reply}");
        assert_eq!(reply["error"]["code"], -32602, "{params} → {reply}");
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.contains("tools/call"), "{message}");
    }
    // Other methods the server serves, with params of the wrong type.
    served.send(
        json!({"jsonrpc": "2.0", "id": 20, "method": "resources/read", "params": {"uri": 3}}),
    );
    let reply = served.reply("an invalid-params error for resources/read");
    assert_eq!(reply["id"], 20, "{reply}");
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    // A method nobody serves stays method-not-found, and a well-typed call still runs.
    served.send(json!({"jsonrpc": "2.0", "id": 21, "method": "no/such-method", "params": {}}));
    let reply = served.reply("method not found");
    assert_eq!(reply["id"], 21, "{reply}");
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
    served.send(json!({
        "jsonrpc": "2.0", "id": 22, "method": "tools/call",
        "params": {"name": "list_notes", "arguments": {}}
    }));
    let reply = served.reply("the list_notes result");
    assert_eq!(reply["id"], 22, "{reply}");
    assert!(reply["result"]["content"].is_array(), "{reply}");
    served.assert_still_serving(23);
    let (status, stderr) = served.finish();
    assert_clean_end(status, &stderr);
}

// r[verify cli.serve.stdio-eof-exit]
#[test]
fn stdin_closed_before_any_request_exits_0() {
    let served = Served::start();
    let (status, stderr) = served.finish();
    assert_clean_end(status, &stderr);
}

// r[verify cli.serve.stdio-eof-exit]
#[test]
fn a_session_that_only_discovers_exits_0() {
    let mut served = Served::start();
    served.send(json!({
        "jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }}
    }));
    let reply = served.reply("the server/discover result");
    assert_eq!(reply["id"], 1, "{reply}");
    assert!(reply["result"].is_object(), "{reply}");
    let (status, stderr) = served.finish();
    assert_clean_end(status, &stderr);
}

// r[verify cli.serve.stdio-eof-exit]
#[test]
fn a_session_that_only_initializes_exits_0() {
    let mut served = Served::start();
    served.initialize();
    let (status, stderr) = served.finish();
    assert_clean_end(status, &stderr);
}

// r[verify cli.serve.stdio-eof-exit]
#[test]
fn a_session_that_sends_only_garbage_exits_0() {
    let mut served = Served::start();
    served.send_raw("{oops");
    assert_unaddressed_error(&served.reply("a parse error for `{oops`"), -32700);
    let (status, stderr) = served.finish();
    assert_clean_end(status, &stderr);
}
