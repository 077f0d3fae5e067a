//! `delete_note` and `restore_note` (spec/tools.md `tools.delete-note`,
//! `tools.restore-note.preflight`; spec/versions.md `versions.restore`,
//! `versions.restore.keeps`, `versions.permanent`; spec/drift.md `drift.bind.path-tools`,
//! `drift.bind.restore-note.version`).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::{ConfirmationTargets, fingerprint_custom};
use tc_tools::note_write::write_summary;
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec, path_state,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::WriteIntent;
use tc_vault::error::VaultError;
use tc_vault::vault::{NoteContent, Precondition, SnapshotInfo};

use crate::common::{guard_for, kind_for, not_found, note, preflight, prior_of, read_as_observed};

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
            // r[impl versions.permanent]
            // Nothing of the note stays: its earlier versions and delete snapshots go too.
            cx.vault().delete_permanently(&path, &approved)?;
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
    /// The path to restore: a deleted note's, or a note to roll back.
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// The snapshot to restore (from list_snapshots); the latest of the path when absent.
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

/// What the precheck found: the note at the path now, and the snapshot with its bytes.
#[derive(Debug)]
pub struct RestorePlan {
    current: Option<NoteContent>,
    snapshot: SnapshotInfo,
    content: Vec<u8>,
}

/// The snapshot the state step bound: its id and the hash of its bytes.
#[derive(Debug)]
pub struct BoundSnapshot {
    id: String,
    content_hash: String,
}

#[derive(Debug)]
pub struct RestoreNote;

impl Tool for RestoreNote {
    type Args = RestoreNoteArgs;
    type Output = RestoreNoteOutput;
    type Plan = RestorePlan;
    type Seen = Option<BoundSnapshot>;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "restore_note",
            description: "Bring back a deleted note, or an earlier version over the note there now, from a snapshot (the latest when snapshot_id is absent). Always needs the human's confirmation.",
            annotations: Annotations::writes(true, true),
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
        let path = any_file(&args.path)?;
        let current = cx.vault().read_if_exists(&path)?;
        let snapshot = cx
            .vault()
            .find_snapshot(&path, args.snapshot_id.as_deref())?;
        // r[impl tools.restore-note.preflight]
        // r[impl versions.restore.preflight]
        // The write gate judges the snapshot's content as the write it will be (a new note,
        // or an overwrite of the one there), so a restore it would refuse never asks for
        // (or spends) a confirmation.
        let content = cx.vault().read_snapshot(&snapshot)?;
        preflight(
            cx,
            &WriteIntent::new(
                path.clone(),
                kind_for(current.as_ref()),
                &content,
                prior_of(current.as_ref()),
            ),
        )?;
        Ok(Precheck {
            needs_confirmation: true,
            acl: vec![(AclOp::Write, path)],
            plan: Arc::new(RestorePlan {
                current,
                snapshot,
                content,
            }),
        })
    }

    // r[impl drift.bind.restore-note.version]
    /// The target path's content (or its absence) and the identity and bytes of the snapshot
    /// that would be restored, so an edit of the note, a newer snapshot becoming the latest
    /// or a snapshot whose bytes changed is drift.
    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &RestoreNoteArgs,
        precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState<Self::Seen>, ToolError> {
        let path = any_file(&args.path)?;
        let mut state = path_state(cx.vault(), &precheck.declared_paths())?;
        let snapshot = match cx.vault().find_snapshot(&path, args.snapshot_id.as_deref()) {
            Ok(info) => Some(BoundSnapshot {
                id: info.id.as_str().to_owned(),
                content_hash: info.content_hash,
            }),
            Err(VaultError::SnapshotNotFound { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        let target = state
            .observed_hash(&path)
            .flatten()
            .unwrap_or("absent")
            .to_owned();
        let (id, bytes) = snapshot.as_ref().map_or(("no snapshot", ""), |s| {
            (s.id.as_str(), s.content_hash.as_str())
        });
        state.fp = fingerprint_custom(&[
            b"restore_note.version",
            path.as_str().as_bytes(),
            target.as_bytes(),
            id.as_bytes(),
            bytes.as_bytes(),
        ]);
        Ok(state.with_seen(snapshot))
    }

    // r[impl versions.restore.summary]
    fn summary(
        &self,
        cx: &ToolCx<'_>,
        args: &RestoreNoteArgs,
        precheck: &Precheck<Self::Plan>,
        _state: &TargetState<Self::Seen>,
    ) -> Summary {
        let plan = &precheck.plan;
        let snapshot = &plan.snapshot;
        let what = match snapshot.kind {
            tc_vault::vault::SnapshotKind::Deleted => "the note as it was deleted",
            tc_vault::vault::SnapshotKind::Replaced => "an earlier version",
        };
        let over = if plan.current.is_some() {
            "over the note there now (kept as a version first)"
        } else {
            "at the free path"
        };
        let age = age_text(cx.clock.now_ms().saturating_sub(snapshot.created_ms));
        let headline = format!(
            "restore {} from snapshot {} ({} bytes): {what}, taken {age} ago, {over}",
            args.path,
            snapshot.id.as_str(),
            plan.content.len()
        );
        let text = |bytes: &[u8]| std::str::from_utf8(bytes).is_ok();
        if text(&plan.content) && plan.current.as_ref().is_none_or(|c| text(&c.bytes)) {
            write_summary(headline, &args.path, plan.current.as_ref(), &plan.content)
        } else {
            // An attachment's bytes make no diff: the sizes say what changes.
            let before = plan.current.as_ref().map_or_else(
                || "absent".to_owned(),
                |c| format!("{} bytes", c.bytes.len()),
            );
            Summary::new(headline)
                .target(&args.path)
                .detail(format!("size: {before} -> {} bytes", plan.content.len()))
        }
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &RestoreNoteArgs,
        _precheck: &Precheck<Self::Plan>,
        state: &TargetState<Self::Seen>,
    ) -> Result<RestoreNoteOutput, HandlerFailure> {
        let path = any_file(&args.path)?;
        let current = read_as_observed(cx, state, &path)?;
        // Restore exactly the snapshot the approval covers, not whatever is latest now.
        let bound = (*state.seen).as_ref().ok_or_else(|| not_found(&path))?;
        let found = cx.vault().find_snapshot(&path, Some(&bound.id))?;
        if found.content_hash != bound.content_hash {
            return Err(ToolError::from(&VaultError::ConcurrentModification {
                path: path.as_str().to_owned(),
                expected: bound.content_hash.clone(),
                actual: found.content_hash,
            })
            .into());
        }
        // r[impl versions.restore.keeps]
        // The note there (checked again under its lock) is kept as a version first.
        let (info, _kept) =
            cx.vault()
                .restore_over(&path, Some(&bound.id), &guard_for(current.as_ref()))?;
        // r[impl vault.acl.results-readable-only]
        let shown = cx.may_read(&path);
        Ok(RestoreNoteOutput {
            path: path.as_str().to_owned(),
            snapshot_id: info.id.as_str().to_owned(),
            content_hash: shown.then_some(info.content_hash),
        })
    }
}

/// A duration in the largest whole unit that fits (`3 days`, `5 minutes`, `12 seconds`).
fn age_text(ms: i64) -> String {
    let seconds = ms.max(0) / 1000;
    let (n, unit) = match seconds {
        s if s >= 86_400 => (s / 86_400, "day"),
        s if s >= 3_600 => (s / 3_600, "hour"),
        s if s >= 60 => (s / 60, "minute"),
        s => (s, "second"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// `restore_note`'s path: any file a snapshot can be of, a note or an attachment.
fn any_file(raw: &str) -> Result<tc_vault::VaultPath, ToolError> {
    tc_vault::VaultPath::parse(raw).map_err(|e| ToolError::from(&e))
}
