//! The shared vocabulary of the gate: logical handles, the [`Action`]s a test can
//! take and the [`Outcome`] the gate answers with.
//!
//! The same `Action` drives three consumers: the stateright model ([`crate::GateChecker`]),
//! tc-conformance (which executes it against tc-gate and compares outcomes) and the fuzzer (with
//! the `arbitrary` feature). Handles are small integers standing for secrets and paths; a driver
//! keeps its own table from handle to the real thing (a token string, a sealed requestState, a
//! note path). Every refusal carries the clause ID that causes it (spec/ and `coord/CORE_IDS.md`),
//! so a comparison failure reads `[drift.refuse] RedeemToken(Tok(0)) …: model Drift, impl Applied`.

use std::fmt;

use crate::clause;

/// The identity a call arrives with (the JWT subject on HTTP, `stdio` on stdio). A driver maps
/// `Caller(n)` to a fixed string such as `"caller-n"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Caller(pub u8);

/// A configured vault id. Taken modulo [`crate::ModelConfig::vaults`] (see [`Action::normalized`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Vault(pub u8);

/// An argument variant of a tool; `args_hash` is a function of `(tool, args)` alone
/// (gate.hash.args-hash), so two calls share an approval exactly when tool and `Args` agree.
/// For a path tool `Args(n)` names the note `Note(n)` it acts on (e.g. `delete_note {path:
/// "n<n>.md"}`); for a `"none"` tool it is just another argument value (e.g. a command id).
/// Taken modulo [`crate::ModelConfig::notes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Args(pub u8);

/// A note in a vault: the confirmation target of a path tool called with `Args(n)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Note(pub u8);

/// A token handed out by a mint or a library issue, by index in issue order. Index-modulo: it
/// designates token `n % issued`, so an action stays meaningful after a shrinker drops the
/// action that issued some token; with no token issued yet it designates an unknown token.
/// Handles saturate at 255, so past 256 issued tokens the later ones are not designated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Tok(pub u8);

/// A requestState handed out by a raise with a form-capable client, by index in issue order
/// (index-modulo like [`Tok`]; none issued = a state that does not open).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct StateRef(pub u8);

/// A legacy-shim prompt that is open (sent, not yet answered), by position among the open ones
/// (index-modulo). Answering removes it, so positions after it shift down by one; a driver keeps
/// the same ordered list of its open prompts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct PromptRef(pub u8);

/// What a gated tool's confirmation is about (drift.targets-declared).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Targets {
    /// The note the call acts on, by its `pathAcl` paths and their content.
    Paths,
    /// `confirmationTargets: "none"`: the empty fingerprint; binds on `args_hash` alone.
    Nothing,
}

/// The gated tools the model knows; each stands for a class of tools in the specification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Tool {
    /// `delete_note`: always gated, bound to its path target, confirmation checked by the gate.
    DeleteNote,
    /// `update_task`: bound to its path target, but the confirmation is checked inside its own
    /// handler, so a `convention_blocked` before any write releases through the built-in
    /// verifier whatever custom verifier is configured (release.builtin-verifier).
    UpdateTask,
    /// `execute_command`: `confirmationTargets: "none"`, the empty fingerprint.
    ExecuteCommand,
}

impl Tool {
    pub const ALL: [Tool; 3] = [Tool::DeleteNote, Tool::UpdateTask, Tool::ExecuteCommand];

    /// The tool's MCP name (spec/tools.md).
    pub fn name(self) -> &'static str {
        match self {
            Tool::DeleteNote => "delete_note",
            Tool::UpdateTask => "update_task",
            Tool::ExecuteCommand => "execute_command",
        }
    }

    pub fn targets(self) -> Targets {
        match self {
            Tool::DeleteNote | Tool::UpdateTask => Targets::Paths,
            Tool::ExecuteCommand => Targets::Nothing,
        }
    }

    /// Whether the tool checks its confirmation inside its own handler.
    pub fn confirms_in_handler(self) -> bool {
        matches!(self, Tool::UpdateTask)
    }
}

/// A gated call as one caller makes it: who, where, which tool with which arguments. An
/// approval is bound to exactly these four (approval.bound).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Call {
    pub caller: Caller,
    pub vault: Vault,
    pub tool: Tool,
    pub args: Args,
}

impl Call {
    pub fn new(caller: u8, vault: u8, tool: Tool, args: u8) -> Self {
        Call {
            caller: Caller(caller),
            vault: Vault(vault),
            tool,
            args: Args(args),
        }
    }

    /// The note this call acts on, if its tool binds on path targets.
    pub fn target(&self) -> Option<(Vault, Note)> {
        match self.tool.targets() {
            Targets::Paths => Some((self.vault, Note(self.args.0))),
            Targets::Nothing => None,
        }
    }

    /// Whether `other` hashes to the same `args_hash` (same tool and arguments).
    pub fn same_args_hash(&self, other: &Call) -> bool {
        self.tool == other.tool && self.args == other.args
    }
}

/// Where a call that cleared the confirmation gate ended, as chosen by the action: the
/// environment decides whether the ACL, a cancellation, the write gate, the network or the
/// handler itself stops it. A driver arranges the matching situation (e.g. revokes the folder
/// ACL for `AclDenied`, makes the fake handler fail for `HandlerError`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Stage {
    /// The handler ran and its effect happened.
    Applied,
    /// The central folder ACL refused after the gate, before the handler (release.acl).
    AclDenied,
    /// The call was cancelled before the handler was entered (release.cancel).
    Cancelled,
    /// The vault write gate refused with `convention_blocked` before any write
    /// (release.convention).
    ConventionBlockedBeforeWrite,
    /// A companion plugin timed out after the request was sent (release.keeps-spent).
    Timeout,
    /// A 5xx after the request was sent.
    Http5xx,
    /// `operation_timeout` after the request was sent.
    OperationTimeout,
    /// An error the handler raised itself.
    HandlerError,
    /// A fault after the handler returned.
    FaultAfterReturn,
}

impl Stage {
    pub const ALL: [Stage; 9] = [
        Stage::Applied,
        Stage::AclDenied,
        Stage::Cancelled,
        Stage::ConventionBlockedBeforeWrite,
        Stage::Timeout,
        Stage::Http5xx,
        Stage::OperationTimeout,
        Stage::HandlerError,
        Stage::FaultAfterReturn,
    ];

    /// Whether the server positively knows the call had no effect at this stage
    /// (release.no-effect-only): only these may give a token back.
    pub fn no_effect(self) -> bool {
        matches!(
            self,
            Stage::AclDenied | Stage::Cancelled | Stage::ConventionBlockedBeforeWrite
        )
    }

    /// The clause under which a refusal at this stage releases the token, if it may.
    pub fn release_clause(self) -> Option<&'static str> {
        match self {
            Stage::AclDenied => Some(clause::RELEASE_ACL),
            Stage::Cancelled => Some(clause::RELEASE_CANCEL),
            Stage::ConventionBlockedBeforeWrite => Some(clause::RELEASE_CONVENTION),
            _ => None,
        }
    }
}

/// The `verifyElicit` hook in force for a token redemption.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Verifier {
    /// The built-in verifier: implements release.
    Builtin,
    /// A custom hook that implements `release`.
    CustomWithRelease,
    /// A custom hook without `release`: its tokens stay spent (release.custom-verifier).
    CustomWithoutRelease,
}

impl Verifier {
    pub const ALL: [Verifier; 3] = [
        Verifier::Builtin,
        Verifier::CustomWithRelease,
        Verifier::CustomWithoutRelease,
    ];

    pub fn implements_release(self) -> bool {
        !matches!(self, Verifier::CustomWithoutRelease)
    }
}

/// The human's answer to an elicitation form (MCP `elicitation/create`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Answer {
    /// `accept` with the form's boolean `approve`.
    Accept { approve: bool },
    /// "User explicitly declined the request": a hard stop (trip.decline).
    Decline,
    /// "User dismissed without making an explicit choice": approval not obtained (trip.cancel).
    Cancel,
}

impl Answer {
    pub const ALL: [Answer; 4] = [
        Answer::Accept { approve: true },
        Answer::Accept { approve: false },
        Answer::Decline,
        Answer::Cancel,
    ];

    /// Only `accept` with `approve: true` is an approval (trip.accept-only).
    pub fn approves(self) -> bool {
        matches!(self, Answer::Accept { approve: true })
    }
}

/// What `obsidian-tc elicit --state-fp` is given, relative to the raised request retained for
/// the mint's (vault, args_hash, caller).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum FpChoice {
    /// No `--state-fp` flag.
    Omitted,
    /// The retained request's own fingerprint (the command as the latest refusal rendered it).
    Retained,
    /// The fingerprint of the request the retained one superseded (a command copied from an
    /// earlier refusal). When nothing was superseded, or the key has no live request, a driver
    /// passes a fingerprint that was never stored, exactly as for `Unknown`. When the superseded
    /// request recorded the same fingerprint as the retained one, the flag names the retained
    /// fingerprint and the mint succeeds (the comparison is by value).
    Superseded,
    /// A well-formed fingerprint that was never stored.
    Unknown,
}

/// The confirmation state a gated call's targets are in: what `state_fp` abstracts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fp {
    /// The empty fingerprint of a `"none"` tool.
    Empty,
    /// A note with the content it had after `version` changes. A real fingerprint hashes the
    /// path too, so fingerprints of different notes never compare equal.
    Note {
        vault: Vault,
        note: Note,
        version: u8,
    },
}

/// One step of the world around the gate. Handles outside the configured counts are taken
/// modulo them ([`Action::normalized`]); a driver executes the normalized action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Action {
    /// The call arrives with no approval: the gate records a raised request (vault, tool,
    /// args_hash, caller, the target's current `state_fp`, now) superseding the live one under
    /// the same (vault, args_hash, caller) (gate.raise.record, gate.raise.supersede) and answers
    /// `elicit_required`. With `form` the client advertised elicitation on a 2026-07-28
    /// connection: the answer is `input_required` and carries a fresh requestState sealed with
    /// the call and the fingerprint (the next [`StateRef`]).
    Raise { call: Call, form: bool },
    /// `obsidian-tc elicit --hash <args_hash of call> --tool <tool> --vault <vault> --caller
    /// <caller> [--state-fp …]`. On success the next [`Tok`].
    Mint { call: Call, state_fp: FpChoice },
    /// A library embedder calls `issue_unbound` for the call: a token with no raised request
    /// behind it and no state binding (gate.token.unbound-library). On success the next [`Tok`].
    IssueUnbound { call: Call },
    /// The call is made again with `elicit_token` = the token `tok` designates, by `call`'s
    /// caller in `call`'s vault. If it clears the gate it ends at `stage`, under `verifier`.
    RedeemToken {
        tok: Tok,
        call: Call,
        stage: Stage,
        verifier: Verifier,
    },
    /// The 2026-07-28 client resubmits `call` echoing the requestState `state` designates with
    /// `inputResponses.confirm` = `answer`. If it is approved the handler runs and applies.
    /// `form`: this request's capabilities declare form elicitation (trip.form-only decides
    /// what a request whose state does not open is offered).
    RedeemState {
        state: StateRef,
        call: Call,
        answer: Answer,
        form: bool,
    },
    /// A legacy stdio client (with `legacyElicitationShim`) makes the call: the server records the
    /// raised request and sends `elicitation/create` itself from inside the handler, which waits.
    ShimPrompt { call: Call },
    /// The legacy client answers the open prompt `prompt` designates. The prompt closes whatever
    /// the answer: its confirmation never leaves the server.
    ShimAnswer { prompt: PromptRef, answer: Answer },
    /// The legacy client cancels the call (`notifications/cancelled`) while its prompt
    /// `prompt` is open: the call stops with nothing applied and the prompt closes
    /// (trip.legacy-shim.cancel).
    ShimCancel { prompt: PromptRef },
    /// The note's content changes outside the gate (drift for any approval about it).
    ChangeTarget { vault: Vault, note: Note },
    /// One tick passes. Time is abstract: the confirmation TTL is [`crate::ModelConfig::ttl_ticks`]
    /// ticks; a driver advances its fake clock by `ttl_seconds / ttl_ticks` per tick.
    AdvanceClock,
    /// cache.db is closed and reopened: durable state persists and nothing else changes, so the
    /// model's state is untouched; the action exists for the implementation's sake.
    Reopen,
}

impl Action {
    /// The same action with its vault, caller and argument handles taken modulo the configured
    /// counts (token, state and prompt handles are resolved against the current state instead).
    pub fn normalized(&self, config: &crate::ModelConfig) -> Action {
        let call = |c: &Call| config.normalize_call(c);
        match *self {
            Action::Raise { call: c, form } => Action::Raise {
                call: call(&c),
                form,
            },
            Action::Mint { call: c, state_fp } => Action::Mint {
                call: call(&c),
                state_fp,
            },
            Action::IssueUnbound { call: c } => Action::IssueUnbound { call: call(&c) },
            Action::RedeemToken {
                tok,
                call: c,
                stage,
                verifier,
            } => Action::RedeemToken {
                tok,
                call: call(&c),
                stage,
                verifier,
            },
            Action::RedeemState {
                state,
                call: c,
                answer,
                form,
            } => Action::RedeemState {
                state,
                call: call(&c),
                answer,
                form,
            },
            Action::ShimPrompt { call: c } => Action::ShimPrompt { call: call(&c) },
            Action::ShimAnswer { prompt, answer } => Action::ShimAnswer { prompt, answer },
            Action::ShimCancel { prompt } => Action::ShimCancel { prompt },
            Action::ChangeTarget { vault, note } => Action::ChangeTarget {
                vault: Vault(vault.0 % config.vaults.max(1)),
                note: Note(note.0 % config.notes.max(1)),
            },
            Action::AdvanceClock => Action::AdvanceClock,
            Action::Reopen => Action::Reopen,
        }
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}(args {}) by caller {} in vault {}",
            self.tool.name(),
            self.args.0,
            self.caller.0,
            self.vault.0
        )
    }
}

/// A one-line rendering for comparison failures, e.g.
/// `RedeemToken(Tok(0)) delete_note(args 0) by caller 1 in vault 0 -> Applied/Builtin`.
impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Raise { call, form } => {
                write!(f, "Raise {call}{}", if *form { " (form)" } else { "" })
            }
            Action::Mint { call, state_fp } => write!(f, "Mint {call} --state-fp {state_fp:?}"),
            Action::IssueUnbound { call } => write!(f, "IssueUnbound {call}"),
            Action::RedeemToken {
                tok,
                call,
                stage,
                verifier,
            } => write!(f, "RedeemToken({tok:?}) {call} -> {stage:?}/{verifier:?}"),
            Action::RedeemState {
                state,
                call,
                answer,
                form,
            } => write!(
                f,
                "RedeemState({state:?}) {call} answering {answer:?}{}",
                if *form { "" } else { " (no form capability)" }
            ),
            Action::ShimPrompt { call } => write!(f, "ShimPrompt {call}"),
            Action::ShimAnswer { prompt, answer } => {
                write!(f, "ShimAnswer({prompt:?}) answering {answer:?}")
            }
            Action::ShimCancel { prompt } => write!(f, "ShimCancel({prompt:?})"),
            Action::ChangeTarget { vault, note } => {
                write!(f, "ChangeTarget note {} in vault {}", note.0, vault.0)
            }
            Action::AdvanceClock => write!(f, "AdvanceClock"),
            Action::Reopen => write!(f, "Reopen"),
        }
    }
}

/// Why something was refused: the clause that demands it and a short kind a driver can map its
/// implementation's error to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Refusal {
    pub clause: &'static str,
    pub kind: RefusalKind,
}

impl Refusal {
    pub fn new(clause: &'static str, kind: RefusalKind) -> Self {
        Refusal { clause, kind }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {:?}", self.clause, self.kind)
    }
}

/// The kinds of refusal. Binding refusals of a CLI token name the field that differs (the
/// implementation looks the token up and can tell); a requestState whose associated data does
/// not match simply fails to open, hence one [`RefusalKind::StateMismatch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RefusalKind {
    /// No such token.
    UnknownToken,
    WrongVault,
    /// Another `args_hash` (another tool or other arguments).
    WrongArgs,
    WrongCaller,
    Expired,
    AlreadySpent,
    /// `replay_drift`.
    Drift,
    /// `approval_declined`.
    Declined,
    /// `approval_not_obtained`.
    NotObtained,
    /// The CLI found no live raised request for (vault, args_hash, caller).
    NoRaise,
    /// `--state-fp` is not the retained request's own fingerprint.
    StaleStateFp,
    /// The requestState does not open (none was issued).
    InvalidState,
    /// The requestState was sealed for another caller, vault, tool or arguments.
    StateMismatch,
}

impl RefusalKind {
    /// The `details.token_rejected` value an implementation answers a refused token with
    /// (gate.token.refused): `invalid` for an unknown token or one bound elsewhere, `expired`,
    /// `spent`; `None` for kinds that are not token rejections.
    pub fn token_rejected(self) -> Option<&'static str> {
        match self {
            RefusalKind::UnknownToken
            | RefusalKind::WrongVault
            | RefusalKind::WrongArgs
            | RefusalKind::WrongCaller => Some("invalid"),
            RefusalKind::Expired => Some("expired"),
            RefusalKind::AlreadySpent => Some("spent"),
            _ => None,
        }
    }
}

/// What became of a spent token when the call failed after clearing the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TokenFate {
    /// Unspent again, with its original expiry and bindings; `hitl_released` recorded.
    Released,
    /// Stays spent.
    KeptSpent,
}

/// The gate's answer to one [`Action`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// `elicit_required` (or `input_required` with `request_state`) recording `state_fp`.
    Raised {
        state_fp: Fp,
        request_state: Option<StateRef>,
    },
    /// The shim sent `elicitation/create` and the handler waits on `prompt`.
    Prompted {
        state_fp: Fp,
        prompt: PromptRef,
    },
    /// A token was minted or issued.
    Minted(Tok),
    /// The CLI refused to mint (exit status 1).
    MintRefused(Refusal),
    /// The approval was accepted and the handler ran with its effect.
    Applied,
    /// Refused by the gate; nothing ran.
    Refused(Refusal),
    /// The approval presented approves nothing, and the call is answered as one without
    /// approval: a fresh raised request is recorded for the presented call (gate.token.refused,
    /// state.invalid-fresh). A refused token gets `elicit_required` (`request_state: None`) with
    /// `details.token_rejected` = [`RefusalKind::token_rejected`]; a requestState that does not
    /// open gets `input_required` with a fresh requestState (`Some`, the next [`StateRef`]).
    Reraised {
        refusal: Refusal,
        state_fp: Fp,
        request_state: Option<StateRef>,
    },
    /// The gate passed (a CLI token was spent) but the call failed at `stage`.
    AfterGate {
        stage: Stage,
        fate: TokenFate,
    },
    /// The answer named no open prompt; nothing happened (a driver skips the step).
    NoSuchPrompt,
    /// The call was cancelled while its shim prompt was open: nothing ran, the prompt closed.
    CallCancelled,
    TargetChanged,
    ClockAdvanced,
    Reopened,
}

impl Outcome {
    /// The refusal inside a refused mint, a refusal or a re-raise.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            Outcome::MintRefused(r)
            | Outcome::Refused(r)
            | Outcome::Reraised { refusal: r, .. } => Some(*r),
            _ => None,
        }
    }

    /// The clause this outcome is evidence of, for messages.
    pub fn clause(&self) -> Option<&'static str> {
        match self {
            Outcome::MintRefused(r)
            | Outcome::Refused(r)
            | Outcome::Reraised { refusal: r, .. } => Some(r.clause),
            Outcome::AfterGate {
                stage,
                fate: TokenFate::Released,
            } => stage.release_clause(),
            // A no-effect stage keeps the token only because the custom verifier cannot release.
            Outcome::AfterGate {
                stage,
                fate: TokenFate::KeptSpent,
            } if stage.no_effect() => Some(clause::RELEASE_CUSTOM_VERIFIER),
            Outcome::AfterGate {
                fate: TokenFate::KeptSpent,
                ..
            } => Some(clause::RELEASE_KEEPS_SPENT),
            _ => None,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::MintRefused(r) => write!(f, "MintRefused {r}"),
            Outcome::Refused(r) => write!(f, "Refused {r}"),
            Outcome::Reraised { refusal, .. } => write!(f, "Reraised {refusal}"),
            other => write!(f, "{other:?}"),
        }
    }
}
