//! The vault's metadata as tools, answered from its index: tags, properties, links and
//! recent changes (spec/metadata.md).

pub mod links;
pub mod properties;
pub mod recent;
pub mod tags;

use tc_tools::{Registry, RegistryBuildError};

/// Adds the family's tools to `registry`, in the order `tools/list` shows them.
pub fn register(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    registry.add(tags::ListTags)?;
    registry.add(tags::GetNoteTags)?;
    registry.add(tags::FindNotesByTag)?;
    registry.add(tags::AddTag)?;
    registry.add(tags::RemoveTag)?;
    registry.add(tags::RenameTag)?;
    registry.add(properties::ListProperties)?;
    registry.add(properties::ReadProperty)?;
    registry.add(properties::FindNotesByProperty)?;
    registry.add(links::GetBacklinks)?;
    registry.add(links::GetOutgoingLinks)?;
    registry.add(links::FindOrphans)?;
    registry.add(links::FindUnresolvedLinks)?;
    registry.add(recent::RecentChanges)?;
    Ok(())
}

/// The family `metadata` (spec/tools.md `tools.families`).
#[derive(Debug, Clone, Copy, Default)]
pub struct MetadataFamily;

impl tc_tools::Family for MetadataFamily {
    fn name(&self) -> &'static str {
        "metadata"
    }

    fn register(
        &self,
        registry: &mut Registry,
        _setup: &tc_tools::SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        register(registry)
    }
}
