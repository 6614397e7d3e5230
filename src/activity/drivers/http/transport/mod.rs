//! The `http` driver's connections: TCP, plain or with a TLS session
//! ([`Conn::secure`]), with few system calls per kept-alive request: one
//! `recvfrom` that finds nothing waiting, one `sendto`, one `recvfrom` for the
//! answer.
//!
//! A general-purpose client spends more around those, and a load generator
//! would pay them on every request:
//!
//! - probing a pooled connection before reusing it (`ioctl(FIONBIO)` on, a
//!   `recvfrom` that should say `EAGAIN`, `ioctl(FIONBIO)` off), to find
//!   connections the server closed;
//! - setting the socket's read and write timeouts (`setsockopt`) on every
//!   request, because what is left of the request's deadline differs each time.
//!
//! [`Conn`] keeps both honest for less:
//!
//! - **Reuse.** A pooled connection is checked before it carries a request
//!   ([`Conn::reusable`]) with one non-blocking `recv` that only peeks
//!   (`MSG_DONTWAIT | MSG_PEEK` on Linux; elsewhere the three calls above, with
//!   a peek): it must find nothing. Bytes the server
//!   sent unasked (a second answer, an error page after a timeout) or an end of
//!   stream mean the connection is dropped, so unasked bytes are never read as
//!   the next request's answer. The one exception is the fast path below: an
//!   idempotent request on a connection whose last request began less than
//!   [`FRESH`] (100 µs) ago goes without the check. A server may still close
//!   the connection just as the request arrives (its idle timeout ran out in
//!   the meantime): the request then meets the closed connection before any
//!   byte of an answer, and the connection says so with [`Failure::Stale`],
//!   however long it was idle. The driver sends an idempotent request once
//!   more on a new connection (as RFC 9110 §9.2.2 allows, and as browsers and
//!   curl do) and counts any other as an `io` error: a `POST` or `PATCH` is
//!   never sent twice.
//! - **Early answers.** A server may answer before it has read the whole
//!   request (a `413` to the head of a large upload) and close the connection,
//!   so the rest of the request cannot be written. The answer waiting on the
//!   connection is then read and is the request's answer (the driver's `round_trip`).
//! - **Timeouts.** The socket's timeout is changed only when it would let a read
//!   or write block past the request's deadline, or is less than half of what is
//!   left ([`arm`]). Then it is set to seven eighths of what is left, so that the
//!   next request, whose deadline is a little later, finds it still short
//!   enough. A socket timeout that expires before the deadline is not a timeout:
//!   the call sets the exact time left and waits again. So a call never blocks
//!   past the deadline (to the kernel's timer granularity) and never fails
//!   before it.
//!
//! Fast paths:
//!
//! | fast path | why it holds | pinned by |
//! |---|---|---|
//! | no check before an idempotent request on a connection whose last request began under [`FRESH`] ago | unasked bytes can only have arrived in the gap since the last answer was read, which is then shorter than a loopback round trip: an answer that close behind the last one cannot be told from one arriving during the next request's wait either (HTTP/1.1 has no request ids); a close met in the gap is [`Failure::Stale`], and the request goes again | `a_fresh_connection_skips_the_check_unless_the_request_must_not_repeat`, `bytes_nobody_asked_for_make_a_pooled_connection_unusable` |
//! | a socket timeout kept across requests | [`arm`] never leaves one later than the deadline | `the_socket_timeout_changes_only_when_it_must`, `a_silent_server_times_out_at_the_deadline_not_before_nor_much_after` |
//!
//! Back-to-back requests (an unpaced run) so cost two system calls each; a
//! paced worker, whose connection idles between slots, pays a third, the
//! check (about 0.5 µs on the bench machine against 1.8 µs for the three-call
//! probe it replaced, with a loopback round trip at 25 µs; see
//! `benches/README.md`).
//!
//! **TLS.** An `https://` connection holds its rustls session, made and
//! handshaken when the connection opens (within the request's deadline; a
//! failure is [`Failure::Tls`]). Its writes encrypt the request into the
//! session and write the records out; its reads decrypt records into the same
//! input buffer a plain connection reads into, so everything above the
//! connection is the same. The server's end of stream ends a TLS connection
//! with or without its `close_notify`. The reuse check is the same `recv`; when
//! it finds bytes, they are read as TLS records without blocking, and the
//! connection is still reusable if they were only housekeeping (session
//! tickets, a key update), not data or a close. A plain connection has no
//! session, and its reads and writes go to the socket as before: the one added
//! cost is a test of an `Option`.
//!
//! The connection's input buffer holds what the server sent and the caller has
//! not used yet ([`Conn::data`], [`Conn::consume`], [`Conn::fill`]): a response
//! head is parsed where it landed, and a body is counted and dropped, never
//! copied.
//!
//! Split by what runs where: this file holds the connection and its plain
//! reads and writes; `tls` its TLS session (handshake, encrypted reads and
//! writes); `connect` the opening of a connection; `shared` what the async
//! client's connection (`aio::conn`) uses too: the input buffer, the look
//! before reuse, the reading of TLS housekeeping, the connect budget's split.

mod connect;
pub(crate) mod shared;
#[cfg(all(test, not(loom)))]
mod tests;
mod tls;

use connect::connect_any;
pub(crate) use connect::connect_failure;
use rustls::ClientConnection;
#[cfg(target_os = "linux")]
use shared::nothing_waiting;
use shared::{InBuf, no_plaintext};
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// An idempotent request on a pooled connection whose last request began
/// less than this long ago goes without the check (see the module docs).
pub(crate) const FRESH: Duration = Duration::from_micros(100);

/// Why an exchange failed. [`Failure::kind`] names the error counter.
#[derive(Debug)]
pub(crate) enum Failure {
    /// No connection: the host did not resolve, refused, was unreachable, or
    /// did not accept within `connect_timeout`. Check the URL and that the
    /// server is up.
    Connect(String),
    /// The request's `timeout` passed before the answer was complete.
    Timeout,
    /// A connection from the pool turned out closed before any byte of the
    /// answer: the server never answered this request on it (an idempotent
    /// request is sent once more on a new connection).
    Stale(io::Error),
    /// The connection broke mid-exchange.
    Io(io::Error),
    /// The answer is not HTTP/1.x as the driver reads it, or a redirect
    /// leads where the driver cannot follow.
    Protocol(String),
    /// The TLS handshake failed (a certificate not trusted, expired or for
    /// another name; a server that does not speak TLS), or a TLS record
    /// could not be read. The message says which and how to fix it.
    Tls(String),
}

impl Failure {
    /// The kind an op's error is counted under.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Failure::Connect(_) => "connect",
            Failure::Timeout => "timeout",
            Failure::Stale(_) | Failure::Io(_) => "io",
            Failure::Protocol(_) => "protocol",
            Failure::Tls(_) => "tls",
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Connect(m) | Failure::Protocol(m) | Failure::Tls(m) => f.write_str(m),
            Failure::Timeout => f.write_str("no complete answer within the timeout"),
            // Only a request that is not idempotent is left with this failure:
            // any other is sent again on a new connection.
            Failure::Stale(e) => write!(
                f,
                "the server closed the kept-alive connection before answering ({e}); \
                 it is not idempotent, so it is not sent twice"
            ),
            Failure::Io(e) => write!(f, "the connection broke: {e}"),
        }
    }
}

/// When a request must be over.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    /// When the request began.
    pub(crate) start: Instant,
    at: Instant,
}

impl Deadline {
    /// A deadline `timeout` after `start` (at most a year: any later is as good
    /// as none, and cannot overflow the clock).
    pub(crate) fn new(start: Instant, timeout: Duration) -> Self {
        const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
        Self {
            start,
            at: start + timeout.min(YEAR),
        }
    }

    /// Time left; [`Failure::Timeout`] once it has passed.
    pub(crate) fn left(&self) -> Result<Duration, Failure> {
        let left = self.at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(Failure::Timeout)
        } else {
            Ok(left)
        }
    }
}

/// The new socket timeout before blocking with `left` until the deadline, or
/// `None` to leave `set` as it is (`set`: the socket's, `None` for none, a new
/// socket's state).
///
/// `set` is kept while it is no later than the deadline and at least half of
/// what is left; otherwise it becomes seven eighths of what is left, so that
/// the following requests (each with a slightly later deadline) keep it.
fn arm(set: Option<Duration>, left: Duration) -> Option<Duration> {
    match set {
        Some(s) if s <= left && s >= left / 2 => None,
        _ => Some((left - left / 8).max(Duration::from_nanos(1)).min(left)),
    }
}

/// A TCP connection, plain or with its TLS session, and its input buffer
/// (see the module docs).
#[derive(Debug)]
pub(crate) struct Conn {
    stream: TcpStream,
    /// The TLS session of an `https://` connection (`None`: plain HTTP, whose
    /// reads and writes go straight to the socket).
    tls: Option<Box<ClientConnection>>,
    /// The `host:port` it was opened to, as the URL wrote it.
    authority: String,
    /// What was read and not used yet.
    input: InBuf,
    /// The socket's read and write timeouts as set.
    read: Option<Duration>,
    write: Option<Duration>,
    /// When the last request on it began (from its [`Deadline`]).
    last_request: Instant,
    /// Taken from the pool, and nothing read since: a break now is
    /// [`Failure::Stale`].
    reused: bool,
}

impl Conn {
    /// Opens a connection to the first of `addrs` that answers within
    /// `connect_timeout` (and before `deadline`): each address but the last gets
    /// half of the budget left, at least 10 ms; refused or unreachable addresses
    /// and per-address timeouts move on to the next. Running out of the budget
    /// is a [`Failure::Connect`], even when it used up the request's deadline.
    /// `TCP_NODELAY` is set: a request goes out as one segment at once.
    pub(crate) fn connect(
        addrs: &[SocketAddr],
        authority: &str,
        connect_timeout: Duration,
        deadline: &Deadline,
    ) -> Result<Self, Failure> {
        let budget = deadline.left()?.min(connect_timeout);
        let started = Instant::now();
        let stream = connect_any(addrs, authority, budget, started, deadline)?;
        stream
            .set_nodelay(true)
            .map_err(|e| Failure::Connect(format!("cannot set up the connection: {e}")))?;
        Ok(Self::new(stream, authority))
    }

    fn new(stream: TcpStream, authority: &str) -> Self {
        Self {
            stream,
            tls: None,
            authority: authority.to_string(),
            input: InBuf::new(),
            read: None,
            write: None,
            last_request: Instant::now(),
            reused: false,
        }
    }

    /// The `host:port` this connection goes to.
    pub(crate) fn authority(&self) -> &str {
        &self.authority
    }

    /// Whether this connection carries TLS.
    pub(crate) fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Whether a pooled connection may carry the next request, which begins
    /// at `now`: nothing is waiting on it, neither bytes nobody asked for nor
    /// the server's close (one non-blocking `recv`). Without `check` (the
    /// request is idempotent), a connection whose last request began less than
    /// [`FRESH`] ago is taken as it is (see the module docs).
    pub(crate) fn reusable(&mut self, check: bool, now: Instant) -> bool {
        if !self.input.is_empty() {
            return false;
        }
        if let Some(tls) = &mut self.tls {
            // Plaintext the session decrypted and nobody read: unasked.
            if !no_plaintext(tls) {
                return false;
            }
        }
        let fresh = now.saturating_duration_since(self.last_request) < FRESH;
        if (check || !fresh) && !nothing_waiting(&self.stream) {
            match &mut self.tls {
                None => return false,
                // TLS may have sent records that are no answer (session
                // tickets, a key update): those are read; any data, or the
                // close, makes the connection unusable.
                Some(tls) => {
                    if !tls::housekeeping_only(tls, &self.stream) {
                        return false;
                    }
                }
            }
        }
        self.reused = true;
        true
    }

    /// What was read and not used yet.
    pub(crate) fn data(&self) -> &[u8] {
        self.input.data()
    }

    /// Marks the first `n` bytes of [`data`](Self::data) used.
    pub(crate) fn consume(&mut self, n: usize) {
        self.input.consume(n);
    }

    /// A connection from the pool failing before any byte of the answer: stale.
    fn broken(&self, e: io::Error) -> Failure {
        broken(self.reused, e)
    }

    /// Writes all of `bytes` before `deadline`.
    pub(crate) fn send(&mut self, bytes: &[u8], deadline: &Deadline) -> Result<(), Failure> {
        if self.tls.is_some() {
            return self.send_tls(bytes, deadline);
        }
        let mut exact = false;
        let mut sent = 0;
        while sent < bytes.len() {
            let left = deadline.left()?;
            set_timeout(&self.stream, &mut self.write, left, exact, |s, t| {
                s.set_write_timeout(t)
            })
            .map_err(Failure::Io)?;
            match (&self.stream).write(&bytes[sent..]) {
                Ok(0) => return Err(self.broken(io::ErrorKind::WriteZero.into())),
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if expired(&e) => exact = true,
                Err(e) => return Err(self.broken(e)),
            }
        }
        self.last_request = deadline.start;
        Ok(())
    }

    /// Reads what the server sends next onto the end of [`data`](Self::data),
    /// waiting until `deadline`: the bytes read, 0 when the server has closed
    /// the connection.
    pub(crate) fn fill(&mut self, deadline: &Deadline) -> Result<usize, Failure> {
        self.input.room()?;
        if self.tls.is_some() {
            return self.fill_tls(deadline);
        }
        let mut exact = false;
        loop {
            let left = deadline.left()?;
            set_timeout(&self.stream, &mut self.read, left, exact, |s, t| {
                s.set_read_timeout(t)
            })
            .map_err(Failure::Io)?;
            let room = self.input.room()?;
            match (&self.stream).read(room) {
                Ok(0) if self.reused => {
                    return Err(self.broken(io::ErrorKind::UnexpectedEof.into()));
                }
                Ok(n) => {
                    self.input.filled(n);
                    if n > 0 {
                        self.reused = false;
                    }
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if expired(&e) => exact = true,
                Err(e) => return Err(self.broken(e)),
            }
        }
    }
}

/// A connection failing with `e`: [`Failure::Stale`] if it came from the pool
/// and nothing has been read since, and the error says the server closed it.
pub(crate) fn broken(reused: bool, e: io::Error) -> Failure {
    use io::ErrorKind as K;
    let gone = matches!(
        e.kind(),
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof
    );
    if reused && gone {
        Failure::Stale(e)
    } else {
        Failure::Io(e)
    }
}

/// Whether a failed socket call means its timeout expired.
fn expired(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Sets the socket's timeout for one direction when [`arm`] says so (`exact`:
/// to the time left, after the socket's timeout expired early).
fn set_timeout(
    stream: &TcpStream,
    current: &mut Option<Duration>,
    left: Duration,
    exact: bool,
    set: fn(&TcpStream, Option<Duration>) -> io::Result<()>,
) -> io::Result<()> {
    let next = if exact {
        Some(left)
    } else {
        arm(*current, left)
    };
    if let Some(next) = next {
        set(stream, Some(next))?;
        *current = Some(next);
    }
    Ok(())
}

/// Whether a non-blocking look finds nothing to read (`EAGAIN`), leaving what
/// is waiting on the socket (see the Linux version, `shared::nothing_waiting`).
#[cfg(not(target_os = "linux"))]
fn nothing_waiting(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let mut buf = [0];
    let empty = matches!(stream.peek(&mut buf), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
    stream.set_nonblocking(false).is_ok() && empty
}
