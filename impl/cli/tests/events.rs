//! `obsidian-tc events`: the audit log, as a table, as JSON lines, filtered, and followed
//! live (spec/cli.md `cli.events.*`; spec/cli.md, spec/events.md).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tc_gate::clock::{OsEntropy, SystemClock};
use tc_gate::{CallBinding, Gate, GateConfig, Store, caller_hash, fingerprint_targets};

const CALL: CallBinding<'static> = CallBinding {
    vault: "notes",
    tool: "delete_note",
    args_hash: "0123456789abcdef0123456789abcdef",
    caller: "alice",
};

fn gate(cache: &std::path::Path) -> Gate {
    Gate::new(
        Store::open(cache.join("cache.db")).unwrap(),
        Arc::new(SystemClock),
        Arc::new(OsEntropy),
        GateConfig::new(300).unwrap(),
    )
}

fn events(cache: &std::path::Path, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_obsidian-tc"));
    command
        .env_remove("XDG_CACHE_HOME")
        .env("HOME", "/nonexistent-home")
        .arg("events")
        .arg("--cache-dir")
        .arg(cache)
        .args(extra);
    command
}

fn lines(command: &mut Command) -> Vec<String> {
    let output = command.output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

// r[verify cli.events.lists-caller]
// r[verify cli.events.json-caller]
#[test]
fn the_audit_log_is_printed_oldest_first_filtered_and_without_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let gate = gate(dir.path());
    let fp = fingerprint_targets(&[("a.md".to_owned(), Some("h".to_owned()))]);
    gate.raise(&CALL, &fp).unwrap();
    let issued = gate.issue(&CALL, None).unwrap();
    let token = issued.token.expose().to_owned();

    let all = lines(&mut events(dir.path(), &["--json"]));
    assert_eq!(all.len(), 2, "{all:?}");
    let first: Value = serde_json::from_str(&all[0]).unwrap();
    let second: Value = serde_json::from_str(&all[1]).unwrap();
    assert_eq!(first["name"], "tc.elicit.requested");
    assert_eq!(second["name"], "elicit_minted");
    assert!(first["id"].as_i64() < second["id"].as_i64());
    assert_eq!(first["vault"], "notes");
    assert_eq!(first["tool"], "delete_note");
    assert_eq!(first["args_hash"], CALL.args_hash);
    assert_eq!(first["caller_hash"], caller_hash("alice"));
    // Who asked, and whose call the token approves.
    assert_eq!(first["caller"], "alice");
    assert_eq!(second["caller"], "alice");
    assert!(first["at"].as_str().unwrap().ends_with('Z'));
    for line in &all {
        assert!(!line.contains(&token), "a token in the log: {line}");
    }

    // --after and --name.
    let after = first["id"].to_string();
    let rest = lines(&mut events(dir.path(), &["--json", "--after", &after]));
    assert_eq!(rest.len(), 1);
    let minted = lines(&mut events(
        dir.path(),
        &["--json", "--name", "elicit_minted"],
    ));
    assert_eq!(minted.len(), 1);
    let output = events(dir.path(), &["--name", "nope"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("tc.elicit.requested"));

    // The table: one line an event, with its fields.
    let table = lines(&mut events(dir.path(), &[]));
    assert_eq!(table.len(), 2);
    assert!(table[0].contains("tc.elicit.requested"), "{}", table[0]);
    assert!(table[0].contains("vault notes") && table[0].contains("tool delete_note"));
    assert!(table[0].contains("caller alice "), "{}", table[0]);
}

// r[verify cli.events.follow]
#[test]
fn follow_prints_events_as_they_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let gate = gate(dir.path());
    let fp = fingerprint_targets(&[("a.md".to_owned(), Some("h".to_owned()))]);
    gate.raise(&CALL, &fp).unwrap();
    let mut child = events(dir.path(), &["--json", "--follow"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.contains("tc.elicit.requested"), "{line}");
    // A new event while it follows.
    let started = Instant::now();
    gate.issue(&CALL, None).unwrap();
    line.clear();
    reader.read_line(&mut line).unwrap();
    assert!(line.contains("elicit_minted"), "{line}");
    assert!(started.elapsed() < Duration::from_secs(5));
    child.kill().unwrap();
    let _ = child.wait();
}

// r[verify gate.sweep.running]
#[test]
fn serve_sweeps_expired_requests_at_start_up() {
    use tc_gate::clock::{ManualClock, SeededEntropy};
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    std::fs::create_dir(&vault).unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    // A request raised an hour ago by an earlier server: long expired.
    let an_hour_ago = tc_gate::clock::Clock::now_ms(&SystemClock) - 3_600_000;
    let earlier = Gate::new(
        Store::open(cache.join("cache.db")).unwrap(),
        Arc::new(ManualClock::new(an_hour_ago)),
        Arc::new(SeededEntropy::new(1)),
        GateConfig::new(300).unwrap(),
    );
    let fp = fingerprint_targets(&[("a.md".to_owned(), Some("h".to_owned()))]);
    earlier.raise(&CALL, &fp).unwrap();
    drop(earlier);
    assert_eq!(gate(&cache).stored_rows().unwrap().raised_requests, 1);
    let mut server = Command::new(env!("CARGO_BIN_EXE_obsidian-tc"))
        .env_remove("XDG_CACHE_HOME")
        .env("HOME", "/nonexistent-home")
        .arg("serve")
        .arg(&vault)
        .arg("--cache-dir")
        .arg(&cache)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The sweep runs when serving starts: wait for the row to go.
    let started = Instant::now();
    let left = loop {
        std::thread::sleep(Duration::from_millis(50));
        let left = gate(&cache).stored_rows().unwrap().raised_requests;
        if left == 0 || started.elapsed() > Duration::from_secs(10) {
            break left;
        }
    };
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(left, 0, "the server did not sweep the expired request");
}
