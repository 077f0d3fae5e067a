//! The tool framework as the note tools use it: typed arguments (one source for the schema,
//! the validation, the defaults and the args_hash), flat schemas whose every limit is
//! enforced, output schemas every real result satisfies, and the summaries the human
//! approves (spec/tools.md `tools.schema.*`, `tools.output-schema`, `tools.summary*`).

mod tools_support;

use serde_json::{Map, Value, json};
use tc_gate::args_hash::args_hash;
use tc_tools::{ErrorCode, Registry, ToolDef};
use tools_support::{Fx, caller, with_token};

/// A call of every tool, as a client may spell it, and the args_hash the hand-written
/// schemas of the first build gave it (vault "main"). The typed arguments must hash every
/// call exactly so: a changed hash would void every pending confirmation.
const GOLDEN: &[(&str, &str, &str)] = &[
    (
        "read_notes",
        r#"{"paths":["a.md","b/c.md"]}"#,
        "10319596edb573aeb4166c8eeec6e286",
    ),
    (
        "read_notes",
        r#"{"folder":"notes","recursive":false}"#,
        "1e5d410799ca4d450699e6b19054d971",
    ),
    (
        "read_notes",
        r#"{"cursor":null,"folder":""}"#,
        "797341d59799f822e1e0021c459714bd",
    ),
    ("list_notes", r#"{}"#, "44dc07e78694f4452886d6374ba44fd6"),
    (
        "list_notes",
        r#"{"folder":"x","recursive":false}"#,
        "05d3e98380f01f792a2088ceed89facb",
    ),
    (
        "write_note",
        r#"{"content":"hello\n","path":"a.md"}"#,
        "884f4b22aa97991fe98adf0abec914a6",
    ),
    (
        "write_note",
        r#"{"content":"x","mode":"append","path":"a.md","prev_hash":null}"#,
        "409e1ceddb314441cf298927bb06cb44",
    ),
    (
        "write_note",
        r#"{"content":"x","elicit_token":"t","mode":"overwrite","path":"a.md","prev_hash":"abc"}"#,
        "497a8a623e90c3c1da4609cd1ae7c9d6",
    ),
    (
        "move_note",
        r#"{"from":"a.md","to":"sub/a.md"}"#,
        "a1fcd35460d0fdc372af83eeba32102b",
    ),
    (
        "move_note",
        r#"{"from":"a.md","overwrite":true,"to":"b.md","update_backlinks":false}"#,
        "8afac0133522800ef692e6ab29577d26",
    ),
    (
        "copy_note",
        r#"{"from":"a.md","to":"c.md"}"#,
        "e8f43a2219d7e2a0a5da45aeefbea0d1",
    ),
    (
        "copy_note",
        r#"{"from":"a.md","overwrite":true,"to":"c.md"}"#,
        "6207287074482c1ff4b9715770042b4e",
    ),
    (
        "delete_note",
        r#"{"path":"a.md"}"#,
        "28bf9626ba28fb8abf944760b72b8e3b",
    ),
    (
        "delete_note",
        r#"{"path":"a.md","permanent":true}"#,
        "f21c6eec0e81fc86387f4fd3565c7949",
    ),
    (
        "restore_note",
        r#"{"path":"a.md"}"#,
        "51ad4517fe78399acefba64cd9d33503",
    ),
    (
        "restore_note",
        r#"{"path":"a.md","snapshot_id":"20261130T120000Z-abc"}"#,
        "287b4b34813085775e908eac5e7228c2",
    ),
    (
        "update_frontmatter",
        r#"{"data":{"a":[1,2.5,"x"],"b":1},"operation":"merge","path":"a.md"}"#,
        "075f11aa5b5152314ffd676ba0558efa",
    ),
    (
        "update_frontmatter",
        r#"{"data":{},"operation":"replace","path":"a.md"}"#,
        "139b773c0403e242b621205c6d665cec",
    ),
    (
        "update_frontmatter",
        r#"{"keys":["a","b"],"operation":"remove","path":"a.md"}"#,
        "04750fbe61cc1669d711d0a6e3d5ba30",
    ),
    (
        "update_task",
        r#"{"line":3,"path":"t.md","status":"todo"}"#,
        "e8202daf7c5dda107fa38022a5456b0a",
    ),
    (
        "update_task",
        r#"{"line":1,"path":"t.md","status":null,"text":"new text"}"#,
        "c2c821c3c85a112989d5183373b6f0cf",
    ),
    (
        "rewrite_link",
        r#"{"from_target":"A","to_target":"B"}"#,
        "3178bdc7d063c0bf3dd57fcd3d6dd1bc",
    ),
    (
        "rewrite_link",
        r#"{"dry_run":false,"folder":"x","from_target":"A","include_embeds":false,"to_target":"B"}"#,
        "ff89375d1289ca47b10a7f6eba954ee2",
    ),
    (
        "prune_hub_links",
        r#"{"path":"hub.md"}"#,
        "5242a841a2465af2e061a2f0102ad2f6",
    ),
    (
        "prune_hub_links",
        r#"{"dry_run":false,"path":"hub.md","prev_hash":"h"}"#,
        "61611938528886ee43a0556e8eec8a87",
    ),
    (
        "commit_wiki_page",
        r##"{"content":"# P\n","path":"wiki/p.md"}"##,
        "c0e5c60c9479ab4e497de5e5ae363c3d",
    ),
    (
        "patch_note",
        r#"{"anchor":{"heading":"Log","type":"heading"},"content":"x","operation":"append","path":"n.md"}"#,
        "7e50599bdc17a4243ee5d8c885671a6e",
    ),
    (
        "replace_in_note",
        r#"{"find":"a","path":"n.md","replace":"b"}"#,
        "803abd5830908fb145e5acdffd4f42db",
    ),
    (
        "replace_in_note",
        r#"{"dry_run":false,"find":"a","max_replacements":2,"path":"n.md","regex":false,"replace":"b"}"#,
        "698c6a084420fd2a637b47957efb5ef5",
    ),
    (
        "get_note_outline",
        r#"{"path":"n.md"}"#,
        "0448ecca6de721f3c69281b6946ecc26",
    ),
    (
        "note_exists",
        r#"{"path":"n.md"}"#,
        "42ed13276d8b913bde5883abb98613ab",
    ),
];

fn registry() -> Registry {
    let mut registry = tc_notes::registry().unwrap();
    registry.add(tc_periodic::tasks::UpdateTask).unwrap();
    registry
}

/// The args_hash the pipeline computes for `raw` (vault "main" filled in).
fn hash_of(def: &ToolDef, raw: &Value) -> String {
    let mut parsed = def.parse_args(raw).unwrap();
    parsed
        .canonical
        .as_object_mut()
        .unwrap()
        .insert("vault".into(), json!("main"));
    args_hash(&def.name, &parsed.canonical).as_str().to_owned()
}

// r[verify tools.schema.typed]
// r[verify gate.hash.uniform]
#[test]
fn every_tool_hashes_its_calls_as_the_first_build_did() {
    let registry = registry();
    let mut tools_seen = std::collections::BTreeSet::new();
    for (tool, raw, golden) in GOLDEN {
        let def = registry.get(tool).unwrap();
        let raw: Value = serde_json::from_str(raw).unwrap();
        assert_eq!(&hash_of(def, &raw), golden, "{tool} {raw}");
        // Naming the vault, or sending every default, is the same call.
        let mut named = raw.clone();
        named["vault"] = json!("main");
        assert_eq!(&hash_of(def, &named), golden, "{tool} {named}");
        let canonical = def.parse_args(&raw).unwrap().canonical;
        assert_eq!(&hash_of(def, &canonical), golden, "{tool} {canonical}");
        tools_seen.insert(*tool);
    }
    let all: std::collections::BTreeSet<&str> = registry.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(tools_seen, all, "a golden vector for every tool");
}

fn walk_schemas(value: &Value, at: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for key in ["$ref", "$defs", "definitions", "oneOf", "anyOf", "allOf"] {
                if map.contains_key(key) {
                    found.push(format!("{at}: {key}"));
                }
            }
            for (key, inner) in map {
                walk_schemas(inner, &format!("{at}/{key}"), found);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk_schemas(item, &format!("{at}/{i}"), found);
            }
        }
        _ => {}
    }
}

// r[verify tools.schema.flat]
// r[verify tools.schema]
// r[verify tools.vault-arg]
#[test]
fn every_input_schema_is_flat_typed_and_closed() {
    for def in registry().iter() {
        let schema = &def.input_schema;
        let mut found = Vec::new();
        walk_schemas(schema, &def.name, &mut found);
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(schema["type"], "object", "{}", def.name);
        assert_eq!(schema["additionalProperties"], false, "{}", def.name);
        let properties = schema["properties"].as_object().unwrap();
        assert!(properties.contains_key("vault"), "{}", def.name);
        for (name, property) in properties {
            assert!(
                property["type"].is_string(),
                "{}.{name} states one type: {property}",
                def.name
            );
            assert!(
                property["description"]
                    .as_str()
                    .is_some_and(|d| !d.is_empty()),
                "{}.{name} is described",
                def.name
            );
            assert!(
                !property["description"].as_str().unwrap().contains('\n'),
                "{}.{name}: one paragraph",
                def.name
            );
        }
        // The output schema is an object schema too, and every schema compiles.
        assert_eq!(def.output_schema["type"], "object", "{}", def.name);
        jsonschema::validator_for(&def.input_schema).unwrap();
        jsonschema::validator_for(&def.output_schema).unwrap();
    }
}

/// The first golden call of `tool`: arguments that pass validation.
fn valid_args(tool: &str) -> Map<String, Value> {
    let (_, raw, _) = GOLDEN.iter().find(|(t, _, _)| *t == tool).unwrap();
    let mut map: Map<String, Value> = serde_json::from_str(raw).unwrap();
    map.retain(|_, v| !v.is_null());
    map
}

/// Values that break one advertised limit of `property`.
fn violations(property: &Value) -> Vec<(Value, &'static str)> {
    let mut out = Vec::new();
    match property["type"].as_str() {
        Some("string") => {
            out.push((json!(17), "type"));
            if let Some(max) = property["maxLength"].as_u64() {
                out.push((json!("x".repeat(max as usize + 1)), "maxLength"));
            }
            if property["minLength"].as_u64().is_some_and(|m| m > 0) {
                out.push((json!(""), "minLength"));
            }
            if property["enum"].is_array() {
                out.push((json!("no-such-choice"), "enum"));
            }
        }
        Some("boolean") => out.push((json!("yes"), "type")),
        Some("integer") => {
            out.push((json!("1"), "type"));
            out.push((json!(1.5), "type"));
            if let Some(min) = property["minimum"].as_i64() {
                out.push((json!(min - 1), "minimum"));
            }
        }
        Some("array") => {
            out.push((json!("a"), "type"));
            if property["minItems"].as_u64().is_some_and(|m| m > 0) {
                out.push((json!([]), "minItems"));
            }
            if let Some(max) = property["items"]["maxLength"].as_u64() {
                out.push((json!(["x".repeat(max as usize + 1)]), "items.maxLength"));
            }
        }
        Some("object") => out.push((json!([1]), "type")),
        _ => {}
    }
    out
}

// r[verify tools.schema.enforced]
// r[verify results.validation-error]
// r[verify dispatch.schema]
#[test]
fn every_advertised_limit_is_enforced_and_names_the_argument() {
    let mut checked = 0;
    for def in registry().iter() {
        let base = valid_args(&def.name);
        assert!(
            def.parse_args(&Value::Object(base.clone())).is_ok(),
            "{}",
            def.name
        );
        let properties = def.input_schema["properties"].as_object().unwrap();
        for (name, property) in properties {
            for (bad, limit) in violations(property) {
                let mut args = base.clone();
                args.insert(name.clone(), bad.clone());
                let error = def.parse_args(&Value::Object(args)).unwrap_err();
                assert_eq!(
                    error.code,
                    ErrorCode::ValidationError,
                    "{} {name} {limit}",
                    def.name
                );
                let pointer = error.details.as_ref().unwrap()["errors"][0]["pointer"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                assert!(
                    pointer == format!("/{name}") || pointer.starts_with(&format!("/{name}/")),
                    "{}.{name} ({limit} with {bad}): refused at {pointer}: {}",
                    def.name,
                    error.message
                );
                checked += 1;
            }
        }
        // Required arguments, and arguments the tool does not take.
        for required in def.input_schema["required"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let mut args = base.clone();
            args.remove(required.as_str().unwrap());
            let error = def.parse_args(&Value::Object(args)).unwrap_err();
            assert_eq!(
                error.details.unwrap()["errors"][0]["pointer"],
                format!("/{}", required.as_str().unwrap())
            );
        }
        let mut args = base.clone();
        args.insert("surprise".into(), json!(1));
        let error = def.parse_args(&Value::Object(args)).unwrap_err();
        assert_eq!(error.details.unwrap()["errors"][0]["pointer"], "/surprise");
        assert_eq!(
            def.parse_args(&json!([1])).unwrap_err().code,
            ErrorCode::ValidationError
        );
    }
    assert!(checked > 60, "{checked} limits checked");
}

// r[verify tools.schema.enforced]
#[test]
fn what_the_schema_accepts_only_the_tool_refuses_for_its_own_reasons() {
    // A limit the schema does not advertise is not enforced by validation: a long content
    // (no maxLength advertised) validates; the conventions judge it later, by name.
    let def = registry();
    let write = def.get("write_note").unwrap();
    let long = json!({"path": "a.md", "content": "x".repeat(2_000_000)});
    assert!(write.parse_args(&long).is_ok());
    // A path of exactly the advertised maximum validates (the vault may refuse it later).
    let edge = json!({"path": "a".repeat(4096), "content": ""});
    assert!(write.parse_args(&edge).is_ok());
}

/// Every tool called once for real, with what it needs; returns (tool, result).
fn one_result_of_every_tool() -> Vec<(String, Value)> {
    let fx = Fx::new();
    fx.put("a.md", "---\nstatus: x\n---\nA links [[b]] and [[gone]].\n");
    fx.put("b.md", "B\n");
    fx.put("t.md", "- [ ] task\n");
    fx.put("hub.md", "- [[a]]\n- [[nowhere]]\n");
    let mut out = Vec::new();
    let mut call = |tool: &str, args: Value| {
        let result = match fx.call(tool, args.clone()) {
            Ok(result) => result,
            Err(refusal) if refusal.code == ErrorCode::ElicitRequired => {
                let token = fx.mint(&refusal);
                fx.call(tool, with_token(&args, &token)).unwrap()
            }
            Err(other) => panic!("{tool}: {other}"),
        };
        out.push((tool.to_owned(), result));
    };
    call("read_notes", json!({"paths": ["a.md", "nope.md", "../x"]}));
    call("read_notes", json!({"folder": ""}));
    call("list_notes", json!({}));
    call("write_note", json!({"path": "w.md", "content": "w\n"}));
    call("write_note", json!({"path": "w.md", "content": "again\n"}));
    call("copy_note", json!({"from": "w.md", "to": "c.md"}));
    call("move_note", json!({"from": "b.md", "to": "sub/b.md"}));
    call(
        "update_frontmatter",
        json!({"path": "a.md", "operation": "merge", "data": {"k": [1, "v"]}}),
    );
    call(
        "update_frontmatter",
        json!({"path": "a.md", "operation": "replace", "data": {"only": true}}),
    );
    call(
        "update_task",
        json!({"path": "t.md", "line": 1, "status": "done"}),
    );
    call(
        "rewrite_link",
        json!({"from_target": "a", "to_target": "A2"}),
    );
    call(
        "rewrite_link",
        json!({"from_target": "a", "to_target": "A2", "dry_run": false}),
    );
    call("prune_hub_links", json!({"path": "hub.md"}));
    call(
        "prune_hub_links",
        json!({"path": "hub.md", "dry_run": false}),
    );
    call(
        "commit_wiki_page",
        json!({"path": "wiki/p.md", "content": "# P\n"}),
    );
    call("get_note_outline", json!({"path": "a.md"}));
    call("note_exists", json!({"path": "a.md"}));
    call("note_exists", json!({"path": "none"}));
    let fm = json!({"type": "frontmatter"});
    call(
        "patch_note",
        json!({"path": "t.md", "operation": "append", "anchor": fm, "content": "k: v"}),
    );
    call(
        "patch_note",
        json!({"path": "t.md", "operation": "replace", "anchor": fm, "content": "k: w"}),
    );
    call(
        "replace_in_note",
        json!({"path": "t.md", "find": "task", "replace": "job", "dry_run": true}),
    );
    call(
        "replace_in_note",
        json!({"path": "t.md", "find": "task", "replace": "job"}),
    );
    call("delete_note", json!({"path": "c.md"}));
    call("restore_note", json!({"path": "c.md"}));
    call("delete_note", json!({"path": "c.md", "permanent": true}));
    out
}

// r[verify tools.output-schema]
// r[verify results.success]
#[test]
fn every_real_result_satisfies_its_output_schema() {
    let registry = registry();
    let results = one_result_of_every_tool();
    let called: std::collections::BTreeSet<&str> =
        results.iter().map(|(t, _)| t.as_str()).collect();
    let all: std::collections::BTreeSet<&str> = registry.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(called, all, "every tool was called");
    for (tool, result) in &results {
        let def = registry.get(tool).unwrap();
        let validator = jsonschema::validator_for(&def.output_schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(result)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{tool}: {errors:?}\n{result}");
    }
}

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

// r[verify tools.summary]
// r[verify tools.summary.write]
#[test]
fn a_write_summary_names_the_note_sizes_and_diff() {
    let fx = Fx::new();
    fx.put("a.md", "one\ntwo\nthree\n");
    let summary = raised_summary(
        &fx,
        "write_note",
        &json!({"path": "a.md", "content": "one\n2\nthree\n"}),
    );
    assert!(
        summary.starts_with("write_note in vault main for caller stdio"),
        "{summary}"
    );
    let prepared = fx
        .pipeline
        .prepare(
            &caller(),
            "write_note",
            &json!({"path": "a.md", "content": "one\n2\nthree\n"}),
        )
        .unwrap();
    assert!(
        summary.contains(&format!("args_hash {}", prepared.args_hash())),
        "{summary}"
    );
    assert!(summary.contains("target: a.md"), "{summary}");
    assert!(summary.contains("size: 14 bytes -> 12 bytes"), "{summary}");
    assert!(
        summary.contains("-two") && summary.contains("+2"),
        "{summary}"
    );
}

// r[verify tools.summary.move]
#[test]
fn a_move_summary_lists_the_backlinks_it_rewrites() {
    let fx = Fx::new();
    fx.put("a.md", "A\n");
    for i in 0..25 {
        fx.put(&format!("l/{i:02}.md"), "see [[a]] and ![[a]]\n");
    }
    let summary = raised_summary(
        &fx,
        "move_note",
        &json!({"from": "a.md", "to": "arch/a.md"}),
    );
    assert!(summary.contains("move a.md -> arch/a.md"), "{summary}");
    assert!(
        summary.contains("rewrites 50 link(s) in 25 note(s)"),
        "{summary}"
    );
    assert!(summary.contains("l/00.md (2 link(s))"), "{summary}");
    assert!(summary.contains("and 5 more note(s)"), "{summary}");
    assert!(!summary.contains("l/24.md"), "{summary}");
}

// r[verify tools.summary.delete]
#[test]
fn a_delete_summary_says_whether_it_can_be_restored() {
    let fx = Fx::new();
    fx.put("a.md", "hello");
    let kept = raised_summary(&fx, "delete_note", &json!({"path": "a.md"}));
    assert!(
        kept.contains("delete a.md (5 bytes) to a snapshot"),
        "{kept}"
    );
    let gone = raised_summary(
        &fx,
        "delete_note",
        &json!({"path": "a.md", "permanent": true}),
    );
    assert!(
        gone.contains("permanently") && gone.contains("cannot be restored"),
        "{gone}"
    );
}

// r[verify tools.summary.escaped]
// r[verify tools.summary.bounded]
#[test]
fn a_summary_of_hostile_text_is_escaped_and_bounded() {
    let fx = Fx::new();
    fx.put("a.md", "x\n");
    let hostile = format!("\u{1b}[2J\u{202e}evil\u{200b}\n{}", "line\n".repeat(3000));
    let summary = raised_summary(
        &fx,
        "write_note",
        &json!({"path": "a.md", "content": hostile}),
    );
    assert!(
        summary.len() <= tc_tools::summary::MAX_SUMMARY_BYTES,
        "{}",
        summary.len()
    );
    assert!(summary.contains("\\u{001B}[2J"), "{summary}");
    assert!(summary.contains("\\u{202E}evil\\u{200B}"), "{summary}");
    let hidden = |c: char| {
        ('\u{200b}'..='\u{200f}').contains(&c)
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2060}'..='\u{2069}').contains(&c)
    };
    for c in summary.chars() {
        assert!(c == '\n' || !(c.is_control() || hidden(c)), "{c:?}");
    }
    assert!(
        summary.contains("more diff lines") || summary.contains("summary cut"),
        "{summary}"
    );
    assert!(
        summary.lines().nth(1).unwrap().starts_with("args_hash "),
        "{summary}"
    );
}

/// A tool that reports, in its result, whether it saw the call cancelled.
#[derive(Debug)]
struct SeesCancel;

#[derive(Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
struct Saw {
    cancelled: bool,
}

impl tc_tools::Tool for SeesCancel {
    type Args = NoArgs;
    type Output = Saw;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> tc_tools::ToolSpec {
        tc_tools::ToolSpec {
            name: "sees_cancel",
            description: "test",
            annotations: tc_tools::Annotations::READS,
            scopes: &["read:notes"],
            changes_notes: false,
            gating: tc_tools::Gating::NEVER,
        }
    }

    fn precheck(
        &self,
        _: &tc_tools::ToolCx<'_>,
        _: &NoArgs,
    ) -> Result<tc_tools::Precheck, tc_tools::ToolError> {
        Ok(tc_tools::Precheck::free())
    }

    fn run(
        &self,
        cx: &tc_tools::ToolCx<'_>,
        _: &NoArgs,
        _: &tc_tools::Precheck,
        _: &tc_tools::TargetState,
    ) -> Result<Saw, tc_tools::HandlerFailure> {
        Ok(Saw {
            cancelled: cx.cancelled(),
        })
    }
}

/// A tool whose handler loses a race on its note: it refuses with the hash it read and the
/// hash there now, as a write guarded under the note's lock does.
#[derive(Debug)]
struct LosesARace;

#[derive(Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct PathArg {
    path: String,
}

impl tc_tools::Tool for LosesARace {
    type Args = PathArg;
    type Output = Saw;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> tc_tools::ToolSpec {
        tc_tools::ToolSpec {
            name: "loses_a_race",
            description: "test",
            annotations: tc_tools::Annotations::writes(false, false),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: tc_tools::Gating::NEVER,
        }
    }

    fn precheck(
        &self,
        _: &tc_tools::ToolCx<'_>,
        args: &PathArg,
    ) -> Result<tc_tools::Precheck, tc_tools::ToolError> {
        let path = tc_vault::VaultPath::parse_note(&args.path)?;
        Ok(tc_tools::Precheck {
            acl: vec![(tc_vault::acl::AclOp::Write, path)],
            ..tc_tools::Precheck::free()
        })
    }

    fn run(
        &self,
        cx: &tc_tools::ToolCx<'_>,
        args: &PathArg,
        _: &tc_tools::Precheck,
        _: &tc_tools::TargetState,
    ) -> Result<Saw, tc_tools::HandlerFailure> {
        let path = tc_vault::VaultPath::parse_note(&args.path)?;
        let seen = cx.vault().read(&path)?.hash;
        Err(
            tc_tools::ToolError::from(tc_vault::VaultError::ConcurrentModification {
                path: args.path.clone(),
                expected: seen,
                actual: tc_vault::content_hash(b"what a racing writer left"),
            })
            .into(),
        )
    }
}

// r[verify results.concurrent-modification.unreadable]
#[test]
fn a_lost_race_names_no_hash_the_server_saw_of_a_note_the_caller_may_not_read() {
    let fx = Fx::new();
    let acl = tc_tools::testing::read_only_under("notes/**");
    let mut registry = Registry::new();
    registry.add(LosesARace).unwrap();
    let snapshots = tc_vault::snapshot_dir_for(&fx.cache(), "main").unwrap();
    let binding = tc_tools::testing::binding(
        fx.open(snapshots, 7),
        &fx.cache(),
        fx.secret(),
        Some(&acl),
        &[],
    );
    let pipeline = tc_tools::testing::pipeline(
        registry,
        binding,
        fx.gate.clone(),
        std::sync::Arc::new(fx.clock.clone()),
        fx.secret(),
    );
    let call = |path: &str| {
        let prepared = pipeline
            .prepare(&caller(), "loses_a_race", &json!({"path": path}))
            .unwrap();
        pipeline
            .execute(&prepared, prepared.token_approval(), &Default::default())
            .unwrap_err()
    };
    fx.put("inbox/secret.md", "42000");
    fx.put("notes/open.md", "open");
    let hidden = call("inbox/secret.md");
    assert_eq!(hidden.code, ErrorCode::ConcurrentModification);
    let shown = format!("{hidden} {:?}", hidden.details);
    for hash in [
        tc_vault::content_hash(b"42000"),
        tc_vault::content_hash(b"what a racing writer left"),
    ] {
        assert!(!shown.contains(&hash), "{shown}");
    }
    let readable = call("notes/open.md");
    assert_eq!(
        readable.details.unwrap()["expected"],
        tc_vault::content_hash(b"open")
    );
}

// r[verify tools.cancellation]
#[test]
fn a_cancellation_reaches_the_pipeline_and_the_handler_through_one_flag() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tc_tools::{CallControl, CancellationFlag};
    let mut fx = Fx::new();
    // Cancelled before the handler: the pipeline stops there and nothing is written.
    let polls = Arc::new(AtomicUsize::new(0));
    let cancelled_now = {
        let polls = Arc::clone(&polls);
        move || {
            polls.fetch_add(1, Ordering::SeqCst);
            true
        }
    };
    let control = CallControl::with_cancel(CancellationFlag::backed_by(Arc::new(cancelled_now)));
    let args = json!({"path": "n.md", "content": "x"});
    let prepared = fx.pipeline.prepare(&caller(), "write_note", &args).unwrap();
    let error = fx
        .pipeline
        .execute(&prepared, prepared.token_approval(), &control)
        .unwrap_err();
    assert_eq!(error.details.unwrap()["reason"], "cancelled");
    assert!(fx.get("n.md").is_none());
    assert!(polls.load(Ordering::SeqCst) >= 1);
    // Cancelled while the handler runs: the handler polls the same flag and sees it.
    let mut registry = Registry::new();
    registry.add(SeesCancel).unwrap();
    fx.use_registry(registry);
    let polls = Arc::new(AtomicUsize::new(0));
    let after_first_poll = {
        let polls = Arc::clone(&polls);
        move || polls.fetch_add(1, Ordering::SeqCst) >= 1
    };
    let control = CallControl::with_cancel(CancellationFlag::backed_by(Arc::new(after_first_poll)));
    let prepared = fx
        .pipeline
        .prepare(&caller(), "sees_cancel", &json!({}))
        .unwrap();
    let out = fx
        .pipeline
        .execute(&prepared, prepared.token_approval(), &control)
        .unwrap();
    assert_eq!(out.to_value()["cancelled"], true);
}

// r[verify tools.summary.others]
#[test]
fn restore_task_rewrite_and_prune_summaries_say_what_they_change() {
    let fx = Fx::new();
    fx.put("gone.md", "twelve bytes");
    let token = fx.require("delete_note", &json!({"path": "gone.md"}));
    fx.call(
        "delete_note",
        with_token(&json!({"path": "gone.md"}), &token),
    )
    .unwrap();
    let restore = raised_summary(&fx, "restore_note", &json!({"path": "gone.md"}));
    assert!(
        restore.contains("restore gone.md from snapshot "),
        "{restore}"
    );
    assert!(restore.contains("(12 bytes)"), "{restore}");

    fx.put("t.md", "- [x] ship it ✅ 2026-10-01\n");
    let task = raised_summary(
        &fx,
        "update_task",
        &json!({"path": "t.md", "line": 1, "status": "todo"}),
    );
    assert!(
        task.contains("reopen a task of t.md (line 1) that was marked done on 2026-10-01"),
        "{task}"
    );
    assert!(
        task.contains("before: - [x] ship it ✅ 2026-10-01"),
        "{task}"
    );
    assert!(task.contains("after:  - [ ] ship it"), "{task}");

    fx.put("target.md", "T\n");
    fx.put("a.md", "[[target]] and ![[target]]\n");
    let rewrite = raised_summary(
        &fx,
        "rewrite_link",
        &json!({"from_target": "target", "to_target": "renamed", "dry_run": false}),
    );
    assert!(
        rewrite.contains("rewrite links to target so they point at renamed"),
        "{rewrite}"
    );
    assert!(rewrite.contains("2 link(s) in 1 note(s)"), "{rewrite}");
    assert!(rewrite.contains("target: a.md (2 link(s))"), "{rewrite}");

    fx.put("hub.md", "- [[a]]\n- [[nowhere]]\n- [[missing too]]\n");
    let prune = raised_summary(
        &fx,
        "prune_hub_links",
        &json!({"path": "hub.md", "dry_run": false}),
    );
    assert!(
        prune.contains("remove 2 dead link(s) from hub.md"),
        "{prune}"
    );
    assert!(
        prune.contains("- [[nowhere]]") && prune.contains("- [[missing too]]"),
        "{prune}"
    );
}

// r[verify tools.move-note.backlinks-declared]
#[test]
fn a_backlink_the_caller_may_not_change_refuses_the_move_by_name() {
    let fx = Fx::with(
        Some(tc_vault::acl::AclConfig {
            write_paths: Some(vec!["inbox/**".into(), "projects/**".into()]),
            ..tc_vault::acl::AclConfig::default()
        }),
        Vec::new(),
    );
    fx.put("inbox/a.md", "A\n");
    fx.put("archive/links.md", "see [[a]]\n");
    let args = json!({"from": "inbox/a.md", "to": "projects/a.md"});
    let token = fx.require("move_note", &args);
    let refusal = fx.call("move_note", with_token(&args, &token)).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::AclDenied, "{refusal}");
    assert_eq!(
        refusal.details.as_ref().unwrap()["path"],
        "archive/links.md"
    );
    assert_eq!(refusal.details.as_ref().unwrap()["token_released"], true);
    assert_eq!(
        fx.get("inbox/a.md").as_deref(),
        Some("A\n"),
        "nothing moved"
    );
    assert_eq!(fx.get("archive/links.md").as_deref(), Some("see [[a]]\n"));
    // Without the backlink update the same move needs no write there and goes through.
    let args = json!({"from": "inbox/a.md", "to": "projects/a.md", "update_backlinks": false});
    let token = fx.require("move_note", &args);
    fx.call("move_note", with_token(&args, &token)).unwrap();
    assert!(fx.get("projects/a.md").is_some());
}

// r[verify tools.move-note.backlinks-declared]
#[test]
fn a_move_rewrites_only_the_backlinks_its_precheck_planned_and_judged() {
    let fx = Fx::with(
        Some(tc_vault::acl::AclConfig {
            write_paths: Some(vec!["inbox/**".into()]),
            ..tc_vault::acl::AclConfig::default()
        }),
        Vec::new(),
    );
    fx.put("inbox/a.md", "A\n");
    fx.put("inbox/l.md", "see [[a]]\n");
    // A rename in its folder needs no confirmation; the plan is the precheck's.
    let args = json!({"from": "inbox/a.md", "to": "inbox/b.md"});
    let prepared = fx.pipeline.prepare(&caller(), "move_note", &args).unwrap();
    assert!(!prepared.needs_confirmation());
    // A note the caller may read but not write links to it after the ACL judged the plan.
    fx.put("archive/late.md", "also [[a]]\n");
    let out = fx
        .pipeline
        .execute(&prepared, tc_tools::Approval::None, &Default::default())
        .unwrap()
        .to_value();
    assert_eq!(out["backlinks"]["notes_count"], 1, "{out}");
    assert_eq!(fx.get("inbox/l.md").as_deref(), Some("see [[b]]\n"));
    assert_eq!(
        fx.get("archive/late.md").as_deref(),
        Some("also [[a]]\n"),
        "a note outside writePaths is not written"
    );
}

// r[verify results.bounded-mutations]
#[test]
fn a_move_with_many_backlinks_reports_counts_and_the_first_hundred() {
    let fx = Fx::new();
    fx.put("a.md", "A\n");
    for i in 0..150 {
        fx.put(&format!("l/{i:03}.md"), "[[a]]\n");
    }
    let out = fx
        .call("move_note", json!({"from": "a.md", "to": "b.md"}))
        .unwrap();
    assert_eq!(out["backlinks"]["notes_count"], 150);
    assert_eq!(out["backlinks"]["links_updated"], 150);
    assert_eq!(
        out["backlinks"]["notes_updated"].as_array().unwrap().len(),
        100
    );
    assert_eq!(fx.get("l/149.md").as_deref(), Some("[[b]]\n"));
}

// r[verify tools.move-note.link-safe-name]
#[test]
fn a_move_to_a_name_no_link_can_carry_is_refused_before_anything_changes() {
    let fx = Fx::new();
    fx.put("a.md", "A\n");
    fx.put("l.md", "[[a]]\n");
    for to in ["a]] x.md", "x|y.md", "c#d.md", "e^f.md", "[g.md"] {
        let refusal = fx
            .call("move_note", json!({"from": "a.md", "to": to}))
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ValidationError, "{to}: {refusal}");
        assert_eq!(
            refusal.details.as_ref().unwrap()["errors"][0]["pointer"],
            "/to"
        );
    }
    assert_eq!(fx.get("a.md").as_deref(), Some("A\n"));
    assert_eq!(fx.get("l.md").as_deref(), Some("[[a]]\n"));
    // Without the backlink update the name is the vault's business, not the links'.
    fx.call(
        "move_note",
        json!({"from": "a.md", "to": "x|y.md", "update_backlinks": false}),
    )
    .unwrap();
    assert!(fx.get("x|y.md").is_some());
}

// r[verify results.error-bounded]
/// Two million wrong items and a megabyte string: the refusal lists 10 violations, each
/// short, says there were more, and both text blocks together stay under 10,000 bytes.
#[test]
fn a_refusal_is_small_whatever_the_call_sent() {
    let registry = registry();
    let def = registry.get("read_notes").expect("read_notes");
    let wrong_items = json!({"paths": vec![0; 2_000_000]});
    let error = def.parse_args(&wrong_items).unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError);
    let structured = error.to_structured();
    let errors = structured["details"]["errors"].as_array().unwrap();
    assert_eq!(
        errors.len(),
        tc_tools::schema::MAX_VIOLATIONS,
        "{structured}"
    );
    assert_eq!(structured["details"]["more_errors"], json!(true));
    let sent = structured.to_string().len() + error.text().len();
    assert!(sent <= tc_tools::MAX_FAILURE_TEXT_BYTES, "{sent} bytes");

    let huge = "x".repeat(1 << 20);
    let error = def.parse_args(&json!({"paths": huge.clone()})).unwrap_err();
    let structured = error.to_structured();
    let sent = structured.to_string().len() + error.text().len();
    assert!(sent < 8 * 1024, "{sent} bytes");
    assert!(error.text().contains("more bytes]"), "{}", error.text());
    assert_eq!(
        error.text(),
        format!(
            "Error [validation_error]: {}",
            structured["message"].as_str().unwrap()
        )
    );

    // Any failure, whatever its details: entries that do not fit are left out and named.
    let bulky = tc_tools::ToolError::new(ErrorCode::InvalidInput, huge.clone())
        .with_details(json!({"reason": "invalid", "echo": huge}));
    let structured = bulky.to_structured();
    let sent = structured.to_string().len() + bulky.text().len();
    assert!(sent <= tc_tools::MAX_FAILURE_TEXT_BYTES, "{sent} bytes");
    assert_eq!(structured["details"]["reason"], json!("invalid"));
    assert_eq!(structured["details"]["cut"]["left_out"], json!(["echo"]));
}

// r[verify tools.summary.readable-only]
/// A caller that may write `inbox/` but read only `public/`: the confirmation it asks for
/// names the note and shows nothing of its text; a note it may read still gets its diff.
#[test]
fn a_summary_shows_nothing_of_a_note_the_caller_may_not_read() {
    let acl = tc_vault::acl::AclConfig {
        read_paths: Some(vec!["public/**".to_owned()]),
        write_paths: Some(vec!["**".to_owned()]),
        ..tc_vault::acl::AclConfig::default()
    };
    let fx = Fx::with(Some(acl), Vec::new());
    fx.put("inbox/diary.md", "my secret diary\nline two\n");
    fx.put("public/a.md", "old words\n");
    let hidden = raised_summary(
        &fx,
        "write_note",
        &json!({"path": "inbox/diary.md", "content": "overwritten\n"}),
    );
    assert!(!hidden.contains("secret"), "{hidden}");
    assert!(!hidden.contains("line two"), "{hidden}");
    assert!(!hidden.contains("bytes"), "{hidden}");
    assert!(hidden.contains("inbox/diary.md"), "{hidden}");
    assert!(hidden.contains("not shown"), "{hidden}");
    let shown = raised_summary(
        &fx,
        "write_note",
        &json!({"path": "public/a.md", "content": "new words\n"}),
    );
    assert!(
        shown.contains("-old words") && shown.contains("+new words"),
        "{shown}"
    );
}
