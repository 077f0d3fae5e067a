//! The client of one vault's Local REST API plugin (spec/bridge.md `bridge.route.*`,
//! `bridge.fail.*`, `bridge.tls.*`): the two actions and what their answers mean.
//!
//! Every failure becomes a spec/results.md code on one side of the line [`crate::http`] draws:
//! `plugin_unreachable` when the action's request was never sent (or the plugin refused it
//! before acting: no key, unknown route), `operation_timeout` when it was sent and the
//! action may have run (no answer in time, a 5xx, an `operation_timeout` answer from the
//! companion, a connection that broke). Neither is retryable, and the pipeline keeps the
//! token spent for both, since the handler raised them.

mod templater;

pub use templater::TemplaterRun;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tc_tools::{ErrorCode, ToolError, escape_for_terminal};

use crate::config::{BridgeConfig, MAX_TIMEOUT_MS};
use crate::http::{self, AfterSend, Endpoint, Failure, NotSent, Request, Response, Transport};
use crate::key::{ApiKey, read_key_file};
use crate::tls::{
    CERT_PATH, PinStore, PinVerifier, cert_sha256, parse_published, published_matches,
};

/// The companion's routes under the Local REST API.
pub const COMPANION_PREFIX: &str = "/obsidian-tc/v1";
/// What the approver and the agent are told about the binding of these tools.
pub const RESIDUAL: &str = "the approval binds on the arguments alone (args_hash): the effect \
happens inside Obsidian, where the server cannot observe or undo it";

/// The most bytes of the plugin's own words carried into a message.
const MAX_QUOTED: usize = 300;

/// One vault's bridge: where the plugin listens, its key file, its timeout, its pin.
#[derive(Debug, Clone)]
pub struct Bridge {
    vault: String,
    endpoint: Endpoint,
    key_file: PathBuf,
    timeout: Duration,
    pins: PinStore,
}

/// A bridge configuration that cannot be used (refused at start-up, naming the key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BridgeSetupError {
    #[error("vaults[{vault}].bridge.url: {0}", vault = .1)]
    Url(http::EndpointError, String),
    #[error(
        "vaults[{vault}].bridge.apiKeyFile: {path:?} must be an absolute path (it is not resolved against the config file)"
    )]
    RelativeKeyFile { vault: String, path: PathBuf },
    #[error(
        "vaults[{vault}].bridge.timeoutMs: must be between 1 and {MAX_TIMEOUT_MS}, not {value}"
    )]
    Timeout { vault: String, value: u64 },
}

fn quote(text: &str) -> String {
    let shown = escape_for_terminal(text);
    if shown.len() <= MAX_QUOTED {
        return shown;
    }
    let mut cut = MAX_QUOTED;
    while !shown.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &shown[..cut])
}

/// The `message` (or `error`) a plugin put in a JSON answer.
fn answer_message(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    value
        .get("message")
        .or_else(|| value.get("error"))
        .and_then(Value::as_str)
        .map(quote)
}

impl Bridge {
    // r[impl bridge.config.checked]
    pub fn new(
        vault: &str,
        config: &BridgeConfig,
        cache_dir: &std::path::Path,
    ) -> Result<Self, BridgeSetupError> {
        let endpoint =
            Endpoint::parse(&config.url).map_err(|e| BridgeSetupError::Url(e, vault.to_owned()))?;
        if !config.api_key_file.is_absolute() {
            return Err(BridgeSetupError::RelativeKeyFile {
                vault: vault.to_owned(),
                path: config.api_key_file.clone(),
            });
        }
        if config.timeout_ms == 0 || config.timeout_ms > MAX_TIMEOUT_MS {
            return Err(BridgeSetupError::Timeout {
                vault: vault.to_owned(),
                value: config.timeout_ms,
            });
        }
        Ok(Bridge {
            vault: vault.to_owned(),
            endpoint,
            key_file: config.api_key_file.clone(),
            timeout: Duration::from_millis(config.timeout_ms),
            pins: PinStore::new(cache_dir, vault),
        })
    }

    pub fn vault(&self) -> &str {
        &self.vault
    }

    pub fn url(&self) -> String {
        self.endpoint.shown()
    }

    pub fn pins(&self) -> &PinStore {
        &self.pins
    }

    pub fn uses_tls(&self) -> bool {
        self.endpoint.tls
    }

    /// `plugin_unreachable`: nothing of the action was sent (or the plugin refused it before
    /// acting).
    fn unreachable(&self, reason: &str, message: String) -> ToolError {
        ToolError::new(ErrorCode::PluginUnreachable, message).with_details(json!({
            "vault": self.vault,
            "url": self.url(),
            "reason": reason,
            "sent": false,
        }))
    }

    /// `operation_timeout`: the request was sent and the action may have run.
    fn may_have_run(&self, reason: &str, what: &str) -> ToolError {
        ToolError::new(
            ErrorCode::OperationTimeout,
            format!(
                "{what}. The request reached Obsidian through {}, so the action may have run \
                 already; it is not sent again and the confirmation stays spent ({RESIDUAL}). \
                 Check in Obsidian whether it ran before asking to run it again; a new call \
                 needs a new approval.",
                self.url()
            ),
        )
        .with_details(json!({
            "vault": self.vault,
            "url": self.url(),
            "reason": reason,
            "sent": true,
        }))
    }

    // r[impl bridge.key.file]
    /// The API key, checked before the confirmation gate.
    pub fn key(&self) -> Result<ApiKey, ToolError> {
        read_key_file(&self.key_file).map_err(|e| {
            self.unreachable(
                "api_key_file",
                format!("{e}; nothing was sent to Obsidian and no confirmation was used"),
            )
        })
    }

    fn refused_certificate(&self, presented: &str) -> ToolError {
        let pinned = self
            .pins
            .load()
            .ok()
            .flatten()
            .map(|der| cert_sha256(&der))
            .unwrap_or_default();
        let path = self.pins.path().display().to_string();
        ToolError::new(
            ErrorCode::PluginUnreachable,
            format!(
                "the certificate {} presents (sha256 {presented}) is not the one pinned in \
                 {path} (sha256 {pinned}), so nothing was sent. If you regenerated the Local \
                 REST API plugin's certificate yourself, delete {path} and the next call pins \
                 the certificate it serves now; otherwise something else is answering on \
                 that address.",
                self.endpoint.authority
            ),
        )
        .with_details(json!({
            "vault": self.vault,
            "url": self.url(),
            "reason": "certificate_changed",
            "sent": false,
            "pin_file": path,
            "pinned_sha256": pinned,
            "presented_sha256": presented,
        }))
    }

    fn not_sent(&self, failure: &NotSent) -> ToolError {
        match failure {
            NotSent::CertificateRefused {
                presented_sha256, ..
            } => self.refused_certificate(presented_sha256),
            other => self.unreachable(
                "connect",
                format!(
                    "{other}; nothing was sent. Is Obsidian running with the Local REST API \
                     plugin enabled at {}?",
                    self.url()
                ),
            ),
        }
    }

    // r[impl bridge.tls.no-key-before-pin]
    /// The pinned certificate, pinning the published one on first use. The fetch sends no
    /// key and has no effect, so any failure of it means the action was not sent.
    fn ensure_pin(&self) -> Result<Vec<u8>, ToolError> {
        let io_error = |e: std::io::Error| {
            ToolError::internal(&format!("reading the pinned certificate ({e})"))
        };
        if let Some(pin) = self.pins.load().map_err(io_error)? {
            return Ok(pin);
        }
        let capture = PinVerifier::capturing();
        let config = capture
            .client_config()
            .map_err(|_| ToolError::internal("setting up TLS"))?;
        let transport = Transport::Tls {
            config,
            refused: Arc::new(|| None),
        };
        let request = Request {
            method: "GET",
            path: CERT_PATH,
            bearer: None,
            body: None,
        };
        let response = match http::exchange(&self.endpoint, &transport, &request, self.timeout) {
            Ok(response) => response,
            Err(Failure::NotSent(failure)) => return Err(self.not_sent(&failure)),
            Err(Failure::AfterSend(failure)) => {
                return Err(self.unreachable(
                    "certificate_fetch",
                    format!(
                        "fetching the plugin's certificate from {}{CERT_PATH} failed ({failure}); \
                         nothing of the call was sent",
                        self.url()
                    ),
                ));
            }
        };
        let published = parse_published(&response.body);
        let Some(first) = published.first().filter(|_| response.status == 200) else {
            return Err(self.unreachable(
                "certificate_fetch",
                format!(
                    "{}{CERT_PATH} answered status {} without a certificate; nothing was \
                     pinned and nothing of the call was sent",
                    self.url(),
                    response.status
                ),
            ));
        };
        if !published_matches(first, &capture.presented(), &self.endpoint.server_name) {
            return Err(self.unreachable(
                "certificate_mismatch",
                format!(
                    "the certificate {} publishes at {CERT_PATH} is not the one its TLS server \
                     presents (nor does it sign it); nothing was pinned and nothing was sent",
                    self.endpoint.authority
                ),
            ));
        }
        self.pins
            .save(first)
            .map_err(|e| ToolError::internal(&format!("storing the pinned certificate ({e})")))?;
        tracing::info!(
            "bridge: vault {} pinned the certificate of {} (sha256 {}) in {}",
            self.vault,
            self.url(),
            cert_sha256(first),
            self.pins.path().display()
        );
        Ok(first.clone())
    }

    fn transport(&self) -> Result<Transport, ToolError> {
        if !self.endpoint.tls {
            return Ok(Transport::Plain);
        }
        let verifier = PinVerifier::pinned(self.ensure_pin()?);
        let config = verifier
            .client_config()
            .map_err(|_| ToolError::internal("setting up TLS"))?;
        let seen = Arc::clone(&verifier);
        Ok(Transport::Tls {
            config,
            refused: Arc::new(move || {
                let presented = seen.presented();
                presented
                    .refused
                    .then(|| cert_sha256(&presented.end_entity))
            }),
        })
    }

    /// One request, sent once; a failure before it was sent is `plugin_unreachable`, after
    /// it `operation_timeout`.
    fn send(&self, request: &Request<'_>, action: &str) -> Result<Response, ToolError> {
        let transport = self.transport()?;
        match http::exchange(&self.endpoint, &transport, request, self.timeout) {
            Ok(response) => Ok(response),
            Err(Failure::NotSent(failure)) => Err(self.not_sent(&failure)),
            Err(Failure::AfterSend(AfterSend::Timeout)) => Err(self.may_have_run(
                "timeout",
                &format!("{action}: no answer within {} ms", self.timeout.as_millis()),
            )),
            Err(Failure::AfterSend(failure)) => {
                Err(self.may_have_run("broken", &format!("{action}: {failure}")))
            }
        }
    }

    /// The answers every route shares: a refused key, a 5xx.
    fn common_refusal(&self, response: &Response, action: &str) -> Option<ToolError> {
        let said = answer_message(&response.body)
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        match response.status {
            401 | 403 => Some(self.unreachable(
                "unauthorized",
                format!(
                    "the Local REST API refused the API key (status {}){said}; nothing ran. \
                     Put the key shown in Obsidian under Settings → Local REST API in {}",
                    response.status,
                    self.key_file.display()
                ),
            )),
            500..=599 => Some(self.may_have_run(
                "server_error",
                &format!(
                    "{action}: the plugin answered status {}{said}",
                    response.status
                ),
            )),
            _ => None,
        }
    }

    // r[impl bridge.route.command]
    /// Runs an Obsidian command: `POST /commands/{id}/` on the Local REST API.
    pub fn execute_command(&self, key: &ApiKey, command_id: &str) -> Result<(), ToolError> {
        let path = format!("/commands/{}/", http::encode_segment(command_id));
        let action = format!("running the command {}", quote(command_id));
        let response = self.send(
            &Request {
                method: "POST",
                path: &path,
                bearer: Some(key.expose()),
                body: None,
            },
            &action,
        )?;
        if let Some(refusal) = self.common_refusal(&response, &action) {
            return Err(refusal);
        }
        match response.status {
            200..=299 => Ok(()),
            404 => Err(ToolError::new(
                ErrorCode::InvalidInput,
                format!(
                    "Obsidian has no command {} (the Local REST API answered 404); nothing ran. \
                     The id must be one of the command palette's ids, as listed by GET /commands/",
                    quote(command_id)
                ),
            )
            .with_details(json!({"reason": "command_not_found", "vault": self.vault, "command_id": command_id}))),
            status => Err(self.unexpected(status, &response.body, &action)),
        }
    }

    fn unexpected(&self, status: u16, body: &[u8], action: &str) -> ToolError {
        let said = answer_message(body)
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        ToolError::new(
            ErrorCode::InvalidInput,
            format!(
                "{action}: the plugin refused the request with status {status}{said}; nothing ran"
            ),
        )
        .with_details(json!({"reason": "refused", "status": status, "vault": self.vault}))
    }

    // r[impl bridge.route.quickadd]
    /// Runs a QuickAdd choice through the companion: `POST /obsidian-tc/v1/quickadd/trigger`
    /// with `{choice, variables, timeoutMs}`; answers `{ok, result}` or `{ok: false, code,
    /// message}`.
    pub fn trigger_quickadd(
        &self,
        key: &ApiKey,
        choice: &str,
        variables: &Map<String, Value>,
    ) -> Result<Value, ToolError> {
        // The companion gives up a little before this client does, so a slow choice is
        // answered as operation_timeout by the companion rather than cut off here.
        let companion_timeout = (self.timeout.as_millis() as u64).saturating_mul(4) / 5;
        let body = serde_json::to_vec(&json!({
            "choice": choice,
            "variables": variables,
            "timeoutMs": companion_timeout.max(1),
        }))
        .map_err(|_| ToolError::internal("encoding the request"))?;
        let path = format!("{COMPANION_PREFIX}/quickadd/trigger");
        let action = format!("running the QuickAdd choice {}", quote(choice));
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
        let ok = answer
            .as_ref()
            .and_then(|a| a.get("ok"))
            .and_then(Value::as_bool);
        let code = answer
            .as_ref()
            .and_then(|a| a.get("code"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let said = answer_message(&response.body).unwrap_or_default();
        // r[impl bridge.fail.companion-timeout]
        if ok == Some(false) && code == "operation_timeout" {
            return Err(self.may_have_run(
                "operation_timeout",
                &format!("{action}: the companion gave up waiting for QuickAdd ({said})"),
            ));
        }
        if let Some(refusal) = self.common_refusal(&response, &action) {
            return Err(refusal);
        }
        match (response.status, ok) {
            (200..=299, Some(true)) => Ok(answer
                .and_then(|mut a| a.get_mut("result").map(Value::take))
                .unwrap_or(Value::Null)),
            (_, Some(false)) => Err(self.companion_refusal(&code, &said, choice, &action)),
            (404, None) => Err(self.unreachable(
                "companion_missing",
                format!(
                    "the Local REST API at {} has no route {path}: the obsidian-tc companion \
                     plugin is not installed or not enabled in this vault; nothing ran",
                    self.url()
                ),
            )),
            (status, _) => Err(self.unexpected(status, &response.body, &action)),
        }
    }

    fn companion_refusal(&self, code: &str, said: &str, choice: &str, action: &str) -> ToolError {
        match code {
            "quickadd_unavailable" => self.unreachable(
                "quickadd_unavailable",
                format!("the QuickAdd plugin is not enabled in Obsidian ({said}); nothing ran"),
            ),
            "choice_not_found" => ToolError::new(
                ErrorCode::InvalidInput,
                format!("QuickAdd has no choice named {}; nothing ran", quote(choice)),
            )
            .with_details(json!({"reason": "choice_not_found", "vault": self.vault, "action_name": choice})),
            "invalid_request" => ToolError::new(
                ErrorCode::InvalidInput,
                format!("{action}: the companion refused the request ({said}); nothing ran"),
            )
            .with_details(json!({"reason": "invalid_request", "vault": self.vault})),
            // choice_failed, or a code of a newer companion: the choice was started.
            _ => ToolError::new(
                ErrorCode::InternalError,
                format!(
                    "{action}: QuickAdd reported a failure ({said}); the choice was started and \
                     may have done part of its work; the confirmation stays spent"
                ),
            )
            .with_details(json!({"reason": if code.is_empty() { "choice_failed" } else { code }, "vault": self.vault, "sent": true})),
        }
    }

    /// A GET with the key, for the probe.
    pub(crate) fn get(&self, key: Option<&ApiKey>, path: &str) -> Result<Response, ToolError> {
        self.send(
            &Request {
                method: "GET",
                path,
                bearer: key.map(ApiKey::expose),
                body: None,
            },
            &format!("GET {path}"),
        )
    }
}
