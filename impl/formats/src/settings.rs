//! The two settings files the format tools edit, `.obsidian/bookmarks.json` and
//! `.obsidian/workspaces.json` (spec/formats.md `formats.settings.*`): no vault path reaches
//! them, so they are read and written here, by name only.
//!
//! A file is read as JSON that keeps its keys in order ([`Json`]) and written back with the
//! indentation it had (Obsidian writes two spaces), so an edit changes only what it edits.
//! A write checks, under a lock, that the file is still what the call read, then replaces
//! it atomically (a temporary file renamed over it). The settings folder or file being a link
//! is refused: what the tools change stays inside the vault.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use tc_tools::{ErrorCode, TargetState, ToolCx, ToolError};
use tc_vault::vault::content_hash;

/// The largest settings file read (Obsidian's are a few kilobytes).
pub const MAX_BYTES: u64 = 4 << 20;

/// Writes of settings files are made one at a time, so the check that the file is still the
/// one read and the rename that replaces it cannot interleave with another call's.
static WRITES: Mutex<()> = Mutex::new(());

/// A JSON value whose objects keep their keys in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Object(entries) => entries.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// Sets `key`, in its place when it is there, else at the end.
    pub fn set(&mut self, key: &str, value: Json) {
        if let Json::Object(entries) = self {
            match entries.iter_mut().find(|(k, _)| k == key) {
                Some(slot) => slot.1 = value,
                None => entries.push((key.to_owned(), value)),
            }
        }
    }

    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.clone()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }

    pub fn from_value(value: &Value) -> Json {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(n.clone()),
            Value::String(s) => Json::String(s.clone()),
            Value::Array(items) => Json::Array(items.iter().map(Json::from_value).collect()),
            Value::Object(map) => Json::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), Json::from_value(v)))
                    .collect(),
            ),
        }
    }

    /// The value as `JSON.stringify(value, null, indent)` writes it (compact when `indent`
    /// is empty).
    pub fn write(&self, indent: &str) -> String {
        let mut out = String::new();
        self.write_into(indent, 0, &mut out);
        out
    }

    fn write_into(&self, indent: &str, level: usize, out: &mut String) {
        let newline = |out: &mut String, level: usize| {
            if !indent.is_empty() {
                out.push('\n');
                out.push_str(&indent.repeat(level));
            }
        };
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => out.push_str(&n.to_string()),
            Json::String(s) => out.push_str(&Value::String(s.clone()).to_string()),
            Json::Array(items) if items.is_empty() => out.push_str("[]"),
            Json::Object(entries) if entries.is_empty() => out.push_str("{}"),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, level + 1);
                    item.write_into(indent, level + 1, out);
                }
                newline(out, level);
                out.push(']');
            }
            Json::Object(entries) => {
                out.push('{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, level + 1);
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    if !indent.is_empty() {
                        out.push(' ');
                    }
                    value.write_into(indent, level + 1, out);
                }
                newline(out, level);
                out.push('}');
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        struct JsonVisitor;

        impl<'de> Visitor<'de> for JsonVisitor {
            type Value = Json;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
                Ok(Json::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
                Ok(Json::Number(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
                Ok(Json::Number(n.into()))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Json, E> {
                Number::from_f64(n)
                    .map(Json::Number)
                    .ok_or_else(|| E::custom("a number JSON cannot hold"))
            }
            fn visit_str<E>(self, s: &str) -> Result<Json, E> {
                Ok(Json::String(s.to_owned()))
            }
            fn visit_string<E>(self, s: String) -> Result<Json, E> {
                Ok(Json::String(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Json>()? {
                    entries.push((key, value));
                }
                Ok(Json::Object(entries))
            }
        }

        deserializer.deserialize_any(JsonVisitor)
    }
}

/// A settings file as read: its JSON (an empty object when there is none), the indentation
/// it is written with, and its hash (`None` when absent).
#[derive(Debug, Clone)]
pub struct Settings {
    pub json: Json,
    pub indent: String,
    pub hash: Option<String>,
}

impl Settings {
    /// The text to write for `json`, in this file's indentation.
    pub fn text_of(&self, json: &Json) -> String {
        json.write(&self.indent)
    }
}

fn refused(rel: &str, why: impl std::fmt::Display) -> ToolError {
    ToolError::new(ErrorCode::InvalidInput, format!("{rel}: {why}"))
}

/// Where `rel` is, refusing a settings folder or file that is a link.
fn location(cx: &ToolCx<'_>, rel: &str) -> Result<PathBuf, ToolError> {
    let root = cx.vault().root().path();
    let full = root.join(rel);
    let mut at: &Path = &full;
    while let Some(parent) = at.parent() {
        if at == root {
            break;
        }
        if fs::symlink_metadata(at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(refused(
                rel,
                "is reached through a link, which these tools do not follow",
            ));
        }
        at = parent;
    }
    Ok(full)
}

/// The indentation of a file's text: that of its first indented line (none when compact).
fn indent_of(text: &str) -> String {
    text.lines()
        .nth(1)
        .map(|line| {
            line.chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect()
        })
        .unwrap_or_default()
}

/// Reads the settings file `rel` (relative to the vault root).
pub fn read(cx: &ToolCx<'_>, rel: &str) -> Result<Settings, ToolError> {
    let full = location(cx, rel)?;
    let meta = match fs::metadata(&full) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Settings {
                json: Json::Object(Vec::new()),
                indent: "  ".into(),
                hash: None,
            });
        }
        Err(e) => return Err(refused(rel, e)),
    };
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return Err(refused(
            rel,
            format!("is not a file of at most {MAX_BYTES} bytes"),
        ));
    }
    let bytes = fs::read(&full).map_err(|e| refused(rel, e))?;
    let text = String::from_utf8_lossy(&bytes);
    let json: Json = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|e| refused(rel, format!("is not JSON: {e}")))?;
    if !matches!(json, Json::Object(_)) {
        return Err(refused(rel, "is not a JSON object"));
    }
    Ok(Settings {
        json,
        indent: indent_of(&text),
        hash: Some(content_hash(&bytes)),
    })
}

/// What a gated call on the settings file `rel` is bound to: the file's content hash as
/// `tool` saw it ("absent" when there is none), kept for its handler to compare under write.
pub fn bound_state(
    cx: &ToolCx<'_>,
    tool: &str,
    rel: &str,
) -> Result<TargetState<Option<String>>, ToolError> {
    let hash = read(cx, rel)?.hash;
    Ok(TargetState {
        fp: tc_gate::fingerprint_custom(&[
            tool.as_bytes(),
            hash.as_deref().unwrap_or("absent").as_bytes(),
        ]),
        observed: Vec::new(),
        seen: std::sync::Arc::new(hash),
    })
}

/// `cx`'s conventions on writing `rel`: `forbidWrites` holds for settings files too.
pub fn preflight(cx: &ToolCx<'_>, rel: &str) -> Result<(), ToolError> {
    cx.binding
        .conventions
        .judge_settings_file(rel)
        .map_err(|blocked| ToolError::convention(&blocked))
}

/// Replaces `rel` with `text` if its hash is still `expected` (`None`: absent); the new hash.
pub fn write(
    cx: &ToolCx<'_>,
    rel: &str,
    text: &str,
    expected: Option<&str>,
) -> Result<String, ToolError> {
    let full = location(cx, rel)?;
    let _one_at_a_time = WRITES.lock().unwrap_or_else(|e| e.into_inner());
    let now = match fs::read(&full) {
        Ok(bytes) => Some(content_hash(&bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(refused(rel, e)),
    };
    if now.as_deref() != expected {
        return Err(tc_vault::VaultError::ConcurrentModification {
            path: rel.to_owned(),
            expected: expected.unwrap_or("absent").to_owned(),
            actual: now.unwrap_or_else(|| "absent".into()),
        }
        .into());
    }
    let dir = full.parent().ok_or_else(|| refused(rel, "has no folder"))?;
    fs::create_dir_all(dir).map_err(|e| refused(rel, e))?;
    let temp = dir.join(format!(".{}.obsidian-tc.tmp", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut file = fs::File::create(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs::rename(&temp, &full)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(refused(rel, e));
    }
    Ok(content_hash(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_key_order_and_indentation() {
        let text = "{\n  \"items\": [\n    {\n      \"type\": \"file\",\n      \"ctime\": 1700000000000,\n      \"path\": \"a.md\",\n      \"title\": \"A \\\"q\\\" é\"\n    }\n  ],\n  \"zeta\": {},\n  \"alpha\": [],\n  \"n\": 1.5\n}";
        let json: Json = serde_json::from_str(text).unwrap();
        assert_eq!(json.write(&indent_of(text)), text);
        assert!(
            json.write("")
                .starts_with("{\"items\":[{\"type\":\"file\",\"ctime\":1700000000000,"),
            "{}",
            json.write("")
        );
        assert!(
            json.write("")
                .ends_with("\"zeta\":{},\"alpha\":[],\"n\":1.5}")
        );
        let tabs = "{\n\t\"a\": 1\n}";
        let json: Json = serde_json::from_str(tabs).unwrap();
        assert_eq!(json.write(&indent_of(tabs)), tabs);
    }
}
