//! One running activity: its shared state, its run state machine and the control
//! operations the [`Control`](super::Control) handle forwards to. The motors'
//! loop, and the `Shared` methods only motors call, are in `motor.rs`.
//!
//! # Ground rules
//!
//! - **Motors lock** (`motors`): the list of motors, the live and active counts,
//!   the thread target and the run's [`Phase`]. Every change of phase goes through
//!   [`Shared::transition`] under this lock, which applies the decision of
//!   [`phase::next`] and its side effects in one place. Every change of thread
//!   count, every give-back of a stride and every decision to leave because the
//!   input is dry is made under it too, so a stride given back by a leaving motor
//!   is always seen by a motor that is still live (see [`Shared::leave_dry`] and
//!   `Shared::checkpoint`).
//! - **Hot path**: a motor reads three words per op, all `Relaxed`: its own
//!   `retire` flag, `state` (the phase's mirror byte, written only by
//!   `transition`) and `paced`. They carry no data; they only send the motor to
//!   `Shared::checkpoint`, which takes the motors lock, and every decision there
//!   is made under that lock. A motor that reads a stale value runs at most one
//!   more op before it sees the new one (the next load): "stop within one op".
//! - **Progress counters**: each motor owns one padded `AtomicU64` of cycles run; it
//!   alone writes it (a Relaxed load and store, no RMW), readers sum them Relaxed.
//!   A departing motor adds its count to `departed` under the motors lock before
//!   leaving the list, so a reader holding that lock never counts it twice.
//! - **Two signals**: the engine's `signal` wakes motors waiting at a checkpoint
//!   while paused (pause, resume, a thread change, stop), ramp threads between
//!   steps, and ops sleeping through [`WorkerContext`](super::WorkerContext) (stop
//!   only). The pacer has its own signal, which wakes motors blocked in
//!   `acquire` (a spec change, stop). A motor reads the engine signal's generation
//!   *before* re-checking the state, so a change made between the two wakes it.
//! - **Lock order**: motors, then `missed`, then the pacer's own locks.

#[cfg(not(loom))]
use super::async_motor::{AsyncMotor, InFlight, idle::DrivingClock};
use super::config::ActivityConfig;
use super::error::ControlError;
use super::error::EngineError;
use super::input::CycleInput;
use super::missed::Missed;
use super::motor::Motor;
use super::phase::{self, Ask, PAUSED, Phase, RUNNING, STOPPING};
use super::seam::{JoinRequest, RemoteSender};
use super::source::{Input, Pacer};
use super::workload::Workload;
use crate::clock::{Clock, Signal, Waiting};
use crate::metrics::{Event, Metrics};
use crate::nanos::Nanos;
use crate::pace::{RateLimiter, RateSpec, Verb};
use crate::sync::threads::{self, Arc, AtomicBool, AtomicU8, AtomicU64, Condvar, Mutex, Ordering};
use crossbeam_utils::CachePadded;
use std::thread::JoinHandle;
use std::time::Duration;

/// The note a ramp's end marks in the timeline, once (the rate it reached is the
/// ramp's own `to`).
pub(crate) const RAMP_DONE: &str = "ramp done";

/// The longest ramp: 100 years, in nanoseconds (a ramp's end must fit the clock).
const MAX_RAMP: Nanos = 100 * 365 * 24 * 3600 * crate::nanos::NANOS_PER_SEC;

/// How a run ended.
///
/// ```
/// assert_eq!(paceline::Outcome::Completed.to_string(), "completed");
/// assert_eq!(paceline::Outcome::Elapsed.to_string(), "ran its duration");
/// assert_eq!(paceline::Outcome::Failed("cycle 3: boom".into()).to_string(), "failed: cycle 3: boom");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every cycle ran.
    Completed,
    /// [`Control::stop`](super::Control::stop) ended it early.
    Stopped,
    /// It ran for its [`duration`](super::ActivityConfig::duration) (or was told its
    /// time was up, [`Control::expire`](super::Control::expire)) and ended by
    /// itself: a time-boxed run that did what it was asked.
    Elapsed,
    /// An error stopped it (the error policy said so, or a worker could not start);
    /// the message names the cycle and the error.
    Failed(String),
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Completed => f.write_str("completed"),
            Self::Stopped => f.write_str("stopped"),
            Self::Elapsed => f.write_str("ran its duration"),
            Self::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

/// One motor's entry in the list.
pub(crate) struct MotorEntry {
    pub(crate) index: usize,
    retire: Arc<AtomicBool>,
    pub(crate) done: Arc<CachePadded<AtomicU64>>,
    /// `None` until its spawner, which starts threads outside the lock, stores it.
    pub(crate) handle: Option<JoinHandle<()>>,
    /// Decided to leave (input dry, or retired and gave its stride back): no
    /// longer counted in `active`.
    pub(crate) leaving: bool,
}

impl MotorEntry {
    pub(crate) fn is_active(&self) -> bool {
        !self.leaving && !self.retire.load(Ordering::Relaxed)
    }
}

/// Everything the motors lock guards.
pub(crate) struct Motors {
    pub(crate) list: Vec<MotorEntry>,
    /// Motors that are live (or being started) and not asked to retire.
    pub(crate) active: usize,
    /// The thread count asked for.
    target: usize,
    next_index: usize,
    /// Where the run stands; changed only by [`Shared::transition`].
    pub(crate) phase: Phase,
    /// Handles of motors that left and may not have exited yet.
    pub(crate) finished: Vec<JoinHandle<()>>,
    /// Bumped to cancel a running ramp.
    ramp_generation: u64,
}

/// The state every motor and control handle of one activity shares.
pub(crate) struct Shared {
    pub(crate) config: ActivityConfig,
    pub(crate) alias: Arc<str>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) pacer: Pacer,
    pub(crate) paced: AtomicBool,
    /// The phase's mirror for the hot path ([`Phase::mirror`]).
    pub(crate) state: AtomicU8,
    pub(crate) signal: Signal,
    pub(crate) input: Input,
    pub(crate) metrics: Metrics,
    pub(crate) workload: Box<dyn Workload>,
    /// Whether the motors are async ones (`concurrency`, or a workload with an
    /// async runner).
    async_mode: bool,
    /// The ops in flight of an async run.
    #[cfg(not(loom))]
    pub(crate) flight: InFlight,
    pub(crate) motors: Mutex<Motors>,
    ended: Condvar,
    pub(crate) departed: AtomicU64,
    /// Reports the pacer's missed slots and the paused time into the metrics.
    missed: Mutex<Missed>,
    /// When the activity started, on its clock.
    pub(crate) started_at: Nanos,
    /// The process's run-queue delay at the last snapshot (real clock only).
    run_queue_seen: Mutex<Option<Nanos>>,
    /// When its duration is over, on its clock; `None` without a duration.
    pub(crate) deadline: Option<Nanos>,
    /// The same deadline on the pacer's time base, for the motors' check before
    /// each op.
    pub(crate) pacer_deadline: Option<Nanos>,
    /// Set once this process has left its shared schedule; held while it leaves,
    /// so that a reader of the final numbers waits for the last heartbeat.
    pub(crate) left: Mutex<bool>,
    /// Set when a motor left with cycles in hand that it neither ran nor gave
    /// back: its slot source stopped while this activity was running (a stop
    /// from elsewhere). The run then did not complete, even with the input dry.
    pub(crate) abandoned: AtomicBool,
}

/// A reserved motor: its index, retire flag and progress counter.
type Reserved = (usize, Arc<AtomicBool>, Arc<CachePadded<AtomicU64>>);

/// What a motor does after a checkpoint.
pub(crate) enum Next {
    Go,
    Leave,
}

impl Shared {
    pub(crate) fn new(
        config: ActivityConfig,
        clock: Arc<dyn Clock>,
        waiting: Option<Waiting>,
        workload: Box<dyn Workload>,
    ) -> Result<Arc<Self>, EngineError> {
        let waiting = waiting.unwrap_or_else(|| clock.default_waiting());
        let async_mode = Self::async_mode(&config, &*workload, &clock)?;
        // The raw clock stays the engine's; an async run's pacer waits through a
        // clock that drives the worker's ops meanwhile (`async_motor::idle`).
        let engine_clock = clock.clone();
        #[cfg(not(loom))]
        let clock: Arc<dyn Clock> = if async_mode {
            Arc::new(DrivingClock(clock))
        } else {
            clock
        };
        let mut events = None;
        let (pacer, input, paced) = match &config.coordinate {
            Some(c) => {
                let (changes, rx) = RemoteSender::channel();
                let request = JoinRequest {
                    alias: config.alias.clone(),
                    cycles: config.cycles.clone(),
                    stride: config.stride,
                    spec: config.rate,
                    clock: clock.clone(),
                    waiting,
                    changes,
                };
                let joined = c.join(request).map_err(|message| EngineError::Coordinate {
                    alias: config.alias.clone(),
                    message,
                })?;
                events = Some(rx);
                (
                    Pacer::Shared(joined.slots),
                    Input::Shared(joined.cycles),
                    joined.paced,
                )
            }
            None => Self::local(&config, &clock, waiting),
        };
        let clock = engine_clock;
        let real = clock.timeline_origin().is_some();
        let now = clock.now();
        let metrics = Metrics::new(now);
        let rec = metrics.recorder();
        let shared = Arc::new(Self {
            alias: Arc::from(config.alias.as_str()),
            paced: AtomicBool::new(paced),
            state: AtomicU8::new(RUNNING),
            signal: Signal::new(),
            input,
            motors: Mutex::new(Motors {
                list: Vec::new(),
                active: 0,
                target: config.threads,
                next_index: 0,
                phase: Phase::Running,
                finished: Vec::new(),
                ramp_generation: 0,
            }),
            ended: Condvar::new(),
            departed: AtomicU64::new(0),
            missed: Mutex::new(Missed::new(rec)),
            started_at: now,
            run_queue_seen: Mutex::new(real.then(super::sched::process_run_queue_nanos).flatten()),
            deadline: config.duration.map(|d| now.saturating_add(d)),
            pacer_deadline: config.duration.map(|d| pacer.now().saturating_add(d)),
            left: Mutex::new(false),
            abandoned: AtomicBool::new(false),
            metrics,
            #[cfg(not(loom))]
            flight: InFlight::new(
                config.concurrency.unwrap_or(config.threads) as u64,
                config.threads as u64,
                config.concurrency.is_none(),
            ),
            async_mode,
            workload,
            pacer,
            clock,
            config,
        });
        if let Some(rx) = events {
            shared.watch(rx)?;
        }
        Ok(shared)
    }

    /// Whether the run is an async one: `concurrency` was given (the workload
    /// must have an async runner), or the workload has one.
    fn async_mode(
        config: &ActivityConfig,
        workload: &dyn Workload,
        clock: &Arc<dyn Clock>,
    ) -> Result<bool, EngineError> {
        #[cfg(not(loom))]
        let has = super::async_motor::has_async_runner(workload, &config.alias, clock);
        #[cfg(loom)]
        let has = {
            let _ = (workload, clock);
            false
        };
        if config.concurrency.is_some() && !has {
            let driver = if config.driver.is_empty() {
                "the workload".to_string()
            } else {
                format!("driver `{}`", config.driver)
            };
            return Err(EngineError::BadConfig {
                alias: config.alias.clone(),
                what: "concurrency".into(),
                why: format!(
                    "{driver} has no async runner, so it runs one op per thread: drop \
                     concurrency= and raise threads= to the ops in flight you need"
                ),
            });
        }
        Ok(has)
    }

    /// This process's own pacer and cycle input.
    fn local(
        config: &ActivityConfig,
        clock: &Arc<dyn Clock>,
        waiting: Waiting,
    ) -> (Pacer, Input, bool) {
        let spec = config.rate.unwrap_or(RateSpec::new(1.0));
        let limiter = RateLimiter::builder(spec)
            .waiting(waiting)
            .build_with_clock(clock.clone());
        (
            Pacer::Local(limiter),
            Input::Local(CycleInput::new(config.cycles.clone())),
            config.rate.is_some(),
        )
    }

    /// Starts the configured number of motors, and the deadline's timer if the run
    /// has a duration.
    pub(crate) fn launch(self: &Arc<Self>) -> Result<(), String> {
        self.metrics.mark(self.started_at, Event::Started);
        let todo = Self::reserve(&mut threads::lock(&self.motors), self.config.threads);
        self.spawn_reserved(todo)?;
        if let Some(deadline) = self.deadline {
            // The clock wakes it once it reads the deadline: the real clock's timer
            // thread, or the manual clock when it is moved there (so a test's run
            // ends at exactly its deadline). It holds the run weakly: a run that
            // ended first is simply gone when it fires.
            let waker = std::task::Waker::from(Arc::new(DeadlineWaker(Arc::downgrade(self))));
            self.clock.wake_at(deadline, &self.pacer.waiting(), &waker);
        }
        Ok(())
    }

    /// The run's time is up: every motor leaves after at most the op it is in, and
    /// the run ends as [`Outcome::Elapsed`] (unless something ended it first).
    pub(crate) fn elapse(&self) {
        let mut m = threads::lock(&self.motors);
        let at = self.clock.now();
        if self.transition(&mut m, Ask::Elapse) {
            let what = match self.config.duration {
                Some(d) if self.deadline.is_some_and(|end| at >= end) => {
                    format!("ran its duration ({:?})", crate::nanos::to_duration(d))
                }
                _ => "its time is up".to_string(),
            };
            self.metrics.mark(at, Event::Note(what));
        }
    }

    /// Makes entries for `n` more motors (counted active at once), under the
    /// motors lock; [`spawn_reserved`](Self::spawn_reserved) starts their threads
    /// outside it, so a large thread change never stalls status reads or the
    /// report loop. A run with reserved entries cannot finish before they leave.
    fn reserve(m: &mut Motors, n: usize) -> Vec<Reserved> {
        let mut todo = Vec::with_capacity(n);
        for _ in 0..n {
            let index = m.next_index;
            let retire = Arc::new(AtomicBool::new(false));
            let done = Arc::new(CachePadded::new(AtomicU64::new(0)));
            m.next_index += 1;
            m.active += 1;
            m.list.push(MotorEntry {
                index,
                retire: retire.clone(),
                done: done.clone(),
                handle: None,
                leaving: false,
            });
            todo.push((index, retire, done));
        }
        todo
    }

    /// Starts the threads of reserved entries. A thread that cannot start fails
    /// the run, and the entries not started are taken out.
    fn spawn_reserved(self: &Arc<Self>, todo: Vec<Reserved>) -> Result<(), String> {
        let mut failed = None;
        for (index, retire, done) in todo {
            let spawned = if failed.is_none() {
                let shared = self.clone();
                let (r, d) = (retire, done);
                std::thread::Builder::new()
                    .name(format!("{}-{index}", self.alias))
                    .spawn(move || {
                        #[cfg(not(loom))]
                        if shared.async_mode {
                            return AsyncMotor::run(shared, index, r, d);
                        }
                        Motor::run(shared, index, r, d)
                    })
                    .map_err(|e| e.to_string())
            } else {
                Err(String::new())
            };
            let mut m = threads::lock(&self.motors);
            match spawned {
                Ok(h) => match m.list.iter_mut().find(|e| e.index == index) {
                    Some(e) => e.handle = Some(h),
                    // It already ran and left.
                    None => m.finished.push(h),
                },
                Err(e) => {
                    // Never started: take its entry out as a departure with no work.
                    if let Some(pos) = m.list.iter().position(|e| e.index == index) {
                        let e = m.list.swap_remove(pos);
                        if e.is_active() {
                            m.active -= 1;
                        }
                    }
                    if failed.is_none() {
                        self.transition(
                            &mut m,
                            Ask::Fail {
                                why: format!("could not start a worker: {e}"),
                                kind: None,
                            },
                        );
                        failed = Some(e);
                    }
                    self.drained_if_empty(&mut m);
                }
            }
        }
        // Handles stored after the run finished (their motors ran and left at
        // once) are joined here, as `wait` may have drained the list already.
        let late = {
            let mut m = threads::lock(&self.motors);
            if m.phase.is_finished() {
                m.finished.drain(..).collect()
            } else {
                Vec::new()
            }
        };
        join_all(late);
        match failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    // ----- the state machine ----------------------------------------------------

    /// Applies `ask` to the phase under the motors lock, with its side effects;
    /// returns whether the phase changed. The only writer of `phase` and `state`.
    /// [`transition`](Self::transition) for a change that came from the shared
    /// schedule.
    pub(crate) fn transition_remote(&self, m: &mut Motors, ask: Ask) -> bool {
        self.transition(m, ask)
    }

    /// The pacer was re-anchored: report what the old schedule missed, then count
    /// from zero.
    pub(crate) fn restart_missed(&self) {
        let mut missed = threads::lock(&self.missed);
        missed.report(&self.pacer, self.is_paced());
        missed.restarted(&self.pacer);
    }

    fn transition(&self, m: &mut Motors, ask: Ask) -> bool {
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
                self.metrics.mark(now, Event::Note("paused".into()));
            }
            (Phase::Paused { resume, .. }, Phase::Running) => {
                let mut missed = threads::lock(&self.missed);
                missed.pause_ended(self.pacer.now());
                if let Some(spec) = *resume {
                    if self.is_paced() {
                        self.pacer.set_spec(spec.verb(Verb::Configure));
                    } else {
                        // From unpaced to paced: anchor the schedule now.
                        missed.report(&self.pacer, false);
                        self.pacer.set_spec(spec.verb(Verb::Restart));
                        missed.restarted(&self.pacer);
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
                self.metrics.mark(now, Event::Note("resumed".into()));
            }
            (Phase::Running | Phase::Paused { .. }, Phase::Stopping { .. }) => {
                m.ramp_generation += 1;
                self.halt();
                self.drained_if_empty(m);
            }
            (_, Phase::Finished { .. }) => {
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
    fn halt(&self) {
        threads::lock(&self.missed).freeze(&self.pacer, self.is_paced());
        self.pacer.stop();
        self.signal.stop();
    }

    // ----- control operations -------------------------------------------------

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
    fn shown_rate(&self) -> f64 {
        if self.is_paced() {
            self.pacer.spec().rate()
        } else {
            f64::INFINITY
        }
    }

    /// Applies `spec` now, or keeps it for resume while paused.
    fn apply_rate(&self, spec: RateSpec, m: &mut Motors, event: bool) {
        let from = self.shown_rate();
        self.apply_rate_quietly(spec, m, event);
        if event {
            self.metrics.mark(
                self.clock.now(),
                Event::Rate {
                    from,
                    to: spec.rate(),
                },
            );
        }
    }

    /// [`apply_rate`](Self::apply_rate) without the timeline's mark; `event` still
    /// marks the change on a shared schedule's other processes.
    fn apply_rate_quietly(&self, spec: RateSpec, m: &mut Motors, event: bool) {
        if let Phase::Paused { resume, .. } = &mut m.phase {
            // Remember it for resume; the pacer stays at rate 0.
            *resume = Some(spec);
        } else if self.is_paced() && spec.verb_value() != Verb::Restart {
            // A ramp's steps are not events here, nor on the other processes of a
            // shared schedule.
            self.pacer.set_spec_marked(spec, event);
        } else {
            // A restart, or from unpaced to paced (anchored now): the pacer's
            // counts start again, so report what the old schedule missed first.
            let mut missed = threads::lock(&self.missed);
            missed.report(&self.pacer, self.is_paced());
            self.pacer.set_spec(spec.verb(Verb::Restart));
            missed.restarted(&self.pacer);
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
        if let Err(why) = super::config::check_concurrency(n, m.target) {
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

    /// The generator's run-queue delay since the last call (on the real clock;
    /// `None` on another, whose readings are not the machine's time).
    pub(crate) fn run_queue_delta(&self) -> Option<Nanos> {
        let mut seen = threads::lock(&self.run_queue_seen);
        let last = (*seen)?;
        let now = super::sched::process_run_queue_nanos()?;
        *seen = Some(now);
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
    fn open(&self) -> Result<threads::MutexGuard<'_, Motors>, ControlError> {
        let m = threads::lock(&self.motors);
        if m.phase.is_finished() {
            return Err(self.finished());
        }
        Ok(m)
    }

    /// The refusal of a control verb once the run has finished.
    fn finished(&self) -> ControlError {
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
    /// (before a snapshot).
    pub(crate) fn report_missed(&self) {
        threads::lock(&self.missed).report(&self.pacer, self.is_paced());
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

/// Ends a run at its deadline when the clock wakes it.
struct DeadlineWaker(std::sync::Weak<Shared>);

impl std::task::Wake for DeadlineWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(shared) = self.0.upgrade() {
            shared.elapse();
        }
    }
}

pub(crate) fn join_all(handles: Vec<JoinHandle<()>>) {
    for h in handles {
        let _ = h.join();
    }
}
