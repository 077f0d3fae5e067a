//! Shared harness of the in-process MCP tests: a temporary vault and cache directory, a
//! [`ServerCore`] over them with a manual clock, the server on one end of a
//! `tokio::io::duplex` and rmcp's own client on the other, in either protocol era.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, Implementation,
    ProtocolVersion,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RequestContext, RoleClient, RunningService,
};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value, json};
use tc_gate::clock::{Clock, ManualClock, OsEntropy, SystemClock};
use tc_gate::keys::ServerSecret;
use tc_gate::{EventName, Store};
use tc_server::config::Config;
use tc_server::handler::ObsidianTc;
use tc_server::metrics::Metrics;
use tc_server::routes::Transport;
use tc_server::server::{CoreParts, ServerCore};
use tempfile::TempDir;

/// A server over a temporary vault (id `vault`) and cache directory.
pub struct Harness {
    _vault_dir: TempDir,
    _cache_dir: TempDir,
    pub vault: PathBuf,
    pub cache: PathBuf,
    pub clock: ManualClock,
    pub config: Config,
    pub core: Arc<ServerCore>,
}

impl Harness {
    pub fn new() -> Self {
        Self::with(|_| {})
    }

    /// A harness whose configuration `tweak` adjusts (after the vault is added).
    pub fn with(tweak: impl FnOnce(&mut Config)) -> Self {
        let vault_dir = TempDir::new().unwrap();
        let cache_dir = TempDir::new().unwrap();
        let vault = vault_dir.path().join("vault");
        std::fs::create_dir_all(&vault).unwrap();
        let mut config = Config::default();
        config.add_vault_dir(&vault).unwrap();
        tweak(&mut config);
        let clock = ManualClock::new(SystemClock.now_ms());
        let cache = cache_dir.path().to_path_buf();
        let core = build_core(&config, &cache, clock.clone(), false);
        Harness {
            _vault_dir: vault_dir,
            _cache_dir: cache_dir,
            vault,
            cache,
            clock,
            config,
            core,
        }
    }

    /// Another server (e.g. with the legacy shim on) over the same vault and cache.db.
    pub fn sibling(&self, tweak: impl FnOnce(&mut Config), legacy_shim: bool) -> Arc<ServerCore> {
        let mut config = Config::default();
        config.add_vault_dir(&self.vault).unwrap();
        tweak(&mut config);
        build_core(&config, &self.cache, self.clock.clone(), legacy_shim)
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.vault.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.vault.join(rel)).ok()
    }

    pub fn vault_id(&self) -> String {
        "vault".to_owned()
    }

    /// Mints a CLI token for a refused call with the code `obsidian-tc elicit` runs (its own
    /// connection to cache.db, the vault found from the raised request, `--state-fp` as the
    /// refusal names it).
    pub fn mint(&self, refusal: &Value, caller: &str) -> String {
        let details = &refusal["details"];
        let gate = tc_server::approve::open_gate(
            &self.config,
            &self.cache,
            Arc::new(self.clock.clone()),
            Arc::new(OsEntropy),
        )
        .unwrap();
        let request = tc_server::approve::MintRequest {
            vault: None,
            tool: details["tool"].as_str().unwrap(),
            args_hash: details["args_hash"].as_str().unwrap(),
            caller,
            state_fp: details["state_fp"].as_str(),
        };
        tc_server::approve::mint(&self.config, &gate, &request)
            .unwrap_or_else(|e| panic!("minting as obsidian-tc elicit would: {e}"))
            .token
            .expose()
            .to_owned()
    }

    /// How many events of `name` the gate recorded.
    pub fn events(&self, name: EventName) -> usize {
        count_events(&self.core, name)
    }
}

pub fn count_events(core: &ServerCore, name: EventName) -> usize {
    core.gate()
        .events(0, 10_000)
        .unwrap()
        .iter()
        .filter(|e| e.name == name)
        .count()
}

pub fn build_core(
    config: &Config,
    cache: &Path,
    clock: ManualClock,
    legacy_shim: bool,
) -> Arc<ServerCore> {
    let secret = ServerSecret::load_or_create(cache, &OsEntropy).unwrap();
    let store = Store::open(cache.join("cache.db")).unwrap();
    Arc::new(
        ServerCore::build(
            config,
            CoreParts {
                cache_dir: cache,
                secret: &secret,
                store,
                clock: Arc::new(clock),
                entropy: Arc::new(OsEntropy),
                metrics: Arc::new(Metrics::new()),
                legacy_shim,
                approval_flags: Vec::new(),
                approval_program: None,
            },
        )
        .unwrap(),
    )
}

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
        serde_json::to_value(self.result()).unwrap()
    }
}

/// A client with chosen capabilities and protocol version that answers prompts with a
/// fixed reply and counts them.
#[derive(Clone)]
pub struct TestClient {
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
    /// the elicitation request) or 10 s pass, notifying `prompt_open` when it opens.
    pub hold_prompt: bool,
    pub prompt_open: Arc<tokio::sync::Notify>,
    /// Prompts the server withdrew while they were open.
    pub withdrawn: Arc<AtomicUsize>,
}

impl std::fmt::Debug for TestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestClient")
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
        }
    }

    pub fn prompts(&self) -> usize {
        self.prompts.load(Ordering::SeqCst)
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            self.capabilities.clone(),
            Implementation::new("tc-test-client", "0.0.0"),
        )
        .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.prompts.fetch_add(1, Ordering::SeqCst);
        self.messages
            .lock()
            .unwrap()
            .push(serde_json::to_value(&request).unwrap_or(Value::Null));
        if self.hold_prompt {
            self.prompt_open.notify_one();
            let withdrawn =
                tokio::time::timeout(std::time::Duration::from_secs(10), context.ct.cancelled())
                    .await;
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
        self.progress
            .lock()
            .unwrap()
            .push(serde_json::to_value(&params).unwrap_or(Value::Null));
    }
}

pub type Client = RunningService<RoleClient, TestClient>;

/// Connects `client` to `core` over an in-memory duplex, as a stdio session.
pub async fn connect(core: Arc<ServerCore>, client: TestClient) -> Client {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let handler = ObsidianTc::new(core, Transport::Stdio);
    tokio::spawn(async move {
        if let Ok(running) = handler.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    if client.version.as_str() >= ProtocolVersion::V_2026_07_28.as_str() {
        client
            .serve_with_lifecycle(
                client_io,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .unwrap()
    } else {
        client.serve(client_io).await.unwrap()
    }
}

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
    match call_once(client, tool, arguments).await {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

/// The failure envelope of a result, asserting the shape of spec `results.error-blocks`: no
/// `structuredContent`, the text `Error [<code>]: <message>`, then the envelope's JSON.
pub fn failure(result: &CallToolResult) -> Value {
    assert_eq!(
        result.is_error,
        Some(true),
        "expected a failure: {result:?}"
    );
    assert!(
        result.structured_content.is_none(),
        "a failure carries no structuredContent: {result:?}"
    );
    assert_eq!(result.content.len(), 2, "two text blocks: {result:?}");
    let text = &result.content[0].as_text().unwrap().text;
    let envelope = &result.content[1].as_text().unwrap().text;
    let structured: Value = serde_json::from_str(envelope).expect("the envelope is JSON");
    let code = structured["code"].as_str().unwrap().to_owned();
    let message = structured["message"].as_str().unwrap();
    assert_eq!(text, &format!("Error [{code}]: {message}"));
    assert!(
        text.len() + envelope.len() <= tc_tools::MAX_FAILURE_TEXT_BYTES,
        "a failure's text is bounded"
    );
    structured
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

/// The complete result of a response.
pub fn complete(response: CallToolResponse) -> CallToolResult {
    match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}
