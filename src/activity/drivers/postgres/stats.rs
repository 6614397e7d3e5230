//! Rows per op: what a `postgres` run's ops returned or changed, by activity
//! alias, for the summary and the JSON report.
//!
//! # Ground rules for the counters
//!
//! Every op that ends with a row count (successful, or failed only by its
//! `expect_rows` check) adds to one run's [`Board`] with two `Relaxed`
//! `fetch_add`s; a reader loads them `Relaxed`. The counts publish no other
//! memory: a reader during the run sees each at some recent value (the rows
//! may be an op ahead of the ops); after [`Control::wait`](crate::Control::wait)
//! returns, the worker threads' joins order every write before the read, and
//! the counts are exact. The registry is a mutex taken when a run's workload
//! is made and when a reader asks, never per op.

use crate::sync::threads::{Arc, AtomicU64, Mutex, Ordering, lock};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

/// What a `postgres` run's ops returned or changed, from
/// [`Postgres::stats`](crate::Postgres::stats).
///
/// ```
/// let s = paceline::PgStats { ops: 4, rows: 10 };
/// assert_eq!(s.rows_per_op(), 2.5);
/// assert_eq!(s.to_string(), "10 rows in 4 ops, 2.50 per op");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PgStats {
    /// Ops that ended with a row count: every success, and every op its
    /// `expect_rows` check failed.
    pub ops: u64,
    /// Rows they returned (read to the end), or changed for statements that
    /// return none.
    pub rows: u64,
}

impl PgStats {
    /// Rows per counted op; 0 with none.
    ///
    /// See [`PgStats`] for an example.
    pub fn rows_per_op(&self) -> f64 {
        if self.ops == 0 {
            0.0
        } else {
            self.rows as f64 / self.ops as f64
        }
    }
}

impl fmt::Display for PgStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} rows in {} ops, {:.2} per op",
            self.rows,
            self.ops,
            self.rows_per_op()
        )
    }
}

/// One run's counts.
#[derive(Debug, Default)]
pub(super) struct Board {
    ops: AtomicU64,
    rows: AtomicU64,
}

impl Board {
    /// One op's row count.
    #[inline]
    pub(super) fn add(&self, rows: u64) {
        self.ops.fetch_add(1, Ordering::Relaxed);
        self.rows.fetch_add(rows, Ordering::Relaxed);
    }

    fn read(&self) -> PgStats {
        PgStats {
            ops: self.ops.load(Ordering::Relaxed),
            rows: self.rows.load(Ordering::Relaxed),
        }
    }
}

fn registry() -> &'static Mutex<BTreeMap<String, Arc<Board>>> {
    static REGISTRY: OnceLock<Mutex<BTreeMap<String, Arc<Board>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// A fresh board for `alias`, replacing the last run's of that alias.
pub(super) fn board(alias: &str) -> Arc<Board> {
    let b = Arc::new(Board::default());
    lock(registry()).insert(alias.to_string(), b.clone());
    b
}

/// The counts of the last run of `alias`.
pub(super) fn stats(alias: &str) -> Option<PgStats> {
    lock(registry()).get(alias).map(|b| b.read())
}
