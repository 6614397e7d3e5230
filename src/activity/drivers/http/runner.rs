//! The op runner: each cycle renders its op's request, sends it over the
//! worker's [`Client`], follows redirects, and counts and checks the answer.

use super::client::Client;
use super::spec::{
    BodySource, HeaderSource, MethodSource, OpSpec, Target, parse_method, split_stmt,
};
use super::stats::{Counters, registry};
use super::transport::{Deadline, Failure};
use super::url::{Endpoint, check_target, parse_url, relocate, url_of};
use super::wire;
use super::{ErrorKinds, Shared};
use crate::engine::{OpError, OpRunner, WorkerContext, Workload};
use crate::sync::threads::{Arc, AtomicU64, Ordering, lock};
use http::{HeaderName, Method};
use std::fmt::Write as _;
use std::time::Instant;

pub(super) struct HttpWork(pub(super) Arc<Shared>);

impl Workload for HttpWork {
    fn runner(&self, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        let s = &self.0;
        {
            let mut boards = lock(registry());
            let current = boards.get(ctx.alias());
            if !current.is_some_and(|b| Arc::ptr_eq(b, &s.board)) {
                boards.insert(ctx.alias().to_string(), s.board.clone());
            }
        }
        let counters = Arc::new(Counters::new());
        lock(&s.board.runners).push(counters.clone());
        Ok(Box::new(HttpRunner {
            shared: s.clone(),
            client: Client {
                counters,
                idle: Vec::new(),
                resolved: Vec::new(),
                out: Vec::with_capacity(1024),
                current: None,
                kept: Vec::new(),
            },
            index: ctx.index(),
            ep: Endpoint::default(),
            target: String::with_capacity(128),
            scratch: String::with_capacity(128),
            body: String::new(),
        }))
    }
}

/// One worker: its client, and the request it is building.
struct HttpRunner {
    shared: Arc<Shared>,
    client: Client,
    index: usize,
    /// Where the request goes.
    ep: Endpoint,
    /// Its request target (path and query).
    target: String,
    scratch: String,
    /// Its body, rendered.
    body: String,
}

/// Headers not sent on to another host after a redirect (nor an op's `host`).
const CREDENTIALS: [HeaderName; 3] = [
    http::header::AUTHORIZATION,
    http::header::COOKIE,
    http::header::PROXY_AUTHORIZATION,
];

/// Writes `op`'s request for `cycle` into `out`: request line, `host`, the
/// op's headers (a drawn value rendered now), the defaults the op does not
/// override, `content-length`, and the body. `cross_origin`: a redirect took
/// the request to another host, so credentials stay behind; `body` is `None`
/// after a redirect that turned the request into a `GET`, and so is the
/// op's `content-type`.
#[allow(clippy::too_many_arguments)]
fn write_request(
    out: &mut Vec<u8>,
    s: &Shared,
    op: &OpSpec,
    cycle: u64,
    method: &Method,
    ep: &Endpoint,
    target: &str,
    body: Option<&[u8]>,
    cross_origin: bool,
) -> Result<(), String> {
    let b = s.plan.bindings();
    out.clear();
    wire::request_line(out, method.as_str(), target);
    if !op.sets.host || cross_origin {
        wire::header(out, b"host", ep.authority.as_bytes());
    }
    for (name, src) in &op.headers {
        if (cross_origin && (CREDENTIALS.contains(name) || name == http::header::HOST))
            || (body.is_none() && op.body.is_some() && name == http::header::CONTENT_TYPE)
        {
            continue;
        }
        match src {
            HeaderSource::Fixed(v) => wire::header(out, name.as_str().as_bytes(), v.as_bytes()),
            HeaderSource::Drawn(f) => {
                let text = match f.render_json(cycle, b) {
                    serde_json::Value::String(s) => s,
                    v => v.to_string(),
                };
                if !wire::valid_header_value(text.as_bytes()) {
                    return Err(format!(
                        "header `{name}`: `{text}` is not a header value (no line breaks or control characters)"
                    ));
                }
                wire::header(out, name.as_str().as_bytes(), text.as_bytes());
            }
        }
    }
    if !op.sets.user_agent {
        wire::header(out, b"user-agent", USER_AGENT.as_bytes());
    }
    if !op.sets.accept {
        wire::header(out, b"accept", b"*/*");
    }
    if !s.keepalive && !op.sets.connection {
        wire::header(out, b"connection", b"close");
    }
    let wants_length = matches!(method.as_str(), "POST" | "PUT" | "PATCH");
    wire::end_head(out, body.map(<[u8]>::len).or(wants_length.then_some(0)));
    if let Some(body) = body {
        out.extend_from_slice(body);
    }
    Ok(())
}

/// The `user-agent` sent unless an op sets one.
const USER_AGENT: &str = concat!("paceline/", env!("CARGO_PKG_VERSION"));

/// Whether `status` sends the client elsewhere.
fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

impl HttpRunner {
    /// Renders the op's method and destination for `cycle` into `ep` and
    /// `target` (`scratch` is reused).
    fn destination(
        s: &Shared,
        ep: &mut Endpoint,
        target: &mut String,
        scratch: &mut String,
        cycle: u64,
        op: &OpSpec,
    ) -> Result<Method, String> {
        let b = s.plan.bindings();
        let mut method = match &op.method {
            None => None,
            Some(MethodSource::Fixed(m)) => Some(m.clone()),
            Some(MethodSource::Drawn(t)) => {
                scratch.clear();
                t.render_into(cycle, b, scratch);
                Some(parse_method(scratch)?)
            }
        };
        scratch.clear();
        let path = match &op.target {
            Target::Path(t) => {
                t.render_into(cycle, b, scratch);
                true
            }
            Target::Url(t) => {
                t.render_into(cycle, b, scratch);
                scratch.starts_with('/')
            }
            Target::Stmt(t) => {
                t.render_into(cycle, b, scratch);
                let (m, rest) = split_stmt(scratch);
                if let Some(m) = m {
                    method = Some(parse_method(m)?);
                }
                let start = rest.as_ptr() as usize - scratch.as_ptr() as usize;
                let len = rest.len();
                scratch.truncate(start + len);
                scratch.drain(..start);
                scratch.starts_with('/')
            }
        };
        if path {
            let Some(base) = &s.base else {
                return Err(format!(
                    "`{scratch}` is a path and param `base_url` is not set"
                ));
            };
            ep.clone_from(&base.ep);
            target.clear();
            target.push_str(&base.prefix);
            if !scratch.starts_with('/') {
                target.push('/');
            }
            target.push_str(scratch);
            check_target(scratch, target)?;
        } else {
            parse_url(scratch, ep, target)?;
        }
        Ok(method.unwrap_or(Method::GET))
    }
}

/// The error for an answer whose status is not a success.
fn fail_status(s: &Shared, url: String, status: u16) -> OpError {
    let kind: std::borrow::Cow<'static, str> = match s.kinds {
        ErrorKinds::Status => format!("http {status}").into(),
        ErrorKinds::Class => match status / 100 {
            1 => "http 1xx".into(),
            2 => "http 2xx".into(),
            3 => "http 3xx".into(),
            4 => "http 4xx".into(),
            5 => "http 5xx".into(),
            _ => "http other".into(),
        },
    };
    OpError::new(kind, format!("{url} answered {status}"))
}

impl OpRunner for HttpRunner {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        let Self {
            shared,
            client,
            ep,
            target,
            scratch,
            body,
            ..
        } = self;
        let s = &**shared;
        let deadline = Deadline::new(Instant::now(), s.timeout);
        let op = &s.ops[s.plan.op_index(cycle)];
        // The engine names the cycle when it reports an error; the messages
        // here say what went wrong where.
        let bad = |m: String| OpError::new("request", format!("op `{}`: {m}", op.name));
        let failed = |f: Failure, url: String| OpError::new(f.kind(), format!("{url}: {f}"));
        let mut method = Self::destination(s, ep, target, scratch, cycle, op).map_err(bad)?;
        let mut with_body = match &op.body {
            None => false,
            Some(BodySource::Text(t)) => {
                body.clear();
                t.render_into(cycle, s.plan.bindings(), body);
                true
            }
            Some(BodySource::Json(f)) => {
                body.clear();
                // `Value`'s `Display` is its compact JSON.
                let _ = write!(body, "{}", f.render_json(cycle, s.plan.bindings()));
                true
            }
        };
        Counters::add(&client.counters.requests, 1);
        let mut hops = 0;
        let mut cross_origin = false;
        loop {
            write_request(
                &mut client.out,
                s,
                op,
                cycle,
                &method,
                ep,
                target,
                with_body.then_some(body.as_bytes()),
                cross_origin,
            )
            .map_err(bad)?;
            let head = client
                .send(ep, &method, s, &deadline)
                .map_err(|f| failed(f, url_of(ep, target)))?;
            // Only a complete answer counts: its body is read first.
            let keep = op.checks.as_ref().is_some_and(|c| c.wants_body());
            client
                .finish(&head, !op.sets.closes, keep, s, &deadline)
                .map_err(|f| failed(f, url_of(ep, target)))?;
            let location = match &head.location {
                Some(l) if s.redirects > 0 && is_redirect(head.status) => l,
                _ => {
                    client.counters.answered(head.status);
                    let Some(checks) = &op.checks else {
                        return if s.success.contains(head.status) {
                            Ok(())
                        } else {
                            Err(fail_status(s, url_of(ep, target), head.status))
                        };
                    };
                    let check =
                        |m: String| OpError::new("check", format!("{}: {m}", url_of(ep, target)));
                    match checks.status(head.status) {
                        Some(r) => r.map_err(check)?,
                        None if s.success.contains(head.status) => {}
                        None => return Err(fail_status(s, url_of(ep, target), head.status)),
                    }
                    return checks.body(&client.kept).map_err(check);
                }
            };
            if hops == s.redirects {
                // The last answer is counted; the op is not a success.
                client.counters.answered(head.status);
                return Err(OpError::new(
                    "redirects",
                    format!(
                        "{} answered {} after {hops} redirects, to `{location}`; \
                         raise param `redirects` (now {hops}) or look for a redirect loop",
                        url_of(ep, target),
                        head.status
                    ),
                ));
            }
            hops += 1;
            let from = url_of(ep, target);
            let authority = ep.authority.clone();
            let was_tls = ep.tls;
            if let Err(m) = relocate(ep, target, scratch, location) {
                // The 3xx is the answer after all.
                client.counters.answered(head.status);
                return Err(failed(Failure::Protocol(m), from));
            }
            // Another host, or `https` to `http` on the same one (an origin is
            // scheme, host and port): credentials stay behind.
            cross_origin |= ep.authority != authority || ep.tls != was_tls;
            // 303 asks for a GET; so, as browsers do, does a 301 or 302 to a POST.
            if (head.status == 303 && method != Method::HEAD)
                || (matches!(head.status, 301 | 302) && method == Method::POST)
            {
                method = Method::GET;
                with_body = false;
            }
        }
    }

    fn finish(&mut self) -> Result<(), OpError> {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        tracing::debug!(
            worker = self.index,
            requests = load(&self.client.counters.requests),
            connections = load(&self.client.counters.connections),
            "http worker done"
        );
        Ok(())
    }
}
