//! The schedule's start and the run's duration, run by the motors before each
//! op (the deadline's checks, the first op's start of the schedule) and by the
//! deadline's timer (the run's time is up).

#[allow(clippy::wildcard_imports)]
use super::*;

impl Shared {
    /// Asks the clock to end the run at `deadline`: the real clock's timer thread,
    /// or the manual clock when it is moved there (so a test's run ends at exactly
    /// its deadline). The waker holds the run weakly: a run that ended first is
    /// simply gone when it fires. A `fallback` waker does nothing once the
    /// schedule has begun.
    pub(super) fn arm_deadline(&self, deadline: Nanos, fallback: bool) {
        let waker = std::task::Waker::from(Arc::new(DeadlineWaker {
            run: self.me.clone(),
            fallback,
        }));
        self.clock.wake_at(deadline, &self.pacer.waiting(), &waker);
    }

    /// When the run's duration is over, on its clock: `None` without a duration
    /// or before the schedule began.
    pub(crate) fn deadline(&self) -> Option<Nanos> {
        Some(self.deadline.load(Ordering::Relaxed)).filter(|&d| d != NO_DEADLINE)
    }

    /// [`deadline`](Self::deadline) on the pacer's time base: the motors check
    /// it before each op.
    #[inline]
    pub(crate) fn pacer_deadline(&self) -> Option<Nanos> {
        Some(self.pacer_deadline.load(Ordering::Relaxed)).filter(|&d| d != NO_DEADLINE)
    }

    /// Whether the run's duration ran out, counted from the launch, before its
    /// schedule began (a set-up longer than the duration): the launch's
    /// fallback deadline has passed, so the first op must not start. Its timer
    /// ends the run too, but may be delivered after the worker got here (on the
    /// manual clock, by the thread that moved the clock: regression, session
    /// 13, `tests/duration.rs` ran 200 ops in 1 of 6 runs). Once the schedule
    /// began, one `Relaxed` load.
    #[inline]
    pub(crate) fn time_up_before_begun(&self) -> bool {
        !self.schedule_begun.load(Ordering::Relaxed)
            && self
                .config
                .duration
                .is_some_and(|d| self.clock.now() >= self.started_at.saturating_add(d))
    }

    /// An op of slot `slot` (on the pacer's time; `None` unpaced: now) is about
    /// to start. The first one marks the schedule's start: the metrics' window,
    /// and so every rate, begins at its slot, and the time before it (the
    /// workers opening their connections) is the run's set-up
    /// ([`Snapshot::setup_nanos`](crate::Snapshot::setup_nanos)), not time the
    /// schedule ran (issue 21's done-when run counted 74 ms of connecting as
    /// schedule time). A `duration` counts from the same point (before, a
    /// 10 s run whose 1000 connections took 300 ms ran 9.7 s of schedule).
    /// Afterwards one `Relaxed` load.
    #[inline]
    pub(crate) fn schedule_began(&self, slot: Option<i64>) {
        if self.schedule_begun.load(Ordering::Relaxed)
            || self.schedule_begun.swap(true, Ordering::Relaxed)
        {
            return;
        }
        let now = self.clock.now();
        let pacer_now = self.pacer.now();
        let (at, pacer_at) = match slot {
            Some(s) => {
                // No earlier than the launch: a first slot already behind the
                // clock (a shared schedule joined late) would otherwise start
                // the duration, and end the run, before it began.
                let since_launch = i128::from(now.saturating_sub(self.started_at));
                let late = (i128::from(pacer_now) - i128::from(s)).clamp(0, since_launch);
                (
                    (i128::from(now) - late) as Nanos,
                    (i128::from(pacer_now) - late).max(0) as Nanos,
                )
            }
            None => (now, pacer_now),
        };
        // Paused time counts from here too: a rate-0 stretch before (a launch
        // at rate 0) is set-up, not paused time. Under `missed`, as a
        // snapshot's report and its snapshot are (`report_missed`).
        let mut missed = threads::lock(&self.missed);
        self.metrics.schedule_started(at);
        missed.schedule_began(pacer_at);
        drop(missed);
        if let Some(d) = self.config.duration {
            let end = at.saturating_add(d);
            self.pacer_deadline
                .store(pacer_at.saturating_add(d), Ordering::Relaxed);
            self.deadline.store(end, Ordering::Relaxed);
            self.arm_deadline(end, false);
        }
    }

    /// The run's time is up: every motor leaves after at most the op it is in, and
    /// the run ends as [`Outcome::Elapsed`] (unless something ended it first).
    pub(crate) fn elapse(&self) {
        let mut m = threads::lock(&self.motors);
        let at = self.clock.now();
        if self.transition(&mut m, Ask::Elapse) {
            let what = match self.config.duration {
                Some(d) if self.deadline().is_some_and(|end| at >= end) => {
                    format!("ran its duration ({:?})", crate::nanos::to_duration(d))
                }
                _ => "its time is up".to_string(),
            };
            self.metrics.mark(at, Event::Note(what));
        }
    }
}

/// Ends a run at its deadline (see [`Shared::arm_deadline`]).
struct DeadlineWaker {
    run: std::sync::Weak<Shared>,
    /// The launch's fallback: does nothing once the schedule began.
    fallback: bool,
}

impl std::task::Wake for DeadlineWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(shared) = self.run.upgrade() {
            if self.fallback && shared.schedule_begun.load(Ordering::Relaxed) {
                return;
            }
            shared.elapse();
        }
    }
}
