//! A connection's TLS session: the handshake ([`Conn::secure`]), its encrypted
//! writes and reads, and the check that records waiting on a pooled connection
//! are only housekeeping.

use super::super::tls as http_tls;
#[cfg(target_os = "linux")]
use super::shared::NonBlocking;
use super::shared::only_housekeeping;
use super::{Conn, Deadline, Failure, broken, expired, set_timeout};
use rustls::ClientConfig;
use rustls::ClientConnection;
use rustls::HandshakeKind;
use rustls::pki_types::ServerName;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

impl Conn {
    /// Makes this new connection a TLS one to `name` and completes the
    /// handshake before `deadline`. Returns whether the server resumed an
    /// earlier session. A failed handshake is a [`Failure::Tls`]; a server
    /// that closes the connection in the middle of it, too (it refused what
    /// the client offered).
    pub(crate) fn secure(
        &mut self,
        config: &Arc<ClientConfig>,
        name: ServerName<'static>,
        deadline: &Deadline,
    ) -> Result<bool, Failure> {
        let mut tls = ClientConnection::new(config.clone(), name)
            .map_err(|e| Failure::Tls(http_tls::explain(&self.authority, &e)))?;
        let mut exact = false;
        while tls.is_handshaking() {
            let left = deadline.left()?;
            set_timeout(&self.stream, &mut self.read, left, exact, |s, t| {
                s.set_read_timeout(t)
            })
            .map_err(Failure::Io)?;
            set_timeout(&self.stream, &mut self.write, left, exact, |s, t| {
                s.set_write_timeout(t)
            })
            .map_err(Failure::Io)?;
            match tls.complete_io(&mut &self.stream) {
                Ok((0, 0)) if tls.is_handshaking() => return Err(self.closed_in_handshake()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if expired(&e) => exact = true,
                Err(e) => return Err(self.handshake_failure(e)),
            }
        }
        let resumed = tls.handshake_kind() == Some(HandshakeKind::Resumed);
        self.tls = Some(Box::new(tls));
        Ok(resumed)
    }

    /// The server closed the connection before the handshake was done.
    fn closed_in_handshake(&self) -> Failure {
        Failure::Tls(http_tls::closed_in_handshake(&self.authority))
    }

    /// What an I/O error during the handshake means.
    fn handshake_failure(&self, e: io::Error) -> Failure {
        Failure::Tls(http_tls::handshake_failure(&self.authority, &e))
    }

    /// [`send`](Self::send) over TLS: the request is encrypted into the
    /// session's buffer, and its records written out before `deadline`.
    pub(super) fn send_tls(&mut self, bytes: &[u8], deadline: &Deadline) -> Result<(), Failure> {
        let Some(tls) = self.tls.as_deref_mut() else {
            unreachable!("send_tls is called on TLS connections");
        };
        let mut exact = false;
        let mut queued = 0;
        loop {
            if queued < bytes.len() {
                queued += tls.writer().write(&bytes[queued..]).map_err(Failure::Io)?;
            }
            if !tls.wants_write() {
                if queued == bytes.len() {
                    break;
                }
                continue;
            }
            let left = deadline.left()?;
            set_timeout(&self.stream, &mut self.write, left, exact, |s, t| {
                s.set_write_timeout(t)
            })
            .map_err(Failure::Io)?;
            match tls.write_tls(&mut &self.stream) {
                Ok(0) => return Err(broken(self.reused, io::ErrorKind::WriteZero.into())),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if expired(&e) => exact = true,
                Err(e) => return Err(broken(self.reused, e)),
            }
        }
        self.last_request = deadline.start;
        Ok(())
    }

    /// [`fill`](Self::fill) over TLS (the buffer has room): the plaintext the
    /// session holds, or the next records from the socket, decrypted. The
    /// server's end of stream, with or without its `close_notify`, is the
    /// close (a body read up to the close ends there, as curl reads it).
    pub(super) fn fill_tls(&mut self, deadline: &Deadline) -> Result<usize, Failure> {
        let Some(tls) = self.tls.as_deref_mut() else {
            unreachable!("fill_tls is called on TLS connections");
        };
        let mut exact = false;
        let mut eof = false;
        loop {
            match tls.reader().read(self.input.room()?) {
                Ok(0) => eof = true,
                Ok(n) => {
                    self.input.filled(n);
                    self.reused = false;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => eof = true,
                Err(e) => return Err(broken(self.reused, e)),
            }
            if eof {
                return closed(self.reused);
            }
            let left = deadline.left()?;
            set_timeout(&self.stream, &mut self.read, left, exact, |s, t| {
                s.set_read_timeout(t)
            })
            .map_err(Failure::Io)?;
            match tls.read_tls(&mut &self.stream) {
                Ok(0) => eof = true,
                Ok(_) => {
                    tls.process_new_packets()
                        .map_err(|e| Failure::Tls(http_tls::explain(&self.authority, &e)))?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if expired(&e) => exact = true,
                Err(e) => return Err(broken(self.reused, e)),
            }
            if eof {
                return closed(self.reused);
            }
        }
    }
}

/// The server's end of stream on a TLS connection: the close (0 bytes read),
/// or [`Failure::Stale`] if the connection came from the pool and nothing has
/// been read since.
fn closed(reused: bool) -> Result<usize, Failure> {
    if reused {
        Err(broken(true, io::ErrorKind::UnexpectedEof.into()))
    } else {
        Ok(0)
    }
}

/// Reads the TLS records waiting on a pooled connection without blocking:
/// whether they were all housekeeping (see `shared::only_housekeeping`). On
/// Linux through `recv(MSG_DONTWAIT)`, as the async client reads them;
/// elsewhere with the socket made non-blocking meanwhile.
pub(super) fn housekeeping_only(tls: &mut ClientConnection, stream: &TcpStream) -> bool {
    #[cfg(target_os = "linux")]
    {
        only_housekeeping(tls, &mut NonBlocking(stream))
    }
    #[cfg(not(target_os = "linux"))]
    {
        if stream.set_nonblocking(true).is_err() {
            return false;
        }
        let ok = only_housekeeping(tls, &mut &*stream);
        stream.set_nonblocking(false).is_ok() && ok
    }
}
