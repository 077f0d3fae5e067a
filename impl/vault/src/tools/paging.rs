//! `read_notes` and `list_notes` in the registry: thin handlers over
//! [`crate::paging_tools`] (spec `tools.read-notes`, `tools.list-notes`, `paging.*`). They
//! are never gated; the folder ACL is checked per note on every page inside the page
//! builder, so they declare no paths for the central ACL stage.

use std::sync::Arc;

use serde_json::Value;
use tc_gate::cursor::CursorCodec;

use super::{
    Annotations, HandlerFailure, Precheck, RequiredScope, TargetState, ToolCx, ToolDef, ToolError,
    ToolHandler, ToolOutput,
};
use crate::paging_tools::{
    LIST_NOTES, ListNotesArgs, PageLimits, PagingContext, PagingError, READ_NOTES, ReadNotesArgs,
    list_notes, list_notes_input_schema, read_notes, read_notes_input_schema,
};

/// What the paging tools need beyond the vault: the cursor key and the page cap.
#[derive(Debug)]
pub struct PagingSetup {
    pub codec: CursorCodec,
    pub limits: PageLimits,
}

fn tool_error(error: PagingError) -> ToolError {
    match &error {
        PagingError::Validation { pointer, message } => {
            let pointer = if pointer.is_empty() { "/" } else { pointer };
            ToolError::validation(pointer, message.clone())
        }
        PagingError::Cursor(_) => ToolError::new(super::ErrorCode::InvalidInput, error.to_string())
            .with_details(error.details()),
        PagingError::Vault(vault) => ToolError::from(vault),
        PagingError::Internal(_) => ToolError::internal("paging the notes"),
    }
}

fn context<'a>(cx: &'a ToolCx<'a>) -> PagingContext<'a> {
    PagingContext {
        vault: cx.vault(),
        acl: &cx.binding.acl,
        codec: &cx.paging.codec,
        clock: cx.clock,
        limits: cx.paging.limits,
    }
}

#[derive(Debug)]
struct ReadNotes;

#[derive(Debug)]
struct ListNotes;

fn free() -> Precheck {
    Precheck::default()
}

impl ToolHandler for ReadNotes {
    fn precheck(&self, _cx: &ToolCx<'_>, _args: &Value) -> Result<Precheck, ToolError> {
        Ok(free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ToolOutput, HandlerFailure> {
        let args = ReadNotesArgs::from_value(args).map_err(tool_error)?;
        let page = read_notes(&context(cx), &cx.caller.id, &cx.caller.scopes, &args)
            .map_err(tool_error)?;
        Ok(ToolOutput::Serialized(page.json))
    }
}

impl ToolHandler for ListNotes {
    fn precheck(&self, _cx: &ToolCx<'_>, _args: &Value) -> Result<Precheck, ToolError> {
        Ok(free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &Value,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ToolOutput, HandlerFailure> {
        let args = ListNotesArgs::from_value(args).map_err(tool_error)?;
        let page = list_notes(&context(cx), &cx.caller.id, &cx.caller.scopes, &args)
            .map_err(tool_error)?;
        Ok(ToolOutput::Serialized(page.json))
    }
}

const READS: Annotations = Annotations {
    read_only_hint: true,
    destructive_hint: false,
    idempotent_hint: true,
    open_world_hint: false,
};

fn reader(name: &str, description: &str, schema: Value, handler: Arc<dyn ToolHandler>) -> ToolDef {
    ToolDef {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: schema,
        annotations: READS,
        scope: RequiredScope::ReadNotes,
        changes_notes: false,
        gated: false,
        confirmation: None,
        checks_confirmation_in_handler: false,
        handler,
    }
}

pub(crate) fn paging_defs() -> Vec<ToolDef> {
    vec![
        reader(
            READ_NOTES,
            "Read notes with their frontmatter and content_hash: give paths (in that order) or a folder (recursive by default). Results come in pages under the response cap; repeat the same request with cursor = next_cursor until next_cursor is null.",
            read_notes_input_schema(),
            Arc::new(ReadNotes),
        ),
        reader(
            LIST_NOTES,
            "List the note paths (with sizes) under a folder, the vault root by default, in pages; repeat with cursor = next_cursor until it is null.",
            list_notes_input_schema(),
            Arc::new(ListNotes),
        ),
    ]
}
