//! Versions: every confirmed call that replaces or removes a note's content leaves a snapshot
//! `restore_note` brings back; free calls keep nothing; a restore over a note is gated, keeps
//! that note, and is bound to it and to the snapshot (spec/versions.md).

mod tools_support;

use serde_json::{Value, json};
use tc_tools::ErrorCode;
use tc_vault::VaultPath;
use tc_vault::vault::{SnapshotInfo, SnapshotKind};
use tools_support::{Fx, code, with_token};

fn snapshots(fx: &Fx, path: &str) -> Vec<SnapshotInfo> {
    let vault = &fx.pipeline.vault("main").unwrap().vault;
    vault
        .snapshots(Some(&VaultPath::parse(path).unwrap()))
        .unwrap()
}

fn snapshot_bytes(fx: &Fx, info: &SnapshotInfo) -> String {
    let vault = &fx.pipeline.vault("main").unwrap().vault;
    String::from_utf8(vault.read_snapshot(info).unwrap()).unwrap()
}

/// Runs a call that must ask first, with the token it mints.
fn confirmed(fx: &Fx, tool: &str, args: &Value) -> Value {
    let token = fx.require(tool, args);
    fx.call(tool, with_token(args, &token)).unwrap()
}

/// One confirmed replacing call: the note it replaces, how it is set up, the call.
struct Case {
    tool: &'static str,
    path: &'static str,
    before: &'static str,
    args: Value,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            tool: "write_note",
            path: "a.md",
            before: "old words\n",
            args: json!({"path": "a.md", "content": "new words\n"}),
        },
        Case {
            tool: "patch_note",
            path: "a.md",
            before: "# H\nold line\n",
            args: json!({"path": "a.md", "operation": "replace",
                "anchor": {"type": "heading", "heading": "H"}, "content": "new line\n"}),
        },
        Case {
            tool: "replace_in_note",
            path: "a.md",
            before: "keep\nold line\n",
            args: json!({"path": "a.md", "find": "old", "replace": "new"}),
        },
        Case {
            tool: "update_frontmatter",
            path: "a.md",
            before: "---\nstatus: draft # mine\ntags: [a]\n---\nbody\n",
            args: json!({"path": "a.md", "operation": "replace", "data": {"status": "done"}}),
        },
        Case {
            tool: "copy_note",
            path: "b.md",
            before: "the copy's target\n",
            args: json!({"from": "src.md", "to": "b.md", "overwrite": true}),
        },
        Case {
            tool: "move_note",
            path: "b.md",
            before: "the move's target\n",
            args: json!({"from": "src.md", "to": "b.md", "overwrite": true}),
        },
        Case {
            tool: "prune_hub_links",
            path: "hub.md",
            before: "# Hub\n- [[src]]\n- [[gone]]\n",
            args: json!({"path": "hub.md", "dry_run": false}),
        },
        // r[verify versions.keep.links-and-tags]
        Case {
            tool: "rewrite_link",
            path: "hub.md",
            before: "# Hub\n- [[src]] and [[src|the source]]\n",
            args: json!({"from_target": "src", "to_target": "elsewhere", "dry_run": false}),
        },
        Case {
            tool: "delete_note",
            path: "a.md",
            before: "deleted words\n",
            args: json!({"path": "a.md"}),
        },
    ]
}

// r[verify versions.keep.confirmed]
#[test]
fn every_confirmed_replacing_call_leaves_a_restorable_snapshot() {
    for case in cases() {
        let fx = Fx::new();
        fx.put(case.path, case.before);
        fx.put("src.md", "source\n");
        assert!(snapshots(&fx, case.path).is_empty());
        confirmed(&fx, case.tool, &case.args);
        let kept = snapshots(&fx, case.path);
        assert_eq!(kept.len(), 1, "{}: {kept:?}", case.tool);
        let expected_kind = if case.tool == "delete_note" {
            SnapshotKind::Deleted
        } else {
            SnapshotKind::Replaced
        };
        assert_eq!(kept[0].kind, expected_kind, "{}", case.tool);
        assert_eq!(snapshot_bytes(&fx, &kept[0]), case.before, "{}", case.tool);
        assert_ne!(fx.get(case.path).as_deref(), Some(case.before));
        // restore_note brings the content back, over whatever is there now.
        fx.clock.advance_ms(1_000);
        confirmed(
            &fx,
            "restore_note",
            &json!({"path": case.path, "snapshot_id": kept[0].id.as_str()}),
        );
        assert_eq!(fx.get(case.path).unwrap(), case.before, "{}", case.tool);
    }
}

#[test]
fn a_commit_over_an_edited_wiki_page_keeps_the_edit() {
    let fx = Fx::new();
    fx.seal("wiki/topic.md", "generated v1");
    fx.put("wiki/topic.md", "generated v1, edited by hand");
    confirmed(
        &fx,
        "commit_wiki_page",
        &json!({"path": "wiki/topic.md", "content": "generated v2"}),
    );
    let kept = snapshots(&fx, "wiki/topic.md");
    assert_eq!(kept.len(), 1);
    assert_eq!(
        snapshot_bytes(&fx, &kept[0]),
        "generated v1, edited by hand"
    );
}

// r[verify versions.keep.free]
#[test]
fn free_calls_keep_nothing() {
    let fx = Fx::new();
    fx.put("a.md", "---\nstatus: draft\n---\n# H\nline\n");
    let free = [
        (
            "write_note",
            json!({"path": "a.md", "content": "more\n", "mode": "append"}),
        ),
        (
            "write_note",
            json!({"path": "new.md", "content": "x\n", "mode": "create"}),
        ),
        (
            "patch_note",
            json!({"path": "a.md", "operation": "append",
            "anchor": {"type": "heading", "heading": "H"}, "content": "added\n"}),
        ),
        (
            "update_frontmatter",
            json!({"path": "a.md", "operation": "merge", "data": {"k": 1}}),
        ),
        ("copy_note", json!({"from": "a.md", "to": "c.md"})),
    ];
    for (tool, args) in free {
        fx.call(tool, args.clone())
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
    }
    assert_eq!(fx.requested(), 0, "all free");
    let vault = &fx.pipeline.vault("main").unwrap().vault;
    assert!(vault.snapshots(None).unwrap().is_empty());
}

// r[verify versions.restore.keeps]
// r[verify versions.restore]
#[test]
fn a_restore_over_a_note_asks_and_keeps_that_note() {
    let fx = Fx::new();
    fx.put("a.md", "version one\n");
    confirmed(
        &fx,
        "write_note",
        &json!({"path": "a.md", "content": "version two\n"}),
    );
    let v1 = snapshots(&fx, "a.md").remove(0);
    fx.clock.advance_ms(1_000);
    let args = json!({"path": "a.md", "snapshot_id": v1.id.as_str()});
    assert_eq!(
        code(fx.call("restore_note", args.clone())),
        ErrorCode::ElicitRequired
    );
    let out = confirmed(&fx, "restore_note", &args);
    assert_eq!(out["snapshot_id"], v1.id.as_str());
    assert_eq!(fx.get("a.md").unwrap(), "version one\n");
    // The note the restore replaced is the newest version: the restore can be undone.
    let all = snapshots(&fx, "a.md");
    assert_eq!(all.len(), 2);
    assert_eq!(snapshot_bytes(&fx, &all[1]), "version two\n");
    confirmed(&fx, "restore_note", &json!({"path": "a.md"}));
    assert_eq!(fx.get("a.md").unwrap(), "version two\n");
}

// r[verify drift.bind.restore-note.version]
#[test]
fn a_restore_over_a_note_is_bound_to_its_content() {
    let fx = Fx::new();
    fx.put("a.md", "version one\n");
    confirmed(
        &fx,
        "write_note",
        &json!({"path": "a.md", "content": "version two\n"}),
    );
    let args = json!({"path": "a.md"});
    let token = fx.require("restore_note", &args);
    fx.put("a.md", "version two, edited since\n");
    assert_eq!(
        code(fx.call("restore_note", with_token(&args, &token))),
        ErrorCode::ReplayDrift
    );
    assert_eq!(fx.get("a.md").unwrap(), "version two, edited since\n");
    assert_eq!(
        snapshots(&fx, "a.md").len(),
        1,
        "nothing kept for a refused call"
    );
}

// r[verify versions.restore.summary]
#[test]
fn the_restore_summary_shows_the_diff_from_the_note_to_the_snapshot() {
    let fx = Fx::new();
    fx.put("a.md", "same\nold line\n");
    confirmed(
        &fx,
        "write_note",
        &json!({"path": "a.md", "content": "same\nnew line\n"}),
    );
    fx.clock.advance_ms(3 * 3_600_000);
    let args = json!({"path": "a.md"});
    let refusal = fx.call("restore_note", args).unwrap_err();
    let hash = refusal.details.as_ref().unwrap()["args_hash"]
        .as_str()
        .unwrap()
        .to_owned();
    let summary = fx
        .gate
        .raised_request("main", &hash, "stdio")
        .unwrap()
        .unwrap()
        .summary;
    let id = snapshots(&fx, "a.md")[0].id.as_str().to_owned();
    assert!(summary.contains(&format!("snapshot {id}")), "{summary}");
    assert!(summary.contains("an earlier version"), "{summary}");
    assert!(summary.contains("taken 3 hours ago"), "{summary}");
    assert!(summary.contains("over the note there now"), "{summary}");
    assert!(
        summary.contains("-new line") && summary.contains("+old line"),
        "{summary}"
    );
}

#[test]
fn a_permanent_delete_keeps_no_version_of_the_note() {
    let fx = Fx::new();
    fx.put("a.md", "one\n");
    confirmed(
        &fx,
        "write_note",
        &json!({"path": "a.md", "content": "two\n"}),
    );
    assert_eq!(snapshots(&fx, "a.md").len(), 1);
    confirmed(
        &fx,
        "delete_note",
        &json!({"path": "a.md", "permanent": true}),
    );
    assert!(snapshots(&fx, "a.md").is_empty());
    assert_eq!(
        code(fx.call("restore_note", json!({"path": "a.md"}))),
        ErrorCode::NoteNotFound
    );
}

// r[verify versions.restore.preflight]
#[test]
fn a_restore_the_write_gate_refuses_asks_nothing() {
    let mut fx = Fx::new();
    fx.put("a.md", "---\nstatus: draft\n---\nold\n");
    confirmed(
        &fx,
        "write_note",
        &json!({"path": "a.md", "content": "---\nstatus: done\n---\nnew\n"}),
    );
    // A rule now forbids writes here: the restore would be refused, so it asks nothing.
    fx.reconfigure(None, tools_support::forbid_all());
    let before = fx.requested();
    assert_eq!(
        code(fx.call("restore_note", json!({"path": "a.md"}))),
        ErrorCode::ConventionBlocked
    );
    assert_eq!(fx.requested(), before);
    assert_eq!(fx.get("a.md").unwrap(), "---\nstatus: done\n---\nnew\n");
}

// r[verify versions.restore.any-file]
#[test]
fn an_attachment_restores_from_its_snapshot_with_sizes_for_a_summary() {
    let fx = Fx::new();
    let vault = &fx.pipeline.vault("main").unwrap().vault;
    let path = VaultPath::parse("img/chart.png").unwrap();
    let old = [0x89u8, b'P', b'N', b'G', 0xff, 0x00];
    vault
        .write(&path, &old, &tc_vault::vault::Precondition::None)
        .unwrap();
    vault
        .write_keeping(&path, &[0x89, 0x01], &tc_vault::vault::Precondition::None)
        .unwrap();
    let args = json!({"path": "img/chart.png"});
    let refusal = fx.call("restore_note", args.clone()).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ElicitRequired);
    let hash = refusal.details.as_ref().unwrap()["args_hash"]
        .as_str()
        .unwrap()
        .to_owned();
    let summary = fx
        .gate
        .raised_request("main", &hash, "stdio")
        .unwrap()
        .unwrap()
        .summary;
    assert!(summary.contains("size: 2 bytes -> 6 bytes"), "{summary}");
    assert!(!summary.contains("+++"), "no diff of bytes: {summary}");
    confirmed(&fx, "restore_note", &args);
    assert_eq!(vault.read(&path).unwrap().bytes, old);
    assert_eq!(
        code(fx.call("restore_note", json!({"path": ".obsidian/app.json"}))),
        ErrorCode::PathInvalid
    );
}
