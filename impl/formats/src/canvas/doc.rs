//! A JSON Canvas 1.0 file as Obsidian writes it (spec/formats.md `formats.canvas.*`): an
//! object with `nodes` and `edges`, each an array of objects with an `id`, written with tabs,
//! one node or edge to a line. Every node and edge keeps its own text unless the call changes
//! it, and unknown keys (of the file, a node or an edge) are kept.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// One node or edge: its text as found (or as written for a new one) and its fields.
#[derive(Debug, Clone)]
pub struct Item {
    pub text: String,
    pub fields: Map<String, Value>,
}

impl Item {
    pub fn id(&self) -> &str {
        self.fields.get("id").and_then(Value::as_str).unwrap_or("")
    }

    /// An item made from `fields`, written with its keys in the order Obsidian writes them.
    pub fn new(fields: Map<String, Value>, first: &[&str]) -> Self {
        let text = ordered_json(&fields, first);
        Item { text, fields }
    }
}

/// A canvas: its nodes, its edges and any other top-level key, in file order.
#[derive(Debug, Clone, Default)]
pub struct Canvas {
    pub nodes: Vec<Item>,
    pub edges: Vec<Item>,
    pub rest: Vec<(String, String)>,
}

/// The keys a node is written with first, in Obsidian's order.
pub const NODE_KEYS: &[&str] = &[
    "id", "type", "text", "file", "subpath", "url", "label", "x", "y", "width", "height",
];
/// The keys an edge is written with first.
pub const EDGE_KEYS: &[&str] = &[
    "id", "fromNode", "fromSide", "fromEnd", "toNode", "toSide", "toEnd",
];

/// `fields` as compact JSON, the keys of `first` first in that order, then the others.
fn ordered_json(fields: &Map<String, Value>, first: &[&str]) -> String {
    let mut parts = Vec::with_capacity(fields.len());
    for key in first {
        if let Some(value) = fields.get(*key) {
            parts.push(format!("{}:{}", Value::String((*key).to_owned()), value));
        }
    }
    for (key, value) in fields {
        if !first.contains(&key.as_str()) {
            parts.push(format!("{}:{}", Value::String(key.clone()), value));
        }
    }
    format!("{{{}}}", parts.join(","))
}

/// Why a canvas file could not be read.
pub fn parse(text: &str) -> Result<Canvas, String> {
    let top: BTreeMap<String, Box<RawValue>> =
        serde_json::from_str(text.trim_start_matches('\u{feff}'))
            .map_err(|e| format!("it is not a JSON Canvas object: {e}"))?;
    let items = |key: &str| -> Result<Vec<Item>, String> {
        let Some(raw) = top.get(key) else {
            return Ok(Vec::new());
        };
        let list: Vec<Box<RawValue>> =
            serde_json::from_str(raw.get()).map_err(|_| format!("`{key}` is not an array"))?;
        let mut out = Vec::with_capacity(list.len());
        let mut ids = BTreeSet::new();
        for raw in list {
            let fields: Map<String, Value> = serde_json::from_str(raw.get())
                .map_err(|_| format!("an entry of `{key}` is not an object"))?;
            let item = Item {
                text: raw.get().to_owned(),
                fields,
            };
            if item.id().is_empty() || !ids.insert(item.id().to_owned()) {
                return Err(format!(
                    "`{key}` holds an entry without an id, or an id twice"
                ));
            }
            out.push(item);
        }
        Ok(out)
    };
    Ok(Canvas {
        nodes: items("nodes")?,
        edges: items("edges")?,
        rest: top
            .iter()
            .filter(|(k, _)| k.as_str() != "nodes" && k.as_str() != "edges")
            .map(|(k, v)| (k.clone(), v.get().to_owned()))
            .collect(),
    })
}

/// The canvas as Obsidian writes it: tabs, one node or edge to a line.
pub fn write(canvas: &Canvas) -> String {
    let list = |items: &[Item]| -> String {
        if items.is_empty() {
            return "[]".to_owned();
        }
        let lines: Vec<String> = items.iter().map(|i| format!("\t\t{}", i.text)).collect();
        format!("[\n{}\n\t]", lines.join(",\n"))
    };
    let mut parts = vec![
        format!("\t\"nodes\":{}", list(&canvas.nodes)),
        format!("\t\"edges\":{}", list(&canvas.edges)),
    ];
    for (key, raw) in &canvas.rest {
        parts.push(format!("\t{}:{raw}", Value::String(key.clone())));
    }
    format!("{{\n{}\n}}", parts.join(",\n"))
}

/// The node and edge types JSON Canvas 1.0 defines, with the field each needs.
pub fn check_node(fields: &Map<String, Value>) -> Result<(), String> {
    let id = fields.get("id").and_then(Value::as_str).unwrap_or("");
    if id.is_empty() {
        return Err("a node needs a non-empty string `id`".into());
    }
    let needs = match fields.get("type").and_then(Value::as_str) {
        Some("text") => "text",
        Some("file") => "file",
        Some("link") => "url",
        Some("group") => "",
        _ => {
            return Err(format!(
                "node {id}: `type` must be text, file, link or group"
            ));
        }
    };
    if !needs.is_empty() && !fields.get(needs).is_some_and(Value::is_string) {
        return Err(format!(
            "node {id}: a node of its type needs a string `{needs}`"
        ));
    }
    for key in ["x", "y", "width", "height"] {
        if !fields.get(key).is_some_and(Value::is_number) {
            return Err(format!("node {id}: `{key}` must be a number"));
        }
    }
    Ok(())
}

/// An edge needs an id and both ends among `nodes`.
pub fn check_edge(fields: &Map<String, Value>, nodes: &BTreeSet<&str>) -> Result<(), String> {
    let id = fields.get("id").and_then(Value::as_str).unwrap_or("");
    if id.is_empty() {
        return Err("an edge needs a non-empty string `id`".into());
    }
    for end in ["fromNode", "toNode"] {
        match fields.get(end).and_then(Value::as_str) {
            Some(node) if nodes.contains(node) => {}
            _ => return Err(format!("edge {id}: `{end}` must name a node of the canvas")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OBSIDIAN: &str = "{\n\t\"nodes\":[\n\t\t{\"id\":\"a1\",\"type\":\"text\",\"text\":\"Hello\",\"x\":-100,\"y\":-50,\"width\":250,\"height\":60,\"color\":\"4\"},\n\t\t{\"id\":\"b2\",\"type\":\"file\",\"file\":\"notes/plan.md\",\"x\":300,\"y\":0,\"width\":400,\"height\":400,\"futureKey\":{\"kept\":true}}\n\t],\n\t\"edges\":[\n\t\t{\"id\":\"e1\",\"fromNode\":\"a1\",\"fromSide\":\"right\",\"toNode\":\"b2\",\"toSide\":\"left\"}\n\t]\n}";

    // r[verify formats.canvas.round-trip]
    #[test]
    fn a_canvas_as_obsidian_writes_it_reads_and_writes_back_byte_for_byte() {
        let canvas = parse(OBSIDIAN).unwrap();
        assert_eq!(canvas.nodes.len(), 2);
        assert_eq!(canvas.nodes[1].fields["futureKey"]["kept"], true);
        assert_eq!(write(&canvas), OBSIDIAN);
        let empty = "{\n\t\"nodes\":[],\n\t\"edges\":[]\n}";
        assert_eq!(write(&parse(empty).unwrap()), empty);
        let extra = "{\"nodes\":[],\"edges\":[],\"x-plugin\":{\"v\":1}}";
        assert!(write(&parse(extra).unwrap()).contains("\t\"x-plugin\":{\"v\":1}"));
    }

    #[test]
    fn broken_canvases_are_refused_by_name() {
        assert!(parse("not json").is_err());
        assert!(parse("{\"nodes\":{}}").is_err());
        assert!(parse("{\"nodes\":[{\"id\":\"a\"},{\"id\":\"a\"}]}").is_err());
    }
}
