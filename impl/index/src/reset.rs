//! `reset_vault_cache` (spec/tools.md; spec/drift.md `drift.bind.reset-vault-cache`,
//! `drift.residual.reset-cache-log`; spec/index.md `index.reset`): always gated, destructive,
//! scope `admin:vault`.
//!
//! Its confirmation binds what it would clear: the vault's chunk count, its committed-capture
//! count and its embedding generation (with the count of stored embeddings), as
//! `fingerprint_custom` parts. One of them changing between the request and the redemption
//! is `replay_drift`. The event log and the confirmation flow's own rows live in the gate's
//! tables, which this tool neither binds nor touches: the flow writes them itself while the
//! call is confirmed. What `include` names is cleared in one transaction; the chunks are
//! then rebuilt from the files by the next reconciliation.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tc_gate::ConfirmationTargets;
use tc_tools::{
    Annotations, Gating, HandlerFailure, Precheck, Summary, TargetState, Tool, ToolCx, ToolError,
    ToolSpec,
};

use crate::index::VaultIndex;
use crate::search::index_of;

fn yes() -> bool {
    true
}

/// `reset_vault_cache` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetVaultCacheArgs {
    #[serde(default)]
    pub include: ResetInclude,
}

/// What to clear.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ResetInclude {
    /// The search chunks (rebuilt from the notes afterwards).
    #[serde(default = "yes")]
    pub chunks: bool,
    /// The stored embeddings.
    #[serde(default = "yes")]
    pub embeddings: bool,
    /// The captures already committed as notes (pending ones are kept).
    #[serde(default = "yes")]
    pub captures: bool,
}

impl Default for ResetInclude {
    fn default() -> Self {
        ResetInclude {
            chunks: true,
            embeddings: true,
            captures: true,
        }
    }
}

/// `reset_vault_cache`'s result: what was dropped.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ResetVaultCacheOutput {
    pub vault: String,
    pub chunks_dropped: u64,
    pub embeddings_dropped: u64,
    pub captures_dropped: u64,
    /// The embedding generation the dropped embeddings belonged to.
    pub embedding_generation: u64,
}

/// What the confirmation binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheCounts {
    pub chunks: u64,
    pub committed_captures: u64,
    pub embedding_generation: u64,
    pub embeddings: u64,
}

fn count(conn: &rusqlite::Connection, sql: &str, vault: &str) -> rusqlite::Result<u64> {
    conn.query_row(sql, [vault], |row| row.get::<_, i64>(0))
        .map(|n| n.max(0) as u64)
}

/// The counts `reset_vault_cache` binds, as they are now.
pub fn cache_counts(index: &VaultIndex) -> rusqlite::Result<CacheCounts> {
    let conn = index.conn();
    let vault = index.vault_id();
    Ok(CacheCounts {
        chunks: count(
            &conn,
            "SELECT COUNT(*) FROM index_chunks WHERE vault = ?1",
            vault,
        )?,
        committed_captures: count(
            &conn,
            "SELECT COUNT(*) FROM captures WHERE vault = ?1 AND status = 'committed'",
            vault,
        )?,
        embedding_generation: count(
            &conn,
            "SELECT COALESCE(MAX(embedding_generation), 0) FROM index_meta WHERE vault = ?1",
            vault,
        )?,
        embeddings: count(
            &conn,
            "SELECT COUNT(*) FROM index_embeddings WHERE vault = ?1",
            vault,
        )?,
    })
}

#[derive(Debug)]
pub struct ResetVaultCache;

fn counts_of<'a>(cx: &ToolCx<'a>) -> Result<(&'a VaultIndex, CacheCounts), ToolError> {
    let index = index_of(cx)?;
    index.wait_ready(cx)?;
    // The counts of the index as the files make it now (an edit made behind the server's
    // back changes the chunk count, and so the state).
    index
        .refresh()
        .map_err(|e| e.to_tool_error("reconciling the vault index"))?;
    let counts =
        cache_counts(index).map_err(|_| ToolError::internal("counting the vault cache"))?;
    Ok((index, counts))
}

fn counts_payload(state: &TargetState<Option<CacheCounts>>) -> Option<CacheCounts> {
    *state.seen
}

impl Tool for ResetVaultCache {
    type Args = ResetVaultCacheArgs;
    type Output = ResetVaultCacheOutput;
    type Plan = ();
    type Seen = Option<CacheCounts>;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "reset_vault_cache",
            description: "Clear the vault's search chunks (rebuilt from the notes afterwards), stored embeddings and committed captures, as include says (each true by default). Always needs the human's confirmation; the audit log is never cleared.",
            annotations: Annotations::writes(true, false),
            scopes: &["admin:vault"],
            changes_notes: false,
            gating: Gating::bound_to(ConfirmationTargets::Custom),
        }
    }

    fn precheck(
        &self,
        cx: &ToolCx<'_>,
        _args: &ResetVaultCacheArgs,
    ) -> Result<Precheck, ToolError> {
        index_of(cx)?;
        Ok(Precheck {
            needs_confirmation: true,
            acl: Vec::new(),
            plan: Default::default(),
        })
    }

    // r[impl drift.bind.reset-vault-cache]
    fn state(
        &self,
        cx: &ToolCx<'_>,
        _args: &ResetVaultCacheArgs,
        _precheck: &Precheck,
    ) -> Result<TargetState<Self::Seen>, ToolError> {
        let (_, counts) = counts_of(cx)?;
        // r[impl drift.residual.reset-cache-log]
        // Only what the tool clears is bound: the gate's own rows (events, raised requests,
        // tokens) change with the confirmation itself and are never part of the state.
        let parts = [
            counts.chunks.to_be_bytes(),
            counts.committed_captures.to_be_bytes(),
            counts.embedding_generation.to_be_bytes(),
            counts.embeddings.to_be_bytes(),
        ];
        let refs: Vec<&[u8]> = parts.iter().map(|p| p.as_slice()).collect();
        Ok(TargetState {
            fp: tc_gate::fingerprint_custom(&refs),
            observed: Vec::new(),
            seen: std::sync::Arc::new(Some(counts)),
        })
    }

    fn summary(
        &self,
        _cx: &ToolCx<'_>,
        args: &ResetVaultCacheArgs,
        _precheck: &Precheck,
        state: &TargetState<Self::Seen>,
    ) -> Summary {
        let mut summary = Summary::new("clear the vault's cache (the notes are not touched)");
        if let Some(counts) = counts_payload(state) {
            let include = args.include;
            if include.chunks {
                summary = summary.detail(format!(
                    "drops {} search chunk(s), rebuilt from the notes afterwards",
                    counts.chunks
                ));
            }
            if include.embeddings {
                summary = summary.detail(format!(
                    "drops {} embedding(s) of generation {}",
                    counts.embeddings, counts.embedding_generation
                ));
            }
            if include.captures {
                summary = summary.detail(format!(
                    "drops {} committed capture(s) (pending ones are kept)",
                    counts.committed_captures
                ));
            }
        }
        summary.detail("the audit log and the confirmations are kept")
    }

    fn run(
        &self,
        cx: &ToolCx<'_>,
        args: &ResetVaultCacheArgs,
        _precheck: &Precheck,
        state: &TargetState<Self::Seen>,
    ) -> Result<ResetVaultCacheOutput, HandlerFailure> {
        let index = index_of(cx)?;
        let vault = index.vault_id().to_owned();
        let include = args.include;
        let bound = counts_payload(state);
        let fail = |_| ToolError::internal("clearing the vault cache");
        let mut live = index.lock_live();
        let mut conn = index.conn();
        // IMMEDIATE: the counts are read again and then cleared; a deferred transaction
        // would fail at its first write if another connection wrote in between.
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(fail)?;
        // The counts are taken again inside the transaction: what is dropped is what was
        // approved, or nothing.
        let now = CacheCounts {
            chunks: count(
                &tx,
                "SELECT COUNT(*) FROM index_chunks WHERE vault = ?1",
                &vault,
            )
            .map_err(fail)?,
            committed_captures: count(
                &tx,
                "SELECT COUNT(*) FROM captures WHERE vault = ?1 AND status = 'committed'",
                &vault,
            )
            .map_err(fail)?,
            embedding_generation: count(
                &tx,
                "SELECT COALESCE(MAX(embedding_generation), 0) FROM index_meta WHERE vault = ?1",
                &vault,
            )
            .map_err(fail)?,
            embeddings: count(
                &tx,
                "SELECT COUNT(*) FROM index_embeddings WHERE vault = ?1",
                &vault,
            )
            .map_err(fail)?,
        };
        if let Some(bound) = bound
            && bound != now
        {
            return Err(ToolError::new(
                tc_tools::ErrorCode::ConcurrentModification,
                "the vault cache changed after it was approved; nothing was cleared",
            )
            .into());
        }
        let mut out = ResetVaultCacheOutput {
            vault: vault.clone(),
            chunks_dropped: 0,
            embeddings_dropped: 0,
            captures_dropped: 0,
            embedding_generation: now.embedding_generation,
        };
        if include.embeddings || include.chunks {
            // Embeddings belong to chunks: dropping the chunks drops theirs too.
            out.embeddings_dropped = tx
                .execute("DELETE FROM index_embeddings WHERE vault = ?1", [&vault])
                .map_err(fail)? as u64;
        }
        if include.chunks {
            tx.execute(
                "DELETE FROM index_fts WHERE rowid IN (SELECT id FROM index_chunks WHERE vault = ?1)",
                [&vault],
            )
            .map_err(fail)?;
            out.chunks_dropped = tx
                .execute("DELETE FROM index_chunks WHERE vault = ?1", [&vault])
                .map_err(fail)? as u64;
            crate::search::common::advance_epoch(&tx).map_err(fail)?;
            tx.execute("DELETE FROM index_links WHERE vault = ?1", [&vault])
                .map_err(fail)?;
            tx.execute("DELETE FROM index_tags WHERE vault = ?1", [&vault])
                .map_err(fail)?;
            tx.execute("DELETE FROM index_tag_notes WHERE vault = ?1", [&vault])
                .map_err(fail)?;
            tx.execute("DELETE FROM index_tag_counts WHERE vault = ?1", [&vault])
                .map_err(fail)?;
            // Property values and task lines are the notes' text as much as the chunks are.
            for table in [
                "index_properties",
                "index_property_values",
                "index_tasks",
                "index_task_tags",
            ] {
                tx.execute(&format!("DELETE FROM {table} WHERE vault = ?1"), [&vault])
                    .map_err(fail)?;
            }
            index
                .forget_stamps(&mut live, &tx)
                .map_err(|_| ToolError::internal("clearing the vault cache"))?;
        }
        if include.captures {
            out.captures_dropped = tx
                .execute(
                    "DELETE FROM captures WHERE vault = ?1 AND status = 'committed'",
                    [&vault],
                )
                .map_err(fail)? as u64;
        }
        tx.commit().map_err(fail)?;
        drop(conn);
        drop(live);
        // r[impl index.reset.gone]
        // What was cleared leaves no older copy in the write-ahead log.
        if !index.scrub_wal() {
            tracing::warn!("index: a reader kept the write-ahead log busy after a reset");
        }
        if include.chunks {
            index.common().written();
            index.wake_warmer();
        }
        // The vectors come back from the endpoint (the chunks from the files, at the next
        // answer, and their vectors after it).
        if include.embeddings || include.chunks {
            index.kick_embeddings();
        }
        Ok(out)
    }
}
