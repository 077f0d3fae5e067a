//! The rmcp `ServerHandler` of obsidian-tc: one type for every transport (spec/dispatch.md
//! `dispatch.one-pipeline`; spec/auth.md `auth.stdio-caller`, `auth.jwt.caller`;
//! spec/tools.md; spec/trips.md `trip.capabilities-per-request`).
//!
//! [`ObsidianTc`] knows which transport it serves and takes the caller from it: over stdio
//! the one caller `stdio`, over HTTP the [`Caller`] that `http.rs` authenticated and put in
//! the request's extensions (rmcp hands the request's `http::request::Parts` to the
//! handler). The client's capabilities and protocol version are read from each request's
//! context, never from `initialize` alone.

use std::sync::Arc;

use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;

use crate::auth::Caller;
use crate::dispatch::ToolCall;
use crate::routes::Transport;
use crate::server::ServerCore;

/// What the server tells a client about itself at start.
const INSTRUCTIONS: &str = "Tools to read and change notes in Obsidian vaults. Calls that \
    change notes in sensitive ways need a human's explicit confirmation: when a call is \
    refused with elicit_required, ask the human before doing anything else and never work \
    around the gate by editing the vault directly. read_notes pages: repeat the same request \
    with cursor until next_cursor is null.";

/// The MCP server of one transport over the shared [`ServerCore`].
#[derive(Debug, Clone)]
pub struct ObsidianTc {
    core: Arc<ServerCore>,
    transport: Transport,
}

impl ObsidianTc {
    pub fn new(core: Arc<ServerCore>, transport: Transport) -> Self {
        ObsidianTc { core, transport }
    }

    pub fn core(&self) -> &Arc<ServerCore> {
        &self.core
    }

    // r[impl auth.stdio-caller]
    /// The caller of this request, from the transport.
    fn caller(&self, context: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
        match self.transport {
            Transport::Stdio => Ok(Caller::stdio()),
            Transport::Http => context
                .extensions
                .get::<Parts>()
                .and_then(|parts| parts.extensions.get::<Caller>())
                .cloned()
                .ok_or_else(|| {
                    ErrorData::internal_error("the request carries no authenticated caller", None)
                }),
        }
    }

    /// The `tools/list` entries: the registry's in flat mode, the facade's in lean mode.
    pub fn tool_entries(&self) -> Vec<Value> {
        self.core.tool_entries()
    }
}

impl ServerHandler for ObsidianTc {
    // r[impl dispatch.invalid-params]
    // r[impl cli.serve.http-removed-methods]
    /// A request rmcp could not type lands here: a method its era does not have, or one rmcp
    /// does not type, is unknown (-32601); for a method rmcp types, its params were wrong
    /// (-32602, saying what is wrong). The same on every transport.
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        // The era as rmcp judges it: the request's own `_meta` version, else the session's.
        let modern = context
            .meta
            .protocol_version()
            .or_else(|| context.protocol_version())
            .is_some_and(|version| !version.has_initialize());
        Err(crate::stdio::untyped_refusal(
            &request.method,
            request.params.as_ref(),
            modern,
        ))
    }

    // r[impl cli.serve.log-lines]
    /// A session's one log line, when its client says it is initialized (stdio, or an HTTP
    /// session of the eras with `initialize`): the transport, the caller by its hash, and
    /// who the client says it is, never the rest of what it sent.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let caller = match self.transport {
            Transport::Stdio => Some(Caller::stdio()),
            Transport::Http => context
                .extensions
                .get::<Parts>()
                .and_then(|parts| parts.extensions.get::<Caller>())
                .cloned(),
        };
        let caller = caller.map_or_else(String::new, |caller| tc_gate::caller_hash(&caller.id));
        let peer = context.peer.peer_info();
        let client = peer.as_ref().map(|peer| &peer.client_info);
        tracing::info!(
            transport = ?self.transport,
            %caller,
            client = client.map_or("", |c| c.name.as_str()),
            version = client.map_or("", |c| c.version.as_str()),
            protocol = %peer.as_ref().map(|p| p.protocol_version.to_string()).unwrap_or_default(),
            "session opened"
        );
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new(
            "obsidian-tc",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .tool_entries()
            .into_iter()
            .map(serde_json::from_value::<Tool>)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                ErrorData::internal_error(format!("a tool definition is invalid: {e}"), None)
            })?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    // r[impl trip.capabilities-per-request]
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = self.caller(&context)?;
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let call = ToolCall {
            tool: &request.name,
            arguments: &arguments,
            request_state: request.request_state.as_deref(),
            input_responses: request.input_responses.as_ref(),
        };
        self.core
            .call_tool(&caller, self.transport, call, &context)
            .await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let caller = self.caller(&context)?;
        let cursor = request.and_then(|r| r.cursor);
        let core = Arc::clone(&self.core);
        // A listing walks the vault's folders: on the blocking pool, as every vault read is.
        off_the_workers("listing the notes", move || {
            core.list_resources(&caller, cursor.as_deref())
        })
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = self.caller(&context)?;
        let core = Arc::clone(&self.core);
        off_the_workers("reading the note", move || {
            core.read_resource(&caller, &request.uri)
        })
        .await
        .map(ReadResourceResponse::Complete)
    }
}

/// Runs a resource request's file-system work on tokio's blocking pool, so a listing of a
/// large vault never stalls the workers that serve every other session (a panic there is a
/// server fault, answered as one).
async fn off_the_workers<T: Send + 'static>(
    what: &'static str,
    work: impl FnOnce() -> Result<T, ErrorData> + Send + 'static,
) -> Result<T, ErrorData> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|_| {
        Err(ErrorData::internal_error(
            format!("the server failed while {what}"),
            None,
        ))
    })
}
