//! `relate_entities` and `unrelate_entities` (spec/memory.md `memory.tools.relate`,
//! `memory.tools.unrelate`, `memory.sync.both-ends`).

use std::sync::Arc;

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError, ToolSpec,
};

use super::upsert::failure_error;
use super::{NotesWritten, RELATION_TYPE, RelationView, declared, declared_writes};
use crate::Memory;
use crate::store::{self, Relation, parse_entity_id};
use crate::sync::{Changed, Mode, db_error, entity_not_found, transact};

/// `relate_entities` and `unrelate_entities` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RelationArgs {
    /// The entity id the relation goes from.
    #[schemars(length(min = 1, max = 32))]
    pub source: String,
    /// The entity id the relation goes to.
    #[schemars(length(min = 1, max = 32))]
    pub target: String,
    /// The relation's type, in active voice (e.g. works_at, knows).
    #[schemars(length(min = 1, max = 64), pattern(RELATION_TYPE))]
    pub relation: String,
}

/// The result of both tools.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RelationOutput {
    pub vault: String,
    pub relation: RelationView,
    /// Whether the call changed the graph (false: the relation was already there, or, for
    /// unrelate, was not).
    pub changed: bool,
    /// The notes re-rendered: both ends', when they are materialized.
    pub notes_written: NotesWritten,
}

/// Resolves both ends in this vault (`entity_not_found` naming the one missing).
fn ends(cx: &ToolCx<'_>, conn: &Connection, args: &RelationArgs) -> Result<Relation, ToolError> {
    let mut ids = [0i64; 2];
    for (slot, text) in ids.iter_mut().zip([&args.source, &args.target]) {
        let id = parse_entity_id(text).ok_or_else(|| entity_not_found(text))?;
        store::get(conn, cx.vault().id(), id)
            .map_err(db_error)?
            .ok_or_else(|| entity_not_found(text))?;
        *slot = id;
    }
    Ok(Relation {
        source: ids[0],
        target: ids[1],
        relation: args.relation.clone(),
    })
}

// r[impl memory.tools.relate]
// r[impl memory.tools.unrelate]
// r[impl memory.sync.both-ends]
fn change(
    cx: &ToolCx<'_>,
    conn: &Connection,
    args: &RelationArgs,
    add: bool,
) -> Result<Changed<(Relation, bool)>, ToolError> {
    let relation = ends(cx, conn, args)?;
    let changed = if add {
        store::relate(conn, &relation, cx.clock.now_ms())
    } else {
        store::unrelate(conn, &relation)
    }
    .map_err(db_error)?;
    let render = if changed {
        vec![relation.source, relation.target]
    } else {
        Vec::new()
    };
    Ok(Changed {
        value: (relation, changed),
        render,
    })
}

fn precheck(
    memory: &Memory,
    cx: &ToolCx<'_>,
    args: &RelationArgs,
    add: bool,
) -> Result<Precheck, ToolError> {
    let planned = transact(
        memory,
        cx,
        Mode::Plan,
        |conn| change(cx, conn, args, add),
        None,
    )
    .map_err(failure_error)?;
    Ok(Precheck {
        needs_confirmation: false,
        acl: declared_writes(&planned.plans),
        plan: Default::default(),
    })
}

fn run(
    memory: &Memory,
    cx: &ToolCx<'_>,
    args: &RelationArgs,
    precheck: &Precheck,
    add: bool,
) -> Result<RelationOutput, HandlerFailure> {
    let paths = declared(precheck);
    let done = transact(
        memory,
        cx,
        Mode::Apply { declared: &paths },
        |conn| change(cx, conn, args, add),
        None,
    )?;
    let (relation, changed) = done.value;
    Ok(RelationOutput {
        vault: cx.vault().id().to_owned(),
        relation: RelationView::from(&relation),
        changed,
        notes_written: NotesWritten::of(done.written),
    })
}

/// `relate_entities`.
#[derive(Debug)]
pub struct RelateEntities(pub Arc<Memory>);

impl Tool for RelateEntities {
    type Args = RelationArgs;
    type Output = RelationOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "relate_entities",
            description: "Add a typed relation from one entity to another (entity ids from upsert_entity or search_entities). Adding one that exists changes nothing. The notes of both ends are re-rendered.",
            annotations: Annotations::writes(false, true),
            scopes: &["write:memory"],
            changes_notes: true,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &RelationArgs) -> Result<Precheck, ToolError> {
        precheck(&self.0, cx, args, true)
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &RelationArgs,
        precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<RelationOutput, HandlerFailure> {
        run(&self.0, cx, args, precheck, true)
    }
}

/// `unrelate_entities`.
#[derive(Debug)]
pub struct UnrelateEntities(pub Arc<Memory>);

impl Tool for UnrelateEntities {
    type Args = RelationArgs;
    type Output = RelationOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "unrelate_entities",
            description: "Remove a relation between two entities. Removing one that is not there changes nothing. The notes of both ends are re-rendered.",
            annotations: Annotations::writes(true, true),
            scopes: &["write:memory"],
            changes_notes: true,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &RelationArgs) -> Result<Precheck, ToolError> {
        precheck(&self.0, cx, args, false)
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &RelationArgs,
        precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<RelationOutput, HandlerFailure> {
        run(&self.0, cx, args, precheck, false)
    }
}
