//! Many notes created, changed or moved under one exact confirmation (spec/bulk.md): a dry run
//! shows the plan for nothing, a real run asks once, bound to every note it touches, and
//! reports item by item.
//!
//! - `create`: `bulk_create_notes`;
//! - `property`: `bulk_set_property`;
//! - `moves`: `bulk_move_notes`.

pub mod common;
pub mod create;
pub mod moves;
pub mod property;

use tc_tools::{Registry, RegistryBuildError};

/// Adds the bulk tools to `registry`, in the order `tools/list` shows them.
pub fn register(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    registry.add(create::BulkCreateNotes)?;
    registry.add(property::BulkSetProperty)?;
    registry.add(moves::BulkMoveNotes)?;
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
