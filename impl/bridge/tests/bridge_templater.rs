//! `execute_template` through the whole tool pipeline, against the stand-in Obsidian
//! (tc_bridge::testing), a local server speaking the companion's Templater route: it plays
//! Templater by writing the template's text to the target in the fixture's vault.

mod bridge_support;

use bridge_support::*;
use serde_json::json;
use tc_bridge::testing::{FakeObsidian, Tls};
use tc_tools::ErrorCode;
use tc_tools::testing::{Fx, Scenario, with_token};
use tc_vault::acl::AclConfig;

/// An edit made between the request and the approval.
type Change = dyn Fn(&Fx<BridgeTools>);

fn run_args() -> serde_json::Value {
    json!({"template": "Templates/Daily.md", "target_path": "daily/today.md"})
}

/// A fixture with a template in its vault, its bridge pointed at a stand-in that writes
/// into that vault.
fn templater_fx(obsidian: &FakeObsidian) -> Fx<BridgeTools> {
    let fx = fx_for(&obsidian.url, 5_000, enabled(&[]));
    fx.put(
        "Templates/Daily.md",
        "# <% tp.date.now() %>\n<%* tR += 'x' %>\n",
    );
    let root = fx.root.clone();
    obsidian.behave(|b| b.vault = Some(root));
    fx
}

// r[verify bridge.templater.confirm]
// r[verify bridge.templater.summary]
// r[verify bridge.route.templater]
// r[verify drift.residual.templater]
#[test]
fn a_template_runs_once_after_approval_and_writes_the_target() {
    let obsidian = FakeObsidian::start(Tls::SelfSigned);
    let fx = templater_fx(&obsidian);
    let refusal = fx.call("execute_template", run_args()).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ElicitRequired, "{refusal}");
    // Bound to content: the fingerprint of the template and the (missing) target.
    assert_ne!(refusal.details.as_ref().unwrap()["state_fp"], "");
    let summary = &refusal.raised.as_ref().unwrap().summary;
    for needle in [
        "Templates/Daily.md",
        "create daily/today.md",
        "tp.date.now()",
        "JavaScript does inside Obsidian",
    ] {
        assert!(summary.contains(needle), "{needle}: {summary}");
    }
    assert!(
        obsidian.templater_runs().is_empty(),
        "nothing runs before approval"
    );
    let token = fx.mint(&refusal);
    let out = fx
        .call("execute_template", with_token(&run_args(), &token))
        .unwrap();
    assert_eq!(out["created"], true);
    assert_eq!(out["target_path"], "daily/today.md");
    let runs = obsidian.templater_runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["template"], "Templates/Daily.md");
    assert_eq!(runs[0]["target"], "daily/today.md");
    assert_eq!(runs[0]["timeoutMs"], 4_000);
    assert_eq!(
        fx.get("daily/today.md").unwrap(),
        "# <% tp.date.now() %>\n<%* tR += 'x' %>\n"
    );
    // Over an existing note it still asks, and says it overwrites.
    let refusal = fx.call("execute_template", run_args()).unwrap_err();
    let summary = &refusal.raised.as_ref().unwrap().summary;
    assert!(summary.contains("overwrite daily/today.md"), "{summary}");
}

#[test]
fn the_standard_scenario_holds() {
    let obsidian = FakeObsidian::start(Tls::Plain);
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), tc_bridge::testing::KEY);
    use_settings(
        settings(&obsidian.url, &key, 5_000, enabled(&[])),
        dir.path(),
    );
    let runs = || obsidian.templater_runs().len();
    let before = runs();
    Scenario::<BridgeTools> {
        tool: "execute_template",
        args: run_args(),
        setup: &|fx| fx.put("Templates/Daily.md", "hello\n"),
        applied: &|_| assert_eq!(runs(), before + 1),
        untouched: &|_| assert_eq!(runs(), before),
        drift: &|fx| fx.put("Templates/Daily.md", "hello, changed\n"),
    }
    .approve_then_replay();
}

// r[verify drift.bind.execute-template]
#[test]
fn an_edit_of_the_template_or_the_target_before_approval_is_drift() {
    let obsidian = FakeObsidian::start(Tls::SelfSigned);
    let fx = templater_fx(&obsidian);
    let template_edited = |fx: &Fx<BridgeTools>| {
        fx.put("Templates/Daily.md", "<%* app.vault.delete() %>\n");
    };
    let target_appeared = |fx: &Fx<BridgeTools>| fx.put("daily/today.md", "appeared\n");
    let changes: [&Change; 2] = [&template_edited, &target_appeared];
    for change in changes {
        if fx.get("daily/today.md").is_some() {
            fx.remove("daily/today.md");
        }
        fx.put("Templates/Daily.md", "plain\n");
        let token = fx.require("execute_template", &run_args());
        change(&fx);
        let refusal = fx
            .call("execute_template", with_token(&run_args(), &token))
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ReplayDrift, "{refusal}");
        assert!(obsidian.templater_runs().is_empty(), "nothing was sent");
    }
}

// r[verify bridge.templater.before-gate]
#[test]
fn what_can_be_judged_here_is_refused_before_the_gate_sending_nothing() {
    let obsidian = FakeObsidian::start(Tls::SelfSigned);
    let fx = templater_fx(&obsidian);
    let cases = [
        (
            json!({"template": "Templates/None.md", "target_path": "a.md"}),
            ErrorCode::TemplateNotFound,
        ),
        (
            json!({"template": "Templates/Daily.md", "target_path": ".obsidian/x.md"}),
            ErrorCode::PathInvalid,
        ),
        (
            json!({"template": "../x.md", "target_path": "a.md"}),
            ErrorCode::PathInvalid,
        ),
    ];
    for (args, code) in cases {
        let err = fx.call("execute_template", args.clone()).unwrap_err();
        // A hidden folder may be refused as a path or by the ACL.
        let hidden = code == ErrorCode::PathInvalid && err.code == ErrorCode::AclDenied;
        assert!(err.code == code || hidden, "{args}: {err}");
        assert!(err.raised.is_none(), "no confirmation raised: {args}");
    }
    // The folder ACL: a target the caller may not write.
    let acl = AclConfig {
        write_paths: Some(vec!["notes/**".to_owned()]),
        ..AclConfig::default()
    };
    let keys = tempfile::tempdir().unwrap();
    let key = key_file(keys.path(), tc_bridge::testing::KEY);
    use_settings(
        settings(&obsidian.url, &key, 5_000, enabled(&[])),
        keys.path(),
    );
    let denied = Fx::<BridgeTools>::with(Some(acl), Vec::new());
    denied.put("Templates/Daily.md", "x\n");
    let err = denied.call("execute_template", run_args()).unwrap_err();
    assert_eq!(err.code, ErrorCode::AclDenied, "{err}");
    // No bridge configured.
    let bare = fx_unconfigured();
    bare.put("Templates/Daily.md", "x\n");
    let err = bare.call("execute_template", run_args()).unwrap_err();
    assert_eq!(err.code, ErrorCode::PluginUnreachable, "{err}");
    assert!(obsidian.templater_runs().is_empty());
}

#[test]
fn the_companion_s_answers_are_mapped_and_keep_the_token_spent() {
    let obsidian = FakeObsidian::start(Tls::SelfSigned);
    let fx = templater_fx(&obsidian);
    let cases = [
        (
            504,
            json!({"ok": false, "code": "operation_timeout", "message": "slow"}),
            ErrorCode::OperationTimeout,
        ),
        (
            424,
            json!({"ok": false, "code": "templater_unavailable", "message": "off"}),
            ErrorCode::PluginUnreachable,
        ),
        (
            404,
            json!({"ok": false, "code": "template_not_found", "message": "gone"}),
            ErrorCode::TemplateNotFound,
        ),
        (
            400,
            json!({"ok": false, "code": "invalid_request", "message": "bad"}),
            ErrorCode::InvalidInput,
        ),
        (
            200,
            json!({"ok": false, "code": "template_failed", "message": "boom"}),
            ErrorCode::InternalError,
        ),
        (
            500,
            json!({"ok": false, "code": "template_failed", "message": "boom"}),
            ErrorCode::OperationTimeout,
        ),
    ];
    for (status, answer, code) in cases {
        obsidian.behave(|b| b.templater_answer = Some((status, answer.clone())));
        let token = fx.require("execute_template", &run_args());
        let refusal = fx
            .call("execute_template", with_token(&run_args(), &token))
            .unwrap_err();
        assert_eq!(refusal.code, code, "{status} {answer}: {refusal}");
        assert_eq!(fx.released(), 0);
    }
    obsidian.behave(|b| {
        b.templater_answer = None;
        b.companion = false;
    });
    let token = fx.require("execute_template", &run_args());
    let refusal = fx
        .call("execute_template", with_token(&run_args(), &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::PluginUnreachable, "{refusal}");
    assert_eq!(
        refusal.details.as_ref().unwrap()["reason"],
        "companion_missing"
    );
}

/// A fixture whose vault has no bridge section.
fn fx_unconfigured() -> Fx<BridgeTools> {
    let mut fx = Fx::<BridgeTools>::new();
    let cache = fx.cache();
    fx.use_registry(registry(
        tc_bridge::VaultSettings {
            vault: "main".into(),
            bridge: None,
            commands: tc_bridge::CommandsConfig::default(),
        },
        &cache,
    ));
    fx
}
