//! The run's state machine with its side effects: every change of phase goes
//! through [`Shared::transition`] under the motors lock, whoever asks for it (a
//! control call, a motor that finds the input dry or fails, the deadline's
//! timer). The decisions themselves are `phase::next`'s; this applies them.

#[allow(clippy::wildcard_imports)]
use super::*;

impl Shared {
    /// Applies `ask` to the phase under the motors lock, with its side effects;
    /// returns whether the phase changed. The only writer of `phase` and `state`.
    /// [`transition`](Self::transition) for a change that came from the shared
    /// schedule.
    pub(crate) fn transition_remote(&self, m: &mut Motors, ask: Ask) -> bool {
        self.transition(m, ask)
    }

    /// A spec of `rate` ops/s (0, or above) came into force now outside a pause
    /// (a change made on another process of a shared schedule): the rate-0
    /// stretch of the paused time begins or ends. Takes `missed` (after motors).
    pub(crate) fn rate_set_missed(&self, rate: f64) {
        threads::lock(&self.missed).rate_set(self.pacer.now(), Some(rate));
    }

    /// The pacer was re-anchored: report what the old schedule missed, then count
    /// from zero.
    pub(crate) fn restart_missed(&self) {
        threads::lock(&self.missed).restart(&self.pacer, self.is_paced(), || {});
    }

    pub(super) fn transition(&self, m: &mut Motors, ask: Ask) -> bool {
        let Some(to) = phase::next(&m.phase, ask) else {
            return false;
        };
        let from = std::mem::replace(&mut m.phase, to);
        self.state.store(m.phase.mirror(), Ordering::Relaxed);
        let now = self.clock.now();
        match (&from, &m.phase) {
            (Phase::Running, Phase::Paused { resume, since }) => {
                m.ramp_generation += 1;
                let shown = self.shown_rate();
                threads::lock(&self.missed).pause_began(*since, resume.map(|s| s.rate()));
                if self.is_paced() {
                    // A pause is never a restart, whatever verb the spec in force
                    // carries: the backlog, lag and counts stay.
                    let paused = self
                        .pacer
                        .spec()
                        .with_rate(0.0)
                        .unwrap_or(RateSpec::paused())
                        .verb(Verb::Start);
                    self.pacer.set_spec(paused);
                }
                self.signal.notify();
                self.metrics.mark(
                    now,
                    Event::Rate {
                        from: shown,
                        to: 0.0,
                    },
                );
                self.metrics
                    .mark(now, Event::Note(crate::engine::rates::PAUSED_NOTE.into()));
            }
            (Phase::Paused { resume, .. }, Phase::Running) => {
                let mut missed = threads::lock(&self.missed);
                missed.pause_ended(self.pacer.now());
                // Resumed at rate 0: still paused time, as the verdict says.
                missed.rate_set(self.pacer.now(), resume.map(|s| s.rate()));
                if let Some(spec) = *resume {
                    if self.is_paced() {
                        self.resume_spec(spec);
                    } else {
                        // From unpaced to paced: anchor the schedule now.
                        missed.restart(&self.pacer, false, || {
                            self.pacer.set_spec(spec.verb(Verb::Restart))
                        });
                        self.paced.store(true, Ordering::Relaxed);
                    }
                }
                drop(missed);
                self.signal.notify();
                self.metrics.mark(
                    now,
                    Event::Rate {
                        from: 0.0,
                        to: self.shown_rate(),
                    },
                );
                self.metrics
                    .mark(now, Event::Note(crate::engine::rates::RESUMED_NOTE.into()));
            }
            (Phase::Running | Phase::Paused { .. }, Phase::Stopping { cause }) => {
                // The schedule ends here with cycles left (at its deadline when
                // the duration ended it): the achieved rate spans to it.
                let end = match cause {
                    phase::Cause::Elapsed => self.deadline().filter(|d| *d <= now),
                    _ => None,
                };
                self.metrics.schedule_ended(end.unwrap_or(now));
                m.ramp_generation += 1;
                self.halt();
                self.drained_if_empty(m);
            }
            (_, Phase::Finished { outcome, .. }) => {
                if matches!(from, Phase::Running | Phase::Paused { .. })
                    && *outcome != Outcome::Completed
                {
                    self.metrics.schedule_ended(now);
                }
                m.ramp_generation += 1;
                self.halt();
                self.metrics.mark(now, Event::Stopped);
                self.ended.notify_all();
            }
            _ => {}
        }
        true
    }

    /// Ends the run if no motor is left (the last one left, or none ever started).
    pub(crate) fn drained_if_empty(&self, m: &mut Motors) {
        if m.list.is_empty() {
            if let Some(why) = self.pacer.lost() {
                // The motors left because the shared schedule was lost, not
                // because its cycles ran out.
                let kind = Some("shared-schedule".to_string());
                self.transition(m, Ask::Fail { why, kind });
            }
            let dry = self.input.is_dry() && !self.abandoned.load(Ordering::Relaxed);
            let at = self.clock.now();
            self.transition(m, Ask::Drained { dry, at });
        }
    }

    /// Tells motors, ramps, sleeping ops and the pacer to stop; closes the pacer's
    /// accounting for the run.
    pub(super) fn halt(&self) {
        threads::lock(&self.missed).freeze(&self.pacer, self.is_paced());
        self.pacer.stop();
        self.signal.stop();
    }
}
