//! `obsidian-tc elicit` on a real pseudo-terminal: it shows what the call would do and asks
//! before it mints (spec/cli.md `cli.elicit.interactive`; spec/cli.md).

use std::process::Command;
use std::sync::Arc;

use rexpect::session::spawn_command;
use tc_gate::clock::{OsEntropy, SystemClock};
use tc_gate::{CallBinding, EventName, Gate, GateConfig, Store, fingerprint_targets};

const HASH: &str = "0123456789abcdef0123456789abcdef";
const SUMMARY: &str = "delete_note in vault notes for caller stdio\nargs_hash 0123456789abcdef0123456789abcdef\ndelete inbox/a.md (5 bytes) permanently: no snapshot is kept and it cannot be restored\n  target: inbox/a.md";

fn gate(cache: &std::path::Path) -> Gate {
    Gate::new(
        Store::open(cache.join("cache.db")).unwrap(),
        Arc::new(SystemClock),
        Arc::new(OsEntropy),
        GateConfig::new(300).unwrap(),
    )
}

fn raise(gate: &Gate) {
    let call = CallBinding {
        vault: "notes",
        tool: "delete_note",
        args_hash: HASH,
        caller: "stdio",
    };
    let fp = fingerprint_targets(&[("inbox/a.md".to_owned(), Some("h".to_owned()))]);
    gate.raise_with_summary(&call, &fp, SUMMARY).unwrap();
}

fn minted(gate: &Gate) -> usize {
    gate.events(0, 1000)
        .unwrap()
        .iter()
        .filter(|e| e.name == EventName::Minted)
        .count()
}

fn elicit(cache: &std::path::Path, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_obsidian-tc"));
    command
        .env_remove("XDG_CACHE_HOME")
        .env("HOME", "/nonexistent-home")
        .args([
            "elicit",
            "--hash",
            HASH,
            "--tool",
            "delete_note",
            "--vault",
            "notes",
        ])
        .arg("--cache-dir")
        .arg(cache)
        .args(extra);
    command
}

// r[verify cli.elicit.interactive]
#[test]
fn on_a_terminal_elicit_shows_the_summary_and_mints_only_on_yes() {
    let dir = tempfile::tempdir().unwrap();
    let gate = gate(dir.path());
    raise(&gate);

    // Anything but y/yes: nothing is minted, exit 1.
    let mut session = spawn_command(elicit(dir.path(), &[]), Some(10_000)).unwrap();
    session
        .exp_string("An AI agent asks to run this call:")
        .unwrap();
    session
        .exp_string("permanently: no snapshot is kept")
        .unwrap();
    session.exp_string("target: inbox/a.md").unwrap();
    session.exp_string("Approve? [y/N]").unwrap();
    session.send_line("n").unwrap();
    session
        .exp_string("not approved: no token was minted")
        .unwrap();
    session.exp_eof().unwrap();
    assert_eq!(minted(&gate), 0);

    // Yes: the token is printed.
    let mut session = spawn_command(elicit(dir.path(), &[]), Some(10_000)).unwrap();
    session.exp_string("Approve? [y/N]").unwrap();
    session.send_line("yes").unwrap();
    let (_, token) = session.exp_regex("[0-9a-f]{32}").unwrap();
    assert_eq!(token.len(), 32);
    session.exp_eof().unwrap();
    assert_eq!(minted(&gate), 1);

    // --yes on a terminal: no question.
    raise(&gate);
    let mut session = spawn_command(elicit(dir.path(), &["--yes"]), Some(10_000)).unwrap();
    let (before, _) = session.exp_regex("[0-9a-f]{32}").unwrap();
    assert!(!before.contains("Approve?"), "{before}");
    session.exp_eof().unwrap();
    assert_eq!(minted(&gate), 2);
}

// r[verify cli.elicit.interactive]
#[test]
fn without_a_terminal_elicit_mints_without_asking() {
    let dir = tempfile::tempdir().unwrap();
    let gate = gate(dir.path());
    raise(&gate);
    let output = elicit(dir.path(), &[])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8(output.stdout).unwrap().trim().len(), 32);
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(minted(&gate), 1);
}
