//! `get_periodic_note`, `create_periodic_note` and `find_or_create_periodic_note`
//! (spec/periodic.md `periodic.get`, `periodic.create`, `periodic.find-or-create`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_tools::note_write::exists_error;
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::acl::AclOp;

use super::Target;
use crate::settings::Period;

/// The period and day of a periodic note.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PeriodicNoteArgs {
    pub period: Period,
    /// YYYY-MM-DD; default: the server's local today.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 10))]
    pub date: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GetPeriodicNoteOutput {
    pub path: String,
    /// The period's first day.
    pub start: String,
    pub exists: bool,
    pub content: Option<String>,
    pub content_hash: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PeriodicNoteOutput {
    pub path: String,
    pub start: String,
    pub created: bool,
    pub content: String,
    pub content_hash: String,
}

fn day(target: &Target) -> String {
    target.start.format("%Y-%m-%d").to_string()
}

#[derive(Debug)]
pub struct GetPeriodicNote;

impl Tool for GetPeriodicNote {
    type Args = PeriodicNoteArgs;
    type Output = GetPeriodicNoteOutput;
    type Plan = Target;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "get_periodic_note",
            description: "Read the daily/weekly/monthly/quarterly/yearly note for a date (default: the server's local today) as the vault's settings place it.",
            annotations: Annotations::READS,
            scopes: &["read:periodic"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &PeriodicNoteArgs,
    ) -> Result<Precheck<Target>, ToolError> {
        let target = Target::of(cx, args.period, args.date.as_deref())?;
        let acl = vec![(AclOp::Read, target.path.clone())];
        Ok(Precheck {
            acl,
            ..Precheck::with_plan(target)
        })
    }

    // r[impl periodic.get]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        _args: &PeriodicNoteArgs,
        precheck: &Precheck<Target>,
        _state: &TargetState,
    ) -> Result<GetPeriodicNoteOutput, HandlerFailure> {
        let target = &precheck.plan;
        let current = cx.vault().read_if_exists(&target.path)?;
        let (content, content_hash) = match current {
            Some(note) => (
                Some(note.utf8(&target.path)?.to_owned()),
                Some(note.hash.clone()),
            ),
            None => (None, None),
        };
        Ok(GetPeriodicNoteOutput {
            path: target.path.as_str().to_owned(),
            start: day(target),
            exists: content.is_some(),
            content,
            content_hash,
        })
    }
}

/// Finds the note, or creates it from its template when `create` and it is missing.
fn find_or_create(
    cx: &ToolCx<'_>,
    target: &Target,
    must_create: bool,
) -> Result<PeriodicNoteOutput, HandlerFailure> {
    cx.vault().with_note_lock(&target.path, |locked| {
        if let Some(note) = locked.read_if_exists()? {
            if must_create {
                return Err(exists_error(&target.path).into());
            }
            return Ok(PeriodicNoteOutput {
                path: target.path.as_str().to_owned(),
                start: day(target),
                created: false,
                content: note.utf8(&target.path)?.to_owned(),
                content_hash: note.hash.clone(),
            });
        }
        // The note may have gone since the precheck judged it as there (and declared no
        // write): the folder ACL still holds for the new note.
        if !cx.may_write(&target.path) {
            return Err(ToolError::new(
                ErrorCode::AclDenied,
                format!(
                    "the folder ACL does not let this caller create {}",
                    target.path.as_str()
                ),
            )
            .into());
        }
        let text = target.new_text(cx)?;
        let hash = target.create_locked(cx, locked, &text)?;
        Ok(PeriodicNoteOutput {
            path: target.path.as_str().to_owned(),
            start: day(target),
            created: true,
            content: text,
            content_hash: hash,
        })
    })
}

#[derive(Debug)]
pub struct CreatePeriodicNote;

impl Tool for CreatePeriodicNote {
    type Args = PeriodicNoteArgs;
    type Output = PeriodicNoteOutput;
    type Plan = Target;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "create_periodic_note",
            description: "Start the daily, weekly, monthly, quarterly or yearly journal entry for a date (default today) where the vault's Periodic Notes settings put it, from its template; refused if present. Never asks.",
            annotations: Annotations::writes(false, true),
            scopes: &["write:periodic"],
            changes_notes: true,
            gating: Gating::NEVER,
        }
    }

    // r[impl periodic.create]
    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &PeriodicNoteArgs,
    ) -> Result<Precheck<Target>, ToolError> {
        let target = Target::of(cx, args.period, args.date.as_deref())?;
        if cx.vault().exists(&target.path)? {
            return Err(exists_error(&target.path));
        }
        target.check_template(cx)?;
        Ok(Precheck {
            acl: target.creating_acl(),
            ..Precheck::with_plan(target)
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        _args: &PeriodicNoteArgs,
        precheck: &Precheck<Target>,
        _state: &TargetState,
    ) -> Result<PeriodicNoteOutput, HandlerFailure> {
        find_or_create(cx, &precheck.plan, true)
    }
}

#[derive(Debug)]
pub struct FindOrCreatePeriodicNote;

impl Tool for FindOrCreatePeriodicNote {
    type Args = PeriodicNoteArgs;
    type Output = PeriodicNoteOutput;
    type Plan = Target;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "find_or_create_periodic_note",
            description: "Get the daily, weekly, monthly, quarterly or yearly journal entry for a date (default today) where the vault's Periodic Notes settings put it, starting it from its template when missing (created says which). Never asks.",
            annotations: Annotations::writes(false, true),
            scopes: &["read:periodic", "write:periodic"],
            changes_notes: true,
            gating: Gating::NEVER,
        }
    }

    // r[impl periodic.find-or-create]
    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &PeriodicNoteArgs,
    ) -> Result<Precheck<Target>, ToolError> {
        let target = Target::of(cx, args.period, args.date.as_deref())?;
        let mut acl = vec![(AclOp::Read, target.path.clone())];
        if !cx.vault().exists(&target.path)? {
            target.check_template(cx)?;
            acl.extend(target.creating_acl());
        }
        Ok(Precheck {
            acl,
            ..Precheck::with_plan(target)
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        _args: &PeriodicNoteArgs,
        precheck: &Precheck<Target>,
        _state: &TargetState,
    ) -> Result<PeriodicNoteOutput, HandlerFailure> {
        find_or_create(cx, &precheck.plan, false)
    }
}
