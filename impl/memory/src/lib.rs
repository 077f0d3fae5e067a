//! tc-memory: agent memory in the vault (spec/memory.md; spec/drift.md
//! `drift.bind.delete-entity`; spec/tools.md `upsert_entity` … `delete_entity`).
//!
//! Agents keep long-lived memory as a graph of entities (a type, a name, observations) and
//! typed relations between them. The graph lives in cache.db ([`store`], tables of this
//! crate's own migrations) and is the truth; each materialized entity is also a note under
//! the vault's `memory.folder` ([`render`], [`sync`]), which a person reads and may edit in
//! Obsidian: additions outside the store's section are kept, an edit inside it refuses the
//! next re-render instead of being overwritten.
//!
//! - [`config`] holds `[vaults.memory]`;
//! - [`names`] makes entity names safe as note paths and wikilinks;
//! - [`tools`] holds the six tools.
//!
//! [`register`] opens the tables and adds the tools to a registry.

pub mod config;
mod journal;
pub mod names;
pub mod render;
pub mod store;
pub mod sync;
pub mod tools;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use config::MemoryConfig;
use tc_tools::{Registry, RegistryBuildError, SubsystemDb, SubsystemSetup};

/// The subsystem's name, as its version row in `subsystem_schema` spells it.
pub const COMPONENT: &str = "memory";

/// What every memory tool shares: the tables and each vault's memory configuration.
#[derive(Debug)]
pub struct Memory {
    db: SubsystemDb,
    /// Where a change's journal is kept (`<cache>/memory-journal`); none for an in-memory
    /// store, whose changes a crash takes with it.
    journal_dir: Option<std::path::PathBuf>,
    configs: BTreeMap<String, MemoryConfig>,
    default_config: MemoryConfig,
}

impl Memory {
    // r[impl memory.delete.permanent-gone]
    /// After a permanent delete: the entity's note leaves the vault index, and neither the
    /// index's nor the store's deleted rows keep an older copy in cache.db's log (the
    /// connection overwrites what it deletes). A failure says the delete was applied.
    pub(crate) fn scrub_deleted(
        &self,
        cx: &tc_tools::ToolCx<'_>,
        note: Option<&tools::delete::DeletedNote>,
    ) -> Result<(), tc_tools::ToolError> {
        let applied = |e: tc_tools::ToolError| e.detail("applied", serde_json::json!(true));
        if let (Some(note), Some(index)) = (note, cx.binding.index()) {
            let path = tc_vault::path::VaultPath::parse(&note.path)
                .map_err(|e| applied(tc_tools::ToolError::from(e)))?;
            index.purge(&path).map_err(applied)?;
        }
        if !self.db.scrub_wal().map_err(|_| {
            applied(tc_tools::ToolError::internal(
                "checkpointing the memory store",
            ))
        })? {
            tracing::warn!(
                "memory: a reader kept the write-ahead log busy after a permanent delete"
            );
        }
        Ok(())
    }

    /// The memory of the vaults in `configs` (a vault not named uses the defaults) over `db`.
    pub fn new(
        db: SubsystemDb,
        configs: impl IntoIterator<Item = (String, MemoryConfig)>,
    ) -> Result<Self, config::MemoryConfigError> {
        let configs: BTreeMap<String, MemoryConfig> = configs.into_iter().collect();
        for (vault, config) in &configs {
            config.validate(vault)?;
        }
        Ok(Memory {
            db,
            journal_dir: None,
            configs,
            default_config: MemoryConfig::default(),
        })
    }

    /// Opens the memory tables in `<cache_dir>/cache.db`.
    pub fn open(
        setup: &SubsystemSetup<'_>,
        configs: impl IntoIterator<Item = (String, MemoryConfig)>,
    ) -> Result<Self, RegistryBuildError> {
        let db = SubsystemDb::open(setup.cache_dir, COMPONENT, store::MIGRATIONS)
            .map_err(|e| RegistryBuildError::subsystem(COMPONENT, e))?;
        Memory::new(db, configs)
            .map(|memory| memory.journaled_in(setup.cache_dir.join("memory-journal")))
            .map_err(|e| RegistryBuildError::subsystem(COMPONENT, e))
    }

    /// The memory tables in a private in-memory database (tests, benchmarks).
    pub fn in_memory(
        configs: impl IntoIterator<Item = (String, MemoryConfig)>,
    ) -> Result<Self, RegistryBuildError> {
        let db = SubsystemDb::open_in_memory(COMPONENT, store::MIGRATIONS)
            .map_err(|e| RegistryBuildError::subsystem(COMPONENT, e))?;
        Memory::new(db, configs).map_err(|e| RegistryBuildError::subsystem(COMPONENT, e))
    }

    /// The configuration of vault `vault`.
    pub fn config(&self, vault: &str) -> &MemoryConfig {
        self.configs.get(vault).unwrap_or(&self.default_config)
    }

    pub(crate) fn db(&self) -> &SubsystemDb {
        &self.db
    }

    /// The same memory, journaling its changes in `dir` (spec `memory.sync.recovered`).
    pub fn journaled_in(mut self, dir: std::path::PathBuf) -> Self {
        self.journal_dir = Some(dir);
        self
    }

    pub(crate) fn journal(&self, vault: &str) -> Option<journal::Journal> {
        self.journal_dir
            .as_deref()
            .map(|dir| journal::Journal::of(dir, vault))
    }
}

/// Opens the memory tables under `setup.cache_dir` and adds the memory tools to
/// `registry`; `configs` holds each vault's `[vaults.memory]` (a vault not named uses the
/// defaults).
pub fn register(
    registry: &mut Registry,
    setup: &SubsystemSetup<'_>,
    configs: impl IntoIterator<Item = (String, MemoryConfig)>,
) -> Result<(), RegistryBuildError> {
    let memory = Arc::new(Memory::open(setup, configs)?);
    add_tools(registry, &memory)
}

/// Adds the six memory tools over `memory` to `registry`, in the order `tools/list` shows.
pub fn add_tools(registry: &mut Registry, memory: &Arc<Memory>) -> Result<(), RegistryBuildError> {
    registry.add(tools::upsert::UpsertEntity(Arc::clone(memory)))?;
    registry.add(tools::relate::RelateEntities(Arc::clone(memory)))?;
    registry.add(tools::relate::UnrelateEntities(Arc::clone(memory)))?;
    registry.add(tools::read::GetEntity(Arc::clone(memory)))?;
    registry.add(tools::read::SearchEntities(Arc::clone(memory)))?;
    registry.add(tools::delete::DeleteEntity(Arc::clone(memory)))?;
    Ok(())
}

/// The agent's memory (its store and six tools) as the family `memory` (spec
/// `tools.families`), with each vault's `[vaults.memory]`.
#[derive(Debug, Clone)]
pub struct MemoryFamily {
    configs: Vec<(String, MemoryConfig)>,
}

impl MemoryFamily {
    pub fn new(configs: impl IntoIterator<Item = (String, MemoryConfig)>) -> Self {
        MemoryFamily {
            configs: configs.into_iter().collect(),
        }
    }
}

impl tc_tools::Family for MemoryFamily {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn register(
        &self,
        registry: &mut Registry,
        setup: &SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        register(registry, setup, self.configs.clone())
    }
}
