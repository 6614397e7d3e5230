//! One worker's connections: its keep-alive pool, the addresses it resolved,
//! and the exchange of one request for the answer's head and body.

use super::Shared;
use super::stats::Counters;
use super::tls;
use super::transport::{Conn, Deadline, Failure};
use super::url::Endpoint;
use super::wire::{self, Chunked, Framing, Head};
use crate::sync::threads::Arc;
use http::Method;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Instant;

/// The resolved addresses a worker keeps (the latest hosts asked).
const RESOLVED: usize = 16;

/// One worker's connections: the idle ones (its keep-alive pool), the one in
/// use, and the addresses it resolved.
pub(super) struct Client {
    pub(super) counters: Arc<Counters>,
    pub(super) idle: Vec<Conn>,
    /// By authority and port: `https://h` and `http://h` share an authority,
    /// not a port.
    pub(super) resolved: Vec<(String, u16, Vec<SocketAddr>)>,
    /// The request as sent.
    pub(super) out: Vec<u8>,
    /// The connection of the exchange under way (its body not read yet).
    pub(super) current: Option<Conn>,
    /// The last answer's body, kept for `expect_body` (empty otherwise).
    pub(super) kept: Vec<u8>,
}

impl Client {
    /// Sends `self.out` to `ep` and reads the answer's head (skipping interim
    /// `1xx` answers). The body is left for [`finish`](Self::finish).
    ///
    /// A connection from the pool that turns out closed before answering gets
    /// the request once more on a new one if the method is idempotent;
    /// otherwise that is the [`Failure::Stale`] (an `io` error saying the
    /// request was not sent again).
    pub(super) fn send(
        &mut self,
        ep: &Endpoint,
        method: &Method,
        s: &Shared,
        deadline: &Deadline,
    ) -> Result<Head, Failure> {
        let mut conn = self.checkout(ep, !method.is_idempotent(), s, deadline)?;
        let head_request = *method == Method::HEAD;
        let head = match round_trip(&mut conn, &self.out, head_request, deadline) {
            Err(Failure::Stale(_)) if method.is_idempotent() => {
                conn = self.open(ep, s, deadline)?;
                round_trip(&mut conn, &self.out, head_request, deadline)?
            }
            other => other?,
        };
        self.current = Some(conn);
        Ok(head)
    }

    /// Reads the body of the answer [`send`](Self::send) returned, counting its
    /// bytes, and puts the connection back in the pool if it may carry another
    /// request.
    pub(super) fn finish(
        &mut self,
        head: &Head,
        reuse: bool,
        keep: bool,
        s: &Shared,
        deadline: &Deadline,
    ) -> Result<(), Failure> {
        let Some(mut conn) = self.current.take() else {
            return Ok(());
        };
        let mut bytes = 0;
        self.kept.clear();
        let kept = keep.then_some(&mut self.kept);
        let read = drain(&mut conn, head.body, deadline, &mut bytes, kept);
        Counters::add(&self.counters.bytes, bytes);
        read?;
        if reuse && head.keep_alive && s.keepalive && s.max_idle > 0 && conn.data().is_empty() {
            if self.idle.len() >= s.max_idle {
                self.idle.remove(0);
            }
            self.idle.push(conn);
        }
        Ok(())
    }

    /// A pooled connection to `ep` that may be reused, or a new one (`check`:
    /// the request must not repeat, so a pooled connection is always checked).
    fn checkout(
        &mut self,
        ep: &Endpoint,
        check: bool,
        s: &Shared,
        deadline: &Deadline,
    ) -> Result<Conn, Failure> {
        while let Some(i) = self
            .idle
            .iter()
            .rposition(|c| c.authority() == ep.authority && c.is_tls() == ep.tls)
        {
            let mut c = self.idle.remove(i);
            if c.reusable(check, deadline.start) {
                return Ok(c);
            }
        }
        self.open(ep, s, deadline)
    }

    /// A new connection to `ep`, counted; for `https://`, with its TLS
    /// handshake done (sessions resumed where the server allows it).
    pub(super) fn open(
        &mut self,
        ep: &Endpoint,
        s: &Shared,
        deadline: &Deadline,
    ) -> Result<Conn, Failure> {
        let began = Instant::now();
        let mut conn = Conn::connect(self.addrs(ep)?, &ep.authority, s.connect_timeout, deadline)?;
        Counters::add(&self.counters.connections, 1);
        if ep.tls {
            let name = tls::server_name(&ep.host).map_err(Failure::Tls)?;
            if conn.secure(s.tls()?, name, deadline)? {
                Counters::add(&self.counters.resumed, 1);
            }
        }
        Counters::add(
            &self.counters.connect_nanos,
            u64::try_from(began.elapsed().as_nanos()).unwrap_or(u64::MAX),
        );
        Ok(conn)
    }

    /// `ep`'s addresses, resolved once per worker (a load generator talks to
    /// the same few hosts for the whole run).
    pub(super) fn addrs(&mut self, ep: &Endpoint) -> Result<&[SocketAddr], Failure> {
        let i = match self
            .resolved
            .iter()
            .position(|(a, p, _)| *a == ep.authority && *p == ep.port)
        {
            Some(i) => i,
            None => {
                let addrs = (ep.host.as_str(), ep.port)
                    .to_socket_addrs()
                    .map_err(|e| Failure::Connect(format!("cannot resolve `{}`: {e}", ep.host)))?
                    .collect();
                if self.resolved.len() >= RESOLVED {
                    self.resolved.remove(0);
                }
                self.resolved.push((ep.authority.clone(), ep.port, addrs));
                self.resolved.len() - 1
            }
        };
        Ok(&self.resolved[i].2)
    }
}

/// Sends `request` on `conn` and reads the final answer's head.
///
/// A server may answer before it has read the whole request and close the
/// connection (a `413` to the head of a large upload): when the request cannot
/// be written to the end, an answer already waiting on the connection is read
/// and returned (the connection is not reused after it); without one, the
/// write's failure is the result.
fn round_trip(
    conn: &mut Conn,
    request: &[u8],
    head_request: bool,
    deadline: &Deadline,
) -> Result<Head, Failure> {
    if let Err(unsent) = conn.send(request, deadline) {
        if !matches!(unsent, Failure::Io(_) | Failure::Stale(_)) {
            return Err(unsent);
        }
        return match read_head(conn, head_request, deadline) {
            Ok(mut head) => {
                head.keep_alive = false;
                Ok(head)
            }
            Err(_) => Err(unsent),
        };
    }
    read_head(conn, head_request, deadline)
}

/// Reads the final answer's head off `conn` (skipping interim `1xx` answers).
fn read_head(conn: &mut Conn, head_request: bool, deadline: &Deadline) -> Result<Head, Failure> {
    loop {
        match wire::parse_head(conn.data(), head_request) {
            Ok(Some(head)) => {
                conn.consume(head.len);
                if !head.is_interim() {
                    return Ok(head);
                }
            }
            Ok(None) => {
                if conn.fill(deadline)? == 0 {
                    let what = if conn.data().is_empty() {
                        "the server closed the connection without answering"
                    } else {
                        "the server closed the connection in the middle of the response head"
                    };
                    return Err(Failure::Io(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        what,
                    )));
                }
            }
            Err(m) => return Err(Failure::Protocol(m.0)),
        }
    }
}

/// Reads a body framed as `framing` off `conn`, adding its length to `bytes`,
/// and its bytes to `keep` when given.
fn drain(
    conn: &mut Conn,
    framing: Framing,
    deadline: &Deadline,
    bytes: &mut u64,
    mut keep: Option<&mut Vec<u8>>,
) -> Result<(), Failure> {
    let cut = |what: String| Failure::Io(io::Error::new(io::ErrorKind::UnexpectedEof, what));
    match framing {
        Framing::Empty => Ok(()),
        Framing::Length(mut left) => loop {
            let n = (conn.data().len() as u64).min(left);
            if let Some(k) = keep.as_deref_mut() {
                k.extend_from_slice(&conn.data()[..n as usize]);
            }
            conn.consume(n as usize);
            *bytes += n;
            left -= n;
            if left == 0 {
                return Ok(());
            }
            if conn.fill(deadline)? == 0 {
                return Err(cut(format!(
                    "the server closed the connection {left} bytes before the end of the body"
                )));
            }
        },
        Framing::Chunked => {
            let mut chunks = Chunked::default();
            loop {
                let (used, n) = chunks
                    .feed_with(conn.data(), |d| {
                        if let Some(k) = keep.as_deref_mut() {
                            k.extend_from_slice(d);
                        }
                    })
                    .map_err(|m| Failure::Protocol(m.0))?;
                conn.consume(used);
                *bytes += n;
                if chunks.done() {
                    return Ok(());
                }
                if conn.fill(deadline)? == 0 {
                    return Err(cut(
                        "the server closed the connection in the middle of a chunked body"
                            .to_string(),
                    ));
                }
            }
        }
        Framing::UntilClose => loop {
            let n = conn.data().len();
            if let Some(k) = keep.as_deref_mut() {
                k.extend_from_slice(conn.data());
            }
            conn.consume(n);
            *bytes += n as u64;
            if conn.fill(deadline)? == 0 {
                return Ok(());
            }
        },
    }
}
