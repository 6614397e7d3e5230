//! The verdict on a run (or one interval of it): did it keep its schedule, and if
//! not, did the system under test fall behind, or the generator? Its kinds, the
//! figures it is decided from ([`Figures`], gathered from a [`Snapshot`]) and the
//! [`Verdict`] the reports carry; the decision itself is [`judge`](super::judge).

use super::cpu::{cpu_cores_over, machine_cores};
use super::judge::judge;
use super::rates::{achieved_rate, scoped_drawn_rate, wait_bound};
use crate::metrics::{Latencies, Snapshot, Throttling};
use crate::nanos::{NANOS_PER_SEC, Nanos};
use crate::pace::{Arrivals, Scope};
use std::fmt;

/// What limited a run, in one word.
///
/// ```
/// use paceline::VerdictKind;
/// assert_eq!(VerdictKind::SystemBound.to_string(), "system-bound");
/// assert_eq!(VerdictKind::parse("on-schedule"), Some(VerdictKind::OnSchedule));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VerdictKind {
    /// The achieved rate is within 1 % of the target and wait p99 under
    /// [`wait_bound`]: the latencies describe the system under test.
    OnSchedule,
    /// Late, and the lateness is queueing behind ops that take too long for the
    /// threads given (or a stall of the system under test).
    SystemBound,
    /// Late, and the lateness is the generator's own: dispatch after a worker was
    /// free, per-op cost above the op's, or nearly all the machine's cores used.
    GeneratorBound,
    /// Late, and the async runner's cap on ops in flight was the limit: the ops
    /// at the target rate need about as many in flight as `concurrency` allows,
    /// so later slots waited for room. Raise `concurrency`.
    ConcurrencyBound,
    /// No target rate: ops run as fast as the threads take them.
    Unpaced,
    /// Late, but the window held too few slots to tell why: its edges alone
    /// (an op in flight per thread) move the rate by more than a tenth, or it
    /// lasted under [`MIN_CPU_WINDOW`](crate::MIN_CPU_WINDOW). Run longer
    /// before reading anything into it ([`judge`](crate::judge)'s rule 3).
    TooShort,
    /// An error stopped the run ([`Verdict::stopped`]): the numbers are those
    /// of the ops before it, and the error is what to fix, not the pacing.
    StoppedByError,
    /// The schedule never began: the run stopped during its set-up (the
    /// workers opening their connections, or a launch at rate 0 never raised),
    /// before its first slot ([`Verdict::not_started`]). No op ran, so nothing
    /// is known of the pacing or of the system under test; an interval taken
    /// before the first slot is judged so too.
    NotStarted,
    /// Late on a shared schedule because this process waited for cycles that
    /// another process's claims held: a member that died (or stalled past its
    /// claim's lease) held them until the lease expired (5 s after its last
    /// heartbeat), and this process re-ran them late. Neither this process's
    /// generator nor the system under test ([`Figures::claim_wait_nanos`]).
    MemberLost,
}

impl VerdictKind {
    /// The kind's name, as the reports and the JSON write it.
    ///
    /// ```
    /// assert_eq!(paceline::VerdictKind::GeneratorBound.as_str(), "generator-bound");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OnSchedule => "on-schedule",
            Self::SystemBound => "system-bound",
            Self::GeneratorBound => "generator-bound",
            Self::ConcurrencyBound => "concurrency-bound",
            Self::Unpaced => "unpaced",
            Self::TooShort => "too-short",
            Self::StoppedByError => "stopped-by-error",
            Self::NotStarted => "not-started",
            Self::MemberLost => "member-lost",
        }
    }

    /// The kind named `name`, or `None`.
    ///
    /// ```
    /// assert_eq!(paceline::VerdictKind::parse("unpaced"), Some(paceline::VerdictKind::Unpaced));
    /// assert_eq!(paceline::VerdictKind::parse("late"), None);
    /// ```
    pub fn parse(name: &str) -> Option<Self> {
        [
            Self::OnSchedule,
            Self::SystemBound,
            Self::GeneratorBound,
            Self::ConcurrencyBound,
            Self::Unpaced,
            Self::TooShort,
            Self::StoppedByError,
            Self::NotStarted,
            Self::MemberLost,
        ]
        .into_iter()
        .find(|k| k.as_str() == name)
    }
}

impl fmt::Display for VerdictKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The numbers a verdict is decided from. Times in nanoseconds.
///
/// ```
/// use paceline::{Figures, VerdictKind, judge};
/// let f = Figures {
///     target_rate: Some(1000.0),
///     achieved_rate: 500.0,
///     elapsed_nanos: 10_000_000_000,
///     ops: 5000,
///     threads: 1,
///     service_mean: 2_000_000.0,
///     service_max: 2_100_000,
///     wait_p99: 4_900_000_000,
///     queue_mean: 2_500_000_000.0,
///     queue_p99: 4_900_000_000,
///     dispatch_mean: 20_000.0,
///     dispatch_p99: 40_000,
///     cpu_cores: Some(0.1),
///     machine_cores: 2,
///     ..Default::default()
/// };
/// let (kind, reason) = judge(&f);
/// assert_eq!(kind, VerdictKind::SystemBound);
/// assert!(reason.starts_with("ops take 2.00 ms on average; 1000/s needs 2.0 threads, the run had 1"), "{reason}");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Figures {
    /// The target rate in ops/s; `None` when unpaced, 0 while paused.
    pub target_rate: Option<f64>,
    /// Ops per second achieved over the window. [`Figures::of`] takes the
    /// snapshot's completions per second ([`Snapshot::rate`]), right for an
    /// interval; a verdict on a whole paced run sets the start rate over its
    /// schedule ([`achieved_rate`](crate::achieved_rate)), as the CLI's summary
    /// does, so that the drain after the last start is no shortfall.
    pub achieved_rate: f64,
    /// The window's length.
    pub elapsed_nanos: Nanos,
    /// Ops that finished in the window.
    pub ops: u64,
    /// Worker threads.
    pub threads: usize,
    /// Mean service time.
    pub service_mean: f64,
    /// Longest service time.
    pub service_max: Nanos,
    /// Wait p99.
    pub wait_p99: Nanos,
    /// Mean queueing part of the wait.
    pub queue_mean: f64,
    /// Queueing p99.
    pub queue_p99: Nanos,
    /// Mean dispatch part of the wait.
    pub dispatch_mean: f64,
    /// Dispatch p99.
    pub dispatch_p99: Nanos,
    /// Cores the generator used over the window; `None` when unknown. The
    /// activity's own worker threads' when [`cpu_of_workers`](Self::cpu_of_workers),
    /// else the whole process's.
    pub cpu_cores: Option<f64>,
    /// Whether [`cpu_cores`](Self::cpu_cores) is the CPU of this activity's
    /// worker threads over its own window ([`Figures::of`] sets it from
    /// [`Snapshot::worker_cpu_nanos`]), rather than the whole process's (every
    /// activity's threads, the reporter's, the set-up's), which is the fallback
    /// where threads cannot be read one by one.
    pub cpu_of_workers: bool,
    /// Cores the machine offers the process.
    pub machine_cores: usize,
    /// The async runner's cap on ops in flight (`concurrency`); `None` on the
    /// sync runner.
    pub concurrency: Option<u64>,
    /// The share of the window the async workers had their share of the cap in
    /// flight, 0 to 1; `None` on the sync runner.
    pub cap_full_share: Option<f64>,
    /// The most ops in flight at once over the window (async runner); `None` on
    /// the sync runner.
    pub in_flight_max: Option<u64>,
    /// The generator's run-queue delay over the window, summed over its worker
    /// threads ([`Snapshot::run_queue_nanos`]); `None` when not measured.
    pub run_queue_nanos: Option<Nanos>,
    /// How many times the worker threads ran over the window, each run after a
    /// wait for a CPU ([`Snapshot::run_queue_runs`]); 0 when not measured.
    pub run_queue_runs: u64,
    /// How long the shared schedule's store did not answer over the window (no
    /// slot could be leased); `None` on a local pacer.
    pub source_outage_nanos: Option<Nanos>,
    /// How long this process waited over the window for cycles that other
    /// processes' claims held on a shared schedule
    /// ([`Snapshot::claim_wait_nanos`]: a lost member's claims, until their
    /// lease expired); `None` on a local pacer.
    pub claim_wait_nanos: Option<Nanos>,
    /// The CPU throttling of the generator's cgroup over the window (its CPU limit
    /// held its threads); `None` when not read.
    pub throttling: Option<Throttling>,
    /// For a whole run on Poisson arrivals, the rate its drawn slots asked for
    /// over the ops that started ([`drawn_rate`](crate::drawn_rate)): the
    /// achieved rate is judged against it, not the target, since a random
    /// schedule's own mean over N ops is off the target by about 1 / sqrt(N)
    /// (less for these stratified draws, but a short run is still off by
    /// several per cent). `None` for uniform slots and for intervals: then the
    /// target is the comparand ([`Figures::of_run`] sets it).
    pub drawn_rate: Option<f64>,
}

impl Figures {
    /// The figures of `snap`, for a run at `target_rate` on `threads` threads.
    /// The generator's CPU is that of the activity's own worker threads over
    /// the snapshot's window ([`Snapshot::worker_cpu_nanos`], set on the real
    /// clock: too short a window gives none); `cpu_cores`, the process's over
    /// the same window (see [`CpuMeter`](crate::CpuMeter)), stands in only for
    /// a snapshot without that reading, and
    /// [`cpu_of_workers`](Self::cpu_of_workers) says which it is.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// metrics.recorder().record_split(1_500, 1_000, 50_000); // exact below 2048
    /// let f = paceline::Figures::of(&metrics.snapshot(1_000_000_000), Some(1.0), 2, None, 4);
    /// assert_eq!((f.ops, f.queue_p99, f.dispatch_p99, f.achieved_rate), (1, 1_500, 1_000, 1.0));
    /// ```
    pub fn of(
        snap: &Snapshot,
        target_rate: Option<f64>,
        threads: usize,
        cpu_cores: Option<f64>,
        machine_cores: usize,
    ) -> Self {
        let (cpu_cores, cpu_of_workers) = match snap.worker_cpu_nanos() {
            Some(cpu) => (cpu_cores_over(cpu, snap.elapsed_nanos()), true),
            None => (cpu_cores, false),
        };
        Self {
            target_rate,
            achieved_rate: snap.rate(),
            elapsed_nanos: snap.elapsed_nanos(),
            ops: snap.ops(),
            threads,
            service_mean: snap.service().mean(),
            service_max: snap.service().max(),
            wait_p99: snap.wait().p99(),
            queue_mean: snap.queue().mean(),
            queue_p99: snap.queue().p99(),
            dispatch_mean: snap.dispatch().mean(),
            dispatch_p99: snap.dispatch().p99(),
            cpu_cores,
            cpu_of_workers,
            machine_cores,
            concurrency: snap.concurrency_cap(),
            cap_full_share: snap.cap_full_share(),
            in_flight_max: snap.concurrency_cap().map(|_| snap.in_flight_max()),
            run_queue_nanos: snap.run_queue_nanos(),
            run_queue_runs: snap.run_queue_runs(),
            source_outage_nanos: snap.source_outage_nanos(),
            claim_wait_nanos: snap.claim_wait_nanos(),
            throttling: snap.throttling(),
            drawn_rate: None,
        }
    }

    /// The figures of a whole paced run `snap` (the totals) at a mean target of
    /// `mean_target` with `arrivals`: those of [`Figures::of`], with the achieved
    /// rate over the schedule's span ([`achieved_rate`](crate::achieved_rate)),
    /// and for Poisson arrivals the drawn slots' own rate
    /// ([`drawn_rate`](crate::drawn_rate)), which caps the achieved rate in
    /// place of the target and is what the verdict judges it against. The CLI's
    /// summary verdict is made from these.
    ///
    /// ```
    /// use paceline::{Arrivals, Figures, Metrics};
    /// let metrics = Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// for i in 0..10 {
    ///     rec.set_start(i * 1_000_000);
    ///     rec.record(0, 1_000);
    /// }
    /// let t = metrics.snapshot(10_000_000);
    /// let uniform = Figures::of_run(&t, Some(1000.0), Arrivals::Uniform, 1, None, 2);
    /// assert_eq!((uniform.achieved_rate, uniform.drawn_rate), (1000.0, None));
    /// let poisson = Figures::of_run(&t, Some(1000.0), Arrivals::Poisson { seed: 0 }, 1, None, 2);
    /// assert!(poisson.drawn_rate.is_some());
    /// ```
    pub fn of_run(
        snap: &Snapshot,
        mean_target: Option<f64>,
        arrivals: Arrivals,
        threads: usize,
        cpu_cores: Option<f64>,
        machine_cores: usize,
    ) -> Self {
        Self::of_scoped_run(
            snap,
            mean_target,
            arrivals,
            Scope::Activity,
            threads,
            cpu_cores,
            machine_cores,
        )
    }

    /// [`Figures::of_run`] for a rate of either scope: the drawn rate is that
    /// of the streams the schedules drew ([`scoped_drawn_rate`]: in thread
    /// scope each thread's own, never the activity's), `mean_target` the
    /// total over the threads ([`total_rate`](crate::total_rate)).
    ///
    /// ```
    /// use paceline::{Arrivals, Figures, Metrics, Scope};
    /// let metrics = Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// for i in 0..10 {
    ///     rec.set_start(i * 1_000_000);
    ///     rec.record(0, 1_000);
    /// }
    /// let t = metrics.snapshot(10_000_000);
    /// let p = Arrivals::Poisson { seed: 0 };
    /// let own = Figures::of_scoped_run(&t, Some(1000.0), p, Scope::Thread, 1, None, 2);
    /// let base = Figures::of_run(&t, Some(1000.0), p, 1, None, 2);
    /// assert_ne!(own.drawn_rate, base.drawn_rate);
    /// ```
    pub fn of_scoped_run(
        snap: &Snapshot,
        mean_target: Option<f64>,
        arrivals: Arrivals,
        scope: Scope,
        threads: usize,
        cpu_cores: Option<f64>,
        machine_cores: usize,
    ) -> Self {
        let mut f = Self::of(snap, mean_target, threads, cpu_cores, machine_cores);
        f.drawn_rate =
            mean_target.and_then(|t| scoped_drawn_rate(arrivals, scope, threads, t, snap.starts()));
        f.achieved_rate = achieved_rate(snap, f.drawn_rate.or(mean_target));
        f
    }

    /// The generator's scheduling delay per op: how much of the worker threads'
    /// run-queue delay lands in an op's times, on average.
    ///
    /// A worker that waits `L` for a CPU delays what it was to do when the wait
    /// began (a start, an end to read) by `L`. On the sync runner (no
    /// [`concurrency`](Self::concurrency)) that is all: a thread holds one op, and
    /// its op events are its own, so none comes while it is off the CPU and a wait
    /// lands in one op. The figure is the run-queue delay `rq` over the ops.
    ///
    /// On the async runner the ops in flight on a server keep answering while the
    /// thread waits: each answer that comes during the wait is delayed by the rest
    /// of it, with events at `e` per second on the thread about `e x L^2 / 2` more.
    /// Over the window that is `rq x (1 + e x L / 2)`, with `L` the mean wait per
    /// run (`rq / runs`; 0 when the runs are not known), spread over the ops. A
    /// wait can delay no more ops than the thread holds in flight, so the factor
    /// is at most the ops in flight per thread ([`in_flight_max`](Self::in_flight_max),
    /// else the cap), and at least 1. The figure is never more than `rq` times the
    /// ops one wait could have delayed, over the ops. (Until issue 21's done-when
    /// run the figure multiplied the delay by the ops in flight per thread: "8.54
    /// ms per op" for 100K ops in 10 s on two threads, 854 s of delay; until audit
    /// p18 M2 it applied the `e x L / 2` term to the sync runner too: "15.9 ms per
    /// op" for 4.9 M ops in 2 s on two threads, 78,000 s of delay.) `None` when
    /// not measured or no op finished.
    ///
    /// ```
    /// let f = paceline::Figures { ops: 100, threads: 2, run_queue_nanos: Some(1_000_000), ..Default::default() };
    /// assert_eq!(f.scheduling_delay_per_op(), Some(10_000.0));
    /// // A busy sync loop: each wait lands in the one op its thread holds.
    /// let busy = paceline::Figures {
    ///     ops: 4_900_000, threads: 2, elapsed_nanos: 2_000_000_000,
    ///     run_queue_nanos: Some(3_400_000_000), run_queue_runs: 340, ..Default::default()
    /// };
    /// assert!(busy.scheduling_delay_per_op().unwrap() <= 3.4e9 / 4.9e6);
    /// ```
    pub fn scheduling_delay_per_op(&self) -> Option<f64> {
        let rq = self.run_queue_nanos? as f64;
        if self.ops == 0 {
            return None;
        }
        let Some(cap) = self.concurrency else {
            return Some(rq / self.ops as f64);
        };
        let threads = self.threads.max(1) as f64;
        let per_run = if self.run_queue_runs > 0 {
            rq / self.run_queue_runs as f64
        } else {
            0.0
        };
        let thread_secs = threads * self.elapsed_nanos as f64 / NANOS_PER_SEC as f64;
        let events_per_sec = if thread_secs > 0.0 {
            2.0 * self.ops as f64 / thread_secs
        } else {
            0.0
        };
        let per_run_secs = per_run / NANOS_PER_SEC as f64;
        let held_per_thread = (self.in_flight_max.unwrap_or(cap) as f64 / threads).max(1.0);
        let factor = (1.0 + events_per_sec * per_run_secs / 2.0).min(held_per_thread);
        Some(rq * factor / self.ops as f64)
    }

    /// The ops that may be in flight at either edge of the window: a window
    /// counts the ops that finish in it, so those still in service at its end
    /// (or started before its start) fall on the other side. One per thread on
    /// the sync runner; on the async runner the ops in flight at the target
    /// rate (target x mean service, Little's law), at least one per thread and
    /// at most the cap: 10K/s of 50 ms ops hold 500, and a window's first or
    /// last 50 ms of ends are not a shortfall of the schedule.
    ///
    /// ```
    /// let sync = paceline::Figures { threads: 4, ..Default::default() };
    /// assert_eq!(sync.edge_ops(), 4);
    /// let f = paceline::Figures {
    ///     target_rate: Some(10_000.0), threads: 2, service_mean: 50e6,
    ///     concurrency: Some(1000), ..Default::default()
    /// };
    /// assert_eq!(f.edge_ops(), 500);
    /// ```
    pub fn edge_ops(&self) -> usize {
        let threads = self.threads.max(1);
        let Some(cap) = self.concurrency else {
            return threads;
        };
        let target = self.target_rate.unwrap_or(0.0).max(0.0);
        let held = (target * self.service_mean / NANOS_PER_SEC as f64).ceil();
        let cap = (cap as usize).max(threads);
        if held.is_finite() {
            (held as usize).clamp(threads, cap)
        } else {
            cap
        }
    }

    /// The concurrency the window needed by Little's law: achieved rate x mean
    /// service time (how many ops were in service at once, on average).
    ///
    /// ```
    /// let f = paceline::Figures { achieved_rate: 1000.0, service_mean: 2e6, ..Default::default() };
    /// assert_eq!(f.concurrency_needed(), 2.0);
    /// ```
    pub fn concurrency_needed(&self) -> f64 {
        self.achieved_rate * self.service_mean / NANOS_PER_SEC as f64
    }
}

/// Four figures of a distribution, in nanoseconds.
///
/// ```
/// let mut l = paceline::Latencies::new();
/// [1, 2, 3].iter().for_each(|&v| l.record(v));
/// let s = paceline::Spread::of(&l);
/// assert_eq!((s.count, s.min, s.p50, s.max), (3, 1, 2, 3));
/// assert_eq!(paceline::Spread::of(&paceline::Latencies::new()).count, 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spread {
    /// How many values: with 0 the distribution is empty and the four figures,
    /// all 0, mean nothing (reports show them as null).
    pub count: u64,
    /// Smallest.
    pub min: Nanos,
    /// Median.
    pub p50: Nanos,
    /// 99th percentile.
    pub p99: Nanos,
    /// Largest.
    pub max: Nanos,
}

impl Spread {
    /// The spread of `l` (all 0 when empty).
    ///
    /// See [`Spread`] for an example.
    pub fn of(l: &Latencies) -> Self {
        Self {
            count: l.count(),
            min: l.min(),
            p50: l.p50(),
            p99: l.p99(),
            max: l.max(),
        }
    }
}

/// The verdict on a run or an interval: its kind, the reason, and the figures
/// behind it.
///
/// ```
/// use paceline::{Metrics, Verdict, VerdictKind};
/// let metrics = Metrics::new(0);
/// let mut rec = metrics.recorder();
/// for _ in 0..1000 {
///     rec.record_split(0, 2_000, 100_000); // on time within 2 µs, 100 µs ops
/// }
/// let v = Verdict::of(&metrics.snapshot(1_000_000_000), Some(1000.0), 1, Some(0.1));
/// assert_eq!(v.kind, VerdictKind::OnSchedule);
/// assert!((1_999..=2_001).contains(&v.dispatch.p99)); // 3 significant digits
/// assert!((v.concurrency_needed - 0.1).abs() < 0.001);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Verdict {
    /// What limited the run.
    pub kind: VerdictKind,
    /// One sentence with the numbers and what to do.
    pub reason: String,
    /// The queueing part of the waits.
    pub queue: Spread,
    /// The dispatch part of the waits.
    pub dispatch: Spread,
    /// Cores the generator used over the window; `None` when unknown: those
    /// of the activity's own worker threads when
    /// [`generator_cpu_of_workers`](Self::generator_cpu_of_workers), else the
    /// whole process's ([`Figures::cpu_of_workers`]).
    pub generator_cpu_cores: Option<f64>,
    /// Whether [`generator_cpu_cores`](Self::generator_cpu_cores) is the
    /// activity's worker threads' (`true`) or the whole process's.
    pub generator_cpu_of_workers: bool,
    /// Cores the machine offers the process.
    pub machine_cores: usize,
    /// Achieved rate x mean service time (Little's law).
    pub concurrency_needed: f64,
    /// Worker threads the run had.
    pub threads: usize,
    /// The wait p99 bound for on-schedule ([`wait_bound`]); 0 when unpaced.
    pub wait_bound: Nanos,
    /// The async runner's cap on ops in flight; `None` on the sync runner.
    pub concurrency: Option<u64>,
    /// The generator's scheduling delay per op
    /// ([`Figures::scheduling_delay_per_op`]); `None` when not measured.
    pub scheduling_delay_per_op: Option<f64>,
    /// The achieved rate the verdict judged ([`Figures::achieved_rate`]).
    pub achieved_rate: f64,
    /// The drawn Poisson slots' own rate it was judged against
    /// ([`Figures::drawn_rate`]); `None` when that was the target.
    pub drawn_rate: Option<f64>,
}

impl Verdict {
    /// The verdict on `snap`, for a run at `target_rate` (`None` when unpaced)
    /// on `threads` threads whose process used `cpu_cores` over the same window,
    /// on this machine ([`machine_cores`]).
    ///
    /// See [`Verdict`] for an example.
    pub fn of(
        snap: &Snapshot,
        target_rate: Option<f64>,
        threads: usize,
        cpu_cores: Option<f64>,
    ) -> Self {
        Self::from_figures(
            &Figures::of(snap, target_rate, threads, cpu_cores, machine_cores()),
            Spread::of(snap.queue()),
            Spread::of(snap.dispatch()),
        )
    }

    /// The verdict on `f`, with the spreads it reports.
    ///
    /// ```
    /// let f = paceline::Figures { target_rate: None, threads: 2, ..Default::default() };
    /// let v = paceline::Verdict::from_figures(&f, Default::default(), Default::default());
    /// assert_eq!(v.kind, paceline::VerdictKind::Unpaced);
    /// ```
    pub fn from_figures(f: &Figures, queue: Spread, dispatch: Spread) -> Self {
        let (kind, reason) = judge(f);
        Self {
            kind,
            reason,
            queue,
            dispatch,
            generator_cpu_cores: f.cpu_cores,
            generator_cpu_of_workers: f.cpu_of_workers,
            machine_cores: f.machine_cores,
            concurrency_needed: f.concurrency_needed(),
            threads: f.threads,
            wait_bound: f.target_rate.map_or(0, wait_bound),
            concurrency: f.concurrency,
            scheduling_delay_per_op: f.scheduling_delay_per_op(),
            achieved_rate: f.achieved_rate,
            drawn_rate: f.drawn_rate,
        }
    }
}

/// Ops a run an error stopped needs before its pacing is told beside the error.
const MIN_OPS_BEFORE_ERROR: u64 = 10;

impl Verdict {
    /// The verdict on a run an error stopped: kind
    /// [`StoppedByError`](VerdictKind::StoppedByError), a reason that names the
    /// error and the ops before it, and (when those were enough to judge) what
    /// `self` said of their pacing. Not generator-bound advice for a run that
    /// a TLS error stopped at cycle 0 (issue 24, item 9). The pacing is told
    /// from 10 ops on (the failed op is one of `ops`).
    ///
    /// ```
    /// let f = paceline::Figures { target_rate: Some(50.0), ..Default::default() };
    /// let v = paceline::Verdict::from_figures(&f, Default::default(), Default::default())
    ///     .stopped("tls: invalid peer certificate", 0);
    /// assert_eq!(v.kind, paceline::VerdictKind::StoppedByError);
    /// assert!(v.reason.starts_with("an error stopped the run after 0 ops (tls: invalid peer certificate)"), "{v}");
    /// ```
    pub fn stopped(mut self, why: &str, ops: u64) -> Self {
        let before = match self.kind {
            VerdictKind::TooShort | VerdictKind::StoppedByError => String::new(),
            // The failed op is among them: a few say nothing of the pacing.
            _ if ops < MIN_OPS_BEFORE_ERROR => String::new(),
            kind => format!("; the ops before it were {kind}: {}", self.reason),
        };
        self.reason = format!(
            "an error stopped the run after {ops} op{} ({why}): fix it before judging the \
             pacing{before}",
            if ops == 1 { "" } else { "s" }
        );
        self.kind = VerdictKind::StoppedByError;
        self
    }
}

impl Verdict {
    /// The verdict on a run (or an interval) before its schedule's first slot:
    /// kind [`NotStarted`](VerdictKind::NotStarted). `setup_nanos` is the set-up
    /// so far (from the launch to the stop, or to the interval's end); `ended`
    /// what stopped the run (`None` for an interval of a run still setting up);
    /// `what` what was being set up, when known. Not "system-bound: the system
    /// under test stalled" for a run no op of which was ever in flight (audit
    /// p16, H9).
    ///
    /// ```
    /// let f = paceline::Figures { target_rate: Some(100.0), ..Default::default() };
    /// let v = paceline::Verdict::from_figures(&f, Default::default(), Default::default())
    ///     .not_started(1_388_000_000, Some("its time is up"), None);
    /// assert_eq!(v.kind, paceline::VerdictKind::NotStarted);
    /// assert!(v.reason.starts_with("the run stopped during set-up, before its first slot, 1.39 s after its launch (its time is up)"), "{v}");
    /// ```
    pub fn not_started(
        mut self,
        setup_nanos: Nanos,
        ended: Option<&str>,
        what: Option<&str>,
    ) -> Self {
        let secs = setup_nanos as f64 / NANOS_PER_SEC as f64;
        let what = what.map(|w| format!(": {w}")).unwrap_or_default();
        self.reason = match ended {
            Some(ended) => format!(
                "the run stopped during set-up, before its first slot, {secs:.2} s after its \
                 launch ({ended}){what}; no op ran, so nothing is known of the pacing or of \
                 the system under test"
            ),
            None => format!("setting up, {secs:.2} s since the launch: no slot yet{what}"),
        };
        self.kind = VerdictKind::NotStarted;
        self
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.reason)
    }
}
