//! The git tools as `tools/list` shows them: flat input schemas, output schemas their real
//! results satisfy, truthful annotations and scopes.

mod support;

use serde_json::{Value, json};
use support::{Git, git, repo_with_commit};
use tc_tools::testing::{Fx, Tools, with_token};

fn check_output(tool: &str, result: &Value) {
    let registry = Git::registry();
    let def = registry.get(tool).unwrap();
    let validator = jsonschema::validator_for(&def.output_schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(result)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{tool}: {errors:?}\n{result}");
}

// r[verify tools.output-schema]
#[test]
fn every_git_result_satisfies_its_output_schema() {
    let fx = Fx::<Git>::new();
    repo_with_commit(&fx);
    fx.put("notes/a.md", "changed\n");
    fx.put("notes/loose.md", "untracked\n");
    let staged = fx
        .call("git_stage", json!({"paths": ["notes/a.md"]}))
        .unwrap();
    check_output("git_stage", &staged);
    let status = fx.call("git_status", json!({})).unwrap();
    check_output("git_status", &status);
    let args = json!({"message": "m"});
    let token = fx.require("git_commit", &args);
    let done = fx.call("git_commit", with_token(&args, &token)).unwrap();
    check_output("git_commit", &done);
    assert_eq!(git(&fx.root, &["log", "-1", "--format=%s"]).trim(), "m");
}

// r[verify tools.annotations]
// r[verify tools.schema.flat]
#[test]
fn the_git_tools_declare_scopes_annotations_and_flat_schemas() {
    let registry = Git::registry();
    let expect = [
        ("git_status", "read:git", true, false),
        ("git_stage", "write:git", false, false),
        ("git_commit", "execute:git", false, true),
    ];
    for (name, scope, read_only, gated) in expect {
        let def = registry.get(name).unwrap();
        assert_eq!(def.scopes, [scope], "{name}");
        assert_eq!(def.annotations.read_only_hint, read_only, "{name}");
        assert!(!def.annotations.destructive_hint, "{name}");
        assert_eq!(def.gated, gated, "{name}");
        let text = def.input_schema.to_string();
        for word in ["$ref", "$defs", "\"oneOf\"", "\"anyOf\"", "\"allOf\""] {
            assert!(!text.contains(word), "{name}: {word} in {text}");
        }
        assert_eq!(def.output_schema["type"], "object", "{name}");
    }
    assert_eq!(
        registry.get("git_commit").unwrap().confirmation,
        Some(tc_gate::ConfirmationTargets::Custom)
    );
}
