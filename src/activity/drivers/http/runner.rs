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
use super::wire::Head;
use super::{ErrorKinds, Shared};
use crate::engine::{OpError, OpRunner, WorkerContext, Workload};
use crate::sync::threads::{Arc, AtomicU64, Ordering, lock};
use http::{HeaderName, Method};
use std::fmt::Write as _;
use std::time::Instant;
#[cfg(not(loom))]
use {
    super::aio::AsyncHttp,
    crate::engine::{AsyncOpRunner, LocalFuture},
};

pub(super) struct HttpWork(pub(super) Arc<Shared>);

/// Puts a new worker's counters on the run's board (and the board in the
/// registry under `alias`, if it is not there yet).
pub(super) fn register(s: &Shared, alias: &str) -> Arc<Counters> {
    {
        let mut boards = lock(registry());
        let current = boards.get(alias);
        if !current.is_some_and(|b| Arc::ptr_eq(b, &s.board)) {
            boards.insert(alias.to_string(), s.board.clone());
        }
    }
    let counters = Arc::new(Counters::new());
    lock(&s.board.runners).push(counters.clone());
    counters
}

/// The endpoints a worker connects to before its first op: `base_url`'s, or
/// else where each op's first cycle goes (at most [`PRECONNECT_HOSTS`]; an op
/// whose first request cannot be rendered is left to fail when it runs).
pub(super) fn preconnect_targets(s: &Shared) -> Vec<Endpoint> {
    if let Some(base) = &s.base {
        return vec![base.ep.clone()];
    }
    let mut out: Vec<Endpoint> = Vec::new();
    let mut request = Request::default();
    for (i, op) in s.ops.iter().enumerate() {
        let Some(cycle) = (0..s.plan.sequence().len() as u64).find(|&c| s.plan.op_index(c) == i)
        else {
            continue;
        };
        if request.prepare(s, op, cycle).is_err() {
            continue;
        }
        if !out
            .iter()
            .any(|e| e.authority == request.ep.authority && e.tls == request.ep.tls)
        {
            out.push(request.ep.clone());
        }
        if out.len() == PRECONNECT_HOSTS {
            break;
        }
    }
    out
}

/// The most hosts a worker connects to before its first op.
const PRECONNECT_HOSTS: usize = 4;

impl Workload for HttpWork {
    fn runner(&self, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        let s = &self.0;
        let counters = register(s, ctx.alias());
        let mut client = Client {
            counters,
            idle: Vec::new(),
            resolved: Vec::new(),
            out: Vec::with_capacity(1024),
            current: None,
            kept: Vec::new(),
        };
        // Connected (and TLS handshaken) before the first slot, so the first
        // op's service time holds no connect. A failure is left to the ops.
        if s.keepalive && s.max_idle > 0 {
            for ep in preconnect_targets(s).into_iter().take(s.max_idle) {
                let deadline = Deadline::new(Instant::now(), s.connect_timeout);
                match client.open(&ep, s, &deadline) {
                    Ok(conn) => {
                        Counters::add(&client.counters.preconnected, 1);
                        client.idle.push(conn);
                    }
                    Err(e) => {
                        tracing::debug!(worker = ctx.index(), error = %e, "http: connecting up front failed");
                        break;
                    }
                }
            }
        }
        Ok(Box::new(HttpRunner {
            shared: s.clone(),
            client,
            index: ctx.index(),
            request: Request::default(),
        }))
    }

    #[cfg(not(loom))]
    fn async_runner(
        &self,
        ctx: &WorkerContext,
        in_flight: usize,
    ) -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>> {
        if !self.0.asynchronous {
            return None;
        }
        let (shared, alias, index) = (self.0.clone(), ctx.alias().to_string(), ctx.index());
        Some(Box::pin(async move {
            let runner = AsyncHttp::start(shared, &alias, index, in_flight).await;
            Ok(Box::new(runner) as Box<dyn AsyncOpRunner>)
        }))
    }
}

/// One worker: its client, and the request it is building.
struct HttpRunner {
    shared: Arc<Shared>,
    client: Client,
    index: usize,
    /// The request under way.
    request: Request,
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
        // The target is read where it was rendered (a statement's method is
        // not cut off its front: no copy).
        let (from, to, path) = match &op.target {
            Target::Path(t) => {
                t.render_into(cycle, b, scratch);
                (0, scratch.len(), true)
            }
            Target::Url(t) => {
                t.render_into(cycle, b, scratch);
                (0, scratch.len(), scratch.starts_with('/'))
            }
            Target::Stmt(t) => {
                t.render_into(cycle, b, scratch);
                let (m, rest) = split_stmt(scratch);
                if let Some(m) = m {
                    method = Some(parse_method(m)?);
                }
                let start = rest.as_ptr() as usize - scratch.as_ptr() as usize;
                (start, start + rest.len(), rest.starts_with('/'))
            }
        };
        let rendered = &scratch[from..to];
        if path {
            let Some(base) = &s.base else {
                return Err(format!(
                    "`{rendered}` is a path and param `base_url` is not set"
                ));
            };
            ep.clone_from(&base.ep);
            target.clear();
            target.push_str(&base.prefix);
            if !rendered.starts_with('/') {
                target.push('/');
            }
            target.push_str(rendered);
            check_target(rendered, target)?;
        } else {
            parse_url(rendered, ep, target)?;
        }
        Ok(method.unwrap_or(Method::GET))
    }
}

/// The error for an answer whose status is not a success.
fn fail_status(s: &Shared, url: String, status: u16, idempotent: bool) -> OpError {
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
        .retryable(status_retryable(status, idempotent))
}

/// Whether a request answered `status` can succeed when sent again as it
/// was: the server refused it for now (`429`, `503`), or, for an idempotent
/// method only, it may not have reached its end (`408`, `502`, `504`, after
/// which a `POST` may have been applied). Any other status is the answer the
/// same request gets again.
pub(super) fn status_retryable(status: u16, idempotent: bool) -> bool {
    match status {
        429 | 503 => true,
        408 | 502 | 504 => idempotent,
        _ => false,
    }
}

/// One op's request as it is being built: where it goes and its body, in
/// buffers a worker reuses.
#[derive(Debug, Default)]
pub(super) struct Request {
    /// Where the request goes.
    pub(super) ep: Endpoint,
    /// Its request target (path and query).
    pub(super) target: String,
    pub(super) scratch: String,
    /// Its body, rendered.
    pub(super) body: String,
    /// The method (a redirect may turn it into `GET`).
    pub(super) method: Method,
    /// Whether the body is sent (a redirect to `GET` drops it).
    pub(super) with_body: bool,
    /// A redirect took the request to another origin: credentials stay behind.
    pub(super) cross_origin: bool,
    /// Redirects followed.
    pub(super) hops: usize,
}

impl Request {
    /// Renders `op`'s method, destination and body for `cycle` (the buffers'
    /// allocations are kept).
    pub(super) fn prepare(&mut self, s: &Shared, op: &OpSpec, cycle: u64) -> Result<(), OpError> {
        let bad =
            |m: String| OpError::new("request", format!("op `{}`: {m}", op.name)).retryable(false);
        self.method = HttpRunner::destination(
            s,
            &mut self.ep,
            &mut self.target,
            &mut self.scratch,
            cycle,
            op,
        )
        .map_err(bad)?;
        self.with_body = match &op.body {
            None => false,
            Some(BodySource::Text(t)) => {
                self.body.clear();
                t.render_into(cycle, s.plan.bindings(), &mut self.body);
                true
            }
            Some(BodySource::Json(f)) => {
                self.body.clear();
                // `Value`'s `Display` is its compact JSON.
                let _ = write!(self.body, "{}", f.render_json(cycle, s.plan.bindings()));
                true
            }
        };
        self.cross_origin = false;
        self.hops = 0;
        Ok(())
    }

    /// Writes the request as it now stands into `out`.
    pub(super) fn write(
        &self,
        out: &mut Vec<u8>,
        s: &Shared,
        op: &OpSpec,
        cycle: u64,
    ) -> Result<(), OpError> {
        write_request(
            out,
            s,
            op,
            cycle,
            &self.method,
            &self.ep,
            &self.target,
            self.with_body.then_some(self.body.as_bytes()),
            self.cross_origin,
        )
        .map_err(|m| OpError::new("request", format!("op `{}`: {m}", op.name)).retryable(false))
    }

    /// The error of a failed exchange.
    ///
    /// Retryable when sending it again as it was can succeed: it never left
    /// (`connect`), or it is idempotent and its answer was lost (`timeout`,
    /// `io`); not a `POST` that may have been applied, nor a `tls` or
    /// `protocol` failure the same request meets again.
    pub(super) fn failed(&self, f: Failure) -> OpError {
        let again = match f {
            Failure::Connect(_) => true,
            Failure::Timeout | Failure::Io(_) | Failure::Stale(_) => self.method.is_idempotent(),
            Failure::Protocol(_) | Failure::Tls(_) => false,
        };
        OpError::new(f.kind(), format!("{}: {f}", url_of(&self.ep, &self.target))).retryable(again)
    }

    /// After a complete answer (`kept`: its body, when the op's checks want
    /// it): `Ok(true)` when the request moved to the redirect's `location`
    /// (send it again), `Ok(false)` when the op succeeded, or its error. The
    /// answer's status is counted here.
    pub(super) fn settle(
        &mut self,
        s: &Shared,
        op: &OpSpec,
        head: &Head,
        kept: &[u8],
        counters: &Counters,
    ) -> Result<bool, OpError> {
        let location = match &head.location {
            Some(l) if s.redirects > 0 && is_redirect(head.status) => l,
            _ => {
                counters.answered(head.status);
                let Some(checks) = &op.checks else {
                    return if s.success.contains(head.status) {
                        Ok(false)
                    } else {
                        Err(fail_status(
                            s,
                            url_of(&self.ep, &self.target),
                            head.status,
                            self.method.is_idempotent(),
                        ))
                    };
                };
                let check = |m: String| {
                    OpError::new("check", format!("{}: {m}", url_of(&self.ep, &self.target)))
                        .retryable(false)
                };
                match checks.status(head.status) {
                    Some(r) => r.map_err(check)?,
                    None if s.success.contains(head.status) => {}
                    None => {
                        return Err(fail_status(
                            s,
                            url_of(&self.ep, &self.target),
                            head.status,
                            self.method.is_idempotent(),
                        ));
                    }
                }
                return checks.body(kept).map(|()| false).map_err(check);
            }
        };
        let hops = self.hops;
        if hops == s.redirects {
            // The last answer is counted; the op is not a success.
            counters.answered(head.status);
            return Err(OpError::new(
                "redirects",
                format!(
                    "{} answered {} after {hops} redirects, to `{location}`; \
                     raise param `redirects` (now {hops}) or look for a redirect loop",
                    url_of(&self.ep, &self.target),
                    head.status
                ),
            )
            .retryable(false));
        }
        self.hops += 1;
        let from = url_of(&self.ep, &self.target);
        let authority = self.ep.authority.clone();
        let was_tls = self.ep.tls;
        if let Err(m) = relocate(&mut self.ep, &mut self.target, &mut self.scratch, location) {
            // The 3xx is the answer after all.
            counters.answered(head.status);
            let f = Failure::Protocol(m);
            return Err(OpError::new(f.kind(), format!("{from}: {f}")));
        }
        // Another host, or `https` to `http` on the same one (an origin is
        // scheme, host and port): credentials stay behind.
        self.cross_origin |= self.ep.authority != authority || self.ep.tls != was_tls;
        // 303 asks for a GET; so, as browsers do, does a 301 or 302 to a POST.
        if (head.status == 303 && self.method != Method::HEAD)
            || (matches!(head.status, 301 | 302) && self.method == Method::POST)
        {
            self.method = Method::GET;
            self.with_body = false;
        }
        Ok(true)
    }
}

impl OpRunner for HttpRunner {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        let Self {
            shared,
            client,
            request,
            ..
        } = self;
        let s = &**shared;
        let deadline = Deadline::new(Instant::now(), s.timeout);
        let op = &s.ops[s.plan.op_index(cycle)];
        request.prepare(s, op, cycle)?;
        Counters::add(&client.counters.requests, 1);
        loop {
            request.write(&mut client.out, s, op, cycle)?;
            let head = client
                .send(&request.ep, &request.method, s, &deadline)
                .map_err(|f| request.failed(f))?;
            // Only a complete answer counts: its body is read first.
            let keep = op.checks.as_ref().is_some_and(|c| c.wants_body());
            client
                .finish(&head, !op.sets.closes, keep, s, &deadline)
                .map_err(|f| request.failed(f))?;
            if !request.settle(s, op, &head, &client.kept, &client.counters)? {
                return Ok(());
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
