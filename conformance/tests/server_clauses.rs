//! Clauses checked on the product through the server comparison's [`ServerSut`]: the
//! events stage (spec/dispatch.md `dispatch.events`), a raise behind either answer
//! (spec/gate.md `gate.raise.any-answer`), a consumed single-use requestState never given
//! back (spec/state.md `state.ext.no-release`), the round trip chosen from each request's own
//! capabilities (spec/trips.md `trip.capabilities-per-request`), the confirmation floors
//! no configuration, argument or capability lowers (spec/floors.md `floors.hardcoded`), a
//! refusal naming only the caller's own id on stdio and HTTP (spec/auth.md
//! `auth.caller-visible`), one governor on both transports (spec/governor.md
//! `governor.shared`), and the replay window of `auth.mode = "none"` (spec/state.md
//! `state.replay.local-caller`).
//!
//! The steps that the model has words for go through [`check_step`], so the model's answer
//! is compared too; the rest are single exchanges by hand ([`ServerSut::exchange`]).

use std::path::PathBuf;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use tc_conformance::server::compare::check_step;
use tc_conformance::server::{ServerSut, Session, world};
use tc_gate::EventName;
use tc_model::{
    Action, Answer, Call, FpChoice, GateModel, ModelConfig, Note, Outcome, RequestStateMode, Stage,
    StateRef, Tok, Tool, Vault, Verifier,
};

fn parent() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}

fn config(mode: RequestStateMode) -> ModelConfig {
    ModelConfig {
        callers: 1,
        vaults: 1,
        notes: 1,
        ttl_ticks: 3,
        request_state_mode: mode,
        ..ModelConfig::default()
    }
}

/// A server and the model side by side.
struct Pair {
    sut: ServerSut,
    model: GateModel,
}

impl Pair {
    fn new(mode: RequestStateMode) -> Self {
        let config = config(mode);
        Pair {
            sut: ServerSut::new(config, &parent(), 7).unwrap(),
            model: GateModel::new(config),
        }
    }

    /// One compared step; the model's outcome.
    fn step(&mut self, action: Action) -> Outcome {
        let outcome = self.model.apply(&action);
        if let Err(side) = check_step(&mut self.sut, &self.model, &action, outcome) {
            panic!("{action}: model {outcome:?}, server {side:?}");
        }
        outcome
    }

    fn events(&self) -> Vec<tc_gate::Event> {
        self.sut.core().unwrap().gate().events(0, 10_000).unwrap()
    }
}

const WRITE: Call = Call {
    caller: tc_model::Caller(0),
    vault: Vault(0),
    tool: Tool::DeleteNote,
    args: tc_model::Args(0),
};

const COMMAND: Call = Call {
    caller: tc_model::Caller(0),
    vault: Vault(0),
    tool: Tool::ExecuteCommand,
    args: tc_model::Args(0),
};

fn redeem(tok: u8) -> Action {
    Action::RedeemToken {
        tok: Tok(tok),
        call: WRITE,
        stage: Stage::Applied,
        verifier: Verifier::Builtin,
    }
}

fn arguments(call: &Call) -> serde_json::Map<String, Value> {
    match world::arguments(call) {
        Some(Value::Object(map)) => map,
        other => panic!("no arguments for {call}: {other:?}"),
    }
}

fn params(call: &Call) -> CallToolRequestParams {
    CallToolRequestParams::new(world::tool_name(call).unwrap()).with_arguments(arguments(call))
}

fn code(result: &Value) -> Option<String> {
    tc_conformance::server::failure_envelope(result)["code"]
        .as_str()
        .map(str::to_owned)
}

// r[verify dispatch.events]
// r[verify events.refused]
#[test]
fn the_events_stage_records_every_outcome_refused_or_not() {
    let mut pair = Pair::new(RequestStateMode::Replayable);
    pair.step(Action::Raise {
        call: WRITE,
        form: false,
    });
    pair.step(Action::Mint {
        call: WRITE,
        state_fp: FpChoice::Retained,
    });
    assert_eq!(pair.step(redeem(0)), Outcome::Applied);
    // Refused: a fresh approval, then the note changes before it is used.
    pair.step(Action::Raise {
        call: WRITE,
        form: false,
    });
    pair.step(Action::Mint {
        call: WRITE,
        state_fp: FpChoice::Retained,
    });
    pair.step(Action::ChangeTarget {
        vault: Vault(0),
        note: Note(0),
    });
    assert!(matches!(pair.step(redeem(1)), Outcome::Refused(_)));
    // The same token again: spent, answered as a call without approval.
    assert!(matches!(pair.step(redeem(1)), Outcome::Reraised { .. }));

    let events = pair.events();
    let names: Vec<EventName> = events.iter().map(|e| e.name).collect();
    use EventName::*;
    assert_eq!(
        names,
        [
            Requested, Minted, Consumed, Requested, Minted, Refused, Requested, Refused
        ]
    );
    let hash = events[0]
        .args_hash
        .clone()
        .expect("the raise names the call");
    for event in &events {
        assert_eq!(event.vault.as_deref(), Some("v0"), "{event:?}");
        assert_eq!(event.tool.as_deref(), Some("write_note"), "{event:?}");
        assert_eq!(event.args_hash.as_ref(), Some(&hash), "{event:?}");
        assert_eq!(
            event.caller_hash.as_deref(),
            Some(tc_gate::caller_hash("stdio").as_str())
        );
    }
    assert_eq!(events[5].detail["reason"], "replay_drift");
    assert_eq!(events[7].detail["reason"], "token_spent");
}

// r[verify gate.raise.any-answer]
#[test]
fn a_client_offered_the_round_trip_can_still_take_the_cli_route() {
    let mut pair = Pair::new(RequestStateMode::Replayable);
    let offered = pair.step(Action::Raise {
        call: WRITE,
        form: true,
    });
    assert!(matches!(
        offered,
        Outcome::Raised {
            request_state: Some(_),
            ..
        }
    ));
    assert_eq!(
        pair.events().last().map(|e| e.name),
        Some(EventName::Requested),
        "input_required records the raise"
    );
    // The client dismissed the form; the human mints from the raise instead.
    assert_eq!(
        pair.step(Action::Mint {
            call: WRITE,
            state_fp: FpChoice::Retained,
        }),
        Outcome::Minted(Tok(0))
    );
    assert_eq!(pair.step(redeem(0)), Outcome::Applied);
    assert_eq!(
        pair.sut.note_on_disk(Vault(0), Note(0)).unwrap(),
        world::written(0)
    );
}

/// A state offered for the write, admitted on a server whose ACL then refuses the write, and
/// echoed again on the server as configured: the answer there.
fn admitted_then_refused_then_echoed(mode: RequestStateMode) -> (Value, String) {
    let mut pair = Pair::new(mode);
    let Outcome::Raised {
        request_state: Some(state),
        ..
    } = pair.step(Action::Raise {
        call: WRITE,
        form: true,
    })
    else {
        panic!("no requestState offered");
    };
    let state = pair.sut.request_state(state).unwrap().to_owned();
    let mut responses = rmcp::model::InputResponses::new();
    responses.insert(
        "confirm".to_owned(),
        serde_json::to_value(tc_conformance::server::clients::answer_result(
            Answer::Accept { approve: true },
        ))
        .unwrap(),
    );
    let resubmit = params(&WRITE)
        .with_request_state(state)
        .with_input_responses(responses);
    let refused = pair
        .sut
        .exchange(Session::ModernAclDenied, resubmit.clone(), Answer::Cancel)
        .unwrap();
    assert_eq!(
        code(&refused.result).as_deref(),
        Some("acl_denied"),
        "{refused:?}"
    );
    let again = pair
        .sut
        .exchange(Session::Modern, resubmit, Answer::Cancel)
        .unwrap();
    (
        again.result,
        pair.sut.note_on_disk(Vault(0), Note(0)).unwrap(),
    )
}

// r[verify state.ext.no-release]
#[test]
fn a_single_use_state_refused_after_admission_is_not_given_back() {
    let (answer, note) = admitted_then_refused_then_echoed(RequestStateMode::SingleUse);
    assert!(
        answer.get("inputRequests").is_some(),
        "a fresh confirmation, not the write: {answer}"
    );
    assert_eq!(
        note,
        world::initial(Vault(0), Note(0)),
        "nothing was written"
    );
    // Without the extension the same state replays within its TTL, so the check above is
    // the extension's doing.
    let (answer, note) = admitted_then_refused_then_echoed(RequestStateMode::Replayable);
    assert_ne!(answer["isError"], json!(true), "{answer}");
    assert_eq!(note, world::written(0));
}

/// A tools/call whose `_meta` declares `capabilities` for this request alone.
fn with_capabilities(call: &Call, capabilities: Value) -> CallToolRequestParams {
    let mut value = serde_json::to_value(params(call)).unwrap();
    value["_meta"] = json!({ "io.modelcontextprotocol/clientCapabilities": capabilities });
    serde_json::from_value(value).unwrap()
}

// r[verify trip.capabilities-per-request]
#[test]
fn the_route_follows_the_capabilities_of_each_request() {
    let mut pair = Pair::new(RequestStateMode::Replayable);
    // Declared no elicitation at initialize, declares forms on this request: the shim asks.
    let asked = pair
        .sut
        .exchange(
            Session::ShimFormless,
            with_capabilities(&COMMAND, json!({"elicitation": {}})),
            Answer::Accept { approve: true },
        )
        .unwrap();
    assert!(asked.prompted, "{asked:?}");
    assert_ne!(asked.result["isError"], json!(true), "{asked:?}");
    // Declared forms at initialize, none on this request: the plain refusal, no prompt.
    let plain = pair
        .sut
        .exchange(
            Session::Shim,
            with_capabilities(&COMMAND, json!({})),
            Answer::Accept { approve: true },
        )
        .unwrap();
    assert!(!plain.prompted, "{plain:?}");
    assert_eq!(
        code(&plain.result).as_deref(),
        Some("elicit_required"),
        "{plain:?}"
    );
    // And the session's own capabilities still count where the request declares none.
    let session = pair
        .sut
        .exchange(Session::Shim, params(&COMMAND), Answer::Decline)
        .unwrap();
    assert!(session.prompted, "{session:?}");
    assert_eq!(code(&session.result).as_deref(), Some("approval_declined"));
}

// r[verify floors.hardcoded]
#[test]
fn no_session_argument_or_configuration_lowers_the_floor() {
    let mut pair = Pair::new(RequestStateMode::SingleUse);
    let sessions = [
        Session::Plain,
        Session::Modern,
        Session::ModernFormless,
        Session::AclDenied,
        Session::ModernAclDenied,
        Session::Shim,
        Session::ShimFormless,
    ];
    let smuggled = |call: &Call, key: &str, value: Value| {
        let mut arguments = arguments(call);
        arguments.insert(key.to_owned(), value);
        CallToolRequestParams::new(world::tool_name(call).unwrap()).with_arguments(arguments)
    };
    for call in [WRITE, COMMAND] {
        let attempts = [
            params(&call),
            smuggled(&call, "elicit_token", json!("")),
            smuggled(&call, "elicit_token", json!("0".repeat(32))),
            smuggled(&call, "approve", json!(true)),
            smuggled(&call, "confirmed", json!(true)),
            params(&call).with_request_state("forged".to_owned()),
        ];
        for session in sessions {
            for attempt in &attempts {
                // A human who is asked declines.
                let answered = pair
                    .sut
                    .exchange(session, attempt.clone(), Answer::Decline)
                    .unwrap();
                let result = &answered.result;
                let refused =
                    result["isError"] == json!(true) || result.get("inputRequests").is_some();
                assert!(refused, "{session:?} {attempt:?} ran: {result}");
            }
        }
    }
    assert_eq!(
        pair.sut.note_on_disk(Vault(0), Note(0)).unwrap(),
        world::initial(Vault(0), Note(0))
    );
    assert_eq!(pair.sut.commands(), (0, 0), "no command reached Obsidian");
    let consumed = pair
        .events()
        .iter()
        .filter(|e| e.name == EventName::Consumed)
        .count();
    assert_eq!(consumed, 0, "no handler ran on an approval");
    let _ = StateRef(0);
}

// r[verify auth.caller-visible]
#[test]
fn a_refusal_names_only_the_callers_own_id() {
    let config = ModelConfig {
        callers: 2,
        ..config(RequestStateMode::Replayable)
    };
    let mut sut = ServerSut::new(config, &parent(), 7).unwrap();
    let call = |caller: u8| Call {
        caller: tc_model::Caller(caller),
        ..WRITE
    };
    // Each caller raises the same call first, so a refusal could name the other.
    let mut texts = Vec::new();
    for caller in [0u8, 1, 0, 1] {
        let answered = sut
            .exchange_as(
                tc_model::Caller(caller),
                Session::Plain,
                params(&call(caller)),
                Answer::Decline,
            )
            .unwrap();
        assert_eq!(code(&answered.result).as_deref(), Some("elicit_required"));
        texts.push((caller, answered.result));
    }
    for (caller, result) in texts {
        let own = world::caller_id(tc_model::Caller(caller));
        let other = world::caller_id(tc_model::Caller(1 - caller));
        let shown = format!(
            "{}\n{}",
            result["content"][0]["text"].as_str().unwrap_or_default(),
            tc_conformance::server::failure_envelope(&result)["recovery"]
        );
        assert!(
            shown.contains(&format!("--caller {own}")),
            "caller {own} is told to approve as itself: {shown}"
        );
        assert!(
            !shown.contains(&format!("--caller {other}"))
                && !shown.contains(&format!("\"{other}\"")),
            "caller {own} is shown {other}: {shown}"
        );
    }
}

// r[verify governor.shared]
#[test]
fn one_governor_bounds_every_tool_on_both_transports() {
    const CAP: usize = 1_000_000;
    let config = ModelConfig {
        callers: 2,
        ..config(RequestStateMode::Replayable)
    };
    let mut sut = ServerSut::new(config, &parent(), 7).unwrap();
    // A note bigger than the cap, and a folder of many notes.
    let vault = sut.vault_dir(Vault(0)).to_path_buf();
    std::fs::write(vault.join("big.md"), "word ".repeat(300_000)).unwrap();
    std::fs::create_dir_all(vault.join("many")).unwrap();
    for n in 0..400 {
        std::fs::write(vault.join(format!("many/{n}.md")), "line\n".repeat(1_000)).unwrap();
    }
    let calls = [
        ("read_notes", json!({"vault": "v0", "paths": ["big.md"]})),
        ("read_notes", json!({"vault": "v0", "folder": "many"})),
        ("list_notes", json!({"vault": "v0", "folder": "many"})),
        (
            "write_note",
            json!({"vault": "v0", "path": "n0.md", "content": "x".repeat(CAP)}),
        ),
    ];
    let mut largest = 0;
    for (tool, arguments) in calls {
        let params = CallToolRequestParams::new(tool).with_arguments(match arguments {
            Value::Object(map) => map,
            _ => unreachable!(),
        });
        let mut answers = Vec::new();
        for caller in [0u8, 1] {
            let answered = sut
                .exchange_as(
                    tc_model::Caller(caller),
                    Session::Plain,
                    params.clone(),
                    Answer::Decline,
                )
                .unwrap();
            let size = answered.result["structuredContent"].to_string().len()
                + answered.result["content"].to_string().len();
            assert!(
                size <= CAP,
                "{tool} for caller {caller}: {size} bytes as sent (structuredContent and text)"
            );
            largest = largest.max(size);
            answers.push(answered.result);
        }
        // The same governor: the same kind of answer on stdio and on HTTP.
        let shape = |r: &Value| (r["isError"].clone(), code(r));
        assert_eq!(
            shape(&answers[0]),
            shape(&answers[1]),
            "{tool}: {answers:?}"
        );
    }
}

fn approve_responses() -> rmcp::model::InputResponses {
    let mut responses = rmcp::model::InputResponses::new();
    responses.insert(
        "confirm".to_owned(),
        serde_json::to_value(tc_conformance::server::clients::answer_result(
            Answer::Accept { approve: true },
        ))
        .unwrap(),
    );
    responses
}

// r[verify state.replay.local-caller]
#[test]
fn under_auth_none_any_local_process_replays_a_captured_state_within_its_ttl() {
    use rmcp::model::CallToolResponse;
    use tc_conformance::server::Kind;
    let mut sut = ServerSut::new(config(RequestStateMode::Replayable), &parent(), 7).unwrap();
    let none = tc_server::config::AuthConfig::default();
    assert_eq!(none.mode, tc_server::config::AuthMode::None);
    let asker = sut.http_session(&none, None, Kind::Modern).unwrap();
    let other = sut.http_session(&none, None, Kind::Modern).unwrap();
    let state = match sut
        .block_on(asker.service.call_tool_once(params(&COMMAND)))
        .unwrap()
    {
        CallToolResponse::InputRequired(asked) => asked.request_state.unwrap(),
        other => panic!("expected input_required, got {other:?}"),
    };
    // Another local process that captured the state replays it, twice, within the TTL.
    for sent in 1..=2 {
        let replay = params(&COMMAND)
            .with_request_state(state.clone())
            .with_input_responses(approve_responses());
        match sut.block_on(other.service.call_tool_once(replay)).unwrap() {
            CallToolResponse::Complete(result) => {
                assert_ne!(result.is_error, Some(true), "{result:?}");
            }
            other => panic!("expected the command to run, got {other:?}"),
        }
        assert_eq!(sut.commands().0, sent, "the command ran once per replay");
    }
    // Past the TTL the same state approves nothing.
    for _ in 0..3 {
        sut.apply(&Action::AdvanceClock).unwrap();
    }
    let late = params(&COMMAND)
        .with_request_state(state)
        .with_input_responses(approve_responses());
    assert!(matches!(
        sut.block_on(other.service.call_tool_once(late)).unwrap(),
        CallToolResponse::InputRequired(_)
    ));
    assert_eq!(sut.commands().0, 2);
}
