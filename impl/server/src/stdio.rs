//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout, as rmcp's
//! `AsyncRwTransport` frames it, plus the answers that transport does not give (spec/cli.md
//! `cli.serve.stdio-parse-error`, `cli.serve.stdio-invalid-params`).
//!
//! rmcp 3.11 drops a line that is not JSON without a word (its issue #938), so a client that
//! made a typo waits forever, and it hands a request whose params fail the method's schema to
//! the handler as a `CustomRequest`, which answers "method not found". [`JsonLines`] reads
//! the lines itself and answers both: -32700 with `"id": null` (JSON-RPC 2.0 §5: the id
//! could not be read; rmcp's own error type cannot carry a null id), and -32602 with the
//! request's id. Every other line becomes rmcp's `ClientJsonRpcMessage`, so the service sees
//! exactly what rmcp's transport would have given it.
//!
//! Framing follows rmcp's `AsyncRwTransport`: a message is one `\n`-terminated line (a
//! trailing `\r` and a leading UTF-8 BOM are ignored), blank lines are skipped, a message
//! longer than [`MAX_MESSAGE_BYTES`] (the line without its `\n`; the same limit the HTTP
//! transport puts on a request body, spec `config.message-limit.addressed`) is dropped,
//! logged and answered with -32600 under the request's id when the message's first 64 KiB
//! show it (`"id": null` otherwise), and bytes after the last newline at end of input
//! are no message. Every outgoing message is written whole, in
//! order, through one writer, so a reply of the transport's own never splits a response.
//! While [`MAX_UNWRITTEN_MESSAGES`] messages wait to be written (the client is not reading
//! stdout), no further line is read (spec `cli.serve.stdio-backpressure`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CancelTaskMethod, CancelTaskRequest,
    ClientJsonRpcMessage, ClientRequest, CompleteRequest, CompleteRequestMethod, ConstString,
    CustomRequest, DiscoverRequest, DiscoverRequestMethod, ErrorData, GetPromptRequest,
    GetPromptRequestMethod, GetSkillRequest, GetSkillRequestMethod, GetTaskMethod, GetTaskRequest,
    InitializeRequest, InitializeResultMethod, JsonRpcMessage, ListPromptsRequest,
    ListPromptsRequestMethod, ListResourceTemplatesRequest, ListResourceTemplatesRequestMethod,
    ListResourcesRequest, ListResourcesRequestMethod, ListSkillsRequest, ListSkillsRequestMethod,
    ListToolsRequest, ListToolsRequestMethod, PingRequest, PingRequestMethod,
    ReadResourceDirectoryRequest, ReadResourceDirectoryRequestMethod, ReadResourceRequest,
    ReadResourceRequestMethod, RequestId, ServerJsonRpcMessage, SetLevelRequestMethod,
    SubscribeRequestMethod, SubscriptionsListenRequest, SubscriptionsListenRequestMethod,
    UnsubscribeRequestMethod, UpdateTaskMethod, UpdateTaskRequest,
};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
pub use rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

mod id_scan;
use id_scan::ID_SCAN_BYTES;

// r[impl config.message-limit.addressed]
/// The most bytes one JSON-RPC message may have, on stdio (one line, its `\n` not counted)
/// and over HTTP (one request body) alike: 4 MiB, rmcp's own default for HTTP bodies. A
/// bigger message is refused whole, never cut.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// UTF-8 byte order mark, which RFC 8259 §8.1 lets a parser ignore (as rmcp does).
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

// r[impl cli.serve.stdio-backpressure]
/// The most messages sent but not yet written to stdout before the transport stops reading
/// stdin: rmcp spawns every send as a task of its own, so without this bound a client that
/// sends requests and never reads the answers makes the server hold them all.
pub const MAX_UNWRITTEN_MESSAGES: usize = 64;

/// How many sends are not yet written, and a wake-up for the reader when one is.
#[derive(Default)]
struct Unwritten {
    count: std::sync::atomic::AtomicUsize,
    written: tokio::sync::Notify,
}

/// One send counted in [`Unwritten`] until it is written, fails or is dropped.
struct UnwrittenSend(Arc<Unwritten>);

impl UnwrittenSend {
    fn new(unwritten: &Arc<Unwritten>) -> Self {
        unwritten
            .count
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        UnwrittenSend(Arc::clone(unwritten))
    }
}

impl Drop for UnwrittenSend {
    fn drop(&mut self) {
        self.0
            .count
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
        self.0.written.notify_waiters();
    }
}

/// Waits while [`MAX_UNWRITTEN_MESSAGES`] sends are not yet written (the client is not
/// reading stdout), so no more requests are read meanwhile. Cancellation-safe: it holds
/// nothing across its awaits.
async fn wait_for_the_client_to_read(unwritten: Arc<Unwritten>) {
    loop {
        let written = unwritten.written.notified();
        tokio::pin!(written);
        // Registered before the count is read, so a write finishing in between wakes it.
        written.as_mut().enable();
        if unwritten.count.load(std::sync::atomic::Ordering::Acquire) < MAX_UNWRITTEN_MESSAGES {
            return;
        }
        written.await;
    }
}

/// A reply of the transport's own, being written.
type Reply = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

/// MCP over newline-delimited JSON on `R` and `W` (stdin and stdout when serving).
pub struct JsonLines<R, W> {
    read: BufReader<R>,
    /// The line being read; it survives a cancelled `receive` (rmcp polls `receive` inside
    /// a `select!`), so a partly read line is resumed, never lost.
    line: Vec<u8>,
    /// Set while the rest of an oversized line is being skipped.
    discarding: bool,
    max_line_length: usize,
    out: Arc<Mutex<Output<W>>>,
    /// A reply owed to a line already read; finished before the next line is read, and kept
    /// across a cancelled `receive`.
    reply: Option<Reply>,
    unwritten: Arc<Unwritten>,
}

impl<R, W> std::fmt::Debug for JsonLines<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonLines")
            .field("buffered_line_bytes", &self.line.len())
            .field("discarding", &self.discarding)
            .field("max_line_length", &self.max_line_length)
            .field("reply_pending", &self.reply.is_some())
            .finish_non_exhaustive()
    }
}

impl<R, W> JsonLines<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(read: R, write: W) -> Self {
        JsonLines {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            max_line_length: MAX_MESSAGE_BYTES,
            out: Arc::new(Mutex::new(Output {
                write: Some(write),
                pending: Vec::new(),
                written: 0,
            })),
            reply: None,
            unwritten: Arc::default(),
        }
    }

    /// Overrides the longest message accepted, in bytes without the line's `\n`
    /// ([`MAX_MESSAGE_BYTES`] by default).
    pub fn with_max_line_length(mut self, max_line_length: usize) -> Self {
        self.max_line_length = max_line_length;
        self
    }

    /// Reads one `\n`-terminated line into `self.line`, never letting it grow past the cap.
    /// Cancellation-safe: every byte taken from the reader is in `self.line` (or skipped, if
    /// discarding) before the next await.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(available) => available,
                Err(e) => return LineRead::Io(e),
            };
            if available.is_empty() {
                return LineRead::Eof;
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let outcome = if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                }
                None
            } else if self
                .line
                .len()
                .saturating_add(take - usize::from(newline.is_some()))
                > self.max_line_length
            {
                // The id is read from the message's start before the rest is dropped;
                // nothing past the limit is ever held.
                let wanted = ID_SCAN_BYTES.saturating_sub(self.line.len()).min(take);
                self.line.extend_from_slice(&available[..wanted]);
                let id = id_scan::request_id_in(&self.line);
                self.line.clear();
                self.discarding = newline.is_none();
                Some(LineRead::Oversized(id))
            } else {
                self.line.extend_from_slice(&available[..take]);
                newline.map(|_| LineRead::Line)
            };
            self.read.consume(take);
            if let Some(outcome) = outcome {
                return outcome;
            }
        }
    }
}

enum LineRead {
    Line,
    /// Over the limit; the request's id, when its start shows one.
    Oversized(Option<RequestId>),
    Eof,
    Io(io::Error),
}

/// What a line read from the client comes to.
#[expect(
    clippy::large_enum_variant,
    reason = "lives only between judging a line and acting on it; boxing would allocate per message"
)]
enum Verdict {
    /// A message for the service.
    Deliver(ClientJsonRpcMessage),
    /// Answered by the transport itself; the service never sees it.
    Answer(Vec<u8>),
    /// Nothing to do: a blank line, or a malformed notification (never answered).
    Skip,
}

// r[impl cli.serve.stdio-parse-error]
// r[impl cli.serve.stdio-invalid-params]
/// Judges one line (its `\n` included).
fn judge(line: &[u8]) -> Verdict {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(UTF8_BOM).unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Skip;
    }
    let error = match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(message) => {
            return match invalid_params(&message) {
                Some((id, error)) => {
                    Verdict::Answer(encode(&ServerJsonRpcMessage::error(error, Some(id))))
                }
                None => Verdict::Deliver(message),
            };
        }
        Err(error) => error,
    };
    // rmcp's message type is untagged: a value followed by more characters fails it as data
    // before the trailing characters are read, so whether the line is JSON at all is asked
    // separately (only on this failure path). It is read as a whole value, not skipped over:
    // skipping does not look inside strings, where bytes that are not UTF-8 (JSON text is
    // UTF-8, RFC 8259 §8.1) would pass.
    let value = match serde_json::from_slice::<Value>(line) {
        Ok(value) => value,
        Err(syntax) => {
            tracing::debug!("stdio: a line that is not JSON: {syntax}");
            return Verdict::Answer(unaddressed(ErrorData::parse_error(
                format!("Parse error: the line is not JSON ({syntax})"),
                None,
            )));
        }
    };
    // Well-formed JSON that is no JSON-RPC message (as rmcp: Invalid Request), unless it is
    // a notification, which JSON-RPC never answers.
    let is_notification =
        value.get("id").is_none() && value.get("method").is_some_and(Value::is_string);
    if is_notification {
        tracing::debug!("stdio: ignoring a malformed notification: {error}");
        return Verdict::Skip;
    }
    let message = format!("Invalid request: {error}");
    match value.get("id").and_then(request_id) {
        Some(id) => Verdict::Answer(encode(&ServerJsonRpcMessage::error(
            ErrorData::invalid_request(message, None),
            Some(id),
        ))),
        None => Verdict::Answer(unaddressed(ErrorData::invalid_request(message, None))),
    }
}

/// The id of a request, when JSON-RPC allows it (a string or an integer).
fn request_id(id: &Value) -> Option<RequestId> {
    serde_json::from_value(id.clone()).ok()
}

/// A request for a method rmcp types, whose params failed that type, comes out of rmcp's
/// untagged `ClientRequest` as a `CustomRequest` under the same method name: that is an
/// invalid-params error, not an unknown method.
fn invalid_params(message: &ClientJsonRpcMessage) -> Option<(RequestId, ErrorData)> {
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let ClientRequest::CustomRequest(CustomRequest { method, params, .. }) = &request.request
    else {
        return None;
    };
    Some((request.id.clone(), params_refusal(method, params.as_ref())?))
}

/// The invalid-params error for a request of a method rmcp types whose params did not fit
/// that type (so rmcp handed it on as a `CustomRequest`); `None` for a method rmcp does not
/// type, which is simply unknown. The HTTP handler answers with it too.
pub(crate) fn params_refusal(method: &str, params: Option<&Value>) -> Option<ErrorData> {
    let (_, check) = TYPED_REQUESTS.iter().find(|(typed, _)| *typed == method)?;
    let why = check(serde_json::json!({"method": method, "params": params}))
        .err()
        .map_or_else(
            || "they do not match the method's schema".to_owned(),
            |e| e.to_string(),
        );
    Some(ErrorData::invalid_params(
        format!("Invalid params for {method}: {why}"),
        None,
    ))
}

/// The methods the 2026-07-28 protocol removed, which rmcp still types for older sessions.
const REMOVED_IN_2026_07_28: &[&str] = &[
    InitializeResultMethod::VALUE,
    SetLevelRequestMethod::VALUE,
    SubscribeRequestMethod::VALUE,
    UnsubscribeRequestMethod::VALUE,
];

// r[impl cli.serve.http-removed-methods]
/// The answer to a request rmcp could not type (a `CustomRequest`): in an era without the
/// method (`modern`: 2026-07-28 or later, and the method one that era removed), or for a
/// method rmcp does not type, "method not found" (-32601), decided before any params are
/// looked at; otherwise the params did not fit the method's type (-32602).
pub(crate) fn untyped_refusal(method: &str, params: Option<&Value>, modern: bool) -> ErrorData {
    let removed = modern && REMOVED_IN_2026_07_28.contains(&method);
    match params_refusal(method, params).filter(|_| !removed) {
        Some(refusal) => refusal,
        None => ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            method.to_owned(),
            None,
        ),
    }
}

/// Deserializes a request as rmcp's type for it; the error says what is wrong with it.
fn check<T: DeserializeOwned>(request: Value) -> Result<(), serde_json::Error> {
    serde_json::from_value::<T>(request).map(drop)
}

type Check = fn(Value) -> Result<(), serde_json::Error>;

/// Every typed variant of rmcp's `ClientRequest` (its `CustomRequest` catches the rest).
/// rmcp deprecates three of them but still parses them, so they are here too.
#[expect(
    deprecated,
    reason = "rmcp still parses logging/setLevel and resources/(un)subscribe"
)]
const TYPED_REQUESTS: &[(&str, Check)] = &[
    (PingRequestMethod::VALUE, check::<PingRequest>),
    (InitializeResultMethod::VALUE, check::<InitializeRequest>),
    (DiscoverRequestMethod::VALUE, check::<DiscoverRequest>),
    (CompleteRequestMethod::VALUE, check::<CompleteRequest>),
    (
        SetLevelRequestMethod::VALUE,
        check::<rmcp::model::SetLevelRequest>,
    ),
    (GetPromptRequestMethod::VALUE, check::<GetPromptRequest>),
    (ListPromptsRequestMethod::VALUE, check::<ListPromptsRequest>),
    (
        ListResourcesRequestMethod::VALUE,
        check::<ListResourcesRequest>,
    ),
    (
        ListResourceTemplatesRequestMethod::VALUE,
        check::<ListResourceTemplatesRequest>,
    ),
    (
        ReadResourceRequestMethod::VALUE,
        check::<ReadResourceRequest>,
    ),
    (
        SubscriptionsListenRequestMethod::VALUE,
        check::<SubscriptionsListenRequest>,
    ),
    (
        SubscribeRequestMethod::VALUE,
        check::<rmcp::model::SubscribeRequest>,
    ),
    (
        UnsubscribeRequestMethod::VALUE,
        check::<rmcp::model::UnsubscribeRequest>,
    ),
    (CallToolRequestMethod::VALUE, check::<CallToolRequest>),
    (ListToolsRequestMethod::VALUE, check::<ListToolsRequest>),
    (GetTaskMethod::VALUE, check::<GetTaskRequest>),
    (UpdateTaskMethod::VALUE, check::<UpdateTaskRequest>),
    (CancelTaskMethod::VALUE, check::<CancelTaskRequest>),
    (ListSkillsRequestMethod::VALUE, check::<ListSkillsRequest>),
    (GetSkillRequestMethod::VALUE, check::<GetSkillRequest>),
    (
        ReadResourceDirectoryRequestMethod::VALUE,
        check::<ReadResourceDirectoryRequest>,
    ),
];

/// An error answering a line whose id could not be read: JSON-RPC 2.0 §5 wants `"id": null`.
fn unaddressed(error: ErrorData) -> Vec<u8> {
    #[derive(Serialize)]
    struct Unaddressed {
        jsonrpc: &'static str,
        id: (),
        error: ErrorData,
    }
    encode(&Unaddressed {
        jsonrpc: "2.0",
        id: (),
        error,
    })
}

/// One message as one line, `\n` included.
fn encode(message: &impl Serialize) -> Vec<u8> {
    let mut line = serde_json::to_vec(message).expect("a JSON-RPC message serializes");
    line.push(b'\n');
    line
}

/// The write side, shared by the service's sends and the transport's own replies.
struct Output<W> {
    write: Option<W>,
    /// Bytes of messages not yet fully written, and how many of them are: a send cancelled
    /// mid-write leaves its tail here, and the next send writes it first, so lines never
    /// interleave.
    pending: Vec<u8>,
    written: usize,
}

/// Writes `line` whole, after whatever an earlier, cancelled write left, and flushes.
async fn write_line<W: AsyncWrite + Unpin>(
    out: Arc<Mutex<Output<W>>>,
    line: Vec<u8>,
) -> io::Result<()> {
    let mut out = out.lock().await;
    let Output {
        write,
        pending,
        written,
    } = &mut *out;
    let Some(write) = write.as_mut() else {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "the stdio transport is closed",
        ));
    };
    if pending.is_empty() {
        *pending = line;
    } else {
        pending.extend_from_slice(&line);
    }
    while *written < pending.len() {
        let n = write.write(&pending[*written..]).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        *written += n;
    }
    pending.clear();
    *written = 0;
    write.flush().await
}

impl<R, W> Transport<RoleServer> for JsonLines<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let counted = UnwrittenSend::new(&self.unwritten);
        let write = write_line(Arc::clone(&self.out), encode(&item));
        async move {
            let written = write.await;
            drop(counted);
            written
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if let Some(reply) = self.reply.as_mut() {
                let sent = reply.await;
                self.reply = None;
                if let Err(e) = sent {
                    tracing::error!("stdio: cannot write to stdout: {e}");
                    return None;
                }
            }
            wait_for_the_client_to_read(Arc::clone(&self.unwritten)).await;
            match self.read_line().await {
                LineRead::Line => {}
                // r[impl config.message-limit.addressed]
                LineRead::Oversized(id) => {
                    tracing::warn!(
                        max_message_bytes = self.max_line_length,
                        addressed = id.is_some(),
                        "stdio: a message exceeded the maximum message size; discarding it"
                    );
                    // Answered under the request's id when its start showed one, so the
                    // client learns why instead of waiting for a reply that never comes.
                    let error = ErrorData::invalid_request(
                        format!(
                            "the message is over {} bytes, the most one message may have; \
                             send less in one request",
                            self.max_line_length
                        ),
                        Some(serde_json::json!({
                            "reason": "too_large",
                            "limit": self.max_line_length,
                        })),
                    );
                    let reply = match id {
                        Some(id) => encode(&ServerJsonRpcMessage::error(error, Some(id))),
                        None => unaddressed(error),
                    };
                    self.reply = Some(Box::pin(write_line(Arc::clone(&self.out), reply)));
                    continue;
                }
                LineRead::Eof => return None,
                LineRead::Io(e) => {
                    tracing::error!("stdio: cannot read stdin: {e}");
                    return None;
                }
            }
            let verdict = judge(&self.line);
            self.line.clear();
            match verdict {
                Verdict::Deliver(message) => return Some(message),
                Verdict::Answer(line) => {
                    self.reply = Some(Box::pin(write_line(Arc::clone(&self.out), line)));
                }
                Verdict::Skip => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut out = self.out.lock().await;
        if let Some(mut write) = out.write.take() {
            write.flush().await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, duplex};

    use super::*;

    fn text(line: &[u8]) -> Value {
        serde_json::from_slice(line).unwrap()
    }

    fn answered(line: &str) -> Value {
        match judge(line.as_bytes()) {
            Verdict::Answer(reply) => text(&reply),
            Verdict::Deliver(message) => panic!("{line} was delivered: {message:?}"),
            Verdict::Skip => panic!("{line} was skipped"),
        }
    }

    #[test]
    fn what_each_line_comes_to() {
        for line in [
            "not json\n",
            "{\"jsonrpc\":\"2.0\",\"id\":1\n",
            "\u{feff}]\r\n",
            // A value followed by more characters is not JSON either (found by the
            // jsonrpc_tools_call fuzz target).
            "\"jso.4\"+{\"jso.4\"+\n",
            "\u{feff}{\"jsonrpc\":\"2.0read4notes\",\"arguments\":{}}}}\r\n",
        ] {
            let reply = answered(line);
            assert_eq!(reply["id"], Value::Null, "{reply}");
            assert!(reply.as_object().unwrap().contains_key("id"));
            assert_eq!(reply["error"]["code"], -32700, "{reply}");
        }
        // Bytes that are not UTF-8 inside a string (found by the jsonrpc_tools_call fuzz
        // target: skipping over the value let them pass as JSON, answered -32600).
        let not_utf8 = b"{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/call\",\"params\":{\"name\":\"list_notes\",\"arguments\":{\"cursor\":\"bogu\xfe\xfes\"}}}\n";
        let Verdict::Answer(reply) = judge(not_utf8) else {
            panic!("a line that is not UTF-8 was not answered");
        };
        let reply = text(&reply);
        assert_eq!(reply["id"], Value::Null, "{reply}");
        assert_eq!(reply["error"]["code"], -32700, "{reply}");
        let reply =
            answered(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":7}}"#);
        assert_eq!(reply["id"], "a");
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        let reply = answered(r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":5}"#);
        assert_eq!(reply["id"], 4);
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        let reply = answered(r#"{"foo":"bar"}"#);
        assert_eq!(reply["id"], Value::Null);
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        for line in [
            "\n",
            "  \r\n",
            r#"{"jsonrpc":"1.0","method":"notifications/x"}"#,
        ] {
            assert!(matches!(judge(line.as_bytes()), Verdict::Skip), "{line:?}");
        }
        for line in [
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"no/such","params":{"x":1}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ] {
            assert!(
                matches!(judge(line.as_bytes()), Verdict::Deliver(_)),
                "{line:?}"
            );
        }
    }

    #[tokio::test]
    async fn replies_and_responses_come_out_whole_and_in_order() {
        let input: &[u8] = b"not json\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\
            {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":7}}\n";
        // One byte of capacity: every write is partial.
        let (write, mut peer) = duplex(1);
        let mut transport = JsonLines::new(input, write);
        let reader = tokio::spawn(async move {
            let mut bytes = Vec::new();
            peer.read_to_end(&mut bytes).await.unwrap();
            bytes
        });
        let ping = transport.receive().await.expect("the ping is delivered");
        assert_eq!(serde_json::to_value(&ping).unwrap()["id"], 1);
        transport
            .send(ServerJsonRpcMessage::error(
                ErrorData::internal_error("answered", None),
                Some(RequestId::Number(1)),
            ))
            .await
            .unwrap();
        assert!(transport.receive().await.is_none(), "end of input");
        transport.close().await.unwrap();
        drop(transport);
        let bytes = reader.await.unwrap();
        let lines: Vec<Value> = bytes
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(text)
            .collect();
        let codes: Vec<&Value> = lines.iter().map(|line| &line["error"]["code"]).collect();
        assert_eq!(codes, [-32700, -32603, -32602], "{lines:?}");
    }

    #[tokio::test]
    async fn an_oversized_line_is_dropped_and_the_next_is_read() {
        let long: &[u8] =
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"0123456789"}}"#;
        let short: &[u8] = br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
        let input = [long, b"\n", short, b"\n"].concat();
        let (write, _peer) = duplex(1024);
        let mut transport =
            JsonLines::new(std::io::Cursor::new(input), write).with_max_line_length(48);
        let next = transport
            .receive()
            .await
            .expect("the short line is delivered");
        assert_eq!(serde_json::to_value(&next).unwrap()["id"], 2);
    }
}
