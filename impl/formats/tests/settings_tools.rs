//! The bookmark and workspace tools through the tool pipeline (spec/formats.md
//! `formats.settings.files`, `formats.bookmarks.*`, `formats.workspaces.*`; spec/drift.md
//! `drift.bind.remove-bookmark`, `drift.bind.save-workspace`; spec/tools.md
//! `tools.compose.remove-bookmark`, `tools.compose.save-workspace`).

use serde_json::{Value, json};
use tc_tools::ErrorCode;
use tc_tools::testing::{Tools, forbid_all, read_only_under, with_token};

struct FormatTools;

impl Tools for FormatTools {
    fn registry() -> tc_tools::Registry {
        let mut registry = tc_tools::Registry::new();
        tc_formats::register(&mut registry).unwrap();
        registry
    }
}

type Fx = tc_tools::testing::Fx<FormatTools>;
type Scenario<'a> = tc_tools::testing::Scenario<'a, FormatTools>;

const BOOKMARKS: &str = ".obsidian/bookmarks.json";
const WORKSPACES: &str = ".obsidian/workspaces.json";

/// Bookmarks as Obsidian writes them: two spaces, its own key order, a key of its own.
const MARKS: &str = r#"{
  "items": [
    {
      "type": "file",
      "ctime": 1700000000000,
      "path": "notes/plan.md",
      "title": "Plan"
    },
    {
      "type": "group",
      "ctime": 1700000000001,
      "items": [
        {
          "type": "url",
          "ctime": 1700000000002,
          "url": "https://obsidian.md",
          "title": "Site"
        },
        {
          "type": "file",
          "ctime": 1700000000003,
          "path": "private/diary.md"
        }
      ],
      "title": "Refs"
    }
  ],
  "rev": 7
}"#;

fn vault(fx: &Fx) {
    fx.put("notes/plan.md", "plan\n");
    fx.put("notes/other.md", "other\n");
    fx.put("private/diary.md", "diary\n");
    fx.put(BOOKMARKS, MARKS);
}

// r[verify formats.bookmarks.list]
#[test]
fn list_bookmarks_flattens_groups_and_leaves_out_what_the_caller_may_not_read() {
    let fx = Fx::new();
    assert_eq!(
        fx.call("list_bookmarks", json!({})).unwrap(),
        json!({"bookmarks": [], "groups": [], "next_cursor": null})
    );
    vault(&fx);
    let out = fx.call("list_bookmarks", json!({})).unwrap();
    assert_eq!(out["groups"], json!(["Refs"]));
    assert_eq!(out["bookmarks"].as_array().unwrap().len(), 3);
    assert_eq!(out["bookmarks"][1]["group"], "Refs");
    assert_eq!(out["bookmarks"][1]["url"], "https://obsidian.md");
    let fx = Fx::with(Some(read_only_under("notes/**")), Vec::new());
    vault(&fx);
    let out = fx.call("list_bookmarks", json!({})).unwrap();
    let paths: Vec<&Value> = out["bookmarks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b.get("path"))
        .collect();
    assert_eq!(paths, vec![&json!("notes/plan.md")]);
}

// r[verify formats.bookmarks.list-pages]
#[test]
fn list_bookmarks_pages_in_file_order_and_refuses_a_cursor_of_a_changed_file() {
    let fx = Fx::new();
    let group = |g: usize| {
        let items: Vec<Value> = (0..100)
            .map(|i| json!({"type": "url", "url": format!("https://example.org/{g}/{i}"), "title": format!("Link {g}.{i}")}))
            .collect();
        json!({"type": "group", "title": format!("G{g}"), "items": items})
    };
    let file = json!({"items": [group(0), group(1), group(2)]});
    fx.put(BOOKMARKS, &serde_json::to_string_pretty(&file).unwrap());
    let whole = fx.call("list_bookmarks", json!({})).unwrap();
    assert_eq!(whole["bookmarks"].as_array().unwrap().len(), 300);
    assert!(
        whole["next_cursor"].is_null(),
        "the default page holds them"
    );

    let mut walked: Vec<Value> = Vec::new();
    let mut pages = 0;
    let mut args = json!({"max_bytes": 2048});
    loop {
        let page = fx.call("list_bookmarks", args.clone()).unwrap();
        pages += 1;
        let groups = page["groups"].as_array().unwrap().len();
        assert_eq!(
            groups,
            if pages == 1 { 3 } else { 0 },
            "groups on the first page"
        );
        walked.extend(page["bookmarks"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(cursor) => args = json!({"max_bytes": 2048, "cursor": cursor}),
            None => break,
        }
    }
    assert!(pages > 5, "{pages} pages");
    assert_eq!(walked, whole["bookmarks"].as_array().unwrap().clone());

    let first = fx
        .call("list_bookmarks", json!({"max_bytes": 2048}))
        .unwrap();
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    let mut changed = file.clone();
    changed["items"][0]["items"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    fx.put(BOOKMARKS, &serde_json::to_string_pretty(&changed).unwrap());
    let refused = fx
        .call(
            "list_bookmarks",
            json!({"max_bytes": 2048, "cursor": cursor}),
        )
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::InvalidInput, "{refused}");
}

// r[verify formats.bookmarks.add]
// r[verify formats.settings.files]
// r[verify tools.compose.remove-bookmark]
#[test]
fn add_bookmark_is_free_keeps_the_file_as_it_was_and_adds_nothing_twice() {
    let fx = Fx::new();
    vault(&fx);
    let out = fx
        .call(
            "add_bookmark",
            json!({"path": "notes/other.md", "title": "Other", "group": "Refs"}),
        )
        .unwrap();
    assert_eq!(out["added"], true);
    assert_eq!(fx.requested(), 0);
    let text = fx.get(BOOKMARKS).unwrap();
    // The file's own lines stay; the new bookmark joins the group's items, in Obsidian's
    // key order and two-space indentation.
    assert!(
        text.starts_with(&MARKS[..MARKS.find("        }\n      ],").unwrap()]),
        "{text}"
    );
    assert!(text.contains("        {\n          \"type\": \"file\",\n          \"ctime\": 1796040000000,\n          \"path\": \"notes/other.md\",\n          \"title\": \"Other\"\n        }\n      ],\n      \"title\": \"Refs\""), "{text}");
    assert!(text.ends_with("  \"rev\": 7\n}"), "{text}");
    let again = fx
        .call(
            "add_bookmark",
            json!({"path": "notes/other.md", "group": "Refs"}),
        )
        .unwrap();
    assert_eq!(again["added"], false);
    // A URL in a new group; a folder; then the refusals.
    fx.call(
        "add_bookmark",
        json!({"url": "obsidian://open?vault=x", "group": "New"}),
    )
    .unwrap();
    fx.call("add_bookmark", json!({"path": "notes"})).unwrap();
    let listed = fx.call("list_bookmarks", json!({})).unwrap();
    assert_eq!(listed["groups"], json!(["Refs", "New"]));
    assert!(
        listed["bookmarks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["type"] == "folder")
    );
    let before = fx.get(BOOKMARKS).unwrap();
    for (args, code) in [
        (json!({"path": "none.md"}), ErrorCode::NoteNotFound),
        (
            json!({"path": ".obsidian/app.json"}),
            ErrorCode::PathInvalid,
        ),
        (json!({"url": "no scheme here"}), ErrorCode::ValidationError),
        // r[verify formats.bookmarks.url-schemes]
        (
            json!({"url": "javascript:alert(1)"}),
            ErrorCode::ValidationError,
        ),
        (
            json!({"url": "file:///etc/passwd"}),
            ErrorCode::ValidationError,
        ),
        (json!({"url": "vscode://x"}), ErrorCode::ValidationError),
        (
            json!({"path": "notes/plan.md", "url": "https://x"}),
            ErrorCode::ValidationError,
        ),
        (json!({}), ErrorCode::ValidationError),
    ] {
        let refusal = fx.call("add_bookmark", args.clone()).unwrap_err();
        assert_eq!(refusal.code, code, "{args}: {refusal}");
    }
    assert_eq!(fx.get(BOOKMARKS).unwrap(), before);
    // forbidWrites holds for the settings file too.
    let fx = Fx::with(None, forbid_all());
    vault(&fx);
    assert_eq!(
        fx.call("add_bookmark", json!({"url": "https://x.org"}))
            .unwrap_err()
            .code,
        ErrorCode::ConventionBlocked
    );
    assert_eq!(fx.get(BOOKMARKS).unwrap(), MARKS);
}

#[cfg(unix)]
#[test]
fn a_settings_folder_reached_through_a_link_is_refused() {
    let fx = Fx::new();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("bookmarks.json"), MARKS).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), fx.root.join(".obsidian")).unwrap();
    for (tool, args) in [
        ("list_bookmarks", json!({})),
        ("add_bookmark", json!({"url": "https://x.org"})),
    ] {
        assert_eq!(
            fx.call(tool, args).unwrap_err().code,
            ErrorCode::InvalidInput
        );
    }
    let outside = std::fs::read_to_string(elsewhere.path().join("bookmarks.json")).unwrap();
    assert_eq!(outside, MARKS);
}

// r[verify formats.bookmarks.remove]
#[test]
fn remove_bookmark_always_asks_and_names_what_it_removes() {
    let fx = Fx::new();
    vault(&fx);
    let args = json!({"url": "https://obsidian.md"});
    let refusal = fx.call("remove_bookmark", args.clone()).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ElicitRequired);
    let summary = &refusal.raised.as_ref().unwrap().summary;
    assert!(summary.contains("removes Refs/Site"), "{summary}");
    let token = fx.require("remove_bookmark", &args);
    let out = fx
        .call("remove_bookmark", with_token(&args, &token))
        .unwrap();
    assert_eq!(out["removed"], 1);
    let listed = fx.call("list_bookmarks", json!({})).unwrap();
    assert!(!listed.to_string().contains("obsidian.md"));
    assert_eq!(
        fx.call("remove_bookmark", json!({"path": "notes/other.md"}))
            .unwrap_err()
            .code,
        ErrorCode::ValidationError
    );
}

fn removing() -> Scenario<'static> {
    Scenario {
        tool: "remove_bookmark",
        args: json!({"path": "notes/plan.md"}),
        setup: &vault,
        applied: &|fx| assert!(!fx.get(BOOKMARKS).unwrap().contains("notes/plan.md")),
        untouched: &|fx| assert_eq!(fx.get(BOOKMARKS).unwrap(), MARKS),
        drift: &|fx| fx.put(BOOKMARKS, &MARKS.replace("\"Site\"", "\"Home\"")),
    }
}

// r[verify drift.bind.remove-bookmark]
#[test]
fn removing_a_bookmark_is_bound_to_the_bookmarks_file() {
    removing().drift_refused();
    removing().approve_then_replay();
    removing().preflight_keeps_token(forbid_all());
}

const SPACES: &str = r#"{
  "workspaces": {
    "Writing": {
      "main": {
        "id": "a1",
        "type": "split",
        "children": []
      },
      "active": "a1"
    },
    "Research": {
      "main": {}
    }
  },
  "active": "Writing"
}"#;

// r[verify formats.workspaces.list]
// r[verify formats.workspaces.save]
// r[verify tools.compose.save-workspace]
#[test]
fn a_new_layout_is_free_and_a_saved_one_asks_to_be_replaced() {
    let fx = Fx::new();
    assert_eq!(
        fx.call("list_workspaces", json!({})).unwrap(),
        json!({"workspaces": []})
    );
    fx.put(WORKSPACES, SPACES);
    assert_eq!(
        fx.call("list_workspaces", json!({})).unwrap(),
        json!({"workspaces": [{"name": "Writing", "active": true}, {"name": "Research", "active": false}]})
    );
    let layout = json!({"main": {"id": "m", "type": "split", "children": []}});
    let out = fx
        .call(
            "save_workspace",
            json!({"name": "Review", "layout": layout}),
        )
        .unwrap();
    assert_eq!(out["replaced"], false);
    assert_eq!(fx.requested(), 0);
    let text = fx.get(WORKSPACES).unwrap();
    assert!(
        text.starts_with(&SPACES[..SPACES.find("\n  },\n  \"active\"").unwrap()]),
        "{text}"
    );
    assert!(
        text.ends_with("  },\n  \"active\": \"Writing\"\n}"),
        "{text}"
    );
    assert_eq!(
        fx.call("save_workspace", json!({"name": "Writing", "layout": {}}))
            .unwrap_err()
            .code,
        ErrorCode::NoteExists
    );
    let over = json!({"name": "Writing", "layout": {"main": {}}, "overwrite": true});
    let token = fx.require("save_workspace", &over);
    let out = fx
        .call("save_workspace", with_token(&over, &token))
        .unwrap();
    assert_eq!(out["replaced"], true);
    let names = fx.call("list_workspaces", json!({})).unwrap();
    assert_eq!(names["workspaces"].as_array().unwrap().len(), 3);
    assert_eq!(
        fx.call("save_workspace", json!({"name": " ", "layout": {}}))
            .unwrap_err()
            .code,
        ErrorCode::ValidationError
    );
    // A workspaces file that is not JSON is refused, not overwritten.
    fx.put(WORKSPACES, "{oops");
    assert_eq!(
        fx.call("save_workspace", json!({"name": "X", "layout": {}}))
            .unwrap_err()
            .code,
        ErrorCode::InvalidInput
    );
    assert_eq!(fx.get(WORKSPACES).unwrap(), "{oops");
}

fn replacing() -> Scenario<'static> {
    Scenario {
        tool: "save_workspace",
        args: json!({"name": "Research", "layout": {"main": {"id": "new"}}, "overwrite": true}),
        setup: &|fx| fx.put(WORKSPACES, SPACES),
        applied: &|fx| assert!(fx.get(WORKSPACES).unwrap().contains("\"new\"")),
        untouched: &|fx| assert_eq!(fx.get(WORKSPACES).unwrap(), SPACES),
        drift: &|fx| fx.put(WORKSPACES, &SPACES.replace("\"a1\"", "\"a2\"")),
    }
}

// r[verify drift.bind.save-workspace]
#[test]
fn replacing_a_layout_is_bound_to_the_workspaces_file() {
    replacing().drift_refused();
    replacing().approve_then_replay();
    replacing().preflight_keeps_token(forbid_all());
}
