//! The shapes of a tool call's result on the wire (spec/results.md `results.success`,
//! `results.error-blocks`; spec/governor.md `governor.single-serialization`; spec/results.md).
//!
//! A success carries the result object as `structuredContent` and one text block holding
//! the same JSON. The text is made from the very bytes the governor measured, so the result
//! is serialized once on our side (rmcp then frames the whole response). A failure carries
//! `isError: true` and no `structuredContent` (clients check `structuredContent` against the
//! tool's success `outputSchema`, and the TypeScript SDK 1.x rejects the whole result when it
//! does not match), with two text blocks: `Error [<code>]: <message>`, the one an agent is
//! shown, then the JSON envelope `{code, message, retryable, details?, recovery?}`.

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

// r[impl results.error-blocks]
/// The failure result for a refused or failed call.
pub fn failure(error: &ToolError) -> CallToolResult {
    let [text, envelope] = error.text_blocks();
    CallToolResult::error(vec![ContentBlock::text(text), ContentBlock::text(envelope)])
}

/// The code of a failure result, read back from its first text block
/// (`Error [<code>]: …`); `None` for a success or a result of another shape.
pub fn failure_code(result: &CallToolResult) -> Option<String> {
    if result.is_error != Some(true) {
        return None;
    }
    let text = &result.content.first()?.as_text()?.text;
    let rest = text.strip_prefix("Error [")?;
    let end = rest.find("]: ")?;
    Some(rest[..end].to_owned())
}
