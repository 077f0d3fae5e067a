//! `update_frontmatter` (spec/tools.md `tools.update-frontmatter`; spec/drift.md
//! `drift.bind.path-tools`); `update_task` is the tasks family's (tc-periodic).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tc_gate::ConfirmationTargets;
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{WriteIntent, WriteKind};
use tc_vault::error::VaultError;
use tc_vault::note::{Frontmatter, FrontmatterError, parse_note, with_frontmatter};
use tc_vault::path::VaultPath;
use tc_vault::vault::NoteContent;

use crate::common::{
    check_prev_hash, guard_for, not_found, note, preflight, prior_of, read_as_observed,
};

// ---------------------------------------------------------------- update_frontmatter

/// What `update_frontmatter` does with `data` or `keys`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FrontmatterOperation {
    Merge,
    Replace,
    Remove,
}

/// `update_frontmatter` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateFrontmatterArgs {
    /// The note to edit.
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// merge and replace take data, remove takes keys.
    pub operation: FrontmatterOperation,
    /// Keys and values to merge or to replace the frontmatter with (required for merge and
    /// replace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Map<String, Value>>,
    /// Keys to remove (required for remove).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<Vec<String>>,
    /// The note's content_hash as last read; refused if it changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128))]
    pub prev_hash: Option<String>,
}

/// `update_frontmatter`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UpdateFrontmatterOutput {
    pub path: String,
    /// The frontmatter after the edit.
    pub frontmatter: Map<String, Value>,
    pub content_hash: String,
}

#[derive(Debug)]
pub struct UpdateFrontmatter;

fn frontmatter_edit(
    args: &UpdateFrontmatterArgs,
    current: &NoteContent,
    path: &VaultPath,
) -> Result<(String, Frontmatter), ToolError> {
    let text = std::str::from_utf8(&current.bytes).map_err(|_| {
        ToolError::from(VaultError::FrontmatterInvalid {
            path: path.as_str().to_owned(),
            reason: "the note is not valid UTF-8".to_owned(),
        })
    })?;
    let parsed = parse_note(text).map_err(|e| ToolError::from(e.at(path)))?;
    let data = || {
        args.data
            .as_ref()
            .ok_or_else(|| ToolError::validation("/data", "is required for this operation"))
    };
    let yaml_error = |e: FrontmatterError| ToolError::validation("/data", e.reason);
    // A block that cannot be edited in place is refused, never rewritten whole.
    let in_place = |e: FrontmatterError| {
        ToolError::from(VaultError::FrontmatterInvalid {
            path: path.as_str().to_owned(),
            reason: e.reason,
        })
    };
    // r[impl vault.frontmatter.lossless]
    let new = match args.operation {
        FrontmatterOperation::Merge => {
            let data = data()?;
            // A value YAML cannot hold is the caller's error, found before the note is.
            parsed
                .frontmatter
                .clone()
                .unwrap_or_default()
                .merge(data)
                .map_err(yaml_error)?;
            tc_vault::frontmatter_edit::merge(text, data).map_err(in_place)?
        }
        FrontmatterOperation::Replace => {
            let mut frontmatter = Frontmatter::new();
            frontmatter.replace(data()?).map_err(yaml_error)?;
            with_frontmatter(text, &frontmatter).map_err(yaml_error)?
        }
        FrontmatterOperation::Remove => {
            let keys = args
                .keys
                .as_ref()
                .ok_or_else(|| ToolError::validation("/keys", "is required for remove"))?;
            tc_vault::frontmatter_edit::remove(text, keys).map_err(in_place)?
        }
    };
    let frontmatter = parse_note(&new)
        .map_err(|e| ToolError::from(e.at(path)))?
        .frontmatter
        .unwrap_or_default();
    Ok((new, frontmatter))
}

impl Tool for UpdateFrontmatter {
    type Args = UpdateFrontmatterArgs;
    type Output = UpdateFrontmatterOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "update_frontmatter",
            description: "Edit a note's YAML frontmatter: merge `data` into it, replace it with `data`, or remove `keys`. replace needs the human's confirmation.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &UpdateFrontmatterArgs,
    ) -> Result<Precheck, ToolError> {
        let path = note(&args.path)?;
        // r[impl vault.acl.declared.edits-read]
        cx.require_read(&path)?;
        let current = cx
            .vault()
            .read_if_exists(&path)?
            .ok_or_else(|| not_found(&path))?;
        // r[impl tools.update-frontmatter.prev-hash]
        check_prev_hash(&path, args.prev_hash.as_deref(), Some(&current))?;
        let (new, _) = frontmatter_edit(args, &current, &path)?;
        preflight(
            cx,
            &WriteIntent::new(
                path.clone(),
                WriteKind::Overwrite,
                new.as_bytes(),
                prior_of(Some(&current)),
            ),
        )?;
        Ok(Precheck {
            needs_confirmation: args.operation == FrontmatterOperation::Replace,
            acl: vec![(AclOp::Read, path.clone()), (AclOp::Write, path)],
            plan: Default::default(),
        })
    }

    fn summary(
        &self,
        cx: &ToolCx<'_>,
        args: &UpdateFrontmatterArgs,
        precheck: &Precheck,
        _state: &TargetState,
    ) -> Summary {
        let headline = format!("replace the whole frontmatter of {}", args.path);
        let edit = note(&args.path).ok().and_then(|path| {
            let current = cx.vault().read_if_exists(&path).ok().flatten()?;
            let (new, _) = frontmatter_edit(args, &current, &path).ok()?;
            Some((current, new))
        });
        match edit {
            Some((current, new)) => Summary::new(headline)
                .target(&args.path)
                .diff(&current.text(), &new),
            None => Summary::targets_only("update_frontmatter", precheck),
        }
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &UpdateFrontmatterArgs,
        precheck: &Precheck,
        state: &TargetState,
    ) -> Result<UpdateFrontmatterOutput, HandlerFailure> {
        let path = note(&args.path)?;
        let current = read_as_observed(cx, state, &path)?.ok_or_else(|| not_found(&path))?;
        check_prev_hash(&path, args.prev_hash.as_deref(), Some(&current))?;
        let (new, frontmatter) = frontmatter_edit(args, &current, &path)?;
        let outcome = write_confirmed(cx, precheck, &path, new.as_bytes(), &current)?;
        let frontmatter = match frontmatter.to_json() {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Ok(UpdateFrontmatterOutput {
            path: path.as_str().to_owned(),
            frontmatter,
            content_hash: outcome.hash,
        })
    }
}

// r[impl versions.keep.confirmed]
/// Writes `bytes` over `current`, keeping `current` as a version first when the call was
/// confirmed (a frontmatter replace); a free edit keeps nothing.
fn write_confirmed(
    cx: &ToolCx<'_>,
    precheck: &Precheck,
    path: &tc_vault::VaultPath,
    bytes: &[u8],
    current: &tc_vault::vault::NoteContent,
) -> Result<tc_vault::vault::WriteOutcome, tc_vault::error::VaultError> {
    let guard = guard_for(Some(current));
    if precheck.needs_confirmation {
        Ok(cx.vault().write_keeping(path, bytes, &guard)?.outcome)
    } else {
        cx.vault().write(path, bytes, &guard)
    }
}
