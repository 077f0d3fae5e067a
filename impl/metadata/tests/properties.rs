//! The property tools on an indexed vault (spec/metadata.md `## Properties`).

mod tags_support;

use serde_json::{Value, json};
use tags_support::{Fx, Tools, code, indexed, vault_of};
use tc_tools::ErrorCode;
use tc_vault::acl::{AclConfig, ScopeRuleConfig};

fn person_vault(acl: Option<AclConfig>) -> Fx {
    let fx = Fx::with(acl, Vec::new());
    for (path, content) in [
        (
            "projects/alpha.md",
            "---\nstatus: Active  # still going\ntags: [client, Urgent]\ndue: 2026-03-01\nproject:\n  phase: build\n  owners: [ann, bob]\n  budget:\n    eur: 1200\n---\n# Alpha\n",
        ),
        (
            "projects/beta.md",
            "---\nstatus: done\ndone: true\nscore: 5.0\nproject.phase: dotted\nproject:\n  phase: nested\n---\nBeta.\n",
        ),
        (
            "daily/2026-01-05.md",
            "---\nmood: good\nstatus: active\nat: 2026-01-05T08:30\n---\nA day.\n",
        ),
        ("plain.md", "No frontmatter at all.\n"),
        (
            "private/salary.md",
            "---\nstatus: active\nsalary: 90000\n---\nSecret.\n",
        ),
    ] {
        fx.put(path, content);
    }
    indexed(&fx);
    fx
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

fn keys(out: &Value) -> Vec<(String, u64, Vec<String>)> {
    out["properties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["key"].as_str().unwrap().to_owned(),
                p["notes"].as_u64().unwrap(),
                p["types"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t.as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect()
}

fn notes(out: &Value) -> Vec<(String, Value)> {
    out["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["path"].as_str().unwrap().to_owned(), n["value"].clone()))
        .collect()
}

fn owned(items: &[(&str, u64, &[&str])]) -> Vec<(String, u64, Vec<String>)> {
    items
        .iter()
        .map(|(k, n, t)| {
            (
                (*k).to_owned(),
                *n,
                t.iter().map(|s| (*s).to_owned()).collect(),
            )
        })
        .collect()
}

// r[verify metadata.list-properties]
// r[verify metadata.properties.types]
// r[verify metadata.properties.acl]
#[test]
fn list_properties_counts_readable_notes_per_key_with_the_types_seen() {
    let fx = person_vault(Some(private_acl()));
    let out = fx.call_as(&reader(), "list_properties", json!({})).unwrap();
    assert_eq!(
        keys(&out),
        owned(&[
            ("at", 1, &["datetime"]),
            ("done", 1, &["checkbox"]),
            ("due", 1, &["date"]),
            ("mood", 1, &["text"]),
            ("project", 2, &["object"]),
            ("project.phase", 1, &["text"]),
            ("score", 1, &["number"]),
            ("status", 3, &["text"]),
            ("tags", 1, &["list"]),
        ]),
        "the private note's keys and its count are left out: {out}"
    );
    assert!(!out.to_string().contains("salary"));
    // With the scope, the private note counts.
    let all = fx.call("list_properties", json!({})).unwrap();
    let status = keys(&all).into_iter().find(|k| k.0 == "status").unwrap();
    assert_eq!(status.1, 4);
    assert!(keys(&all).iter().any(|k| k.0 == "salary"));
    // A folder narrows the count.
    let daily = fx
        .call("list_properties", json!({"folder": "daily"}))
        .unwrap();
    assert_eq!(
        keys(&daily),
        owned(&[
            ("at", 1, &["datetime"]),
            ("mood", 1, &["text"]),
            ("status", 1, &["text"]),
        ])
    );
}

// r[verify metadata.read-property]
// r[verify metadata.properties.index]
#[test]
fn read_property_reaches_nested_keys_by_a_dotted_path() {
    let fx = person_vault(Some(private_acl()));
    let read = |path: &str, key: &str| {
        fx.call_as(
            &reader(),
            "read_property",
            json!({"path": path, "key": key}),
        )
    };
    let status = read("projects/alpha.md", "status").unwrap();
    assert_eq!(
        status["value"], "Active",
        "the YAML comment is not the value"
    );
    assert_eq!(status["type"], "text");
    assert_eq!(status["exists"], true);
    let eur = read("projects/alpha.md", "project.budget.eur").unwrap();
    assert_eq!(
        (eur["value"].clone(), eur["type"].clone()),
        (json!(1200), json!("number"))
    );
    let owners = read("projects/alpha.md", "project.owners").unwrap();
    assert_eq!(owners["value"], json!(["ann", "bob"]));
    let project = read("projects/alpha.md", "project").unwrap();
    assert_eq!(project["value"]["phase"], "build");
    // A key written with a dot wins over the nested path of the same name.
    let dotted = read("projects/beta.md", "project.phase").unwrap();
    assert_eq!(dotted["value"], "dotted");
    let missing = read("projects/alpha.md", "project.nothing").unwrap();
    assert_eq!(
        (
            missing["exists"].clone(),
            missing["value"].clone(),
            missing["type"].clone()
        ),
        (json!(false), Value::Null, Value::Null)
    );
    assert_eq!(read("plain.md", "status").unwrap()["exists"], false);
    assert_eq!(code(read("nowhere.md", "status")), ErrorCode::NoteNotFound);
    assert_eq!(
        code(read("private/salary.md", "salary")),
        ErrorCode::AclDenied
    );
    // An edit made behind the server's back is read at the next call.
    fx.put("projects/alpha.md", "---\nstatus: paused\n---\n");
    assert_eq!(
        read("projects/alpha.md", "status").unwrap()["value"],
        "paused"
    );
    assert_eq!(
        read("projects/alpha.md", "project.owners").unwrap()["exists"],
        false
    );
}

// r[verify metadata.find-notes-by-property]
// r[verify metadata.properties.match]
// r[verify metadata.properties.acl]
#[test]
fn find_notes_by_property_matches_keys_values_and_list_items() {
    let fx = person_vault(Some(private_acl()));
    let find = |args: Value| {
        fx.call_as(&reader(), "find_notes_by_property", args)
            .map(|out| notes(&out))
    };
    assert_eq!(
        find(json!({"key": "status", "value": "ACTIVE"})).unwrap(),
        [
            ("daily/2026-01-05.md".to_owned(), json!("active")),
            ("projects/alpha.md".to_owned(), json!("Active")),
        ],
        "case-insensitive, the private note hidden"
    );
    assert_eq!(
        find(json!({"key": "status"})).unwrap().len(),
        3,
        "absent value: the key exists"
    );
    assert_eq!(
        find(json!({"key": "tags", "value": "urgent"})).unwrap(),
        [("projects/alpha.md".to_owned(), json!(["client", "Urgent"]))],
        "a list matches when it holds the value"
    );
    assert_eq!(
        find(json!({"key": "project.owners", "value": "bob"})).unwrap()[0].0,
        "projects/alpha.md"
    );
    assert_eq!(
        find(json!({"key": "project.phase"})).unwrap(),
        [
            ("projects/alpha.md".to_owned(), json!("build")),
            ("projects/beta.md".to_owned(), json!("dotted")),
        ]
    );
    assert_eq!(find(json!({"key": "score", "value": 5})).unwrap().len(), 1);
    assert_eq!(
        find(json!({"key": "score", "value": "5"})).unwrap().len(),
        1
    );
    assert_eq!(
        find(json!({"key": "done", "value": true})).unwrap().len(),
        1
    );
    assert_eq!(
        find(json!({"key": "done", "value": false})).unwrap().len(),
        0
    );
    assert_eq!(
        find(json!({"key": "status", "value": "active", "folder": "daily"}))
            .unwrap()
            .len(),
        1
    );
    assert!(
        find(json!({"key": "salary"})).unwrap().is_empty(),
        "no value of a hidden note"
    );
    assert_eq!(
        fx.call("find_notes_by_property", json!({"key": "salary"}))
            .unwrap()["notes"][0]["value"],
        90000
    );
    for bad in [json!(["a"]), json!({"a": 1})] {
        assert_eq!(
            code(fx.call(
                "find_notes_by_property",
                json!({"key": "status", "value": bad})
            )),
            ErrorCode::ValidationError
        );
    }
}

// r[verify metadata.properties.paging]
#[test]
fn pages_walk_every_note_once_and_the_cursor_is_bound_to_the_request() {
    let notes_: Vec<(String, String)> = (0..450)
        .map(|i| {
            (
                format!("log/{i:03}.md"),
                format!("---\nkind: log\nn: {i}\n---\n"),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &str)> = notes_
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let fx = vault_of(&borrowed);
    let args = json!({"key": "kind", "value": "log"});
    let mut seen = Vec::new();
    let mut page = fx.call("find_notes_by_property", args.clone()).unwrap();
    let mut pages = 1;
    while let Some(token) = page["next_cursor"].as_str() {
        seen.extend(notes(&page).into_iter().map(|(p, _)| p));
        let mut next = args.clone();
        next["cursor"] = json!(token);
        page = fx.call("find_notes_by_property", next).unwrap();
        pages += 1;
    }
    seen.extend(notes(&page).into_iter().map(|(p, _)| p));
    assert_eq!(pages, 3, "at most 200 notes a page");
    let unique: std::collections::BTreeSet<_> = seen.iter().collect();
    assert_eq!((seen.len(), unique.len()), (450, 450));
    let token = fx.call("find_notes_by_property", args).unwrap()["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = fx
        .call(
            "find_notes_by_property",
            json!({"key": "kind", "value": "other", "cursor": token}),
        )
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::InvalidInput);
    assert_eq!(refused.details.unwrap()["reason"], "request_mismatch");
    let refused = fx
        .call("list_properties", json!({"cursor": token}))
        .unwrap_err();
    assert_eq!(
        refused.code,
        ErrorCode::InvalidInput,
        "another tool's cursor"
    );
}

// r[verify metadata.properties.schemas]
#[test]
fn every_field_is_advertised_with_an_object_schema() {
    let registry = tags_support::MetadataTools::registry();
    for name in [
        "list_properties",
        "read_property",
        "find_notes_by_property",
        "recent_changes",
    ] {
        let def = registry.get(name).unwrap();
        for (side, schema) in [("input", &def.input_schema), ("output", &def.output_schema)] {
            for (field, inner) in schema["properties"].as_object().unwrap() {
                assert!(inner.is_object(), "{name} {side} {field}: {inner}");
            }
        }
    }
    let find = registry.get("find_notes_by_property").unwrap();
    assert_eq!(
        find.input_schema["properties"]["value"]["type"],
        json!(["string", "number", "boolean"])
    );
}
