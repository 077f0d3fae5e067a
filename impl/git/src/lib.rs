//! tc-git: `git_status`, `git_stage` and `git_commit` on the vault's own repository, through
//! gix (spec/tools.md; spec/git.md; spec/drift.md `drift.bind.git-commit`,
//! `drift.residual.remote-git`).
//!
//! - [`repo`]: finding the vault's own repository (its work tree is the vault root), HEAD,
//!   the index, staged changes, the hidden-folder rule;
//! - [`status`]: `git_status`, bounded by the governor's page budget;
//! - [`stage`]: `git_stage`, each path under the folder ACL, written under `index.lock`;
//! - [`commit`]: `git_commit`, always gated, with its binding in [`binding`] and the author
//!   and committer from [`identity`].
//!
//! Every step opens the repository afresh and does its git work in the tool's own steps,
//! which the server runs on the blocking pool.

pub mod binding;
pub mod commit;
pub mod identity;
pub mod repo;
pub mod stage;
pub mod status;

pub use repo::{ConfigScope, GitOptions};
use tc_tools::{Registry, RegistryBuildError, SubsystemSetup};

/// Adds the git tools to `registry`, reading git's configuration as `git` itself does.
pub fn register(
    registry: &mut Registry,
    _setup: &SubsystemSetup<'_>,
) -> Result<(), RegistryBuildError> {
    register_with(registry, GitOptions::default())
}

/// git_status, git_stage and git_commit as the family `git` (spec `tools.families`).
#[derive(Debug, Clone, Copy, Default)]
pub struct GitFamily;

impl tc_tools::Family for GitFamily {
    fn name(&self) -> &'static str {
        "git"
    }

    fn register(
        &self,
        registry: &mut Registry,
        setup: &SubsystemSetup<'_>,
    ) -> Result<(), RegistryBuildError> {
        register(registry, setup)
    }
}

/// Adds the git tools to `registry`, opening repositories with `options`.
pub fn register_with(
    registry: &mut Registry,
    options: GitOptions,
) -> Result<(), RegistryBuildError> {
    registry.add(status::GitStatus { options })?;
    registry.add(stage::GitStage { options })?;
    registry.add(commit::GitCommit { options })?;
    Ok(())
}

/// A registry holding the git tools alone.
pub fn registry(options: GitOptions) -> Result<Registry, RegistryBuildError> {
    let mut registry = Registry::new();
    register_with(&mut registry, options)?;
    Ok(registry)
}
