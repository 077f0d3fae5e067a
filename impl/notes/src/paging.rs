//! `read_notes` and `list_notes` in the registry: thin tools over [`crate::paging_tools`]
//! (spec `tools.read-notes`, `tools.list-notes`, `paging.*`). They are never gated; the
//! folder ACL is checked per note on every page inside the page builder, so they declare no
//! paths for the central ACL stage. A page leaves them serialized once
//! ([`Tool::encode`] passes its bytes on as they are).

use std::fmt;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError,
    ToolOutput, ToolSpec,
};

use tc_vault::Scopes;

use crate::paging_tools::{
    LIST_NOTES, ListNotesArgs, PageOutput, PagingContext, PagingError, READ_NOTES, ReadNotesArgs,
    list_notes, read_notes,
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
        PagingError::Anchor(refusal) => (**refusal).clone(),
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
    /// Cursor for the next page; null at the end.
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
    /// Cursor for the next page; null at the end.
    pub next_cursor: Option<String>,
}

/// A page function of [`crate::paging_tools`] (`read_notes`, `list_notes`).
type PageFn<Args> = fn(&PagingContext<'_>, &str, &Scopes, &Args) -> Result<PageOutput, PagingError>;

/// One of the two paging tools: its spec, its cross-field check and its page function, its
/// pages advertised with the schema of `Shape`. Never gated, nothing to precheck; the page
/// leaves serialized as the page builder wrote it.
pub struct PagingTool<Args, Shape> {
    spec: ToolSpec,
    check: fn(&Args) -> Result<(), PagingError>,
    page: PageFn<Args>,
    shape: PhantomData<fn() -> Shape>,
}

impl<Args, Shape> fmt::Debug for PagingTool<Args, Shape> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PagingTool")
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}

impl<Args, Shape> Tool for PagingTool<Args, Shape>
where
    Args: DeserializeOwned + Serialize + JsonSchema + Send + Sync + 'static,
    Shape: JsonSchema + 'static,
{
    type Args = Args;
    type Output = PageJson<Shape>;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn check(&self, args: &Args) -> Result<(), ToolError> {
        (self.check)(args).map_err(tool_error)
    }

    fn precheck(&self, _cx: &ToolCx<'_>, _args: &Args) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &Args,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<Self::Output, HandlerFailure> {
        let page = (self.page)(&context(cx), &cx.caller.id, &cx.caller.scopes, args)
            .map_err(tool_error)?;
        Ok(PageJson::new(page.json))
    }

    fn encode(&self, output: Self::Output) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Serialized(output.json))
    }
}

/// The spec both paging tools share but for their name and description.
const fn paging_spec(name: &'static str, description: &'static str) -> ToolSpec {
    ToolSpec {
        name,
        description,
        annotations: Annotations::READS,
        scopes: &["read:notes"],
        changes_notes: false,
        gating: Gating::NEVER,
    }
}

// The two tools are values named like the unit structs they replaced, which is how the
// registry adds them (`registry.add(paging::ReadNotes)`).

/// `read_notes`.
#[allow(non_upper_case_globals)]
pub const ReadNotes: PagingTool<ReadNotesArgs, ReadNotesPage> = PagingTool {
    spec: paging_spec(
        READ_NOTES,
        "Read notes with frontmatter and content_hash: paths (in order) or a folder (recursive by default), exactly one. Pages via cursor.",
    ),
    check: ReadNotesArgs::check,
    page: read_notes,
    shape: PhantomData,
};

/// `list_notes` (no rule across its fields).
#[allow(non_upper_case_globals)]
pub const ListNotes: PagingTool<ListNotesArgs, ListNotesPage> = PagingTool {
    spec: paging_spec(
        LIST_NOTES,
        "List note paths and sizes under a folder (default: the vault root). Pages via cursor.",
    ),
    check: |_| Ok(()),
    page: list_notes,
    shape: PhantomData,
};
