//! The author and committer of a commit, from the repository's git configuration (spec/git.md
//! `git.commit.identity`).
//!
//! gix resolves them as git does (`author.*`/`committer.*`, then `user.*`, then the
//! `GIT_AUTHOR_*`/`GIT_COMMITTER_*` environment when the configuration scope allows it).
//! When one is missing the refusal names the key to set, so the human can fix it with one
//! `git config` line instead of guessing.

use gix::actor::Signature;
use serde_json::json;
use tc_tools::{ErrorCode, ToolError};

/// Who a commit is by, owned (the signatures' time is the moment the repository was opened).
#[derive(Debug, Clone)]
pub struct Identity {
    pub author: Signature,
    pub committer: Signature,
}

/// The key a missing identity needs: `user.name` or `user.email`.
fn missing_key(repo: &gix::Repository, role: &str) -> &'static str {
    let config = repo.config_snapshot();
    let has = |key: &str| config.string(key).is_some_and(|value| !value.is_empty());
    if !has("user.name") && !has(&format!("{role}.name")) {
        "user.name"
    } else {
        "user.email"
    }
}

fn missing(repo: &gix::Repository, role: &str) -> ToolError {
    let key = missing_key(repo, role);
    ToolError::new(
        ErrorCode::InvalidInput,
        format!(
            "the repository's git configuration has no {role} identity: {key} is not set"
        ),
    )
    .with_details(json!({"reason": "identity_missing", "key": key, "role": role}))
    .with_recovery(
        format!("set it on the server host with `git config {key} <value>` in the vault, then send the call again"),
        Some(format!("git config {key} ")),
    )
}

// r[impl git.commit.identity]
/// The author and committer the repository's configuration gives, or a refusal naming the
/// missing key.
pub fn identity(repo: &gix::Repository) -> Result<Identity, ToolError> {
    let author = match repo.author() {
        Some(Ok(signature)) => signature.to_owned().map_err(|_| missing(repo, "author"))?,
        Some(Err(_)) | None => return Err(missing(repo, "author")),
    };
    let committer = match repo.committer() {
        Some(Ok(signature)) => signature
            .to_owned()
            .map_err(|_| missing(repo, "committer"))?,
        Some(Err(_)) | None => return Err(missing(repo, "committer")),
    };
    Ok(Identity { author, committer })
}
