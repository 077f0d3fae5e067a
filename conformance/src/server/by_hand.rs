//! Single exchanges driven by hand, for the tests of one clause (conformance/tests/
//! server_clauses.rs): a `tools/call` on a named session with the prompt it may open
//! answered, an extra HTTP endpoint in another auth mode, the files behind the vaults. The
//! model is not involved; [`ServerSut::apply`] is the comparison.

use std::path::Path;
use std::sync::Arc;

use tc_model::{Note, Vault};

use super::clients::{self, Client, Kind};
use super::{ServerSut, Session, SutError, world};

/// What one hand-driven exchange came to (see [`ServerSut::exchange`]).
#[derive(Debug)]
pub struct Exchanged {
    /// Whether the server sent `elicitation/create` (answered with the given answer).
    pub prompted: bool,
    /// The result as JSON (a tool result, or an `input_required` result).
    pub result: serde_json::Value,
}

impl ServerSut {
    /// Sends one `tools/call` with `params` on `session` by hand, answering a prompt the
    /// server sends meanwhile with `answer`, for tests of one clause. The model is not
    /// involved: what it changes is not tracked ([`ServerSut::apply`] is the comparison).
    pub fn exchange(
        &mut self,
        session: Session,
        params: rmcp::model::CallToolRequestParams,
        answer: tc_model::Answer,
    ) -> Result<Exchanged, SutError> {
        self.exchange_as(tc_model::Caller(0), session, params, answer)
    }

    /// [`ServerSut::exchange`] as `caller` (over HTTP for a caller other than 0).
    pub fn exchange_as(
        &mut self,
        caller: tc_model::Caller,
        session: Session,
        params: rmcp::model::CallToolRequestParams,
        answer: tc_model::Answer,
    ) -> Result<Exchanged, SutError> {
        use rmcp::model::{CallToolRequest, ClientRequest};
        let client = self
            .servers
            .as_mut()
            .and_then(|s| s.sessions.get_mut(&(session, caller.0)))
            .ok_or_else(|| SutError::Setup(format!("no {session:?} session")))?;
        let peer = client.service.peer().clone();
        let prompts = &mut client.prompts;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        self.runtime.block_on(async {
            let mut handle = peer
                .send_cancellable_request(request, rmcp::service::PeerRequestOptions::no_options())
                .await
                .map_err(|e| SutError::Wire(e.to_string()))?;
            let mut prompted = false;
            let response = tokio::select! {
                held = prompts.recv() => {
                    let held = held.ok_or_else(|| SutError::Wire("the session ended".into()))?;
                    prompted = true;
                    let _ = held.answer.send(clients::answer_result(answer));
                    handle.rx.await
                }
                response = &mut handle.rx => response,
            };
            let response = response
                .map_err(|_| SutError::Wire("no response".into()))?
                .map_err(|e| SutError::Wire(e.to_string()))?;
            let result =
                serde_json::to_value(&response).map_err(|e| SutError::Unexpected(e.to_string()))?;
            Ok(Exchanged { prompted, result })
        })
    }

    /// The requestState a raise handed out, as the client echoes it.
    pub fn request_state(&self, state: tc_model::StateRef) -> Option<&str> {
        self.states.get(usize::from(state.0)).map(String::as_str)
    }

    /// Serves the server as configured on one more Streamable HTTP endpoint on 127.0.0.1,
    /// authenticating with `auth` (e.g. `auth.mode = "none"`), and connects a client of
    /// `kind` to it with `bearer` (if any): for tests of one auth mode.
    pub fn http_session(
        &mut self,
        auth: &tc_server::config::AuthConfig,
        bearer: Option<String>,
        kind: Kind,
    ) -> Result<Client, SutError> {
        let core = self.core()?.clone();
        let authenticator = Arc::new(
            tc_server::auth::Authenticator::from_config(auth)
                .map_err(|e| SutError::Setup(format!("the authenticator: {e}")))?,
        );
        let connected = self.runtime.block_on(async {
            let _ = rustls::crypto::ring::default_provider().install_default();
            let (url, task) = super::http::serve(core, authenticator).await?;
            let client = match bearer {
                Some(bearer) => clients::connect_http(&url, bearer, kind).await?,
                None => clients::connect_http_anonymous(&url, kind).await?,
            };
            Ok::<_, String>((client, task))
        });
        let (client, task) = connected.map_err(SutError::Setup)?;
        if let Some(servers) = self.servers.as_mut() {
            servers.http.push(task);
        }
        Ok(client)
    }

    /// Runs `future` on the server's runtime (for hand-driven exchanges on a
    /// [`ServerSut::http_session`]).
    pub fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// The folder of vault `vault`.
    pub fn vault_dir(&self, vault: Vault) -> &Path {
        &self.vaults[usize::from(vault.0)]
    }

    /// The bytes of note `note` of vault `vault` on disk.
    pub fn note_on_disk(&self, vault: Vault, note: Note) -> Result<String, SutError> {
        Ok(std::fs::read_to_string(
            self.vaults[usize::from(vault.0)].join(world::note_path(vault, note)),
        )?)
    }
}
