//! One HTTP/1.1 exchange with the plugin, that knows whether the request was sent (spec/bridge.md
//! `bridge.fail.unreachable`, `bridge.fail.after-send`, `bridge.fail.no-second-attempt`).
//!
//! The failure semantics need a line no general HTTP client draws for its caller: a
//! failure before the first byte of the request was written (name resolution, the TCP
//! connection, the TLS handshake, a refused certificate) means the action cannot have run;
//! any failure from the first byte on (a write that broke, no answer in time, a connection
//! closed early, an answer that cannot be read) means it may have. So the exchange is
//! written here, on `std::net` and rustls, in two phases: connect and complete the
//! handshake, then write the request and read the answer. Each exchange opens its own
//! connection (`Connection: close`), is made exactly once, and is never retried.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use url::Url;

/// The largest answer read (a command answers nothing; a probe a few hundred bytes).
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Where the plugin listens, from `[vaults.bridge] url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub tls: bool,
    /// The `Host` header (`127.0.0.1:27124`, `[::1]:27124`).
    pub authority: String,
    /// The host as TLS names it.
    pub server_name: ServerName<'static>,
    host: String,
    port: u16,
    /// The url's path without its trailing `/` (empty for the plugin's own servers).
    pub base_path: String,
}

/// A `url` that cannot name the plugin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("url {url:?}: {reason}")]
pub struct EndpointError {
    pub url: String,
    pub reason: String,
}

impl Endpoint {
    pub fn parse(text: &str) -> Result<Self, EndpointError> {
        let fail = |reason: &str| EndpointError {
            url: text.to_owned(),
            reason: reason.to_owned(),
        };
        let url = Url::parse(text).map_err(|e| fail(&e.to_string()))?;
        let tls = match url.scheme() {
            "https" => true,
            "http" => false,
            _ => return Err(fail("the scheme must be https:// or http://")),
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(fail("credentials do not go in the url; use apiKeyFile"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(fail("the url takes no query or fragment"));
        }
        let host_text = url
            .host_str()
            .ok_or_else(|| fail("the url names no host"))?;
        let port = url
            .port_or_known_default()
            .ok_or_else(|| fail("the url names no port"))?;
        let host = host_text
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let server_name = ServerName::try_from(host.clone())
            .map_err(|_| fail("the host is neither an IP address nor a DNS name"))?;
        Ok(Endpoint {
            tls,
            authority: format!("{host_text}:{port}"),
            server_name,
            host,
            port,
            base_path: url.path().trim_end_matches('/').to_owned(),
        })
    }

    /// The url as configured, for messages.
    pub fn shown(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}{}", self.authority, self.base_path)
    }
}

/// One request to send.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub method: &'a str,
    /// The path under the endpoint, starting with `/`, already percent-encoded.
    pub path: &'a str,
    /// `Authorization: Bearer <key>` when set.
    pub bearer: Option<&'a str>,
    /// A JSON body.
    pub body: Option<Vec<u8>>,
}

/// An answer, whatever its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// A failure before any byte of the request was written: the action did not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotSent {
    #[error("cannot resolve {0}")]
    Resolve(String),
    #[error("cannot connect to {authority}: {reason}")]
    Connect { authority: String, reason: String },
    #[error("no connection to {0} within the timeout")]
    ConnectTimeout(String),
    #[error("the TLS handshake with {authority} failed: {reason}")]
    Handshake { authority: String, reason: String },
    /// The pinned verifier refused the certificate presented.
    #[error("the certificate presented by {authority} is not the pinned one")]
    CertificateRefused {
        authority: String,
        presented_sha256: String,
    },
}

/// A failure from the first byte of the request on: the action may have run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AfterSend {
    #[error("no answer within the timeout after the request was sent")]
    Timeout,
    #[error("the connection broke after the request was sent: {0}")]
    Broken(String),
    #[error("the answer could not be read: {0}")]
    Malformed(String),
    #[error("the answer is larger than {MAX_ANSWER_BYTES} bytes")]
    TooLarge,
}

/// Why an exchange failed, on which side of the line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    #[error(transparent)]
    NotSent(#[from] NotSent),
    #[error(transparent)]
    AfterSend(#[from] AfterSend),
}

fn remaining(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

fn connect(endpoint: &Endpoint, timeout: Duration) -> Result<TcpStream, NotSent> {
    let deadline = Instant::now() + timeout;
    let addrs: Vec<SocketAddr> = (endpoint.host.as_str(), endpoint.port)
        .to_socket_addrs()
        .map_err(|_| NotSent::Resolve(endpoint.authority.clone()))?
        .collect();
    if addrs.is_empty() {
        return Err(NotSent::Resolve(endpoint.authority.clone()));
    }
    let mut last = None;
    for addr in addrs {
        let Some(left) = remaining(deadline) else {
            return Err(NotSent::ConnectTimeout(endpoint.authority.clone()));
        };
        match TcpStream::connect_timeout(&addr, left) {
            Ok(stream) => return Ok(stream),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                last = Some(NotSent::ConnectTimeout(endpoint.authority.clone()));
            }
            Err(e) => {
                last = Some(NotSent::Connect {
                    authority: endpoint.authority.clone(),
                    reason: e.to_string(),
                });
            }
        }
    }
    Err(last.unwrap_or_else(|| NotSent::ConnectTimeout(endpoint.authority.clone())))
}

/// How the connection is secured.
#[derive(Clone)]
pub enum Transport {
    Plain,
    /// TLS with this configuration; `refused` tells whether its verifier refused the
    /// certificate (asked only when the handshake failed).
    Tls {
        config: Arc<ClientConfig>,
        refused: Arc<dyn Fn() -> Option<String> + Send + Sync>,
    },
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Transport::Plain => "Transport::Plain",
            Transport::Tls { .. } => "Transport::Tls",
        })
    }
}

// r[impl bridge.fail.no-second-attempt]
/// Sends `request` once: the connection and handshake within `timeout`, then the answer
/// within `timeout` of the request being written.
pub fn exchange(
    endpoint: &Endpoint,
    transport: &Transport,
    request: &Request<'_>,
    timeout: Duration,
) -> Result<Response, Failure> {
    let tcp = connect(endpoint, timeout)?;
    let _ = tcp.set_nodelay(true);
    match transport {
        Transport::Plain => Ok(send_and_read(tcp, endpoint, request, timeout)?),
        Transport::Tls { config, refused } => {
            let mut tcp = tcp;
            let handshake_failed = |reason: String| match refused() {
                Some(presented_sha256) => NotSent::CertificateRefused {
                    authority: endpoint.authority.clone(),
                    presented_sha256,
                },
                None => NotSent::Handshake {
                    authority: endpoint.authority.clone(),
                    reason,
                },
            };
            let mut conn = ClientConnection::new(Arc::clone(config), endpoint.server_name.clone())
                .map_err(|e| handshake_failed(e.to_string()))?;
            let _ = tcp.set_read_timeout(Some(timeout));
            let _ = tcp.set_write_timeout(Some(timeout));
            let deadline = Instant::now() + timeout;
            // The whole handshake completes before a byte of the request is written.
            while conn.is_handshaking() {
                if remaining(deadline).is_none() {
                    return Err(
                        handshake_failed("it did not complete within the timeout".into()).into(),
                    );
                }
                conn.complete_io(&mut tcp)
                    .map_err(|e| handshake_failed(e.to_string()))?;
            }
            Ok(send_and_read(
                StreamOwned::new(conn, tcp),
                endpoint,
                request,
                timeout,
            )?)
        }
    }
}

/// The socket under a stream, to move the read deadline.
trait Timed: Read + Write {
    fn set_deadline(&self, left: Duration);
}

impl Timed for TcpStream {
    fn set_deadline(&self, left: Duration) {
        let _ = self.set_read_timeout(Some(left));
        let _ = self.set_write_timeout(Some(left));
    }
}

impl Timed for StreamOwned<ClientConnection, TcpStream> {
    fn set_deadline(&self, left: Duration) {
        self.sock.set_deadline(left);
    }
}

fn head(endpoint: &Endpoint, request: &Request<'_>) -> Vec<u8> {
    let mut text = format!(
        "{} {}{} HTTP/1.1\r\nHost: {}\r\nUser-Agent: obsidian-tc/{}\r\nAccept: application/json\r\nConnection: close\r\n",
        request.method,
        endpoint.base_path,
        request.path,
        endpoint.authority,
        env!("CARGO_PKG_VERSION"),
    );
    if let Some(key) = request.bearer {
        text.push_str(&format!("Authorization: Bearer {key}\r\n"));
    }
    let body = request.body.as_deref().unwrap_or_default();
    if request.body.is_some() {
        text.push_str("Content-Type: application/json\r\n");
    }
    text.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

// r[impl bridge.fail.after-send]
fn send_and_read<S: Timed>(
    mut stream: S,
    endpoint: &Endpoint,
    request: &Request<'_>,
    timeout: Duration,
) -> Result<Response, AfterSend> {
    let deadline = Instant::now() + timeout;
    stream.set_deadline(timeout);
    // From here on, every failure may follow an action that ran.
    let bytes = head(endpoint, request);
    stream
        .write_all(&bytes)
        .and_then(|()| stream.flush())
        .map_err(|e| after_send_io(&e))?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if let Some(response) = complete(&answer, request.method)? {
            return Ok(response);
        }
        let Some(left) = remaining(deadline) else {
            return Err(AfterSend::Timeout);
        };
        stream.set_deadline(left);
        match stream.read(&mut buf) {
            Ok(0) => return at_eof(&answer),
            Ok(n) => {
                answer.extend_from_slice(&buf[..n]);
                if answer.len() > MAX_ANSWER_BYTES {
                    return Err(AfterSend::TooLarge);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A TLS peer that closes without close_notify: judged like a plain close.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return at_eof(&answer),
            Err(e) => return Err(after_send_io(&e)),
        }
    }
}

fn after_send_io(e: &io::Error) -> AfterSend {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => AfterSend::Timeout,
        _ => AfterSend::Broken(e.to_string()),
    }
}

/// How the body of a parsed head is delimited.
enum Framing {
    Empty,
    Length(usize),
    Chunked,
    UntilClose,
}

struct Head {
    status: u16,
    len: usize,
    framing: Framing,
}

fn parse_head(bytes: &[u8], method: &str) -> Result<Option<Head>, AfterSend> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let len = match response.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(AfterSend::Malformed(e.to_string())),
    };
    let status = response.code.unwrap_or_default();
    let header = |name: &str| {
        response
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
    };
    let framing =
        if method == "HEAD" || status == 204 || status == 304 || (100..200).contains(&status) {
            Framing::Empty
        } else if header("transfer-encoding").is_some_and(|te| te.ends_with("chunked")) {
            Framing::Chunked
        } else if let Some(cl) = header("content-length") {
            Framing::Length(
                cl.parse()
                    .map_err(|_| AfterSend::Malformed(format!("Content-Length {cl:?}")))?,
            )
        } else {
            Framing::UntilClose
        };
    Ok(Some(Head {
        status,
        len,
        framing,
    }))
}

/// The response, once `bytes` hold all of it.
fn complete(bytes: &[u8], method: &str) -> Result<Option<Response>, AfterSend> {
    let Some(head) = parse_head(bytes, method)? else {
        return Ok(None);
    };
    let rest = &bytes[head.len..];
    let body = match head.framing {
        Framing::Empty => Some(Vec::new()),
        Framing::Length(n) => (rest.len() >= n).then(|| rest[..n].to_vec()),
        Framing::Chunked => dechunk(rest)?,
        Framing::UntilClose => None,
    };
    Ok(body.map(|body| Response {
        status: head.status,
        body,
    }))
}

fn at_eof(bytes: &[u8]) -> Result<Response, AfterSend> {
    let Some(head) = parse_head(bytes, "GET")? else {
        return Err(AfterSend::Broken(
            "the connection closed before a whole answer came".into(),
        ));
    };
    match head.framing {
        Framing::UntilClose => Ok(Response {
            status: head.status,
            body: bytes[head.len..].to_vec(),
        }),
        _ => complete(bytes, "GET")?.ok_or_else(|| {
            AfterSend::Broken("the connection closed before the whole answer came".into())
        }),
    }
}

/// A chunked body, once its last chunk came; `None` while more is needed.
fn dechunk(mut rest: &[u8]) -> Result<Option<Vec<u8>>, AfterSend> {
    let mut body = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        let line = String::from_utf8_lossy(&rest[..eol]);
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| AfterSend::Malformed(format!("chunk size {size_text:?}")))?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Ok(Some(body));
        }
        if rest.len() < size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// `text` percent-encoded as one path segment (like JavaScript's `encodeURIComponent`).
pub fn encode_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_by_their_framing() {
        let r = complete(b"HTTP/1.1 204 No Content\r\n\r\n", "POST")
            .unwrap()
            .unwrap();
        assert_eq!((r.status, r.body.len()), (204, 0));
        let r = complete(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "GET")
            .unwrap()
            .unwrap();
        assert_eq!(r.body, b"ok");
        assert!(
            complete(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok", "GET")
                .unwrap()
                .is_none()
        );
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n3;x=1\r\n!!!\r\n0\r\n\r\n";
        assert_eq!(complete(chunked, "GET").unwrap().unwrap().body, b"ok!!!");
        assert!(complete(&chunked[..60], "GET").unwrap().is_none());
        assert_eq!(
            at_eof(b"HTTP/1.1 200 OK\r\n\r\nuntil close").unwrap().body,
            b"until close"
        );
        assert!(matches!(at_eof(b"HTTP/1.1 200"), Err(AfterSend::Broken(_))));
        assert!(matches!(
            complete(b"NOT HTTP\r\n\r\n", "GET"),
            Err(AfterSend::Malformed(_))
        ));
    }

    #[test]
    fn urls_name_scheme_host_port_and_prefix() {
        let e = Endpoint::parse("https://127.0.0.1:27124").unwrap();
        assert!(e.tls);
        assert_eq!(
            (e.authority.as_str(), e.base_path.as_str()),
            ("127.0.0.1:27124", "")
        );
        let e = Endpoint::parse("http://[::1]:27123/prefix/").unwrap();
        assert!(!e.tls);
        assert_eq!(
            (e.authority.as_str(), e.base_path.as_str()),
            ("[::1]:27123", "/prefix")
        );
        for bad in [
            "ftp://x",
            "https://user:pw@h:1",
            "http://h:1/?q=1",
            "nonsense",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(encode_segment("editor:toggle-bold"), "editor%3Atoggle-bold");
        assert_eq!(encode_segment("a/b c"), "a%2Fb%20c");
    }
}
