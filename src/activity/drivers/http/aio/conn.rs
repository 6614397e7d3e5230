//! One connection of the async client: a tokio socket, plain or with its TLS
//! session (tokio-rustls over the activity's rustls configuration), and its
//! input buffer, read and parsed in place as the sync client's is.
//!
//! Reuse follows the sync client's rule (`transport`'s module docs): a pooled
//! connection carries a request only if nothing waits on it, neither bytes
//! nobody asked for nor the server's close. The look is one non-blocking
//! `recv(MSG_PEEK)` on the socket itself ([`Look::Peek`]), or, for an
//! idempotent request when tokio's readiness of the socket is fresh, that
//! readiness first ([`Look::IfReadable`]): the answer's last read was short,
//! which cleared it, so the socket reads as not readable unless the reactor
//! has seen bytes or a close arrive since; only then does the peek run (and
//! its `EAGAIN` clears a stale readiness). On a TLS connection records found
//! are read without blocking: session tickets or a key update leave the
//! connection usable, data or a close do not.
//!
//! | fast path | why it holds | pinned by |
//! |---|---|---|
//! | no system call before an idempotent request when the socket is not readable and the worker's reactor was polled under [`FRESH`] ago (or the connection's last request began under [`FRESH`] ago) | readiness holds every byte and close that arrived before the reactor's last poll; what arrived in the [`FRESH`] since cannot be told from an answer arriving during the request's own wait (the sync client's rule for a connection used under [`FRESH`] ago); a close met is [`Failure::Stale`] and the idempotent request goes again on a new connection | `a_quiet_pooled_connection_is_reused_without_a_system_call`, `bytes_sent_unasked_make_a_pooled_connection_unusable_by_readiness_too`, `how_a_pooled_connection_is_looked_at`, `an_idle_connection_the_server_closed_is_replaced_and_the_request_sent_again` |

use super::super::tls as http_tls;
use super::super::transport::shared::{InBuf, address_failed, address_share, no_plaintext};
use super::super::transport::{FRESH, Failure, broken, connect_failure};
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// The socket: plain, or carrying a TLS session.
enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// An async connection and what was read on it and not used yet.
pub(in super::super) struct AsyncConn {
    io: Io,
    /// The `host:port` it was opened to, as the URL wrote it.
    authority: String,
    /// What was read and not used yet (the sync client's buffer).
    input: InBuf,
    /// When the last request on it was sent.
    last_request: Instant,
    /// Taken from the pool, and nothing read since: a break now is
    /// [`Failure::Stale`].
    reused: bool,
    /// System calls made to look at it before a reuse (for tests).
    pub(super) looks: u32,
}

/// How a pooled connection is looked at before it carries a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Look {
    /// One non-blocking `recv(MSG_PEEK)`.
    Peek,
    /// The peek only if tokio's readiness says the socket is readable.
    IfReadable,
}

/// The look before a request that may be sent twice (`!check`) on a connection
/// whose last request began `idle` ago, the worker's reactor polled
/// `reactor_age` ago (`None`: not known): see the module docs.
pub(super) fn how_to_look(check: bool, idle: Duration, reactor_age: Option<u64>) -> Look {
    let fresh_nanos = u64::try_from(FRESH.as_nanos()).unwrap_or(u64::MAX);
    if !check && (idle < FRESH || reactor_age.is_some_and(|a| a < fresh_nanos)) {
        Look::IfReadable
    } else {
        Look::Peek
    }
}

/// Opens a TCP connection to the first of `addrs` that accepts within
/// `budget`: each address but the last gets half of what is left (at least
/// 10 ms), as the sync client's do ([`address_share`]); `TCP_NODELAY` is set.
async fn connect_tcp(
    addrs: &[SocketAddr],
    authority: &str,
    budget: Duration,
) -> Result<TcpStream, Failure> {
    let started = Instant::now();
    let mut last = None;
    for (i, addr) in addrs.iter().enumerate() {
        let left = budget.saturating_sub(started.elapsed());
        let share = address_share(i, addrs.len(), left);
        if share.is_zero() {
            break;
        }
        match tokio::time::timeout(share, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                stream
                    .set_nodelay(true)
                    .map_err(|e| Failure::Connect(format!("cannot set up the connection: {e}")))?;
                return Ok(stream);
            }
            Err(_) => last = Some(address_failed(addr, addrs.len(), share, None)),
            Ok(Err(e)) => last = Some(address_failed(addr, addrs.len(), share, Some(e))),
        }
    }
    let spent = started.elapsed() >= budget;
    Err(Failure::Connect(connect_failure(
        authority,
        addrs.len(),
        last,
        spent,
        budget,
    )))
}

impl AsyncConn {
    /// Opens a connection to `addrs` within `budget`; with `tls`, a TLS one to
    /// that name, its handshake done. Also returns whether the server resumed
    /// an earlier TLS session.
    pub(in super::super) async fn open(
        addrs: &[SocketAddr],
        authority: &str,
        budget: Duration,
        tls: Option<(&Arc<ClientConfig>, ServerName<'static>)>,
    ) -> Result<(Self, bool), Failure> {
        let tcp = connect_tcp(addrs, authority, budget).await?;
        let (io, resumed) = match tls {
            None => (Io::Plain(tcp), false),
            Some((config, name)) => {
                let connector = tokio_rustls::TlsConnector::from(config.clone());
                let tls = connector
                    .connect(name, tcp)
                    .await
                    .map_err(|e| Failure::Tls(http_tls::handshake_failure(authority, &e)))?;
                let resumed =
                    tls.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
                (Io::Tls(Box::new(tls)), resumed)
            }
        };
        let conn = Self {
            io,
            authority: authority.to_string(),
            input: InBuf::new(),
            last_request: Instant::now(),
            reused: false,
            looks: 0,
        };
        Ok((conn, resumed))
    }

    /// The `host:port` this connection goes to.
    pub(in super::super) fn authority(&self) -> &str {
        &self.authority
    }

    /// Whether this connection carries TLS.
    pub(in super::super) fn is_tls(&self) -> bool {
        matches!(self.io, Io::Tls(_))
    }

    /// What was read and not used yet.
    pub(in super::super) fn data(&self) -> &[u8] {
        self.input.data()
    }

    /// Marks the first `n` bytes of [`data`](Self::data) used.
    pub(in super::super) fn consume(&mut self, n: usize) {
        self.input.consume(n);
    }

    /// Writes all of `bytes` (and flushes a TLS session's records).
    pub(in super::super) async fn send(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        let reused = self.reused;
        let written = match &mut self.io {
            Io::Plain(s) => s.write_all(bytes).await,
            Io::Tls(t) => match t.write_all(bytes).await {
                Ok(()) => t.flush().await,
                Err(e) => Err(e),
            },
        };
        written.map_err(|e| broken(reused, e))?;
        self.last_request = Instant::now();
        Ok(())
    }

    /// Reads what the server sends next onto the end of [`data`](Self::data):
    /// the bytes read, 0 when the server has closed the connection (with or
    /// without a TLS `close_notify`).
    pub(in super::super) async fn fill(&mut self) -> Result<usize, Failure> {
        let into = self.input.room()?;
        let read = match &mut self.io {
            Io::Plain(s) => s.read(into).await,
            Io::Tls(t) => match t.read(into).await {
                // A close without `close_notify` is a close, as curl reads it.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                    let tls = e
                        .get_ref()
                        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                        .map(|t| http_tls::explain(&self.authority, t));
                    return Err(tls.map_or_else(|| broken(self.reused, e), Failure::Tls));
                }
                other => other,
            },
        };
        match read {
            Ok(0) if self.reused => Err(broken(true, io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => {
                self.input.filled(n);
                if n > 0 {
                    self.reused = false;
                }
                Ok(n)
            }
            Err(e) => Err(broken(self.reused, e)),
        }
    }

    /// Whether a pooled connection may carry the next request, which begins
    /// at `now` (see the module docs; `check`: the request must not repeat,
    /// so even a fresh connection is checked).
    pub(in super::super) fn reusable(&mut self, check: bool, now: Instant) -> bool {
        if !self.input.is_empty() {
            return false;
        }
        if let Io::Tls(t) = &mut self.io {
            // Plaintext the session decrypted and nobody read: unasked.
            if !no_plaintext(t.get_mut().1) {
                return false;
            }
        }
        let idle = now.saturating_duration_since(self.last_request);
        let look = how_to_look(check, idle, crate::engine::worker_wait::reactor_age());
        self.reusable_after(look)
    }

    /// [`reusable`](Self::reusable) once the look is chosen (and the session's
    /// plaintext checked).
    pub(super) fn reusable_after(&mut self, look: Look) -> bool {
        let quiet = match look {
            Look::Peek => {
                self.looks += 1;
                quiet(&mut self.io)
            }
            Look::IfReadable => quiet_if_readable(&mut self.io, &mut self.looks),
        };
        if !quiet {
            return false;
        }
        self.reused = true;
        true
    }
}

/// Whether nothing but TLS housekeeping waits on the socket (see the module
/// docs): the sync client's look and reading (`transport::shared`).
#[cfg(target_os = "linux")]
fn quiet(io: &mut Io) -> bool {
    use super::super::transport::shared::{NonBlocking, nothing_waiting, only_housekeeping};
    match io {
        Io::Plain(s) => nothing_waiting(&*s),
        Io::Tls(t) => {
            let (tcp, session) = t.get_mut();
            // Records wait: read them without blocking, straight off the socket.
            nothing_waiting(&*tcp) || only_housekeeping(session, &mut NonBlocking(&*tcp))
        }
    }
}

/// Whether nothing but TLS housekeeping waits on the socket, looked at with a
/// system call only if tokio's readiness says it is readable; a peek that
/// finds nothing clears that readiness (`try_io`). `looks` counts the peeks.
#[cfg(target_os = "linux")]
fn quiet_if_readable(io: &mut Io, looks: &mut u32) -> bool {
    use super::super::transport::shared::{NonBlocking, only_housekeeping};
    use rustix::net::{RecvFlags, recv};
    let tcp: &TcpStream = match io {
        Io::Plain(s) => s,
        Io::Tls(t) => t.get_ref().0,
    };
    let peeked = tcp.try_io(tokio::io::Interest::READABLE, || {
        *looks += 1;
        let mut byte = [0u8; 1];
        recv(tcp, &mut byte[..], RecvFlags::DONTWAIT | RecvFlags::PEEK)
            .map(|(n, _)| n)
            .map_err(io::Error::from)
    });
    match peeked {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => true,
        Ok(n) if n > 0 => match io {
            Io::Plain(_) => false,
            Io::Tls(t) => {
                let (tcp, session) = t.get_mut();
                only_housekeeping(session, &mut NonBlocking(&*tcp))
            }
        },
        _ => false,
    }
}

/// Elsewhere the peek, always.
#[cfg(not(target_os = "linux"))]
fn quiet_if_readable(io: &mut Io, looks: &mut u32) -> bool {
    *looks += 1;
    quiet(io)
}

/// Whether nothing waits on the socket. Without a non-blocking `recv` that
/// leaves tokio's readiness alone, a TLS connection with records waiting is
/// not reused.
#[cfg(not(target_os = "linux"))]
fn quiet(io: &mut Io) -> bool {
    let mut byte = [0u8; 1];
    match io {
        Io::Plain(s) => {
            matches!(s.try_read(&mut byte), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
        }
        Io::Tls(t) => {
            matches!(t.get_ref().0.try_read(&mut byte), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
        }
    }
}
