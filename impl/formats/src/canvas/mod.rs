//! The canvas tools: `read_canvas`, `create_canvas`, `update_canvas` (spec/formats.md
//! `formats.canvas.*`; spec/drift.md `drift.bind.create-canvas`, `drift.bind.update-canvas`;
//! spec/tools.md `tools.compose.create-canvas`, `tools.compose.update-canvas`).
//!
//! A canvas is read and written as a file on the server host (no running Obsidian needed).
//! Creating one at a free path is free; over an existing canvas it asks, bound to the file's
//! bytes (which are kept as a version). An update that removes more than ten nodes asks,
//! bound to the canvas; smaller ones are free. Removing a node removes its edges.

pub mod doc;

use std::collections::BTreeSet;
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

use doc::{Canvas, EDGE_KEYS, Item, NODE_KEYS, check_edge, check_node};

/// How many nodes an update may remove without asking.
pub const FREE_REMOVALS: usize = 10;

// r[impl formats.canvas.path]
/// A canvas path argument: a vault path ending in `.canvas`.
fn canvas_path(raw: &str, pointer: &str) -> Result<VaultPath, ToolError> {
    let path = VaultPath::parse(raw).map_err(|e| ToolError::from(&e))?;
    if !path.as_str().ends_with(".canvas") {
        return Err(ToolError::validation(pointer, "is not a .canvas file"));
    }
    Ok(path)
}

fn invalid(path: &VaultPath, why: String) -> ToolError {
    ToolError::new(
        tc_tools::ErrorCode::InvalidInput,
        format!("{} cannot be read as a canvas: {why}", path.as_str()),
    )
}

fn read_canvas_file(cx: &ToolCx<'_>, path: &VaultPath) -> Result<(Canvas, String), ToolError> {
    let content = cx
        .vault()
        .read_if_exists(path)?
        .ok_or_else(|| tc_tools::note_write::not_found(path))?;
    let text = content.utf8(path)?.to_owned();
    let canvas = doc::parse(&text).map_err(|why| invalid(path, why))?;
    Ok((canvas, content.hash))
}

fn judge(cx: &ToolCx<'_>, path: &VaultPath, exists: bool, bytes: &[u8]) -> Result<(), ToolError> {
    let kind = if exists {
        WriteKind::Overwrite
    } else {
        WriteKind::Create
    };
    tc_tools::note_write::preflight(
        cx,
        &WriteIntent::new(path.clone(), kind, bytes, Prior::Unknown),
    )
}

// ----------------------------------------------------------------- read_canvas

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadCanvasArgs {
    /// A `.canvas` file.
    pub path: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadCanvasOutput {
    pub path: String,
    pub nodes: Vec<Value>,
    pub edges: Vec<Value>,
    pub content_hash: String,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ReadCanvas;

impl Tool for ReadCanvas {
    type Args = ReadCanvasArgs;
    type Output = ReadCanvasOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_canvas",
            description: "Read a JSON Canvas (.canvas): its nodes and edges with every field, unknown ones included.",
            annotations: Annotations::READS,
            scopes: &["read:canvas"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &ReadCanvasArgs) -> Result<Precheck, ToolError> {
        let path = canvas_path(&args.path, "/path")?;
        cx.require_read(&path)?;
        Ok(Precheck {
            acl: vec![(AclOp::Read, path)],
            ..Precheck::free()
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ReadCanvasArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ReadCanvasOutput, HandlerFailure> {
        let path = canvas_path(&args.path, "/path")?;
        let (canvas, hash) = read_canvas_file(cx, &path)?;
        let fields =
            |items: Vec<Item>| items.into_iter().map(|i| Value::Object(i.fields)).collect();
        Ok(ReadCanvasOutput {
            path: path.as_str().to_owned(),
            nodes: fields(canvas.nodes),
            edges: fields(canvas.edges),
            content_hash: hash,
        })
    }
}

// --------------------------------------------------------------- create_canvas

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateCanvasArgs {
    /// A `.canvas` file.
    pub path: String,
    /// id, type (text|file|link|group), x, y, width, height, …
    #[serde(default)]
    #[schemars(with = "Vec<Value>", transform = crate::no_default)]
    pub nodes: Vec<Map<String, Value>>,
    /// id, fromNode, toNode, …
    #[serde(default)]
    #[schemars(with = "Vec<Value>", transform = crate::no_default)]
    pub edges: Vec<Map<String, Value>>,
    /// Replace an existing canvas.
    #[serde(default)]
    pub overwrite: bool,
}

/// What a create writes, and whether it replaces a canvas.
#[derive(Debug, Default)]
pub struct Written {
    pub bytes: Vec<u8>,
    pub replaces: Option<usize>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CanvasCreated {
    pub path: String,
    pub content_hash: String,
    pub created: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CanvasUpdated {
    pub path: String,
    // How many nodes the canvas has after the update.
    pub nodes: usize,
    pub content_hash: String,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct CreateCanvas;

// r[impl formats.canvas.create]
fn build(args: &CreateCanvasArgs) -> Result<Canvas, ToolError> {
    let mut canvas = Canvas::default();
    let mut ids = BTreeSet::new();
    for node in &args.nodes {
        check_node(node).map_err(|why| ToolError::validation("/nodes", why))?;
        let id = node["id"].as_str().unwrap_or_default();
        if !ids.insert(id.to_owned()) {
            return Err(ToolError::validation("/nodes", format!("id {id} twice")));
        }
        canvas.nodes.push(Item::new(node.clone(), NODE_KEYS));
    }
    let node_ids: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
    let mut edge_ids = BTreeSet::new();
    for edge in &args.edges {
        check_edge(edge, &node_ids).map_err(|why| ToolError::validation("/edges", why))?;
        if !edge_ids.insert(edge["id"].as_str().unwrap_or_default().to_owned()) {
            return Err(ToolError::validation("/edges", "an edge id twice"));
        }
        canvas.edges.push(Item::new(edge.clone(), EDGE_KEYS));
    }
    Ok(canvas)
}

impl Tool for CreateCanvas {
    type Args = CreateCanvasArgs;
    type Output = CanvasCreated;
    type Plan = Written;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "create_canvas",
            description: "Create a JSON Canvas (.canvas) of nodes and edges. Replacing a canvas asks the human.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:canvas"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &CreateCanvasArgs,
    ) -> Result<Precheck<Written>, ToolError> {
        let path = canvas_path(&args.path, "/path")?;
        let bytes = doc::write(&build(args)?).into_bytes();
        let current = cx.vault().read_if_exists(&path)?;
        if current.is_some() && !args.overwrite {
            return Err(exists_error(&path));
        }
        judge(cx, &path, current.is_some(), &bytes)?;
        let replaces = current.map(|c| c.bytes.len());
        Ok(Precheck {
            // r[impl drift.bind.create-canvas]
            needs_confirmation: replaces.is_some(),
            acl: vec![(AclOp::Write, path)],
            plan: Arc::new(Written { bytes, replaces }),
        })
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &CreateCanvasArgs,
        precheck: &Precheck<Written>,
        _state: &TargetState,
    ) -> Summary {
        Summary::new(format!(
            "replace the canvas {} ({} bytes) with one of {} node(s) and {} edge(s) ({} bytes)",
            args.path,
            precheck.plan.replaces.unwrap_or(0),
            args.nodes.len(),
            args.edges.len(),
            precheck.plan.bytes.len()
        ))
        .target(&args.path)
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &CreateCanvasArgs,
        precheck: &Precheck<Written>,
        state: &TargetState,
    ) -> Result<CanvasCreated, HandlerFailure> {
        let path = canvas_path(&args.path, "/path")?;
        let current = read_as_observed(cx, state, &path)?;
        if current.is_some() && precheck.plan.replaces.is_none() {
            return Err(exists_error(&path).into());
        }
        let written =
            cx.vault()
                .write_keeping(&path, &precheck.plan.bytes, &guard_for(current.as_ref()))?;
        Ok(CanvasCreated {
            path: path.as_str().to_owned(),
            content_hash: written.outcome.hash,
            created: written.outcome.created,
        })
    }
}

// --------------------------------------------------------------- update_canvas

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateCanvasArgs {
    /// A `.canvas` file.
    pub path: String,
    #[serde(default)]
    #[schemars(with = "Vec<Value>", transform = crate::no_default)]
    pub add_nodes: Vec<Map<String, Value>>,
    #[serde(default)]
    #[schemars(with = "Vec<Value>", transform = crate::no_default)]
    pub update_nodes: Vec<Map<String, Value>>,
    #[serde(default)]
    #[schemars(transform = crate::no_default)]
    pub remove_node_ids: Vec<String>,
    #[serde(default)]
    #[schemars(with = "Vec<Value>", transform = crate::no_default)]
    pub add_edges: Vec<Map<String, Value>>,
    #[serde(default)]
    #[schemars(transform = crate::no_default)]
    pub remove_edge_ids: Vec<String>,
}

/// The canvas after an update, and what it removes.
#[derive(Debug, Default)]
pub struct Updated {
    pub bytes: Vec<u8>,
    pub removed_nodes: Vec<String>,
    pub removed_edges: usize,
    pub nodes: usize,
    pub edges: usize,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct UpdateCanvas;

// r[impl formats.canvas.update]
fn apply_update(mut canvas: Canvas, args: &UpdateCanvasArgs) -> Result<Updated, ToolError> {
    let v = |pointer: &str, why: String| ToolError::validation(pointer, why);
    let existing: BTreeSet<String> = canvas.nodes.iter().map(|n| n.id().to_owned()).collect();
    let removing: BTreeSet<&str> = args.remove_node_ids.iter().map(String::as_str).collect();
    for id in &removing {
        if !existing.contains(*id) {
            return Err(v("/remove_node_ids", format!("no node {id}")));
        }
    }
    for update in &args.update_nodes {
        let id = update.get("id").and_then(Value::as_str).unwrap_or("");
        let Some(node) = canvas.nodes.iter_mut().find(|n| n.id() == id) else {
            return Err(v("/update_nodes", format!("no node {id:?}")));
        };
        if removing.contains(id) {
            return Err(v("/update_nodes", format!("node {id} is also removed")));
        }
        let mut fields = node.fields.clone();
        for (key, value) in update {
            fields.insert(key.clone(), value.clone());
        }
        check_node(&fields).map_err(|why| v("/update_nodes", why))?;
        // An updated node is written anew; the others keep their text.
        *node = Item::new(fields, NODE_KEYS);
    }
    canvas.nodes.retain(|n| !removing.contains(n.id()));
    for node in &args.add_nodes {
        check_node(node).map_err(|why| v("/add_nodes", why))?;
        let id = node["id"].as_str().unwrap_or_default();
        if canvas.nodes.iter().any(|n| n.id() == id) || removing.contains(id) {
            return Err(v("/add_nodes", format!("node {id} exists already")));
        }
        canvas.nodes.push(Item::new(node.clone(), NODE_KEYS));
    }
    let edge_ids: BTreeSet<String> = canvas.edges.iter().map(|e| e.id().to_owned()).collect();
    for id in &args.remove_edge_ids {
        if !edge_ids.contains(id) {
            return Err(v("/remove_edge_ids", format!("no edge {id}")));
        }
    }
    let before = canvas.edges.len();
    // r[impl formats.canvas.edges-follow]
    canvas.edges.retain(|e| {
        let touches = ["fromNode", "toNode"].iter().any(|end| {
            e.fields
                .get(*end)
                .and_then(Value::as_str)
                .is_some_and(|n| removing.contains(n))
        });
        !touches && !args.remove_edge_ids.iter().any(|id| id == e.id())
    });
    let removed_edges = before - canvas.edges.len();
    let node_ids: BTreeSet<&str> = canvas.nodes.iter().map(Item::id).collect();
    let mut added: Vec<Item> = Vec::new();
    for edge in &args.add_edges {
        check_edge(edge, &node_ids).map_err(|why| v("/add_edges", why))?;
        let id = edge["id"].as_str().unwrap_or_default();
        if canvas.edges.iter().chain(&added).any(|e| e.id() == id) {
            return Err(v("/add_edges", format!("edge {id} exists already")));
        }
        added.push(Item::new(edge.clone(), EDGE_KEYS));
    }
    canvas.edges.extend(added);
    Ok(Updated {
        bytes: doc::write(&canvas).into_bytes(),
        removed_nodes: args.remove_node_ids.clone(),
        removed_edges,
        nodes: canvas.nodes.len(),
        edges: canvas.edges.len(),
    })
}

impl Tool for UpdateCanvas {
    type Args = UpdateCanvasArgs;
    type Output = CanvasUpdated;
    type Plan = Updated;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "update_canvas",
            description: "Edit a canvas by id: add or merge nodes, add edges, remove nodes (with their edges) or edges; removing over 10 nodes asks.",
            annotations: Annotations::writes(true, false),
            scopes: &["write:canvas"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::PathAcl),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &UpdateCanvasArgs,
    ) -> Result<Precheck<Updated>, ToolError> {
        let path = canvas_path(&args.path, "/path")?;
        cx.require_read(&path)?;
        let (canvas, _) = read_canvas_file(cx, &path)?;
        let updated = apply_update(canvas, args)?;
        judge(cx, &path, true, &updated.bytes)?;
        Ok(Precheck {
            // r[impl drift.bind.update-canvas]
            needs_confirmation: updated.removed_nodes.len() > FREE_REMOVALS,
            acl: vec![(AclOp::Read, path.clone()), (AclOp::Write, path)],
            plan: Arc::new(updated),
        })
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &UpdateCanvasArgs,
        precheck: &Precheck<Updated>,
        _state: &TargetState,
    ) -> Summary {
        let plan = &precheck.plan;
        Summary::new(format!(
            "update the canvas {}: remove {} node(s) and {} edge(s); {} node(s) and {} edge(s) after",
            args.path,
            plan.removed_nodes.len(),
            plan.removed_edges,
            plan.nodes,
            plan.edges
        ))
        .target(&args.path)
        .details_named(
            plan.removed_nodes.iter().map(|id| format!("  removes node {id}")).collect(),
            |n| format!("  … and {n} more node(s)"),
        )
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &UpdateCanvasArgs,
        precheck: &Precheck<Updated>,
        state: &TargetState,
    ) -> Result<CanvasUpdated, HandlerFailure> {
        let path = canvas_path(&args.path, "/path")?;
        let current = read_as_observed(cx, state, &path)?
            .ok_or_else(|| tc_tools::note_write::not_found(&path))?;
        // A free update applies to the canvas as it is now: planned again on it.
        let plan = if precheck.needs_confirmation {
            None
        } else {
            let text = current.utf8(&path)?;
            let canvas = doc::parse(text).map_err(|why| invalid(&path, why))?;
            Some(apply_update(canvas, args)?)
        };
        let plan = plan.as_ref().unwrap_or(&precheck.plan);
        let guard = guard_for(Some(&current));
        // r[impl tools.compose.update-canvas]
        // Any removal keeps the canvas as it was, free or not, so each step can be undone.
        let written = if !plan.removed_nodes.is_empty() || plan.removed_edges > 0 {
            cx.vault()
                .write_keeping(&path, &plan.bytes, &guard)?
                .outcome
        } else {
            cx.vault().write(&path, &plan.bytes, &guard)?
        };
        Ok(CanvasUpdated {
            path: path.as_str().to_owned(),
            nodes: plan.nodes,
            content_hash: written.hash,
        })
    }
}
