//! One running activity: its shared state, its motors (worker threads) and the
//! control operations the [`Control`](super::Control) handle forwards to.
//!
//! # Ground rules
//!
//! - **Hot path**: a motor reads three words per op, all `Relaxed`: its own
//!   `retire` flag, the activity's `state` and `paced`. They carry no data; they
//!   only tell the motor to go to [`Shared::checkpoint`], which takes the motors
//!   lock, and every decision there is made under that lock. A motor that reads a
//!   stale value runs at most one more op before it sees the new one (the next
//!   load), which is the "stop within one op" promise.
//! - **Motors lock** (`motors`): the list of motors, the live and active counts,
//!   the outcome and the thread target. Every change of thread count, every
//!   give-back of a stride and every decision to leave because the input is dry
//!   is made under it, so a stride given back by a leaving motor is always seen by
//!   a motor that is still live (see [`Shared::leave_dry`] and [`Shared::retire`]).
//! - **Progress counters**: each motor owns one padded `AtomicU64` of cycles run; it
//!   alone writes it (a Relaxed load and store, no RMW), readers sum them Relaxed.
//!   A departing motor adds its count to `departed` under the motors lock before
//!   leaving the list, so a reader holding that lock never counts it twice.
//! - **Pause gate**: `signal` (a [`Signal`]) carries pause/resume/thread-change
//!   notifications and the final stop. A motor reads the generation *before*
//!   re-checking the state, so a change made between the two wakes it.

use super::config::ActivityConfig;
use super::error::ControlError;
use super::input::CycleInput;
use super::policy::ErrorAction;
use super::workload::{OpError, OpRunner, WorkerContext, Workload};
use crate::clock::{Clock, Signal, Waiting};
use crate::metrics::{Event, Metrics, Recorder};
use crate::nanos::Nanos;
use crate::pace::{RateLimiter, RateSpec, Verb};
use crate::sync::threads::{self, Arc, AtomicBool, AtomicU8, AtomicU64, Condvar, Mutex, Ordering};
use crossbeam_utils::CachePadded;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::thread::JoinHandle;
use std::time::Duration;

pub(crate) const RUNNING: u8 = 0;
pub(crate) const PAUSED: u8 = 1;
pub(crate) const STOPPING: u8 = 2;

/// How a run ended.
///
/// ```
/// assert_eq!(paceline::Outcome::Completed.to_string(), "completed");
/// assert_eq!(paceline::Outcome::Failed("cycle 3: boom".into()).to_string(), "failed: cycle 3: boom");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every cycle ran.
    Completed,
    /// [`Control::stop`](super::Control::stop) ended it early.
    Stopped,
    /// An error stopped it (the error policy said so, or a worker could not start);
    /// the message names the cycle and the error.
    Failed(String),
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Completed => f.write_str("completed"),
            Self::Stopped => f.write_str("stopped"),
            Self::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

/// One motor's entry in the list.
struct MotorEntry {
    index: usize,
    retire: Arc<AtomicBool>,
    done: Arc<CachePadded<AtomicU64>>,
    handle: Option<JoinHandle<()>>,
    /// Decided to leave (input dry, or retired and gave its stride back): no
    /// longer counted in `active`.
    leaving: bool,
}

impl MotorEntry {
    fn is_active(&self) -> bool {
        !self.leaving && !self.retire.load(Ordering::Relaxed)
    }
}

/// Everything the motors lock guards.
pub(crate) struct Motors {
    list: Vec<MotorEntry>,
    /// Motors that are live and not asked to retire.
    active: usize,
    /// The thread count asked for.
    target: usize,
    next_index: usize,
    pub(crate) outcome: Option<Outcome>,
    /// The first failure; the outcome once every motor has left.
    failure: Option<String>,
    /// The error kind of the first failure, if an op's error caused it.
    pub(crate) failure_kind: Option<String>,
    /// Handles of motors that left, joined by `wait`.
    finished: Vec<JoinHandle<()>>,
    /// The spec to restore on resume.
    paused_spec: Option<Option<RateSpec>>,
    /// Bumped to cancel a running ramp.
    ramp_generation: u64,
}

/// The state every motor and control handle of one activity shares.
pub(crate) struct Shared {
    pub(crate) config: ActivityConfig,
    pub(crate) alias: Arc<str>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) limiter: RateLimiter<Arc<dyn Clock>>,
    paced: AtomicBool,
    state: AtomicU8,
    pub(crate) signal: Signal,
    input: CycleInput,
    pub(crate) metrics: Metrics,
    workload: Box<dyn Workload>,
    pub(crate) motors: Mutex<Motors>,
    ended: Condvar,
    departed: AtomicU64,
    /// Reports the pacer's missed slots into the metrics at each snapshot.
    missed: Mutex<(Recorder, u64)>,
    /// When the activity started, on its clock.
    pub(crate) started_at: Nanos,
}

/// What a motor does after a checkpoint.
enum Next {
    Go,
    Leave,
}

impl Shared {
    pub(crate) fn new(
        config: ActivityConfig,
        clock: Arc<dyn Clock>,
        waiting: Option<Waiting>,
        workload: Box<dyn Workload>,
    ) -> Arc<Self> {
        let spec = config.rate.unwrap_or(RateSpec::new(1.0));
        let builder = RateLimiter::builder(spec);
        let builder = match waiting {
            Some(w) => builder.waiting(w),
            None => builder.waiting(clock.default_waiting()),
        };
        let limiter = builder.build_with_clock(clock.clone());
        let now = clock.now();
        let metrics = Metrics::new(now);
        let rec = metrics.recorder();
        Arc::new(Self {
            alias: Arc::from(config.alias.as_str()),
            paced: AtomicBool::new(config.rate.is_some()),
            state: AtomicU8::new(RUNNING),
            signal: Signal::new(),
            input: CycleInput::new(config.cycles.clone()),
            motors: Mutex::new(Motors {
                list: Vec::new(),
                active: 0,
                target: config.threads,
                next_index: 0,
                outcome: None,
                failure: None,
                failure_kind: None,
                finished: Vec::new(),
                paused_spec: None,
                ramp_generation: 0,
            }),
            ended: Condvar::new(),
            departed: AtomicU64::new(0),
            missed: Mutex::new((rec, 0)),
            started_at: now,
            metrics,
            workload,
            limiter,
            clock,
            config,
        })
    }

    /// Starts the configured number of motors.
    pub(crate) fn launch(self: &Arc<Self>) -> Result<(), String> {
        self.metrics.mark(self.started_at, Event::Started);
        let mut m = threads::lock(&self.motors);
        for _ in 0..self.config.threads {
            if let Err(e) = self.spawn_motor(&mut m) {
                drop(m);
                self.finish_with(Outcome::Failed(format!("could not start a worker: {e}")));
                return Err(e);
            }
        }
        Ok(())
    }

    fn spawn_motor(self: &Arc<Self>, m: &mut Motors) -> Result<(), String> {
        let index = m.next_index;
        let retire = Arc::new(AtomicBool::new(false));
        let done = Arc::new(CachePadded::new(AtomicU64::new(0)));
        let shared = self.clone();
        let (r, d) = (retire.clone(), done.clone());
        let handle = std::thread::Builder::new()
            .name(format!("{}-{index}", self.alias))
            .spawn(move || Motor::run(shared, index, r, d))
            .map_err(|e| e.to_string())?;
        m.next_index += 1;
        m.active += 1;
        m.list.push(MotorEntry {
            index,
            retire,
            done,
            handle: Some(handle),
            leaving: false,
        });
        Ok(())
    }

    // ----- control operations -------------------------------------------------

    pub(crate) fn is_finished(&self) -> bool {
        threads::lock(&self.motors).outcome.is_some()
    }

    pub(crate) fn state(&self) -> u8 {
        self.state.load(Ordering::Relaxed)
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
        self.is_paced().then(|| self.limiter.spec())
    }

    /// The rate shown in events: 0 when paused, infinity when unpaced.
    fn shown_rate(&self) -> f64 {
        if self.is_paced() {
            self.limiter.spec().rate()
        } else {
            f64::INFINITY
        }
    }

    /// Applies `spec` now (cancelling a ramp unless `from_ramp`).
    pub(crate) fn apply_rate(&self, spec: RateSpec, m: &mut Motors, event: bool) {
        let from = self.shown_rate();
        if self.state.load(Ordering::Relaxed) == PAUSED {
            // Remember it for resume; the pacer stays at rate 0.
            m.paused_spec = Some(Some(spec));
        } else if self.is_paced() {
            self.limiter.set_spec(spec);
        } else {
            // From unpaced to paced: anchor the schedule now.
            self.limiter.set_spec(spec.verb(Verb::Restart));
            self.paced.store(true, Ordering::Relaxed);
        }
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

    pub(crate) fn set_rate(&self, spec: RateSpec) -> Result<(), ControlError> {
        let mut m = self.open()?;
        m.ramp_generation += 1;
        self.apply_rate(spec, &mut m, true);
        Ok(())
    }

    /// Starts a ramp from the current rate to `to` over `over`; returns the ramp's
    /// generation for the ramp thread.
    pub(crate) fn begin_ramp(&self, to: RateSpec, over: Nanos) -> Result<(u64, f64), ControlError> {
        let mut m = self.open()?;
        m.ramp_generation += 1;
        let from = if self.is_paced() {
            match &m.paused_spec {
                Some(Some(s)) => s.rate(),
                _ => self.limiter.spec().rate(),
            }
        } else {
            // An unpaced activity has no rate to ramp from: start at the target's
            // first step (the ramp's own 1 % point).
            to.rate() / 100.0
        };
        self.metrics.mark(
            self.clock.now(),
            Event::Ramp {
                to: to.rate(),
                over,
            },
        );
        Ok((m.ramp_generation, from))
    }

    /// One ramp step: applies `spec` unless the ramp was cancelled. Returns whether
    /// the ramp is still current.
    pub(crate) fn ramp_step(&self, generation: u64, spec: RateSpec) -> bool {
        let mut m = threads::lock(&self.motors);
        if m.ramp_generation != generation || m.outcome.is_some() {
            return false;
        }
        self.apply_rate(spec, &mut m, false);
        true
    }

    pub(crate) fn ramp_done(&self, generation: u64, to: RateSpec) {
        let mut m = threads::lock(&self.motors);
        if m.ramp_generation == generation && m.outcome.is_none() {
            self.apply_rate(to, &mut m, true);
        }
    }

    pub(crate) fn set_threads(self: &Arc<Self>, n: usize) -> Result<(), ControlError> {
        let mut m = self.open()?;
        if self.state() == STOPPING {
            return Err(self.finished());
        }
        let from = m.target;
        m.target = n;
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
            // Wake paused motors so retired ones leave now.
            self.signal.notify();
        } else {
            while m.active < n {
                self.spawn_motor(&mut m)
                    .map_err(|message| ControlError::Spawn { message })?;
            }
        }
        if from != n {
            self.metrics
                .mark(self.clock.now(), Event::Threads { from, to: n });
        }
        Ok(())
    }

    pub(crate) fn pause(&self) -> Result<(), ControlError> {
        let mut m = self.open()?;
        if self.state.load(Ordering::Relaxed) != RUNNING {
            return Ok(());
        }
        m.ramp_generation += 1;
        let from = self.shown_rate();
        m.paused_spec = Some(self.spec());
        self.state.store(PAUSED, Ordering::Relaxed);
        if self.is_paced() {
            self.limiter.set_spec(
                self.limiter
                    .spec()
                    .with_rate(0.0)
                    .unwrap_or(RateSpec::paused()),
            );
        }
        self.signal.notify();
        self.metrics
            .mark(self.clock.now(), Event::Rate { from, to: 0.0 });
        self.metrics
            .mark(self.clock.now(), Event::Note("paused".into()));
        Ok(())
    }

    pub(crate) fn resume(&self) -> Result<(), ControlError> {
        let mut m = self.open()?;
        if self.state.load(Ordering::Relaxed) != PAUSED {
            return Ok(());
        }
        let before = m.paused_spec.take().flatten();
        if let Some(spec) = before {
            if self.is_paced() {
                self.limiter.set_spec(spec.verb(Verb::Configure));
            } else {
                self.limiter.set_spec(spec.verb(Verb::Restart));
                self.paced.store(true, Ordering::Relaxed);
            }
        }
        self.state.store(RUNNING, Ordering::Relaxed);
        self.signal.notify();
        self.metrics.mark(
            self.clock.now(),
            Event::Rate {
                from: 0.0,
                to: self.shown_rate(),
            },
        );
        self.metrics
            .mark(self.clock.now(), Event::Note("resumed".into()));
        Ok(())
    }

    /// Stops the activity: every motor leaves after at most the op it is in.
    pub(crate) fn stop(&self) {
        let mut m = threads::lock(&self.motors);
        if m.outcome.is_none() && self.state.load(Ordering::Relaxed) != STOPPING {
            m.ramp_generation += 1;
            self.halt();
            if m.list.is_empty() {
                drop(m);
                self.finish_with(Outcome::Stopped);
            }
        }
    }

    /// The refusal of a control verb once the run has finished.
    /// The motors, locked, while the run has not finished; a control verb on a
    /// finished run gets [`ControlError::Finished`].
    fn open(&self) -> Result<threads::MutexGuard<'_, Motors>, ControlError> {
        let m = threads::lock(&self.motors);
        if m.outcome.is_some() {
            return Err(self.finished());
        }
        Ok(m)
    }

    fn finished(&self) -> ControlError {
        ControlError::Finished {
            alias: self.alias.to_string(),
        }
    }

    fn halt(&self) {
        self.state.store(STOPPING, Ordering::Relaxed);
        self.limiter.stop();
        self.signal.stop();
    }

    /// Records the end (once) and wakes waiters.
    fn finish_with(&self, outcome: Outcome) {
        let mut m = threads::lock(&self.motors);
        if m.outcome.is_none() {
            m.outcome = Some(outcome);
            self.halt();
            self.metrics.mark(self.clock.now(), Event::Stopped);
        }
        drop(m);
        self.ended.notify_all();
    }

    /// A failure that stops the activity (the first one wins); `kind` is the error
    /// kind when an op's error caused it.
    fn fail(&self, why: String, kind: Option<&str>) {
        let mut m = threads::lock(&self.motors);
        if m.failure.is_none() {
            m.failure = Some(why);
            m.failure_kind = kind.map(str::to_string);
        }
        m.ramp_generation += 1;
        self.halt();
    }

    /// Blocks until the run ends or `timeout` passes; the outcome if it ended.
    pub(crate) fn wait(&self, timeout: Option<Duration>) -> Option<Outcome> {
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        let mut m = threads::lock(&self.motors);
        loop {
            if let Some(o) = m.outcome.clone() {
                let handles: Vec<_> = m.finished.drain(..).collect();
                drop(m);
                for h in handles {
                    let _ = h.join();
                }
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

    /// Moves the pacer's newly missed slots into the metrics (before a snapshot).
    pub(crate) fn report_missed(&self) {
        if !self.is_paced() {
            return;
        }
        let missed = self.limiter.stats().missed_slots.max(0.0).floor() as u64;
        let mut g = threads::lock(&self.missed);
        let (rec, seen) = &mut *g;
        if missed > *seen {
            rec.missed(missed - *seen);
            *seen = missed;
        }
    }

    // ----- motor side ---------------------------------------------------------

    /// Called when a motor's flags say something changed. Returns whether it goes
    /// on; `rest` is the unrun part of its stride, given back if it retires.
    fn checkpoint(&self, index: usize, retire: &AtomicBool, rest: Range<u64>) -> Next {
        loop {
            let generation = self.signal.generation();
            match self.state.load(Ordering::Relaxed) {
                STOPPING => return Next::Leave,
                PAUSED if !retire.load(Ordering::Relaxed) => {
                    self.signal.wait_change(generation);
                    continue;
                }
                _ => {}
            }
            if retire.load(Ordering::Relaxed) {
                let mut m = threads::lock(&self.motors);
                if m.active == 0 {
                    // Nobody else is left to run the rest (the others all left
                    // dry): this motor takes the place of an active one and runs
                    // on until the input is dry.
                    retire.store(false, Ordering::Relaxed);
                    m.active += 1;
                    return Next::Go;
                }
                self.input.give_back(rest);
                Self::mark_leaving(&mut m, index);
                return Next::Leave;
            }
            return Next::Go;
        }
    }

    /// A motor found the input dry: it leaves unless a stride was given back
    /// meanwhile (decided under the motors lock; see the ground rules).
    fn leave_dry(&self, index: usize) -> bool {
        let mut m = threads::lock(&self.motors);
        if !self.input.is_dry() {
            return false;
        }
        Self::mark_leaving(&mut m, index);
        true
    }

    /// Marks motor `index` as leaving, taking it out of the active count.
    fn mark_leaving(m: &mut Motors, index: usize) {
        if let Some(e) = m.list.iter_mut().find(|e| e.index == index) {
            if e.is_active() {
                m.active -= 1;
            }
            e.leaving = true;
        }
    }

    /// A motor is leaving: account for it and end the run if it was the last.
    fn depart(&self, index: usize) {
        let mut m = threads::lock(&self.motors);
        if let Some(pos) = m.list.iter().position(|e| e.index == index) {
            let mut e = m.list.swap_remove(pos);
            self.departed
                .fetch_add(e.done.load(Ordering::Relaxed), Ordering::Relaxed);
            if e.is_active() {
                m.active -= 1;
            }
            if let Some(h) = e.handle.take() {
                m.finished.push(h);
            }
        }
        if m.list.is_empty() && m.outcome.is_none() {
            let outcome = match m.failure.take() {
                Some(why) => Outcome::Failed(why),
                None if self.input.is_dry() && self.state.load(Ordering::Relaxed) != STOPPING => {
                    Outcome::Completed
                }
                None => Outcome::Stopped,
            };
            drop(m);
            self.finish_with(outcome);
        }
    }
}

/// One worker thread's loop.
struct Motor {
    shared: Arc<Shared>,
    ctx: WorkerContext,
    runner: Box<dyn OpRunner>,
    rec: Recorder,
}

impl Motor {
    fn run(
        shared: Arc<Shared>,
        index: usize,
        retire: Arc<AtomicBool>,
        done: Arc<CachePadded<AtomicU64>>,
    ) {
        let ctx = WorkerContext::with_signal(
            index,
            shared.alias.clone(),
            shared.clock.clone(),
            shared.signal.clone(),
            shared.limiter.waiting(),
        );
        let runner = match guarded_runner(&*shared.workload, &ctx) {
            Ok(r) => r,
            Err(e) => {
                shared.fail(format!("worker {index} could not start: {e}"), None);
                shared.depart(index);
                return;
            }
        };
        let rec = shared.metrics.recorder();
        let mut motor = Motor {
            shared: shared.clone(),
            ctx,
            runner,
            rec,
        };
        motor.drive(&retire, &done);
        let finish_err = motor.runner.finish().err();
        if let Some(e) = finish_err {
            motor.rec.error_with(e.kind(), e.message());
        }
        drop(motor);
        shared.depart(index);
    }

    /// Runs strides until the input is dry, the motor retires, or the activity
    /// stops; a failure that stops the activity is recorded through `Shared::fail`.
    fn drive(&mut self, retire: &AtomicBool, done: &AtomicU64) {
        let shared = self.shared.clone();
        let stride = shared.config.stride;
        let policy = shared.config.errors;
        let clock = &*shared.clock;
        let mut count = done.load(Ordering::Relaxed);
        loop {
            let Some(range) = shared.input.take(stride) else {
                if shared.leave_dry(self.ctx.index()) {
                    return;
                }
                continue;
            };
            let mut cycle = range.start;
            while cycle < range.end {
                if retire.load(Ordering::Relaxed) || shared.state.load(Ordering::Relaxed) != RUNNING
                {
                    match shared.checkpoint(self.ctx.index(), retire, cycle..range.end) {
                        Next::Go => {}
                        Next::Leave => return,
                    }
                }
                let wait = if shared.paced.load(Ordering::Relaxed) {
                    let grant = shared.limiter.acquire();
                    if grant.is_stopped() {
                        return;
                    }
                    grant.wait_nanos()
                } else {
                    0
                };
                let start = clock.now();
                let mut result = self.attempt(cycle);
                let mut tries = 0;
                // A failed attempt that is tried again counts as a retry; only
                // the op's last failure counts as an error.
                while let Err(e) = &result {
                    if e.is_fatal() || tries >= policy.retries() || shared.state() == STOPPING {
                        self.rec.error_with(e.kind(), e.message());
                        break;
                    }
                    tries += 1;
                    self.rec.retry();
                    result = self.attempt(cycle);
                }
                let end = clock.now();
                self.rec.record(wait, end.saturating_sub(start));
                count += 1;
                done.store(count, Ordering::Relaxed);
                if let Err(e) = result {
                    if e.is_fatal() || policy.then() == ErrorAction::Stop {
                        shared.fail(format!("cycle {cycle}: {e}"), Some(e.kind()));
                        return;
                    }
                }
                cycle += 1;
            }
        }
    }

    /// Runs one attempt, containing a panic: the panic becomes an error of kind
    /// `panic` and the runner is replaced by a fresh one.
    #[inline]
    fn attempt(&mut self, cycle: u64) -> Result<(), OpError> {
        match catch_unwind(AssertUnwindSafe(|| self.runner.run(cycle))) {
            Ok(r) => r,
            Err(payload) => {
                let msg = panic_message(&*payload);
                match guarded_runner(&*self.shared.workload, &self.ctx) {
                    Ok(r) => self.runner = r,
                    Err(e) => {
                        return Err(OpError::new(
                            "panic",
                            format!("op panicked: {msg}; and the worker could not restart: {e}"),
                        ));
                    }
                }
                Err(OpError::new("panic", format!("op panicked: {msg}")))
            }
        }
    }
}

/// Builds a runner, containing a panic in the workload's factory.
fn guarded_runner(w: &dyn Workload, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
    match catch_unwind(AssertUnwindSafe(|| w.runner(ctx))) {
        Ok(r) => r,
        Err(p) => Err(OpError::new(
            "panic",
            format!(
                "the workload panicked while starting a worker: {}",
                panic_message(&*p)
            ),
        )),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}
