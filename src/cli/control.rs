//! The `--control ADDR` HTTP endpoint: change rates, threads and state while a run
//! goes on.
//!
//! | method | path                              | body                               |
//! |--------|-----------------------------------|------------------------------------|
//! | GET    | `/metrics`                        | (OpenMetrics text, see [`super::metrics`]) |
//! | GET    | `/activities`                     | (JSON status of every activity)    |
//! | GET    | `/activities/{alias}`             | (JSON status of one)               |
//! | PUT    | `/activities/{alias}/rate`        | `5000`, `5000,1.0`, `20000 over 30s` |
//! | PUT    | `/activities/{alias}/threads`     | `8`                                |
//! | POST   | `/activities/{alias}/pause`       |                                    |
//! | POST   | `/activities/{alias}/resume`      |                                    |
//! | POST   | `/activities/{alias}/stop`        |                                    |
//!
//! Success is 200 with a one-line plain-text confirmation (JSON for GET, OpenMetrics
//! for `/metrics`). A bad request is a 4xx with a plain message saying what was
//! wrong and how to fix it, and changes nothing: 400 bad value, 403 a change asked
//! of the read-only endpoint, 404 unknown alias or route, 405 wrong method (with
//! `Allow`), 409 a change the activity's state forbids; and 408, 411, 413, 431 or
//! 503 past the limits below.
//!
//! One request per connection (the answer closes it). The server binds to loopback
//! unless told otherwise, since anyone who reaches it can stop the run.
//!
//! `--metrics ADDR` starts the same server [read-only](Access::ReadOnly): the two
//! GET routes above and `GET /metrics`; the others answer 403 and change nothing.
//!
//! # Limits: a slow or hostile client cannot stall control or exit
//!
//! | limit | value | past it |
//! |---|---|---|
//! | connections served at once | [`MAX_CONNECTIONS`] | 503, closed at once |
//! | request head (line and headers) | [`MAX_HEAD`] bytes, [`MAX_HEADERS`] headers | 431 |
//! | body | [`MAX_BODY`] bytes, with `Content-Length` | 413; chunked: 411 |
//! | the whole request | [`REQUEST_TIMEOUT`] from accept | 408 |
//! | writing the answer | [`REQUEST_TIMEOUT`] | the connection is dropped |
//! | shutdown | the accept thread at once; connections up to [`SHUTDOWN_WAIT`] | left to their own timeouts |
//!
//! Each connection has its own thread, so a client that sends slowly delays no
//! other request; `Expect: 100-continue` is answered.

use paceline::RateSpec;
use paceline::nanos::parse_duration;
use std::error::Error;
use std::fmt;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Why the target refused a change; each maps to an HTTP status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlError {
    /// No activity has this alias (404). `GET /activities` lists the aliases.
    UnknownAlias(String),
    /// The value is not acceptable (400); the text says why and what would be.
    BadValue(String),
    /// The activity's state forbids the change, such as resuming a stopped
    /// activity (409); the text says why.
    Conflict(String),
}

impl ControlError {
    /// The HTTP status code for this error.
    pub fn status(&self) -> u16 {
        match self {
            Self::UnknownAlias(_) => 404,
            Self::BadValue(_) => 400,
            Self::Conflict(_) => 409,
        }
    }
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownAlias(alias) => write!(
                f,
                "no activity named `{alias}`: GET /activities lists the activities"
            ),
            Self::BadValue(why) | Self::Conflict(why) => f.write_str(why),
        }
    }
}

impl Error for ControlError {}

/// What the endpoint controls: the run's activities. The run loop implements it
/// over its activity handles; every method is called from the server's thread.
pub trait ControlTarget: Send + Sync {
    /// The status of every activity as JSON: an array of objects, each with at
    /// least an `"alias"` field (so `GET /activities/{alias}` can pick one).
    fn activities(&self) -> serde_json::Value;
    /// Sets the rate spec of `alias` now.
    fn set_rate(&self, alias: &str, spec: RateSpec) -> Result<(), ControlError>;
    /// Moves the rate of `alias` to `to` over `over` (more than zero).
    fn ramp(&self, alias: &str, to: RateSpec, over: Duration) -> Result<(), ControlError>;
    /// Sets the number of worker threads of `alias` (at least 1).
    fn set_threads(&self, alias: &str, n: usize) -> Result<(), ControlError>;
    /// Pauses `alias`: its workers wait until resumed.
    fn pause(&self, alias: &str) -> Result<(), ControlError>;
    /// Resumes a paused `alias`.
    fn resume(&self, alias: &str) -> Result<(), ControlError>;
    /// Stops `alias` for good.
    fn stop(&self, alias: &str) -> Result<(), ControlError>;
    /// Every activity's numbers as an OpenMetrics exposition (see
    /// [`super::metrics::encode`]), for `GET /metrics`.
    fn metrics(&self) -> String;
}

/// What a server lets its clients do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Every route: read the run and change it (`--control`).
    Full,
    /// Read only: `GET /metrics`, `GET /activities`, `GET /activities/{alias}`;
    /// a route that changes the run answers 403 (`--metrics`).
    ReadOnly,
}

impl Access {
    /// The flag that starts a server with this access, for messages.
    fn flag(self) -> &'static str {
        match self {
            Self::Full => "--control",
            Self::ReadOnly => "--metrics",
        }
    }
}

/// Why the endpoint could not start.
#[derive(Debug)]
pub enum ControlStartError {
    /// The address is not loopback and remote control was not allowed. Pass
    /// `--control-allow-remote`, or listen on 127.0.0.1.
    RemoteNotAllowed {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The address could not be bound (in use, not local, no permission). Pick
    /// another port.
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The reason given by the OS.
        reason: String,
        /// The flag that asked for it (`--control` or `--metrics`).
        flag: &'static str,
    },
}

impl fmt::Display for ControlStartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RemoteNotAllowed { addr } => write!(
                f,
                "refusing to serve the control endpoint on {addr}, which is not a loopback \
                 address: anyone who reaches it can change rates and stop the run; pass \
                 --control-allow-remote to allow it, or use 127.0.0.1:{}",
                addr.port()
            ),
            Self::Bind { addr, reason, flag } => write!(
                f,
                "cannot listen on {addr} for {flag}: {reason} (pick another port, such as \
                 {flag} 127.0.0.1:7879)"
            ),
        }
    }
}

impl Error for ControlStartError {}

/// The running endpoint. Dropping it shuts it down too; [`shutdown`](Self::shutdown)
/// does so explicitly.
pub struct ControlServer {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    live: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for ControlServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControlServer")
            .field("addr", &self.addr)
            .finish()
    }
}

/// The largest request body read, in bytes; a rate spec or a count is a few bytes.
pub const MAX_BODY: u64 = 4096;
/// The largest request head (request line and headers), in bytes.
pub const MAX_HEAD: usize = 8192;
/// The most headers a request may have.
pub const MAX_HEADERS: usize = 32;
/// Connections served at once; more are answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 16;
/// How long a client has to send its whole request (and to read the answer).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long [`ControlServer::shutdown`] waits for requests being served.
pub const SHUTDOWN_WAIT: Duration = Duration::from_secs(1);
/// How often the accept loop looks at the stop flag while no one connects.
const ACCEPT_POLL: Duration = Duration::from_millis(10);

impl ControlServer {
    /// Binds `addr` and serves `target` from a new thread. A non-loopback address
    /// is refused unless `allow_remote`. Port 0 picks a free port; see
    /// [`local_addr`](Self::local_addr).
    pub fn start(
        addr: SocketAddr,
        allow_remote: bool,
        target: Arc<dyn ControlTarget>,
    ) -> Result<Self, ControlStartError> {
        if !addr.ip().is_loopback() && !allow_remote {
            return Err(ControlStartError::RemoteNotAllowed { addr });
        }
        Self::serve_with(addr, Access::Full, target)
    }

    /// Binds `addr` and serves `target` [read-only](Access::ReadOnly) from a new
    /// thread: `GET /metrics` and the `GET` status routes. Any address may be
    /// given, since nothing served changes the run; `--metrics PORT` means
    /// loopback. Port 0 picks a free port.
    pub fn start_read_only(
        addr: SocketAddr,
        target: Arc<dyn ControlTarget>,
    ) -> Result<Self, ControlStartError> {
        Self::serve_with(addr, Access::ReadOnly, target)
    }

    fn serve_with(
        addr: SocketAddr,
        access: Access,
        target: Arc<dyn ControlTarget>,
    ) -> Result<Self, ControlStartError> {
        let bind_err = |e: std::io::Error| ControlStartError::Bind {
            addr,
            reason: e.to_string(),
            flag: access.flag(),
        };
        let listener = TcpListener::bind(addr).map_err(bind_err)?;
        let bound = listener.local_addr().map_err(bind_err)?;
        // Non-blocking accept, polled, so shutdown never waits on a client.
        listener.set_nonblocking(true).map_err(bind_err)?;
        let stopping = Arc::new(AtomicBool::new(false));
        let live = Arc::new(AtomicUsize::new(0));
        let thread = {
            let (stopping, live) = (stopping.clone(), live.clone());
            let name = match access {
                Access::Full => "paceline-control",
                Access::ReadOnly => "paceline-metrics",
            };
            std::thread::Builder::new()
                .name(name.to_string())
                .spawn(move || accept_loop(&listener, access, &stopping, &live, &target))
                .map_err(bind_err)?
        };
        Ok(Self {
            addr: bound,
            stopping,
            live,
            thread: Some(thread),
        })
    }

    /// The address actually bound (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections being served now.
    #[cfg(test)]
    pub fn connections(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// Stops accepting (the port is free when this returns) and waits at most
    /// [`SHUTDOWN_WAIT`] for requests being served; a client still sending is
    /// left to its [`REQUEST_TIMEOUT`].
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        // Relaxed: the flag carries no data; the accept loop only stops.
        self.stopping.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            let until = Instant::now() + SHUTDOWN_WAIT;
            while self.live.load(Ordering::Relaxed) > 0 && Instant::now() < until {
                std::thread::sleep(ACCEPT_POLL);
            }
        }
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Accepts until stopped; each connection gets its own thread, up to
/// [`MAX_CONNECTIONS`] at once.
fn accept_loop(
    listener: &TcpListener,
    access: Access,
    stopping: &AtomicBool,
    live: &Arc<AtomicUsize>,
    target: &Arc<dyn ControlTarget>,
) {
    while !stopping.load(Ordering::Relaxed) {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(ACCEPT_POLL);
                continue;
            }
            Err(e) => {
                // An accept error on one connection; keep serving the others.
                tracing::debug!("control endpoint: {e}");
                std::thread::sleep(ACCEPT_POLL);
                continue;
            }
        };
        if live.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
            refuse_busy(stream);
            continue;
        }
        live.fetch_add(1, Ordering::Relaxed);
        let (live2, target) = (live.clone(), target.clone());
        let spawned = std::thread::Builder::new()
            .name("paceline-control-conn".to_string())
            .spawn(move || {
                serve(stream, access, &*target);
                live2.fetch_sub(1, Ordering::Relaxed);
            });
        if spawned.is_err() {
            live.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Answers 503 without waiting on the client: one non-blocking write, then close.
fn refuse_busy(stream: TcpStream) {
    let reply = Reply::text(
        503,
        format!("the control endpoint is serving {MAX_CONNECTIONS} connections: try again"),
    );
    let _ = stream.set_nonblocking(true);
    let _ = (&stream).write_all(&reply.to_http());
    let _ = stream.shutdown(Shutdown::Both);
}

/// A request, read within the limits.
struct Incoming {
    method: String,
    path: String,
    body: Vec<u8>,
}

/// Serves one connection: reads one request within the limits, answers, closes.
fn serve(mut stream: TcpStream, access: Access, target: &dyn ControlTarget) {
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(REQUEST_TIMEOUT));
    let reply = match read_request(&mut stream, deadline) {
        Ok(req) => match String::from_utf8(req.body) {
            Ok(text) => route(access, &req.method, &req.path, &text, target),
            Err(_) => Reply::text(400, "the request body is not UTF-8 text"),
        },
        Err(Some(reply)) => reply,
        // The client went away: nobody to answer.
        Err(None) => return,
    };
    let _ = stream.write_all(&reply.to_http());
    let _ = stream.flush();
    // Half-close, then read what the client still sends for a moment, so that
    // closing with unread bytes does not reset the connection before the client
    // has read the answer.
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let mut sink = [0u8; 4096];
    let mut drained = 0;
    while drained < 64 * 1024 {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}

/// Reads one request head and its body before `deadline`. `Err(Some(reply))`: a
/// request to refuse with `reply`; `Err(None)`: the client closed or failed.
fn read_request(stream: &mut TcpStream, deadline: Instant) -> Result<Incoming, Option<Reply>> {
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    let head_len = loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf) {
            Ok(httparse::Status::Complete(n)) => break n,
            Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
                return Err(Some(head_too_large()));
            }
            Ok(httparse::Status::Partial) => {}
            Err(httparse::Error::TooManyHeaders) => return Err(Some(head_too_large())),
            Err(e) => return Err(Some(Reply::text(400, format!("not an HTTP request: {e}")))),
        }
        let n = read_before(stream, &mut chunk, deadline)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    if head_len > MAX_HEAD {
        return Err(Some(head_too_large()));
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    if req.parse(&buf).is_err() {
        return Err(Some(Reply::text(400, "not an HTTP request")));
    }
    let method = req.method.unwrap_or("").to_string();
    let path = req.path.unwrap_or("").to_string();
    let header = |name: &str| {
        req.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
    if header("transfer-encoding").is_some() {
        return Err(Some(Reply::text(
            411,
            "send the body with a Content-Length (chunked bodies are not accepted)",
        )));
    }
    let length: u64 = match header("content-length") {
        None => 0,
        Some(v) => v.parse().map_err(|_| {
            Some(Reply::text(
                400,
                format!("Content-Length `{v}` is not a number of bytes"),
            ))
        })?,
    };
    if length > MAX_BODY {
        return Err(Some(Reply::text(
            413,
            format!("request body too large: send at most {MAX_BODY} bytes"),
        )));
    }
    let expects_continue = header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
    let mut body = buf.split_off(head_len);
    if expects_continue && (body.len() as u64) < length {
        stream
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .map_err(|_| None)?;
    }
    while (body.len() as u64) < length {
        let n = read_before(stream, &mut chunk, deadline)?;
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length as usize);
    Ok(Incoming { method, path, body })
}

fn head_too_large() -> Reply {
    Reply::text(
        431,
        format!(
            "request head too large: send at most {MAX_HEAD} bytes of request line and \
             headers, and at most {MAX_HEADERS} headers"
        ),
    )
}

/// One read that must finish before `deadline`: 408 past it, `None` at EOF.
fn read_before(
    stream: &mut TcpStream,
    chunk: &mut [u8],
    deadline: Instant,
) -> Result<usize, Option<Reply>> {
    let late = || {
        Some(Reply::text(
            408,
            format!(
                "the request did not arrive within {}s: send it whole",
                REQUEST_TIMEOUT.as_secs()
            ),
        ))
    };
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(late());
    }
    let _ = stream.set_read_timeout(Some(left));
    match stream.read(chunk) {
        Ok(0) => Err(None),
        Ok(n) => Ok(n),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Err(late()),
        Err(_) => Err(None),
    }
}

/// The `Content-Type` of a plain-text answer.
const TEXT: &str = "text/plain; charset=utf-8";

/// A reply before it becomes an HTTP response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status code.
    pub status: u16,
    /// The body: one line of text (newline-terminated), JSON, or OpenMetrics.
    pub body: String,
    /// The `Content-Type` header.
    pub content_type: &'static str,
    /// The `Allow` header for a 405.
    pub allow: Option<&'static str>,
}

impl Reply {
    fn text(status: u16, body: impl Into<String>) -> Self {
        let mut body = body.into();
        body.push('\n');
        Self {
            status,
            body,
            content_type: TEXT,
            allow: None,
        }
    }

    fn json(value: &serde_json::Value) -> Self {
        let mut body = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into());
        body.push('\n');
        Self {
            status: 200,
            body,
            content_type: "application/json",
            allow: None,
        }
    }

    fn metrics(body: String) -> Self {
        Self {
            status: 200,
            body,
            content_type: super::metrics::CONTENT_TYPE,
            allow: None,
        }
    }

    /// The whole HTTP/1.1 response, closing the connection.
    fn to_http(&self) -> Vec<u8> {
        let reason = match self.status {
            200 => "OK",
            400 => "Bad Request",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            408 => "Request Timeout",
            409 => "Conflict",
            411 => "Length Required",
            413 => "Content Too Large",
            431 => "Request Header Fields Too Large",
            503 => "Service Unavailable",
            _ => "",
        };
        let content_type = self.content_type;
        let mut head = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
             Connection: close\r\n",
            self.status,
            self.body.len()
        );
        if let Some(allow) = self.allow {
            head.push_str(&format!("Allow: {allow}\r\n"));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(self.body.as_bytes());
        out
    }

    fn method_not_allowed(allow: &'static str) -> Self {
        Self {
            allow: Some(allow),
            ..Self::text(405, format!("method not allowed here: use {allow}"))
        }
    }
}

impl From<ControlError> for Reply {
    fn from(e: ControlError) -> Self {
        Self::text(e.status(), e.to_string())
    }
}

/// Routes one request to `target` as a server with `access` allows, and says what
/// to answer; see the module table.
pub fn route(
    access: Access,
    method: &str,
    url: &str,
    body: &str,
    target: &dyn ControlTarget,
) -> Reply {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    if access == Access::ReadOnly {
        match parts.as_slice() {
            ["metrics"] | ["activities"] | ["activities", _] => {}
            [
                "activities",
                _,
                "rate" | "threads" | "pause" | "resume" | "stop",
            ] => {
                return Reply::text(
                    403,
                    format!(
                        "`{path}` changes the run, and this endpoint (--metrics) is read-only: \
                         run with --control ADDR to change rates, threads and state"
                    ),
                );
            }
            _ => {
                return Reply::text(
                    404,
                    format!(
                        "no such route `{path}`: this read-only endpoint serves GET /metrics, \
                         GET /activities and GET /activities/ALIAS"
                    ),
                );
            }
        }
    }
    match parts.as_slice() {
        ["metrics"] => match method {
            "GET" => Reply::metrics(target.metrics()),
            _ => Reply::method_not_allowed("GET"),
        },
        ["activities"] => match method {
            "GET" => Reply::json(&target.activities()),
            _ => Reply::method_not_allowed("GET"),
        },
        ["activities", alias] => match method {
            "GET" => one_activity(target, alias),
            _ => Reply::method_not_allowed("GET"),
        },
        ["activities", alias, "rate"] => match method {
            "PUT" => put_rate(target, alias, body),
            _ => Reply::method_not_allowed("PUT"),
        },
        ["activities", alias, "threads"] => match method {
            "PUT" => put_threads(target, alias, body),
            _ => Reply::method_not_allowed("PUT"),
        },
        ["activities", alias, action @ ("pause" | "resume" | "stop")] => match method {
            "POST" => {
                let (result, done) = match *action {
                    "pause" => (target.pause(alias), "paused"),
                    "resume" => (target.resume(alias), "resumed"),
                    _ => (target.stop(alias), "stopped"),
                };
                match result {
                    Ok(()) => Reply::text(200, format!("{alias}: {done}")),
                    Err(e) => e.into(),
                }
            }
            _ => Reply::method_not_allowed("POST"),
        },
        _ => Reply::text(
            404,
            format!(
                "no such route `{path}`: use GET /activities, GET /metrics, \
                 PUT /activities/ALIAS/rate, PUT /activities/ALIAS/threads, or \
                 POST /activities/ALIAS/pause|resume|stop"
            ),
        ),
    }
}

fn one_activity(target: &dyn ControlTarget, alias: &str) -> Reply {
    let all = target.activities();
    let found = all.as_array().and_then(|a| {
        a.iter()
            .find(|x| x.get("alias").and_then(|v| v.as_str()) == Some(alias))
    });
    match found {
        Some(one) => Reply::json(one),
        None => ControlError::UnknownAlias(alias.to_string()).into(),
    }
}

/// What a rate body asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum RateChange {
    /// Set the spec now.
    Set(RateSpec),
    /// Move to the spec over a duration.
    Ramp(RateSpec, Duration),
}

/// Parses a rate body: a rate spec (`5000`, `5000,1.0`, `10K,restart`), optionally
/// followed by `over DURATION` for a ramp (`20000 over 30s`).
pub fn parse_rate_change(body: &str) -> Result<RateChange, String> {
    let text = body.trim();
    if text.is_empty() {
        return Err(
            "empty body: send a rate spec such as `5000`, `5000,1.0` or `20000 over 30s`"
                .to_string(),
        );
    }
    let lower = text.to_ascii_lowercase();
    let (spec_text, over) = match lower.find(" over ") {
        Some(i) => (text[..i].trim(), Some(text[i + 6..].trim())),
        None if lower.ends_with(" over") || lower == "over" => {
            return Err(format!(
                "`{text}` ends at `over`: give a duration after it, such as `{} over 30s`",
                text[..text.len() - 4].trim()
            ));
        }
        None => (text, None),
    };
    let spec = RateSpec::parse(spec_text).map_err(|e| e.to_string())?;
    match over {
        None => Ok(RateChange::Set(spec)),
        Some(d) => {
            let d = parse_duration(d).map_err(|e| format!("bad ramp duration: {e}"))?;
            if d.is_zero() {
                return Err(format!(
                    "a ramp over 0s is a plain change: send `{spec_text}` alone, or ramp over \
                     a positive duration such as 30s"
                ));
            }
            Ok(RateChange::Ramp(spec, d))
        }
    }
}

fn put_rate(target: &dyn ControlTarget, alias: &str, body: &str) -> Reply {
    let change = match parse_rate_change(body) {
        Ok(c) => c,
        Err(why) => return Reply::text(400, why),
    };
    let result = match change {
        RateChange::Set(spec) => target
            .set_rate(alias, spec)
            .map(|()| format!("{alias}: rate set to {spec}")),
        RateChange::Ramp(spec, over) => target.ramp(alias, spec, over).map(|()| {
            format!(
                "{alias}: rate ramping to {spec} over {}",
                super::report::units::duration(paceline::nanos::from_duration(over))
            )
        }),
    };
    match result {
        Ok(msg) => Reply::text(200, msg),
        Err(e) => e.into(),
    }
}

/// Parses a threads body: a positive whole number.
pub fn parse_threads(body: &str) -> Result<usize, String> {
    let text = body.trim();
    match text.parse::<usize>() {
        Ok(0) => Err(
            "threads must be at least 1: to hold an activity, POST /activities/ALIAS/pause"
                .to_string(),
        ),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "`{text}` is not a thread count: send a positive whole number, such as `8`"
        )),
    }
}

fn put_threads(target: &dyn ControlTarget, alias: &str, body: &str) -> Reply {
    match parse_threads(body) {
        Ok(n) => match target.set_threads(alias, n) {
            Ok(()) => Reply::text(200, format!("{alias}: threads set to {n}")),
            Err(e) => e.into(),
        },
        Err(why) => Reply::text(400, why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Knows one activity, `a`; records every call that reached it.
    #[derive(Default)]
    struct Fake {
        calls: Mutex<Vec<String>>,
        stopped: AtomicBool,
    }

    impl Fake {
        fn calls(&self) -> Vec<String> {
            self.calls.lock().map(|c| c.clone()).unwrap_or_default()
        }
        fn call(&self, alias: &str, what: String) -> Result<(), ControlError> {
            if alias != "a" {
                return Err(ControlError::UnknownAlias(alias.to_string()));
            }
            if let Ok(mut c) = self.calls.lock() {
                c.push(what);
            }
            Ok(())
        }
    }

    impl ControlTarget for Fake {
        fn activities(&self) -> serde_json::Value {
            serde_json::json!([{"alias": "a", "rate": 1000.0, "threads": 4}])
        }
        fn set_rate(&self, alias: &str, spec: RateSpec) -> Result<(), ControlError> {
            self.call(alias, format!("rate {spec}"))
        }
        fn ramp(&self, alias: &str, to: RateSpec, over: Duration) -> Result<(), ControlError> {
            self.call(alias, format!("ramp {to} {over:?}"))
        }
        fn set_threads(&self, alias: &str, n: usize) -> Result<(), ControlError> {
            if n > 1000 {
                return Err(ControlError::BadValue(format!(
                    "{n} threads is too many: use at most 1000"
                )));
            }
            self.call(alias, format!("threads {n}"))
        }
        fn pause(&self, alias: &str) -> Result<(), ControlError> {
            self.call(alias, "pause".into())
        }
        fn resume(&self, alias: &str) -> Result<(), ControlError> {
            if self.stopped.load(Ordering::Relaxed) && alias == "a" {
                return Err(ControlError::Conflict(
                    "a is stopped: a stopped activity cannot be resumed".into(),
                ));
            }
            self.call(alias, "resume".into())
        }
        fn stop(&self, alias: &str) -> Result<(), ControlError> {
            self.call(alias, "stop".into())?;
            self.stopped.store(true, Ordering::Relaxed);
            Ok(())
        }
        fn metrics(&self) -> String {
            super::super::metrics::encode(&[super::super::metrics::ActivityMetrics {
                alias: "a".into(),
                totals: paceline::Snapshot::empty(0, 1),
                rate_target: 1000.0,
                rate_achieved: 990.0,
                threads: 4,
            }])
        }
    }

    /// Sends one request and returns (status, headers, body).
    fn send(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String, String) {
        let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect: {e}"));
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes())
            .unwrap_or_else(|e| panic!("write: {e}"));
        let mut raw = String::new();
        s.read_to_string(&mut raw)
            .unwrap_or_else(|e| panic!("read: {e}"));
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (status, head.to_string(), body.to_string())
    }

    fn start(fake: &Arc<Fake>) -> ControlServer {
        let target: Arc<dyn ControlTarget> = fake.clone();
        ControlServer::start(SocketAddr::from(([127, 0, 0, 1], 0)), false, target)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn good_requests_reach_the_target() {
        let fake = Arc::new(Fake::default());
        let server = start(&fake);
        let addr = server.local_addr();
        assert_ne!(addr.port(), 0);

        let (status, head, body) = send(addr, "GET", "/activities", "");
        assert_eq!(status, 200);
        assert!(head.contains("application/json"), "{head}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        assert_eq!(v[0]["alias"], "a");

        let (status, _, body) = send(addr, "GET", "/activities/a", "");
        assert_eq!((status, body.contains("\"threads\": 4")), (200, true));

        let (status, _, body) = send(addr, "PUT", "/activities/a/rate", "5000");
        assert_eq!(
            (status, body.as_str()),
            (200, "a: rate set to 5000,1.1,start,activity\n")
        );
        let (status, _, body) = send(addr, "PUT", "/activities/a/rate", "5000,1.0");
        assert_eq!(
            (status, body.as_str()),
            (200, "a: rate set to 5000,1,start,activity\n")
        );
        let (status, _, body) = send(addr, "PUT", "/activities/a/rate", "20K over 30s\n");
        assert_eq!(
            (status, body.as_str()),
            (
                200,
                "a: rate ramping to 20000,1.1,start,activity over 30.0s\n"
            )
        );
        let (status, _, body) = send(addr, "PUT", "/activities/a/threads", " 8\n");
        assert_eq!((status, body.as_str()), (200, "a: threads set to 8\n"));
        for (action, says) in [
            ("pause", "paused"),
            ("resume", "resumed"),
            ("stop", "stopped"),
        ] {
            let (status, _, body) = send(addr, "POST", &format!("/activities/a/{action}"), "");
            assert_eq!((status, body), (200, format!("a: {says}\n")), "{action}");
        }
        assert_eq!(
            fake.calls(),
            [
                "rate 5000,1.1,start,activity",
                "rate 5000,1,start,activity",
                "ramp 20000,1.1,start,activity 30s",
                "threads 8",
                "pause",
                "resume",
                "stop",
            ]
        );
        server.shutdown();
    }

    #[test]
    fn bad_requests_get_4xx_with_a_fix_and_change_nothing() {
        let fake = Arc::new(Fake::default());
        let server = start(&fake);
        let addr = server.local_addr();
        let cases: [(&str, &str, &str, u16, &str); 14] = [
            (
                "PUT",
                "/activities/a/rate",
                "fast",
                400,
                "`fast` is not a rate",
            ),
            (
                "PUT",
                "/activities/a/rate",
                "",
                400,
                "empty body: send a rate spec",
            ),
            ("PUT", "/activities/a/rate", "-5", 400, "is out of range"),
            (
                "PUT",
                "/activities/a/rate",
                "5000,sometimes",
                400,
                "unknown word `sometimes`",
            ),
            (
                "PUT",
                "/activities/a/rate",
                "5000 over",
                400,
                "give a duration after it",
            ),
            (
                "PUT",
                "/activities/a/rate",
                "5000 over 30",
                400,
                "bad ramp duration",
            ),
            (
                "PUT",
                "/activities/a/rate",
                "5000 over 0s",
                400,
                "a ramp over 0s",
            ),
            (
                "PUT",
                "/activities/a/threads",
                "0",
                400,
                "threads must be at least 1",
            ),
            (
                "PUT",
                "/activities/a/threads",
                "many",
                400,
                "send a positive whole number",
            ),
            (
                "PUT",
                "/activities/a/threads",
                "5000",
                400,
                "use at most 1000",
            ),
            (
                "PUT",
                "/activities/nope/rate",
                "5000",
                404,
                "no activity named `nope`",
            ),
            (
                "GET",
                "/activities/nope",
                "",
                404,
                "no activity named `nope`",
            ),
            (
                "GET",
                "/nowhere",
                "",
                404,
                "no such route `/nowhere`: use GET /activities",
            ),
            (
                "POST",
                "/activities/nope/pause",
                "",
                404,
                "no activity named `nope`",
            ),
        ];
        for (method, path, body, want_status, says) in cases {
            let (status, head, text) = send(addr, method, path, body);
            assert_eq!(status, want_status, "{method} {path} {body:?}: {text}");
            assert!(text.contains(says), "{method} {path} {body:?}: {text}");
            assert!(head.contains("text/plain"), "{head}");
        }
        assert!(fake.calls().is_empty(), "{:?}", fake.calls());

        let (status, head, text) = send(addr, "GET", "/activities/a/rate", "");
        assert_eq!(status, 405);
        assert!(head.contains("Allow: PUT"), "{head}");
        assert_eq!(text, "method not allowed here: use PUT\n");
        assert_eq!(send(addr, "DELETE", "/activities", "").0, 405);
        assert_eq!(send(addr, "PUT", "/activities/a/stop", "").0, 405);
        let big = "9".repeat(5000);
        assert_eq!(send(addr, "PUT", "/activities/a/threads", &big).0, 413);
        assert!(fake.calls().is_empty(), "{:?}", fake.calls());

        // A conflict is a 409 and says why.
        assert_eq!(send(addr, "POST", "/activities/a/stop", "").0, 200);
        let (status, _, text) = send(addr, "POST", "/activities/a/resume", "");
        assert_eq!(
            (status, text.as_str()),
            (409, "a is stopped: a stopped activity cannot be resumed\n")
        );
        server.shutdown();
    }

    #[test]
    fn remote_addresses_need_permission() {
        let fake: Arc<dyn ControlTarget> = Arc::new(Fake::default());
        let remote = SocketAddr::from(([0, 0, 0, 0], 0));
        let err = ControlServer::start(remote, false, fake.clone())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("pass --control-allow-remote"), "{err}");
        assert!(err.starts_with("refusing to serve the control endpoint on 0.0.0.0:0"));
        let server = ControlServer::start(remote, true, fake);
        assert!(server.is_ok());
    }

    #[test]
    fn a_busy_port_is_a_bind_error_and_shutdown_frees_it() {
        let fake = Arc::new(Fake::default());
        let first = start(&fake);
        let addr = first.local_addr();
        let target: Arc<dyn ControlTarget> = fake.clone();
        let err = ControlServer::start(addr, false, target.clone())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with(&format!("cannot listen on {addr}")),
            "{err}"
        );
        first.shutdown();
        // The listening socket is closed when shutdown returns.
        let again = ControlServer::start(addr, false, target.clone());
        assert!(again.is_ok(), "{:?}", again.err());
    }

    /// Sends raw bytes and reads the answer's status (0 if none came).
    fn raw(addr: SocketAddr, bytes: &[u8]) -> (u16, String) {
        let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect: {e}"));
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        let _ = s.write_all(bytes);
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw);
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let status = raw
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (status, raw)
    }

    /// Issue 18.2: a client that never sends its body, or sends it a byte at a
    /// time, delays no other request, and shutdown does not wait for it.
    #[test]
    fn a_slow_client_stalls_neither_control_nor_shutdown() {
        let fake = Arc::new(Fake::default());
        let server = start(&fake);
        let addr = server.local_addr();
        // Promises a 2000-byte body (over 1 KiB) and sends 3 bytes.
        let mut silent = TcpStream::connect(addr).unwrap();
        silent
            .write_all(
                b"PUT /activities/a/rate HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n500",
            )
            .unwrap();
        // Sends a header one byte at a time, never finishing.
        let mut dribble = TcpStream::connect(addr).unwrap();
        dribble
            .write_all(b"GET /activities HTTP/1.1\r\nX-Slow: ")
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        for _ in 0..3 {
            let t0 = Instant::now();
            let (status, _, body) = send(addr, "PUT", "/activities/a/threads", "3");
            assert_eq!((status, body.as_str()), (200, "a: threads set to 3\n"));
            assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
            let _ = dribble.write_all(b"x");
        }
        let t0 = Instant::now();
        server.shutdown();
        assert!(
            t0.elapsed() < SHUTDOWN_WAIT + Duration::from_millis(500),
            "{:?}",
            t0.elapsed()
        );
        drop((silent, dribble));
    }

    #[test]
    fn a_request_that_never_arrives_whole_times_out_with_408() {
        let fake = Arc::new(Fake::default());
        let server = start(&fake);
        let addr = server.local_addr();
        let t0 = Instant::now();
        let (status, raw) = raw(
            addr,
            b"PUT /activities/a/rate HTTP/1.1\r\nContent-Length: 10\r\n\r\n50",
        );
        // The client's write side stays open; the server gives up at its limit.
        assert_eq!(status, 408, "{raw}");
        assert!(raw.contains("send it whole"), "{raw}");
        let took = t0.elapsed();
        assert!(
            took >= REQUEST_TIMEOUT - Duration::from_millis(100)
                && took < REQUEST_TIMEOUT + Duration::from_secs(2),
            "{took:?}"
        );
        assert!(fake.calls().is_empty());
    }

    #[test]
    fn oversized_heads_chunked_bodies_and_a_connection_flood_are_refused() {
        let fake = Arc::new(Fake::default());
        let server = start(&fake);
        let addr = server.local_addr();
        let long = format!(
            "GET /activities HTTP/1.1\r\nX-Big: {}\r\n\r\n",
            "a".repeat(64 * 1024)
        );
        let (status, body) = raw(addr, long.as_bytes());
        assert_eq!(status, 431, "{body}");
        assert!(body.contains("at most 8192 bytes"), "{body}");
        let many: String = (0..150).map(|i| format!("X-H{i}: v\r\n")).collect();
        let (status, _) = raw(
            addr,
            format!("GET /activities HTTP/1.1\r\n{many}\r\n").as_bytes(),
        );
        assert_eq!(status, 431);
        let (status, body) = raw(
            addr,
            b"PUT /activities/a/threads HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n8\r\n0\r\n\r\n",
        );
        assert_eq!(status, 411, "{body}");
        // curl's way with a body over 1 KiB: the head, then the body after 100.
        let mut c = TcpStream::connect(addr).unwrap();
        let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
        c.write_all(b"PUT /activities/a/threads HTTP/1.1\r\nContent-Length: 1\r\nExpect: 100-continue\r\n\r\n")
            .unwrap();
        let mut first = [0u8; 25];
        c.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"HTTP/1.1 100 Continue\r\n\r\n");
        c.write_all(b"8").unwrap();
        let mut rest = String::new();
        let _ = c.read_to_string(&mut rest);
        assert!(rest.starts_with("HTTP/1.1 200 OK"), "{rest}");
        assert!(rest.ends_with("a: threads set to 8\n"), "{rest}");
        // Idle connections up to the cap; the next one is refused at once.
        let idle: Vec<TcpStream> = (0..MAX_CONNECTIONS)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        let until = Instant::now() + Duration::from_secs(5);
        while server.connections() < MAX_CONNECTIONS {
            assert!(Instant::now() < until, "{} served", server.connections());
            std::thread::sleep(Duration::from_millis(10));
        }
        let (status, body) = raw(addr, b"GET /activities HTTP/1.1\r\n\r\n");
        assert_eq!(status, 503, "{body}");
        drop(idle);
        // They go away and control works again.
        let until = Instant::now() + Duration::from_secs(5);
        while send(addr, "GET", "/activities", "").0 != 200 {
            assert!(Instant::now() < until, "still refused");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(fake.calls(), ["threads 8"]);
        server.shutdown();
    }

    #[test]
    fn metrics_are_served_as_openmetrics_on_both_endpoints() {
        let fake = Arc::new(Fake::default());
        let full = start(&fake);
        let target: Arc<dyn ControlTarget> = fake.clone();
        let read_only =
            ControlServer::start_read_only(SocketAddr::from(([127, 0, 0, 1], 0)), target)
                .unwrap_or_else(|e| panic!("{e}"));
        for addr in [full.local_addr(), read_only.local_addr()] {
            let (status, head, body) = send(addr, "GET", "/metrics", "");
            assert_eq!(status, 200, "{body}");
            assert!(
                head.contains("Content-Type: application/openmetrics-text; version=1.0.0"),
                "{head}"
            );
            let parsed = super::super::metrics::tests::parse(&body);
            assert!(parsed.families.contains_key("paceline_threads"), "{body}");
            let (status, head, _) = send(addr, "POST", "/metrics", "");
            assert_eq!(status, 405);
            assert!(head.contains("Allow: GET"), "{head}");
        }
        full.shutdown();
        read_only.shutdown();
    }

    #[test]
    fn the_read_only_endpoint_refuses_every_change_with_403() {
        let fake = Arc::new(Fake::default());
        let target: Arc<dyn ControlTarget> = fake.clone();
        let server = ControlServer::start_read_only(SocketAddr::from(([127, 0, 0, 1], 0)), target)
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = server.local_addr();
        for (method, path, body) in [
            ("PUT", "/activities/a/rate", "5000"),
            ("PUT", "/activities/a/threads", "8"),
            ("POST", "/activities/a/pause", ""),
            ("POST", "/activities/a/resume", ""),
            ("POST", "/activities/a/stop", ""),
            ("GET", "/activities/a/rate", ""),
        ] {
            let (status, _, text) = send(addr, method, path, body);
            assert_eq!(status, 403, "{method} {path}: {text}");
            assert!(text.contains("is read-only"), "{text}");
            assert!(text.contains("--control ADDR"), "{text}");
        }
        assert!(fake.calls().is_empty(), "{:?}", fake.calls());
        let (status, _, text) = send(addr, "GET", "/activities/a", "");
        assert_eq!((status, text.contains("\"threads\": 4")), (200, true));
        assert_eq!(send(addr, "GET", "/activities", "").0, 200);
        let (status, _, text) = send(addr, "GET", "/nowhere", "");
        assert_eq!(status, 404);
        assert!(text.contains("serves GET /metrics"), "{text}");
        // A busy port names the flag.
        let target: Arc<dyn ControlTarget> = fake.clone();
        let err = ControlServer::start_read_only(addr, target)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with(&format!("cannot listen on {addr} for --metrics:")),
            "{err}"
        );
        assert!(err.contains("such as --metrics 127.0.0.1:"), "{err}");
        server.shutdown();
        assert!(fake.calls().is_empty(), "{:?}", fake.calls());
    }

    #[test]
    fn rate_bodies() {
        let spec = |t: &str| RateSpec::parse(t).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parse_rate_change("5000"), Ok(RateChange::Set(spec("5000"))));
        assert_eq!(
            parse_rate_change(" 5000,1.0 OVER 2m "),
            Ok(RateChange::Ramp(spec("5000,1.0"), Duration::from_secs(120)))
        );
        assert!(parse_rate_change("over 5s").is_err());
        assert_eq!(parse_threads("12"), Ok(12));
        assert!(parse_threads("-1").is_err());
    }
}
