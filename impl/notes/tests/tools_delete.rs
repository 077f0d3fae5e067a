//! delete_note and restore_note: always confirmed.

mod tools_support;

use serde_json::json;
use tc_tools::ErrorCode;
use tc_vault::acl::AclConfig;
use tc_vault::vault::Precondition;
use tools_support::{Fx, Scenario, code, deny_write_all, forbid_all, with_token};

fn delete_scenario() -> Scenario<'static> {
    Scenario {
        tool: "delete_note",
        args: json!({"path": "inbox/a.md"}),
        setup: &|fx| fx.put("inbox/a.md", "doomed"),
        applied: &|fx| assert!(fx.get("inbox/a.md").is_none()),
        untouched: &|fx| assert_eq!(fx.get("inbox/a.md").unwrap(), "doomed"),
        drift: &|fx| fx.put("inbox/a.md", "doomed, but edited"),
    }
}

// r[verify tools.delete-note]
// r[verify vault.snapshot.delete]
// r[verify versions.restore]
// r[verify vault.snapshot.restore]
#[test]
fn delete_snapshots_and_restore_brings_it_back() {
    let fx = Fx::new();
    fx.put("inbox/a.md", "doomed");
    let args = json!({"path": "inbox/a.md"});
    let token = fx.require("delete_note", &args);
    let out = fx.call("delete_note", with_token(&args, &token)).unwrap();
    assert_eq!(out["permanent"], false);
    let snapshot = out["snapshot_id"].as_str().unwrap().to_owned();
    assert!(fx.get("inbox/a.md").is_none());
    // restore_note always asks too.
    let token = fx.require("restore_note", &args);
    let restored = fx.call("restore_note", with_token(&args, &token)).unwrap();
    assert_eq!(restored["snapshot_id"], snapshot);
    assert_eq!(fx.get("inbox/a.md").unwrap(), "doomed");
    // A note at the path is restored over (asking first); no such snapshot refuses before
    // asking.
    let before = fx.requested();
    assert_eq!(
        code(fx.call("restore_note", args.clone())),
        ErrorCode::ElicitRequired
    );
    assert_eq!(fx.requested(), before + 1);
    assert_eq!(
        code(fx.call("restore_note", json!({"path": "never.md"}))),
        ErrorCode::NoteNotFound
    );
    assert_eq!(
        code(fx.call(
            "restore_note",
            json!({"path": "inbox/a.md", "snapshot_id": "1800000000000-0011223344556677"})
        )),
        ErrorCode::NoteNotFound
    );
    assert_eq!(fx.requested(), before + 1);
}

// r[verify vault.snapshot.permanent]
#[test]
fn permanent_delete_keeps_no_snapshot() {
    let fx = Fx::new();
    fx.put("a.md", "gone for good");
    let args = json!({"path": "a.md", "permanent": true});
    let token = fx.require("delete_note", &args);
    let out = fx.call("delete_note", with_token(&args, &token)).unwrap();
    assert_eq!(out["snapshot_id"], serde_json::Value::Null);
    assert_eq!(
        code(fx.call("restore_note", json!({"path": "a.md"}))),
        ErrorCode::NoteNotFound
    );
}

// r[verify tools.not-found]
#[test]
fn deleting_a_missing_note_asks_nothing() {
    let fx = Fx::new();
    assert_eq!(
        code(fx.call("delete_note", json!({"path": "nope.md"}))),
        ErrorCode::NoteNotFound
    );
    assert_eq!(fx.requested(), 0);
}

#[test]
fn delete_note_is_approved_once() {
    delete_scenario().approve_then_replay();
}

#[test]
fn delete_note_drift() {
    delete_scenario().drift_refused();
}

// r[verify vault.acl.declared]
#[test]
fn delete_note_acl_refusal_gives_the_token_back() {
    // Write allowed, delete not: delete_note is judged by deletePaths.
    delete_scenario().acl_releases(AclConfig {
        delete_paths: Some(vec!["scratch/**".into()]),
        ..AclConfig::default()
    });
    delete_scenario().acl_releases(deny_write_all());
}

fn restore_scenario() -> Scenario<'static> {
    Scenario {
        tool: "restore_note",
        args: json!({"path": "a.md"}),
        setup: &|fx| {
            if fx.get("a.md").is_some() {
                fx.remove("a.md");
            }
            let vault = &fx.pipeline.vault("main").unwrap().vault;
            let path = tc_vault::VaultPath::parse("a.md").unwrap();
            if vault.snapshots(Some(&path)).unwrap().is_empty() {
                // The deleted note to restore (the vault layer deletes it, whatever the ACL).
                fx.put("a.md", "v1");
                vault
                    .snapshot_and_delete(&path, &Precondition::None)
                    .unwrap();
            }
        },
        applied: &|fx| assert_eq!(fx.get("a.md").unwrap(), "v1"),
        untouched: &|fx| assert!(fx.get("a.md").is_none()),
        drift: &|fx| {
            // A newer snapshot becomes the latest.
            fx.clock.advance_ms(1_000);
            fx.put("a.md", "v2");
            fx.pipeline
                .vault("main")
                .unwrap()
                .vault
                .snapshot_and_delete(
                    &tc_vault::VaultPath::parse("a.md").unwrap(),
                    &Precondition::None,
                )
                .unwrap();
        },
    }
}

#[test]
fn restore_note_is_approved_once() {
    restore_scenario().approve_then_replay();
}

// r[verify drift.bind.restore-note.version]
#[test]
fn restore_note_drift_when_a_newer_snapshot_is_latest() {
    restore_scenario().drift_refused();
}

// r[verify drift.bind.restore-note.version]
#[test]
fn restore_note_drift_when_the_path_is_taken() {
    let fx = Fx::new();
    (restore_scenario().setup)(&fx);
    let args = json!({"path": "a.md", "snapshot_id": null});
    let token = fx.require("restore_note", &args);
    fx.put("a.md", "someone else's note");
    // The approval covered a free path: a note appearing there is drift, and stays.
    assert_eq!(
        code(fx.call("restore_note", with_token(&args, &token))),
        ErrorCode::ReplayDrift
    );
    assert_eq!(fx.get("a.md").unwrap(), "someone else's note");
}

// r[verify tools.restore-note.preflight]
#[test]
fn restore_note_preflight_never_spends_the_token() {
    restore_scenario().preflight_keeps_token(forbid_all());
}

#[test]
fn restore_note_acl_refusal_gives_the_token_back() {
    restore_scenario().acl_releases(deny_write_all());
}
