//! The stateright model over [`GateModel`]: a bounded world of callers, vaults, tools, a clock
//! that crosses the TTL and target changes, with one `always` property per safety clause of the
//! confirmation gate (named by its clause ID in spec/) and a `sometimes` twin for each
//! showing that the situation it guards is reachable.
//!
//! Bounding: the world is finite because every resource is capped ([`Bounds`]): tokens, issued
//! requestStates, open prompts, ticks, note versions and runs per approval. Approvals originate
//! only from [`Bounds::origins`]; every approval is then presented by its own call and by calls
//! that differ from it in exactly one binding (caller, vault, args_hash), which is what
//! approval.bound needs. Calls are symmetric in everything but their handles, so a second
//! originating caller or vault would only mirror the same states. State the explored world can
//! no longer read is dropped (raised requests once no mint can follow; fresh requestStates beyond
//! [`Bounds::max_states`], which the explored client never presents), and `Reopen` is not taken:
//! it changes nothing in the model.
//!
//! [`GateChecker::all_routes`] lists every property at once; it is meant for judging states
//! reached some other way (random walks, conformance runs), not for exhaustive exploration.

use stateright::{Model, Property};

use crate::clause;
use crate::gate::{GateModel, ModelConfig, Observation, RequestStateMode, TokenKind};
use crate::gate::{ReleasePoint, ReleaseRecord};
use crate::vocab::{
    Action, Answer, Args, Call, Caller, FpChoice, Note, PromptRef, Stage, StateRef, Tok, Tool,
    Vault, Verifier,
};

/// Which approval routes the world exercises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Routes {
    /// `obsidian-tc elicit` tokens (plain raises and mints).
    pub cli: bool,
    /// `issue_unbound` library tokens.
    pub library: bool,
    /// The 2026-07-28 requestState round trip.
    pub request_state: bool,
    /// The legacy stdio shim.
    pub shim: bool,
}

impl Routes {
    fn tokens(&self) -> bool {
        self.cli || self.library
    }
    fn round_trips(&self) -> bool {
        self.request_state || self.shim
    }
}

/// The caps that keep the explored world finite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// The calls approvals are raised, minted, issued and prompted for.
    pub origins: Vec<Call>,
    pub routes: Routes,
    pub max_tokens: u8,
    pub max_states: u8,
    /// Open shim prompts at once.
    pub max_prompts: u8,
    /// The clock stops here (choose at least `ttl_ticks` so it crosses the TTL).
    pub max_ticks: u8,
    /// Target changes stop at this note version.
    pub max_versions: u8,
    /// Runs per token and applications per requestState stop here, and a note's version may
    /// exceed `max_versions` by this much through the handlers' own writes.
    pub max_runs: u8,
    /// The stages a token redemption by its own call may end at, and the verifiers tried
    /// where a release is possible.
    pub stages: Vec<Stage>,
    pub verifiers: Vec<Verifier>,
}

/// The stateright model: a [`ModelConfig`] explored within [`Bounds`].
#[derive(Clone, Debug)]
pub struct GateChecker {
    pub config: ModelConfig,
    pub bounds: Bounds,
}

impl GateChecker {
    /// The CLI and library token routes: raises, mints with every `--state-fp` choice, unbound
    /// issues, redemptions ending at every stage under every verifier, drift and expiry.
    /// Origins: `delete_note` (gate-level confirmation, path target), `update_task` (confirmation
    /// in its handler, path target) and `execute_command` (`"none"`) of caller 0 in vault 0.
    pub fn tokens(config: ModelConfig) -> Self {
        GateChecker {
            config,
            bounds: Bounds {
                origins: vec![
                    Call::new(0, 0, Tool::DeleteNote, 0),
                    Call::new(0, 0, Tool::UpdateTask, 0),
                    Call::new(0, 0, Tool::ExecuteCommand, 0),
                ],
                routes: Routes {
                    cli: true,
                    library: true,
                    request_state: false,
                    shim: false,
                },
                max_tokens: 1,
                max_states: 0,
                max_prompts: 0,
                max_ticks: config.ttl_ticks,
                max_versions: 1,
                max_runs: 2,
                stages: Stage::ALL.to_vec(),
                verifiers: Verifier::ALL.to_vec(),
            },
        }
    }

    /// Repeated mints: `obsidian-tc elicit` run more than once for one blocked call, for a
    /// `"none"` tool (which binds nothing but the args_hash) and a path tool, with a CLI whose
    /// configuration may say another TTL than the server's (cli.elicit.one-mint-per-raise,
    /// cli.elicit.ttl-cap). One vault: the bindings are the token world's to explore, and a
    /// second vault would only mirror these states.
    pub fn mints(config: ModelConfig) -> Self {
        GateChecker {
            config: ModelConfig {
                vaults: 1,
                ..config
            },
            bounds: Bounds {
                origins: vec![
                    Call::new(0, 0, Tool::ExecuteCommand, 0),
                    Call::new(0, 0, Tool::DeleteNote, 0),
                ],
                routes: Routes {
                    cli: true,
                    library: false,
                    request_state: false,
                    shim: false,
                },
                max_tokens: 2,
                max_states: 0,
                max_prompts: 0,
                max_ticks: config.ttl_ticks,
                max_versions: 1,
                max_runs: 1,
                stages: vec![Stage::Applied, Stage::AclDenied],
                verifiers: vec![Verifier::Builtin],
            },
        }
    }

    /// The round trips: the 2026-07-28 requestState (replayable, or single-use with the
    /// extension, per `config.request_state_mode`) and the legacy stdio shim, with every answer,
    /// drift and expiry.
    pub fn round_trips(config: ModelConfig) -> Self {
        GateChecker {
            config,
            bounds: Bounds {
                origins: vec![
                    Call::new(0, 0, Tool::DeleteNote, 0),
                    Call::new(0, 0, Tool::ExecuteCommand, 0),
                ],
                routes: Routes {
                    cli: false,
                    library: false,
                    request_state: true,
                    shim: true,
                },
                max_tokens: 0,
                max_states: 1,
                max_prompts: 1,
                max_ticks: config.ttl_ticks,
                max_versions: 1,
                max_runs: 2,
                stages: Stage::ALL.to_vec(),
                verifiers: Verifier::ALL.to_vec(),
            },
        }
    }

    /// Every route at once, with the token world's bounds: its [`Model::properties`] are every
    /// property the model has (for `config.request_state_mode`). Exploring it exhaustively is
    /// far beyond a test's budget; use it to judge states reached by other means.
    pub fn all_routes(config: ModelConfig) -> Self {
        let mut checker = GateChecker::tokens(config);
        checker.bounds.routes = Routes {
            cli: true,
            library: true,
            request_state: true,
            shim: true,
        };
        checker.bounds.max_states = 1;
        checker.bounds.max_prompts = 1;
        checker
    }

    /// The exact call and the calls differing from it in one binding.
    fn presenters(&self, call: &Call) -> Vec<Call> {
        let mut calls = vec![*call];
        if self.config.callers > 1 {
            calls.push(Call {
                caller: Caller((call.caller.0 + 1) % self.config.callers),
                ..*call
            });
        }
        if self.config.vaults > 1 {
            calls.push(Call {
                vault: Vault((call.vault.0 + 1) % self.config.vaults),
                ..*call
            });
        }
        if self.config.notes > 1 {
            calls.push(Call {
                args: Args((call.args.0 + 1) % self.config.notes),
                ..*call
            });
        } else if let Some(other) = self.bounds.origins.iter().find(|o| o.tool != call.tool) {
            calls.push(Call {
                tool: other.tool,
                ..*call
            });
        }
        calls
    }

    fn property_table(&self) -> Vec<(bool, Property<Self>)> {
        let routes = self.bounds.routes;
        let single_use = self.config.request_state_mode == RequestStateMode::SingleUse;
        let handler_level = self
            .bounds
            .origins
            .iter()
            .any(|call| call.tool.confirms_in_handler());
        let effect_stages = self
            .bounds
            .stages
            .iter()
            .any(|stage| *stage != Stage::Applied && !stage.no_effect());
        let custom_release = self.bounds.verifiers.contains(&Verifier::CustomWithRelease);
        vec![
            // Tokens.
            (
                routes.tokens(),
                Property::<Self>::always(clause::GATE_TOKEN_SINGLE_USE, |_, s| {
                    s.tokens()
                        .iter()
                        .all(|t| u16::from(t.runs) <= 1 + u16::from(t.releases))
                }),
            ),
            (
                routes.tokens() && self.bounds.max_runs >= 2,
                Property::<Self>::sometimes(SOMETIMES_RERUN_AFTER_RELEASE, |_, s| {
                    s.tokens().iter().any(|t| t.runs >= 2)
                }),
            ),
            (
                routes.tokens(),
                Property::<Self>::always(clause::GATE_TOKEN_CHECK_BEFORE_CONSUME, |_, s| {
                    s.tokens()
                        .iter()
                        .all(|t| !t.spent || t.runs > t.releases || t.drift_spent)
                }),
            ),
            (
                routes.tokens(),
                Property::<Self>::sometimes(SOMETIMES_BINDING_REFUSED_UNSPENT, |_, s| {
                    s.has_seen(Observation::BindingRefused) && s.tokens().iter().any(|t| !t.spent)
                }),
            ),
            (
                routes.cli,
                Property::<Self>::always(clause::GATE_TOKEN_STATE_BOUND, |_, s| {
                    s.tokens().iter().all(|t| match t.kind {
                        TokenKind::Cli(evidence) => evidence.bound_to_retained,
                        TokenKind::Library => t.state_fp.is_none(),
                    })
                }),
            ),
            (
                routes.cli,
                Property::<Self>::sometimes(SOMETIMES_CLI_TOKEN_BOUND, |_, s| {
                    s.tokens()
                        .iter()
                        .any(|t| matches!(t.kind, TokenKind::Cli(_)) && t.state_fp.is_some())
                }),
            ),
            (
                routes.cli,
                Property::<Self>::always(clause::CLI_ELICIT_REQUIRES_RAISE, |_, s| {
                    s.tokens().iter().all(|t| match t.kind {
                        TokenKind::Cli(evidence) => evidence.raise_live,
                        TokenKind::Library => true,
                    })
                }),
            ),
            (
                routes.cli,
                Property::<Self>::sometimes(SOMETIMES_MINT_WITHOUT_RAISE_REFUSED, |_, s| {
                    s.has_seen(Observation::NoRaiseRefused)
                }),
            ),
            (
                routes.cli,
                Property::<Self>::always(clause::CLI_ELICIT_STATE_FP, |_, s| {
                    s.tokens().iter().all(|t| match t.kind {
                        TokenKind::Cli(evidence) => evidence.flag_matches,
                        TokenKind::Library => true,
                    })
                }),
            ),
            (
                routes.cli,
                Property::<Self>::sometimes(SOMETIMES_SUPERSEDED_FP_REFUSED, |_, s| {
                    s.has_seen(Observation::SupersededFpRefused)
                }),
            ),
            (
                routes.cli,
                Property::<Self>::always(clause::CLI_ELICIT_ONE_MINT_PER_RAISE, |_, s| {
                    s.tokens().iter().all(|t| match t.kind {
                        TokenKind::Cli(evidence) => evidence.prior_mints == 0,
                        TokenKind::Library => true,
                    })
                }),
            ),
            (
                routes.cli && self.bounds.max_tokens >= 2,
                Property::<Self>::sometimes(SOMETIMES_SECOND_MINT_REFUSED, |_, s| {
                    s.has_seen(Observation::SecondMintRefused)
                }),
            ),
            (
                routes.tokens(),
                Property::<Self>::always(clause::CLI_ELICIT_TTL_CAP, |m, s| {
                    let ttl = u16::from(m.config.ttl_ticks);
                    s.tokens()
                        .iter()
                        .all(|t| u16::from(t.expires_at) <= u16::from(t.issued_at) + ttl)
                }),
            ),
            (
                routes.cli && self.config.cli_ttl_ticks > self.config.ttl_ticks,
                Property::<Self>::sometimes(SOMETIMES_TTL_CAPPED, |_, s| {
                    s.has_seen(Observation::TtlCapped)
                }),
            ),
            // Release.
            (
                routes.tokens(),
                Property::<Self>::always(clause::RELEASE_NO_EFFECT_ONLY, |_, s| {
                    s.releases()
                        .iter()
                        .all(|r| matches!(r.after, ReleasePoint::Stage(stage) if stage.no_effect()))
                }),
            ),
            (
                routes.tokens(),
                Property::<Self>::sometimes(SOMETIMES_RELEASED, |_, s| !s.releases().is_empty()),
            ),
            (
                routes.tokens() && effect_stages,
                Property::<Self>::sometimes(SOMETIMES_KEPT_SPENT, |_, s| {
                    s.has_seen(Observation::KeptSpentAfterEffect)
                }),
            ),
            (
                routes.tokens(),
                Property::<Self>::always(clause::RELEASE_CUSTOM_VERIFIER, |_, s| {
                    s.releases().iter().all(release_allowed_by_verifier)
                }),
            ),
            (
                routes.tokens() && custom_release,
                Property::<Self>::sometimes(SOMETIMES_CUSTOM_RELEASE, |_, s| {
                    s.releases()
                        .iter()
                        .any(|r| r.verifier == Verifier::CustomWithRelease)
                }),
            ),
            (
                routes.tokens() && handler_level,
                Property::<Self>::sometimes(SOMETIMES_BUILTIN_RELEASE, |_, s| {
                    s.releases().iter().any(|r| {
                        r.verifier == Verifier::CustomWithoutRelease && r.tool.confirms_in_handler()
                    })
                }),
            ),
            // Drift.
            (
                true,
                Property::<Self>::always(clause::DRIFT_REFUSE, |_, s| {
                    s.applications().iter().all(|a| !a.drifted)
                }),
            ),
            (
                true,
                Property::<Self>::sometimes(SOMETIMES_DRIFT_REFUSED, |_, s| {
                    s.has_seen(Observation::DriftRefusedToken)
                        || s.has_seen(Observation::DriftRefusedState)
                        || s.has_seen(Observation::DriftRefusedShim)
                }),
            ),
            (
                routes.cli,
                Property::<Self>::sometimes(SOMETIMES_DRIFT_TOKEN, |_, s| {
                    s.has_seen(Observation::DriftRefusedToken)
                }),
            ),
            (
                routes.request_state,
                Property::<Self>::sometimes(SOMETIMES_DRIFT_STATE, |_, s| {
                    s.has_seen(Observation::DriftRefusedState)
                }),
            ),
            (
                routes.shim,
                Property::<Self>::sometimes(SOMETIMES_DRIFT_SHIM, |_, s| {
                    s.has_seen(Observation::DriftRefusedShim)
                }),
            ),
            (
                routes.tokens(),
                Property::<Self>::always(clause::DRIFT_TOKEN_SPENT, |_, s| {
                    s.tokens().iter().all(|t| !t.drift_spent || t.spent)
                        && s.releases().iter().all(|r| r.after != ReleasePoint::Drift)
                }),
            ),
            (
                routes.cli,
                Property::<Self>::sometimes(SOMETIMES_DRIFT_SPENT, |_, s| {
                    s.tokens().iter().any(|t| t.drift_spent)
                }),
            ),
            // Bindings and expiry.
            (
                true,
                Property::<Self>::always(clause::APPROVAL_BOUND, |_, s| {
                    s.applications().iter().all(|a| a.approval == a.call)
                }),
            ),
            (
                true,
                Property::<Self>::sometimes(SOMETIMES_BINDING_REFUSED, |_, s| {
                    s.has_seen(Observation::BindingRefused)
                }),
            ),
            (
                true,
                Property::<Self>::always(clause::APPROVAL_EXPIRY, |_, s| {
                    s.applications().iter().all(|a| !a.expired)
                }),
            ),
            (
                true,
                Property::<Self>::sometimes(SOMETIMES_EXPIRED_REFUSED, |_, s| {
                    s.has_seen(Observation::ExpiredRefused)
                }),
            ),
            // Round trips.
            (
                routes.round_trips(),
                Property::<Self>::always(clause::TRIP_ACCEPT_ONLY, |_, s| {
                    s.applications()
                        .iter()
                        .all(|a| a.answer.is_none_or(Answer::approves))
                }),
            ),
            (
                routes.round_trips(),
                Property::<Self>::sometimes(SOMETIMES_ACCEPT_APPLIED, |_, s| {
                    s.applications().iter().any(|a| a.answer.is_some())
                }),
            ),
            (
                routes.round_trips(),
                Property::<Self>::always(clause::TRIP_DECLINE, |_, s| {
                    s.applications().iter().all(|a| {
                        !matches!(
                            a.answer,
                            Some(Answer::Decline | Answer::Accept { approve: false })
                        )
                    })
                }),
            ),
            (
                routes.round_trips(),
                Property::<Self>::sometimes(SOMETIMES_DECLINED, |_, s| {
                    s.has_seen(Observation::Declined)
                }),
            ),
            (
                routes.round_trips(),
                Property::<Self>::always(clause::TRIP_CANCEL, |_, s| {
                    s.applications()
                        .iter()
                        .all(|a| a.answer != Some(Answer::Cancel))
                }),
            ),
            (
                routes.round_trips(),
                Property::<Self>::sometimes(SOMETIMES_CANCELLED, |_, s| {
                    s.has_seen(Observation::Cancelled)
                }),
            ),
            (
                routes.request_state,
                Property::<Self>::always(clause::TRIP_FORM_ONLY, |_, s| {
                    !s.has_seen(Observation::StateToFormless)
                }),
            ),
            (
                routes.request_state,
                Property::<Self>::sometimes(SOMETIMES_FORMLESS_RERAISED, |_, s| {
                    s.has_seen(Observation::FormlessReraised)
                }),
            ),
            (
                routes.shim,
                Property::<Self>::always(clause::TRIP_LEGACY_SHIM_CANCEL, |_, s| {
                    s.applications().iter().all(|a| !a.after_cancel)
                }),
            ),
            (
                routes.shim,
                Property::<Self>::sometimes(SOMETIMES_PROMPT_CANCELLED, |_, s| {
                    s.has_seen(Observation::PromptCancelled)
                }),
            ),
            // requestState replay.
            (
                routes.request_state && single_use,
                Property::<Self>::always(clause::STATE_EXT_SINGLE_USE, |_, s| {
                    s.request_states().iter().all(|r| r.applied <= 1)
                }),
            ),
            (
                routes.request_state && single_use,
                Property::<Self>::sometimes(SOMETIMES_CONSUMED_STATE_REFUSED, |_, s| {
                    s.has_seen(Observation::ConsumedStateRefused)
                }),
            ),
            (
                routes.request_state && !single_use,
                Property::<Self>::sometimes(SOMETIMES_STATE_REPLAYED, |_, s| {
                    s.request_states().iter().any(|r| r.applied >= 2)
                }),
            ),
        ]
    }
}

/// release.custom-verifier: a release goes through a verifier that implements it, or is a
/// handler-level confirmation refused by the write gate (the built-in verifier's case).
fn release_allowed_by_verifier(release: &ReleaseRecord) -> bool {
    release.verifier.implements_release()
        || (release.after == ReleasePoint::Stage(Stage::ConventionBlockedBeforeWrite)
            && release.tool.confirms_in_handler())
}

pub const SOMETIMES_RERUN_AFTER_RELEASE: &str =
    "gate.token.single-use: a released token is redeemed and runs again";
pub const SOMETIMES_BINDING_REFUSED_UNSPENT: &str =
    "gate.token.check-before-consume: a binding refusal leaves the token unspent";
pub const SOMETIMES_CLI_TOKEN_BOUND: &str =
    "gate.token.state-bound: a CLI token is bound to a raised state";
pub const SOMETIMES_MINT_WITHOUT_RAISE_REFUSED: &str =
    "cli.elicit.requires-raise: a mint with no raised request is refused";
pub const SOMETIMES_SUPERSEDED_FP_REFUSED: &str =
    "cli.elicit.state-fp: a mint naming a superseded fingerprint is refused";
pub const SOMETIMES_SECOND_MINT_REFUSED: &str =
    "cli.elicit.one-mint-per-raise: a second mint from one raised request is refused";
pub const SOMETIMES_TTL_CAPPED: &str =
    "cli.elicit.ttl-cap: a CLI token expires at the server's TTL, not the CLI config's longer one";
pub const SOMETIMES_FORMLESS_RERAISED: &str = "trip.form-only: a request without form elicitation presenting a dead state gets elicit_required";
pub const SOMETIMES_PROMPT_CANCELLED: &str =
    "trip.legacy-shim.cancel: a call is cancelled while its shim prompt is open";
pub const SOMETIMES_RELEASED: &str = "release.no-effect-only: a token is released";
pub const SOMETIMES_KEPT_SPENT: &str =
    "release.keeps-spent: a token stays spent after a possible effect";
pub const SOMETIMES_CUSTOM_RELEASE: &str =
    "release.custom-verifier: a custom verifier with release gives a token back";
pub const SOMETIMES_BUILTIN_RELEASE: &str = "release.builtin-verifier: a handler-level confirmation is released despite a custom verifier without release";
pub const SOMETIMES_DRIFT_REFUSED: &str = "drift.refuse: a drifted approval is refused";
pub const SOMETIMES_DRIFT_TOKEN: &str = "drift.every-route: drift is refused on a CLI token";
pub const SOMETIMES_DRIFT_STATE: &str = "drift.every-route: drift is refused on a requestState";
pub const SOMETIMES_DRIFT_SHIM: &str = "drift.every-route: drift is refused on the legacy shim";
pub const SOMETIMES_DRIFT_SPENT: &str = "drift.token-spent: a token is spent by drift";
pub const SOMETIMES_BINDING_REFUSED: &str =
    "approval.bound: an approval presented by another caller, vault or call is refused";
pub const SOMETIMES_EXPIRED_REFUSED: &str = "approval.expiry: an expired approval is refused";
pub const SOMETIMES_ACCEPT_APPLIED: &str = "trip.accept-only: an accepted round trip applies";
pub const SOMETIMES_DECLINED: &str = "trip.decline: a decline stops a call";
pub const SOMETIMES_CANCELLED: &str = "trip.cancel: a cancel stops a call";
pub const SOMETIMES_CONSUMED_STATE_REFUSED: &str =
    "state.ext.single-use: a consumed requestState is refused";
pub const SOMETIMES_STATE_REPLAYED: &str =
    "state.replayable: a requestState applies twice within its TTL";

impl Model for GateChecker {
    type State = GateModel;
    type Action = Action;

    fn init_states(&self) -> Vec<GateModel> {
        vec![GateModel::new(self.config)]
    }

    fn actions(&self, state: &GateModel, actions: &mut Vec<Action>) {
        let bounds = &self.bounds;
        let routes = bounds.routes;
        let room_for_token = state.tokens().len() < usize::from(bounds.max_tokens);
        for &call in &bounds.origins {
            if routes.cli {
                actions.push(Action::Raise { call, form: false });
            }
            if routes.request_state && state.request_states().len() < usize::from(bounds.max_states)
            {
                actions.push(Action::Raise { call, form: true });
            }
            if routes.shim && state.prompts().len() < usize::from(bounds.max_prompts) {
                actions.push(Action::ShimPrompt { call });
            }
            if routes.cli && room_for_token {
                for (i, presenter) in self.presenters(&call).into_iter().enumerate() {
                    if i == 0 {
                        for state_fp in [
                            FpChoice::Omitted,
                            FpChoice::Retained,
                            FpChoice::Superseded,
                            FpChoice::Unknown,
                        ] {
                            actions.push(Action::Mint { call, state_fp });
                        }
                    } else if presenter.tool == call.tool {
                        // Another caller or vault than the raise: only the flagless mint.
                        actions.push(Action::Mint {
                            call: presenter,
                            state_fp: FpChoice::Omitted,
                        });
                    }
                }
            }
            if routes.library && room_for_token {
                actions.push(Action::IssueUnbound { call });
            }
        }
        for (index, token) in state.tokens().iter().enumerate() {
            let tok = Tok(u8::try_from(index).unwrap_or(u8::MAX));
            for (i, call) in self.presenters(&token.binding).into_iter().enumerate() {
                if i > 0 {
                    actions.push(Action::RedeemToken {
                        tok,
                        call,
                        stage: Stage::Applied,
                        verifier: Verifier::Builtin,
                    });
                    continue;
                }
                for &stage in &bounds.stages {
                    // The verifier only decides anything where a release is possible.
                    let verifiers: &[Verifier] = if stage.no_effect() {
                        &bounds.verifiers
                    } else {
                        &[Verifier::Builtin]
                    };
                    for &verifier in verifiers {
                        actions.push(Action::RedeemToken {
                            tok,
                            call,
                            stage,
                            verifier,
                        });
                    }
                }
            }
        }
        for (index, record) in state.request_states().iter().enumerate() {
            let handle = StateRef(u8::try_from(index).unwrap_or(u8::MAX));
            for (i, call) in self.presenters(&record.call).into_iter().enumerate() {
                let answers: &[Answer] = if i == 0 {
                    &Answer::ALL
                } else {
                    &[Answer::Accept { approve: true }]
                };
                for &answer in answers {
                    actions.push(Action::RedeemState {
                        state: handle,
                        call,
                        answer,
                        form: true,
                    });
                }
                if i == 0 {
                    // The same client resubmitting from a request without form elicitation.
                    actions.push(Action::RedeemState {
                        state: handle,
                        call,
                        answer: Answer::Accept { approve: true },
                        form: false,
                    });
                }
            }
        }
        for index in 0..state.prompts().len() {
            let prompt = PromptRef(u8::try_from(index).unwrap_or(u8::MAX));
            for answer in Answer::ALL {
                actions.push(Action::ShimAnswer { prompt, answer });
            }
            actions.push(Action::ShimCancel { prompt });
        }
        let mut targets: Vec<(Vault, Note)> = bounds
            .origins
            .iter()
            .filter_map(|call| call.target())
            .collect();
        targets.sort();
        targets.dedup();
        for (vault, note) in targets {
            if state.version(vault, note) < bounds.max_versions {
                actions.push(Action::ChangeTarget { vault, note });
            }
        }
        if state.now() < bounds.max_ticks {
            actions.push(Action::AdvanceClock);
        }
    }

    fn next_state(&self, last: &GateModel, action: Action) -> Option<GateModel> {
        let mut next = last.clone();
        next.apply(&action);
        // Raised requests are read by mints alone; once no mint can happen they are dead state.
        if !self.bounds.routes.cli || next.tokens().len() >= usize::from(self.bounds.max_tokens) {
            next.forget_raised();
        }
        // A refused state is answered with a fresh one; the explored client never uses more
        // than `max_states`, so the surplus is dropped rather than the refusal pruned.
        next.forget_states_beyond(usize::from(self.bounds.max_states));
        Some(next)
    }

    fn within_boundary(&self, state: &GateModel) -> bool {
        let bounds = &self.bounds;
        state.tokens().iter().all(|t| t.runs <= bounds.max_runs)
            && state
                .request_states()
                .iter()
                .all(|r| r.applied <= bounds.max_runs)
            && state.now() <= bounds.max_ticks
            && state
                .versions()
                .iter()
                .all(|&v| v <= bounds.max_versions.saturating_add(bounds.max_runs))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        self.property_table()
            .into_iter()
            .filter_map(|(relevant, property)| relevant.then_some(property))
            .collect()
    }
}
