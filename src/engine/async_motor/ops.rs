//! The ops' side of an async worker: what runs inside the ops' futures while
//! the worker drives them (see [`super`]): their timers ([`sleep_until`] on the
//! worker's own heap, which the drive sleeps on), the deadline of the slot
//! wait under way that a pass of the ops stops at ([`StartDue`]), and what an
//! op reads of its worker (the reactor's age).

use super::{DRIVER, PARKED_DRIVE, START_DUE, TIMERS};
use crate::clock::{Clock, Waiting};
use crate::nanos::Nanos;
use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// A drive parks until `until` (`Nanos::MAX`: no time), woken by `waker`.
pub(super) fn drive_parked(until: Nanos, waker: &Waker) {
    PARKED_DRIVE.with(|p| *p.borrow_mut() = Some((until, waker.clone())));
}

/// The drive runs again (or is gone): a new timer needs no wake.
pub(super) fn drive_unparked() {
    PARKED_DRIVE.with(|p| p.borrow_mut().take());
}

/// A timer was set for `at`: wakes the parked drive if it would sleep past it.
fn timer_set(at: Nanos) {
    let waker = PARKED_DRIVE.with(|p| {
        let mut p = p.borrow_mut();
        if p.as_ref().is_some_and(|(until, _)| at < *until) {
            p.take().map(|(_, w)| w)
        } else {
            None
        }
    });
    if let Some(w) = waker {
        w.wake();
    }
}

/// One op timer: wake `waker` once the clock reads `at`.
struct Entry {
    at: Nanos,
    seq: u64,
    waker: Waker,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

#[derive(Default)]
pub(super) struct Timers {
    heap: BinaryHeap<Reverse<Entry>>,
    seq: u64,
    /// A driver is installed: [`Sleep`] queues here (else on the clock).
    active: bool,
}

impl Timers {
    /// A driver installed on this thread (`true`), or taken out: its ops'
    /// timers go with it.
    pub(super) fn set_active(&mut self, active: bool) {
        self.active = active;
        if !active {
            self.heap.clear();
        }
    }

    fn earliest(&self) -> Option<Nanos> {
        self.heap.peek().map(|e| e.0.at)
    }
}

/// Wakes the op timers due at `now`.
pub(super) fn fire_due(now: Nanos) {
    let due: Vec<Waker> = TIMERS.with(|t| {
        let mut t = t.borrow_mut();
        let mut due = Vec::new();
        while t.heap.peek().is_some_and(|e| e.0.at <= now) {
            if let Some(Reverse(e)) = t.heap.pop() {
                due.push(e.waker);
            }
        }
        due
    });
    for w in due {
        w.wake();
    }
}

/// Whether an op timer is due at `now`: one compare with the earliest.
pub(super) fn timer_due(now: Nanos) -> bool {
    TIMERS.with(|t| t.borrow().earliest().is_some_and(|at| at <= now))
}

pub(super) fn earliest_timer() -> Option<Nanos> {
    TIMERS.with(|t| t.borrow().earliest())
}

/// The deadline of the wait for a slot under way (`Nanos::MAX`: none).
pub(super) fn start_due() -> Nanos {
    START_DUE.with(Cell::get)
}

/// Sets [`START_DUE`] for a wait for a slot, and clears it as the wait ends.
pub(super) struct StartDue;

impl StartDue {
    pub(super) fn set(deadline: Nanos) -> Self {
        START_DUE.with(|d| d.set(deadline));
        StartDue
    }
}

impl Drop for StartDue {
    fn drop(&mut self) {
        START_DUE.with(|d| d.set(Nanos::MAX));
    }
}

/// How long ago this thread's worker last polled its reactor (a drive that
/// slept in it, or a pass), on the real clock: tokio's readiness of a socket is
/// as fresh as that. `None` off an async worker, on a clock that is not real,
/// or while the driver is borrowed. The `http` driver reads it to skip a
/// system call per request (its `aio::conn` module docs).
pub(crate) fn reactor_age() -> Option<Nanos> {
    DRIVER.with(|d| {
        let d = d.try_borrow().ok()?;
        let d = d.as_ref().filter(|d| d.real)?;
        Some(d.clock.now().saturating_sub(d.last_pass.get()))
    })
}

/// A future that completes once `clock` reads `deadline`, with the reading.
pub(crate) struct Sleep {
    clock: Arc<dyn Clock>,
    waiting: Waiting,
    deadline: Nanos,
}

/// Sleeps until `clock` reads `deadline` without holding the thread: on an async
/// worker on the worker's own timers, elsewhere on the clock's (`wake_at`).
pub(crate) fn sleep_until(clock: Arc<dyn Clock>, waiting: Waiting, deadline: Nanos) -> Sleep {
    Sleep {
        clock,
        waiting,
        deadline,
    }
}

impl Future for Sleep {
    type Output = Nanos;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Nanos> {
        let now = self.clock.now();
        if now >= self.deadline {
            return Poll::Ready(now);
        }
        let queued = TIMERS.with(|t| {
            let mut t = t.borrow_mut();
            if !t.active {
                return false;
            }
            t.seq += 1;
            let seq = t.seq;
            t.heap.push(Reverse(Entry {
                at: self.deadline,
                seq,
                waker: cx.waker().clone(),
            }));
            true
        });
        if queued {
            // Set by an op the drive woke, after it chose when to wake: it
            // must choose again (regression, session 13: a second timer of
            // one op was never armed, and at the cap nothing woke the drive).
            timer_set(self.deadline);
        } else {
            self.clock.wake_at(self.deadline, &self.waiting, cx.waker());
        }
        Poll::Pending
    }
}
