//! What `serve` writes on stderr (spec/cli.md `cli.serve.log-lines`, `cli.serve.log-private`):
//! the real binary, driven over stdio through a gated `write_note` approved with a token the
//! printed command mints and a `read_notes` that returns a note's text, logs one line for
//! the session and one per call at the default level, and never the note's text, the
//! token or the server secret, even at `RUST_LOG=trace`; over HTTP, a stateless request
//! logs its call's line and nothing else.

mod support;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin};
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

const REPLY_TIMEOUT: Duration = Duration::from_secs(30);
/// Text of a note already in the vault, which `read_notes` returns.
const STORED_TEXT: &str = "stored-body-6c1f0e9a";
/// Text a `write_note` sends.
const WRITTEN_TEXT: &str = "written-body-93d2b7e4";

struct Served {
    child: Child,
    stdin: Option<ChildStdin>,
    replies: Receiver<Result<Value, String>>,
    stderr: Option<JoinHandle<String>>,
    next_id: u64,
}

impl Served {
    /// `serve` on `vault` over stdio, with `RUST_LOG` set to `rust_log` (unset when `None`).
    fn start(vault: &Path, cache: &Path, rust_log: Option<&str>) -> Served {
        let mut command = support::serve(vault, cache);
        match rust_log {
            Some(level) => command.env("RUST_LOG", level),
            None => command.env_remove("RUST_LOG"),
        };
        let mut child = command.spawn().expect("spawn obsidian-tc serve");
        let replies = support::json_lines(child.stdout.take().unwrap());
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let mut served = Served {
            stdin: child.stdin.take(),
            child,
            replies,
            stderr: Some(stderr),
            next_id: 0,
        };
        let [initialize, initialized] = support::handshake("log-test");
        served.send(&initialize);
        served.reply();
        served.send(&initialized);
        served
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn reply(&self) -> Value {
        self.replies
            .recv_timeout(REPLY_TIMEOUT)
            .expect("a reply in time")
            .expect("a JSON reply")
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}
        }));
        let reply = self.reply();
        assert_eq!(reply["id"], id, "{reply}");
        reply["result"].clone()
    }

    /// Closes stdin and returns everything the server wrote on stderr.
    fn finish(mut self) -> String {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
        self.stderr.take().unwrap().join().unwrap()
    }
}

/// The text of every content block of a result, joined.
fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs the approval command an `elicit_required` result prints, as the human would, and
/// returns the token it prints.
fn approve(refusal: &Value) -> String {
    let text = text_of(refusal);
    let command = text
        .lines()
        .map(str::trim)
        .find(|line| line.contains(" elicit --hash "))
        .unwrap_or_else(|| panic!("no approval command in {text}"));
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A vault with one note, and the session's secrets: the session runs a gated write approved
/// with a minted token and a read that returns the note's text. Returns stderr, the token
/// and the server secret's bytes.
fn session(rust_log: Option<&str>) -> (String, String, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&vault).unwrap();
    std::fs::write(vault.join("kept.md"), format!("# Kept\n\n{STORED_TEXT}\n")).unwrap();
    std::fs::write(vault.join("target.md"), "# Target\n\nold words\n").unwrap();
    let mut served = Served::start(&vault, &cache, rust_log);
    let write = json!({"path": "target.md", "content": WRITTEN_TEXT});
    let refusal = served.call("write_note", write.clone());
    assert!(text_of(&refusal).contains("elicit_required"), "{refusal}");
    let token = approve(&refusal);
    assert!(token.len() >= 16, "{token:?}");
    let mut approved = write;
    approved["elicit_token"] = json!(token);
    let done = served.call("write_note", approved);
    assert_ne!(done["isError"], true, "{done}");
    let read = served.call("read_notes", json!({"paths": ["kept.md", "target.md"]}));
    let read_text = serde_json::to_string(&read).unwrap();
    assert!(read_text.contains(STORED_TEXT), "{read}");
    assert!(read_text.contains(WRITTEN_TEXT), "{read}");
    let stderr = served.finish();
    let secret = std::fs::read(cache.join("server-secrets/wiki-generated.key")).unwrap();
    (stderr, token, secret)
}

// r[verify cli.serve.log-private]
#[test]
fn no_level_logs_note_text_tokens_or_secrets() {
    for level in ["debug", "trace"] {
        let (stderr, token, secret) = session(Some(level));
        assert!(
            stderr.contains("tools/call"),
            "the calls are logged at {level}: {stderr}"
        );
        for (what, needle) in [
            ("the stored note's text", STORED_TEXT.to_owned()),
            ("the written text", WRITTEN_TEXT.to_owned()),
            ("the approval token", token),
        ] {
            assert!(
                !stderr.contains(&needle),
                "{what} is on stderr at RUST_LOG={level}:\n{stderr}"
            );
        }
        let secret_hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
        assert!(!stderr.contains(&secret_hex), "the secret, at {level}");
        if let Ok(secret_text) = std::str::from_utf8(&secret) {
            let secret_text = secret_text.trim();
            assert!(
                secret_text.len() < 8 || !stderr.contains(secret_text),
                "the secret, at {level}"
            );
        }
    }
}

// r[verify cli.serve.log-lines]
#[test]
fn the_default_level_logs_one_line_per_session_and_per_call() {
    let (stderr, _, _) = session(None);
    let start_up = [
        "serve: configuration checked",
        "vault index",
        "indexing the vault",
        "elicit: requestState codec keyed",
    ];
    let mut sessions = 0;
    let mut calls = Vec::new();
    for line in stderr.lines() {
        if start_up.iter().any(|known| line.contains(known)) {
            continue;
        }
        if line.contains("session opened") {
            sessions += 1;
        } else if line.contains("tools/call") {
            calls.push(line);
        } else {
            panic!("an unexpected line at the default level: {line}\n{stderr}");
        }
    }
    assert_eq!(sessions, 1, "{stderr}");
    assert_eq!(calls.len(), 3, "{stderr}");
    let outcomes = ["elicit_required", "ok", "ok"];
    for (line, outcome) in calls.iter().zip(outcomes) {
        for field in ["tool=", "caller=", "duration_ms="] {
            assert!(line.contains(field), "{field} missing: {line}");
        }
        assert!(line.contains(&format!("outcome={outcome}")), "{line}");
    }
}

/// One HTTP/1.1 POST of `body` (a call of `method` on `name`) to `/mcp` at `addr` as a
/// 2026-07-28 client, with the
/// connection closed after the response; returns the whole response.
fn post_modern(addr: std::net::SocketAddr, method: &str, name: &str, body: &Value) -> String {
    let body = body.to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: {method}\r\nMcp-Name: {name}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

// r[verify cli.serve.log-lines]
#[test]
fn a_stateless_http_request_logs_only_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    std::fs::create_dir_all(&vault).unwrap();
    std::fs::write(vault.join("kept.md"), format!("# Kept\n\n{STORED_TEXT}\n")).unwrap();
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut command = support::serve(&vault, &dir.path().join("cache"));
    command
        .arg("--http")
        .arg(addr.to_string())
        .env_remove("RUST_LOG");
    let mut child = command.spawn().expect("spawn obsidian-tc serve --http");
    let mut stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = std::time::Instant::now() + REPLY_TIMEOUT;
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "log-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let call = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "read_notes", "arguments": {"paths": ["kept.md"]}, "_meta": meta}
    });
    for _ in 0..2 {
        let response = post_modern(addr, "tools/call", "read_notes", &call);
        assert!(response.contains(STORED_TEXT), "{response}");
    }
    let killed = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(killed.success());
    child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    let expected = [
        "serve: configuration checked",
        "vault index",
        "indexing the vault",
        "elicit: requestState codec keyed",
        "serving Streamable HTTP",
        "stopping:",
    ];
    let mut calls = 0;
    for line in stderr.lines() {
        if line.contains("tools/call") {
            assert!(line.contains("outcome=ok"), "{line}");
            calls += 1;
        } else {
            assert!(
                expected.iter().any(|known| line.contains(known)),
                "an unexpected line at the default level: {line}\n{stderr}"
            );
        }
    }
    assert_eq!(calls, 2, "{stderr}");
    assert!(!stderr.contains(STORED_TEXT), "{stderr}");
}

// r[verify cli.serve.log-lines]
#[test]
fn rust_log_governs_every_line() {
    let (stderr, _, _) = session(Some("error"));
    assert_eq!(stderr, "", "nothing at or above error happened");
}
