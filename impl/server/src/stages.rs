//! The stages of a call after its handler, and the upkeep beside them (spec/governor.md
//! `governor.cap`, `governor.counted`, `governor.shared`; spec/events.md `events.refused`;
//! spec/gate.md `gate.sweep.running`): the governor, the events stage, and the sweeper of
//! cache.db. Split from dispatch.rs, which keeps the pipeline's order and routes.

use std::sync::Arc;

use rmcp::model::CallToolResult;
use tc_gate::caller_hash;
use tc_gate::governor::BoundedError;
use tc_tools::{ErrorCode, ToolError, ToolOutput};

use crate::dispatch::CallKey;
use crate::server::{SWEEP_EVERY, ServerCore};

impl ServerCore {
    // r[impl gate.sweep.running]
    /// One sweep of cache.db, off the async workers: what has expired goes (raised requests,
    /// consumed states, tokens a TTL past their expiry, events past their retention).
    // r[impl versions.retention.sweep]
    /// Each vault's snapshots are pruned to `[versions]` in the same sweep.
    pub async fn sweep_once(&self) -> Result<tc_gate::SweepReport, ToolError> {
        let vaults = self.vault_ids.clone();
        let retention = self.retention;
        self.blocking("sweeping cache.db", move |pipeline| {
            for id in &vaults {
                let Some(binding) = pipeline.vault(id) else {
                    continue;
                };
                match binding.vault.prune_snapshots(&retention) {
                    Ok(0) => {}
                    Ok(pruned) => tracing::debug!(vault = %id, pruned, "pruned snapshots"),
                    Err(error) => tracing::warn!(vault = %id, %error, "could not prune snapshots"),
                }
            }
            pipeline
                .gate()
                .sweep()
                .map_err(|_| ToolError::internal("sweeping cache.db"))
        })
        .await
    }

    /// Sweeps cache.db now and then every [`SWEEP_EVERY`], for as long as the returned task
    /// runs (the serving functions abort it when they end).
    pub fn spawn_sweeper(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let core = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                match core.sweep_once().await {
                    Ok(report) => tracing::debug!(?report, "swept cache.db"),
                    Err(error) => tracing::warn!(%error, "could not sweep cache.db"),
                }
                tokio::time::sleep(SWEEP_EVERY).await;
            }
        })
    }

    /// Records in the audit log, off the async workers, what a failure leaves there: an
    /// overflow (`tc.governor.overflow`, counted) or a refused confirmation
    /// (`tc.elicit.refused`). Best effort: the client gets its answer either way.
    pub(crate) async fn record_failure(&self, key: CallKey, error: &ToolError) {
        let overflow = (error.code == ErrorCode::Overflow).then(|| {
            let details = error.details.as_ref();
            let field = |name: &str| details.and_then(|d| d[name].as_u64()).unwrap_or(0);
            (field("result_size"), field("limit"))
        });
        let reason = refusal_reason(error);
        if overflow.is_none() && reason.is_none() {
            return;
        }
        let recorded = self
            .blocking("recording the failure", move |pipeline| {
                let call = key.binding();
                let gate = pipeline.gate();
                let written = match (overflow, reason) {
                    (Some((size, limit)), _) => gate.record_overflow(&call, size, limit),
                    (None, Some(reason)) => gate.record_refusal(&call, reason),
                    (None, None) => Ok(()),
                };
                written.map_err(|_| ToolError::internal("recording the failure"))
            })
            .await;
        if recorded.is_err() {
            tracing::warn!(
                code = error.code.as_str(),
                "could not record the failure's event"
            );
        }
    }

    // r[impl governor.cap]
    // r[impl governor.counted]
    // r[impl governor.shared]
    /// The governor stage: the result object serialized once under the cap, or `overflow`.
    pub(crate) fn govern(&self, output: ToolOutput) -> Result<CallToolResult, ToolError> {
        let admitted = match output {
            ToolOutput::Value(value) => match self.governor.serialize_bounded(&value) {
                Ok(bytes) => Ok((value, bytes)),
                Err(BoundedError::Overflow(overflow)) => Err(overflow),
                Err(BoundedError::Serialize(_)) => {
                    return Err(ToolError::internal("serializing the result"));
                }
            },
            // A page was serialized once by its builder, under the cap: admitted by length.
            ToolOutput::Serialized(text) => match self.governor.admit_serialized(text.into_bytes())
            {
                Ok(bytes) => {
                    let value = serde_json::from_slice(&bytes)
                        .map_err(|_| ToolError::internal("reading back the page"))?;
                    Ok((value, bytes))
                }
                Err(overflow) => Err(overflow),
            },
            ToolOutput::Image {
                value,
                data,
                mime_type,
            } => {
                let bytes = serde_json::to_vec(&value)
                    .map_err(|_| ToolError::internal("serializing the result"))?;
                let extra = data.len() + mime_type.len() + tc_tools::IMAGE_BLOCK_BYTES;
                return match self.governor.admit_serialized_beside(bytes, extra) {
                    Ok(bytes) => {
                        let mut result = crate::results::success_from_bytes(value, bytes);
                        result
                            .content
                            .push(rmcp::model::ContentBlock::image(data, mime_type));
                        Ok(result)
                    }
                    Err(overflow) => Err(ToolError::new(ErrorCode::Overflow, overflow.to_string())
                        .with_details(overflow.details())),
                };
            }
        };
        match admitted {
            Ok((value, bytes)) => Ok(crate::results::success_from_bytes(value, bytes)),
            Err(overflow) => Err(ToolError::new(ErrorCode::Overflow, overflow.to_string())
                .with_details(overflow.details())),
        }
    }

    // r[impl dispatch.events]
    /// The events stage: the gate's durable events are already written by the stages that
    /// caused them; here its counters reach the metrics and the outcome reaches the log.
    // r[impl cli.serve.log-lines]
    // r[impl cli.serve.log-private]
    /// The call's one log line names the tool, the caller by its hash, the outcome code and
    /// how long the call took since `started`; never its arguments or its result.
    pub(crate) fn record_outcome(
        &self,
        tool: &str,
        caller: &str,
        outcome: &str,
        started: std::time::Instant,
    ) {
        self.metrics.absorb_gate(&self.gate().counters());
        self.metrics.confirmation_answer_refused(outcome);
        let duration_ms = started.elapsed().as_millis();
        tracing::info!(
            %tool,
            caller = %caller_hash(caller),
            %outcome,
            duration_ms,
            "tools/call"
        );
    }
}

// r[impl events.refused]
/// Why a confirmation was refused, if `error` is such a refusal: the client declined or
/// dismissed the prompt, the target drifted, or the token sent approved nothing.
fn refusal_reason(error: &ToolError) -> Option<&'static str> {
    match error.code {
        ErrorCode::ApprovalDeclined => Some("approval_declined"),
        ErrorCode::ApprovalNotObtained => Some("approval_not_obtained"),
        ErrorCode::ReplayDrift => Some("replay_drift"),
        ErrorCode::ElicitRequired => {
            match error.details.as_ref()?.get("token_rejected")?.as_str()? {
                "expired" => Some("token_expired"),
                "spent" => Some("token_spent"),
                _ => Some("token_invalid"),
            }
        }
        _ => None,
    }
}
