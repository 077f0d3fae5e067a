//! A session's trace: one JSON line per call in `<cacheDir>/sessions/<session id>.jsonl`
//! (spec/sessions.md `sessions.trace.*`).
//!
//! The folder is made 0700 and each file 0600 (they hold what an agent did, and with
//! `traceContent` what it sent), and both live under the cache directory, never inside a
//! vault. A line is written with one `write` on a file opened `O_APPEND`, then
//! `fsync`ed, so a recorded call survives a crash of the server right after it. A process
//! killed in the middle of a `write` can leave a last line without its newline: readers
//! skip such a torn line (and any line that does not parse) and count it, instead of
//! failing the whole trace.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The folder of the traces under the cache directory.
pub const TRACE_DIR: &str = "sessions";

/// How a call ended, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// A result.
    Ok,
    /// A refusal or failure (`isError: true`), with its code.
    Error,
    /// The modern round trip's first answer: a confirmation was asked for.
    InputRequired,
}

impl CallStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Ok => "ok",
            CallStatus::Error => "error",
            CallStatus::InputRequired => "input_required",
        }
    }
}

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceLine {
    /// The call's number in its session, from 1.
    pub n: u64,
    /// When the call ended (RFC 3339, UTC, milliseconds).
    pub time: String,
    pub time_ms: i64,
    pub tool: String,
    /// The gate's args_hash of the call when it got that far (its arguments validated),
    /// else the same hash over the arguments as sent.
    pub args_hash: String,
    pub status: CallStatus,
    /// The error's code when `status` is `error`.
    pub error_code: Option<String>,
    pub duration_ms: u64,
    /// The bytes of the result object (or of the refusal) as sent.
    pub result_bytes: u64,
    /// The arguments as sent, without `elicit_token` (with `traceContent` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// Something credential-shaped in the arguments was replaced.
    #[serde(default, skip_serializing_if = "is_false")]
    pub redacted: bool,
    /// The arguments were over the cap and were not kept.
    #[serde(default, skip_serializing_if = "is_false")]
    pub capped: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// The trace file of `session_id` under `cache_dir`.
pub fn trace_path(cache_dir: &Path, file_name: &str) -> PathBuf {
    cache_dir.join(TRACE_DIR).join(file_name)
}

// r[impl sessions.trace.durable]
/// Appends `line` (one `write` of the JSON and its newline, `O_APPEND`, then `fsync`).
/// When the file ends in a torn line (a process killed mid-write), a newline goes first,
/// so the torn bytes stay one unreadable line and this one reads.
pub fn append(path: &Path, line: &TraceLine) -> io::Result<()> {
    let json = serde_json::to_vec(line).map_err(io::Error::other)?;
    let mut file = open_append(path)?;
    let len = file.metadata()?.len();
    let mut bytes = Vec::with_capacity(json.len() + 2);
    if len > 0 {
        let mut last = [0u8; 1];
        file.read_exact_at(&mut last, len - 1)?;
        if last[0] != b'\n' {
            bytes.push(b'\n');
        }
    }
    bytes.extend_from_slice(&json);
    bytes.push(b'\n');
    file.write_all(&bytes)?;
    file.sync_data()
}

/// Creates an empty trace file (0600) in its 0700 folder.
pub fn create(path: &Path) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        tc_gate::private_fs::create_private_dir_all(dir)?;
    }
    let file = tc_gate::private_fs::create_private_file(path)?;
    file.sync_all()?;
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(tc_gate::private_fs::PRIVATE_FILE_MODE)
        .open(path)
}

/// A trace as read back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    pub lines: Vec<TraceLine>,
    /// A last line without its newline (a write cut short), skipped.
    pub torn: usize,
    /// Complete lines that do not parse as a trace line, skipped.
    pub unreadable: usize,
    /// SHA-256 of the file's bytes as read (hex).
    pub sha256: String,
    pub bytes: u64,
}

/// The SHA-256 (hex) of a trace file's bytes; `None` when it does not exist.
pub fn digest(path: &Path) -> io::Result<Option<(String, u64)>> {
    match read_bytes(path)? {
        Some(bytes) => Ok(Some((
            hex::encode(Sha256::digest(&bytes)),
            bytes.len() as u64,
        ))),
        None => Ok(None),
    }
}

fn read_bytes(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

// r[impl sessions.trace.torn-line]
/// Reads a trace, skipping a torn last line and lines that do not parse; a missing file
/// reads as empty.
pub fn read(path: &Path) -> io::Result<Trace> {
    let bytes = read_bytes(path)?.unwrap_or_default();
    Ok(parse(&bytes))
}

/// [`read`] over bytes already read.
pub fn parse(bytes: &[u8]) -> Trace {
    let mut trace = Trace {
        sha256: hex::encode(Sha256::digest(bytes)),
        bytes: bytes.len() as u64,
        ..Trace::default()
    };
    let mut rest = bytes;
    while !rest.is_empty() {
        let Some(end) = rest.iter().position(|b| *b == b'\n') else {
            trace.torn += 1;
            break;
        };
        let line = &rest[..end];
        rest = &rest[end + 1..];
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<TraceLine>(line) {
            Ok(parsed) => trace.lines.push(parsed),
            Err(_) => trace.unreadable += 1,
        }
    }
    trace
}

/// `ms` since the epoch as RFC 3339 UTC with milliseconds (`2026-11-30T12:00:00.000Z`).
pub fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        of_day / 3600,
        (of_day % 3600) / 60,
        of_day % 60
    )
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use serde_json::json;

    use super::*;

    fn line(n: u64) -> TraceLine {
        TraceLine {
            n,
            time: rfc3339(1_796_040_000_000 + n as i64),
            time_ms: 1_796_040_000_000 + n as i64,
            tool: "read_notes".into(),
            args_hash: "ab".repeat(16),
            status: CallStatus::Ok,
            error_code: None,
            duration_ms: 3,
            result_bytes: 120,
            args: Some(json!({"paths": ["a.md"]})),
            redacted: false,
            capped: false,
        }
    }

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(1_796_040_000_000), "2026-11-30T12:00:00.000Z");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_123), "2000-02-29T00:00:00.123Z");
    }

    // r[verify sessions.trace.durable]
    #[test]
    fn lines_append_in_order_in_private_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = trace_path(&dir.path().join("cache"), "s1.jsonl");
        create(&path).unwrap();
        append(&path, &line(1)).unwrap();
        append(&path, &line(2)).unwrap();
        let trace = read(&path).unwrap();
        assert_eq!(trace.lines, vec![line(1), line(2)]);
        assert_eq!((trace.torn, trace.unreadable), (0, 0));
        let file_mode = std::fs::metadata(&path).unwrap().permissions().mode();
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(file_mode & 0o777, 0o600, "{file_mode:o}");
        assert_eq!(dir_mode & 0o777, 0o700, "{dir_mode:o}");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.lines().all(|l| l.starts_with('{') && l.ends_with('}')));
    }

    // r[verify sessions.trace.torn-line]
    #[test]
    fn a_torn_last_line_and_a_garbled_line_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        append(&path, &line(1)).unwrap();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"not json at all\n").unwrap();
        drop(file);
        append(&path, &line(3)).unwrap();
        // A killed process: half of a line, no newline.
        let full = serde_json::to_string(&line(4)).unwrap();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(&full.as_bytes()[..full.len() / 2]).unwrap();
        drop(file);
        let trace = read(&path).unwrap();
        assert_eq!(trace.lines, vec![line(1), line(3)]);
        assert_eq!(trace.torn, 1);
        assert_eq!(trace.unreadable, 1);
        // The next append ends the torn line first: it stays one unreadable line, and
        // the new one reads.
        append(&path, &line(5)).unwrap();
        let trace = read(&path).unwrap();
        assert_eq!(trace.lines, vec![line(1), line(3), line(5)]);
        assert_eq!((trace.torn, trace.unreadable), (0, 2));
    }

    #[test]
    fn a_missing_trace_reads_empty_and_the_digest_follows_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("none.jsonl");
        assert_eq!(read(&path).unwrap().lines, vec![]);
        assert_eq!(digest(&path).unwrap(), None);
        append(&path, &line(1)).unwrap();
        let (first, _) = digest(&path).unwrap().unwrap();
        append(&path, &line(2)).unwrap();
        let (second, size) = digest(&path).unwrap().unwrap();
        assert_ne!(first, second);
        assert_eq!(read(&path).unwrap().sha256, second);
        assert_eq!(read(&path).unwrap().bytes, size);
    }
}
