//! bulk_create_notes and bulk_set_property through the tool pipeline (spec/bulk.md; spec/drift.md
//! `drift.bind.bulk-create-notes`, `drift.bind.bulk-set-property`; spec/tools.md
//! `tools.compose.bulk-create-notes`, `tools.compose.bulk-set-property`).

use serde_json::{Value, json};
use tc_tools::ErrorCode;
use tc_tools::testing::{Tools, forbid_all, with_token};

struct BulkTools;

impl Tools for BulkTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_tools::Registry::new();
        tc_bulk::register(&mut registry).unwrap();
        registry
    }
}

type Fx = tc_tools::testing::Fx<BulkTools>;
type Scenario<'a> = tc_tools::testing::Scenario<'a, BulkTools>;

const COMMENTED: &str = "---\n# why: kept\ntitle: 'A'   # quoted\nstatus: todo\n---\nbody ^x\n";

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

// r[verify bulk.dry-run.free]
// r[verify bulk.create.modes]
// r[verify bulk.create.content]
// r[verify bulk.results.per-item]
// r[verify tools.compose.bulk-create-notes]
#[test]
fn a_dry_run_is_free_and_a_real_run_asks_once_for_every_item() {
    let fx = Fx::new();
    let args = json!({"items": [
        {"path": "a/one.md", "content": "one"},
        {"path": "a/two.md", "content": "two", "frontmatter": {"tags": ["x"]}},
    ]});
    let mut dry = args.clone();
    dry["dry_run"] = json!(true);
    let plan = fx.call("bulk_create_notes", dry).unwrap();
    assert_eq!(plan["created"], 2);
    assert_eq!(fx.get("a/one.md"), None, "a dry run writes nothing");
    assert_eq!(fx.requested(), 0, "a dry run asks nothing");

    let token = fx.require("bulk_create_notes", &args);
    assert_eq!(fx.get("a/one.md"), None);
    let out = fx
        .call("bulk_create_notes", with_token(&args, &token))
        .unwrap();
    assert_eq!(out["created"], 2);
    assert_eq!(out["items"][1]["outcome"], "created");
    assert_eq!(fx.get("a/one.md").unwrap(), "one");
    assert_eq!(fx.get("a/two.md").unwrap(), "---\ntags:\n- x\n---\ntwo");

    // mode create refuses the whole call when one path holds a note, naming it.
    let again = json!({"items": [
        {"path": "a/three.md", "content": "three"},
        {"path": "a/one.md", "content": "other"},
    ]});
    let refused = fx.call("bulk_create_notes", again).unwrap_err();
    assert_eq!(refused.code, ErrorCode::NoteExists, "{refused}");
    assert_eq!(
        refused.details.as_ref().unwrap()["paths"],
        json!(["a/one.md"])
    );
    assert_eq!(
        fx.get("a/three.md"),
        None,
        "nothing of a refused call is written"
    );

    // overwrite needs every note to exist; upsert does both.
    let over = json!({"mode": "overwrite", "items": [{"path": "a/none.md", "content": "x"}]});
    assert_eq!(
        fx.call("bulk_create_notes", over).unwrap_err().code,
        ErrorCode::NoteNotFound
    );
    let upsert = json!({"mode": "upsert", "items": [
        {"path": "a/one.md", "content": "ONE"},
        {"path": "a/four.md", "content": "four"},
    ]});
    let token = fx.require("bulk_create_notes", &upsert);
    let out = fx
        .call("bulk_create_notes", with_token(&upsert, &token))
        .unwrap();
    assert_eq!(
        (out["created"].clone(), out["replaced"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(fx.get("a/one.md").unwrap(), "ONE");
}

// r[verify drift.bind.bulk-create-notes]
#[test]
fn bulk_create_notes_scenarios() {
    let args = json!({"mode": "upsert", "items": [
        {"path": "n/1.md", "content": "new one"},
        {"path": "n/2.md", "content": "new two"},
        {"path": "n/3.md", "content": "new three"},
    ]});
    Scenario {
        tool: "bulk_create_notes",
        args,
        setup: &|fx| {
            fx.put("n/1.md", "old one");
        },
        applied: &|fx| {
            assert_eq!(fx.get("n/1.md").unwrap(), "new one");
            assert_eq!(fx.get("n/3.md").unwrap(), "new three");
        },
        untouched: &|fx| {
            assert_eq!(fx.get("n/1.md").unwrap(), "old one");
            assert_eq!(fx.get("n/2.md"), None);
        },
        // A note appearing at a path that was free is drift, like a changed one.
        drift: &|fx| fx.put("n/3.md", "someone wrote this"),
    }
    .drift_refused();
}

// r[verify bulk.items.bounded]
#[test]
fn empty_oversized_and_repeated_calls_are_validation_errors() {
    let fx = Fx::new();
    let empty = fx.call("bulk_create_notes", json!({"items": []}));
    assert_eq!(empty.unwrap_err().code, ErrorCode::ValidationError);
    let items: Vec<Value> = (0..1001)
        .map(|i| json!({"path": format!("x/{i}.md")}))
        .collect();
    let big = fx.call("bulk_create_notes", json!({"items": items}));
    assert_eq!(big.unwrap_err().code, ErrorCode::ValidationError);
    let twice = fx.call(
        "bulk_set_property",
        json!({"paths": ["a.md", "a.md"], "key": "k", "value": 1}),
    );
    assert_eq!(twice.unwrap_err().code, ErrorCode::ValidationError);
    let both = fx.call(
        "bulk_set_property",
        json!({"paths": ["a.md"], "folder": "x", "key": "k", "value": 1}),
    );
    assert_eq!(both.unwrap_err().code, ErrorCode::ValidationError);
}

// r[verify bulk.precheck.whole-call]
#[test]
fn a_convention_or_a_hidden_path_refuses_the_whole_call_before_asking() {
    let fx = Fx::with(None, forbid_all());
    let args = json!({"items": [{"path": "ok.md", "content": "x"}]});
    let refused = fx.call("bulk_create_notes", args).unwrap_err();
    assert_eq!(refused.code, ErrorCode::ConventionBlocked, "{refused}");
    assert_eq!(fx.requested(), 0);
    let fx = Fx::new();
    let hidden = json!({"items": [
        {"path": "fine.md", "content": "x"},
        {"path": ".obsidian/app.md", "content": "x"},
    ]});
    let refused = fx.call("bulk_create_notes", hidden).unwrap_err();
    assert_eq!(refused.code, ErrorCode::PathInvalid, "{refused}");
    assert_eq!(fx.get("fine.md"), None);
    assert_eq!(fx.requested(), 0);
}

// r[verify bulk.set-property.lossless]
// r[verify bulk.set-property.targets]
// r[verify bulk.summary.items]
// r[verify tools.compose.bulk-set-property]
#[test]
fn set_property_changes_only_the_keys_lines_and_names_at_most_twenty_notes() {
    let fx = Fx::new();
    for i in 0..25 {
        fx.put(&format!("p/{i:02}.md"), COMMENTED);
    }
    fx.put("p/done.md", "---\nstatus: done\n---\n");
    fx.put("other/x.md", COMMENTED);
    let args = json!({"folder": "p", "key": "status", "value": "done"});
    let summary = raised_summary(&fx, "bulk_set_property", &args);
    assert!(
        summary.contains("in 25 note(s) (1 already hold it)"),
        "{summary}"
    );
    assert!(
        summary.contains("p/00.md: - status: todo | + status: done"),
        "{summary}"
    );
    assert!(summary.contains("… and 5 more note(s)"), "{summary}");
    assert!(!summary.contains("p/24.md"), "{summary}");

    let token = fx.require("bulk_set_property", &args);
    let out = fx
        .call("bulk_set_property", with_token(&args, &token))
        .unwrap();
    assert_eq!(out["changed"], 25);
    assert_eq!(out["unchanged"], 1);
    // r[verify bulk.apply.concurrent]
    let order: Vec<&str> = out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(order, sorted, "reported in the planned (walk) order");
    assert_eq!(order.len(), 26);
    assert_eq!(
        fx.get("p/07.md").unwrap(),
        COMMENTED.replace("status: todo", "status: done")
    );
    assert_eq!(
        fx.get("other/x.md").unwrap(),
        COMMENTED,
        "outside the folder"
    );

    // A dry run by paths: free, and a missing note refuses the whole call.
    let dry = json!({"paths": ["other/x.md"], "key": "n", "value": [1, 2], "dry_run": true});
    assert_eq!(fx.call("bulk_set_property", dry).unwrap()["changed"], 1);
    assert_eq!(fx.get("other/x.md").unwrap(), COMMENTED);
    let missing = json!({"paths": ["other/x.md", "gone.md"], "key": "n", "value": 1});
    assert_eq!(
        fx.call("bulk_set_property", missing).unwrap_err().code,
        ErrorCode::NoteNotFound
    );
}

// r[verify drift.bind.bulk-set-property]
#[test]
fn one_note_changed_among_many_is_drift_and_nothing_is_applied() {
    let paths: Vec<String> = (0..50).map(|i| format!("m/{i}.md")).collect();
    let args = json!({"paths": paths, "key": "status", "value": "done"});
    let scenario = Scenario {
        tool: "bulk_set_property",
        args,
        setup: &|fx| {
            for i in 0..50 {
                fx.put(&format!("m/{i}.md"), "---\nstatus: todo\n---\n");
            }
        },
        applied: &|fx| {
            assert_eq!(fx.get("m/49.md").unwrap(), "---\nstatus: done\n---\n");
        },
        untouched: &|fx| {
            for i in 0..50 {
                assert_eq!(
                    fx.get(&format!("m/{i}.md")).unwrap(),
                    "---\nstatus: todo\n---\n"
                );
            }
        },
        drift: &|fx| fx.put("m/37.md", "---\nstatus: todo\n---\nedited\n"),
    };
    scenario.approve_then_replay();
    scenario.drift_refused();
    let fx = Fx::new();
    (scenario.setup)(&fx);
    let token = fx.require("bulk_set_property", &scenario.args);
    (scenario.drift)(&fx);
    let refused = fx
        .call("bulk_set_property", with_token(&scenario.args, &token))
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::ReplayDrift);
    assert_eq!(fx.get("m/0.md").unwrap(), "---\nstatus: todo\n---\n");
}
