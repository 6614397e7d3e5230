//! One connection of the async client: a tokio socket, plain or with its TLS
//! session (tokio-rustls over the activity's rustls configuration), and its
//! input buffer, read and parsed in place as the sync client's is.
//!
//! Reuse follows the sync client's rule (`transport`'s module docs): a pooled
//! connection carries a request only if nothing waits on it, checked with one
//! non-blocking `recv` on the socket itself (not tokio's readiness, which may
//! not have seen bytes that just arrived), skipped for an idempotent request
//! within [`FRESH`] of the last one. On a TLS connection the check peeks, and
//! records found are read without blocking: session tickets or a key update
//! leave the connection usable, data or a close do not.

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
        let fresh = now.saturating_duration_since(self.last_request) < FRESH;
        if (check || !fresh) && !quiet(&mut self.io) {
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
