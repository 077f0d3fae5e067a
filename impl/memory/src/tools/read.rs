//! `get_entity` and `search_entities` (spec/memory.md `memory.tools.get`,
//! `memory.search.paged`, `memory.search.cursor`, `memory.search.acl`).
//!
//! `search_entities` pages like `read_notes`: each page is sized under the governor's cap
//! (every hit is measured as it goes on the wire, with room kept for the envelope and the
//! cursor), and `next_cursor` is signed with the server's cursor key, bound to the caller,
//! the tool and the request without `cursor`, and expires after ten minutes. A position
//! is the number of hits of the request's order already walked past.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tc_gate::cursor::{CursorClaims, request_digest};
use tc_tools::{
    Annotations, ErrorCode, Gating, HandlerFailure, Precheck, TargetState, Tool, ToolCx, ToolError,
    ToolSpec, wire_cost,
};
use tc_vault::acl::AclOp;
use tc_vault::path::VaultPath;

use super::{EntityView, RelationView};
use crate::Memory;
use crate::store::{self, Status, entity_id, parse_entity_id};
use crate::sync::{db_error, entity_not_found};

/// The most relations `get_entity` lists (its count says how many in all).
pub const LISTED_RELATIONS: usize = 500;

// ---------------------------------------------------------------- get_entity

/// `get_entity` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetEntityArgs {
    /// The entity id (from upsert_entity or search_entities).
    #[schemars(length(min = 1, max = 32))]
    pub entity_id: String,
}

/// `get_entity`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GetEntityOutput {
    pub vault: String,
    pub entity: EntityView,
    /// Its relations, both directions, sorted (source, target, relation); at most 500.
    pub relations: Vec<RelationView>,
    pub relation_count: u64,
}

/// `get_entity`.
#[derive(Debug)]
pub struct GetEntity(pub Arc<Memory>);

// r[impl memory.tools.get]
impl Tool for GetEntity {
    type Args = GetEntityArgs;
    type Output = GetEntityOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "get_entity",
            description: "Read one entity of the agent's memory: its type, name, observations, status, note and relations.",
            annotations: Annotations::READS,
            scopes: &["read:memory"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(&self, cx: &ToolCx<'_>, args: &GetEntityArgs) -> Result<Precheck, ToolError> {
        let id =
            parse_entity_id(&args.entity_id).ok_or_else(|| entity_not_found(&args.entity_id))?;
        let conn = self.0.db().lock();
        let entity = store::get(&conn, cx.vault().id(), id)
            .map_err(db_error)?
            .ok_or_else(|| entity_not_found(&args.entity_id))?;
        // The folder ACL of its note applies to reading the entity.
        let acl = match entity.note_path.as_deref().map(VaultPath::parse_note) {
            Some(Ok(path)) => vec![(AclOp::Read, path)],
            _ => Vec::new(),
        };
        Ok(Precheck {
            needs_confirmation: false,
            acl,
            plan: Default::default(),
        })
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &GetEntityArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<GetEntityOutput, HandlerFailure> {
        let id =
            parse_entity_id(&args.entity_id).ok_or_else(|| entity_not_found(&args.entity_id))?;
        let conn = self.0.db().lock();
        let entity = store::get(&conn, cx.vault().id(), id)
            .map_err(db_error)?
            .ok_or_else(|| entity_not_found(&args.entity_id))?;
        let relations = store::relations_of(&conn, id).map_err(db_error)?;
        Ok(GetEntityOutput {
            vault: cx.vault().id().to_owned(),
            entity: EntityView::from(&entity),
            relation_count: relations.len() as u64,
            relations: relations
                .iter()
                .take(LISTED_RELATIONS)
                .map(RelationView::from)
                .collect(),
        })
    }
}

// ---------------------------------------------------------------- search_entities

/// The tool name, as bound into its cursors.
pub const SEARCH_ENTITIES: &str = "search_entities";

/// `search_entities` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchEntitiesArgs {
    /// Words to find in entity names, types and observations (each word also matches as a
    /// prefix; all must match). Empty: every entity, by type and name.
    #[serde(default)]
    #[schemars(length(max = 1000))]
    pub query: String,
    /// Only entities of this type.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub kind: Option<String>,
    /// The most entities a page holds (a page may hold fewer, to stay under the response cap).
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 100))]
    pub limit: u32,
    /// The previous page's next_cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024))]
    pub max_bytes: Option<u64>,
}

fn default_limit() -> u32 {
    20
}

/// One entity a search found.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchHit {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub status: Status,
    pub note_path: Option<String>,
    pub observation_count: usize,
    /// An excerpt of the matching observation text; empty when the match was elsewhere.
    pub snippet: String,
}

/// A `search_entities` page.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchEntitiesOutput {
    pub vault: String,
    pub entities: Vec<SearchHit>,
    /// Cursor for the next page; null at the end.
    pub next_cursor: Option<String>,
}

/// `search_entities`.
#[derive(Debug)]
pub struct SearchEntities(pub Arc<Memory>);

/// What a page keeps free of hits: its envelope and the longest cursor.
const PAGE_RESERVE: usize = 1024;

fn cursor_error(error: tc_gate::cursor::CursorError) -> ToolError {
    ToolError::new(ErrorCode::InvalidInput, error.to_string())
        .with_details(json!({"reason": error.reason()}))
}

impl Tool for SearchEntities {
    type Args = SearchEntitiesArgs;
    type Output = SearchEntitiesOutput;
    type Plan = ();
    type Seen = ();

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SEARCH_ENTITIES,
            description: "Search the agent's memory by entity name, type and observation text, best match first; pages via cursor = next_cursor.",
            annotations: Annotations::READS,
            scopes: &["read:memory"],
            changes_notes: false,
            gating: Gating::NEVER,
        }
    }

    fn precheck(
        &self,
        _cx: &ToolCx<'_>,
        _args: &SearchEntitiesArgs,
    ) -> Result<Precheck, ToolError> {
        Ok(Precheck::free())
    }

    // r[impl memory.search.paged]
    // r[impl memory.search.cursor]
    // r[impl memory.search.acl]
    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &SearchEntitiesArgs,
        _precheck: &Precheck,
        _state: &TargetState,
    ) -> Result<SearchEntitiesOutput, HandlerFailure> {
        let vault = cx.vault().id();
        let now = cx.clock.now_ms();
        let mut request =
            serde_json::to_value(args).map_err(|_| ToolError::internal("encoding the request"))?;
        request["vault"] = json!(vault);
        // r[impl paging.max-bytes]
        // max_bytes is not part of the request a cursor is bound to: a walk may change it.
        if let Some(request) = request.as_object_mut() {
            request.remove("max_bytes");
        }
        let digest = request_digest(&request);
        let start: u64 = match &args.cursor {
            Some(token) => cx
                .paging
                .codec
                .open(token, &cx.caller.id, SEARCH_ENTITIES, &digest, now)
                .map_err(cursor_error)?
                .position
                .parse()
                .map_err(|_| cursor_error(tc_gate::cursor::CursorError::Invalid))?,
            None => 0,
        };
        let limit = u64::from(args.limit);
        let hits = {
            let conn = self.0.db().lock();
            store::search(
                &conn,
                vault,
                &args.query,
                args.kind.as_deref(),
                start,
                limit + 1,
            )
            .map_err(db_error)?
        };
        let budget = cx
            .paging
            .limits
            .lowered_to(args.max_bytes)
            .page_budget()
            .saturating_sub(PAGE_RESERVE);
        let mut used = 0usize;
        let mut entities = Vec::new();
        let mut walked = 0u64;
        // The row past `limit` only tells whether there is more.
        for hit in hits.iter().take(args.limit as usize) {
            let readable = match hit.entity.note_path.as_deref().map(VaultPath::parse_note) {
                Some(Ok(path)) => {
                    cx.binding
                        .acl
                        .can_read_at(cx.vault().root(), &path, &cx.caller.scopes)
                }
                Some(Err(_)) => false,
                None => true,
            };
            if readable {
                let shown = SearchHit {
                    id: entity_id(hit.entity.id),
                    kind: hit.entity.kind.clone(),
                    name: hit.entity.name.clone(),
                    status: hit.entity.status,
                    note_path: hit.entity.note_path.clone(),
                    observation_count: hit.entity.observations.len(),
                    snippet: hit.snippet.clone(),
                };
                let cost = serde_json::to_vec(&shown)
                    .map(|bytes| wire_cost(&bytes) + 1)
                    .map_err(|_| ToolError::internal("encoding a search hit"))?;
                if used + cost > budget && !entities.is_empty() {
                    break;
                }
                used += cost;
                entities.push(shown);
            }
            walked += 1;
        }
        let more = (walked as usize) < hits.len();
        let next_cursor = if more {
            let position = (start + walked).to_string();
            Some(
                cx.paging
                    .codec
                    .seal(
                        &CursorClaims {
                            caller: &cx.caller.id,
                            tool: SEARCH_ENTITIES,
                            request_digest: &digest,
                            position: &position,
                            page: 0,
                        },
                        now,
                    )
                    .map_err(|_| ToolError::internal("making the next cursor"))?,
            )
        } else {
            None
        };
        Ok(SearchEntitiesOutput {
            vault: vault.to_owned(),
            entities,
            next_cursor,
        })
    }
}
