//! The engine: starts activities on one clock and keeps their handles.

use super::config::ActivityConfig;
use super::control::Control;
use super::error::EngineError;
use super::runtime::{Outcome, Shared};
use super::workload::Workload;
use crate::clock::{Clock, MonotonicClock, Waiting};
use crate::sync::threads::{self, Arc, Mutex};
use std::fmt;

/// Runs activities: each with its own worker threads, pacer and metrics, all on one
/// clock. Cloning shares the engine.
///
/// ```
/// use paceline::{ActivityConfig, Engine, ManualClock, OpError, OpRunner, Outcome, Workload, WorkerContext};
/// struct Nop;
/// impl Workload for Nop {
///     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { Ok(Box::new(NopRun)) }
/// }
/// struct NopRun;
/// impl OpRunner for NopRun { fn run(&mut self, _: u64) -> Result<(), OpError> { Ok(()) } }
///
/// let engine = Engine::with_clock(ManualClock::new());
/// engine.start(ActivityConfig::new("reads").cycles(0..100).threads(2), Nop)?;
/// engine.start(ActivityConfig::new("writes").cycles(0..10), Nop)?;
/// let ends = engine.wait_all();
/// assert_eq!(ends, [("reads".to_string(), Outcome::Completed), ("writes".to_string(), Outcome::Completed)]);
/// # Ok::<(), paceline::EngineError>(())
/// ```
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    clock: Arc<dyn Clock>,
    waiting: Mutex<Option<Waiting>>,
    /// The stop grace of activities whose config sets none.
    stop_grace: Mutex<Option<std::time::Duration>>,
    runs: Mutex<Runs>,
}

/// The runs lock: every run started, and whether the engine was closed.
#[derive(Default)]
struct Runs {
    list: Vec<Control>,
    closed: bool,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("clock", &self.inner.clock)
            .field("activities", &threads::lock(&self.inner.runs).list.len())
            .finish()
    }
}

impl Default for Engine {
    fn default() -> Self {
        Self::new()
    }
}

impl Engine {
    /// An engine on the real monotonic clock.
    ///
    /// ```
    /// assert!(paceline::Engine::new().activities().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::with_clock(MonotonicClock::new())
    }

    /// An engine on `clock`: a [`ManualClock`](crate::ManualClock) makes runs
    /// deterministic (one worker thread) and instant.
    ///
    /// ```
    /// use paceline::Clock;
    /// let e = paceline::Engine::with_clock(paceline::ManualClock::starting_at(7));
    /// assert_eq!(e.clock().now(), 7);
    /// ```
    pub fn with_clock(clock: impl Clock) -> Self {
        Self::with_shared_clock(Arc::new(clock))
    }

    /// An engine on a clock shared with other code.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let clock: Arc<dyn paceline::Clock> = Arc::new(paceline::ManualClock::new());
    /// let e = paceline::Engine::with_shared_clock(clock.clone());
    /// assert!(Arc::ptr_eq(e.clock(), &clock));
    /// ```
    pub fn with_shared_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            inner: Arc::new(Inner {
                clock,
                waiting: Mutex::new(None),
                stop_grace: Mutex::new(None),
                runs: Mutex::new(Runs::default()),
            }),
        }
    }

    /// Sets the waiting strategy of pacers started from now on. By default, the
    /// clock's default ([`Waiting::default()`] on the real clock).
    ///
    /// ```
    /// let e = paceline::Engine::new();
    /// e.set_waiting(paceline::Waiting::spin_sleep());
    /// ```
    pub fn set_waiting(&self, waiting: Waiting) {
        *threads::lock(&self.inner.waiting) = Some(waiting);
    }

    /// Sets the stop grace of activities started from now on whose config sets
    /// none ([`ActivityConfig::stop_grace`]): how long their ops in flight on the
    /// async runner may go on after a stop before they are cancelled. By default,
    /// [`DEFAULT_STOP_GRACE`](crate::DEFAULT_STOP_GRACE). The command line sets it
    /// from `--stop-timeout`, so one setting bounds a stop.
    ///
    /// ```
    /// use std::time::Duration;
    /// let e = paceline::Engine::new();
    /// e.set_stop_grace(Duration::from_secs(2));
    /// assert_eq!(e.stop_grace(), Duration::from_secs(2));
    /// ```
    pub fn set_stop_grace(&self, grace: std::time::Duration) {
        *threads::lock(&self.inner.stop_grace) = Some(grace);
    }

    /// The stop grace given to activities whose config sets none.
    ///
    /// ```
    /// assert_eq!(paceline::Engine::new().stop_grace(), paceline::DEFAULT_STOP_GRACE);
    /// ```
    pub fn stop_grace(&self) -> std::time::Duration {
        threads::lock(&self.inner.stop_grace).unwrap_or(super::config::DEFAULT_STOP_GRACE)
    }

    /// The engine's clock.
    ///
    /// See [`with_clock`](Self::with_clock).
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// Validates `config` and starts the activity: its worker threads begin at
    /// once. An alias may be reused once the run that had it has finished; the
    /// finished run stays in [`activities`](Self::activities), and
    /// [`get`](Self::get) finds the newest run of an alias. A closed engine
    /// refuses ([`EngineError::Closed`]).
    ///
    /// See [`Engine`] for an example.
    pub fn start(
        &self,
        mut config: ActivityConfig,
        workload: impl Workload,
    ) -> Result<Control, EngineError> {
        config.validate()?;
        if config.stop_grace.is_none() {
            config.stop_grace = *threads::lock(&self.inner.stop_grace);
        }
        let mut runs = threads::lock(&self.inner.runs);
        if runs.closed {
            return Err(EngineError::Closed {
                alias: config.alias,
            });
        }
        if runs
            .list
            .iter()
            .any(|c| c.alias() == config.alias && !c.is_finished())
        {
            return Err(EngineError::DuplicateAlias {
                alias: config.alias,
            });
        }
        let waiting = *threads::lock(&self.inner.waiting);
        let shared = Shared::new(
            config,
            self.inner.clock.clone(),
            waiting,
            Box::new(workload),
        )?;
        shared
            .launch()
            .map_err(|message| EngineError::Spawn { message })?;
        let control = Control::new(shared);
        runs.list.push(control.clone());
        Ok(control)
    }

    /// The activities started, in start order, finished ones included (an alias
    /// reused after its run finished appears once per run).
    ///
    /// See [`Engine`] for an example.
    pub fn activities(&self) -> Vec<Control> {
        threads::lock(&self.inner.runs).list.clone()
    }

    /// The activity called `alias`: its newest run.
    ///
    /// ```
    /// assert!(paceline::Engine::new().get("nope").is_none());
    /// ```
    pub fn get(&self, alias: &str) -> Option<Control> {
        threads::lock(&self.inner.runs)
            .list
            .iter()
            .rev()
            .find(|c| c.alias() == alias)
            .cloned()
    }

    /// Stops every activity (one on a shared schedule: this process's part only;
    /// [`Control::stop`] stops it everywhere).
    ///
    /// ```
    /// paceline::Engine::new().stop_all();
    /// ```
    pub fn stop_all(&self) {
        for c in self.activities() {
            c.stop_here();
        }
    }

    /// Forgets the runs that have finished (their handles stay usable) and returns
    /// how many: for an embedding that starts many runs in one engine and reads
    /// each run's results through its own handle. By default nothing is forgotten,
    /// so a report loop that polls [`activities`](Self::activities) sees every run.
    ///
    /// ```
    /// use paceline::{ActivityConfig, Engine, ManualClock, OpError, OpRunner, Workload, WorkerContext};
    /// struct Nop;
    /// impl Workload for Nop {
    ///     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { Ok(Box::new(NopRun)) }
    /// }
    /// struct NopRun;
    /// impl OpRunner for NopRun { fn run(&mut self, _: u64) -> Result<(), OpError> { Ok(()) } }
    /// let engine = Engine::with_clock(ManualClock::new());
    /// let run = engine.start(ActivityConfig::new("a").cycles(0..10), Nop)?;
    /// run.wait();
    /// assert_eq!(engine.forget_finished(), 1);
    /// assert!(engine.activities().is_empty());
    /// assert_eq!(run.snapshot().ops(), 10);
    /// # Ok::<(), paceline::EngineError>(())
    /// ```
    pub fn forget_finished(&self) -> usize {
        let mut runs = threads::lock(&self.inner.runs);
        let before = runs.list.len();
        runs.list.retain(|c| !c.is_finished());
        before - runs.list.len()
    }

    /// Stops every activity (this process's part of a shared schedule) and refuses
    /// to start any more: what an interrupt does. A start racing with it either lands before it (and is stopped) or
    /// after it (and is refused), never in between.
    ///
    /// ```
    /// let engine = paceline::Engine::new();
    /// engine.close();
    /// assert!(engine.is_closed());
    /// ```
    pub fn close(&self) {
        let runs = {
            let mut runs = threads::lock(&self.inner.runs);
            runs.closed = true;
            runs.list.clone()
        };
        for c in runs {
            c.stop_here();
        }
    }

    /// Whether [`close`](Self::close) was called.
    ///
    /// See [`close`](Self::close) for an example.
    pub fn is_closed(&self) -> bool {
        threads::lock(&self.inner.runs).closed
    }

    /// Waits for every activity started so far; their outcomes, in start order.
    ///
    /// See [`Engine`] for an example.
    pub fn wait_all(&self) -> Vec<(String, Outcome)> {
        self.activities()
            .into_iter()
            .map(|c| (c.alias().to_string(), c.wait()))
            .collect()
    }
}
