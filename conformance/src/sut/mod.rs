//! The gate-level system under test: tc-gate driven by the model's [`Action`]s, answering with
//! the model's [`Outcome`]s so the two can be compared (the clauses of
//! spec/gate.md, release.md, drift.md, state.md and trips.md that tc-model's refusals name).
//!
//! The product itself is compared by [`crate::server::ServerSut`]. This one stays for the
//! model's actions the server has no counterpart for, which only the gate's own API can
//! stage: custom `verifyElicit` hooks with and without `release` (the server has no such
//! configuration), `update_task`'s confirmation checked in its handler (the real tool asks
//! only when it reopens a task done long ago, so a second call is not gated), the stages no
//! local stand-in arranges deterministically (a cancellation before the handler, a write-gate
//! refusal after the gate, a fault after return), and sequences that apply
//! one note twice (the real path tool writes the same text each time).
//!
//! [`Sut`] plays the server around the gate: it keeps the vault's notes (their versions), a
//! [`ManualClock`] whose tick is one second with `elicitTtlSeconds = ttl_ticks` (so the model's
//! "expired from `issued + ttl_ticks` on" is tc-gate's `now >= expires_at`), the tokens it was
//! handed, the requestStates it sealed and the legacy-shim prompts it has open. Each action is
//! executed through tc-gate's public API the way a server would:
//!
//! - **Raise**: `Gate::raise` with the target's current fingerprint; with `form`, a requestState
//!   sealed by [`RequestStateSealer`] (carried as in [`crate::envelope`]).
//! - **Mint**: `Gate::issue`, `--state-fp` mapped from [`FpChoice`] to the retained request's
//!   fingerprint, the one it superseded, one never stored, or no flag.
//! - **RedeemToken**: [`Verifier::verify`] (built-in, or a custom verifier with or without
//!   `release`), then the stage: `Applied` enters the handler and writes the note;
//!   `AclDenied`/`Cancelled`/`ConventionBlockedBeforeWrite` release before the handler through
//!   the chosen verifier, except `update_task`'s write-gate refusal, which happens inside its
//!   handler and is released through `HandlerRun::release_handler_level`; every other stage
//!   enters the handler and keeps the token spent. A token refusal other than drift is answered
//!   as a call without approval: the harness raises afresh (the server's job).
//! - **RedeemState**: open the state for the presented call, check the answer, admit it
//!   (`Gate::admit_request_state`, single-use extension), check drift, record the run, apply.
//! - **ShimPrompt / ShimAnswer**: the raise and the prompt stay server-side; an answer after the
//!   TTL counts as cancel; then the answer, drift, the recorded run, the write.
//! - **Reopen**: the gate is dropped and cache.db (and the server secret) reopened from disk.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use tc_gate::clock::{ManualClock, SeededEntropy};
use tc_gate::keys::ServerSecret;
use tc_gate::request_state::RequestStateSealer;
use tc_gate::{
    BuiltinVerifier, CACHE_DB_FILE, EventName, Gate, GateConfig, MintError, ReleaseOutcome,
    ReleaseTicket, RequestStateMode, StateFp, Store, StoreError, Verifier,
};
use tc_model::clause;
use tc_model::{
    Action, Call, Fp, FpChoice, ModelConfig, Note, Outcome, Refusal, RefusalKind, StateRef, Tok,
    Vault,
};

mod redeem;

use crate::envelope;
use crate::world::{self, RealCall};
use redeem::state_binding;

/// Where the fake clock starts (any fixed instant: runs are reproducible).
const START_MS: i64 = 1_800_000_000_000;
/// One model tick.
pub const TICK_MS: i64 = 1000;
/// A token string no mint ever returns (tokens are 32 hex digits from the seeded source).
const UNKNOWN_TOKEN: &str = "00000000000000000000000000000000";
/// A requestState no seal ever returns.
const UNKNOWN_STATE: &str = "not-a-request-state";

/// Where cache.db lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backing {
    /// An in-memory database and a per-process key: fast, but [`Action::Reopen`] cannot be
    /// executed (it is reported as [`SutError::ReopenInMemory`]).
    Memory,
    /// A fresh temporary directory (the cacheDir) under the given parent, removed on drop:
    /// cache.db and `server-secrets/` live there and survive [`Action::Reopen`].
    TempDir(PathBuf),
}

impl Backing {
    /// A temporary directory under `/dev/shm` when it exists (cache.db syncs every commit,
    /// and tmpfs makes that cheap), else under the system temporary directory.
    pub fn fast_temp_dir() -> Self {
        let shm = PathBuf::from("/dev/shm");
        if shm.is_dir() {
            Backing::TempDir(shm)
        } else {
            Backing::TempDir(std::env::temp_dir())
        }
    }
}

/// Options of a [`Sut`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SutOptions {
    pub backing: Backing,
    /// Call `Gate::sweep` on every tick, as a server's periodic sweep would. Off by default:
    /// tc-gate's sweep also forgets tokens a TTL past their expiry, which the model never does
    /// (see tests/divergences.rs).
    pub sweep_on_tick: bool,
    /// Seed of the gate's random source (token ids, secrets, state ids).
    pub seed: u64,
}

impl SutOptions {
    pub fn new(backing: Backing) -> Self {
        SutOptions {
            backing,
            sweep_on_tick: false,
            seed: 7,
        }
    }
}

/// Why the harness could not execute an action (as opposed to the gate answering it).
#[derive(Debug, thiserror::Error)]
pub enum SutError {
    #[error("cache.db: {0}")]
    Store(#[from] StoreError),
    #[error("the server secret: {0}")]
    Key(#[from] tc_gate::keys::KeyError),
    #[error("creating the temporary cacheDir: {0}")]
    TempDir(#[from] std::io::Error),
    #[error("the model's TTL of {0} ticks is not a valid elicitTtlSeconds")]
    Ttl(u8),
    #[error("Reopen needs a file-backed cache.db (Backing::TempDir)")]
    ReopenInMemory,
    #[error("the gate was closed by a failed reopen")]
    Closed,
    #[error("tc-gate returned a fingerprint the harness never computed: {0}")]
    UnknownFingerprint(String),
    #[error("tc-gate answered in a way the vocabulary cannot express: {0}")]
    Unexpected(String),
}

/// A custom `verifyElicit` hook that implements `release` (release.custom-verifier).
#[derive(Debug, Default, Clone, Copy)]
pub struct ReleasingCustomVerifier;

impl Verifier for ReleasingCustomVerifier {
    fn release(&self, ticket: ReleaseTicket) -> Result<ReleaseOutcome, StoreError> {
        ticket.restore()
    }
}

/// A custom `verifyElicit` hook that does not implement `release`: the trait's default keeps
/// every token it is offered spent.
#[derive(Debug, Default, Clone, Copy)]
pub struct NonReleasingCustomVerifier;

impl Verifier for NonReleasingCustomVerifier {}

fn verifier_for(verifier: tc_model::Verifier) -> &'static dyn Verifier {
    match verifier {
        tc_model::Verifier::Builtin => &BuiltinVerifier,
        tc_model::Verifier::CustomWithRelease => &ReleasingCustomVerifier,
        tc_model::Verifier::CustomWithoutRelease => &NonReleasingCustomVerifier,
    }
}

/// A legacy-shim prompt the server has open: the handler waits for the answer.
#[derive(Debug, Clone)]
struct OpenPrompt {
    call: Call,
    state_fp: StateFp,
    issued_at_ms: i64,
}

/// What the harness remembers of the last raise under one (vault, args_hash, caller): enough
/// to name the fingerprint it superseded, which tc-gate does not hand out.
#[derive(Debug, Clone)]
struct RaiseHistory {
    state_fp: StateFp,
    expires_at_ms: i64,
    /// The fingerprint of the request this one replaced while that one was still live.
    superseded: Option<StateFp>,
}

/// tc-gate staged as the model's world. See the module documentation.
pub struct Sut {
    config: ModelConfig,
    options: SutOptions,
    clock: ManualClock,
    entropy: Arc<SeededEntropy>,
    gate_config: GateConfig,
    gate: Option<Gate>,
    sealer: RequestStateSealer,
    /// The cacheDir for a file-backed run; removed on drop.
    cache_dir: Option<tempfile::TempDir>,
    /// Each note's version, indexed `vault * notes + note` as in the model.
    versions: Vec<u8>,
    /// Every fingerprint computed so far, by the vault of the call it was computed for.
    fingerprints: HashMap<(Vault, StateFp), Fp>,
    raises: HashMap<Call, RaiseHistory>,
    tokens: Vec<String>,
    states: Vec<String>,
    prompts: Vec<OpenPrompt>,
    /// The id of the last event read by [`Sut::take_events`].
    last_event_id: i64,
}

impl fmt::Debug for Sut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sut")
            .field("config", &self.config)
            .field("options", &self.options)
            .field("versions", &self.versions)
            .field("tokens", &self.tokens.len())
            .field("states", &self.states.len())
            .field("prompts", &self.prompts)
            .finish_non_exhaustive()
    }
}

impl Sut {
    pub fn new(config: ModelConfig, options: SutOptions) -> Result<Self, SutError> {
        let mode = match config.request_state_mode {
            tc_model::RequestStateMode::Replayable => RequestStateMode::Replayable,
            tc_model::RequestStateMode::SingleUse => RequestStateMode::SingleUse,
        };
        let gate_config = GateConfig::new(i64::from(config.ttl_ticks) * TICK_MS / 1000)
            .map_err(|_| SutError::Ttl(config.ttl_ticks))?
            .with_request_state_mode(mode);
        let clock = ManualClock::new(START_MS);
        let entropy = Arc::new(SeededEntropy::new(options.seed));
        let (store, secret, cache_dir) = match &options.backing {
            Backing::Memory => (
                Store::open_in_memory()?,
                ServerSecret::ephemeral(entropy.as_ref()),
                None,
            ),
            Backing::TempDir(parent) => {
                let dir = tempfile::Builder::new()
                    .prefix("tc-conformance-")
                    .tempdir_in(parent)?;
                let store = Store::open(dir.path().join(CACHE_DB_FILE))?;
                let secret = ServerSecret::load_or_create(dir.path(), entropy.as_ref())?;
                (store, secret, Some(dir))
            }
        };
        let gate = Gate::new(store, Arc::new(clock.clone()), entropy.clone(), gate_config);
        let notes = usize::from(config.vaults.max(1)) * usize::from(config.notes.max(1));
        Ok(Sut {
            config,
            options,
            clock,
            entropy,
            gate_config,
            gate: Some(gate),
            sealer: RequestStateSealer::new(&secret),
            cache_dir,
            versions: vec![0; notes],
            fingerprints: HashMap::new(),
            raises: HashMap::new(),
            tokens: Vec::new(),
            states: Vec::new(),
            prompts: Vec::new(),
            last_event_id: 0,
        })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Every note's version, indexed `vault * notes + note` as the model's.
    pub fn versions(&self) -> &[u8] {
        &self.versions
    }

    /// The gate, for tests that inspect it (events, counters) after a run.
    pub fn gate(&self) -> Result<&Gate, SutError> {
        self.gate.as_ref().ok_or(SutError::Closed)
    }

    /// The names of the events recorded since the last call, oldest first. Fails if an event
    /// carries a token's text (gate.token.never-logged) or a caller id or hash that is no
    /// caller's (events.caller-named).
    pub fn take_events(&mut self) -> Result<Vec<EventName>, SutError> {
        let events = self.gate()?.events(self.last_event_id, usize::MAX >> 1)?;
        let mut names = Vec::with_capacity(events.len());
        for event in events {
            self.last_event_id = event.id;
            let text = format!("{event:?}");
            if let Some(token) = self
                .tokens
                .iter()
                .find(|token| text.contains(token.as_str()))
            {
                return Err(SutError::Unexpected(format!(
                    "event {} carries the text of token {token}",
                    event.name
                )));
            }
            if let Some(hash) = &event.caller_hash
                && !(0..self.config.callers)
                    .any(|n| *hash == tc_gate::caller_hash(&world::caller_id(tc_model::Caller(n))))
            {
                return Err(SutError::Unexpected(format!(
                    "event {} carries caller {hash:?}, not the hash of a caller",
                    event.name
                )));
            }
            names.push(event.name);
        }
        Ok(names)
    }

    fn now(&self) -> i64 {
        use tc_gate::clock::Clock as _;
        self.clock.now_ms()
    }

    fn ttl_ms(&self) -> i64 {
        self.gate_config.ttl_ms()
    }

    /// Executes one action (its handles taken modulo the configuration, as the model does).
    pub fn apply(&mut self, action: &Action) -> Result<Outcome, SutError> {
        match action.normalized(&self.config) {
            Action::Raise { call, form } => self.raise(&call, form),
            Action::Mint { call, state_fp } => self.mint(&call, state_fp),
            Action::IssueUnbound { call } => self.issue_unbound(&call),
            Action::RedeemToken {
                tok,
                call,
                stage,
                verifier,
            } => self.redeem_token(tok, &call, stage, verifier),
            Action::RedeemState {
                state,
                call,
                answer,
                form,
            } => self.redeem_state(state, &call, answer, form),
            Action::ShimPrompt { call } => self.shim_prompt(&call),
            Action::ShimAnswer { prompt, answer } => self.shim_answer(prompt, answer),
            Action::ShimCancel { prompt } => Ok(self.shim_cancel(prompt)),
            Action::ChangeTarget { vault, note } => {
                self.change_note(vault, note);
                Ok(Outcome::TargetChanged)
            }
            Action::AdvanceClock => {
                self.clock.advance_ms(TICK_MS);
                if self.options.sweep_on_tick {
                    self.gate()?.sweep()?;
                }
                Ok(Outcome::ClockAdvanced)
            }
            Action::Reopen => {
                self.reopen()?;
                Ok(Outcome::Reopened)
            }
        }
    }

    // ----- the world: notes and fingerprints -------------------------------------------------

    fn note_index(&self, vault: Vault, note: Note) -> usize {
        usize::from(vault.0 % self.config.vaults.max(1)) * usize::from(self.config.notes.max(1))
            + usize::from(note.0 % self.config.notes.max(1))
    }

    fn version(&self, vault: Vault, note: Note) -> u8 {
        self.versions
            .get(self.note_index(vault, note))
            .copied()
            .unwrap_or(0)
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

    /// The fingerprint of the call's confirmation targets as they are now, remembered so a
    /// fingerprint coming back from tc-gate can be named in the model's terms.
    fn current_fp(&mut self, call: &Call) -> StateFp {
        let (fp, model_fp) = match call.target() {
            None => (world::target_fp(call, 0), Fp::Empty),
            Some((vault, note)) => {
                let version = self.version(vault, note);
                (
                    world::target_fp(call, version),
                    Fp::Note {
                        vault,
                        note,
                        version,
                    },
                )
            }
        };
        self.fingerprints.insert((call.vault, fp.clone()), model_fp);
        fp
    }

    fn model_fp(&self, call: &Call, fp: &StateFp) -> Result<Fp, SutError> {
        self.fingerprints
            .get(&(call.vault, fp.clone()))
            .copied()
            .ok_or_else(|| SutError::UnknownFingerprint(fp.as_str().to_owned()))
    }

    // ----- raising -----------------------------------------------------------------------------

    /// `Gate::raise` for `call` with its current fingerprint, remembering what it superseded.
    fn record_raise(&mut self, call: &Call) -> Result<(StateFp, Fp), SutError> {
        let fp = self.current_fp(call);
        let real = RealCall::of(call);
        let now = self.now();
        let raised = self.gate()?.raise(&real.binding(), &fp)?;
        if raised.state_fp != fp {
            return Err(SutError::Unexpected(format!(
                "raise recorded {} for a call raised with {}",
                raised.state_fp, fp
            )));
        }
        let superseded = self
            .raises
            .get(call)
            .filter(|previous| previous.expires_at_ms > now)
            .map(|previous| previous.state_fp.clone());
        self.raises.insert(
            *call,
            RaiseHistory {
                state_fp: fp.clone(),
                expires_at_ms: raised.expires_at_ms,
                superseded,
            },
        );
        let model_fp = self.model_fp(call, &raised.state_fp)?;
        Ok((fp, model_fp))
    }

    /// Raises and, for a form-capable client, seals a requestState for the call.
    fn raise_with_state(
        &mut self,
        call: &Call,
        form: bool,
    ) -> Result<(Fp, Option<StateRef>), SutError> {
        let (fp, model_fp) = self.record_raise(call)?;
        if !form {
            return Ok((model_fp, None));
        }
        let real = RealCall::of(call);
        let binding = state_binding(&real, &fp);
        let ttl_ms = u64::try_from(self.ttl_ms()).unwrap_or(u64::MAX);
        let sealed = self
            .sealer
            .seal(&binding, ttl_ms, self.now(), self.entropy.as_ref());
        self.states.push(envelope::wrap(&fp, &sealed.token));
        Ok((model_fp, Some(StateRef(index_u8(self.states.len() - 1)))))
    }

    fn raise(&mut self, call: &Call, form: bool) -> Result<Outcome, SutError> {
        let (state_fp, request_state) = self.raise_with_state(call, form)?;
        Ok(Outcome::Raised {
            state_fp,
            request_state,
        })
    }

    /// The call is answered as one without approval after `refusal` (gate.token.refused,
    /// state.invalid-fresh): a fresh raise, and a fresh requestState for a form client.
    fn reraise(&mut self, refusal: Refusal, call: &Call, form: bool) -> Result<Outcome, SutError> {
        let (state_fp, request_state) = self.raise_with_state(call, form)?;
        Ok(Outcome::Reraised {
            refusal,
            state_fp,
            request_state,
        })
    }

    // ----- tokens ------------------------------------------------------------------------------

    /// The `--state-fp` the operator passes for `choice`.
    fn state_fp_flag(&self, call: &Call, choice: FpChoice) -> Result<Option<StateFp>, SutError> {
        let real = RealCall::of(call);
        let retained = self
            .gate()?
            .raised_request(&real.vault, &real.args_hash, &real.caller)?;
        Ok(match choice {
            FpChoice::Omitted => None,
            FpChoice::Unknown => Some(world::never_stored_fp()),
            FpChoice::Retained => Some(
                retained
                    .map(|request| request.state_fp)
                    .unwrap_or_else(world::never_stored_fp),
            ),
            FpChoice::Superseded => Some(
                retained
                    .and_then(|request| {
                        self.raises
                            .get(call)
                            .filter(|history| history.state_fp == request.state_fp)
                            .and_then(|history| history.superseded.clone())
                    })
                    .unwrap_or_else(world::never_stored_fp),
            ),
        })
    }

    fn push_token(&mut self, token: String) -> Outcome {
        self.tokens.push(token);
        Outcome::Minted(Tok(index_u8(self.tokens.len() - 1)))
    }

    fn mint(&mut self, call: &Call, choice: FpChoice) -> Result<Outcome, SutError> {
        let flag = self.state_fp_flag(call, choice)?;
        let real = RealCall::of(call);
        match self
            .gate()?
            .issue(&real.binding(), flag.as_ref().map(StateFp::as_str))
        {
            Ok(issued) => {
                // The mint consumed the raised request (cli.elicit.one-mint-per-raise): the
                // next raise of the call supersedes nothing.
                self.raises.remove(call);
                Ok(self.push_token(issued.token.expose().to_owned()))
            }
            Err(MintError::NoRaisedRequest { .. }) => Ok(Outcome::MintRefused(Refusal::new(
                clause::CLI_ELICIT_REQUIRES_RAISE,
                RefusalKind::NoRaise,
            ))),
            Err(MintError::StaleStateFp | MintError::UnknownStateFp) => Ok(Outcome::MintRefused(
                Refusal::new(clause::CLI_ELICIT_STATE_FP, RefusalKind::StaleStateFp),
            )),
            Err(MintError::Store(error)) => Err(error.into()),
            Err(other) => Err(SutError::Unexpected(format!("mint refused: {other}"))),
        }
    }

    fn issue_unbound(&mut self, call: &Call) -> Result<Outcome, SutError> {
        let real = RealCall::of(call);
        let issued = self.gate()?.issue_unbound(&real.binding())?;
        Ok(self.push_token(issued.token.expose().to_owned()))
    }

    // ----- Reopen ------------------------------------------------------------------------------

    /// Closes cache.db and opens it again from the file, with the server secret reloaded from
    /// the cacheDir: only what is durable survives.
    fn reopen(&mut self) -> Result<(), SutError> {
        let Some(dir) = &self.cache_dir else {
            return Err(SutError::ReopenInMemory);
        };
        let dir = dir.path().to_path_buf();
        // Close first, so nothing of the old connection can serve the reopened gate.
        self.gate = None;
        let store = Store::open(dir.join(CACHE_DB_FILE))?;
        let secret = ServerSecret::load_or_create(&dir, self.entropy.as_ref())?;
        self.sealer = RequestStateSealer::new(&secret);
        self.gate = Some(Gate::new(
            store,
            Arc::new(self.clock.clone()),
            self.entropy.clone(),
            self.gate_config,
        ));
        Ok(())
    }
}

fn modulo(handle: u8, len: usize) -> Option<usize> {
    (len > 0).then(|| usize::from(handle) % len)
}

/// Handles saturate at 255, as the model's do.
fn index_u8(index: usize) -> u8 {
    u8::try_from(index).unwrap_or(u8::MAX)
}
