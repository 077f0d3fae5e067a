//! Obsidian's own file formats as tools: canvas, bases, bookmarks, workspaces and Excalidraw
//! drawings (spec/formats.md).

use tc_tools::{Registry, RegistryBuildError};

/// Adds the family's tools to `registry`, in the order `tools/list` shows them.
pub fn register(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    let _ = registry;
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
