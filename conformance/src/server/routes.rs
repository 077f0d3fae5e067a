//! Each model action as its real exchange with the server (the module documentation of
//! [`super`] lists them): the `tools/call` sent, and its answer read back into the model's
//! [`Outcome`] as far as the wire tells it (spec/gate.md `gate.token.refused`, spec/state.md
//! `state.invalid-fresh`, spec/trips.md, spec/cli.md `cli.elicit.*`).

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, InputResponses};
use serde_json::Value;
use tc_gate::request_state::split_presented;
use tc_gate::{CallBinding, MintError};
use tc_model::clause;
use tc_model::{
    Answer, Call, Caller, FpChoice, Outcome, Refusal, RefusalKind, Stage, StateRef, Tok, Tool,
    Verifier,
};
use tc_server::approve::{self, ApproveError, MintRequest};
use tc_testkit::mcp::read_failure;

use super::clients::answer_result;
use super::world;
use super::{RaiseHistory, ServerSut, Session, SutError, index_u8};

/// A token string no mint returns.
const UNKNOWN_TOKEN: &str = "00000000000000000000000000000000";
/// A requestState no server seals.
const UNKNOWN_STATE: &str = "not-a-request-state";

/// A `tools/call` answer, as the comparison reads it.
#[derive(Debug)]
pub(super) enum Answered {
    Success,
    Failure { code: String, details: Value },
    InputRequired { request_state: String },
}

pub(super) fn read_result(result: &CallToolResult) -> Result<Answered, SutError> {
    // A failure's envelope is its second text block (spec results.error-blocks).
    let Some(structured) = read_failure(result).map_err(SutError::Unexpected)? else {
        return Ok(Answered::Success);
    };
    let code = structured["code"]
        .as_str()
        .ok_or_else(|| SutError::Unexpected(format!("a failure without a code: {structured}")))?;
    Ok(Answered::Failure {
        code: code.to_owned(),
        details: structured["details"].clone(),
    })
}

fn read_response(response: CallToolResponse) -> Result<Answered, SutError> {
    match response {
        CallToolResponse::Complete(result) => read_result(&result),
        CallToolResponse::InputRequired(asked) => Ok(Answered::InputRequired {
            request_state: asked.request_state.clone().ok_or_else(|| {
                SutError::Unexpected("input_required without a requestState".into())
            })?,
        }),
        other => Err(SutError::Unexpected(format!(
            "an answer of another kind: {other:?}"
        ))),
    }
}

pub(super) fn unexpected(what: &str, answered: &Answered) -> SutError {
    SutError::Unexpected(format!("{what}: the server answered {answered:?}"))
}

/// The refusal the wire shows for a token that approved nothing (`details.token_rejected`).
fn token_rejection(details: &Value) -> Result<Refusal, SutError> {
    Ok(match details["token_rejected"].as_str() {
        Some("invalid") => Refusal::new(clause::GATE_TOKEN_REFUSED, RefusalKind::UnknownToken),
        Some("expired") => Refusal::new(clause::GATE_TOKEN_EXPIRED, RefusalKind::Expired),
        Some("spent") => Refusal::new(clause::GATE_TOKEN_SINGLE_USE, RefusalKind::AlreadySpent),
        other => {
            return Err(SutError::Unexpected(format!(
                "elicit_required after a token with token_rejected {other:?}"
            )));
        }
    })
}

/// The refusal a failure code stands for on the confirmation routes.
pub(super) fn confirmation_refusal(code: &str) -> Option<Refusal> {
    Some(match code {
        "replay_drift" => Refusal::new(clause::DRIFT_REFUSE, RefusalKind::Drift),
        "approval_declined" => Refusal::new(clause::TRIP_DECLINE, RefusalKind::Declined),
        "approval_not_obtained" => Refusal::new(clause::TRIP_CANCEL, RefusalKind::NotObtained),
        _ => return None,
    })
}

/// The code a stage's failure answers with.
fn stage_code(stage: Stage) -> Option<&'static str> {
    Some(match stage {
        Stage::AclDenied => "acl_denied",
        Stage::Http5xx | Stage::Timeout | Stage::OperationTimeout => "operation_timeout",
        // Obsidian answering 404 for the command: the handler's own refusal, after the
        // request was sent (the bridge's `command_not_found`).
        Stage::HandlerError => "invalid_input",
        _ => return None,
    })
}

/// Where a redemption ending at `stage` is sent, if the environment can arrange it.
fn stage_session(tool: Tool, stage: Stage) -> Option<Session> {
    match (tool, stage) {
        (_, Stage::Applied) => Some(Session::Plain),
        (Tool::DeleteNote, Stage::AclDenied) => Some(Session::AclDenied),
        (Tool::ExecuteCommand, Stage::Http5xx | Stage::HandlerError) => Some(Session::Plain),
        (Tool::ExecuteCommand, Stage::Timeout | Stage::OperationTimeout) => {
            Some(Session::Impatient)
        }
        _ => None,
    }
}

/// Whether the server comparison can arrange `stage` for `tool`.
pub fn stage_supported(tool: Tool, stage: Stage) -> bool {
    stage_session(tool, stage).is_some()
}

fn unsupported_tool(call: &Call) -> SutError {
    SutError::Unsupported(format!(
        "{}: its confirmation is not asked for on every call",
        call.tool.name()
    ))
}

impl ServerSut {
    pub(super) fn session(
        &self,
        session: Session,
        caller: Caller,
    ) -> Result<&super::Client, SutError> {
        self.servers
            .as_ref()
            .and_then(|s| s.sessions.get(&(session, caller.0)))
            .ok_or_else(|| SutError::Setup(format!("no {session:?} session for {caller:?}")))
    }

    pub(super) fn arguments(call: &Call) -> Result<serde_json::Map<String, Value>, SutError> {
        match world::arguments(call) {
            Some(Value::Object(map)) => Ok(map),
            _ => Err(unsupported_tool(call)),
        }
    }

    pub(super) fn tool_name(call: &Call) -> Result<&'static str, SutError> {
        world::tool_name(call).ok_or_else(|| unsupported_tool(call))
    }

    // r[verify facade.call.round-trips]
    // r[verify drift.every-route]
    /// `params` as sent: every other call goes through the lean facade's `call_capability`
    /// (every server of the comparison runs `toolFacade.mode = "lean"`, which still serves a
    /// tool called by its own name), so raises, tokens, requestStates and shim prompts each
    /// travel both ways, mixed within one path, and the model's outcome must hold for both.
    pub(super) fn routed(&self, params: CallToolRequestParams) -> CallToolRequestParams {
        let turn = self.facade_turn.get();
        self.facade_turn.set(turn + 1);
        if turn.is_multiple_of(2) {
            params
        } else {
            through_facade(params)
        }
    }

    /// One `tools/call` round (no automatic retries) on `session` of the call's caller.
    fn send(
        &self,
        session: Session,
        call: &Call,
        params: CallToolRequestParams,
    ) -> Result<Answered, SutError> {
        let params = self.routed(params);
        let client = &self.session(session, call.caller)?.service;
        let response = self
            .runtime
            .block_on(client.call_tool_once(params))
            .map_err(|e| SutError::Wire(e.to_string()))?;
        read_response(response)
    }

    pub(super) fn params(call: &Call) -> Result<CallToolRequestParams, SutError> {
        Ok(CallToolRequestParams::new(Self::tool_name(call)?)
            .with_arguments(Self::arguments(call)?))
    }

    /// The args_hash of `call` as the server computes it: the registry's own parse of the
    /// arguments (defaults filled), with the vault the call is bound to.
    pub(super) fn args_hash(&self, call: &Call) -> Result<String, SutError> {
        let tool = Self::tool_name(call)?;
        let def = self
            .core()?
            .registry()
            .get(tool)
            .ok_or_else(|| SutError::Setup(format!("the server offers no {tool}")))?;
        let parsed = def
            .parse_args(&Value::Object(Self::arguments(call)?))
            .map_err(|e| SutError::Setup(format!("the arguments of {call}: {}", e.message)))?;
        let mut canonical = parsed.canonical;
        if let Value::Object(map) = &mut canonical {
            map.insert("vault".into(), Value::String(world::vault_id(call.vault)));
        }
        Ok(tc_gate::args_hash::args_hash(tool, &canonical)
            .as_str()
            .to_owned())
    }

    /// Checks what a refusal's details say about the call (its args_hash) and remembers the
    /// raise.
    fn note_raise(&mut self, call: &Call, details: &Value) -> Result<(), SutError> {
        let hash = self.args_hash(call)?;
        if details["args_hash"].as_str() != Some(hash.as_str()) {
            return Err(SutError::Unexpected(format!(
                "the refusal of {call} names args_hash {}, the registry computes {hash}",
                details["args_hash"]
            )));
        }
        self.remember_raise(call)
    }

    /// Remembers the request the server now retains for `call` and what it superseded.
    pub(super) fn remember_raise(&mut self, call: &Call) -> Result<(), SutError> {
        let hash = self.args_hash(call)?;
        let retained = self
            .core()?
            .gate()
            .raised_request(
                &world::vault_id(call.vault),
                &hash,
                &world::caller_id(call.caller),
            )?
            .ok_or_else(|| {
                SutError::Unexpected(format!("no raised request after raising {call}"))
            })?;
        let now = self.now();
        let superseded = self
            .raises
            .get(call)
            .filter(|previous| previous.expires_at_ms > now)
            .map(|previous| previous.state_fp.clone());
        self.raises.insert(
            *call,
            RaiseHistory {
                state_fp: retained.state_fp.as_str().to_owned(),
                expires_at_ms: retained.expires_at_ms,
                superseded,
            },
        );
        Ok(())
    }

    pub(super) fn now(&self) -> i64 {
        use tc_gate::clock::Clock as _;
        self.clock.now_ms()
    }

    fn push_state(
        &mut self,
        call: &Call,
        presented: String,
    ) -> Result<(tc_model::Fp, StateRef), SutError> {
        let (fp, _) = split_presented(&presented);
        let fp = fp
            .ok_or_else(|| {
                SutError::Unexpected(format!(
                    "a requestState without its fingerprint: {presented}"
                ))
            })?
            .to_owned();
        let named = self.name_fp(call, &fp)?;
        self.states.push(presented);
        Ok((named, StateRef(index_u8(self.states.len() - 1))))
    }

    /// A fresh confirmation the server answered with (`elicit_required` or `input_required`).
    fn raised(
        &mut self,
        call: &Call,
        answered: Answered,
        what: &str,
    ) -> Result<(tc_model::Fp, Option<StateRef>, Value), SutError> {
        match answered {
            Answered::Failure { code, details } if code == "elicit_required" => {
                let fp = details["state_fp"].as_str().unwrap_or_default().to_owned();
                let named = self.name_fp(call, &fp)?;
                self.note_raise(call, &details)?;
                Ok((named, None, details))
            }
            Answered::InputRequired { request_state } => {
                self.remember_raise(call)?;
                let (named, state) = self.push_state(call, request_state)?;
                Ok((named, Some(state), Value::Null))
            }
            other => Err(unexpected(what, &other)),
        }
    }

    pub(super) fn raise(&mut self, call: &Call, form: bool) -> Result<Outcome, SutError> {
        let session = if form {
            Session::Modern
        } else {
            Session::Plain
        };
        let answered = self.send(session, call, Self::params(call)?)?;
        let (state_fp, request_state, _) =
            self.raised(call, answered, "a call without approval")?;
        Ok(Outcome::Raised {
            state_fp,
            request_state,
        })
    }

    // ----- tokens ------------------------------------------------------------------------------

    /// The `--state-fp` the operator passes for `choice`.
    fn state_fp_flag(
        &self,
        call: &Call,
        choice: FpChoice,
        hash: &str,
    ) -> Result<Option<String>, SutError> {
        let never = || tc_conformance_never_stored();
        let retained = self.core()?.gate().raised_request(
            &world::vault_id(call.vault),
            hash,
            &world::caller_id(call.caller),
        )?;
        Ok(match choice {
            FpChoice::Omitted => None,
            FpChoice::Unknown => Some(never()),
            FpChoice::Retained => Some(
                retained
                    .map(|r| r.state_fp.as_str().to_owned())
                    .unwrap_or_else(never),
            ),
            FpChoice::Superseded => Some(
                retained
                    .and_then(|r| {
                        self.raises
                            .get(call)
                            .filter(|h| h.state_fp == r.state_fp.as_str())
                            .and_then(|h| h.superseded.clone())
                    })
                    .unwrap_or_else(never),
            ),
        })
    }

    /// `obsidian-tc elicit --yes --vault … --tool … --hash … --caller stdio [--state-fp …]`,
    /// through the code the binary runs, on its own connection to cache.db.
    pub(super) fn mint(&mut self, call: &Call, choice: FpChoice) -> Result<Outcome, SutError> {
        let tool = Self::tool_name(call)?;
        let hash = self.args_hash(call)?;
        let flag = self.state_fp_flag(call, choice, &hash)?;
        let vault = world::vault_id(call.vault);
        let config = &self.configs[&world::Variant::Main];
        let gate = approve::open_gate(
            config,
            &self.cache_dir,
            Arc::new(self.clock.clone()),
            self.entropy.clone(),
        )
        .map_err(|e| SutError::Setup(e.to_string()))?;
        let caller = world::caller_id(call.caller);
        let request = MintRequest {
            vault: Some(&vault),
            tool,
            args_hash: &hash,
            caller: &caller,
            state_fp: flag.as_deref(),
        };
        match approve::mint(config, &gate, &request) {
            Ok(issued) => {
                self.raises.remove(call);
                self.tokens.push(issued.token.expose().to_owned());
                Ok(Outcome::Minted(Tok(index_u8(self.tokens.len() - 1))))
            }
            Err(ApproveError::Mint(MintError::NoRaisedRequest { .. })) => Ok(Outcome::MintRefused(
                Refusal::new(clause::CLI_ELICIT_REQUIRES_RAISE, RefusalKind::NoRaise),
            )),
            Err(ApproveError::Mint(MintError::StaleStateFp | MintError::UnknownStateFp)) => {
                Ok(Outcome::MintRefused(Refusal::new(
                    clause::CLI_ELICIT_STATE_FP,
                    RefusalKind::StaleStateFp,
                )))
            }
            Err(other) => Err(SutError::Unexpected(format!("the mint refused: {other}"))),
        }
    }

    pub(super) fn issue_unbound(&mut self, call: &Call) -> Result<Outcome, SutError> {
        let tool = Self::tool_name(call)?;
        let hash = self.args_hash(call)?;
        let vault = world::vault_id(call.vault);
        let caller = world::caller_id(call.caller);
        let binding = CallBinding {
            vault: &vault,
            tool,
            args_hash: &hash,
            caller: &caller,
        };
        let issued = self.core()?.gate().issue_unbound(&binding)?;
        self.tokens.push(issued.token.expose().to_owned());
        Ok(Outcome::Minted(Tok(index_u8(self.tokens.len() - 1))))
    }

    pub(super) fn redeem_token(
        &mut self,
        tok: Tok,
        call: &Call,
        stage: Stage,
        verifier: Verifier,
    ) -> Result<Outcome, SutError> {
        if verifier != Verifier::Builtin {
            return Err(SutError::Unsupported(format!(
                "{verifier:?}: the server has no verifyElicit hook"
            )));
        }
        let session = stage_session(call.tool, stage)
            .ok_or_else(|| SutError::Unsupported(format!("{stage:?} for {}", call.tool.name())))?;
        let token = match tok_index(tok.0, self.tokens.len()) {
            Some(index) => self.tokens[index].clone(),
            None => UNKNOWN_TOKEN.to_owned(),
        };
        let mut arguments = Self::arguments(call)?;
        arguments.insert("elicit_token".into(), Value::String(token));
        let params = CallToolRequestParams::new(Self::tool_name(call)?).with_arguments(arguments);
        // Http5xx: the stand-in fails the command after recording it; HandlerError: it knows
        // no command, so it answers 404 (not recording it); the timeouts: it records the
        // command and stalls past the impatient bridge's patience. Its behaviour is put back
        // as it was after the step.
        let mut before = None;
        self.obsidian.behave(|b| {
            before = Some(b.clone());
            match stage {
                Stage::Http5xx => b.status = Some(500),
                Stage::Timeout | Stage::OperationTimeout => b.delay = world::STALL,
                Stage::HandlerError => b.known_commands.clear(),
                _ => {}
            }
        });
        let answered = self.send(session, call, params);
        if let Some(before) = before {
            self.obsidian.behave(|b| *b = before);
        }
        match answered? {
            Answered::Success => {
                self.took_effect(call);
                Ok(Outcome::Applied)
            }
            Answered::Failure { code, details } if code == "elicit_required" => {
                let refusal = token_rejection(&details)?;
                let (state_fp, request_state, _) =
                    self.raised(call, Answered::Failure { code, details }, "a refused token")?;
                Ok(Outcome::Reraised {
                    refusal,
                    state_fp,
                    request_state,
                })
            }
            Answered::Failure { code, .. } if code == "replay_drift" => Ok(Outcome::Refused(
                Refusal::new(clause::DRIFT_REFUSE, RefusalKind::Drift),
            )),
            Answered::Failure { code, .. } if Some(code.as_str()) == stage_code(stage) => {
                if stage_code(stage) == Some("operation_timeout") {
                    // The request was sent and recorded: the stand-in saw the command.
                    self.commands_sent += 1;
                }
                let fate = if self.released_since_last()? {
                    tc_model::TokenFate::Released
                } else {
                    tc_model::TokenFate::KeptSpent
                };
                Ok(Outcome::AfterGate { stage, fate })
            }
            other => Err(unexpected(
                &format!("a token redeemed to end at {stage:?}"),
                &other,
            )),
        }
    }

    // ----- the 2026-07-28 requestState ---------------------------------------------------------

    pub(super) fn redeem_state(
        &mut self,
        state: StateRef,
        call: &Call,
        answer: Answer,
        form: bool,
    ) -> Result<Outcome, SutError> {
        let presented = tok_index(state.0, self.states.len())
            .map_or_else(|| UNKNOWN_STATE.to_owned(), |i| self.states[i].clone());
        let mut responses = InputResponses::new();
        let reply = serde_json::to_value(answer_result(answer))
            .map_err(|e| SutError::Setup(e.to_string()))?;
        responses.insert("confirm".to_owned(), reply);
        let params = Self::params(call)?
            .with_input_responses(responses)
            .with_request_state(presented);
        let session = if form {
            Session::Modern
        } else {
            Session::ModernFormless
        };
        match self.send(session, call, params)? {
            Answered::Success => {
                self.took_effect(call);
                Ok(Outcome::Applied)
            }
            Answered::Failure { code, .. } if confirmation_refusal(&code).is_some() => Ok(
                Outcome::Refused(confirmation_refusal(&code).unwrap_or_else(|| {
                    Refusal::new(clause::TRIP_CANCEL, RefusalKind::NotObtained)
                })),
            ),
            fresh => {
                let (state_fp, request_state, _) =
                    self.raised(call, fresh, "a requestState that approves nothing")?;
                Ok(Outcome::Reraised {
                    refusal: Refusal::new(clause::STATE_INVALID_FRESH, RefusalKind::InvalidState),
                    state_fp,
                    request_state,
                })
            }
        }
    }
}

/// The same call sent through `call_capability`: the tool's name and arguments become `name`
/// and `args`, and the token moves next to them; a requestState and the answers stay where
/// the round trip carries them.
fn through_facade(mut params: CallToolRequestParams) -> CallToolRequestParams {
    let mut args = params.arguments.take().unwrap_or_default();
    let token = args.remove("elicit_token");
    let mut outer = serde_json::Map::new();
    outer.insert("name".into(), Value::String(params.name.to_string()));
    outer.insert("args".into(), Value::Object(args));
    if let Some(token) = token {
        outer.insert("elicit_token".into(), token);
    }
    params.name = "call_capability".into();
    params.arguments = Some(outer);
    params
}

/// A never-stored fingerprint, well formed (what `--state-fp` gets for one never raised).
fn tc_conformance_never_stored() -> String {
    crate::world::never_stored_fp().as_str().to_owned()
}

pub(super) fn tok_index(handle: u8, len: usize) -> Option<usize> {
    (len > 0).then(|| usize::from(handle) % len)
}

/// The envelope `{code, message, retryable, details?, recovery?}` of a failure as a JSON
/// `tools/call` result holds it: its second text block (spec results.error-blocks); `Null`
/// for anything else.
pub fn failure_envelope(result: &Value) -> Value {
    if result["isError"] != Value::Bool(true) {
        return Value::Null;
    }
    result["content"][1]["text"]
        .as_str()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(Value::Null)
}
