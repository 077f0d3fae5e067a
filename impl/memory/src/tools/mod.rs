//! The six memory tools (spec/tools.md; spec/memory.md `memory.tools.*`):
//!
//! - [`upsert`] holds `upsert_entity`;
//! - [`relate`] holds `relate_entities` and `unrelate_entities`;
//! - [`read`] holds `get_entity` and `search_entities`;
//! - [`delete`] holds `delete_entity`, the one gated memory tool.
//!
//! What they share: the entity as results show it, the argument checks a flat schema
//! cannot state, and the list of notes a change wrote, bounded like every mutation result.

pub mod delete;
pub mod read;
pub mod relate;
pub mod upsert;

use schemars::JsonSchema;
use serde::Serialize;
use tc_tools::Precheck;
use tc_vault::acl::AclOp;
use tc_vault::path::VaultPath;

use crate::store::{Entity, Relation, Status, entity_id};
use crate::sync::{NotePlan, NoteWritten};

/// The most observations one entity holds.
pub const MAX_OBSERVATIONS: usize = 1000;
/// The most notes (or relations) a result lists one by one; its counts say how many in all.
pub const LISTED: usize = 100;

/// An entity as the tools return it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EntityView {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    /// In the order first recorded.
    pub observations: Vec<String>,
    pub status: Status,
    pub materialized: bool,
    /// The entity's note; null when it has none.
    pub note_path: Option<String>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

impl From<&Entity> for EntityView {
    fn from(entity: &Entity) -> Self {
        EntityView {
            id: entity_id(entity.id),
            kind: entity.kind.clone(),
            name: entity.name.clone(),
            observations: entity.observations.clone(),
            status: entity.status,
            materialized: entity.materialized,
            note_path: entity.note_path.clone(),
            created_ms: entity.created_ms,
            updated_ms: entity.updated_ms,
        }
    }
}

/// A relation as the tools return it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RelationView {
    pub source: String,
    pub target: String,
    pub relation: String,
}

impl From<&Relation> for RelationView {
    fn from(relation: &Relation) -> Self {
        RelationView {
            source: entity_id(relation.source),
            target: entity_id(relation.target),
            relation: relation.relation.clone(),
        }
    }
}

/// The notes a change wrote: the first [`LISTED`], and how many in all.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct NotesWritten {
    pub notes: Vec<NoteWritten>,
    pub count: usize,
}

impl NotesWritten {
    pub fn of(written: Vec<NoteWritten>) -> Self {
        let count = written.len();
        NotesWritten {
            notes: written.into_iter().take(LISTED).collect(),
            count,
        }
    }
}

/// One line of text that is not blank: no control character (a line break included: each
/// of these is one line of a note) and at least one character that is not white space.
pub const ONE_LINE: &str = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$";
/// [`ONE_LINE`] without `[`, `]` or `|`, which would break a note's wikilinks.
pub const RELATION_TYPE: &str = r"^[^\u0000-\u001F\u007F-\u009F\[\]|]*[^\s\u0000-\u001F\u007F-\u009F\[\]|][^\u0000-\u001F\u007F-\u009F\[\]|]*$";

/// The paths planned notes are written at, as the folder ACL is asked about them.
pub(crate) fn declared_writes(plans: &[NotePlan]) -> Vec<(AclOp, VaultPath)> {
    plans
        .iter()
        .map(|plan| (AclOp::Write, plan.path.clone()))
        .collect()
}

/// The paths a precheck declared writes of: the notes an apply may write. A path declared
/// only for reading (an existing entity's note an upsert shows) or for deleting is no
/// licence to write it, whatever the apply plans.
pub(crate) fn declared<P: ?Sized>(precheck: &Precheck<P>) -> Vec<VaultPath> {
    precheck
        .acl
        .iter()
        .filter(|(op, _)| *op == AclOp::Write)
        .map(|(_, path)| path.clone())
        .collect()
}
