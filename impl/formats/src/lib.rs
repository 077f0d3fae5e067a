//! Obsidian's own file formats as tools (spec/formats.md): JSON Canvas files, the Excalidraw
//! plugin's drawings, Obsidian's bases, bookmarks and saved workspaces, read and written on
//! the server host with no running Obsidian.
//!
//! - `canvas`: `read_canvas`, `create_canvas`, `update_canvas`.
//! - `excalidraw`: `read_excalidraw`, `create_excalidraw`.
//! - `bases`: `read_base`, `create_base`, `update_base`.
//! - `bookmarks`: `list_bookmarks`, `add_bookmark`, `remove_bookmark`.
//! - `workspaces`: `list_workspaces`, `save_workspace`.
//! - `settings`: the `.obsidian/` files the last two edit, which no vault path reaches.

pub mod bases;
pub mod bookmarks;
pub mod canvas;
pub mod excalidraw;
pub mod settings;
pub mod workspaces;

use tc_tools::{Registry, RegistryBuildError};

/// Drops the `default` a `#[serde(default)]` list would advertise: an absent list is empty,
/// said once in the description rather than in every field (the tool-list budget).
pub(crate) fn no_default(schema: &mut schemars::Schema) {
    schema.remove("default");
}

/// Adds the family's tools to `registry`, in the order `tools/list` shows them.
pub fn register(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    registry.add(canvas::ReadCanvas)?;
    registry.add(canvas::CreateCanvas)?;
    registry.add(canvas::UpdateCanvas)?;
    registry.add(excalidraw::ReadExcalidraw)?;
    registry.add(excalidraw::CreateExcalidraw)?;
    registry.add(bases::ReadBase)?;
    registry.add(bases::CreateBase)?;
    registry.add(bases::UpdateBase)?;
    registry.add(bookmarks::ListBookmarks)?;
    registry.add(bookmarks::AddBookmark)?;
    registry.add(bookmarks::RemoveBookmark)?;
    registry.add(workspaces::ListWorkspaces)?;
    registry.add(workspaces::SaveWorkspace)?;
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
