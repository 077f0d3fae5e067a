//! tc-index: the vault index in cache.db and the tools on it (spec/index.md; spec/drift.md
//! `drift.bind.reset-vault-cache`, `drift.residual.reset-cache-log`; spec/config.md `[search]`; spec/tools.md).
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
pub mod embed;
pub mod index;
pub mod meta;
pub mod parse;
pub mod reset;
pub mod schema;
pub mod search;
mod watch;

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use tc_tools::{Registry, RegistryBuildError, SubsystemDb, SubsystemDbError};

pub use embed::RunWait;
pub use index::{BuildStatus, IndexError, Reconciled, VaultIndex};

fn yes() -> bool {
    true
}

/// `[search]` (spec/config.md).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SearchConfig {
    /// `enabled` (default true): the index behind search_notes, the link tools' backlinks,
    /// captures and reset_vault_cache. Without it the link tools scan the vault.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// `[search.embeddings]`: the endpoint behind `mode = semantic` and `hybrid` (absent =
    /// text search only).
    #[serde(default)]
    pub embeddings: Option<EmbeddingsConfig>,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            enabled: true,
            embeddings: None,
        }
    }
}

/// `[search.embeddings]` (spec/config.md): any OpenAI-compatible `/embeddings` endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EmbeddingsConfig {
    /// The API's base address; `POST {url}/embeddings` is called (Ollama:
    /// `http://127.0.0.1:11434/v1`, llama.cpp's server: `http://127.0.0.1:8080/v1`).
    pub url: String,
    /// The model asked for (stored with each vector: a new model re-embeds every chunk).
    pub model: String,
    /// The environment variable holding the key, sent as a bearer token, if one is needed.
    #[serde(default)]
    pub api_key_env: Option<String>,
}

/// The index tables of `<cache_dir>/cache.db`, migrated.
pub fn open_db(cache_dir: &Path) -> Result<Arc<SubsystemDb>, SubsystemDbError> {
    SubsystemDb::open(cache_dir, schema::COMPONENT, schema::MIGRATIONS).map(Arc::new)
}

/// The folder where the fences of vault `id`'s watcher pass (`<cache_dir>/index-fences/`, one
/// folder per vault named by the id's bytes in hex, so any id makes a valid name).
fn fence_dir(cache_dir: &Path, id: &str) -> std::path::PathBuf {
    let hex: String = id.bytes().map(|b| format!("{b:02x}")).collect();
    cache_dir.join("index-fences").join(hex)
}

/// The index of each `(vault id, root)` over one connection to the index tables, with the
/// embeddings endpoint of `config` (an endpoint whose key variable is unset is no start-up
/// error: a warning here, and `embeddings_unavailable` naming the variable on each
/// semantic call).
pub fn open_indexes<'a>(
    cache_dir: &Path,
    vaults: impl IntoIterator<Item = (&'a str, &'a Path)>,
    config: &SearchConfig,
) -> Result<Vec<Arc<VaultIndex>>, RegistryBuildError> {
    let db = open_db(cache_dir).map_err(|e| RegistryBuildError::subsystem("index", e))?;
    let embedder = config.embeddings.as_ref().map(|e| {
        let embedder = embed::Embedder::new(e).map(Arc::new);
        if let Err(error) = &embedder {
            tracing::warn!("[search.embeddings]: {error}; semantic and hybrid search answer embeddings_unavailable");
        }
        embedder
    });
    vaults
        .into_iter()
        .map(|(id, root)| {
            VaultIndex::open(
                Arc::clone(&db),
                id,
                root,
                &fence_dir(cache_dir, id),
                embedder.clone(),
            )
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

/// search_notes, the capture tools and reset_vault_cache as the family `search` (spec
/// `tools.families`). The vault index itself is the vault's, opened by the server whether or
/// not this family is served: the link tools read it too.
#[derive(Debug, Clone)]
pub struct SearchFamily {
    config: SearchConfig,
}

impl SearchFamily {
    pub fn new(config: SearchConfig) -> Self {
        SearchFamily { config }
    }
}

impl tc_tools::Family for SearchFamily {
    fn name(&self) -> &'static str {
        "search"
    }

    fn register(
        &self,
        registry: &mut Registry,
        _setup: &tc_tools::SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        register(registry, &self.config)
    }
}

/// Two servers' indexes of one vault `v` over one cache.db (spec `index.fresh.newest-wins`,
/// `search.hit-vanished`), each built once, unwatched, from `files`; the temp dir holds the
/// vault at `v/` and the cache at `c/`.
#[cfg(test)]
pub(crate) fn two_servers(
    files: &[(&str, &str)],
) -> (tempfile::TempDir, Arc<VaultIndex>, Arc<VaultIndex>) {
    let tmp = tempfile::tempdir().unwrap();
    let (vault, cache) = (tmp.path().join("v"), tmp.path().join("c"));
    std::fs::create_dir_all(&vault).unwrap();
    std::fs::create_dir_all(&cache).unwrap();
    for (path, text) in files {
        std::fs::write(vault.join(path), text).unwrap();
    }
    let config = SearchConfig::default();
    let open = || {
        open_indexes(&cache, [("v", vault.as_path())], &config)
            .unwrap()
            .remove(0)
    };
    let (a, b) = (open(), open());
    a.first_build_unwatched();
    b.first_build_unwatched();
    (tmp, a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    // r[verify search.embeddings.endpoint]
    #[test]
    fn the_embeddings_section_reads_its_contract_keys_and_names_an_unknown_one() {
        let config: SearchConfig = serde_json::from_value(serde_json::json!({
            "embeddings": {"url": "http://127.0.0.1:11434/v1", "model": "nomic-embed-text",
                           "apiKeyEnv": "OPENAI_API_KEY"}
        }))
        .unwrap();
        assert!(config.enabled);
        let embeddings = config.embeddings.unwrap();
        assert_eq!(embeddings.model, "nomic-embed-text");
        assert_eq!(embeddings.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        let unknown = serde_json::from_value::<SearchConfig>(serde_json::json!({
            "embeddings": {"url": "http://x/v1", "model": "m", "apiKey": "inline"}
        }))
        .unwrap_err();
        assert!(unknown.to_string().contains("apiKey"), "{unknown}");
        assert_eq!(SearchConfig::default().embeddings, None);
    }
}
