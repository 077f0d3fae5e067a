//! search_notes' filters, sort and regex mode (spec/index.md `search.filters.*`,
//! `search.sort`, `search.regex*`).

mod support;

use std::time::{Duration, SystemTime};

use serde_json::json;
use support::{Fx, code, indexed};
use tc_tools::ErrorCode;
use tc_vault::acl::{AclConfig, ScopeRuleConfig};

fn hits(out: &serde_json::Value) -> Vec<String> {
    out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap().to_owned())
        .collect()
}

/// Sets a file's modification time to `secs` after 2026-01-01T00:00:00Z.
fn touch(fx: &Fx, path: &str, secs: u64) {
    let file = std::fs::File::options()
        .write(true)
        .open(fx.root.join(path))
        .unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600 + secs))
        .unwrap();
}

fn projects(fx: &Fx) {
    fx.put(
        "work/alpha.md",
        "---\nstatus: Active\ntags: [client]\nproject:\n  phase: build\n  owners: [ann, bob]\n---\n# Alpha\nThe alpha launch plan, ticket ID-204.\n",
    );
    fx.put(
        "work/beta.md",
        "---\nstatus: done\naliases: [B, Bee]\n---\n# Beta\nBeta shipped; ticket ID-17 closed.\n",
    );
    fx.put(
        "home/garden.md",
        "---\nstatus: active\npriority: 5\n---\nWater the plan for the garden.\n",
    );
    fx.put("home/empty.md", "---\nstatus: active\n---\n");
    fx.put(
        "private/secret.md",
        "---\nstatus: active\n---\nThe secret plan ID-999.\n",
    );
    touch(fx, "work/alpha.md", 300);
    touch(fx, "work/beta.md", 100);
    touch(fx, "home/garden.md", 200);
    touch(fx, "home/empty.md", 50);
    touch(fx, "private/secret.md", 400);
}

fn private_acl() -> AclConfig {
    AclConfig {
        rules: vec![ScopeRuleConfig {
            glob: "private/**".into(),
            scopes: vec!["read:private".into()],
        }],
        ..AclConfig::default()
    }
}

fn reader() -> tc_tools::CallerContext {
    tc_tools::CallerContext::new("agent", tc_vault::acl::Scopes::granted(["read:notes"]))
}

// r[verify search.filters.query-optional]
#[test]
fn filters_alone_list_the_notes_they_keep_in_path_order() {
    let fx = Fx::with(Some(private_acl()), Vec::new());
    projects(&fx);
    indexed(&fx);
    let out = fx
        .call_as(
            &reader(),
            "search_notes",
            json!({"property": {"key": "status", "value": "ACTIVE"}}),
        )
        .unwrap();
    assert_eq!(
        hits(&out),
        ["home/empty.md", "home/garden.md", "work/alpha.md"],
        "the private note is hidden: {out}"
    );
    let garden = &out["results"][1];
    assert_eq!(garden["snippet"], "Water the plan for the garden.");
    assert_eq!(garden["score"], 0.0);
    assert_eq!(out["results"][0]["snippet"], "", "a note without text");
    assert_eq!(out["results"][2]["heading"], "Alpha");
    // Newest first, the hidden note still left out.
    let newest = fx
        .call_as(
            &reader(),
            "search_notes",
            json!({"property": {"key": "status"}, "sort": "modified"}),
        )
        .unwrap();
    assert_eq!(
        hits(&newest),
        [
            "work/alpha.md",
            "home/garden.md",
            "work/beta.md",
            "home/empty.md"
        ]
    );
    // A folder is a filter too.
    let out = fx.call("search_notes", json!({"folder": "work"})).unwrap();
    assert_eq!(hits(&out), ["work/alpha.md", "work/beta.md"]);
    // Neither a query nor a filter; a mode that needs a query.
    let none = fx.call("search_notes", json!({})).unwrap_err();
    assert_eq!(none.code, ErrorCode::ValidationError);
    assert_eq!(none.details.unwrap()["errors"][0]["pointer"], "/query");
    for mode in ["regex", "semantic", "hybrid"] {
        assert_eq!(
            code(fx.call("search_notes", json!({"folder": "work", "mode": mode}))),
            ErrorCode::ValidationError,
            "{mode}"
        );
    }
}

// r[verify search.filters.property]
#[test]
fn the_property_filter_reads_nested_keys_lists_and_values() {
    let fx = Fx::new();
    projects(&fx);
    indexed(&fx);
    let found = |args: serde_json::Value| hits(&fx.call("search_notes", args).unwrap());
    assert_eq!(
        found(json!({"property": {"key": "project.owners", "value": "Bob"}})),
        ["work/alpha.md"],
        "a nested list holding the value"
    );
    assert_eq!(
        found(json!({"property": {"key": "project.phase"}})),
        ["work/alpha.md"]
    );
    assert_eq!(
        found(json!({"property": {"key": "aliases", "value": "bee"}})),
        ["work/beta.md"]
    );
    assert_eq!(
        found(json!({"property": {"key": "priority", "value": 5.0}})),
        ["home/garden.md"]
    );
    assert_eq!(
        found(json!({"property": {"key": "priority", "value": "5"}})),
        ["home/garden.md"]
    );
    assert!(found(json!({"property": {"key": "status", "value": "act"}})).is_empty());
    // With words: only the notes of both.
    assert_eq!(
        found(json!({"query": "plan", "property": {"key": "status", "value": "active"}})).len(),
        3
    );
    assert_eq!(
        found(
            json!({"query": "plan", "property": {"key": "status", "value": "active"}, "tags": ["client"]})
        ),
        ["work/alpha.md"]
    );
    // A null value is an absent one, as for a top-level argument.
    assert_eq!(
        found(json!({"property": {"key": "priority", "value": null}})),
        ["home/garden.md"]
    );
    let list = fx
        .call(
            "search_notes",
            json!({"property": {"key": "status", "value": ["a"]}}),
        )
        .unwrap_err();
    assert_eq!(list.code, ErrorCode::ValidationError);
}

// r[verify search.filters.modified]
// r[verify search.sort]
#[test]
fn modified_times_filter_and_sort_newest_first() {
    let fx = Fx::new();
    projects(&fx);
    indexed(&fx);
    let found = |args: serde_json::Value| hits(&fx.call("search_notes", args).unwrap());
    assert_eq!(
        found(json!({"modified_after": "2026-01-01T00:03:20Z", "sort": "modified"})),
        ["private/secret.md", "work/alpha.md", "home/garden.md"],
        "at or after the time, newest first"
    );
    assert_eq!(
        found(json!({"modified_before": "2026-01-01T01:03:20+01:00"})),
        ["home/empty.md", "work/beta.md"],
        "before the time, an offset honoured"
    );
    assert_eq!(
        found(
            json!({"modified_after": "2026-01-01", "modified_before": "2026-01-01T00:02:00Z", "folder": "home"})
        ),
        ["home/empty.md"]
    );
    // Words sorted by time instead of rank.
    assert_eq!(
        found(json!({"query": "plan", "sort": "modified"})),
        ["private/secret.md", "work/alpha.md", "home/garden.md"]
    );
    let bad = fx
        .call("search_notes", json!({"modified_after": "last week"}))
        .unwrap_err();
    assert_eq!(bad.code, ErrorCode::ValidationError);
    assert_eq!(
        bad.details.unwrap()["errors"][0]["pointer"],
        "/modified_after"
    );
}

// r[verify search.regex]
#[test]
fn regex_mode_matches_chunks_and_marks_the_match() {
    let fx = Fx::with(Some(private_acl()), Vec::new());
    projects(&fx);
    fx.put("work/many.md", "# One\nID-1 here\n# Two\nand ID-2 there\n");
    indexed(&fx);
    let out = fx
        .call_as(
            &reader(),
            "search_notes",
            json!({"query": r"ID-\d{2,}", "mode": "regex"}),
        )
        .unwrap();
    assert_eq!(hits(&out), ["work/alpha.md", "work/beta.md"], "{out}");
    assert!(
        out["results"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("ticket **ID-204**"),
        "{out}"
    );
    assert_eq!(out["mode"], "regex");
    let out = fx
        .call(
            "search_notes",
            json!({"query": r"(?i)id-\d", "mode": "regex"}),
        )
        .unwrap();
    assert_eq!(
        hits(&out)[0],
        "work/many.md",
        "two matching chunks rank first"
    );
    assert_eq!(out["results"][0]["score"], 2.0);
    // With a filter: only the notes it keeps.
    let out = fx
        .call(
            "search_notes",
            json!({"query": r"ID-\d+", "mode": "regex", "property": {"key": "status", "value": "done"}}),
        )
        .unwrap();
    assert_eq!(hits(&out), ["work/beta.md"]);
}

// r[verify search.regex.refused]
#[test]
fn regex_mode_refuses_bad_and_oversized_patterns_and_runs_nested_repeats_in_linear_time() {
    let fx = Fx::new();
    fx.put("a.md", &format!("{}b\n", "a".repeat(60_000)));
    indexed(&fx);
    for bad in ["(unclosed", r"(\w{400}){400}", r"(a)\1", "(?=look)ahead"] {
        let error = fx
            .call("search_notes", json!({"query": bad, "mode": "regex"}))
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::ValidationError, "{bad}");
        assert_eq!(error.details.unwrap()["errors"][0]["pointer"], "/query");
    }
    let started = std::time::Instant::now();
    let out = fx
        .call("search_notes", json!({"query": "^(a+)+$", "mode": "regex"}))
        .unwrap();
    assert!(hits(&out).is_empty());
    assert!(started.elapsed() < Duration::from_secs(5));
}

// r[verify search.filters.bound]
#[test]
fn a_cursor_is_bound_to_the_filters_and_the_sort() {
    let fx = Fx::new();
    for i in 0..12 {
        fx.put(
            &format!("n/{i:02}.md"),
            &format!("---\nkind: log\n---\nentry {i}\n"),
        );
    }
    indexed(&fx);
    let args = json!({"property": {"key": "kind", "value": "log"}, "limit": 5});
    let mut seen = Vec::new();
    let mut page = fx.call("search_notes", args.clone()).unwrap();
    loop {
        seen.extend(hits(&page));
        let Some(token) = page["next_cursor"].as_str() else {
            break;
        };
        let mut next = args.clone();
        next["cursor"] = json!(token);
        page = fx.call("search_notes", next).unwrap();
    }
    assert_eq!(seen.len(), 12);
    let token = fx.call("search_notes", args.clone()).unwrap()["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    for changed in [
        json!({"property": {"key": "kind", "value": "other"}, "limit": 5, "cursor": token}),
        json!({"property": {"key": "kind", "value": "log"}, "limit": 5, "sort": "modified", "cursor": token}),
        json!({"property": {"key": "kind", "value": "log"}, "limit": 5, "modified_after": "2000-01-01", "cursor": token}),
    ] {
        let refused = fx.call("search_notes", changed).unwrap_err();
        assert_eq!(refused.code, ErrorCode::InvalidInput);
        assert_eq!(refused.details.unwrap()["reason"], "request_mismatch");
    }
}
