//! tc-bridge: the Obsidian bridge (spec/config.md `[vaults.bridge]`, `[vaults.commands]`; spec/tools.md
//! `execute_command`, `trigger_quickadd`; spec/bridge.md; spec/drift.md
//! `drift.bind.none-tools`, `drift.residual.opaque-effects`; spec/release.md
//! `release.keeps-spent`).
//!
//! - [`config`]: the two configuration sections tc-server's `VaultConfig` holds;
//! - [`key`]: the API key file (private to this user, read at each call);
//! - [`tls`]: the certificate pinned on first use;
//! - [`http`]: one exchange that knows whether its request was sent;
//! - [`client`]: the Local REST API's and the companion's routes, and what each answer means;
//! - [`probe`]: what is reachable, at start-up (background thread) and through `bridge_status`;
//! - [`tools`]: `execute_command`, `trigger_quickadd`, `bridge_status`.
//!
//! [`register`] adds the three tools, given every served vault's settings.

pub mod client;
pub mod config;
pub mod http;
pub mod key;
pub mod probe;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tls;
pub mod tools;

use std::collections::BTreeMap;
use std::sync::Arc;

use tc_tools::{Registry, RegistryBuildError, SubsystemSetup};

pub use client::Bridge;
pub use config::{BridgeConfig, CommandsConfig, VaultSettings};
pub use tools::{
    BridgeStatus, Bridges, ExecuteCommand, ExecuteTemplate, TriggerQuickadd, VaultBridge,
};

/// Builds each vault's bridge from its settings (a bad url, key path or timeout is refused
/// with an error naming the key).
pub fn bridges(
    setup: &SubsystemSetup<'_>,
    vaults: impl IntoIterator<Item = VaultSettings>,
) -> Result<Bridges, RegistryBuildError> {
    let mut map = BTreeMap::new();
    for settings in vaults {
        let bridge = match &settings.bridge {
            Some(config) => Some(Arc::new(
                Bridge::new(&settings.vault, config, setup.cache_dir)
                    .map_err(|e| RegistryBuildError::subsystem("bridge", e))?,
            )),
            None => None,
        };
        map.insert(
            settings.vault,
            VaultBridge {
                bridge,
                commands: settings.commands,
            },
        );
    }
    Ok(Arc::new(map))
}

/// Adds the bridge's tools without the start-up probe (tests, library use).
pub fn register_tools(
    registry: &mut Registry,
    bridges: &Bridges,
) -> Result<(), RegistryBuildError> {
    registry.add(ExecuteCommand {
        bridges: Arc::clone(bridges),
    })?;
    registry.add(TriggerQuickadd {
        bridges: Arc::clone(bridges),
    })?;
    registry.add(ExecuteTemplate {
        bridges: Arc::clone(bridges),
    })?;
    registry.add(BridgeStatus {
        bridges: Arc::clone(bridges),
    })?;
    Ok(())
}

/// Adds `execute_command`, `trigger_quickadd` and `bridge_status` for the served vaults,
/// and starts the start-up probe of every configured bridge on a background thread.
pub fn register(
    registry: &mut Registry,
    setup: &SubsystemSetup<'_>,
    vaults: impl IntoIterator<Item = VaultSettings>,
) -> Result<(), RegistryBuildError> {
    let bridges = bridges(setup, vaults)?;
    register_tools(registry, &bridges)?;
    probe::spawn_startup_probe(
        bridges
            .values()
            .filter_map(|v| {
                v.bridge
                    .clone()
                    .map(|b| (b, v.commands.enabled, v.commands.allowlist.len()))
            })
            .collect(),
    );
    Ok(())
}

/// The Obsidian bridge (execute_command, trigger_quickadd, bridge_status) as the family
/// `bridge` (spec `tools.families`), with each vault's `[vaults.bridge]` and
/// `[vaults.commands]`.
#[derive(Debug, Clone)]
pub struct BridgeFamily {
    vaults: Vec<VaultSettings>,
}

impl BridgeFamily {
    pub fn new(vaults: impl IntoIterator<Item = VaultSettings>) -> Self {
        BridgeFamily {
            vaults: vaults.into_iter().collect(),
        }
    }
}

impl tc_tools::Family for BridgeFamily {
    fn name(&self) -> &'static str {
        "bridge"
    }

    fn register(
        &self,
        registry: &mut Registry,
        setup: &SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        register(registry, setup, self.vaults.clone())
    }
}
