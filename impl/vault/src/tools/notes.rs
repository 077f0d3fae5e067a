//! The handlers of the note tools bound through `pathAcl` (and `restore_note`,
//! `commit_wiki_page`, bound through their own `confirmationTargets`): spec/tools.md
//! `tools.write-note*`, `tools.move-note*`, `tools.copy-note`, `tools.no-overwrite`,
//! `tools.delete-note`, `tools.restore-note`, `tools.update-frontmatter`, `tools.update-task*`,
//! `tools.commit-wiki-page`, `tools.prev-hash`, `tools.not-found`; spec/drift.md
//! `drift.bind.path-tools`, `drift.bind.restore-note`, `drift.bind.commit-wiki-page`;
//! spec/release.md `release.preflight`, `release.update-task`.
//!
//! Each handler applies the call against the state its approval covers: a write is guarded
//! by the content hash observed for its target when the state was taken (`HashIs`, or
//! create-only when the target was missing), so a note changed after the drift check is
//! refused as `concurrent_modification`, never silently overwritten.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tc_gate::fingerprint_custom;

use super::{HandlerFailure, Precheck, TargetState, ToolCx, ToolError, ToolHandler, ToolOutput};
use crate::acl::AclOp;
use crate::conventions::{ContentFacts, Prior, WriteIntent, WriteKind, update_task_prior};
use crate::error::VaultError;
use crate::note::{Frontmatter, parse_note, split_frontmatter, with_frontmatter};
use crate::path::VaultPath;
use crate::rewrite::{RewritePlan, build_resolver, plan_backlinks};
use crate::tasks::{TaskStatus, line_at, parse_task_line, reopens_old_done, replace_line};
use crate::vault::{NoteContent, Precondition};

/// Typed access to validated arguments. The schema already checked every type, so a
/// mismatch here is a defect of the tool's schema, reported as `validation_error`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Args<'a>(pub &'a Value);

impl<'a> Args<'a> {
    pub fn str(&self, key: &str) -> Result<&'a str, ToolError> {
        self.opt_str(key)?
            .ok_or_else(|| ToolError::validation(&format!("/{key}"), "is required"))
    }

    pub fn opt_str(&self, key: &str) -> Result<Option<&'a str>, ToolError> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ToolError::validation(&format!("/{key}"), "expected string")),
        }
    }

    pub fn bool(&self, key: &str) -> Result<bool, ToolError> {
        self.0
            .get(key)
            .and_then(Value::as_bool)
            .ok_or_else(|| ToolError::validation(&format!("/{key}"), "expected boolean"))
    }

    pub fn note(&self, key: &str) -> Result<VaultPath, ToolError> {
        Ok(VaultPath::parse_note(self.str(key)?)?)
    }
}

fn not_found(path: &VaultPath) -> ToolError {
    VaultError::NoteNotFound {
        path: path.as_str().to_owned(),
    }
    .into()
}

fn exists_error(path: &VaultPath) -> ToolError {
    VaultError::NoteExists {
        path: path.as_str().to_owned(),
    }
    .into()
}

// r[impl tools.prev-hash]
fn check_prev_hash(
    path: &VaultPath,
    prev_hash: Option<&str>,
    current: Option<&NoteContent>,
) -> Result<(), ToolError> {
    let Some(expected) = prev_hash else {
        return Ok(());
    };
    let actual = current.map_or("absent", |c| c.hash.as_str());
    if actual == expected {
        Ok(())
    } else {
        Err(VaultError::ConcurrentModification {
            path: path.as_str().to_owned(),
            expected: expected.to_owned(),
            actual: actual.to_owned(),
        }
        .into())
    }
}

fn prior_of(current: Option<&NoteContent>) -> Prior {
    match current {
        Some(content) => Prior::Known(ContentFacts::of(&content.bytes)),
        None => Prior::Absent,
    }
}

fn kind_for(current: Option<&NoteContent>) -> WriteKind {
    if current.is_some() {
        WriteKind::Overwrite
    } else {
        WriteKind::Create
    }
}

/// The write gate's preflight: a refusal here happens before the confirmation gate.
fn preflight(cx: &ToolCx<'_>, intent: &WriteIntent) -> Result<(), ToolError> {
    cx.judge(intent)
        .map_err(|blocked| ToolError::convention(&blocked))
}

/// The source and target of a `move_note` or `copy_note`, after the checks both share.
struct Transfer {
    from: VaultPath,
    to: VaultPath,
    target_exists: bool,
}

/// The precheck `move_note` and `copy_note` share: distinct notes, an existing source, no
/// overwrite unless asked, and the write gate judging the source's content as new at `to`.
fn transfer_precheck(
    cx: &ToolCx<'_>,
    a: &Args<'_>,
    kind: impl FnOnce(VaultPath) -> WriteKind,
) -> Result<Transfer, ToolError> {
    let from = a.note("from")?;
    let to = a.note("to")?;
    if from == to {
        return Err(ToolError::validation("/to", "is the same note as from"));
    }
    let source = cx
        .vault()
        .read_if_exists(&from)?
        .ok_or_else(|| not_found(&from))?;
    let target_exists = cx.vault().exists(&to)?;
    if target_exists && !a.bool("overwrite")? {
        return Err(exists_error(&to));
    }
    preflight(
        cx,
        &WriteIntent::new(to.clone(), kind(from.clone()), &source.bytes, Prior::Absent),
    )?;
    Ok(Transfer {
        from,
        to,
        target_exists,
    })
}

/// Reads `path` in the handler and checks it is still in the state the approval covers.
fn read_as_observed(
    cx: &ToolCx<'_>,
    state: &TargetState,
    path: &VaultPath,
) -> Result<Option<NoteContent>, HandlerFailure> {
    let current = cx.vault().read_if_exists(path)?;
    if let Some(observed) = state.observed_hash(path) {
        let actual = current.as_ref().map(|c| c.hash.as_str());
        if actual != observed {
            return Err(VaultError::ConcurrentModification {
                path: path.as_str().to_owned(),
                expected: observed.unwrap_or("absent").to_owned(),
                actual: actual.unwrap_or("absent").to_owned(),
            }
            .into());
        }
    }
    Ok(current)
}

/// The write precondition matching what was observed at `path`.
fn guard_for(current: Option<&NoteContent>) -> Precondition {
    match current {
        Some(content) => Precondition::HashIs(content.hash.clone()),
        None => Precondition::MustNotExist,
    }
}

// ---------------------------------------------------------------- write_note

#[derive(Debug)]
pub(crate) struct WriteNote;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriteMode {
    Overwrite,
    Append,
    Prepend,
    Create,
}

impl WriteMode {
    fn parse(name: &str) -> Result<Self, ToolError> {
        match name {
            "overwrite" => Ok(WriteMode::Overwrite),
            "append" => Ok(WriteMode::Append),
            "prepend" => Ok(WriteMode::Prepend),
            "create" => Ok(WriteMode::Create),
            _ => Err(ToolError::validation(
                "/mode",
                "must be one of overwrite, append, prepend, create",
            )),
        }
    }
}

/// The note after a write of `content` in `mode` onto `current`.
fn written_content(mode: WriteMode, current: Option<&NoteContent>, content: &str) -> Vec<u8> {
    let Some(current) = current.filter(|c| !c.bytes.is_empty()) else {
        return content.as_bytes().to_vec();
    };
    let old = current.text();
    match mode {
        WriteMode::Overwrite | WriteMode::Create => content.as_bytes().to_vec(),
        WriteMode::Append => {
            let mut out = old.into_owned();
            if !out.ends_with('\n') && !content.is_empty() {
                out.push('\n');
            }
            out.push_str(content);
            out.into_bytes()
        }
        WriteMode::Prepend => {
            // After the frontmatter block, which must stay the first thing in the note.
            let cut = split_frontmatter(&old).map_or(0, |span| old.len() - span.body.len());
            let mut out = String::with_capacity(old.len() + content.len() + 1);
            out.push_str(&old[..cut]);
            out.push_str(content);
            if !content.ends_with('\n') && !content.is_empty() {
                out.push('\n');
            }
            out.push_str(&old[cut..]);
            out.into_bytes()
        }
    }
}

impl ToolHandler for WriteNote {
    fn precheck(&self, cx: &ToolCx<'_>, args: &Value) -> Result<Precheck, ToolError> {
        let a = Args(args);
        let path = a.note("path")?;
        let mode = WriteMode::parse(a.str("mode")?)?;
        let content = a.str("content")?;
        let current = cx.vault().read_if_exists(&path)?;
        check_prev_hash(&path, a.opt_str("prev_hash")?, current.as_ref())?;
        if mode == WriteMode::Create && current.is_some() {
            return Err(exists_error(&path));
        }
        let new = written_content(mode, current.as_ref(), content);
        preflight(
            cx,
            &WriteIntent::new(
                path.clone(),
                kind_for(current.as_ref()),
                &new,
                prior_of(current.as_ref()),
            ),
        )?;
        // r[impl tools.write-note.confirm]
        let needs_confirmation =
            mode == WriteMode::Overwrite && current.is_some_and(|c| !c.bytes.is_empty());
        Ok(Precheck {
            needs_confirmation,
            acl: vec![(AclOp::Write, path)],
            payload: None,
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        _precheck: &Precheck,
        state: &TargetState,
    ) -> Result<ToolOutput, HandlerFailure> {
        let a = Args(args);
        let path = a.note("path")?;
        let mode = WriteMode::parse(a.str("mode")?)?;
        let current = read_as_observed(cx, state, &path)?;
        let new = written_content(mode, current.as_ref(), a.str("content")?);
        let outcome = cx
            .vault()
            .write(&path, &new, &guard_for(current.as_ref()))?;
        Ok(ToolOutput::from(json!({
            "path": path.as_str(),
            "mode": a.str("mode")?,
            "created": outcome.created,
            "content_hash": outcome.hash,
            "bytes": new.len(),
        })))
    }
}

// ---------------------------------------------------------------- move_note

#[derive(Debug)]
pub(crate) struct MoveNote;

fn backlink_plan(
    cx: &ToolCx<'_>,
    from: &VaultPath,
    to: &VaultPath,
) -> Result<RewritePlan, ToolError> {
    let resolver = build_resolver(cx.vault())?;
    let include = |p: &VaultPath| cx.may_write(p) || p == from;
    let (plan, _) = plan_backlinks(cx.vault(), &resolver, from, to, &include)?;
    Ok(plan)
}

/// Judges every note a backlink update would rewrite; the moved note itself is judged at
/// its destination by the move's own intent.
fn judge_backlinks(
    cx: &ToolCx<'_>,
    plan: &RewritePlan,
    to: &VaultPath,
) -> Result<(), crate::conventions::ConventionBlocked> {
    for note in plan.notes.iter().filter(|n| &n.path != to) {
        let prior = cx
            .vault()
            .read_if_exists(&note.path)
            .ok()
            .flatten()
            .map_or(Prior::Unknown, |c| Prior::Known(ContentFacts::of(&c.bytes)));
        cx.judge(&WriteIntent::new(
            note.path.clone(),
            WriteKind::Overwrite,
            note.new_content.as_bytes(),
            prior,
        ))?;
    }
    Ok(())
}

impl ToolHandler for MoveNote {
    fn precheck(&self, cx: &ToolCx<'_>, args: &Value) -> Result<Precheck, ToolError> {
        let a = Args(args);
        let Transfer {
            from,
            to,
            target_exists,
        } = transfer_precheck(cx, &a, |from| WriteKind::Move { from })?;
        if a.bool("update_backlinks")? {
            let plan = backlink_plan(cx, &from, &to)?;
            judge_backlinks(cx, &plan, &to).map_err(|b| ToolError::convention(&b))?;
        }
        // r[impl tools.move-note.confirm]
        let needs_confirmation = from.parent() != to.parent() || target_exists;
        Ok(Precheck {
            needs_confirmation,
            acl: vec![(AclOp::Write, from), (AclOp::Write, to)],
            payload: None,
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        _precheck: &Precheck,
        state: &TargetState,
    ) -> Result<ToolOutput, HandlerFailure> {
        let a = Args(args);
        let from = a.note("from")?;
        let to = a.note("to")?;
        let source = read_as_observed(cx, state, &from)?.ok_or_else(|| not_found(&from))?;
        let target = read_as_observed(cx, state, &to)?;
        let plan = if a.bool("update_backlinks")? {
            let plan = backlink_plan(cx, &from, &to)?;
            judge_backlinks(cx, &plan, &to)
                .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
            Some(plan)
        } else {
            None
        };
        // The source is checked again right before the rename (the observed hash guard).
        if cx.vault().read(&from)?.hash != source.hash {
            return Err(ToolError::from(VaultError::ConcurrentModification {
                path: from.as_str().to_owned(),
                expected: source.hash,
                actual: "changed".to_owned(),
            })
            .into());
        }
        cx.vault().rename(&from, &to, target.is_some())?;
        let mut updated = Vec::new();
        let mut skipped = Vec::new();
        let mut links = 0;
        if let Some(plan) = plan {
            for note in &plan.notes {
                let guard = Precondition::HashIs(note.hash.clone());
                match cx
                    .vault()
                    .write(&note.path, note.new_content.as_bytes(), &guard)
                {
                    Ok(_) => {
                        updated.push(note.path.as_str().to_owned());
                        links += note.links;
                    }
                    Err(e) => skipped.push(json!({
                        "path": note.path.as_str(),
                        "code": ToolError::from(&e).code.as_str(),
                    })),
                }
            }
        }
        Ok(ToolOutput::from(json!({
            "from": from.as_str(),
            "to": to.as_str(),
            "overwrote": target.is_some(),
            "backlinks": {"notes_updated": updated, "links_updated": links, "skipped": skipped},
        })))
    }
}

// ---------------------------------------------------------------- copy_note

#[derive(Debug)]
pub(crate) struct CopyNote;

impl ToolHandler for CopyNote {
    fn precheck(&self, cx: &ToolCx<'_>, args: &Value) -> Result<Precheck, ToolError> {
        let Transfer {
            from,
            to,
            target_exists,
        } = transfer_precheck(cx, &Args(args), |from| WriteKind::Copy { from })?;
        Ok(Precheck {
            needs_confirmation: target_exists,
            acl: vec![(AclOp::Read, from), (AclOp::Write, to)],
            payload: None,
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        _precheck: &Precheck,
        state: &TargetState,
    ) -> Result<ToolOutput, HandlerFailure> {
        let a = Args(args);
        let from = a.note("from")?;
        let to = a.note("to")?;
        let source = read_as_observed(cx, state, &from)?.ok_or_else(|| not_found(&from))?;
        let target = read_as_observed(cx, state, &to)?;
        let outcome = cx
            .vault()
            .write(&to, &source.bytes, &guard_for(target.as_ref()))?;
        Ok(ToolOutput::from(json!({
            "from": from.as_str(),
            "to": to.as_str(),
            "overwrote": !outcome.created,
            "content_hash": outcome.hash,
        })))
    }
}

// ---------------------------------------------------------------- delete_note

#[derive(Debug)]
pub(crate) struct DeleteNote;

impl ToolHandler for DeleteNote {
    fn precheck(&self, cx: &ToolCx<'_>, args: &Value) -> Result<Precheck, ToolError> {
        let path = Args(args).note("path")?;
        if !cx.vault().exists(&path)? {
            return Err(not_found(&path));
        }
        Ok(Precheck {
            needs_confirmation: true,
            acl: vec![(AclOp::Delete, path)],
            payload: None,
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        _precheck: &Precheck,
        state: &TargetState,
    ) -> Result<ToolOutput, HandlerFailure> {
        let a = Args(args);
        let path = a.note("path")?;
        let current = read_as_observed(cx, state, &path)?.ok_or_else(|| not_found(&path))?;
        if a.bool("permanent")? {
            cx.vault().delete(&path)?;
            Ok(ToolOutput::from(json!({
                "path": path.as_str(),
                "permanent": true,
                "content_hash": current.hash,
                "snapshot_id": null,
            })))
        } else {
            let info = cx.vault().snapshot_and_delete(&path)?;
            Ok(ToolOutput::from(json!({
                "path": path.as_str(),
                "permanent": false,
                "content_hash": info.content_hash,
                "snapshot_id": info.id.as_str(),
            })))
        }
    }
}

// ---------------------------------------------------------------- restore_note

#[derive(Debug)]
pub(crate) struct RestoreNote;

impl ToolHandler for RestoreNote {
    fn precheck(&self, cx: &ToolCx<'_>, args: &Value) -> Result<Precheck, ToolError> {
        let a = Args(args);
        let path = a.note("path")?;
        if cx.vault().exists(&path)? {
            return Err(exists_error(&path));
        }
        let snapshot = cx.vault().find_snapshot(&path, a.opt_str("snapshot_id")?)?;
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
            payload: None,
        })
    }

    // r[impl drift.bind.restore-note]
    /// The target path's state and the identity of the snapshot that would be restored, so
    /// a newer snapshot becoming the latest is drift.
    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        precheck: &Precheck,
    ) -> Result<TargetState, ToolError> {
        let a = Args(args);
        let path = a.note("path")?;
        let mut state = super::path_state(cx.vault(), &precheck.declared_paths())?;
        let snapshot = match cx.vault().find_snapshot(&path, a.opt_str("snapshot_id")?) {
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
        state.payload = snapshot.map(|id| Arc::new(id) as _);
        Ok(state)
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        _precheck: &Precheck,
        state: &TargetState,
    ) -> Result<ToolOutput, HandlerFailure> {
        let path = Args(args).note("path")?;
        if read_as_observed(cx, state, &path)?.is_some() {
            return Err(exists_error(&path).into());
        }
        // Restore exactly the snapshot the approval covers, not whatever is latest now.
        let id = state
            .payload
            .as_ref()
            .and_then(|p| p.downcast_ref::<String>())
            .ok_or_else(|| not_found(&path))?;
        let info = cx.vault().restore(&path, Some(id))?;
        Ok(ToolOutput::from(json!({
            "path": path.as_str(),
            "snapshot_id": info.id.as_str(),
            "content_hash": info.content_hash,
        })))
    }
}

// ---------------------------------------------------------------- update_frontmatter

#[derive(Debug)]
pub(crate) struct UpdateFrontmatter;

fn frontmatter_edit(
    args: &Value,
    current: &NoteContent,
    path: &VaultPath,
) -> Result<(String, Frontmatter), ToolError> {
    let a = Args(args);
    let text = std::str::from_utf8(&current.bytes).map_err(|_| {
        ToolError::from(VaultError::FrontmatterInvalid {
            path: path.as_str().to_owned(),
            reason: "the note is not valid UTF-8".to_owned(),
        })
    })?;
    let parsed = parse_note(text).map_err(|e| ToolError::from(e.at(path)))?;
    let mut frontmatter = parsed.frontmatter.unwrap_or_default();
    let data = || -> Result<&Map<String, Value>, ToolError> {
        args.get("data")
            .and_then(Value::as_object)
            .ok_or_else(|| ToolError::validation("/data", "is required for this operation"))
    };
    let yaml_error = |e: crate::note::FrontmatterError| ToolError::validation("/data", e.reason);
    match a.str("operation")? {
        "merge" => frontmatter.merge(data()?).map_err(yaml_error)?,
        "replace" => frontmatter.replace(data()?).map_err(yaml_error)?,
        "remove" => {
            let keys: Vec<String> = args
                .get("keys")
                .and_then(Value::as_array)
                .ok_or_else(|| ToolError::validation("/keys", "is required for remove"))?
                .iter()
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect();
            frontmatter.remove(&keys);
        }
        _ => {
            return Err(ToolError::validation(
                "/operation",
                "must be one of merge, replace, remove",
            ));
        }
    }
    let new = with_frontmatter(text, &frontmatter).map_err(yaml_error)?;
    Ok((new, frontmatter))
}

impl ToolHandler for UpdateFrontmatter {
    fn precheck(&self, cx: &ToolCx<'_>, args: &Value) -> Result<Precheck, ToolError> {
        let a = Args(args);
        let path = a.note("path")?;
        let current = cx
            .vault()
            .read_if_exists(&path)?
            .ok_or_else(|| not_found(&path))?;
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
            needs_confirmation: a.str("operation")? == "replace",
            acl: vec![(AclOp::Write, path)],
            payload: None,
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        _precheck: &Precheck,
        state: &TargetState,
    ) -> Result<ToolOutput, HandlerFailure> {
        let path = Args(args).note("path")?;
        let current = read_as_observed(cx, state, &path)?.ok_or_else(|| not_found(&path))?;
        let (new, frontmatter) = frontmatter_edit(args, &current, &path)?;
        let outcome = cx
            .vault()
            .write(&path, new.as_bytes(), &guard_for(Some(&current)))?;
        Ok(ToolOutput::from(json!({
            "path": path.as_str(),
            "frontmatter": frontmatter.to_json(),
            "content_hash": outcome.hash,
        })))
    }
}

// ---------------------------------------------------------------- update_task

#[derive(Debug)]
pub(crate) struct UpdateTask;

/// The line number argument (1-based; the schema's minimum is 1).
fn line_arg(args: &Value) -> Result<usize, ToolError> {
    args.get("line")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n >= 1)
        .ok_or_else(|| ToolError::validation("/line", "must be a line number from 1"))
}

/// The task on the given line and the note's text with it rewritten.
fn task_edit(
    cx: &ToolCx<'_>,
    args: &Value,
    current: &NoteContent,
) -> Result<(crate::tasks::Task, Option<TaskStatus>, String, String), ToolError> {
    let a = Args(args);
    let number = line_arg(args)?;
    let text = std::str::from_utf8(&current.bytes)
        .map_err(|_| ToolError::validation("/path", "the note is not valid UTF-8"))?;
    let line = line_at(text, number)
        .ok_or_else(|| ToolError::validation("/line", "the note has no such line"))?;
    let task = parse_task_line(line.text)
        .ok_or_else(|| ToolError::validation("/line", "the line is not a task line"))?;
    let status = a
        .opt_str("status")?
        .map(|name| {
            TaskStatus::from_name(name).ok_or_else(|| {
                ToolError::validation(
                    "/status",
                    "must be one of todo, done, in_progress, cancelled",
                )
            })
        })
        .transpose()?;
    let new_text = a.opt_str("text")?;
    if status.is_none() && new_text.is_none() {
        return Err(ToolError::validation(
            "/status",
            "give status, text, or both",
        ));
    }
    let rendered = task.render(status.unwrap_or(task.status), new_text, cx.today());
    let new = replace_line(text, number, &rendered)
        .ok_or_else(|| ToolError::validation("/line", "the note has no such line"))?;
    Ok((task, status, rendered, new))
}

impl ToolHandler for UpdateTask {
    // No conventions preflight (seed): the write gate judges inside the handler.
    fn precheck(&self, cx: &ToolCx<'_>, args: &Value) -> Result<Precheck, ToolError> {
        let path = Args(args).note("path")?;
        let current = cx
            .vault()
            .read_if_exists(&path)?
            .ok_or_else(|| not_found(&path))?;
        let (task, status, _, _) = task_edit(cx, args, &current)?;
        // r[impl tools.update-task.confirm]
        let needs_confirmation =
            status.is_some_and(|status| reopens_old_done(&task, status, cx.today()));
        Ok(Precheck {
            needs_confirmation,
            acl: vec![(AclOp::Write, path)],
            payload: None,
        })
    }

    // r[impl release.update-task]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        _precheck: &Precheck,
        state: &TargetState,
    ) -> Result<ToolOutput, HandlerFailure> {
        let path = Args(args).note("path")?;
        let current = read_as_observed(cx, state, &path)?.ok_or_else(|| not_found(&path))?;
        let (_, _, rendered, new) = task_edit(cx, args, &current)?;
        // The write gate: a caller without read:notes, or a note over 1 MiB, is judged as
        // writing a new note, so a rule the note already broke refuses it.
        let prior = update_task_prior(cx.caller.scopes.has("read:notes"), &current.bytes);
        cx.judge(&WriteIntent::new(
            path.clone(),
            WriteKind::Overwrite,
            new.as_bytes(),
            prior,
        ))
        .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
        let outcome = cx
            .vault()
            .write(&path, new.as_bytes(), &guard_for(Some(&current)))?;
        let task = parse_task_line(&rendered);
        Ok(ToolOutput::from(json!({
            "path": path.as_str(),
            "line": line_arg(args)?,
            "status": task.map(|t| t.status.name()),
            "text": rendered,
            "content_hash": outcome.hash,
        })))
    }
}

// ---------------------------------------------------------------- commit_wiki_page

#[derive(Debug)]
pub(crate) struct CommitWikiPage;

impl ToolHandler for CommitWikiPage {
    fn precheck(&self, cx: &ToolCx<'_>, args: &Value) -> Result<Precheck, ToolError> {
        let a = Args(args);
        let path = a.note("path")?;
        let content = a.str("content")?;
        let current = cx.vault().read_if_exists(&path)?;
        preflight(
            cx,
            &WriteIntent::new(
                path.clone(),
                kind_for(current.as_ref()),
                content.as_bytes(),
                prior_of(current.as_ref()),
            ),
        )?;
        let seal = cx
            .binding
            .sealer
            .state(&path, current.as_ref().map(|c| c.bytes.as_slice()))?;
        Ok(Precheck {
            needs_confirmation: seal == super::SealState::Edited,
            acl: vec![(AclOp::Write, path)],
            payload: None,
        })
    }

    // r[impl drift.bind.commit-wiki-page]
    /// The page's current content and its seal.
    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        _precheck: &Precheck,
    ) -> Result<TargetState, ToolError> {
        let path = Args(args).note("path")?;
        let current = cx.vault().read_if_exists(&path)?;
        let seal = cx
            .binding
            .sealer
            .state(&path, current.as_ref().map(|c| c.bytes.as_slice()))?;
        let hash = current.as_ref().map(|c| c.hash.clone());
        Ok(TargetState {
            fp: fingerprint_custom(&[
                b"commit_wiki_page",
                path.as_str().as_bytes(),
                hash.as_deref().unwrap_or("absent").as_bytes(),
                seal.label().as_bytes(),
            ]),
            observed: vec![(path, hash)],
            payload: None,
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        _precheck: &Precheck,
        state: &TargetState,
    ) -> Result<ToolOutput, HandlerFailure> {
        let a = Args(args);
        let path = a.note("path")?;
        let content = a.str("content")?;
        let current = read_as_observed(cx, state, &path)?;
        let outcome = cx
            .vault()
            .write(&path, content.as_bytes(), &guard_for(current.as_ref()))?;
        cx.binding.sealer.store(&path, content.as_bytes())?;
        Ok(ToolOutput::from(json!({
            "path": path.as_str(),
            "created": outcome.created,
            "content_hash": outcome.hash,
            "sealed": true,
        })))
    }
}
