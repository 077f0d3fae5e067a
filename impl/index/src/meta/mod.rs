//! Read-only queries over the index for the families that read the vault's metadata (tags,
//! properties, links, tasks, attachments): each answers from the index's tables, never from a
//! walk of the vault, after [`fresh`] brought the index up to date in the call (spec/index.md
//! `index.fresh`). The families judge the folder ACL on every path these return.

pub mod attachments;
pub mod files;
pub mod links;
pub mod properties;
pub mod recent;
pub mod tags;
pub mod tasks;

use tc_tools::{ToolCx, ToolError};

use crate::VaultIndex;

// r[impl index.fresh]
/// The call's vault index, built and reconciled with the files: what an edit made behind the
/// server's back changed is in the tables it reads.
pub fn fresh<'a>(cx: &ToolCx<'a>) -> Result<&'a VaultIndex, ToolError> {
    let index = crate::search::index_of(cx)?;
    index.wait_ready(cx)?;
    index
        .refresh()
        .map_err(|e| e.to_tool_error("reconciling the vault index"))?;
    Ok(index)
}
