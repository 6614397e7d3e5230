//! What a reader of a running activity sees: where it stands ([`Status`]), how
//! it ended, its metrics, timeline and pacer figures. Nothing here changes the
//! run; the commands that do are in `control.rs`. A status read never waits on
//! a worker, and a snapshot never waits on an idle one.

use super::Control;
use crate::engine::phase::Phase;
use crate::engine::runtime::Outcome;
use crate::metrics::{Metrics, Snapshot, TimelineEntry};
use crate::nanos::Nanos;
use crate::pace::{LimiterStats, RateSpec};
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

impl Control {
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
        // The motors lock first (`finished_at`, `threads`), then `missed`; the
        // end is read under `missed`, with the paused time's end.
        let finished = self.shared.finished_at();
        let sched = self.shared.run_queue_delta();
        let (run_queue, runs) = (sched.map(|c| c.run_queue), sched.map_or(0, |c| c.runs));
        let cpu = sched.map(|c| c.on_cpu);
        let throttling = self.shared.throttle_delta();
        let outage = self.shared.outage_delta();
        let claim_wait = self.shared.claim_wait_delta();
        #[cfg(not(loom))]
        if self.shared.is_async() {
            let g = self.shared.flight.take_interval(self.shared.pacer.now());
            let workers = self.shared.threads().0.max(1) as u64;
            let (_reported, now) = self.shared.report_missed();
            let end = finished.map_or(now, |at| at.min(now));
            return self.shared.metrics.snapshot_with(end, |s| {
                let window = s.elapsed_nanos().saturating_mul(workers);
                s.set_in_flight(g.limit, g.max, g.full_nanos, window);
                s.set_run_queue(run_queue, runs);
                s.set_worker_cpu(cpu);
                s.set_throttling(throttling);
                s.set_source_outage(outage.map(|o| o.min(s.elapsed_nanos())));
                s.set_claim_wait(claim_wait.map(|w| w.min(s.elapsed_nanos())));
            });
        }
        // An outage counts from the send of its first failed request, which may
        // precede this window's start by a round trip: an interval holds no more
        // outage than its own length (coord_faults read 1.806 s in a 1.806 s
        // window, 216 µs over).
        let (_reported, now) = self.shared.report_missed();
        let end = finished.map_or(now, |at| at.min(now));
        self.shared.metrics.snapshot_with(end, |s| {
            s.set_run_queue(run_queue, runs);
            s.set_worker_cpu(cpu);
            s.set_throttling(throttling);
            s.set_source_outage(outage.map(|o| o.min(s.elapsed_nanos())));
            s.set_claim_wait(claim_wait.map(|w| w.min(s.elapsed_nanos())));
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
    /// paces alone ([`ActivityConfig::coordinate`](crate::ActivityConfig::coordinate)).
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
    pub fn coordinated(&self) -> Option<crate::engine::seam::Coordinated> {
        self.shared.coordinated()
    }

    /// Nanoseconds on the engine's clock now.
    ///
    /// See [`Status`] for an example.
    pub fn now(&self) -> Nanos {
        self.shared.clock.now()
    }
}
