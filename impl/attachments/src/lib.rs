//! Attachments in and out, and the versions every confirmed change keeps
//! (spec/attachments.md, spec/versions.md).

use tc_tools::{Registry, RegistryBuildError};

pub mod versions;

/// Adds the family's tools to `registry`, in the order `tools/list` shows them.
pub fn register(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    registry.add(versions::ListSnapshots)?;
    registry.add(versions::ReadSnapshot)?;
    Ok(())
}

/// The family `attachments` (spec/tools.md `tools.families`).
#[derive(Debug, Clone, Copy, Default)]
pub struct AttachmentsFamily;

impl tc_tools::Family for AttachmentsFamily {
    fn name(&self) -> &'static str {
        "attachments"
    }

    fn register(
        &self,
        registry: &mut Registry,
        _setup: &tc_tools::SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        register(registry)
    }
}
