//! The link tools on an indexed vault (spec/metadata.md `## Links`): backlinks, outgoing
//! links, orphans and unresolved links, for wikilinks, embeds and Markdown links alike, with
//! the folder ACL and paging.

use serde_json::{Value, json};
use tc_tools::ErrorCode;
use tc_tools::testing::{Tools, code};
use tc_vault::acl::AclConfig;

struct MetadataTools;

impl Tools for MetadataTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_tools::Registry::new();
        tc_metadata::register(&mut registry).unwrap();
        registry
    }
}

type Fx = tc_tools::testing::Fx<MetadataTools>;

fn indexed(fx: &Fx) {
    let binding = fx.pipeline.vault("main").unwrap();
    if binding.index().is_some() {
        return;
    }
    let index = tc_index::open_indexes(
        &fx.cache(),
        [("main", fx.root.as_path())],
        &tc_index::SearchConfig::default(),
    )
    .unwrap()
    .remove(0);
    index.first_build();
    binding.attach_index(index);
}

fn vault_of(acl: Option<AclConfig>, notes: &[(&str, &str)]) -> Fx {
    let fx = Fx::with(acl, Vec::new());
    for (path, content) in notes {
        fx.put(path, content);
    }
    indexed(&fx);
    fx
}

/// A person's vault: daily notes, a project with relative Markdown links, an attachment.
fn person_vault(acl: Option<AclConfig>) -> Fx {
    vault_of(
        acl,
        &[
            (
                "Projects/Plan.md",
                "---\ntags: [project]\n---\n# Plan\nSee [the budget](Budget%20Sheet.md) and ![chart](../assets/chart.png)\n",
            ),
            (
                "Projects/Budget Sheet.md",
                "Back to [[Plan|the plan]] and [home](/Home.md).\n",
            ),
            (
                "Daily/2026-12-05.md",
                "- worked on [[Plan#Goals]]\n- [plan](<../Projects/Plan.md>)\n- `[[Plan]]` in code\n- [[Nowhere]] and [gone](missing.md)\n",
            ),
            ("Home.md", "Start: [[Projects/Plan]] and ![[chart.png]]\n"),
            ("Lonely.md", "links to [[Lonely]] only (itself)\n"),
            ("private/secret.md", "[[Plan]] and [[Ghost]]\n"),
            ("assets/chart.png", "png"),
        ],
    )
}

fn rows(out: &Value, key: &str, fields: &[&str]) -> Vec<Vec<String>> {
    out[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            fields
                .iter()
                .map(|f| match &row[*f] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect()
        })
        .collect()
}

// r[verify metadata.links.backlinks]
// r[verify index.links.markdown]
#[test]
fn backlinks_of_every_kind_with_line_and_text() {
    let fx = person_vault(None);
    let out = fx
        .call("get_backlinks", json!({"path": "Projects/Plan.md"}))
        .unwrap();
    assert_eq!(
        rows(&out, "backlinks", &["source", "line", "text", "embed"]),
        [
            ["Daily/2026-12-05.md", "1", "[[Plan#Goals]]", "false"],
            [
                "Daily/2026-12-05.md",
                "2",
                "[plan](<../Projects/Plan.md>)",
                "false"
            ],
            ["Home.md", "1", "[[Projects/Plan]]", "false"],
            [
                "Projects/Budget Sheet.md",
                "1",
                "[[Plan|the plan]]",
                "false"
            ],
            ["private/secret.md", "1", "[[Plan]]", "false"],
        ]
    );
    assert_eq!(out["next_cursor"], Value::Null);
    // A relative, percent-encoded Markdown link finds its note; an embed says so.
    let budget = fx
        .call("get_backlinks", json!({"path": "Projects/Budget Sheet.md"}))
        .unwrap();
    assert_eq!(
        rows(&budget, "backlinks", &["source", "text"]),
        [["Projects/Plan.md", "[the budget](Budget%20Sheet.md)"]]
    );
    let chart = fx
        .call("get_backlinks", json!({"path": "assets/chart.png"}))
        .unwrap();
    assert_eq!(
        rows(&chart, "backlinks", &["source", "embed"]),
        [["Home.md", "true"], ["Projects/Plan.md", "true"]]
    );
    // An edit behind the server's back is seen by the next call.
    fx.put("New.md", "[x](Projects/Plan.md)\n");
    let out = fx
        .call("get_backlinks", json!({"path": "Projects/Plan.md"}))
        .unwrap();
    assert_eq!(out["backlinks"].as_array().unwrap().len(), 6);
}

// r[verify metadata.links.outgoing]
#[test]
fn outgoing_links_say_where_each_leads() {
    let fx = person_vault(None);
    let out = fx
        .call("get_outgoing_links", json!({"path": "Daily/2026-12-05.md"}))
        .unwrap();
    assert_eq!(
        rows(&out, "links", &["line", "target", "resolved"]),
        [
            ["1", "Plan", "Projects/Plan.md"],
            ["2", "../Projects/Plan.md", "Projects/Plan.md"],
            ["4", "Nowhere", "null"],
            ["4", "missing.md", "null"],
        ]
    );
    let plan = fx
        .call("get_outgoing_links", json!({"path": "Projects/Plan.md"}))
        .unwrap();
    assert_eq!(
        rows(&plan, "links", &["resolved", "embed"]),
        [
            ["Projects/Budget Sheet.md", "false"],
            ["assets/chart.png", "true"]
        ]
    );
}

// r[verify metadata.links.orphans]
// r[verify metadata.links.unresolved]
#[test]
fn orphans_and_unresolved_links() {
    let fx = person_vault(None);
    let out = fx.call("find_orphans", json!({})).unwrap();
    let notes: Vec<&str> = out["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(
        notes,
        ["Daily/2026-12-05.md", "Lonely.md", "private/secret.md"]
    );
    let daily = fx.call("find_orphans", json!({"folder": "Daily"})).unwrap();
    assert_eq!(daily["notes"], json!(["Daily/2026-12-05.md"]));
    let out = fx.call("find_unresolved_links", json!({})).unwrap();
    assert_eq!(
        rows(&out, "links", &["source", "line", "target"]),
        [
            ["Daily/2026-12-05.md", "4", "Nowhere"],
            ["Daily/2026-12-05.md", "4", "missing.md"],
            ["private/secret.md", "1", "Ghost"],
        ]
    );
    let scoped = fx
        .call("find_unresolved_links", json!({"folder": "private"}))
        .unwrap();
    assert_eq!(scoped["links"].as_array().unwrap().len(), 1);
}

// r[verify metadata.links.acl]
#[test]
fn what_the_folder_acl_hides_is_left_out() {
    let acl = AclConfig {
        read_paths: Some(vec![
            "Projects/**".to_owned(),
            "Daily/**".to_owned(),
            "Home.md".to_owned(),
            "Lonely.md".to_owned(),
        ]),
        ..AclConfig::default()
    };
    let fx = person_vault(Some(acl));
    let out = fx
        .call("get_backlinks", json!({"path": "Projects/Plan.md"}))
        .unwrap();
    let sources: Vec<String> = rows(&out, "backlinks", &["source"])
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert!(
        !sources.iter().any(|s| s.starts_with("private/")),
        "{sources:?}"
    );
    assert_eq!(sources.len(), 4);
    let unresolved = fx.call("find_unresolved_links", json!({})).unwrap();
    assert_eq!(unresolved["links"].as_array().unwrap().len(), 2);
    // The chart is not readable: the embed shows no resolved path.
    let plan = fx
        .call("get_outgoing_links", json!({"path": "Projects/Plan.md"}))
        .unwrap();
    assert_eq!(plan["links"][1]["resolved"], Value::Null);
    assert_eq!(
        code(fx.call("get_backlinks", json!({"path": "private/secret.md"}))),
        ErrorCode::AclDenied
    );
    assert_eq!(
        code(fx.call("get_outgoing_links", json!({"path": ".obsidian/app.json"}))),
        ErrorCode::PathInvalid
    );
}

// r[verify metadata.links.paging]
#[test]
fn a_long_result_pages_with_a_bound_cursor() {
    let mut notes: Vec<(String, String)> = (0..450)
        .map(|i| {
            (
                format!("refs/r{i:03}.md"),
                "[[Hub]] and [h](../Hub.md)\n".to_owned(),
            )
        })
        .collect();
    notes.push(("Hub.md".to_owned(), "hub".to_owned()));
    let borrowed: Vec<(&str, &str)> = notes
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let fx = vault_of(None, &borrowed);
    let mut seen = Vec::new();
    let mut args = json!({"path": "Hub.md"});
    let mut pages = 0;
    loop {
        let out = fx.call("get_backlinks", args.clone()).unwrap();
        pages += 1;
        let page = out["backlinks"].as_array().unwrap();
        assert!(page.len() <= 200);
        seen.extend(
            page.iter()
                .map(|b| (b["source"].clone(), b["text"].clone())),
        );
        match out["next_cursor"].as_str() {
            Some(cursor) => args = json!({"path": "Hub.md", "cursor": cursor}),
            None => break,
        }
    }
    assert_eq!(seen.len(), 900);
    assert!(pages >= 5, "{pages}");
    let mut unique = seen.clone();
    unique.sort_by_key(|v| v.0.to_string() + &v.1.to_string());
    unique.dedup();
    assert_eq!(unique.len(), 900);
    // The cursor is bound to the request it came from.
    let first = fx.call("get_backlinks", json!({"path": "Hub.md"})).unwrap();
    let cursor = first["next_cursor"].as_str().unwrap();
    assert_eq!(
        code(fx.call(
            "get_backlinks",
            json!({"path": "refs/r000.md", "cursor": cursor})
        )),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        code(fx.call("find_orphans", json!({"cursor": cursor}))),
        ErrorCode::InvalidInput
    );
}

/// Each link tool lists in at most about 1,000 bytes, as tools/list's budget asks of a new
/// tool.
#[test]
fn each_link_tool_lists_in_about_a_thousand_bytes() {
    let registry = MetadataTools::registry();
    for entry in registry.list() {
        let name = entry["name"].as_str().unwrap();
        if [
            "get_backlinks",
            "get_outgoing_links",
            "find_orphans",
            "find_unresolved_links",
        ]
        .contains(&name)
        {
            let bytes = serde_json::to_vec(&entry).unwrap().len();
            println!("{name}: {bytes} bytes");
            assert!(bytes <= 1_050, "{name}: {bytes} bytes");
        }
    }
}
