//! `delete_note` and `restore_note` (spec/tools.md `tools.delete-note`,
//! `tools.restore-note`, `tools.restore-note.preflight`; spec/drift.md
//! `drift.bind.path-tools`, `drift.bind.restore-note`).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::{ConfirmationTargets, fingerprint_custom};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec, path_state,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{Prior, WriteIntent, WriteKind};
use tc_vault::error::VaultError;
use tc_vault::vault::Precondition;

use crate::common::{exists_error, not_found, note, preflight, read_as_observed};

// ---------------------------------------------------------------- delete_note

/// `delete_note` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteNoteArgs {
    /// The note to delete.
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// Delete without keeping a restorable snapshot.
    #[serde(default)]
    pub permanent: bool,
}

/// `delete_note`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DeleteNoteOutput {
    pub path: String,
    pub permanent: bool,
    /// The deleted note's content hash.
    /// Null for a caller that may not read the note (spec vault.acl.results-readable-only).
    pub content_hash: Option<String>,
    /// The snapshot `restore_note` brings it back from; null when permanent.
    pub snapshot_id: Option<String>,
}

#[derive(Debug)]
pub struct DeleteNote;

impl Tool for DeleteNote {
    type Args = DeleteNoteArgs;
    type Output = DeleteNoteOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "delete_note",
            description: "Delete a note. Unless permanent, it goes to a snapshot restore_note can bring back. Always needs the human's confirmation.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:notes", "delete:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &DeleteNoteArgs) -> Result<Precheck, ToolError> {
        let path = note(&args.path)?;
        if !cx.vault().exists(&path)? {
            return Err(not_found(&path));
        }
        Ok(Precheck {
            needs_confirmation: true,
            acl: vec![(AclOp::Delete, path)],
            plan: Default::default(),
        })
    }

    // r[impl tools.summary.delete]
    fn summary(
        &self,
        cx: &ToolCx<'_>,
        args: &DeleteNoteArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Summary {
        let how = if args.permanent {
            "permanently: no snapshot is kept and it cannot be restored"
        } else {
            "to a snapshot: restore_note can bring it back"
        };
        let size = note(&args.path)
            .ok()
            .and_then(|p| cx.vault().stat(&p).ok())
            .map_or_else(String::new, |stat| format!(" ({} bytes)", stat.size));
        Summary::new(format!("delete {}{size} {how}", args.path)).target(&args.path)
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &DeleteNoteArgs,
        _precheck: &Precheck,
        state: &TargetState,
    ) -> Result<DeleteNoteOutput, HandlerFailure> {
        let path = note(&args.path)?;
        let current = read_as_observed(cx, state, &path)?.ok_or_else(|| not_found(&path))?;
        // r[impl vault.remove.locked]
        // Checked again under the note's lock: an append landing after the read above is
        // refused, not deleted with the approved content.
        let approved = Precondition::HashIs(current.hash.clone());
        // r[impl vault.acl.results-readable-only]
        let shown = cx.may_read(&path);
        if args.permanent {
            cx.vault().delete(&path, &approved)?;
            // r[impl vault.delete.permanent-gone]
            // The note is gone: a purge that fails still says the delete was applied.
            if let Some(index) = cx.binding.index() {
                index
                    .purge(&path)
                    .map_err(|e| e.detail("applied", serde_json::json!(true)))?;
            }
            Ok(DeleteNoteOutput {
                path: path.as_str().to_owned(),
                permanent: true,
                content_hash: shown.then_some(current.hash),
                snapshot_id: None,
            })
        } else {
            let info = cx.vault().snapshot_and_delete(&path, &approved)?;
            Ok(DeleteNoteOutput {
                path: path.as_str().to_owned(),
                permanent: false,
                content_hash: shown.then_some(info.content_hash),
                snapshot_id: Some(info.id.as_str().to_owned()),
            })
        }
    }
}

// ---------------------------------------------------------------- restore_note

/// `restore_note` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreNoteArgs {
    /// The path the note was deleted from.
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// The snapshot to restore; the latest snapshot of the path when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<String>,
}

/// `restore_note`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RestoreNoteOutput {
    pub path: String,
    pub snapshot_id: String,
    /// Null for a caller that may not read the note (spec vault.acl.results-readable-only).
    pub content_hash: Option<String>,
}

#[derive(Debug)]
pub struct RestoreNote;

impl Tool for RestoreNote {
    type Args = RestoreNoteArgs;
    type Output = RestoreNoteOutput;
    type Plan = usize;
    type Seen = Option<String>;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "restore_note",
            description: "Restore a deleted note from its snapshot (the latest when snapshot_id is absent). Refused if a note is at the path. Always needs the human's confirmation.",
            annotations: Annotations::writes(false, true),
            scopes: &["write:notes"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::Custom),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &RestoreNoteArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        let path = note(&args.path)?;
        if cx.vault().exists(&path)? {
            return Err(exists_error(&path));
        }
        let snapshot = cx
            .vault()
            .find_snapshot(&path, args.snapshot_id.as_deref())?;
        // r[impl tools.restore-note.preflight]
        // A restore writes a new note: the write gate judges the snapshot's content now, so a
        // restore it would refuse never asks for (or spends) a confirmation.
        let content = cx.vault().read_snapshot(&snapshot)?;
        preflight(
            cx,
            &WriteIntent::new(path.clone(), WriteKind::Create, &content, Prior::Absent),
        )?;
        Ok(Precheck {
            needs_confirmation: true,
            acl: vec![(AclOp::Write, path)],
            plan: Arc::new(content.len()),
        })
    }

    // r[impl drift.bind.restore-note]
    /// The target path's state and the identity of the snapshot that would be restored, so
    /// a newer snapshot becoming the latest is drift.
    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &RestoreNoteArgs,
        precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState<Self::Seen>, ToolError> {
        let path = note(&args.path)?;
        let mut state = path_state(cx.vault(), &precheck.declared_paths())?;
        let snapshot = match cx.vault().find_snapshot(&path, args.snapshot_id.as_deref()) {
            Ok(info) => Some(info.id.as_str().to_owned()),
            Err(VaultError::SnapshotNotFound { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        let target = state
            .observed_hash(&path)
            .flatten()
            .unwrap_or("absent")
            .to_owned();
        state.fp = fingerprint_custom(&[
            b"restore_note",
            path.as_str().as_bytes(),
            target.as_bytes(),
            snapshot.as_deref().unwrap_or("no snapshot").as_bytes(),
        ]);
        Ok(state.with_seen(snapshot))
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &RestoreNoteArgs,
        precheck: &Precheck<Self::Plan>,
        state: &TargetState<Self::Seen>,
    ) -> Summary {
        let snapshot = (*state.seen).as_ref().map_or("none", String::as_str);
        let size = format!(" ({} bytes)", precheck.plan);
        Summary::new(format!(
            "restore {} from snapshot {snapshot}{size}",
            args.path
        ))
        .target(&args.path)
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &RestoreNoteArgs,
        _precheck: &Precheck<Self::Plan>,
        state: &TargetState<Self::Seen>,
    ) -> Result<RestoreNoteOutput, HandlerFailure> {
        let path = note(&args.path)?;
        if read_as_observed(cx, state, &path)?.is_some() {
            return Err(exists_error(&path).into());
        }
        // Restore exactly the snapshot the approval covers, not whatever is latest now.
        let id = (*state.seen).as_ref().ok_or_else(|| not_found(&path))?;
        let info = cx.vault().restore(&path, Some(id))?;
        // r[impl vault.acl.results-readable-only]
        let shown = cx.may_read(&path);
        Ok(RestoreNoteOutput {
            path: path.as_str().to_owned(),
            snapshot_id: info.id.as_str().to_owned(),
            content_hash: shown.then_some(info.content_hash),
        })
    }
}
