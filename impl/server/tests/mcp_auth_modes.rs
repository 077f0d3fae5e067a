//! The confirmation round trip over Streamable HTTP in every `auth.mode` (spec/auth.md
//! `auth.modes`, spec/state.md `state.replay.modes`, `state.every-auth-mode`): `none`, `jwt`
//! with a secret, `jwt` with only a JWKS file (RS256 and ES256 fixture keys), and `oidc`
//! against a local OpenID provider (tests/idp). In each, driven by rmcp's client:
//!
//! - the gated `delete_note` is answered `input_required`, and nothing is deleted;
//! - the approving resend with the echoed requestState deletes the note once;
//! - within the TTL the same requestState runs the call again each time it is presented, on
//!   the same server and on a second server that shares the cacheDir; past the TTL it
//!   approves nothing;
//! - a CLI token minted through the code `obsidian-tc elicit` runs (`tc_server::approve`)
//!   applies once;
//! - where tokens name subjects, a second caller redeems neither the first caller's
//!   requestState nor its token; under `none` every request is `http-local`, so another
//!   local process can (`state.replay.local-caller`).
//!
//! The mode guards the HTTP transport only: stdio on the same server needs no token.

mod idp;
mod mcp_support;

use std::sync::Arc;

use idp::{Idp, alg_of, claims, hs256, signed};
use jsonwebtoken::Algorithm;
use mcp_support::*;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResponse, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tc_gate::EventName;
use tc_gate::clock::OsEntropy;
use tc_server::approve::{self, MintRequest};
use tc_server::auth::Authenticator;
use tc_server::config::{AuthConfig, AuthMode, Config};
use tc_server::server::ServerCore;

const SECRET: &str = "an-hs256-secret-for-the-auth-mode-tests!";
const NOTE: &str = "notes/target.md";
const BODY: &str = "# Target\n\nto be deleted\n";
/// Past the default `elicitTtlSeconds` of 300.
const PAST_TTL_MS: i64 = 301_000;
const ALICE: &str = "alice";
const BOB: &str = "bob";

/// An `auth.mode` with what its callers present.
enum Mode {
    None,
    Secret,
    /// `jwt` with `auth.jwks` = fixtures/jwks.json (rsa-1 and ec-1) and no `jwtSecret`.
    Jwks,
    Oidc(Idp),
}

impl Mode {
    async fn oidc() -> Mode {
        Mode::Oidc(Idp::start(&["rsa1", "ec1"]).await)
    }

    fn auth(&self) -> AuthConfig {
        match self {
            Mode::None => AuthConfig::default(),
            Mode::Secret => AuthConfig {
                mode: AuthMode::Jwt,
                jwt_secret: Some(SECRET.to_owned()),
                ..AuthConfig::default()
            },
            Mode::Jwks => AuthConfig {
                mode: AuthMode::Jwt,
                jwks: Some(idp::fixture("jwks.json").display().to_string()),
                ..AuthConfig::default()
            },
            Mode::Oidc(idp) => idp.auth_config(),
        }
    }

    /// The bearer token of `sub` holding every scope: Alice's asymmetric tokens are RS256
    /// under `rsa-1`, Bob's ES256 under `ec-1`.
    fn bearer(&self, sub: &str) -> Option<String> {
        let mut c = claims(sub);
        c["scope"] = json!("*");
        let (pem, kid) = if sub == ALICE {
            ("rsa1.pem", "rsa-1")
        } else {
            ("ec1.pem", "ec-1")
        };
        match self {
            Mode::None => None,
            Mode::Secret => Some(hs256(SECRET, &c)),
            Mode::Jwks => Some(signed(alg_of(pem), pem, Some(kid), &c)),
            Mode::Oidc(idp) => Some(idp.sign(pem, kid, c)),
        }
    }

    /// A token for `sub` signed by a key this mode does not trust.
    fn untrusted(&self, sub: &str) -> String {
        let mut c = claims(sub);
        c["scope"] = json!("*");
        match self {
            Mode::None | Mode::Secret => hs256("another-secret-of-at-least-32-bytes!!", &c),
            Mode::Jwks => signed(Algorithm::RS256, "rsa2.pem", Some("rsa-2"), &c),
            Mode::Oidc(idp) => idp.sign("rsa2.pem", "rsa-2", c),
        }
    }

    /// The caller the server sees for `sub`.
    fn caller<'a>(&self, sub: &'a str) -> &'a str {
        match self {
            Mode::None => "http-local",
            _ => sub,
        }
    }

    /// Whether two subjects are two callers (every mode but `none`).
    fn isolates(&self) -> bool {
        !matches!(self, Mode::None)
    }
}

/// Serves `core` with the authenticator of `auth` on 127.0.0.1:0; returns the /mcp URL.
async fn serve(core: Arc<ServerCore>, auth: &AuthConfig) -> String {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let auth = Arc::new(Authenticator::from_config(auth).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bound = listener.local_addr().unwrap();
    let app = tc_server::serve::http_app(core, auth, bound);
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{bound}/mcp")
}

/// rmcp's Streamable HTTP client on `url`, sending `bearer` when there is one.
async fn over_http(url: &str, bearer: Option<String>, client: TestClient) -> Client {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(bearer) = bearer {
        config = config.auth_header(bearer);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    if client.version == ProtocolVersion::V_2026_07_28 {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        client.serve_with_lifecycle(transport, lifecycle).await
    } else {
        client.serve(transport).await
    }
    .unwrap()
}

/// A 2025-11-25 client without elicitation: it gets the plain `elicit_required`.
fn plain() -> TestClient {
    TestClient::new(ProtocolVersion::V_2025_11_25, None, Reply::Approve)
}

fn delete_args() -> Value {
    json!({"path": NOTE, "permanent": true})
}

/// The gated call; with `state`, resent with the answer "approve" and `state` echoed.
fn delete(state: Option<&str>) -> CallToolRequestParams {
    let params = CallToolRequestParams::new("delete_note").with_arguments(args(delete_args()));
    match state {
        Some(state) => approved(params, Some(state.to_owned())),
        None => params,
    }
}

fn delete_with_token(token: &str) -> CallToolRequestParams {
    let mut arguments = delete_args();
    arguments["elicit_token"] = json!(token);
    CallToolRequestParams::new("delete_note").with_arguments(args(arguments))
}

async fn send(client: &Client, params: CallToolRequestParams) -> CallToolResponse {
    client.call_tool_once(params).await.unwrap()
}

/// The requestState of an `input_required` answer that asks for the confirmation.
fn asks(response: CallToolResponse) -> String {
    match response {
        CallToolResponse::InputRequired(asked) => {
            let asked = serde_json::to_value(&asked).unwrap();
            assert!(
                asked["inputRequests"]["confirm"].is_object(),
                "asks for the confirmation: {asked}"
            );
            asked["requestState"]
                .as_str()
                .expect("a requestState")
                .to_owned()
        }
        other => panic!("expected input_required, got {other:?}"),
    }
}

/// The `elicit_required` refusal of a complete answer.
fn elicit_required(response: CallToolResponse) -> Value {
    let refusal = failure(&complete(response));
    assert_eq!(refusal["code"], "elicit_required", "{refusal}");
    refusal
}

/// How many `tc.elicit.requested` events name `caller`.
fn raised_for(h: &Harness, caller: &str) -> usize {
    let hash = tc_gate::caller_hash(caller);
    h.core
        .gate()
        .events(0, 10_000)
        .unwrap()
        .iter()
        .filter(|e| e.name == EventName::Requested && e.caller_hash.as_deref() == Some(&hash))
        .count()
}

/// `obsidian-tc elicit --yes --hash … --tool … --caller CALLER --state-fp …` on the
/// harness's cache dir, through the code the binary runs.
fn mint(h: &Harness, refusal: &Value, caller: &str) -> String {
    let mut config = Config::default();
    config.add_vault_dir(&h.vault).unwrap();
    let gate = approve::open_gate(
        &config,
        &h.cache,
        Arc::new(h.clock.clone()),
        Arc::new(OsEntropy),
    )
    .unwrap();
    let details = &refusal["details"];
    let request = MintRequest {
        vault: None,
        tool: details["tool"].as_str().unwrap(),
        args_hash: details["args_hash"].as_str().unwrap(),
        caller,
        state_fp: details["state_fp"].as_str(),
    };
    let issued = approve::mint(&config, &gate, &request).unwrap();
    issued.token.expose().to_owned()
}

/// The whole scenario of the module doc in `mode`.
async fn round_trip_in(mode: Mode) {
    let auth = mode.auth();
    let h = Harness::with(|c| c.auth = auth.clone());
    h.write(NOTE, BODY);
    let url = serve(h.core.clone(), &auth).await;
    let alice = over_http(&url, mode.bearer(ALICE), modern(Reply::Approve)).await;
    let bob = over_http(&url, mode.bearer(BOB), modern(Reply::Approve)).await;
    let mut runs = 0;

    // The gated call asks for confirmation and applies nothing.
    let state = asks(send(&alice, delete(None)).await);
    assert_eq!(h.read(NOTE).as_deref(), Some(BODY));
    assert_eq!(raised_for(&h, mode.caller(ALICE)), 1);

    // A second caller presenting Alice's state is offered a confirmation of its own; under
    // `none` it is the same caller, and the state runs the call for it.
    let by_bob = send(&bob, delete(Some(&state))).await;
    if mode.isolates() {
        let own = asks(by_bob);
        assert_ne!(own, state);
        assert_eq!(raised_for(&h, BOB), 1, "Bob's own request was raised");
        assert_eq!(h.read(NOTE).as_deref(), Some(BODY), "nothing applied");
    } else {
        success(&complete(by_bob));
        runs += 1;
        assert_eq!(h.read(NOTE), None);
        h.write(NOTE, BODY);
    }
    assert_eq!(h.events(EventName::Consumed), runs);

    // Alice's approval applies; within the TTL each presentation of the same state runs the
    // call again, here and on a second server sharing the cacheDir.
    let sibling = h.sibling(|c| c.auth = auth.clone(), false);
    let sibling_url = serve(sibling, &auth).await;
    let alice_there = over_http(&sibling_url, mode.bearer(ALICE), modern(Reply::Approve)).await;
    for client in [&alice, &alice, &alice_there] {
        success(&complete(send(client, delete(Some(&state))).await));
        runs += 1;
        assert_eq!(h.read(NOTE), None, "presentation {runs} deleted the note");
        assert_eq!(
            h.events(EventName::Consumed),
            runs,
            "one run per presentation"
        );
        h.write(NOTE, BODY);
    }

    // Past the TTL the state approves nothing on either server.
    h.clock.advance_ms(PAST_TTL_MS);
    for client in [&alice, &alice_there] {
        asks(send(client, delete(Some(&state))).await);
    }
    assert_eq!(h.read(NOTE).as_deref(), Some(BODY));
    assert_eq!(h.events(EventName::Consumed), runs);

    // The CLI route: the refusal names Alice's caller, the token minted for her is refused
    // for Bob, and applies once for her.
    let plain_alice = over_http(&url, mode.bearer(ALICE), plain()).await;
    let refusal = elicit_required(send(&plain_alice, delete(None)).await);
    let command = refusal["recovery"]["command"].as_str().unwrap();
    let named = format!("--caller {}", mode.caller(ALICE));
    assert!(command.contains(&named), "{command}");
    let token = mint(&h, &refusal, mode.caller(ALICE));
    if mode.isolates() {
        let plain_bob = over_http(&url, mode.bearer(BOB), plain()).await;
        let stolen = elicit_required(send(&plain_bob, delete_with_token(&token)).await);
        assert_eq!(stolen["details"]["token_rejected"], "invalid", "{stolen}");
        assert!(!stolen.to_string().contains(ALICE), "{stolen}");
        assert_eq!(h.read(NOTE).as_deref(), Some(BODY));
    }
    success(&complete(
        send(&plain_alice, delete_with_token(&token)).await,
    ));
    runs += 1;
    assert_eq!(h.read(NOTE), None);
    h.write(NOTE, BODY);
    let again = elicit_required(send(&plain_alice, delete_with_token(&token)).await);
    assert_eq!(again["details"]["token_rejected"], "spent", "{again}");
    assert_eq!(h.read(NOTE).as_deref(), Some(BODY));
    assert_eq!(h.events(EventName::Consumed), runs);
}

// r[verify auth.modes]
// r[verify state.replay.modes]
// r[verify state.every-auth-mode]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwt_with_only_a_jwks_round_trips_replays_and_binds_the_caller() {
    round_trip_in(Mode::Jwks).await;
}

// r[verify auth.modes]
// r[verify state.replay.modes]
// r[verify state.every-auth-mode]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oidc_round_trips_replays_and_binds_the_caller() {
    let mode = Mode::oidc().await;
    let Mode::Oidc(idp) = &mode else {
        unreachable!()
    };
    let issuer = idp.clone();
    round_trip_in(mode).await;
    assert!(issuer.hits() >= 1, "the keys came from the local provider");
}

// r[verify auth.modes]
// r[verify state.replay.modes]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwt_with_a_secret_round_trips_replays_and_binds_the_caller() {
    round_trip_in(Mode::Secret).await;
}

// r[verify auth.modes]
// r[verify state.replay.modes]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn none_round_trips_and_replays_for_every_local_process() {
    round_trip_in(Mode::None).await;
}

// r[verify auth.modes]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_auth_mode_guards_http_and_not_stdio() {
    for mode in [Mode::Secret, Mode::Jwks, Mode::oidc().await] {
        let auth = mode.auth();
        let h = Harness::with(|c| c.auth = auth.clone());
        h.write(NOTE, BODY);
        let url = serve(h.core.clone(), &auth).await;

        // Over HTTP, no token or one signed by a key the mode does not trust: 401.
        let http = reqwest::Client::new();
        for bearer in [None, Some(mode.untrusted(ALICE))] {
            let mut request = http
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
            if let Some(bearer) = &bearer {
                request = request.bearer_auth(bearer);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 401, "{:?} {bearer:?}", auth.mode);
            let challenge = response.headers()["www-authenticate"].to_str().unwrap();
            assert!(challenge.starts_with("Bearer "), "{challenge}");
        }

        // Over stdio, the same server takes no token: the caller is `stdio`.
        let local = connect(h.core.clone(), modern(Reply::Approve)).await;
        let state = asks(send(&local, delete(None)).await);
        assert_eq!(raised_for(&h, "stdio"), 1);
        success(&complete(send(&local, delete(Some(&state))).await));
        assert_eq!(h.read(NOTE), None);
    }
}
