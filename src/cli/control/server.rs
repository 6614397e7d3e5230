//! The server: binding, the accept loop and its connection limit, and reading one
//! request within the limits of the module table.

use super::routes::{Reply, route};
use super::{Access, ControlTarget};
use std::error::Error;
use std::fmt;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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
    /// The `Accept` header's values, joined by commas (empty when none).
    accept: String,
    body: Vec<u8>,
}

/// Serves one connection: reads one request within the limits, answers, closes.
fn serve(mut stream: TcpStream, access: Access, target: &dyn ControlTarget) {
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(REQUEST_TIMEOUT));
    let mut head = false;
    let reply = match read_request(&mut stream, deadline) {
        Ok(req) => match String::from_utf8(req.body) {
            Ok(text) => {
                head = req.method == "HEAD";
                route(access, &req.method, &req.path, &req.accept, &text, target)
            }
            Err(_) => Reply::text(400, "the request body is not UTF-8 text"),
        },
        Err(Some(reply)) => reply,
        // The client went away: nobody to answer.
        Err(None) => return,
    };
    let answer = if head {
        reply.to_http_head()
    } else {
        reply.to_http()
    };
    let _ = stream.write_all(&answer);
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
    // Every `Accept` header, as one list (RFC 9110 lets a client split it).
    let accept = req
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("accept"))
        .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
        .collect::<Vec<_>>()
        .join(",");
    if header("transfer-encoding").is_some() {
        return Err(Some(Reply::text(
            411,
            "send the body with a Content-Length (chunked bodies are not accepted)",
        )));
    }
    // Every Content-Length (each header, each item of a list) must be the same
    // number: differing ones frame the body two ways, which RFC 9112 answers
    // with 400 (issue 25, item 12).
    let mut length: Option<u64> = None;
    for h in req
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("content-length"))
    {
        let value = String::from_utf8_lossy(h.value);
        for v in value.split(',').map(str::trim) {
            let n: u64 = v.parse().map_err(|_| {
                Some(Reply::text(
                    400,
                    format!("Content-Length `{v}` is not a number of bytes"),
                ))
            })?;
            if length.is_some_and(|l| l != n) {
                return Err(Some(Reply::text(
                    400,
                    "two different Content-Length values: send one",
                )));
            }
            length = Some(n);
        }
    }
    let length = length.unwrap_or(0);
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
    Ok(Incoming {
        method,
        path,
        accept,
        body,
    })
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
