//! The MCP clients the server under test is driven with: the workspace's one rmcp test
//! client (`tc_testkit::mcp`), over an in-memory `tokio::io::duplex` as a stdio session or
//! over Streamable HTTP, in either protocol era (spec/trips.md `trip.capability`,
//! `trip.capabilities-per-request`, `trip.legacy-shim`).
//!
//! A [`Client`] declares its protocol version and whether it can show forms. A client that
//! can is also the legacy shim's human: each `elicitation/create` the server sends it is held
//! open as a [`HeldPrompt`] until the test answers it (the model's `ShimAnswer`) or the
//! server withdraws it because the call was cancelled (`ShimCancel`).

use std::sync::Arc;

use rmcp::model::{ElicitResult, ElicitationAction, ElicitationCapability, ProtocolVersion};
use rmcp::service::{RoleClient, RunningService};
use serde_json::json;
use tc_server::handler::ObsidianTc;
use tc_server::routes::Transport;
use tc_server::server::ServerCore;
use tc_testkit::mcp::{self as testkit, Reply, TestClient};
use tokio::sync::mpsc;

/// A prompt the server sent and the test has not answered yet.
pub use tc_testkit::mcp::HeldPrompt;
/// How long the suite waits for something the server must do at once (a prompt to open, a
/// withdrawn prompt to be noticed) before calling it a failure.
pub use tc_testkit::mcp::PATIENCE;

/// A connected client and the prompts the server opened on it.
pub struct Client {
    pub service: RunningService<RoleClient, TestClient>,
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

    /// The test client of this kind, handing every prompt to the suite (no fixed reply).
    fn client(self) -> (TestClient, mpsc::UnboundedReceiver<HeldPrompt>) {
        let form = self.form().then(ElicitationCapability::new);
        let mut client = TestClient::new(self.version(), form, Reply::Cancel);
        client.name = "tc-conformance";
        client.holding()
    }
}

/// Connects a client of `kind` to `core` as a stdio session.
pub async fn connect(core: Arc<ServerCore>, kind: Kind) -> Result<Client, String> {
    let (client, prompts) = kind.client();
    let server = ObsidianTc::new(core, Transport::Stdio);
    let service = testkit::connect_in_memory(server, client).await?;
    Ok(Client { service, prompts })
}

/// Connects a client of `kind` to the Streamable HTTP endpoint `url` with the bearer token
/// `bearer` (spec/auth.md `auth.jwt.caller`).
pub async fn connect_http(url: &str, bearer: String, kind: Kind) -> Result<Client, String> {
    let (client, prompts) = kind.client();
    let service = testkit::connect_http(url, bearer, client).await?;
    Ok(Client { service, prompts })
}

/// Connects a client of `kind` to the Streamable HTTP endpoint `url` without credentials
/// (`auth.mode = "none"`).
pub async fn connect_http_anonymous(url: &str, kind: Kind) -> Result<Client, String> {
    let (client, prompts) = kind.client();
    let service = testkit::connect_http_anonymous(url, client).await?;
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
