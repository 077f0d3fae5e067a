//! `obsidian-tc snapshots` and `obsidian-tc restore` on the versions a server kept
//! (spec/versions.md `versions.cli.*`), run as the built binary.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use serde_json::Value;
use tc_gate::clock::{OsEntropy, SystemClock};
use tc_vault::{Precondition, SnapshotInfo, Vault, VaultPath, snapshot_dir_for};

fn obsidian_tc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_obsidian-tc"))
        .args(args)
        .stdin(Stdio::null())
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

/// The vault as `serve VAULT_DIR` opens it: id `notes` (the folder's name), versions under
/// the cache directory.
fn vault(dir: &Path, cache: &Path) -> Vault {
    Vault::open(
        "notes",
        dir,
        snapshot_dir_for(cache, "notes").unwrap(),
        Arc::new(SystemClock),
        Arc::new(OsEntropy),
    )
    .unwrap()
}

/// A vault `notes` whose `plan.md` held `before` and was overwritten with `after` by a
/// confirmed write, which kept `before` as a version: the folder and that version.
fn replaced(before: &str, after: &str) -> (tempfile::TempDir, SnapshotInfo) {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cache) = (tmp.path().join("notes"), tmp.path().join("cache"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(dir.join("plan.md"), before).unwrap();
    let v = vault(&dir, &cache);
    let note = VaultPath::parse("plan.md").unwrap();
    let current = v.read(&note).unwrap();
    let kept = v
        .write_keeping(&note, after.as_bytes(), &Precondition::HashIs(current.hash))
        .unwrap()
        .kept
        .unwrap();
    (tmp, kept)
}

// r[verify versions.cli.list]
// r[verify versions.cli.restore]
#[test]
fn a_person_lists_shows_and_restores_a_kept_version() {
    let (tmp, _) = replaced(
        "# Plan\nthe words I wrote\n",
        "# Plan\nwhat an agent wrote over it\n",
    );
    let (dir, cache) = (tmp.path().join("notes"), tmp.path().join("cache"));
    let (d, c) = (dir.to_str().unwrap(), cache.to_str().unwrap());

    let listed = obsidian_tc(&["snapshots", d, "--cache-dir", c, "--json"]);
    assert!(listed.status.success(), "{listed:?}");
    let list: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["path"], "plan.md");
    assert_eq!(list[0]["kind"], "replaced");
    assert_eq!(list[0]["vault"], "notes");
    let id = list[0]["snapshot_id"].as_str().unwrap().to_owned();
    let table = obsidian_tc(&["snapshots", d, "--cache-dir", c]);
    assert!(String::from_utf8_lossy(&table.stdout).contains(&id));

    let shown = obsidian_tc(&["snapshots", d, "--cache-dir", c, "--show", &id]);
    assert_eq!(
        String::from_utf8_lossy(&shown.stdout),
        "# Plan\nthe words I wrote\n"
    );

    // No terminal to ask on: refused without --yes, nothing changed.
    let asked = obsidian_tc(&["restore", &id, d, "--cache-dir", c]);
    assert_eq!(asked.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&asked.stderr).contains("--yes"),
        "{asked:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("plan.md")).unwrap(),
        "# Plan\nwhat an agent wrote over it\n"
    );

    let restored = obsidian_tc(&["restore", &id, d, "--cache-dir", c, "--yes"]);
    assert!(restored.status.success(), "{restored:?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("plan.md")).unwrap(),
        "# Plan\nthe words I wrote\n"
    );
    // The agent's text is kept in turn: the restore can be undone.
    let listed = obsidian_tc(&[
        "snapshots",
        d,
        "--cache-dir",
        c,
        "--json",
        "--path",
        "plan.md",
    ]);
    let list: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2, "{list}");
    let newest = list[0]["snapshot_id"].as_str().unwrap();
    let shown = obsidian_tc(&["snapshots", d, "--cache-dir", c, "--show", newest]);
    assert_eq!(
        String::from_utf8_lossy(&shown.stdout),
        "# Plan\nwhat an agent wrote over it\n"
    );

    let unknown = obsidian_tc(&["restore", "0000000000000-00", d, "--cache-dir", c, "--yes"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("obsidian-tc snapshots"));
}

// r[verify versions.cli.restore]
/// On a terminal the restore shows the diff and asks; anything but y/yes changes nothing.
#[test]
fn on_a_terminal_restore_shows_the_change_and_asks() {
    let (tmp, kept) = replaced("# Plan\nmine\n", "# Plan\ntheirs\n");
    let (dir, cache) = (tmp.path().join("notes"), tmp.path().join("cache"));
    let restore = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_obsidian-tc"));
        command
            .args(["restore", kept.id.as_str()])
            .arg(&dir)
            .arg("--cache-dir")
            .arg(&cache)
            .env("RUST_LOG", "warn");
        command
    };
    let mut session = rexpect::session::spawn_command(restore(), Some(10_000)).unwrap();
    session.exp_string("restore plan.md").unwrap();
    session.exp_string("+mine").unwrap();
    session.exp_string("Restore? [y/N]").unwrap();
    session.send_line("n").unwrap();
    session.exp_string("not restored").unwrap();
    session.exp_eof().unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("plan.md")).unwrap(),
        "# Plan\ntheirs\n"
    );
    let mut session = rexpect::session::spawn_command(restore(), Some(10_000)).unwrap();
    session.exp_string("Restore? [y/N]").unwrap();
    session.send_line("y").unwrap();
    session.exp_string("restored plan.md").unwrap();
    session.exp_eof().unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("plan.md")).unwrap(),
        "# Plan\nmine\n"
    );
}
