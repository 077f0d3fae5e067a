//! The drawing tools: `read_excalidraw`, `create_excalidraw` (spec/formats.md
//! `formats.excalidraw.*`; spec/drift.md `drift.bind.create-excalidraw`; spec/tools.md
//! `tools.compose.create-excalidraw`).
//!
//! A drawing is the Excalidraw plugin's `.excalidraw.md` note, read and written as a file on
//! the server host. Creating one at a free path is free; replacing an existing file asks,
//! bound to its bytes (which are kept as a version). A compressed scene is decompressed
//! under a bound, so a small file cannot make the server build a huge one.

pub mod doc;
pub mod lz;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tc_gate::ConfirmationTargets;
use tc_tools::note_write::{exists_error, guard_for, read_as_observed};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::conventions::{Prior, WriteIntent, WriteKind};
use tc_vault::path::VaultPath;

use doc::{Drawing, MAX_SCENE_UNITS, TextElement};

/// The suffix of a drawing note.
pub const SUFFIX: &str = ".excalidraw.md";

/// The plugin's settings, where its `compress` choice lives.
const PLUGIN_SETTINGS: &str = ".obsidian/plugins/obsidian-excalidraw-plugin/data.json";

// r[impl formats.excalidraw.path]
/// A drawing path argument: a vault path ending in `.excalidraw.md`.
fn drawing_path(raw: &str) -> Result<VaultPath, ToolError> {
    let path = VaultPath::parse(raw).map_err(|e| ToolError::from(&e))?;
    if !path.as_str().ends_with(SUFFIX) || path.as_str().len() == SUFFIX.len() {
        return Err(ToolError::validation(
            "/path",
            "is not a .excalidraw.md drawing",
        ));
    }
    Ok(path)
}

fn unreadable(path: &VaultPath, why: String) -> ToolError {
    ToolError::new(
        tc_tools::ErrorCode::InvalidInput,
        format!("{} cannot be read as a drawing: {why}", path.as_str()),
    )
}

// r[impl formats.excalidraw.bomb]
fn read_drawing(cx: &ToolCx<'_>, path: &VaultPath) -> Result<(Drawing, String), ToolError> {
    let content = cx
        .vault()
        .read_if_exists(path)?
        .ok_or_else(|| tc_tools::note_write::not_found(path))?;
    let text = content.utf8(path)?;
    let drawing = doc::parse(text, MAX_SCENE_UNITS).map_err(|why| unreadable(path, why))?;
    Ok((drawing, content.hash))
}

// r[impl formats.excalidraw.style]
/// Whether a new drawing is compressed: as the plugin's own setting says (its default, on,
/// when the vault has no readable setting).
fn plugin_compresses(cx: &ToolCx<'_>) -> bool {
    let file = cx.vault().root().path().join(PLUGIN_SETTINGS);
    let small = std::fs::metadata(&file).is_ok_and(|m| m.is_file() && m.len() < 4 << 20);
    let settings: Option<Value> = small
        .then(|| std::fs::read(&file).ok())
        .flatten()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    settings
        .as_ref()
        .and_then(|s| s.get("compress"))
        .and_then(Value::as_bool)
        .unwrap_or(true)
}

// ------------------------------------------------------------- read_excalidraw

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadExcalidrawArgs {
    /// A `.excalidraw.md` drawing.
    pub path: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadExcalidrawOutput {
    pub path: String,
    pub compressed: bool,
    pub elements: Vec<Value>,
    pub text_elements: Vec<TextElement>,
    pub content_hash: String,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ReadExcalidraw;

// r[impl formats.excalidraw.read]
impl Tool for ReadExcalidraw {
    type Args = ReadExcalidrawArgs;
    type Output = ReadExcalidrawOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_excalidraw",
            description: "Read an Excalidraw drawing (.excalidraw.md, plain or compressed): its elements and its text elements.",
            annotations: Annotations::READS,
            scopes: &["read:excalidraw"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &ReadExcalidrawArgs) -> Result<Precheck, ToolError> {
        let path = drawing_path(&args.path)?;
        cx.require_read(&path)?;
        Ok(Precheck {
            acl: vec![(AclOp::Read, path)],
            ..Precheck::free()
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ReadExcalidrawArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ReadExcalidrawOutput, HandlerFailure> {
        let path = drawing_path(&args.path)?;
        let (drawing, hash) = read_drawing(cx, &path)?;
        Ok(ReadExcalidrawOutput {
            path: path.as_str().to_owned(),
            compressed: drawing.compressed,
            elements: drawing.elements().to_vec(),
            text_elements: drawing.text_elements,
            content_hash: hash,
        })
    }
}

// ----------------------------------------------------------- create_excalidraw

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateExcalidrawArgs {
    /// A `.excalidraw.md` drawing.
    pub path: String,
    /// id, type, x, y, …; a text element: `text` and an id of 8 letters or digits.
    #[schemars(with = "Vec<Value>")]
    pub elements: Vec<Map<String, Value>>,
    /// Replace an existing drawing.
    #[serde(default)]
    pub overwrite: bool,
}

/// What a create writes, and the size of the file it replaces.
#[derive(Debug, Default)]
pub struct Drawn {
    pub bytes: Vec<u8>,
    pub compressed: bool,
    pub replaces: Option<usize>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CreateExcalidrawOutput {
    pub path: String,
    pub compressed: bool,
    pub content_hash: String,
    pub created: bool,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct CreateExcalidraw;

// r[impl formats.excalidraw.create]
impl Tool for CreateExcalidraw {
    type Args = CreateExcalidrawArgs;
    type Output = CreateExcalidrawOutput;
    type Plan = Drawn;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "create_excalidraw",
            description: "Create an Excalidraw drawing (.excalidraw.md). Replacing an existing drawing asks the human.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:excalidraw"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &CreateExcalidrawArgs,
    ) -> Result<Precheck<Drawn>, ToolError> {
        let path = drawing_path(&args.path)?;
        doc::check_elements(&args.elements)
            .map_err(|why| ToolError::validation("/elements", why))?;
        let current = cx.vault().read_if_exists(&path)?;
        if current.is_some() && !args.overwrite {
            return Err(exists_error(&path));
        }
        // A replaced drawing keeps its form; a new one takes the plugin's setting.
        let compressed = match &current {
            Some(content) => content
                .utf8(&path)
                .ok()
                .and_then(|text| doc::parse(text, MAX_SCENE_UNITS).ok())
                .map_or_else(|| plugin_compresses(cx), |d| d.compressed),
            None => plugin_compresses(cx),
        };
        let bytes = doc::write(&args.elements, compressed).into_bytes();
        let kind = if current.is_some() {
            WriteKind::Overwrite
        } else {
            WriteKind::Create
        };
        tc_tools::note_write::preflight(
            cx,
            &WriteIntent::new(path.clone(), kind, &bytes, Prior::Unknown),
        )?;
        let replaces = current.map(|c| c.bytes.len());
        Ok(Precheck {
            // r[impl drift.bind.create-excalidraw]
            needs_confirmation: replaces.is_some(),
            acl: vec![(AclOp::Write, path)],
            plan: Arc::new(Drawn {
                bytes,
                compressed,
                replaces,
            }),
        })
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &CreateExcalidrawArgs,
        precheck: &Precheck<Drawn>,
        _state: &TargetState,
    ) -> Summary {
        Summary::new(format!(
            "replace the drawing {} ({} bytes) with one of {} element(s) ({} bytes)",
            args.path,
            precheck.plan.replaces.unwrap_or(0),
            args.elements.len(),
            precheck.plan.bytes.len()
        ))
        .target(&args.path)
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &CreateExcalidrawArgs,
        precheck: &Precheck<Drawn>,
        state: &TargetState,
    ) -> Result<CreateExcalidrawOutput, HandlerFailure> {
        let path = drawing_path(&args.path)?;
        let current = read_as_observed(cx, state, &path)?;
        if current.is_some() && precheck.plan.replaces.is_none() {
            return Err(exists_error(&path).into());
        }
        let written =
            cx.vault()
                .write_keeping(&path, &precheck.plan.bytes, &guard_for(current.as_ref()))?;
        Ok(CreateExcalidrawOutput {
            path: path.as_str().to_owned(),
            compressed: precheck.plan.compressed,
            content_hash: written.outcome.hash,
            created: written.outcome.created,
        })
    }
}
