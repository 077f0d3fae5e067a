//! `obsidian-tc token mint` (spec/cli.md `cli.token.mint`, `cli.token.scopes`,
//! `cli.token.requires-secret`; spec/cli.md).
//!
//! Whoever can read the config's `auth.jwtSecret` can already mint any credential the server
//! accepts, so minting asks for nothing more than that file; by default the token grants
//! every scope (`*`), as the reference server does.

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Map, Value, json};
use tc_server::auth::{HTTP_LOCAL_CALLER, STDIO_CALLER};
use tc_server::config::{AuthMode, Config};

use crate::Refusal;
use crate::cli::MintArgs;

/// What `token mint` prints: the token alone, or one JSON object with `--json`.
pub fn run(args: &MintArgs) -> Result<String, Refusal> {
    let Some(config_path) = &args.config else {
        return Err(Refusal::new(
            "token mint needs --config FILE naming a config with auth.mode = \"jwt\" and \
             auth.jwtSecret",
        ));
    };
    let config = Config::load(config_path).map_err(Refusal::config)?;
    let minted = mint(&config, args, unix_now())?;
    Ok(if args.json {
        format!("{}\n", minted.json)
    } else {
        format!("{}\n", minted.token)
    })
}

/// A minted token and its `--json` description.
#[derive(Debug)]
pub struct Minted {
    pub token: String,
    pub json: Value,
}

// r[impl cli.token.mint]
// r[impl cli.token.scopes]
// r[impl cli.token.requires-secret]
/// Signs the token for `args` at `now` (seconds since the epoch).
pub fn mint(config: &Config, args: &MintArgs, now: u64) -> Result<Minted, Refusal> {
    if config.auth.mode != AuthMode::Jwt {
        return Err(Refusal::new(format!(
            "token mint makes tokens for auth.mode = \"jwt\", but this config has auth.mode = \
             \"{}\"; set auth.mode = \"jwt\" and auth.jwtSecret in it first",
            config.auth.mode
        )));
    }
    let Some(secret) = &config.auth.jwt_secret else {
        return Err(Refusal::new(
            "this config has no auth.jwtSecret to sign with; add one (at least 32 random \
             bytes) or mint tokens with the issuer of its auth.jwks keys",
        ));
    };
    let sub = args.sub.trim();
    if sub.is_empty() {
        return Err(Refusal::new(
            "--sub must name the caller; pass a non-empty id",
        ));
    }
    if sub == STDIO_CALLER || sub == HTTP_LOCAL_CALLER {
        return Err(Refusal::new(format!(
            "--sub {sub:?} is reserved for local callers and would be refused by the server; \
             pick another caller id"
        )));
    }
    if let Some(vault) = &args.vault
        && !config.vaults.is_empty()
        && config.vault(vault).is_none()
    {
        return Err(Refusal::new(format!(
            "the config lists no vault {vault:?}; pass --vault with one of: {}",
            vault_ids(config)
        )));
    }
    let scopes = match &args.scopes {
        None => vec!["*".to_owned()],
        Some(list) => {
            let scopes: Vec<String> = list.iter().map(|s| s.trim().to_owned()).collect();
            if scopes.is_empty() || scopes.iter().any(|s| s.is_empty() || s.contains(' ')) {
                return Err(Refusal::new(
                    "--scopes takes a comma-separated list of non-empty scopes without spaces, \
                     e.g. --scopes read:notes,write:notes",
                ));
            }
            scopes
        }
    };
    let audience = args.aud.clone().or_else(|| config.auth.audience.clone());
    let expires_at = now.saturating_add(args.ttl);

    let mut claims = Map::new();
    claims.insert("sub".into(), json!(sub));
    claims.insert("iat".into(), json!(now));
    claims.insert("exp".into(), json!(expires_at));
    claims.insert("scope".into(), json!(scopes.join(" ")));
    if let Some(aud) = &audience {
        claims.insert("aud".into(), json!(aud));
    }
    if let Some(vault) = &args.vault {
        claims.insert("vault".into(), json!(vault));
    }
    let key = EncodingKey::from_secret(secret.as_bytes())
        .map_err(|e| Refusal::new(format!("auth.jwtSecret cannot be used as a key: {e}")))?;
    let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &Value::Object(claims), &key)
        .map_err(|e| Refusal::new(format!("signing the token failed: {e}")))?;
    let json = json!({
        "token": token,
        "sub": sub,
        "aud": audience,
        "vault": args.vault,
        "scopes": scopes,
        "expires_at": expires_at,
    });
    Ok(Minted { token, json })
}

pub(crate) fn vault_ids(config: &Config) -> String {
    config
        .vaults
        .iter()
        .map(|v| v.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
