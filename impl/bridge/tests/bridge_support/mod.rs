//! The fixture of the bridge's tests: a tool fixture (tc_tools::testing::Fx) whose registry
//! holds the bridge's tools pointed at a stand-in Obsidian, with a private key file.
#![allow(dead_code)]

use std::cell::RefCell;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use tc_bridge::testing::KEY;
use tc_bridge::{BridgeConfig, CommandsConfig, VaultSettings};
use tc_tools::testing::{Fx, Tools};
use tc_tools::{Registry, SubsystemSetup};

thread_local! {
    /// What [`BridgeTools::registry`] builds on this test's thread (the standard scenarios
    /// build their own fixtures through it).
    static SETTINGS: RefCell<Option<(VaultSettings, PathBuf)>> = const { RefCell::new(None) };
}

/// The bridge's tools over the settings of this thread (none configured by default).
#[derive(Debug)]
pub struct BridgeTools;

impl Tools for BridgeTools {
    fn registry() -> Registry {
        SETTINGS.with(|s| match s.borrow().as_ref() {
            Some((settings, cache)) => registry(settings.clone(), cache),
            None => registry(
                VaultSettings {
                    vault: "main".into(),
                    bridge: None,
                    commands: CommandsConfig::default(),
                },
                Path::new("/nonexistent"),
            ),
        })
    }
}

/// Makes [`BridgeTools::registry`] build `settings` (pins under `cache`) on this thread.
pub fn use_settings(settings: VaultSettings, cache: &Path) {
    SETTINGS.with(|s| *s.borrow_mut() = Some((settings, cache.to_path_buf())));
}

pub fn registry(settings: VaultSettings, cache: &Path) -> Registry {
    let setup = SubsystemSetup {
        cache_dir: cache,
        clock: Arc::new(tc_gate::clock::SystemClock),
    };
    let bridges = tc_bridge::bridges(&setup, [settings]).unwrap();
    let mut registry = Registry::new();
    tc_bridge::register_tools(&mut registry, &bridges).unwrap();
    registry
}

/// Writes `key` to `<dir>/rest-api.key`, 0600.
pub fn key_file(dir: &Path, key: &str) -> PathBuf {
    let path = dir.join("rest-api.key");
    std::fs::write(&path, format!("{key}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

pub fn enabled(ids: &[&str]) -> CommandsConfig {
    CommandsConfig {
        enabled: true,
        allowlist: ids.iter().map(|s| (*s).to_owned()).collect(),
    }
}

pub fn settings(url: &str, key: &Path, timeout_ms: u64, commands: CommandsConfig) -> VaultSettings {
    VaultSettings {
        vault: "main".into(),
        bridge: Some(BridgeConfig {
            url: url.to_owned(),
            api_key_file: key.to_path_buf(),
            timeout_ms,
        }),
        commands,
    }
}

/// A fixture whose bridge points at `url`, with the stand-in's key.
pub fn fx_for(url: &str, timeout_ms: u64, commands: CommandsConfig) -> Fx<BridgeTools> {
    let mut fx = Fx::<BridgeTools>::new();
    let key = key_file(fx.dir.path(), KEY);
    let cache = fx.cache();
    fx.use_registry(registry(settings(url, &key, timeout_ms, commands), &cache));
    fx
}

/// Points `fx`'s bridge at another url (same cache, so the same pin), keeping the key.
pub fn repoint(fx: &mut Fx<BridgeTools>, url: &str, timeout_ms: u64, commands: CommandsConfig) {
    let key = fx.dir.path().join("rest-api.key");
    let cache = fx.cache();
    fx.use_registry(registry(settings(url, &key, timeout_ms, commands), &cache));
}

pub fn bold() -> Value {
    json!({"command_id": "editor:toggle-bold"})
}
