//! rewrite_link and prune_hub_links.

mod tools_support;

use serde_json::json;
use tc_tools::ErrorCode;
use tc_vault::acl::AclConfig;
use tools_support::{Fx, Scenario, code, deny_write_all, forbid_all, with_token};

const A: &str = "see [[old]] and ![[old]]";
const B: &str = "also [[old|the old one]]";

fn rewrite_scenario() -> Scenario<'static> {
    Scenario {
        tool: "rewrite_link",
        args: json!({"from_target": "old", "to_target": "new", "dry_run": false}),
        setup: &|fx| {
            fx.put("old.md", "O");
            fx.put("a.md", A);
            fx.put("sub/b.md", B);
        },
        applied: &|fx| {
            assert_eq!(fx.get("a.md").unwrap(), "see [[new]] and ![[new]]");
            assert_eq!(fx.get("sub/b.md").unwrap(), "also [[new|the old one]]");
        },
        untouched: &|fx| {
            assert_eq!(fx.get("a.md").unwrap(), A);
            assert_eq!(fx.get("sub/b.md").unwrap(), B);
        },
        drift: &|fx| fx.put("sub/b.md", "also [[old|the old one]], edited"),
    }
}

// r[verify tools.rewrite-link]
// r[verify tools.dry-run-reports]
#[test]
fn rewrite_link_dry_run_reports_and_changes_nothing() {
    let fx = Fx::new();
    (rewrite_scenario().setup)(&fx);
    let out = fx
        .call(
            "rewrite_link",
            json!({"from_target": "old", "to_target": "new"}),
        )
        .unwrap();
    assert_eq!(out["dry_run"], true);
    assert_eq!(out["links"], 3);
    assert_eq!(
        out["notes"],
        json!([{"path": "a.md", "links": 2}, {"path": "sub/b.md", "links": 1}])
    );
    (rewrite_scenario().untouched)(&fx);
    assert_eq!(fx.requested(), 0);
    // Embeds left alone, in one folder only.
    let out = fx
        .call("rewrite_link", json!({"from_target": "old", "to_target": "new", "include_embeds": false, "folder": "sub"}))
        .unwrap();
    assert_eq!(out["notes"], json!([{"path": "sub/b.md", "links": 1}]));
    assert_eq!(
        code(fx.call(
            "rewrite_link",
            json!({"from_target": "old", "to_target": "bad|target"})
        )),
        ErrorCode::ValidationError
    );
}

#[test]
fn rewrite_link_is_approved_once() {
    rewrite_scenario().approve_then_replay();
}

// r[verify drift.bind.rewrite-link]
// r[verify drift.state-covered]
#[test]
fn rewrite_link_drift_when_a_touched_note_changes() {
    rewrite_scenario().drift_refused();
}

#[test]
fn rewrite_link_drift_when_a_new_note_gains_a_link() {
    let fx = Fx::new();
    (rewrite_scenario().setup)(&fx);
    let args = rewrite_scenario().args;
    let token = fx.require("rewrite_link", &args);
    fx.put("c.md", "a fresh [[old]] link");
    let refusal = fx
        .call("rewrite_link", with_token(&args, &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ReplayDrift);
    (rewrite_scenario().untouched)(&fx);
    assert_eq!(fx.get("c.md").unwrap(), "a fresh [[old]] link");
}

// r[verify vault.acl.declared.rewrite-link]
#[test]
fn rewrite_link_acl_refusal_gives_the_token_back() {
    // sub/b.md would be touched but may not be written: refused by name after the gate.
    rewrite_scenario().acl_releases(AclConfig {
        write_paths: Some(vec!["a.md".into(), "old.md".into()]),
        ..AclConfig::default()
    });
}

// r[verify vault.acl.list-hides]
#[test]
fn rewrite_link_leaves_out_notes_the_caller_may_not_read() {
    let fx = Fx::with(
        Some(AclConfig {
            read_paths: Some(vec!["a.md".into(), "old.md".into()]),
            ..AclConfig::default()
        }),
        Vec::new(),
    );
    (rewrite_scenario().setup)(&fx);
    let out = fx
        .call(
            "rewrite_link",
            json!({"from_target": "old", "to_target": "new"}),
        )
        .unwrap();
    assert_eq!(out["notes"], json!([{"path": "a.md", "links": 2}]));
}

// r[verify release.convention]
#[test]
fn rewrite_link_write_gate_refusal_before_any_write_releases_the_token() {
    let mut fx = Fx::new();
    (rewrite_scenario().setup)(&fx);
    let args = rewrite_scenario().args;
    let token = fx.require("rewrite_link", &args);
    fx.reconfigure(None, forbid_all());
    let blocked = fx
        .call("rewrite_link", with_token(&args, &token))
        .unwrap_err();
    assert_eq!(blocked.code, ErrorCode::ConventionBlocked);
    assert_eq!(blocked.details.as_ref().unwrap()["token_released"], true);
    (rewrite_scenario().untouched)(&fx);
    fx.reconfigure(None, Vec::new());
    fx.call("rewrite_link", with_token(&args, &token)).unwrap();
    (rewrite_scenario().applied)(&fx);
}

// ---------------------------------------------------------------- prune_hub_links

const HUB: &str = "# Hub\n- [[alive]]\n- [[gone]]\nInline [[also gone|x]] text.\n";
const PRUNED: &str = "# Hub\n- [[alive]]\nInline  text.\n";

fn prune_scenario() -> Scenario<'static> {
    Scenario {
        tool: "prune_hub_links",
        args: json!({"path": "hub.md", "dry_run": false}),
        setup: &|fx| {
            fx.put("alive.md", "here");
            fx.put("hub.md", HUB);
        },
        applied: &|fx| assert_eq!(fx.get("hub.md").unwrap(), PRUNED),
        untouched: &|fx| assert_eq!(fx.get("hub.md").unwrap(), HUB),
        drift: &|fx| fx.put("hub.md", "# Hub\n- [[gone]]\n"),
    }
}

// r[verify tools.prune-hub-links]
#[test]
fn prune_hub_links_dry_run_and_nothing_to_prune_are_free() {
    let fx = Fx::new();
    (prune_scenario().setup)(&fx);
    let out = fx
        .call("prune_hub_links", json!({"path": "hub.md"}))
        .unwrap();
    assert_eq!(out["removed"], json!(["gone", "also gone"]));
    assert_eq!(out["applied"], false);
    assert_eq!(fx.get("hub.md").unwrap(), HUB);
    fx.put("clean.md", "- [[alive]]\n");
    let out = fx
        .call(
            "prune_hub_links",
            json!({"path": "clean.md", "dry_run": false}),
        )
        .unwrap();
    assert_eq!(out["removed"], json!([]));
    assert_eq!(fx.requested(), 0);
    let stale = fx.call(
        "prune_hub_links",
        json!({"path": "hub.md", "prev_hash": "0".repeat(64), "dry_run": false}),
    );
    assert_eq!(code(stale), ErrorCode::ConcurrentModification);
}

#[test]
fn prune_hub_links_is_approved_once() {
    prune_scenario().approve_then_replay();
}

#[test]
fn prune_hub_links_drift() {
    prune_scenario().drift_refused();
}

// r[verify drift.bind.prune-hub-links]
/// The hub unchanged, but a live link becomes dead between the request and the redemption
/// (its target deleted): the human approved removing two links and a third would go, so it
/// is drift and the hub keeps every link. A dead link coming back to life is drift too.
#[test]
fn prune_hub_links_binds_the_links_it_would_remove() {
    let fx = Fx::new();
    (prune_scenario().setup)(&fx);
    let args = json!({"path": "hub.md", "dry_run": false});
    let token = fx.require("prune_hub_links", &args);
    fx.remove("alive.md");
    let refused = fx.call("prune_hub_links", with_token(&args, &token));
    assert_eq!(code(refused), ErrorCode::ReplayDrift);
    assert_eq!(fx.get("hub.md").unwrap(), HUB);

    fx.put("alive.md", "here");
    let token = fx.require("prune_hub_links", &args);
    fx.put("gone.md", "back");
    let refused = fx.call("prune_hub_links", with_token(&args, &token));
    assert_eq!(code(refused), ErrorCode::ReplayDrift);
    assert_eq!(fx.get("hub.md").unwrap(), HUB);
}

#[test]
fn prune_hub_links_acl_refusal_gives_the_token_back() {
    prune_scenario().acl_releases(deny_write_all());
}

#[test]
fn prune_hub_links_preflight_never_spends_the_token() {
    prune_scenario().preflight_keeps_token(forbid_all());
}

// r[verify tools.prune-hub-links.markdown]
/// Markdown links are judged as Obsidian resolves them, from the hub's folder: a dead
/// relative, absolute, encoded or angle-bracketed link goes whole; a live one, a web link and
/// one in code stay.
#[test]
fn prune_hub_links_removes_dead_markdown_links_too() {
    let fx = Fx::new();
    fx.put("notes/live note.md", "here");
    fx.put("hubs/sibling.md", "here");
    let hub = "# Hub\n\
        - [live](../notes/live%20note.md)\n\
        - [sibling](sibling.md)\n\
        - [gone](../notes/gone.md)\n\
        - [also gone](</notes/no such note.md>)\n\
        - ![missing](pic.png) and [web](https://example.org/x.md)\n\
        - `[code](nowhere.md)` [[sibling]]\n";
    fx.put("hubs/hub.md", hub);
    let out = fx
        .call("prune_hub_links", json!({"path": "hubs/hub.md"}))
        .unwrap();
    assert_eq!(
        out["removed"],
        json!(["../notes/gone.md", "/notes/no such note.md", "pic.png"])
    );
    let args = json!({"path": "hubs/hub.md", "dry_run": false});
    let token = fx.require("prune_hub_links", &args);
    fx.call("prune_hub_links", with_token(&args, &token))
        .unwrap();
    assert_eq!(
        fx.get("hubs/hub.md").unwrap(),
        "# Hub\n\
        - [live](../notes/live%20note.md)\n\
        - [sibling](sibling.md)\n\
        -  and [web](https://example.org/x.md)\n\
        - `[code](nowhere.md)` [[sibling]]\n"
    );
}
