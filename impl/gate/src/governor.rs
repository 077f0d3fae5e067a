//! The response governor (spec: `governor.cap`, `governor.counted`, `governor.cost`;
//! spec/results.md `overflow`; spec/events.md `governor_truncations_total`).
//!
//! A tool result is serialized exactly once, straight into a buffer that accepts at most
//! `governor.maxResponseBytes` bytes. The write that would pass the cap fails, which stops
//! serde_json at once, so refusing a 100 MB result costs about what refusing a result just
//! over the cap does: O(cap), never O(size). A result that fits comes back as the very
//! bytes to send; nothing is serialized twice.
//!
//! Each tool-response overflow adds one to this governor's truncation counter
//! (`governor_truncations_total`); the `tc.governor.overflow` event is recorded by the gate
//! facade from the returned [`Overflow`]. A resources/read check goes through
//! [`Governor::fits`], which counts nothing: resource rejections are plain `invalid_input`.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// The cap of the default configuration (`governor.maxResponseBytes`).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1_000_000;

/// The bytes of a tool response around its result object and the text copy of it: the
/// result's own keys (`content`, `type`, `text`, `structuredContent`, `isError`,
/// `resultType`) and the JSON-RPC frame (`jsonrpc`, an `id` of up to 64 bytes, `result`).
pub const RESPONSE_FRAME_BYTES: usize = 256;

/// What `json` costs of a response as sent (spec `governor.measure`): once as
/// `structuredContent`, and once more inside the text block as a JSON string, where every
/// quote, backslash and control character is escaped.
pub fn wire_cost(json: &[u8]) -> usize {
    let escapes: usize = json
        .iter()
        .map(|&b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
            0..=0x1f => 5,
            _ => 0,
        })
        .sum();
    json.len() * 2 + escapes
}

/// A tool response larger than the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, thiserror::Error)]
#[error(
    "the result is {qualifier}{result_size_lower_bound} bytes, over the response limit of {limit} bytes (governor.maxResponseBytes); narrow the request",
    qualifier = if *.exact { "" } else { "at least " }
)]
pub struct Overflow {
    /// The result's size when `exact`, else a lower bound (at least `limit + 1`): the
    /// serializer was stopped there.
    pub result_size_lower_bound: usize,
    pub limit: usize,
    pub exact: bool,
}

impl Overflow {
    /// `details` of the `overflow` error: `result_size` (or its lower bound) and `limit`.
    pub fn details(&self) -> serde_json::Value {
        serde_json::json!({
            "result_size": self.result_size_lower_bound,
            "result_size_is_lower_bound": !self.exact,
            "limit": self.limit,
        })
    }
}

/// Why a result could not be turned into response bytes.
#[derive(Debug, thiserror::Error)]
pub enum BoundedError {
    /// Over the cap (counted).
    #[error(transparent)]
    Overflow(#[from] Overflow),
    /// The value itself cannot be JSON (a non-string map key, a failing `Serialize`);
    /// a server fault, not a size matter, and not counted.
    #[error("the result could not be serialized as JSON: {0}")]
    Serialize(#[source] serde_json::Error),
}

/// The governor of one server: its cap and its truncation counter.
#[derive(Debug)]
pub struct Governor {
    max_response_bytes: usize,
    truncations: AtomicU64,
}

impl Governor {
    pub fn new(max_response_bytes: usize) -> Self {
        Self {
            max_response_bytes,
            truncations: AtomicU64::new(0),
        }
    }

    /// `governor.maxResponseBytes`.
    pub fn limit(&self) -> usize {
        self.max_response_bytes
    }

    /// Overflows counted so far (`governor_truncations_total`).
    pub fn truncations(&self) -> u64 {
        self.truncations.load(Ordering::Relaxed)
    }

    /// Serializes `value` as JSON once, into at most `limit()` bytes.
    // r[impl governor.cap]
    // r[impl governor.cost]
    pub fn serialize_bounded<T: Serialize + ?Sized>(
        &self,
        value: &T,
    ) -> Result<Vec<u8>, BoundedError> {
        let mut writer = CappedWriter {
            buffer: Vec::new(),
            wire: RESPONSE_FRAME_BYTES,
            cap: self.max_response_bytes,
            attempted: None,
        };
        match serde_json::to_writer(&mut writer, value) {
            Ok(()) => Ok(writer.buffer),
            Err(error) => match writer.attempted {
                Some(attempted) => Err(self.overflow(attempted, false).into()),
                None => Err(BoundedError::Serialize(error)),
            },
        }
    }

    /// Admits bytes that were serialized elsewhere, with the same cap and counting.
    pub fn admit_serialized(&self, bytes: Vec<u8>) -> Result<Vec<u8>, Overflow> {
        let wire = wire_cost(&bytes) + RESPONSE_FRAME_BYTES;
        if wire > self.max_response_bytes {
            return Err(self.overflow(wire, true));
        }
        Ok(bytes)
    }

    /// [`Governor::admit_serialized`] for a response carrying `extra` bytes of content beside
    /// the result and its text copy (an image block's base64 and its keys).
    pub fn admit_serialized_beside(
        &self,
        bytes: Vec<u8>,
        extra: usize,
    ) -> Result<Vec<u8>, Overflow> {
        let wire = wire_cost(&bytes) + RESPONSE_FRAME_BYTES + extra;
        if wire > self.max_response_bytes {
            return Err(self.overflow(wire, true));
        }
        Ok(bytes)
    }

    /// Whether `len` bytes are within the cap; counts nothing (for resources/read, judged
    /// by a stat before the file is read).
    pub fn fits(&self, len: u64) -> bool {
        usize::try_from(len).is_ok_and(|len| len <= self.max_response_bytes)
    }

    // r[impl governor.counted]
    fn overflow(&self, size: usize, exact: bool) -> Overflow {
        self.truncations.fetch_add(1, Ordering::Relaxed);
        Overflow {
            result_size_lower_bound: size,
            limit: self.max_response_bytes,
            exact,
        }
    }
}

/// A buffer that refuses the write that would take the response as sent past `cap`.
struct CappedWriter {
    buffer: Vec<u8>,
    /// The response's size as sent so far: the frame, and [`wire_cost`] of the buffer.
    wire: usize,
    cap: usize,
    /// Set on refusal: the size the output would have had with the refused write.
    attempted: Option<usize>,
}

impl io::Write for CappedWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let wanted = self.wire.saturating_add(wire_cost(bytes));
        if wanted > self.cap {
            self.attempted = Some(wanted);
            return Err(io::Error::other("response size limit reached"));
        }
        self.wire = wanted;
        self.buffer.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write(bytes).map(|_| ())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
