//! `upsert_entity` (spec/memory.md `memory.tools.upsert`, `memory.tools.upsert.observations`,
//! `memory.tools.upsert.materialize`).

use std::sync::Arc;

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError, ToolSpec,
};

use super::{EntityView, MAX_OBSERVATIONS, NotesWritten, ONE_LINE, declared, declared_writes};
use crate::Memory;
use crate::store::{self, Entity, Status};
use crate::sync::{Changed, Mode, db_error, transact};
use tc_vault::acl::AclOp;
use tc_vault::path::VaultPath;

/// `upsert_entity` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpsertEntityArgs {
    /// e.g. person, project; with the name, it identifies the entity.
    #[serde(rename = "type")]
    #[schemars(length(min = 1, max = 64), pattern(ONE_LINE))]
    pub kind: String,
    /// The entity's name.
    #[schemars(length(min = 1, max = 200), pattern(ONE_LINE))]
    pub name: String,
    /// Lines to add; those it has are skipped.
    #[serde(default)]
    #[schemars(
        length(max = 100),
        inner(length(min = 1, max = 1000), pattern(ONE_LINE))
    )]
    pub observations: Vec<String>,
    /// Keep it as a note in the memory folder (false never removes one).
    #[serde(default = "yes")]
    pub materialize: bool,
    /// Set the entity's status; unchanged when absent (a new entity is active).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

fn yes() -> bool {
    true
}

/// `upsert_entity`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UpsertEntityOutput {
    pub vault: String,
    pub entity: EntityView,
    /// Whether the entity did not exist before.
    pub created: bool,
    /// How many of the given observations were new.
    pub added_observations: usize,
    /// The notes this call wrote (the entity's own, and those that now link to it).
    pub notes_written: NotesWritten,
}

/// `upsert_entity`.
#[derive(Debug)]
pub struct UpsertEntity(pub Arc<Memory>);

/// What the change did, for the result.
struct Upserted {
    id: i64,
    created: bool,
    added: usize,
}

// r[impl memory.tools.upsert]
// r[impl memory.tools.upsert.observations]
// r[impl memory.tools.upsert.materialize]
fn change(
    cx: &ToolCx<'_>,
    conn: &Connection,
    args: &UpsertEntityArgs,
) -> Result<Changed<Upserted>, ToolError> {
    let vault = cx.vault().id();
    let now = cx.clock.now_ms();
    let existing = store::find(conn, vault, &args.kind, &args.name).map_err(db_error)?;
    let created = existing.is_none();
    let mut entity = existing.unwrap_or_else(|| Entity {
        id: 0,
        vault: vault.to_owned(),
        kind: args.kind.clone(),
        name: args.name.clone(),
        observations: Vec::new(),
        status: Status::Active,
        materialized: false,
        note_path: None,
        owned_hash: None,
        created_ms: now,
        updated_ms: now,
    });
    let mut added = 0;
    for observation in &args.observations {
        if !entity.observations.contains(observation) {
            entity.observations.push(observation.clone());
            added += 1;
        }
    }
    if entity.observations.len() > MAX_OBSERVATIONS {
        return Err(ToolError::validation(
            "/observations",
            format!(
                "an entity holds at most {MAX_OBSERVATIONS} observations; this one would hold {}",
                entity.observations.len()
            ),
        ));
    }
    let newly_materialized = args.materialize && !entity.materialized;
    entity.materialized |= args.materialize;
    if let Some(status) = args.status {
        entity.status = status;
    }
    entity.updated_ms = now;
    let id = if created {
        store::insert(conn, &entity).map_err(db_error)?.id
    } else {
        store::update(conn, &entity).map_err(db_error)?;
        entity.id
    };
    let mut render = vec![id];
    if newly_materialized {
        // Their notes named it as text; now they link to its note.
        for relation in store::relations_of(conn, id).map_err(db_error)? {
            render.push(relation.source);
            render.push(relation.target);
        }
    }
    Ok(Changed {
        value: Upserted { id, created, added },
        render,
    })
}

impl Tool for UpsertEntity {
    type Args = UpsertEntityArgs;
    type Output = UpsertEntityOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "upsert_entity",
            description: "Create an entity of the agent's memory (identified by type and name) or add observations to it; unless materialize is false it is kept as a note under the memory folder, where a person's own additions are kept.",
            annotations: Annotations::writes(false, true),
            scopes: &["write:memory"],
            changes_notes: true,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &UpsertEntityArgs) -> Result<Precheck, ToolError> {
        // r[impl memory.tools.upsert.acl]
        // The result shows every observation of an entity that exists, as get_entity does,
        // so the read access of its note applies as get_entity's does; judged before the
        // plan, whose refusals (a hand edit, the observation count) would tell of it too.
        let existing = {
            let conn = self.0.db().lock();
            store::find(&conn, cx.vault().id(), &args.kind, &args.name).map_err(db_error)?
        };
        let existing_note = match existing
            .as_ref()
            .and_then(|entity| entity.note_path.as_deref())
            .map(VaultPath::parse_note)
        {
            Some(Ok(path)) => {
                cx.require_read(&path)?;
                Some(path)
            }
            _ => None,
        };
        let planned = transact(&self.0, cx, Mode::Plan, |conn| change(cx, conn, args), None)
            .map_err(failure_error)?;
        let mut acl = declared_writes(&planned.plans);
        if let Some(path) = existing_note {
            acl.push((AclOp::Read, path));
        }
        Ok(Precheck {
            needs_confirmation: false,
            acl,
            plan: Default::default(),
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &UpsertEntityArgs,
        precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<UpsertEntityOutput, HandlerFailure> {
        let paths = declared(precheck);
        let done = transact(
            &self.0,
            cx,
            Mode::Apply { declared: &paths },
            |conn| change(cx, conn, args),
            None,
        )?;
        let entity = self.entity(cx, done.value.id)?;
        Ok(UpsertEntityOutput {
            vault: cx.vault().id().to_owned(),
            entity: EntityView::from(&entity),
            created: done.value.created,
            added_observations: done.value.added,
            notes_written: NotesWritten::of(done.written),
        })
    }
}

impl UpsertEntity {
    fn entity(&self, cx: &ToolCx<'_>, id: i64) -> Result<Entity, ToolError> {
        let conn = self.0.db().lock();
        store::get(&conn, cx.vault().id(), id)
            .map_err(db_error)?
            .ok_or_else(|| {
                ToolError::internal("reading the entity back").detail("applied", json!(true))
            })
    }
}

/// A planning failure as the precheck reports it (planning never writes, so a convention
/// refusal there is the plain preflight refusal).
pub(crate) fn failure_error(failure: HandlerFailure) -> ToolError {
    match failure {
        HandlerFailure::ConventionBlockedBeforeWrite(blocked) => ToolError::convention(&blocked),
        HandlerFailure::Failed(error) => error,
    }
}
