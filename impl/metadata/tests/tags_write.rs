//! The tag writing tools (spec/metadata.md `metadata.add-tag`, `metadata.remove-tag`,
//! `metadata.rename-tag*`; spec/drift.md `drift.bind.remove-tag`, `drift.bind.rename-tag`;
//! spec/tools.md `tools.compose.remove-tag`, `tools.compose.rename-tag`).

mod tags_support;

use serde_json::{Value, json};
use tags_support::{Fx, code, indexed, vault_of, with_token};
use tc_tools::ErrorCode;
use tc_tools::testing::Scenario;

const PLAN: &str = "---\n# kept comment\ntitle: \"Plan\"   # why\ntags: [project/alpha, Area]\nstatus: open\n---\n# Plan #project\nBody #project/alpha/x and `#project` #projects\n";

// r[verify metadata.add-tag]
#[test]
fn add_tag_edits_only_the_tag_key_or_adds_a_line_and_never_asks() {
    let fx = vault_of(&[
        ("plan.md", PLAN),
        ("bare.md", "Just text"),
        ("string.md", "---\ntags: one two\nx: 1\n---\nbody\n"),
    ]);
    let out = fx
        .call("add_tag", json!({"path": "plan.md", "tag": "#Review"}))
        .unwrap();
    assert_eq!(out["added"], true);
    let after = fx.get("plan.md").unwrap();
    // r[verify vault.frontmatter.list-append]
    // The flow list keeps its style; every other line stays as it was.
    let expected_fm = "---\n# kept comment\ntitle: \"Plan\"   # why\ntags: [project/alpha, Area, Review]\nstatus: open\n---\n";
    assert!(after.starts_with(expected_fm), "{after}");
    assert!(after.ends_with(PLAN.split_once("---\n# Plan").unwrap().1));
    // Already there, in any case: unchanged.
    let again = fx
        .call("add_tag", json!({"path": "plan.md", "tag": "review"}))
        .unwrap();
    assert_eq!(again["added"], false);
    assert_eq!(fx.get("plan.md").unwrap(), after);
    // A string value becomes a list; a note without frontmatter gains a block.
    fx.call("add_tag", json!({"path": "string.md", "tag": "three"}))
        .unwrap();
    assert_eq!(
        fx.get("string.md").unwrap(),
        "---\ntags:\n- one\n- two\n- three\nx: 1\n---\nbody\n"
    );
    fx.call("add_tag", json!({"path": "bare.md", "tag": "new"}))
        .unwrap();
    assert_eq!(
        fx.get("bare.md").unwrap(),
        "---\ntags:\n- new\n---\nJust text"
    );
    // Inline: a whole new last line.
    fx.call(
        "add_tag",
        json!({"path": "bare.md", "tag": "todo/later", "location": "inline"}),
    )
    .unwrap();
    assert_eq!(
        fx.get("bare.md").unwrap(),
        "---\ntags:\n- new\n---\nJust text\n#todo/later\n"
    );
    let tags = fx
        .call("get_note_tags", json!({"path": "bare.md"}))
        .unwrap();
    assert_eq!(tags["tags"], json!(["new", "todo/later"]));
    assert_eq!(fx.requested(), 0, "no confirmation was asked");
    assert_eq!(
        code(fx.call("add_tag", json!({"path": "none.md", "tag": "x"}))),
        ErrorCode::NoteNotFound
    );
    assert_eq!(
        code(fx.call("add_tag", json!({"path": "bare.md", "tag": "a b"}))),
        ErrorCode::ValidationError
    );
}

// r[verify metadata.remove-tag]
// r[verify tools.compose.remove-tag]
#[test]
fn removing_from_the_frontmatter_is_free_and_an_inline_removal_asks() {
    let fx = vault_of(&[("plan.md", PLAN)]);
    // Frontmatter (the default): free, only the tags key's lines change; nested tags stay.
    let out = fx
        .call("remove_tag", json!({"path": "plan.md", "tag": "area"}))
        .unwrap();
    assert_eq!(
        out["removed"],
        json!([{"old": "Area", "new": null, "inline": false}])
    );
    let after = fx.get("plan.md").unwrap();
    // r[verify vault.frontmatter.list-remove]
    assert_eq!(
        after,
        PLAN.replace("tags: [project/alpha, Area]", "tags: [project/alpha]")
    );
    assert_eq!(fx.requested(), 0);
    // Inline: a body line changes, so the call asks; nothing is written before.
    let args = json!({"path": "plan.md", "tag": "project", "location": "inline"});
    let refusal = fx.call("remove_tag", args.clone()).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ElicitRequired, "{refusal}");
    assert_eq!(fx.get("plan.md").unwrap(), after);
    let token = fx.mint(&refusal);
    fx.call("remove_tag", with_token(&args, &token)).unwrap();
    // Only `#project` itself went: its nested tag, the code span and `#projects` stay.
    assert_eq!(
        fx.get("plan.md").unwrap(),
        after.replace("# Plan #project\n", "# Plan\n")
    );
    // A tag the body does not carry inline: nothing to change, nothing asked.
    let requested = fx.requested();
    let out = fx
        .call(
            "remove_tag",
            json!({"path": "plan.md", "tag": "nothere", "location": "both"}),
        )
        .unwrap();
    assert_eq!(out["removed"], json!([]));
    assert_eq!(fx.requested(), requested);
    // The free routes of the family never change an existing body line.
    let body = |fx: &Fx| {
        let text = fx.get("plan.md").unwrap();
        text.split_once("\n---\n").unwrap().1.to_owned()
    };
    let before = body(&fx);
    for (tool, args) in [
        ("add_tag", json!({"path": "plan.md", "tag": "projects"})),
        (
            "add_tag",
            json!({"path": "plan.md", "tag": "extra", "location": "inline"}),
        ),
        (
            "remove_tag",
            json!({"path": "plan.md", "tag": "project/alpha"}),
        ),
        ("rename_tag", json!({"from": "projects", "to": "gone"})),
    ] {
        fx.call(tool, args).unwrap();
        assert!(body(&fx).starts_with(&before), "{tool}");
    }
}

#[test]
fn a_line_left_blank_by_an_inline_removal_goes_whole() {
    let fx = vault_of(&[("n.md", "a\n#gone\nb #gone c\n#gone #gone\n")]);
    let args = json!({"path": "n.md", "tag": "gone", "location": "inline"});
    let token = fx.require("remove_tag", &args);
    let out = fx.call("remove_tag", with_token(&args, &token)).unwrap();
    assert_eq!(out["removed"].as_array().unwrap().len(), 4);
    assert_eq!(fx.get("n.md").unwrap(), "a\nb c\n");
}

fn remove_setup(fx: &Fx) {
    fx.put("n.md", "x #gone y\n");
    indexed(fx);
}

// r[verify drift.bind.remove-tag]
#[test]
fn an_inline_removal_is_bound_to_the_note_s_content() {
    let scenario = Scenario {
        tool: "remove_tag",
        args: json!({"path": "n.md", "tag": "gone", "location": "inline"}),
        setup: &remove_setup,
        applied: &|fx: &Fx| assert_eq!(fx.get("n.md").unwrap(), "x y\n"),
        untouched: &|fx: &Fx| assert_eq!(fx.get("n.md").unwrap(), "x #gone y\n"),
        drift: &|fx: &Fx| fx.put("n.md", "x #gone y\nmore\n"),
    };
    scenario.approve_then_replay();
    scenario.drift_refused();
}

fn rename_vault() -> Fx {
    vault_of(&[
        (
            "a.md",
            "---\ntags:\n  - Project   # the main one\n  - project/alpha\n  - other\n---\n# A #project/beta\ntext #Project, `#project` [[x#project]]\n",
        ),
        ("b.md", "#projects and #project/alpha/deep\n"),
        ("sub/c.md", "---\ntags: project\n---\nbody\n"),
    ])
}

/// One change as (old, new, inline).
type Change = (String, String, bool);

fn changes(out: &Value) -> Vec<(String, Vec<Change>)> {
    out["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["path"].as_str().unwrap().to_owned(),
                n["changes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| {
                        (
                            c["old"].as_str().unwrap().to_owned(),
                            c["new"].as_str().unwrap().to_owned(),
                            c["inline"].as_bool().unwrap(),
                        )
                    })
                    .collect(),
            )
        })
        .collect()
}

fn s(a: &str, b: &str, inline: bool) -> Change {
    (a.to_owned(), b.to_owned(), inline)
}

// r[verify metadata.rename-tag]
// r[verify metadata.rename-tag.dry-run]
#[test]
fn a_dry_run_lists_every_note_and_change_and_writes_nothing() {
    let fx = rename_vault();
    let before: Vec<String> = ["a.md", "b.md", "sub/c.md"]
        .iter()
        .map(|p| fx.get(p).unwrap())
        .collect();
    let out = fx
        .call("rename_tag", json!({"from": "#project", "to": "work"}))
        .unwrap();
    assert_eq!(out["dry_run"], true);
    assert_eq!(out["applied"], false);
    assert_eq!(out["notes_count"], 3);
    assert_eq!(out["changes_count"], 6);
    assert_eq!(
        changes(&out),
        [
            (
                "a.md".to_owned(),
                vec![
                    s("Project", "work", false),
                    s("project/alpha", "work/alpha", false),
                    s("project/beta", "work/beta", true),
                    s("Project", "work", true),
                ]
            ),
            (
                "b.md".to_owned(),
                vec![s("project/alpha/deep", "work/alpha/deep", true)]
            ),
            ("sub/c.md".to_owned(), vec![s("project", "work", false)]),
        ]
    );
    let after: Vec<String> = ["a.md", "b.md", "sub/c.md"]
        .iter()
        .map(|p| fx.get(p).unwrap())
        .collect();
    assert_eq!(after, before);
    assert_eq!(fx.requested(), 0);
    // Under a folder.
    let out = fx
        .call(
            "rename_tag",
            json!({"from": "project", "to": "work", "folder": "sub"}),
        )
        .unwrap();
    assert_eq!(out["notes_count"], 1);
}

// r[verify metadata.rename-tag]
// r[verify metadata.rename-tag.confirmed]
// r[verify tools.compose.rename-tag]
#[test]
fn a_real_rename_asks_once_and_changes_only_the_tags() {
    let fx = rename_vault();
    let args = json!({"from": "project", "to": "Work", "dry_run": false});
    let refusal = fx.call("rename_tag", args.clone()).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ElicitRequired, "{refusal}");
    let token = fx.mint(&refusal);
    let out = fx.call("rename_tag", with_token(&args, &token)).unwrap();
    assert_eq!(out["applied"], true);
    assert_eq!(fx.requested(), 1, "one confirmation for the whole rename");
    assert_eq!(
        fx.get("a.md").unwrap(),
        // r[verify vault.frontmatter.list-replace]
        "---\ntags:\n  - Work   # the main one\n  - Work/alpha\n  - other\n---\n# A #Work/beta\ntext #Work, `#project` [[x#project]]\n"
    );
    assert_eq!(fx.get("b.md").unwrap(), "#projects and #Work/alpha/deep\n");
    assert_eq!(
        fx.get("sub/c.md").unwrap(),
        "---\ntags:\n- Work\n---\nbody\n"
    );
    let found = fx
        .call("find_notes_by_tag", json!({"tag": "project"}))
        .unwrap();
    assert_eq!(found["notes"], json!([]));
}

// r[verify metadata.rename-tag.confirmed]
#[test]
fn a_rename_s_summary_names_twenty_notes_and_counts_the_rest() {
    let fx = Fx::new();
    for i in 0..25 {
        fx.put(&format!("n{i:02}.md"), "#old\n");
    }
    indexed(&fx);
    let args = json!({"from": "old", "to": "new", "dry_run": false});
    let refusal = fx.call("rename_tag", args).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ElicitRequired, "{refusal}");
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
    assert!(summary.contains("rename tag #old to #new"), "{summary}");
    assert!(summary.contains("n00.md (#old → #new)"), "{summary}");
    assert!(summary.contains("n19.md"), "{summary}");
    assert!(!summary.contains("n20.md"), "{summary}");
    assert!(summary.contains("5 more"), "{summary}");
}

fn rename_setup(fx: &Fx) {
    fx.put("a.md", "#old here\n");
    fx.put("b.md", "---\ntags: [old/x]\n---\n");
    fx.put("c.md", "nothing\n");
    indexed(fx);
}

// r[verify drift.bind.rename-tag]
#[test]
fn a_rename_is_bound_to_every_note_it_touches_and_to_the_set() {
    let args = json!({"from": "old", "to": "new", "dry_run": false});
    let untouched = |fx: &Fx| {
        assert_eq!(fx.get("a.md").unwrap(), "#old here\n");
        assert_eq!(fx.get("b.md").unwrap(), "---\ntags: [old/x]\n---\n");
    };
    let applied = |fx: &Fx| {
        assert_eq!(fx.get("a.md").unwrap(), "#new here\n");
        assert_eq!(fx.get("b.md").unwrap(), "---\ntags: [new/x]\n---\n");
    };
    // A touched note changes.
    Scenario {
        tool: "rename_tag",
        args: args.clone(),
        setup: &rename_setup,
        applied: &applied,
        untouched: &untouched,
        drift: &|fx: &Fx| fx.put("b.md", "---\ntags: [old/x, more]\n---\n"),
    }
    .drift_refused();
    // A note gains the tag.
    let scenario = Scenario {
        tool: "rename_tag",
        args,
        setup: &rename_setup,
        applied: &applied,
        untouched: &untouched,
        drift: &|fx: &Fx| fx.put("c.md", "now #old\n"),
    };
    scenario.drift_refused();
    scenario.approve_then_replay();
}

/// The versions kept of `path`, oldest first, as text.
fn versions(fx: &Fx, path: &str) -> Vec<String> {
    let vault = &fx.pipeline.vault("main").unwrap().vault;
    let path = tc_vault::VaultPath::parse(path).unwrap();
    vault
        .snapshots(Some(&path))
        .unwrap()
        .iter()
        .map(|info| String::from_utf8(vault.read_snapshot(info).unwrap()).unwrap())
        .collect()
}

// r[verify versions.keep.links-and-tags]
// r[verify versions.keep.free]
/// A confirmed rename keeps every note it rewrites as it was, and an inline removal keeps the
/// note; a free removal from the frontmatter keeps nothing.
#[test]
fn a_confirmed_tag_change_can_be_undone_and_a_free_one_keeps_nothing() {
    let fx = rename_vault();
    let before: Vec<(&str, String)> = ["a.md", "b.md", "sub/c.md"]
        .into_iter()
        .map(|p| (p, fx.get(p).unwrap()))
        .collect();
    let args = json!({"from": "project", "to": "Work", "dry_run": false});
    let token = fx.mint(&fx.call("rename_tag", args.clone()).unwrap_err());
    fx.call("rename_tag", with_token(&args, &token)).unwrap();
    for (path, text) in &before {
        assert_eq!(versions(&fx, path), vec![text.clone()], "{path}");
    }
    let fx = vault_of(&[("plan.md", PLAN)]);
    fx.call("remove_tag", json!({"path": "plan.md", "tag": "area"}))
        .unwrap();
    assert!(
        versions(&fx, "plan.md").is_empty(),
        "a free removal keeps nothing"
    );
    let kept = fx.get("plan.md").unwrap();
    let args = json!({"path": "plan.md", "tag": "project", "location": "inline"});
    let token = fx.mint(&fx.call("remove_tag", args.clone()).unwrap_err());
    fx.call("remove_tag", with_token(&args, &token)).unwrap();
    assert_eq!(versions(&fx, "plan.md"), vec![kept]);
}
