//! Tool families: the one door a group of tools comes in by (spec/tools.md `tools.families`,
//! `tools.families.one-door`).
//!
//! A family is a group of tools with the state they keep, implemented in the crate where its
//! data lives. It is built with its own configuration (a table of the config file, or none)
//! and registers its tools when the server's `tools.families` serves it. The server names
//! every family in one list, from which registration and the names `tools.families` accepts
//! follow; adding a family is its crate plus one line in that list.

use std::fmt;

use crate::registry::{Registry, RegistryBuildError, SubsystemSetup};

/// One family of tools.
pub trait Family: Send + Sync + fmt::Debug {
    /// The name `tools.families` serves it by.
    fn name(&self) -> &'static str;

    /// Opens what the family keeps (its tables in cache.db, caches, engines) and adds its
    /// tools to `registry`, in the order `tools/list` shows them. Called only for a family
    /// the configuration serves, once, at start-up.
    fn register(
        &self,
        registry: &mut Registry,
        setup: &SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError>;
}
