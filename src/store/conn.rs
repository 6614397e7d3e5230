//! The connections of a store-backed limiter: opening the URL, a small pool used round
//! robin, reconnection with a retry delay, and which failures cost a connection.
//!
//! Ground rules: each connection sits under its own mutex, which orders everything done
//! on it; the round-robin index is a `Relaxed` counter (only its value matters, nothing
//! is published through it), a std atomic even under `--cfg loom` (`sync::threads`): no
//! model covers the store, whose concurrency is the server's.

use super::error::{StoreError, redact};
use crate::sync::ParkingMutex;
use crate::sync::threads::{AtomicU64, Ordering};
use redis::{Client, Connection, RedisError, RedisResult, Script};
use std::time::{Duration, Instant};

/// One connection and its retry state.
struct Slot {
    conn: Option<Connection>,
    /// After a failed connection attempt: no new attempt before this, why, and the
    /// I/O error's kind.
    down_until: Option<(Instant, String, Option<std::io::ErrorKind>)>,
}

/// The connections to one server.
pub(crate) struct Pool {
    client: Client,
    /// The URL for messages, password hidden.
    url: String,
    slots: Box<[ParkingMutex<Slot>]>,
    /// Round-robin counter over `slots` (Relaxed: only its value matters).
    next: AtomicU64,
    timeout: Duration,
    retry_after: Duration,
}

impl Pool {
    /// Checks `url` (no connection yet): `redis://`, `valkey://` or a Unix socket URL
    /// that the client parses; TLS is not built in.
    pub(crate) fn open(
        url: &str,
        connections: usize,
        timeout: Duration,
        retry_after: Duration,
    ) -> Result<Self, StoreError> {
        let shown = redact(url);
        let bad_url = |reason: &str| StoreError::BadUrl {
            url: shown.clone(),
            reason: reason.to_string(),
        };
        if url.starts_with("rediss://") || url.starts_with("valkeys://") {
            return Err(bad_url(
                "TLS (rediss://) is not built into paceline's redis client; use redis:// on a \
                 trusted network or a TLS tunnel",
            ));
        }
        if !["redis://", "valkey://", "unix://", "redis+unix://"]
            .iter()
            .any(|s| url.starts_with(s))
        {
            return Err(bad_url(
                "it must start with redis:// (or unix:// for a local socket)",
            ));
        }
        let client = Client::open(url).map_err(|e| bad_url(&e.to_string()))?;
        Ok(Self {
            client,
            url: shown,
            slots: (0..connections.max(1))
                .map(|_| {
                    ParkingMutex::new(Slot {
                        conn: None,
                        down_until: None,
                    })
                })
                .collect(),
            next: AtomicU64::new(0),
            timeout,
            retry_after,
        })
    }

    /// The URL, password hidden.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// A connection of its own, outside the pool (a pub/sub subscriber), with
    /// `read_timeout` on its reads.
    pub(crate) fn dedicated(&self, read_timeout: Duration) -> Result<Connection, StoreError> {
        let c = self
            .client
            .get_connection_with_timeout(self.timeout)
            .map_err(|e| StoreError::Unreachable {
                url: self.url.clone(),
                reason: e.to_string(),
                io: io_kind(&e),
            })?;
        c.set_read_timeout(Some(read_timeout))
            .and_then(|()| c.set_write_timeout(Some(self.timeout)))
            .map_err(|e| self.classify(e))?;
        Ok(c)
    }

    /// Connects the first connection now and loads `script` on the server, so that a
    /// server that is not there is an error at once.
    pub(crate) fn warm(&self, script: &Script) -> Result<(), StoreError> {
        let mut guard = self.slots[0].lock();
        let slot = &mut *guard;
        let mut conn = self.make(&mut slot.down_until)?;
        script.load(&mut conn).map_err(|e| self.classify(e))?;
        slot.conn = Some(conn);
        Ok(())
    }

    /// A new connection, unless a failed attempt is still in its retry delay (`down`).
    fn make(
        &self,
        down: &mut Option<(Instant, String, Option<std::io::ErrorKind>)>,
    ) -> Result<Connection, StoreError> {
        if let Some((until, reason, io)) = down {
            if Instant::now() < *until {
                return Err(StoreError::Unreachable {
                    url: self.url.clone(),
                    reason: format!("{reason} (retrying after {:?})", self.retry_after),
                    io: *io,
                });
            }
        }
        let made = self
            .client
            .get_connection_with_timeout(self.timeout)
            .and_then(|c| {
                c.set_read_timeout(Some(self.timeout))?;
                c.set_write_timeout(Some(self.timeout))?;
                Ok(c)
            });
        match made {
            Ok(c) => {
                *down = None;
                Ok(c)
            }
            Err(e) => {
                *down = Some((
                    Instant::now() + self.retry_after,
                    e.to_string(),
                    io_kind(&e),
                ));
                Err(StoreError::Unreachable {
                    url: self.url.clone(),
                    reason: e.to_string(),
                    io: io_kind(&e),
                })
            }
        }
    }

    /// Runs `f` on a connection. A kept connection that fails below the server (it
    /// restarted, or the network dropped the connection while idle) is dropped and `f`
    /// runs once more on a fresh one; any failure below the server drops the connection,
    /// so a late reply never answers the next call.
    pub(crate) fn with_conn<T>(
        &self,
        mut f: impl FnMut(&mut Connection) -> RedisResult<T>,
    ) -> Result<T, StoreError> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) as usize % self.slots.len();
        let mut guard = self.slots[i].lock();
        let slot = &mut *guard;
        let kept = slot.conn.is_some();
        let conn = match slot.conn.take() {
            Some(c) => c,
            None => self.make(&mut slot.down_until)?,
        };
        let err = match f(slot.conn.insert(conn)) {
            Ok(v) => return Ok(v),
            Err(e) if !below_server(&e) => return Err(self.server_error(e)),
            Err(e) => e,
        };
        slot.conn = None;
        if !kept {
            return Err(self.lost(err));
        }
        let conn = self.make(&mut slot.down_until)?;
        match f(slot.conn.insert(conn)) {
            Ok(v) => Ok(v),
            Err(e) if below_server(&e) => {
                slot.conn = None;
                Err(self.lost(e))
            }
            Err(e) => Err(self.server_error(e)),
        }
    }

    /// The error for `e`: below the server, or from it.
    fn classify(&self, e: RedisError) -> StoreError {
        if below_server(&e) {
            self.lost(e)
        } else {
            self.server_error(e)
        }
    }

    fn lost(&self, source: RedisError) -> StoreError {
        StoreError::Lost {
            url: self.url.clone(),
            source,
        }
    }

    fn server_error(&self, source: RedisError) -> StoreError {
        StoreError::Server {
            url: self.url.clone(),
            source,
        }
    }
}

/// The kind of the I/O error under a failed connection attempt, as far as the
/// client tells it: refused (nothing listens; for a Unix socket, no socket
/// file) or timed out; `None` for anything else.
pub(crate) fn io_kind(e: &RedisError) -> Option<std::io::ErrorKind> {
    if e.is_connection_refusal() {
        Some(std::io::ErrorKind::ConnectionRefused)
    } else if e.is_timeout() {
        Some(std::io::ErrorKind::TimedOut)
    } else {
        None
    }
}

/// Whether `e` came from below the server (I/O, a dropped connection, a timeout) rather
/// than from a reply: then the connection's state is unknown and it must go.
fn below_server(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || e.is_unrecoverable_error()
}
