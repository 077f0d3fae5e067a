//! Many notes created, changed or moved under one exact confirmation (spec/bulk.md).

use tc_tools::{Registry, RegistryBuildError};

/// Adds the family's tools to `registry`, in the order `tools/list` shows them.
pub fn register(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    let _ = registry;
    Ok(())
}

/// The family `bulk` (spec/tools.md `tools.families`).
#[derive(Debug, Clone, Copy, Default)]
pub struct BulkFamily;

impl tc_tools::Family for BulkFamily {
    fn name(&self) -> &'static str {
        "bulk"
    }

    fn register(
        &self,
        registry: &mut Registry,
        _setup: &tc_tools::SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        register(registry)
    }
}
