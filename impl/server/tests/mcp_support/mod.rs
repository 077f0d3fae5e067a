//! Shared harness of the in-process MCP tests: a temporary vault and cache directory, a
//! [`ServerCore`] over them with a manual clock, the server on one end of a
//! `tokio::io::duplex` and rmcp's own client on the other, in either protocol era. The
//! client and the readers of a result's shape are the workspace's one test client
//! (`tc_testkit::mcp`), re-exported here under the names the tests use.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tc_gate::clock::{Clock, ManualClock, OsEntropy, SystemClock};
use tc_gate::keys::ServerSecret;
use tc_gate::{EventName, Store};
use tc_server::config::Config;
use tc_server::handler::ObsidianTc;
use tc_server::metrics::Metrics;
use tc_server::routes::Transport;
use tc_server::server::{CoreParts, ServerCore};
#[allow(unused_imports)]
pub use tc_testkit::mcp::{
    Client, Reply, TestClient, approved, args, call, call_once, complete, failure, input_required,
    legacy, modern, resubmit, success,
};
use tempfile::TempDir;

/// A server over a temporary vault (id `vault`) and cache directory.
pub struct Harness {
    _vault_dir: TempDir,
    _cache_dir: TempDir,
    pub vault: PathBuf,
    pub cache: PathBuf,
    pub clock: ManualClock,
    pub config: Config,
    pub core: Arc<ServerCore>,
}

impl Harness {
    pub fn new() -> Self {
        Self::with(|_| {})
    }

    /// A harness whose configuration `tweak` adjusts (after the vault is added).
    pub fn with(tweak: impl FnOnce(&mut Config)) -> Self {
        let vault_dir = TempDir::new().unwrap();
        let cache_dir = TempDir::new().unwrap();
        let vault = vault_dir.path().join("vault");
        std::fs::create_dir_all(&vault).unwrap();
        let mut config = Config::default();
        config.add_vault_dir(&vault).unwrap();
        tweak(&mut config);
        let clock = ManualClock::new(SystemClock.now_ms());
        let cache = cache_dir.path().to_path_buf();
        let core = build_core(&config, &cache, clock.clone(), false);
        Harness {
            _vault_dir: vault_dir,
            _cache_dir: cache_dir,
            vault,
            cache,
            clock,
            config,
            core,
        }
    }

    /// Another server (e.g. with the legacy shim on) over the same vault and cache.db.
    pub fn sibling(&self, tweak: impl FnOnce(&mut Config), legacy_shim: bool) -> Arc<ServerCore> {
        let mut config = Config::default();
        config.add_vault_dir(&self.vault).unwrap();
        tweak(&mut config);
        build_core(&config, &self.cache, self.clock.clone(), legacy_shim)
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.vault.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.vault.join(rel)).ok()
    }

    pub fn vault_id(&self) -> String {
        "vault".to_owned()
    }

    /// Mints a CLI token for a refused call with the code `obsidian-tc elicit` runs (its own
    /// connection to cache.db, the vault found from the raised request, `--state-fp` as the
    /// refusal names it).
    pub fn mint(&self, refusal: &Value, caller: &str) -> String {
        let details = &refusal["details"];
        let gate = tc_server::approve::open_gate(
            &self.config,
            &self.cache,
            Arc::new(self.clock.clone()),
            Arc::new(OsEntropy),
        )
        .unwrap();
        let request = tc_server::approve::MintRequest {
            vault: None,
            tool: details["tool"].as_str().unwrap(),
            args_hash: details["args_hash"].as_str().unwrap(),
            caller,
            state_fp: details["state_fp"].as_str(),
        };
        tc_server::approve::mint(&self.config, &gate, &request)
            .unwrap_or_else(|e| panic!("minting as obsidian-tc elicit would: {e}"))
            .token
            .expose()
            .to_owned()
    }

    /// How many events of `name` the gate recorded.
    pub fn events(&self, name: EventName) -> usize {
        count_events(&self.core, name)
    }
}

pub fn count_events(core: &ServerCore, name: EventName) -> usize {
    core.gate()
        .events(0, 10_000)
        .unwrap()
        .iter()
        .filter(|e| e.name == name)
        .count()
}

pub fn build_core(
    config: &Config,
    cache: &Path,
    clock: ManualClock,
    legacy_shim: bool,
) -> Arc<ServerCore> {
    let secret = ServerSecret::load_or_create(cache, &OsEntropy).unwrap();
    let store = Store::open(cache.join("cache.db")).unwrap();
    Arc::new(
        ServerCore::build(
            config,
            CoreParts {
                cache_dir: cache,
                secret: &secret,
                store,
                clock: Arc::new(clock),
                entropy: Arc::new(OsEntropy),
                metrics: Arc::new(Metrics::new()),
                legacy_shim,
                approval_flags: Vec::new(),
                approval_program: None,
            },
        )
        .unwrap(),
    )
}

/// Connects `client` to `core` over an in-memory duplex, as a stdio session.
pub async fn connect(core: Arc<ServerCore>, client: TestClient) -> Client {
    let handler = ObsidianTc::new(core, Transport::Stdio);
    tc_testkit::mcp::connect_in_memory(handler, client)
        .await
        .unwrap()
}
