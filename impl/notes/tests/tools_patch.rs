//! patch_note, replace_in_note, get_note_outline and note_exists: editing part of a note
//! (spec/tools.md `tools.patch-note*`, `tools.replace-in-note*`, `tools.part-results`,
//! `tools.summary.part`, `tools.get-note-outline`, `tools.note-exists*`,
//! `tools.compose.patch-note`, `tools.compose.replace-in-note`; spec/drift.md
//! `drift.bind.part-tools`).

mod tools_support;

use serde_json::{Value, json};
use tc_tools::ErrorCode;
use tc_tools::testing::read_only_under;
use tools_support::{Fx, Scenario, code, deny_write_all, forbid_all, with_token};

const NOTE: &str = "---\n# kept comment\ntitle: 'Plan'\n---\n# Plan\nintro\n\n## Log\n- one\n- two ^item\n\n```\n## not a heading\n```\n\n## Ideas\nidea one\n\n# Other\n## Log\nother log\n";

fn patch(path: &str, operation: &str, anchor: Value, content: &str) -> Value {
    json!({"path": path, "operation": operation, "anchor": anchor, "content": content})
}

fn heading(text: &str) -> Value {
    json!({"type": "heading", "heading": text})
}

/// The summary stored with the request `args` raised.
fn raised_summary(fx: &Fx, tool: &str, args: &Value) -> String {
    let refusal = fx.call(tool, args.clone()).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ElicitRequired, "{refusal}");
    let hash = refusal.details.as_ref().unwrap()["args_hash"]
        .as_str()
        .unwrap()
        .to_owned();
    fx.gate
        .raised_request("main", &hash, "stdio")
        .unwrap()
        .unwrap()
        .summary
}

// r[verify tools.patch-note]
// r[verify tools.patch-note.confirm]
// r[verify tools.part-results]
#[test]
fn appends_prepends_and_lossless_replaces_are_free() {
    let fx = Fx::new();
    fx.put("n.md", NOTE);
    let out = fx
        .call(
            "patch_note",
            patch("n.md", "append", heading("Plan::Log"), "- three"),
        )
        .unwrap();
    assert_eq!(out["lines_removed"], 0);
    assert_eq!(out["bytes_removed"], 0);
    let now = fx.get("n.md").unwrap();
    assert_eq!(out["content_hash"], tc_vault::content_hash(now.as_bytes()));
    assert!(
        now.contains("```\n## not a heading\n```\n- three\n\n## Ideas"),
        "{now}"
    );
    fx.call(
        "patch_note",
        patch("n.md", "prepend", heading("Ideas"), "first"),
    )
    .unwrap();
    assert!(
        fx.get("n.md")
            .unwrap()
            .contains("## Ideas\nfirst\nidea one\n")
    );
    // A replace that keeps every non-blank line and only adds is free.
    fx.call(
        "patch_note",
        patch(
            "n.md",
            "replace",
            heading("Ideas"),
            "first\nbetween\nidea one",
        ),
    )
    .unwrap();
    assert!(
        fx.get("n.md")
            .unwrap()
            .contains("## Ideas\nfirst\nbetween\nidea one\n\n# Other")
    );
    // A replace that changes nothing is free too.
    let same = fx
        .call(
            "patch_note",
            patch("n.md", "replace", heading("Other::Log"), "other log"),
        )
        .unwrap();
    assert_eq!(same["lines_removed"], 1);
    assert_eq!(fx.requested(), 0);
    // Losing a line asks.
    let before = fx.get("n.md").unwrap();
    let refusal = fx
        .call(
            "patch_note",
            patch("n.md", "replace", heading("Other::Log"), "rewritten"),
        )
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ElicitRequired);
    assert_eq!(fx.get("n.md").unwrap(), before);
    let block = json!({"type": "block", "block_id": "item"});
    assert_eq!(
        code(fx.call("patch_note", patch("n.md", "replace", block.clone(), "- 2"))),
        ErrorCode::ElicitRequired
    );
    fx.call("patch_note", patch("n.md", "append", block, "- after"))
        .unwrap();
    assert!(fx.get("n.md").unwrap().contains("- two ^item\n- after\n"));
}

// r[verify tools.patch-note.unresolved]
#[test]
fn an_anchor_that_does_not_resolve_is_refused_before_any_confirmation() {
    let fx = Fx::new();
    fx.put("n.md", NOTE);
    let ambiguous = fx
        .call("patch_note", patch("n.md", "replace", heading("Log"), "x"))
        .unwrap_err();
    assert_eq!(ambiguous.code, ErrorCode::AnchorAmbiguous);
    let candidates = &ambiguous.details.as_ref().unwrap()["candidates"];
    assert_eq!(
        candidates[0],
        json!({"text": "Log", "line": 8, "parent_path": "Plan"})
    );
    assert_eq!(candidates[1]["parent_path"], "Other");
    let missing = fx
        .call(
            "patch_note",
            patch("n.md", "replace", heading("not a heading"), "x"),
        )
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::AnchorNotFound);
    assert_eq!(
        missing.details.as_ref().unwrap()["candidates"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    let block = fx
        .call(
            "patch_note",
            patch(
                "n.md",
                "append",
                json!({"type": "block", "block_id": "nope"}),
                "x",
            ),
        )
        .unwrap_err();
    assert_eq!(block.code, ErrorCode::AnchorNotFound);
    assert_eq!(fx.requested(), 0);
    assert_eq!(fx.get("n.md").unwrap(), NOTE);
    let no_text = fx
        .call(
            "patch_note",
            patch("n.md", "append", json!({"type": "heading"}), "x"),
        )
        .unwrap_err();
    assert_eq!(no_text.code, ErrorCode::ValidationError);
}

// r[verify tools.patch-note.frontmatter]
#[test]
fn a_frontmatter_patch_must_leave_one_valid_block() {
    let fx = Fx::new();
    fx.put("n.md", NOTE);
    let fm = json!({"type": "frontmatter"});
    fx.call(
        "patch_note",
        patch("n.md", "append", fm.clone(), "tags: [a]"),
    )
    .unwrap();
    assert!(
        fx.get("n.md")
            .unwrap()
            .starts_with("---\n# kept comment\ntitle: 'Plan'\ntags: [a]\n---\n# Plan")
    );
    let before = fx.get("n.md").unwrap();
    for bad in ["x: 1\n---\nbody: text", "key: [unclosed"] {
        let refusal = fx
            .call("patch_note", patch("n.md", "append", fm.clone(), bad))
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::InvalidInput, "{bad}: {refusal}");
    }
    assert_eq!(fx.get("n.md").unwrap(), before);
    // Replacing the YAML loses its lines: it asks.
    assert_eq!(
        code(fx.call("patch_note", patch("n.md", "replace", fm, "title: New"))),
        ErrorCode::ElicitRequired
    );
}

// r[verify tools.summary.part]
#[test]
fn a_gated_part_edit_shows_the_diff_of_that_part_alone() {
    let fx = Fx::new();
    let mut note = String::from("# Big\n");
    for i in 0..200 {
        note.push_str(&format!("line {i}\n"));
    }
    note.push_str("# Small\nold text\n");
    fx.put("n.md", &note);
    let summary = raised_summary(
        &fx,
        "patch_note",
        &patch("n.md", "replace", heading("Small"), "new text"),
    );
    assert!(summary.contains("-old text"), "{summary}");
    assert!(summary.contains("+new text"), "{summary}");
    assert!(summary.contains("1 lines, 9 bytes removed"), "{summary}");
    assert!(!summary.contains("line 199"), "{summary}");
    assert!(!summary.contains("line 0"), "{summary}");
}

fn patch_scenario() -> Scenario<'static> {
    Scenario {
        tool: "patch_note",
        args: json!({"path": "n.md", "operation": "replace",
                     "anchor": {"type": "heading", "heading": "B"}, "content": "new"}),
        setup: &|fx| fx.put("n.md", "# A\nkeep\n# B\nold\n"),
        applied: &|fx| assert_eq!(fx.get("n.md").unwrap(), "# A\nkeep\n# B\nnew\n"),
        untouched: &|fx| assert_eq!(fx.get("n.md").unwrap(), "# A\nkeep\n# B\nold\n"),
        // A change outside the anchored part is drift too.
        drift: &|fx| fx.put("n.md", "# A\nkeep, edited\n# B\nold\n"),
    }
}

// r[verify drift.bind.part-tools]
#[test]
fn patch_note_replace_approve_then_replay() {
    patch_scenario().approve_then_replay();
}

// r[verify drift.bind.part-tools]
#[test]
fn patch_note_replace_drift_is_refused() {
    patch_scenario().drift_refused();
}

#[test]
fn patch_note_acl_refusal_releases_the_token() {
    patch_scenario().acl_releases(deny_write_all());
}

#[test]
fn patch_note_preflight_never_spends_the_token() {
    patch_scenario().preflight_keeps_token(forbid_all());
}

fn replace_scenario() -> Scenario<'static> {
    Scenario {
        tool: "replace_in_note",
        args: json!({"path": "r.md", "find": "teh", "replace": "the"}),
        setup: &|fx| fx.put("r.md", "---\nnote: teh\n---\nteh cat\nand teh dog\n"),
        applied: &|fx| {
            assert_eq!(
                fx.get("r.md").unwrap(),
                "---\nnote: teh\n---\nthe cat\nand the dog\n"
            )
        },
        untouched: &|fx| {
            assert_eq!(
                fx.get("r.md").unwrap(),
                "---\nnote: teh\n---\nteh cat\nand teh dog\n"
            )
        },
        drift: &|fx| fx.put("r.md", "---\nnote: x\n---\nteh cat\nand teh dog\n"),
    }
}

// r[verify tools.replace-in-note.confirm]
// r[verify drift.bind.part-tools]
#[test]
fn replace_in_note_approve_then_replay_and_drift() {
    replace_scenario().approve_then_replay();
    replace_scenario().drift_refused();
    replace_scenario().acl_releases(deny_write_all());
}

// r[verify tools.replace-in-note]
// r[verify tools.replace-in-note.confirm]
#[test]
fn replace_in_note_works_on_the_body_and_a_dry_run_lists_lines() {
    let fx = Fx::new();
    let note = "---\ntitle: teh\n---\nteh one\nplain\nteh two teh\n";
    fx.put("r.md", note);
    let dry = fx
        .call(
            "replace_in_note",
            json!({"path": "r.md", "find": "teh", "replace": "the", "dry_run": true}),
        )
        .unwrap();
    assert_eq!(dry["replacements"], 3);
    let lines: Vec<u64> = dry["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [4, 6, 6]);
    assert_eq!(dry["content_hash"], Value::Null);
    assert_eq!(fx.get("r.md").unwrap(), note);
    // Nothing to change is free; a change asks.
    fx.call(
        "replace_in_note",
        json!({"path": "r.md", "find": "absent", "replace": "x"}),
    )
    .unwrap();
    assert_eq!(fx.requested(), 0);
    let args = json!({"path": "r.md", "find": "teh", "replace": "the", "max_replacements": 2});
    let token = fx.require("replace_in_note", &args);
    let out = fx
        .call("replace_in_note", with_token(&args, &token))
        .unwrap();
    assert_eq!(out["replacements"], 2);
    assert_eq!(out["lines_removed"], 3);
    assert_eq!(
        fx.get("r.md").unwrap(),
        "---\ntitle: teh\n---\nthe one\nplain\nthe two teh\n"
    );
}

// r[verify tools.replace-in-note.regex]
#[test]
fn a_regex_expands_groups_and_a_huge_pattern_is_refused() {
    let fx = Fx::new();
    fx.put("r.md", "2026-01-02 x\n");
    let args =
        json!({"path": "r.md", "find": r"(\d+)-(\d+)-(\d+)", "replace": "$3/$2/$1", "regex": true});
    let token = fx.require("replace_in_note", &args);
    fx.call("replace_in_note", with_token(&args, &token))
        .unwrap();
    assert_eq!(fx.get("r.md").unwrap(), "02/01/2026 x\n");
    // Without regex, the same text is literal.
    let dry = fx
        .call(
            "replace_in_note",
            json!({"path": "r.md", "find": "0.", "replace": "", "dry_run": true}),
        )
        .unwrap();
    assert_eq!(dry["replacements"], 0);
    let huge = fx
        .call(
            "replace_in_note",
            json!({"path": "r.md", "find": r"\w{1000}{1000}", "replace": "", "regex": true}),
        )
        .unwrap_err();
    assert_eq!(huge.code, ErrorCode::ValidationError, "{huge}");
    let broken = fx
        .call(
            "replace_in_note",
            json!({"path": "r.md", "find": "(", "replace": "", "regex": true}),
        )
        .unwrap_err();
    assert_eq!(broken.code, ErrorCode::ValidationError);
}

// r[verify tools.get-note-outline]
#[test]
fn the_outline_lists_headings_blocks_and_keys() {
    let fx = Fx::new();
    fx.put("n.md", NOTE);
    let out = fx
        .call("get_note_outline", json!({"path": "n.md"}))
        .unwrap();
    assert_eq!(
        out["headings"][0],
        json!({"level": 1, "text": "Plan", "line": 5})
    );
    assert_eq!(out["headings"].as_array().unwrap().len(), 5);
    assert_eq!(out["blocks"], json!([{"id": "item", "line": 10}]));
    assert_eq!(out["frontmatter_keys"], json!(["title"]));
    assert_eq!(out["bytes"], NOTE.len());
    assert_eq!(out["content_hash"], tc_vault::content_hash(NOTE.as_bytes()));
    assert_eq!(
        code(fx.call("get_note_outline", json!({"path": "missing.md"}))),
        ErrorCode::NoteNotFound
    );
}

// r[verify tools.note-exists]
// r[verify tools.note-exists.hidden]
#[test]
fn note_exists_tells_the_kind_and_refuses_hidden_paths() {
    let mut fx = Fx::new();
    fx.put("folder/n.md", "hello");
    fx.put("folder/pic.png", "png");
    let note = fx
        .call("note_exists", json!({"path": "folder/n.md"}))
        .unwrap();
    assert_eq!(note["exists"], true);
    assert_eq!(note["kind"], "note");
    assert_eq!(note["size"], 5);
    assert!(note["modified"].as_u64().unwrap() > 0);
    let pic = fx
        .call("note_exists", json!({"path": "folder/pic.png"}))
        .unwrap();
    assert_eq!(pic["kind"], "attachment");
    let folder = fx.call("note_exists", json!({"path": "folder"})).unwrap();
    assert_eq!(folder["kind"], "folder");
    assert_eq!(folder["size"], Value::Null);
    let none = fx.call("note_exists", json!({"path": "nope.md"})).unwrap();
    assert_eq!(none["exists"], false);
    for hidden in [".obsidian/app.json", ".git/HEAD", ".trash/x.md", "a/.git"] {
        assert_eq!(
            code(fx.call("note_exists", json!({"path": hidden}))),
            ErrorCode::PathInvalid,
            "{hidden}"
        );
    }
    fx.reconfigure(Some(read_only_under("public/**")), Vec::new());
    assert_eq!(
        code(fx.call("note_exists", json!({"path": "folder/n.md"}))),
        ErrorCode::AclDenied
    );
}

// r[verify tools.compose.patch-note]
/// Free steps can add lines around a person's line, never remove or change it.
#[test]
fn no_free_part_edits_change_an_existing_line() {
    let fx = Fx::new();
    fx.put("n.md", "# A\nkeep me\n# B\nb\n");
    for (op, content) in [
        ("replace", "new\nkeep me\nnew"),
        ("prepend", "keep m"),
        ("append", "e"),
        ("replace", "keep m\nnew\n\nkeep me\nnew\ne"),
    ] {
        fx.call("patch_note", patch("n.md", op, heading("A"), content))
            .unwrap();
        assert!(
            fx.get("n.md").unwrap().lines().any(|l| l == "keep me"),
            "{op} {content}"
        );
    }
    assert_eq!(fx.requested(), 0);
    // Every attempt to change the line itself asks.
    for content in ["keep you", "", "keep me!"] {
        assert_eq!(
            code(fx.call(
                "patch_note",
                patch("n.md", "replace", heading("A"), content)
            )),
            ErrorCode::ElicitRequired,
            "{content:?}"
        );
    }
    assert_eq!(
        code(fx.call(
            "replace_in_note",
            json!({"path": "n.md", "find": "me", "replace": "you"})
        )),
        ErrorCode::ElicitRequired
    );
    assert!(fx.get("n.md").unwrap().lines().any(|l| l == "keep me"));
}

// r[verify tools.compose.replace-in-note]
#[test]
fn a_dry_run_and_an_append_never_apply_a_replacement() {
    let fx = Fx::new();
    fx.put("n.md", "# A\nold word\n");
    fx.call(
        "replace_in_note",
        json!({"path": "n.md", "find": "old", "replace": "new", "dry_run": true}),
    )
    .unwrap();
    fx.call(
        "patch_note",
        patch("n.md", "append", heading("A"), "new word"),
    )
    .unwrap();
    assert_eq!(fx.get("n.md").unwrap(), "# A\nold word\nnew word\n");
    assert_eq!(fx.requested(), 0);
}

// r[verify paging.read-notes.section]
#[test]
fn read_notes_section_answers_one_section_with_the_whole_notes_hash() {
    let fx = Fx::new();
    fx.put("n.md", NOTE);
    let out = fx
        .call(
            "read_notes",
            json!({"paths": ["n.md"], "section": "Other::Log"}),
        )
        .unwrap();
    let entry = &out["notes"][0];
    assert_eq!(entry["content"], "## Log\nother log\n");
    assert_eq!(
        entry["content_hash"],
        tc_vault::content_hash(NOTE.as_bytes())
    );
    assert_eq!(entry["frontmatter"], json!({"title": "Plan"}));
    let top = fx
        .call("read_notes", json!({"paths": ["n.md"], "section": "Plan"}))
        .unwrap();
    assert!(
        top["notes"][0]["content"]
            .as_str()
            .unwrap()
            .ends_with("idea one\n\n")
    );
    let ambiguous = fx
        .call("read_notes", json!({"paths": ["n.md"], "section": "Log"}))
        .unwrap_err();
    assert_eq!(ambiguous.code, ErrorCode::AnchorAmbiguous);
    assert_eq!(
        ambiguous.details.as_ref().unwrap()["candidates"][1]["line"],
        20
    );
    assert_eq!(
        code(fx.call("read_notes", json!({"paths": ["n.md"], "section": "Nope"}))),
        ErrorCode::AnchorNotFound
    );
    for args in [
        json!({"paths": ["n.md", "n.md"], "section": "Plan"}),
        json!({"folder": "", "section": "Plan"}),
    ] {
        let refusal = fx.call("read_notes", args).unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ValidationError);
        assert_eq!(
            refusal.details.as_ref().unwrap()["errors"][0]["pointer"],
            "/section"
        );
    }
}
