//! The failure envelope of every tool call (spec/results.md: `results.error-blocks`,
//! `results.codes`, `results.retryable`, `results.recovery`, `results.no-secrets`, and the
//! per-code details clauses; spec/results.md).
//!
//! A [`ToolError`] is what the server turns into `isError: true` with two text blocks:
//! `Error [<code>]: <message>` and the JSON envelope `{code, message, retryable, details?,
//! recovery?}` (no `structuredContent`: clients check it against the success schema). Its code is one of the closed set of
//! [`ErrorCode`]s, and `retryable` is derived from the code, never set by hand, so the rule
//! "true only for replay_drift and concurrent_modification" cannot be broken by one site.

use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value, json};
use tc_gate::RaisedRequest;

use tc_vault::acl::AclDenied;
use tc_vault::conventions::ConventionBlocked;
use tc_vault::error::VaultError;

/// The closed set of failure codes (spec `results.codes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    ElicitRequired,
    ApprovalDeclined,
    ApprovalNotObtained,
    ReplayDrift,
    ConventionBlocked,
    AclDenied,
    PathInvalid,
    NoteNotFound,
    NoteExists,
    ConcurrentModification,
    ValidationError,
    Overflow,
    InvalidInput,
    InternalError,
    // The subsystems' codes (spec/results.md).
    EntityNotFound,
    EntityHasRelations,
    CaptureNotFound,
    SessionNotFound,
    CapabilityNotFound,
    GitNoRepo,
    GitHeadMoved,
    OcrUnavailable,
    ExecuteCommandDisabled,
    CommandNotAllowlisted,
    PluginUnreachable,
    OperationTimeout,
    EmbeddingsUnavailable,
    GitLocked,
    // The daily-driver families' codes.
    AnchorNotFound,
    AnchorAmbiguous,
    AttachmentNotFound,
    SnapshotNotFound,
    TemplateNotFound,
    PeriodicNotConfigured,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ElicitRequired => "elicit_required",
            ErrorCode::ApprovalDeclined => "approval_declined",
            ErrorCode::ApprovalNotObtained => "approval_not_obtained",
            ErrorCode::ReplayDrift => "replay_drift",
            ErrorCode::ConventionBlocked => "convention_blocked",
            ErrorCode::AclDenied => "acl_denied",
            ErrorCode::PathInvalid => "path_invalid",
            ErrorCode::NoteNotFound => "note_not_found",
            ErrorCode::NoteExists => "note_exists",
            ErrorCode::ConcurrentModification => "concurrent_modification",
            ErrorCode::ValidationError => "validation_error",
            ErrorCode::Overflow => "overflow",
            ErrorCode::InvalidInput => "invalid_input",
            ErrorCode::InternalError => "internal_error",
            ErrorCode::EntityNotFound => "entity_not_found",
            ErrorCode::EntityHasRelations => "entity_has_relations",
            ErrorCode::CaptureNotFound => "capture_not_found",
            ErrorCode::SessionNotFound => "session_not_found",
            ErrorCode::CapabilityNotFound => "capability_not_found",
            ErrorCode::GitNoRepo => "git_no_repo",
            ErrorCode::GitHeadMoved => "git_head_moved",
            ErrorCode::OcrUnavailable => "ocr_unavailable",
            ErrorCode::ExecuteCommandDisabled => "execute_command_disabled",
            ErrorCode::CommandNotAllowlisted => "command_not_allowlisted",
            ErrorCode::PluginUnreachable => "plugin_unreachable",
            ErrorCode::OperationTimeout => "operation_timeout",
            ErrorCode::EmbeddingsUnavailable => "embeddings_unavailable",
            ErrorCode::GitLocked => "git_locked",
            ErrorCode::AnchorNotFound => "anchor_not_found",
            ErrorCode::AnchorAmbiguous => "anchor_ambiguous",
            ErrorCode::AttachmentNotFound => "attachment_not_found",
            ErrorCode::SnapshotNotFound => "snapshot_not_found",
            ErrorCode::TemplateNotFound => "template_not_found",
            ErrorCode::PeriodicNotConfigured => "periodic_not_configured",
        }
    }

    // r[impl results.retryable]
    /// Whether sending the call again as the recovery says can succeed.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::ReplayDrift | ErrorCode::ConcurrentModification
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What to do next: one sentence, and the exact shell command where one helps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    pub instruction: String,
    pub command: Option<String>,
}

impl Recovery {
    fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert(
            "instruction".into(),
            json!(cut_text(&self.instruction, MAX_RECOVERY_BYTES)),
        );
        if let Some(command) = &self.command {
            object.insert(
                "command".into(),
                json!(cut_text(command, MAX_RECOVERY_BYTES)),
            );
        }
        Value::Object(object)
    }
}

/// The most bytes of a failure's message as sent (both text blocks carry it). A message that
/// echoes a huge argument is cut, so no failure is larger than what the call sent. The
/// approval command of an `elicit_required` comes early in its message, so only prose after
/// it could ever be cut.
pub const MAX_MESSAGE_BYTES: usize = 4096;
/// The most bytes of a recovery's instruction and of its command as sent.
pub const MAX_RECOVERY_BYTES: usize = 1024;
/// The most bytes of both text blocks of a failure together. Claude Code cuts an error's text
/// past about 11,000 characters and a character is at least one byte, so a failure is read
/// whole there; `details` entries that do not fit in what the rest leaves are left out and
/// named in `details.cut`.
pub const MAX_FAILURE_TEXT_BYTES: usize = 10_000;
/// The most bytes of a failure's `details` as serialized, whatever else it holds.
pub const MAX_DETAILS_BYTES: usize = 4096;

/// A refused or failed tool call.
#[derive(Debug, Clone)]
pub struct ToolError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Option<Value>,
    pub recovery: Option<Recovery>,
    /// The request the gate recorded when this refusal asked for a confirmation
    /// (`elicit_required`), so the server can offer the `input_required` round trip instead.
    pub raised: Option<Box<RaisedRequest>>,
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error [{}]: {}", self.code, self.shown_message())
    }
}

/// `text` cut to at most `max` bytes (on a character boundary), the cut marked.
pub fn cut_text(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    // Room for the marker: "[… N more bytes]" with N < 10^20.
    let keep = crate::summary::floor_char_boundary(text, max.saturating_sub(40));
    Cow::Owned(format!(
        "{}[… {} more bytes]",
        &text[..keep],
        text.len() - keep
    ))
}

// r[impl results.error-bounded]
/// `details` within [`MAX_DETAILS_BYTES`] as serialized: entries are kept in order while they
/// fit, and those left out are named in `cut` with the size the whole had.
fn bounded_details(details: &Value, budget: usize) -> Value {
    let size = |value: &Value| serde_json::to_vec(value).map_or(usize::MAX, |bytes| bytes.len());
    let whole = size(details);
    if whole <= budget {
        return details.clone();
    }
    // Room for `cut` itself, with the names of what was left out.
    let mut room = budget / 2;
    let mut kept = Map::new();
    let mut left_out = Vec::new();
    if let Value::Object(entries) = details {
        for (key, value) in entries {
            let cost = size(value).saturating_add(key.len() + 4);
            if cost <= room {
                room -= cost;
                kept.insert(key.clone(), value.clone());
            } else {
                left_out.push(json!(cut_text(key, 64)));
            }
        }
    }
    left_out.truncate(8);
    kept.insert("cut".into(), json!({"bytes": whole, "left_out": left_out}));
    Value::Object(kept)
}

impl std::error::Error for ToolError {}

impl ToolError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
            details: None,
            recovery: None,
            raised: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn with_recovery(
        mut self,
        instruction: impl Into<String>,
        command: Option<String>,
    ) -> Self {
        self.recovery = Some(Recovery {
            instruction: instruction.into(),
            command,
        });
        self
    }

    pub fn retryable(&self) -> bool {
        self.code.retryable()
    }

    /// Adds one key to `details` (creating the object).
    pub fn detail(mut self, key: &str, value: Value) -> Self {
        let mut object = match self.details.take() {
            Some(Value::Object(object)) => object,
            _ => Map::new(),
        };
        object.insert(key.to_owned(), value);
        self.details = Some(Value::Object(object));
        self
    }

    // r[impl results.error-blocks]
    // r[impl results.error-bounded]
    /// The JSON envelope of the failure, its second text block: `{code, message, retryable,
    /// details?, recovery?}`, with `details` cut so that both blocks together stay within
    /// [`MAX_FAILURE_TEXT_BYTES`].
    pub fn to_structured(&self) -> Value {
        let mut object = Map::new();
        object.insert("code".into(), json!(self.code.as_str()));
        object.insert("message".into(), json!(self.shown_message()));
        object.insert("retryable".into(), json!(self.retryable()));
        if let Some(recovery) = &self.recovery {
            object.insert("recovery".into(), recovery.to_json());
        }
        if let Some(details) = &self.details {
            let used = self.text().len()
                + serde_json::to_vec(&object).map_or(MAX_FAILURE_TEXT_BYTES, |b| b.len());
            // `,"details":` and a margin for the cut marker's own keys.
            let room = MAX_FAILURE_TEXT_BYTES
                .saturating_sub(used + 64)
                .min(MAX_DETAILS_BYTES);
            object.insert("details".into(), bounded_details(details, room));
        }
        Value::Object(object)
    }

    /// The two text blocks of the failure as sent: `Error [<code>]: <message>`, then the JSON
    /// envelope.
    pub fn text_blocks(&self) -> [String; 2] {
        [self.text(), self.to_structured().to_string()]
    }

    /// The message as sent: at most [`MAX_MESSAGE_BYTES`], the cut marked.
    pub fn shown_message(&self) -> Cow<'_, str> {
        cut_text(&self.message, MAX_MESSAGE_BYTES)
    }

    /// The first text block of the failure, the one an agent is shown:
    /// `Error [<code>]: <message>`.
    pub fn text(&self) -> String {
        self.to_string()
    }

    /// A failure whose detail must not leak (spec `results.no-secrets`): one sentence.
    pub fn internal(what: &str) -> Self {
        ToolError::new(
            ErrorCode::InternalError,
            format!("the server failed while {what}; nothing more is reported"),
        )
    }

    pub fn validation(pointer: &str, problem: impl Into<String>) -> Self {
        let problem = problem.into();
        ToolError::new(
            ErrorCode::ValidationError,
            format!("argument {pointer}: {problem}"),
        )
        .with_details(json!({"errors": [{"pointer": pointer, "message": problem}]}))
    }

    // r[impl results.acl-denied]
    pub fn acl(denied: &AclDenied) -> Self {
        ToolError::new(ErrorCode::AclDenied, denied.to_string()).with_details(json!({
            "path": denied.path,
            "access": denied.op,
            "reason": denied.reason,
        }))
    }

    pub fn missing_scope(scope: &str, tool: &str) -> Self {
        ToolError::new(
            ErrorCode::AclDenied,
            format!("the tool {tool} needs the scope {scope}, which this caller does not hold"),
        )
        .with_details(json!({"scope": scope}))
    }

    // r[impl results.convention-blocked]
    pub fn convention(blocked: &ConventionBlocked) -> Self {
        ToolError::new(ErrorCode::ConventionBlocked, blocked.to_string())
            .with_details(blocked.details())
            .with_recovery(
                "change the call so the note keeps the vault's convention, then send it again",
                None,
            )
    }

    /// A decline (or accept with approve false) of a round-trip prompt (spec
    /// `results.approval-declined`, `trip.decline`, `trip.decline.text`).
    pub fn approval_declined(tool: &str) -> Self {
        ToolError::new(
            ErrorCode::ApprovalDeclined,
            format!(
                "The user declined this {tool} call. Do not retry it and do not mint a \
                 confirmation token for it; ask the user what they want instead."
            ),
        )
        .with_details(json!({"reason": "approval_declined", "tool": tool}))
    }
}

impl From<&VaultError> for ToolError {
    fn from(error: &VaultError) -> Self {
        let message = error.to_string();
        match error {
            VaultError::PathInvalid { .. } => {
                ToolError::new(ErrorCode::PathInvalid, message).with_details(error.details())
            }
            VaultError::NoteNotFound { .. } | VaultError::SnapshotNotFound { .. } => {
                ToolError::new(ErrorCode::NoteNotFound, message).with_details(error.details())
            }
            VaultError::NoteExists { .. } => {
                ToolError::new(ErrorCode::NoteExists, message).with_details(error.details())
            }
            VaultError::ConcurrentModification { .. } => ToolError::new(
                ErrorCode::ConcurrentModification,
                message,
            )
            .with_details(error.details())
            .with_recovery(
                "read the note again and send the call with its current content_hash as prev_hash",
                None,
            ),
            VaultError::TooLarge { .. } => {
                ToolError::new(ErrorCode::InvalidInput, message).with_details(error.details())
            }
            VaultError::FrontmatterInvalid { .. } => {
                ToolError::new(ErrorCode::InvalidInput, message).with_details(error.details())
            }
            VaultError::AclDenied(denied) => ToolError::acl(denied),
            VaultError::ConventionBlocked(blocked) => ToolError::convention(blocked),
            // r[impl vault.note.utf8]
            VaultError::Io { .. } if error.is_not_utf8() => {
                ToolError::new(ErrorCode::InvalidInput, message).with_details(error.details())
            }
            VaultError::Io { op, .. } => ToolError::internal(&format!("trying to {op} a file")),
        }
    }
}

impl From<VaultError> for ToolError {
    fn from(error: VaultError) -> Self {
        ToolError::from(&error)
    }
}

/// An error followed by the causes under it, each said once: an HTTP client's own text for a
/// refused redirect or a failed connection says only that something failed, its sources say
/// what.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let said = inner.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = inner.source();
    }
    text
}
