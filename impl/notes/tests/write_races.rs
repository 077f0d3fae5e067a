//! `write_note` racing itself: several servers on one vault and one cache directory (threads
//! with a server each, threads sharing one, and separate processes) send writes with the
//! same `prev_hash` at the same instant, or append at the same time (spec
//! `vault.write.locked`).
//!
//! The multi-process tests re-run this test binary as children (`race_child`, an ignored
//! test that acts only when `TC_NOTES_RACE_DIR` is set), each child building its own
//! pipeline and its own `Vault` over the shared folder, as a second `obsidian-tc serve` would.

mod tools_support;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use serde_json::{Value, json};
use tc_gate::clock::{OsEntropy, SystemClock};
use tc_gate::keys::ServerSecret;
use tc_gate::{Gate, GateConfig, NonTokenRoute, Store};
use tc_testkit::race::{ChildProcess, REPORT, start_soon, wait_until};
use tc_tools::{Approval, CallControl, CallerContext, Pipeline, ToolError};
use tc_vault::acl::Scopes;
use tc_vault::vault::{Vault, content_hash, snapshot_dir_for};
use tools_support::{TempVault, binding, pipeline};

const NOTE: &str = "race.md";
const CHILD_DIR: &str = "TC_NOTES_RACE_DIR";
/// Marks the lines children mean for the parent (libtest prints its own lines too).
const ROUNDS: usize = 50;
const RACERS: usize = 3;
const APPENDS_EACH: usize = 20;

/// One server: its own gate, vault handle and pipeline over `<dir>/vault`, with its cache
/// directory at `<dir>/cache` (shared with every other server on the folder).
struct Server {
    pipeline: Pipeline,
}

impl Server {
    fn on(dir: &Path) -> Self {
        let cache = dir.join("cache");
        let secret = ServerSecret::ephemeral(&OsEntropy);
        let vault = Vault::open(
            "main",
            &dir.join("vault"),
            snapshot_dir_for(&cache, "main").unwrap(),
            Arc::new(SystemClock),
            Arc::new(OsEntropy),
        )
        .unwrap();
        let gate = Gate::new(
            Store::open_in_memory().unwrap(),
            Arc::new(SystemClock),
            Arc::new(OsEntropy),
            GateConfig::default(),
        );
        let pipeline = pipeline(
            tc_notes::registry().unwrap(),
            binding(vault, &cache, &secret, None, &[]),
            gate,
            Arc::new(SystemClock),
            &secret,
        );
        Server { pipeline }
    }

    /// A `write_note`; a call that needs confirmation (an overwrite) is approved the way an
    /// accepted form approves it, bound to the state the call was prepared on.
    fn write_note(&self, args: &Value) -> Result<Value, ToolError> {
        self.call("write_note", args)
    }

    /// A call of `tool`, approved as [`Server::write_note`] approves one when it needs it.
    fn call(&self, tool: &str, args: &Value) -> Result<Value, ToolError> {
        let caller = CallerContext::new("stdio", Scopes::all());
        let control = CallControl::default();
        let prepared = self.pipeline.prepare(&caller, tool, args)?;
        let approval = if prepared.needs_confirmation() {
            Approval::Verified {
                state_fp: prepared.state_fp().clone(),
                route: NonTokenRoute::RequestState,
            }
        } else {
            Approval::None
        };
        self.pipeline
            .execute(&prepared, approval, &control)
            .map(|out| out.to_value())
    }

    /// One compare-and-swap: `mode` with `prev_hash`, reported as `ok` or the refusal's code.
    fn cas(&self, mode: &str, prev_hash: &str, tag: &str) -> String {
        let args = json!({"path": NOTE, "content": tag, "mode": mode, "prev_hash": prev_hash});
        match self.write_note(&args) {
            Ok(_) => "ok".to_owned(),
            Err(e) => e.code.as_str().to_owned(),
        }
    }

    /// `count` appends of `<tag>-<i>` lines; the codes of those refused.
    fn appends(&self, tag: &str, count: usize) -> Vec<String> {
        (0..count)
            .filter_map(|i| {
                let args = json!({"path": NOTE, "content": format!("{tag}-{i}"), "mode": "append"});
                self.write_note(&args)
                    .err()
                    .map(|e| e.code.as_str().to_owned())
            })
            .collect()
    }
}

fn new_vault_dir() -> tempfile::TempDir {
    let temp = TempVault::new();
    temp.put(NOTE, "start\n");
    temp.dir
}

fn note_text(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("vault").join(NOTE)).unwrap()
}

fn note_hash(dir: &Path) -> String {
    content_hash(&std::fs::read(dir.join("vault").join(NOTE)).unwrap())
}

/// The CAS mode of a round: append, prepend and an approved overwrite in turn.
fn mode_of(round: usize) -> &'static str {
    ["append", "prepend", "overwrite"][round % 3]
}

/// One round's outcomes: exactly one `ok`; every other call refused as a lost race.
fn check_round(round: usize, mode: &str, outcomes: &[String]) {
    let wins = outcomes.iter().filter(|o| *o == "ok").count();
    assert_eq!(wins, 1, "round {round} ({mode}): {outcomes:?}");
    for outcome in outcomes.iter().filter(|o| *o != "ok") {
        // An approved overwrite whose note changed before redemption is replay_drift; every
        // other loser is concurrent_modification.
        let expected = outcome == "concurrent_modification"
            || (mode == "overwrite" && outcome == "replay_drift");
        assert!(expected, "round {round} ({mode}): {outcomes:?}");
    }
}

/// The note holds the winner's tag of the round just played (and, for append and prepend,
/// every earlier winner's line is still there).
fn check_note_after(dir: &Path, round: usize, mode: &str, before: &str) {
    let now = note_text(dir);
    let tag = format!("r{round}-");
    let lines: Vec<&str> = now.lines().filter(|l| l.starts_with(&tag)).collect();
    assert_eq!(lines.len(), 1, "round {round} ({mode}): {now:?}");
    if mode != "overwrite" {
        for line in before.lines() {
            assert!(
                now.lines().any(|l| l == line),
                "round {round} lost {line:?}"
            );
        }
    }
}

/// Every `<tag>-<i>` line of every racer is in the note, once.
fn check_all_appended(text: &str, tags: &[String]) {
    for tag in tags {
        for i in 0..APPENDS_EACH {
            let line = format!("{tag}-{i}");
            let seen = text.lines().filter(|l| *l == line).count();
            assert_eq!(seen, 1, "{line:?} appears {seen} times in {text:?}");
        }
    }
    assert_eq!(
        text.lines().count(),
        1 + tags.len() * APPENDS_EACH,
        "{text:?}"
    );
}

// ---------------------------------------------------------------- threads

// r[verify vault.write.locked]
#[test]
fn same_prev_hash_from_threads_with_a_server_each_has_one_winner() {
    let dir = new_vault_dir();
    let servers: Vec<Server> = (0..RACERS).map(|_| Server::on(dir.path())).collect();
    for round in 0..ROUNDS {
        let mode = mode_of(round);
        let before = note_text(dir.path());
        let prev = note_hash(dir.path());
        let barrier = Barrier::new(RACERS);
        let outcomes: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = servers
                .iter()
                .enumerate()
                .map(|(i, server)| {
                    let (barrier, prev) = (&barrier, &prev);
                    s.spawn(move || {
                        barrier.wait();
                        server.cas(mode, prev, &format!("r{round}-t{i}"))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        check_round(round, mode, &outcomes);
        check_note_after(dir.path(), round, mode, &before);
    }
}

// r[verify vault.write.locked]
#[test]
fn appends_from_threads_all_land() {
    for shared in [true, false] {
        let dir = new_vault_dir();
        let servers: Vec<Server> = (0..if shared { 1 } else { RACERS })
            .map(|_| Server::on(dir.path()))
            .collect();
        let barrier = Barrier::new(RACERS);
        let tags: Vec<String> = (0..RACERS).map(|i| format!("t{i}")).collect();
        let refused: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = tags
                .iter()
                .enumerate()
                .map(|(i, tag)| {
                    let server = &servers[i % servers.len()];
                    let barrier = &barrier;
                    s.spawn(move || {
                        barrier.wait();
                        server.appends(tag, APPENDS_EACH)
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        assert!(refused.is_empty(), "shared server {shared}: {refused:?}");
        check_all_appended(&note_text(dir.path()), &tags);
    }
}

/// Races an approved removal of `race.md` (the closure's call) with one unconfirmed append
/// to it, `ROUNDS` times: an append that was answered ok is in the vault afterwards, either
/// because the removal was refused (`replay_drift` or `concurrent_modification`) or because the append came
/// after it and made the note anew. The removal is prepared, and so bound to the note's
/// state, before the race starts, as a call redeemed after the human's approval is.
fn race_removal_with_an_append(what: &str, setup: impl Fn(&Path), removal: Value, tool: &str) {
    let dir = new_vault_dir();
    let server = Server::on(dir.path());
    let caller = CallerContext::new("stdio", Scopes::all());
    let mut refused = 0;
    for round in 0..ROUNDS {
        std::fs::write(dir.path().join("vault").join(NOTE), "start\n").unwrap();
        setup(dir.path());
        let prepared = server.pipeline.prepare(&caller, tool, &removal).unwrap();
        assert!(prepared.needs_confirmation(), "{what}");
        let approval = Approval::Verified {
            state_fp: prepared.state_fp().clone(),
            route: NonTokenRoute::RequestState,
        };
        let line = format!("r{round}");
        let barrier = Barrier::new(2);
        let (removed, appended) = std::thread::scope(|s| {
            let remover = s.spawn(|| {
                barrier.wait();
                server
                    .pipeline
                    .execute(&prepared, approval, &CallControl::default())
                    .map(|_| ())
            });
            let appender = s.spawn(|| {
                barrier.wait();
                server.write_note(&json!({"path": NOTE, "content": line, "mode": "append"}))
            });
            (remover.join().unwrap(), appender.join().unwrap())
        });
        if let Err(e) = &removed {
            // Refused at the drift check before the handler, or under the lock in it.
            let lost_race = ["replay_drift", "concurrent_modification"].contains(&e.code.as_str());
            assert!(lost_race, "{what}: {e:?}");
            refused += 1;
        }
        if appended.is_ok() {
            let kept =
                std::fs::read_to_string(dir.path().join("vault").join(NOTE)).unwrap_or_default();
            assert!(
                kept.lines().any(|l| l == line),
                "{what}, round {round}: the append was answered ok and is gone ({removed:?}, note {kept:?})"
            );
        }
    }
    eprintln!("{what}: {refused} of {ROUNDS} removals lost the race to the append");
}

// r[verify vault.remove.locked]
#[test]
fn an_approved_delete_never_takes_an_append_that_landed_after_its_read() {
    for permanent in [true, false] {
        race_removal_with_an_append(
            if permanent {
                "permanent delete"
            } else {
                "delete to a snapshot"
            },
            |_| {},
            json!({"path": NOTE, "permanent": permanent}),
            "delete_note",
        );
    }
}

// r[verify vault.remove.locked]
#[test]
fn an_approved_move_never_replaces_an_append_that_landed_after_its_read() {
    race_removal_with_an_append(
        "move over the note",
        |dir| std::fs::write(dir.join("vault").join("other.md"), "other\n").unwrap(),
        json!({"from": "other.md", "to": NOTE, "overwrite": true, "update_backlinks": false}),
        "move_note",
    );
}

// ---------------------------------------------------------------- processes

// r[verify vault.write.locked]
#[test]
fn same_prev_hash_from_processes_has_one_winner() {
    let dir = new_vault_dir();
    let mut children: Vec<ChildProcess> = (0..RACERS)
        .map(|_| ChildProcess::spawn("race_child", CHILD_DIR, dir.path()))
        .collect();
    for round in 0..ROUNDS {
        let mode = mode_of(round);
        let before = note_text(dir.path());
        let prev = note_hash(dir.path());
        let start = start_soon();
        for (i, child) in children.iter_mut().enumerate() {
            child.send(&format!("cas {mode} {prev} r{round}-p{i} {start}"));
        }
        let outcomes: Vec<String> = children.iter_mut().map(ChildProcess::report).collect();
        check_round(round, mode, &outcomes);
        check_note_after(dir.path(), round, mode, &before);
    }
    children.into_iter().for_each(ChildProcess::finish);
}

// r[verify vault.write.locked]
#[test]
fn appends_from_processes_all_land() {
    let dir = new_vault_dir();
    let mut children: Vec<ChildProcess> = (0..RACERS)
        .map(|_| ChildProcess::spawn("race_child", CHILD_DIR, dir.path()))
        .collect();
    let tags: Vec<String> = (0..RACERS).map(|i| format!("p{i}")).collect();
    let start = start_soon();
    for (child, tag) in children.iter_mut().zip(&tags) {
        child.send(&format!("append {tag} {APPENDS_EACH} {start}"));
    }
    let reports: Vec<String> = children.iter_mut().map(ChildProcess::report).collect();
    assert!(reports.iter().all(|r| r == "refused:"), "{reports:?}");
    check_all_appended(&note_text(dir.path()), &tags);
    children.into_iter().for_each(ChildProcess::finish);
}

/// Not a test: the body of the child processes above (see the module header). Reads
/// commands from stdin until it closes:
/// - `cas <mode> <prev_hash> <tag> <start ns>`: one write_note at the start instant,
///   answered `ok` or the refusal's code;
/// - `append <tag> <count> <start ns>`: that many appends from the start instant, answered
///   `refused:` followed by the codes of any refused.
#[test]
#[ignore = "child process of the race tests; acts only when TC_NOTES_RACE_DIR is set"]
fn race_child() {
    let Some(dir) = std::env::var_os(CHILD_DIR).map(PathBuf::from) else {
        return;
    };
    let server = Server::on(&dir);
    let mut out = std::io::stdout().lock();
    writeln!(out, "{REPORT}ready").unwrap();
    out.flush().unwrap();
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        let report = match words.as_slice() {
            ["cas", mode, prev, tag, start] => {
                wait_until(start.parse().unwrap());
                server.cas(mode, prev, tag)
            }
            ["append", tag, count, start] => {
                wait_until(start.parse().unwrap());
                let refused = server.appends(tag, count.parse().unwrap());
                format!("refused:{}", refused.join(","))
            }
            _ => panic!("unknown command {line:?}"),
        };
        writeln!(out, "{REPORT}{report}").unwrap();
        out.flush().unwrap();
    }
}
