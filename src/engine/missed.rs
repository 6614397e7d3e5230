//! The pacer's missed slots and the run's paused time, moved into the metrics at
//! each snapshot.
//!
//! The pacer counts a pause's length as forfeited schedule time, so its
//! `missed_slots` grows by `pause / slice` while paused. That is not overload:
//! the local pacer says which of its missed slots were a pause's
//! (`LimiterStats::paused_slots`, per thread schedule, at the rate before the
//! pause, none before its first acquire) and the engine counts the rest; for a
//! [`SlotSource`](crate::SlotSource) whose count grows while paused
//! (`MissedSlots::counts_pauses`), the engine knows when it paused or ran at
//! rate 0, and at which rate before, and takes those slots back out itself.
//! The paused time is reported on its own ([`Snapshot::paused_nanos`]). A `restart`
//! spec re-anchors the pacer; the engine reports what the old schedule missed
//! first, then counts from the pacer's count right after the restart, its baseline
//! ([`Missed::restarted`]): the local pacer's count starts again from zero, a shared
//! schedule's goes on, and either is counted once.
//!
//!
//! A rate of 0 is a pause too (`RateSpec::paused`; the verdict says `paused`, and
//! `paceline_paused` reads 1): the time a rate-0 spec is in force outside a
//! control pause is paused time, counted once where it meets a control pause
//! ([`Missed::rate_set`]), whether the spec was set here or on another process of
//! a shared schedule.
//!
//! Each interval holds the paused time that fell in it, reported as it
//! happens, before the schedule's first slot too: a row says what its interval
//! held. The run's paused time ([`Snapshot::paused_nanos`] of the totals) is
//! the time inside its window, which starts at the first slot
//! ([`Missed::schedule_began`]): the rows before it are set-up rows
//! ([`Snapshot::setup_nanos`]), and what they showed paused is part of the
//! set-up, which the totals drop when the window moves to the first slot
//! (`Metrics::schedule_started`); the rows from the first slot on sum to the
//! totals. A run whose schedule never began (launched at `rate=0`, never raised)
//! has its window from its start, so all its rows are in it and sum to its
//! paused time. The paused time is never more than the window it is reported
//! in. Regressions (session 13): a `rate=0` launch read `paused_s` 0 while its
//! verdict said "paused"; then counted its set-up twice, as set-up and as
//! paused; and a rate raised on another process of a shared schedule never
//! ended the rate-0 stretch here. Session 14: a rate-0 launch never raised read
//! paused 0 in every row and all of it in the last, at the stop; a pause before
//! the first slot hid the next missed slots (see `early`); a stretch at rate 0
//! invented missed slots (see `slice`), and so did a pause in thread scope,
//! whose schedules each forfeit it (the pacer now counts its paused slots).
//!
//! [`Snapshot::setup_nanos`]: crate::Snapshot::setup_nanos
//! [`Snapshot::paused_nanos`]: crate::Snapshot::paused_nanos

use super::source::Pacer;
use crate::clock::Clock;
use crate::metrics::Recorder;
use crate::nanos::Nanos;
use crate::pace::RateLimiter;
use crate::sync::threads::Arc;

/// The engine's pacer.
pub(crate) type Limiter = RateLimiter<Arc<dyn Clock>>;

/// What has been reported so far; lives under its own lock (taken after the
/// motors lock when both are held).
pub(crate) struct Missed {
    rec: Recorder,
    /// The pacer's missed slots (less paused ones) reported since its last restart.
    seen: u64,
    /// The pacer's count at its last restart: only what it counts past this is new.
    baseline: f64,
    /// Slots of finished pauses since the pacer's last restart, inside the
    /// window: only those are in the pacer's count.
    paused_slots: f64,
    /// Finished pauses before the schedule began, `(since, end, slice)`: a
    /// pacer anchored at its first slot counts only their part after it
    /// (none, unless a pause came between a worker's first slot and its
    /// [`schedule_began`](Self::schedule_began)); settled there. Until then
    /// they all come out of the pacer's count, which may hide a missed slot
    /// for a while but never invents one.
    early: Vec<(Nanos, Nanos, f64)>,
    /// Paused time of finished pauses, the whole run.
    paused_done: Nanos,
    /// Paused time already reported.
    paused_reported: Nanos,
    /// The pause under way: when it began (pacer time) and the slice before it, in
    /// ns (`None` when unpaced: no slots are missed).
    pause: Option<(Nanos, Option<f64>)>,
    /// Since when (pacer time) a rate-0 spec has been in force outside a pause.
    zero: Option<Nanos>,
    /// The slice (ns) of the last rate above 0 put in force: a source that
    /// counts pauses counts a stretch without slots, paused or at rate 0, as
    /// forfeited slots of it, whatever rate comes next (as the local pacer does).
    slice: Option<f64>,
    /// The schedule's first slot (pacer time), once it came: paused time before
    /// it is set-up, reported in the set-up rows as it happened, and dropped
    /// from the run's count there (the totals drop it too).
    window: Option<Nanos>,
    /// Set once the run stops: later pacer counts are not the run's.
    frozen: bool,
}

impl Missed {
    /// `zero`: the run starts at rate 0 at that time (pacer time); `rate`: the
    /// rate it starts at, ops/s (`None`: unpaced).
    pub(crate) fn new(rec: Recorder, zero: Option<Nanos>, rate: Option<f64>) -> Self {
        Self {
            rec,
            seen: 0,
            baseline: 0.0,
            paused_slots: 0.0,
            early: Vec::new(),
            paused_done: 0,
            paused_reported: 0,
            pause: None,
            zero,
            slice: rate.and_then(slice_of),
            window: None,
            frozen: false,
        }
    }

    /// A spec of `rate` ops/s (`None`: unpaced) was put in force at `at`
    /// (pacer time) outside a pause: at rate 0 the time from now on is paused
    /// time, until a rate above 0, and the pacer's slots forfeited meanwhile
    /// come out of its missed count as a pause's do.
    pub(crate) fn rate_set(&mut self, at: Nanos, rate: Option<f64>) {
        let zero = rate.is_some_and(|r| r <= 0.0);
        match (self.zero, zero) {
            (None, true) => self.zero = Some(at),
            (Some(since), false) => self.zero_ended(since, at),
            _ => {}
        }
        if let Some(s) = rate.and_then(slice_of) {
            self.slice = Some(s);
        }
    }

    /// The rate-0 stretch since `since` ended at `at`: paused time, and
    /// forfeited slots of the rate before it.
    fn zero_ended(&mut self, since: Nanos, at: Nanos) {
        self.paused_done += at.saturating_sub(self.counted_from(since));
        self.forfeited(since, at, self.slice);
        self.zero = None;
    }

    /// The pacer forfeited the slots of `slice` from `since` to `end` (a pause,
    /// a stretch at rate 0): only those inside the window are in its count.
    fn forfeited(&mut self, since: Nanos, end: Nanos, slice: Option<f64>) {
        match slice {
            Some(s) if self.window.is_none() => self.early.push((since, end, s)),
            Some(s) => self.paused_slots += end.saturating_sub(self.counted_from(since)) as f64 / s,
            None => {}
        }
    }

    /// The schedule's first slot came at `at` (pacer time): what was paused or at
    /// rate 0 before it is the run's set-up, not paused time. The set-up rows
    /// showed it as it happened; the totals drop it as the window moves to the
    /// first slot (`Metrics::schedule_started`, called just before this under
    /// the same lock as the snapshots' report), so the count starts again at 0.
    ///
    /// A rate-0 stretch that began before the slot has ended: a slot came, so the
    /// rate was raised, even if the word of it comes later (the control that
    /// raised it records it just after the pacer has it; another process of a
    /// shared schedule raised it and its message is on the way). Counting it
    /// until then would count the gap as paused time inside the window.
    pub(crate) fn schedule_began(&mut self, at: Nanos) {
        if self.window.is_some() {
            return;
        }
        self.window = Some(at);
        self.paused_done = 0;
        self.paused_reported = 0;
        for (since, end, slice) in std::mem::take(&mut self.early) {
            self.paused_slots += end.saturating_sub(since.max(at)) as f64 / slice;
        }
        if self.zero.is_some_and(|since| since <= at) {
            self.zero = None;
        }
    }

    /// Where paused time may start counting from: the window's start once the
    /// schedule began.
    fn counted_from(&self, since: Nanos) -> Nanos {
        self.window.map_or(since, |w| since.max(w))
    }

    /// A pause began at `at` (pacer time), at `rate` ops/s (`None`: unpaced).
    /// At rate 0 the pacer counts the pause at the last rate above 0.
    pub(crate) fn pause_began(&mut self, at: Nanos, rate: Option<f64>) {
        // A rate-0 stretch ends where the pause takes over (counted once).
        if let Some(since) = self.zero {
            self.zero_ended(since, at);
        }
        let slice = rate.and_then(|r| slice_of(r).or(self.slice));
        self.pause = Some((at, slice));
    }

    /// The pause under way ended at `at`.
    pub(crate) fn pause_ended(&mut self, at: Nanos) {
        if let Some((since, slice)) = self.pause.take() {
            self.paused_done += at.saturating_sub(self.counted_from(since));
            self.forfeited(since, at, slice);
        }
    }

    /// Reports what is new since the last report into the recorder: the paused
    /// time up to now, before the first slot too (the set-up rows show it).
    pub(crate) fn report(&mut self, limiter: &Pacer, paced: bool) {
        if self.frozen {
            return;
        }
        let now = limiter.now();
        let live = |since: Option<Nanos>, slice: Option<f64>| match since {
            Some(since) => {
                let len = now.saturating_sub(self.counted_from(since));
                (len, slice.map_or(0.0, |s| len as f64 / s))
            }
            None => (0, 0.0),
        };
        let (live_len, live_slots) = live(self.pause.map(|p| p.0), self.pause.and_then(|p| p.1));
        let (zero_len, zero_slots) = live(self.zero, self.slice);
        if paced {
            let m = limiter.missed_slots();
            let pacer = m.count - self.baseline;
            let paused = if m.counts_pauses {
                let early: f64 = self.early.iter().map(|(a, b, s)| (b - a) as f64 / s).sum();
                self.paused_slots + early + live_slots + zero_slots
            } else {
                0.0
            };
            // A count that is not a finite number is no count (never u64::MAX).
            let missed = (pacer - paused).max(0.0).floor();
            let missed = if missed.is_finite() { missed as u64 } else { 0 };
            if missed > self.seen {
                self.rec.missed(missed - self.seen);
                self.seen = missed;
            }
        }
        let paused = self.paused_done + live_len + zero_len;
        if paused > self.paused_reported {
            self.rec.paused(paused - self.paused_reported);
            self.paused_reported = paused;
        }
    }

    /// The pacer was re-anchored (a `restart` spec): what it counts from now on is
    /// new. Call [`report`](Self::report) just before the restart, and this just
    /// after: the pacer's count now is the baseline.
    pub(crate) fn restarted(&mut self, limiter: &Pacer) {
        self.seen = 0;
        self.baseline = limiter.missed_slots().count;
        self.paused_slots = 0.0;
        self.early.clear();
    }

    /// The run stopped: report the rest and nothing after.
    pub(crate) fn freeze(&mut self, limiter: &Pacer, paced: bool) {
        self.pause_ended(limiter.now());
        self.rate_set(limiter.now(), None);
        self.report(limiter, paced);
        self.frozen = true;
    }
}

/// The slice of `rate` ops/s in ns; `None` at rate 0 (no slots).
fn slice_of(rate: f64) -> Option<f64> {
    (rate > 0.0 && rate.is_finite()).then(|| 1e9 / rate)
}

#[cfg(all(test, not(loom)))]
#[path = "missed_tests.rs"]
mod tests;
