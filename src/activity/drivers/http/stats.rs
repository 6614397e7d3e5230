//! What an `http` run's workers did: each worker's [`Counters`], the [`Board`]
//! of one run, the registry [`Http::stats`](super::Http::stats) reads, and the
//! [`StatusSet`] the counted statuses are matched against.
//!
//! # Ground rules for the counters
//!
//! Each worker's runner owns one [`Counters`]: it is the only writer of those
//! atomics, and every write is a `Relaxed` `fetch_add` (a single writer could
//! use load + store; `fetch_add` keeps it obviously correct). Readers
//! ([`Http::stats`](super::Http::stats)) load them `Relaxed` and sum across runners. The counts
//! publish no other memory, so no edge is needed: a reader during the run sees
//! each counter at some recent value (one counter may be a request ahead of
//! another); after [`Control::wait`](crate::Control::wait) returns, the joins of
//! the worker threads order every write before the read, and the counts are
//! exact. The registry of runners is a mutex taken when a runner starts and when
//! a reader sums, never per request. The primitives are `crate::sync::threads`'
//! (std's even under loom): nothing here is part of a loom model.

use crate::sync::threads::{Arc, AtomicU64, Mutex, Ordering, lock};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Status codes are counted exactly from 0 to this (exclusive): every code the
/// wire accepts (100 to 999) is counted under its own number.
const COUNTED_SLOTS: usize = 1000;

/// Status sets (`expect`) name codes below this.
const STATUS_SLOTS: usize = 600;

/// What an `http` run's workers did, from [`Http::stats`](crate::Http::stats).
///
/// ```
/// let s = paceline::HttpStats::default();
/// assert_eq!((s.requests, s.connections, s.requests_per_connection()), (0, 0, 0.0));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpStats {
    /// Workers that ran (one connection pool each).
    pub workers: usize,
    /// Requests made, one per op (or attempted: a request that could not
    /// connect counts; one sent once more because its kept-alive connection
    /// turned out closed, or that followed redirects, counts once).
    pub requests: u64,
    /// Requests answered with a status line (any status).
    pub responses: u64,
    /// New connections opened; with keep-alive, far fewer than `requests`.
    pub connections: u64,
    /// Response body bytes read.
    pub bytes_received: u64,
    /// Responses by status code (codes outside 0..600 are counted under 0).
    pub statuses: BTreeMap<u16, u64>,
    /// New `https://` connections whose TLS handshake resumed an earlier
    /// session (no certificate sent again); at most `connections`.
    pub tls_resumed: u64,
    /// Time spent opening the `connections` (TCP connect and TLS handshake),
    /// in nanoseconds, summed. This time is not in any op's service time when
    /// the connection was opened before the worker's first op (see
    /// `connections_before_start`); a connection an op had to open itself
    /// (none idle, or the server closed it) is in that op's.
    pub connect_nanos: u64,
    /// Of `connections`, those the workers opened before their first op
    /// (to `base_url`, or the hosts of the ops' first requests).
    pub connections_before_start: u64,
}

/// One line for a summary: requests, connections, bytes, statuses, each as
/// counted (nothing claimed that the counts do not show), then the mean time
/// to open a connection (TCP connect and TLS handshake) and how many were
/// opened before the first op, out of every op's service time.
///
/// ```
/// let mut s = paceline::HttpStats::default();
/// s.requests = 6;
/// s.connections = 2;
/// s.statuses.insert(200, 6);
/// assert_eq!(
///     s.to_string(),
///     "6 requests over 2 connections (3.0 per connection), 0 bytes received; statuses 200: 6"
/// );
/// s.connect_nanos = 600_000;
/// s.connections_before_start = 1;
/// assert!(s.to_string().ends_with(
///     "statuses 200: 6; connect 0.30ms mean, 1 of 2 opened before the first op"));
/// ```
impl std::fmt::Display for HttpStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |n: u64| if n == 1 { "" } else { "s" };
        write!(
            f,
            "{} request{} over {} connection{} ({:.1} per connection), {} byte{} received; ",
            self.requests,
            s(self.requests),
            self.connections,
            s(self.connections),
            self.requests_per_connection(),
            self.bytes_received,
            s(self.bytes_received)
        )?;
        if self.statuses.is_empty() {
            f.write_str("no complete answers")?;
        } else {
            f.write_str("statuses ")?;
            for (i, (code, n)) in self.statuses.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{code}: {n}")?;
            }
        }
        if let Some(mean) = self.connect_mean().filter(|_| self.connect_nanos > 0) {
            write!(
                f,
                "; connect {:.2}ms mean, {} of {} opened before the first op",
                mean.as_secs_f64() * 1e3,
                self.connections_before_start,
                self.connections
            )?;
        }
        Ok(())
    }
}

impl HttpStats {
    /// Requests per new connection: 1.0 without reuse, the request count when
    /// one connection carried them all; 0.0 before any connection.
    ///
    /// ```
    /// let mut s = paceline::HttpStats::default();
    /// s.requests = 1000;
    /// s.connections = 4;
    /// assert_eq!(s.requests_per_connection(), 250.0);
    /// ```
    pub fn requests_per_connection(&self) -> f64 {
        if self.connections == 0 {
            0.0
        } else {
            self.requests as f64 / self.connections as f64
        }
    }

    /// The mean time to open a connection (TCP connect and TLS handshake),
    /// `None` before any connection.
    ///
    /// ```
    /// let mut s = paceline::HttpStats::default();
    /// s.connections = 4;
    /// s.connect_nanos = 2_000_000;
    /// assert_eq!(s.connect_mean(), Some(std::time::Duration::from_micros(500)));
    /// ```
    pub fn connect_mean(&self) -> Option<std::time::Duration> {
        (self.connections > 0)
            .then(|| std::time::Duration::from_nanos(self.connect_nanos / self.connections))
    }

    /// Responses with status `code`.
    ///
    /// ```
    /// let mut s = paceline::HttpStats::default();
    /// s.statuses.insert(200, 9);
    /// assert_eq!((s.status(200), s.status(404)), (9, 0));
    /// ```
    pub fn status(&self, code: u16) -> u64 {
        self.statuses.get(&code).copied().unwrap_or(0)
    }
}

/// One worker's counters (single writer: see the module's ground rules).
#[derive(Debug)]
pub(super) struct Counters {
    pub(super) requests: AtomicU64,
    pub(super) responses: AtomicU64,
    pub(super) connections: AtomicU64,
    pub(super) resumed: AtomicU64,
    /// Time spent opening connections (TLS handshakes included), in ns.
    pub(super) connect_nanos: AtomicU64,
    /// Connections opened before the worker's first op.
    pub(super) preconnected: AtomicU64,
    pub(super) bytes: AtomicU64,
    pub(super) statuses: Box<[AtomicU64]>,
}

impl Counters {
    pub(super) fn new() -> Self {
        Self {
            requests: AtomicU64::new(0),
            responses: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            resumed: AtomicU64::new(0),
            connect_nanos: AtomicU64::new(0),
            preconnected: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            statuses: (0..COUNTED_SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    #[inline]
    pub(super) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts an answer with `status` (codes past the slots under 0).
    pub(super) fn answered(&self, status: u16) {
        Self::add(&self.responses, 1);
        let slot = usize::from(status);
        Self::add(
            &self.statuses[if slot < COUNTED_SLOTS { slot } else { 0 }],
            1,
        );
    }
}

/// The counters of one run's workers.
#[derive(Debug, Default)]
pub(super) struct Board {
    pub(super) runners: Mutex<Vec<Arc<Counters>>>,
}

impl Board {
    pub(super) fn sum(&self) -> HttpStats {
        let runners = lock(&self.runners);
        let mut s = HttpStats {
            workers: runners.len(),
            ..HttpStats::default()
        };
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        for r in runners.iter() {
            s.requests += load(&r.requests);
            s.responses += load(&r.responses);
            s.connections += load(&r.connections);
            s.tls_resumed += load(&r.resumed);
            s.connect_nanos += load(&r.connect_nanos);
            s.connections_before_start += load(&r.preconnected);
            s.bytes_received += load(&r.bytes);
            for (code, c) in r.statuses.iter().enumerate() {
                let n = load(c);
                if n > 0 {
                    *s.statuses.entry(code as u16).or_insert(0) += n;
                }
            }
        }
        s
    }
}

/// The boards by alias: the latest run of each alias that started a worker.
pub(super) fn registry() -> &'static Mutex<BTreeMap<String, Arc<Board>>> {
    static REGISTRY: OnceLock<Mutex<BTreeMap<String, Arc<Board>>>> = OnceLock::new();
    REGISTRY.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// A set of status codes, one bit each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::activity::drivers) struct StatusSet([u64; STATUS_SLOTS.div_ceil(64)]);

impl StatusSet {
    /// Parses `2xx,304,500-503`.
    pub(in crate::activity::drivers) fn parse(text: &str) -> Result<Self, String> {
        let how =
            "write classes, codes or ranges separated by commas, such as `2xx,304` or `200-299`";
        let mut set = StatusSet([0; STATUS_SLOTS.div_ceil(64)]);
        if text.trim().is_empty() {
            return Err(format!("is empty; {how}"));
        }
        for part in text.split(',').map(str::trim) {
            let code = |s: &str| -> Result<u16, String> {
                s.trim()
                    .parse::<u16>()
                    .ok()
                    .filter(|c| (100..STATUS_SLOTS as u16).contains(c))
                    .ok_or_else(|| format!("`{part}` is not a status code from 100 to 599; {how}"))
            };
            let (lo, hi) = if let Some(class) = part.strip_suffix("xx").or(part.strip_suffix("XX"))
            {
                let d = class
                    .parse::<u16>()
                    .ok()
                    .filter(|d| (1..=5).contains(d))
                    .ok_or_else(|| format!("`{part}` is not a status class 1xx to 5xx; {how}"))?;
                (d * 100, d * 100 + 99)
            } else if let Some((a, b)) = part.split_once('-') {
                let (a, b) = (code(a)?, code(b)?);
                if a > b {
                    return Err(format!("`{part}` is a range backwards; write `{b}-{a}`"));
                }
                (a, b)
            } else {
                let c = code(part)?;
                (c, c)
            };
            for c in lo..=hi {
                set.0[usize::from(c) / 64] |= 1 << (c % 64);
            }
        }
        Ok(set)
    }

    #[inline]
    pub(in crate::activity::drivers) fn contains(&self, code: u16) -> bool {
        usize::from(code) < STATUS_SLOTS && self.0[usize::from(code) / 64] & (1 << (code % 64)) != 0
    }
}

#[cfg(all(test, not(loom)))]
mod item13 {
    use super::*;

    /// Issue 25, item 13: a `999` answer is counted as 999 in the summary's
    /// statuses, not as 0.
    #[test]
    fn item13_a_999_status_is_counted_as_999() {
        let c = Arc::new(Counters::new());
        c.answered(999);
        c.answered(200);
        let board = Board::default();
        lock(&board.runners).push(c);
        let s = board.sum();
        assert_eq!(s.statuses.get(&999), Some(&1));
        assert_eq!(s.statuses.get(&0), None);
        assert!(s.to_string().ends_with("statuses 200: 1, 999: 1"), "{s}");
    }
}
