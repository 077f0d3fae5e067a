//! The link tools on the index (spec/index.md `index.links.candidates`, `index.reconcile`,
//! `index.hidden`; spec/drift.md `drift.bind.rewrite-link`, `drift.bind.path-tools`): the
//! index path is the one taken, the plans and bindings are those of the scan, and an edit
//! made on disk behind the server's back is seen by the next call.

mod support;

use serde_json::json;
use support::{Fx, indexed, with_token};
use tc_tools::ErrorCode;

fn linked_vault(fx: &Fx) {
    fx.put("old/Plan.md", "# Plan\nself [[Plan#Goals]]\n");
    fx.put("a.md", "[[Plan]] and ![[Plan]]\n");
    fx.put("sub/b.md", "see [[old/Plan|the plan]]\n");
    fx.put("c.md", "nothing here\n");
    for i in 0..20 {
        fx.put(&format!("filler/{i}.md"), "no links at all\n");
    }
}

// r[verify index.links.candidates]
#[test]
fn move_note_backlinks_come_from_the_index_and_are_rewritten() {
    let fx = Fx::new();
    linked_vault(&fx);
    let index = indexed(&fx);
    let args = json!({"from": "old/Plan.md", "to": "new/Plan.md"});
    let token = fx.require("move_note", &args);
    let before = index.answered();
    let out = fx.call("move_note", with_token(&args, &token)).unwrap();
    assert!(
        index.answered() > before,
        "the index answered the backlink plan"
    );
    assert_eq!(out["backlinks"]["notes_count"], 3, "{out}");
    assert_eq!(fx.get("a.md").unwrap(), "[[Plan]] and ![[Plan]]\n");
    assert_eq!(fx.get("sub/b.md").unwrap(), "see [[Plan|the plan]]\n");
    assert_eq!(
        fx.get("new/Plan.md").unwrap(),
        "# Plan\nself [[Plan#Goals]]\n"
    );
    assert_eq!(fx.get("c.md").unwrap(), "nothing here\n");
}

#[test]
fn a_new_note_written_on_disk_behind_the_server_is_drift_for_move_note() {
    let fx = Fx::new();
    linked_vault(&fx);
    indexed(&fx);
    let args = json!({"from": "old/Plan.md", "to": "new/Plan.md"});
    let token = fx.require("move_note", &args);
    // Straight into the folder, not through a tool: only a reconciliation can see it.
    fx.put("late.md", "links to [[Plan]]\n");
    let refusal = fx.call("move_note", with_token(&args, &token)).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ReplayDrift, "{refusal}");
    assert!(fx.get("old/Plan.md").is_some(), "nothing moved");
    // Approved afresh, the late note is rewritten too.
    let token = fx.require("move_note", &args);
    let out = fx.call("move_note", with_token(&args, &token)).unwrap();
    assert_eq!(out["backlinks"]["notes_count"], 4, "{out}");
    assert_eq!(fx.get("late.md").unwrap(), "links to [[Plan]]\n");
}

// r[verify index.reconcile]
#[test]
fn rewrite_link_sees_edits_made_on_disk_at_once() {
    let fx = Fx::new();
    linked_vault(&fx);
    indexed(&fx);
    let dry = json!({"from_target": "Plan", "to_target": "Roadmap"});
    let first = fx.call("rewrite_link", dry.clone()).unwrap();
    assert_eq!(first["notes_count"], 3, "{first}");
    fx.put("c.md", "now [[Plan]] too\n");
    fx.remove("sub/b.md");
    let second = fx.call("rewrite_link", dry).unwrap();
    let paths: Vec<&str> = second["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["a.md", "c.md", "old/Plan.md"], "{second}");
}

#[test]
fn rewrite_link_drift_when_a_touched_note_changes_or_a_note_gains_a_link() {
    for drift in ["touched", "gained"] {
        let fx = Fx::new();
        linked_vault(&fx);
        indexed(&fx);
        let args = json!({"from_target": "Plan", "to_target": "Roadmap", "dry_run": false});
        let token = fx.require("rewrite_link", &args);
        match drift {
            "touched" => fx.put("a.md", "[[Plan]] edited\n"),
            _ => fx.put("filler/3.md", "now [[Plan]]\n"),
        }
        let refusal = fx
            .call("rewrite_link", with_token(&args, &token))
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ReplayDrift, "{drift}: {refusal}");
        assert_eq!(fx.get("sub/b.md").unwrap(), "see [[old/Plan|the plan]]\n");
    }
}

#[test]
fn the_plan_on_the_index_is_the_plan_of_the_scan() {
    let scan = Fx::new();
    let on_index = Fx::new();
    for fx in [&scan, &on_index] {
        linked_vault(fx);
        fx.put("x/Plan.png", "png");
        fx.put(
            "d.md",
            "[[plan.md]] [[PLAN]] `[[Plan]]` [[Plan.png]] [[ghost]]\n",
        );
    }
    indexed(&on_index);
    for args in [
        json!({"from_target": "Plan", "to_target": "R"}),
        json!({"from_target": "old/Plan.md", "to_target": "R", "include_embeds": false}),
        json!({"from_target": "ghost", "to_target": "R"}),
        json!({"from_target": "Plan.png", "to_target": "R", "folder": "sub"}),
    ] {
        let a = scan.call("rewrite_link", args.clone()).unwrap();
        let b = on_index.call("rewrite_link", args.clone()).unwrap();
        assert_eq!(a, b, "{args}");
    }
    let hub = json!({"path": "d.md"});
    assert_eq!(
        scan.call("prune_hub_links", hub.clone()).unwrap(),
        on_index.call("prune_hub_links", hub).unwrap()
    );
}

#[test]
fn prune_hub_links_resolves_against_files_created_behind_the_server() {
    let fx = Fx::new();
    fx.put("hub.md", "- [[alive]]\n- [[later]]\n");
    fx.put("alive.md", "x");
    let index = indexed(&fx);
    let hub = json!({"path": "hub.md"});
    let out = fx.call("prune_hub_links", hub.clone()).unwrap();
    assert_eq!(out["removed"], json!(["later"]));
    fx.put("later.md", "now it exists");
    let before = index.answered();
    let out = fx.call("prune_hub_links", hub).unwrap();
    assert_eq!(out["removed_count"], 0, "{out}");
    assert!(index.answered() > before);
}

// r[verify index.hidden]
#[test]
fn hidden_folders_are_never_indexed_or_touched() {
    let fx = Fx::new();
    linked_vault(&fx);
    fx.put(".obsidian/plugins/x.md", "[[Plan]] hiddenword");
    fx.put(".trash/old.md", "[[Plan]] hiddenword");
    fx.put(".git/notes.md", "[[Plan]] hiddenword");
    indexed(&fx);
    let out = fx
        .call(
            "rewrite_link",
            json!({"from_target": "Plan", "to_target": "R"}),
        )
        .unwrap();
    assert_eq!(out["notes_count"], 3, "{out}");
    let found = fx
        .call("search_notes", json!({"query": "hiddenword"}))
        .unwrap();
    assert_eq!(found["results"], json!([]), "{found}");
}

#[test]
fn a_move_on_the_index_writes_what_the_scan_writes() {
    let scan = Fx::new();
    let on_index = Fx::new();
    for fx in [&scan, &on_index] {
        linked_vault(fx);
        fx.put("other/Plan.md", "a second Plan, further away\n");
        fx.put("Deeper.md", "[[Plan]] [[deeper/Plan]]\n");
    }
    indexed(&on_index);
    let args = json!({"from": "old/Plan.md", "to": "new/deeper/Plan.md"});
    for fx in [&scan, &on_index] {
        let token = fx.require("move_note", &args);
        fx.call("move_note", with_token(&args, &token)).unwrap();
    }
    for path in [
        "a.md",
        "sub/b.md",
        "new/deeper/Plan.md",
        "Deeper.md",
        "other/Plan.md",
    ] {
        assert_eq!(scan.get(path), on_index.get(path), "{path}");
    }
    assert_eq!(
        on_index.get("a.md").unwrap(),
        "[[new/deeper/Plan]] and ![[new/deeper/Plan]]\n"
    );
}
