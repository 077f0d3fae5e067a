//! The confirmation round trips of spec/trips.md as the wire sees them (spec/trips.md;
//! spec/state.md `state.seal.aad`, `state.invalid-fresh`).
//!
//! - Who gets a round trip: a client whose capabilities *for this request* include form
//!   elicitation, where a bare `elicitation: {}` counts as form (`trip.bare-capability`)
//!   and a url-only declaration does not (`trip.url-only`).
//! - Which era: a request on protocol 2026-07-28 or newer gets the client-driven
//!   `input_required` round trip; an older one gets the server-sent legacy shim (stdio,
//!   opt-in) or the plain `elicit_required` error.
//! - The prompt: an `elicitation/create` form whose schema has one required boolean
//!   `approve`, with a message that names the exact call.
//! - The answer: only `accept` with `approve: true` approves; `decline`, or `accept` with
//!   `approve: false`, declines; `cancel`, a malformed accept, or anything else is "not
//!   obtained".
//!
//! The requestState sent to the client is `<state_fp>~<sealed>`: the fingerprint the
//! confirmation covers, then the rs2 value tc-gate's sealer made for the exact binding,
//! whose associated data include that same fingerprint. The prefix is only a hint for which
//! binding to open with: a client that changes it makes the seal fail to open. It lets the
//! resubmission tell "the target changed since the prompt" (the seal opens for the prompted
//! fingerprint, which differs from the current one: `replay_drift`) from "this state is not
//! ours" (nothing opens: a fresh confirmation), without a lookup in cache.db.

use std::collections::BTreeMap;

use rmcp::model::{
    BooleanSchema, ClientCapabilities, ElicitRequest, ElicitRequestParams, ElicitationSchema,
    InputRequest, PrimitiveSchemaDefinition, ProtocolVersion,
};
use serde_json::Value;

/// The key of the confirmation in `inputRequests` / `inputResponses`.
pub const CONFIRM_KEY: &str = "confirm";
/// The one field of the confirmation form.
pub const APPROVE_FIELD: &str = "approve";

/// The protocol era of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28 or newer: client-driven `input_required`.
    Modern,
    /// 2025-11-25, 2025-06-18 and older.
    Legacy,
}

impl Era {
    /// The era of a request that names `version` (the session's, when it names none).
    pub fn of(version: Option<&ProtocolVersion>) -> Self {
        // ISO dates compare lexically as they do chronologically.
        match version {
            Some(v) if v.as_str() >= ProtocolVersion::V_2026_07_28.as_str() => Era::Modern,
            _ => Era::Legacy,
        }
    }
}

// r[impl trip.bare-capability]
// r[impl trip.url-only]
/// Whether these client capabilities include form-mode elicitation.
pub fn supports_form(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|caps| caps.elicitation.as_ref())
        .is_some_and(|elicitation| {
            elicitation.form.is_some() || (elicitation.form.is_none() && elicitation.url.is_none())
        })
}

/// What a human answered to the confirmation prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `accept` with `approve: true`.
    Approve,
    /// `decline`, or `accept` with `approve: false`.
    Decline,
    /// `cancel`, an `accept` without a boolean `approve`, or an answer that is no
    /// elicitation result at all.
    NotObtained,
}

// r[impl trip.accept-only]
// r[impl trip.malformed-answer]
/// Judges an elicitation result, given as its JSON (`{action, content?}`).
pub fn judge_answer(result: &Value) -> Answer {
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => match result
            .get("content")
            .and_then(|content| content.get(APPROVE_FIELD))
            .and_then(Value::as_bool)
        {
            Some(true) => Answer::Approve,
            Some(false) => Answer::Decline,
            None => Answer::NotObtained,
        },
        Some("decline") => Answer::Decline,
        _ => Answer::NotObtained,
    }
}

/// The prompt's message: what the human is asked to approve, exactly.
pub fn prompt_message(summary: &str) -> String {
    format!("An AI agent asks to run the call below. Approve this exact call, once?\n\n{summary}")
}

// r[impl trip.modern.shape]
/// The `elicitation/create` form of a confirmation: one required boolean `approve`.
pub fn confirm_params(message: String) -> ElicitRequestParams {
    let approve = BooleanSchema::new()
        .title("Approve")
        .description("true runs this exact call once; false refuses it");
    let mut properties = BTreeMap::new();
    properties.insert(
        APPROVE_FIELD.to_owned(),
        PrimitiveSchemaDefinition::Boolean(approve),
    );
    let mut schema = ElicitationSchema::new(properties);
    schema.required = Some(vec![APPROVE_FIELD.to_owned()]);
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: schema,
    }
}

/// The confirmation as an MRTR input request.
pub fn confirm_input_request(message: String) -> InputRequest {
    InputRequest::Elicitation(ElicitRequest::new(confirm_params(message)))
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ElicitationCapability, FormElicitationCapability, UrlElicitationCapability};

    use serde_json::json;

    use super::*;

    fn caps(elicitation: Option<ElicitationCapability>) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        caps.elicitation = elicitation;
        caps
    }

    // r[verify trip.bare-capability]
    // r[verify trip.url-only]
    // r[verify trip.no-capability]
    #[test]
    fn form_support_from_capabilities() {
        assert!(supports_form(Some(&caps(Some(
            ElicitationCapability::new()
        )))));
        assert!(supports_form(Some(&caps(Some(
            ElicitationCapability::new().with_form(FormElicitationCapability::new())
        )))));
        assert!(!supports_form(Some(&caps(Some(
            ElicitationCapability::new().with_url(UrlElicitationCapability::new())
        )))));
        assert!(!supports_form(Some(&caps(None))));
        assert!(!supports_form(None));
        let bare: ClientCapabilities = serde_json::from_value(json!({"elicitation": {}})).unwrap();
        assert!(supports_form(Some(&bare)));
    }

    // r[verify trip.accept-only]
    // r[verify trip.malformed-answer]
    #[test]
    fn only_accept_with_approve_true_approves() {
        let judge = |v: Value| judge_answer(&v);
        assert_eq!(
            judge(json!({"action": "accept", "content": {"approve": true}})),
            Answer::Approve
        );
        assert_eq!(
            judge(json!({"action": "accept", "content": {"approve": false}})),
            Answer::Decline
        );
        assert_eq!(judge(json!({"action": "decline"})), Answer::Decline);
        assert_eq!(judge(json!({"action": "cancel"})), Answer::NotObtained);
        assert_eq!(judge(json!({"action": "accept"})), Answer::NotObtained);
        assert_eq!(
            judge(json!({"action": "accept", "content": {"approve": "true"}})),
            Answer::NotObtained
        );
        assert_eq!(judge(json!({"approve": true})), Answer::NotObtained);
        assert_eq!(judge(json!(null)), Answer::NotObtained);
    }

    #[test]
    fn eras() {
        assert_eq!(Era::of(Some(&ProtocolVersion::V_2026_07_28)), Era::Modern);
        assert_eq!(Era::of(Some(&ProtocolVersion::V_2025_11_25)), Era::Legacy);
        assert_eq!(Era::of(Some(&ProtocolVersion::V_2025_06_18)), Era::Legacy);
        assert_eq!(Era::of(None), Era::Legacy);
    }

    #[test]
    fn the_form_asks_for_one_required_boolean() {
        let params = serde_json::to_value(confirm_params("m".into())).unwrap();
        let schema = &params["requestedSchema"];
        assert_eq!(schema["required"], json!(["approve"]));
        assert_eq!(schema["properties"]["approve"]["type"], "boolean");
        assert_eq!(schema["properties"].as_object().unwrap().len(), 1);
    }
}
