//! Callers and bearer authentication (spec/auth.md): HS256 with a secret, JWKS from a file,
//! a JWKS URL, and OIDC discovery against an in-process identity provider on 127.0.0.1,
//! including key rotation and the refetch rate limit.

mod idp;

use std::net::SocketAddr;
use std::time::Duration;

use idp::{Idp, claims, fixture, hs256, now, signed};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use tc_server::auth::{
    AuthError, Authenticator, Caller, HTTP_LOCAL_CALLER, RefreshPolicy, STDIO_CALLER, check_bind,
};
use tc_server::config::{AuthConfig, AuthMode, OidcConfig};

const SECRET: &str = "an-hs256-test-secret-of-32-bytes!!";

fn jwt_config(secret: Option<&str>, jwks: Option<String>, audience: Option<&str>) -> AuthConfig {
    AuthConfig {
        mode: AuthMode::Jwt,
        jwt_secret: secret.map(str::to_owned),
        jwks,
        oidc: None,
        audience: audience.map(str::to_owned),
    }
}

fn secret_auth(audience: Option<&str>) -> Authenticator {
    Authenticator::from_config(&jwt_config(Some(SECRET), None, audience)).expect("authenticator")
}

fn invalid_reason(result: Result<Caller, AuthError>) -> String {
    match result {
        Err(AuthError::InvalidToken(reason)) => reason,
        other => panic!("expected InvalidToken, got {other:?}"),
    }
}

// r[verify auth.none.loopback]
#[test]
fn mode_none_binds_loopback_only() {
    let addr = |s: &str| s.parse::<SocketAddr>().unwrap();
    assert!(check_bind(AuthMode::None, addr("127.0.0.1:8080")).is_ok());
    assert!(check_bind(AuthMode::None, addr("127.0.0.2:8080")).is_ok());
    assert!(check_bind(AuthMode::None, addr("[::1]:8080")).is_ok());
    let refused = check_bind(AuthMode::None, addr("0.0.0.0:8080")).expect_err("unspecified");
    assert!(refused.to_string().contains("loopback"), "{refused}");
    assert!(check_bind(AuthMode::None, addr("192.0.2.7:8080")).is_err());
    assert!(check_bind(AuthMode::None, addr("[::]:8080")).is_err());
    assert!(check_bind(AuthMode::Jwt, addr("0.0.0.0:8080")).is_ok());
    assert!(check_bind(AuthMode::Oidc, addr("0.0.0.0:8080")).is_ok());
}

// r[verify auth.stdio-caller]
// r[verify auth.none.caller]
// r[verify auth.local-scopes]
#[tokio::test]
async fn local_callers_hold_every_scope() {
    let stdio = Caller::stdio();
    assert_eq!(stdio.id, STDIO_CALLER);
    assert_eq!(stdio.id, "stdio");
    assert!(stdio.scopes.has("read:notes") && stdio.scopes.has("anything"));
    assert!(stdio.may_use_vault("any"));

    let none = Authenticator::from_config(&AuthConfig::default()).expect("none");
    assert_eq!(none.mode(), AuthMode::None);
    for header in [None, Some("Bearer whatever"), Some("garbage")] {
        let caller = none.authenticate(header).await.expect("http-local");
        assert_eq!(caller.id, HTTP_LOCAL_CALLER);
        assert_eq!(caller.id, "http-local");
        assert!(caller.scopes.has("delete:notes"));
    }
}

// r[verify auth.jwt.secret]
// r[verify auth.jwt.caller]
// r[verify auth.jwt.scopes]
#[tokio::test]
async fn hs256_token_gives_its_subject_and_scopes() {
    let auth = secret_auth(None);
    let mut c = claims("alice");
    c["scope"] = json!("read:notes write:notes");
    let caller = auth
        .authenticate(Some(&format!("Bearer {}", hs256(SECRET, &c))))
        .await
        .expect("valid");
    assert_eq!(caller.id, "alice");
    assert!(caller.scopes.has("read:notes"));
    assert!(caller.scopes.has("write:notes"));
    assert!(!caller.scopes.has("delete:notes"));
    assert_eq!(caller.vault, None);

    // The scheme is case-insensitive.
    let lower = auth
        .authenticate(Some(&format!("bearer {}", hs256(SECRET, &c))))
        .await
        .expect("lowercase scheme");
    assert_eq!(lower.id, "alice");
}

// r[verify auth.jwt.scopes]
#[tokio::test]
async fn scopes_come_from_scope_scp_or_scopes_and_star_is_every_scope() {
    let auth = secret_auth(None);
    let mut scp = claims("bob");
    scp["scp"] = json!(["read:notes"]);
    let caller = auth.verify(&hs256(SECRET, &scp)).await.expect("scp");
    assert!(caller.scopes.has("read:notes") && !caller.scopes.has("write:notes"));

    let mut scopes = claims("bob");
    scopes["scopes"] = json!(["write:notes"]);
    let caller = auth.verify(&hs256(SECRET, &scopes)).await.expect("scopes");
    assert!(caller.scopes.has("write:notes") && !caller.scopes.has("read:notes"));

    let mut star = claims("bob");
    star["scope"] = json!("*");
    let caller = auth.verify(&hs256(SECRET, &star)).await.expect("star");
    assert!(caller.scopes.has("read:private"));

    let none = auth
        .verify(&hs256(SECRET, &claims("bob")))
        .await
        .expect("no scopes");
    assert!(
        !none.scopes.has("read:notes"),
        "no scope claim grants nothing"
    );
}

// r[verify auth.jwt.vault]
#[tokio::test]
async fn a_vault_claim_restricts_the_caller_to_that_vault() {
    let auth = secret_auth(None);
    let mut c = claims("carol");
    c["vault"] = json!("work");
    let caller = auth.verify(&hs256(SECRET, &c)).await.expect("valid");
    assert_eq!(caller.vault.as_deref(), Some("work"));
    assert!(caller.may_use_vault("work"));
    assert!(!caller.may_use_vault("personal"));
}

// r[verify auth.jwt.claims]
#[tokio::test]
async fn expired_and_not_yet_valid_tokens_are_refused() {
    let auth = secret_auth(None);
    let mut expired = claims("dave");
    expired["exp"] = json!(now() - 3600);
    let reason = invalid_reason(auth.verify(&hs256(SECRET, &expired)).await);
    assert!(reason.contains("expired"), "{reason}");

    let mut early = claims("dave");
    early["nbf"] = json!(now() + 3600);
    let reason = invalid_reason(auth.verify(&hs256(SECRET, &early)).await);
    assert!(reason.contains("not yet valid"), "{reason}");

    let no_exp = json!({ "sub": "dave" });
    let reason = invalid_reason(auth.verify(&hs256(SECRET, &no_exp)).await);
    assert!(reason.contains("exp"), "{reason}");
}

// r[verify auth.jwt.claims]
#[tokio::test]
async fn the_audience_is_checked_when_configured() {
    let auth = secret_auth(Some("obsidian-tc"));
    let mut right = claims("erin");
    right["aud"] = json!("obsidian-tc");
    auth.verify(&hs256(SECRET, &right))
        .await
        .expect("right audience");
    let mut among = claims("erin");
    among["aud"] = json!(["other", "obsidian-tc"]);
    auth.verify(&hs256(SECRET, &among))
        .await
        .expect("audience among several");

    let mut wrong = claims("erin");
    wrong["aud"] = json!("other");
    let reason = invalid_reason(auth.verify(&hs256(SECRET, &wrong)).await);
    assert!(reason.contains("audience"), "{reason}");
    let reason = invalid_reason(auth.verify(&hs256(SECRET, &claims("erin"))).await);
    assert!(reason.contains("aud"), "a missing aud is refused: {reason}");

    // Without a configured audience any aud is accepted.
    secret_auth(None)
        .verify(&hs256(SECRET, &wrong))
        .await
        .expect("no audience configured");
}

// r[verify auth.jwt.secret]
#[tokio::test]
async fn a_wrong_secret_or_algorithm_is_refused() {
    let auth = secret_auth(None);
    let forged = hs256("another-secret-that-is-32-bytes-long", &claims("mallory"));
    let reason = invalid_reason(auth.verify(&forged).await);
    assert!(reason.contains("signature"), "{reason}");

    let hs384 = jsonwebtoken::encode(
        &Header::new(Algorithm::HS384),
        &claims("mallory"),
        &EncodingKey::from_secret(SECRET.as_bytes()).expect("key"),
    )
    .unwrap();
    invalid_reason(auth.verify(&hs384).await);

    // An RS256 token cannot be verified without a JWKS.
    let rs = signed(
        Algorithm::RS256,
        "rsa1.pem",
        Some("rsa-1"),
        &claims("mallory"),
    );
    let reason = invalid_reason(auth.verify(&rs).await);
    assert!(reason.contains("jwks"), "{reason}");

    // alg "none": an unsigned token.
    let unsigned = format!(
        "{}.{}.",
        b64(br#"{"alg":"none","typ":"JWT"}"#),
        b64(claims("mallory").to_string().as_bytes())
    );
    invalid_reason(auth.verify(&unsigned).await);
    invalid_reason(auth.verify("not-a-jwt").await);
    invalid_reason(auth.verify(&"a".repeat(20_000)).await);
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[tokio::test]
async fn local_caller_ids_cannot_be_claimed_by_a_token() {
    let auth = secret_auth(None);
    for reserved in ["stdio", "http-local"] {
        let reason = invalid_reason(auth.verify(&hs256(SECRET, &claims(reserved))).await);
        assert!(reason.contains("reserved"), "{reason}");
    }
    invalid_reason(auth.verify(&hs256(SECRET, &claims(""))).await);
}

// r[verify auth.unauthenticated]
#[tokio::test]
async fn missing_or_malformed_credentials_get_a_bearer_challenge() {
    let auth = secret_auth(None);
    let missing = auth.authenticate(None).await.expect_err("missing");
    assert_eq!(missing, AuthError::MissingToken);
    assert_eq!(missing.status(), 401);
    assert_eq!(
        missing.www_authenticate().as_deref(),
        Some("Bearer realm=\"obsidian-tc\"")
    );

    let basic = auth
        .authenticate(Some("Basic dXNlcjpwYXNz"))
        .await
        .expect_err("basic");
    assert_eq!(basic, AuthError::MalformedHeader);
    assert!(
        basic
            .www_authenticate()
            .unwrap()
            .contains("error=\"invalid_request\"")
    );

    let mut expired = claims("frank");
    expired["exp"] = json!(now() - 3600);
    let error = auth
        .authenticate(Some(&format!("Bearer {}", hs256(SECRET, &expired))))
        .await
        .expect_err("expired");
    let challenge = error.www_authenticate().expect("challenge");
    assert!(
        challenge.starts_with("Bearer realm=\"obsidian-tc\""),
        "{challenge}"
    );
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    assert!(challenge.contains("expired"), "{challenge}");
}

#[tokio::test]
async fn a_challenge_never_echoes_unprintable_token_fields() {
    let auth = Authenticator::from_config(&jwt_config(
        None,
        Some(fixture("jwks.json").display().to_string()),
        None,
    ))
    .unwrap();
    let token = signed(
        Algorithm::RS256,
        "rsa1.pem",
        Some("evil\"\r\nX-Injected: 1"),
        &claims("x"),
    );
    let error = auth.verify(&token).await.expect_err("unknown kid");
    let challenge = error.www_authenticate().unwrap();
    assert!(
        challenge.bytes().all(|b| (0x20..0x7f).contains(&b)),
        "{challenge:?}"
    );
    assert_eq!(challenge.matches('"').count() % 2, 0, "{challenge}");
    axum::http::HeaderValue::from_str(&challenge).expect("a valid header value");
}

// r[verify auth.jwt.jwks]
#[tokio::test]
async fn a_jwks_file_verifies_rsa_and_ec_tokens_by_kid() {
    let jwks = fixture("jwks.json").display().to_string();
    let auth = Authenticator::from_config(&jwt_config(None, Some(jwks.clone()), None)).unwrap();

    let rs = signed(Algorithm::RS256, "rsa1.pem", Some("rsa-1"), &claims("gina"));
    assert_eq!(auth.verify(&rs).await.expect("rs256").id, "gina");
    let es = signed(Algorithm::ES256, "ec1.pem", Some("ec-1"), &claims("hank"));
    assert_eq!(auth.verify(&es).await.expect("es256").id, "hank");
    // No kid: every key fitting the algorithm is tried.
    let no_kid = signed(Algorithm::RS256, "rsa1.pem", None, &claims("ivy"));
    assert_eq!(auth.verify(&no_kid).await.expect("no kid").id, "ivy");

    // A key the set does not hold, and a key posing under another's kid.
    let unknown = signed(Algorithm::RS256, "rsa2.pem", Some("rsa-2"), &claims("x"));
    let reason = invalid_reason(auth.verify(&unknown).await);
    assert!(reason.contains("rsa-2"), "{reason}");
    let posing = signed(Algorithm::RS256, "rsa2.pem", Some("rsa-1"), &claims("x"));
    let reason = invalid_reason(auth.verify(&posing).await);
    assert!(reason.contains("signature"), "{reason}");
    // An ES256 header on the RSA key's kid: the key's alg does not fit.
    let wrong_alg = signed(Algorithm::ES256, "ec1.pem", Some("rsa-1"), &claims("x"));
    invalid_reason(auth.verify(&wrong_alg).await);

    // JWKS only: HMAC tokens are refused (no public key doubles as a shared secret).
    let hmac = invalid_reason(auth.verify(&hs256(SECRET, &claims("x"))).await);
    assert!(hmac.contains("HMAC"), "{hmac}");

    // Secret and JWKS together accept both kinds.
    let both = Authenticator::from_config(&jwt_config(Some(SECRET), Some(jwks), None)).unwrap();
    both.verify(&rs).await.expect("rs256 with both");
    both.verify(&hs256(SECRET, &claims("y")))
        .await
        .expect("hs256 with both");
}

#[test]
fn a_broken_jwks_file_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent.json").display().to_string();
    let error = Authenticator::from_config(&jwt_config(None, Some(missing), None)).unwrap_err();
    assert!(error.to_string().starts_with("auth.jwks"), "{error}");
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, r#"{"keys":[]}"#).unwrap();
    let error =
        Authenticator::from_config(&jwt_config(None, Some(empty.display().to_string()), None))
            .unwrap_err();
    assert!(error.to_string().contains("no keys"), "{error}");
}

fn policy(ttl_secs: u64, min_refetch_secs: u64) -> RefreshPolicy {
    RefreshPolicy {
        ttl: Duration::from_secs(ttl_secs),
        min_refetch_interval: Duration::from_secs(min_refetch_secs),
        fetch_timeout: Duration::from_secs(5),
    }
}

// r[verify auth.oidc]
#[tokio::test]
async fn oidc_discovers_the_issuer_and_caches_its_keys() {
    let idp = Idp::start(&["rsa1"]).await;
    let auth = idp.oidc(policy(3600, 0));
    let caller = auth
        .verify(&idp.token("rsa1.pem", "rsa-1", "iris"))
        .await
        .expect("valid");
    assert_eq!(caller.id, "iris");
    assert_eq!(idp.hits(), 1);
    auth.verify(&idp.token("rsa1.pem", "rsa-1", "iris"))
        .await
        .expect("cached");
    assert_eq!(idp.hits(), 1, "the JWKS is cached");

    // The issuer is checked.
    let mut other = claims("iris");
    other["iss"] = json!("https://elsewhere.example");
    let foreign = signed(Algorithm::RS256, "rsa1.pem", Some("rsa-1"), &other);
    let reason = invalid_reason(auth.verify(&foreign).await);
    assert!(reason.contains("issuer"), "{reason}");
    let no_iss = signed(Algorithm::RS256, "rsa1.pem", Some("rsa-1"), &claims("iris"));
    invalid_reason(auth.verify(&no_iss).await);
}

// r[verify auth.oidc.issuer-slash]
#[tokio::test]
async fn an_issuer_configured_with_a_trailing_slash_still_accepts_its_tokens() {
    let idp = Idp::start(&["rsa1"]).await;
    let mut config = idp.auth_config();
    config.oidc.as_mut().unwrap().issuer = format!("{}/", idp.issuer);
    let auth = Authenticator::with_policy(&config, policy(3600, 0)).unwrap();
    // The provider's tokens name it without the slash, and with it.
    let caller = auth
        .verify(&idp.token("rsa1.pem", "rsa-1", "iris"))
        .await
        .expect("the issuer without its trailing slash is the same issuer");
    assert_eq!(caller.id, "iris");
    let mut slashed = claims("iris");
    slashed["iss"] = json!(format!("{}/", idp.issuer));
    let slashed = signed(Algorithm::RS256, "rsa1.pem", Some("rsa-1"), &slashed);
    auth.verify(&slashed).await.expect("exactly as configured");
    // Anything else is still another issuer.
    for other in [format!("{}//", idp.issuer), format!("{}/x", idp.issuer)] {
        let mut foreign = claims("iris");
        foreign["iss"] = json!(other);
        let foreign = signed(Algorithm::RS256, "rsa1.pem", Some("rsa-1"), &foreign);
        let reason = invalid_reason(auth.verify(&foreign).await);
        assert!(reason.contains("issuer"), "{reason}");
    }
}

// r[verify auth.oidc]
#[tokio::test]
async fn oidc_refetches_on_an_unknown_kid_after_rotation() {
    let idp = Idp::start(&["rsa1"]).await;
    let auth = idp.oidc(policy(3600, 0));
    auth.verify(&idp.token("rsa1.pem", "rsa-1", "jack"))
        .await
        .expect("before rotation");
    assert_eq!(idp.hits(), 1);

    // The provider rotates: the new key is published, and tokens start using it.
    idp.serve_keys(&["rsa2", "ec1"]);
    let rotated = auth
        .verify(&idp.token("rsa2.pem", "rsa-2", "jack"))
        .await
        .expect("after rotation");
    assert_eq!(rotated.id, "jack");
    assert_eq!(idp.hits(), 2, "one refetch for the new kid");
    auth.verify(&idp.token("ec1.pem", "ec-1", "jack"))
        .await
        .expect("the other new key, already fetched");
    assert_eq!(idp.hits(), 2);
    // The retired key is gone from the refreshed set (another refetch finds it still gone).
    invalid_reason(auth.verify(&idp.token("rsa1.pem", "rsa-1", "jack")).await);
}

// r[verify auth.oidc]
#[tokio::test]
async fn unknown_kids_refetch_at_most_once_per_interval() {
    let idp = Idp::start(&["rsa1"]).await;
    let auth = idp.oidc(policy(3600, 3600));
    auth.verify(&idp.token("rsa1.pem", "rsa-1", "kate"))
        .await
        .expect("first fetch");
    assert_eq!(idp.hits(), 1);
    for _ in 0..5 {
        let forged = idp.token("rsa2.pem", "forged-kid", "kate");
        invalid_reason(auth.verify(&forged).await);
    }
    assert_eq!(
        idp.hits(),
        1,
        "forged kids within the interval cause no refetch"
    );
}

// r[verify auth.jwks.no-stall]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_kid_against_a_slow_provider_stalls_no_other_check() {
    let idp = Idp::start(&["rsa1"]).await;
    let auth = std::sync::Arc::new(idp.oidc(policy(3600, 0)));
    auth.verify(&idp.token("rsa1.pem", "rsa-1", "mia"))
        .await
        .expect("first fetch");
    idp.slow_down(Duration::from_secs(3));
    let forged = {
        let (auth, token) = (auth.clone(), idp.token("rsa2.pem", "forged-kid", "mia"));
        tokio::spawn(async move { auth.verify(&token).await })
    };
    // The forged kid's refetch is under way (the provider answers in 3 s).
    while idp.hits() < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let started = std::time::Instant::now();
    let honest = tokio::time::timeout(
        Duration::from_secs(2),
        auth.verify(&idp.token("rsa1.pem", "rsa-1", "mia")),
    )
    .await
    .expect("a token naming a held key is not held up by the fetch")
    .expect("valid");
    assert_eq!(honest.id, "mia");
    assert!(started.elapsed() < Duration::from_secs(2));
    // A second forged kid waits for the fetch under way instead of starting its own.
    let second = idp.token("rsa2.pem", "other-forged", "mia");
    invalid_reason(auth.verify(&second).await);
    invalid_reason(forged.await.unwrap());
    assert_eq!(idp.hits(), 2, "one fetch served both forged kids");
}

// r[verify auth.oidc]
#[tokio::test]
async fn the_jwks_is_refetched_after_its_ttl() {
    let idp = Idp::start(&["rsa1"]).await;
    let auth = idp.oidc(policy(0, 0));
    for expected in 1..=3 {
        auth.verify(&idp.token("rsa1.pem", "rsa-1", "liam"))
            .await
            .expect("valid");
        assert_eq!(idp.hits(), expected);
    }
}

#[tokio::test]
async fn a_discovery_naming_another_issuer_is_not_trusted() {
    let idp = Idp::start(&["rsa1"]).await;
    *idp.discovery_issuer.lock().unwrap() = Some("https://impostor.example".into());
    let auth = idp.oidc(policy(3600, 0));
    let error = auth
        .verify(&idp.token("rsa1.pem", "rsa-1", "mona"))
        .await
        .expect_err("issuer mismatch");
    assert!(matches!(error, AuthError::KeysUnavailable(_)), "{error:?}");
    assert_eq!(error.status(), 503);
    assert_eq!(
        idp.hits(),
        0,
        "the JWKS of an unverified issuer is never fetched"
    );
}

// r[verify auth.keys.https]
#[tokio::test]
async fn keys_are_never_fetched_over_plain_http_from_a_host_that_is_not_loopback() {
    let idp = Idp::start(&["rsa1"]).await;
    for named in [
        "http://keys.example.invalid/keys".to_owned(),
        format!("{}/moved", idp.issuer),
    ] {
        *idp.discovery_jwks_uri.lock().unwrap() = Some(named.clone());
        let auth = idp.oidc(policy(3600, 0));
        let error = auth
            .verify(&idp.token("rsa1.pem", "rsa-1", "pia"))
            .await
            .expect_err("no keys from plain http");
        match &error {
            AuthError::KeysUnavailable(reason) => {
                assert!(reason.contains("keys.example.invalid"), "{named}: {reason}")
            }
            other => panic!("{named}: {other:?}"),
        }
    }
    assert_eq!(idp.hits(), 0);
    // The provider on loopback is trusted over http, as it is everywhere in these tests.
    *idp.discovery_jwks_uri.lock().unwrap() = None;
    let auth = idp.oidc(policy(3600, 0));
    auth.verify(&idp.token("rsa1.pem", "rsa-1", "pia"))
        .await
        .expect("loopback");
}

#[tokio::test]
async fn an_unreachable_provider_is_a_server_side_failure() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let config = AuthConfig {
        mode: AuthMode::Oidc,
        oidc: Some(OidcConfig { issuer }),
        ..AuthConfig::default()
    };
    let auth = Authenticator::with_policy(&config, policy(3600, 0)).unwrap();
    let token = signed(Algorithm::RS256, "rsa1.pem", Some("rsa-1"), &claims("ned"));
    let error = auth.verify(&token).await.expect_err("down");
    assert!(matches!(error, AuthError::KeysUnavailable(_)), "{error:?}");
    assert_eq!(error.www_authenticate(), None);
}

// r[verify auth.jwt.jwks]
#[tokio::test]
async fn a_jwks_url_is_fetched_on_first_use() {
    let idp = Idp::start(&["ec1"]).await;
    let auth = Authenticator::with_policy(
        &jwt_config(None, Some(format!("{}/keys", idp.issuer)), None),
        policy(3600, 0),
    )
    .unwrap();
    assert_eq!(idp.hits(), 0, "nothing is fetched at start-up");
    let token = signed(Algorithm::ES256, "ec1.pem", Some("ec-1"), &claims("olga"));
    assert_eq!(auth.verify(&token).await.expect("valid").id, "olga");
    assert_eq!(idp.hits(), 1);
}
