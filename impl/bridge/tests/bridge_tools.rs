//! The bridge's tools through the whole tool pipeline, against a stand-in Obsidian that
//! speaks the Local REST API's and the companion's routes (tc_bridge::testing): success,
//! the refusals before the gate, each failure after the gate and what it does to the token,
//! the pinned certificate, and the probe.

mod bridge_support;

use std::time::Duration;

use bridge_support::*;
use serde_json::json;
use tc_bridge::testing::{Behavior, FakeObsidian, Tls};
use tc_tools::ErrorCode;
use tc_tools::testing::{Fx, Scenario, with_token};

// r[verify bridge.route.command]
// r[verify drift.residual.opaque-effects]
// r[verify bridge.summary]
#[test]
fn an_allowlisted_command_runs_once_after_approval() {
    let obsidian = FakeObsidian::start(Tls::SelfSigned);
    let fx = fx_for(&obsidian.url, 5_000, enabled(&["editor:toggle-bold"]));
    let refusal = fx.call("execute_command", bold()).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ElicitRequired, "{refusal}");
    // The approval binds on the arguments alone: the empty fingerprint.
    assert_eq!(refusal.details.as_ref().unwrap()["state_fp"], "");
    let summary = &refusal.raised.as_ref().unwrap().summary;
    assert!(summary.contains("editor:toggle-bold"), "{summary}");
    assert!(
        summary.contains("binds on the arguments alone"),
        "{summary}"
    );
    assert!(
        obsidian.commands().is_empty(),
        "nothing runs before approval"
    );
    let token = fx.mint(&refusal);
    let out = fx
        .call("execute_command", with_token(&bold(), &token))
        .unwrap();
    assert_eq!(out["executed"], true);
    assert_eq!(out["command_id"], "editor:toggle-bold");
    assert_eq!(obsidian.commands(), ["editor:toggle-bold"]);
    // The token is spent: the same call again raises a fresh confirmation, sends nothing.
    let again = fx
        .call("execute_command", with_token(&bold(), &token))
        .unwrap_err();
    assert_eq!(again.details.as_ref().unwrap()["token_rejected"], "spent");
    assert_eq!(obsidian.commands().len(), 1);
}

#[test]
fn the_standard_scenario_holds_for_both_gated_tools() {
    let obsidian = FakeObsidian::start(Tls::Plain);
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), tc_bridge::testing::KEY);
    use_settings(
        settings(&obsidian.url, &key, 5_000, enabled(&["app:reload"])),
        dir.path(),
    );
    let command_count = || obsidian.commands().len();
    let quickadd_count = || obsidian.quickadds().len();
    let before = command_count();
    Scenario::<BridgeTools> {
        tool: "execute_command",
        args: json!({"command_id": "app:reload"}),
        setup: &|_| {},
        applied: &|_| assert_eq!(command_count(), before + 1),
        untouched: &|_| assert_eq!(command_count(), before),
        drift: &|_| {},
    }
    .approve_then_replay();
    let before = quickadd_count();
    Scenario::<BridgeTools> {
        tool: "trigger_quickadd",
        args: json!({"action_name": "Daily log", "args": {"mood": "ok"}}),
        setup: &|_| {},
        applied: &|_| assert_eq!(quickadd_count(), before + 1),
        untouched: &|_| assert_eq!(quickadd_count(), before),
        drift: &|_| {},
    }
    .approve_then_replay();
}

// r[verify bridge.command.disabled]
// r[verify bridge.command.allowlist]
#[test]
fn disabled_and_unlisted_commands_are_refused_before_the_gate_and_keep_a_token() {
    let obsidian = FakeObsidian::start(Tls::SelfSigned);
    let mut fx = fx_for(&obsidian.url, 5_000, enabled(&["editor:toggle-bold"]));
    let token = fx.require("execute_command", &bold());
    let requested = fx.requested();
    // Disabled: refused, nothing raised, the token presented is not spent.
    repoint(
        &mut fx,
        &obsidian.url,
        5_000,
        tc_bridge::CommandsConfig {
            enabled: false,
            allowlist: vec!["editor:toggle-bold".into()],
        },
    );
    let refusal = fx
        .call("execute_command", with_token(&bold(), &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::ExecuteCommandDisabled, "{refusal}");
    assert!(refusal.message.contains("enabled = true"), "{refusal}");
    assert!(!refusal.retryable());
    // Enabled, but the id is only a prefix / a near miss of what is listed.
    repoint(
        &mut fx,
        &obsidian.url,
        5_000,
        enabled(&["editor:toggle-bold-x", "editor"]),
    );
    let refusal = fx
        .call("execute_command", with_token(&bold(), &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::CommandNotAllowlisted, "{refusal}");
    assert_eq!(refusal.details.as_ref().unwrap()["allowlist_size"], 2);
    assert_eq!(fx.requested(), requested, "no confirmation asked for");
    assert_eq!(fx.gate.counters().consumed, 0, "no token spent");
    assert!(obsidian.requests().iter().all(|r| !r.starts_with("POST")));
    // Listed again: the same token still works.
    repoint(
        &mut fx,
        &obsidian.url,
        5_000,
        enabled(&["editor:toggle-bold"]),
    );
    fx.call("execute_command", with_token(&bold(), &token))
        .unwrap();
    assert_eq!(obsidian.commands().len(), 1);
}

// r[verify bridge.fail.token-spent]
// r[verify bridge.fail.unreachable]
// r[verify release.keeps-spent]
#[test]
fn an_unreachable_plugin_sends_nothing_and_the_token_stays_spent() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    for scheme in ["http", "https"] {
        let fx = fx_for(
            &format!("{scheme}://127.0.0.1:{port}"),
            2_000,
            enabled(&["editor:toggle-bold"]),
        );
        let token = fx.require("execute_command", &bold());
        let refusal = fx
            .call("execute_command", with_token(&bold(), &token))
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::PluginUnreachable, "{refusal}");
        assert_eq!(refusal.details.as_ref().unwrap()["sent"], false);
        assert!(!refusal.retryable());
        assert_eq!(fx.released(), 0, "a handler error keeps the token spent");
        let again = fx
            .call("execute_command", with_token(&bold(), &token))
            .unwrap_err();
        assert_eq!(again.details.as_ref().unwrap()["token_rejected"], "spent");
    }
}

// r[verify bridge.fail.after-send]
// r[verify bridge.fail.no-second-attempt]
#[test]
fn a_timeout_after_sending_is_operation_timeout_sent_once_and_spent() {
    let obsidian = FakeObsidian::start_with(
        Tls::SelfSigned,
        Behavior {
            delay: Duration::from_millis(1_500),
            ..Behavior::default()
        },
    );
    let fx = fx_for(&obsidian.url, 300, enabled(&["editor:toggle-bold"]));
    let token = fx.require("execute_command", &bold());
    let refusal = fx
        .call("execute_command", with_token(&bold(), &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::OperationTimeout, "{refusal}");
    assert_eq!(refusal.details.as_ref().unwrap()["sent"], true);
    assert!(!refusal.retryable());
    assert!(refusal.message.contains("may have run"), "{refusal}");
    assert!(refusal.message.contains("arguments alone"), "{refusal}");
    assert_eq!(fx.released(), 0);
    // Long after the answer would have come: still exactly one invocation.
    std::thread::sleep(Duration::from_millis(1_600));
    assert_eq!(obsidian.commands(), ["editor:toggle-bold"]);
    let posts = obsidian
        .requests()
        .iter()
        .filter(|r| r.starts_with("POST"))
        .count();
    assert_eq!(posts, 1, "no second attempt by any route");
    let again = fx
        .call("execute_command", with_token(&bold(), &token))
        .unwrap_err();
    assert_eq!(again.details.as_ref().unwrap()["token_rejected"], "spent");
}

// r[verify bridge.tls.plain]
#[test]
fn a_5xx_is_operation_timeout_and_keeps_the_token_spent() {
    let obsidian = FakeObsidian::start_with(
        Tls::Plain,
        Behavior {
            status: Some(500),
            ..Behavior::default()
        },
    );
    let fx = fx_for(&obsidian.url, 5_000, enabled(&["editor:toggle-bold"]));
    let token = fx.require("execute_command", &bold());
    let refusal = fx
        .call("execute_command", with_token(&bold(), &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::OperationTimeout, "{refusal}");
    assert_eq!(refusal.details.as_ref().unwrap()["reason"], "server_error");
    assert_eq!(fx.released(), 0);
    assert_eq!(obsidian.commands().len(), 1);
    // The same through the companion.
    let token = fx.require("trigger_quickadd", &json!({"action_name": "Log"}));
    let refusal = fx
        .call(
            "trigger_quickadd",
            with_token(&json!({"action_name": "Log"}), &token),
        )
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::OperationTimeout, "{refusal}");
    assert_eq!(obsidian.quickadds().len(), 1);
    assert_eq!(fx.released(), 0);
}

// r[verify bridge.tls.pin-first-use]
// r[verify bridge.tls.changed]
// r[verify bridge.tls.pin-checked]
// r[verify bridge.tls.no-key-before-pin]
#[test]
fn the_certificate_is_pinned_on_first_use_and_a_changed_one_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let first = FakeObsidian::start(Tls::SelfSigned);
    let mut fx = fx_for(&first.url, 5_000, enabled(&["editor:toggle-bold"]));
    let token = fx.require("execute_command", &bold());
    fx.call("execute_command", with_token(&bold(), &token))
        .unwrap();
    let pin = fx.cache().join("bridge-pins").join("main.der");
    assert_eq!(
        std::fs::read(&pin).unwrap(),
        first.published_der.clone().unwrap()
    );
    let mode = std::fs::metadata(&pin).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(
        *first.seen().authorized_cert_fetches.lock().unwrap(),
        0,
        "no key before the pin"
    );
    // Another certificate on the same bridge: refused before anything is sent.
    let second = FakeObsidian::start(Tls::SelfSigned);
    repoint(
        &mut fx,
        &second.url,
        5_000,
        enabled(&["editor:toggle-bold"]),
    );
    let token = fx.require("execute_command", &bold());
    let refusal = fx
        .call("execute_command", with_token(&bold(), &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::PluginUnreachable, "{refusal}");
    let details = refusal.details.as_ref().unwrap();
    assert_eq!(details["reason"], "certificate_changed");
    assert_eq!(details["sent"], false);
    assert!(
        refusal.message.contains(&pin.display().to_string()),
        "{refusal}"
    );
    assert!(refusal.message.contains("delete"), "{refusal}");
    assert!(
        second.requests().is_empty(),
        "nothing reached the new server: {:?}",
        second.requests()
    );
    // Re-pinning, as the message says: delete the pin file.
    std::fs::remove_file(&pin).unwrap();
    let token = fx.require("execute_command", &bold());
    fx.call("execute_command", with_token(&bold(), &token))
        .unwrap();
    assert_eq!(second.commands().len(), 1);
    assert_eq!(
        std::fs::read(&pin).unwrap(),
        second.published_der.clone().unwrap()
    );
}

#[test]
fn a_plugin_that_serves_an_authority_is_trusted_through_it() {
    let obsidian = FakeObsidian::start(Tls::Authority);
    let fx = fx_for(&obsidian.url, 5_000, enabled(&["editor:toggle-bold"]));
    let token = fx.require("execute_command", &bold());
    fx.call("execute_command", with_token(&bold(), &token))
        .unwrap();
    assert_eq!(obsidian.commands().len(), 1);
    // What is pinned is the published authority, not the server certificate.
    let pin = std::fs::read(fx.cache().join("bridge-pins").join("main.der")).unwrap();
    assert_eq!(pin, obsidian.published_der.clone().unwrap());
}

// r[verify bridge.key.file]
#[test]
fn a_bad_key_file_is_refused_before_the_gate_and_a_wrong_key_after_it() {
    use std::os::unix::fs::PermissionsExt;
    let obsidian = FakeObsidian::start(Tls::Plain);
    let fx = fx_for(&obsidian.url, 5_000, enabled(&["editor:toggle-bold"]));
    let key = fx.dir.path().join("rest-api.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let refusal = fx.call("execute_command", bold()).unwrap_err();
    assert_eq!(refusal.code, ErrorCode::PluginUnreachable, "{refusal}");
    assert!(refusal.message.contains("chmod 600"), "{refusal}");
    assert_eq!(fx.requested(), 0);
    assert!(obsidian.requests().is_empty());
    // A private file holding the wrong key: the plugin refuses it and nothing runs.
    key_file(fx.dir.path(), "not-the-key");
    let token = fx.require("execute_command", &bold());
    let refusal = fx
        .call("execute_command", with_token(&bold(), &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::PluginUnreachable, "{refusal}");
    assert_eq!(refusal.details.as_ref().unwrap()["reason"], "unauthorized");
    assert!(obsidian.commands().is_empty());
}

// r[verify bridge.fail.refused]
#[test]
fn an_unknown_command_id_is_reported_as_nothing_ran() {
    let obsidian = FakeObsidian::start(Tls::Plain);
    let fx = fx_for(&obsidian.url, 5_000, enabled(&["no:such-command"]));
    let args = json!({"command_id": "no:such-command"});
    let token = fx.require("execute_command", &args);
    let refusal = fx
        .call("execute_command", with_token(&args, &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::InvalidInput, "{refusal}");
    assert_eq!(
        refusal.details.as_ref().unwrap()["reason"],
        "command_not_found"
    );
    // Percent-encoded on the wire, decoded by the plugin's router.
    assert!(
        obsidian
            .requests()
            .contains(&"POST /commands/no:such-command/".to_owned())
    );
}

// r[verify bridge.route.quickadd]
// r[verify bridge.fail.companion-timeout]
#[test]
fn quickadd_choices_run_through_the_companion_and_its_answers_are_mapped() {
    let obsidian = FakeObsidian::start(Tls::SelfSigned);
    let fx = fx_for(&obsidian.url, 5_000, enabled(&[]));
    let args = json!({"action_name": "Daily log", "args": {"mood": "fine", "api_key": "sk-abcdefghijklmnopqrstuvwx"}});
    let refusal = fx.call("trigger_quickadd", args.clone()).unwrap_err();
    let summary = refusal.raised.as_ref().unwrap().summary.clone();
    assert!(
        summary.contains("Daily log") && summary.contains("mood"),
        "{summary}"
    );
    assert!(
        !summary.contains("abcdefghijklmnopqrstuvwx"),
        "redacted: {summary}"
    );
    let token = fx.mint(&refusal);
    let out = fx
        .call("trigger_quickadd", with_token(&args, &token))
        .unwrap();
    assert_eq!(out["triggered"], true);
    assert_eq!(out["result"]["choice"], "Daily log");
    let sent = &obsidian.quickadds()[0];
    assert_eq!(sent["choice"], "Daily log");
    assert_eq!(sent["variables"]["mood"], "fine");
    assert_eq!(
        sent["timeoutMs"], 4_000,
        "the companion gives up before the client"
    );

    let cases = [
        (
            200,
            json!({"ok": false, "code": "operation_timeout", "message": "QuickAdd did not finish"}),
            ErrorCode::OperationTimeout,
        ),
        (
            504,
            json!({"ok": false, "code": "operation_timeout", "message": "QuickAdd did not finish"}),
            ErrorCode::OperationTimeout,
        ),
        (
            404,
            json!({"ok": false, "code": "choice_not_found", "message": "no choice"}),
            ErrorCode::InvalidInput,
        ),
        (
            503,
            json!({"ok": false, "code": "quickadd_unavailable", "message": "QuickAdd is not enabled"}),
            ErrorCode::OperationTimeout,
        ),
        (
            424,
            json!({"ok": false, "code": "quickadd_unavailable", "message": "QuickAdd is not enabled"}),
            ErrorCode::PluginUnreachable,
        ),
        (
            500,
            json!({"ok": false, "code": "choice_failed", "message": "boom"}),
            ErrorCode::OperationTimeout,
        ),
        (
            200,
            json!({"ok": false, "code": "choice_failed", "message": "boom"}),
            ErrorCode::InternalError,
        ),
    ];
    for (status, answer, code) in cases {
        obsidian.behave(|b| b.quickadd_answer = Some((status, answer.clone())));
        let token = fx.require("trigger_quickadd", &args);
        let refusal = fx
            .call("trigger_quickadd", with_token(&args, &token))
            .unwrap_err();
        assert_eq!(refusal.code, code, "{status} {answer}: {refusal}");
        assert_eq!(fx.released(), 0);
    }
    // No companion installed: the Local REST API's own 404.
    obsidian.behave(|b| b.companion = false);
    let token = fx.require("trigger_quickadd", &args);
    let refusal = fx
        .call("trigger_quickadd", with_token(&args, &token))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::PluginUnreachable, "{refusal}");
    assert_eq!(
        refusal.details.as_ref().unwrap()["reason"],
        "companion_missing"
    );
}

// r[verify bridge.not-configured]
// r[verify bridge.status.tool]
// r[verify bridge.probe.report]
#[test]
fn bridge_status_reports_what_is_reachable() {
    let obsidian = FakeObsidian::start(Tls::SelfSigned);
    let fx = fx_for(&obsidian.url, 5_000, enabled(&["a", "b"]));
    let report = fx.call("bridge_status", json!({})).unwrap();
    assert_eq!(report["configured"], true);
    assert_eq!(report["rest_api"]["reachable"], true);
    assert_eq!(report["rest_api"]["authenticated"], true);
    assert_eq!(report["rest_api"]["version"], "3.2.0");
    assert_eq!(report["companion"]["version"], "0.1.0");
    assert_eq!(
        report["companion"]["capabilities"],
        json!(["probe", "quickadd"])
    );
    assert_eq!(report["commands_enabled"], true);
    assert_eq!(report["allowlisted_commands"], 2);
    assert_eq!(
        report["certificate"]["sha256"],
        tc_bridge::tls::cert_sha256(&obsidian.published_der.clone().unwrap())
    );
    assert_eq!(report["problems"], json!([]), "{report}");
    assert!(obsidian.commands().is_empty(), "the probe runs nothing");
    // Without a companion, and then with nothing listening.
    obsidian.behave(|b| b.companion = false);
    let report = fx.call("bridge_status", json!({})).unwrap();
    assert_eq!(report["companion"]["reachable"], false);
    assert!(
        report["problems"][0]
            .as_str()
            .unwrap()
            .contains("companion"),
        "{report}"
    );
    drop(obsidian);
    let report = fx.call("bridge_status", json!({})).unwrap();
    assert_eq!(report["rest_api"]["reachable"], false);
    // Not configured at all.
    let plain = Fx::<BridgeTools>::new();
    let report = plain.call("bridge_status", json!({})).unwrap();
    assert_eq!(report["configured"], false);
    let refusal = plain
        .call("trigger_quickadd", json!({"action_name": "x"}))
        .unwrap_err();
    assert_eq!(refusal.code, ErrorCode::PluginUnreachable);
    assert_eq!(plain.requested(), 0);
}

// r[verify bridge.probe.startup]
#[test]
fn register_returns_before_the_start_up_probe_reaches_obsidian() {
    let obsidian = FakeObsidian::start_with(
        Tls::Plain,
        Behavior {
            delay: Duration::from_millis(0),
            ..Behavior::default()
        },
    );
    // A listener that accepts but never answers: a probe done in line would hang here.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), tc_bridge::testing::KEY);
    let setup = tc_tools::SubsystemSetup {
        cache_dir: dir.path(),
        clock: std::sync::Arc::new(tc_gate::clock::SystemClock),
    };
    let started = std::time::Instant::now();
    let mut registry = tc_tools::Registry::new();
    let mut silent_settings = settings(
        &format!("http://{}", silent.local_addr().unwrap()),
        &key,
        10_000,
        enabled(&[]),
    );
    silent_settings.vault = "silent".into();
    tc_bridge::register(
        &mut registry,
        &setup,
        [
            silent_settings,
            settings(&obsidian.url, &key, 5_000, enabled(&[])),
        ],
    )
    .unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    assert!(registry.get("execute_command").is_some());
    // The probe does reach the other vault's Obsidian, in the background.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !obsidian.requests().contains(&"GET /".to_owned()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the start-up probe never came"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

// r[verify bridge.config.checked]
#[test]
fn a_bad_bridge_configuration_is_refused_at_start_up_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let setup = tc_tools::SubsystemSetup {
        cache_dir: dir.path(),
        clock: std::sync::Arc::new(tc_gate::clock::SystemClock),
    };
    let key = key_file(dir.path(), "k");
    for (url, key, timeout, names) in [
        ("ftp://127.0.0.1:1", key.clone(), 5_000, "bridge.url"),
        (
            "https://127.0.0.1:1",
            "relative.key".into(),
            5_000,
            "bridge.apiKeyFile",
        ),
        ("https://127.0.0.1:1", key.clone(), 0, "bridge.timeoutMs"),
    ] {
        let error =
            tc_bridge::bridges(&setup, [settings(url, &key, timeout, enabled(&[]))]).unwrap_err();
        assert!(error.to_string().contains(names), "{error}");
    }
}

// r[verify bridge.config.sections]
#[test]
fn the_configuration_sections_default_and_deny_unknown_keys() {
    let bridge: tc_bridge::BridgeConfig =
        toml::from_str("url = \"https://127.0.0.1:27124\"\napiKeyFile = \"/k\"").unwrap();
    assert_eq!(bridge.timeout_ms, 5_000);
    let commands: tc_bridge::CommandsConfig = toml::from_str("").unwrap();
    assert!(!commands.enabled && commands.allowlist.is_empty());
    let error = toml::from_str::<tc_bridge::CommandsConfig>("enabled = true\nallowList = []")
        .unwrap_err()
        .to_string();
    assert!(error.contains("allowList"), "{error}");
    let error = toml::from_str::<tc_bridge::BridgeConfig>(
        "url = \"http://h:1\"\napiKeyFile = \"/k\"\napikey = \"x\"",
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("apikey"), "{error}");
}
