//! How `serve` starts and stops, with the real binary (spec/cli.md
//! `cli.serve.http-bind-first`, `cli.serve.signals`): a busy HTTP address is refused before
//! anything is built, SIGINT and SIGTERM stop the server on both transports (also when
//! the parent told it to ignore SIGINT), and over HTTP a request in flight when the signal
//! comes is still answered.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(30);

/// Each stderr line of `child`, on a channel.
fn stderr_lines(child: &mut Child) -> Receiver<String> {
    let (send, lines) = mpsc::channel();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

/// Reads stderr until a line contains `wanted`; every line read is kept in `log`.
fn wait_for(lines: &Receiver<String>, wanted: &str, log: &mut Vec<String>) -> String {
    let deadline = Instant::now() + PATIENCE;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) => {
                log.push(line.clone());
                if line.contains(wanted) {
                    return line;
                }
            }
            Err(_) => break,
        }
    }
    panic!(
        "no stderr line with {wanted:?}; stderr so far:\n{}",
        log.join("\n")
    );
}

fn signal(child: &Child, name: &str) {
    let sent = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{name}");
}

/// Waits for `child` to exit, at most `within`.
fn exit_within(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn vault_and_cache() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    std::fs::create_dir_all(&vault).unwrap();
    std::fs::write(vault.join("a.md"), "# a\n").unwrap();
    let cache = dir.path().join("cache");
    (dir, vault, cache)
}

// r[verify cli.serve.http-bind-first]
#[test]
fn a_busy_http_address_is_refused_before_anything_is_built() {
    let (_dir, vault, cache) = vault_and_cache();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let started = Instant::now();
    let output = support::serve(&vault, &cache)
        .arg("--http")
        .arg(addr.to_string())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(10), "{stderr}");
    let refusal = stderr
        .lines()
        .find(|line| line.starts_with("obsidian-tc: "))
        .unwrap_or_else(|| panic!("no refusal line: {stderr}"));
    assert!(refusal.contains(&addr.to_string()), "{refusal}");
    assert!(refusal.contains("another process"), "{refusal}");
    assert!(
        !stderr.contains("elicit: requestState"),
        "the server was assembled before the address was tried: {stderr}"
    );
    assert!(
        !cache.join("cache.db").exists(),
        "cache.db was opened before the address was tried"
    );
}

/// `serve` under `sh` with SIGINT ignored, as `nohup` or a script's `&` would start it.
fn serve_with_sigint_ignored(vault: &Path, cache: &Path, extra: &[&str]) -> Child {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("trap '' INT; exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_obsidian-tc"))
        .arg("serve")
        .arg(vault)
        .arg("--cache-dir")
        .arg(cache)
        .args(extra)
        .env_remove("XDG_CACHE_HOME")
        .env_remove("RUST_LOG")
        .env("HOME", "/nonexistent-home")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command.spawn().expect("spawn obsidian-tc serve")
}

// r[verify cli.serve.signals]
#[test]
fn sigint_and_sigterm_stop_serve_on_stdio_even_with_sigint_ignored() {
    for name in ["INT", "TERM"] {
        let (_dir, vault, cache) = vault_and_cache();
        let mut child = serve_with_sigint_ignored(&vault, &cache, &[]);
        let lines = stderr_lines(&mut child);
        let mut log = Vec::new();
        wait_for(&lines, "elicit: requestState", &mut log);
        // Give the transport a moment to be reading stdin.
        std::thread::sleep(Duration::from_millis(200));
        signal(&child, name);
        let status = exit_within(&mut child, Duration::from_secs(15));
        let Some(status) = status else {
            let _ = child.kill();
            panic!("SIG{name} did not stop serve; stderr:\n{}", log.join("\n"));
        };
        let said = wait_for(&lines, "stopping", &mut log);
        assert!(said.contains(&format!("SIG{name}")), "{said}");
        assert!(
            status.success(),
            "SIG{name}: {status:?}\n{}",
            log.join("\n")
        );
        drop(child.stdin.take());
    }
}

// r[verify cli.serve.signals]
#[test]
fn sigterm_over_http_lets_the_request_in_flight_finish() {
    let (_dir, vault, cache) = vault_and_cache();
    let mut child = serve_with_sigint_ignored(&vault, &cache, &["--http", "127.0.0.1:0"]);
    let lines = stderr_lines(&mut child);
    let mut log = Vec::new();
    let serving = wait_for(&lines, "serving Streamable HTTP at http://", &mut log);
    let authority = serving
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned();

    // A request whose body is only half sent when the signal comes.
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "serve-stop-test", "version": "0"}
        }
    })
    .to_string();
    let (first, rest) = body.split_at(body.len() / 2);
    let mut stream = TcpStream::connect(&authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{first}",
        body.len()
    )
    .unwrap();
    stream.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));

    signal(&child, "TERM");
    wait_for(&lines, "stopping: SIGTERM", &mut log);
    assert!(
        child.try_wait().unwrap().is_none(),
        "serve ended with a request in flight"
    );
    stream.write_all(rest.as_bytes()).unwrap();
    stream.flush().unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200", "{}", String::from_utf8_lossy(&head));
    drop(stream);

    let Some(status) = exit_within(&mut child, Duration::from_secs(15)) else {
        let _ = child.kill();
        panic!("serve did not stop; stderr:\n{}", log.join("\n"));
    };
    assert!(status.success(), "{status:?}\n{}", log.join("\n"));
}
