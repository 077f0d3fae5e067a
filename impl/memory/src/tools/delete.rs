//! `delete_entity`, the one gated memory tool (spec/memory.md `memory.tools.delete`,
//! `memory.tools.delete.relations`, `memory.tools.delete.snapshot`,
//! `memory.tools.delete.neighbours`; spec/drift.md `drift.bind.delete-entity`).
//!
//! Its confirmation is bound ([`ConfirmationTargets::Custom`]) to the entity row (type,
//! name, observations, status, note), its relations and its note's bytes: a hand edit of
//! the note, a relation added or removed, or an observation added between the request and
//! the redemption is `replay_drift`. The handler checks the same fingerprint again inside
//! its transaction, so a change that lands after the pipeline's drift check is refused
//! too (`concurrent_modification`) rather than deleted unseen.

use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tc_gate::{ConfirmationTargets, StateFp, fingerprint_custom};
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx,
    ToolError, ToolSpec,
};
use tc_vault::acl::AclOp;
use tc_vault::path::VaultPath;
use tc_vault::vault::Precondition;

use super::upsert::failure_error;
use super::{EntityView, LISTED, NotesWritten, RelationView, declared, declared_writes};
use crate::Memory;
use crate::store::{self, Entity, Relation, entity_id, parse_entity_id};
use crate::sync::{Changed, Mode, db_error, entity_not_found, transact};

/// `delete_entity` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteEntityArgs {
    /// The entity id.
    #[schemars(length(min = 1, max = 32))]
    pub entity_id: String,
    /// Remove the entity's relations with it; without it an entity with relations is
    /// refused with entity_has_relations.
    #[serde(default)]
    pub cascade: bool,
    /// Delete its note without keeping a snapshot restore_note can bring back.
    #[serde(default)]
    pub permanent: bool,
}

/// The entity's note, as the delete left it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DeletedNote {
    pub path: String,
    pub permanent: bool,
    pub content_hash: String,
    /// The snapshot restore_note brings it back from; null when permanent.
    pub snapshot_id: Option<String>,
}

/// `delete_entity`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DeleteEntityOutput {
    pub vault: String,
    /// The entity as it was.
    pub entity: EntityView,
    pub relations_removed: usize,
    /// Its note; null when it had none (or a person had already deleted it).
    pub note: Option<DeletedNote>,
    /// The notes of the entities it was related to, re-rendered without it.
    pub notes_written: NotesWritten,
}

/// `delete_entity`.
#[derive(Debug)]
pub struct DeleteEntity(pub Arc<Memory>);

/// The entity, its relations and its note as observed, with their fingerprint.
struct Observed {
    fp: StateFp,
    entity: Option<Entity>,
    relations: Vec<Relation>,
    /// The note's path and content hash (`None`: no file there).
    note: Option<(VaultPath, Option<String>)>,
}

// r[impl drift.bind.delete-entity]
/// What the confirmation is bound to: the entity row, its relations and its note's bytes.
fn observe(cx: &ToolCx<'_>, conn: &Connection, id_text: &str) -> Result<Observed, ToolError> {
    let vault = cx.vault().id();
    let entity = match parse_entity_id(id_text) {
        Some(id) => store::get(conn, vault, id).map_err(db_error)?,
        None => None,
    };
    let Some(entity) = entity else {
        return Ok(Observed {
            fp: fingerprint_custom(&[
                b"delete_entity",
                vault.as_bytes(),
                id_text.as_bytes(),
                b"absent",
            ]),
            entity: None,
            relations: Vec::new(),
            note: None,
        });
    };
    let relations = store::relations_of(conn, entity.id).map_err(db_error)?;
    let note = match entity.note_path.as_deref() {
        Some(path) => {
            let path = VaultPath::parse_note(path)?;
            let hash = cx.vault().read_if_exists(&path)?.map(|c| c.hash);
            Some((path, hash))
        }
        None => None,
    };
    let observations = serde_json::to_string(&entity.observations)
        .map_err(|_| ToolError::internal("encoding the observations"))?;
    let mut listed = String::new();
    for relation in &relations {
        listed.push_str(&format!(
            "{}\t{}\t{}\n",
            relation.source, relation.target, relation.relation
        ));
    }
    let (path, hash) = match &note {
        Some((path, hash)) => (path.as_str(), hash.as_deref().unwrap_or("absent")),
        None => ("", "no note"),
    };
    let fp = fingerprint_custom(&[
        b"delete_entity",
        vault.as_bytes(),
        entity_id(entity.id).as_bytes(),
        entity.kind.as_bytes(),
        entity.name.as_bytes(),
        observations.as_bytes(),
        entity.status.as_str().as_bytes(),
        if entity.materialized {
            b"materialized"
        } else {
            b"not materialized"
        },
        path.as_bytes(),
        listed.as_bytes(),
        hash.as_bytes(),
    ]);
    Ok(Observed {
        fp,
        entity: Some(entity),
        relations,
        note,
    })
}

// r[impl memory.tools.delete.relations]
fn has_relations(id: &str, relations: &[Relation]) -> ToolError {
    let listed: Vec<RelationView> = relations
        .iter()
        .take(LISTED)
        .map(RelationView::from)
        .collect();
    ToolError::new(
        ErrorCode::EntityHasRelations,
        format!(
            "entity {id} has {} relation(s); nothing was deleted",
            relations.len()
        ),
    )
    .with_details(json!({
        "entity_id": id,
        "relation_count": relations.len(),
        "relations": listed,
    }))
    .with_recovery(
        "remove the relations with unrelate_entities first, or send delete_entity again with \
         cascade: true to remove them with it",
        None,
    )
}

/// The entities whose notes name `id` (the other ends of its relations).
fn neighbours(id: i64, relations: &[Relation]) -> Vec<i64> {
    relations
        .iter()
        .flat_map(|r| [r.source, r.target])
        .filter(|other| *other != id)
        .collect()
}

/// What the precheck found, for the summary.
#[derive(Debug)]
pub struct Plan {
    entity: Entity,
    relations: Vec<Relation>,
    note: Option<VaultPath>,
    rerendered: Vec<String>,
}

impl Tool for DeleteEntity {
    type Args = DeleteEntityArgs;
    type Output = DeleteEntityOutput;
    type Plan = Plan;
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "delete_entity",
            description: "Delete an entity of the agent's memory. An entity with relations is refused with entity_has_relations unless cascade is true. Its note goes to a snapshot restore_note can bring back, unless permanent. The notes of the entities it was related to are re-rendered. Always needs the human's confirmation.",
            annotations: Annotations::writes(true, true),
            scopes: &["delete:memory"],
            changes_notes: true,
            gating: Gating::bound_to(ConfirmationTargets::Custom),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        args: &DeleteEntityArgs,
    ) -> Result<Precheck<Self::Plan>, ToolError> {
        let observed = {
            let conn = self.0.db().lock();
            observe(cx, &conn, &args.entity_id)?
        };
        let entity = observed
            .entity
            .ok_or_else(|| entity_not_found(&args.entity_id))?;
        // r[impl memory.tools.delete.acl]
        // The result and a relations refusal show the entity: judged before either.
        if let Some((path, _)) = &observed.note {
            cx.require_read(path)?;
        }
        if !observed.relations.is_empty() && !args.cascade {
            return Err(has_relations(&args.entity_id, &observed.relations));
        }
        let id = entity.id;
        let relations = observed.relations.clone();
        let planned = transact(
            &self.0,
            cx,
            Mode::Plan,
            |conn| {
                store::delete(conn, id).map_err(db_error)?;
                Ok(Changed {
                    value: (),
                    render: neighbours(id, &relations),
                })
            },
            None,
        )
        .map_err(failure_error)?;
        let mut acl = Vec::new();
        let mut note = None;
        if let Some((path, Some(_))) = &observed.note {
            acl.push((AclOp::Delete, path.clone()));
            acl.push((AclOp::Read, path.clone()));
            note = Some(path.clone());
        }
        acl.extend(declared_writes(&planned.plans));
        Ok(Precheck {
            needs_confirmation: true,
            acl,
            plan: Arc::new(Plan {
                entity,
                relations: observed.relations,
                note,
                rerendered: planned
                    .plans
                    .iter()
                    .map(|p| p.path.as_str().to_owned())
                    .collect(),
            }),
        })
    }

    fn state(
        &self,
        cx: &ToolCx<'_>,
        args: &DeleteEntityArgs,
        _precheck: &Precheck<Self::Plan>,
    ) -> Result<TargetState, ToolError> {
        let conn = self.0.db().lock();
        let observed = observe(cx, &conn, &args.entity_id)?;
        Ok(TargetState {
            fp: observed.fp,
            observed: observed.note.into_iter().collect(),
            seen: Default::default(),
        })
    }

    // r[impl tools.summary.delete]
    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &DeleteEntityArgs,
        precheck: &Precheck<Self::Plan>,
        _state: &TargetState,
    ) -> Summary {
        let plan = &precheck.plan;
        let entity = &plan.entity;
        let mut summary = Summary::new(format!(
            "delete entity {} ({} {:?}) with {} observation(s) and {} relation(s)",
            args.entity_id,
            entity.kind,
            entity.name,
            entity.observations.len(),
            plan.relations.len()
        ))
        .target(format!("entity {}", args.entity_id));
        if let Some(note) = &plan.note {
            let how = if args.permanent {
                "permanently: no snapshot is kept and it cannot be restored"
            } else {
                "to a snapshot: restore_note can bring it back"
            };
            summary = summary.target(format!("{} (deleted {how})", note.as_str()));
        }
        let relations = plan
            .relations
            .iter()
            .map(|r| {
                format!(
                    "relation {} {} {}",
                    entity_id(r.source),
                    r.relation,
                    entity_id(r.target)
                )
            })
            .collect();
        summary = summary.details_named(relations, |n| format!("[… {n} more relations]"));
        summary.details_named(
            plan.rerendered
                .iter()
                .map(|p| format!("re-render {p} without it"))
                .collect(),
            |n| format!("[… {n} more notes re-rendered]"),
        )
    }

    // r[impl memory.tools.delete.snapshot]
    // r[impl memory.tools.delete.neighbours]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &DeleteEntityArgs,
        precheck: &Precheck<Self::Plan>,
        state: &TargetState,
    ) -> Result<DeleteEntityOutput, HandlerFailure> {
        let paths = declared(precheck);
        let removed: Mutex<Option<DeletedNote>> = Mutex::new(None);
        let mut delete_note = |_conn: &Connection| -> Result<(), HandlerFailure> {
            let Some((path, Some(hash))) = state.observed.first() else {
                return Ok(());
            };
            let current = cx.vault().read_if_exists(path)?;
            if current.as_ref().map(|c| &c.hash) != Some(hash) {
                return Err(
                    ToolError::from(tc_vault::VaultError::ConcurrentModification {
                        path: path.as_str().to_owned(),
                        expected: hash.clone(),
                        actual: current.map_or_else(|| "absent".to_owned(), |c| c.hash),
                    })
                    .into(),
                );
            }
            let deleted = if args.permanent {
                cx.vault()
                    .delete(path, &Precondition::HashIs(hash.clone()))?;
                DeletedNote {
                    path: path.as_str().to_owned(),
                    permanent: true,
                    content_hash: hash.clone(),
                    snapshot_id: None,
                }
            } else {
                let info = cx
                    .vault()
                    .snapshot_and_delete(path, &Precondition::HashIs(hash.clone()))?;
                DeletedNote {
                    path: path.as_str().to_owned(),
                    permanent: false,
                    content_hash: info.content_hash,
                    snapshot_id: Some(info.id.as_str().to_owned()),
                }
            };
            *removed.lock().unwrap_or_else(|p| p.into_inner()) = Some(deleted);
            Ok(())
        };
        let done = transact(
            &self.0,
            cx,
            Mode::Apply { declared: &paths },
            |conn| {
                let observed = observe(cx, conn, &args.entity_id)?;
                if observed.fp != state.fp {
                    return Err(ToolError::new(
                        ErrorCode::ConcurrentModification,
                        format!(
                            "entity {} changed after its deletion was confirmed; nothing was deleted",
                            args.entity_id
                        ),
                    )
                    .with_details(json!({"entity_id": args.entity_id, "reason": "entity_changed"}))
                    .with_recovery(
                        "send the call again without a token to ask for a fresh confirmation",
                        None,
                    ));
                }
                let entity = observed
                    .entity
                    .ok_or_else(|| entity_not_found(&args.entity_id))?;
                store::delete(conn, entity.id).map_err(db_error)?;
                Ok(Changed {
                    render: neighbours(entity.id, &observed.relations),
                    value: (entity, observed.relations.len()),
                })
            },
            Some(&mut delete_note),
        )?;
        let (entity, relations_removed) = done.value;
        let note = removed.lock().unwrap_or_else(|p| p.into_inner()).take();
        // r[impl memory.delete.permanent-gone]
        if args.permanent {
            self.0.scrub_deleted(cx, note.as_ref())?;
        }
        Ok(DeleteEntityOutput {
            vault: cx.vault().id().to_owned(),
            entity: EntityView::from(&entity),
            relations_removed,
            note,
            notes_written: NotesWritten::of(done.written),
        })
    }
}
