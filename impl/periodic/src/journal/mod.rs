//! The periodic note tools (spec/periodic.md `## The periodic note tools`): what a call on a
//! period's note works with ([`Target`]: the period's settings, first day and note path),
//! the text a new note starts with (its template expanded), and the server's local clock.
//! Every tool here is free: it reads, creates a note at a free path, or adds whole lines.

mod append;
mod list;
mod notes;

pub use append::{AppendToPeriodicNote, AppendToPeriodicNoteArgs, AppendToPeriodicNoteOutput};
pub use list::{ListPeriodicNotes, ListPeriodicNotesArgs, ListPeriodicNotesOutput, PeriodicEntry};
pub use notes::{
    CreatePeriodicNote, FindOrCreatePeriodicNote, GetPeriodicNote, GetPeriodicNoteOutput,
    PeriodicNoteArgs, PeriodicNoteOutput,
};

use std::collections::BTreeMap;

use chrono::{Local, NaiveDate, NaiveDateTime, TimeZone};
use serde_json::json;
use tc_tools::note_write::prior_of;
use tc_tools::{ErrorCode, HandlerFailure, Registry, RegistryBuildError, ToolCx, ToolError};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{WriteIntent, WriteKind};
use tc_vault::path::VaultPath;
use tc_vault::vault::{LockedNote, Precondition};

use crate::expand::{Fill, expand};
use crate::period::{note_path, period_start};
use crate::settings::{Period, PeriodSettings, period_settings, template_settings};

/// Adds the periodic note tools to `registry`, in the order `tools/list` shows them.
pub fn register(registry: &mut Registry) -> Result<(), RegistryBuildError> {
    registry.add(GetPeriodicNote)?;
    registry.add(CreatePeriodicNote)?;
    registry.add(FindOrCreatePeriodicNote)?;
    registry.add(AppendToPeriodicNote)?;
    registry.add(ListPeriodicNotes)?;
    Ok(())
}

/// The server's local date and time at the call's clock (spec `periodic.date`).
pub fn local_now(cx: &ToolCx<'_>) -> NaiveDateTime {
    let ms = cx.clock.now_ms();
    match Local.timestamp_millis_opt(ms).single() {
        Some(at) => at.naive_local(),
        None => chrono::DateTime::from_timestamp_millis(ms)
            .unwrap_or_default()
            .naive_utc(),
    }
}

// r[impl periodic.date]
/// A `YYYY-MM-DD` argument, or `validation_error` naming it.
pub fn day_arg(raw: &str, pointer: &str) -> Result<NaiveDate, ToolError> {
    let b = raw.as_bytes();
    let shaped = b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
    shaped
        .then(|| NaiveDate::parse_from_str(raw, "%Y-%m-%d").ok())
        .flatten()
        .ok_or_else(|| ToolError::validation(pointer, "must be a day YYYY-MM-DD"))
}

/// A period's note for one date, as the settings place it.
#[derive(Debug)]
pub struct Target {
    pub settings: PeriodSettings,
    /// The period's first day.
    pub start: NaiveDate,
    pub path: VaultPath,
    /// The template the note is created from.
    pub template: Option<VaultPath>,
}

// r[impl periodic.settings.template-path]
/// The note a configured template path names (`.md` added when missing), or
/// `template_not_found`.
fn template_note(raw: &str) -> Result<VaultPath, ToolError> {
    let normalized = crate::settings::normalize_path(raw);
    let with_md = if normalized.to_ascii_lowercase().ends_with(".md") {
        normalized
    } else {
        format!("{normalized}.md")
    };
    VaultPath::parse_note(&with_md).map_err(|_| template_not_found(raw))
}

pub fn template_not_found(raw: &str) -> ToolError {
    ToolError::new(
        ErrorCode::TemplateNotFound,
        format!("no template note at {raw:?}"),
    )
    .with_details(json!({ "template": raw }))
}

impl Target {
    /// The note of `period` for `date` (today's local date when absent).
    pub fn of(cx: &ToolCx<'_>, period: Period, date: Option<&str>) -> Result<Target, ToolError> {
        let date = match date {
            Some(raw) => day_arg(raw, "/date")?,
            None => local_now(cx).date(),
        };
        let settings = period_settings(cx.vault().root().path(), period)?;
        let start = period_start(&settings, date);
        let path = note_path(&settings, start)?;
        let template = settings
            .template
            .as_deref()
            .map(template_note)
            .transpose()?;
        Ok(Target {
            settings,
            start,
            path,
            template,
        })
    }

    /// The paths a call that may create the note declares for the folder ACL.
    pub fn creating_acl(&self) -> Vec<(AclOp, VaultPath)> {
        let mut acl = vec![(AclOp::Write, self.path.clone())];
        if let Some(template) = &self.template {
            acl.push((AclOp::Read, template.clone()));
        }
        acl
    }

    /// Refuses a template that is not in the vault, before anything is written.
    pub fn check_template(&self, cx: &ToolCx<'_>) -> Result<(), ToolError> {
        if let Some(template) = &self.template
            && !cx.vault().exists(template)?
        {
            return Err(template_not_found(template.as_str()));
        }
        Ok(())
    }

    // r[impl periodic.template]
    /// What the new note starts with: its template expanded, or nothing.
    pub fn new_text(&self, cx: &ToolCx<'_>) -> Result<String, ToolError> {
        let Some(template) = &self.template else {
            return Ok(String::new());
        };
        cx.require_read(template)?;
        let content = cx
            .vault()
            .read_if_exists(template)?
            .ok_or_else(|| template_not_found(template.as_str()))?;
        let text = content.utf8(template)?;
        let formats = template_settings(cx.vault().root().path())?;
        let title = self.path.note_name();
        expand(
            text,
            &Fill {
                title,
                at: self.start.and_time(local_now(cx).time()),
                date_format: &formats.date_format,
                time_format: &formats.time_format,
                variables: &BTreeMap::new(),
            },
        )
    }

    /// Creates the note under its lock (it must still be missing), through the write gate.
    pub fn create_locked(
        &self,
        cx: &ToolCx<'_>,
        locked: &LockedNote<'_>,
        text: &str,
    ) -> Result<String, HandlerFailure> {
        cx.judge(&WriteIntent::new(
            self.path.clone(),
            WriteKind::Create,
            text.as_bytes(),
            prior_of(None),
        ))
        .map_err(HandlerFailure::ConventionBlockedBeforeWrite)?;
        Ok(locked
            .write(text.as_bytes(), &Precondition::MustNotExist)?
            .hash)
    }
}
