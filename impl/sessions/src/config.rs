//! `[sessions]` of the configuration (spec/config.md; spec/sessions.md
//! `sessions.config.trace-content`).

use serde::Deserialize;

/// `[sessions]`: what a session's trace holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionsConfig {
    /// `traceContent` (default false): also record each call's arguments, secret-scanned
    /// and capped, so that `session_rerun` can run the call again. Without it a trace holds
    /// the call's shape only (tool, args_hash, outcome, timing, size).
    #[serde(default)]
    pub trace_content: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_unknown_keys() {
        let parsed: SessionsConfig = serde_json::from_str("{}").unwrap();
        assert!(!parsed.trace_content);
        let parsed: SessionsConfig = serde_json::from_str(r#"{"traceContent": true}"#).unwrap();
        assert!(parsed.trace_content);
        let error = serde_json::from_str::<SessionsConfig>(r#"{"tracecontent": true}"#)
            .unwrap_err()
            .to_string();
        assert!(error.contains("tracecontent"), "{error}");
    }
}
