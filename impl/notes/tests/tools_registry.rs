//! The registry and the dispatch pipeline's stages, independent of any one tool.

mod tools_support;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tc_gate::ConfirmationTargets;
use tc_gate::NonTokenRoute;
use tc_tools::{
    Annotations, Approval, CallControl, CallerContext, CancellationFlag, ErrorCode, Gating,
    HandlerFailure, Precheck, Registry, RegistryBuildError, TargetState, Tool, ToolCx, ToolDef,
    ToolError, ToolSpec,
};
use tc_vault::acl::{AclConfig, Scopes};
use tools_support::{Fx, caller, verified, with_token};

/// The arguments of the probe tools.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ProbeArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct ProbeOutput {}

/// A tool named `name`, gated as told; `fails` makes it a gated tool bound to "none" whose
/// handler always fails after it was entered.
#[derive(Debug)]
struct Probe {
    name: &'static str,
    gated: bool,
    confirmation: Option<ConfirmationTargets>,
    fails: bool,
}

impl Tool for Probe {
    type Args = ProbeArgs;
    type Output = ProbeOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name,
            description: "test",
            annotations: Annotations::writes(true, false),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: Gating {
                gated: self.gated,
                confirmation: self.confirmation,
                checks_confirmation_in_handler: false,
            },
        }
    }

    fn precheck(&self, _: &ToolCx<'_>, _: &ProbeArgs) -> Result<Precheck, ToolError> {
        Ok(Precheck {
            needs_confirmation: self.fails,
            ..Precheck::default()
        })
    }

    fn state(&self, _: &ToolCx<'_>, _: &ProbeArgs, _: &Precheck) -> Result<TargetState, ToolError> {
        Ok(TargetState::default())
    }

    fn run(
        &self,
        _: &ToolCx<'_>,
        _: &ProbeArgs,
        _: &Precheck,
        _: &TargetState,
    ) -> Result<ProbeOutput, HandlerFailure> {
        if self.fails {
            return Err(HandlerFailure::Failed(ToolError::internal(
                "talking to a companion plugin",
            )));
        }
        Ok(ProbeOutput {})
    }
}

fn def(name: &'static str, gated: bool, confirmation: Option<ConfirmationTargets>) -> ToolDef {
    ToolDef::of(Probe {
        name,
        gated,
        confirmation,
        fails: false,
    })
    .unwrap()
}

// r[verify drift.startup-refusal]
#[test]
fn a_gated_tool_without_targets_is_refused_at_startup_by_name() {
    let mut registry = Registry::new();
    let error = registry
        .register(def("shiny_tool", true, None))
        .unwrap_err();
    assert!(matches!(
        error,
        RegistryBuildError::MissingConfirmationTargets(_)
    ));
    assert!(error.to_string().contains("shiny_tool"), "{error}");
    assert!(registry.get("shiny_tool").is_none());
    // "none" is a declaration; an ungated tool needs none.
    registry
        .register(def("opaque", true, Some(ConfirmationTargets::None)))
        .unwrap();
    registry.register(def("free", false, None)).unwrap();
    let duplicate = registry.register(def("free", false, None)).unwrap_err();
    assert_eq!(
        duplicate,
        RegistryBuildError::Duplicate {
            tool: "free".into()
        }
    );
}

// r[verify drift.targets-declared]
// r[verify tools.elicit-token-arg]
// r[verify tools.vault-arg]
#[test]
fn every_standard_gated_tool_declares_its_targets_and_takes_vault_and_token() {
    let registry = tc_notes::registry().unwrap();
    let names: Vec<&str> = registry.iter().map(|d| d.name.as_str()).collect();
    for tool in [
        "write_note",
        "move_note",
        "copy_note",
        "delete_note",
        "restore_note",
        "update_frontmatter",
        "rewrite_link",
        "prune_hub_links",
        "commit_wiki_page",
    ] {
        assert!(names.contains(&tool), "{tool} missing");
        let def = registry.get(tool).unwrap();
        assert!(def.gated && def.confirmation.is_some(), "{tool}");
        let props = &def.input_schema["properties"];
        assert_eq!(props["vault"]["type"], "string", "{tool}");
        assert_eq!(props["elicit_token"]["type"], "string", "{tool}");
        assert_eq!(def.input_schema["additionalProperties"], false);
    }
}

// r[verify tools.schema]
// r[verify tools.annotations]
#[test]
fn tools_list_snapshot() {
    let registry = tc_notes::registry().unwrap();
    insta::assert_json_snapshot!("tools_list", registry.list());
    for def in registry.iter() {
        // Truthful: a tool that changes notes is never read-only, and every default the
        // handlers rely on is stated in the schema.
        assert_eq!(
            def.annotations.read_only_hint, !def.changes_notes,
            "{}",
            def.name
        );
        assert!(!def.annotations.open_world_hint);
    }
    // No Rust integer format (`uint`, `uint64`) reaches a client, nullable ones included:
    // strict validators (ajv) refuse a schema with a format they do not know.
    let listed = serde_json::to_string(&registry.list()).unwrap();
    assert!(!listed.contains("\"format\":\"uint"), "{listed}");
}

// r[verify dispatch.schema]
// r[verify results.validation-error]
#[test]
fn malformed_arguments_are_validation_errors_with_pointers_and_raise_nothing() {
    let fx = Fx::new();
    fx.put("a.md", "old");
    let error = fx
        .call(
            "write_note",
            json!({"path": "a.md", "content": 5, "mode": "sideways"}),
        )
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError);
    let errors = error.details.as_ref().unwrap()["errors"]
        .as_array()
        .unwrap()
        .clone();
    let pointers: Vec<&str> = errors
        .iter()
        .map(|e| e["pointer"].as_str().unwrap())
        .collect();
    assert_eq!(pointers, ["/content", "/mode"]);
    assert_eq!(fx.requested(), 0);
    let unknown = fx.call(
        "write_note",
        json!({"path": "a.md", "content": "x", "force": true}),
    );
    assert_eq!(unknown.unwrap_err().code, ErrorCode::ValidationError);
    assert_eq!(fx.get("a.md").unwrap(), "old");
}

// r[verify gate.hash.uniform]
// r[verify gate.hash.args-hash]
#[test]
fn stated_defaults_vault_and_token_do_not_change_args_hash() {
    let fx = Fx::new();
    fx.put("a.md", "old");
    let who = caller();
    let short = fx
        .pipeline
        .prepare(&who, "write_note", &json!({"path": "a.md", "content": "x"}))
        .unwrap();
    let long = fx
        .pipeline
        .prepare(
            &who,
            "write_note",
            &json!({"content": "x", "mode": "overwrite", "path": "a.md", "vault": "main", "elicit_token": "00"}),
        )
        .unwrap();
    assert_eq!(short.args_hash(), long.args_hash());
    assert_eq!(long.elicit_token(), Some("00"));
    assert!(long.args().get("elicit_token").is_none());
    let expected = tc_gate::args_hash::args_hash("write_note", short.args());
    assert_eq!(short.args_hash(), expected.as_str());
    let other = fx
        .pipeline
        .prepare(&who, "write_note", &json!({"path": "a.md", "content": "y"}))
        .unwrap();
    assert_ne!(short.args_hash(), other.args_hash());
}

// r[verify dispatch.debug-redacted]
#[test]
fn what_a_prepared_call_logs_names_it_and_hides_its_token() {
    let fx = Fx::new();
    fx.put("a.md", "old");
    let token = "tc-secret-token-0123456789";
    let prepared = fx
        .pipeline
        .prepare(
            &caller(),
            "write_note",
            &json!({"path": "a.md", "content": "x", "elicit_token": token}),
        )
        .unwrap();
    let logged = format!("{prepared:?}");
    for shown in [
        "write_note",
        "\"main\"",
        prepared.caller().id.as_str(),
        prepared.args_hash(),
        prepared.state_fp().as_str(),
        "<redacted>",
    ] {
        assert!(logged.contains(shown), "{shown} missing from {logged}");
    }
    assert!(!logged.contains(token), "the token was logged: {logged}");
    let pipeline = format!("{:?}", fx.pipeline);
    assert!(pipeline.contains("\"main\""), "{pipeline}");
}

// r[verify dispatch.scopes]
// r[verify results.acl-denied]
#[test]
fn a_caller_without_the_scope_is_refused_before_the_gate() {
    let fx = Fx::new();
    fx.put("a.md", "old");
    let reader = CallerContext::new("alice", Scopes::granted(["read:notes"]));
    let error = fx
        .call_as(&reader, "delete_note", json!({"path": "a.md"}))
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::AclDenied);
    assert_eq!(error.details.as_ref().unwrap()["scope"], "write:notes");
    assert_eq!(fx.requested(), 0);
    assert!(fx.get("a.md").is_some());
}

// r[verify dispatch.vault]
#[test]
fn an_unknown_vault_is_a_validation_error() {
    let fx = Fx::new();
    let error = fx
        .call(
            "write_note",
            json!({"path": "a.md", "content": "x", "vault": "other"}),
        )
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError);
    assert!(error.message.contains("/vault"), "{}", error.message);
    let mut limited = caller();
    limited.only_vault = Some("elsewhere".into());
    let refused = fx
        .call_as(
            &limited,
            "write_note",
            json!({"path": "a.md", "content": "x"}),
        )
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::AclDenied);
    assert!(fx.get("a.md").is_none());
}

// r[verify dispatch.read-only]
#[test]
fn a_read_only_vault_refuses_changes_before_asking() {
    let fx = Fx::with(
        Some(AclConfig {
            read_only: true,
            ..AclConfig::default()
        }),
        Vec::new(),
    );
    fx.put("a.md", "old");
    let error = fx.call("delete_note", json!({"path": "a.md"})).unwrap_err();
    assert_eq!(error.code, ErrorCode::AclDenied);
    assert_eq!(
        fx.requested(),
        0,
        "no confirmation asked for a change that cannot run"
    );
    assert!(fx.get("a.md").is_some());
}

// r[verify dispatch.precheck]
#[test]
fn a_call_that_would_fail_anyway_asks_nothing() {
    let fx = Fx::new();
    let error = fx
        .call("delete_note", json!({"path": "missing.md"}))
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::NoteNotFound);
    assert_eq!(fx.requested(), 0);
}

// r[verify results.elicit-required]
// r[verify results.elicit-required.directive]
// r[verify results.error-text.actionable]
// r[verify gate.raise.record]
// r[verify gate.raise.state-fp]
// r[verify gate.sensitive.confirm]
#[test]
fn elicit_required_carries_hash_state_tool_and_the_exact_command() {
    let fx = Fx::new();
    fx.put("a.md", "keep me");
    let error = fx.call("delete_note", json!({"path": "a.md"})).unwrap_err();
    assert_eq!(error.code, ErrorCode::ElicitRequired);
    assert!(!error.retryable());
    assert!(
        error
            .message
            .starts_with("STOP and ask the human before running anything"),
        "{}",
        error.message
    );
    assert!(error.message.contains("Do not edit the vault directly"));
    let details = error.details.clone().unwrap();
    let hash = details["args_hash"].as_str().unwrap();
    let fp = details["state_fp"].as_str().unwrap();
    assert_eq!(details["tool"], "delete_note");
    assert_eq!(hash.len(), 32);
    assert_eq!(fp.len(), 32);
    let recovery = error.recovery.clone().unwrap();
    assert_eq!(
        recovery.command.as_deref().unwrap(),
        format!(
            "obsidian-tc elicit --hash {hash} --tool delete_note --caller stdio --state-fp {fp}"
        )
    );
    let raised = error.raised.as_ref().unwrap();
    assert_eq!(raised.state_fp.as_str(), fp);
    let stored = fx
        .gate
        .raised_request("main", hash, "stdio")
        .unwrap()
        .unwrap();
    assert_eq!(stored.state_fp.as_str(), fp);
    assert_eq!(stored.call.tool, "delete_note");
    let structured = error.to_structured();
    assert_eq!(structured["code"], "elicit_required");
    assert_eq!(structured["retryable"], false);
    assert!(error.text().starts_with("Error [elicit_required]: STOP"));
    // What the agent is shown carries the command itself, before any other instruction,
    // and the way to see what it approves.
    let text = error.text();
    let at = text
        .find(recovery.command.as_deref().unwrap())
        .expect("command in the text");
    assert!(!text[..at].contains("elicit_token"), "{text}");
    assert!(text.contains("`obsidian-tc pending`"), "{text}");
    assert!(fx.get("a.md").is_some());
}

// r[verify floors.no-bypass]
// r[verify floors.permissive-config]
#[test]
fn no_approval_claim_skips_the_gate() {
    let fx = Fx::new();
    fx.put("a.md", "keep me");
    let prepared = fx
        .pipeline
        .prepare(&caller(), "delete_note", &json!({"path": "a.md"}))
        .unwrap();
    let error = fx
        .pipeline
        .execute(&prepared, Approval::NotNeeded, &CallControl::default())
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ElicitRequired);
    assert!(fx.get("a.md").is_some());
}

// r[verify gate.token.unneeded]
#[test]
fn a_token_on_a_free_call_is_neither_checked_nor_spent() {
    let fx = Fx::new();
    fx.put("a.md", "old");
    let token = fx.require("delete_note", &json!({"path": "a.md"}));
    // A free call with a garbage token and with the real one: both run, nothing spent.
    fx.call(
        "write_note",
        json!({"path": "b.md", "content": "new", "elicit_token": "junk"}),
    )
    .unwrap();
    fx.call(
        "write_note",
        json!({"path": "c.md", "content": "new", "elicit_token": token.clone()}),
    )
    .unwrap();
    fx.call("delete_note", with_token(&json!({"path": "a.md"}), &token))
        .unwrap();
    assert!(fx.get("a.md").is_none());
}

// r[verify gate.token.refused]
// r[verify approval.bound]
#[test]
fn a_token_for_another_call_or_caller_approves_nothing() {
    let fx = Fx::new();
    fx.put("a.md", "a");
    fx.put("b.md", "b");
    let token = fx.require("delete_note", &json!({"path": "a.md"}));
    let other = fx
        .call("delete_note", with_token(&json!({"path": "b.md"}), &token))
        .unwrap_err();
    assert_eq!(other.code, ErrorCode::ElicitRequired);
    assert_eq!(other.details.as_ref().unwrap()["token_rejected"], "invalid");
    let bob = CallerContext::new("bob", Scopes::all());
    let stolen = fx
        .call_as(
            &bob,
            "delete_note",
            with_token(&json!({"path": "a.md"}), &token),
        )
        .unwrap_err();
    assert_eq!(
        stolen.details.as_ref().unwrap()["token_rejected"],
        "invalid"
    );
    assert!(fx.get("a.md").is_some() && fx.get("b.md").is_some());
    // Neither attempt spent it.
    fx.call("delete_note", with_token(&json!({"path": "a.md"}), &token))
        .unwrap();
}

// r[verify approval.expiry]
#[test]
fn an_expired_token_is_refused() {
    let fx = Fx::new();
    fx.put("a.md", "a");
    let token = fx.require("delete_note", &json!({"path": "a.md"}));
    fx.clock.advance_ms(301_000);
    let error = fx
        .call("delete_note", with_token(&json!({"path": "a.md"}), &token))
        .unwrap_err();
    assert_eq!(error.details.as_ref().unwrap()["token_rejected"], "expired");
    assert!(fx.get("a.md").is_some());
}

// r[verify release.cancel]
// r[verify release.restores]
// r[verify release.event]
// r[verify results.cancelled]
#[test]
fn a_cancellation_before_the_handler_gives_the_token_back() {
    let fx = Fx::new();
    fx.put("a.md", "a");
    let args = json!({"path": "a.md"});
    let token = fx.require("delete_note", &args);
    let prepared = fx
        .pipeline
        .prepare(&caller(), "delete_note", &with_token(&args, &token))
        .unwrap();
    let cancel = CancellationFlag::new();
    cancel.cancel();
    let error = fx
        .pipeline
        .execute(
            &prepared,
            prepared.token_approval(),
            &CallControl::with_cancel(cancel),
        )
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::InternalError);
    assert_eq!(error.details.as_ref().unwrap()["reason"], "cancelled");
    assert_eq!(error.details.as_ref().unwrap()["token_released"], true);
    assert_eq!(fx.released(), 1);
    assert!(fx.get("a.md").is_some());
    let events = fx.gate.events(0, 100).unwrap();
    assert!(events.iter().any(|e| e.name.as_str() == "hitl_released"));
    fx.call("delete_note", with_token(&args, &token)).unwrap();
    assert!(fx.get("a.md").is_none());
}

// r[verify drift.every-route]
// r[verify trip.consumed-event-per-run]
// r[verify drift.recompute]
#[test]
fn a_verified_round_trip_is_drift_checked_and_records_one_run() {
    let fx = Fx::new();
    fx.put("a.md", "a");
    let args = json!({"path": "a.md", "content": "new"});
    let first = fx.pipeline.prepare(&caller(), "write_note", &args).unwrap();
    assert!(first.needs_confirmation());
    fx.pipeline.raise(&first).unwrap();
    let approved = first.state_fp().clone();
    // The note changes while the prompt is open: the verified approval no longer applies.
    fx.put("a.md", "changed");
    let second = fx.pipeline.prepare(&caller(), "write_note", &args).unwrap();
    let error = fx
        .pipeline
        .execute(&second, verified(&approved), &CallControl::default())
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ReplayDrift);
    assert_eq!(fx.get("a.md").unwrap(), "changed");
    assert_eq!(fx.gate.counters().consumed, 0);
    // An approval of the current state applies, with one consumed event.
    let third = fx.pipeline.prepare(&caller(), "write_note", &args).unwrap();
    let fp = third.state_fp().clone();
    fx.pipeline
        .execute(
            &third,
            Approval::Verified {
                state_fp: fp,
                route: NonTokenRoute::LegacyShim,
            },
            &CallControl::default(),
        )
        .unwrap();
    assert_eq!(fx.get("a.md").unwrap(), "new");
    assert_eq!(fx.gate.counters().consumed, 1);
}

// r[verify results.approval-not-obtained]
// r[verify results.approval-declined]
#[test]
fn cancel_and_decline_refusals() {
    let fx = Fx::new();
    fx.put("a.md", "a");
    let prepared = fx
        .pipeline
        .prepare(&caller(), "delete_note", &json!({"path": "a.md"}))
        .unwrap();
    let cancel = fx.pipeline.approval_not_obtained(&prepared);
    assert_eq!(cancel.code, ErrorCode::ApprovalNotObtained);
    assert_eq!(
        cancel.details.as_ref().unwrap()["reason"],
        "approval_not_obtained"
    );
    assert!(
        cancel
            .recovery
            .as_ref()
            .unwrap()
            .command
            .as_ref()
            .unwrap()
            .starts_with("obsidian-tc elicit --hash ")
    );
    let decline = ToolError::approval_declined("delete_note");
    assert_eq!(
        decline.details.as_ref().unwrap()["reason"],
        "approval_declined"
    );
    assert!(decline.message.contains("declined"));
    assert!(!decline.retryable());
}

// r[verify results.retryable]
// r[verify results.codes]
#[test]
fn only_drift_and_concurrent_modification_are_retryable() {
    let fx = Fx::new();
    fx.put("a.md", "a");
    let stale = fx
        .call(
            "write_note",
            json!({"path": "a.md", "content": "b", "prev_hash": "0".repeat(64)}),
        )
        .unwrap_err();
    assert_eq!(stale.code, ErrorCode::ConcurrentModification);
    assert!(stale.retryable());
    assert_eq!(stale.to_structured()["retryable"], true);
    for code in [
        ErrorCode::ElicitRequired,
        ErrorCode::AclDenied,
        ErrorCode::PathInvalid,
        ErrorCode::InternalError,
    ] {
        assert!(!code.retryable());
    }
}

// r[verify release.keeps-spent]
// r[verify release.no-effect-only]
// r[verify drift.none-empty]
// r[verify drift.bind.none-tools]
#[test]
fn a_handler_error_keeps_the_token_spent_and_none_tools_bind_empty() {
    let mut fx = Fx::new();
    let mut registry = Registry::new();
    registry
        .add(Probe {
            name: "execute_command",
            gated: true,
            confirmation: Some(ConfirmationTargets::None),
            fails: true,
        })
        .unwrap();
    fx.use_registry(registry);
    let args = json!({"command": "x"});
    let refusal = fx.call("execute_command", args.clone()).unwrap_err();
    assert_eq!(refusal.details.as_ref().unwrap()["state_fp"], "");
    assert!(
        refusal
            .recovery
            .as_ref()
            .unwrap()
            .command
            .as_ref()
            .unwrap()
            .ends_with("--state-fp ''")
    );
    let token = fx.mint(&refusal);
    let failed = fx
        .call("execute_command", with_token(&args, &token))
        .unwrap_err();
    assert_eq!(failed.code, ErrorCode::InternalError);
    assert_eq!(fx.released(), 0);
    assert_eq!(fx.gate.counters().consumed, 1);
    let again = fx
        .call("execute_command", with_token(&args, &token))
        .unwrap_err();
    assert_eq!(again.details.as_ref().unwrap()["token_rejected"], "spent");
}

// r[verify dispatch.order]
// r[verify vault.acl.after-gate]
#[test]
fn each_stage_refuses_before_the_next_is_reached() {
    let reader = CallerContext::new("r", Scopes::granted(["read:notes"]));
    let fx = Fx::with(
        Some(AclConfig {
            read_only: true,
            ..AclConfig::default()
        }),
        Vec::new(),
    );
    // Schema before scopes.
    let e = fx
        .call_as(&reader, "delete_note", json!({"path": 1}))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ValidationError);
    // Scopes before the vault binding.
    let e = fx
        .call_as(
            &reader,
            "delete_note",
            json!({"path": "a.md", "vault": "x"}),
        )
        .unwrap_err();
    assert_eq!(e.details.unwrap()["scope"], "write:notes");
    // The vault binding before the read-only check.
    let e = fx
        .call("delete_note", json!({"path": "a.md", "vault": "x"}))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ValidationError);
    // The read-only check before the precheck (a hostile path is not even looked at).
    let e = fx
        .call("delete_note", json!({"path": "../a.md"}))
        .unwrap_err();
    assert_eq!(e.details.unwrap()["reason"], "read_only");
    // The precheck before the gate, the gate before the folder ACL.
    let fx = Fx::with(Some(tools_support::deny_write_all()), Vec::new());
    assert_eq!(
        tools_support::code(fx.call("delete_note", json!({"path": "nope.md"}))),
        ErrorCode::NoteNotFound
    );
    fx.put("a.md", "a");
    let e = fx.call("delete_note", json!({"path": "a.md"})).unwrap_err();
    assert_eq!(e.code, ErrorCode::ElicitRequired);
    let token = fx.mint(&e);
    let e = fx
        .call("delete_note", with_token(&json!({"path": "a.md"}), &token))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::AclDenied);
    assert_eq!(e.details.unwrap()["access"], "delete");
}

// r[verify tools.future-names]
// r[verify cli.elicit.no-tool]
#[test]
fn tools_not_built_are_not_advertised_and_no_tool_mints() {
    let registry = tc_notes::registry().unwrap();
    for name in [
        "ocr_bulk",
        "git_commit",
        "reset_vault_cache",
        "delete_entity",
        "session_rerun",
        "execute_command",
        "trigger_quickadd",
        "call_capability",
    ] {
        assert!(registry.get(name).is_none(), "{name}");
    }
    for def in registry.iter() {
        let text = def.list_entry().to_string();
        assert!(!text.contains("\"mint"), "{}", def.name);
        assert!(
            !def.name.contains("elicit") && !def.name.contains("token"),
            "{}",
            def.name
        );
    }
    assert_eq!(registry.iter().count(), 15);
}
