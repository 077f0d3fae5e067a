//! The gate as a pure, deterministic state machine: [`GateModel::apply`] takes one [`Action`] and
//! answers the [`Outcome`] the specification demands (spec/ clauses gate.*,
//! cli.elicit.*, release.*, drift.*, approval.*, state.*, trip.*).
//!
//! Besides the state the gate itself keeps (raised requests, tokens, issued requestStates, open
//! shim prompts, the targets' contents, the clock) the model keeps *ghost* history that no
//! implementation needs but the properties of [`crate::GateChecker`] judge: how often each
//! token's call was dispatched past the gate and released, every application with the approval's
//! binding next to the redeeming call, whether the target had drifted or the approval expired at
//! that moment, the answer that approved it, and the evidence each CLI mint was made on. The
//! decisions in `apply` and the ghost records are computed separately, so a seeded [`Defects`]
//! flag that bends a decision leaves a ghost record that a property rejects.
//!
//! "Applied" means the handler ran to completion with its effect; for a path tool the effect is a
//! write to its note, which changes the note (a later approval about it would see drift).

use std::collections::{BTreeMap, BTreeSet};

use crate::clause;
use crate::vocab::{
    Action, Answer, Call, Fp, FpChoice, Note, Outcome, PromptRef, Refusal, RefusalKind, Stage,
    StateRef, Tok, TokenFate, Tool, Vault, Verifier,
};

/// How a requestState is treated once it approved a call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestStateMode {
    /// The default: authenticated and expiring, not consumed (state.replayable).
    #[default]
    Replayable,
    /// (extension) The consumed-state store: a requestState applies at most once
    /// (state.ext.single-use).
    SingleUse,
}

/// Seeded defects: each bends one decision of the gate so that a test can show
/// the checker notices. All off by default; a real configuration never sets any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Defects {
    /// Consume a token (or open a state) without comparing the caller.
    pub skip_caller_check: bool,
    /// Consume a token (or open a state) without comparing the vault.
    pub skip_vault_check: bool,
    /// Honour a CLI or library token after its expiry.
    pub skip_token_expiry: bool,
    /// Consume without `WHERE consumed_at IS NULL`: a spent token passes again.
    pub skip_consumed_check: bool,
    /// Spend the token first and check its bindings afterwards.
    pub consume_before_check: bool,
    /// Give the token back after an error the handler raised itself.
    pub release_after_handler_error: bool,
    /// Give the token back after `replay_drift`.
    pub release_on_drift: bool,
    /// Release through a custom verifier even when it does not implement `release`.
    pub custom_verifier_always_releases: bool,
    /// Never compare the recorded fingerprint with the target's current one.
    pub skip_drift_check: bool,
    /// Accept a requestState (or a shim answer) after its TTL.
    pub accept_expired_state: bool,
    /// Treat `cancel` as an approval.
    pub cancel_as_approval: bool,
    /// Treat `decline` and `accept` with `approve: false` as an approval.
    pub decline_as_approval: bool,
    /// Let the CLI mint with no raised request (the token then binds on args_hash alone).
    pub mint_without_raise: bool,
    /// Let the CLI mint whatever `--state-fp` names.
    pub accept_superseded_fp: bool,
    /// With the single-use extension, never consult the consumed-state store.
    pub state_store_ignored: bool,
    /// Leave the raised request in place after a mint, so it backs a second token.
    pub mint_keeps_raise: bool,
    /// Give a minted token the TTL of the CLI's own configuration instead of the server's.
    pub mint_uses_cli_ttl: bool,
    /// Offer a fresh requestState to a request without form elicitation.
    pub state_to_formless_client: bool,
    /// Keep a shim prompt open after its call was cancelled, so a later answer applies it.
    pub cancel_leaves_prompt_open: bool,
}

/// The fixed parameters of a model instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModelConfig {
    /// Caller handles in use (`Caller(n)` is taken modulo this).
    pub callers: u8,
    /// Vaults configured (`Vault(n)` is taken modulo this).
    pub vaults: u8,
    /// Notes per vault, which is also the number of argument variants per tool.
    pub notes: u8,
    /// The confirmation TTL in ticks: an approval issued at tick `t` is valid while
    /// `now < t + ttl_ticks` and expired from `t + ttl_ticks` on.
    pub ttl_ticks: u8,
    /// The TTL of the configuration `obsidian-tc elicit` runs with, which may differ from the
    /// server's (a mint honours the server's, recorded with the raised request:
    /// cli.elicit.ttl-cap).
    pub cli_ttl_ticks: u8,
    pub request_state_mode: RequestStateMode,
    pub defects: Defects,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            callers: 2,
            vaults: 2,
            notes: 1,
            ttl_ticks: 2,
            cli_ttl_ticks: 3,
            request_state_mode: RequestStateMode::Replayable,
            defects: Defects::default(),
        }
    }
}

impl ModelConfig {
    /// `call` with its handles taken modulo the configured counts.
    pub fn normalize_call(&self, call: &Call) -> Call {
        Call {
            caller: crate::Caller(call.caller.0 % self.callers.max(1)),
            vault: Vault(call.vault.0 % self.vaults.max(1)),
            tool: call.tool,
            args: crate::Args(call.args.0 % self.notes.max(1)),
        }
    }
}

/// The raised request retained for one (vault, tool and args, caller).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RaisedRequest {
    pub fp: Fp,
    /// The fingerprint of the live request this one superseded, if any (gate.raise.supersede).
    pub superseded_fp: Option<Fp>,
    pub raised_at: u8,
    /// Ghost: tokens minted from this request. A mint consumes the request, so this stays 0
    /// unless a seeded defect keeps it (cli.elicit.one-mint-per-raise).
    pub mints: u8,
}

/// Ghost: what the CLI knew when it minted, judged by cli.elicit.* and gate.token.state-bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MintEvidence {
    /// A live raised request existed for exactly this vault, args_hash and caller.
    pub raise_live: bool,
    /// `--state-fp` was omitted or named the retained request's own fingerprint.
    pub flag_matches: bool,
    /// The token's state binding is the retained request's fingerprint.
    pub bound_to_retained: bool,
    /// Tokens the backing raised request had already backed before this one.
    pub prior_mints: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TokenKind {
    /// Minted by `obsidian-tc elicit`.
    Cli(MintEvidence),
    /// Issued by a library caller with `issue_unbound` (gate.token.unbound-library).
    Library,
}

/// A token as the gate stores it, plus ghost counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenRecord {
    /// The vault, tool, args and caller the token is bound to.
    pub binding: Call,
    /// The state binding (`None` for an unbound token).
    pub state_fp: Option<Fp>,
    pub kind: TokenKind,
    pub issued_at: u8,
    /// The tick from which the token is expired.
    pub expires_at: u8,
    pub spent: bool,
    /// Ghost: times a redemption cleared every check and the call was dispatched to its stage.
    pub runs: u8,
    /// Ghost: times the token was given back.
    pub releases: u8,
    /// Ghost: the token was once refused for drift.
    pub drift_spent: bool,
}

/// A requestState handed out by a raise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestStateRecord {
    /// What the state is sealed with (state.seal.aad).
    pub call: Call,
    pub fp: Fp,
    pub issued_at: u8,
    /// In the consumed-state store (single-use extension only).
    pub consumed: bool,
    /// Ghost: times it approved a call that applied.
    pub applied: u8,
}

/// An open legacy-shim prompt: the handler waits for the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PromptRecord {
    pub call: Call,
    pub fp: Fp,
    pub issued_at: u8,
    /// Its call was cancelled (only ever true under a seeded defect, which keeps it open).
    pub cancelled: bool,
}

/// The route an approval arrived by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Route {
    CliToken,
    LibraryToken,
    RequestState,
    Shim,
}

/// Ghost: one application of a gated call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Application {
    pub route: Route,
    /// The call the approval was bound to.
    pub approval: Call,
    /// The call that was applied.
    pub call: Call,
    /// The approval carried a fingerprint and the target's differed at application time.
    pub drifted: bool,
    /// The approval had expired at application time.
    pub expired: bool,
    /// The answer that approved it (round trips only).
    pub answer: Option<Answer>,
    /// The call had been cancelled while its shim prompt was open.
    pub after_cancel: bool,
}

/// Ghost: after what a token was given back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReleasePoint {
    Stage(Stage),
    Drift,
}

/// Ghost: one release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReleaseRecord {
    pub after: ReleasePoint,
    pub verifier: Verifier,
    pub tool: Tool,
}

/// Ghost: situations the checker's `sometimes` properties look for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Observation {
    /// An approval presented by another caller, vault, tool or arguments was refused.
    BindingRefused,
    DriftRefusedToken,
    DriftRefusedState,
    DriftRefusedShim,
    /// An expired approval was presented and refused.
    ExpiredRefused,
    /// A decline (or accept with approve false) stopped a call.
    Declined,
    /// A cancel stopped a call.
    Cancelled,
    /// The CLI refused a mint for want of a raised request.
    NoRaiseRefused,
    /// The CLI refused a `--state-fp` naming a fingerprint a newer request replaced.
    SupersededFpRefused,
    /// A requestState already in the consumed-state store was refused.
    ConsumedStateRefused,
    /// A token stayed spent after a stage where the call may have had an effect.
    KeptSpentAfterEffect,
    /// A second mint for a blocked call whose raised request already backed a token was
    /// refused.
    SecondMintRefused,
    /// A CLI token expired at the server's TTL while the CLI's configuration said longer.
    TtlCapped,
    /// A request without form elicitation presented a requestState that did not open and was
    /// answered `elicit_required`.
    FormlessReraised,
    /// A call was cancelled while its shim prompt was open.
    PromptCancelled,
    /// A requestState was issued to a request without form elicitation (trip.form-only
    /// forbids it; only a seeded defect gets here).
    StateToFormless,
}

impl Observation {
    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

/// The whole state of the gate and its world. `Hash`/`Eq` cover everything, ghost included, so
/// the checker never merges two states a property could tell apart.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GateModel {
    config: ModelConfig,
    now: u8,
    /// Content version of each note, indexed `vault * notes + note`.
    versions: Vec<u8>,
    raised: BTreeMap<Call, RaisedRequest>,
    tokens: Vec<TokenRecord>,
    states: Vec<RequestStateRecord>,
    prompts: Vec<PromptRecord>,
    applications: BTreeSet<Application>,
    releases: BTreeSet<ReleaseRecord>,
    seen: u32,
}

fn index_u8(index: usize) -> u8 {
    u8::try_from(index).unwrap_or(u8::MAX)
}

impl GateModel {
    pub fn new(config: ModelConfig) -> Self {
        let notes = usize::from(config.vaults.max(1)) * usize::from(config.notes.max(1));
        GateModel {
            config,
            now: 0,
            versions: vec![0; notes],
            raised: BTreeMap::new(),
            tokens: Vec::new(),
            states: Vec::new(),
            prompts: Vec::new(),
            applications: BTreeSet::new(),
            releases: BTreeSet::new(),
            seen: 0,
        }
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }
    /// The current tick.
    pub fn now(&self) -> u8 {
        self.now
    }
    /// Live raised requests by (caller, vault, tool, args).
    pub fn raised(&self) -> &BTreeMap<Call, RaisedRequest> {
        &self.raised
    }
    /// Tokens in issue order ([`Tok`] indexes them modulo their count).
    pub fn tokens(&self) -> &[TokenRecord] {
        &self.tokens
    }
    /// requestStates in issue order ([`StateRef`] indexes them modulo their count).
    pub fn request_states(&self) -> &[RequestStateRecord] {
        &self.states
    }
    /// Open shim prompts in the order they were opened ([`PromptRef`] indexes them).
    pub fn prompts(&self) -> &[PromptRecord] {
        &self.prompts
    }
    pub fn applications(&self) -> &BTreeSet<Application> {
        &self.applications
    }
    pub fn releases(&self) -> &BTreeSet<ReleaseRecord> {
        &self.releases
    }
    pub fn has_seen(&self, observation: Observation) -> bool {
        self.seen & observation.bit() != 0
    }

    /// The token `tok` designates (index-modulo), if any was issued.
    pub fn resolve_tok(&self, tok: Tok) -> Option<usize> {
        modulo(tok.0, self.tokens.len())
    }
    /// The requestState `state` designates (index-modulo), if any was issued.
    pub fn resolve_state(&self, state: StateRef) -> Option<usize> {
        modulo(state.0, self.states.len())
    }
    /// The open prompt `prompt` designates (index-modulo), if any is open.
    pub fn resolve_prompt(&self, prompt: PromptRef) -> Option<usize> {
        modulo(prompt.0, self.prompts.len())
    }

    /// Every note's version, indexed `vault * notes + note`.
    pub fn versions(&self) -> &[u8] {
        &self.versions
    }

    /// How many times the note has changed.
    pub fn version(&self, vault: Vault, note: Note) -> u8 {
        self.versions
            .get(self.note_index(vault, note))
            .copied()
            .unwrap_or(0)
    }

    /// The fingerprint of the call's confirmation targets as they are now.
    pub fn fp_of(&self, call: &Call) -> Fp {
        match call.target() {
            None => Fp::Empty,
            Some((vault, note)) => Fp::Note {
                vault,
                note,
                version: self.version(vault, note),
            },
        }
    }

    /// Whether something issued at `issued_at` has expired by now.
    pub fn is_expired(&self, issued_at: u8) -> bool {
        u16::from(self.now) >= u16::from(issued_at) + u16::from(self.config.ttl_ticks)
    }

    /// The raised request retained for `call`'s vault, args_hash and caller, unless it expired
    /// (an expired request counts as swept: gate.raise.sweep).
    pub fn live_raise(&self, call: &Call) -> Option<&RaisedRequest> {
        self.raised
            .get(call)
            .filter(|request| !self.is_expired(request.raised_at))
    }

    fn note_index(&self, vault: Vault, note: Note) -> usize {
        usize::from(vault.0 % self.config.vaults.max(1)) * usize::from(self.config.notes.max(1))
            + usize::from(note.0 % self.config.notes.max(1))
    }

    fn change_note(&mut self, vault: Vault, note: Note) {
        let index = self.note_index(vault, note);
        if let Some(version) = self.versions.get_mut(index) {
            *version = version.saturating_add(1);
        }
    }

    /// The handler's effect: a path tool writes its note.
    fn take_effect(&mut self, call: &Call) {
        if let Some((vault, note)) = call.target() {
            self.change_note(vault, note);
        }
    }

    /// Drops every raised request. Only for a checker that has established that nothing can read
    /// them any more (no mint can happen from this state on): it merges states that differ in
    /// nothing observable.
    pub(crate) fn forget_raised(&mut self) {
        self.raised.clear();
    }

    /// Drops requestStates beyond the first `keep`: for a checker modelling a client that never
    /// presents the fresh states it is offered beyond that many (a behaviour a client may have).
    pub(crate) fn forget_states_beyond(&mut self, keep: usize) {
        self.states.truncate(keep);
    }

    fn observe(&mut self, observation: Observation) {
        self.seen |= observation.bit();
    }

    /// Applies one action and answers the gate's outcome. Deterministic; never panics.
    pub fn apply(&mut self, action: &Action) -> Outcome {
        match action.normalized(&self.config) {
            Action::Raise { call, form } => self.raise(call, form),
            Action::Mint { call, state_fp } => self.mint(call, state_fp),
            Action::IssueUnbound { call } => self.issue_unbound(call),
            Action::RedeemToken {
                tok,
                call,
                stage,
                verifier,
            } => self.redeem_token(tok, call, stage, verifier),
            Action::RedeemState {
                state,
                call,
                answer,
                form,
            } => self.redeem_state(state, call, answer, form),
            Action::ShimPrompt { call } => self.shim_prompt(call),
            Action::ShimAnswer { prompt, answer } => self.shim_answer(prompt, answer),
            Action::ShimCancel { prompt } => self.shim_cancel(prompt),
            Action::ChangeTarget { vault, note } => {
                self.change_note(vault, note);
                Outcome::TargetChanged
            }
            Action::AdvanceClock => {
                self.now = self.now.saturating_add(1);
                self.sweep();
                Outcome::ClockAdvanced
            }
            Action::Reopen => Outcome::Reopened,
        }
    }

    /// gate.raise.sweep: expired raised requests are dropped, so a later raise under the same
    /// key starts afresh with nothing superseded.
    fn sweep(&mut self) {
        let (now, ttl) = (self.now, self.config.ttl_ticks);
        self.raised
            .retain(|_, request| u16::from(now) < u16::from(request.raised_at) + u16::from(ttl));
    }

    // r[impl gate.raise.record]
    // r[impl gate.raise.supersede]
    fn record_raise(&mut self, call: Call) -> Fp {
        let fp = self.fp_of(&call);
        let superseded_fp = self.live_raise(&call).map(|request| request.fp);
        self.raised.insert(
            call,
            RaisedRequest {
                fp,
                superseded_fp,
                raised_at: self.now,
                mints: 0,
            },
        );
        fp
    }

    fn raise(&mut self, call: Call, form: bool) -> Outcome {
        let (state_fp, request_state) = self.raise_with_state(call, form, form);
        Outcome::Raised {
            state_fp,
            request_state,
        }
    }

    /// gate.token.refused, state.invalid-fresh: the call is answered as one without approval,
    /// with a fresh requestState when `offer` (trip.form-only: the request declared form
    /// elicitation, which `form` records for the ghost).
    fn reraise(&mut self, refusal: Refusal, call: Call, offer: bool, form: bool) -> Outcome {
        self.observe_refusal(refusal.kind);
        let (state_fp, request_state) = self.raise_with_state(call, offer, form);
        Outcome::Reraised {
            refusal,
            state_fp,
            request_state,
        }
    }

    // r[impl trip.form-only]
    fn raise_with_state(&mut self, call: Call, offer: bool, form: bool) -> (Fp, Option<StateRef>) {
        let state_fp = self.record_raise(call);
        let request_state = offer.then(|| {
            self.states.push(RequestStateRecord {
                call,
                fp: state_fp,
                issued_at: self.now,
                consumed: false,
                applied: 0,
            });
            if !form {
                self.observe(Observation::StateToFormless);
            }
            StateRef(index_u8(self.states.len() - 1))
        });
        (state_fp, request_state)
    }

    /// What `--state-fp` names for a mint of `call` with `choice`: `None` for no flag,
    /// `Some(Some(fp))` for that fingerprint (a driver passes the implementation's fingerprint
    /// recorded for it), `Some(None)` for a fingerprint that was never stored (a driver passes
    /// any well-formed fingerprint it never saw). An implementation tells a superseded
    /// fingerprint from an unknown one in its message; both are [`RefusalKind::StaleStateFp`].
    pub fn state_fp_flag(&self, call: &Call, choice: FpChoice) -> Option<Option<Fp>> {
        let live = self.live_raise(&self.config.normalize_call(call));
        match choice {
            FpChoice::Omitted => None,
            FpChoice::Retained => Some(live.map(|request| request.fp)),
            FpChoice::Superseded => Some(live.and_then(|request| request.superseded_fp)),
            FpChoice::Unknown => Some(None),
        }
    }

    // r[impl cli.elicit.requires-raise]
    // r[impl cli.elicit.state-fp]
    // r[impl cli.elicit.one-mint-per-raise]
    // r[impl cli.elicit.ttl-cap]
    fn mint(&mut self, call: Call, choice: FpChoice) -> Outcome {
        let defects = self.config.defects;
        let live = self.live_raise(&call).copied();
        let flag = self.state_fp_flag(&call, choice);
        let retained = live.map(|request| request.fp);
        let flag_matches = match flag {
            None => true,
            Some(named) => named.is_some() && named == retained,
        };
        let Some(request) = live else {
            if !defects.mint_without_raise {
                self.observe(Observation::NoRaiseRefused);
                let minted_now = self.tokens.iter().any(|t| {
                    t.binding == call
                        && t.issued_at == self.now
                        && matches!(t.kind, TokenKind::Cli(_))
                });
                if minted_now {
                    self.observe(Observation::SecondMintRefused);
                }
                return Outcome::MintRefused(Refusal::new(
                    clause::CLI_ELICIT_REQUIRES_RAISE,
                    RefusalKind::NoRaise,
                ));
            }
            let expires_at = self.cli_token_expiry();
            return self.push_token(
                call,
                None,
                TokenKind::Cli(MintEvidence {
                    raise_live: false,
                    flag_matches,
                    bound_to_retained: false,
                    prior_mints: 0,
                }),
                expires_at,
            );
        };
        if !flag_matches && !defects.accept_superseded_fp {
            if choice == FpChoice::Superseded
                && request
                    .superseded_fp
                    .is_some_and(|superseded| superseded != request.fp)
            {
                self.observe(Observation::SupersededFpRefused);
            }
            return Outcome::MintRefused(Refusal::new(
                clause::CLI_ELICIT_STATE_FP,
                RefusalKind::StaleStateFp,
            ));
        }
        // gate.token.state-bound: the token binds the state the request was raised against,
        // with or without the flag.
        let bound = Some(request.fp);
        // cli.elicit.one-mint-per-raise: the mint consumes the raised request.
        if defects.mint_keeps_raise {
            if let Some(kept) = self.raised.get_mut(&call) {
                kept.mints = kept.mints.saturating_add(1);
            }
        } else {
            self.raised.remove(&call);
        }
        let expires_at = self.cli_token_expiry();
        self.push_token(
            call,
            bound,
            TokenKind::Cli(MintEvidence {
                raise_live: true,
                flag_matches,
                bound_to_retained: bound == retained,
                prior_mints: request.mints,
            }),
            expires_at,
        )
    }

    /// cli.elicit.ttl-cap: a minted token lives for the TTL the raised request recorded (the
    /// server's), not the one of the CLI's configuration.
    fn cli_token_expiry(&self) -> u8 {
        let ttl = if self.config.defects.mint_uses_cli_ttl {
            self.config.cli_ttl_ticks
        } else {
            self.config.ttl_ticks
        };
        self.now.saturating_add(ttl)
    }

    fn issue_unbound(&mut self, call: Call) -> Outcome {
        let expires_at = self.now.saturating_add(self.config.ttl_ticks);
        self.push_token(call, None, TokenKind::Library, expires_at)
    }

    fn push_token(
        &mut self,
        binding: Call,
        state_fp: Option<Fp>,
        kind: TokenKind,
        expires_at: u8,
    ) -> Outcome {
        self.tokens.push(TokenRecord {
            binding,
            state_fp,
            kind,
            issued_at: self.now,
            expires_at,
            spent: false,
            runs: 0,
            releases: 0,
            drift_spent: false,
        });
        Outcome::Minted(Tok(index_u8(self.tokens.len() - 1)))
    }

    /// The first binding that `call` breaks, in the order vault, args_hash, caller
    /// (approval.bound), honouring the seeded defects.
    fn binding_refusal(&self, approval: &Call, call: &Call) -> Option<RefusalKind> {
        let defects = self.config.defects;
        if approval.vault != call.vault && !defects.skip_vault_check {
            Some(RefusalKind::WrongVault)
        } else if !approval.same_args_hash(call) {
            Some(RefusalKind::WrongArgs)
        } else if approval.caller != call.caller && !defects.skip_caller_check {
            Some(RefusalKind::WrongCaller)
        } else {
            None
        }
    }

    /// Redeems a CLI or library token. Order (a driver's implementation must agree): unknown
    /// token; vault, args_hash, caller (approval.bound); expiry (gate.token.expired); the atomic
    /// consume (gate.token.single-use) — each of these refusals answers the call as one without
    /// approval, recording a fresh raise (gate.token.refused); then drift for a state-bound token
    /// (`replay_drift`, token stays spent, no raise); then the call runs to `stage`.
    // r[impl gate.token.check-before-consume]
    // r[impl release.no-effect-only]
    fn redeem_token(&mut self, tok: Tok, call: Call, stage: Stage, verifier: Verifier) -> Outcome {
        let defects = self.config.defects;
        let Some(index) = self.resolve_tok(tok) else {
            let unknown = Refusal::new(clause::GATE_TOKEN_REFUSED, RefusalKind::UnknownToken);
            return self.reraise(unknown, call, false, false);
        };
        let token = self.tokens[index];
        let token_expired = self.now >= token.expires_at;
        let check = match self.binding_refusal(&token.binding, &call) {
            Some(kind) => Some(Refusal::new(clause::APPROVAL_BOUND, kind)),
            None if token_expired && !defects.skip_token_expiry => {
                let cli_would_allow = u16::from(self.now)
                    < u16::from(token.issued_at) + u16::from(self.config.cli_ttl_ticks);
                if matches!(token.kind, TokenKind::Cli(_)) && cli_would_allow {
                    self.observe(Observation::TtlCapped);
                }
                Some(Refusal::new(
                    clause::GATE_TOKEN_EXPIRED,
                    RefusalKind::Expired,
                ))
            }
            None => None,
        };
        let spent_refusal = (token.spent && !defects.skip_consumed_check)
            .then(|| Refusal::new(clause::GATE_TOKEN_SINGLE_USE, RefusalKind::AlreadySpent));
        let refusal = if defects.consume_before_check {
            let refusal = spent_refusal.or(check);
            self.tokens[index].spent = true;
            refusal
        } else {
            check.or(spent_refusal)
        };
        if let Some(refusal) = refusal {
            return self.reraise(refusal, call, false, false);
        }
        self.tokens[index].spent = true;

        let current = self.fp_of(&call);
        let drifted = token.state_fp.is_some_and(|fp| fp != current);
        if drifted && !defects.skip_drift_check {
            self.tokens[index].drift_spent = true;
            self.observe(Observation::DriftRefusedToken);
            if defects.release_on_drift {
                self.release(index, ReleasePoint::Drift, verifier);
            }
            return Outcome::Refused(Refusal::new(clause::DRIFT_REFUSE, RefusalKind::Drift));
        }

        self.tokens[index].runs = self.tokens[index].runs.saturating_add(1);
        if stage == Stage::Applied {
            let route = match token.kind {
                TokenKind::Cli(_) => Route::CliToken,
                TokenKind::Library => Route::LibraryToken,
            };
            // Ghost: judged by the server's TTL from the mint, whatever the token recorded.
            let expired = self.is_expired(token.issued_at);
            self.applications.insert(Application {
                route,
                approval: token.binding,
                call,
                drifted,
                expired,
                answer: None,
                after_cancel: false,
            });
            self.take_effect(&call);
            return Outcome::Applied;
        }
        let gives_back = if stage.no_effect() {
            verifier.implements_release()
                || defects.custom_verifier_always_releases
                // release.builtin-verifier: a handler-level confirmation refused by the write
                // gate before any write goes back through the built-in verifier.
                || (stage == Stage::ConventionBlockedBeforeWrite
                    && token.binding.tool.confirms_in_handler())
        } else {
            defects.release_after_handler_error && stage == Stage::HandlerError
        };
        if gives_back {
            self.release(index, ReleasePoint::Stage(stage), verifier);
            Outcome::AfterGate {
                stage,
                fate: TokenFate::Released,
            }
        } else {
            if !stage.no_effect() {
                self.observe(Observation::KeptSpentAfterEffect);
            }
            Outcome::AfterGate {
                stage,
                fate: TokenFate::KeptSpent,
            }
        }
    }

    // r[impl release.restores]
    fn release(&mut self, index: usize, after: ReleasePoint, verifier: Verifier) {
        let token = &mut self.tokens[index];
        token.spent = false;
        token.releases = token.releases.saturating_add(1);
        let tool = token.binding.tool;
        self.releases.insert(ReleaseRecord {
            after,
            verifier,
            tool,
        });
    }

    fn observe_refusal(&mut self, kind: RefusalKind) {
        match kind {
            RefusalKind::WrongVault
            | RefusalKind::WrongArgs
            | RefusalKind::WrongCaller
            | RefusalKind::StateMismatch => self.observe(Observation::BindingRefused),
            RefusalKind::Expired => self.observe(Observation::ExpiredRefused),
            RefusalKind::Declined => self.observe(Observation::Declined),
            RefusalKind::NotObtained => self.observe(Observation::Cancelled),
            _ => {}
        }
    }

    /// The answer's verdict: `None` when it approves (trip.accept-only).
    fn answer_refusal(&self, answer: Answer) -> Option<Refusal> {
        let defects = self.config.defects;
        match answer {
            Answer::Accept { approve: true } => None,
            Answer::Accept { approve: false } | Answer::Decline if !defects.decline_as_approval => {
                Some(Refusal::new(clause::TRIP_DECLINE, RefusalKind::Declined))
            }
            Answer::Cancel if !defects.cancel_as_approval => {
                Some(Refusal::new(clause::TRIP_CANCEL, RefusalKind::NotObtained))
            }
            _ => None,
        }
    }

    /// Redeems a requestState. Order: does it open at all, was it sealed for the presented
    /// call (approval.bound, state.seal.aad), has it expired (state.ttl) — a state that does not
    /// open is answered as a call without approval, with a fresh raise and requestState
    /// (state.invalid-fresh); then the answer (trip.*); with the extension the consumed-state
    /// store (state.ext.single-use, marked before the drift check, never given back); drift
    /// (drift.refuse).
    fn redeem_state(&mut self, state: StateRef, call: Call, answer: Answer, form: bool) -> Outcome {
        let defects = self.config.defects;
        // trip.form-only: a request without form elicitation is never offered a requestState.
        let offer = form || defects.state_to_formless_client;
        let Some(index) = self.resolve_state(state) else {
            let invalid = Refusal::new(clause::STATE_INVALID_FRESH, RefusalKind::InvalidState);
            return self.reraise_state(invalid, call, offer, form);
        };
        let record = self.states[index];
        let unopened = if self.binding_refusal(&record.call, &call).is_some() {
            Some(Refusal::new(
                clause::APPROVAL_BOUND,
                RefusalKind::StateMismatch,
            ))
        } else if self.is_expired(record.issued_at) && !defects.accept_expired_state {
            Some(Refusal::new(clause::STATE_TTL, RefusalKind::Expired))
        } else {
            None
        };
        if let Some(refusal) = unopened {
            return self.reraise_state(refusal, call, offer, form);
        }
        if let Some(refusal) = self.answer_refusal(answer) {
            self.observe_refusal(refusal.kind);
            return Outcome::Refused(refusal);
        }
        if self.config.request_state_mode == RequestStateMode::SingleUse {
            if record.consumed && !defects.state_store_ignored {
                self.observe(Observation::ConsumedStateRefused);
                let spent = Refusal::new(clause::STATE_EXT_SINGLE_USE, RefusalKind::AlreadySpent);
                return self.reraise_state(spent, call, offer, form);
            }
            self.states[index].consumed = true;
        }
        let drifted = self.fp_of(&call) != record.fp;
        if drifted && !defects.skip_drift_check {
            self.observe(Observation::DriftRefusedState);
            return Outcome::Refused(Refusal::new(clause::DRIFT_REFUSE, RefusalKind::Drift));
        }
        self.states[index].applied = self.states[index].applied.saturating_add(1);
        let expired = self.is_expired(record.issued_at);
        self.applications.insert(Application {
            route: Route::RequestState,
            approval: record.call,
            call,
            drifted,
            expired,
            answer: Some(answer),
            after_cancel: false,
        });
        self.take_effect(&call);
        Outcome::Applied
    }

    /// A requestState that approves nothing: the call is answered as one without approval,
    /// with a fresh requestState only for a request that can answer it (trip.form-only).
    fn reraise_state(&mut self, refusal: Refusal, call: Call, offer: bool, form: bool) -> Outcome {
        if !form {
            self.observe(Observation::FormlessReraised);
        }
        self.reraise(refusal, call, offer, form)
    }

    fn shim_prompt(&mut self, call: Call) -> Outcome {
        let state_fp = self.record_raise(call);
        self.prompts.push(PromptRecord {
            call,
            fp: state_fp,
            issued_at: self.now,
            cancelled: false,
        });
        Outcome::Prompted {
            state_fp,
            prompt: PromptRef(index_u8(self.prompts.len() - 1)),
        }
    }

    /// The legacy shim's answer, inside the waiting handler. The prompt closes whatever happens
    /// (trip.never-twice). Order: an answer after the TTL counts as cancel
    /// (trip.legacy-shim.no-answer, approval.expiry); the answer; drift between prompt and
    /// answer (drift.every-route).
    fn shim_answer(&mut self, prompt: PromptRef, answer: Answer) -> Outcome {
        let defects = self.config.defects;
        let Some(index) = self.resolve_prompt(prompt) else {
            return Outcome::NoSuchPrompt;
        };
        let record = self.prompts.remove(index);
        let expired = self.is_expired(record.issued_at);
        // trip.legacy-shim.no-answer: a prompt not answered within the TTL counts as cancel.
        let refusal = if expired && !defects.accept_expired_state {
            self.observe(Observation::ExpiredRefused);
            Some(Refusal::new(
                clause::TRIP_LEGACY_SHIM_NO_ANSWER,
                RefusalKind::NotObtained,
            ))
        } else {
            self.answer_refusal(answer)
        };
        if let Some(refusal) = refusal {
            self.observe_refusal(refusal.kind);
            return Outcome::Refused(refusal);
        }
        let drifted = self.fp_of(&record.call) != record.fp;
        if drifted && !defects.skip_drift_check {
            self.observe(Observation::DriftRefusedShim);
            return Outcome::Refused(Refusal::new(clause::DRIFT_REFUSE, RefusalKind::Drift));
        }
        self.applications.insert(Application {
            route: Route::Shim,
            approval: record.call,
            call: record.call,
            drifted,
            expired,
            answer: Some(answer),
            after_cancel: record.cancelled,
        });
        self.take_effect(&record.call);
        Outcome::Applied
    }

    // r[impl trip.legacy-shim.cancel]
    /// The call is cancelled while its prompt is open: the handler stops waiting, nothing
    /// runs, and the prompt closes.
    fn shim_cancel(&mut self, prompt: PromptRef) -> Outcome {
        let Some(index) = self.resolve_prompt(prompt) else {
            return Outcome::NoSuchPrompt;
        };
        self.observe(Observation::PromptCancelled);
        if self.config.defects.cancel_leaves_prompt_open {
            self.prompts[index].cancelled = true;
        } else {
            self.prompts.remove(index);
        }
        Outcome::CallCancelled
    }
}

fn modulo(handle: u8, len: usize) -> Option<usize> {
    (len > 0).then(|| usize::from(handle) % len)
}
