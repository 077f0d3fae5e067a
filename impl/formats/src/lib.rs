//! Obsidian's own file formats as tools (spec/formats.md): JSON Canvas files, read and written
//! on the server host with no running Obsidian.
//!
//! - `canvas`: `read_canvas`, `create_canvas`, `update_canvas`.

pub mod canvas;

use tc_tools::{Registry, RegistryBuildError};

/// Adds the family's tools to `registry`, in the order `tools/list` shows them.
pub fn register(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    registry.add(canvas::ReadCanvas)?;
    registry.add(canvas::CreateCanvas)?;
    registry.add(canvas::UpdateCanvas)?;
    Ok(())
}

/// The family `formats` (spec/tools.md `tools.families`).
#[derive(Debug, Clone, Copy, Default)]
pub struct FormatsFamily;

impl tc_tools::Family for FormatsFamily {
    fn name(&self) -> &'static str {
        "formats"
    }

    fn register(
        &self,
        registry: &mut Registry,
        _setup: &tc_tools::SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        register(registry)
    }
}
