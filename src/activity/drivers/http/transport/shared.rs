//! What the sync connection ([`Conn`](super::Conn)) and the async one
//! (`aio::conn`) share, whatever runs them: the input buffer a response is
//! read and parsed in, the look before a pooled connection is reused, the
//! reading of TLS records nobody asked for, and how a connect budget is spread
//! over the addresses of a name.

use super::Failure;
use super::connect::shown;
use rustls::ClientConnection;
use std::io::{self, BufRead};
use std::net::SocketAddr;
use std::time::Duration;

/// The input buffer a connection starts with; it grows (to twice
/// [`MAX_HEAD`](super::super::wire::MAX_HEAD)) only for a response head that
/// does not fit.
pub(crate) const BUFFER: usize = 16 * 1024;

/// A connection's input buffer: `buf[start..end]` is what was read and not
/// used yet. A response head is parsed where it landed, and a body is counted
/// and dropped, never copied.
#[derive(Debug)]
pub(crate) struct InBuf {
    pub(super) buf: Vec<u8>,
    pub(super) start: usize,
    pub(super) end: usize,
}

impl InBuf {
    pub(crate) fn new() -> Self {
        Self {
            buf: vec![0; BUFFER],
            start: 0,
            end: 0,
        }
    }

    /// What was read and not used yet.
    pub(crate) fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Whether nothing read is left unused.
    pub(crate) fn is_empty(&self) -> bool {
        self.start == self.end
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

    /// The room after the data, made if there is none: the data moved to the
    /// front, or the buffer grown up to twice `MAX_HEAD`; past that, the answer
    /// does not fit ([`Failure::Protocol`]).
    pub(crate) fn room(&mut self) -> Result<&mut [u8], Failure> {
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                let grown = (self.buf.len() * 2).min(2 * super::super::wire::MAX_HEAD);
                if grown <= self.buf.len() {
                    return Err(Failure::Protocol(
                        "the answer does not fit the input buffer".to_string(),
                    ));
                }
                self.buf.resize(grown, 0);
            }
        }
        Ok(&mut self.buf[self.end..])
    }

    /// `n` bytes were read into [`room`](Self::room).
    pub(crate) fn filled(&mut self, n: usize) {
        self.end += n;
    }
}

/// Whether a non-blocking look finds nothing to read (`EAGAIN`): bytes nobody
/// asked for, an end of stream or an error mean a plain connection is done. It
/// only peeks (`MSG_PEEK`): what is waiting stays on the socket, so a TLS
/// connection's records are read whole by [`only_housekeeping`] (issue 21: the
/// sync client's look read one byte, which cut the first record, and a pooled
/// TLS connection holding a session ticket or a key update was dropped as
/// corrupt). One `recv(MSG_DONTWAIT | MSG_PEEK)`, leaving the socket blocking
/// (the sync client's) or its readiness (tokio's) alone.
#[cfg(target_os = "linux")]
pub(crate) fn nothing_waiting(socket: impl std::os::fd::AsFd) -> bool {
    use rustix::net::{RecvFlags, recv};
    let mut buf = [0u8; 1];
    matches!(
        recv(socket, &mut buf[..], RecvFlags::DONTWAIT | RecvFlags::PEEK),
        Err(rustix::io::Errno::AGAIN)
    )
}

/// Whether the session holds no plaintext and no close (rustls says it would
/// block). It looks without taking anything (`fill_buf`).
pub(crate) fn no_plaintext(tls: &mut ClientConnection) -> bool {
    matches!(tls.reader().fill_buf(), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
}

/// Reads the TLS records waiting on a pooled connection through `socket`, a
/// reader that does not block: whether they were all housekeeping (session
/// tickets, key updates), with no data and no close.
pub(crate) fn only_housekeeping(tls: &mut ClientConnection, socket: &mut dyn io::Read) -> bool {
    loop {
        match tls.read_tls(socket) {
            Ok(0) => return false,
            Ok(_) => {
                if tls.process_new_packets().is_err() {
                    return false;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    no_plaintext(tls)
}

/// A socket read with `recv(MSG_DONTWAIT)`: one read that does not block,
/// without changing the socket's mode.
#[cfg(target_os = "linux")]
pub(crate) struct NonBlocking<F: std::os::fd::AsFd>(pub(crate) F);

#[cfg(target_os = "linux")]
impl<F: std::os::fd::AsFd> io::Read for NonBlocking<F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use rustix::net::{RecvFlags, recv};
        recv(&self.0, buf, RecvFlags::DONTWAIT)
            .map(|(n, _)| n)
            .map_err(io::Error::from)
    }
}

/// How long address `i` of `count` may take to accept, with `left` of the
/// connect budget: each but the last half of what is left (at least 10 ms),
/// the last all of it.
pub(crate) fn address_share(i: usize, count: usize, left: Duration) -> Duration {
    const MIN_PER_ADDRESS: Duration = Duration::from_millis(10);
    if i + 1 == count {
        left
    } else {
        (left / 2).max(MIN_PER_ADDRESS).min(left)
    }
}

/// What an address that did not accept says: `error`, or `None` when its
/// share ran out. With one address the authority names it already.
pub(crate) fn address_failed(
    addr: &SocketAddr,
    count: usize,
    share: Duration,
    error: Option<io::Error>,
) -> String {
    match error {
        None => format!("{addr} did not accept within {}", shown(share)),
        Some(e) if count == 1 => e.to_string(),
        Some(e) => format!("{addr}: {e}"),
    }
}
