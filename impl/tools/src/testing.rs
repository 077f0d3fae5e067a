//! The test fixture of every tool crate (feature `testing`): a temp vault folder
//! ([`TempVault`]: a manual clock, a `Vault` opened with seeded entropy), the bindings and
//! pipelines built over it, the gated tools' fixture ([`Fx`]: a gate on an in-memory store,
//! over the registry a [`Tools`] type names) and the scenario steps every gated tool is put
//! through (spec/drift.md, spec/release.md: the same four scenarios for every gated tool).
#![allow(missing_debug_implementations)]

use std::fs;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use std::marker::PhantomData;

use crate::{
    Approval, CallControl, CallerContext, ErrorCode, PageLimits, PagingSetup, Pipeline, Registry,
    ToolError, VaultBinding,
};
use tc_gate::clock::{Clock, ManualClock, SeededEntropy};
use tc_gate::cursor::CursorCodec;
use tc_gate::keys::{KeyPurpose, ServerSecret};
use tc_gate::{CallBinding, Gate, GateConfig, Store};

/// The registry a fixture is built over (a tool crate names its own tools once).
pub trait Tools {
    fn registry() -> Registry;
}
use tc_vault::acl::{AclConfig, Scopes};
use tc_vault::conventions::ConventionConfig;
use tc_vault::vault::{Vault, snapshot_dir_for};
use tc_vault::{WikiSealer, seal_dir_for};

/// 2026-11-30T12:00:00Z.
pub const NOW_MS: i64 = 1_796_040_000_000;

/// A temp folder holding a vault folder at `<dir>/vault` (and, for the servers built over
/// it, their cache at `<dir>/cache`), with a manual clock.
pub struct TempVault {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub clock: ManualClock,
}

impl Default for TempVault {
    fn default() -> Self {
        TempVault::new()
    }
}

impl TempVault {
    /// An empty vault folder, the clock at [`NOW_MS`].
    pub fn new() -> Self {
        TempVault::at(NOW_MS)
    }

    /// An empty vault folder, the clock at `now_ms`.
    pub fn at(now_ms: i64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("vault");
        fs::create_dir_all(&root).unwrap();
        TempVault {
            dir,
            root,
            clock: ManualClock::new(now_ms),
        }
    }

    /// The cache folder of the servers over this vault.
    pub fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    /// Vault "main" over the folder: the manual clock, entropy seeded with `seed`, its
    /// snapshots in `snapshots`.
    pub fn open(&self, snapshots: PathBuf, seed: u64) -> Vault {
        Vault::open(
            "main",
            &self.root,
            snapshots,
            Arc::new(self.clock.clone()),
            Arc::new(SeededEntropy::new(seed)),
        )
        .unwrap()
    }

    /// Writes `content` at `path` straight into the folder, making its folders.
    pub fn put(&self, path: &str, content: &str) {
        let full = self.root.join(path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        fs::write(full, content).unwrap();
    }

    pub fn get(&self, path: &str) -> Option<String> {
        fs::read_to_string(self.root.join(path)).ok()
    }

    pub fn remove(&self, path: &str) {
        fs::remove_file(self.root.join(path)).unwrap();
    }
}

/// `vault` bound as the server binds it: the ACL, the conventions and the wiki sealer (its
/// seals under `cache`).
pub fn binding(
    vault: Vault,
    cache: &Path,
    secret: &ServerSecret,
    acl: Option<&AclConfig>,
    conventions: &[ConventionConfig],
) -> VaultBinding {
    let sealer = WikiSealer::new(
        &secret.derive(KeyPurpose::WikiSeal),
        seal_dir_for(cache, "main").unwrap(),
    );
    VaultBinding::from_config(vault, acl, conventions, sealer).unwrap()
}

/// A pipeline of `registry` over `binding`, paging at [`PAGE_CAP`].
pub fn pipeline(
    registry: Registry,
    binding: VaultBinding,
    gate: Gate,
    clock: Arc<dyn Clock>,
    secret: &ServerSecret,
) -> Pipeline {
    Pipeline::new(
        registry,
        [binding],
        gate,
        clock,
        paging(secret),
        tc_gate::FingerprintKey::new(secret),
    )
}

/// The gated tools' fixture: a [`TempVault`] (which it derefs to), a gate on an in-memory
/// store and the pipeline of `T`'s registry over vault "main".
pub struct Fx<T: Tools> {
    temp: TempVault,
    pub gate: Gate,
    pub pipeline: Pipeline,
    secret: ServerSecret,
    tools: PhantomData<fn() -> T>,
}

impl<T: Tools> Deref for Fx<T> {
    type Target = TempVault;

    fn deref(&self) -> &TempVault {
        &self.temp
    }
}

pub fn caller() -> CallerContext {
    CallerContext::new("stdio", Scopes::all())
}

impl<T: Tools> Default for Fx<T> {
    fn default() -> Self {
        Fx::new()
    }
}

impl<T: Tools> Fx<T> {
    pub fn new() -> Self {
        Fx::with(None, Vec::new())
    }

    pub fn with(acl: Option<AclConfig>, conventions: Vec<ConventionConfig>) -> Self {
        let temp = TempVault::new();
        let gate = Gate::new(
            Store::open_in_memory().unwrap(),
            Arc::new(temp.clock.clone()),
            Arc::new(SeededEntropy::new(7)),
            GateConfig::default(),
        );
        let secret = ServerSecret::ephemeral(&SeededEntropy::new(11));
        let pipeline = build_pipeline(
            T::registry(),
            &temp,
            &gate,
            &secret,
            acl.as_ref(),
            &conventions,
        );
        Fx {
            temp,
            gate,
            pipeline,
            secret,
            tools: PhantomData,
        }
    }

    /// A new pipeline over the same vault, gate and secret, with another ACL and
    /// conventions (as a restarted server with an edited config would have).
    pub fn reconfigure(&mut self, acl: Option<AclConfig>, conventions: Vec<ConventionConfig>) {
        self.pipeline = build_pipeline(
            T::registry(),
            &self.temp,
            &self.gate,
            &self.secret,
            acl.as_ref(),
            &conventions,
        );
    }

    /// Swaps the standard registry for `registry` (same vault and gate, no ACL).
    pub fn use_registry(&mut self, registry: Registry) {
        self.pipeline = pipeline(
            registry,
            build_binding(&self.temp, &self.secret, None, &[]),
            self.gate.clone(),
            Arc::new(self.clock.clone()),
            &self.secret,
        );
    }

    /// The secret the fixture's cursors, states and seals are keyed from.
    pub fn secret(&self) -> &ServerSecret {
        &self.secret
    }

    /// Writes a generated page and seals it, as an earlier commit_wiki_page would have.
    pub fn seal(&self, path: &str, content: &str) {
        self.put(path, content);
        let sealer = WikiSealer::new(
            &self.secret.derive(KeyPurpose::WikiSeal),
            seal_dir_for(&self.cache(), "main").unwrap(),
        );
        sealer
            .store(
                &tc_vault::VaultPath::parse(path).unwrap(),
                content.as_bytes(),
            )
            .unwrap();
    }

    /// Prepares and executes `args` the way the server does for a call that brings its own
    /// approval (or none) in `elicit_token`.
    pub fn call_as(
        &self,
        who: &CallerContext,
        tool: &str,
        args: Value,
    ) -> Result<Value, ToolError> {
        let prepared = self.pipeline.prepare(who, tool, &args)?;
        self.pipeline
            .execute(
                &prepared,
                prepared.token_approval(),
                &CallControl::default(),
            )
            .map(|out| out.to_value())
    }

    pub fn call(&self, tool: &str, args: Value) -> Result<Value, ToolError> {
        self.call_as(&caller(), tool, args)
    }

    /// The operator's `obsidian-tc elicit` for the request an `elicit_required` raised.
    pub fn mint(&self, refusal: &ToolError) -> String {
        self.mint_for(refusal, "stdio")
    }

    pub fn mint_for(&self, refusal: &ToolError, caller_id: &str) -> String {
        assert_eq!(refusal.code, ErrorCode::ElicitRequired, "{refusal}");
        let details = refusal.details.as_ref().unwrap();
        let call = CallBinding {
            vault: details["vault"].as_str().unwrap(),
            tool: details["tool"].as_str().unwrap(),
            args_hash: details["args_hash"].as_str().unwrap(),
            caller: caller_id,
        };
        self.gate
            .issue(&call, Some(details["state_fp"].as_str().unwrap()))
            .unwrap()
            .token
            .expose()
            .to_owned()
    }

    /// Sends `args`, expects `elicit_required`, mints the token and returns it.
    pub fn require(&self, tool: &str, args: &Value) -> String {
        let refusal = self.call(tool, args.clone()).unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ElicitRequired, "{refusal}");
        self.mint(&refusal)
    }

    pub fn released(&self) -> u64 {
        self.gate.counters().released
    }

    pub fn requested(&self) -> u64 {
        self.gate.counters().requested
    }
}

fn build_binding(
    temp: &TempVault,
    secret: &ServerSecret,
    acl: Option<&AclConfig>,
    conventions: &[ConventionConfig],
) -> VaultBinding {
    let cache = temp.cache();
    let vault = temp.open(snapshot_dir_for(&cache, "main").unwrap(), 3);
    binding(vault, &cache, secret, acl, conventions)
}

fn build_pipeline(
    registry: Registry,
    temp: &TempVault,
    gate: &Gate,
    secret: &ServerSecret,
    acl: Option<&AclConfig>,
    conventions: &[ConventionConfig],
) -> Pipeline {
    pipeline(
        registry,
        build_binding(temp, secret, acl, conventions),
        gate.clone(),
        Arc::new(temp.clock.clone()),
        secret,
    )
}

/// The paging setup at a 64 KiB cap.
pub const PAGE_CAP: usize = 64 * 1024;

fn paging(secret: &ServerSecret) -> PagingSetup {
    PagingSetup {
        codec: CursorCodec::new(secret),
        limits: PageLimits::new(PAGE_CAP),
    }
}

pub fn with_token(args: &Value, token: &str) -> Value {
    let mut args = args.clone();
    args["elicit_token"] = json!(token);
    args
}

pub fn code(result: Result<Value, ToolError>) -> ErrorCode {
    match result {
        Ok(value) => panic!("expected a refusal, got {value}"),
        Err(error) => error.code,
    }
}

pub fn verified(prepared_fp: &tc_gate::StateFp) -> Approval {
    Approval::Verified {
        state_fp: prepared_fp.clone(),
        route: tc_gate::NonTokenRoute::RequestState,
    }
}

/// The standard scenarios of a gated tool, driven by a tool-specific
/// setup. `args` must need confirmation after `setup`.
pub struct Scenario<'a, T: Tools> {
    pub tool: &'a str,
    pub args: Value,
    /// Puts the vault in the state the call expects.
    pub setup: &'a dyn Fn(&Fx<T>),
    /// Checks the call was applied.
    pub applied: &'a dyn Fn(&Fx<T>),
    /// Checks nothing of the call was applied.
    pub untouched: &'a dyn Fn(&Fx<T>),
    /// Changes one of the call's confirmation targets.
    pub drift: &'a dyn Fn(&Fx<T>),
}

impl<T: Tools> Scenario<'_, T> {
    /// require → approve → applied, then the same token again is refused.
    pub fn approve_then_replay(&self) {
        let fx = Fx::<T>::new();
        (self.setup)(&fx);
        let token = fx.require(self.tool, &self.args);
        (self.untouched)(&fx);
        fx.call(self.tool, with_token(&self.args, &token))
            .unwrap_or_else(|e| panic!("{}: {e}", self.tool));
        (self.applied)(&fx);
        // The same call again with the spent token: refused, a fresh request raised.
        (self.setup)(&fx);
        let before = fx.requested();
        let replay = fx
            .call(self.tool, with_token(&self.args, &token))
            .unwrap_err();
        assert_eq!(replay.code, ErrorCode::ElicitRequired, "{replay}");
        assert_eq!(replay.details.as_ref().unwrap()["token_rejected"], "spent");
        assert_eq!(fx.requested(), before + 1);
        // The token's text shows up in no refusal and no event.
        assert!(!replay.to_structured().to_string().contains(&token));
        let events = fx.gate.events(0, 1000).unwrap();
        assert!(events.iter().all(|e| !format!("{e:?}").contains(&token)));
    }

    /// The target changes between raise and redemption: replay_drift, nothing applied,
    /// token spent.
    pub fn drift_refused(&self) {
        let fx = Fx::<T>::new();
        (self.setup)(&fx);
        let token = fx.require(self.tool, &self.args);
        (self.drift)(&fx);
        let refusal = fx
            .call(self.tool, with_token(&self.args, &token))
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ReplayDrift, "{refusal}");
        assert!(refusal.retryable());
        let again = fx
            .call(self.tool, with_token(&self.args, &token))
            .unwrap_err();
        assert_eq!(again.details.as_ref().unwrap()["token_rejected"], "spent");
    }

    /// A folder-ACL refusal after the gate gives the token back; with the ACL fixed, the
    /// same token applies the call.
    pub fn acl_releases(&self, denying: AclConfig) {
        let mut fx = Fx::<T>::with(Some(denying), Vec::new());
        (self.setup)(&fx);
        let token = fx.require(self.tool, &self.args);
        let refusal = fx
            .call(self.tool, with_token(&self.args, &token))
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::AclDenied, "{refusal}");
        assert_eq!(refusal.details.as_ref().unwrap()["token_released"], true);
        assert_eq!(fx.released(), 1);
        (self.untouched)(&fx);
        fx.reconfigure(None, Vec::new());
        fx.call(self.tool, with_token(&self.args, &token))
            .unwrap_or_else(|e| panic!("{}: {e}", self.tool));
        (self.applied)(&fx);
    }

    /// A conventions preflight refusal comes before the gate: nothing raised, and a token
    /// presented meanwhile is not spent (it works once the convention is lifted).
    pub fn preflight_keeps_token(&self, blocking: Vec<ConventionConfig>) {
        let mut fx = Fx::<T>::new();
        (self.setup)(&fx);
        let token = fx.require(self.tool, &self.args);
        fx.reconfigure(None, blocking);
        let requested = fx.requested();
        let refusal = fx
            .call(self.tool, with_token(&self.args, &token))
            .unwrap_err();
        assert_eq!(refusal.code, ErrorCode::ConventionBlocked, "{refusal}");
        assert_eq!(fx.requested(), requested, "no confirmation asked for");
        assert_eq!(fx.released(), 0, "nothing to give back: never spent");
        (self.untouched)(&fx);
        fx.reconfigure(None, Vec::new());
        fx.call(self.tool, with_token(&self.args, &token))
            .unwrap_or_else(|e| panic!("{}: {e}", self.tool));
        (self.applied)(&fx);
    }
}

pub fn deny_write_all() -> AclConfig {
    AclConfig {
        write_paths: Some(Vec::new()),
        delete_paths: Some(Vec::new()),
        ..AclConfig::default()
    }
}

/// An ACL that lets callers read only under `glob` and write everywhere: the write-only
/// caller the readable-only rules are about.
pub fn read_only_under(glob: &str) -> AclConfig {
    AclConfig {
        read_paths: Some(vec![glob.into()]),
        ..AclConfig::default()
    }
}

pub fn forbid_all() -> Vec<ConventionConfig> {
    vec![ConventionConfig {
        glob: "**".into(),
        forbid_writes: true,
        ..ConventionConfig::default()
    }]
}

/// Paths that must be refused with `path_invalid` wherever a note path is taken.
pub const HOSTILE: &[&str] = &[
    "../outside.md",
    "/etc/passwd.md",
    "a/../../x.md",
    ".obsidian/app.md",
    ".git/config.md",
    "a\\b.md",
    "notes/x.txt",
    "bad\u{0}.md",
];
