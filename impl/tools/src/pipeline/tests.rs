//! The dispatch pipeline's stages (spec/dispatch.md, spec/gate.md, spec/drift.md,
//! spec/release.md) driven through one gated test tool, so that tc-tools' own tests judge
//! `pipeline.rs` and `refusals.rs` without a family of real tools.

use std::fs;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tc_gate::Verifier;
use tc_gate::clock::SeededEntropy;
use tc_gate::keys::ServerSecret;
use tc_gate::{ConfirmationTargets, FingerprintKey, NonTokenRoute, StateFp};
use tc_vault::acl::{AclConfig, AclOp, Scopes};
use tc_vault::path::VaultPath;
use tc_vault::vault::snapshot_dir_for;

use crate::refusals::HASH_NOT_SHOWN;
use crate::testing::{Fx, TempVault, Tools, caller, deny_write_all, read_only_under, with_token};
use crate::{
    Annotations, Approval, CallControl, CallerContext, CancellationFlag, ErrorCode, Gating,
    HandlerFailure, Pipeline, Precheck, Registry, TargetState, Tool, ToolCx, ToolError, ToolSpec,
    path_state,
};

/// `touch`: writes `text` at `path`; needs confirmation unless `confirm` is false; its
/// handler fails after it was entered when `fail` is set, and finds the note changed when
/// `conflict` is.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TouchArgs {
    path: String,
    text: String,
    #[serde(default = "yes")]
    confirm: bool,
    #[serde(default)]
    fail: bool,
    /// The handler finds the note changed since `prev_hash` (or since it was absent).
    #[serde(default)]
    conflict: bool,
    #[serde(default)]
    prev_hash: Option<String>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Serialize, JsonSchema)]
struct TouchOutput {
    written: String,
}

#[derive(Debug)]
struct Touch;

fn target(args: &TouchArgs) -> Result<VaultPath, ToolError> {
    VaultPath::parse(&args.path).map_err(|_| ToolError::validation("/path", "not a vault path"))
}

impl Tool for Touch {
    type Args = TouchArgs;
    type Output = TouchOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "touch",
            description: "test",
            annotations: Annotations::writes(true, false),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: Gating {
                gated: true,
                confirmation: Some(ConfirmationTargets::PathAcl),
                checks_confirmation_in_handler: false,
            },
        }
    }

    fn precheck(&self, _: &ToolCx<'_>, args: &TouchArgs) -> Result<Precheck, ToolError> {
        Ok(Precheck {
            needs_confirmation: args.confirm,
            acl: vec![(AclOp::Write, target(args)?)],
            ..Precheck::default()
        })
    }

    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &TouchArgs,
        _: &Precheck,
    ) -> Result<TargetState, ToolError> {
        path_state(cx.vault(), &[target(args)?])
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &TouchArgs,
        _: &Precheck,
        _: &TargetState,
    ) -> Result<TouchOutput, HandlerFailure> {
        if args.fail {
            return Err(HandlerFailure::Failed(ToolError::internal(
                "the disk went away",
            )));
        }
        if args.conflict {
            let expected = args.prev_hash.as_deref().unwrap_or("absent");
            return Err(HandlerFailure::Failed(
                ToolError::new(ErrorCode::ConcurrentModification, "changed").with_details(
                    json!({"path": args.path, "expected": expected, "actual": "h-now"}),
                ),
            ));
        }
        let full = cx.vault().root().path().join(&args.path);
        fs::write(full, &args.text)
            .map_err(|_| HandlerFailure::Failed(ToolError::internal("writing")))?;
        Ok(TouchOutput {
            written: args.path.clone(),
        })
    }
}

struct TouchTools;

impl Tools for TouchTools {
    fn registry() -> Registry {
        let mut registry = Registry::new();
        registry.add(Touch).unwrap();
        registry
    }
}

type TouchFx = Fx<TouchTools>;

fn args(confirm: bool) -> Value {
    json!({"path": "a.md", "text": "new", "confirm": confirm})
}

fn execute(
    fx: &TouchFx,
    args: &Value,
    approval: Approval,
    control: &CallControl,
) -> Result<Value, ToolError> {
    let prepared = fx.pipeline.prepare(&caller(), "touch", args)?;
    fx.pipeline
        .execute(&prepared, approval, control)
        .map(|out| out.to_value())
}

fn cancelled() -> CallControl {
    let cancel = CancellationFlag::new();
    cancel.cancel();
    CallControl::with_cancel(cancel)
}

/// Two vaults, "main" and "other", over one gate, as a server serving both binds them.
fn two_vaults(fx: &TouchFx) -> (Pipeline, TempVault) {
    let other_dir = TempVault::new();
    let secret = ServerSecret::ephemeral(&SeededEntropy::new(11));
    let main = crate::testing::binding(
        fx.open(snapshot_dir_for(&fx.cache(), "main").unwrap(), 3),
        &fx.cache(),
        &secret,
        None,
        &[],
    );
    let other_vault = tc_vault::vault::Vault::open(
        "other",
        &other_dir.root,
        snapshot_dir_for(&other_dir.cache(), "other").unwrap(),
        Arc::new(other_dir.clock.clone()),
        Arc::new(SeededEntropy::new(5)),
    )
    .unwrap();
    let other = crate::testing::binding(other_vault, &other_dir.cache(), &secret, None, &[]);
    let paging = crate::PagingSetup {
        codec: tc_gate::cursor::CursorCodec::new(&secret),
        limits: crate::PageLimits::new(crate::testing::PAGE_CAP),
    };
    let pipeline = Pipeline::new(
        TouchTools::registry(),
        [main, other],
        fx.gate.clone(),
        Arc::new(fx.clock.clone()),
        paging,
        FingerprintKey::new(&secret),
    );
    (pipeline, other_dir)
}

// r[verify dispatch.debug-redacted]
/// What a prepared call says of itself: its tool, vault, caller, arguments (vault filled,
/// token left out), their hash, its condition and fingerprint; its token only redacted.
#[test]
fn a_prepared_call_tells_what_it_binds_and_hides_its_token() {
    let fx = TouchFx::new();
    let sent = with_token(&args(true), "tok-secret-123");
    let prepared = fx.pipeline.prepare(&caller(), "touch", &sent).unwrap();
    assert_eq!(prepared.tool(), "touch");
    assert_eq!(prepared.def().name, "touch");
    assert_eq!(prepared.vault_id(), "main");
    assert_eq!(prepared.caller().id, "stdio");
    assert_eq!(prepared.args()["vault"], "main");
    assert_eq!(prepared.args()["path"], "a.md");
    assert!(prepared.args().get("elicit_token").is_none());
    assert_eq!(prepared.elicit_token(), Some("tok-secret-123"));
    assert_eq!(
        prepared.args_hash(),
        tc_gate::args_hash::args_hash("touch", prepared.args()).as_str()
    );
    assert!(prepared.needs_confirmation());
    assert!(matches!(prepared.token_approval(), Approval::CliToken(t) if t == "tok-secret-123"));
    let debug = format!("{prepared:?}");
    assert!(
        debug.contains("touch") && debug.contains("<redacted>"),
        "{debug}"
    );
    assert!(!debug.contains("tok-secret-123"), "{debug}");

    let plain = fx
        .pipeline
        .prepare(&caller(), "touch", &args(false))
        .unwrap();
    assert!(!plain.needs_confirmation());
    assert_eq!(plain.elicit_token(), None);
    assert!(matches!(plain.token_approval(), Approval::None));
    // The fingerprint is the keyed one of the target's state, and it moves with the target.
    assert_ne!(plain.state_fp(), &StateFp::none());
    fx.put("a.md", "old");
    let moved = fx
        .pipeline
        .prepare(&caller(), "touch", &args(false))
        .unwrap();
    assert_ne!(moved.state_fp(), plain.state_fp());
}

/// The pipeline's own settings read back as they were given.
#[test]
fn the_pipeline_reports_its_settings() {
    let fx = TouchFx::new();
    assert_eq!(fx.pipeline.approval_program(), "obsidian-tc");
    assert!(fx.pipeline.approval_flags().is_empty());
    assert_eq!(fx.pipeline.vault_count(), 1);
    assert_eq!(fx.pipeline.vault("main").unwrap().vault.id(), "main");
    assert!(fx.pipeline.vault("other").is_none());
    assert!(fx.pipeline.registry().get("touch").is_some());
    assert_eq!(
        fx.pipeline.gate().counters().requested,
        fx.gate.counters().requested
    );
    let debug = format!("{:?}", fx.pipeline);
    assert!(debug.contains("main"), "{debug}");
}

// r[verify dispatch.order]
// r[verify dispatch.scopes]
/// An unknown tool and a caller without the tool's scope are refused before anything runs.
#[test]
fn unknown_tools_and_missing_scopes_are_refused_first() {
    let fx = TouchFx::new();
    let unknown = fx
        .pipeline
        .prepare(&caller(), "nope", &args(false))
        .unwrap_err();
    assert_eq!(unknown.code, ErrorCode::InvalidInput);
    let reader = CallerContext::new("r", Scopes::granted(["read:notes"]));
    let refused = fx
        .pipeline
        .prepare(&reader, "touch", &args(false))
        .unwrap_err();
    assert_ne!(refused.code, ErrorCode::InvalidInput);
    assert!(refused.to_string().contains("write:notes"), "{refused}");
}

// r[verify dispatch.vault]
/// With several vaults a call names one; a caller bound to one vault may use no other.
#[test]
fn the_vault_is_named_or_the_only_one_and_granted() {
    let fx = TouchFx::new();
    let mut only_other = caller();
    only_other.only_vault = Some("other".into());
    let refused = fx
        .pipeline
        .prepare(&only_other, "touch", &args(false))
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::AclDenied);
    let mut only_main = caller();
    only_main.only_vault = Some("main".into());
    assert!(
        fx.pipeline
            .prepare(&only_main, "touch", &args(false))
            .is_ok()
    );

    let (both, _other) = two_vaults(&fx);
    assert_eq!(both.vault_count(), 2);
    let unnamed = both.prepare(&caller(), "touch", &args(false)).unwrap_err();
    assert_eq!(unnamed.code, ErrorCode::ValidationError);
    let mut named = args(false);
    named["vault"] = json!("other");
    let prepared = both.prepare(&caller(), "touch", &named).unwrap();
    assert_eq!(prepared.vault_id(), "other");
    named["vault"] = json!("missing");
    let missing = both.prepare(&caller(), "touch", &named).unwrap_err();
    assert_eq!(missing.code, ErrorCode::ValidationError);
}

// r[verify cli.elicit.command-works]
/// The printed command carries the program, the flags, the call's binding, and `--vault`
/// only when several vaults are served.
#[test]
fn the_approval_command_names_what_approves_the_call() {
    let fx = TouchFx::new();
    let one = fx
        .pipeline
        .prepare(&caller(), "touch", &args(true))
        .unwrap();
    let command = fx.pipeline.elicit_command(&one);
    assert!(
        command.starts_with("obsidian-tc elicit --hash "),
        "{command}"
    );
    assert!(command.contains(&format!("--hash {} --tool touch", one.args_hash())));
    assert!(command.ends_with(&format!(
        "--caller stdio --state-fp {}",
        one.state_fp().as_str()
    )));
    assert!(!command.contains("--vault"), "{command}");

    let (both, _other) = two_vaults(&fx);
    let both = both
        .with_approval_program("/opt/my tc".into())
        .with_approval_flags(vec!["--config".into(), "/etc/tc.toml".into()]);
    assert_eq!(both.approval_program(), "/opt/my tc");
    assert_eq!(both.approval_flags(), ["--config", "/etc/tc.toml"]);
    let mut named = args(true);
    named["vault"] = json!("main");
    let prepared = both.prepare(&caller(), "touch", &named).unwrap();
    let command = both.elicit_command(&prepared);
    assert!(command.starts_with("'/opt/my tc' elicit"), "{command}");
    assert!(
        command.contains("--config /etc/tc.toml --vault main --caller"),
        "{command}"
    );
}

// r[verify gate.token.unneeded]
// r[verify release.cancel]
/// A call needing no confirmation runs at once, after the folder ACL and unless cancelled.
#[test]
fn a_call_without_confirmation_runs_after_the_acl_unless_cancelled() {
    let fx = TouchFx::new();
    let cancelled_run = execute(&fx, &args(false), Approval::None, &cancelled()).unwrap_err();
    assert_eq!(
        cancelled_run.details.as_ref().unwrap()["reason"],
        "cancelled"
    );
    assert_eq!(fx.get("a.md"), None);
    let out = execute(&fx, &args(false), Approval::None, &CallControl::default()).unwrap();
    assert_eq!(out["written"], "a.md");
    assert_eq!(fx.get("a.md").as_deref(), Some("new"));
    assert_eq!(fx.requested(), 0);

    let denied = TouchFx::with(Some(deny_write_all()), Vec::new());
    let refused = execute(
        &denied,
        &args(false),
        Approval::None,
        &CallControl::default(),
    )
    .unwrap_err();
    assert_eq!(refused.code, ErrorCode::AclDenied);
    assert_eq!(denied.get("a.md"), None);
}

// r[verify floors.no-bypass]
// r[verify gate.raise.record]
/// A call needing confirmation with no approval raises a request and runs nothing.
#[test]
fn no_approval_raises_a_request_and_changes_nothing() {
    let fx = TouchFx::new();
    for approval in [Approval::None, Approval::NotNeeded] {
        let refusal = execute(&fx, &args(true), approval, &CallControl::default()).unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ElicitRequired, "{refusal}");
    }
    assert_eq!(fx.requested(), 2);
    assert_eq!(fx.get("a.md"), None);
    let prepared = fx
        .pipeline
        .prepare(&caller(), "touch", &args(true))
        .unwrap();
    let summary = fx.pipeline.summary(&prepared);
    assert!(
        summary.contains("touch") && summary.contains("a.md"),
        "{summary}"
    );
}

// r[verify drift.every-route]
// r[verify trip.consumed-event-per-run]
/// A verified confirmation runs the call on the state it approved; a moved target or a
/// cancellation runs nothing.
#[test]
fn a_verified_approval_runs_only_on_the_approved_state() {
    let fx = TouchFx::new();
    let prepared = fx
        .pipeline
        .prepare(&caller(), "touch", &args(true))
        .unwrap();
    let approved = prepared.state_fp().clone();
    let verified = || Approval::Verified {
        state_fp: approved.clone(),
        route: NonTokenRoute::RequestState,
    };
    let gone = fx
        .pipeline
        .execute(&prepared, verified(), &cancelled())
        .unwrap_err();
    assert_eq!(gone.details.as_ref().unwrap()["reason"], "cancelled");
    assert_eq!(fx.get("a.md"), None);
    fx.put("b.md", "unrelated");
    fx.pipeline
        .execute(&prepared, verified(), &CallControl::default())
        .unwrap();
    assert_eq!(fx.get("a.md").as_deref(), Some("new"));
    // The target has moved (the run above wrote it): the same approval is stale now.
    let drift = fx
        .pipeline
        .execute(&prepared, verified(), &CallControl::default())
        .unwrap_err();
    assert_eq!(drift.code, ErrorCode::ReplayDrift, "{drift}");
}

// r[verify drift.token-spent]
// r[verify gate.token.refused]
// r[verify release.keeps-spent]
/// A CLI token runs the call once; a spent one, a drifted target and a failed handler each
/// say so, the refused token why.
#[test]
fn a_token_runs_once_on_the_approved_state() {
    let fx = TouchFx::new();
    let token = fx.require("touch", &args(true));
    let sent = with_token(&args(true), &token);
    fx.call("touch", sent.clone()).unwrap();
    assert_eq!(fx.get("a.md").as_deref(), Some("new"));
    let replay = fx.call("touch", sent).unwrap_err();
    assert_eq!(replay.code, ErrorCode::ElicitRequired);
    assert_eq!(replay.details.as_ref().unwrap()["token_rejected"], "spent");
    let bogus = fx
        .call("touch", with_token(&args(true), "not-a-token"))
        .unwrap_err();
    assert_eq!(bogus.details.as_ref().unwrap()["token_rejected"], "invalid");

    let token = fx.require("touch", &args(true));
    fx.put("a.md", "moved");
    let drift = fx
        .call("touch", with_token(&args(true), &token))
        .unwrap_err();
    assert_eq!(drift.code, ErrorCode::ReplayDrift, "{drift}");
    assert_eq!(fx.get("a.md").as_deref(), Some("moved"));

    let failing = json!({"path": "a.md", "text": "x", "fail": true});
    let token = fx.require("touch", &failing);
    let failed = fx.call("touch", with_token(&failing, &token)).unwrap_err();
    assert_eq!(failed.code, ErrorCode::InternalError);
    assert!(
        failed
            .details
            .as_ref()
            .and_then(|d| d.get("token_released"))
            .is_none()
    );
    let again = fx.call("touch", with_token(&failing, &token)).unwrap_err();
    assert_eq!(again.details.as_ref().unwrap()["token_rejected"], "spent");
}

// r[verify release.acl]
// r[verify release.cancel]
/// A token refused by the folder ACL or cancelled before the handler is given back.
#[test]
fn a_token_the_acl_or_a_cancel_stops_is_released() {
    let mut fx = TouchFx::with(Some(deny_write_all()), Vec::new());
    let token = fx.require("touch", &args(true));
    let sent = with_token(&args(true), &token);
    let refused = fx.call("touch", sent.clone()).unwrap_err();
    assert_eq!(refused.code, ErrorCode::AclDenied);
    assert_eq!(refused.details.as_ref().unwrap()["token_released"], true);
    assert_eq!(fx.released(), 1);
    fx.reconfigure(None, Vec::new());
    let prepared = fx.pipeline.prepare(&caller(), "touch", &sent).unwrap();
    let stopped = fx
        .pipeline
        .execute(&prepared, prepared.token_approval(), &cancelled())
        .unwrap_err();
    assert_eq!(stopped.details.as_ref().unwrap()["token_released"], true);
    assert_eq!(fx.released(), 2);
    assert_eq!(fx.get("a.md"), None);
    fx.call("touch", sent).unwrap();
    assert_eq!(fx.get("a.md").as_deref(), Some("new"));
}

/// A `verifyElicit` hook that redeems as the gate does and never gives a token back.
#[derive(Debug)]
struct KeepsSpent;

impl Verifier for KeepsSpent {}

// r[verify release.acl]
/// Under a verifier without release, a token the folder ACL stops stays spent, and the
/// refusal says so.
#[test]
fn a_verifier_without_release_keeps_the_token_spent() {
    let mut fx = TouchFx::with(Some(deny_write_all()), Vec::new());
    fx.pipeline.set_verifier(Arc::new(KeepsSpent));
    assert!(format!("{:?}", fx.pipeline).contains("KeepsSpent"));
    let token = fx.require("touch", &args(true));
    let refused = fx
        .call("touch", with_token(&args(true), &token))
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::AclDenied);
    assert_eq!(refused.details.as_ref().unwrap()["token_released"], false);
    assert_eq!(fx.released(), 0);

    let (built, _other) = two_vaults(&fx);
    let built = built.with_verifier(Arc::new(KeepsSpent));
    assert!(format!("{built:?}").contains("KeepsSpent"));
}

// r[verify dispatch.read-only]
/// A vault served read-only refuses a tool that changes notes before anything runs.
#[test]
fn a_read_only_vault_refuses_a_changing_tool() {
    let read_only = AclConfig {
        read_only: true,
        ..AclConfig::default()
    };
    let fx = TouchFx::with(Some(read_only), Vec::new());
    let refused = fx
        .pipeline
        .prepare(&caller(), "touch", &args(false))
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::AclDenied);
    assert_eq!(refused.details.as_ref().unwrap()["reason"], "read_only");
}

// r[verify tools.summary]
// r[verify tools.summary.readable-only]
/// The summary shows what the call would change only to a caller who may read its target.
#[test]
fn a_summary_shows_the_change_only_when_the_target_is_readable() {
    let fx = TouchFx::new();
    let prepared = fx
        .pipeline
        .prepare(&caller(), "touch", &args(true))
        .unwrap();
    let shown = fx.pipeline.summary(&prepared);
    assert!(!shown.contains("is not shown"), "{shown}");
    let hidden_fx = TouchFx::with(Some(read_only_under("elsewhere/**")), Vec::new());
    let prepared = hidden_fx
        .pipeline
        .prepare(&caller(), "touch", &args(true))
        .unwrap();
    let hidden = hidden_fx.pipeline.summary(&prepared);
    assert!(
        hidden.contains("is not shown") && hidden.contains("a.md"),
        "{hidden}"
    );
}

// r[verify results.concurrent-modification.unreadable]
/// A `concurrent_modification` about a note the caller may not read withholds the hashes
/// the server saw, but not the one the caller sent nor `"absent"`; a readable note's are
/// told as they are.
#[test]
fn a_conflict_on_an_unreadable_note_withholds_the_hashes_seen() {
    let conflict = |prev: Option<&str>| {
        let mut sent = json!({"path": "a.md", "text": "x", "confirm": false, "conflict": true});
        if let Some(prev) = prev {
            sent["prev_hash"] = json!(prev);
        }
        sent
    };
    let readable = TouchFx::new();
    let told = readable
        .call("touch", conflict(Some("h-sent")))
        .unwrap_err();
    assert_eq!(told.code, ErrorCode::ConcurrentModification);
    let details = told.details.as_ref().unwrap();
    assert_eq!(
        (details["expected"].as_str(), details["actual"].as_str()),
        (Some("h-sent"), Some("h-now"))
    );
    assert_eq!(told.message, "changed");

    let unreadable = TouchFx::with(Some(read_only_under("elsewhere/**")), Vec::new());
    let withheld = unreadable
        .call("touch", conflict(Some("h-sent")))
        .unwrap_err();
    let details = withheld.details.as_ref().unwrap();
    assert_eq!(details["expected"], "h-sent");
    assert_eq!(details["actual"], HASH_NOT_SHOWN);
    assert!(!withheld.to_string().contains("h-now"), "{withheld}");
    let absent = unreadable.call("touch", conflict(None)).unwrap_err();
    let details = absent.details.as_ref().unwrap();
    assert_eq!(details["expected"], "absent");
    assert_eq!(details["actual"], HASH_NOT_SHOWN);
    // Any other refusal passes as it is.
    let other = unreadable
        .call(
            "touch",
            json!({"path": "a.md", "text": "x", "confirm": false, "fail": true}),
        )
        .unwrap_err();
    assert_eq!(other.code, ErrorCode::InternalError);
}

// r[verify results.approval-not-obtained]
// r[verify results.elicit-required]
/// The refusals outside the pipeline's own run name the call and what approves it.
#[test]
fn the_refusals_name_the_call() {
    let fx = TouchFx::new();
    let prepared = fx
        .pipeline
        .prepare(&caller(), "touch", &args(true))
        .unwrap();
    let command = fx.pipeline.elicit_command(&prepared);
    let dismissed = fx.pipeline.approval_not_obtained(&prepared);
    assert_eq!(dismissed.code, ErrorCode::ApprovalNotObtained);
    assert!(dismissed.message.contains(&command), "{dismissed}");
    let details = dismissed.details.as_ref().unwrap();
    assert_eq!(details["args_hash"], prepared.args_hash());
    assert_eq!(details["state_fp"], prepared.state_fp().as_str());
    let cancelled = fx.pipeline.cancelled_call(&prepared);
    assert_eq!(cancelled.code, ErrorCode::InternalError);
    assert_eq!(cancelled.details.as_ref().unwrap()["reason"], "cancelled");
    assert!(cancelled.message.contains("touch"), "{cancelled}");
    let required = execute(&fx, &args(true), Approval::None, &CallControl::default()).unwrap_err();
    assert!(required.message.contains(&command), "{required}");
    assert_eq!(
        required.details.as_ref().unwrap()["args_hash"],
        prepared.args_hash()
    );
    assert!(required.raised.is_some());
}
