//! The `--control ADDR` HTTP endpoint: change rates, threads and state while a run
//! goes on.
//!
//! | method | path                              | body                               |
//! |--------|-----------------------------------|------------------------------------|
//! | GET    | `/activities`                     | (JSON status of every activity)    |
//! | GET    | `/activities/{alias}`             | (JSON status of one)               |
//! | PUT    | `/activities/{alias}/rate`        | `5000`, `5000,1.0`, `20000 over 30s` |
//! | PUT    | `/activities/{alias}/threads`     | `8`                                |
//! | POST   | `/activities/{alias}/pause`       |                                    |
//! | POST   | `/activities/{alias}/resume`      |                                    |
//! | POST   | `/activities/{alias}/stop`        |                                    |
//!
//! Success is 200 with a one-line plain-text confirmation (JSON for GET). A bad
//! request is a 4xx with a plain message saying what was wrong and how to fix it,
//! and changes nothing: 400 bad value, 404 unknown alias or route, 405 wrong method
//! (with `Allow`), 409 a change the activity's state forbids, 413 body too large.
//!
//! The server runs on its own thread and serves one request at a time; it binds to
//! loopback unless told otherwise, since anyone who reaches it can stop the run.

use paceline::RateSpec;
use paceline::nanos::parse_duration;
use std::error::Error;
use std::fmt;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
use tiny_http::{Header, Method, Request, Response, Server};

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
            Self::Bind { addr, reason } => write!(
                f,
                "cannot listen on {addr} for the control endpoint: {reason} (pick another \
                 port, such as --control 127.0.0.1:7879)"
            ),
        }
    }
}

impl Error for ControlStartError {}

/// The running endpoint. Dropping it shuts it down too; [`shutdown`](Self::shutdown)
/// does so explicitly and waits for the thread.
pub struct ControlServer {
    addr: SocketAddr,
    server: Arc<Server>,
    stopping: Arc<AtomicBool>,
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
const MAX_BODY: u64 = 4096;

impl ControlServer {
    /// Binds `addr` and serves `target` on a new thread. A non-loopback address is
    /// refused unless `allow_remote`. Port 0 picks a free port; see
    /// [`local_addr`](Self::local_addr).
    pub fn start(
        addr: SocketAddr,
        allow_remote: bool,
        target: Arc<dyn ControlTarget>,
    ) -> Result<Self, ControlStartError> {
        if !addr.ip().is_loopback() && !allow_remote {
            return Err(ControlStartError::RemoteNotAllowed { addr });
        }
        let server = Server::http(addr).map_err(|e| ControlStartError::Bind {
            addr,
            reason: e.to_string(),
        })?;
        let bound = server.server_addr().to_ip().unwrap_or(addr);
        let server = Arc::new(server);
        let stopping = Arc::new(AtomicBool::new(false));
        let thread = {
            let (server, stopping) = (server.clone(), stopping.clone());
            std::thread::Builder::new()
                .name("paceline-control".to_string())
                .spawn(move || serve(&server, &stopping, &*target))
                .map_err(|e| ControlStartError::Bind {
                    addr,
                    reason: e.to_string(),
                })?
        };
        Ok(Self {
            addr: bound,
            server,
            stopping,
            thread: Some(thread),
        })
    }

    /// The address actually bound (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving and waits for the server thread to end. A request being
    /// handled is finished first. The listening socket closes on tiny_http's accept
    /// thread a moment later (a few milliseconds).
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        // Release: pairs with the Acquire load in `serve`, which runs after the
        // unblocked `recv` returns; nothing else is published through it.
        self.stopping.store(true, Ordering::Release);
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The server loop: one request at a time until stopped.
fn serve(server: &Server, stopping: &AtomicBool, target: &dyn ControlTarget) {
    loop {
        match server.recv() {
            Ok(request) => handle(request, target),
            Err(_) if stopping.load(Ordering::Acquire) => return,
            // An accept error on one connection; keep serving the others.
            Err(e) => {
                tracing::debug!("control endpoint: {e}");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// A reply before it becomes an HTTP response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status code.
    pub status: u16,
    /// The body: one line of text (newline-terminated), or JSON.
    pub body: String,
    /// Whether the body is JSON.
    pub json: bool,
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
            json: false,
            allow: None,
        }
    }

    fn json(value: &serde_json::Value) -> Self {
        let mut body = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into());
        body.push('\n');
        Self {
            status: 200,
            body,
            json: true,
            allow: None,
        }
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

fn handle(mut request: Request, target: &dyn ControlTarget) {
    let mut body = Vec::new();
    let read = request
        .as_reader()
        .take(MAX_BODY + 1)
        .read_to_end(&mut body);
    let reply = if read.is_err() {
        Reply::text(400, "could not read the request body")
    } else if body.len() as u64 > MAX_BODY {
        Reply::text(
            413,
            format!("request body too large: send at most {MAX_BODY} bytes"),
        )
    } else {
        match String::from_utf8(body) {
            Ok(text) => route(request.method(), request.url(), &text, target),
            Err(_) => Reply::text(400, "the request body is not UTF-8 text"),
        }
    };
    let content_type = if reply.json {
        &b"application/json"[..]
    } else {
        &b"text/plain; charset=utf-8"[..]
    };
    let mut response = Response::from_string(reply.body).with_status_code(reply.status);
    if let Ok(h) = Header::from_bytes(&b"Content-Type"[..], content_type) {
        response = response.with_header(h);
    }
    if let Some(allow) = reply.allow {
        if let Ok(h) = Header::from_bytes(&b"Allow"[..], allow.as_bytes()) {
            response = response.with_header(h);
        }
    }
    if let Err(e) = request.respond(response) {
        tracing::debug!("control endpoint: could not reply: {e}");
    }
}

/// Routes one request to `target` and says what to answer; see the module table.
pub fn route(method: &Method, url: &str, body: &str, target: &dyn ControlTarget) -> Reply {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        ["activities"] => match method {
            Method::Get => Reply::json(&target.activities()),
            _ => Reply::method_not_allowed("GET"),
        },
        ["activities", alias] => match method {
            Method::Get => one_activity(target, alias),
            _ => Reply::method_not_allowed("GET"),
        },
        ["activities", alias, "rate"] => match method {
            Method::Put => put_rate(target, alias, body),
            _ => Reply::method_not_allowed("PUT"),
        },
        ["activities", alias, "threads"] => match method {
            Method::Put => put_threads(target, alias, body),
            _ => Reply::method_not_allowed("PUT"),
        },
        ["activities", alias, action @ ("pause" | "resume" | "stop")] => match method {
            Method::Post => {
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
                "no such route `{path}`: use GET /activities, PUT /activities/ALIAS/rate, \
                 PUT /activities/ALIAS/threads, or POST /activities/ALIAS/pause|resume|stop"
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
    use std::io::Write;
    use std::net::TcpStream;
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
        // tiny_http closes the listening socket on its accept thread, a moment later.
        let mut again = ControlServer::start(addr, false, target.clone());
        for _ in 0..200 {
            if again.is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            again = ControlServer::start(addr, false, target.clone());
        }
        assert!(again.is_ok(), "{:?}", again.err());
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
