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
//! the pieces exactly: the first slot is the slot of the schedule's first
//! ticket (written by its first lease), the starts a sum (`HINCRBY` of each
//! heartbeat's delta) and the latest start a maximum.
//!
//! A start is on the schedule's time base: its ticket's slot plus how late it
//! started, measured on this process's clock as its wait is (never before its
//! slot: the time base's error cannot make a start early). So no start rate is
//! above the rate of the slots it started on (whose times are whole
//! nanoseconds, rounded down, as every process computes them).
//!
//! A slot the engine was granted and did not use (its worker retired, or the
//! run's duration ended, before the op) is no start: the engine says so at once,
//! on the thread it granted it to. Each worker thread's latest grant is
//! pending until that thread is granted another (it was used) or gives it back;
//! a heartbeat during the run reports the settled starts only, the last one
//! (leaving: every worker has ended) all of them.

use crate::nanos::{NANOS_PER_SEC, Nanos};
use std::collections::HashMap;
use std::thread::ThreadId;

/// One process's starts on a shared schedule, kept under the tickets lock.
#[derive(Debug, Default)]
pub(super) struct Starts {
    /// Starts known to be starts: each thread's grants before its latest.
    settled: u64,
    /// The latest settled start (schedule ns; 0: none).
    last: Nanos,
    /// Each worker thread's latest grant (schedule ns), not yet known used.
    pending: HashMap<ThreadId, Nanos>,
}

impl Starts {
    /// `thread` was granted a slot and starts at `at` (schedule ns): its grant
    /// before, if any, was used.
    pub(super) fn granted(&mut self, thread: ThreadId, at: Nanos) {
        if let Some(before) = self.pending.insert(thread, at) {
            self.settled += 1;
            self.last = self.last.max(before);
        }
    }

    /// `thread`'s latest grant was not used.
    pub(super) fn not_used(&mut self, thread: ThreadId) {
        self.pending.remove(&thread);
    }

    /// The starts and the latest one (schedule ns; 0: none): settled only, or
    /// (`all`, once every worker has ended) with the pending grants, all used.
    pub(super) fn read(&self, all: bool) -> (u64, Nanos) {
        if !all {
            return (self.settled, self.last);
        }
        let last = self.pending.values().copied().fold(self.last, Nanos::max);
        (self.settled + self.pending.len() as u64, last)
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
    /// The schedule's first slot (schedule ns), once a lease took its first
    /// ticket.
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
