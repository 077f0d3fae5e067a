//! Semantic and hybrid modes (spec/index.md `search.embeddings.*`): the query is embedded by
//! the configured endpoint, chunks are ranked by cosine similarity to it (one hit per note,
//! its nearest chunk), and hybrid fuses the text and semantic ranks of each note by
//! reciprocal-rank fusion. The same filters and the same ACL apply to every hit as in text
//! mode, before a hit is counted.

use std::collections::{HashMap, HashSet};

use tc_tools::{ErrorCode, ToolError};
use tc_vault::path::FolderPath;

use super::text::{self, Ranked, in_scope};
use crate::embed::{CALL_BATCHES, EmbedError, RunWait};
use crate::index::VaultIndex;

/// How long a search waits for an embedding run going on to end before it searches what is
/// embedded (spec `search.embeddings.store`).
const RUN_PATIENCE: std::time::Duration = std::time::Duration::from_millis(500);

/// Reciprocal-rank fusion's constant (the usual 60: a rank's weight falls off slowly, so
/// a note ranked well by one side and not at all by the other still places).
const RRF_K: f64 = 60.0;

/// `embeddings_unavailable` for `mode`, with why.
pub(crate) fn unavailable(mode: &str, error: Option<&EmbedError>) -> ToolError {
    match error {
        // r[impl search.embeddings.unavailable]
        None => ToolError::new(
            ErrorCode::EmbeddingsUnavailable,
            format!(
                "mode {mode} needs embeddings, and this server has no [search.embeddings] endpoint; use mode text"
            ),
        )
        .detail("reason", serde_json::json!("not_configured")),
        // r[impl search.embeddings.failed]
        Some(error) => ToolError::new(
            ErrorCode::EmbeddingsUnavailable,
            format!("mode {mode} needs the embeddings endpoint, which failed: {error}"),
        )
        .detail("reason", serde_json::json!("endpoint_failed"))
        .detail("error", serde_json::json!(error.to_string()))
        .with_recovery(
            "search with mode text, which needs no endpoint, or send the call again once the endpoint answers",
            None,
        ),
    }
}

/// The query's vector and the model it belongs to, after embedding what a call may embed
/// itself of the chunks not embedded yet.
pub(crate) fn query_vector(
    index: &VaultIndex,
    mode: &str,
    query: &str,
) -> Result<(String, Vec<f32>), ToolError> {
    let Some(embeddings) = index.embeddings() else {
        return Err(unavailable(mode, None));
    };
    let embedder = embeddings
        .embedder
        .as_ref()
        .map_err(|e| unavailable(mode, Some(e)))?;
    let vector = embedder
        .embed(&[query.to_owned()])
        .map_err(|e| unavailable(mode, Some(&e)))?
        .pop()
        .ok_or_else(|| unavailable(mode, None))?;
    if let Err(error) = index.embed_pending(Some(CALL_BATCHES), RunWait::Briefly(RUN_PATIENCE)) {
        // The query was embedded, so the endpoint answers; the chunks that failed are
        // left to the next run, and what is embedded is searched.
        tracing::warn!(vault = %index.vault_id(), "embedding changed chunks: {error}");
    }
    index.kick_embeddings();
    Ok((embedder.model().to_owned(), vector))
}

/// The notes nearest to `vector`, best first (score: the cosine similarity, higher is
/// better), each by its nearest chunk.
#[allow(clippy::too_many_arguments)]
pub(crate) fn semantic_ranked(
    index: &VaultIndex,
    model: &str,
    vector: &[f32],
    folder: &FolderPath,
    only: Option<&HashSet<String>>,
    keep: impl Fn(&str) -> bool,
    skip: usize,
    take: usize,
) -> rusqlite::Result<Vec<Ranked>> {
    let mut seen: HashMap<String, ()> = HashMap::new();
    let mut out = Vec::new();
    for near in index.nearest(model, vector)? {
        if seen.contains_key(&near.path) || !in_scope(&near.path, folder, only) {
            continue;
        }
        seen.insert(near.path.clone(), ());
        if !keep(&near.path) {
            continue;
        }
        out.push(Ranked {
            path: near.path,
            chunk: near.chunk,
            score: f64::from(near.similarity),
            text_match: false,
        });
        if out.len() >= skip.saturating_add(take) {
            break;
        }
    }
    Ok(out.into_iter().skip(skip).collect())
}

/// Text and semantic ranks fused (score: the sum of `1 / (60 + rank)` over both sides,
/// higher is better); a hit shows its best text chunk when it has one, with its matches.
#[allow(clippy::too_many_arguments)]
pub(crate) fn hybrid_ranked(
    index: &VaultIndex,
    fts: Option<&str>,
    model: &str,
    vector: &[f32],
    folder: &FolderPath,
    only: Option<&HashSet<String>>,
    keep: impl Fn(&str) -> bool,
    skip: usize,
    take: usize,
) -> rusqlite::Result<Vec<Ranked>> {
    let by_text = match fts {
        Some(fts) => text::ranked(index, fts, folder, only, &keep, 0, usize::MAX)?,
        None => Vec::new(),
    };
    let by_meaning = semantic_ranked(index, model, vector, folder, only, &keep, 0, usize::MAX)?;
    let mut fused: HashMap<String, (f64, Ranked)> = HashMap::new();
    for (rank, hit) in by_text.into_iter().enumerate() {
        let weight = 1.0 / (RRF_K + rank as f64 + 1.0);
        fused.insert(hit.path.clone(), (weight, hit));
    }
    for (rank, hit) in by_meaning.into_iter().enumerate() {
        let weight = 1.0 / (RRF_K + rank as f64 + 1.0);
        fused
            .entry(hit.path.clone())
            .and_modify(|(score, _)| *score += weight)
            .or_insert((weight, hit));
    }
    let mut all: Vec<Ranked> = fused
        .into_values()
        .map(|(score, hit)| Ranked { score, ..hit })
        .collect();
    all.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.path.cmp(&b.path))
    });
    Ok(all.into_iter().skip(skip).take(take).collect())
}
