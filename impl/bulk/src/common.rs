//! What the bulk tools share: the limits of one call, the per-item result and the lines a
//! frontmatter edit changes (spec/bulk.md `bulk.items.bounded`,
//! `bulk.results.per-item`).

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::Serialize;
use tc_tools::{HandlerFailure, ToolError};
use tc_vault::path::VaultPath;

/// The most items one bulk call takes: a plan, its binding and its summary stay a few hundred
/// milliseconds and well under a response's budget.
pub const MAX_ITEMS: usize = 1_000;

// r[impl bulk.items.bounded]
/// Refuses an empty call, one over [`MAX_ITEMS`], and one naming a path twice.
pub fn check_paths<'a>(
    field: &str,
    paths: impl ExactSizeIterator<Item = &'a str>,
) -> Result<(), ToolError> {
    let count = paths.len();
    if count == 0 {
        return Err(ToolError::validation(
            &format!("/{field}"),
            "names no item".to_owned(),
        ));
    }
    if count > MAX_ITEMS {
        return Err(ToolError::validation(
            &format!("/{field}"),
            format!("names {count} items; one call takes at most {MAX_ITEMS}"),
        ));
    }
    let mut seen = BTreeSet::new();
    for path in paths {
        if !seen.insert(path) {
            return Err(ToolError::validation(
                &format!("/{field}"),
                format!("names {path} twice"),
            ));
        }
    }
    Ok(())
}

/// What became of one item of an applied call.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ItemResult {
    pub path: String,
    /// `created`, `replaced`, `changed`, `unchanged` or `failed`.
    pub outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    /// The error code of a failed item.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl ItemResult {
    pub fn done(path: &VaultPath, outcome: &'static str, hash: Option<String>) -> Self {
        ItemResult {
            path: path.as_str().to_owned(),
            outcome,
            content_hash: hash,
            error: None,
            message: None,
        }
    }

    // r[impl bulk.results.per-item]
    /// An item that failed once the call was applied: its error, the other items unaffected.
    pub fn failed(path: &VaultPath, failure: HandlerFailure) -> Self {
        let error = match failure {
            HandlerFailure::Failed(error) => error,
            HandlerFailure::ConventionBlockedBeforeWrite(blocked) => {
                ToolError::convention(&blocked)
            }
        };
        ItemResult {
            path: path.as_str().to_owned(),
            outcome: "failed",
            content_hash: None,
            error: Some(error.code.as_str().to_owned()),
            message: Some(error.message.clone()),
        }
    }
}

/// The lines of `new` that `old` lacks and the lines of `old` that `new` lacks, as `+ `/`- `
/// lines: the change of a frontmatter edit in one or two lines.
pub fn changed_lines(old: &str, new: &str) -> Vec<String> {
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let mut out: Vec<String> = old_lines
        .iter()
        .filter(|line| !new_lines.contains(line))
        .map(|line| format!("- {line}"))
        .collect();
    out.extend(
        new_lines
            .iter()
            .filter(|line| !old_lines.contains(line))
            .map(|line| format!("+ {line}")),
    );
    out
}
