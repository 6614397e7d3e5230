//! What an activity runs: the [`Workload`] and [`OpRunner`] traits drivers implement.

use super::async_op::{AsyncOpRunner, LocalFuture};
use crate::clock::{Clock, Signal, Waiting};
use crate::nanos::{self, Nanos};
use crate::sync::threads::Arc;
use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

/// What an activity runs: a factory of per-thread [`OpRunner`]s.
///
/// The engine calls [`runner`](Self::runner) once on each worker thread when the
/// thread starts (and again after a runner panicked, to start clean), then calls
/// the runner once per cycle. Drivers implement it; so can an embedding tool that
/// wants to drive its own system without YAML.
///
/// ```
/// use paceline::{Engine, ActivityConfig, OpError, OpRunner, Workload, WorkerContext};
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// struct Sum(Arc<AtomicU64>);
/// struct SumRunner(Arc<AtomicU64>);
/// impl Workload for Sum {
///     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
///         Ok(Box::new(SumRunner(self.0.clone())))
///     }
/// }
/// impl OpRunner for SumRunner {
///     fn run(&mut self, cycle: u64) -> Result<(), OpError> {
///         self.0.fetch_add(cycle, Ordering::Relaxed);
///         Ok(())
///     }
/// }
///
/// let total = Arc::new(AtomicU64::new(0));
/// let engine = Engine::new();
/// let run = engine.start(ActivityConfig::new("sum").cycles(0..101).threads(2), Sum(total.clone()))?;
/// run.wait();
/// assert_eq!(total.load(Ordering::Relaxed), 5050);
/// # Ok::<(), paceline::EngineError>(())
/// ```
pub trait Workload: Send + Sync + 'static {
    /// A runner for the worker thread described by `worker`. An error here stops
    /// the activity with that error (a setup failure, such as a file that cannot be
    /// opened).
    fn runner(&self, worker: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError>;

    /// This worker's [`AsyncOpRunner`], or `None` when the workload has none (then
    /// an activity's `concurrency` is refused).
    ///
    /// The engine calls it on the worker thread, inside the worker's own runtime,
    /// and awaits the future *before* the worker takes its first slot, so
    /// connections opened here never land in an op's service time. `in_flight` is
    /// this worker's share of the activity's `concurrency`: the most ops it will
    /// have in flight at once, the number of connections to open up front.
    ///
    /// A workload that has an async runner runs on the async runner even when no
    /// `concurrency` is given (then one op in flight per thread), so its sync
    /// [`runner`](Self::runner) is only used where it has none; it may return an
    /// [`OpError`] saying so. By default, `None`.
    ///
    /// ```
    /// use paceline::{AsyncOpRunner, LocalFuture, OpError, OpRunner, Workload, WorkerContext};
    /// use std::rc::Rc;
    ///
    /// /// Ops that share a per-worker "pool" of `in_flight` connections.
    /// struct Pooled;
    /// struct PooledRunner(Rc<Vec<u64>>);
    /// impl AsyncOpRunner for PooledRunner {
    ///     fn start(&self, cycle: u64) -> LocalFuture<Result<(), OpError>> {
    ///         let pool = self.0.clone();
    ///         Box::pin(async move {
    ///             let _conn = pool[cycle as usize % pool.len()];
    ///             Ok(())
    ///         })
    ///     }
    /// }
    /// impl Workload for Pooled {
    ///     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
    ///         Err(OpError::new("async only", "this workload runs on the async runner"))
    ///     }
    ///     fn async_runner(&self, _: &WorkerContext, in_flight: usize)
    ///         -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>>
    ///     {
    ///         Some(Box::pin(async move {
    ///             let pool: Vec<u64> = (0..in_flight as u64).collect(); // "connect"
    ///             Ok(Box::new(PooledRunner(Rc::new(pool))) as Box<dyn AsyncOpRunner>)
    ///         }))
    ///     }
    /// }
    ///
    /// let ctx = WorkerContext::new(0, "a", std::sync::Arc::new(paceline::ManualClock::new()));
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let runner = rt.block_on(Pooled.async_runner(&ctx, 4).unwrap()).unwrap();
    /// assert!(rt.block_on(runner.start(7)).is_ok());
    /// ```
    fn async_runner(
        &self,
        worker: &WorkerContext,
        in_flight: usize,
    ) -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>> {
        let _ = (worker, in_flight);
        None
    }
}

impl<W: Workload + ?Sized> Workload for Box<W> {
    fn runner(&self, worker: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        (**self).runner(worker)
    }
    fn async_runner(
        &self,
        worker: &WorkerContext,
        in_flight: usize,
    ) -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>> {
        (**self).async_runner(worker, in_flight)
    }
}

impl<W: Workload + ?Sized> Workload for Arc<W> {
    fn runner(&self, worker: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        (**self).runner(worker)
    }
    fn async_runner(
        &self,
        worker: &WorkerContext,
        in_flight: usize,
    ) -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>> {
        (**self).async_runner(worker, in_flight)
    }
}

/// Runs one op per cycle, on one worker thread.
///
/// ```
/// use paceline::{OpError, OpRunner};
/// struct EveryTenthFails;
/// impl OpRunner for EveryTenthFails {
///     fn run(&mut self, cycle: u64) -> Result<(), OpError> {
///         if cycle % 10 == 9 { Err(OpError::new("tenth", format!("cycle {cycle}"))) } else { Ok(()) }
///     }
/// }
/// assert!(EveryTenthFails.run(19).is_err());
/// ```
pub trait OpRunner: Send {
    /// Runs the op of `cycle`. The engine times this call as the op's service time.
    fn run(&mut self, cycle: u64) -> Result<(), OpError>;

    /// Called once when the worker leaves (its cycles are done, the activity stopped,
    /// or the thread count went down): flush buffers, close connections. Errors here
    /// are counted under their kind. By default, does nothing.
    ///
    /// ```
    /// use paceline::{OpError, OpRunner};
    /// struct Nop;
    /// impl OpRunner for Nop { fn run(&mut self, _: u64) -> Result<(), OpError> { Ok(()) } }
    /// assert!(Nop.finish().is_ok());
    /// ```
    fn finish(&mut self) -> Result<(), OpError> {
        Ok(())
    }
}

/// An op's failure: a kind (counted in the metrics) and a message (shown when the
/// error stops the activity).
///
/// Keep kinds few and stable (`timeout`, `http 503`, `connect`): metrics count
/// errors per kind.
///
/// ```
/// let e = paceline::OpError::new("timeout", "no answer after 2s");
/// assert_eq!((e.kind(), e.message()), ("timeout", "no answer after 2s"));
/// assert_eq!(e.to_string(), "timeout: no answer after 2s");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpError {
    kind: Cow<'static, str>,
    message: String,
    fatal: bool,
    retryable: Option<bool>,
}

impl OpError {
    /// An error of `kind` with `message`.
    ///
    /// ```
    /// let e = paceline::OpError::new(String::from("http 503"), "service unavailable");
    /// assert_eq!(e.kind(), "http 503");
    /// ```
    pub fn new(kind: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: message.into(),
            fatal: false,
            retryable: None,
        }
    }

    /// Says whether trying the op again with the same values can succeed: a
    /// driver's word for the error policy. A bare `retry:N`
    /// ([`ErrorPolicy`](super::ErrorPolicy)) retries an error marked `true` or
    /// not marked at all, never one marked `false` (a duplicate key fails again
    /// with the same key). By default, not marked.
    ///
    /// ```
    /// let e = paceline::OpError::new("sql 40", "could not serialize").retryable(true);
    /// assert_eq!(e.is_retryable(), Some(true));
    /// ```
    pub fn retryable(mut self, yes: bool) -> Self {
        self.retryable = Some(yes);
        self
    }

    /// What the driver said with [`retryable`](Self::retryable), if anything.
    ///
    /// ```
    /// assert_eq!(paceline::OpError::new("k", "m").is_retryable(), None);
    /// ```
    pub fn is_retryable(&self) -> Option<bool> {
        self.retryable
    }

    /// Marks the error fatal: it stops the activity whatever the error policy
    /// says, with no retry (the output is gone, the system under test cannot be
    /// reached again).
    ///
    /// ```
    /// let e = paceline::OpError::new("closed", "stdout was closed").fatal();
    /// assert!(e.is_fatal());
    /// ```
    pub fn fatal(mut self) -> Self {
        self.fatal = true;
        self
    }

    /// Whether the error stops the activity whatever the policy says.
    ///
    /// ```
    /// assert!(!paceline::OpError::new("timeout", "slow").is_fatal());
    /// ```
    pub fn is_fatal(&self) -> bool {
        self.fatal
    }

    /// The kind, as counted in the metrics.
    ///
    /// ```
    /// assert_eq!(paceline::OpError::new("k", "m").kind(), "k");
    /// ```
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The message.
    ///
    /// ```
    /// assert_eq!(paceline::OpError::new("k", "m").message(), "m");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            f.write_str(&self.kind)
        } else {
            write!(f, "{}: {}", self.kind, self.message)
        }
    }
}

impl std::error::Error for OpError {}

/// What a worker thread knows about itself: its index, the activity, and the
/// engine's clock (so a driver that sleeps or times something uses the same time
/// as the metrics; on a [`ManualClock`](crate::ManualClock) sleeping advances it).
///
/// ```
/// use paceline::{Clock, ManualClock, WorkerContext};
/// use std::sync::Arc;
/// let clock = ManualClock::new();
/// let ctx = WorkerContext::new(3, "reads", Arc::new(clock.clone()));
/// ctx.sleep(std::time::Duration::from_micros(5));
/// assert_eq!((ctx.index(), ctx.alias(), clock.now()), (3, "reads", 5_000));
/// ```
#[derive(Debug, Clone)]
pub struct WorkerContext {
    index: usize,
    alias: Arc<str>,
    clock: Arc<dyn Clock>,
    signal: Signal,
    waiting: Waiting,
}

impl WorkerContext {
    /// A context for worker `index` of activity `alias` on `clock`, for a driver's
    /// own tests; the engine makes the real ones.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let ctx = paceline::WorkerContext::new(0, "a", Arc::new(paceline::ManualClock::new()));
    /// assert!(!ctx.is_stopping());
    /// ```
    pub fn new(index: usize, alias: &str, clock: Arc<dyn Clock>) -> Self {
        let waiting = clock.default_waiting();
        Self::with_signal(index, Arc::from(alias), clock, Signal::new(), waiting)
    }

    pub(crate) fn with_signal(
        index: usize,
        alias: Arc<str>,
        clock: Arc<dyn Clock>,
        signal: Signal,
        waiting: Waiting,
    ) -> Self {
        Self {
            index,
            alias,
            clock,
            signal,
            waiting,
        }
    }

    /// The worker's index: 0 for the first thread, then 1, 2, … in the order they
    /// were started (an index is never reused within one run).
    ///
    /// ```
    /// let ctx = paceline::WorkerContext::new(7, "a", std::sync::Arc::new(paceline::ManualClock::new()));
    /// assert_eq!(ctx.index(), 7);
    /// ```
    pub fn index(&self) -> usize {
        self.index
    }

    /// The activity's alias.
    ///
    /// ```
    /// let ctx = paceline::WorkerContext::new(0, "writes", std::sync::Arc::new(paceline::ManualClock::new()));
    /// assert_eq!(ctx.alias(), "writes");
    /// ```
    pub fn alias(&self) -> &str {
        &self.alias
    }

    /// The engine's clock.
    ///
    /// ```
    /// use paceline::Clock;
    /// let ctx = paceline::WorkerContext::new(0, "a", std::sync::Arc::new(paceline::ManualClock::starting_at(8)));
    /// assert_eq!(ctx.clock().now(), 8);
    /// ```
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The clock's reading now, in nanoseconds.
    ///
    /// ```
    /// let ctx = paceline::WorkerContext::new(0, "a", std::sync::Arc::new(paceline::ManualClock::starting_at(8)));
    /// assert_eq!(ctx.now(), 8);
    /// ```
    pub fn now(&self) -> Nanos {
        self.clock.now()
    }

    /// Sleeps for `d` on the engine's clock with its waiting strategy, returning
    /// early if the activity stops. Returns the clock's reading at the end.
    ///
    /// ```
    /// let ctx = paceline::WorkerContext::new(0, "a", std::sync::Arc::new(paceline::ManualClock::new()));
    /// assert_eq!(ctx.sleep(std::time::Duration::from_millis(1)), 1_000_000);
    /// ```
    pub fn sleep(&self, d: Duration) -> Nanos {
        let nanos = nanos::from_duration(d);
        self.sleep_until(self.clock.now().saturating_add(nanos))
    }

    /// Sleeps until the clock reads `deadline`, returning early if the activity
    /// stops. Returns the clock's reading at the end.
    ///
    /// ```
    /// let ctx = paceline::WorkerContext::new(0, "a", std::sync::Arc::new(paceline::ManualClock::new()));
    /// assert_eq!(ctx.sleep_until(250), 250);
    /// ```
    pub fn sleep_until(&self, deadline: Nanos) -> Nanos {
        self.clock.wait_until(deadline, &self.waiting, &self.signal)
    }

    /// Sleeps for `d` on the engine's clock without holding the thread: the
    /// future an async op awaits to take time (the `diag` driver's `latency=`).
    /// On an async worker it waits on the worker's own timer (a timerfd on the
    /// real clock, exact to the nanosecond on the [`ManualClock`](crate::ManualClock),
    /// see `docs/engine.md`); elsewhere on the clock's timer
    /// ([`Clock::wake_at`](crate::Clock::wake_at)). Never tokio's 1 ms timer.
    /// Resolves to the clock's reading at its end.
    ///
    /// ```
    /// use paceline::{Clock, ManualClock};
    /// let clock = ManualClock::new();
    /// let ctx = paceline::WorkerContext::new(0, "a", std::sync::Arc::new(clock.clone()));
    /// let f = ctx.sleep_async(std::time::Duration::from_micros(50));
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let mover = std::thread::spawn(move || {
    ///     while clock.now() < 50_000 { clock.advance_nanos(1_000); std::thread::yield_now(); }
    /// });
    /// assert_eq!(rt.block_on(f), 50_000);
    /// mover.join().unwrap();
    /// ```
    #[cfg(not(loom))]
    pub fn sleep_async(&self, d: Duration) -> super::async_op::LocalFuture<Nanos> {
        let deadline = self.clock.now().saturating_add(nanos::from_duration(d));
        self.sleep_until_async(deadline)
    }

    /// [`sleep_async`](Self::sleep_async) until the clock reads `deadline`.
    ///
    /// ```
    /// let ctx = paceline::WorkerContext::new(0, "a", std::sync::Arc::new(paceline::ManualClock::starting_at(9)));
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// assert_eq!(rt.block_on(ctx.sleep_until_async(5)), 9); // already past
    /// ```
    #[cfg(not(loom))]
    pub fn sleep_until_async(&self, deadline: Nanos) -> super::async_op::LocalFuture<Nanos> {
        Box::pin(super::async_motor::idle::sleep_until(
            self.clock.clone(),
            self.waiting,
            deadline,
        ))
    }

    /// Spins (busy-waits) for `d` on the engine's clock without giving up the CPU,
    /// returning early if the activity stops. On a clock that is not real this
    /// advances it like [`sleep`](Self::sleep).
    ///
    /// ```
    /// let ctx = paceline::WorkerContext::new(0, "a", std::sync::Arc::new(paceline::ManualClock::new()));
    /// assert_eq!(ctx.spin(std::time::Duration::from_micros(3)), 3_000);
    /// ```
    pub fn spin(&self, d: Duration) -> Nanos {
        let nanos = nanos::from_duration(d);
        let deadline = self.clock.now().saturating_add(nanos);
        // A clock on the real timeline passes by itself: spin on it, never
        // yielding (issue 24 item 19: the pacer's spin, `Waiting::spin()`,
        // yields between spins after 20 µs, so under load a "busy" op gave its
        // core away and ran long). Any other clock (a manual one) is moved by
        // waiting on it.
        if self.clock.timeline_origin().is_none() {
            return self
                .clock
                .wait_until(deadline, &Waiting::spin(), &self.signal);
        }
        loop {
            let now = self.clock.now();
            if now >= deadline || self.signal.is_stopped() {
                return now;
            }
            std::hint::spin_loop();
        }
    }

    /// Whether the activity is stopping: a long op should give up early.
    ///
    /// ```
    /// let ctx = paceline::WorkerContext::new(0, "a", std::sync::Arc::new(paceline::ManualClock::new()));
    /// assert!(!ctx.is_stopping());
    /// ```
    pub fn is_stopping(&self) -> bool {
        self.signal.is_stopped()
    }
}

#[cfg(all(test, not(loom)))]
mod spin_tests {
    use super::*;
    use crate::sync::{AtomicU64, Ordering};

    /// A clock on the real timeline (so `spin` spins on it) that moves 1 µs per
    /// reading and refuses to be waited on: `wait_until` with `Waiting::spin()`
    /// is the pacer's spin, which yields the CPU between spins.
    #[derive(Debug, Default)]
    struct Ticking(AtomicU64);

    impl Clock for Ticking {
        fn now(&self) -> Nanos {
            self.0.fetch_add(1_000, Ordering::Relaxed)
        }
        fn wait_until(&self, _: Nanos, _: &Waiting, _: &crate::Signal) -> Nanos {
            panic!("spin waited through the clock's waiting strategy, which yields the CPU")
        }
        fn timeline_origin(&self) -> Option<Nanos> {
            Some(0)
        }
    }

    /// Issue 24 item 19: `latency_mode: spin` called the pacer's spin, which
    /// yields between spins after 20 µs.
    #[test]
    fn issue24_item19_spin_on_a_real_clock_never_waits_through_a_yielding_strategy() {
        let ctx = WorkerContext::new(0, "a", Arc::new(Ticking::default()));
        let end = ctx.spin(Duration::from_micros(500));
        assert!((500_000..=502_000).contains(&end), "{end}");
        // A manual clock is still moved by waiting on it.
        let manual = WorkerContext::new(0, "a", Arc::new(crate::ManualClock::new()));
        assert_eq!(manual.spin(Duration::from_micros(3)), 3_000);
    }

    /// The thread's context switches, voluntary and not, from
    /// `/proc/thread-self/status`; `None` where there is no such file. A yield
    /// that hands the core to a runnable thread counts as not voluntary (the
    /// thread stays runnable), as a preemption does.
    fn switches() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/thread-self/status").ok()?;
        let count = |key: &str| -> Option<u64> {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().parse().ok())
        };
        Some(count("voluntary_ctxt_switches:")? + count("nonvoluntary_ctxt_switches:")?)
    }

    /// Issue 24 item 19, on the real clock, beside a thread on every core that
    /// yields in a loop: the spin before the fix yielded at every turn after
    /// 20 µs and got no CPU at all (0.000 s of a 236 ms spin here, load 18 on 2
    /// cores); a busy spin keeps its fair share (0.037 s of 216 ms). The floor
    /// asserted is 2 % of the wall time, a share a machine at 50 runnable
    /// threads per core still gives; the switches are printed for the record.
    #[test]
    fn issue24_item19_a_spin_on_the_real_clock_keeps_its_core() {
        let Some(before) = switches() else {
            eprintln!("skipped: no /proc/thread-self/status here");
            return;
        };
        // Something runnable beside it on every core, so a yield would switch.
        let stop = Arc::new(crate::sync::AtomicBool::new(false));
        let others: Vec<_> = (0..crate::machine_cores())
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::yield_now();
                    }
                })
            })
            .collect();
        let ctx = WorkerContext::new(0, "a", Arc::new(crate::MonotonicClock::new()));
        let cpu0 = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        let wall = std::time::Instant::now();
        ctx.spin(Duration::from_millis(200));
        let wall = wall.elapsed();
        let cpu1 = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        let after = switches().unwrap_or(u64::MAX);
        stop.store(true, Ordering::Relaxed);
        for t in others {
            let _ = t.join();
        }
        let n = after - before;
        eprintln!("spin: {n} context switches in {wall:?}");
        let cpu = (cpu1.tv_sec - cpu0.tv_sec) as f64 + (cpu1.tv_nsec - cpu0.tv_nsec) as f64 / 1e9;
        eprintln!("spin: {cpu:.3} s of CPU over {wall:?}");
        assert!(
            cpu >= 0.02 * wall.as_secs_f64(),
            "a spin got {cpu:.4} s of CPU over {wall:?}: it gave its core away"
        );
    }
}
