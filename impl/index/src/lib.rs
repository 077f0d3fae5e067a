//! tc-index: the vault index in cache.db and the tools on it (spec/index.md; spec/drift.md
//! `drift.bind.reset-vault-cache`, `drift.residual.reset-cache-log`; shared/DESIGN.md §1,
//! §7; CONTRACT.md §2 `[search]`, §3).
//!
//! - [`parse`]: what the index keeps of a note (hash, frontmatter keys, tags, headings,
//!   links by name key, heading-aware chunks);
//! - [`index`]: one vault's index, reconciled with the folder (mtime and size) before every
//!   answer, built in the background at start-up; it implements tc-tools' `LinkIndex`,
//!   through which the note tools find the notes a link rewrite touches;
//! - [`watch`]: the `notify` watcher that re-indexes while serving;
//! - [`search`]: `search_notes`; [`captures`]: `capture_note`, `list_captures`,
//!   `commit_capture`; [`reset`]: `reset_vault_cache`.
//!
//! The server opens one [`VaultIndex`] per vault with [`open_indexes`], attaches each to its
//! vault's binding, starts it, and adds the tools with [`register`].

pub mod captures;
pub mod index;
pub mod parse;
pub mod reset;
pub mod schema;
pub mod search;
mod watch;

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use tc_tools::{Registry, RegistryBuildError, SubsystemDb, SubsystemDbError};

pub use index::{BuildStatus, IndexError, Reconciled, VaultIndex};

fn yes() -> bool {
    true
}

/// `[search]` (CONTRACT §2).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SearchConfig {
    /// `enabled` (default true): the index behind search_notes, the link tools' backlinks,
    /// captures and reset_vault_cache. Without it the link tools scan the vault.
    #[serde(default = "yes")]
    pub enabled: bool,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig { enabled: true }
    }
}

/// The index tables of `<cache_dir>/cache.db`, migrated.
pub fn open_db(cache_dir: &Path) -> Result<Arc<SubsystemDb>, SubsystemDbError> {
    SubsystemDb::open(cache_dir, schema::COMPONENT, schema::MIGRATIONS).map(Arc::new)
}

/// The index of each `(vault id, root)` over one connection to the index tables.
pub fn open_indexes<'a>(
    cache_dir: &Path,
    vaults: impl IntoIterator<Item = (&'a str, &'a Path)>,
) -> Result<Vec<Arc<VaultIndex>>, RegistryBuildError> {
    let db = open_db(cache_dir).map_err(|e| RegistryBuildError::subsystem("index", e))?;
    vaults
        .into_iter()
        .map(|(id, root)| {
            VaultIndex::open(Arc::clone(&db), id, root)
                .map_err(|e| RegistryBuildError::subsystem("index", e))
        })
        .collect()
}

/// Adds the index's tools (none when `[search] enabled = false`).
pub fn register(registry: &mut Registry, config: &SearchConfig) -> Result<(), RegistryBuildError> {
    if !config.enabled {
        return Ok(());
    }
    registry.add(search::SearchNotes)?;
    registry.add(captures::CaptureNote)?;
    registry.add(captures::ListCaptures)?;
    registry.add(captures::CommitCapture)?;
    registry.add(reset::ResetVaultCache)?;
    Ok(())
}
