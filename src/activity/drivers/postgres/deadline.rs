//! The op timeout (`timeout`) of one async worker: a deadline per op in
//! flight in a book, and one watchdog task that sleeps on the worker's own
//! timers until the earliest, instead of a tokio timer per op. Two drivers
//! use it: postgres (`Pool::watch`) and redis (`redis/run.rs`, pinned there by
//! `two_ops_on_a_real_worker` and `redis/tests.rs`'s timeout tests).
//!
//! A tokio timer per op (`tokio::time::timeout`) costs, at every op, a clock
//! reading through `Instant`, an entry put in and taken out of the timer
//! wheel under its lock, and, whenever the new entry is the wheel's earliest,
//! a write to the reactor's eventfd (and an `epoll_wait` that returns at once
//! for it): the figures are in `benches/README.md` (session 14). Here an op
//! costs a clock reading and a slot in the book; the watchdog wakes when the
//! earliest deadline comes, about once per `timeout`, not once per op.
//!
//! What holds, and the tests (in this file) that pin it:
//!
//! | rule | test |
//! |---|---|
//! | an op unanswered at its start + `timeout` fails with kind `timeout` once the clock reads that, not before, and its future is dropped | `an_op_unanswered_past_its_deadline_times_out_then_and_not_before` |
//! | an op answered in time is not touched; its slot is reused | `an_op_answered_in_time_keeps_its_answer_and_frees_its_slot` |
//! | the watchdog never wakes later than any deadline in the book: every op's deadline is its start + `timeout`, and an idle watchdog looks again `timeout` after it last looked | `a_watchdog_idle_when_an_op_starts_still_wakes_at_its_deadline` |
//! | ops that end are forgotten at once: the watchdog wakes about once per `timeout`, not per op | `many_short_ops_wake_the_watchdog_once_per_timeout` |
//! | on a worker installed on the real clock, a hung op times out between its deadline and a wide margin after, whether the worker spins its slot waits (its passes fire the watchdog's timer) or sleeps them | `a_hung_op_times_out_on_time_on_a_worker_that_spins_its_waits`, `a_hung_op_times_out_on_time_on_a_worker_with_the_default_waiting`, and through the driver's runner (`Pool::watch`) `a_hung_statement_times_out_on_time_on_a_real_worker_spinning_or_not` (`tests.rs`) |
//! | the book is made on a real clock only | `a_book_is_started_on_a_real_clock_only` |
//! | an answer ready as the deadline passes is kept (the op is polled before its place) | `an_answer_ready_at_the_deadline_is_kept` |
//! | a cancelled op frees its place at once, and its deadline wakes no one | `a_cancelled_op_frees_its_place` |
//! | an op that panics frees its place and leaves the book usable | `a_panicking_op_frees_its_place` |
//!
//! "About once per `timeout`" holds for ops short beside it: the watchdog
//! wakes at the earliest live deadline, so with ops lasting d close to T it
//! wakes every T − d, each wake a scan of the book (its size the peak of ops
//! in flight). A worker's watchdog keeps a timer at most `timeout` away, so an
//! idle or paused postgres or redis worker wakes once per `timeout`.
//!
//! Only on a worker whose clock is real: on any other clock (the
//! [`ManualClock`](crate::ManualClock)) the ops' IO runs in real time while
//! the clock moves by itself, so the driver keeps tokio's timer there.

use crate::clock::Clock;
use crate::engine::WorkerContext;
use crate::nanos::Nanos;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

#[cfg(test)]
thread_local! {
    /// Books [`Deadlines::start`] made on this thread (what tests count: the
    /// real path taken).
    pub(in crate::activity::drivers) static STARTED: Cell<u64> = const { Cell::new(0) };
}

/// The shortest op timeout the drivers keep. The watchdog looks again
/// `timeout` after it last looked: at a few nanoseconds that moment has
/// passed before its sleep is first polled, so the watchdog loops without
/// ever yielding and the worker's other tasks (its connect, in set-up) never
/// run (audit p17 M8: `timeout=1ns` hung the run); and no server answers a
/// command this soon. `op_timeout_refused_below_its_floor` (tests/redis_meds.rs)
/// pins it.
pub(in crate::activity::drivers) const MIN_TIMEOUT: std::time::Duration =
    std::time::Duration::from_micros(100);

/// `timeout`, the op timeout a driver read from its param: refused below
/// [`MIN_TIMEOUT`], with the fix.
pub(in crate::activity::drivers) fn op_timeout(
    timeout: std::time::Duration,
) -> Result<std::time::Duration, String> {
    if timeout < MIN_TIMEOUT {
        return Err(format!(
            "param `timeout`: {timeout:?} is below {MIN_TIMEOUT:?}, the shortest op timeout \
             paceline keeps (no server answers sooner, and a worker's watchdog looks once per \
             `timeout`); write `100us` or more"
        ));
    }
    Ok(timeout)
}

/// One op's place in the book.
struct Entry {
    /// `Nanos::MAX` while the place is free.
    deadline: Nanos,
    /// The op's waker, set while it waits.
    waker: Option<Waker>,
    /// The watchdog saw the deadline pass.
    expired: bool,
}

/// The deadlines of one worker's ops in flight.
pub(in crate::activity::drivers) struct Deadlines {
    ctx: WorkerContext,
    timeout: Nanos,
    entries: RefCell<Vec<Entry>>,
    free: RefCell<Vec<usize>>,
    /// The watchdog's wake-ups so far (what tests count).
    wakes: Cell<u64>,
}

/// The op ran past its deadline.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::activity::drivers) struct Elapsed;

impl Deadlines {
    /// A book for ops that may take `timeout` each, and its watchdog spawned
    /// on the current `LocalSet`; `None` unless `ctx`'s clock is real.
    pub(in crate::activity::drivers) fn start(
        ctx: &WorkerContext,
        timeout: std::time::Duration,
    ) -> Option<Rc<Self>> {
        ctx.clock().timeline_origin()?;
        #[cfg(test)]
        STARTED.with(|n| n.set(n.get() + 1));
        Some(Self::spawn(ctx, timeout))
    }

    /// [`start`](Self::start) on any clock.
    fn spawn(ctx: &WorkerContext, timeout: std::time::Duration) -> Rc<Self> {
        let book = Rc::new(Self {
            ctx: ctx.clone(),
            timeout: crate::nanos::from_duration(timeout).max(1),
            entries: RefCell::new(Vec::new()),
            free: RefCell::new(Vec::new()),
            wakes: Cell::new(0),
        });
        let watched = Rc::downgrade(&book);
        drop(tokio::task::spawn_local(async move {
            loop {
                let Some(book) = watched.upgrade() else {
                    return;
                };
                let next = book.look(book.ctx.now());
                let sleep = book.ctx.sleep_until_async(next);
                drop(book);
                sleep.await;
            }
        }));
        book
    }

    /// Expires the ops whose deadline `now` has reached (waking each) and
    /// says when to look again: the earliest deadline left, or `timeout` from
    /// now, which is no later than the deadline of any op that starts from
    /// now on (the clock does not go back).
    fn look(&self, now: Nanos) -> Nanos {
        self.wakes.set(self.wakes.get() + 1);
        let mut next = now.saturating_add(self.timeout);
        let mut due = Vec::new();
        for e in self.entries.borrow_mut().iter_mut() {
            if e.deadline == Nanos::MAX || e.expired {
                continue;
            }
            if e.deadline <= now {
                e.expired = true;
                due.extend(e.waker.take());
            } else {
                next = next.min(e.deadline);
            }
        }
        for w in due {
            w.wake();
        }
        next
    }

    /// Runs the future `make` makes within the op timeout, counted from now:
    /// its output, or [`Elapsed`] once the clock reads its start + `timeout`
    /// (its future dropped then). A maker, not the future: an `async fn`'s
    /// argument stays in its state beside the future moved out of it.
    pub(in crate::activity::drivers) async fn within<F: Future>(
        self: &Rc<Self>,
        make: impl FnOnce() -> F,
    ) -> Result<F::Output, Elapsed> {
        let place = self.take(self.ctx.now().saturating_add(self.timeout));
        let mut fut = std::pin::pin!(make());
        std::future::poll_fn(|cx| {
            // As tokio's timeout: the op first, so an answer there at the
            // deadline is kept.
            if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                return Poll::Ready(Ok(v));
            }
            place.wait(cx)
        })
        .await
    }

    /// A place in the book for an op due by `deadline`.
    fn take(self: &Rc<Self>, deadline: Nanos) -> Place {
        let entry = Entry {
            deadline,
            waker: None,
            expired: false,
        };
        let index = match self.free.borrow_mut().pop() {
            Some(i) => {
                self.entries.borrow_mut()[i] = entry;
                i
            }
            None => {
                let mut entries = self.entries.borrow_mut();
                entries.push(entry);
                entries.len() - 1
            }
        };
        Place {
            book: self.clone(),
            index,
        }
    }

    /// The watchdog's wake-ups so far.
    #[cfg(test)]
    fn wakes(&self) -> u64 {
        self.wakes.get()
    }

    /// Places taken now.
    #[cfg(test)]
    fn taken(&self) -> usize {
        self.entries.borrow().len() - self.free.borrow().len()
    }
}

/// An op's place in the book, given back when the op ends or is dropped.
struct Place {
    book: Rc<Deadlines>,
    index: usize,
}

impl Drop for Place {
    fn drop(&mut self) {
        let waker = {
            let mut entries = self.book.entries.borrow_mut();
            let e = &mut entries[self.index];
            e.deadline = Nanos::MAX;
            e.waker.take()
        };
        drop(waker);
        self.book.free.borrow_mut().push(self.index);
    }
}

impl Place {
    /// The op is pending: [`Elapsed`] if the watchdog saw its deadline pass,
    /// else its waker is kept for the watchdog.
    fn wait<T>(&self, cx: &mut Context<'_>) -> Poll<Result<T, Elapsed>> {
        let mut entries = self.book.entries.borrow_mut();
        let e = &mut entries[self.index];
        if e.expired {
            return Poll::Ready(Err(Elapsed));
        }
        match &mut e.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            w => *w = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

#[cfg(test)]
#[path = "deadline_tests.rs"]
mod tests;
