//! update_task: confirmation checked in the handler, no conventions preflight, release
//! through the built-in verifier; its transition table (spec/tools.md
//! `tools.update-task.transitions`), the seven-day floor across calls
//! (`floors.update-task-steps`), and the review of every conditional gate against free calls
//! composed in steps (`tools.compose.*`).

mod tools_support;

use std::sync::Arc;

use serde_json::json;
use tc_gate::Verifier;
use tc_tools::{CallerContext, ErrorCode};
use tc_vault::acl::Scopes;
use tc_vault::conventions::ConventionConfig;
use tools_support::{Fx, Scenario, code, deny_write_all, with_token};

/// Done on 2026-11-01, 29 days before the fixture's clock.
const OLD_DONE: &str = "# Tasks\n- [x] ship it ✅ 2026-11-01\n- [ ] next\n";
const REOPENED: &str = "# Tasks\n- [ ] ship it\n- [ ] next\n";

fn reopen_scenario() -> Scenario<'static> {
    Scenario {
        tool: "update_task",
        args: json!({"path": "projects/t.md", "line": 2, "status": "todo"}),
        setup: &|fx| fx.put("projects/t.md", OLD_DONE),
        applied: &|fx| assert_eq!(fx.get("projects/t.md").unwrap(), REOPENED),
        untouched: &|fx| assert_eq!(fx.get("projects/t.md").unwrap(), OLD_DONE),
        drift: &|fx| {
            fx.put(
                "projects/t.md",
                "# Tasks\n- [x] ship it ✅ 2026-11-01\n- [ ] next\n- [ ] more\n",
            )
        },
    }
}

// r[verify tools.update-task]
// r[verify tools.update-task.confirm]
// r[verify floors.update-task-window]
#[test]
fn update_task_free_paths() {
    let fx = Fx::new();
    fx.put("t.md", "- [ ] a\n- [x] recent ✅ 2026-11-25\ntext\n");
    let out = fx
        .call(
            "update_task",
            json!({"path": "t.md", "line": 1, "status": "done"}),
        )
        .unwrap();
    assert_eq!(out["text"], "- [x] a ✅ 2026-11-30");
    // Reopening a task done 5 days ago does not ask.
    fx.call(
        "update_task",
        json!({"path": "t.md", "line": 2, "status": "in_progress"}),
    )
    .unwrap();
    assert_eq!(
        fx.get("t.md").unwrap(),
        "- [x] a ✅ 2026-11-30\n- [/] recent\ntext\n"
    );
    assert_eq!(fx.requested(), 0);
    let not_task = fx
        .call(
            "update_task",
            json!({"path": "t.md", "line": 3, "status": "done"}),
        )
        .unwrap_err();
    assert_eq!(not_task.code, ErrorCode::ValidationError);
    assert_eq!(
        code(fx.call(
            "update_task",
            json!({"path": "t.md", "line": 0, "status": "done"})
        )),
        ErrorCode::ValidationError
    );
    assert_eq!(
        code(fx.call(
            "update_task",
            json!({"path": "t.md", "line": 99, "status": "done"})
        )),
        ErrorCode::ValidationError
    );
    assert_eq!(
        code(fx.call(
            "update_task",
            json!({"path": "t.md", "line": 1, "status": "later"})
        )),
        ErrorCode::ValidationError
    );
}

#[test]
fn update_task_reopening_an_old_task_is_approved_once() {
    reopen_scenario().approve_then_replay();
}

#[test]
fn update_task_drift() {
    reopen_scenario().drift_refused();
}

#[test]
fn update_task_acl_refusal_gives_the_token_back() {
    reopen_scenario().acl_releases(deny_write_all());
}

fn status_rule() -> Vec<ConventionConfig> {
    vec![ConventionConfig {
        glob: "projects/**".into(),
        require_frontmatter: vec!["status".into()],
        ..ConventionConfig::default()
    }]
}

/// A verifier that does not implement release: it keeps every token it is offered.
#[derive(Debug)]
struct NoRelease;
impl Verifier for NoRelease {}

// r[verify release.update-task]
// r[verify release.builtin-verifier]
// r[verify release.convention]
// r[verify vault.conventions.unreadable-as-new]
// r[verify vault.conventions.grandfathered]
#[test]
fn update_task_write_gate_refusal_releases_through_the_builtin_verifier() {
    // The note already breaks the rule (no `status`); a caller without read:notes has the
    // write gate judge it as new, so the rule refuses, inside the handler, before any write.
    let mut fx = Fx::with(None, status_rule());
    fx.pipeline.set_verifier(Arc::new(NoRelease));
    fx.put("projects/t.md", OLD_DONE);
    let writer = CallerContext::new("stdio", Scopes::granted(["write:tasks"]));
    let args = json!({"path": "projects/t.md", "line": 2, "status": "todo"});
    let refusal = fx
        .call_as(&writer, "update_task", args.clone())
        .unwrap_err();
    let token = fx.mint(&refusal);
    let blocked = fx
        .call_as(&writer, "update_task", with_token(&args, &token))
        .unwrap_err();
    assert_eq!(blocked.code, ErrorCode::ConventionBlocked, "{blocked}");
    // Released although the configured verifier never releases: the built-in one did.
    assert_eq!(blocked.details.as_ref().unwrap()["token_released"], true);
    assert_eq!(fx.released(), 1);
    assert_eq!(fx.get("projects/t.md").unwrap(), OLD_DONE);
    let events = fx.gate.events(0, 100).unwrap();
    let released = events
        .iter()
        .find(|e| e.name.as_str() == "hitl_released")
        .unwrap();
    assert_eq!(released.detail["verifier"], "builtin");
    // The same caller id, now able to read the note: the rule it already broke is
    // grandfathered, and the same token applies the call.
    let reader = CallerContext::new("stdio", Scopes::granted(["write:tasks", "read:notes"]));
    fx.call_as(&reader, "update_task", with_token(&args, &token))
        .unwrap();
    assert_eq!(fx.get("projects/t.md").unwrap(), REOPENED);
}

// r[verify vault.acl.declared.edits-read]
#[test]
fn a_caller_that_may_write_a_note_but_not_read_it_learns_nothing_from_edits() {
    let fx = Fx::with(
        Some(tc_tools::testing::read_only_under("notes/**")),
        Vec::new(),
    );
    let hidden = "---\nsalary: 42000\n---\n# Tasks\n- [ ] ask for a raise\nplain line\n";
    fx.put("inbox/private.md", hidden);
    fx.put("inbox/hub.md", "- [[raise talk with salary]]\n");
    let calls = [
        (
            "update_frontmatter",
            json!({"path": "inbox/private.md", "operation": "merge", "data": {"x": 1}}),
        ),
        (
            "update_task",
            json!({"path": "inbox/private.md", "line": 5, "status": "done"}),
        ),
        // A line that is no task: the refusal must not say so.
        (
            "update_task",
            json!({"path": "inbox/private.md", "line": 6, "status": "done"}),
        ),
        (
            "prune_hub_links",
            json!({"path": "inbox/hub.md", "dry_run": false}),
        ),
    ];
    for (tool, args) in calls {
        let refusal = fx.call(tool, args.clone()).unwrap_err();
        assert_eq!(
            refusal.code,
            ErrorCode::AclDenied,
            "{tool} {args}: {refusal}"
        );
        let shown = format!("{refusal} {:?}", refusal.details);
        for secret in ["42000", "raise", "task line", "salary"] {
            assert!(!shown.contains(secret), "{tool} showed {secret:?}: {shown}");
        }
    }
    assert_eq!(fx.get("inbox/private.md").as_deref(), Some(hidden));
    assert_eq!(
        fx.get("inbox/hub.md").as_deref(),
        Some("- [[raise talk with salary]]\n")
    );
    // A note the caller may read is edited as before.
    fx.put("notes/open.md", "- [ ] fine\n");
    fx.call(
        "update_task",
        json!({"path": "notes/open.md", "line": 1, "status": "done"}),
    )
    .unwrap();
}

// r[verify release.custom-verifier]
#[test]
fn a_custom_verifier_without_release_keeps_an_acl_refused_token() {
    let mut fx = Fx::with(Some(deny_write_all()), Vec::new());
    fx.pipeline.set_verifier(Arc::new(NoRelease));
    fx.put("projects/t.md", OLD_DONE);
    let args = json!({"path": "projects/t.md", "line": 2, "status": "todo"});
    let token = fx.require("update_task", &args);
    let refusal = fx
        .call("update_task", with_token(&args, &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::AclDenied);
    assert_eq!(refusal.details.as_ref().unwrap()["token_released"], false);
    assert_eq!(fx.released(), 0);
}

// ---------------------------------------------------------------- the transition table

/// Line `number` (1-based) of the note at `path`.
fn line_of(fx: &Fx, path: &str, number: usize) -> String {
    fx.get(path)
        .unwrap()
        .split('\n')
        .nth(number - 1)
        .unwrap()
        .to_owned()
}

fn task_args(line: u64, change: serde_json::Value) -> serde_json::Value {
    let mut args = json!({"path": "t.md", "line": line});
    for (key, value) in change.as_object().unwrap() {
        args[key] = value.clone();
    }
    args
}

/// Whether a row of the table is applied at once or asks first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    Free,
    Gated,
}

// r[verify tools.update-task.transitions]
// r[verify tools.update-task.record]
// r[verify tools.update-task.reopen]
// r[verify tools.update-task.record-kept]
// r[verify tools.update-task.confirm]
#[test]
fn every_row_of_the_transition_table() {
    // The fixture's clock is 2026-11-30: 2026-11-01 is 29 days old, 2026-11-25 five, and
    // 2026-11-23 / 2026-11-22 are the seven-day edge.
    let rows: &[(&str, serde_json::Value, Row, &str)] = &[
        // From an open box.
        (
            "- [ ] a",
            json!({"status": "done"}),
            Row::Free,
            "- [x] a ✅ 2026-11-30",
        ),
        (
            "- [ ] a ✅ 2026-11-01",
            json!({"status": "done"}),
            Row::Free,
            "- [x] a ✅ 2026-11-01",
        ),
        (
            "- [ ] a ✅ 2026-11-01",
            json!({"status": "in_progress"}),
            Row::Free,
            "- [/] a",
        ),
        (
            "- [/] a",
            json!({"status": "cancelled"}),
            Row::Free,
            "- [-] a",
        ),
        ("- [/] a", json!({"text": "b"}), Row::Free, "- [/] b"),
        // From done.
        ("- [x] a", json!({"status": "todo"}), Row::Free, "- [ ] a"),
        (
            "- [x] a ✅ 2026-11-25",
            json!({"status": "todo"}),
            Row::Free,
            "- [ ] a",
        ),
        (
            "- [x] a ✅ 2026-11-23",
            json!({"status": "in_progress"}),
            Row::Free,
            "- [/] a",
        ),
        (
            "- [x] a ✅ 2026-11-22",
            json!({"status": "todo"}),
            Row::Gated,
            "- [ ] a",
        ),
        (
            "- [x] a ✅ 2026-11-01",
            json!({"status": "in_progress"}),
            Row::Gated,
            "- [/] a",
        ),
        (
            "- [x] a ✅ 2026-11-01",
            json!({"status": "cancelled"}),
            Row::Free,
            "- [-] a ✅ 2026-11-01",
        ),
        (
            "- [x] a ✅ 2026-11-01",
            json!({"status": "done"}),
            Row::Free,
            "- [x] a ✅ 2026-11-01",
        ),
        (
            "- [x] a ✅ 2026-11-01",
            json!({"text": "b"}),
            Row::Free,
            "- [x] b ✅ 2026-11-01",
        ),
        (
            "- [x] a ✅ 2026-11-01",
            json!({"status": "done", "text": "b"}),
            Row::Free,
            "- [x] b ✅ 2026-11-01",
        ),
        (
            "- [x] a ✅ 2026-11-01",
            json!({"text": "[ ] b"}),
            Row::Free,
            "- [x] [ ] b ✅ 2026-11-01",
        ),
        (
            "- [x] a",
            json!({"text": "b"}),
            Row::Free,
            "- [x] b ✅ 2026-11-30",
        ),
        // From cancelled, which keeps a completion record.
        (
            "- [-] a ✅ 2026-11-01",
            json!({"status": "todo"}),
            Row::Gated,
            "- [ ] a",
        ),
        (
            "- [-] a ✅ 2026-11-01",
            json!({"text": "b"}),
            Row::Free,
            "- [-] b ✅ 2026-11-01",
        ),
        (
            "- [-] a ✅ 2026-11-01",
            json!({"status": "done"}),
            Row::Free,
            "- [x] a ✅ 2026-11-01",
        ),
        (
            "- [-] a ✅ 2026-11-25",
            json!({"status": "todo"}),
            Row::Free,
            "- [ ] a",
        ),
        ("- [-] a", json!({"status": "todo"}), Row::Free, "- [ ] a"),
        (
            "- [-] a",
            json!({"status": "done"}),
            Row::Free,
            "- [x] a ✅ 2026-11-30",
        ),
        // From a custom box.
        (
            "- [?] a ✅ 2026-11-01",
            json!({"status": "in_progress"}),
            Row::Gated,
            "- [/] a",
        ),
        (
            "- [?] a ✅ 2026-11-01",
            json!({"text": "b"}),
            Row::Free,
            "- [?] b ✅ 2026-11-01",
        ),
        // The record is the earliest ✅ date outside wikilinks.
        (
            "- [x] a ✅ 2026-11-29 ✅ 2026-11-01",
            json!({"status": "todo"}),
            Row::Gated,
            "- [ ] a",
        ),
        (
            "- [x] [[a]] ✅ 2026-11-01",
            json!({"status": "todo"}),
            Row::Gated,
            "- [ ] [[a]]",
        ),
        (
            "- [x] a [[n ✅ 2026-11-01]]",
            json!({"status": "todo"}),
            Row::Free,
            "- [ ] a [[n ✅ 2026-11-01]]",
        ),
    ];
    for (before, change, row, after) in rows {
        let fx = Fx::new();
        fx.put("t.md", &format!("# T\n{before}\nrest\n"));
        let args = task_args(2, change.clone());
        match row {
            Row::Free => {
                let out = fx.call("update_task", args.clone());
                assert!(out.is_ok(), "{before} {change}: {out:?}");
            }
            Row::Gated => {
                let refusal = fx.call("update_task", args.clone()).unwrap_err();
                assert_eq!(refusal.code, ErrorCode::ElicitRequired, "{before} {change}");
                assert_eq!(line_of(&fx, "t.md", 2), *before, "nothing applied yet");
                let token = fx.mint(&refusal);
                fx.call("update_task", with_token(&args, &token)).unwrap();
            }
        }
        assert_eq!(line_of(&fx, "t.md", 2), *after, "{before} {change}");
        let asked = u64::from(*row == Row::Gated);
        assert_eq!(fx.requested(), asked, "{before} {change}");
    }
}

// r[verify floors.update-task-steps]
// r[verify tools.update-task.record-kept]
#[test]
fn cancelling_then_reopening_a_long_done_task_asks_at_the_reopening() {
    for reopen_as in ["todo", "in_progress"] {
        let fx = Fx::new();
        fx.put("t.md", OLD_DONE);
        fx.call("update_task", task_args(2, json!({"status": "cancelled"})))
            .unwrap();
        assert_eq!(line_of(&fx, "t.md", 2), "- [-] ship it ✅ 2026-11-01");
        assert_eq!(fx.requested(), 0, "cancelling is free");
        let reopen = task_args(2, json!({"status": reopen_as}));
        let token = fx.require("update_task", &reopen);
        assert_eq!(line_of(&fx, "t.md", 2), "- [-] ship it ✅ 2026-11-01");
        fx.call("update_task", with_token(&reopen, &token)).unwrap();
        assert!(
            line_of(&fx, "t.md", 2).ends_with("] ship it"),
            "{reopen_as}"
        );
    }
}

// r[verify floors.update-task-steps]
// r[verify tools.update-task.record-kept]
#[test]
fn rewriting_a_long_done_task_keeps_its_date_so_reopening_it_asks() {
    for change in [
        json!({"text": "ship it, really"}),
        json!({"status": "done", "text": "ship it, really"}),
        json!({"status": "done"}),
    ] {
        let fx = Fx::new();
        fx.put("t.md", OLD_DONE);
        fx.call("update_task", task_args(2, change.clone()))
            .unwrap();
        assert!(
            line_of(&fx, "t.md", 2).ends_with(" ✅ 2026-11-01"),
            "{change}: {}",
            line_of(&fx, "t.md", 2)
        );
        assert_eq!(fx.requested(), 0, "{change}");
        assert_eq!(
            code(fx.call("update_task", task_args(2, json!({"status": "todo"})))),
            ErrorCode::ElicitRequired,
            "{change}"
        );
    }
}

// r[verify tools.update-task.text-date]
// r[verify floors.update-task-steps]
#[test]
fn a_text_may_not_move_a_completion_date() {
    let fx = Fx::new();
    fx.put("t.md", "- [x] ship it ✅ 2026-11-01\n- [ ] next\n");
    let before = fx.get("t.md").unwrap();
    for (line, change) in [
        (1, json!({"text": "ship it ✅ 2026-11-29"})),
        (1, json!({"text": "ship it ✅2026-11-29"})),
        (1, json!({"text": "✅ 2026-11-01 and ✅ 2026-11-29"})),
        (
            1,
            json!({"status": "done", "text": "ship it ✅ 2026-11-30"}),
        ),
        (
            1,
            json!({"status": "todo", "text": "ship it ✅ 2026-11-29"}),
        ),
        // A task without a record may be given today's date and no other: not a future
        // one (which would keep it "recent" forever) nor a past one.
        (2, json!({"status": "done", "text": "next ✅ 2099-01-01"})),
        (2, json!({"status": "done", "text": "next ✅ 2026-11-20"})),
    ] {
        let refusal = fx
            .call("update_task", task_args(line, change.clone()))
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ValidationError, "{change}");
        assert_eq!(
            refusal.details.as_ref().unwrap()["errors"][0]["pointer"],
            "/text",
            "{change}"
        );
        assert_eq!(fx.get("t.md").unwrap(), before, "{change}");
    }
    assert_eq!(fx.requested(), 0);
    // Echoing the task's own date, or a date inside a wikilink, is fine.
    fx.call(
        "update_task",
        task_args(1, json!({"text": "ship it ✅ 2026-11-01 #release"})),
    )
    .unwrap();
    fx.call(
        "update_task",
        task_args(
            2,
            json!({"status": "done", "text": "next [[log ✅ 2026-11-20]] ✅ 2026-11-30"}),
        ),
    )
    .unwrap();
    assert_eq!(
        fx.get("t.md").unwrap(),
        "- [x] ship it ✅ 2026-11-01 #release\n- [x] next [[log ✅ 2026-11-20]] ✅ 2026-11-30\n"
    );
    assert_eq!(fx.requested(), 0);
}

// r[verify tools.update-task.one-line]
#[test]
fn a_line_break_in_text_is_a_validation_error_naming_text() {
    let fx = Fx::new();
    fx.put("t.md", OLD_DONE);
    for text in [
        "ship it\n- [ ] ship it",
        "ship it\r- [ ] ship it",
        "a\r\nb",
        "\n",
    ] {
        for status in [None, Some("done"), Some("cancelled")] {
            let mut args = task_args(2, json!({"text": text}));
            if let Some(status) = status {
                args["status"] = json!(status);
            }
            let refusal = fx.call("update_task", args).unwrap_err();
            assert_eq!(refusal.code, ErrorCode::ValidationError, "{text:?}");
            assert_eq!(
                refusal.details.as_ref().unwrap()["errors"][0]["pointer"],
                "/text",
                "{text:?}"
            );
        }
    }
    assert_eq!(fx.get("t.md").unwrap(), OLD_DONE);
    assert_eq!(fx.requested(), 0);
    // The schema says so, and its validation alone refuses it.
    let registry = <tools_support::NoteTools as tools_support::Tools>::registry();
    let def = registry.get("update_task").unwrap();
    assert_eq!(
        def.input_schema["properties"]["text"]["pattern"],
        r"^[^\r\n]*$"
    );
    let refusal = def
        .parse_args(&task_args(2, json!({"text": "a\nb"})))
        .unwrap_err();
    assert_eq!(
        refusal.details.as_ref().unwrap()["errors"][0]["pointer"],
        "/text"
    );
}

// r[verify tools.update-task.cr-line]
#[test]
fn a_line_holding_a_carriage_return_is_not_a_task_line() {
    // Editors that split lines on a lone CR see two tasks here; update_task sees neither.
    let fx = Fx::new();
    let note = "- [ ] a\r- [x] b ✅ 2026-11-01\n- [ ] c\n";
    fx.put("t.md", note);
    for change in [json!({"status": "in_progress"}), json!({"text": "a"})] {
        let refusal = fx.call("update_task", task_args(1, change)).unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ValidationError);
        assert_eq!(
            refusal.details.as_ref().unwrap()["errors"][0]["pointer"],
            "/line"
        );
    }
    fx.call("update_task", task_args(2, json!({"status": "done"})))
        .unwrap();
    assert_eq!(
        fx.get("t.md").unwrap(),
        "- [ ] a\r- [x] b ✅ 2026-11-01\n- [x] c ✅ 2026-11-30\n"
    );
}

// ---------------------------------------------------------------- walking around in steps

// r[verify tools.compose.update-task]
// r[verify floors.update-task-steps]
#[test]
fn a_free_rename_cannot_date_a_long_done_task_anew() {
    // A rename within a folder is free and rewrites backlinks; a name that carries a ✅ date
    // inside the link puts a newer-looking date on the task's line, and the floor still holds.
    let fx = Fx::new();
    fx.put("a.md", "A\n");
    fx.put("t.md", "- [x] review [[a]] ✅ 2026-11-01\n");
    fx.call(
        "move_note",
        json!({"from": "a.md", "to": "a ✅ 2026-11-29.md"}),
    )
    .unwrap();
    assert_eq!(
        line_of(&fx, "t.md", 1),
        "- [x] review [[a ✅ 2026-11-29]] ✅ 2026-11-01"
    );
    assert_eq!(fx.requested(), 0);
    let refusal = fx
        .call(
            "update_task",
            json!({"path": "t.md", "line": 1, "status": "todo"}),
        )
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ElicitRequired);
    // A name that would break out of the link is refused before any backlink is written
    // (tools.move-note.link-safe-name), so it cannot put a date outside the link either.
    let fx = Fx::new();
    fx.put("a.md", "A\n");
    fx.put("t.md", "- [x] review [[a]] ✅ 2026-11-01\n");
    let refused = fx
        .call(
            "move_note",
            json!({"from": "a.md", "to": "a]] ✅ 2026-11-29 [[b.md"}),
        )
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::ValidationError, "{refused}");
    assert_eq!(line_of(&fx, "t.md", 1), "- [x] review [[a]] ✅ 2026-11-01");
    let refusal = fx
        .call(
            "update_task",
            json!({"path": "t.md", "line": 1, "status": "todo"}),
        )
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ElicitRequired);
}

// r[verify tools.compose.update-task]
#[test]
fn appending_and_prepending_never_touch_an_existing_task_line() {
    let fx = Fx::new();
    fx.put("t.md", "- [x] ship it ✅ 2026-11-01");
    for (mode, content) in [
        ("prepend", "- [ ] "),
        ("append", "✅ 2026-11-29"),
        ("append", ""),
    ] {
        fx.call(
            "write_note",
            json!({"path": "t.md", "mode": mode, "content": content}),
        )
        .unwrap();
    }
    assert_eq!(
        fx.get("t.md").unwrap(),
        "- [ ] \n- [x] ship it ✅ 2026-11-01\n✅ 2026-11-29"
    );
    assert_eq!(fx.requested(), 0);
    assert_eq!(
        code(fx.call(
            "update_task",
            json!({"path": "t.md", "line": 2, "status": "todo"})
        )),
        ErrorCode::ElicitRequired
    );
}

// r[verify tools.compose.write-note]
#[test]
fn no_free_steps_replace_a_non_empty_note() {
    let fx = Fx::new();
    let original = "---\na: 1\n---\n# Plan\nkeep me";
    fx.put("plan.md", original);
    fx.call(
        "write_note",
        json!({"path": "plan.md", "mode": "prepend", "content": "head"}),
    )
    .unwrap();
    fx.call(
        "write_note",
        json!({"path": "plan.md", "mode": "append", "content": "tail"}),
    )
    .unwrap();
    assert_eq!(
        fx.get("plan.md").unwrap(),
        "---\na: 1\n---\nhead\n# Plan\nkeep me\ntail"
    );
    assert_eq!(
        code(fx.call(
            "write_note",
            json!({"path": "plan.md", "mode": "create", "content": "x"})
        )),
        ErrorCode::NoteExists
    );
    assert_eq!(
        code(fx.call("write_note", json!({"path": "plan.md", "content": "x"}))),
        ErrorCode::ElicitRequired
    );
    // A rename carries the note intact; what is then created at the old path is new.
    let kept = fx.get("plan.md").unwrap();
    fx.call("move_note", json!({"from": "plan.md", "to": "plan2.md"}))
        .unwrap();
    fx.call("write_note", json!({"path": "plan.md", "content": "new"}))
        .unwrap();
    assert_eq!(fx.get("plan2.md").unwrap(), kept);
    assert_eq!(fx.requested(), 1, "only the overwrite asked");
}

// r[verify tools.compose.move-note]
#[test]
fn no_free_steps_move_a_note_out_of_its_folder_or_over_another() {
    let fx = Fx::new();
    fx.put("a/n.md", "N\n");
    fx.put("a/taken.md", "");
    fx.put("b.md", "see [[n]]\n");
    // The free ways to put its text in another folder leave it and its links in place.
    fx.call("copy_note", json!({"from": "a/n.md", "to": "c/n.md"}))
        .unwrap();
    fx.call("write_note", json!({"path": "c/m.md", "content": "N\n"}))
        .unwrap();
    assert_eq!(fx.get("a/n.md").unwrap(), "N\n");
    assert_eq!(fx.get("b.md").unwrap(), "see [[n]]\n");
    // A free move stays in its folder.
    fx.call("move_note", json!({"from": "a/n.md", "to": "a/n2.md"}))
        .unwrap();
    assert_eq!(fx.get("b.md").unwrap(), "see [[n2]]\n");
    assert_eq!(fx.requested(), 0);
    for (to, overwrite) in [("c/x.md", false), ("x.md", false), ("a/taken.md", true)] {
        assert_eq!(
            code(fx.call(
                "move_note",
                json!({"from": "a/n2.md", "to": to, "overwrite": overwrite})
            )),
            ErrorCode::ElicitRequired,
            "{to}"
        );
    }
}

// r[verify tools.compose.copy-note]
#[test]
fn no_free_steps_copy_a_note_over_another() {
    let fx = Fx::new();
    fx.put("a.md", "A\n");
    fx.put("b.md", "B\n");
    assert_eq!(
        code(fx.call(
            "copy_note",
            json!({"from": "a.md", "to": "b.md", "overwrite": true})
        )),
        ErrorCode::ElicitRequired
    );
    // Freeing the path takes a rename, which keeps the note that was there.
    fx.call("move_note", json!({"from": "b.md", "to": "b2.md"}))
        .unwrap();
    fx.call("copy_note", json!({"from": "a.md", "to": "b.md"}))
        .unwrap();
    assert_eq!(fx.get("b.md").unwrap(), "A\n");
    assert_eq!(fx.get("b2.md").unwrap(), "B\n");
    assert_eq!(fx.requested(), 1);
}

// r[verify tools.compose.update-frontmatter]
#[test]
fn no_free_call_drops_a_frontmatter_key_it_does_not_name() {
    let fx = Fx::new();
    fx.put("n.md", "---\na: 1\nb: 2\n---\nbody\n");
    let fm = |fx: &Fx| {
        fx.call("read_notes", json!({"paths": ["n.md"]})).unwrap()["notes"][0]["frontmatter"]
            .clone()
    };
    assert_eq!(
        code(fx.call(
            "update_frontmatter",
            json!({"path": "n.md", "operation": "replace", "data": {"c": 3}})
        )),
        ErrorCode::ElicitRequired
    );
    fx.call(
        "update_frontmatter",
        json!({"path": "n.md", "operation": "merge", "data": {"c": 3}}),
    )
    .unwrap();
    assert_eq!(fm(&fx), json!({"a": 1, "b": 2, "c": 3}));
    fx.call(
        "update_frontmatter",
        json!({"path": "n.md", "operation": "remove", "keys": ["a", "zz"]}),
    )
    .unwrap();
    assert_eq!(fm(&fx), json!({"b": 2, "c": 3}));
    // The residual: a remove that names every other key reaches what the replace would.
    fx.call(
        "update_frontmatter",
        json!({"path": "n.md", "operation": "remove", "keys": ["b"]}),
    )
    .unwrap();
    assert_eq!(fm(&fx), json!({"c": 3}));
    assert_eq!(fx.requested(), 1);
}

// r[verify tools.compose.rewrite-link]
#[test]
fn no_free_call_points_a_link_at_another_note() {
    use tc_vault::VaultPath;
    use tc_vault::links::LinkResolver;
    let fx = Fx::new();
    fx.put("x/a.md", "A\n");
    fx.put("b.md", "see [[a]]\n");
    fx.call(
        "rewrite_link",
        json!({"from_target": "a", "to_target": "other"}),
    )
    .unwrap();
    assert_eq!(
        fx.get("b.md").unwrap(),
        "see [[a]]\n",
        "a dry run writes nothing"
    );
    assert_eq!(
        code(fx.call(
            "rewrite_link",
            json!({"from_target": "a", "to_target": "other", "dry_run": false})
        )),
        ErrorCode::ElicitRequired
    );
    // A free rename rewrites the backlink so that it still leads to the same note.
    fx.call("move_note", json!({"from": "x/a.md", "to": "x/a2.md"}))
        .unwrap();
    assert_eq!(fx.get("b.md").unwrap(), "see [[a2]]\n");
    let p = |s: &str| VaultPath::parse(s).unwrap();
    let resolver = LinkResolver::new([p("x/a2.md"), p("b.md")]);
    assert_eq!(resolver.resolve("a2"), Some(&p("x/a2.md")));
    // The residual: a new note can take over what a short link resolves to, as in
    // Obsidian, while no note's text changes.
    fx.call("write_note", json!({"path": "a2.md", "content": "other\n"}))
        .unwrap();
    assert_eq!(fx.get("b.md").unwrap(), "see [[a2]]\n");
    let resolver = LinkResolver::new([p("x/a2.md"), p("a2.md"), p("b.md")]);
    assert_eq!(resolver.resolve("a2"), Some(&p("a2.md")));
    assert_eq!(fx.requested(), 1);
}

// r[verify tools.compose.prune-hub-links]
#[test]
fn no_free_call_removes_a_link_outside_a_task_or_the_frontmatter() {
    let fx = Fx::new();
    fx.put("n.md", "N\n");
    let hub = "---\nsee: \"[[gone1]]\"\n---\n- [[gone2]]\n- [ ] call [[gone3]]\n[[n]]\n";
    fx.put("hub.md", hub);
    assert_eq!(
        code(fx.call(
            "prune_hub_links",
            json!({"path": "hub.md", "dry_run": false})
        )),
        ErrorCode::ElicitRequired
    );
    // A dry run and a rename (with or without backlinks) keep every link.
    fx.call("prune_hub_links", json!({"path": "hub.md"}))
        .unwrap();
    fx.call(
        "move_note",
        json!({"from": "n.md", "to": "n2.md", "update_backlinks": false}),
    )
    .unwrap();
    assert_eq!(fx.get("hub.md").unwrap(), hub);
    fx.call("move_note", json!({"from": "n2.md", "to": "n3.md"}))
        .unwrap();
    assert!(
        fx.get("hub.md").unwrap().ends_with("\n[[n]]\n"),
        "dangling, not removed"
    );
    // The residual: a task's description and a frontmatter value are free to edit.
    fx.call(
        "update_task",
        json!({"path": "hub.md", "line": 5, "text": "call"}),
    )
    .unwrap();
    fx.call(
        "update_frontmatter",
        json!({"path": "hub.md", "operation": "remove", "keys": ["see"]}),
    )
    .unwrap();
    assert_eq!(
        fx.get("hub.md").unwrap(),
        "- [[gone2]]\n- [ ] call\n[[n]]\n"
    );
    assert_eq!(fx.requested(), 1);
}

// r[verify tools.compose.commit-wiki-page]
#[test]
fn no_free_call_makes_a_changed_page_read_as_sealed() {
    let fx = Fx::new();
    let page = |content: &str| json!({"path": "wiki/p.md", "content": content});
    fx.call("commit_wiki_page", page("# P\n- [ ] t\n")).unwrap();
    fx.call("commit_wiki_page", page("# P\n- [ ] t\n- [ ] u\n"))
        .unwrap();
    assert_eq!(
        fx.requested(),
        0,
        "a sealed, unchanged page is free to regenerate"
    );
    // Any change to the page, by a person or by a free tool, makes it read as edited.
    fx.call(
        "update_task",
        json!({"path": "wiki/p.md", "line": 2, "status": "done"}),
    )
    .unwrap();
    assert_eq!(
        code(fx.call("commit_wiki_page", page("# P\n"))),
        ErrorCode::ElicitRequired
    );
    // A renamed page is unsealed at its new path; the edited page stays intact there while
    // a new page is committed at the old one.
    fx.call("move_note", json!({"from": "wiki/p.md", "to": "wiki/q.md"}))
        .unwrap();
    assert_eq!(
        code(fx.call(
            "commit_wiki_page",
            json!({"path": "wiki/q.md", "content": "# Q\n"})
        )),
        ErrorCode::ElicitRequired
    );
    fx.call("commit_wiki_page", page("# P\n")).unwrap();
    assert_eq!(
        fx.get("wiki/q.md").unwrap(),
        "# P\n- [x] t ✅ 2026-11-30\n- [ ] u\n"
    );
    assert_eq!(fx.requested(), 2);
}
