//! The system under test that is the product: the model's [`Action`]s executed against
//! tc-server in process (spec/gate.md, release.md, drift.md, state.md,
//! trips.md, cli.md `cli.elicit.*`, events.md).
//!
//! [`ServerSut`] runs the MCP server's [`ServerCore`] on real vaults in a temporary folder
//! with a [`ManualClock`] (one model tick is a minute, `elicitTtlSeconds = 60 × ttl_ticks`), and
//! talks to it with rmcp's own client over an in-memory duplex, as stdio sessions of both
//! protocol eras ([`clients`]). Each action is the product's own exchange:
//!
//! - **Raise**: a gated `tools/call` with no approval, from a client without forms
//!   (`elicit_required`), or with `form` from a 2026-07-28 client with form elicitation
//!   (`input_required` with a requestState).
//! - **Mint**: `tc_server::approve`, the code `obsidian-tc elicit` runs, on its own
//!   connection to the cacheDir's cache.db, `--state-fp` chosen as the model says.
//! - **IssueUnbound**: `Gate::issue_unbound` on the server's gate (the library route).
//! - **RedeemToken**: the call again with `elicit_token`; the stage is arranged by the
//!   environment ([`world`]): a server over the same cacheDir whose ACL refuses, the
//!   stand-in Obsidian answering 500 or knowing no command, or a server whose bridge gives
//!   up on the stand-in stalling its answer.
//! - **RedeemState**: the resubmission with `inputResponses` and the echoed `requestState`,
//!   from a client that declares form elicitation or not (`form`).
//! - **ShimPrompt / ShimAnswer / ShimCancel**: the call from a legacy client with forms on a
//!   server with the legacy shim; the server's `elicitation/create` is held open until it is
//!   answered, or the call is cancelled with `notifications/cancelled`.
//! - **ChangeTarget**: the note's file is rewritten on disk. **AdvanceClock**: the clock moves
//!   one tick. **Reopen**: every server and session is dropped and new ones are built over
//!   the same cacheDir.
//!
//! What the product answers is read back into the model's [`Outcome`] only as far as the wire
//! tells it ([`compare::wire_form`]); [`compare::check_step`] also compares the notes on disk
//! and the events in cache.db after every step. The actions the product has no counterpart
//! for are refused as [`SutError::Unsupported`] before anything runs ([`compare::Mapping`]
//! says which): `update_task` (it asks for a confirmation only when it reopens a task done
//! long ago, so a second call is not gated), custom verifiers (the server has no
//! `verifyElicit` hook), the shim for an HTTP caller (it is stdio-only), the stages no local stand-in can
//! arrange, a reopen while a prompt is open (a restart ends the session), and
//! a second application of the path tool to one note (`write_note` writes the same text each
//! time, so its result cannot stand for a new model version).

mod by_hand;
pub mod clients;
pub mod compare;
mod http;
mod routes;
mod shim;
pub mod world;

pub use by_hand::Exchanged;
pub use routes::failure_envelope;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tc_bridge::testing::{FakeObsidian, KEY, Tls};
use tc_gate::clock::{ManualClock, SeededEntropy};
use tc_gate::keys::ServerSecret;
use tc_gate::{EventName, Store, StoreError};
use tc_model::{Action, Call, Fp, ModelConfig, Note, Outcome, Vault};
use tc_server::config::Config;
use tc_server::metrics::Metrics;
use tc_server::server::{CoreParts, ServerCore};

pub use self::clients::{Client, Kind};
use self::world::{Places, Variant};

/// Where the fake clock starts (any fixed instant: runs are reproducible).
const START_MS: i64 = 1_800_000_000_000;
/// One model tick: a minute of the [`ManualClock`], so `elicitTtlSeconds = 60 × ttl_ticks`.
/// The legacy shim also bounds its wait for an answer by tokio's timer, in real time, for the
/// TTL; with a tick of a second that timer fired while a prompt was held open across a
/// `Timeout` step (which takes the impatient bridge's second) and recorded a refusal the
/// model had not seen. No run of the comparison spends a minute of real time.
pub const TICK_MS: i64 = 60_000;

/// Why the server comparison could not execute an action (as opposed to the server
/// answering it).
#[derive(Debug, thiserror::Error)]
pub enum SutError {
    #[error("the model action has no counterpart in the server: {0}")]
    Unsupported(String),
    #[error("setting up: {0}")]
    Setup(String),
    #[error("cache.db: {0}")]
    Store(#[from] StoreError),
    #[error("the files: {0}")]
    Io(#[from] std::io::Error),
    #[error("the MCP exchange: {0}")]
    Wire(String),
    #[error("the server answered in a way the vocabulary cannot express: {0}")]
    Unexpected(String),
}

/// A legacy-shim prompt the server has open, and the call waiting on it.
struct OpenPrompt {
    call: Call,
    held: clients::HeldPrompt,
    request: rmcp::service::RequestHandle<rmcp::service::RoleClient>,
}

/// The last raise of one call, to name the fingerprint a newer raise superseded.
#[derive(Debug, Clone)]
struct RaiseHistory {
    state_fp: String,
    expires_at_ms: i64,
    superseded: Option<String>,
}

/// The servers of one incarnation (until a reopen) and the sessions on them, by kind and
/// caller.
struct Servers {
    main: Arc<ServerCore>,
    sessions: HashMap<(Session, u8), Client>,
    /// The HTTP listeners' tasks, aborted when the incarnation ends.
    http: Vec<tokio::task::JoinHandle<()>>,
}

/// The sessions a run talks through (all stdio, caller `stdio`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Session {
    /// 2025-11-25, no form elicitation, on the server as configured.
    Plain,
    /// 2026-07-28 with form elicitation.
    Modern,
    /// 2026-07-28 declaring no elicitation.
    ModernFormless,
    /// A plain client on the server whose ACL lets nothing be written.
    AclDenied,
    /// A 2026-07-28 client with forms on the server whose ACL lets nothing be written.
    ModernAclDenied,
    /// A plain client on the server whose bridge gives up on Obsidian after
    /// [`world::IMPATIENT_TIMEOUT_MS`].
    Impatient,
    /// A legacy client with forms on the server with the shim.
    Shim,
    /// A legacy client without forms (at `initialize`) on the server with the shim.
    ShimFormless,
}

/// tc-server staged as the model's world. See the module documentation.
pub struct ServerSut {
    config: ModelConfig,
    runtime: tokio::runtime::Runtime,
    _root: tempfile::TempDir,
    cache_dir: PathBuf,
    vaults: Vec<PathBuf>,
    clock: ManualClock,
    entropy: Arc<SeededEntropy>,
    obsidian: FakeObsidian,
    configs: HashMap<Variant, Config>,
    servers: Option<Servers>,
    /// Each note's model version and the bytes the product should hold, `vault * notes + note`.
    versions: Vec<u8>,
    contents: Vec<String>,
    changes: u32,
    /// Every fingerprint the server named, by vault, and the model state it stands for.
    fingerprints: HashMap<(Vault, String), Fp>,
    raises: HashMap<Call, RaiseHistory>,
    tokens: Vec<String>,
    states: Vec<String>,
    prompts: Vec<OpenPrompt>,
    /// Commands the stand-in Obsidian should have received.
    commands_sent: usize,
    last_event_id: i64,
    /// How many calls were sent: every other one goes through the lean facade
    /// ([`ServerSut::routed`]).
    facade_turn: std::cell::Cell<u64>,
}

impl std::fmt::Debug for ServerSut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSut")
            .field("config", &self.config)
            .field("versions", &self.versions)
            .field("tokens", &self.tokens.len())
            .field("states", &self.states.len())
            .field("prompts", &self.prompts.len())
            .finish_non_exhaustive()
    }
}

impl ServerSut {
    /// A server over fresh vaults and cacheDir under `parent` (use a tmpfs such as `/dev/shm`
    /// where there is one: cache.db syncs every commit).
    pub fn new(config: ModelConfig, parent: &Path, seed: u64) -> Result<Self, SutError> {
        let root = tempfile::Builder::new()
            .prefix("tc-conformance-server-")
            .tempdir_in(parent)?;
        let cache_dir = root.path().join("cache");
        std::fs::create_dir_all(&cache_dir)?;
        let vaults: Vec<PathBuf> = (0..config.vaults.max(1))
            .map(|v| root.path().join(format!("vault-{v}")))
            .collect();
        let notes = config.notes.max(1);
        let mut contents = Vec::new();
        for (v, dir) in vaults.iter().enumerate() {
            std::fs::create_dir_all(dir)?;
            for n in 0..notes {
                let (vault, note) = (Vault(index_u8(v)), Note(n));
                let text = world::initial(vault, note);
                std::fs::write(dir.join(world::note_path(vault, note)), &text)?;
                contents.push(text);
            }
        }
        let key_file = root.path().join("rest-api.key");
        std::fs::write(&key_file, KEY)?;
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600))?;
        }
        let obsidian = FakeObsidian::start(Tls::Plain);
        let places = Places {
            vaults: &vaults,
            bridge_url: &obsidian.url,
            key_file: &key_file,
        };
        let single_use = config.request_state_mode == tc_model::RequestStateMode::SingleUse;
        let ttl_seconds = i64::from(config.ttl_ticks) * TICK_MS / 1000;
        let mut configs = HashMap::new();
        for variant in Variant::ALL {
            let text = world::config_text(&places, ttl_seconds, single_use, variant);
            let parsed = Config::parse(&text, "conformance.toml", root.path())
                .map_err(|e| SutError::Setup(format!("{variant:?} config: {e}\n{text}")))?;
            configs.insert(variant, parsed);
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let entries = vaults.len() * usize::from(notes);
        let mut sut = ServerSut {
            config,
            runtime,
            _root: root,
            cache_dir,
            vaults,
            clock: ManualClock::new(START_MS),
            entropy: Arc::new(SeededEntropy::new(seed)),
            obsidian,
            configs,
            servers: None,
            versions: vec![0; entries],
            contents,
            changes: 0,
            fingerprints: HashMap::new(),
            raises: HashMap::new(),
            tokens: Vec::new(),
            states: Vec::new(),
            prompts: Vec::new(),
            commands_sent: 0,
            last_event_id: 0,
            facade_turn: std::cell::Cell::new(0),
        };
        sut.start_servers()?;
        Ok(sut)
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Every note's model version as the product's answers imply it, `vault * notes + note`.
    pub fn versions(&self) -> &[u8] {
        &self.versions
    }

    /// The server's core (its gate, registry, governor), for tests that inspect it.
    pub fn core(&self) -> Result<&Arc<ServerCore>, SutError> {
        self.servers
            .as_ref()
            .map(|s| &s.main)
            .ok_or_else(|| SutError::Setup("the servers are down".into()))
    }

    /// The cacheDir the servers share.
    pub fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }

    /// Builds the servers of one incarnation over the cacheDir and connects their sessions.
    fn start_servers(&mut self) -> Result<(), SutError> {
        let build = |variant: Variant, shim: bool| -> Result<Arc<ServerCore>, SutError> {
            let secret = ServerSecret::load_or_create(&self.cache_dir, self.entropy.as_ref())
                .map_err(|e| SutError::Setup(format!("the server secret: {e}")))?;
            let store = Store::open(self.cache_dir.join(tc_gate::CACHE_DB_FILE))?;
            let core = ServerCore::build(
                &self.configs[&variant],
                CoreParts {
                    cache_dir: &self.cache_dir,
                    secret: &secret,
                    store,
                    clock: Arc::new(self.clock.clone()),
                    entropy: self.entropy.clone(),
                    metrics: Arc::new(Metrics::new()),
                    legacy_shim: shim,
                    approval_flags: Vec::new(),
                    approval_program: None,
                },
            )
            .map_err(|e| SutError::Setup(format!("{variant:?} server: {e}")))?;
            Ok(Arc::new(core))
        };
        let main = build(Variant::Main, false)?;
        let acl = build(Variant::AclDenied, false)?;
        let shim = build(Variant::Main, true)?;
        let impatient = build(Variant::Impatient, false)?;
        let stdio = [
            (Session::Plain, main.clone(), Kind::Plain),
            (Session::Modern, main.clone(), Kind::Modern),
            (Session::ModernFormless, main.clone(), Kind::ModernFormless),
            (Session::AclDenied, acl.clone(), Kind::Plain),
            (Session::ModernAclDenied, acl.clone(), Kind::Modern),
            (Session::Impatient, impatient.clone(), Kind::Plain),
            (Session::Shim, shim.clone(), Kind::LegacyForm),
            (Session::ShimFormless, shim, Kind::Plain),
        ];
        let http_kinds = [
            (Session::Plain, Kind::Plain, Variant::Main),
            (Session::Modern, Kind::Modern, Variant::Main),
            (Session::ModernFormless, Kind::ModernFormless, Variant::Main),
            (Session::AclDenied, Kind::Plain, Variant::AclDenied),
            (Session::ModernAclDenied, Kind::Modern, Variant::AclDenied),
            (Session::Impatient, Kind::Plain, Variant::Impatient),
        ];
        let callers = self.config.callers.max(1);
        let auth_config = self.configs[&Variant::Main].auth.clone();
        let started = self.runtime.block_on(async {
            let mut sessions = HashMap::new();
            for (session, core, kind) in stdio {
                sessions.insert((session, 0), clients::connect(core, kind).await?);
            }
            let mut http = Vec::new();
            if callers > 1 {
                let _ = rustls::crypto::ring::default_provider().install_default();
                let auth = Arc::new(
                    tc_server::auth::Authenticator::from_config(&auth_config)
                        .map_err(|e| format!("the authenticator: {e}"))?,
                );
                let mut urls = HashMap::new();
                for (variant, core) in [
                    (Variant::Main, main.clone()),
                    (Variant::AclDenied, acl),
                    (Variant::Impatient, impatient),
                ] {
                    let (url, task) = http::serve(core, auth.clone()).await?;
                    urls.insert(variant, url);
                    http.push(task);
                }
                for caller in 1..callers {
                    let bearer = http::bearer_for(&world::caller_id(tc_model::Caller(caller)))?;
                    for (session, kind, variant) in http_kinds {
                        let url = &urls[&variant];
                        let client = clients::connect_http(url, bearer.clone(), kind).await?;
                        sessions.insert((session, caller), client);
                    }
                }
            }
            Ok::<_, String>((sessions, http))
        });
        let (sessions, http) = started.map_err(SutError::Setup)?;
        self.servers = Some(Servers {
            main,
            sessions,
            http,
        });
        Ok(())
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
            Action::ShimCancel { prompt } => self.shim_cancel(prompt),
            Action::ChangeTarget { vault, note } => {
                self.change_note(vault, note)?;
                Ok(Outcome::TargetChanged)
            }
            Action::AdvanceClock => {
                self.clock.advance_ms(TICK_MS);
                Ok(Outcome::ClockAdvanced)
            }
            Action::Reopen => {
                if !self.prompts.is_empty() {
                    return Err(SutError::Unsupported(
                        "a reopen while a shim prompt is open: a restart ends its session".into(),
                    ));
                }
                // Close every session and server first, so nothing of the old incarnation
                // can serve the new one.
                if let Some(servers) = self.servers.take() {
                    self.runtime.block_on(async move {
                        for (_, client) in servers.sessions {
                            let _ = client.service.cancel().await;
                        }
                        for task in servers.http {
                            task.abort();
                        }
                        drop(servers.main);
                    });
                }
                self.start_servers()?;
                Ok(Outcome::Reopened)
            }
        }
    }

    /// The names of the events recorded in cache.db since the last call, oldest first.
    /// Fails if an event carries a token's text (gate.token.never-logged) or the caller id
    /// other than a caller's (events.caller-named).
    pub fn take_events(&mut self) -> Result<Vec<EventName>, SutError> {
        let events = self
            .core()?
            .gate()
            .events(self.last_event_id, usize::MAX >> 1)?;
        let mut names = Vec::with_capacity(events.len());
        for event in events {
            self.last_event_id = event.id;
            let text = format!("{event:?}");
            if let Some(token) = self.tokens.iter().find(|t| text.contains(t.as_str())) {
                return Err(SutError::Unexpected(format!(
                    "event {} carries the text of token {token}",
                    event.name
                )));
            }
            if let Some(hash) = &event.caller_hash
                && !(0..self.config.callers.max(1))
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

    /// Whether a token was released since the last [`ServerSut::take_events`].
    fn released_since_last(&self) -> Result<bool, SutError> {
        let events = self
            .core()?
            .gate()
            .events(self.last_event_id, usize::MAX >> 1)?;
        Ok(events.iter().any(|e| e.name == EventName::Released))
    }

    /// The notes whose bytes on disk are not what the product's answers imply: (vault, note,
    /// expected, found).
    pub fn notes_on_disk_differ(&self) -> Result<Vec<(u8, u8, String, String)>, SutError> {
        let notes = self.config.notes.max(1);
        let mut differ = Vec::new();
        for (v, dir) in self.vaults.iter().enumerate() {
            for n in 0..notes {
                let index = v * usize::from(notes) + usize::from(n);
                let found = std::fs::read_to_string(
                    dir.join(world::note_path(Vault(index_u8(v)), Note(n))),
                )
                .unwrap_or_else(|e| format!("<unreadable: {e}>"));
                if found != self.contents[index] {
                    differ.push((index_u8(v), n, self.contents[index].clone(), found));
                }
            }
        }
        Ok(differ)
    }

    /// The commands the stand-in Obsidian received, and how many the answers imply.
    pub fn commands(&self) -> (usize, usize) {
        (self.obsidian.commands().len(), self.commands_sent)
    }

    fn note_index(&self, vault: Vault, note: Note) -> usize {
        usize::from(vault.0) * usize::from(self.config.notes.max(1)) + usize::from(note.0)
    }

    fn version(&self, vault: Vault, note: Note) -> u8 {
        self.versions[self.note_index(vault, note)]
    }

    /// A change outside the gate: the note's file gets a text no other step writes.
    fn change_note(&mut self, vault: Vault, note: Note) -> Result<(), SutError> {
        self.changes += 1;
        let text = world::changed(vault, note, self.changes);
        let path = self.vaults[usize::from(vault.0)].join(world::note_path(vault, note));
        std::fs::write(path, &text)?;
        let index = self.note_index(vault, note);
        self.versions[index] = self.versions[index].saturating_add(1);
        self.contents[index] = text;
        Ok(())
    }

    /// What the product's report of an applied call implies: the path tool wrote its text,
    /// the command was sent.
    fn took_effect(&mut self, call: &Call) {
        match call.target() {
            Some((vault, note)) => {
                let index = self.note_index(vault, note);
                self.versions[index] = self.versions[index].saturating_add(1);
                self.contents[index] = world::written_to(vault, call.args.0);
            }
            None => self.commands_sent += 1,
        }
    }

    /// Names the fingerprint the server reported for `call` by the model state its target is
    /// in now; a fingerprint already named for another state is a disagreement.
    fn name_fp(&mut self, call: &Call, fp: &str) -> Result<Fp, SutError> {
        let current = match call.target() {
            None => Fp::Empty,
            Some((vault, note)) => Fp::Note {
                vault,
                note,
                version: self.version(vault, note),
            },
        };
        if current == Fp::Empty && !fp.is_empty() {
            return Err(SutError::Unexpected(format!(
                "a \"none\" tool was fingerprinted {fp:?}, not the empty fingerprint"
            )));
        }
        match self.fingerprints.get(&(call.vault, fp.to_owned())) {
            Some(known) if *known != current => Err(SutError::Unexpected(format!(
                "the server fingerprinted {current:?} as {fp}, which it named for {known:?}"
            ))),
            Some(_) => Ok(current),
            None => {
                self.fingerprints
                    .insert((call.vault, fp.to_owned()), current);
                Ok(current)
            }
        }
    }
}

/// Handles saturate at 255, as the model's do.
fn index_u8(index: usize) -> u8 {
    u8::try_from(index).unwrap_or(u8::MAX)
}
