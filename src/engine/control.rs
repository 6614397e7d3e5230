//! The control handle of a running activity: the commands that change a run
//! (rate, ramp, threads, concurrency, pause, stop) and the ramp thread. What a
//! reader sees (status, outcome, snapshots) is in `control_read.rs`.

use super::config::ActivityConfig;
use super::error::ControlError;
use super::runtime::Shared;
use crate::clock::Waiting;
use crate::nanos::{self, Nanos};
use crate::pace::{MAX_RATE, MIN_RATE, RateSpec};
use crate::sync::threads::Arc;
use std::fmt;
use std::time::Duration;

#[path = "control_read.rs"]
mod read;

pub use read::{RunState, Status};

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
    /// On the async runner with a given `concurrency`, more threads than it are
    /// refused (each thread holds at least one op in flight): raise it first.
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
    /// as [`Outcome::Elapsed`](crate::Outcome::Elapsed) (unless it had already
    /// ended, or was stopping for another cause). `paceline run --duration` calls
    /// it on every activity still running when the whole run's time is up. It
    /// acts in this process only.
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
