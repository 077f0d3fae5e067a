//! The property tools (spec/metadata.md `## Properties`): `list_properties`,
//! `read_property`, `find_notes_by_property`, answered from the index's property rows
//! ([`tc_index::meta::properties`]), never from a walk of the vault.
//!
//! The folder ACL is judged on every note before it is shown or counted, so a note the
//! caller may not read shows no key, no value and no count.

use std::collections::{BTreeSet, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tc_index::meta::{self, properties as q, tags::is_indexed_note};
use tc_index::search::filters::value_norm;
use tc_tools::note_write::{not_found, note};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError, ToolSpec,
};
use tc_vault::path::VaultPath;

use crate::tags::{Paging, folder_of};

const LIST_PROPERTIES: &str = "list_properties";
const FIND_NOTES_BY_PROPERTY: &str = "find_notes_by_property";
/// The most notes on one page of `find_notes_by_property`.
const PAGE_NOTES: usize = 200;

pub(crate) const fn reads(name: &'static str, description: &'static str) -> ToolSpec {
    ToolSpec {
        name,
        description,
        annotations: Annotations::READS,
        scopes: &["read:notes"],
        changes_notes: false,
        gating: Gating::NEVER,
    }
}

// r[impl metadata.properties.acl]
/// Whether the caller may read the note at `path`, judged once per note (and not at all
/// when the ACL lets the caller read every path: judging a path stats its links).
pub(crate) struct Readable<'c, 'a> {
    cx: &'c ToolCx<'a>,
    everything: bool,
    judged: HashMap<String, bool>,
}

impl<'c, 'a> Readable<'c, 'a> {
    pub fn new(cx: &'c ToolCx<'a>) -> Self {
        Readable {
            cx,
            everything: cx.binding.acl.reads_everything(&cx.caller.scopes),
            judged: HashMap::new(),
        }
    }

    pub fn check(&mut self, path: &str) -> bool {
        if self.everything {
            return true;
        }
        if let Some(known) = self.judged.get(path) {
            return *known;
        }
        let ok = VaultPath::parse(path).is_ok_and(|p| self.cx.may_read(&p));
        self.judged.insert(path.to_owned(), ok);
        ok
    }
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

// ---------------------------------------------------------------- list_properties

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListPropertiesArgs {
    /// Count only notes under this folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub folder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PropertyCount {
    pub key: String,
    pub notes: usize,
    /// text, number, checkbox, date, datetime, list, object, null.
    pub types: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListPropertiesOutput {
    pub vault: String,
    pub properties: Vec<PropertyCount>,
    pub next_cursor: Option<String>,
}

#[derive(Debug)]
pub struct ListProperties;

impl Tool for ListProperties {
    type Args = ListPropertiesArgs;
    type Output = ListPropertiesOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        reads(
            LIST_PROPERTIES,
            "List frontmatter property keys with how many notes have each and the value types seen. Pages via cursor.",
        )
    }

    fn precheck(
        &self,
        _cx: &ToolCx<'_>,
        _args: &ListPropertiesArgs,
    ) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    // r[impl metadata.list-properties]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ListPropertiesArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ListPropertiesOutput, HandlerFailure> {
        let folder = folder_of(args.folder.as_deref())?;
        let paging = Paging::open(
            cx,
            LIST_PROPERTIES,
            args,
            args.cursor.as_deref(),
            args.max_bytes,
        )?;
        let index = meta::fresh(cx)?;
        let rows = q::top_keys(index, &folder, paging.after.as_deref())?;
        let mut readable = Readable::new(cx);
        let mut counts: Vec<PropertyCount> = Vec::new();
        let mut types: BTreeSet<String> = BTreeSet::new();
        for (key, path, kind) in rows {
            if !readable.check(&path) {
                continue;
            }
            match counts.last_mut() {
                Some(last) if last.key == key => last.notes += 1,
                _ => {
                    if let Some(last) = counts.last_mut() {
                        last.types = std::mem::take(&mut types).into_iter().collect();
                    }
                    counts.push(PropertyCount {
                        key,
                        notes: 1,
                        types: Vec::new(),
                    });
                }
            }
            types.insert(kind);
        }
        if let Some(last) = counts.last_mut() {
            last.types = types.into_iter().collect();
        }
        let entries = counts.into_iter().map(|c| (c.key.clone(), c));
        let (properties, last) = paging.fill(entries)?;
        let next_cursor = last.map(|last| paging.next(cx, &last)).transpose()?;
        Ok(ListPropertiesOutput {
            vault: cx.vault().id().to_owned(),
            properties,
            next_cursor,
        })
    }
}

// ---------------------------------------------------------------- read_property

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadPropertyArgs {
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// Dotted for nested keys (project.status).
    #[schemars(length(min = 1, max = 1024))]
    pub key: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReadPropertyOutput {
    pub path: String,
    pub key: String,
    pub exists: bool,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    #[schemars(schema_with = "tc_index::search::filters::any_schema")]
    pub value: Value,
}

#[derive(Debug)]
pub struct ReadProperty;

impl Tool for ReadProperty {
    type Args = ReadPropertyArgs;
    type Output = ReadPropertyOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        reads(
            "read_property",
            "A note's frontmatter property (key may be dotted for nested keys): value and type.",
        )
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &ReadPropertyArgs) -> Result<Precheck, ToolError> {
        let path = note(&args.path)?;
        cx.require_read(&path)?;
        Ok(Precheck::free())
    }

    // r[impl metadata.read-property]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ReadPropertyArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<ReadPropertyOutput, HandlerFailure> {
        let path = note(&args.path)?;
        let index = meta::fresh(cx)?;
        if !is_indexed_note(index, path.as_str())? {
            return Err(not_found(&path).into());
        }
        let key = args.key.trim();
        let found = q::property_of(index, path.as_str(), key)?;
        Ok(ReadPropertyOutput {
            path: path.as_str().to_owned(),
            key: key.to_owned(),
            exists: found.is_some(),
            kind: found.as_ref().map(|row| row.kind.clone()),
            value: found.map(|row| json_of(&row.value)).unwrap_or(Value::Null),
        })
    }
}

// ---------------------------------------------------------------- find_notes_by_property

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindNotesByPropertyArgs {
    /// Dotted for nested keys.
    #[schemars(length(min = 1, max = 1024))]
    pub key: String,
    /// Absent: the key exists. Case-insensitive; a list matches when it holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "tc_index::search::filters::scalar_schema")]
    pub value: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub folder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PropertyNote {
    pub path: String,
    pub value: Value,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FindNotesByPropertyOutput {
    pub vault: String,
    pub notes: Vec<PropertyNote>,
    pub next_cursor: Option<String>,
}

#[derive(Debug)]
pub struct FindNotesByProperty;

impl Tool for FindNotesByProperty {
    type Args = FindNotesByPropertyArgs;
    type Output = FindNotesByPropertyOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        reads(
            FIND_NOTES_BY_PROPERTY,
            "Notes having a frontmatter key, or a value for it, in path order, each with its value. Pages via cursor.",
        )
    }

    fn check(&self, args: &FindNotesByPropertyArgs) -> Result<(), ToolError> {
        value_norm(args.value.as_ref(), "/value").map(|_| ())
    }

    fn precheck(
        &self,
        _cx: &ToolCx<'_>,
        _args: &FindNotesByPropertyArgs,
    ) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    // r[impl metadata.find-notes-by-property]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &FindNotesByPropertyArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<FindNotesByPropertyOutput, HandlerFailure> {
        let norm = value_norm(args.value.as_ref(), "/value")?;
        let folder = folder_of(args.folder.as_deref())?;
        let paging = Paging::open(
            cx,
            FIND_NOTES_BY_PROPERTY,
            args,
            args.cursor.as_deref(),
            args.max_bytes,
        )?;
        let index = meta::fresh(cx)?;
        let key = args.key.trim();
        let budget = paging.budget();
        let mut readable = Readable::new(cx);
        let mut notes: Vec<PropertyNote> = Vec::new();
        let mut spent = 0usize;
        let mut after = paging.after.clone();
        let mut full = false;
        let mut more = false;
        'rows: loop {
            let rows = q::notes_with(
                index,
                key,
                norm.as_deref(),
                &folder,
                after.as_deref(),
                PAGE_NOTES + 1,
            )?;
            let exhausted = rows.len() <= PAGE_NOTES;
            for row in rows {
                after = Some(row.path.clone());
                if !readable.check(&row.path) {
                    continue;
                }
                if full {
                    more = true;
                    break 'rows;
                }
                let entry = PropertyNote {
                    value: json_of(&row.value),
                    path: row.path,
                };
                let cost = serde_json::to_vec(&entry)
                    .map(|bytes| tc_tools::wire_cost(&bytes) + 1)
                    .map_err(|_| ToolError::internal("encoding a page entry"))?;
                if spent + cost > budget && !notes.is_empty() {
                    more = true;
                    break 'rows;
                }
                spent += cost;
                notes.push(entry);
                full = notes.len() >= PAGE_NOTES;
            }
            if exhausted {
                break;
            }
        }
        let next_cursor = match notes.last() {
            Some(last) if more => Some(paging.next(cx, &last.path)?),
            _ => None,
        };
        Ok(FindNotesByPropertyOutput {
            vault: cx.vault().id().to_owned(),
            notes,
            next_cursor,
        })
    }
}
