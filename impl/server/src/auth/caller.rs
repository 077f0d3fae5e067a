//! Who a request comes from: the local callers of the transports, and the caller a verified
//! token names (spec `auth.stdio-caller`, `auth.none.caller`, `auth.local-scopes`,
//! `auth.jwt.caller`, `auth.jwt.scopes`, `auth.jwt.vault`).

use serde::Deserialize;
use tc_vault::acl::Scopes;

use super::AuthError;

/// The caller of every request over stdio.
pub const STDIO_CALLER: &str = "stdio";
/// The caller of every HTTP request under `auth.mode = "none"`.
pub const HTTP_LOCAL_CALLER: &str = "http-local";

/// The principal a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// `stdio`, `http-local`, or the token's `sub`.
    pub id: String,
    pub scopes: Scopes,
    /// The token's `vault` claim: when set, the caller may address only that vault.
    pub vault: Option<String>,
}

impl Caller {
    // r[impl auth.stdio-caller]
    // r[impl auth.local-scopes]
    /// The one caller of the trusted stdio transport, holding every scope.
    pub fn stdio() -> Self {
        Caller {
            id: STDIO_CALLER.to_owned(),
            scopes: Scopes::all(),
            vault: None,
        }
    }

    // r[impl auth.none.caller]
    /// The one caller of an HTTP server under `auth.mode = "none"`, holding every scope.
    pub fn http_local() -> Self {
        Caller {
            id: HTTP_LOCAL_CALLER.to_owned(),
            scopes: Scopes::all(),
            vault: None,
        }
    }

    // r[impl auth.jwt.vault]
    /// Whether this caller may address the vault `vault_id`.
    pub fn may_use_vault(&self, vault_id: &str) -> bool {
        self.vault.as_deref().is_none_or(|only| only == vault_id)
    }
}

/// The claims the server reads. Unknown claims are ignored: identity providers add many.
#[derive(Debug, Deserialize)]
pub(super) struct Claims {
    sub: String,
    #[serde(default)]
    scope: Option<ScopeClaim>,
    #[serde(default)]
    scp: Option<ScopeClaim>,
    #[serde(default)]
    scopes: Option<ScopeClaim>,
    #[serde(default)]
    vault: Option<String>,
}

/// Scopes arrive as a space-separated string (`scope`, RFC 8693) or as an array (`scp`,
/// `scopes`, as some providers write them).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ScopeClaim {
    Text(String),
    List(Vec<String>),
}

impl ScopeClaim {
    fn into_iter(self) -> Vec<String> {
        match self {
            ScopeClaim::Text(text) => text.split_whitespace().map(str::to_owned).collect(),
            ScopeClaim::List(list) => list,
        }
    }
}

// r[impl auth.jwt.caller]
// r[impl auth.jwt.scopes]
pub(super) fn caller_from(claims: Claims) -> Result<Caller, AuthError> {
    if claims.sub.is_empty() {
        return Err(AuthError::InvalidToken("empty sub".into()));
    }
    // The local callers' ids are not principals a token can name: a token with sub "stdio"
    // could otherwise redeem an approval minted for the local stdio client of a server that
    // shares this cache directory.
    if claims.sub == STDIO_CALLER || claims.sub == HTTP_LOCAL_CALLER {
        return Err(AuthError::InvalidToken(format!(
            "sub {:?} is reserved for local callers",
            claims.sub
        )));
    }
    let scopes: Vec<String> = [claims.scope, claims.scp, claims.scopes]
        .into_iter()
        .flatten()
        .flat_map(ScopeClaim::into_iter)
        .collect();
    Ok(Caller {
        id: claims.sub,
        scopes: Scopes::granted(scopes),
        vault: claims.vault,
    })
}
