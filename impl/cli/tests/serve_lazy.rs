//! `serve` answers `tools/list` before it has read the vault (spec/cli.md `cli.serve.lazy`):
//! the real binary on a vault of 20,000 notes, whose first index build takes seconds, answers
//! the handshake and `tools/list` while the build is still going, which its own stderr shows
//! (the build's progress lines, then "vault index ready", come after the reply).

mod support;

use std::io::{BufRead, BufReader, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const NOTES: usize = 20_000;
const PATIENCE: Duration = Duration::from_secs(120);

enum Seen {
    Reply(Value),
    Log(String),
}

// r[verify cli.serve.lazy]
#[test]
fn tools_list_is_answered_before_the_vault_is_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    for folder in 0..20 {
        std::fs::create_dir_all(vault.join(format!("f{folder:02}"))).unwrap();
    }
    let body = "Some words about a garden, a review and a [[link]].\n".repeat(8);
    for n in 0..NOTES {
        std::fs::write(
            vault.join(format!("f{:02}/note-{n:05}.md", n % 20)),
            format!("# Note {n}\n\n{body}"),
        )
        .unwrap();
    }
    let mut child = support::serve(&vault, &dir.path().join("cache"))
        .env("RUST_LOG", "info")
        .spawn()
        .expect("spawn obsidian-tc serve");
    let (send, seen) = mpsc::channel::<Seen>();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let replies = send.clone();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if let Ok(reply) = serde_json::from_str(&line)
                && replies.send(Seen::Reply(reply)).is_err()
            {
                break;
            }
        }
    });
    let stderr = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if send.send(Seen::Log(line)).is_err() {
                break;
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    let [initialize, initialized] = support::handshake("serve-lazy-test");
    for message in [
        initialize,
        initialized,
        json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    stdin.flush().unwrap();

    let deadline = Instant::now() + PATIENCE;
    let mut log = Vec::new();
    let mut listed: Option<Value> = None;
    let mut ready_after_list = false;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match seen.recv_timeout(left) {
            Ok(Seen::Reply(reply)) if reply["id"] == "list" => listed = Some(reply),
            Ok(Seen::Reply(_)) => {}
            Ok(Seen::Log(line)) => {
                let ready = line.contains("vault index ready");
                log.push(line);
                if ready {
                    ready_after_list = listed.is_some();
                    break;
                }
            }
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let listed =
        listed.unwrap_or_else(|| panic!("no tools/list reply; stderr:\n{}", log.join("\n")));
    let tools = listed["result"]["tools"].as_array().expect("a tool list");
    assert!(
        tools.iter().any(|t| t["name"] == "search_notes"),
        "the index's tools are listed before the index is built"
    );
    assert!(
        ready_after_list,
        "tools/list must be answered before the first index build ends; stderr:\n{}",
        log.join("\n")
    );
    assert!(
        log.iter().any(|l| l.contains(&format!("/{NOTES} files"))),
        "the build reported its progress: {log:?}"
    );
}
