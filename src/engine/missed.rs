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
//! in, and a row holds no more than its own length (it is counted up to the
//! snapshot's end, [`Missed::report_until`]). A pause or rate-0 stretch still
//! live when the schedule begins (a worker's slot came before the pause and
//! its start of the schedule after; a shared schedule's lead epochs) is
//! shown in the set-up rows up to their last report and in the window's rows
//! from the first slot on: the totals are right, the set-up rows may show
//! part of the window's start as well. Paused time moves into the recorder
//! only just before a snapshot, and at the stop once the schedule has begun:
//! one moved earlier (as a restart's report did, or a stop before the first
//! slot, whose worker then began the schedule) waits there past the first
//! slot and lands set-up time in the window's first or last row (session 14
//! review; session 15, a stop racing the first slot). Nothing after the stop
//! counts: the paused time counts up to it. Regressions (session 13): a `rate=0` launch read `paused_s` 0 while its
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
    /// When the run stopped (pacer time): later pacer counts and changes are
    /// not the run's, and paused time counts up to here. Set by
    /// [`freeze`](Self::freeze).
    stopped: Option<Nanos>,
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
            stopped: None,
        }
    }

    /// A spec of `rate` ops/s (`None`: unpaced) was put in force at `at`
    /// (pacer time) outside a pause: at rate 0 the time from now on is paused
    /// time, until a rate above 0, and the pacer's slots forfeited meanwhile
    /// come out of its missed count as a pause's do.
    pub(crate) fn rate_set(&mut self, at: Nanos, rate: Option<f64>) {
        if self.stopped.is_some() {
            return;
        }
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
        if self.stopped.is_some() {
            return;
        }
        // A rate-0 stretch ends where the pause takes over (counted once).
        if let Some(since) = self.zero {
            self.zero_ended(since, at);
        }
        let slice = rate.and_then(|r| slice_of(r).or(self.slice));
        self.pause = Some((at, slice));
    }

    /// The pause under way ended at `at`.
    pub(crate) fn pause_ended(&mut self, at: Nanos) {
        if self.stopped.is_some() {
            return;
        }
        if let Some((since, slice)) = self.pause.take() {
            self.paused_done += at.saturating_sub(self.counted_from(since));
            self.forfeited(since, at, slice);
        }
    }

    /// [`report_until`](Self::report_until) now (the tests' shorthand).
    #[cfg(test)]
    pub(crate) fn report(&mut self, limiter: &Pacer, paced: bool) {
        self.report_until(limiter, paced, limiter.now());
    }

    /// Reports what is new since the last report into the recorder: the missed
    /// slots ([`report_slots`](Self::report_slots)) and the paused time up to
    /// `until` (pacer time; never past the stop), before the first slot too
    /// (the set-up rows show it). Call it only just before a snapshot, under the
    /// same lock as the schedule's start: paused time moved into the recorder
    /// waits there for the next snapshot, and if the first slot came first,
    /// that snapshot would hold set-up time in the window's first row and the
    /// totals. `until` is the snapshot's end, read at the same moment, so that
    /// a row holds no more paused time than its own length (the time the
    /// snapshot took to gather its other figures went into the row before the
    /// fix, and came off the next).
    pub(crate) fn report_until(&mut self, limiter: &Pacer, paced: bool, until: Nanos) {
        self.report_slots(limiter, paced);
        self.report_paused(until);
    }

    /// Moves the paused time up to `until` (pacer time; never past the stop)
    /// that is new since the last report into the recorder.
    fn report_paused(&mut self, until: Nanos) {
        let now = self.stopped.map_or(until, |at| until.min(at));
        let live =
            |since: Option<Nanos>| since.map_or(0, |s| now.saturating_sub(self.counted_from(s)));
        let paused = self.paused_done + live(self.pause.map(|p| p.0)) + live(self.zero);
        if paused > self.paused_reported {
            self.rec.paused(paused - self.paused_reported);
            self.paused_reported = paused;
        }
    }

    /// Reports the pacer's missed slots that are new since the last report, and
    /// not the paused time: what a `restart` needs before the pacer's count starts
    /// again (paused time does not depend on the pacer's count, and is reported
    /// only just before a snapshot, see [`report_until`](Self::report_until)).
    pub(crate) fn report_slots(&mut self, limiter: &Pacer, paced: bool) {
        if self.stopped.is_some() || !paced {
            return;
        }
        let now = limiter.now();
        let live = |since: Option<Nanos>, slice: Option<f64>| match (since, slice) {
            (Some(since), Some(s)) => now.saturating_sub(self.counted_from(since)) as f64 / s,
            _ => 0.0,
        };
        let live_slots = live(self.pause.map(|p| p.0), self.pause.and_then(|p| p.1));
        let zero_slots = live(self.zero, self.slice);
        let m = limiter.missed_slots();
        let pacer = m.count - self.baseline;
        let paused = if m.counts_pauses {
            let early: f64 = self
                .early
                .iter()
                .map(|(a, b, s)| b.saturating_sub(*a) as f64 / s)
                .sum();
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

    /// The pacer was re-anchored (a `restart` spec): what it counts from now on is
    /// new. Call [`report_slots`](Self::report_slots) just before the restart,
    /// and this just after: the pacer's count now is the baseline.
    pub(crate) fn restarted(&mut self, limiter: &Pacer) {
        if self.stopped.is_some() {
            return;
        }
        self.seen = 0;
        self.baseline = limiter.missed_slots().count;
        self.paused_slots = 0.0;
        self.early.clear();
        // A rate-0 stretch under way: its slots so far are the old schedule's
        // (in the baseline, or gone with a count that starts again), so its
        // slots count from here; its paused time so far stays paused time.
        if let Some(since) = self.zero {
            let now = limiter.now().max(since);
            self.paused_done += now.saturating_sub(self.counted_from(since));
            self.zero = Some(now);
        }
    }

    /// Re-anchors the pacer (`re_anchor` puts a `restart` spec in force) and
    /// counts from there: what the old schedule missed is reported first
    /// ([`report_slots`](Self::report_slots), not the paused time, which waits
    /// for the next snapshot), then the pacer's count is the baseline
    /// ([`restarted`](Self::restarted)).
    pub(crate) fn restart(&mut self, limiter: &Pacer, paced: bool, re_anchor: impl FnOnce()) {
        self.report_slots(limiter, paced);
        re_anchor();
        self.restarted(limiter);
    }

    /// The run stopped: the pacer's missed slots are reported now, and nothing
    /// it counts after; the paused time counts up to the stop, and a pause or
    /// rate-0 stretch under way ends there.
    ///
    /// Once the schedule has begun, the paused time is moved into the recorder
    /// here too. Before its first slot it waits for the next report (the one
    /// just before the last snapshot, under the lock the schedule's start
    /// takes): a worker whose slot came before the stop may still begin the
    /// schedule after it, and the set-up's paused time moved here would wait
    /// in the recorder past the first slot and land in the window's last row
    /// (`a_stop_that_races_the_first_slot_puts_no_set_up_paused_time_in_the_last_row`).
    pub(crate) fn freeze(&mut self, limiter: &Pacer, paced: bool) {
        if self.stopped.is_some() {
            return;
        }
        let now = limiter.now();
        self.report_slots(limiter, paced);
        self.stopped = Some(now);
        if self.window.is_some() {
            self.report_paused(now);
        }
    }
}

/// The slice of `rate` ops/s in ns; `None` at rate 0 (no slots).
fn slice_of(rate: f64) -> Option<f64> {
    (rate > 0.0 && rate.is_finite()).then(|| 1e9 / rate)
}

#[cfg(all(test, not(loom)))]
#[path = "missed_tests.rs"]
mod tests;
