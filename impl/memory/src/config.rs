//! `[vaults.memory]` (spec/config.md; spec/memory.md `memory.config.folder`).

use serde::{Deserialize, Serialize};
use tc_vault::path::FolderPath;

/// The folder entity notes go under when none is configured.
pub const DEFAULT_FOLDER: &str = "memory";

/// `[vaults.memory]` as written in the config file. Unknown keys are refused, naming the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MemoryConfig {
    /// `folder`: the vault folder entity notes are materialized under
    /// (`<folder>/<type>/<name>.md`); `memory` by default.
    #[serde(default = "default_folder")]
    pub folder: String,
}

fn default_folder() -> String {
    DEFAULT_FOLDER.to_owned()
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            folder: default_folder(),
        }
    }
}

/// A `[vaults.memory]` that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("vaults[{vault}].memory.folder: {reason}")]
pub struct MemoryConfigError {
    pub vault: String,
    pub reason: String,
}

impl MemoryConfig {
    // r[impl memory.config.folder]
    /// The folder, judged as a vault folder path: relative, inside the vault, not the root,
    /// not under `.obsidian/`, `.git/` or `.trash/`.
    pub fn folder_path(&self) -> Result<FolderPath, String> {
        let folder = FolderPath::parse(&self.folder).map_err(|e| e.to_string())?;
        if folder.is_root() {
            return Err("must name a folder inside the vault, not the vault root".to_owned());
        }
        Ok(folder)
    }

    /// Refuses a folder that cannot hold notes, naming the vault.
    pub fn validate(&self, vault: &str) -> Result<(), MemoryConfigError> {
        self.folder_path()
            .map(|_| ())
            .map_err(|reason| MemoryConfigError {
                vault: vault.to_owned(),
                reason,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_folder_is_memory_and_unknown_keys_are_refused() {
        let parsed: MemoryConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(parsed.folder, "memory");
        let error = serde_json::from_str::<MemoryConfig>(r#"{"folders":"x"}"#).unwrap_err();
        assert!(error.to_string().contains("folders"), "{error}");
    }

    // r[verify memory.config.folder]
    #[test]
    fn a_folder_outside_or_at_the_root_is_refused() {
        for bad in ["", "/abs", "../up", ".obsidian/mem", "."] {
            let config = MemoryConfig {
                folder: bad.to_owned(),
            };
            let error = config.validate("main").unwrap_err();
            assert!(
                error.to_string().contains("memory.folder"),
                "{bad}: {error}"
            );
        }
        MemoryConfig {
            folder: "agents/memory".to_owned(),
        }
        .validate("main")
        .unwrap();
    }
}
