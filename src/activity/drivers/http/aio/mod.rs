//! The `http` driver's async client: many requests in flight on one worker
//! thread, each on its own kept-alive HTTP/1.1 connection, on the worker's
//! tokio `current_thread` runtime.
//!
//! It is the sync client's sibling, not a second driver: the same op specs,
//! request rendering ([`Request`]), response parsing (`wire`), body framing
//! (`body`), checks, redirects, error kinds and idle-close retry; only the
//! socket calls await instead of blocking. One connection carries one request
//! at a time (no pipelining), so a worker holds as many connections as it has
//! ops in flight, up to its share of `concurrency`.
//!
//! - **Before the first slot** ([`AsyncHttp::start`]) the worker opens that
//!   many connections (TLS handshakes included) to the endpoints it can know
//!   up front (`base_url`, or the hosts of the ops' first cycle), all at once,
//!   so no op's service time holds a connect. An op that finds no idle
//!   connection (more in flight than were opened, a server that closed one)
//!   opens its own, and that connect is in its service time, as it is in the
//!   user's. A failure to connect up front is left to the ops (counted under
//!   the error policy as `connect` or `tls`).
//! - **The pool** keeps up to the larger of `max_idle` and the worker's share
//!   of `concurrency` idle connections, the most recently used reused first;
//!   a pooled connection is checked before reuse as the sync client checks
//!   it (`conn`'s module docs).
//! - **Timeouts** (`timeout`, `connect_timeout`) are tokio timers, of 1 ms
//!   grain; they bound an exchange, they measure nothing.
//! - **Cancelling**: an op's future owns its connection while the exchange
//!   is under way; dropped (a stop's deadline), it closes the connection, and
//!   nothing half-read returns to the pool.

mod conn;
#[cfg(all(test, not(loom)))]
mod tests;

use super::Shared;
use super::body::{Body, closed_in_head};
use super::runner::{Request, preconnect_targets};
use super::stats::Counters;
use super::tls;
use super::transport::Failure;
use super::url::Endpoint;
use super::wire::{self, Framing, Head};
use crate::engine::{AsyncOpRunner, LocalFuture, OpError};
use crate::sync::threads::Arc;
use conn::AsyncConn;
use http::Method;
use std::cell::RefCell;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::Instant;

/// The resolved addresses a worker keeps (the latest hosts asked).
const RESOLVED: usize = 16;

/// A connection being opened.
type Opening<'a> = Pin<Box<dyn Future<Output = Result<AsyncConn, Failure>> + 'a>>;

/// One worker's async client and op runner.
#[derive(Clone)]
pub(super) struct AsyncHttp(Rc<Inner>);

struct Inner {
    shared: Arc<Shared>,
    counters: Arc<Counters>,
    index: usize,
    /// The most idle connections kept.
    limit: usize,
    pool: RefCell<Pool>,
    /// Request buffers of ops that ended, for the next ones.
    spare: RefCell<Vec<Scratch>>,
}

#[derive(Default)]
struct Pool {
    idle: Vec<AsyncConn>,
    /// By authority and port.
    resolved: Vec<(String, u16, Rc<[SocketAddr]>)>,
}

/// One op's buffers.
#[derive(Default)]
struct Scratch {
    request: Request,
    /// The request as sent.
    out: Vec<u8>,
    /// The answer's body, kept for `expect_body`.
    kept: Vec<u8>,
}

impl AsyncHttp {
    /// The runner of worker `index`, with its counters on the run's board, and
    /// `in_flight` connections opened to each endpoint known up front.
    pub(super) async fn start(
        shared: Arc<Shared>,
        alias: &str,
        index: usize,
        in_flight: usize,
    ) -> Self {
        let counters = super::runner::register(&shared, alias);
        let limit = if shared.keepalive && shared.max_idle > 0 {
            shared.max_idle.max(in_flight)
        } else {
            0
        };
        let this = Self(Rc::new(Inner {
            shared,
            counters,
            index,
            limit,
            pool: RefCell::new(Pool::default()),
            spare: RefCell::new(Vec::new()),
        }));
        if limit > 0 {
            for ep in preconnect_targets(&this.0.shared) {
                this.preconnect(&ep, in_flight).await;
            }
        }
        this
    }

    /// Opens `n` connections to `ep` at once into the pool; stops at the first
    /// failure (the ops will meet it and count it).
    async fn preconnect(&self, ep: &Endpoint, n: usize) {
        let inner = &self.0;
        // All at once: the handshakes overlap their round trips.
        let opens: Vec<Opening<'_>> = (0..n)
            .map(|_| Box::pin(inner.open(ep)) as Opening<'_>)
            .collect();
        for opened in join_all(opens).await {
            match opened {
                Ok(c) => {
                    Counters::add(&inner.counters.preconnected, 1);
                    inner.put(c);
                }
                Err(e) => {
                    tracing::debug!(worker = inner.index, error = %e, "http: connecting up front failed");
                    break;
                }
            }
        }
    }

    /// Idle connections in the pool (for tests).
    #[cfg(all(test, not(loom)))]
    fn idle(&self) -> usize {
        self.0.pool.borrow().idle.len()
    }
}

impl AsyncOpRunner for AsyncHttp {
    fn start(&self, cycle: u64) -> LocalFuture<Result<(), OpError>> {
        let inner = self.0.clone();
        Box::pin(async move { inner.run(cycle).await })
    }

    fn op_slot(&self) -> Option<crate::engine::OpSlot> {
        let inner = self.0.clone();
        Some(crate::engine::OpSlot::new(move |cycle| {
            let inner = inner.clone();
            async move { inner.run(cycle).await }
        }))
    }

    fn finish(&self) -> LocalFuture<Result<(), OpError>> {
        let inner = self.0.clone();
        Box::pin(async move {
            let load = |c: &crate::sync::threads::AtomicU64| {
                c.load(crate::sync::threads::Ordering::Relaxed)
            };
            tracing::debug!(
                worker = inner.index,
                requests = load(&inner.counters.requests),
                connections = load(&inner.counters.connections),
                "http async worker done"
            );
            inner.pool.borrow_mut().idle.clear();
            Ok(())
        })
    }
}

impl Inner {
    /// One op: its request, redirects followed, within `timeout`.
    async fn run(&self, cycle: u64) -> Result<(), OpError> {
        let mut sc = self.spare.borrow_mut().pop().unwrap_or_default();
        let s = &*self.shared;
        let result = match tokio::time::timeout(s.timeout, self.op(&mut sc, cycle)).await {
            Ok(r) => r,
            Err(_) => Err(sc.request.failed(Failure::Timeout)),
        };
        self.spare.borrow_mut().push(sc);
        result
    }

    async fn op(&self, sc: &mut Scratch, cycle: u64) -> Result<(), OpError> {
        let s = &*self.shared;
        let op = &s.ops[s.plan.op_index(cycle)];
        sc.request.prepare(s, op, cycle)?;
        Counters::add(&self.counters.requests, 1);
        let keep = op.checks.as_ref().is_some_and(|c| c.wants_body());
        loop {
            sc.request.write(&mut sc.out, s, op, cycle)?;
            sc.kept.clear();
            let head = self
                .exchange(
                    &sc.request.ep,
                    &sc.request.method,
                    &sc.out,
                    !op.sets.closes,
                    keep.then_some(&mut sc.kept),
                )
                .await
                .map_err(|f| sc.request.failed(f))?;
            if !sc.request.settle(s, op, &head, &sc.kept, &self.counters)? {
                return Ok(());
            }
        }
    }

    /// Sends `request` to `ep` and reads the whole answer (its body into
    /// `keep` when given); the connection goes back to the pool if it may
    /// carry another request (`reuse`: the op allows it). A pooled connection
    /// that turns out closed before answering gets an idempotent request once
    /// more on a new one, as the sync client does.
    async fn exchange(
        &self,
        ep: &Endpoint,
        method: &Method,
        request: &[u8],
        reuse: bool,
        keep: Option<&mut Vec<u8>>,
    ) -> Result<Head, Failure> {
        let s = &*self.shared;
        let idempotent = method.is_idempotent();
        let head_request = *method == Method::HEAD;
        let mut conn = match self.checkout(ep, !idempotent) {
            Some(c) => c,
            None => self.open_boxed(ep).await?,
        };
        let head = match round_trip(&mut conn, request, head_request).await {
            Err(Failure::Stale(_)) if idempotent => {
                conn = self.open_boxed(ep).await?;
                round_trip(&mut conn, request, head_request).await?
            }
            other => other?,
        };
        let mut bytes = 0;
        let read = drain(&mut conn, head.body, &mut bytes, keep).await;
        Counters::add(&self.counters.bytes, bytes);
        read?;
        if reuse && head.keep_alive && s.keepalive && conn.data().is_empty() {
            self.put(conn);
        }
        Ok(head)
    }

    /// An idle connection to `ep` that may be reused (`check`: the request
    /// must not repeat, so it is always checked).
    fn checkout(&self, ep: &Endpoint, check: bool) -> Option<AsyncConn> {
        let mut pool = self.pool.borrow_mut();
        let now = Instant::now();
        while let Some(i) = pool
            .idle
            .iter()
            .rposition(|c| c.authority() == ep.authority && c.is_tls() == ep.tls)
        {
            let mut c = pool.idle.remove(i);
            if c.reusable(check, now) {
                return Some(c);
            }
        }
        None
    }

    /// Puts `conn` in the pool, dropping the oldest idle one when it is full.
    fn put(&self, conn: AsyncConn) {
        if self.limit == 0 {
            return;
        }
        let mut pool = self.pool.borrow_mut();
        if pool.idle.len() >= self.limit {
            pool.idle.remove(0);
        }
        pool.idle.push(conn);
    }

    /// [`open`](Self::open) in a box of its own: a connect (TLS handshake
    /// included) is the largest state an op may hold, and it is rare (a pooled
    /// connection serves most ops), so an op's own future, allocated and
    /// written at each start, stays small without it.
    fn open_boxed<'a>(&'a self, ep: &'a Endpoint) -> Opening<'a> {
        Box::pin(self.open(ep))
    }

    /// A new connection to `ep`, counted with the time it took to open (TLS
    /// handshake included).
    async fn open(&self, ep: &Endpoint) -> Result<AsyncConn, Failure> {
        let s = &*self.shared;
        let addrs = self.addrs(ep).await?;
        let began = Instant::now();
        let tls = if ep.tls {
            let name = tls::server_name(&ep.host).map_err(Failure::Tls)?;
            Some((s.tls()?, name))
        } else {
            None
        };
        let (conn, resumed) =
            AsyncConn::open(&addrs, &ep.authority, s.connect_timeout, tls).await?;
        Counters::add(&self.counters.connections, 1);
        Counters::add(
            &self.counters.connect_nanos,
            u64::try_from(began.elapsed().as_nanos()).unwrap_or(u64::MAX),
        );
        if resumed {
            Counters::add(&self.counters.resumed, 1);
        }
        Ok(conn)
    }

    /// `ep`'s addresses, resolved once per worker.
    async fn addrs(&self, ep: &Endpoint) -> Result<Rc<[SocketAddr]>, Failure> {
        let known = |pool: &Pool| {
            pool.resolved
                .iter()
                .find(|(a, p, _)| *a == ep.authority && *p == ep.port)
                .map(|(_, _, addrs)| addrs.clone())
        };
        if let Some(a) = known(&self.pool.borrow()) {
            return Ok(a);
        }
        let addrs: Rc<[SocketAddr]> = match ep.host.parse::<std::net::IpAddr>() {
            Ok(ip) => Rc::new([SocketAddr::new(ip, ep.port)]),
            Err(_) => tokio::net::lookup_host((ep.host.as_str(), ep.port))
                .await
                .map_err(|e| Failure::Connect(format!("cannot resolve `{}`: {e}", ep.host)))?
                .collect(),
        };
        let mut pool = self.pool.borrow_mut();
        if known(&pool).is_none() {
            if pool.resolved.len() >= RESOLVED {
                pool.resolved.remove(0);
            }
            pool.resolved
                .push((ep.authority.clone(), ep.port, addrs.clone()));
        }
        Ok(addrs)
    }
}

/// Sends `request` on `conn` and reads the final answer's head; an answer
/// already waiting when the request cannot be written to the end is read and
/// returned (see the sync client's `round_trip`).
async fn round_trip(
    conn: &mut AsyncConn,
    request: &[u8],
    head_request: bool,
) -> Result<Head, Failure> {
    if let Err(unsent) = conn.send(request).await {
        if !matches!(unsent, Failure::Io(_) | Failure::Stale(_)) {
            return Err(unsent);
        }
        return match read_head(conn, head_request).await {
            Ok(mut head) => {
                head.keep_alive = false;
                Ok(head)
            }
            Err(_) => Err(unsent),
        };
    }
    read_head(conn, head_request).await
}

/// Reads the final answer's head off `conn` (skipping interim `1xx` answers).
async fn read_head(conn: &mut AsyncConn, head_request: bool) -> Result<Head, Failure> {
    loop {
        match wire::parse_head(conn.data(), head_request) {
            Ok(Some(head)) => {
                conn.consume(head.len);
                if !head.is_interim() {
                    return Ok(head);
                }
            }
            Ok(None) => {
                if conn.fill().await? == 0 {
                    return Err(closed_in_head(!conn.data().is_empty()));
                }
            }
            Err(m) => return Err(Failure::Protocol(m.0)),
        }
    }
}

/// Reads a body framed as `framing` off `conn`, adding its length to `bytes`
/// and its bytes to `keep` when given.
async fn drain(
    conn: &mut AsyncConn,
    framing: Framing,
    bytes: &mut u64,
    mut keep: Option<&mut Vec<u8>>,
) -> Result<(), Failure> {
    let mut body = Body::new(framing);
    loop {
        if body.done() {
            return Ok(());
        }
        let (used, n) = body.feed(conn.data(), keep.as_deref_mut())?;
        conn.consume(used);
        *bytes += n;
        if body.done() {
            return Ok(());
        }
        if conn.fill().await? == 0 {
            return body.closed();
        }
    }
}

/// Awaits every future of `all` at once; their outputs, in order.
async fn join_all<'a, T>(all: Vec<Pin<Box<dyn Future<Output = T> + 'a>>>) -> Vec<T> {
    let mut pending: Vec<Option<Pin<Box<dyn Future<Output = T> + 'a>>>> =
        all.into_iter().map(Some).collect();
    let mut out: Vec<Option<T>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut left = false;
        for (slot, done) in pending.iter_mut().zip(out.iter_mut()) {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => {
                        *done = Some(v);
                        *slot = None;
                    }
                    Poll::Pending => left = true,
                }
            }
        }
        if left { Poll::Pending } else { Poll::Ready(()) }
    })
    .await;
    out.into_iter().flatten().collect()
}
