//! update_task: confirmation checked in the handler, no conventions preflight, release
//! through the built-in verifier.

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
    let writer = CallerContext::new("stdio", Scopes::granted(["write:notes"]));
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
    let reader = CallerContext::new("stdio", Scopes::granted(["write:notes", "read:notes"]));
    fx.call_as(&reader, "update_task", with_token(&args, &token))
        .unwrap();
    assert_eq!(fx.get("projects/t.md").unwrap(), REOPENED);
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
