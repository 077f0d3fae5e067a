//! Journal tools from the vault's own settings: periodic notes and templates (spec/periodic.md)
//! and tasks (spec/tasks.md).

pub mod expand;
pub mod journal;
pub mod moment;
pub mod period;
pub mod settings;
pub mod tasks;
pub mod templates;

pub use tasks::TasksFamily;

use tc_tools::{Registry, RegistryBuildError};

/// Adds the family's tools to `registry`, in the order `tools/list` shows them.
pub fn register(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    journal::register(registry)?;
    templates::register(registry)
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
