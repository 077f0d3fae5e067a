//! The life of a confirmation through tc-gate: raise, mint, redeem, drift, release, events
//! and the requestState admission, clause by clause (spec/gate.md, release.md, drift.md,
//! events.md, state.md).

mod common;

use std::cell::Cell;
use std::collections::BTreeSet;

use common::*;
use tc_gate::clock::{Entropy, SeededEntropy};
use tc_gate::{
    AdmitError, BindingMismatch, BuiltinVerifier, CallBinding, ConfirmationTargets, Event,
    EventName, GateConfig, InHandlerNoEffect, MintError, NoEffect, NonTokenRoute, RedeemError,
    RefusalReason, RegistryError, ReleaseOutcome, ReleaseReason, ReleaseTicket, RequestStateMode,
    SpentReason, StateFp, StoreError, Verifier, caller_hash, fingerprint_custom,
    fingerprint_targets, validate_gated_tool,
};

fn events_named(fixture: &Fixture, name: EventName) -> Vec<Event> {
    fixture
        .gate
        .events(0, 10_000)
        .expect("events")
        .into_iter()
        .filter(|e| e.name == name)
        .collect()
}

/// Raises `call` at `fp` and mints a token for it, returning the token text.
fn raise_and_issue(fixture: &Fixture, call: &CallBinding<'_>, fp: &StateFp) -> String {
    fixture.gate.raise(call, fp).expect("raise");
    let issued = fixture.gate.issue(call, None).expect("issue");
    issued.token.expose().to_owned()
}

#[derive(Debug)]
struct NoReleaseVerifier;
impl Verifier for NoReleaseVerifier {}

#[derive(Debug)]
struct ReleasingVerifier;
impl Verifier for ReleasingVerifier {
    fn release(&self, ticket: ReleaseTicket) -> Result<ReleaseOutcome, StoreError> {
        ticket.restore()
    }
}

// ---------------------------------------------------------------------------------------
// Raised requests

// r[verify gate.raise.record]
// r[verify events.requested]
// r[verify events.fields]
#[test]
fn a_raise_records_the_call_its_state_and_time_with_an_event() {
    let f = fixture();
    let fp = fp_of(Some("h1"));
    let raised = f.gate.raise(&DELETE, &fp).expect("raise");
    assert_eq!(raised.raised_at_ms, START_MS);
    assert_eq!(raised.expires_at_ms, START_MS + TTL_MS);
    let retained = f
        .gate
        .raised_request(DELETE.vault, DELETE.args_hash, DELETE.caller)
        .expect("read")
        .expect("retained");
    assert_eq!(retained.call.tool, "delete_note");
    assert_eq!(retained.state_fp, fp);
    assert_eq!(retained.raised_at_ms, START_MS);

    let requested = events_named(&f, EventName::Requested);
    assert_eq!(requested.len(), 1);
    let event = &requested[0];
    assert_eq!(event.at_ms, START_MS);
    assert_eq!(event.vault.as_deref(), Some("main"));
    assert_eq!(event.tool.as_deref(), Some("delete_note"));
    assert_eq!(event.args_hash.as_deref(), Some(DELETE.args_hash));
    assert_eq!(
        event.caller_hash.as_deref(),
        Some(caller_hash("stdio").as_str())
    );
    assert_eq!(event.detail["state_fp"], fp.as_str());
    assert_eq!(f.gate.counters().requested, 1);
}

// r[verify gate.raise.supersede]
// r[verify cli.elicit.state-fp]
#[test]
fn a_newer_raise_supersedes_and_only_the_retained_fingerprint_mints() {
    let f = fixture();
    let old = fp_of(Some("h1"));
    let new = fp_of(Some("h2"));
    assert!(!f.gate.raise(&DELETE, &old).expect("raise").superseded_older);
    f.clock.advance_ms(1_000);
    assert!(f.gate.raise(&DELETE, &new).expect("raise").superseded_older);
    // The same fingerprint raised again supersedes nothing (a cargo-mutants survivor).
    assert!(!f.gate.raise(&DELETE, &new).expect("raise").superseded_older);

    let stale = f.gate.issue(&DELETE, Some(old.as_str()));
    assert!(matches!(stale, Err(MintError::StaleStateFp)), "{stale:?}");
    let never = fp_of(Some("never recorded"));
    let unknown = f.gate.issue(&DELETE, Some(never.as_str()));
    assert!(
        matches!(unknown, Err(MintError::UnknownStateFp)),
        "{unknown:?}"
    );
    let malformed = f.gate.issue(&DELETE, Some("not-a-fingerprint"));
    assert!(matches!(malformed, Err(MintError::InvalidStateFp(_))));
    assert_eq!(f.gate.counters().minted, 0, "refused mints mint nothing");

    let issued = f.gate.issue(&DELETE, Some(new.as_str())).expect("own fp");
    assert_eq!(issued.state_fp.as_ref(), Some(&new));
    f.gate.raise(&DELETE, &new).expect("the blocked call again");
    let without_flag = f.gate.issue(&DELETE, None).expect("no flag");
    assert_eq!(
        without_flag.state_fp.as_ref(),
        Some(&new),
        "bound to the retained state"
    );
}

#[test]
fn a_fingerprint_raised_again_is_current_not_stale() {
    let f = fixture();
    let a = fp_of(Some("a"));
    let b = fp_of(Some("b"));
    f.gate.raise(&DELETE, &a).expect("raise a");
    f.gate.raise(&DELETE, &b).expect("raise b");
    f.gate.raise(&DELETE, &a).expect("raise a again");
    assert!(matches!(
        f.gate.issue(&DELETE, Some(b.as_str())),
        Err(MintError::StaleStateFp)
    ));
    f.gate
        .issue(&DELETE, Some(a.as_str()))
        .expect("a is current");
}

// r[verify cli.elicit.requires-raise]
#[test]
fn no_mint_without_a_raised_request_for_that_vault_hash_and_caller() {
    let f = fixture();
    let refused = f.gate.issue(&DELETE, None);
    assert!(matches!(refused, Err(MintError::NoRaisedRequest { .. })));
    let message = refused.expect_err("refused").to_string();
    assert!(message.contains("run the blocked call again"), "{message}");
    assert!(message.contains("--caller"), "{message}");

    f.gate.raise(&DELETE, &StateFp::none()).expect("raise");
    for other in [
        with_caller(DELETE, "alice"),
        with_vault(DELETE, "other"),
        with_args(DELETE, "ffffffffffffffffffffffffffffffff"),
    ] {
        assert!(
            matches!(
                f.gate.issue(&other, None),
                Err(MintError::NoRaisedRequest { .. })
            ),
            "{other:?}"
        );
    }
    let wrong_tool = CallBinding {
        tool: "move_note",
        ..DELETE
    };
    assert!(matches!(
        f.gate.issue(&wrong_tool, None),
        Err(MintError::ToolMismatch { raised_tool, .. }) if raised_tool == "delete_note"
    ));
    f.gate.issue(&DELETE, None).expect("the raised call mints");
}

// r[verify cli.elicit.one-mint-per-raise]
#[test]
fn a_raised_request_backs_one_token_for_none_tools_too() {
    let f = fixture();
    let none_tool = CallBinding {
        tool: "execute_command",
        args_hash: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        ..DELETE
    };
    f.gate.raise(&none_tool, &StateFp::none()).expect("raise");
    f.gate.issue(&none_tool, None).expect("the first mint");
    let second = f.gate.issue(&none_tool, None);
    let message = match second {
        Err(error @ MintError::NoRaisedRequest { .. }) => error.to_string(),
        other => panic!("a second mint from one raise: {other:?}"),
    };
    assert!(message.contains("run the blocked call again"), "{message}");
    assert!(
        f.gate
            .raised_request(none_tool.vault, none_tool.args_hash, none_tool.caller)
            .expect("read")
            .is_none(),
        "the mint consumed the request"
    );
    assert!(f.gate.pending(None, None, 100).expect("pending").is_empty());
    assert_eq!(f.gate.counters().minted, 1);
    // Running the blocked call again raises afresh, which backs the next token.
    f.gate
        .raise(&none_tool, &StateFp::none())
        .expect("raise again");
    f.gate.issue(&none_tool, None).expect("the next mint");
}

// r[verify cli.elicit.ttl-cap]
#[test]
fn a_mint_honours_the_ttl_the_server_recorded_not_the_clis_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("cache.db");
    let clock = tc_gate::clock::ManualClock::new(START_MS);
    // The server raises with its TTL (TTL_SECONDS) ...
    let server = on_file_manual(&db, &clock, 1);
    server.raise(&DELETE, &StateFp::none()).expect("raise");
    // ... and the operator's CLI runs with a configuration that says an hour.
    let cli = tc_gate::Gate::new(
        tc_gate::Store::open(&db).expect("open"),
        std::sync::Arc::new(clock.clone()),
        std::sync::Arc::new(SeededEntropy::new(2)),
        GateConfig::new(3_600).expect("ttl"),
    );
    clock.advance_ms(1_000);
    let issued = cli.issue(&DELETE, None).expect("mint");
    assert_eq!(issued.expires_at_ms, START_MS + 1_000 + TTL_MS);
    clock.advance_ms(TTL_MS);
    assert!(matches!(
        server.redeem(issued.token.expose(), &DELETE, StateFp::none),
        Err(RedeemError::Expired)
    ));
}

// r[verify gate.raise.expiry]
// r[verify gate.raise.sweep]
#[test]
fn expired_raises_back_no_mint_and_are_swept_with_their_superseded_fingerprints() {
    let f = fixture();
    let a = fp_of(Some("a"));
    f.gate.raise(&DELETE, &a).expect("raise");
    f.gate.raise(&DELETE, &fp_of(Some("b"))).expect("raise");
    f.clock.advance_ms(TTL_MS - 1);
    assert!(
        f.gate
            .raised_request("main", DELETE.args_hash, "stdio")
            .expect("read")
            .is_some()
    );
    assert_eq!(f.gate.sweep().expect("sweep").raised_requests, 0);
    f.clock.advance_ms(1);
    assert!(
        f.gate
            .raised_request("main", DELETE.args_hash, "stdio")
            .expect("read")
            .is_none()
    );
    assert!(matches!(
        f.gate.issue(&DELETE, None),
        Err(MintError::NoRaisedRequest { .. })
    ));
    assert_eq!(f.gate.sweep().expect("sweep").raised_requests, 1);
    // The superseded fingerprint went with it: a fresh raise does not call `a` stale.
    f.gate.raise(&DELETE, &fp_of(Some("c"))).expect("raise");
    assert!(matches!(
        f.gate.issue(&DELETE, Some(a.as_str())),
        Err(MintError::UnknownStateFp)
    ));
}

// ---------------------------------------------------------------------------------------
// Tokens

// r[verify gate.token.random]
#[test]
fn a_token_is_128_bits_of_the_entropy_source_as_32_lowercase_hex() {
    let f = fixture();
    f.gate.raise(&DELETE, &StateFp::none()).expect("raise");
    let first = f.gate.issue(&DELETE, None).expect("issue");
    f.gate
        .raise(&DELETE, &StateFp::none())
        .expect("raise again");
    let second = f.gate.issue(&DELETE, None).expect("issue");
    let mut expected = [0u8; 16];
    SeededEntropy::new(7).fill(&mut expected);
    assert_eq!(first.token.expose(), hex::encode(expected));
    let text = second.token.expose();
    assert_eq!(text.len(), 32);
    assert!(
        text.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
    assert_ne!(first.token, second.token);
}

// r[verify gate.token.bound]
// r[verify gate.token.check-before-consume]
#[test]
fn a_token_is_refused_for_another_vault_hash_or_caller_without_being_spent() {
    let f = fixture();
    let token = raise_and_issue(&f, &DELETE, &StateFp::none());
    let cases = [
        (with_vault(DELETE, "other"), BindingMismatch::Vault),
        (
            with_args(DELETE, "ffffffffffffffffffffffffffffffff"),
            BindingMismatch::ArgsHash,
        ),
        (with_caller(DELETE, "alice"), BindingMismatch::Caller),
    ];
    for (call, mismatch) in cases {
        let fingerprinted = Cell::new(false);
        let refused = f.gate.redeem(&token, &call, || {
            fingerprinted.set(true);
            StateFp::none()
        });
        assert!(
            matches!(refused, Err(RedeemError::Mismatch(m)) if m == mismatch),
            "{refused:?}"
        );
        assert!(
            !fingerprinted.get(),
            "drift is only checked after the consume"
        );
    }
    assert!(matches!(
        f.gate.redeem("not a token", &DELETE, StateFp::none),
        Err(RedeemError::UnknownToken)
    ));
    assert!(matches!(
        f.gate
            .redeem("ffffffffffffffffffffffffffffffff", &DELETE, StateFp::none),
        Err(RedeemError::UnknownToken)
    ));
    // None of the refusals spent it.
    let redemption = f
        .gate
        .redeem(&token, &DELETE, StateFp::none)
        .expect("still unspent");
    redemption.keep_spent(SpentReason::Completed);
    let counters = f.gate.counters();
    assert_eq!(counters.refused_for(RefusalReason::WrongVault), 1);
    assert_eq!(counters.refused_for(RefusalReason::WrongArgs), 1);
    assert_eq!(counters.refused_for(RefusalReason::WrongCaller), 1);
    assert_eq!(counters.refused_for(RefusalReason::UnknownToken), 2);
}

// r[verify gate.token.ttl]
// r[verify gate.token.expired]
#[test]
fn a_token_expires_after_the_ttl_and_is_refused_unspent() {
    let f = in_memory(GateConfig::new(60).expect("ttl"));
    f.gate.raise(&DELETE, &StateFp::none()).expect("raise");
    f.clock.advance_ms(10_000);
    let issued = f.gate.issue(&DELETE, None).expect("issue");
    assert_eq!(
        issued.expires_at_ms,
        START_MS + 10_000 + 60_000,
        "mint time + TTL"
    );
    let token = issued.token.expose().to_owned();
    f.clock.advance_ms(60_000);
    assert!(matches!(
        f.gate.redeem(&token, &DELETE, StateFp::none),
        Err(RedeemError::Expired)
    ));
    f.clock.advance_ms(-1);
    f.gate
        .redeem(&token, &DELETE, StateFp::none)
        .expect("the expired refusal did not spend it; one ms earlier it is valid")
        .keep_spent(SpentReason::Completed);
}

#[test]
fn a_non_positive_ttl_is_refused() {
    assert!(GateConfig::new(0).is_err());
    assert!(GateConfig::new(-5).is_err());
    assert_eq!(GateConfig::default().ttl_ms(), 300_000);
}

// r[verify gate.token.single-use]
#[test]
fn a_token_runs_its_call_once() {
    let f = fixture();
    let token = raise_and_issue(&f, &DELETE, &StateFp::none());
    let run = f
        .gate
        .redeem(&token, &DELETE, StateFp::none)
        .expect("first")
        .enter_handler()
        .expect("enter");
    run.keep_spent(SpentReason::Completed);
    assert!(matches!(
        f.gate.redeem(&token, &DELETE, StateFp::none),
        Err(RedeemError::AlreadySpent)
    ));
    assert_eq!(
        f.gate.counters().refused_for(RefusalReason::AlreadySpent),
        1
    );
}

// r[verify gate.token.state-bound]
#[test]
fn a_cli_token_carries_the_raised_state_including_the_empty_one() {
    let f = fixture();
    let fp = fp_of(Some("h"));
    f.gate.raise(&DELETE, &fp).expect("raise");
    let issued = f.gate.issue(&DELETE, None).expect("issue");
    assert_eq!(issued.state_fp, Some(fp.clone()));
    f.gate
        .redeem(issued.token.expose(), &DELETE, || fp.clone())
        .expect("same state")
        .keep_spent(SpentReason::Completed);

    let none_tool = CallBinding {
        tool: "execute_command",
        args_hash: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        ..DELETE
    };
    f.gate.raise(&none_tool, &StateFp::none()).expect("raise");
    let issued = f
        .gate
        .issue(&none_tool, Some(""))
        .expect("issue for a none tool");
    assert_eq!(issued.state_fp, Some(StateFp::none()));
    f.gate
        .redeem(issued.token.expose(), &none_tool, StateFp::none)
        .expect("none matches none")
        .keep_spent(SpentReason::Completed);
    // A bound token is compared: a state other than the recorded one is drift.
    f.gate.raise(&none_tool, &StateFp::none()).expect("raise");
    let issued = f.gate.issue(&none_tool, None).expect("issue");
    assert!(matches!(
        f.gate
            .redeem(issued.token.expose(), &none_tool, || fp_of(Some("x"))),
        Err(RedeemError::ReplayDrift)
    ));
}

// r[verify drift.refuse]
// r[verify drift.token-spent]
// r[verify release.drift-keeps-spent]
#[test]
fn drift_is_refused_with_the_token_spent_and_no_handler_run() {
    let f = fixture();
    let before = fp_of(Some("before"));
    let token = raise_and_issue(&f, &DELETE, &before);
    let refused = f.gate.redeem(&token, &DELETE, || fp_of(Some("after")));
    assert!(
        matches!(refused, Err(RedeemError::ReplayDrift)),
        "{refused:?}"
    );
    assert!(
        refused
            .expect_err("drift")
            .to_string()
            .contains("replay_drift")
    );
    // Spent: even the original state no longer redeems it.
    assert!(matches!(
        f.gate.redeem(&token, &DELETE, || before.clone()),
        Err(RedeemError::AlreadySpent)
    ));
    assert!(
        events_named(&f, EventName::Consumed).is_empty(),
        "no handler ran"
    );
    assert!(events_named(&f, EventName::Released).is_empty());
    assert_eq!(f.gate.counters().refused_for(RefusalReason::ReplayDrift), 1);

    // A missing note appearing is drift too.
    let token = raise_and_issue(&f, &DELETE, &fp_of(None));
    assert!(matches!(
        f.gate.redeem(&token, &DELETE, || fp_of(Some("created"))),
        Err(RedeemError::ReplayDrift)
    ));

    // Routes that carry their own fingerprint use the same comparison.
    assert!(f.gate.check_drift(&before, &before).is_ok());
    assert!(f.gate.check_drift(&before, &fp_of(Some("after"))).is_err());
}

// r[verify gate.token.unbound-library]
#[test]
fn a_library_token_needs_no_raise_and_skips_the_state_check() {
    let f = fixture();
    let issued = f.gate.issue_unbound(&DELETE).expect("issue_unbound");
    assert_eq!(issued.state_fp, None);
    assert_eq!(issued.expires_at_ms, START_MS + TTL_MS);
    let fingerprinted = Cell::new(false);
    let redemption = f
        .gate
        .redeem(issued.token.expose(), &DELETE, || {
            fingerprinted.set(true);
            fp_of(Some("anything"))
        })
        .expect("unbound redeems on vault, args_hash and caller");
    assert!(!fingerprinted.get());
    redemption.keep_spent(SpentReason::Completed);
    // Still bound to the call and single-use.
    let other = f.gate.issue_unbound(&DELETE).expect("issue_unbound");
    assert!(matches!(
        f.gate.redeem(
            other.token.expose(),
            &with_caller(DELETE, "bob"),
            StateFp::none
        ),
        Err(RedeemError::Mismatch(BindingMismatch::Caller))
    ));
    assert!(matches!(
        f.gate.redeem(issued.token.expose(), &DELETE, StateFp::none),
        Err(RedeemError::AlreadySpent)
    ));
}

// ---------------------------------------------------------------------------------------
// Fingerprints and declarations

#[test]
fn fingerprints_are_order_free_length_prefixed_and_see_missing_files() {
    let t = |p: &str, h: Option<&str>| (p.to_owned(), h.map(str::to_owned));
    let ab = fingerprint_targets(&[t("a.md", Some("1")), t("b.md", Some("2"))]);
    let ba = fingerprint_targets(&[t("b.md", Some("2")), t("a.md", Some("1"))]);
    assert_eq!(ab, ba);
    assert_eq!(ab.as_str().len(), 32);
    assert_ne!(
        ab,
        fingerprint_targets(&[t("a.md", Some("1")), t("b.md", Some("3"))])
    );
    assert_ne!(
        ab,
        fingerprint_targets(&[t("a.md", Some("1")), t("b.md", None)])
    );
    assert_ne!(ab, fingerprint_targets(&[t("a.md", Some("1"))]));
    assert_ne!(
        fingerprint_targets(&[t("ab", Some("c"))]),
        fingerprint_targets(&[t("a", Some("bc"))])
    );
    assert_ne!(fingerprint_targets(&[]), StateFp::none());
    assert_ne!(
        fingerprint_custom(&[b"ab", b"c"]),
        fingerprint_custom(&[b"a", b"bc"])
    );
    assert!(StateFp::none().is_none());
    assert_eq!(StateFp::parse(ab.as_str()), Ok(ab));
    assert!(StateFp::parse("ABCDEF0123456789abcdef0123456789").is_err());
    assert!(StateFp::parse("abc").is_err());
}

// r[verify drift.targets-declared]
// r[verify drift.startup-refusal]
#[test]
fn a_gated_tool_without_confirmation_targets_is_refused_by_name() {
    for declared in [
        ConfirmationTargets::PathAcl,
        ConfirmationTargets::Custom,
        ConfirmationTargets::None,
    ] {
        assert_eq!(validate_gated_tool("delete_note", Some(&declared)), Ok(()));
    }
    let refused = validate_gated_tool("ocr_bulk", None).expect_err("undeclared");
    assert_eq!(
        refused,
        RegistryError::MissingConfirmationTargets {
            tool: "ocr_bulk".into()
        }
    );
    assert!(refused.to_string().contains("`ocr_bulk`"), "{refused}");
}

// ---------------------------------------------------------------------------------------
// Release

// r[verify release.acl]
// r[verify release.cancel]
// r[verify release.convention]
// r[verify release.restores]
// r[verify release.event]
// r[verify events.released]
#[test]
fn a_no_effect_outcome_gives_the_token_back_with_its_expiry_and_bindings() {
    let f = fixture();
    let fp = fp_of(Some("h"));
    f.gate.raise(&DELETE, &fp).expect("raise");
    let issued = f.gate.issue(&DELETE, None).expect("issue");
    let token = issued.token.expose().to_owned();
    let reasons = [
        NoEffect::FolderAclDenied,
        NoEffect::CancelledBeforeHandler,
        NoEffect::ConventionBlockedBeforeWrite,
    ];
    for (n, reason) in reasons.into_iter().enumerate() {
        f.clock.advance_ms(1_000);
        let redemption = f
            .gate
            .redeem(&token, &DELETE, || fp.clone())
            .expect("redeem");
        let outcome = redemption
            .release(reason, &BuiltinVerifier)
            .expect("release");
        assert_eq!(
            outcome,
            ReleaseOutcome::Released {
                released_count: n as i64 + 1
            }
        );
    }
    // In a handler, the write gate's convention_blocked before any write releases too.
    let run = f
        .gate
        .redeem(&token, &DELETE, || fp.clone())
        .expect("redeem")
        .enter_handler()
        .expect("enter");
    assert!(matches!(
        run.release(
            InHandlerNoEffect::ConventionBlockedBeforeWrite,
            &BuiltinVerifier
        ),
        Ok(ReleaseOutcome::Released { released_count: 4 })
    ));
    // Bindings kept: another caller still cannot use it.
    assert!(matches!(
        f.gate
            .redeem(&token, &with_caller(DELETE, "eve"), || fp.clone()),
        Err(RedeemError::Mismatch(BindingMismatch::Caller))
    ));
    // Original expiry kept: released tokens do not live longer.
    f.clock.set_ms(issued.expires_at_ms);
    assert!(matches!(
        f.gate.redeem(&token, &DELETE, || fp.clone()),
        Err(RedeemError::Expired)
    ));
    f.clock.set_ms(issued.expires_at_ms - 1);
    f.gate
        .redeem(&token, &DELETE, || fp.clone())
        .expect("the retry with the same token and arguments")
        .keep_spent(SpentReason::Completed);

    let released = events_named(&f, EventName::Released);
    let recorded: Vec<&str> = released
        .iter()
        .map(|e| e.detail["reason"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        recorded,
        [
            "folder_acl_denied",
            "cancelled_before_handler",
            "convention_blocked_before_write",
            "convention_blocked_before_write"
        ]
    );
    assert!(released.iter().all(|e| e.detail["verifier"] == "builtin"));
    assert!(
        released
            .iter()
            .all(|e| e.args_hash.as_deref() == Some(DELETE.args_hash))
    );
    assert_eq!(f.gate.counters().released, 4);
}

// r[verify release.keeps-spent]
// r[verify release.no-effect-only]
#[test]
fn every_other_outcome_keeps_the_token_spent() {
    let f = fixture();
    for reason in [
        SpentReason::Timeout,
        SpentReason::Http5xx,
        SpentReason::OperationTimeout,
        SpentReason::HandlerError,
        SpentReason::FaultAfterReturn,
        SpentReason::Completed,
    ] {
        let token = raise_and_issue(&f, &DELETE, &StateFp::none());
        f.gate
            .redeem(&token, &DELETE, StateFp::none)
            .expect("redeem")
            .enter_handler()
            .expect("enter")
            .keep_spent(reason);
        assert!(
            matches!(
                f.gate.redeem(&token, &DELETE, StateFp::none),
                Err(RedeemError::AlreadySpent)
            ),
            "{reason:?}"
        );
    }
    // A guard dropped without a report keeps the token spent as well.
    let token = raise_and_issue(&f, &DELETE, &StateFp::none());
    drop(
        f.gate
            .redeem(&token, &DELETE, StateFp::none)
            .expect("redeem"),
    );
    assert!(matches!(
        f.gate.redeem(&token, &DELETE, StateFp::none),
        Err(RedeemError::AlreadySpent)
    ));
    assert!(events_named(&f, EventName::Released).is_empty());
    assert_eq!(f.gate.counters().kept_spent, 5);
}

// r[verify release.closed-set]
#[test]
fn the_release_reasons_are_exactly_the_three_no_effect_outcomes() {
    // Exhaustive matches: a new variant fails to compile here until it is judged.
    fn before_handler(reason: NoEffect) -> ReleaseReason {
        match reason {
            NoEffect::FolderAclDenied
            | NoEffect::CancelledBeforeHandler
            | NoEffect::ConventionBlockedBeforeWrite => reason.into(),
        }
    }
    fn in_handler(reason: InHandlerNoEffect) -> ReleaseReason {
        match reason {
            InHandlerNoEffect::ConventionBlockedBeforeWrite => reason.into(),
        }
    }
    let reasons: BTreeSet<&str> = [
        before_handler(NoEffect::FolderAclDenied),
        before_handler(NoEffect::CancelledBeforeHandler),
        before_handler(NoEffect::ConventionBlockedBeforeWrite),
        in_handler(InHandlerNoEffect::ConventionBlockedBeforeWrite),
    ]
    .into_iter()
    .map(ReleaseReason::as_str)
    .collect();
    assert_eq!(
        reasons,
        BTreeSet::from([
            "folder_acl_denied",
            "cancelled_before_handler",
            "convention_blocked_before_write"
        ])
    );
}

// r[verify release.custom-verifier]
#[test]
fn a_custom_verifier_releases_only_if_it_implements_release() {
    let f = fixture();
    let token = raise_and_issue(&f, &DELETE, &StateFp::none());
    let redemption = NoReleaseVerifier
        .verify(&f.gate, &token, &DELETE, &mut StateFp::none)
        .expect("verify delegates to the gate");
    assert_eq!(
        redemption
            .release(NoEffect::FolderAclDenied, &NoReleaseVerifier)
            .expect("release"),
        ReleaseOutcome::KeptSpent
    );
    assert!(matches!(
        f.gate.redeem(&token, &DELETE, StateFp::none),
        Err(RedeemError::AlreadySpent)
    ));
    assert!(events_named(&f, EventName::Released).is_empty());

    let token = raise_and_issue(&f, &DELETE, &StateFp::none());
    let redemption = f
        .gate
        .redeem(&token, &DELETE, StateFp::none)
        .expect("redeem");
    assert!(matches!(
        redemption.release(NoEffect::FolderAclDenied, &ReleasingVerifier),
        Ok(ReleaseOutcome::Released { released_count: 1 })
    ));
    let released = events_named(&f, EventName::Released);
    assert_eq!(released.len(), 1);
    assert_eq!(released[0].detail["verifier"], "custom");
}

// r[verify release.builtin-verifier]
#[test]
fn a_handler_level_confirmation_is_released_by_the_builtin_verifier_whatever_is_configured() {
    let f = fixture();
    let configured: &dyn Verifier = &NoReleaseVerifier;
    let update_task = CallBinding {
        tool: "update_task",
        args_hash: "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        ..DELETE
    };
    let fp = fp_of(Some("task note"));
    let token = raise_and_issue(&f, &update_task, &fp);
    let run = configured
        .verify(&f.gate, &token, &update_task, &mut || fp.clone())
        .expect("verify")
        .enter_handler()
        .expect("enter");
    assert!(matches!(
        run.release_handler_level(InHandlerNoEffect::ConventionBlockedBeforeWrite),
        Ok(ReleaseOutcome::Released { released_count: 1 })
    ));
    let released = events_named(&f, EventName::Released);
    assert_eq!(released[0].detail["verifier"], "builtin");
    f.gate
        .redeem(&token, &update_task, || fp.clone())
        .expect("retry with the same token")
        .keep_spent(SpentReason::Completed);
}

// ---------------------------------------------------------------------------------------
// Events

// r[verify events.consumed]
// r[verify trip.consumed-event-per-run]
#[test]
fn consumed_is_recorded_once_per_handler_run_not_per_approval() {
    let f = fixture();
    let token = raise_and_issue(&f, &DELETE, &StateFp::none());
    // Released before the handler: no run, no event.
    f.gate
        .redeem(&token, &DELETE, StateFp::none)
        .expect("redeem")
        .release(NoEffect::FolderAclDenied, &BuiltinVerifier)
        .expect("release");
    assert!(events_named(&f, EventName::Consumed).is_empty());
    // The handler runs, its write gate refuses, the token comes back: one run.
    f.gate
        .redeem(&token, &DELETE, StateFp::none)
        .expect("redeem")
        .enter_handler()
        .expect("enter")
        .release_handler_level(InHandlerNoEffect::ConventionBlockedBeforeWrite)
        .expect("release");
    assert_eq!(events_named(&f, EventName::Consumed).len(), 1);
    // The corrected retry runs again: a second run, a second event.
    f.gate
        .redeem(&token, &DELETE, StateFp::none)
        .expect("redeem")
        .enter_handler()
        .expect("enter")
        .keep_spent(SpentReason::Completed);
    // A replayable requestState approving two runs records two.
    f.gate
        .record_handler_run(&DELETE, NonTokenRoute::RequestState)
        .expect("run");
    f.gate
        .record_handler_run(&DELETE, NonTokenRoute::RequestState)
        .expect("run");
    let consumed = events_named(&f, EventName::Consumed);
    let routes: Vec<&str> = consumed
        .iter()
        .map(|e| e.detail["route"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        routes,
        ["cli_token", "cli_token", "request_state", "request_state"]
    );
    assert_eq!(f.gate.counters().consumed, 4);
}

// r[verify events.minted]
// r[verify events.overflow]
#[test]
fn mint_and_overflow_are_recorded() {
    let f = fixture();
    f.gate.raise(&DELETE, &StateFp::none()).expect("raise");
    let issued = f.gate.issue(&DELETE, None).expect("issue");
    f.gate.issue_unbound(&DELETE).expect("unbound");
    let minted = events_named(&f, EventName::Minted);
    assert_eq!(minted.len(), 2);
    assert_eq!(minted[0].detail["bound"], true);
    assert_eq!(minted[0].detail["expires_at"], issued.expires_at_ms);
    assert_eq!(minted[1].detail["bound"], false);

    let read = CallBinding {
        tool: "read_notes",
        ..DELETE
    };
    f.gate
        .record_overflow(&read, 1_000_001, 1_000_000)
        .expect("overflow");
    let overflow = events_named(&f, EventName::Overflow);
    assert_eq!(overflow.len(), 1);
    assert_eq!(overflow[0].tool.as_deref(), Some("read_notes"));
    assert_eq!(overflow[0].detail["result_size"], 1_000_001);
    assert_eq!(overflow[0].detail["limit"], 1_000_000);
    let counters = f.gate.counters();
    assert_eq!((counters.minted, counters.overflows), (2, 1));
}

#[test]
fn event_names_are_the_contract_spellings_and_paging_reads_on() {
    let names: Vec<&str> = EventName::ALL.iter().map(|n| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "tc.elicit.requested",
            "tc.elicit.consumed",
            "hitl_released",
            "tc.governor.overflow",
            "elicit_minted",
            // (extension) the refusals by reason, for the audit log
            "tc.elicit.refused",
            // (extension) half-done work finished or dropped at start-up
            "tc.recovery.replayed",
        ]
    );
    let f = fixture();
    for _ in 0..5 {
        f.gate.raise(&DELETE, &StateFp::none()).expect("raise");
    }
    let first = f.gate.events(0, 2).expect("page");
    assert_eq!(first.len(), 2);
    let rest = f.gate.events(first[1].id, 100).expect("page");
    assert_eq!(rest.len(), 3);
    assert!(rest[0].id > first[1].id);
}

// r[verify events.caller-named]
#[test]
fn events_carry_the_caller_id_and_its_hash() {
    let f = fixture();
    let alice = with_caller(DELETE, "alice@example.org");
    let token = raise_and_issue(&f, &alice, &StateFp::none());
    f.gate
        .redeem(&token, &alice, StateFp::none)
        .expect("redeem")
        .release(NoEffect::CancelledBeforeHandler, &BuiltinVerifier)
        .expect("release");
    let events = f.gate.events(0, 100).expect("events");
    assert_eq!(events.len(), 3);
    let expected = caller_hash("alice@example.org");
    assert_eq!(expected.len(), 16);
    for event in &events {
        assert_eq!(event.caller_hash.as_deref(), Some(expected.as_str()));
        assert_eq!(
            event.caller.as_deref(),
            Some("alice@example.org"),
            "{event:?}"
        );
    }
}

// r[verify gate.token.never-logged]
// r[verify events.durable]
#[test]
fn a_token_appears_in_no_event_no_debug_output_and_nowhere_in_cache_db() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cache.db");
    let clock = tc_gate::clock::ManualClock::new(START_MS);
    let gate = on_file_manual(&path, &clock, 11);
    let mut seen = Vec::new();
    let mut tokens = Vec::new();

    let fp = fp_of(Some("h"));
    let raised = gate.raise(&DELETE, &fp).expect("raise");
    seen.push(format!("{raised:?}"));
    let issued = gate.issue(&DELETE, None).expect("issue");
    let unbound = gate.issue_unbound(&DELETE).expect("unbound");
    seen.push(format!("{issued:?} {unbound:?} {:?}", issued.token));
    tokens.push(issued.token.expose().to_owned());
    tokens.push(unbound.token.expose().to_owned());
    let token = issued.token.expose();

    let redemption = gate.redeem(token, &DELETE, || fp.clone()).expect("redeem");
    seen.push(format!("{redemption:?} {gate:?}"));
    #[derive(Debug)]
    struct Recording(std::sync::Mutex<Vec<String>>);
    impl Verifier for Recording {
        fn release(&self, ticket: ReleaseTicket) -> Result<ReleaseOutcome, StoreError> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(format!("{ticket:?}"));
            ticket.restore()
        }
    }
    let recording = Recording(Default::default());
    let outcome = redemption
        .release(NoEffect::FolderAclDenied, &recording)
        .expect("release");
    seen.push(format!("{outcome:?} {recording:?}"));
    let run = gate
        .redeem(token, &DELETE, || fp.clone())
        .expect("redeem")
        .enter_handler()
        .expect("enter");
    seen.push(format!("{run:?}"));
    run.keep_spent(SpentReason::HandlerError);
    for refused in [
        gate.redeem(token, &DELETE, || fp.clone()).map(|_| ()),
        gate.redeem(token, &with_caller(DELETE, "x"), || fp.clone())
            .map(|_| ()),
        gate.redeem(unbound.token.expose(), &with_vault(DELETE, "v"), || {
            fp.clone()
        })
        .map(|_| ()),
    ] {
        let error = refused.expect_err("refused");
        seen.push(format!("{error:?} {error}"));
    }
    gate.record_overflow(&DELETE, 10, 5).expect("overflow");
    seen.push(format!("{:?}", gate.counters()));
    let events = gate.events(0, 1_000).expect("events");
    assert_eq!(events.len(), 6, "{events:#?}");
    for event in &events {
        seen.push(format!("{event:?} {}", event.detail));
    }
    drop(gate);

    for token in &tokens {
        for text in &seen {
            assert!(!text.contains(token.as_str()), "token leaked in {text}");
        }
    }
    // Every file of the database, WAL included, read as bytes: the token is not stored.
    for entry in std::fs::read_dir(dir.path()).expect("dir") {
        let bytes = std::fs::read(entry.expect("entry").path()).expect("read");
        for token in &tokens {
            assert!(
                !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
                "token stored in cache.db"
            );
        }
    }
    // Durable and readable with a plain SQLite client after the gate is gone.
    let conn = rusqlite::Connection::open(&path).expect("plain client");
    let names: Vec<String> = conn
        .prepare("SELECT name FROM events ORDER BY id")
        .expect("prepare")
        .query_map([], |row| row.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(
        names,
        [
            "tc.elicit.requested",
            "elicit_minted",
            "elicit_minted",
            "hitl_released",
            "tc.elicit.consumed",
            "tc.governor.overflow",
        ]
    );
}

// ---------------------------------------------------------------------------------------
// requestState admission

// r[verify state.replayable]
#[test]
fn a_replayable_request_state_is_admitted_again_within_its_ttl() {
    let f = fixture();
    assert_eq!(f.gate.request_state_mode(), RequestStateMode::Replayable);
    let expires = START_MS + TTL_MS;
    f.gate.admit_state_id("state-1", expires).expect("first");
    f.gate.admit_state_id("state-1", expires).expect("again");
}

// r[verify state.ext.single-use]
// r[verify state.ext.sweep]
#[test]
fn a_single_use_request_state_is_admitted_once_and_swept_after_expiry() {
    let f = in_memory(
        GateConfig::new(TTL_SECONDS)
            .expect("ttl")
            .with_request_state_mode(RequestStateMode::SingleUse),
    );
    let expires = START_MS + TTL_MS;
    f.gate.admit_state_id("state-1", expires).expect("first");
    assert!(matches!(
        f.gate.admit_state_id("state-1", expires),
        Err(AdmitError::AlreadyUsed)
    ));
    f.gate
        .admit_state_id("state-2", expires)
        .expect("another state");
    assert_eq!(
        f.gate
            .counters()
            .refused_for(RefusalReason::StateAlreadyUsed),
        1
    );
    f.clock.advance_ms(TTL_MS - 1);
    assert_eq!(f.gate.sweep().expect("sweep").consumed_states, 0);
    f.clock.advance_ms(1);
    assert_eq!(f.gate.sweep().expect("sweep").consumed_states, 2);
    // Swept ids cannot come back: the state itself has expired.
    assert!(matches!(
        f.gate.admit_state_id("state-1", expires),
        Err(AdmitError::Expired)
    ));
}

#[test]
fn the_gate_and_its_guards_can_move_between_threads_and_tasks() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<tc_gate::Gate>();
    send_sync::<tc_gate::Redemption>();
    send_sync::<tc_gate::HandlerRun>();
    send_sync::<tc_gate::ReleaseTicket>();
    let f = fixture();
    let token = raise_and_issue(&f, &DELETE, &StateFp::none());
    let redemption = f
        .gate
        .redeem(&token, &DELETE, StateFp::none)
        .expect("redeem");
    let outcome = std::thread::spawn(move || {
        redemption.release(NoEffect::CancelledBeforeHandler, &BuiltinVerifier)
    })
    .join()
    .expect("thread");
    assert!(matches!(outcome, Ok(ReleaseOutcome::Released { .. })));
}

// r[verify cli.pending.lists]
// r[verify cli.elicit.indexed-vault]
#[test]
fn live_requests_are_listed_newest_first_and_found_by_hash_in_any_vault() {
    let f = fixture();
    let work = CallBinding {
        vault: "work",
        ..DELETE
    };
    let other_caller = CallBinding {
        caller: "alice",
        ..DELETE
    };
    f.gate
        .raise_with_summary(&DELETE, &fp_of(Some("h1")), "delete a.md")
        .expect("raise");
    f.clock.advance_ms(1_000);
    f.gate.raise(&work, &fp_of(Some("h2"))).expect("raise");
    f.clock.advance_ms(1_000);
    f.gate
        .raise(&other_caller, &fp_of(Some("h3")))
        .expect("raise");
    let all = f.gate.pending(None, None, 10).expect("pending");
    let order: Vec<(&str, &str)> = all
        .iter()
        .map(|r| (r.call.vault.as_str(), r.call.caller.as_str()))
        .collect();
    assert_eq!(
        order,
        [("main", "alice"), ("work", "stdio"), ("main", "stdio")]
    );
    assert_eq!(all[2].summary, "delete a.md");
    assert_eq!(f.gate.pending(Some("work"), None, 10).unwrap().len(), 1);
    assert_eq!(f.gate.pending(None, Some("stdio"), 10).unwrap().len(), 2);
    assert_eq!(f.gate.pending(None, None, 1).unwrap().len(), 1);
    // By hash and caller, in every vault, without the event log.
    let found = f
        .gate
        .raised_requests_for(DELETE.args_hash, "stdio")
        .expect("lookup");
    let vaults: Vec<&str> = found.iter().map(|r| r.call.vault.as_str()).collect();
    assert_eq!(vaults, ["main", "work"]);
    // Expired requests are neither listed nor found.
    f.clock.advance_ms(GateConfig::DEFAULT_TTL_SECONDS * 1000);
    assert!(f.gate.pending(None, None, 10).unwrap().is_empty());
    assert!(
        f.gate
            .raised_requests_for(DELETE.args_hash, "stdio")
            .unwrap()
            .is_empty()
    );
}

// ---------------------------------------------------------------------------------------
// Retention and what the gate reports of itself (the survivors of a cargo-mutants run)

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

// r[verify events.retention]
#[test]
fn an_event_is_kept_ninety_days_and_swept_after() {
    assert_eq!(tc_gate::EVENT_RETENTION_MS, 90 * DAY_MS);
    let f = fixture();
    f.gate.raise(&DELETE, &StateFp::none()).expect("raise");
    let stored = f.gate.stored_rows().expect("rows");
    assert_eq!((stored.raised_requests, stored.events), (1, 1));
    f.clock.advance_ms(90 * DAY_MS);
    let report = f.gate.sweep().expect("sweep");
    assert_eq!(
        (report.raised_requests, report.events),
        (1, 0),
        "the raise expired long ago; its event is kept for 90 days"
    );
    let stored = f.gate.stored_rows().expect("rows");
    assert_eq!((stored.raised_requests, stored.events), (0, 1));
    f.clock.advance_ms(1);
    assert_eq!(f.gate.sweep().expect("sweep").events, 1);
    assert_eq!(f.gate.stored_rows().expect("rows").events, 0);
}

#[test]
fn the_gate_reports_the_configuration_it_was_built_with() {
    let config = GateConfig::new(42)
        .expect("ttl")
        .with_request_state_mode(RequestStateMode::SingleUse);
    assert_eq!(config.request_state_mode(), RequestStateMode::SingleUse);
    let f = in_memory(config);
    assert_eq!(f.gate.config().ttl_ms(), 42_000);
    assert_eq!(f.gate.request_state_mode(), RequestStateMode::SingleUse);
    let replayable = in_memory(
        GateConfig::new(42)
            .expect("ttl")
            .with_request_state_mode(RequestStateMode::Replayable),
    );
    assert_eq!(
        replayable.gate.request_state_mode(),
        RequestStateMode::Replayable
    );
    let shown = format!("{:?}", f.gate);
    assert!(shown.starts_with("Gate {"), "{shown}");
    assert!(
        shown.contains("42000") && shown.contains("SingleUse"),
        "{shown}"
    );
}

// r[verify events.refused]
#[test]
fn a_refusal_is_recorded_with_its_reason_and_call() {
    let f = fixture();
    f.gate
        .record_refusal(&DELETE, "approval_declined")
        .expect("record");
    let refused = events_named(&f, EventName::Refused);
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].detail["reason"], "approval_declined");
    assert_eq!(refused[0].tool.as_deref(), Some(DELETE.tool));
    assert_eq!(refused[0].args_hash.as_deref(), Some(DELETE.args_hash));
    assert_eq!(
        refused[0].caller_hash.as_deref(),
        Some(caller_hash(DELETE.caller).as_str())
    );
}

/// The `reason` label of `obsidian_tc_elicit_refused_total` (spec `metrics.*`): one distinct
/// snake_case word per reason, as dashboards read them (a cargo-mutants survivor: an empty
/// label passed every tc-gate test).
#[test]
fn every_refusal_reason_has_its_own_label() {
    let labels: Vec<&str> = RefusalReason::ALL.map(RefusalReason::as_str).to_vec();
    assert_eq!(
        labels,
        [
            "unknown_token",
            "wrong_vault",
            "wrong_args",
            "wrong_caller",
            "expired",
            "already_spent",
            "replay_drift",
            "state_already_used"
        ]
    );
}

#[test]
fn an_event_name_renders_as_its_wire_name() {
    for name in EventName::ALL {
        assert_eq!(name.to_string(), name.as_str());
        assert_eq!(EventName::parse(&name.to_string()), Some(name));
    }
    assert_eq!(EventName::Refused.to_string(), "tc.elicit.refused");
}

#[test]
fn the_system_clock_is_the_wall_clock() {
    use tc_gate::clock::{Clock, SystemClock};
    fn wall_ms() -> i64 {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        i64::try_from(since.as_millis()).unwrap()
    }
    let before = wall_ms();
    let now = SystemClock.now_ms();
    let after = wall_ms();
    assert!(
        (before..=after).contains(&now),
        "{before} <= {now} <= {after}"
    );
}
