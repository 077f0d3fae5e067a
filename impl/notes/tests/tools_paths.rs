//! Hostile paths are refused with path_invalid by every tool, before anything is asked.

mod tools_support;

use serde_json::{Value, json};
use tc_tools::ErrorCode;
use tools_support::{Fx, HOSTILE};

fn calls(bad: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("write_note", json!({"path": bad, "content": "x"})),
        ("move_note", json!({"from": bad, "to": "ok.md"})),
        ("move_note", json!({"from": "ok.md", "to": bad})),
        ("copy_note", json!({"from": bad, "to": "ok2.md"})),
        ("copy_note", json!({"from": "ok.md", "to": bad})),
        ("delete_note", json!({"path": bad})),
        ("restore_note", json!({"path": bad})),
        (
            "update_frontmatter",
            json!({"path": bad, "operation": "merge", "data": {}}),
        ),
        (
            "update_task",
            json!({"path": bad, "line": 1, "status": "done"}),
        ),
        ("prune_hub_links", json!({"path": bad})),
        ("commit_wiki_page", json!({"path": bad, "content": "x"})),
        (
            "rewrite_link",
            json!({"from_target": "ok", "to_target": "new", "folder": bad}),
        ),
    ]
}

// r[verify vault.path.invalid]
// r[verify vault.path.hidden]
// r[verify tools.notes-only]
// r[verify results.path-invalid]
#[test]
fn every_tool_refuses_hostile_paths() {
    let fx = Fx::new();
    fx.put("ok.md", "- [ ] fine");
    fx.put(".obsidian/app.md", "settings");
    for bad in HOSTILE {
        for (tool, args) in calls(bad) {
            // rewrite_link takes a folder: a `.md`-less folder is fine there; restore_note
            // restores any file a snapshot is of, attachments too (versions.restore.any-file).
            if (tool == "rewrite_link" || tool == "restore_note") && *bad == "notes/x.txt" {
                continue;
            }
            let error = fx.call(tool, args.clone()).unwrap_err();
            assert_eq!(error.code, ErrorCode::PathInvalid, "{tool} {args}: {error}");
            assert!(
                error.details.as_ref().unwrap()["path"].is_string(),
                "{tool}"
            );
        }
    }
    assert_eq!(fx.requested(), 0);
    assert_eq!(fx.get(".obsidian/app.md").unwrap(), "settings");
    assert_eq!(fx.get("ok.md").unwrap(), "- [ ] fine");
}

#[test]
fn a_link_out_of_the_vault_is_path_invalid() {
    let fx = Fx::new();
    let outside = fx.dir.path().join("outside.md");
    std::fs::write(&outside, "secret").unwrap();
    std::os::unix::fs::symlink(&outside, fx.root.join("escape.md")).unwrap();
    std::os::unix::fs::symlink(fx.dir.path(), fx.root.join("up")).unwrap();
    for (tool, args) in [
        ("write_note", json!({"path": "escape.md", "content": "x"})),
        ("write_note", json!({"path": "up/new.md", "content": "x"})),
        ("delete_note", json!({"path": "escape.md"})),
        ("copy_note", json!({"from": "escape.md", "to": "copy.md"})),
    ] {
        assert_eq!(
            fx.call(tool, args.clone()).unwrap_err().code,
            ErrorCode::PathInvalid,
            "{tool} {args}"
        );
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret");
    assert!(!fx.dir.path().join("new.md").exists());
}
