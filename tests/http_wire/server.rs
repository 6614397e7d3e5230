//! The scripted server the tests run against (see the crate docs) and the
//! helpers that run an `http` activity against it.

use paceline::{Http, HttpStats, Outcome, Snapshot};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request as the server read it.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    /// The connection it came on: 0 for the server's first, in accept order.
    pub(crate) conn: usize,
    /// The head, request line to the blank line (CRLFs included).
    pub(crate) head: String,
    /// The body (decoded, if it came chunked).
    pub(crate) body: Vec<u8>,
    /// Every byte of the request as it arrived: the head, then the body as framed.
    pub(crate) raw: Vec<u8>,
}

impl Request {
    /// The request line, such as `GET /x HTTP/1.1`.
    pub(crate) fn line(&self) -> &str {
        self.head.lines().next().unwrap_or("")
    }

    /// The method: the request line's first word.
    pub(crate) fn method(&self) -> &str {
        self.line().split(' ').next().unwrap_or("")
    }

    /// The request target: the request line's second word.
    pub(crate) fn target(&self) -> &str {
        self.line().split(' ').nth(1).unwrap_or("")
    }

    /// The values of every header named `name` (compared case-insensitively),
    /// trimmed, in the order received.
    pub(crate) fn headers(&self, name: &str) -> Vec<&str> {
        self.head
            .lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .filter(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
            .collect()
    }

    /// The first header named `name` (case-insensitively), if any.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers(name).into_iter().next()
    }
}

/// What the server writes for one request, and what it does after.
pub(crate) struct Reply {
    pub(crate) bytes: Vec<u8>,
    /// Close the connection after writing.
    pub(crate) close: bool,
    /// Write in pieces of 1, 2 and 3 bytes in turn, pausing 1 ms after each.
    pub(crate) trickle: bool,
}

impl Reply {
    /// These bytes exactly, keeping the connection open afterwards.
    pub(crate) fn raw(bytes: impl Into<Vec<u8>>) -> Self {
        Reply {
            bytes: bytes.into(),
            close: false,
            trickle: false,
        }
    }

    /// `HTTP/1.1 200 OK` with `body` and its `content-length`.
    pub(crate) fn ok(body: &str) -> Self {
        Reply::raw(format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        ))
    }

    /// A redirect `status` to `location`, with an empty body.
    pub(crate) fn redirect(status: u16, location: &str) -> Self {
        Reply::raw(format!(
            "HTTP/1.1 {status} Moved\r\nlocation: {location}\r\ncontent-length: 0\r\n\r\n"
        ))
    }

    /// The same, then the server closes the connection.
    pub(crate) fn then_close(mut self) -> Self {
        self.close = true;
        self
    }

    /// The same, written a few bytes at a time.
    pub(crate) fn trickled(mut self) -> Self {
        self.trickle = true;
        self
    }
}

/// A scripted HTTP/1.1 server on a loopback port, answering every request with
/// what its closure returns for it and recording the requests.
pub(crate) struct Server {
    /// `http://127.0.0.1:PORT`.
    pub(crate) base: String,
    /// Every request read, in arrival order.
    pub(crate) requests: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    /// Starts a server that answers each request with `answer(request)`. It
    /// reads a request's body by its `content-length` or chunked framing, and
    /// says `100 Continue` first when the request expects it.
    pub(crate) fn start(answer: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
        Server::start_with(None, answer)
    }

    /// As [`start`](Self::start), with a keep-alive timeout `idle` whose timer
    /// fires just as the next request arrives: a request that comes on a
    /// connection idle for `idle` or longer is read (and recorded), then the
    /// connection is closed without an answer. This is the worst case of the
    /// race between a server's idle timeout and a client's next request.
    pub(crate) fn start_with(
        idle: Option<Duration>,
        answer: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let answer: Arc<Answer> = Arc::new(answer);
        let log = requests.clone();
        std::thread::spawn(move || {
            let conns = AtomicUsize::new(0);
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let conn = conns.fetch_add(1, Ordering::Relaxed);
                let (answer, log) = (answer.clone(), log.clone());
                std::thread::spawn(move || serve_connection(stream, conn, idle, &*answer, &log));
            }
        });
        Server { base, requests }
    }

    /// Every request read so far, in arrival order.
    pub(crate) fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// The connection each request came on, in arrival order: `[0, 0, 0]` is
    /// three requests on one connection, `[0, 1, 2]` one connection each.
    pub(crate) fn connections(&self) -> Vec<usize> {
        self.requests().iter().map(|r| r.conn).collect()
    }

    /// `part` of every request read so far (its method, line or target), in
    /// arrival order.
    pub(crate) fn each(&self, part: fn(&Request) -> &str) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| part(r).to_string())
            .collect()
    }

    /// `127.0.0.1:PORT`: what a `host` header for this server says.
    pub(crate) fn authority(&self) -> &str {
        self.base.trim_start_matches("http://")
    }
}

pub(crate) type Answer = dyn Fn(&Request) -> Reply + Send + Sync;

/// Reads requests from one connection and answers them until the client closes
/// it or a reply says to close.
fn serve_connection(
    stream: TcpStream,
    conn: usize,
    idle: Option<Duration>,
    answer: &Answer,
    log: &Mutex<Vec<Request>>,
) {
    let mut w = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    // The idle timer starts once a request was answered: a fresh connection's
    // first request is never refused (on a busy machine the thread that serves
    // it can start more than `idle` after the accept).
    let mut last: Option<Instant> = None;
    while let Some(req) = read_request(&mut r, &mut w, conn) {
        let timed_out = idle.is_some_and(|d| last.is_some_and(|t| t.elapsed() >= d));
        let reply = if timed_out {
            Reply::raw("").then_close()
        } else {
            answer(&req)
        };
        log.lock().unwrap().push(req);
        if write_reply(&mut w, &reply).is_err() || reply.close {
            let _ = w.shutdown(Shutdown::Both);
            return;
        }
        last = Some(Instant::now());
    }
}

/// Reads one request, or `None` once the client closed the connection (or
/// broke it) before a whole request came.
fn read_request(r: &mut BufReader<TcpStream>, w: &mut TcpStream, conn: usize) -> Option<Request> {
    let mut raw = Vec::new();
    loop {
        let start = raw.len();
        if r.read_until(b'\n', &mut raw).ok()? == 0 {
            return None;
        }
        if raw[start..] == *b"\r\n" || raw[start..] == *b"\n" {
            break;
        }
    }
    let mut req = Request {
        conn,
        head: String::from_utf8_lossy(&raw).into_owned(),
        body: Vec::new(),
        raw,
    };
    let lower = |v: Option<&str>| v.map(str::to_ascii_lowercase).unwrap_or_default();
    if lower(req.header("expect")) == "100-continue" {
        w.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").ok()?;
    }
    if lower(req.header("transfer-encoding")).contains("chunked") {
        loop {
            let mut line = Vec::new();
            r.read_until(b'\n', &mut line).ok()?;
            req.raw.extend_from_slice(&line);
            let size = String::from_utf8_lossy(&line);
            let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
            if size == 0 {
                // Trailers, to the blank line.
                loop {
                    let mut t = Vec::new();
                    r.read_until(b'\n', &mut t).ok()?;
                    req.raw.extend_from_slice(&t);
                    if t.is_empty() || t == b"\r\n" || t == b"\n" {
                        return Some(req);
                    }
                }
            }
            let mut chunk = vec![0; size + 2];
            r.read_exact(&mut chunk).ok()?;
            req.raw.extend_from_slice(&chunk);
            req.body.extend_from_slice(&chunk[..size]);
        }
    }
    if let Some(n) = req.header("content-length") {
        let mut body = vec![0; n.parse().ok()?];
        r.read_exact(&mut body).ok()?;
        req.raw.extend_from_slice(&body);
        req.body = body;
    }
    Some(req)
}

/// Writes `reply`'s bytes, all at once or trickled.
fn write_reply(w: &mut TcpStream, reply: &Reply) -> io::Result<()> {
    if !reply.trickle {
        return w.write_all(&reply.bytes);
    }
    w.set_nodelay(true)?;
    let mut rest = &reply.bytes[..];
    let mut n = 1;
    while !rest.is_empty() {
        let (piece, tail) = rest.split_at(n.min(rest.len()));
        w.write_all(piece)?;
        std::thread::sleep(Duration::from_millis(1));
        rest = tail;
        n = n % 3 + 1;
    }
    Ok(())
}

/// Runs an `http` activity named `alias` against `base` to its end: one
/// thread, `cycles` cycles, errors counted, a 2 s timeout (unless `params` sets one), plus `params`
/// (flow-style entries such as `redirects: 3`, or nothing) and `ops` (a
/// flow-style map). Returns the run's totals and the driver's stats.
pub(crate) fn run(
    alias: &str,
    base: &str,
    cycles: u64,
    params: &str,
    ops: &str,
) -> (Snapshot, HttpStats) {
    let more = if params.is_empty() { "" } else { ", " };
    let timeout = if params.contains("timeout:") {
        ""
    } else {
        ", timeout: 2s"
    };
    let yaml = format!(
        "params: {{driver: http, alias: {alias}, base_url: '{base}', threads: 1, \
         cycles: {cycles}, errors: count{timeout}{more}{params}}}\nops: {ops}\n"
    );
    let run = crate::drive::start_text(&format!("{alias}.yaml"), &yaml);
    assert_eq!(run.wait(), Outcome::Completed);
    let stats = Http::stats(alias).expect("stats for the alias");
    (run.snapshot(), stats)
}

/// The run's errors by kind, for comparing with a list.
pub(crate) fn errors(totals: &Snapshot) -> Vec<(String, u64)> {
    totals.errors().map(|(k, n)| (k.to_string(), n)).collect()
}
