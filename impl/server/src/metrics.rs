//! Prometheus metrics for `GET /metrics` (spec/events.md `metrics.truncations`,
//! `metrics.confirmations`, `metrics.no-secrets`; seed "The response governor" and
//! "Observability").
//!
//! The counters are the spec's names: `obsidian_tc_governor_truncations_total`,
//! `obsidian_tc_elicit_requested_total`, `obsidian_tc_elicit_consumed_total`,
//! `obsidian_tc_elicit_released_total` and `obsidian_tc_elicit_refused_total{reason}`.
//! Labels carry only a fixed refusal reason, never a token, caller or path.
//!
//! tc-gate keeps its own process-local atomic counters; [`Metrics::absorb_gate`] folds a
//! snapshot of them in (adding what grew since the last snapshot), so the server can feed
//! this registry either event by event or by sampling the gate.

use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use tc_gate::{CountersSnapshot, RefusalReason};

/// The content type of [`Metrics::encode`]'s output: the OpenMetrics text format that
/// `prometheus-client` writes (Prometheus scrapes it natively).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusedLabels {
    reason: String,
}

/// The refusal reasons decided by the client's answer rather than by the gate.
const ANSWER_REFUSALS: [&str; 2] = ["approval_declined", "approval_not_obtained"];

/// The server's metrics registry.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    truncations: Counter,
    requested: Counter,
    consumed: Counter,
    released: Counter,
    refused: Family<RefusedLabels, Counter>,
    last_gate: Mutex<Option<CountersSnapshot>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("obsidian_tc");
        let truncations = Counter::default();
        let requested = Counter::default();
        let consumed = Counter::default();
        let released = Counter::default();
        let refused = Family::<RefusedLabels, Counter>::default();
        registry.register(
            "governor_truncations",
            "Tool responses refused by the governor for exceeding governor.maxResponseBytes",
            truncations.clone(),
        );
        registry.register(
            "elicit_requested",
            "Confirmations requested (elicit_required or a round trip)",
            requested.clone(),
        );
        registry.register(
            "elicit_consumed",
            "Handler runs let through by an approval (tc.elicit.consumed)",
            consumed.clone(),
        );
        registry.register(
            "elicit_released",
            "Spent confirmation tokens given back because the call had no effect",
            released.clone(),
        );
        registry.register(
            "elicit_refused",
            "Approvals refused, by reason",
            refused.clone(),
        );
        // Every known reason is present from the start, so a dashboard sees a zero rather
        // than a missing series.
        let reasons = RefusalReason::ALL.map(RefusalReason::as_str);
        for reason in reasons.iter().chain(ANSWER_REFUSALS.iter()) {
            let _ = refused.get_or_create(&RefusedLabels {
                reason: (*reason).to_owned(),
            });
        }
        Metrics {
            registry,
            truncations,
            requested,
            consumed,
            released,
            refused,
            last_gate: Mutex::new(None),
        }
    }

    /// A tool response refused by the governor.
    pub fn governor_truncation(&self) {
        self.truncations.inc();
    }

    /// A confirmation requested.
    pub fn confirmation_requested(&self) {
        self.requested.inc();
    }

    /// A handler run let through by an approval.
    pub fn confirmation_consumed(&self) {
        self.consumed.inc();
    }

    /// A spent token given back.
    pub fn confirmation_released(&self) {
        self.released.inc();
    }

    /// An approval refused for `reason`.
    pub fn confirmation_refused(&self, reason: RefusalReason) {
        self.refused
            .get_or_create(&RefusedLabels {
                reason: reason.as_str().to_owned(),
            })
            .inc();
    }

    /// A confirmation the human (or the client for them) did not give: `approval_declined`
    /// or `approval_not_obtained`. These never reach the gate, so the gate's counters cannot
    /// carry them; any other code is not an answer refusal and is ignored.
    pub fn confirmation_answer_refused(&self, code: &str) {
        if let Some(reason) = ANSWER_REFUSALS.iter().find(|reason| **reason == code) {
            self.refused
                .get_or_create(&RefusedLabels {
                    reason: (*reason).to_owned(),
                })
                .inc();
        }
    }

    /// Adds what the gate's counters gained since the previous call. A counter that went
    /// down (a new gate behind the same registry) counts from zero again.
    pub fn absorb_gate(&self, now: &CountersSnapshot) {
        let mut last = self
            .last_gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let gained = |current: u64, before: Option<u64>| match before {
            Some(before) if current >= before => current - before,
            _ => current,
        };
        let prev = last.as_ref();
        self.truncations
            .inc_by(gained(now.overflows, prev.map(|p| p.overflows)));
        self.requested
            .inc_by(gained(now.requested, prev.map(|p| p.requested)));
        self.consumed
            .inc_by(gained(now.consumed, prev.map(|p| p.consumed)));
        self.released
            .inc_by(gained(now.released, prev.map(|p| p.released)));
        for (reason, count) in &now.refused {
            let delta = gained(*count, prev.map(|p| p.refused_for(*reason)));
            if delta > 0 {
                self.refused
                    .get_or_create(&RefusedLabels {
                        reason: reason.as_str().to_owned(),
                    })
                    .inc_by(delta);
            }
        }
        *last = Some(now.clone());
    }

    /// The registry in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail; an Err here could only come from a metric's
        // own encoder, and a partial page is still better than none for a scrape.
        if let Err(error) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::warn!(%error, "encoding metrics failed");
        }
        out
    }
}
