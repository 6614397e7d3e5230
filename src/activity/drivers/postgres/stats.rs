//! Rows per op: what a `postgres` run's ops returned or changed, by activity
//! alias, for the summary and the JSON report; and the `expect_rows` check,
//! which reads the same count.
//!
//! # What counts
//!
//! An op counts once, at its last try, and only when that try was answered
//! with a row count: a success, or an answer its `expect_rows` check refused.
//! An op whose last try failed otherwise (`sql NN`, `io`, `timeout`, `bind`,
//! `connect`) returned no rows to count and is left out of the answered ops,
//! so rows per op is per *answered* op; the run's own op count says how many
//! ran. A try that fails and is tried again ([`ErrorPolicy::retries_again`](crate::ErrorPolicy::retries_again),
//! decided here by the engine's own rule, on the error as the engine gets it)
//! leaves a note on its worker ([`Retrying`]); the next try of that cycle takes
//! the note and undoes what the earlier try counted.
//!
//! # Ground rules for the counters
//!
//! Every try answered with a row count adds to one run's [`Board`] with two
//! `Relaxed` `fetch_add`s, and a try that is tried again is taken back with two
//! `fetch_sub`s by the same worker after its next try's adds (so neither
//! counter ever goes below what its ops counted); a reader loads them
//! `Relaxed`. The counts publish no other memory: a reader during the run sees
//! each at some recent value (the rows may be an op ahead of the ops); after
//! [`Control::wait`](crate::Control::wait) returns, the worker threads' joins
//! order every write before the read, and the counts are exact. The registry
//! is a mutex taken when a run's workload is made and when a reader asks,
//! never per op.

use super::Shared;
use crate::engine::OpError;
use crate::sync::threads::{Arc, AtomicU64, Mutex, Ordering, lock};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

/// What a `postgres` run's ops returned or changed, from
/// [`Postgres::stats`](crate::Postgres::stats): each op counted once, at its
/// last try, when that try was answered.
///
/// ```
/// let s = paceline::PgStats { answered_ops: 4, rows: 10 };
/// assert_eq!(s.rows_per_op(), Some(2.5));
/// assert_eq!(s.to_string(), "10 rows in 4 answered ops, 2.50 per op");
/// // With none answered there is no figure per op, not a zero.
/// assert_eq!(paceline::PgStats::default().rows_per_op(), None);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PgStats {
    /// Ops whose last try was answered with a row count: every success, and
    /// every op its `expect_rows` check failed. An op failed otherwise (by the
    /// server, `io`, `timeout`, `bind`, ...) is not here; a retried op is here
    /// once.
    pub answered_ops: u64,
    /// Rows the answered ops returned (read to the end), or changed for
    /// statements that return none, each op's from its last try.
    pub rows: u64,
}

impl PgStats {
    /// Rows per answered op; `None` with no op answered (not 0: nothing was
    /// counted).
    ///
    /// See [`PgStats`] for an example.
    pub fn rows_per_op(&self) -> Option<f64> {
        (self.answered_ops > 0).then(|| self.rows as f64 / self.answered_ops as f64)
    }

    /// The summary's line for a run that counted `ops` ops in all: "in N ops"
    /// when every op was answered, else how many of them were, and none per op
    /// when none was.
    ///
    /// ```
    /// let all = paceline::PgStats { answered_ops: 20, rows: 10 };
    /// assert_eq!(all.line(20), "10 rows in 20 ops, 0.50 per op");
    /// let some = paceline::PgStats { answered_ops: 20, rows: 10 };
    /// assert_eq!(some.line(1000), "10 rows in 20 answered ops of 1000, 0.50 per answered op");
    /// let none = paceline::PgStats::default();
    /// assert_eq!(none.line(1000), "0 rows: none of 1000 ops answered");
    /// ```
    pub fn line(&self, ops: u64) -> String {
        match self.rows_per_op() {
            None => format!("{} rows: none of {ops} ops answered", self.rows),
            Some(per) if self.answered_ops == ops => {
                format!("{} rows in {ops} ops, {per:.2} per op", self.rows)
            }
            Some(per) => format!(
                "{} rows in {} answered ops of {ops}, {per:.2} per answered op",
                self.rows, self.answered_ops
            ),
        }
    }
}

impl fmt::Display for PgStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} rows in {} answered ops",
            self.rows, self.answered_ops
        )?;
        match self.rows_per_op() {
            Some(per) => write!(f, ", {per:.2} per op"),
            None => Ok(()),
        }
    }
}

/// One run's counts.
#[derive(Debug, Default)]
pub(super) struct Board {
    ops: AtomicU64,
    rows: AtomicU64,
}

impl Board {
    /// One answered try's row count.
    #[inline]
    pub(super) fn add(&self, rows: u64) {
        self.ops.fetch_add(1, Ordering::Relaxed);
        self.rows.fetch_add(rows, Ordering::Relaxed);
    }

    /// Takes back an answered try that was tried again (after the next try's
    /// [`add`](Self::add), by the same worker: no counter goes below zero).
    fn take_back(&self, rows: u64) {
        self.ops.fetch_sub(1, Ordering::Relaxed);
        self.rows.fetch_sub(rows, Ordering::Relaxed);
    }

    fn read(&self) -> PgStats {
        PgStats {
            answered_ops: self.ops.load(Ordering::Relaxed),
            rows: self.rows.load(Ordering::Relaxed),
        }
    }
}

/// A failed try the error policy tries again: its cycle, the retries made
/// before it, and the rows it counted (`None`: not answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Note {
    cycle: u64,
    tries: u32,
    rows: Option<u64>,
}

/// One worker's notes of tries to be tried again (at most one per op in
/// flight; empty unless ops fail and are retried, so a success costs one
/// emptiness check). A note whose retry never comes (the run stopped while
/// paused) stays, and that op keeps its last try's count.
#[derive(Debug, Default)]
pub(super) struct Retrying(RefCell<Vec<Note>>);

impl Retrying {
    fn take(&self, cycle: u64) -> Option<Note> {
        let mut notes = self.0.borrow_mut();
        if notes.is_empty() {
            return None;
        }
        let i = notes.iter().position(|n| n.cycle == cycle)?;
        Some(notes.swap_remove(i))
    }

    fn put(&self, note: Note) {
        self.0.borrow_mut().push(note);
    }
}

#[cfg(test)]
thread_local! {
    /// Errors [`as_the_engine_gets`] marked on this thread (what tests count).
    static MARKED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The error as the async runner hands it to the engine: one the driver did
/// not mark is marked here (a failed reconnect sent nothing, so the same
/// values may pass once the server is back; the rest fail again or may have
/// been applied). The only place a postgres op's error is marked:
/// `PgAsync::start` hands [`ended`]'s result on as it is.
fn as_the_engine_gets(e: OpError) -> OpError {
    if e.is_retryable().is_some() {
        e
    } else {
        #[cfg(test)]
        MARKED.with(|n| n.set(n.get() + 1));
        let again = e.kind() == "connect";
        e.retryable(again)
    }
}

/// Ends one try of the op of `cycle`, answered with its row count or failed:
/// checks `expect_rows`, counts the try on the run's board (taking back the
/// earlier try of the same op, if this one is a retry), and leaves a note on
/// `retrying` when the error policy will try it again. The op's result, as
/// the engine gets it.
pub(super) fn ended(
    shared: &Shared,
    retrying: &Retrying,
    cycle: u64,
    answer: Result<u64, OpError>,
) -> Result<u64, OpError> {
    let (rows, result) = match answer {
        Ok(rows) => (Some(rows), check(shared, cycle, rows)),
        Err(e) => (None, Err(as_the_engine_gets(e))),
    };
    if let Some(r) = rows {
        shared.rows.add(r);
    }
    let earlier = retrying.take(cycle);
    if let Some(Note { rows: Some(r), .. }) = earlier {
        shared.rows.take_back(r);
    }
    if let Err(e) = &result {
        let tries = earlier.map_or(0, |n| n.tries + 1);
        // The engine's own rule, on the error as it gets it: a note only
        // for a try the engine will try again.
        if shared.plan.params().errors.retries_again(e, tries) {
            retrying.put(Note { cycle, tries, rows });
        }
    }
    result
}

/// `rows` against the op's `expect_rows`: a refusal is an error of kind
/// `check`, which the same values would fail again (a bare `retry:N` does not
/// retry it; `check:retry:N` does).
fn check(shared: &Shared, cycle: u64, rows: u64) -> Result<u64, OpError> {
    let spec = &shared.ops[shared.plan.op_index(cycle)];
    match spec.expect_rows {
        Some(want) if !want.admits(rows) => Err(OpError::new(
            "check",
            format!(
                "op `{}`: {rows} rows, expected {want} (`expect_rows`)",
                spec.name
            ),
        )
        .retryable(false)),
        _ => Ok(rows),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity::drivers::OpPlan;

    /// A run's shared state (no server needed): `select` ops expecting one
    /// row, under the error policy `errors`.
    fn shared(errors: &str) -> Shared {
        let yaml = format!(
            "params: {{driver: postgres, url: 'postgres://u@127.0.0.1:1/d', errors: '{errors}'}}\n\
             bindings: {{k: Identity()}}\n\
             ops: {{read: {{query: 'select v from kv where k = {{k}}', expect_rows: 1}}}}"
        );
        let a = crate::Drivers::builtin()
            .loader()
            .from_str(&yaml, "rows.yaml")
            .unwrap_or_else(|e| panic!("{e}"));
        super::super::shared(Arc::new(OpPlan::new(&a, &Default::default()))).unwrap()
    }

    /// Cycles `0..n` through `ended` as the engine's retry loop runs them
    /// (`engine/async_motor/flight.rs`, `RunOp::poll_op` and `RunOp::failed`):
    /// try `t` of cycle `c` is
    /// answered `answer(c, t)`. The counts, the retries made, and the notes
    /// left over.
    fn run(
        shared: &Shared,
        n: u64,
        answer: impl Fn(u64, u32) -> Result<u64, OpError>,
    ) -> (PgStats, u32, usize) {
        let retrying = Retrying::default();
        let policy = &shared.plan.params().errors;
        let mut retries = 0;
        for c in 0..n {
            let mut tries = 0;
            let mut result = ended(shared, &retrying, c, answer(c, 0));
            while let Err(e) = &result {
                if !policy.retries_again(e, tries) {
                    break;
                }
                tries += 1;
                retries += 1;
                result = ended(shared, &retrying, c, answer(c, tries));
            }
        }
        let left = retrying.0.borrow().len();
        (shared.rows.read(), retries, left)
    }

    /// Regression (issue 22, audit H4): each try of a retried row check was
    /// counted as an op, so 20 ops with 10 rows read "10 rows in 40 ops".
    #[test]
    fn a_retried_row_check_counts_its_op_once() {
        let s = shared("check:retry:2;count");
        // Keys 0..10 have their row, 10..20 none (each tried three times).
        let (stats, retries, left) = run(&s, 20, |c, _| Ok(u64::from(c < 10)));
        assert_eq!(
            stats,
            PgStats {
                answered_ops: 20,
                rows: 10
            }
        );
        assert_eq!((retries, left), (20, 0));
        assert_eq!(stats.rows_per_op(), Some(0.5));
        assert_eq!(stats.line(20), "10 rows in 20 ops, 0.50 per op");
    }

    /// An op counts at its last try: answered then failed is not answered;
    /// failed then answered is, with the last try's rows.
    #[test]
    fn an_op_counts_what_its_last_try_was_answered_with() {
        let s = shared("check:retry:1;io:retry:1;count");
        let io = || OpError::new("io", "connection reset");
        // Cycle 0: 3 rows (refused by the check), then lost; cycle 1: lost,
        // then 1 row; cycle 2: 0 rows, then 2 rows (refused both times).
        let (stats, retries, left) = run(&s, 3, |c, t| match (c, t) {
            (0, 0) => Ok(3),
            (0, _) => Err(io()),
            (1, 0) => Err(io()),
            (1, _) => Ok(1),
            (2, 0) => Ok(0),
            _ => Ok(2),
        });
        assert_eq!(
            stats,
            PgStats {
                answered_ops: 2,
                rows: 3
            }
        );
        assert_eq!((retries, left), (3, 0));
        assert_eq!(
            stats.line(3),
            "3 rows in 2 answered ops of 3, 1.50 per answered op"
        );
    }

    /// A bare `retry:N` retries what the driver marks retryable (a
    /// serialization failure, a failed reconnect), not a check nor an
    /// unmarked error: no note is left for a try the engine does not retry.
    #[test]
    fn a_bare_retry_notes_only_what_the_engine_retries() {
        let s = shared("retry:3");
        let (stats, retries, left) = run(&s, 4, |c, t| match (c, t) {
            (0, 0) => Err(OpError::new("sql 40", "could not serialize").retryable(true)),
            (1, 0 | 1) => Err(OpError::new("connect", "refused")),
            (2, _) => Err(OpError::new("sql 23", "duplicate key").retryable(false)),
            (3, _) => Ok(0),
            _ => Ok(1),
        });
        assert_eq!((retries, left), (3, 0));
        assert_eq!(
            stats,
            PgStats {
                answered_ops: 3,
                rows: 2
            }
        );
    }

    /// A run whose ops all failed answered none: no rows per op (the JSON's
    /// `null`), not 0 (audit L1), and the line says none was answered.
    #[test]
    fn with_no_op_answered_there_is_no_figure_per_op() {
        let s = shared("count");
        let (stats, _, left) = run(&s, 5, |_, _| {
            Err(OpError::new("sql 42", "relation does not exist"))
        });
        assert_eq!((stats, left), (PgStats::default(), 0));
        assert_eq!(stats.rows_per_op(), None);
        assert_eq!(stats.line(5), "0 rows: none of 5 ops answered");
        assert_eq!(stats.to_string(), "0 rows in 0 answered ops");
    }

    /// Every kind a postgres op fails with is marked once, by `ended` (the
    /// dead second marking in `PgAsync::start` is gone, session 16): an
    /// unmarked error gets the mark of the engine's retry rule (retryable
    /// only for `connect`), one the driver marked keeps its own, and an error
    /// through `PgAsync::start` (a refused connect) is `Pool::run`'s as it
    /// is, marked once.
    #[test]
    fn each_error_kind_is_marked_exactly_once() {
        use crate::engine::AsyncOpRunner;
        let s = shared("count");
        let r = Retrying::default();
        let marked = || MARKED.with(|n| n.get());
        for (i, kind) in super::super::error_kinds().iter().enumerate() {
            let before = marked();
            let e = ended(&s, &r, i as u64, Err(OpError::new(kind.clone(), "x"))).unwrap_err();
            assert_eq!(marked() - before, 1, "{kind}");
            assert_eq!(
                (e.kind(), e.is_retryable()),
                (kind.as_str(), Some(kind == "connect"))
            );
            for mark in [true, false] {
                let before = marked();
                let given = OpError::new(kind.clone(), "x").retryable(mark);
                let e = ended(&s, &r, i as u64, Err(given)).unwrap_err();
                assert_eq!(
                    (marked() - before, e.is_retryable()),
                    (0, Some(mark)),
                    "{kind}"
                );
            }
        }
        // Through the runner: nothing listens on port 1.
        let runner = super::super::PgAsync(std::rc::Rc::new(super::super::run::Pool::unopened(
            Arc::new(shared("count")),
        )));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let before = marked();
        let e = rt.block_on(runner.start(0)).unwrap_err();
        assert_eq!(marked() - before, 1);
        assert_eq!((e.kind(), e.is_retryable()), ("connect", Some(true)));
    }

    /// The error the engine gets is marked as `PgAsync::start` hands it on: a
    /// check never retryable by a bare `retry:N`, a failed reconnect
    /// retryable, the driver's own mark kept.
    #[test]
    fn errors_are_marked_as_the_engine_gets_them() {
        let s = shared("count");
        let r = Retrying::default();
        let e = ended(&s, &r, 0, Ok(0)).unwrap_err();
        assert_eq!((e.kind(), e.is_retryable()), ("check", Some(false)));
        assert_eq!(e.message(), "op `read`: 0 rows, expected 1 (`expect_rows`)");
        let e = ended(&s, &r, 1, Err(OpError::new("connect", "x"))).unwrap_err();
        assert_eq!(e.is_retryable(), Some(true));
        let e = ended(&s, &r, 2, Err(OpError::new("io", "x"))).unwrap_err();
        assert_eq!(e.is_retryable(), Some(false));
        let e = ended(&s, &r, 3, Err(OpError::new("sql 40", "x").retryable(true))).unwrap_err();
        assert_eq!(e.is_retryable(), Some(true));
        assert_eq!(ended(&s, &r, 4, Ok(1)), Ok(1));
    }
}
