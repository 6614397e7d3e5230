//! The `http` driver: one HTTP/1.1 request per cycle, over one keep-alive
//! connection pool per worker thread (blocking TCP, with TLS for `https://`).
//!
//! The driver speaks HTTP/1.1 itself: `wire` writes the request head and
//! frames the answer (response heads parsed by `httparse`), `transport`
//! holds the connections, `tls` sets up rustls for `https://`, and
//! `check` runs an op's response checks. A general client's machinery (request and response
//! objects, URI parsing, per-phase timings) cost more than the exchange's own
//! system calls at the rates a load generator runs; here a kept-alive request
//! is rendered straight into one buffer, sent with one `write` (after one
//! non-blocking `recv` that finds its connection quiet, unless the request
//! follows the last one at once), and answered with one `read` that is parsed
//! where it landed.
//!
//!
//! The driver is split by what runs where: this file turns params into the
//! [`Shared`] state of a run; `spec` reads each op's fields into an [`OpSpec`];
//! `url` splits URLs and follows redirects; `runner` renders and sends each
//! cycle's request; `client` holds a worker's connections and reads answers;
//! `stats` counts what the workers did.

#[cfg(not(loom))]
mod aio;
mod body;
mod check;
mod chunked;
mod client;
mod runner;
mod spec;
mod stats;
#[cfg(all(test, not(loom)))]
mod tests;
pub(super) mod tls;
mod transport;
mod url;
mod wire;

pub use stats::HttpStats;
use stats::StatusSet;

use super::{Driver, DriverError, OpPlan};
use crate::activity::params::duration;
use crate::engine::Workload;
use crate::sync::threads::{Arc, Mutex, lock};
use runner::HttpWork;
use rustls::ClientConfig;
use spec::{HeaderSource, OpSpec, header_name, header_value, op_spec};
use stats::{Board, registry};
use std::sync::OnceLock;
use std::time::Duration;
use tls::Trust;
use transport::Failure;
use url::{Base, check_base};

/// The `http` driver: each cycle sends one request, reads the whole response,
/// and counts it as a success or an error by status class or transport failure.
///
/// Each worker thread has its own keep-alive pool: with keep-alive on (the
/// default) a worker opens one connection per host and reuses it for every
/// request until the server closes it. [`Http::stats`] reports requests, new
/// connections and status codes per activity.
///
/// The driver speaks HTTP/1.1 itself over TCP (or TLS): a kept-alive request is
/// one `write` of a buffer the op's templates were rendered into, and its
/// answer usually one `read`, parsed where it landed (response heads by
/// `httparse`); bodies are counted, not kept. A pooled connection is reused
/// only when nothing waits on it (one non-blocking `recv`; an idempotent
/// request right behind the last one, within 100 µs of its start, skips it):
/// bytes the server sent unasked, or its close, drop the connection, so they
/// are never read as the next answer. If the server closes a pooled connection as the request
/// arrives (before any byte of an answer), an idempotent request (`GET`,
/// `HEAD`, `PUT`, `DELETE`, `OPTIONS`, `TRACE`) is sent once more on a new
/// connection, however long the connection was idle; a `POST` or `PATCH` is
/// not sent twice and counts as an `io` error. A server that answers before it
/// has read the whole request (a `413` to a large upload) and closes has its
/// answer read all the same. Socket timeouts change only when the request's
/// deadline needs it; a request still times out at `timeout`.
///
/// What goes on the wire: the request line, `host` (the URL's `host:port`),
/// the op's headers, then `user-agent: paceline/VERSION` and `accept: */*`
/// unless the op sets them, `connection: close` with `keepalive: false`, and
/// `content-length` for a body (`0` for a `POST`, `PUT` or `PATCH` without
/// one). The driver frames the body itself, so `content-length` and
/// `transfer-encoding` cannot be set as headers.
///
/// Answers may be framed any way HTTP/1.1 allows (`content-length`, chunked,
/// or up to the close; `1xx` interim answers are skipped). With `redirects`
/// above 0 a `301`, `302`, `303`, `307` or `308` with a `location` is followed
/// (full, `//host`, absolute or relative); `303`, and `301`/`302` after a
/// `POST`, continue as a `GET` without the body, the others resend method and
/// body; `authorization` and `cookie` headers are not sent to another host.
/// Only the final answer counts in the statuses. A redirect past the last one
/// allowed is an error of kind `redirects` (the last `3xx` is counted in the
/// statuses); with `redirects: 0` a `3xx` is the answer.
///
/// A status is counted (in [`HttpStats::statuses`] and `responses`) only for
/// a complete answer: one whose body was cut short or timed out is an `io` or
/// `timeout` error and no status. A response head may take up to 256 KiB and
/// 512 header fields (curl reads up to 300 KB); past either, the error names
/// the limit.
///
/// Params (all optional):
///
/// | param | value | default |
/// |---|---|---|
/// | `base_url` | `http://host:port` (optionally with a path prefix) that op paths are joined to | none: ops write full URLs |
/// | `timeout` | the whole request, connect to last body byte: `2s`, `500ms` (a bare number is seconds) | `10s` |
/// | `connect_timeout` | opening a connection | `5s` |
/// | `success` | status codes that count as success: classes, codes and ranges, `2xx,304`, `200-299` | `2xx,3xx` |
/// | `keepalive` | reuse connections (`false`: `Connection: close` on every request, a new connection each) | `true` |
/// | `max_idle` | idle connections a worker keeps, over all hosts (one request is in flight per worker, so one per host is all it uses); `0` closes each after its answer | `3` |
/// | `redirects` | redirects to follow; with `0` a 3xx is the answer; one more than allowed is an error of kind `redirects` | `0` |
/// | `headers` | a map of headers sent with every request (ops may override) | none |
/// | `error_kinds` | `class` counts a failed status as `http 4xx`/`http 5xx`; `status` as `http 404`, `http 503` | `class` |
/// | `tls_verify` | `false` takes any certificate for `https://` (a self-signed test server); a warning line says so | `true` |
/// | `ca_file` | a PEM file of the certificates `https://` trusts, instead of the platform's roots | the platform's roots |
/// | `client` | `async`: the async client (many requests in flight per thread, up to `concurrency`); `sync`: one blocking request per thread; `auto`: `async` when the activity gives `concurrency` | `auto` |
///
/// Op fields (every string may hold `{binding}` placeholders):
///
/// | field | value | default |
/// |---|---|---|
/// | `method` | `GET`, `POST`, `PUT`, … (any token; lower case is raised) | `GET` |
/// | `url` | a full `http://` or `https://` URL, or a path starting with `/` joined to `base_url`; `uri` (NoSQLBench 5's name) is the same | |
/// | `path` | a path joined to `base_url` | |
/// | `headers` | a map of header name to value | |
/// | `body` | text sent as is; a map or list is sent as JSON (with `content-type: application/json` unless set) | none |
/// | `stmt` | shorthand `METHOD TARGET` or `TARGET`, such as `GET /items/{id}` (what a plain-string op is) | |
/// | `expect_status` | the statuses the answer must have: `200`, `2xx`, `200-204` or a list `[200, 404]`; replaces `success` for the op | none |
/// | `expect_body` | a regex the body must match, or `{pointer: /status, value: up}`: a JSON pointer and the value there | none |
///
/// Each op needs exactly one of `url`, `path` or `stmt`.
///
/// Errors are counted by kind: a status outside `success` as `http 4xx`,
/// `http 5xx`, … (or the exact status with `error_kinds: status`); a failure
/// to connect (refused, unreachable, unknown host, connect timeout) as
/// `connect`; any other timeout as `timeout`; a malformed answer as `protocol`;
/// a connection that broke mid-exchange as `io`; a redirect past the last one
/// allowed as `redirects`; a request the templates made invalid (a bad URL or
/// header value) as `request`; a failed TLS handshake (a certificate not
/// trusted, expired or for another name; a server that does not speak TLS) as
/// `tls`; an answer that fails `expect_status` or `expect_body` as `check`.
/// The error policy applies to each kind alike.
///
/// `https://` goes over rustls with its default crypto provider. Certificates
/// are checked against the platform's root certificates (or `ca_file`) and the
/// URL's host, which is also the name sent (SNI); each kept-alive connection
/// carries one TLS session, and new connections resume earlier sessions where
/// the server allows it ([`HttpStats::tls_resumed`]). A plain `http://`
/// connection holds no TLS session: its reads and writes go to the socket.
///
/// No proxy is used (`HTTP_PROXY` is ignored): requests go straight to the
/// host. Host names are resolved once per worker with the system resolver,
/// whose own time limits apply, not `connect_timeout`.
///
/// ```no_run
/// use paceline::{Drivers, Engine, Http, ParamOverrides};
/// let d = Drivers::builtin();
/// let a = d.loader().from_str(r#"
/// params: {driver: http, base_url: "http://127.0.0.1:8080", threads: 4, cycles: 10K, rate: 1000,
///          success: "2xx,404", errors: count}
/// bindings:
///   id: Hash(); Mod(1000)
/// ops:
///   get: "GET /items/{id}"
///   put: {ratio: 1, method: PUT, path: "/items/{id}", body: {id: "{id}", tag: "t{id}"}}
/// "#, "items.yaml")?;
/// let run = d.start(&Engine::new(), &a, &ParamOverrides::default())?;
/// run.wait();
/// let totals = run.snapshot();
/// let http = Http::stats("items").unwrap();
/// println!("{} ops, {} errors, {:.0} requests per connection",
///     totals.ops(), totals.error_count(), http.requests_per_connection());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Http;

/// The params `http` accepts.
const PARAMS: &[&str] = &[
    "base_url",
    "timeout",
    "connect_timeout",
    "success",
    "keepalive",
    "max_idle",
    "redirects",
    "headers",
    "error_kinds",
    "tls_verify",
    "ca_file",
    "client",
];

impl Http {
    /// The request, connection and status counts of the most recent run of the
    /// activity `alias` with the `http` driver (summed over its workers, live
    /// while it runs), or `None` if no `http` run of that alias has started a
    /// worker in this process.
    ///
    /// This is how connection reuse shows: `connections` is the number of new
    /// connections the workers opened, `requests` the requests they sent.
    ///
    /// ```
    /// assert!(paceline::Http::stats("never-ran").is_none());
    /// ```
    pub fn stats(alias: &str) -> Option<HttpStats> {
        let boards = lock(registry());
        boards.get(alias).map(|b| b.sum())
    }
}

/// How a failed status is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ErrorKinds {
    Class,
    Status,
}

#[derive(Debug)]
struct Shared {
    plan: Arc<OpPlan>,
    ops: Vec<OpSpec>,
    base: Option<Base>,
    timeout: Duration,
    connect_timeout: Duration,
    redirects: usize,
    max_idle: usize,
    success: StatusSet,
    kinds: ErrorKinds,
    keepalive: bool,
    board: Arc<Board>,
    /// Whom `https://` connections trust.
    trust: Trust,
    /// Runs on the async client (param `client`): the workload offers an
    /// async runner.
    asynchronous: bool,
    /// The TLS configuration, made by the first `https://` connection (or at
    /// load, for an `https://` `base_url`): a plain-HTTP run never reads the
    /// platform's certificates.
    tls: OnceLock<Result<Arc<ClientConfig>, String>>,
}

impl Shared {
    /// The TLS configuration, made once.
    fn tls(&self) -> Result<&Arc<ClientConfig>, Failure> {
        self.tls
            .get_or_init(|| tls::config(&self.trust))
            .as_ref()
            .map_err(|m| Failure::Tls(m.clone()))
    }
}

impl Driver for Http {
    fn name(&self) -> &str {
        "http"
    }

    fn error_kinds(&self, plan: &OpPlan) -> Option<Vec<String>> {
        let statuses: &[&str] = match plan.param_str("error_kinds") {
            Some("status") => &["http ###"],
            _ => &[
                "http 1xx",
                "http 2xx",
                "http 3xx",
                "http 4xx",
                "http 5xx",
                "http other",
            ],
        };
        let own = [
            "connect",
            "timeout",
            "io",
            "protocol",
            "tls",
            "request",
            "check",
            "redirects",
        ];
        Some(own.iter().chain(statuses).map(|k| k.to_string()).collect())
    }

    fn params(&self) -> Option<&[&str]> {
        Some(PARAMS)
    }

    fn workload(&self, plan: Arc<OpPlan>) -> Result<Box<dyn Workload>, DriverError> {
        Ok(Box::new(HttpWork(shared(plan)?)))
    }
}

/// A run's shared state from its plan, or what is wrong with the params.
fn shared(plan: Arc<OpPlan>) -> Result<Arc<Shared>, DriverError> {
    let err = |m: String| DriverError::new("http", m);
    let base = match plan.param("base_url") {
        None => None,
        Some(serde_json::Value::String(s)) => Some(check_base(s).map_err(err)?),
        Some(v) => {
            return Err(err(format!(
                "param `base_url`: {v} is not a URL; write `http://127.0.0.1:8080`"
            )));
        }
    };
    let timeout = param_duration(&plan, "timeout", Duration::from_secs(10)).map_err(err)?;
    let connect_timeout =
        param_duration(&plan, "connect_timeout", Duration::from_secs(5)).map_err(err)?;
    let success = match plan.param("success") {
        None => StatusSet::parse("2xx,3xx").expect("default parses"),
        Some(serde_json::Value::String(s)) => {
            StatusSet::parse(s).map_err(|m| err(format!("param `success`: {m}")))?
        }
        Some(serde_json::Value::Number(n)) => {
            StatusSet::parse(&n.to_string()).map_err(|m| err(format!("param `success`: {m}")))?
        }
        Some(v) => {
            return Err(err(format!(
                "param `success`: {v} is not a status list; write `2xx,304` or `200-299`"
            )));
        }
    };
    let keepalive = param_bool(&plan, "keepalive", true).map_err(err)?;
    let max_idle = param_count(&plan, "max_idle", 3).map_err(err)?;
    let redirects = param_count(&plan, "redirects", 0).map_err(err)?;
    let kinds = match plan.param("error_kinds") {
        None => ErrorKinds::Class,
        Some(serde_json::Value::String(s)) if s == "class" => ErrorKinds::Class,
        Some(serde_json::Value::String(s)) if s == "status" => ErrorKinds::Status,
        Some(v) => {
            return Err(err(format!(
                "param `error_kinds`: {v} is not a choice; use `class` (http 5xx) or `status` (http 503)"
            )));
        }
    };
    let param_headers = match plan.param("headers") {
        None => Vec::new(),
        Some(serde_json::Value::Object(m)) => {
            let mut out = Vec::with_capacity(m.len());
            for (k, v) in m {
                let name = header_name(k).map_err(|m| err(format!("param `headers`: {m}")))?;
                let text = match v {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Number(_) | serde_json::Value::Bool(_) => v.to_string(),
                    _ => {
                        return Err(err(format!(
                            "param `headers`: header `{k}`: {v} is not a value; write text"
                        )));
                    }
                };
                let value = header_value(&text)
                    .map_err(|m| err(format!("param `headers`: header `{k}`: {m}")))?;
                out.push((name, HeaderSource::Fixed(value)));
            }
            out
        }
        Some(v) => {
            return Err(err(format!(
                "param `headers`: {v} is not a map; write `{{x-api-key: abc, accept: application/json}}`"
            )));
        }
    };

    let verify = param_bool(&plan, "tls_verify", true).map_err(err)?;
    let trust = match (plan.param("ca_file"), verify) {
        (None, true) => Trust::Platform,
        (None, false) => Trust::Anyone,
        (Some(serde_json::Value::String(f)), true) => Trust::CaFile(f.clone()),
        (Some(serde_json::Value::String(_)), false) => {
            return Err(err(
                "params `ca_file` and `tls_verify: false` contradict each other; \
                 drop `tls_verify: false` to check certificates against the file"
                    .to_string(),
            ));
        }
        (Some(v), _) => {
            return Err(err(format!(
                "param `ca_file`: {v} is not a path; write `ca_file: certs/ca.pem`"
            )));
        }
    };
    let asynchronous = match plan.param("client") {
        None => wants_async_by_default(&plan),
        Some(serde_json::Value::String(c)) if c == "auto" => wants_async_by_default(&plan),
        Some(serde_json::Value::String(c)) if c == "async" => true,
        Some(serde_json::Value::String(c)) if c == "sync" => false,
        Some(v) => {
            return Err(err(format!(
                "param `client`: {v} is not a choice; use `auto` (async with \
                 `concurrency`, else sync), `async` or `sync`"
            )));
        }
    };
    let tls = OnceLock::new();
    // A CA file is read now, so that a wrong path fails the load; so is
    // whatever an `https://` base URL needs.
    if matches!(trust, Trust::CaFile(_)) || base.as_ref().is_some_and(|b| b.ep.tls) {
        let _ = tls.set(Ok(tls::config(&trust).map_err(err)?));
    }
    // Once per alias in a process: a run loads its activity more than once
    // (validated, then started).
    if trust == Trust::Anyone && first_warning(&plan.params().alias) {
        // A standard error that cannot be written loses the warning, not the run.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "warning: activity `{}`: `tls_verify: false`: https certificates are not checked; \
             anyone between paceline and the server can read and change the traffic",
            plan.params().alias
        );
    }

    let mut ops = Vec::with_capacity(plan.ops().len());
    for op in plan.ops() {
        let spec = op_spec(op, plan.bindings(), base.is_some(), &param_headers)
            .map_err(|m| err(format!("op `{}`: {m}", op.name)))?;
        ops.push(spec);
    }

    Ok(Arc::new(Shared {
        plan,
        ops,
        base,
        timeout,
        connect_timeout: connect_timeout.min(timeout),
        redirects,
        max_idle: if keepalive { max_idle } else { 0 },
        success,
        kinds,
        keepalive,
        board: Arc::new(Board::default()),
        trust,
        asynchronous,
        tls,
    }))
}

/// Whether `client: auto` means the async client: when the activity gives
/// `concurrency` (ops in flight past one per thread need it).
fn wants_async_by_default(plan: &OpPlan) -> bool {
    plan.params().concurrency.is_some()
}

/// Whether the `tls_verify: false` warning for `alias` is this process's
/// first.
fn first_warning(alias: &str) -> bool {
    static WARNED: OnceLock<Mutex<std::collections::BTreeSet<String>>> = OnceLock::new();
    lock(WARNED.get_or_init(Default::default)).insert(alias.to_string())
}

fn param_duration(plan: &OpPlan, name: &str, default: Duration) -> Result<Duration, String> {
    let d = match plan.param(name) {
        None => return Ok(default),
        Some(serde_json::Value::String(s)) => duration(s).ok_or_else(|| {
            format!("param `{name}`: `{s}` is not a duration; write `500ms`, `2s` or `1.5s`")
        })?,
        Some(serde_json::Value::Number(n)) => n
            .as_f64()
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .ok_or_else(|| format!("param `{name}`: {n} is not a duration in seconds"))?,
        Some(v) => {
            return Err(format!(
                "param `{name}`: {v} is not a duration; write `500ms` or `2s`"
            ));
        }
    };
    if d.is_zero() {
        return Err(format!(
            "param `{name}`: must be above 0; write `500ms` or `2s`"
        ));
    }
    Ok(d)
}

fn param_bool(plan: &OpPlan, name: &str, default: bool) -> Result<bool, String> {
    match plan.param(name) {
        None => Ok(default),
        Some(serde_json::Value::Bool(b)) => Ok(*b),
        Some(v) => Err(format!("param `{name}`: {v} is not `true` or `false`")),
    }
}

fn param_count(plan: &OpPlan, name: &str, default: usize) -> Result<usize, String> {
    match plan.param(name) {
        None => Ok(default),
        Some(serde_json::Value::Number(n)) => n
            .as_u64()
            .filter(|&v| v <= 1000)
            .map(|v| v as usize)
            .ok_or_else(|| format!("param `{name}`: {n} is not a count from 0 to 1000")),
        Some(v) => Err(format!(
            "param `{name}`: {v} is not a count; write a whole number such as 3"
        )),
    }
}
