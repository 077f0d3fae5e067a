//! The MCP clients the server under test is driven with: rmcp's own client, over an
//! in-memory `tokio::io::duplex` as a stdio session, in either protocol era (spec/trips.md
//! `trip.capability`, `trip.capabilities-per-request`, `trip.legacy-shim`).
//!
//! A [`Client`] declares its protocol version and whether it can show forms. A client that
//! can is also the legacy shim's human: each `elicitation/create` the server sends it is held
//! open as a [`HeldPrompt`] until the test answers it (the model's `ShimAnswer`) or the
//! server withdraws it because the call was cancelled (`ShimCancel`).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, Implementation, ProtocolVersion,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RequestContext, RoleClient, RunningService,
};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::json;
use tc_server::handler::ObsidianTc;
use tc_server::routes::Transport;
use tc_server::server::ServerCore;
use tokio::sync::{mpsc, oneshot};

/// How long the suite waits for something the server must do at once (a prompt to open, a
/// withdrawn prompt to be noticed) before calling it a failure.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A prompt the server sent and the test has not answered yet.
#[derive(Debug)]
pub struct HeldPrompt {
    /// Answers the prompt (the client's `ElicitResult`).
    pub answer: oneshot::Sender<ElicitResult>,
    /// Fires when the server withdrew the prompt (`notifications/cancelled` for it).
    pub withdrawn: oneshot::Receiver<()>,
}

/// The test client's handler.
#[derive(Debug, Clone)]
pub struct Handler {
    capabilities: ClientCapabilities,
    version: ProtocolVersion,
    prompts: mpsc::UnboundedSender<HeldPrompt>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            self.capabilities.clone(),
            Implementation::new("tc-conformance", "0.0.0"),
        )
        .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let (answer, answered) = oneshot::channel();
        let (withdraw, withdrawn) = oneshot::channel();
        if self.prompts.send(HeldPrompt { answer, withdrawn }).is_err() {
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

/// A connected client and the prompts the server opened on it.
pub struct Client {
    pub service: RunningService<RoleClient, Handler>,
    pub prompts: mpsc::UnboundedReceiver<HeldPrompt>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("handler", self.service.service())
            .finish_non_exhaustive()
    }
}

/// The kinds of client the comparison uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 2025-11-25 without form elicitation: the plain `elicit_required` and CLI tokens.
    Plain,
    /// 2026-07-28 with form elicitation: the `input_required` round trip.
    Modern,
    /// 2026-07-28 declaring no elicitation: a resubmission without the form capability.
    ModernFormless,
    /// 2025-11-25 with form elicitation, on a server with the legacy shim: the server asks.
    LegacyForm,
}

impl Kind {
    fn version(self) -> ProtocolVersion {
        match self {
            Kind::Plain | Kind::LegacyForm => ProtocolVersion::V_2025_11_25,
            Kind::Modern | Kind::ModernFormless => ProtocolVersion::V_2026_07_28,
        }
    }

    fn form(self) -> bool {
        matches!(self, Kind::Modern | Kind::LegacyForm)
    }
}

/// Connects a client of `kind` to `core` as a stdio session.
pub async fn connect(core: Arc<ServerCore>, kind: Kind) -> Result<Client, String> {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let handler = ObsidianTc::new(core, Transport::Stdio);
    tokio::spawn(async move {
        if let Ok(running) = handler.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    start(client_io, kind).await
}

/// Connects a client of `kind` to the Streamable HTTP endpoint `url` with the bearer token
/// `bearer` (spec/auth.md `auth.jwt.caller`).
pub async fn connect_http(url: &str, bearer: String, kind: Kind) -> Result<Client, String> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(bearer),
    );
    start(transport, kind).await
}

/// Connects a client of `kind` to the Streamable HTTP endpoint `url` without credentials
/// (`auth.mode = "none"`).
pub async fn connect_http_anonymous(url: &str, kind: Kind) -> Result<Client, String> {
    use rmcp::transport::StreamableHttpClientTransport;
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    start(transport, kind).await
}

async fn start<T, E, A>(transport: T, kind: Kind) -> Result<Client, String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let client_io = transport;
    let mut capabilities = ClientCapabilities::default();
    if kind.form() {
        capabilities.elicitation = Some(ElicitationCapability::new());
    }
    let (sender, prompts) = mpsc::unbounded_channel();
    let client = Handler {
        capabilities,
        version: kind.version(),
        prompts: sender,
    };
    let service = if kind.version() == ProtocolVersion::V_2026_07_28 {
        client
            .serve_with_lifecycle(
                client_io,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
    } else {
        client.serve(client_io).await
    };
    let service = service.map_err(|e| format!("connecting a {kind:?} client: {e}"))?;
    Ok(Client { service, prompts })
}

/// The client's answer to a form, as the model names it.
pub fn answer_result(answer: tc_model::Answer) -> ElicitResult {
    match answer {
        tc_model::Answer::Accept { approve } => {
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": approve}))
        }
        tc_model::Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
        tc_model::Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}
