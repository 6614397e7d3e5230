//! The `http` driver's plain-TCP transport: ureq's, minus the system calls a
//! load generator pays on every request.
//!
//! ureq's own TCP transport spends eight system calls per kept-alive request
//! around the two that do the work (one `sendto`, one `recvfrom`):
//!
//! - it probes a pooled connection when it takes it from the pool and again when
//!   it returns it (`ioctl(FIONBIO)` on, a `recvfrom` that should say `EAGAIN`,
//!   `ioctl(FIONBIO)` off: three calls each time), to find connections the server
//!   closed and servers that sent bytes nobody asked for;
//! - it sets the socket's read and write timeouts (`setsockopt`) on every request,
//!   because the timeout it is given is what is left of the whole request's
//!   deadline, a value that is different each time.
//!
//! [`PlainTcp`] keeps both honest for less:
//!
//! - **Probing.** A connection whose last read or write began less than
//!   [`FRESH`] ago is taken as open without a probe: the server would have had to
//!   close it within that window, without saying `Connection: close`. If it did,
//!   the request meets the closed connection before any byte of an answer, and the
//!   transport says so with a [`Stale`] error; the driver then sends an idempotent
//!   request once more on a new connection (as RFC 9110 §9.2.2 allows, and as
//!   browsers do), and counts anything else as an `io` error. A request that is
//!   not idempotent ([`Hints::set_probe`]) always gets the probe, as with ureq.
//!   Older connections are probed as ureq does.
//! - **Timeouts.** The socket's timeout is changed only when it would let a read or
//!   write block past the request's deadline, or is less than half of what is left
//!   ([`arm`]). Then it is set to seven eighths of what is left, so that the next
//!   request, whose deadline is a little later, finds it still short enough. A
//!   socket timeout that expires before the deadline is not a timeout: the call
//!   sets the exact time left and waits again. So a call never blocks past the
//!   deadline (to the kernel's timer granularity, as with ureq) and never fails
//!   before it.
//!
//! With `proxy` set (ureq reads `HTTP_PROXY` and friends by default) or for
//! `https://`, the driver keeps ureq's default connector: this transport is for
//! the direct plain-TCP case only.
//!
//! # Ground rules for the hint
//!
//! [`Hints`] holds one `AtomicBool`, written by the worker's runner before each
//! request and read by the transports of that worker's agent, on the same thread:
//! `Relaxed` both ways, as it publishes nothing else (an atomic only because a
//! transport must be `Sync`).

use crate::sync::threads::{Arc, AtomicBool, Ordering};
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use ureq::unversioned::transport::time::Duration as UreqDuration;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, LazyBuffers, NextTimeout, Transport,
};
use ureq::{Error, Timeout};

/// A connection whose last I/O began less than this long ago is reused
/// without a probe.
pub(crate) const FRESH: Duration = Duration::from_millis(2);

/// What the runner tells its transports about the next request.
#[derive(Debug, Default)]
pub(crate) struct Hints {
    /// Probe even a fresh connection (the request is not idempotent).
    probe: AtomicBool,
}

impl Hints {
    /// Whether pooled connections must be probed however fresh: set it for
    /// requests that are not safe to send twice.
    pub(crate) fn set_probe(&self, probe: bool) {
        self.probe.store(probe, Ordering::Relaxed);
    }

    fn probe(&self) -> bool {
        self.probe.load(Ordering::Relaxed)
    }
}

/// The error payload saying a reused connection turned out closed before any
/// byte of the answer came back: the server never answered this request on it,
/// so an idempotent request may be sent again on a new connection.
#[derive(Debug)]
pub(crate) struct Stale;

impl fmt::Display for Stale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the server closed the kept-alive connection before answering")
    }
}

impl std::error::Error for Stale {}

/// Whether `e` is a [`Stale`] connection.
pub(crate) fn is_stale(e: &Error) -> bool {
    matches!(e, Error::Io(io) if io.get_ref().is_some_and(|inner| inner.is::<Stale>()))
}

/// Whether the connector should open a [`PlainTcp`] for `details` (no proxy,
/// no TLS); otherwise ureq's default connector does the work.
pub(crate) fn handles(details: &ConnectionDetails) -> bool {
    details.config.proxy().is_none() && !details.needs_tls()
}

/// The socket's timeout for one direction: `None` blocks without limit (a new
/// socket's state).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct SocketTimeout(Option<Duration>);

/// The new socket timeout before blocking with `left` until the deadline
/// (`None`: no deadline), or `None` to leave `set` as it is.
///
/// `set` is kept while it is no later than the deadline and at least half of
/// what is left; otherwise it becomes seven eighths of what is left, so that
/// the following requests (each with a slightly later deadline) keep it.
fn arm(set: Option<Duration>, left: Option<Duration>) -> Option<Option<Duration>> {
    match (set, left) {
        (None, None) => None,
        (Some(_), None) => Some(None),
        (Some(s), Some(l)) if s <= l && s >= l / 2 => None,
        (_, Some(l)) => Some(Some((l - l / 8).max(Duration::from_micros(1)).min(l))),
    }
}

/// The deadline of one transport call: when it started and how long it may take.
#[derive(Debug, Clone, Copy)]
struct Deadline {
    start: Instant,
    after: Option<Duration>,
    reason: Timeout,
}

impl Deadline {
    fn new(timeout: NextTimeout) -> Self {
        Self {
            start: Instant::now(),
            after: match timeout.after {
                UreqDuration::Exact(d) => Some(d),
                UreqDuration::NotHappening => None,
            },
            reason: timeout.reason,
        }
    }

    /// Time left, `None` without a deadline; an error once it has passed.
    fn left(&self) -> Result<Option<Duration>, Error> {
        match self.after {
            None => Ok(None),
            Some(after) => {
                let left = after.saturating_sub(self.start.elapsed());
                if left.is_zero() {
                    Err(Error::Timeout(self.reason))
                } else {
                    Ok(Some(left))
                }
            }
        }
    }
}

/// A plain TCP connection for ureq's pool, with fewer system calls per request
/// than ureq's own (see the module docs).
#[derive(Debug)]
pub(crate) struct PlainTcp {
    /// Shared (weakly) with the agent's shutdown handle, as ureq's transport does.
    stream: Arc<TcpStream>,
    buffers: LazyBuffers,
    read: SocketTimeout,
    write: SocketTimeout,
    /// When the last read or write that moved bytes began.
    last_io: Instant,
    /// Handed out again without a probe since the last byte read.
    unprobed: bool,
    hints: Arc<Hints>,
}

impl PlainTcp {
    /// Opens a connection to the first of `details.addrs` that answers, as
    /// ureq's `TcpConnector` does: each address gets a share of the connect
    /// budget (halving from the first), at least 10 ms; refused or unreachable
    /// addresses and per-address timeouts move on to the next; TCP_NODELAY as
    /// configured.
    pub(crate) fn connect(details: &ConnectionDetails, hints: Arc<Hints>) -> Result<Self, Error> {
        let deadline = Deadline::new(details.timeout);
        let stream = connect_any(&details.addrs, &deadline)?;
        if details.config.no_delay() {
            stream.set_nodelay(true)?;
        }
        let stream = Arc::new(stream);
        // ureq implements its shutdown for `TcpStream`: `Agent::shutdown` shuts
        // this socket down too, as it does its own.
        let weak = Arc::downgrade(&stream);
        (details.register_shutdown)(weak)?;
        Ok(Self::new(
            stream,
            LazyBuffers::new(
                details.config.input_buffer_size(),
                details.config.output_buffer_size(),
            ),
            hints,
        ))
    }

    fn new(stream: Arc<TcpStream>, buffers: LazyBuffers, hints: Arc<Hints>) -> Self {
        Self {
            stream,
            buffers,
            read: SocketTimeout::default(),
            write: SocketTimeout::default(),
            last_io: Instant::now(),
            unprobed: false,
            hints,
        }
    }

    /// A reused connection failing before any byte of the answer: [`Stale`].
    fn stale_or(&self, e: io::Error) -> Error {
        use io::ErrorKind as K;
        let gone = matches!(
            e.kind(),
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof
        );
        if self.unprobed && gone {
            Error::Io(io::Error::new(e.kind(), Stale))
        } else {
            Error::Io(e)
        }
    }
}

/// Tries each address in turn (see [`PlainTcp::connect`]).
fn connect_any(addrs: &[SocketAddr], deadline: &Deadline) -> Result<TcpStream, Error> {
    const MIN_PER_ADDRESS: Duration = Duration::from_millis(10);
    let total_weight = 2.0 * (1.0 - 0.5_f64.powi(addrs.len() as i32));
    let mut weight = 1.0_f64;
    let mut last: Option<Error> = None;
    for addr in addrs {
        let per_addr = deadline.after.map(|t| {
            Duration::try_from_secs_f64(t.as_secs_f64() * weight / total_weight)
                .unwrap_or(t)
                .max(MIN_PER_ADDRESS)
        });
        let tried = match per_addr {
            Some(d) => TcpStream::connect_timeout(addr, d),
            None => TcpStream::connect(addr),
        };
        match tried {
            Ok(s) => return Ok(s),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
                ) =>
            {
                if deadline.after.is_some_and(|t| deadline.start.elapsed() > t) {
                    return Err(Error::Timeout(deadline.reason));
                }
                last = Some(Error::Timeout(Timeout::Connect));
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionRefused
                        | io::ErrorKind::HostUnreachable
                        | io::ErrorKind::NetworkUnreachable
                        | io::ErrorKind::AddrNotAvailable
                ) =>
            {
                last = Some(Error::Io(e));
            }
            Err(e) => return Err(Error::Io(e)),
        }
        weight /= 2.0;
    }
    Err(last.unwrap_or_else(|| {
        Error::Io(io::Error::new(
            io::ErrorKind::ConnectionRefused,
            "no address to connect to",
        ))
    }))
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
fn update(
    stream: &TcpStream,
    current: &mut SocketTimeout,
    left: Option<Duration>,
    exact: bool,
    set: fn(&TcpStream, Option<Duration>) -> io::Result<()>,
) -> io::Result<()> {
    let next = if exact && left.is_some() {
        Some(left)
    } else {
        arm(current.0, left)
    };
    if let Some(next) = next {
        set(stream, next)?;
        current.0 = next;
    }
    Ok(())
}

impl Transport for PlainTcp {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), Error> {
        let deadline = Deadline::new(timeout.for_write());
        let mut exact = false;
        let mut sent = 0;
        while sent < amount {
            let left = deadline.left()?;
            update(
                &self.stream,
                &mut self.write,
                left,
                exact,
                TcpStream::set_write_timeout,
            )?;
            let output = &self.buffers.output()[sent..amount];
            match (&*self.stream).write(output) {
                Ok(0) => return Err(self.stale_or(io::ErrorKind::WriteZero.into())),
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if expired(&e) && left.is_some() => exact = true,
                Err(e) => return Err(self.stale_or(e)),
            }
        }
        // When the write began: a little early (a read's wait for the answer
        // counts as idle too), so a connection never looks fresher than it is.
        self.last_io = deadline.start;
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, Error> {
        let deadline = Deadline::new(timeout.for_read());
        let mut exact = false;
        loop {
            let left = deadline.left()?;
            update(
                &self.stream,
                &mut self.read,
                left,
                exact,
                TcpStream::set_read_timeout,
            )?;
            let input = self.buffers.input_append_buf();
            match (&*self.stream).read(input) {
                Ok(0) if self.unprobed => {
                    return Err(self.stale_or(io::ErrorKind::UnexpectedEof.into()));
                }
                Ok(n) => {
                    self.buffers.input_appended(n);
                    if n > 0 {
                        self.unprobed = false;
                        // When the read began, as for writes.
                        self.last_io = deadline.start;
                    }
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if expired(&e) && left.is_some() => exact = true,
                Err(e) => return Err(self.stale_or(e)),
            }
        }
    }

    fn is_open(&mut self) -> bool {
        if !self.hints.probe() && self.last_io.elapsed() < FRESH {
            self.unprobed = true;
            return true;
        }
        self.unprobed = false;
        probe(&self.stream).unwrap_or(false)
    }
}

/// ureq's probe: a non-blocking read must find nothing to read (`EAGAIN`); bytes
/// nobody asked for, an end of stream or an error mean the connection is done.
fn probe(mut stream: &TcpStream) -> io::Result<bool> {
    stream.set_nonblocking(true)?;
    let mut buf = [0];
    match stream.read(&mut buf) {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
        _ => return Ok(false),
    }
    stream.set_nonblocking(false)?;
    Ok(true)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::net::TcpListener;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_socket_timeout_changes_only_when_it_must() {
        // A new socket, a 10 s deadline: seven eighths of it.
        assert_eq!(arm(None, Some(10_000 * MS)), Some(Some(8_750 * MS)));
        // The next requests, deadlines a little later or earlier: kept.
        assert_eq!(arm(Some(8_750 * MS), Some(9_999 * MS)), None);
        assert_eq!(arm(Some(8_750 * MS), Some(10_000 * MS)), None);
        // A request past an eighth of its budget: lowered, never above the time left.
        assert_eq!(
            arm(Some(8_750 * MS), Some(8_000 * MS)),
            Some(Some(7_000 * MS))
        );
        // Far shorter than what is left (after a slow request): raised again.
        assert_eq!(arm(Some(7 * MS), Some(10_000 * MS)), Some(Some(8_750 * MS)));
        // No deadline: no timeout.
        assert_eq!(arm(Some(MS), None), Some(None));
        assert_eq!(arm(None, None), None);
        // Tiny budgets stay within the budget.
        let tiny = Duration::from_nanos(5);
        assert_eq!(arm(None, Some(tiny)), Some(Some(tiny)));
        for left in [1, 7, 8, 999, 1_000, 123_456_789] {
            let left = Duration::from_nanos(left);
            let set = arm(None, Some(left)).unwrap().unwrap();
            assert!(set <= left && !set.is_zero(), "{left:?} -> {set:?}");
        }
    }

    fn pair() -> (PlainTcp, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let t = PlainTcp::new(
            Arc::new(client),
            LazyBuffers::new(1024, 1024),
            Arc::new(Hints::default()),
        );
        (t, server)
    }

    fn timeout(d: Duration) -> NextTimeout {
        NextTimeout {
            after: UreqDuration::Exact(d),
            reason: Timeout::Global,
            ..NextTimeout::default()
        }
    }

    #[test]
    fn a_fresh_connection_skips_the_probe_and_an_idle_one_is_probed() {
        let (mut t, server) = pair();
        let now = Instant::now();
        // Fresh: taken as open even though the server has gone.
        drop(server);
        t.last_io = now + Duration::from_secs(60);
        assert!(t.is_open());
        assert!(t.unprobed);
        // Past FRESH: probed, and found closed.
        t.last_io = now.checked_sub(FRESH).unwrap();
        assert!(!t.is_open());
        assert!(!t.unprobed);
    }

    #[test]
    fn a_request_that_must_not_repeat_is_probed_however_fresh() {
        let (mut t, server) = pair();
        drop(server);
        t.hints.set_probe(true);
        t.last_io = Instant::now() + Duration::from_secs(60);
        assert!(!t.is_open());
    }

    #[test]
    fn an_unprobed_connection_closed_before_answering_is_stale() {
        let (mut t, server) = pair();
        t.last_io = Instant::now() + Duration::from_secs(60);
        assert!(t.is_open());
        drop(server);
        let e = t.await_input(timeout(Duration::from_secs(1))).unwrap_err();
        assert!(is_stale(&e), "{e}");
        // A probed (or new) connection's end of stream is no progress, as in ureq.
        let (mut t, server) = pair();
        drop(server);
        assert!(!t.await_input(timeout(Duration::from_secs(1))).unwrap());
    }

    #[test]
    fn a_silent_server_times_out_at_the_deadline_not_before_nor_much_after() {
        let (mut t, _server) = pair();
        // The socket holds a long timeout from an earlier request...
        t.read = SocketTimeout(Some(Duration::from_secs(5)));
        // ...and this request has 120 ms left: the read must not wait 5 s.
        let t0 = Instant::now();
        let e = t.await_input(timeout(120 * MS)).unwrap_err();
        let took = t0.elapsed();
        assert!(matches!(e, Error::Timeout(Timeout::Global)), "{e}");
        assert!(took >= 120 * MS && took < 400 * MS, "{took:?}");
    }

    #[test]
    fn an_early_socket_timeout_waits_on_until_the_deadline() {
        let (mut t, mut server) = pair();
        // The socket holds 200 ms (kept: at least half of the 390 ms left), the
        // answer comes at 300 ms: the socket's timeout expires first, and the
        // read waits on for the rest of the deadline instead of failing.
        t.read = SocketTimeout(Some(200 * MS));
        let writer = std::thread::spawn(move || {
            std::thread::sleep(300 * MS);
            server.write_all(b"late").unwrap();
            server
        });
        assert!(t.await_input(timeout(390 * MS)).unwrap());
        assert_eq!(t.buffers.input(), b"late");
        drop(writer.join().unwrap());
    }

    #[test]
    fn reads_and_writes_set_the_socket_timeouts_once_over_many_requests() {
        let (mut t, mut server) = pair();
        let mut first = None;
        for i in 0..50u8 {
            t.buffers.output()[0] = i;
            t.transmit_output(1, timeout(Duration::from_secs(10)))
                .unwrap();
            let mut b = [0];
            server.read_exact(&mut b).unwrap();
            server.write_all(&b).unwrap();
            assert!(t.await_input(timeout(Duration::from_secs(10))).unwrap());
            assert_eq!(t.buffers.input(), [i]);
            t.buffers.input_consume(1);
            let now = (
                t.read,
                t.write,
                t.stream.read_timeout().unwrap(),
                t.stream.write_timeout().unwrap(),
            );
            assert_eq!(*first.get_or_insert(now), now, "request {i}");
        }
        let set = t.read.0.unwrap();
        assert!(set > 8_740 * MS && set <= 8_750 * MS, "{set:?}");
    }
}
