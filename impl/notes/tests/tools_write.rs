//! write_note, move_note, copy_note, update_frontmatter and commit_wiki_page: the tools that
//! preflight conventions before the gate.

mod tools_support;

use serde_json::json;
use tc_tools::ErrorCode;
use tc_vault::conventions::ConventionConfig;
use tools_support::{Fx, Scenario, code, deny_write_all, forbid_all, with_token};

// ---------------------------------------------------------------- write_note

fn write_scenario() -> Scenario<'static> {
    Scenario {
        tool: "write_note",
        args: json!({"path": "notes/a.md", "content": "replaced"}),
        setup: &|fx| fx.put("notes/a.md", "original"),
        applied: &|fx| assert_eq!(fx.get("notes/a.md").unwrap(), "replaced"),
        untouched: &|fx| assert_eq!(fx.get("notes/a.md").unwrap(), "original"),
        drift: &|fx| fx.put("notes/a.md", "edited meanwhile"),
    }
}

// r[verify tools.write-note]
// r[verify tools.write-note.confirm]
// r[verify dispatch.gate]
#[test]
fn write_note_free_paths() {
    let fx = Fx::new();
    // A new note, in folders that do not exist yet: no confirmation.
    let out = fx
        .call(
            "write_note",
            json!({"path": "deep/new/a.md", "content": "hello"}),
        )
        .unwrap();
    assert_eq!(out["created"], true);
    assert_eq!(fx.get("deep/new/a.md").unwrap(), "hello");
    // Append and prepend never ask.
    fx.call(
        "write_note",
        json!({"path": "deep/new/a.md", "content": "more", "mode": "append"}),
    )
    .unwrap();
    assert_eq!(fx.get("deep/new/a.md").unwrap(), "hello\nmore");
    fx.put("fm.md", "---\ntags: [x]\n---\nbody\n");
    fx.call(
        "write_note",
        json!({"path": "fm.md", "content": "top", "mode": "prepend"}),
    )
    .unwrap();
    assert_eq!(fx.get("fm.md").unwrap(), "---\ntags: [x]\n---\ntop\nbody\n");
    // Overwriting an empty note does not ask.
    fx.put("empty.md", "");
    fx.call(
        "write_note",
        json!({"path": "empty.md", "content": "filled"}),
    )
    .unwrap();
    assert_eq!(fx.get("empty.md").unwrap(), "filled");
    assert_eq!(fx.requested(), 0);
}

// r[verify tools.write-note.create]
// r[verify tools.prev-hash]
// r[verify results.concurrent-modification]
#[test]
fn write_note_create_and_prev_hash() {
    let fx = Fx::new();
    fx.put("a.md", "one");
    assert_eq!(
        code(fx.call(
            "write_note",
            json!({"path": "a.md", "content": "x", "mode": "create"})
        )),
        ErrorCode::NoteExists
    );
    let stale = fx
        .call(
            "write_note",
            json!({"path": "a.md", "content": "x", "mode": "append", "prev_hash": "f".repeat(64)}),
        )
        .unwrap_err();
    assert_eq!(stale.code, ErrorCode::ConcurrentModification);
    let details = stale.details.unwrap();
    assert_eq!(details["expected"], "f".repeat(64));
    assert_eq!(details["actual"], tc_vault::content_hash(b"one"));
    let good = tc_vault::content_hash(b"one");
    fx.call(
        "write_note",
        json!({"path": "a.md", "content": "two", "mode": "append", "prev_hash": good}),
    )
    .unwrap();
    assert_eq!(fx.get("a.md").unwrap(), "one\ntwo");
}

// r[verify tools.prev-hash.readable]
#[test]
fn a_prev_hash_is_no_oracle_for_a_note_the_caller_may_not_read() {
    let fx = Fx::with(
        Some(tc_tools::testing::read_only_under("notes/**")),
        Vec::new(),
    );
    fx.put("inbox/salary.md", "42000");
    fx.put("notes/open.md", "open");
    let secret = tc_vault::content_hash(b"42000");
    let guess = |path: &str, prev_hash: &str, mode: &str| {
        fx.call(
            "write_note",
            json!({"path": path, "content": "x", "mode": mode, "prev_hash": prev_hash}),
        )
    };
    // A wrong guess and the right one get the same refusal, on every mode, before any
    // confirmation is asked.
    for mode in ["append", "overwrite", "prepend"] {
        for prev_hash in ["f".repeat(64), secret.clone()] {
            let refused = guess("inbox/salary.md", &prev_hash, mode).unwrap_err();
            assert_eq!(refused.code, ErrorCode::AclDenied, "{mode}: {refused}");
            let details = refused.details.unwrap();
            assert!(details["because"].as_str().unwrap().contains("prev_hash"));
            assert!(!details.to_string().contains(&secret), "{details}");
        }
    }
    assert_eq!(fx.requested(), 0);
    assert_eq!(fx.get("inbox/salary.md").as_deref(), Some("42000"));
    // A note the caller may read still compares it, and says its hash.
    let stale = guess("notes/open.md", &"f".repeat(64), "append").unwrap_err();
    assert_eq!(stale.code, ErrorCode::ConcurrentModification);
    assert_eq!(
        stale.details.unwrap()["actual"],
        tc_vault::content_hash(b"open")
    );
    guess("notes/open.md", &tc_vault::content_hash(b"open"), "append").unwrap();
    // Without prev_hash the write-only caller still writes.
    fx.call(
        "write_note",
        json!({"path": "inbox/salary.md", "content": "x", "mode": "append"}),
    )
    .unwrap();
    assert_eq!(fx.get("inbox/salary.md").as_deref(), Some("42000\nx"));
}

// r[verify vault.acl.declared.move-reveals]
#[test]
fn a_note_the_caller_may_not_read_is_not_moved_where_it_may() {
    let fx = Fx::with(
        Some(tc_tools::testing::read_only_under("notes/**")),
        Vec::new(),
    );
    fx.put("inbox/salary.md", "42000");
    let requested = fx.requested();
    // Into a readable folder, gated or not (a rename within notes/ would be free).
    for to in ["notes/salary.md", "notes/deep/salary.md"] {
        let refused = fx
            .call("move_note", json!({"from": "inbox/salary.md", "to": to}))
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::AclDenied, "{refused}");
        assert!(!refused.to_string().contains("42000"));
        let because = &refused.details.unwrap()["because"];
        assert!(
            because.as_str().unwrap().contains("another folder"),
            "{because}"
        );
    }
    assert_eq!(fx.requested(), requested, "refused before any confirmation");
    assert_eq!(fx.get("inbox/salary.md").as_deref(), Some("42000"));
    assert!(fx.get("notes/salary.md").is_none());
    // Out of its folder through a folder link whose spelling it may not read but whose
    // target it may: still a read.
    std::os::unix::fs::symlink(fx.root.join("notes"), fx.root.join("inbox/pub")).unwrap();
    let refused = fx
        .call(
            "move_note",
            json!({"from": "inbox/salary.md", "to": "inbox/pub/salary.md"}),
        )
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::AclDenied, "{refused}");
    assert!(fx.get("notes/salary.md").is_none());
    // A rename within its folder to a name it may not read needs write on both only.
    fx.call(
        "move_note",
        json!({"from": "inbox/salary.md", "to": "inbox/pay.md"}),
    )
    .unwrap();
    assert_eq!(fx.get("inbox/pay.md").as_deref(), Some("42000"));
}

// r[verify vault.acl.results-readable-only]
// r[verify drift.fingerprint-keyed]
#[test]
fn a_caller_that_may_write_but_not_read_is_told_no_hash_of_the_note() {
    let fx = Fx::with(
        Some(tc_tools::testing::read_only_under("notes/**")),
        Vec::new(),
    );
    fx.put("inbox/salary.md", "42000");
    fx.put("notes/open.md", "open");
    let append = |path: &str| {
        fx.call(
            "write_note",
            json!({"path": path, "content": "x", "mode": "append"}),
        )
        .unwrap()
    };
    let hidden = append("inbox/salary.md");
    assert_eq!(hidden["content_hash"], json!(null), "{hidden}");
    assert_eq!(hidden["bytes"], json!(null), "{hidden}");
    assert_eq!(fx.get("inbox/salary.md").as_deref(), Some("42000\nx"));
    // A note it may read, and a note all of whose bytes are its own, say their hash.
    let shown = append("notes/open.md");
    assert_eq!(shown["content_hash"], tc_vault::content_hash(b"open\nx"));
    let created = fx
        .call(
            "write_note",
            json!({"path": "inbox/new.md", "content": "mine", "mode": "create"}),
        )
        .unwrap();
    assert_eq!(created["content_hash"], tc_vault::content_hash(b"mine"));
    assert_eq!(created["bytes"], 4);

    // The state_fp of its refused overwrite is keyed: no guess of the content checks out
    // against it, the right one included.
    let refused = fx
        .call(
            "write_note",
            json!({"path": "inbox/salary.md", "content": "y"}),
        )
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::ElicitRequired);
    let shown_fp = refused.details.as_ref().unwrap()["state_fp"].clone();
    let unkeyed = tc_gate::fingerprint_targets(&[(
        "inbox/salary.md".to_owned(),
        Some(tc_vault::content_hash(b"42000\nx")),
    )]);
    assert_eq!(shown_fp.as_str().map(str::len), Some(32));
    assert_ne!(
        shown_fp,
        unkeyed.as_str(),
        "the unkeyed fingerprint is an oracle"
    );
    // Keyed, it still approves: the token redeems and the drift check passes.
    let token = fx.mint(&refused);
    fx.call(
        "write_note",
        with_token(&json!({"path": "inbox/salary.md", "content": "y"}), &token),
    )
    .unwrap();
    assert_eq!(fx.get("inbox/salary.md").as_deref(), Some("y"));

    // Nor does an approved delete, to a snapshot or for good, or the restore, name it.
    let deleted = fx.call("delete_note", json!({"path": "inbox/salary.md"}));
    let token = fx.mint(&deleted.unwrap_err());
    let deleted = fx
        .call(
            "delete_note",
            with_token(&json!({"path": "inbox/salary.md"}), &token),
        )
        .unwrap();
    assert_eq!(deleted["content_hash"], json!(null), "{deleted}");
    let restore = json!({"path": "inbox/salary.md"});
    let restored = match fx.call("restore_note", restore.clone()) {
        Ok(out) => out,
        Err(refusal) => {
            let token = fx.mint(&refusal);
            fx.call("restore_note", with_token(&restore, &token))
                .unwrap()
        }
    };
    assert_eq!(restored["content_hash"], json!(null), "{restored}");
    assert_eq!(fx.get("inbox/salary.md").as_deref(), Some("y"));
    let gone = json!({"path": "inbox/salary.md", "permanent": true});
    let token = fx.mint(&fx.call("delete_note", gone.clone()).unwrap_err());
    let gone = fx.call("delete_note", with_token(&gone, &token)).unwrap();
    assert_eq!(gone["content_hash"], json!(null), "{gone}");
    // A reader is told, as before.
    fx.put("notes/b.md", "b");
    let token = fx.mint(
        &fx.call("delete_note", json!({"path": "notes/b.md"}))
            .unwrap_err(),
    );
    let told = fx
        .call(
            "delete_note",
            with_token(&json!({"path": "notes/b.md"}), &token),
        )
        .unwrap();
    assert_eq!(told["content_hash"], tc_vault::content_hash(b"b"));
}

// r[verify gate.token.single-use]
// r[verify approval.fresh-per-call]
// r[verify gate.token.never-logged]
// r[verify results.no-secrets]
#[test]
fn write_note_overwrite_is_approved_once() {
    write_scenario().approve_then_replay();
}

// r[verify drift.refuse]
// r[verify drift.fresh-retry]
// r[verify drift.token-spent]
// r[verify drift.bind.path-tools]
// r[verify drift.path-fingerprint]
// r[verify results.replay-drift]
// r[verify release.drift-keeps-spent]
#[test]
fn write_note_drift() {
    write_scenario().drift_refused();
}

// r[verify release.acl]
// r[verify vault.acl.after-gate]
#[test]
fn write_note_acl_refusal_gives_the_token_back() {
    write_scenario().acl_releases(deny_write_all());
}

// r[verify release.preflight]
// r[verify vault.conventions.forbid-writes]
// r[verify results.convention-blocked]
#[test]
fn write_note_preflight_never_spends_the_token() {
    write_scenario().preflight_keeps_token(forbid_all());
}

// r[verify vault.conventions.require-frontmatter]
// r[verify vault.conventions.judged]
#[test]
fn write_note_convention_names_the_rule() {
    let fx = Fx::with(
        None,
        vec![ConventionConfig {
            glob: "projects/**".into(),
            require_frontmatter: vec!["status".into()],
            ..ConventionConfig::default()
        }],
    );
    let error = fx
        .call(
            "write_note",
            json!({"path": "projects/p.md", "content": "no fm"}),
        )
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ConventionBlocked);
    let details = error.details.unwrap();
    assert_eq!(details["path"], "projects/p.md");
    assert_eq!(details["glob"], "projects/**");
    assert!(details["rule"].as_str().unwrap().contains("status"));
    assert!(fx.get("projects/p.md").is_none());
    fx.call(
        "write_note",
        json!({"path": "projects/p.md", "content": "---\nstatus: open\n---\n"}),
    )
    .unwrap();
}

// ---------------------------------------------------------------- move_note

fn move_scenario() -> Scenario<'static> {
    Scenario {
        tool: "move_note",
        args: json!({"from": "inbox/a.md", "to": "archive/a.md"}),
        setup: &|fx| {
            if fx.get("archive/a.md").is_some() {
                fx.remove("archive/a.md");
            }
            fx.put("inbox/a.md", "the note");
            fx.put("index.md", "see [[a]] and [[inbox/a|alias]]");
        },
        applied: &|fx| {
            assert!(fx.get("inbox/a.md").is_none());
            assert_eq!(fx.get("archive/a.md").unwrap(), "the note");
        },
        untouched: &|fx| {
            assert_eq!(fx.get("inbox/a.md").unwrap(), "the note");
            assert!(fx.get("archive/a.md").is_none());
        },
        drift: &|fx| fx.put("inbox/a.md", "the note, edited while the prompt was open"),
    }
}

// r[verify tools.move-note]
// r[verify tools.move-note.confirm]
#[test]
fn move_note_within_a_folder_is_free_and_updates_backlinks() {
    let fx = Fx::new();
    fx.put("inbox/a.md", "the note");
    fx.put("index.md", "see [[a]] and ![[inbox/a#Part|alias]]");
    let out = fx
        .call(
            "move_note",
            json!({"from": "inbox/a.md", "to": "inbox/b.md"}),
        )
        .unwrap();
    assert_eq!(fx.get("inbox/b.md").unwrap(), "the note");
    assert_eq!(
        fx.get("index.md").unwrap(),
        "see [[b]] and ![[b#Part|alias]]"
    );
    assert_eq!(out["backlinks"]["links_updated"], 2);
    assert_eq!(fx.requested(), 0);
    // Without update_backlinks, links stay.
    fx.call(
        "move_note",
        json!({"from": "inbox/b.md", "to": "inbox/c.md", "update_backlinks": false}),
    )
    .unwrap();
    assert_eq!(
        fx.get("index.md").unwrap(),
        "see [[b]] and ![[b#Part|alias]]"
    );
}

// r[verify tools.no-overwrite]
#[test]
fn move_and_copy_refuse_an_existing_target_without_overwrite() {
    let fx = Fx::new();
    fx.put("a.md", "a");
    fx.put("b.md", "b");
    assert_eq!(
        code(fx.call("move_note", json!({"from": "a.md", "to": "b.md"}))),
        ErrorCode::NoteExists
    );
    assert_eq!(
        code(fx.call("copy_note", json!({"from": "a.md", "to": "b.md"}))),
        ErrorCode::NoteExists
    );
    assert_eq!(
        code(fx.call("move_note", json!({"from": "zz.md", "to": "c.md"}))),
        ErrorCode::NoteNotFound
    );
    // Overwriting within a folder still asks.
    let refusal = fx
        .call(
            "move_note",
            json!({"from": "a.md", "to": "b.md", "overwrite": true}),
        )
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ElicitRequired);
    assert_eq!(fx.get("b.md").unwrap(), "b");
}

#[test]
fn move_note_across_folders_is_approved_once_with_backlinks() {
    move_scenario().approve_then_replay();
    let fx = Fx::new();
    (move_scenario().setup)(&fx);
    let args = move_scenario().args;
    let token = fx.require("move_note", &args);
    fx.call("move_note", with_token(&args, &token)).unwrap();
    assert_eq!(fx.get("index.md").unwrap(), "see [[a]] and [[a|alias]]");
}

#[test]
fn move_note_drift() {
    move_scenario().drift_refused();
}

#[test]
fn move_note_acl_refusal_gives_the_token_back() {
    move_scenario().acl_releases(deny_write_all());
}

#[test]
fn move_note_preflight_never_spends_the_token() {
    move_scenario().preflight_keeps_token(vec![ConventionConfig {
        glob: "archive/**".into(),
        forbid_writes: true,
        ..ConventionConfig::default()
    }]);
}

// ---------------------------------------------------------------- copy_note

fn copy_scenario() -> Scenario<'static> {
    Scenario {
        tool: "copy_note",
        args: json!({"from": "a.md", "to": "b.md", "overwrite": true}),
        setup: &|fx| {
            fx.put("a.md", "source");
            fx.put("b.md", "target");
        },
        applied: &|fx| assert_eq!(fx.get("b.md").unwrap(), "source"),
        untouched: &|fx| assert_eq!(fx.get("b.md").unwrap(), "target"),
        drift: &|fx| fx.put("a.md", "source edited"),
    }
}

// r[verify tools.copy-note]
#[test]
fn copy_note_to_a_new_path_is_free() {
    let fx = Fx::new();
    fx.put("a.md", "source");
    fx.call("copy_note", json!({"from": "a.md", "to": "elsewhere/b.md"}))
        .unwrap();
    assert_eq!(fx.get("elsewhere/b.md").unwrap(), "source");
    assert_eq!(fx.get("a.md").unwrap(), "source");
    assert_eq!(fx.requested(), 0);
}

#[test]
fn copy_note_overwrite_is_approved_once() {
    copy_scenario().approve_then_replay();
}

#[test]
fn copy_note_drift_on_the_source() {
    copy_scenario().drift_refused();
}

#[test]
fn copy_note_acl_refusal_gives_the_token_back() {
    copy_scenario().acl_releases(deny_write_all());
}

#[test]
fn copy_note_preflight_never_spends_the_token() {
    copy_scenario().preflight_keeps_token(forbid_all());
}

// ---------------------------------------------------------------- update_frontmatter

fn replace_scenario() -> Scenario<'static> {
    Scenario {
        tool: "update_frontmatter",
        args: json!({"path": "n.md", "operation": "replace", "data": {"status": "done"}}),
        setup: &|fx| fx.put("n.md", "---\ntitle: T\nstatus: open\n---\nbody\n"),
        applied: &|fx| assert_eq!(fx.get("n.md").unwrap(), "---\nstatus: done\n---\nbody\n"),
        untouched: &|fx| {
            assert_eq!(
                fx.get("n.md").unwrap(),
                "---\ntitle: T\nstatus: open\n---\nbody\n"
            )
        },
        drift: &|fx| fx.put("n.md", "---\ntitle: T2\n---\nbody\n"),
    }
}

// r[verify tools.update-frontmatter]
#[test]
fn update_frontmatter_merge_and_remove_are_free() {
    let fx = Fx::new();
    fx.put("n.md", "---\ntitle: T\n---\nbody\n");
    let out = fx
        .call(
            "update_frontmatter",
            json!({"path": "n.md", "operation": "merge", "data": {"tags": ["a"]}}),
        )
        .unwrap();
    assert_eq!(out["frontmatter"], json!({"title": "T", "tags": ["a"]}));
    fx.call(
        "update_frontmatter",
        json!({"path": "n.md", "operation": "remove", "keys": ["title"]}),
    )
    .unwrap();
    assert_eq!(fx.get("n.md").unwrap(), "---\ntags:\n- a\n---\nbody\n");
    assert_eq!(fx.requested(), 0);
    let missing = fx
        .call(
            "update_frontmatter",
            json!({"path": "n.md", "operation": "merge"}),
        )
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::ValidationError);
    assert_eq!(
        code(fx.call(
            "update_frontmatter",
            json!({"path": "x.md", "operation": "merge", "data": {}})
        )),
        ErrorCode::NoteNotFound
    );
}

// r[verify tools.update-frontmatter.prev-hash]
// r[verify vault.frontmatter.lossless]
// r[verify vault.frontmatter.lossless-refused]
/// A person's comments, quoting and blank lines survive a merge; a stale prev_hash and a
/// block that cannot be edited in place are refused, the note untouched.
#[test]
fn update_frontmatter_keeps_comments_checks_prev_hash_and_refuses_what_it_cannot_edit() {
    let fx = Fx::new();
    let note = "---\n# my note\ntitle: 'Tea'  # quoted on purpose\n\nstatus: draft\n---\nbody\n";
    fx.put("n.md", note);
    let hash = tc_vault::content_hash(note.as_bytes());
    let stale = fx
        .call(
            "update_frontmatter",
            json!({"path": "n.md", "operation": "merge", "data": {"status": "done"},
                   "prev_hash": "0".repeat(64)}),
        )
        .unwrap_err();
    assert_eq!(stale.code, ErrorCode::ConcurrentModification);
    assert_eq!(fx.get("n.md").unwrap(), note);
    fx.call(
        "update_frontmatter",
        json!({"path": "n.md", "operation": "merge", "data": {"status": "done"},
               "prev_hash": hash}),
    )
    .unwrap();
    assert_eq!(
        fx.get("n.md").unwrap(),
        "---\n# my note\ntitle: 'Tea'  # quoted on purpose\n\nstatus: done\n---\nbody\n"
    );
    let flow = "---\n{title: Tea, status: draft}\n---\nbody\n";
    fx.put("f.md", flow);
    let refused = fx
        .call(
            "update_frontmatter",
            json!({"path": "f.md", "operation": "merge", "data": {"status": "done"}}),
        )
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::InvalidInput, "{refused}");
    assert!(refused.message.contains("in place"), "{refused}");
    assert_eq!(fx.get("f.md").unwrap(), flow);
}

#[test]
fn update_frontmatter_replace_is_approved_once() {
    replace_scenario().approve_then_replay();
}

#[test]
fn update_frontmatter_drift() {
    replace_scenario().drift_refused();
}

#[test]
fn update_frontmatter_acl_refusal_gives_the_token_back() {
    replace_scenario().acl_releases(deny_write_all());
}

#[test]
fn update_frontmatter_preflight_never_spends_the_token() {
    replace_scenario().preflight_keeps_token(vec![ConventionConfig {
        glob: "**".into(),
        require_frontmatter: vec!["title".into()],
        ..ConventionConfig::default()
    }]);
}

// ---------------------------------------------------------------- commit_wiki_page

fn wiki_scenario() -> Scenario<'static> {
    Scenario {
        tool: "commit_wiki_page",
        args: json!({"path": "wiki/topic.md", "content": "generated v2"}),
        setup: &|fx| {
            // A sealed page that a person then edited.
            fx.seal("wiki/topic.md", "generated v1");
            fx.put("wiki/topic.md", "generated v1, edited by hand");
        },
        applied: &|fx| assert_eq!(fx.get("wiki/topic.md").unwrap(), "generated v2"),
        untouched: &|fx| {
            assert_eq!(
                fx.get("wiki/topic.md").unwrap(),
                "generated v1, edited by hand"
            )
        },
        drift: &|fx| fx.put("wiki/topic.md", "edited again"),
    }
}

// r[verify tools.commit-wiki-page]
// r[verify vault.wiki-seal]
// r[verify tools.commit-wiki-page.unsealed]
#[test]
fn commit_wiki_page_overwrites_its_own_sealed_pages_freely() {
    let fx = Fx::new();
    fx.call(
        "commit_wiki_page",
        json!({"path": "wiki/p.md", "content": "v1"}),
    )
    .unwrap();
    fx.call(
        "commit_wiki_page",
        json!({"path": "wiki/p.md", "content": "v2"}),
    )
    .unwrap();
    assert_eq!(fx.get("wiki/p.md").unwrap(), "v2");
    assert_eq!(fx.requested(), 0);
    // Edited by a person: reads as edited, overwriting asks.
    fx.put("wiki/p.md", "v2 with a human touch");
    let refusal = fx
        .call(
            "commit_wiki_page",
            json!({"path": "wiki/p.md", "content": "v3"}),
        )
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ElicitRequired);
    // A note that was never sealed reads as edited too.
    fx.put("wiki/human.md", "a person's note");
    assert_eq!(
        code(fx.call(
            "commit_wiki_page",
            json!({"path": "wiki/human.md", "content": "gen"})
        )),
        ErrorCode::ElicitRequired
    );
}

// r[verify state.delete-voids]
// r[verify vault.wiki-seal.sidecar]
#[test]
fn a_new_server_secret_makes_sealed_pages_read_as_edited() {
    let dir = tempfile::tempdir().unwrap();
    let path = tc_vault::VaultPath::parse("wiki/p.md").unwrap();
    let one = tc_gate::keys::ServerSecret::ephemeral(&tc_gate::clock::SeededEntropy::new(1));
    let two = tc_gate::keys::ServerSecret::ephemeral(&tc_gate::clock::SeededEntropy::new(2));
    let key = tc_gate::keys::KeyPurpose::WikiSeal;
    let sealer = tc_vault::WikiSealer::new(&one.derive(key), dir.path());
    sealer.store(&path, b"page").unwrap();
    assert!(matches!(
        sealer.state(&path, Some(b"page")).unwrap(),
        tc_vault::SealState::Sealed { .. }
    ));
    assert_eq!(
        sealer.state(&path, Some(b"page!")).unwrap(),
        tc_vault::SealState::Edited
    );
    let rekeyed = tc_vault::WikiSealer::new(&two.derive(key), dir.path());
    assert_eq!(
        rekeyed.state(&path, Some(b"page")).unwrap(),
        tc_vault::SealState::Edited
    );
    assert_eq!(
        sealer.state(&path, None).unwrap(),
        tc_vault::SealState::Absent
    );
}

#[test]
fn commit_wiki_page_over_an_edited_page_is_approved_once() {
    wiki_scenario().approve_then_replay();
}

// r[verify drift.bind.commit-wiki-page]
#[test]
fn commit_wiki_page_drift() {
    wiki_scenario().drift_refused();
}

#[test]
fn commit_wiki_page_acl_refusal_gives_the_token_back() {
    wiki_scenario().acl_releases(deny_write_all());
}

#[test]
fn commit_wiki_page_preflight_never_spends_the_token() {
    wiki_scenario().preflight_keeps_token(forbid_all());
}
