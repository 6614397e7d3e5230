//! The pacer's missed slots and the run's paused time, moved into the metrics at
//! each snapshot.
//!
//! The pacer counts a pause's length as forfeited schedule time, so its
//! `missed_slots` grows by `pause / slice` while paused. That is not overload: the
//! engine knows when it paused and at which rate, takes those slots back out, and
//! reports the paused time on its own ([`Snapshot::paused_nanos`]). A `restart`
//! spec re-anchors the pacer; the engine reports what the old schedule missed
//! first, then counts from the pacer's count right after the restart, its baseline
//! ([`Missed::restarted`]): the local pacer's count starts again from zero, a shared
//! schedule's goes on, and either is counted once.
//!
//!
//! A rate of 0 is a pause too (`RateSpec::paused`; the verdict says `paused`, and
//! `paceline_paused` reads 1): the time a rate-0 spec is in force outside a
//! control pause (an activity launched at `rate=0`, a rate set to 0 live) is
//! paused time, counted once where it meets a control pause
//! ([`Missed::rate_set`]). Regression (session 13): a `rate=0` launch read
//! `paused_s` 0 while its verdict said "paused".
//!
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
    /// Slots of finished pauses since the pacer's last restart.
    paused_slots: f64,
    /// Paused time of finished pauses, the whole run.
    paused_done: Nanos,
    /// Paused time already reported.
    paused_reported: Nanos,
    /// The pause under way: when it began (pacer time) and the slice before it, in
    /// ns (`None` when unpaced: no slots are missed).
    pause: Option<(Nanos, Option<f64>)>,
    /// Since when (pacer time) a rate-0 spec has been in force outside a pause.
    zero: Option<Nanos>,
    /// Set once the run stops: later pacer counts are not the run's.
    frozen: bool,
}

impl Missed {
    /// `zero`: the run starts at rate 0 at that time (pacer time).
    pub(crate) fn new(rec: Recorder, zero: Option<Nanos>) -> Self {
        Self {
            rec,
            seen: 0,
            baseline: 0.0,
            paused_slots: 0.0,
            paused_done: 0,
            paused_reported: 0,
            pause: None,
            zero,
            frozen: false,
        }
    }

    /// A spec was put in force at `at` (pacer time) outside a pause: at rate 0
    /// (`zero`) the time from now on is paused time, until a rate above 0.
    pub(crate) fn rate_set(&mut self, at: Nanos, zero: bool) {
        match (self.zero, zero) {
            (None, true) => self.zero = Some(at),
            (Some(since), false) => {
                self.paused_done += at.saturating_sub(since);
                self.zero = None;
            }
            _ => {}
        }
    }

    /// A pause began at `at` (pacer time), at `rate` ops/s (`None`: unpaced).
    pub(crate) fn pause_began(&mut self, at: Nanos, rate: Option<f64>) {
        // A rate-0 stretch ends where the pause takes over (counted once).
        self.rate_set(at, false);
        let slice = rate.filter(|r| *r > 0.0).map(|r| 1e9 / r);
        self.pause = Some((at, slice));
    }

    /// The pause under way ended at `at`.
    pub(crate) fn pause_ended(&mut self, at: Nanos) {
        if let Some((since, slice)) = self.pause.take() {
            let len = at.saturating_sub(since);
            self.paused_done += len;
            if let Some(s) = slice {
                self.paused_slots += len as f64 / s;
            }
        }
    }

    /// Reports what is new since the last report into the recorder.
    pub(crate) fn report(&mut self, limiter: &Pacer, paced: bool) {
        if self.frozen {
            return;
        }
        let now = limiter.now();
        let (live_len, live_slots) = match self.pause {
            Some((since, slice)) => {
                let len = now.saturating_sub(since);
                (len, slice.map_or(0.0, |s| len as f64 / s))
            }
            None => (0, 0.0),
        };
        if paced {
            let m = limiter.missed_slots();
            let pacer = m.count - self.baseline;
            let paused = if m.counts_pauses {
                self.paused_slots + live_slots
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
        let zero_len = self.zero.map_or(0, |since| now.saturating_sub(since));
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
    }

    /// The run stopped: report the rest and nothing after.
    pub(crate) fn freeze(&mut self, limiter: &Pacer, paced: bool) {
        self.pause_ended(limiter.now());
        self.rate_set(limiter.now(), false);
        self.report(limiter, paced);
        self.frozen = true;
    }
}
