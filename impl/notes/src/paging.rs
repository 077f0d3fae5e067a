//! `read_notes` and `list_notes` in the registry: thin tools over [`crate::paging_tools`]
//! (spec `tools.read-notes`, `tools.list-notes`, `paging.*`). They are never gated; the
//! folder ACL is checked per note on every page inside the page builder, so they declare no
//! paths for the central ACL stage. A page leaves them serialized once
//! ([`Tool::encode`] passes its bytes on as they are).

use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError,
    ToolOutput, ToolSpec,
};

use crate::paging_tools::{
    LIST_NOTES, ListNotesArgs, PagingContext, PagingError, READ_NOTES, ReadNotesArgs, list_notes,
    read_notes,
};

fn tool_error(error: PagingError) -> ToolError {
    match &error {
        PagingError::Validation { pointer, message } => {
            let pointer = if pointer.is_empty() { "/" } else { pointer };
            ToolError::validation(pointer, message.clone())
        }
        PagingError::Cursor(_) => {
            ToolError::new(ErrorCode::InvalidInput, error.to_string()).with_details(error.details())
        }
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

/// A page's JSON as the page builder assembled it, advertised with the schema of `Shape`.
#[derive(Debug, Clone)]
pub struct PageJson<Shape> {
    json: String,
    shape: PhantomData<Shape>,
}

impl<Shape> PageJson<Shape> {
    fn new(json: String) -> Self {
        PageJson {
            json,
            shape: PhantomData,
        }
    }
}

impl<Shape> Serialize for PageJson<Shape> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw = serde_json::value::RawValue::from_string(self.json.clone())
            .map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<Shape: JsonSchema> JsonSchema for PageJson<Shape> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        Shape::schema_name()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        Shape::json_schema(generator)
    }
}

/// A per-path problem of a page (`too_large`, `acl_denied`, `path_invalid`, …).
#[derive(Debug, Serialize, JsonSchema)]
pub struct PageErrorEntry {
    pub path: String,
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Map<String, Value>>,
}

/// A note of a `read_notes` page.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NoteEntry {
    pub path: String,
    pub content: String,
    /// The note's YAML frontmatter as JSON; null when it has none.
    pub frontmatter: Option<Map<String, Value>>,
    pub content_hash: String,
}

/// The shape of a `read_notes` page.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadNotesPage {
    pub vault: String,
    pub notes: Vec<NoteEntry>,
    pub errors: Vec<PageErrorEntry>,
    /// Repeat the same request with cursor set to this until it is null.
    pub next_cursor: Option<String>,
}

/// A note of a `list_notes` page.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListEntry {
    pub path: String,
    pub size: u64,
}

/// The shape of a `list_notes` page.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListNotesPage {
    pub vault: String,
    pub notes: Vec<ListEntry>,
    pub errors: Vec<PageErrorEntry>,
    /// Repeat the same request with cursor set to this until it is null.
    pub next_cursor: Option<String>,
}

#[derive(Debug)]
pub struct ReadNotes;

#[derive(Debug)]
pub struct ListNotes;

impl Tool for ReadNotes {
    type Args = ReadNotesArgs;
    type Output = PageJson<ReadNotesPage>;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: READ_NOTES,
            description: "Read notes with their frontmatter and content_hash: give paths (in that order) or a folder (recursive by default), exactly one of the two. Results come in pages under the response cap; repeat the same request with cursor = next_cursor until next_cursor is null.",
            annotations: Annotations::READS,
            scope: "read:notes",
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn check(&self, args: &ReadNotesArgs) -> Result<(), ToolError> {
        args.check().map_err(tool_error)
    }

    fn precheck(&self, _cx: &ToolCx<'_>, _args: &ReadNotesArgs) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ReadNotesArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<Self::Output, HandlerFailure> {
        let page =
            read_notes(&context(cx), &cx.caller.id, &cx.caller.scopes, args).map_err(tool_error)?;
        Ok(PageJson::new(page.json))
    }

    fn encode(&self, output: Self::Output) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Serialized(output.json))
    }
}

impl Tool for ListNotes {
    type Args = ListNotesArgs;
    type Output = PageJson<ListNotesPage>;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: LIST_NOTES,
            description: "List the note paths (with sizes) under a folder, the vault root by default, in pages; repeat with cursor = next_cursor until it is null.",
            annotations: Annotations::READS,
            scope: "read:notes",
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, _cx: &ToolCx<'_>, _args: &ListNotesArgs) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ListNotesArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<Self::Output, HandlerFailure> {
        let page =
            list_notes(&context(cx), &cx.caller.id, &cx.caller.scopes, args).map_err(tool_error)?;
        Ok(PageJson::new(page.json))
    }

    fn encode(&self, output: Self::Output) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Serialized(output.json))
    }
}
