//! Journal tools from the vault's own settings: periodic notes and templates (spec/periodic.md)
//! and tasks (spec/tasks.md).

pub mod moment;
pub mod tasks;

pub use tasks::TasksFamily;

use tc_tools::{Registry, RegistryBuildError};

/// Adds the family's tools to `registry`, in the order `tools/list` shows them.
pub fn register(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    let _ = registry;
    Ok(())
}

/// The family `periodic` (spec/tools.md `tools.families`).
#[derive(Debug, Clone, Copy, Default)]
pub struct PeriodicFamily;

impl tc_tools::Family for PeriodicFamily {
    fn name(&self) -> &'static str {
        "periodic"
    }

    fn register(
        &self,
        registry: &mut Registry,
        _setup: &tc_tools::SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        register(registry)
    }
}
