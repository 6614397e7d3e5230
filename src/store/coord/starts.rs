//! The shared schedule's start rate, as pure pieces: what one process knows of
//! its starts ([`Starts`]: how many, and the latest, on the schedule's time
//! base), and the global rates the heartbeat reads from the store's sums
//! ([`global_rates`]).
//!
//! The global achieved rate is the START rate over the shared schedule, as a
//! process's own achieved rate is over its schedule (`crate::engine::achieved_rate`):
//! every process's starts, less one, over the span from the schedule's first
//! slot to the latest start any process reported. n ops started at their slots
//! give the schedule's rate exactly, however long the last ones then take (the
//! drain after the last start is no part of the schedule). The store combines
//! the pieces exactly: the first slot is the first any process could use (the
//! slot of the first lease's first ticket, after the late ones it forfeited: a
//! strict mode's set-up is missed slots, counted in the global missed count, not
//! a shortfall of the rate; written once by that lease), the starts a sum (`HINCRBY` of each
//! heartbeat's delta) and the latest start a maximum.
//!
//! A start is on the schedule's time base: its ticket's slot plus how late it
//! started, measured on this process's clock as its wait is (never before its
//! slot: the time base's error cannot make a start early). The slot is the one
//! the engine was granted, on this process's clock, taken back to the
//! schedule's by the time base's offset in force at the start: its ticket's
//! slot exactly, unless a heartbeat's tighter sample moved the offset between
//! the grant and the start (then off by that move, microseconds). So no start rate is
//! above the rate of the slots it started on (whose times are whole
//! nanoseconds, rounded down, as every process computes them).
//!
//! A start is counted when the engine starts the op (`SlotSource::slot_used`,
//! on the worker's thread as the op starts), never at the grant: a slot the
//! engine was granted and did not use (its worker retired, or the run's duration
//! ended, before the op) is no start, and a start is in the count from the
//! moment it happens, whatever its op's length. A heartbeat during the run
//! reports every start so far (one under way as it reads may wait for the next
//! heartbeat), the last one (leaving: every worker has ended) all of them.
//!
//! # Ground rules (atomics)
//!
//! Worker threads write both fields ([`Starts::started`]: the latest start by
//! `fetch_max`, then the count by a `Release` `fetch_add`); the heartbeat reads
//! them ([`Starts::read`]: the count with `Acquire`, then the latest start). A
//! count read takes in every start whose increment it saw, and the `Release` /
//! `Acquire` edge makes each such start's `fetch_max` visible to the read after
//! it: the latest start read is never before a counted start, so a rate read
//! mid-run is never above the slots' rate. Leaving, the workers have ended (the
//! engine joined them), so the read holds every start.

use crate::nanos::{NANOS_PER_SEC, Nanos};
use crate::sync::threads::{AtomicU64, Ordering};

/// One process's starts on a shared schedule: lock-free, written by the workers
/// as their ops start.
#[derive(Debug, Default)]
pub(super) struct Starts {
    /// Ops started.
    count: AtomicU64,
    /// The latest start (schedule ns; 0: none).
    last: AtomicU64,
}

impl Starts {
    /// An op started at `at` (schedule ns).
    pub(super) fn started(&self, at: Nanos) {
        self.last.fetch_max(at, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Release);
    }

    /// The starts so far and the latest one (schedule ns; 0: none).
    pub(super) fn read(&self) -> (u64, Nanos) {
        let n = self.count.load(Ordering::Acquire);
        (n, self.last.load(Ordering::Relaxed))
    }
}

/// A start at schedule time: `slot` (schedule ns) plus how late it started,
/// `now - slot_local` on this process's clock (`slot_local` signed: a slot from
/// before the clock's origin), never before the slot.
pub(super) fn start_at(slot: Nanos, slot_local: i64, now: Nanos) -> Nanos {
    let late = (i128::from(now) - i128::from(slot_local)).max(0);
    slot.saturating_add(u64::try_from(late).unwrap_or(u64::MAX))
}

/// The global numbers the store's sums give, as [`global_rates`] reads them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Sums {
    /// Cycles completed by every process.
    pub(super) completed: u64,
    /// The latest op end any process reported (schedule ns; 0: none).
    pub(super) last_end: Nanos,
    /// The schedule's first slot (schedule ns): the first lease's first ticket
    /// (after those it forfeited), once a lease took it.
    pub(super) first_slot: Option<Nanos>,
    /// Ops started by every process (as each last reported them).
    pub(super) starts: u64,
    /// The latest start any process reported (schedule ns; 0: none).
    pub(super) last_start: Nanos,
}

/// `(achieved, completion)`: the start rate over the shared schedule, `(starts -
/// 1)` over the span from its first slot to the latest start, and the
/// completions over the time from its first slot (its origin until a lease
/// took the first ticket) to the latest op end.
/// With fewer than 2 starts, or no span (an unpaced schedule grants no slot),
/// the achieved rate is the completion rate.
///
/// ```text
/// slots   |0    |1    |2    |3          4 starts over 3 slices: the rate
/// starts  |0    |1    |2    |3
/// ends        0     1     2   ... 3     4 ends over 3 slices + the drain: less
/// ```
pub(super) fn global_rates(s: &Sums) -> (f64, f64) {
    let ran = s.last_end.saturating_sub(s.first_slot.unwrap_or(0));
    let completion = if ran > 0 {
        s.completed as f64 * NANOS_PER_SEC as f64 / ran as f64
    } else {
        0.0
    };
    let span = s.first_slot.map_or(0, |f| s.last_start.saturating_sub(f));
    let achieved = if s.starts >= 2 && span > 0 {
        (s.starts - 1) as f64 * NANOS_PER_SEC as f64 / span as f64
    } else {
        completion
    };
    (achieved, completion)
}

#[cfg(all(test, not(loom)))]
#[path = "starts_tests.rs"]
mod tests;
