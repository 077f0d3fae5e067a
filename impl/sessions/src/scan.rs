//! What a trace may keep of a call's arguments (spec/sessions.md `sessions.trace.content`,
//! `sessions.trace.redacted`, `sessions.trace.capped`).
//!
//! With `traceContent` on, the arguments are kept so the call can be run again, but a
//! trace is a file on disk that outlives the call, so nothing credential-shaped goes in:
//!
//! - the value of every key whose name looks like a secret's (`token`, `secret`,
//!   `password`, `api_key`, `auth`, `credential`, `private_key`, `cookie`, in snake or
//!   camel case: `accessToken`, `x-api-key`) is replaced;
//! - every string is passed through the summaries' credential patterns
//!   ([`tc_tools::redact_secrets`]: bearer tokens, JWTs, `sk-`/`ghp_` keys, PEM private
//!   keys, `password = …` assignments);
//! - and every run of 32 or more base64/base64url characters mixing letters and digits
//!   with more than 4.3 bits of entropy a character (a random key, a sealed cursor; hex,
//!   such as a `prev_hash`, has at most 4 bits and is kept) is replaced.
//!
//! A call whose arguments were changed is marked `redacted: true` and is never run again
//! (its arguments are no longer the call's). Arguments over [`MAX_ARGS_BYTES`] once
//! serialized are not kept at all: the line is marked `capped: true`.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::{Map, Value};

/// The most bytes of serialized arguments one trace line keeps (64 KiB).
pub const MAX_ARGS_BYTES: usize = 64 * 1024;

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// The arguments a trace line keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    /// `None` when capped.
    pub args: Option<Value>,
    pub redacted: bool,
    pub capped: bool,
}

/// The arguments as a trace keeps them: without `elicit_token`, secret-scanned, capped.
pub fn keep(arguments: &Value) -> Kept {
    let mut args = arguments.clone();
    if let Value::Object(map) = &mut args {
        map.remove(tc_gate::args_hash::ELICIT_TOKEN_KEY);
    }
    let redacted = scrub(&mut args);
    let size = serde_json::to_vec(&args).map_or(usize::MAX, |bytes| bytes.len());
    if size > MAX_ARGS_BYTES {
        return Kept {
            args: None,
            redacted,
            capped: true,
        };
    }
    Kept {
        args: Some(args),
        redacted,
        capped: false,
    }
}

/// Replaces what looks like a secret in `value`; true when anything was replaced.
fn scrub(value: &mut Value) -> bool {
    match value {
        Value::Object(map) => scrub_map(map),
        Value::Array(items) => {
            let mut any = false;
            for item in items {
                any |= scrub(item);
            }
            any
        }
        Value::String(text) => match scrub_text(text) {
            Some(clean) => {
                *text = clean;
                true
            }
            None => false,
        },
        _ => false,
    }
}

fn scrub_map(map: &mut Map<String, Value>) -> bool {
    let mut any = false;
    for (key, value) in map.iter_mut() {
        if secret_key(key) && !matches!(value, Value::Null) {
            *value = Value::String(REDACTED.to_owned());
            any = true;
        } else {
            any |= scrub(value);
        }
    }
    any
}

/// Whether a key names a secret: one of the secret words as a whole word of the key in
/// snake case (`accessToken` → `access_token`; `author` is not `auth`).
pub fn secret_key(key: &str) -> bool {
    static WORDS: OnceLock<Option<Regex>> = OnceLock::new();
    let mut snake = String::with_capacity(key.len() + 4);
    let mut previous_lower = false;
    for c in key.chars() {
        if c.is_uppercase() && previous_lower {
            snake.push('_');
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        snake.extend(c.to_lowercase());
    }
    WORDS
        .get_or_init(|| {
            Regex::new(
                r"(^|[^a-z])(tokens?|secrets?|password|passwd|passphrase|api[_-]?key|apikey|auth|authorization|credentials?|private[_-]?key|cookies?|bearer)($|[^a-z])",
            )
            .ok()
        })
        .as_ref()
        .is_some_and(|re| re.is_match(&snake))
}

/// `text` with its credentials replaced, or `None` when it shows none.
fn scrub_text(text: &str) -> Option<String> {
    static OPAQUE: OnceLock<Option<Regex>> = OnceLock::new();
    let mut out = tc_tools::redact_secrets(text);
    let opaque = OPAQUE
        .get_or_init(|| Regex::new(r"[A-Za-z0-9+/_=-]{32,}").ok())
        .as_ref();
    if let Some(re) = opaque
        && re.find_iter(&out).any(|m| random_looking(m.as_str()))
    {
        out = re
            .replace_all(&out, |caps: &regex::Captures<'_>| {
                let run = &caps[0];
                if random_looking(run) {
                    REDACTED.to_owned()
                } else {
                    run.to_owned()
                }
            })
            .into_owned();
    }
    (out != text).then_some(out)
}

/// A run that mixes letters and digits with more than 4.3 bits of entropy a character.
fn random_looking(run: &str) -> bool {
    let bytes = run.as_bytes();
    if !bytes.iter().any(u8::is_ascii_digit) || !bytes.iter().any(u8::is_ascii_alphabetic) {
        return false;
    }
    let mut counts = [0u32; 256];
    for b in bytes {
        counts[usize::from(*b)] += 1;
    }
    let n = bytes.len() as f64;
    let entropy: f64 = counts
        .iter()
        .filter(|c| **c > 0)
        .map(|c| {
            let p = f64::from(*c) / n;
            -p * p.log2()
        })
        .sum();
    entropy > 4.3
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn secret_keys_in_snake_and_camel_case() {
        for key in [
            "token",
            "api_key",
            "apiKey",
            "x-api-key",
            "accessToken",
            "client_secret",
            "password",
            "Authorization",
            "auth",
            "private_key",
            "session_cookie",
        ] {
            assert!(secret_key(key), "{key}");
        }
        for key in [
            "author",
            "path",
            "content",
            "session_id",
            "max_tokenize",
            "prev_hash",
            "keys",
        ] {
            assert!(!secret_key(key), "{key}");
        }
    }

    #[test]
    fn plain_arguments_are_kept_as_sent_without_the_token() {
        let args = json!({"path": "a/b.md", "content": "# Hello\nworld 2026",
            "prev_hash": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "elicit_token": "et_abc"});
        let kept = keep(&args);
        assert!(!kept.redacted && !kept.capped);
        let mut expected = args.clone();
        expected.as_object_mut().unwrap().remove("elicit_token");
        assert_eq!(kept.args, Some(expected));
    }

    #[test]
    fn secrets_are_replaced_and_marked() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZGEifQ.c2lnbmF0dXJlLWJ5dGVz";
        let args = json!({
            "data": {"apiKey": "abc123", "title": "ok"},
            "content": format!("call with {jwt} please"),
            "cursor": "Zm9vYmFyLTEyMzQ1Njc4OTAtWFlaLXF3ZXJ0eS1hc2RmZ2gtenhjdmJu",
            "list": ["sk-abcdefghijklmnop1234", "plain words"]
        });
        let kept = keep(&args);
        assert!(kept.redacted);
        let text = kept.args.unwrap().to_string();
        assert!(!text.contains("abc123"), "{text}");
        assert!(!text.contains(jwt), "{text}");
        assert!(!text.contains("Zm9vYmFy"), "{text}");
        assert!(!text.contains("sk-abcdefghijklmnop1234"), "{text}");
        assert!(text.contains("plain words") && text.contains("\"title\":\"ok\""));
    }

    #[test]
    fn long_arguments_are_not_kept() {
        let kept = keep(&json!({"content": "x".repeat(MAX_ARGS_BYTES)}));
        assert!(kept.capped);
        assert_eq!(kept.args, None);
        let kept = keep(&json!({"content": "x".repeat(MAX_ARGS_BYTES - 100)}));
        assert!(!kept.capped);
    }
}
