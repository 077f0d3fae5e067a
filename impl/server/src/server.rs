//! The server, built once from its configuration and shared by every session (spec/cli.md
//! `cli.serve.lazy`; spec/dispatch.md `dispatch.one-pipeline`; spec/vault.md
//! `vault.move.recovered`): the vaults with their ACLs, conventions, snapshot and wiki-seal
//! folders, the gate, the keys derived from the server secret, the vault indexes, the tool
//! families' registry, the governor and the lean facade. Serving a call is `dispatch.rs`;
//! the route a gated call takes is `routes.rs`.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tc_gate::clock::{Clock, Entropy};
use tc_gate::cursor::CursorCodec;
use tc_gate::governor::Governor;
use tc_gate::keys::{KeyPurpose, ServerSecret};
use tc_gate::request_state::RequestStateSealer;
use tc_gate::{Gate, GateConfig, RequestStateMode, Store};
use tc_tools::{PageLimits, PagingSetup, Pipeline, VaultBinding};
use tc_vault::{Vault, WikiSealer, seal_dir_for, snapshot_dir_for};

use crate::config::Config;
use crate::facade::Facade;
use crate::metrics::Metrics;

/// How often a running server sweeps what has expired from cache.db.
pub const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Why the server could not be assembled from its configuration.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("elicitTtlSeconds: {0}")]
    Ttl(#[from] tc_gate::InvalidTtl),
    #[error("vault `{vault}`: {message}")]
    Vault { vault: String, message: String },
    #[error("the tool registry is invalid: {0}")]
    Registry(String),
    #[error(transparent)]
    Families(#[from] crate::families::UnknownFamily),
    #[error("governor.maxResponseBytes {0} does not fit this platform's memory")]
    Cap(u64),
}

// r[impl vault.move.recovered]
// r[impl events.recovered]
/// Finishes (or drops) a move a killed process left half done in `vault`, and says so in the
/// log and the audit events; a failure to do so is logged and the server starts anyway (the
/// journal stays for the next start).
fn recover_interrupted_move(vault: &Vault, gate: &Gate) {
    match vault.recover_interrupted_move() {
        Ok(None) => {}
        Ok(Some(done)) => {
            let paths = |list: &[tc_vault::path::VaultPath]| -> Vec<String> {
                list.iter().map(|p| p.as_str().to_owned()).collect()
            };
            tracing::warn!(
                vault = vault.id(),
                from = done.from.as_str(),
                to = done.to.as_str(),
                moved = done.moved,
                rewritten = done.rewritten.len(),
                left = done.left.len(),
                "a move interrupted by a crash was {}",
                if done.moved {
                    "finished: the links to the moved note were rewritten"
                } else {
                    "never applied: nothing was changed"
                }
            );
            let detail = json!({
                "tool": "move_note",
                "from": done.from.as_str(),
                "to": done.to.as_str(),
                "moved": done.moved,
                "rewritten": paths(&done.rewritten),
                "left": paths(&done.left),
            });
            if let Err(error) = gate.record_recovery(vault.id(), detail) {
                tracing::warn!(vault = vault.id(), "recording the recovery event: {error}");
            }
        }
        Err(error) => tracing::warn!(
            vault = vault.id(),
            "a move interrupted by a crash could not be finished yet: {error}"
        ),
    }
}

/// Everything a request of the MCP server is served with, shared by every session.
pub struct ServerCore {
    pub(crate) pipeline: Arc<Pipeline>,
    pub(crate) governor: Governor,
    pub(crate) sealer: RequestStateSealer,
    pub(crate) cursors: CursorCodec,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) entropy: Arc<dyn Entropy>,
    pub(crate) vault_ids: Vec<String>,
    /// `[versions]`: what the sweeper keeps of each vault's snapshots.
    pub(crate) retention: tc_vault::vault::Retention,
    pub(crate) ttl_ms: i64,
    pub(crate) legacy_shim: bool,
    pub(crate) facade: Facade,
    /// The sessions and their traces (tc-sessions): every call is offered to them.
    pub(crate) sessions: Arc<tc_sessions::Sessions>,
}

impl fmt::Debug for ServerCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerCore")
            .field("vaults", &self.vault_ids)
            .field("max_response_bytes", &self.governor.limit())
            .field("ttl_ms", &self.ttl_ms)
            .field("legacy_shim", &self.legacy_shim)
            .finish_non_exhaustive()
    }
}

/// What [`ServerCore::build`] needs besides the configuration.
#[derive(Debug)]
pub struct CoreParts<'a> {
    pub cache_dir: &'a Path,
    pub secret: &'a ServerSecret,
    pub store: Store,
    pub clock: Arc<dyn Clock>,
    pub entropy: Arc<dyn Entropy>,
    pub metrics: Arc<Metrics>,
    /// `--legacy-elicitation-shim` or `legacyElicitationShim`.
    pub legacy_shim: bool,
    /// What the printed `obsidian-tc elicit` command carries to find this server's cache
    /// and config (`--config FILE`, `--cache-dir DIR`, absolute); empty for the defaults.
    pub approval_flags: Vec<String>,
    /// How the printed approval command names this binary (`obsidian-tc` when that finds
    /// it on PATH, its absolute path otherwise); `None` keeps `obsidian-tc`.
    pub approval_program: Option<String>,
}

impl ServerCore {
    /// Assembles the server: the vaults with their ACLs, conventions, snapshot and wiki-seal
    /// folders under the cache directory, the gate over `store`, and the keys derived from
    /// `secret`. Nothing scans a vault here (`cli.serve.lazy`).
    pub fn build(config: &Config, parts: CoreParts<'_>) -> Result<Self, BuildError> {
        let mode = if config.request_state_single_use {
            RequestStateMode::SingleUse
        } else {
            RequestStateMode::Replayable
        };
        let gate_config = GateConfig::new(config.elicit_ttl_seconds)?.with_request_state_mode(mode);
        let gate = Gate::new(
            parts.store,
            Arc::clone(&parts.clock),
            Arc::clone(&parts.entropy),
            gate_config,
        );
        let wiki_key = parts.secret.derive(KeyPurpose::WikiSeal);
        let mut bindings = Vec::with_capacity(config.vaults.len());
        for vc in &config.vaults {
            let fail = |message: String| BuildError::Vault {
                vault: vc.id.clone(),
                message,
            };
            let snapshots =
                snapshot_dir_for(parts.cache_dir, &vc.id).map_err(|e| fail(e.to_string()))?;
            let seals = seal_dir_for(parts.cache_dir, &vc.id).map_err(|e| fail(e.to_string()))?;
            let vault = Vault::open(
                vc.id.clone(),
                &vc.root,
                snapshots,
                Arc::clone(&parts.clock),
                Arc::clone(&parts.entropy),
            )
            .map_err(|e| fail(e.to_string()))?;
            let binding = VaultBinding::from_config(
                vault,
                vc.acl.as_ref(),
                &vc.conventions,
                WikiSealer::new(&wiki_key, seals),
            )
            .map_err(|e| fail(e.to_string()))?;
            recover_interrupted_move(&binding.vault, &gate);
            bindings.push(binding);
        }
        let vault_ids = config.vaults.iter().map(|v| v.id.clone()).collect();
        // The vault indexes: opened here (cache.db only), built in the background, so
        // tools/list answers at once (spec index.build.background).
        if config.search.enabled {
            let roots = config
                .vaults
                .iter()
                .map(|v| (v.id.as_str(), v.root.as_path()));
            let indexes = tc_index::open_indexes(parts.cache_dir, roots, &config.search)
                .map_err(|e| BuildError::Registry(e.to_string()))?;
            for (binding, index) in bindings.iter().zip(indexes) {
                binding.attach_index(index.clone());
                index.start();
            }
        }
        let setup = tc_tools::SubsystemSetup {
            cache_dir: parts.cache_dir,
            clock: Arc::clone(&parts.clock),
        };
        // The session store is the server's (the recording hook and the replayer use it);
        // its tools are one of the families.
        let sessions = Arc::new(
            tc_sessions::Sessions::from_setup(&setup, config.sessions)
                .map_err(|e| BuildError::Registry(e.to_string()))?,
        );
        let families = crate::families::families(config, &sessions);
        crate::families::served(config, &families)?;
        let registry = crate::families::registry(config, &setup, &families)
            .map_err(|e| BuildError::Registry(e.to_string()))?;
        let cap = usize::try_from(config.governor.max_response_bytes)
            .map_err(|_| BuildError::Cap(config.governor.max_response_bytes))?;
        let paging = PagingSetup {
            codec: CursorCodec::new(parts.secret),
            limits: PageLimits::with_page_bytes(
                cap,
                usize::try_from(config.governor.page_bytes()).unwrap_or(cap),
            ),
        };
        let facade = Facade::new(config.tool_facade.mode, &registry);
        let fingerprints = tc_gate::FingerprintKey::new(parts.secret);
        let pipeline = Pipeline::new(
            registry,
            bindings,
            gate,
            Arc::clone(&parts.clock),
            paging,
            fingerprints,
        )
        .with_approval_flags(parts.approval_flags);
        let pipeline = match parts.approval_program {
            Some(program) => pipeline.with_approval_program(program),
            None => pipeline,
        };
        let pipeline = Arc::new(pipeline);
        crate::rerun::ServerReplayer::wire(
            &sessions,
            &pipeline,
            config,
            cap,
            &parts.clock,
            &parts.entropy,
        );
        Ok(ServerCore {
            pipeline,
            governor: Governor::new(cap),
            sealer: RequestStateSealer::new(parts.secret),
            cursors: CursorCodec::new(parts.secret),
            metrics: parts.metrics,
            clock: parts.clock,
            entropy: parts.entropy,
            vault_ids,
            retention: config.versions.retention(),
            ttl_ms: gate_config.ttl_ms(),
            legacy_shim: parts.legacy_shim,
            facade,
            sessions,
        })
    }

    pub fn gate(&self) -> &Gate {
        self.pipeline.gate()
    }

    pub fn governor(&self) -> &Governor {
        &self.governor
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    pub fn registry(&self) -> &tc_tools::Registry {
        self.pipeline.registry()
    }

    /// Whether `tool` is one this server offers (in lean mode, the facade's three too).
    pub fn knows_tool(&self, tool: &str) -> bool {
        self.pipeline.registry().get(tool).is_some() || self.facade.offers(tool)
    }

    /// The lean facade (spec/facade.md).
    pub fn facade(&self) -> &Facade {
        &self.facade
    }

    /// The `tools/list` entries: every tool in flat mode, the facade's three in lean mode.
    pub fn tool_entries(&self) -> Vec<Value> {
        self.facade.list(self.registry())
    }
}
