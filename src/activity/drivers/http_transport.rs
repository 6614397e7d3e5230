//! The `http` driver's connections: plain TCP, with no more system calls per
//! kept-alive request than the two that do the work (one `sendto`, one
//! `recvfrom`).
//!
//! A general-purpose client spends more around those two, and a load generator
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
//! - **Probing.** A connection whose last read or write began less than
//!   [`FRESH`] ago is taken as open without a probe ([`Conn::reusable`]): the
//!   server would have had to close it within that window, without saying
//!   `connection: close`. If it did, the request meets the closed connection
//!   before any byte of an answer, and the connection says so with
//!   [`Failure::Stale`]; the driver then sends an idempotent request once more on
//!   a new connection (as RFC 9110 §9.2.2 allows, and as browsers do), and counts
//!   anything else as an `io` error. A request that is not idempotent always gets
//!   the probe. Older connections are always probed.
//! - **Timeouts.** The socket's timeout is changed only when it would let a read
//!   or write block past the request's deadline, or is less than half of what is
//!   left ([`arm`]). Then it is set to seven eighths of what is left, so that the
//!   next request, whose deadline is a little later, finds it still short
//!   enough. A socket timeout that expires before the deadline is not a timeout:
//!   the call sets the exact time left and waits again. So a call never blocks
//!   past the deadline (to the kernel's timer granularity) and never fails
//!   before it.
//!
//! The connection's input buffer holds what the server sent and the caller has
//! not used yet ([`Conn::data`], [`Conn::consume`], [`Conn::fill`]): a response
//! head is parsed where it landed, and a body is counted and dropped, never
//! copied.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A connection whose last I/O began less than this long ago is reused
/// without a probe.
pub(crate) const FRESH: Duration = Duration::from_millis(2);

/// The input buffer a connection starts with; it grows (to twice
/// [`MAX_HEAD`](super::http_wire::MAX_HEAD)) only for a response head that does
/// not fit.
const BUFFER: usize = 16 * 1024;

/// Why an exchange failed. [`Failure::kind`] names the error counter.
#[derive(Debug)]
pub(crate) enum Failure {
    /// No connection: the host did not resolve, refused, was unreachable, or
    /// did not accept within `connect_timeout`. Check the URL and that the
    /// server is up.
    Connect(String),
    /// The request's `timeout` passed before the answer was complete.
    Timeout,
    /// A connection reused without a probe turned out closed before any byte
    /// of the answer: the server never answered this request on it.
    Stale(io::Error),
    /// The connection broke mid-exchange.
    Io(io::Error),
    /// The answer is not HTTP/1.x as the driver reads it, or a redirect
    /// leads where the driver cannot follow.
    Protocol(String),
}

impl Failure {
    /// The kind an op's error is counted under.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Failure::Connect(_) => "connect",
            Failure::Timeout => "timeout",
            Failure::Stale(_) | Failure::Io(_) => "io",
            Failure::Protocol(_) => "protocol",
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Connect(m) | Failure::Protocol(m) => f.write_str(m),
            Failure::Timeout => f.write_str("no complete answer within the timeout"),
            Failure::Stale(e) => write!(
                f,
                "the server closed the kept-alive connection before answering ({e})"
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

/// A plain TCP connection with its input buffer (see the module docs).
#[derive(Debug)]
pub(crate) struct Conn {
    stream: TcpStream,
    /// The `host:port` it was opened to, as the URL wrote it.
    authority: String,
    buf: Vec<u8>,
    /// `buf[start..end]` is what was read and not used yet.
    start: usize,
    end: usize,
    /// The socket's read and write timeouts as set.
    read: Option<Duration>,
    write: Option<Duration>,
    /// When the last read or write that moved bytes began.
    last_io: Instant,
    /// Reused without a probe, and nothing read since.
    unprobed: bool,
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
            authority: authority.to_string(),
            buf: vec![0; BUFFER],
            start: 0,
            end: 0,
            read: None,
            write: None,
            last_io: Instant::now(),
            unprobed: false,
        }
    }

    /// The `host:port` this connection goes to.
    pub(crate) fn authority(&self) -> &str {
        &self.authority
    }

    /// Whether a pooled connection may carry the next request: a fresh one is
    /// taken as open unless `probe` (the request must not be sent twice); any
    /// other is probed.
    pub(crate) fn reusable(&mut self, probe: bool, now: Instant) -> bool {
        if self.start != self.end {
            return false;
        }
        if !probe && now.saturating_duration_since(self.last_io) < FRESH {
            self.unprobed = true;
            return true;
        }
        self.unprobed = false;
        probe_open(&self.stream).unwrap_or(false)
    }

    /// What was read and not used yet.
    pub(crate) fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Marks the first `n` bytes of [`data`](Self::data) used.
    pub(crate) fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.start);
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// A reused connection failing before any byte of the answer: stale.
    fn broken(&self, e: io::Error) -> Failure {
        use io::ErrorKind as K;
        let gone = matches!(
            e.kind(),
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof
        );
        if self.unprobed && gone {
            Failure::Stale(e)
        } else {
            Failure::Io(e)
        }
    }

    /// Writes all of `bytes` before `deadline`.
    pub(crate) fn send(&mut self, bytes: &[u8], deadline: &Deadline) -> Result<(), Failure> {
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
        // When the request began: a little early (the wait for the answer
        // counts as idle too), so a connection never looks fresher than it is.
        self.last_io = deadline.start;
        Ok(())
    }

    /// Reads what the server sends next onto the end of [`data`](Self::data),
    /// waiting until `deadline`: the bytes read, 0 when the server has closed
    /// the connection.
    pub(crate) fn fill(&mut self, deadline: &Deadline) -> Result<usize, Failure> {
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                let grown = (self.buf.len() * 2).min(2 * super::http_wire::MAX_HEAD);
                if grown <= self.buf.len() {
                    return Err(Failure::Protocol(
                        "the answer does not fit the input buffer".to_string(),
                    ));
                }
                self.buf.resize(grown, 0);
            }
        }
        let mut exact = false;
        loop {
            let left = deadline.left()?;
            set_timeout(&self.stream, &mut self.read, left, exact, |s, t| {
                s.set_read_timeout(t)
            })
            .map_err(Failure::Io)?;
            match (&self.stream).read(&mut self.buf[self.end..]) {
                Ok(0) if self.unprobed => {
                    return Err(self.broken(io::ErrorKind::UnexpectedEof.into()));
                }
                Ok(n) => {
                    self.end += n;
                    if n > 0 {
                        self.unprobed = false;
                        self.last_io = deadline.start;
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

/// Tries each address in turn (see [`Conn::connect`]): each but the last gets
/// half of the budget still left (at least 10 ms), the last all of it; none
/// past the request's deadline.
fn connect_any(
    addrs: &[SocketAddr],
    authority: &str,
    budget: Duration,
    started: Instant,
    deadline: &Deadline,
) -> Result<TcpStream, Failure> {
    const MIN_PER_ADDRESS: Duration = Duration::from_millis(10);
    let mut last = None;
    for (i, addr) in addrs.iter().enumerate() {
        let left = budget.saturating_sub(started.elapsed());
        let share = if i + 1 == addrs.len() {
            left
        } else {
            (left / 2).max(MIN_PER_ADDRESS)
        }
        .min(left)
        .min(deadline.left().unwrap_or_default());
        if share.is_zero() {
            break;
        }
        match TcpStream::connect_timeout(addr, share) {
            Ok(s) => return Ok(s),
            Err(e) if expired(&e) => last = Some(format!("{addr} did not accept within {share:?}")),
            Err(e) => last = Some(format!("{addr}: {e}")),
        }
    }
    Err(Failure::Connect(match last {
        None if addrs.is_empty() => format!("`{authority}` resolves to no address"),
        Some(m) if started.elapsed() < budget => format!("cannot connect to `{authority}`: {m}"),
        _ => format!(
            "`{authority}` did not accept a connection within {budget:?} ({})",
            last.as_deref().unwrap_or("no time left")
        ),
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

/// A non-blocking read must find nothing to read (`EAGAIN`); bytes nobody asked
/// for, an end of stream or an error mean the connection is done.
fn probe_open(mut stream: &TcpStream) -> io::Result<bool> {
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
        assert_eq!(arm(None, 10_000 * MS), Some(8_750 * MS));
        // The next requests, deadlines a little later or earlier: kept.
        assert_eq!(arm(Some(8_750 * MS), 9_999 * MS), None);
        assert_eq!(arm(Some(8_750 * MS), 10_000 * MS), None);
        // A request past an eighth of its budget: lowered, never above the time left.
        assert_eq!(arm(Some(8_750 * MS), 8_000 * MS), Some(7_000 * MS));
        // Far shorter than what is left (after a slow request): raised again.
        assert_eq!(arm(Some(7 * MS), 10_000 * MS), Some(8_750 * MS));
        // Tiny budgets stay within the budget.
        let tiny = Duration::from_nanos(5);
        assert_eq!(arm(None, tiny), Some(tiny));
        for left in [1, 7, 8, 999, 1_000, 123_456_789] {
            let left = Duration::from_nanos(left);
            let set = arm(None, left).unwrap();
            assert!(set <= left && !set.is_zero(), "{left:?} -> {set:?}");
        }
    }

    fn pair() -> (Conn, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let deadline = Deadline::new(Instant::now(), Duration::from_secs(5));
        let c = Conn::connect(&[addr], "test", Duration::from_secs(5), &deadline).unwrap();
        let (server, _) = listener.accept().unwrap();
        (c, server)
    }

    fn deadline(d: Duration) -> Deadline {
        Deadline::new(Instant::now(), d)
    }

    #[test]
    fn a_fresh_connection_skips_the_probe_and_an_idle_one_is_probed() {
        let (mut c, server) = pair();
        let now = Instant::now();
        // Fresh: taken as open even though the server has gone.
        drop(server);
        c.last_io = now + Duration::from_secs(60);
        assert!(c.reusable(false, Instant::now()));
        assert!(c.unprobed);
        // Past FRESH: probed, and found closed.
        c.last_io = now.checked_sub(FRESH).unwrap();
        assert!(!c.reusable(false, Instant::now()));
        assert!(!c.unprobed);
    }

    #[test]
    fn a_request_that_must_not_repeat_is_probed_however_fresh() {
        let (mut c, server) = pair();
        drop(server);
        c.last_io = Instant::now() + Duration::from_secs(60);
        assert!(!c.reusable(true, Instant::now()));
    }

    #[test]
    fn a_connection_with_unread_bytes_is_not_reused() {
        let (mut c, mut server) = pair();
        server.write_all(b"extra").unwrap();
        assert_eq!(c.fill(&deadline(Duration::from_secs(1))).unwrap(), 5);
        assert!(!c.reusable(false, Instant::now()));
        c.consume(5);
        c.last_io = Instant::now() + Duration::from_secs(60);
        assert!(c.reusable(false, Instant::now()));
    }

    #[test]
    fn an_unprobed_connection_closed_before_answering_is_stale() {
        let (mut c, server) = pair();
        c.last_io = Instant::now() + Duration::from_secs(60);
        assert!(c.reusable(false, Instant::now()));
        drop(server);
        let e = c.fill(&deadline(Duration::from_secs(1))).unwrap_err();
        assert!(matches!(e, Failure::Stale(_)), "{e}");
        assert_eq!(e.kind(), "io");
        // A probed (or new) connection's end of stream is a plain 0.
        let (mut c, server) = pair();
        drop(server);
        assert_eq!(c.fill(&deadline(Duration::from_secs(1))).unwrap(), 0);
    }

    #[test]
    fn a_silent_server_times_out_at_the_deadline_not_before_nor_much_after() {
        let (mut c, _server) = pair();
        // The socket holds a long timeout from an earlier request...
        c.read = Some(Duration::from_secs(5));
        c.stream.set_read_timeout(c.read).unwrap();
        // ...and this request has 120 ms left: the read must not wait 5 s.
        let t0 = Instant::now();
        let e = c.fill(&deadline(120 * MS)).unwrap_err();
        let took = t0.elapsed();
        assert!(matches!(e, Failure::Timeout), "{e}");
        assert!(took >= 120 * MS && took < 400 * MS, "{took:?}");
    }

    #[test]
    fn an_early_socket_timeout_waits_on_until_the_deadline() {
        let (mut c, mut server) = pair();
        // The socket holds 200 ms (kept: at least half of the 390 ms left), the
        // answer comes at 300 ms: the socket's timeout expires first, and the
        // read waits on for the rest of the deadline instead of failing.
        c.read = Some(200 * MS);
        c.stream.set_read_timeout(c.read).unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(300 * MS);
            server.write_all(b"late").unwrap();
            server
        });
        assert_eq!(c.fill(&deadline(390 * MS)).unwrap(), 4);
        assert_eq!(c.data(), b"late");
        drop(writer.join().unwrap());
    }

    #[test]
    fn reads_and_writes_set_the_socket_timeouts_once_over_many_requests() {
        let (mut c, mut server) = pair();
        let mut first = None;
        for i in 0..50u8 {
            c.send(&[i], &deadline(Duration::from_secs(10))).unwrap();
            let mut b = [0];
            server.read_exact(&mut b).unwrap();
            server.write_all(&b).unwrap();
            assert_eq!(c.fill(&deadline(Duration::from_secs(10))).unwrap(), 1);
            assert_eq!(c.data(), [i]);
            c.consume(1);
            let now = (
                c.read,
                c.write,
                c.stream.read_timeout().unwrap(),
                c.stream.write_timeout().unwrap(),
            );
            assert_eq!(*first.get_or_insert(now), now, "request {i}");
        }
        let set = c.read.unwrap();
        assert!(set > 8_740 * MS && set <= 8_750 * MS, "{set:?}");
    }

    #[test]
    fn a_head_larger_than_the_buffer_grows_it_and_unused_bytes_move_to_the_front() {
        let (mut c, mut server) = pair();
        let d = deadline(Duration::from_secs(5));
        let big = vec![b'a'; BUFFER + 10];
        server.write_all(&big).unwrap();
        let mut got = 0;
        while got < big.len() {
            got += c.fill(&d).unwrap();
        }
        assert_eq!(c.data().len(), big.len());
        assert!(c.buf.len() >= 2 * BUFFER);
        // Used bytes at the front make room without growing.
        c.consume(big.len() - 3);
        let len = c.buf.len();
        c.end = len;
        c.start = len - 3;
        server.write_all(b"xyz").unwrap();
        c.fill(&d).unwrap();
        assert_eq!(c.buf.len(), len);
        assert_eq!(&c.data()[3..], b"xyz");
    }

    #[test]
    fn a_refused_first_address_leaves_the_budget_to_the_next() {
        let refused = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addrs = [refused, listener.local_addr().unwrap()];
        let d = deadline(Duration::from_secs(5));
        assert!(Conn::connect(&addrs, "two", Duration::from_secs(5), &d).is_ok());
        // A deadline far in the future does not overflow the clock.
        let _ = Deadline::new(Instant::now(), Duration::MAX).left().unwrap();
    }

    #[test]
    fn a_refused_address_is_a_connect_failure_naming_it() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let e = Conn::connect(
            &[addr],
            "here",
            Duration::from_secs(1),
            &deadline(Duration::from_secs(1)),
        )
        .unwrap_err();
        assert_eq!(e.kind(), "connect");
        assert!(e.to_string().contains("cannot connect to `here`"), "{e}");
        let e = Conn::connect(
            &[],
            "none",
            Duration::from_secs(1),
            &deadline(Duration::from_secs(1)),
        )
        .unwrap_err();
        assert!(e.to_string().contains("resolves to no address"), "{e}");
    }
}
