//! `obsidian-tc rerun` on the built binary: sessions recorded by `obsidian-tc serve` over
//! stdio, then re-run by the operator with each exit status (0 no divergence, 3 a
//! divergence, 4 nothing runnable, 1 an unknown session), as text, as JSON and in a
//! sandbox (spec/sessions.md `sessions.cli.rerun`, `sessions.rerun.exit-codes`,
//! `sessions.rerun.sandbox`; spec/cli.md).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

struct Place {
    dir: tempfile::TempDir,
}

impl Place {
    fn new() -> Place {
        let dir = tempfile::tempdir().unwrap();
        let vault = dir.path().join("vault");
        std::fs::create_dir_all(vault.join("projects")).unwrap();
        std::fs::write(vault.join("projects/plan.md"), "# Plan\n").unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            format!(
                "cacheDir = {:?}\n\n[sessions]\ntraceContent = true\n\n[[vaults]]\nid = \"main\"\nroot = {:?}\n",
                dir.path().join("cache").display().to_string(),
                vault.display().to_string()
            ),
        )
        .unwrap();
        Place { dir }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    fn vault(&self) -> PathBuf {
        self.dir.path().join("vault")
    }

    fn rerun(&self, extra: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_obsidian-tc"))
            .env_remove("XDG_CACHE_HOME")
            .env("HOME", "/nonexistent-home")
            .arg("rerun")
            .args(extra)
            .arg("--config")
            .arg(self.config())
            .output()
            .unwrap()
    }
}

/// `obsidian-tc serve --config` over stdio, spoken to one request at a time.
struct Served {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    replies: mpsc::Receiver<Value>,
    next_id: u64,
}

impl Served {
    fn start(config: &Path) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_obsidian-tc"))
            .env_remove("XDG_CACHE_HOME")
            .env("HOME", "/nonexistent-home")
            .arg("serve")
            .arg("--config")
            .arg(config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (send, replies) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let Ok(value) = serde_json::from_str::<Value>(&line) else {
                    break;
                };
                if send.send(value).is_err() {
                    break;
                }
            }
        });
        let mut served = Served {
            stdin: child.stdin.take(),
            child,
            replies,
            next_id: 0,
        };
        served.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "rerun-test", "version": "0"}}),
        );
        served.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        served
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let reply = self
                .replies
                .recv_timeout(Duration::from_secs(30))
                .expect("a reply");
            if reply["id"] == json!(id) {
                return reply["result"].clone();
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        if result["isError"] == json!(true) {
            // A failure's envelope is its second text block (spec results.error-blocks).
            return serde_json::from_str(result["content"][1]["text"].as_str().unwrap()).unwrap();
        }
        result["structuredContent"].clone()
    }

    fn stop(mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// Records the sessions the tests re-run: `reads` (a read and a listing of projects/) and
/// `writes` (one write_note); returns their ids.
fn record(place: &Place) -> (String, String) {
    let mut served = Served::start(&place.config());
    let reads = served.call("start_session", json!({"label": "reading the plan"}));
    let reads = reads["session"]["session_id"].as_str().unwrap().to_owned();
    let read = served.call("read_notes", json!({"paths": ["projects/plan.md"]}));
    assert_eq!(read["notes"][0]["path"], "projects/plan.md", "{read}");
    served.call("list_notes", json!({"folder": "projects"}));
    served.call("end_session", json!({"session_id": reads}));
    let writes = served.call("start_session", json!({"label": "writing"}));
    let writes = writes["session"]["session_id"].as_str().unwrap().to_owned();
    served.call("write_note", json!({"path": "b.md", "content": "b\n"}));
    served.call("end_session", json!({"session_id": writes}));
    served.stop();
    (reads, writes)
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

// r[verify sessions.cli.rerun]
// r[verify sessions.rerun.exit-codes]
#[test]
fn rerun_reports_and_exits_0_3_4_and_1() {
    let place = Place::new();
    let (reads, writes) = record(&place);

    // As recorded: exit 0, one line per call and a summary line.
    let same = place.rerun(&[&reads]);
    assert_eq!(
        same.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&same.stderr)
    );
    let text = stdout(&same);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[0].contains(&reads) && lines[0].contains("rerun:stdio"),
        "{text}"
    );
    assert!(
        lines[1].contains("read_notes") && lines[1].contains("runnable"),
        "{text}"
    );
    assert!(lines[1].contains("divergence none"), "{text}");
    assert!(
        lines[3].starts_with("2 call(s): 2 run, 0 diverged"),
        "{text}"
    );

    // The folder read in the session was deleted since: a divergence, exit 3.
    std::fs::remove_dir_all(place.vault().join("projects")).unwrap();
    let diverged = place.rerun(&[&reads, "--json"]);
    assert_eq!(diverged.status.code(), Some(3));
    let report: Value = serde_json::from_str(stdout(&diverged).trim()).unwrap();
    assert_eq!(report["session_id"], json!(reads));
    assert_eq!(report["summary"]["diverged"], 1);
    assert_eq!(report["calls"][1]["tool"], "list_notes");
    assert_eq!(report["calls"][1]["divergence"], "status");
    assert_eq!(report["calls"][1]["rerun"]["error_code"], "note_not_found");

    // Only a write, no sandbox: nothing runnable, exit 4.
    let nothing = place.rerun(&[&writes]);
    assert_eq!(nothing.status.code(), Some(4));
    assert!(stdout(&nothing).contains("skipped_changes_vault"));

    // An unknown session: exit 1 with one sentence.
    let unknown = place.rerun(&["s0000000000000000"]);
    assert_eq!(unknown.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(stderr.starts_with("obsidian-tc: "), "{stderr}");
    assert!(stderr.contains("s0000000000000000"), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(unknown.stdout.is_empty());

    // --vault must name the session's vault.
    let elsewhere = place.rerun(&[&reads, "--vault", "other"]);
    assert_eq!(elsewhere.status.code(), Some(1));
}

// r[verify sessions.rerun.sandbox]
#[test]
fn rerun_with_sandbox_runs_the_write_on_a_copy() {
    let place = Place::new();
    let (_, writes) = record(&place);
    std::fs::remove_file(place.vault().join("b.md")).unwrap();
    let sandboxed = place.rerun(&[&writes, "--sandbox"]);
    assert_eq!(
        sandboxed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&sandboxed.stderr)
    );
    let text = stdout(&sandboxed);
    assert!(text.contains("in a sandbox"), "{text}");
    assert!(
        text.contains("write_note") && text.contains("divergence none"),
        "{text}"
    );
    assert!(
        !place.vault().join("b.md").exists(),
        "the vault is not written"
    );
    let sandboxes = place.dir.path().join("cache/sandboxes");
    assert_eq!(std::fs::read_dir(sandboxes).unwrap().count(), 0);
}
