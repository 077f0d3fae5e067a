//! What the tests that drive the built binary over stdio share (spec/cli.md `cli.serve.*`):
//! the `serve` command on a vault with a private cacheDir and no user configuration, the
//! handshake's lines, and a thread that reads the server's stdout as JSON lines.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver};

use serde_json::{Value, json};

/// `obsidian-tc serve <vault> --cache-dir <cache>` with stdin, stdout and stderr piped, and
/// neither `$XDG_CACHE_HOME` nor a home folder a user's configuration could come from.
pub fn serve(vault: &Path, cache: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_obsidian-tc"));
    command
        .arg("serve")
        .arg(vault)
        .arg("--cache-dir")
        .arg(cache)
        .env_remove("XDG_CACHE_HOME")
        .env("HOME", "/nonexistent-home")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// `initialize` (id `"init"`, a 2025-06-18 client called `client` with no capabilities) and
/// `notifications/initialized`.
pub fn handshake(client: &str) -> [Value; 2] {
    [
        json!({
            "jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": client, "version": "0"}
            }
        }),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

/// Each line the server writes to `stdout`, parsed, on a channel; a line that is not JSON
/// comes as `Err` with the line, so the test (not the reader thread) fails on it.
pub fn json_lines(stdout: impl Read + Send + 'static) -> Receiver<Result<Value, String>> {
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let parsed = serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"));
            if send.send(parsed).is_err() {
                break;
            }
        }
    });
    lines
}
