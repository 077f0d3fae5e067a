//! `args_hash`: what a confirmation is about, as 32 hex digits (spec/gate.md,
//! clause `gate.hash.args-hash`).
//!
//! `args_hash = hex(SHA-256(tool + " " + canonical_json(args − elicit_token)))[..32]`,
//! computed the same way for every gated tool over the validated, default-filled
//! arguments. The canonical form is ours to fix, and it is fixed here:
//!
//! - object keys are sorted by their UTF-8 bytes (equivalently, by Unicode code point;
//!   *not* by UTF-16 code units as JavaScript's sort would), at every depth;
//! - arrays keep their order;
//! - no whitespace anywhere;
//! - strings use serde_json's escaping: `"` `\` and the control characters below U+0020
//!   are escaped (`\b \f \n \r \t`, others as lowercase `\u00XX`); everything else,
//!   including U+007F, U+2028 and U+2029 and all non-ASCII text, is written as raw UTF-8;
//! - numbers are written as serde_json prints them: an integer that fits `i64`/`u64`
//!   prints as an integer (`1`, `-7`, `18446744073709551615`), anything parsed as a float
//!   prints through the shortest round-trip form (`1.0`, `0.5`, `2000.0`, `1e+100`,
//!   `1.5e-7`), and an integer literal beyond `u64` is a float (`18446744073709551616` →
//!   `1.8446744073709552e+19`).
//!   So `1` and `1.0` hash differently: arguments are hashed after validation, and the
//!   schema decides which one a field holds.
//!
//! `elicit_token` is removed only at the top level: it is the transport of the
//! approval, not part of what is approved; a nested field of that name is ordinary data.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The argument name that carries a CLI token; never part of the hash.
pub const ELICIT_TOKEN_KEY: &str = "elicit_token";

/// Length of an [`ArgsHash`] in hex digits (128 bits).
pub const ARGS_HASH_LEN: usize = 32;

/// The canonical JSON text of `value` (see the module documentation for the rules).
///
/// Iterative rather than recursive, so a deeply nested value built in memory (serde_json's
/// parser stops at depth 128, a caller's own `Value` need not) cannot overflow the stack.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, None, &mut out);
    out
}

/// The canonical JSON text of `value` with one key left out of the outermost object only
/// (as `args_hash` leaves out `elicit_token`, and the read_notes cursor digest `cursor`).
pub fn canonical_json_without_top_level_key(value: &Value, key: &str) -> String {
    let mut out = String::new();
    write_canonical(value, Some(key), &mut out);
    out
}

/// `args_hash` of a call of `tool` with arguments `args` (top-level `elicit_token` ignored).
// r[impl gate.hash.args-hash]
pub fn args_hash(tool: &str, args: &Value) -> ArgsHash {
    let skip = match args {
        Value::Object(_) => Some(ELICIT_TOKEN_KEY),
        _ => None,
    };
    let mut preimage = String::with_capacity(tool.len() + 1 + 64);
    preimage.push_str(tool);
    preimage.push(' ');
    write_canonical(args, skip, &mut preimage);
    let digest = Sha256::digest(preimage.as_bytes());
    let mut hex_digits = hex::encode(digest.as_slice());
    hex_digits.truncate(ARGS_HASH_LEN);
    ArgsHash(hex_digits)
}

/// One pending piece of output for the iterative writer.
enum Step<'a> {
    Value(&'a Value),
    Text(&'static str),
    Key(&'a str),
}

/// Appends the canonical form of `root` to `out`; `skip_top_key` names one key to leave
/// out of the outermost object only.
fn write_canonical(root: &Value, skip_top_key: Option<&str>, out: &mut String) {
    let mut stack: Vec<Step<'_>> = vec![Step::Value(root)];
    let mut at_top = true;
    while let Some(step) = stack.pop() {
        match step {
            Step::Text(text) => out.push_str(text),
            Step::Key(key) => {
                push_json_string(key, out);
                out.push(':');
            }
            Step::Value(value) => {
                let skip = if at_top { skip_top_key } else { None };
                at_top = false;
                match value {
                    Value::Null => out.push_str("null"),
                    Value::Bool(true) => out.push_str("true"),
                    Value::Bool(false) => out.push_str("false"),
                    Value::Number(number) => out.push_str(&number.to_string()),
                    Value::String(text) => push_json_string(text, out),
                    Value::Array(items) => {
                        out.push('[');
                        stack.push(Step::Text("]"));
                        for (index, item) in items.iter().enumerate().rev() {
                            stack.push(Step::Value(item));
                            if index > 0 {
                                stack.push(Step::Text(","));
                            }
                        }
                    }
                    Value::Object(map) => {
                        let mut entries: Vec<(&String, &Value)> = map
                            .iter()
                            .filter(|(key, _)| Some(key.as_str()) != skip)
                            .collect();
                        // String's Ord is byte-wise over UTF-8, which is code-point order.
                        entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                        out.push('{');
                        stack.push(Step::Text("}"));
                        for (index, (key, item)) in entries.iter().enumerate().rev() {
                            stack.push(Step::Value(item));
                            stack.push(Step::Key(key));
                            if index > 0 {
                                stack.push(Step::Text(","));
                            }
                        }
                    }
                }
            }
        }
    }
}

/// serde_json's own string escaping, so the canonical form never disagrees with it.
fn push_json_string(text: &str, out: &mut String) {
    // Serializing a &str into a String buffer cannot fail; fall back to an empty string
    // literal rather than panic if serde_json ever changes that.
    match serde_json::to_string(text) {
        Ok(quoted) => out.push_str(&quoted),
        Err(_) => out.push_str("\"\""),
    }
}

/// A validated args_hash: exactly 32 lowercase hex digits.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ArgsHash(String);

impl ArgsHash {
    /// Validates `text` as an args_hash (as given to `obsidian-tc elicit --hash`).
    pub fn parse(text: &str) -> Result<Self, ArgsHashError> {
        let well_formed = text.len() == ARGS_HASH_LEN
            && text
                .bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte));
        if well_formed {
            Ok(Self(text.to_owned()))
        } else {
            Err(ArgsHashError {
                length: text.chars().count(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ArgsHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ArgsHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ArgsHash({})", self.0)
    }
}

impl AsRef<str> for ArgsHash {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl FromStr for ArgsHash {
    type Err = ArgsHashError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl TryFrom<String> for ArgsHash {
    type Error = ArgsHashError;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        Self::parse(&text)
    }
}

impl From<ArgsHash> for String {
    fn from(hash: ArgsHash) -> Self {
        hash.0
    }
}

/// A string that is not an args_hash. Does not echo the input (it may be anything).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "not an args_hash: expected exactly 32 lowercase hex digits (0-9, a-f), got a {length}-character string; copy details.args_hash from the elicit_required error"
)]
pub struct ArgsHashError {
    length: usize,
}

#[cfg(test)]
mod rendering_tests {
    use super::*;

    // Every rendering of a hash is the same 32 hex digits the CLI's --hash takes back.
    #[test]
    fn a_hash_renders_as_its_hex_in_every_form() {
        let hash = args_hash("delete_note", &serde_json::json!({"path": "a.md"}));
        let hex = hash.to_string();
        assert_eq!(hex.len(), 32);
        assert_eq!(hash.as_ref(), hex);
        assert_eq!(format!("{hash:?}"), format!("ArgsHash({hex})"));
        assert_eq!(ArgsHash::parse(hash.as_ref()).unwrap(), hash);
    }
}
