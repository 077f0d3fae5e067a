//! cache.db under stress: reopening the file, threads and processes racing for one token,
//! and a process killed right after it spent a token (clauses gate.token.single-use,
//! gate.token.durable-consume, events.durable).
//!
//! The multi-process tests re-run this test binary as a child (`child_process_entry`, an
//! ignored test that only acts when `TC_GATE_CHILD` names a mode), so no extra binary is
//! needed: each child opens its own connection to the same file, as a second server or the
//! CLI would.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Barrier, Mutex, PoisonError};
use std::time::Duration;

use common::*;
use tc_gate::clock::ManualClock;
use tc_gate::{EventName, Gate, RedeemError, SpentReason, StateFp};

const ROUNDS: usize = 100;
const CHILD_MODE: &str = "TC_GATE_CHILD";
const CHILD_DB: &str = "TC_GATE_CHILD_DB";
const CHILD_TOKEN: &str = "TC_GATE_CHILD_TOKEN";
/// Marks the reports children mean for the parent (libtest prints its own lines too).
const REPORT: &str = "@@";

fn raise_and_issue(gate: &Gate) -> String {
    gate.raise(&DELETE, &StateFp::none()).expect("raise");
    gate.issue(&DELETE, None)
        .expect("issue")
        .token
        .expose()
        .to_owned()
}

// r[verify events.durable]
// r[verify gate.token.durable-consume]
#[test]
fn reopening_the_file_keeps_tokens_consumption_raises_and_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cache.db");
    let clock = ManualClock::new(START_MS);
    let fp = fp_of(Some("h"));
    let (spent, unspent) = {
        let gate = on_file_manual(&path, &clock, 1);
        gate.raise(&DELETE, &fp).expect("raise");
        let spent = gate
            .issue(&DELETE, None)
            .expect("issue")
            .token
            .expose()
            .to_owned();
        // Each mint consumes its raised request: the blocked call is raised again for the
        // second token, and once more so a request is pending when the file is closed.
        gate.raise(&DELETE, &fp).expect("raise again");
        let unspent = gate
            .issue(&DELETE, None)
            .expect("issue")
            .token
            .expose()
            .to_owned();
        gate.raise(&DELETE, &fp).expect("raise pending");
        gate.redeem(&spent, &DELETE, || fp.clone())
            .expect("redeem")
            .enter_handler()
            .expect("enter")
            .keep_spent(SpentReason::Completed);
        (spent, unspent)
    };
    let gate = on_file_manual(&path, &clock, 2);
    assert!(matches!(
        gate.redeem(&spent, &DELETE, || fp.clone()),
        Err(RedeemError::AlreadySpent)
    ));
    let retained = gate
        .raised_request(DELETE.vault, DELETE.args_hash, DELETE.caller)
        .expect("read")
        .expect("raise survives");
    assert_eq!(retained.state_fp, fp);
    gate.issue(&DELETE, Some(fp.as_str()))
        .expect("the raise still backs a mint");
    gate.redeem(&unspent, &DELETE, || fp.clone())
        .expect("the unspent token survives")
        .keep_spent(SpentReason::Completed);
    let names: Vec<EventName> = gate
        .events(0, 100)
        .expect("events")
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(
        names,
        [
            EventName::Requested,
            EventName::Minted,
            EventName::Requested,
            EventName::Minted,
            EventName::Requested,
            EventName::Consumed,
            EventName::Minted
        ]
    );
}

/// 8 threads race for one token per round, 100 rounds; returns the rounds each win was in.
/// `shared`: one gate for all (the in-process group commit), else a connection each.
fn race_threads(shared: bool) -> Vec<usize> {
    const THREADS: usize = 8;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cache.db");
    let issuer = on_file(&path);
    let current = Arc::new(Mutex::new(String::new()));
    let start = Arc::new(Barrier::new(THREADS + 1));
    let done = Arc::new(Barrier::new(THREADS + 1));
    let wins = Arc::new(Mutex::new(Vec::<usize>::new()));

    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let gate = shared.then(|| issuer.clone());
            let (path, current, start, done, wins) = (
                path.clone(),
                Arc::clone(&current),
                Arc::clone(&start),
                Arc::clone(&done),
                Arc::clone(&wins),
            );
            std::thread::spawn(move || {
                let gate = gate.unwrap_or_else(|| on_file(&path));
                for round in 0..ROUNDS {
                    start.wait();
                    let token = current
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clone();
                    match gate.redeem(&token, &DELETE, StateFp::none) {
                        Ok(redemption) => {
                            redemption.keep_spent(SpentReason::Completed);
                            wins.lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .push(round);
                        }
                        Err(RedeemError::AlreadySpent) => {}
                        Err(other) => panic!("round {round}: unexpected refusal {other:?}"),
                    }
                    done.wait();
                }
            })
        })
        .collect();

    for _ in 0..ROUNDS {
        *current.lock().unwrap_or_else(PoisonError::into_inner) = raise_and_issue(&issuer);
        start.wait();
        done.wait();
    }
    for worker in workers {
        worker.join().expect("worker");
    }
    let mut wins = wins.lock().unwrap_or_else(PoisonError::into_inner).clone();
    wins.sort_unstable();
    wins
}

// r[verify gate.token.single-use]
#[test]
fn eight_threads_with_their_own_connections_race_for_one_token_and_one_wins() {
    let expected: Vec<usize> = (0..ROUNDS).collect();
    assert_eq!(
        race_threads(false),
        expected,
        "exactly one winner per round"
    );
}

// r[verify gate.token.single-use]
#[test]
fn eight_threads_sharing_one_gate_race_for_one_token_and_one_wins() {
    let expected: Vec<usize> = (0..ROUNDS).collect();
    assert_eq!(race_threads(true), expected, "exactly one winner per round");
}

#[test]
fn concurrent_redemptions_of_different_tokens_all_succeed_through_the_group_commit() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 25;
    let dir = tempfile::tempdir().expect("tempdir");
    let gate = on_file(&dir.path().join("cache.db"));
    let tokens: Vec<Vec<String>> = (0..THREADS)
        .map(|_| (0..PER_THREAD).map(|_| raise_and_issue(&gate)).collect())
        .collect();
    let workers: Vec<_> = tokens
        .into_iter()
        .map(|mine| {
            let gate = gate.clone();
            std::thread::spawn(move || {
                for token in &mine {
                    gate.redeem(token, &DELETE, StateFp::none)
                        .expect("each token once")
                        .keep_spent(SpentReason::Completed);
                }
                mine
            })
        })
        .collect();
    for worker in workers {
        for token in worker.join().expect("worker") {
            assert!(matches!(
                gate.redeem(&token, &DELETE, StateFp::none),
                Err(RedeemError::AlreadySpent)
            ));
        }
    }
}

struct ChildProcess {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl ChildProcess {
    fn spawn(mode: &str, db: &Path, token: Option<&str>) -> Self {
        let mut command = Command::new(std::env::current_exe().expect("current_exe"));
        command
            .args(["child_process_entry", "--exact", "--ignored", "--nocapture"])
            .args(["--test-threads", "1"])
            .env(CHILD_MODE, mode)
            .env(CHILD_DB, db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(token) = token {
            command.env(CHILD_TOKEN, token);
        }
        let mut child = command.spawn().expect("spawn child");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        ChildProcess {
            child,
            stdin,
            stdout,
        }
    }

    /// The next line the child meant for us.
    fn report(&mut self) -> String {
        loop {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line).expect("read child");
            assert!(read > 0, "child ended without reporting");
            // libtest may have written "test child_process_entry ... " before it on the line.
            if let Some(at) = line.find(REPORT) {
                return line[at + REPORT.len()..].trim_end().to_owned();
            }
        }
    }
}

// r[verify gate.token.single-use]
#[test]
fn two_processes_race_for_one_token_and_one_wins() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cache.db");
    let issuer = on_file(&path);
    let mut children = [
        ChildProcess::spawn("race", &path, None),
        ChildProcess::spawn("race", &path, None),
    ];
    for child in &mut children {
        assert_eq!(child.report(), "ready");
    }
    for round in 0..ROUNDS {
        let token = raise_and_issue(&issuer);
        for child in &mut children {
            writeln!(child.stdin, "{token}").expect("send token");
            child.stdin.flush().expect("flush");
        }
        let outcomes: Vec<String> = children.iter_mut().map(ChildProcess::report).collect();
        let wins = outcomes.iter().filter(|o| *o == "win").count();
        assert!(
            outcomes.iter().all(|o| o == "win" || o == "spent"),
            "round {round}: {outcomes:?}"
        );
        assert_eq!(wins, 1, "round {round}: {outcomes:?}");
    }
    for mut child in children {
        drop(child.stdin);
        assert!(child.child.wait().expect("wait").success());
    }
}

// r[verify gate.token.durable-consume]
#[test]
fn a_process_killed_right_after_spending_a_token_leaves_no_second_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cache.db");
    let gate = on_file(&path);
    let token = raise_and_issue(&gate);
    let mut child = ChildProcess::spawn("consume-then-hang", &path, Some(&token));
    assert_eq!(child.report(), "consumed");
    child.child.kill().expect("SIGKILL");
    let status = child.child.wait().expect("wait");
    assert!(
        !status.success(),
        "the child was killed, not finished: {status:?}"
    );

    // The same gate, and a fresh process-like one on the file, both see it spent.
    assert!(matches!(
        gate.redeem(&token, &DELETE, StateFp::none),
        Err(RedeemError::AlreadySpent)
    ));
    let reopened = on_file(&path);
    assert!(matches!(
        reopened.redeem(&token, &DELETE, StateFp::none),
        Err(RedeemError::AlreadySpent)
    ));
    let events = reopened.events(0, 100).expect("events");
    assert!(
        events.iter().all(|e| e.name != EventName::Released),
        "{events:?}"
    );
}

/// Not a test: the body of the child processes above (see the module header).
#[test]
#[ignore = "child process of the durability tests; acts only when TC_GATE_CHILD is set"]
fn child_process_entry() {
    let Ok(mode) = std::env::var(CHILD_MODE) else {
        return;
    };
    let db = PathBuf::from(std::env::var_os(CHILD_DB).expect("TC_GATE_CHILD_DB"));
    let gate = on_file(&db);
    let mut out = std::io::stdout().lock();
    match mode.as_str() {
        "race" => {
            writeln!(out, "{REPORT}ready").expect("write");
            out.flush().expect("flush");
            for line in std::io::stdin().lock().lines() {
                let token = line.expect("read token");
                let outcome = match gate.redeem(&token, &DELETE, StateFp::none) {
                    Ok(redemption) => {
                        redemption.keep_spent(SpentReason::Completed);
                        "win".to_owned()
                    }
                    Err(RedeemError::AlreadySpent) => "spent".to_owned(),
                    Err(other) => format!("error {other}"),
                };
                writeln!(out, "{REPORT}{outcome}").expect("write");
                out.flush().expect("flush");
            }
        }
        "consume-then-hang" => {
            let token = std::env::var(CHILD_TOKEN).expect("TC_GATE_CHILD_TOKEN");
            let redemption = gate.redeem(&token, &DELETE, StateFp::none);
            let report = if redemption.is_ok() {
                "consumed"
            } else {
                "refused"
            };
            writeln!(out, "{REPORT}{report}").expect("write");
            out.flush().expect("flush");
            // Hold the guard, as a handler about to run would, until the parent kills us.
            std::thread::sleep(Duration::from_secs(60));
            drop(redemption);
        }
        other => panic!("unknown child mode {other}"),
    }
}

// r[verify state.ext.single-use]
// r[verify state.ext.durable]
#[test]
fn a_sealed_single_use_state_is_admitted_once_across_processes_sharing_cache_db() {
    use tc_gate::clock::SeededEntropy;
    use tc_gate::keys::ServerSecret;
    use tc_gate::request_state::{RequestStateSealer, StateBinding};
    use tc_gate::{AdmitError, GateConfig, RequestStateMode, Store};

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cache.db");
    let clock = ManualClock::new(START_MS);
    let single_use = || {
        Gate::new(
            Store::open(&path).expect("open"),
            Arc::new(clock.clone()),
            Arc::new(SeededEntropy::new(3)),
            GateConfig::new(TTL_SECONDS)
                .expect("ttl")
                .with_request_state_mode(RequestStateMode::SingleUse),
        )
    };
    let (server_a, server_b) = (single_use(), single_use());
    let entropy = SeededEntropy::new(9);
    let sealer = RequestStateSealer::new(&ServerSecret::ephemeral(&entropy));
    let binding = StateBinding {
        caller: DELETE.caller,
        vault: DELETE.vault,
        tool: DELETE.tool,
        args_hash: DELETE.args_hash,
        state_fp: "",
    };
    let sealed = sealer.seal(&binding, TTL_MS as u64, START_MS, &entropy);
    let opened = sealer
        .open(&sealed.token, &binding, START_MS + 1)
        .expect("authentic");
    server_a
        .admit_request_state(&opened)
        .expect("first presentation");
    let again = sealer
        .open(&sealed.token, &binding, START_MS + 2)
        .expect("still authentic: the codec does not consume");
    assert!(matches!(
        server_b.admit_request_state(&again),
        Err(AdmitError::AlreadyUsed)
    ));
    drop((server_a, server_b));
    assert!(matches!(
        single_use().admit_request_state(&again),
        Err(AdmitError::AlreadyUsed)
    ));
}

// r[verify config.cache-dir.shared-startup]
/// A reader holding a fresh file delays opening the store, and does not fail it: the switch
/// to WAL waits for the lock (here through SQLite's busy handler; the immediate `SQLITE_BUSY`
/// of two processes switching at once, which `enter_wal` retries, is the CLI's startup-race
/// test's to provoke).
#[test]
fn opening_waits_for_a_reader_to_let_go_of_a_fresh_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.db");
    let reader = rusqlite::Connection::open(&path).unwrap();
    reader
        .execute_batch("CREATE TABLE held (x INTEGER); INSERT INTO held VALUES (1); BEGIN;")
        .unwrap();
    let held: i64 = reader
        .query_row("SELECT count(*) FROM held", [], |row| row.get(0))
        .unwrap();
    assert_eq!(held, 1);
    let opening = {
        let path = path.clone();
        std::thread::spawn(move || tc_gate::Store::open(&path).map(drop))
    };
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !opening.is_finished(),
        "the store opened under a reader's lock"
    );
    reader.execute_batch("COMMIT").unwrap();
    opening
        .join()
        .unwrap()
        .expect("the store opens once the reader lets go");
    drop(reader);
    let mode: String = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode.to_ascii_lowercase(), "wal");
}

// r[verify config.cache-dir.shared-startup]
/// Stores opened at the same moment on one fresh file all open: the one that switches the
/// file to WAL holds it exclusively, and SQLite answers the others `SQLITE_BUSY` at once,
/// which the switch retries (cargo-mutants: without the retry every other tc-gate test
/// passed).
#[test]
fn stores_opened_at_once_on_a_fresh_file_all_open() {
    const OPENERS: usize = 8;
    for _ in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.db");
        let barrier = Arc::new(Barrier::new(OPENERS));
        let openers: Vec<_> = (0..OPENERS)
            .map(|_| {
                let (path, barrier) = (path.clone(), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    barrier.wait();
                    tc_gate::Store::open(&path).map(drop)
                })
            })
            .collect();
        for opener in openers {
            opener.join().unwrap().expect("every store opens");
        }
    }
}
