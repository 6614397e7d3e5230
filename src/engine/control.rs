//! The control handle of a running activity.

use super::config::ActivityConfig;
use super::error::ControlError;
use super::phase::Phase;
use super::runtime::{Outcome, Shared};
use crate::clock::Waiting;
use crate::metrics::{Metrics, Snapshot, TimelineEntry};
use crate::nanos::{self, Nanos};
use crate::pace::{LimiterStats, MAX_RATE, MIN_RATE, RateSpec};
use crate::sync::threads::Arc;
use std::fmt;
use std::time::Duration;

/// Where a run stands.
///
/// ```
/// assert_eq!(paceline::RunState::Paused.to_string(), "paused");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// Workers are running ops.
    Running,
    /// Paused: workers wait, the pacer is at rate 0.
    Paused,
    /// Stop was asked for; workers are finishing their current op.
    Stopping,
    /// Every worker has left; [`Control::outcome`] says how it ended.
    Finished,
}

impl fmt::Display for RunState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Stopping => "stopping",
            Self::Finished => "finished",
        })
    }
}

/// A point-in-time view of a run, cheap to take (no metrics snapshot).
///
/// ```
/// use paceline::{ActivityConfig, Engine, ManualClock, OpError, OpRunner, RunState, Workload, WorkerContext};
/// struct Nop;
/// impl Workload for Nop {
///     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { Ok(Box::new(NopRun)) }
/// }
/// struct NopRun;
/// impl OpRunner for NopRun { fn run(&mut self, _: u64) -> Result<(), OpError> { Ok(()) } }
/// let run = Engine::with_clock(ManualClock::new()).start(ActivityConfig::new("a").cycles(0..10), Nop)?;
/// run.wait();
/// let s = run.status();
/// assert_eq!((s.state, s.completed, s.cycles), (RunState::Finished, 10, 0..10));
/// # Ok::<(), paceline::EngineError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Status {
    /// The activity's alias.
    pub alias: String,
    /// The driver's name, as configured.
    pub driver: String,
    /// Where the run stands.
    pub state: RunState,
    /// The thread count asked for.
    pub threads: usize,
    /// Worker threads alive now (differs from `threads` briefly after a change).
    pub live_threads: usize,
    /// The rate in force (rate 0 while paused), or `None` when unpaced.
    pub rate: Option<RateSpec>,
    /// The cycles the run covers.
    pub cycles: std::ops::Range<u64>,
    /// Cycles run so far, including ones that ended in a counted error.
    pub completed: u64,
    /// When the run started, in nanoseconds on the engine's clock.
    pub started_at: Nanos,
    /// How the run ended, once it has.
    pub outcome: Option<Outcome>,
}

/// The handle of a running activity: retune it, pause, stop, wait, read its
/// metrics. Cloneable and thread-safe; every clone controls the same run.
///
/// Every change applies at once (the next op of every worker sees it), keeps the
/// pacer's state as its verb says, and is recorded in the metrics timeline.
///
/// ```
/// use paceline::{ActivityConfig, Engine, OpError, OpRunner, RateSpec, Workload, WorkerContext};
/// use std::time::Duration;
/// struct Nop;
/// impl Workload for Nop {
///     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { Ok(Box::new(NopRun)) }
/// }
/// struct NopRun;
/// impl OpRunner for NopRun { fn run(&mut self, _: u64) -> Result<(), OpError> { Ok(()) } }
///
/// let run = Engine::new().start(
///     ActivityConfig::new("a").cycles(0..1_000_000).threads(2).rate(RateSpec::new(1000.0)),
///     Nop,
/// )?;
/// run.set_rate(RateSpec::new(2000.0))?;
/// run.set_threads(4)?;
/// run.pause()?;
/// run.stop();
/// assert_eq!(run.wait(), paceline::Outcome::Stopped);
/// let events: Vec<String> = run.timeline().iter().map(|e| e.event.to_string()).collect();
/// assert_eq!(events[..3], ["started", "rate 1000 -> 2000", "threads 2 -> 4"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Control {
    shared: Arc<Shared>,
}

impl fmt::Debug for Control {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Control")
            .field("alias", &self.alias())
            .finish_non_exhaustive()
    }
}

impl Control {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// Whether `self` and `other` control the same run (an alias can be reused by
    /// a later run once the first has finished).
    ///
    /// ```
    /// # use paceline::{ActivityConfig, Engine, ManualClock, OpError, OpRunner, Workload, WorkerContext};
    /// # struct Nop;
    /// # impl Workload for Nop {
    /// #     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { Ok(Box::new(NopRun)) }
    /// # }
    /// # struct NopRun;
    /// # impl OpRunner for NopRun { fn run(&mut self, _: u64) -> Result<(), OpError> { Ok(()) } }
    /// let engine = Engine::with_clock(ManualClock::new());
    /// let first = engine.start(ActivityConfig::new("a"), Nop)?;
    /// first.wait();
    /// let second = engine.start(ActivityConfig::new("a"), Nop)?;
    /// assert!(first.same_run(&first.clone()) && !first.same_run(&second));
    /// # Ok::<(), paceline::EngineError>(())
    /// ```
    pub fn same_run(&self, other: &Control) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// The activity's alias.
    ///
    /// See [`Control`] for a full example.
    pub fn alias(&self) -> &str {
        &self.shared.alias
    }

    /// The configuration the run started with.
    ///
    /// See [`Control`] for a full example.
    pub fn config(&self) -> &ActivityConfig {
        &self.shared.config
    }

    /// Applies a new rate spec now. An unpaced run becomes paced (anchored now).
    /// While paused, the spec is kept for [`resume`](Self::resume). Cancels a ramp.
    ///
    /// See [`Control`] for a full example.
    pub fn set_rate(&self, spec: RateSpec) -> Result<(), ControlError> {
        self.shared.set_rate(spec)
    }

    /// Moves the rate linearly from the current rate to `to`'s over `over`, in
    /// steps of about 1/200 of `over` (at least 1 ms apart, at most 100 ms); `to`'s
    /// strictness and scope apply from the first step. A later `set_rate`, ramp,
    /// pause or stop cancels it. On a [`ManualClock`](crate::ManualClock) the ramp
    /// advances the clock as it waits between steps.
    ///
    /// ```
    /// use paceline::{ActivityConfig, Engine, OpError, OpRunner, RateSpec, Workload, WorkerContext};
    /// use std::time::Duration;
    /// struct Nop;
    /// impl Workload for Nop {
    ///     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { Ok(Box::new(NopRun)) }
    /// }
    /// struct NopRun;
    /// impl OpRunner for NopRun { fn run(&mut self, _: u64) -> Result<(), OpError> { Ok(()) } }
    /// let run = Engine::new().start(ActivityConfig::new("a").cycles(0..1_000_000).rate(RateSpec::new(100.0)), Nop)?;
    /// run.ramp_to(RateSpec::new(1000.0), Duration::from_millis(20))?;
    /// std::thread::sleep(Duration::from_millis(200));
    /// assert_eq!(run.status().rate.unwrap().rate(), 1000.0);
    /// run.stop();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ramp_to(&self, to: RateSpec, over: Duration) -> Result<(), ControlError> {
        if to.is_paused() {
            return Err(ControlError::BadValue {
                why: "a ramp must end at a rate above 0: to pause, use pause".into(),
            });
        }
        let over_n = nanos::from_duration(over);
        if over_n == 0 {
            return self.set_rate(to);
        }
        let (generation, from, t0) = self.shared.begin_ramp(to, over_n)?;
        let shared = self.shared.clone();
        std::thread::Builder::new()
            .name(format!("{}-ramp", self.alias()))
            .spawn(move || ramp(shared, generation, from, to, t0, over_n))
            .map_err(|e| ControlError::Spawn {
                message: e.to_string(),
            })?;
        Ok(())
    }

    /// Changes the number of worker threads (1 to [`MAX_THREADS`](crate::MAX_THREADS)).
    /// New threads start at once; extra ones leave after their current op, giving
    /// the rest of their stride back, so every cycle still runs exactly once.
    ///
    /// See [`Control`] for a full example.
    pub fn set_threads(&self, n: usize) -> Result<(), ControlError> {
        if n == 0 || n > super::config::MAX_THREADS {
            return Err(ControlError::BadValue {
                why: format!(
                    "{n} threads: use 1 to {} (to stop work for a while, pause)",
                    super::config::MAX_THREADS
                ),
            });
        }
        self.shared.set_threads(n)
    }

    /// Changes the most ops in flight of an async run (`concurrency`; 1 to
    /// [`MAX_CONCURRENCY`](crate::MAX_CONCURRENCY), at least the thread count).
    /// Raising it lets the workers start more at once; lowering it starts nothing
    /// new until the ops in flight fall under the new cap (none is cancelled).
    /// Every cycle still runs exactly once. Refused for a run on the sync runner.
    ///
    /// ```
    /// use paceline::{ActivityConfig, AsyncOpRunner, Engine, LocalFuture, ManualClock, OpError, OpRunner, Workload, WorkerContext};
    /// struct Nop;
    /// struct NopRun;
    /// impl AsyncOpRunner for NopRun {
    ///     fn start(&self, _: u64) -> LocalFuture<Result<(), OpError>> { Box::pin(async { Ok(()) }) }
    /// }
    /// impl Workload for Nop {
    ///     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { Err(OpError::new("async", "")) }
    ///     fn async_runner(&self, _: &WorkerContext, _: usize) -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>> {
    ///         Some(Box::pin(async { Ok(Box::new(NopRun) as Box<dyn AsyncOpRunner>) }))
    ///     }
    /// }
    /// let engine = Engine::with_clock(ManualClock::new());
    /// let run = engine.start(ActivityConfig::new("a").cycles(0..100).concurrency(4), Nop)?;
    /// assert!(run.set_concurrency(0).is_err());
    /// let _ = run.set_concurrency(8); // refused only once the run finished
    /// run.wait();
    /// assert_eq!(run.snapshot().ops(), 100);
    /// # Ok::<(), paceline::EngineError>(())
    /// ```
    #[cfg(not(loom))]
    pub fn set_concurrency(&self, n: usize) -> Result<(), ControlError> {
        self.shared.set_concurrency(n)
    }

    /// Whether the run is on the async runner (`concurrency`, or a workload with
    /// an async runner).
    ///
    /// ```
    /// use paceline::{ActivityConfig, Engine, ManualClock, OpError, OpRunner, Workload, WorkerContext};
    /// struct Nop;
    /// impl Workload for Nop {
    ///     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { Ok(Box::new(NopRun)) }
    /// }
    /// struct NopRun;
    /// impl OpRunner for NopRun { fn run(&mut self, _: u64) -> Result<(), OpError> { Ok(()) } }
    /// let run = Engine::with_clock(ManualClock::new()).start(ActivityConfig::new("a"), Nop)?;
    /// assert!(!run.is_async());
    /// # Ok::<(), paceline::EngineError>(())
    /// ```
    pub fn is_async(&self) -> bool {
        self.shared.is_async()
    }

    /// Pauses: workers finish the op they are in and wait; a paced run's pacer goes
    /// to rate 0, so resuming releases no burst. Pausing a paused run does nothing.
    ///
    /// See [`Control`] for a full example.
    pub fn pause(&self) -> Result<(), ControlError> {
        self.shared.pause()
    }

    /// Resumes a paused run at the rate it had (or the one set while paused).
    /// Resuming a running activity does nothing.
    ///
    /// See [`Control`] for a full example.
    pub fn resume(&self) -> Result<(), ControlError> {
        self.shared.resume()
    }

    /// Stops the run: every worker leaves after at most the op it is in, and
    /// blocked waits for a slot return at once. Final; stopping a finished run
    /// does nothing. A run on a shared schedule
    /// ([`ActivityConfig::coordinate`](super::ActivityConfig::coordinate)) stops in
    /// every process on it; [`Engine::close`](super::Engine::close) (an interrupt)
    /// stops this process's part only.
    ///
    /// See [`Control`] for a full example.
    pub fn stop(&self) {
        self.shared.stop_everywhere();
    }

    /// Ends the run as if its [`duration`](super::ActivityConfig::duration) were
    /// over: every worker leaves after at most the op it is in, and the run ends
    /// as [`Outcome::Elapsed`] (unless it had already ended, or was stopping for
    /// another cause). `paceline run --duration` calls it on every activity still
    /// running when the whole run's time is up. It acts in this process only.
    ///
    /// ```
    /// use paceline::{ActivityConfig, Engine, ManualClock, OpError, OpRunner, Outcome, RateSpec, Workload, WorkerContext};
    /// struct Nop;
    /// impl Workload for Nop {
    ///     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { Ok(Box::new(NopRun)) }
    /// }
    /// struct NopRun;
    /// impl OpRunner for NopRun { fn run(&mut self, _: u64) -> Result<(), OpError> { Ok(()) } }
    /// let run = Engine::new().start(ActivityConfig::new("a").cycles(0..1_000_000).rate(RateSpec::new(10.0)), Nop)?;
    /// run.expire();
    /// assert_eq!(run.wait(), Outcome::Elapsed);
    /// # Ok::<(), paceline::EngineError>(())
    /// ```
    pub fn expire(&self) {
        self.shared.elapse();
    }

    /// Stops this process's part of the run (the same as [`stop`](Self::stop) for
    /// a run that paces alone).
    pub(crate) fn stop_here(&self) {
        self.shared.stop_here();
    }

    /// Blocks until the run ends and every worker thread has exited.
    ///
    /// See [`Control`] for a full example.
    pub fn wait(&self) -> Outcome {
        match self.shared.wait(None) {
            Some(o) => o,
            None => unreachable!("an untimed wait returns only at the end"),
        }
    }

    /// Blocks until the run ends or `timeout` passes; the outcome if it ended.
    ///
    /// ```
    /// use paceline::{ActivityConfig, Engine, OpError, OpRunner, RateSpec, Workload, WorkerContext};
    /// use std::time::Duration;
    /// struct Nop;
    /// impl Workload for Nop {
    ///     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { Ok(Box::new(NopRun)) }
    /// }
    /// struct NopRun;
    /// impl OpRunner for NopRun { fn run(&mut self, _: u64) -> Result<(), OpError> { Ok(()) } }
    /// let run = Engine::new().start(ActivityConfig::new("a").cycles(0..100).rate(RateSpec::new(10.0)), Nop)?;
    /// assert_eq!(run.wait_timeout(Duration::from_millis(10)), None);
    /// run.stop();
    /// assert!(run.wait_timeout(Duration::from_secs(5)).is_some());
    /// # Ok::<(), paceline::EngineError>(())
    /// ```
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Outcome> {
        self.shared.wait(Some(timeout))
    }

    /// How the run ended, or `None` while it runs.
    ///
    /// See [`Status`] for an example.
    pub fn outcome(&self) -> Option<Outcome> {
        self.shared.phase().outcome().cloned()
    }

    /// The error kind of the op error that failed the run (`Outcome::Failed`), or
    /// `None` if it has not failed or failed for another reason (a worker that
    /// could not start).
    ///
    /// ```
    /// # use paceline::{ActivityConfig, Engine, ManualClock, OpError, OpRunner, Workload, WorkerContext};
    /// # struct Fails;
    /// # impl Workload for Fails {
    /// #     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { Ok(Box::new(FailsRun)) }
    /// # }
    /// # struct FailsRun;
    /// # impl OpRunner for FailsRun {
    /// #     fn run(&mut self, _: u64) -> Result<(), OpError> { Err(OpError::new("timeout", "slow")) }
    /// # }
    /// let run = Engine::with_clock(ManualClock::new()).start(ActivityConfig::new("a"), Fails)?;
    /// run.wait();
    /// assert_eq!(run.failure_kind().as_deref(), Some("timeout"));
    /// # Ok::<(), paceline::EngineError>(())
    /// ```
    pub fn failure_kind(&self) -> Option<String> {
        match self.shared.phase() {
            Phase::Finished { kind, .. } => kind,
            _ => None,
        }
    }

    /// Whether the run has ended.
    ///
    /// See [`Status`] for an example.
    pub fn is_finished(&self) -> bool {
        self.shared.is_finished()
    }

    /// Where the run stands now. Never waits on a worker.
    ///
    /// See [`Status`] for an example.
    pub fn status(&self) -> Status {
        let phase = self.shared.phase();
        let (threads, live_threads) = self.shared.threads();
        let state = match phase {
            Phase::Running => RunState::Running,
            Phase::Paused { .. } => RunState::Paused,
            Phase::Stopping { .. } => RunState::Stopping,
            Phase::Finished { .. } => RunState::Finished,
        };
        let outcome = phase.outcome().cloned();
        Status {
            alias: self.alias().to_string(),
            driver: self.shared.config.driver.clone(),
            state,
            threads,
            live_threads,
            rate: self.shared.spec(),
            cycles: self.shared.config.cycles.clone(),
            completed: self.shared.completed(),
            started_at: self.shared.started_at,
            outcome,
        }
    }

    /// Takes the interval since the previous snapshot (see
    /// [`Metrics::snapshot`]), with the pacer's missed slots and the paused time
    /// counted in it. Never waits on an idle worker. Use one reader per run: each
    /// op is in exactly one interval. Once the run has finished, the interval ends
    /// when it finished, so a finished run's elapsed time and rate stay its own.
    ///
    /// ```
    /// use paceline::{ActivityConfig, Engine, ManualClock, OpError, OpRunner, Workload, WorkerContext};
    /// struct Nop;
    /// impl Workload for Nop {
    ///     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { Ok(Box::new(NopRun)) }
    /// }
    /// struct NopRun;
    /// impl OpRunner for NopRun { fn run(&mut self, _: u64) -> Result<(), OpError> { Ok(()) } }
    /// let run = Engine::with_clock(ManualClock::new()).start(ActivityConfig::new("a").cycles(0..50), Nop)?;
    /// run.wait();
    /// assert_eq!(run.snapshot().ops(), 50);
    /// assert_eq!(run.totals().ops(), 50);
    /// # Ok::<(), paceline::EngineError>(())
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        let now = self.shared.clock.now();
        let end = self.shared.finished_at().map_or(now, |at| at.min(now));
        let sched = self.shared.run_queue_delta();
        let (run_queue, runs) = (sched.map(|c| c.run_queue), sched.map_or(0, |c| c.runs));
        let throttling = self.shared.throttle_delta();
        let outage = self.shared.outage_delta();
        #[cfg(not(loom))]
        if self.shared.is_async() {
            let g = self.shared.flight.take_interval(self.shared.pacer.now());
            let workers = self.shared.threads().0.max(1) as u64;
            let _reported = self.shared.report_missed();
            return self.shared.metrics.snapshot_with(end, |s| {
                let window = s.elapsed_nanos().saturating_mul(workers);
                s.set_in_flight(g.limit, g.max, g.full_nanos, window);
                s.set_run_queue(run_queue, runs);
                s.set_throttling(throttling);
                s.set_source_outage(outage.map(|o| o.min(s.elapsed_nanos())));
            });
        }
        // An outage counts from the send of its first failed request, which may
        // precede this window's start by a round trip: an interval holds no more
        // outage than its own length (coord_faults read 1.806 s in a 1.806 s
        // window, 216 µs over).
        let _reported = self.shared.report_missed();
        self.shared.metrics.snapshot_with(end, |s| {
            s.set_run_queue(run_queue, runs);
            s.set_throttling(throttling);
            s.set_source_outage(outage.map(|o| o.min(s.elapsed_nanos())));
        })
    }

    /// Everything the snapshots so far have taken.
    ///
    /// See [`snapshot`](Self::snapshot) for an example.
    pub fn totals(&self) -> Snapshot {
        self.shared.metrics.totals()
    }

    /// The run's metrics hub (for readers that want its timeline or recorders).
    ///
    /// ```
    /// # use paceline::{ActivityConfig, Engine, ManualClock, OpError, OpRunner, Workload, WorkerContext};
    /// # struct Nop;
    /// # impl Workload for Nop {
    /// #     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { Ok(Box::new(NopRun)) }
    /// # }
    /// # struct NopRun;
    /// # impl OpRunner for NopRun { fn run(&mut self, _: u64) -> Result<(), OpError> { Ok(()) } }
    /// let run = Engine::with_clock(ManualClock::new()).start(ActivityConfig::new("a"), Nop)?;
    /// run.wait();
    /// assert_eq!(run.metrics().recorders(), 1); // the pacer's missed-slot reporter
    /// # Ok::<(), paceline::EngineError>(())
    /// ```
    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// The control events so far, in time order.
    ///
    /// See [`Control`] for a full example.
    pub fn timeline(&self) -> Vec<TimelineEntry> {
        self.shared.metrics.timeline()
    }

    /// The pacer's accounting, or `None` when unpaced.
    ///
    /// ```
    /// # use paceline::{ActivityConfig, Engine, ManualClock, OpError, OpRunner, RateSpec, Workload, WorkerContext};
    /// # struct Nop;
    /// # impl Workload for Nop {
    /// #     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { Ok(Box::new(NopRun)) }
    /// # }
    /// # struct NopRun;
    /// # impl OpRunner for NopRun { fn run(&mut self, _: u64) -> Result<(), OpError> { Ok(()) } }
    /// let run = Engine::with_clock(ManualClock::new())
    ///     .start(ActivityConfig::new("a").cycles(0..10).rate(RateSpec::new(100.0)), Nop)?;
    /// run.wait();
    /// assert_eq!(run.pacer_stats().unwrap().grants, 10);
    /// # Ok::<(), paceline::EngineError>(())
    /// ```
    pub fn pacer_stats(&self) -> Option<LimiterStats> {
        if self.shared.is_paced() {
            self.shared.pacer.stats()
        } else {
            None
        }
    }

    /// Where this process stands in its shared schedule, with the activity's global
    /// numbers (read from the store at the last heartbeat); `None` when the activity
    /// paces alone ([`ActivityConfig::coordinate`](super::ActivityConfig::coordinate)).
    ///
    /// ```
    /// # use paceline::{ActivityConfig, Engine, ManualClock, OpError, OpRunner, Workload, WorkerContext};
    /// # struct Nop;
    /// # impl Workload for Nop {
    /// #     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { Ok(Box::new(NopRun)) }
    /// # }
    /// # struct NopRun;
    /// # impl OpRunner for NopRun { fn run(&mut self, _: u64) -> Result<(), OpError> { Ok(()) } }
    /// let run = Engine::with_clock(ManualClock::new()).start(ActivityConfig::new("a"), Nop)?;
    /// run.wait();
    /// assert!(run.coordinated().is_none());
    /// # Ok::<(), paceline::EngineError>(())
    /// ```
    pub fn coordinated(&self) -> Option<super::seam::Coordinated> {
        self.shared.coordinated()
    }

    /// Nanoseconds on the engine's clock now.
    ///
    /// See [`Status`] for an example.
    pub fn now(&self) -> Nanos {
        self.shared.clock.now()
    }
}

/// The ramp thread: steps the rate from `from` to `to` over `over`.
fn ramp(shared: Arc<Shared>, generation: u64, from: f64, to: RateSpec, t0: Nanos, over: Nanos) {
    let step = (over / 200).clamp(1_000_000, 100_000_000);
    // `begin_ramp` refused a ramp whose end does not fit the clock.
    let end = t0.saturating_add(over);
    let waiting = Waiting::sleep();
    let mut next = t0;
    loop {
        let now = shared.clock.now();
        let elapsed = now.saturating_sub(t0);
        if elapsed >= over {
            shared.ramp_done(generation, to);
            return;
        }
        let frac = elapsed as f64 / over as f64;
        let rate = (from + (to.rate() - from) * frac).clamp(MIN_RATE, MAX_RATE);
        let spec = to.with_rate(rate).unwrap_or(to);
        if !shared.ramp_step(generation, spec) {
            return;
        }
        next = next.saturating_add(step);
        shared
            .clock
            .wait_until(next.min(end), &waiting, &shared.signal);
        if shared.signal.is_stopped() {
            return;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::engine::{ActivityConfig, Engine, OpError, OpRunner, WorkerContext, Workload};
    use std::time::Duration;

    struct Nap;
    struct NapRunner(WorkerContext);
    impl Workload for Nap {
        fn runner(&self, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
            Ok(Box::new(NapRunner(ctx.clone())))
        }
    }
    impl OpRunner for NapRunner {
        fn run(&mut self, _: u64) -> Result<(), OpError> {
            self.0.sleep(Duration::from_micros(200));
            Ok(())
        }
    }

    /// Issue 18.10: retired workers are joined as the run goes on, not kept until
    /// its end.
    #[test]
    fn retired_workers_are_joined_as_the_run_goes_on() {
        let run = Engine::new()
            .start(
                ActivityConfig::new("churn")
                    .cycles(0..u64::from(u32::MAX))
                    .threads(8),
                Nap,
            )
            .unwrap_or_else(|e| panic!("{e}"));
        for _ in 0..5 {
            run.set_threads(1).unwrap_or_else(|e| panic!("{e}"));
            std::thread::sleep(Duration::from_millis(100));
            run.set_threads(8).unwrap_or_else(|e| panic!("{e}"));
            std::thread::sleep(Duration::from_millis(20));
        }
        // At most the last round's seven may still be exiting.
        let unjoined = run.shared.unjoined();
        assert!(unjoined <= 7, "{unjoined} workers left unjoined");
        run.stop();
        run.wait();
    }
}
