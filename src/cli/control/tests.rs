//! The endpoint over real sockets, against a fake target.

use super::routes::{RateChange, parse_rate_change, parse_threads};
use super::server::{MAX_CONNECTIONS, REQUEST_TIMEOUT, SHUTDOWN_WAIT};
use super::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[path = "tests_hostile.rs"]
mod hostile;
#[path = "tests_lows.rs"]
mod lows;

/// Knows one activity, `a`; records every call that reached it.
#[derive(Default)]
struct Fake {
    calls: Mutex<Vec<String>>,
    stopped: AtomicBool,
    /// The status's `rate` object, when set (else a bare number).
    rate: Mutex<Option<serde_json::Value>>,
    /// The status's `coordinated` object, when set (else null).
    coordinated: Mutex<Option<serde_json::Value>>,
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
        let rate = self.rate.lock().ok().and_then(|r| r.clone());
        let coordinated = self.coordinated.lock().ok().and_then(|c| c.clone());
        serde_json::json!([{
            "alias": "a",
            "rate": rate.unwrap_or(1000.0.into()),
            "threads": 4,
            "coordinated": coordinated,
        }])
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
        super::super::metrics::encode(
            &[super::super::metrics::ActivityMetrics {
                alias: "a".into(),
                totals: paceline::Snapshot::empty(0, 1),
                rate_target: 1000.0,
                rate_achieved: 990.0,
                threads: 4,
                paused: false,
                #[cfg(feature = "redis")]
                coordinated: None,
            }],
            super::super::metrics::BucketScheme::Coarse,
        )
    }
    fn metrics_protobuf(&self) -> Option<Vec<u8>> {
        Some(super::super::metrics::encode_protobuf(
            &[super::super::metrics::tests::two_ops()],
            super::super::metrics::BucketScheme::Native,
            None,
        ))
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

/// A thread-scope rate is each thread's: the confirmation says so, and says
/// the target the status, `/metrics` and the summary show (threads x the
/// rate), as it said neither before (session 15's left-over).
#[test]
fn a_thread_scope_rate_is_confirmed_per_thread_with_its_total() {
    let fake = Arc::new(Fake::default());
    let server = start(&fake);
    let addr = server.local_addr();
    let (status, _, body) = send(addr, "PUT", "/activities/a/rate", "1000,1.0,thread");
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            "a: rate set to 1000,1,start,thread (per thread: a target of 4.00K/s over its 4 \
             thread(s))\n"
        )
    );
    let (status, _, body) = send(addr, "PUT", "/activities/a/rate", "2K,thread over 10s");
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            "a: rate ramping to 2000,1.1,start,thread (per thread: a target of 8.00K/s over its \
             4 thread(s)) over 10.0s\n"
        )
    );
    server.shutdown();
}

/// Audit p17, M2: a body that leaves out the strictness or the scope keeps
/// those of the spec in force (a bare `150` on a `100,1.0,thread` activity was
/// installed as `150,1.1,start,activity`), and the confirmation says so.
#[test]
fn a_bare_rate_keeps_the_scope_and_strictness_in_force() {
    let fake = Arc::new(Fake::default());
    *fake.rate.lock().unwrap() = Some(serde_json::json!({
        "rate": 100.0, "strictness": 1.0, "scope": "thread"
    }));
    let server = start(&fake);
    let addr = server.local_addr();
    let (status, _, body) = send(addr, "PUT", "/activities/a/rate", "150");
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            "a: rate set to 150,1,start,thread (strictness and scope kept from the spec in \
             force) (per thread: a target of 600/s over its 4 thread(s))\n"
        )
    );
    send(addr, "PUT", "/activities/a/rate", "150,1.5");
    send(addr, "PUT", "/activities/a/rate", "150,activity");
    send(addr, "PUT", "/activities/a/rate", "300 over 10s");
    assert_eq!(
        fake.calls(),
        [
            "rate 150,1,start,thread",
            "rate 150,1.5,start,thread",
            "rate 150,1,start,activity",
            "ramp 300,1,start,thread 10s",
        ]
    );
    server.shutdown();
}

#[test]
fn bad_requests_get_4xx_with_a_fix_and_change_nothing() {
    let fake = Arc::new(Fake::default());
    let server = start(&fake);
    let addr = server.local_addr();
    let cases: [(&str, &str, &str, u16, &str); 15] = [
        // Audit L7: an empty alias was read as the route one segment up (405).
        (
            "PUT",
            "/activities//rate",
            "5",
            404,
            "has an empty segment (`//`); name the activity",
        ),
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

/// Issue 24 item 11: a scraper that prefers the protobuf exposition (as
/// Prometheus does with native histograms on) gets it, with its content type;
/// any other gets the text.
#[test]
fn metrics_are_served_in_protobuf_to_a_scraper_that_asks_for_it() {
    let fake = Arc::new(Fake::default());
    let server = start(&fake);
    let accept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
                  encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,*/*;q=0.1";
    for (accept, protobuf) in [(accept, true), ("application/openmetrics-text", false)] {
        let mut s = TcpStream::connect(server.local_addr()).unwrap_or_else(|e| panic!("{e}"));
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        let req = format!(
            "GET /metrics HTTP/1.1\r\nHost: test\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
        );
        s.write_all(req.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap_or_else(|e| panic!("{e}"));
        let at = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no head end"));
        let head = String::from_utf8_lossy(&raw[..at]).into_owned();
        let body = &raw[at + 4..];
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
        assert!(
            head.contains(&format!("Content-Length: {}", body.len())),
            "{head}"
        );
        if protobuf {
            assert!(
                head.contains(
                    "Content-Type: application/vnd.google.protobuf; \
                     proto=io.prometheus.client.MetricFamily; encoding=delimited"
                ),
                "{head}"
            );
            // The first message is the info family, whole.
            let mut bytes = body;
            let first = <super::super::metrics::MetricFamilyMessage as prost::Message>::decode_length_delimited(&mut bytes)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(first.name, "paceline_info");
        } else {
            assert!(
                head.contains("Content-Type: application/openmetrics-text"),
                "{head}"
            );
            assert!(String::from_utf8_lossy(body).ends_with("# EOF\n"));
        }
    }
    server.shutdown();
}

#[test]
fn metrics_are_served_as_openmetrics_on_both_endpoints() {
    let fake = Arc::new(Fake::default());
    let full = start(&fake);
    let target: Arc<dyn ControlTarget> = fake.clone();
    let read_only = ControlServer::start_read_only(SocketAddr::from(([127, 0, 0, 1], 0)), target)
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
