//! Who opened each MCP session over HTTP (spec/auth.md `auth.session.bound`).
//!
//! rmcp's session manager keys a legacy-era session by its `Mcp-Session-Id` alone, and
//! bearer authentication runs per request, so without this a second caller holding a valid
//! token of its own and someone else's session id could call through that session, open its
//! event stream (where the server's requests to the client, elicitations among them, are
//! sent) or end it. The middleware here records the caller id of the request whose response
//! opened a session, and answers any request naming that session from another caller exactly
//! as rmcp answers an unknown one: 404. A session id cannot be guessed (rmcp draws a UUID),
//! but ids do leak (logs, proxies, a shared inspector); bound to its opener, a leaked id is
//! of no use to anyone else.
//!
//! The map stays as small as the live sessions: each time a session opens, entries whose
//! session rmcp no longer holds (ended by DELETE, or dropped as idle) are pruned.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use super::HttpState;
use crate::auth::Caller;

/// The header rmcp names a session by (rmcp's `HEADER_SESSION_ID`, matched case-blind).
const SESSION_HEADER: &str = "mcp-session-id";

/// Session id → the id of the caller that opened it.
#[derive(Debug)]
pub struct SessionOwners {
    owners: Mutex<HashMap<String, String>>,
    /// rmcp's own session table, read to prune sessions it has let go of.
    live: Arc<LocalSessionManager>,
}

impl SessionOwners {
    /// Owners of the sessions `manager` holds, pruned against it.
    pub fn tracking(manager: Arc<LocalSessionManager>) -> Self {
        SessionOwners {
            owners: Mutex::default(),
            live: manager,
        }
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        // A panic elsewhere while the map was held leaves it whole (every change is one
        // insert or remove), so the poisoned guard is still the right one to use.
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `session` was opened by a caller other than `caller`.
    fn foreign_to(&self, session: &str, caller: &str) -> bool {
        self.owners()
            .get(session)
            .is_some_and(|owner| owner != caller)
    }

    async fn record(&self, session: String, caller: String) {
        let live = self.live.sessions.read().await;
        let mut owners = self.owners();
        owners.retain(|id, _| live.contains_key(id.as_str()));
        owners.insert(session, caller);
    }

    fn forget(&self, session: &str) {
        self.owners().remove(session);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.owners().len()
    }
}

fn unknown_session() -> Response {
    // rmcp's own words for a session it does not hold, so a foreign session id and one that
    // never existed cannot be told apart.
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

// r[impl auth.session.bound]
/// Runs after authentication, so the request's [`Caller`] is known.
pub(super) async fn bind_session(
    State(state): State<HttpState>,
    request: Request,
    next: Next,
) -> Response {
    let Some(caller) = request.extensions().get::<Caller>().map(|c| c.id.clone()) else {
        // Unreachable behind `require_caller`; refusing keeps a misordered router closed.
        return unknown_session();
    };
    let Some(named) = request.headers().get(SESSION_HEADER) else {
        let response = next.run(request).await;
        let opened = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(session) = opened {
            state.sessions.record(session, caller).await;
        }
        return response;
    };
    // An id nobody opened here passes through: rmcp answers it 404 on the session path, and
    // ignores it on the 2026-07-28 stateless path, exactly as without this check.
    let Some(session) = named.to_str().ok().map(str::to_owned) else {
        return next.run(request).await;
    };
    if state.sessions.foreign_to(&session, &caller) {
        return unknown_session();
    }
    let ends = request.method() == Method::DELETE;
    let response = next.run(request).await;
    if ends && response.status().is_success() {
        state.sessions.forget(&session);
    }
    response
}

#[cfg(test)]
mod tests {
    use rmcp::transport::streamable_http_server::session::SessionManager;

    use super::*;

    // r[verify auth.session.bound]
    #[tokio::test]
    async fn owners_are_kept_only_for_sessions_rmcp_still_holds() {
        let manager = Arc::new(LocalSessionManager::default());
        let owners = SessionOwners::tracking(Arc::clone(&manager));
        let (first, _first_transport) = manager.create_session().await.unwrap();
        let (second, _second_transport) = manager.create_session().await.unwrap();
        owners.record(first.to_string(), "alice".into()).await;
        owners.record(second.to_string(), "bob".into()).await;
        assert!(owners.foreign_to(&first, "bob"));
        assert!(!owners.foreign_to(&first, "alice"));
        assert!(!owners.foreign_to("never-opened", "bob"));

        manager.close_session(&first).await.unwrap();
        let (third, _third_transport) = manager.create_session().await.unwrap();
        owners.record(third.to_string(), "carol".into()).await;
        assert_eq!(owners.len(), 2, "the ended session's owner is pruned");
        assert!(!owners.foreign_to(&first, "bob"));
        assert!(owners.foreign_to(&second, "alice"));
    }
}
