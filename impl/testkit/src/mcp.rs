//! rmcp's own client, as the server's tests and the conformance suite drive the server with
//! (spec/trips.md `trip.capability`, `trip.capabilities-per-request`, `trip.legacy-shim`):
//! over an in-memory `tokio::io::duplex` as a stdio session, or over Streamable HTTP, in
//! either protocol era, and the readers of a tool result's shape (spec/results.md
//! `results.error-blocks`).
//!
//! A [`TestClient`] declares its protocol version and whether it can show forms, and answers
//! each `elicitation/create` the server sends with a fixed [`Reply`], or holds it open for a
//! test to answer or for the server to withdraw, handing it over as a [`HeldPrompt`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, Implementation,
    ProtocolVersion,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RequestContext, RoleClient, RunningService,
};
use rmcp::{ClientHandler, ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// How long a held prompt waits for the server to withdraw it before it is cancelled.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// What the test client answers to an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    Approve,
    ApproveFalse,
    Decline,
    Cancel,
    /// accept with no `approve` field
    Malformed,
    /// the client answers the prompt with a JSON-RPC error
    Fail,
}

impl Reply {
    pub fn result(self) -> ElicitResult {
        match self {
            Reply::Approve => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true}))
            }
            Reply::ApproveFalse => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": false}))
            }
            Reply::Decline => ElicitResult::new(ElicitationAction::Decline),
            Reply::Cancel => ElicitResult::new(ElicitationAction::Cancel),
            Reply::Malformed | Reply::Fail => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({}))
            }
        }
    }

    /// The `inputResponses` value of this reply.
    pub fn json(self) -> Value {
        serde_json::to_value(self.result()).unwrap_or(Value::Null)
    }
}

/// A prompt the server sent and the test has not answered yet.
#[derive(Debug)]
pub struct HeldPrompt {
    /// Answers the prompt (the client's `ElicitResult`).
    pub answer: oneshot::Sender<ElicitResult>,
    /// Fires when the server withdrew the prompt (`notifications/cancelled` for it).
    pub withdrawn: oneshot::Receiver<()>,
}

/// A client with chosen capabilities and protocol version that answers prompts with a
/// fixed reply (or hands them to the test) and counts them.
#[derive(Clone)]
pub struct TestClient {
    /// The name in the client's `clientInfo`.
    pub name: &'static str,
    pub capabilities: ClientCapabilities,
    pub version: ProtocolVersion,
    pub reply: Reply,
    pub prompts: Arc<AtomicUsize>,
    pub messages: Arc<Mutex<Vec<Value>>>,
    /// Runs while the prompt is open (e.g. to change the target meanwhile).
    pub during_prompt: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Every `notifications/progress` the server sent, as JSON.
    pub progress: Arc<Mutex<Vec<Value>>>,
    /// Keep each prompt open until the server withdraws it (`notifications/cancelled` for
    /// the elicitation request) or [`PATIENCE`] passes, notifying `prompt_open` when it opens.
    pub hold_prompt: bool,
    pub prompt_open: Arc<tokio::sync::Notify>,
    /// Prompts the server withdrew while they were open.
    pub withdrawn: Arc<AtomicUsize>,
    /// When set, each prompt is handed to the test as a [`HeldPrompt`] and answered as the
    /// test answers it (see [`TestClient::holding`]).
    pub held: Option<mpsc::UnboundedSender<HeldPrompt>>,
}

impl std::fmt::Debug for TestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestClient")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("reply", &self.reply)
            .finish_non_exhaustive()
    }
}

impl TestClient {
    pub fn new(
        version: ProtocolVersion,
        elicitation: Option<ElicitationCapability>,
        reply: Reply,
    ) -> Self {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = elicitation;
        TestClient {
            name: "tc-test-client",
            capabilities,
            version,
            reply,
            prompts: Arc::new(AtomicUsize::new(0)),
            messages: Arc::new(Mutex::new(Vec::new())),
            during_prompt: None,
            progress: Arc::new(Mutex::new(Vec::new())),
            hold_prompt: false,
            prompt_open: Arc::new(tokio::sync::Notify::new()),
            withdrawn: Arc::new(AtomicUsize::new(0)),
            held: None,
        }
    }

    /// This client handing each prompt to the test: the receiver of the prompts it holds.
    pub fn holding(mut self) -> (Self, mpsc::UnboundedReceiver<HeldPrompt>) {
        let (sender, prompts) = mpsc::unbounded_channel();
        self.held = Some(sender);
        (self, prompts)
    }

    pub fn prompts(&self) -> usize {
        self.prompts.load(Ordering::SeqCst)
    }

    /// A prompt handed to the test: its answer, or a cancel once the server withdrew it.
    async fn hand_over(
        held: &mpsc::UnboundedSender<HeldPrompt>,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let (answer, answered) = oneshot::channel();
        let (withdraw, withdrawn) = oneshot::channel();
        if held.send(HeldPrompt { answer, withdrawn }).is_err() {
            return Err(ErrorData::internal_error("the test went away", None));
        }
        tokio::select! {
            answer = answered => answer.map_err(|_| {
                ErrorData::internal_error("the test dropped the prompt", None)
            }),
            () = context.ct.cancelled() => {
                let _ = withdraw.send(());
                Ok(ElicitResult::new(ElicitationAction::Cancel))
            }
        }
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            self.capabilities.clone(),
            Implementation::new(self.name, "0.0.0"),
        )
        .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.prompts.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut messages) = self.messages.lock() {
            messages.push(serde_json::to_value(&request).unwrap_or(Value::Null));
        }
        if let Some(held) = &self.held {
            return Self::hand_over(held, context).await;
        }
        if self.hold_prompt {
            self.prompt_open.notify_one();
            let withdrawn = tokio::time::timeout(PATIENCE, context.ct.cancelled()).await;
            if withdrawn.is_ok() {
                self.withdrawn.fetch_add(1, Ordering::SeqCst);
            }
            return Ok(Reply::Cancel.result());
        }
        if let Some(during) = &self.during_prompt {
            during();
        }
        if self.reply == Reply::Fail {
            return Err(ErrorData::internal_error(
                "the client could not show the prompt",
                None,
            ));
        }
        Ok(self.reply.result())
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        if let Ok(mut progress) = self.progress.lock() {
            progress.push(serde_json::to_value(&params).unwrap_or(Value::Null));
        }
    }
}

pub type Client = RunningService<RoleClient, TestClient>;

/// A modern client that can show forms (bare `elicitation: {}`).
pub fn modern(reply: Reply) -> TestClient {
    TestClient::new(
        ProtocolVersion::V_2026_07_28,
        Some(ElicitationCapability::new()),
        reply,
    )
}

/// A legacy (2025-11-25) client that can show forms.
pub fn legacy(reply: Reply) -> TestClient {
    TestClient::new(
        ProtocolVersion::V_2025_11_25,
        Some(ElicitationCapability::new()),
        reply,
    )
}

/// Serves `server` on one end of an in-memory duplex, as a stdio session, and connects
/// `client` on the other.
pub async fn connect_in_memory<S: ServerHandler>(
    server: S,
    client: TestClient,
) -> Result<Client, String> {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    start(client_io, client).await
}

/// Connects `client` to the Streamable HTTP endpoint `url` with the bearer token `bearer`
/// (spec/auth.md `auth.jwt.caller`).
pub async fn connect_http(url: &str, bearer: String, client: TestClient) -> Result<Client, String> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(bearer),
    );
    start(transport, client).await
}

/// Connects `client` to the Streamable HTTP endpoint `url` without credentials
/// (`auth.mode = "none"`).
pub async fn connect_http_anonymous(url: &str, client: TestClient) -> Result<Client, String> {
    use rmcp::transport::StreamableHttpClientTransport;
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    start(transport, client).await
}

/// Runs `client` over `transport`: a 2026-07-28 client discovers the server's version
/// (no `initialize`), an earlier one initializes.
pub async fn start<T, E, A>(transport: T, client: TestClient) -> Result<Client, String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let version = client.version.clone();
    let service = if version.as_str() >= ProtocolVersion::V_2026_07_28.as_str() {
        client
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
    } else {
        client.serve(transport).await
    };
    service.map_err(|e| format!("connecting a {} client: {e}", version.as_str()))
}

pub fn args(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("arguments must be an object"),
    }
}

/// One `tools/call` round, without the client's automatic MRTR retries.
pub async fn call_once(client: &Client, tool: &str, arguments: Value) -> CallToolResponse {
    client
        .call_tool_once(CallToolRequestParams::new(tool.to_owned()).with_arguments(args(arguments)))
        .await
        .unwrap()
}

/// A call that must complete in one round.
pub async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    complete(call_once(client, tool, arguments).await)
}

/// The complete result of a response.
pub fn complete(response: CallToolResponse) -> CallToolResult {
    match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

/// A call that must be answered with `input_required`.
pub async fn input_required(
    client: &Client,
    tool: &str,
    arguments: Value,
) -> rmcp::model::InputRequiredResult {
    match call_once(client, tool, arguments).await {
        CallToolResponse::InputRequired(result) => result,
        other => panic!("expected input_required, got {other:?}"),
    }
}

/// The failure envelope of a result checked against the shape of spec
/// `results.error-blocks` (no `structuredContent`; the text `Error [<code>]: <message>`,
/// then the envelope's JSON; bounded): `None` for a success, why not for a failure of
/// another shape.
pub fn read_failure(result: &CallToolResult) -> Result<Option<Value>, String> {
    if result.is_error != Some(true) {
        return Ok(None);
    }
    if result.structured_content.is_some() {
        return Err(format!(
            "a failure carries no structuredContent: {result:?}"
        ));
    }
    let [text, envelope] = result.content.as_slice() else {
        return Err(format!("a failure has two text blocks: {result:?}"));
    };
    let (Some(text), Some(envelope)) = (text.as_text(), envelope.as_text()) else {
        return Err(format!("a failure has two text blocks: {result:?}"));
    };
    let (text, envelope) = (&text.text, &envelope.text);
    let structured: Value = serde_json::from_str(envelope)
        .map_err(|e| format!("a failure envelope that is not JSON ({e}): {result:?}"))?;
    let (Some(code), Some(message)) = (structured["code"].as_str(), structured["message"].as_str())
    else {
        return Err(format!("a failure without a code or message: {structured}"));
    };
    let expected = format!("Error [{code}]: {message}");
    if *text != expected {
        return Err(format!("the first block is {text:?}, not {expected:?}"));
    }
    if text.len() + envelope.len() > tc_tools::MAX_FAILURE_TEXT_BYTES {
        return Err(format!(
            "a failure's text is bounded: {} bytes",
            text.len() + envelope.len()
        ));
    }
    Ok(Some(structured))
}

/// The failure envelope of a result, asserting the shape of spec `results.error-blocks`
/// (see [`read_failure`]).
pub fn failure(result: &CallToolResult) -> Value {
    match read_failure(result) {
        Ok(Some(envelope)) => envelope,
        Ok(None) => panic!("expected a failure: {result:?}"),
        Err(why) => panic!("{why}"),
    }
}

/// The success object of a result, asserting the text block holds the same JSON.
pub fn success(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "expected success: {result:?}");
    let structured = result
        .structured_content
        .clone()
        .expect("structuredContent");
    assert_eq!(result.content.len(), 1);
    let text = &result.content[0].as_text().unwrap().text;
    let parsed: Value = serde_json::from_str(text).unwrap();
    assert_eq!(parsed, structured);
    structured
}

/// `params` resent with the answer "approve" and, if given, the echoed requestState.
pub fn approved(params: CallToolRequestParams, state: Option<String>) -> CallToolRequestParams {
    let mut responses = rmcp::model::InputResponses::new();
    responses.insert("confirm".to_owned(), Reply::Approve.json());
    let params = params.with_input_responses(responses);
    match state {
        Some(state) => params.with_request_state(state),
        None => params,
    }
}

/// Resends `arguments` to `tool` with the answer "approve" and the echoed requestState.
pub async fn resubmit(
    client: &Client,
    tool: &str,
    arguments: Value,
    state: Option<String>,
) -> CallToolResponse {
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args(arguments));
    client
        .call_tool_once(approved(params, state))
        .await
        .unwrap()
}

#[cfg(test)]
mod tests {
    use rmcp::model::ContentBlock as Content;

    use super::*;

    fn failing(blocks: Vec<Content>) -> CallToolResult {
        CallToolResult::error(blocks)
    }

    const ENVELOPE: &str = r#"{"code":"not_found","message":"no such note"}"#;

    #[test]
    fn a_success_is_not_a_failure() {
        let ok = CallToolResult::structured(json!({"a": 1}));
        assert_eq!(read_failure(&ok), Ok(None));
        assert_eq!(success(&ok), json!({"a": 1}));
    }

    #[test]
    fn a_failure_of_the_two_block_shape_is_read() {
        let result = failing(vec![
            Content::text("Error [not_found]: no such note"),
            Content::text(ENVELOPE),
        ]);
        assert_eq!(failure(&result)["code"], "not_found");
    }

    #[test]
    fn failures_of_other_shapes_are_refused() {
        let one_block = failing(vec![Content::text(ENVELOPE)]);
        let wrong_text = failing(vec![
            Content::text("Error [other]: no such note"),
            Content::text(ENVELOPE),
        ]);
        let not_json = failing(vec![
            Content::text("Error [not_found]: no such note"),
            Content::text("not json"),
        ]);
        let mut structured = failing(vec![
            Content::text("Error [not_found]: no such note"),
            Content::text(ENVELOPE),
        ]);
        structured.structured_content = Some(json!({"code": "not_found"}));
        for result in [one_block, wrong_text, not_json, structured] {
            assert!(read_failure(&result).is_err(), "{result:?}");
        }
    }
}
