//! The companion's Templater route (spec/bridge.md `bridge.route.templater`,
//! `companion.templater`): `POST /obsidian-tc/v1/templater/execute` with
//! `{template, target, timeoutMs}`, answered `{ok: true, path, created}` or
//! `{ok: false, code, message}`.

use serde_json::{Value, json};
use tc_tools::{ErrorCode, ToolError};

use super::{Bridge, COMPANION_PREFIX, answer_message, quote};
use crate::http::Request;
use crate::key::ApiKey;

/// What the companion reports of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplaterRun {
    /// The note Templater wrote.
    pub path: String,
    /// Whether the note was new.
    pub created: bool,
}

impl Bridge {
    // r[impl bridge.route.templater]
    /// Runs `template` (a vault path) into `target` (a note path) through Templater, once.
    pub fn execute_template(
        &self,
        key: &ApiKey,
        template: &str,
        target: &str,
    ) -> Result<TemplaterRun, ToolError> {
        // The companion gives up a little before this client does, so a slow template is
        // answered as operation_timeout by the companion rather than cut off here.
        let companion_timeout = (self.timeout.as_millis() as u64).saturating_mul(4) / 5;
        let body = serde_json::to_vec(&json!({
            "template": template,
            "target": target,
            "timeoutMs": companion_timeout.max(1),
        }))
        .map_err(|_| ToolError::internal("encoding the request"))?;
        let path = format!("{COMPANION_PREFIX}/templater/execute");
        let action = format!(
            "running the Templater template {} into {}",
            quote(template),
            quote(target)
        );
        let response = self.send(
            &Request {
                method: "POST",
                path: &path,
                bearer: Some(key.expose()),
                body: Some(body),
            },
            &action,
        )?;
        let answer: Option<Value> = serde_json::from_slice(&response.body).ok();
        let field = |name: &str| answer.as_ref().and_then(|a| a.get(name)).cloned();
        let ok = field("ok").and_then(|v| v.as_bool());
        let code = field("code")
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let said = answer_message(&response.body).unwrap_or_default();
        if ok == Some(false) && code == "operation_timeout" {
            return Err(self.may_have_run(
                "operation_timeout",
                &format!("{action}: the companion gave up waiting for Templater ({said})"),
            ));
        }
        if let Some(refusal) = self.common_refusal(&response, &action) {
            return Err(refusal);
        }
        match (response.status, ok) {
            (200..=299, Some(true)) => Ok(TemplaterRun {
                path: field("path")
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| target.to_owned()),
                created: field("created").and_then(|v| v.as_bool()).unwrap_or(false),
            }),
            (_, Some(false)) => Err(self.templater_refusal(&code, &said, template, &action)),
            (404, None) => Err(self.unreachable(
                "companion_missing",
                format!(
                    "the Local REST API at {} has no route {path}: the obsidian-tc companion \
                     plugin is not installed, not enabled, or older than its Templater route; \
                     nothing ran",
                    self.url()
                ),
            )),
            (status, _) => Err(self.unexpected(status, &response.body, &action)),
        }
    }

    fn templater_refusal(&self, code: &str, said: &str, template: &str, action: &str) -> ToolError {
        match code {
            "templater_unavailable" => self.unreachable(
                "templater_unavailable",
                format!("the Templater plugin is not enabled in Obsidian ({said}); nothing ran"),
            ),
            "template_not_found" => ToolError::new(
                ErrorCode::TemplateNotFound,
                format!(
                    "Obsidian has no template file {}; nothing ran",
                    quote(template)
                ),
            )
            .with_details(json!({"vault": self.vault, "template": template, "sent": true})),
            "invalid_request" => ToolError::new(
                ErrorCode::InvalidInput,
                format!("{action}: the companion refused the request ({said}); nothing ran"),
            )
            .with_details(json!({"reason": "invalid_request", "vault": self.vault})),
            // template_failed, or a code of a newer companion: the template was started.
            _ => ToolError::new(
                ErrorCode::InternalError,
                format!(
                    "{action}: Templater reported a failure ({said}); the template was started \
                     and its code may have done part of its work; the confirmation stays spent"
                ),
            )
            .with_details(json!({
                "reason": if code.is_empty() { "template_failed" } else { code },
                "vault": self.vault,
                "sent": true,
            })),
        }
    }
}
