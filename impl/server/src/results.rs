//! The shapes of a tool call's result on the wire (spec/results.md `results.success`,
//! `results.failure`; spec/governor.md `governor.single-serialization`; CONTRACT §4).
//!
//! A success carries the result object as `structuredContent` and one text block holding
//! the same JSON. The text is made from the very bytes the governor measured, so the result
//! is serialized once on our side (rmcp then frames the whole response). A failure carries
//! `isError: true`, the `{code, message, retryable, details?, recovery?}` envelope as
//! `structuredContent`, and the text `Error [<code>]: <message>`.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;
use tc_tools::ToolError;

// r[impl results.success]
// r[impl governor.single-serialization]
/// The success result for a result object and its JSON bytes as the governor admitted them.
/// `bytes` must be `structured`'s serialization; they become the text block unchanged.
pub fn success_from_bytes(structured: Value, bytes: Vec<u8>) -> CallToolResult {
    // serde_json only writes UTF-8; a failure here would be a bug in the serializer, and the
    // lossy form still carries the same JSON for every valid input.
    let text = String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned());
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}

// r[impl results.failure]
/// The failure result for a refused or failed call.
pub fn failure(error: &ToolError) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(error.text())]);
    result.structured_content = Some(error.to_structured());
    result
}
