//! The Streamable HTTP side of the server comparison (spec/auth.md `auth.jwt.caller`,
//! `auth.none.caller`; spec/trips.md `trip.modern.transports`): the servers' axum apps on
//! 127.0.0.1 and the bearer tokens of the JWT callers.

use std::sync::Arc;

use tc_server::server::ServerCore;

use super::world;

/// Serves `core`'s Streamable HTTP app on 127.0.0.1 (an ephemeral port): its /mcp URL.
pub(super) async fn serve(
    core: Arc<ServerCore>,
    auth: Arc<tc_server::auth::Authenticator>,
) -> Result<(String, tokio::task::JoinHandle<()>), String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("binding 127.0.0.1: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let app = tc_server::serve::http_app(core, auth, bound);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((format!("http://{bound}/mcp"), task))
}

/// A bearer token for `sub` with every scope, signed with the config's secret, valid for
/// an hour of wall time (the server checks `exp` on the system clock).
pub(super) fn bearer_for(sub: &str) -> Result<String, String> {
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    let now = jsonwebtoken::get_current_timestamp();
    let key = EncodingKey::from_secret(world::JWT_SECRET.as_bytes())
        .map_err(|e| format!("the signing key: {e}"))?;
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &serde_json::json!({"sub": sub, "scope": "*", "iat": now, "exp": now + 3600}),
        &key,
    )
    .map_err(|e| format!("signing a bearer token: {e}"))
}
