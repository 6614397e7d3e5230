//! The control operations the [`Control`](crate::engine::Control) handle
//! forwards to, run on the caller's thread (an embedding program, the control
//! endpoint, a scenario, a ramp's thread): rate, ramp, threads, concurrency,
//! pause, resume, stop, and the readings of the run's state.

#[allow(clippy::wildcard_imports)]
use super::*;

impl Shared {
    pub(crate) fn is_finished(&self) -> bool {
        threads::lock(&self.motors).phase.is_finished()
    }

    /// The phase, as a copy.
    pub(crate) fn phase(&self) -> Phase {
        threads::lock(&self.motors).phase.clone()
    }

    pub(crate) fn is_paced(&self) -> bool {
        self.paced.load(Ordering::Relaxed)
    }

    /// Cycles run so far (including ones that ended in a counted error).
    pub(crate) fn completed(&self) -> u64 {
        let m = threads::lock(&self.motors);
        let live: u64 = m.list.iter().map(|e| e.done.load(Ordering::Relaxed)).sum();
        live + self.departed.load(Ordering::Relaxed)
    }

    pub(crate) fn threads(&self) -> (usize, usize) {
        let m = threads::lock(&self.motors);
        (m.target, m.list.len())
    }

    /// The spec in force, or `None` when unpaced.
    pub(crate) fn spec(&self) -> Option<RateSpec> {
        self.is_paced().then(|| self.pacer.spec())
    }

    /// The rate shown in events: 0 when paused, infinity when unpaced.
    pub(super) fn shown_rate(&self) -> f64 {
        if self.is_paced() {
            self.pacer.spec().rate()
        } else {
            f64::INFINITY
        }
    }

    /// Applies `spec` now, or keeps it for resume while paused.
    ///
    /// While paused the change is marked as the note `rate R/s kept for the
    /// resume`, never as a rate event: the pause goes on, and the timeline's
    /// rate events say when the schedule's rate changed (audit p17, H3: the
    /// mark `rate 0/s -> 50/s` at a `PUT` while paused was read as the
    /// resume, counting the rest of the pause at 50/s).
    pub(super) fn apply_rate(&self, spec: RateSpec, m: &mut Motors, event: bool) {
        let from = self.shown_rate();
        let paused = matches!(m.phase, Phase::Paused { .. });
        self.apply_rate_quietly(spec, m, event);
        if event {
            let mark = if paused {
                Event::Note(format!(
                    "rate {}/s {}",
                    spec.rate(),
                    crate::engine::rates::KEPT_FOR_RESUME
                ))
            } else {
                Event::Rate {
                    from,
                    to: spec.rate(),
                }
            };
            self.metrics.mark(self.clock.now(), mark);
        }
    }

    /// Puts the spec kept while paused into force at the resume, with the
    /// scope's note when it moves the schedule to another scope: the note is
    /// marked when the scope changes, at the resume, not when the spec was set
    /// (audit p17, H3: no note at all, so the reports applied the end's scope
    /// to the whole run).
    ///
    /// A change of scope is applied as the resume in the old scope, then the
    /// change: the old scope's schedules come back from the pause moved by its
    /// length (a caller that waited out the pause in one of them gets a slot
    /// from now, not the one the pause voided), and the new scope's take up as
    /// on a change made while running. Put in force in one step, a worker that
    /// slept in the old scope's schedule through the pause got its pre-pause
    /// slot: a 2 s pause read as one op's 2 s wait (audit p17, H3).
    pub(super) fn resume_spec(&self, spec: RateSpec) {
        let before = self.pacer.spec().scope_value();
        let after = spec.scope_value();
        if before != after {
            self.pacer
                .set_spec(spec.scope(before).verb(Verb::Configure));
        }
        self.pacer.set_spec(spec.verb(Verb::Configure));
        self.note_scope(before, after);
    }

    /// Marks `scope A -> B` when the scope changed.
    fn note_scope(&self, before: crate::pace::Scope, after: crate::pace::Scope) {
        if before == after {
            return;
        }
        // The reports' mean target integrates the thread count by scope.
        let name = |s: crate::pace::Scope| match s {
            crate::pace::Scope::Activity => "activity",
            crate::pace::Scope::Thread => "thread",
        };
        let note = format!("scope {} -> {}", name(before), name(after));
        self.metrics.mark(self.clock.now(), Event::Note(note));
    }

    /// [`apply_rate`](Self::apply_rate) without the timeline's mark; `event` still
    /// marks the change on a shared schedule's other processes.
    pub(super) fn apply_rate_quietly(&self, spec: RateSpec, m: &mut Motors, event: bool) {
        let scope_before = self.is_paced().then(|| self.pacer.spec().scope_value());
        self.apply_spec(spec, m, event);
        let scope_after = self.pacer.spec().scope_value();
        if let Some(before) = scope_before {
            self.note_scope(before, scope_after);
        }
    }

    /// [`apply_rate_quietly`](Self::apply_rate_quietly) but for the scope's note.
    fn apply_spec(&self, spec: RateSpec, m: &mut Motors, event: bool) {
        if let Phase::Paused { resume, .. } = &mut m.phase {
            // Remember it for resume; the pacer stays at rate 0.
            *resume = Some(spec);
        } else if self.is_paced() && spec.verb_value() != Verb::Restart {
            // A ramp's steps are not events here, nor on the other processes of a
            // shared schedule.
            self.pacer.set_spec_marked(spec, event);
            threads::lock(&self.missed).rate_set(self.pacer.now(), Some(spec.rate()));
        } else {
            // A restart, or from unpaced to paced (anchored now): the pacer's
            // counts start again, so report what the old schedule missed first.
            let mut missed = threads::lock(&self.missed);
            missed.restart(&self.pacer, self.is_paced(), || {
                self.pacer.set_spec(spec.verb(Verb::Restart))
            });
            missed.rate_set(self.pacer.now(), Some(spec.rate()));
            self.paced.store(true, Ordering::Relaxed);
        }
    }

    pub(crate) fn set_rate(&self, spec: RateSpec) -> Result<(), ControlError> {
        let mut m = self.open()?;
        m.ramp_generation += 1;
        self.apply_rate(spec, &mut m, true);
        Ok(())
    }

    /// Starts a ramp from the current rate to `to` over `over`; returns the ramp's
    /// generation, the rate it starts from and when it starts, for the ramp thread.
    pub(crate) fn begin_ramp(
        &self,
        to: RateSpec,
        over: Nanos,
    ) -> Result<(u64, f64, Nanos), ControlError> {
        let t0 = self.clock.now();
        if over > MAX_RAMP || t0.checked_add(over).is_none() {
            return Err(ControlError::BadValue {
                why: format!(
                    "a ramp over {}s is too long to time: ramp over at most 100 years \
                     (3153600000s), such as `{} over 30m`",
                    over / crate::nanos::NANOS_PER_SEC,
                    to.rate()
                ),
            });
        }
        let mut m = self.open()?;
        m.ramp_generation += 1;
        let from = if self.is_paced() {
            match &m.phase {
                Phase::Paused {
                    resume: Some(s), ..
                } => s.rate(),
                _ => self.pacer.spec().rate(),
            }
        } else {
            // An unpaced activity has no rate to ramp from: start at the target's
            // first step (the ramp's own 1 % point).
            to.rate() / 100.0
        };
        self.metrics.mark(
            t0,
            Event::Ramp {
                to: to.rate(),
                over,
            },
        );
        Ok((m.ramp_generation, from, t0))
    }

    /// One ramp step: applies `spec` unless the ramp was cancelled. Returns whether
    /// the ramp is still current.
    pub(crate) fn ramp_step(&self, generation: u64, spec: RateSpec) -> bool {
        let mut m = threads::lock(&self.motors);
        if m.ramp_generation != generation || !matches!(m.phase.mirror(), RUNNING | PAUSED) {
            return false;
        }
        self.apply_rate(spec, &mut m, false);
        true
    }

    pub(crate) fn ramp_done(&self, generation: u64, to: RateSpec) {
        let mut m = threads::lock(&self.motors);
        if m.ramp_generation == generation && matches!(m.phase.mirror(), RUNNING | PAUSED) {
            // The end of a ramp is its own event, once: not a rate change from
            // the last step's raw float (issue 24, item 15: `rate
            // 19966.125139163058 -> 20000`).
            self.apply_rate_quietly(to, &mut m, true);
            self.metrics
                .mark(self.clock.now(), Event::Note(RAMP_DONE.to_string()));
        }
    }

    pub(crate) fn set_threads(self: &Arc<Self>, n: usize) -> Result<(), ControlError> {
        let mut m = self.open()?;
        if m.phase.mirror() == STOPPING {
            return Err(self.finished());
        }
        // As the load refuses `concurrency` below `threads` (audit L8: a change
        // of threads above the cap was taken, and the summary read "8 threads
        // ... at most 4 of concurrency 4").
        #[cfg(not(loom))]
        if let Some(cap) = self
            .flight
            .given_limit()
            .filter(|&c| self.async_mode && n as u64 > c)
        {
            return Err(ControlError::BadValue {
                why: format!(
                    "{n} threads is above concurrency {cap}, the most ops in flight: each \
                     thread holds at least one op in flight; give at most {cap} threads, or \
                     raise concurrency to {n} or more first"
                ),
            });
        }
        let from = m.target;
        m.target = n;
        #[cfg(not(loom))]
        self.flight.set_threads(n as u64);
        if from != n {
            self.metrics
                .mark(self.clock.now(), Event::Threads { from, to: n });
        }
        // Retire the newest active motors first, or start new ones.
        if m.active > n {
            let mut excess = m.active - n;
            for e in m.list.iter().rev() {
                if excess == 0 {
                    break;
                }
                if e.is_active() {
                    e.retire.store(true, Ordering::Relaxed);
                    excess -= 1;
                }
            }
            m.active = n;
            // Wake motors paused at a checkpoint, and those blocked by the pause in
            // the pacer, so retired ones leave now.
            self.signal.notify();
            self.pacer.wake();
            let exited = Self::take_exited(&mut m);
            drop(m);
            join_all(exited);
            Ok(())
        } else {
            if self.input.is_dry() {
                // Every cycle is handed out: a new motor would find nothing to do
                // and leave at once. The motors that hold cycles run them (a retiring
                // one runs on when no active one is left, see `checkpoint`). Spawning
                // here let a client that kept changing the thread count keep the run
                // from ever finishing.
                let exited = Self::take_exited(&mut m);
                drop(m);
                join_all(exited);
                return Ok(());
            }
            let more = n - m.active;
            let todo = Self::reserve(&mut m, more);
            let exited = Self::take_exited(&mut m);
            drop(m);
            join_all(exited);
            self.spawn_reserved(todo)
                .map_err(|message| ControlError::Spawn { message })
        }
    }

    /// Sets the most ops in flight of an async run (see `Control::set_concurrency`).
    #[cfg(not(loom))]
    pub(crate) fn set_concurrency(&self, n: usize) -> Result<(), ControlError> {
        let m = self.open()?;
        if !self.async_mode {
            return Err(ControlError::BadValue {
                why: format!(
                    "activity `{}` runs one op per thread (its workload has no async runner): \
                     change threads instead",
                    self.alias
                ),
            });
        }
        if let Err(why) = crate::engine::config::check_concurrency(n, m.target) {
            return Err(ControlError::BadValue { why });
        }
        let from = self.flight.set_limit(n as u64);
        if from != n as u64 {
            self.metrics.mark(
                self.clock.now(),
                Event::Note(format!("concurrency {from} -> {n}")),
            );
        }
        // Workers waiting at the cap look again within their stop poll; wake the
        // ones paused or blocked in the pacer too.
        self.signal.notify();
        Ok(())
    }

    /// The worker threads' run-queue delay and runs since the last call (on the
    /// real clock; `None` on another, whose readings are not the machine's time).
    pub(crate) fn run_queue_delta(&self) -> Option<crate::engine::sched::SchedCounts> {
        threads::lock(self.worker_sched.as_ref()?).take()
    }

    /// The calling thread is one of the run's workers (its run-queue delay
    /// counts) until [`worker_left`](Self::worker_left).
    pub(crate) fn worker_joined(&self) {
        if let Some(b) = &self.worker_sched {
            threads::lock(b).join();
        }
    }

    /// The calling worker thread leaves.
    pub(crate) fn worker_left(&self) {
        if let Some(b) = &self.worker_sched {
            threads::lock(b).leave();
        }
    }

    /// The cgroup's CPU throttling since the last call (real clock only).
    pub(crate) fn throttle_delta(&self) -> Option<crate::metrics::Throttling> {
        threads::lock(&self.throttle).as_mut()?.lap()
    }

    /// How long the slot source's store did not answer since the last call.
    pub(crate) fn outage_delta(&self) -> Option<Nanos> {
        let mut seen = threads::lock(&self.outage_seen);
        let now = self.pacer.outage_nanos()?;
        let last = seen.replace(now).unwrap_or(0);
        Some(now.saturating_sub(last))
    }

    /// Whether the run's workers are async ones.
    pub(crate) fn is_async(&self) -> bool {
        self.async_mode
    }

    pub(crate) fn pause(&self) -> Result<(), ControlError> {
        let mut m = self.open()?;
        let ask = Ask::Pause {
            resume: self.spec(),
            at: self.pacer.now(),
        };
        self.transition(&mut m, ask);
        Ok(())
    }

    pub(crate) fn resume(&self) -> Result<(), ControlError> {
        let mut m = self.open()?;
        self.transition(&mut m, Ask::Resume);
        Ok(())
    }

    /// Stops the activity in this process: every motor leaves after at most the op
    /// it is in.
    pub(crate) fn stop_here(&self) {
        let mut m = threads::lock(&self.motors);
        self.transition(&mut m, Ask::Stop);
    }

    /// A failure that stops the activity (the first cause of a stop wins); `kind`
    /// is the error kind when an op's error caused it.
    pub(crate) fn fail(&self, why: String, kind: Option<&str>) {
        let mut m = threads::lock(&self.motors);
        let kind = kind.map(str::to_string);
        self.transition(&mut m, Ask::Fail { why, kind });
    }

    /// The motors, locked, while the run has not finished; a control verb on a
    /// finished run gets [`ControlError::Finished`].
    pub(super) fn open(&self) -> Result<threads::MutexGuard<'_, Motors>, ControlError> {
        let m = threads::lock(&self.motors);
        if m.phase.is_finished() {
            return Err(self.finished());
        }
        Ok(m)
    }

    /// The refusal of a control verb once the run has finished.
    pub(super) fn finished(&self) -> ControlError {
        ControlError::Finished {
            alias: self.alias.to_string(),
        }
    }

    /// Blocks until the run ends or `timeout` passes; the outcome if it ended.
    pub(crate) fn wait(&self, timeout: Option<Duration>) -> Option<Outcome> {
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        let mut m = threads::lock(&self.motors);
        loop {
            if let Some(o) = m.phase.outcome().cloned() {
                let handles: Vec<_> = m.finished.drain(..).collect();
                drop(m);
                join_all(handles);
                self.leave_schedule();
                return Some(o);
            }
            m = match deadline {
                None => self.ended.wait(m).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = std::time::Instant::now();
                    if now >= d {
                        return None;
                    }
                    self.ended
                        .wait_timeout(m, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        }
    }

    /// When the run finished (on the engine's clock), or `None` while it runs.
    pub(crate) fn finished_at(&self) -> Option<Nanos> {
        match threads::lock(&self.motors).phase {
            Phase::Finished { at, .. } => Some(at),
            _ => None,
        }
    }

    /// Moves the pacer's newly missed slots and the paused time into the metrics
    /// (just before a snapshot); hold what it returns until the snapshot is
    /// taken, so that the schedule cannot begin between the two (its paused
    /// time before the first slot would land in the window's first row:
    /// [`schedule_began`](Self::schedule_began) takes the same lock). Take no
    /// motors lock while holding it.
    ///
    /// Returns the clock's time too, read with the pacer's up to which the
    /// paused time is reported: the snapshot ends there, so its row holds no
    /// more paused time than its own length.
    pub(crate) fn report_missed(&self) -> (threads::MutexGuard<'_, Missed>, Nanos) {
        let mut missed = threads::lock(&self.missed);
        let now = self.clock.now();
        missed.report_until(&self.pacer, self.is_paced(), self.pacer.now());
        (missed, now)
    }

    /// Handles of motors that left and were not joined yet (for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn unjoined(&self) -> usize {
        threads::lock(&self.motors).finished.len()
    }

    /// Handles of motors that have left and whose threads have exited.
    pub(crate) fn take_exited(m: &mut Motors) -> Vec<JoinHandle<()>> {
        let (done, running): (Vec<_>, Vec<_>) =
            m.finished.drain(..).partition(JoinHandle::is_finished);
        m.finished = running;
        done
    }
}
