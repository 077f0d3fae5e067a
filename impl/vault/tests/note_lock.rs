//! The note lock of `Vault` (spec `vault.write.locked`): compare-and-swap writes with the
//! same expected hash, and read-extend-write appends under [`Vault::with_note_lock`], raced
//! by threads that each hold their own `Vault` on the folder (as separate servers do) and by
//! separate processes.
//!
//! The multi-process tests re-run this test binary as children (`lock_child`, an ignored
//! test that acts only when `TC_VAULT_LOCK_DIR` is set); each child opens its own `Vault` on
//! the shared vault and cache folders.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use tc_gate::clock::{OsEntropy, SystemClock};
use tc_testkit::race::{ChildProcess, REPORT, start_soon, wait_until};
use tc_vault::{Precondition, Vault, VaultError, VaultPath, content_hash, snapshot_dir_for};

const NOTE: &str = "race.md";
const CHILD_DIR: &str = "TC_VAULT_LOCK_DIR";
/// Marks the lines children mean for the parent (libtest prints its own lines too).
const ROUNDS: usize = 50;
const RACERS: usize = 3;
const APPENDS_EACH: usize = 20;

fn open(dir: &Path) -> Vault {
    Vault::open(
        "main",
        &dir.join("vault"),
        snapshot_dir_for(&dir.join("cache"), "main").unwrap(),
        Arc::new(SystemClock),
        Arc::new(OsEntropy),
    )
    .unwrap()
}

fn note() -> VaultPath {
    VaultPath::parse(NOTE).unwrap()
}

fn new_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("vault")).unwrap();
    std::fs::write(dir.path().join("vault").join(NOTE), "start\n").unwrap();
    dir
}

fn note_bytes(dir: &Path) -> Vec<u8> {
    std::fs::read(dir.join("vault").join(NOTE)).unwrap()
}

/// A write of `tag` expecting `expected`: `ok`, or the refusal's code.
fn cas(vault: &Vault, expected: &str, tag: &str) -> String {
    let precondition = Precondition::HashIs(expected.to_owned());
    match vault.write(&note(), tag.as_bytes(), &precondition) {
        Ok(_) => "ok".to_owned(),
        Err(e) => e.code().to_owned(),
    }
}

/// `count` appends of `<tag>-<i>` lines, each reading the note and writing it back extended
/// under the note's lock; the codes of those refused.
fn appends(vault: &Vault, tag: &str, count: usize) -> Vec<String> {
    (0..count)
        .filter_map(|i| {
            vault
                .with_note_lock(&note(), |locked| {
                    let current = locked.read_if_exists()?.expect("the note is there");
                    let mut next = current.bytes.clone();
                    next.extend_from_slice(format!("{tag}-{i}\n").as_bytes());
                    locked.write(&next, &Precondition::HashIs(current.hash))
                })
                .err()
                .map(|e: VaultError| e.code().to_owned())
        })
        .collect()
}

fn check_round(round: usize, outcomes: &[String]) {
    let wins = outcomes.iter().filter(|o| *o == "ok").count();
    assert_eq!(wins, 1, "round {round}: {outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|o| o == "ok" || o == "concurrent_modification"),
        "round {round}: {outcomes:?}"
    );
}

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
fn same_expected_hash_from_threads_with_a_vault_each_has_one_winner() {
    let dir = new_dir();
    let vaults: Vec<Vault> = (0..RACERS).map(|_| open(dir.path())).collect();
    for round in 0..ROUNDS {
        let expected = content_hash(&note_bytes(dir.path()));
        let barrier = Barrier::new(RACERS);
        let outcomes: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = vaults
                .iter()
                .enumerate()
                .map(|(i, vault)| {
                    let (barrier, expected) = (&barrier, &expected);
                    s.spawn(move || {
                        barrier.wait();
                        cas(vault, expected, &format!("r{round}-t{i}"))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        check_round(round, &outcomes);
    }
}

// r[verify vault.write.locked]
#[test]
fn appends_under_the_note_lock_from_threads_all_land() {
    for shared in [true, false] {
        let dir = new_dir();
        let vaults: Vec<Vault> = (0..if shared { 1 } else { RACERS })
            .map(|_| open(dir.path()))
            .collect();
        let barrier = Barrier::new(RACERS);
        let tags: Vec<String> = (0..RACERS).map(|i| format!("t{i}")).collect();
        let refused: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = tags
                .iter()
                .enumerate()
                .map(|(i, tag)| {
                    let vault = &vaults[i % vaults.len()];
                    let barrier = &barrier;
                    s.spawn(move || {
                        barrier.wait();
                        appends(vault, tag, APPENDS_EACH)
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        assert!(refused.is_empty(), "shared vault {shared}: {refused:?}");
        let text = String::from_utf8(note_bytes(dir.path())).unwrap();
        check_all_appended(&text, &tags);
    }
}

// r[verify vault.remove.locked]
#[test]
fn a_guarded_removal_refuses_a_note_changed_since_its_hash_was_taken() {
    let dir = new_dir();
    let vault = open(dir.path());
    let other = VaultPath::parse("other.md").unwrap();
    vault
        .write(&other, b"other\n", &Precondition::None)
        .unwrap();
    let read = Precondition::HashIs(content_hash(b"start\n"));
    let other_read = Precondition::HashIs(content_hash(b"other\n"));
    // What an unconfirmed append does after the handler read the note.
    vault
        .write(&note(), b"start\nappended\n", &Precondition::None)
        .unwrap();
    let code = |r: Result<(), VaultError>| r.unwrap_err().code().to_owned();
    assert_eq!(
        code(vault.delete(&note(), &read)),
        "concurrent_modification"
    );
    assert_eq!(
        code(vault.snapshot_and_delete(&note(), &read).map(|_| ())),
        "concurrent_modification"
    );
    assert_eq!(
        code(vault.rename(&note(), &other, &read, &other_read)),
        "concurrent_modification",
        "the source changed"
    );
    assert_eq!(
        code(vault.rename(&other, &note(), &other_read, &read)),
        "concurrent_modification",
        "the note it would replace changed"
    );
    assert_eq!(note_bytes(dir.path()), b"start\nappended\n");
    assert_eq!(vault.read(&other).unwrap().bytes, b"other\n");
    assert!(
        vault.snapshots(None).unwrap().is_empty(),
        "no snapshot taken"
    );
    // The current hash lets each through.
    let now = Precondition::HashIs(content_hash(b"start\nappended\n"));
    vault.rename(&other, &note(), &other_read, &now).unwrap();
    assert_eq!(note_bytes(dir.path()), b"other\n");
}

// r[verify vault.remove.locked]
#[test]
fn a_guarded_delete_needs_no_text_of_the_note() {
    let dir = new_dir();
    let vault = open(dir.path());
    let bytes = b"\xff\xfe not UTF-8";
    std::fs::write(dir.path().join("vault").join(NOTE), bytes).unwrap();
    let info = vault
        .snapshot_and_delete(&note(), &Precondition::HashIs(content_hash(bytes)))
        .unwrap();
    assert_eq!(info.content_hash, content_hash(bytes));
    assert!(!dir.path().join("vault").join(NOTE).exists());
}

#[test]
fn lock_files_stay_outside_the_vault() {
    let dir = new_dir();
    let vault = open(dir.path());
    vault.write(&note(), b"x", &Precondition::None).unwrap();
    vault
        .rename(
            &note(),
            &VaultPath::parse("moved.md").unwrap(),
            &Precondition::None,
            &Precondition::MustNotExist,
        )
        .unwrap();
    assert!(!vault.lock_dir().starts_with(vault.root().path()));
    assert_eq!(
        vault.lock_dir(),
        dir.path().join("cache/snapshots/main.locks")
    );
    let locks: Vec<_> = std::fs::read_dir(vault.lock_dir()).unwrap().collect();
    assert!(!locks.is_empty() && locks.len() <= 2, "{locks:?}");
    // Nothing but the note is in the vault.
    let names: Vec<String> = std::fs::read_dir(vault.root().path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["moved.md"]);
    // No snapshot folder appears for the locks' sake.
    assert!(!vault.snapshot_dir().exists());
}

// ---------------------------------------------------------------- processes

// r[verify vault.write.locked]
#[test]
fn same_expected_hash_from_processes_has_one_winner() {
    let dir = new_dir();
    let mut children: Vec<ChildProcess> = (0..RACERS)
        .map(|_| ChildProcess::spawn("lock_child", CHILD_DIR, dir.path()))
        .collect();
    for round in 0..ROUNDS {
        let expected = content_hash(&note_bytes(dir.path()));
        let start = start_soon();
        for (i, child) in children.iter_mut().enumerate() {
            child.send(&format!("cas {expected} r{round}-p{i} {start}"));
        }
        let outcomes: Vec<String> = children.iter_mut().map(ChildProcess::report).collect();
        check_round(round, &outcomes);
        let now = String::from_utf8(note_bytes(dir.path())).unwrap();
        let winner = outcomes.iter().position(|o| o == "ok").unwrap();
        assert_eq!(now, format!("r{round}-p{winner}"));
    }
    children.into_iter().for_each(ChildProcess::finish);
}

// r[verify vault.write.locked]
#[test]
fn appends_under_the_note_lock_from_processes_all_land() {
    let dir = new_dir();
    let mut children: Vec<ChildProcess> = (0..RACERS)
        .map(|_| ChildProcess::spawn("lock_child", CHILD_DIR, dir.path()))
        .collect();
    let tags: Vec<String> = (0..RACERS).map(|i| format!("p{i}")).collect();
    let start = start_soon();
    for (child, tag) in children.iter_mut().zip(&tags) {
        child.send(&format!("append {tag} {APPENDS_EACH} {start}"));
    }
    let reports: Vec<String> = children.iter_mut().map(ChildProcess::report).collect();
    assert!(reports.iter().all(|r| r == "refused:"), "{reports:?}");
    let text = String::from_utf8(note_bytes(dir.path())).unwrap();
    check_all_appended(&text, &tags);
    children.into_iter().for_each(ChildProcess::finish);
}

// r[verify vault.write.locked]
#[test]
fn a_note_locked_by_another_process_waits_for_it() {
    let dir = new_dir();
    let mut child = ChildProcess::spawn("lock_child", CHILD_DIR, dir.path());
    child.send("hold 300");
    assert_eq!(child.report(), "holding");
    let vault = open(dir.path());
    let began = Instant::now();
    vault.write(&note(), b"after", &Precondition::None).unwrap();
    assert!(
        began.elapsed() >= Duration::from_millis(200),
        "the write did not wait for the other process's lock: {:?}",
        began.elapsed()
    );
    assert_eq!(child.report(), "released");
    // The child's write, made under its lock, came first.
    assert_eq!(note_bytes(dir.path()), b"after");
    child.finish();
}

/// Not a test: the body of the child processes above (see the module header). Reads
/// commands from stdin until it closes:
/// - `cas <expected hash> <tag> <start ns>`: one write at the start instant, answered `ok`
///   or the refusal's code;
/// - `append <tag> <count> <start ns>`: that many locked appends, answered `refused:` and
///   the codes of any refused;
/// - `hold <ms>`: takes the note's lock, answers `holding`, writes `held` after that long,
///   releases it and answers `released`.
#[test]
#[ignore = "child process of the note lock tests; acts only when TC_VAULT_LOCK_DIR is set"]
fn lock_child() {
    let Some(dir) = std::env::var_os(CHILD_DIR).map(PathBuf::from) else {
        return;
    };
    let vault = open(&dir);
    let mut out = std::io::stdout().lock();
    writeln!(out, "{REPORT}ready").unwrap();
    out.flush().unwrap();
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        let report = match words.as_slice() {
            ["cas", expected, tag, start] => {
                wait_until(start.parse().unwrap());
                cas(&vault, expected, tag)
            }
            ["append", tag, count, start] => {
                wait_until(start.parse().unwrap());
                let refused = appends(&vault, tag, count.parse().unwrap());
                format!("refused:{}", refused.join(","))
            }
            ["hold", ms] => {
                vault
                    .with_note_lock(&note(), |locked| {
                        writeln!(out, "{REPORT}holding").unwrap();
                        out.flush().unwrap();
                        std::thread::sleep(Duration::from_millis(ms.parse().unwrap()));
                        locked.write(b"held", &Precondition::None)
                    })
                    .unwrap();
                "released".to_owned()
            }
            _ => panic!("unknown command {line:?}"),
        };
        writeln!(out, "{REPORT}{report}").unwrap();
        out.flush().unwrap();
    }
}
