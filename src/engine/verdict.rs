//! The verdict on a run (or one interval of it): did it keep its schedule, and if
//! not, did the system under test fall behind, or the generator?
//!
//! The decision is a pure function, [`judge`], from plain numbers ([`Figures`]) to a
//! [`VerdictKind`] and a one-sentence reason with the numbers and advice;
//! [`Verdict::of`] gathers those numbers from a [`Snapshot`]. `docs/engine.md`
//! ("The verdict") documents every rule, in the order [`judge`] applies them:
//!
//! 1. no target rate: **unpaced**; a target of 0 (paused): **on-schedule**;
//! 2. achieved within 1 % of the target (or `threads + 1` ops over the window,
//!    whichever is more: [`rate_tolerance`]) and wait p99 under [`wait_bound`]:
//!    **on-schedule**;
//! 3. otherwise the run is late. No op finished: **system-bound** (ops in flight
//!    take longer than the window);
//! 4. the process used at least 90 % of the machine's cores: **generator-bound**;
//! 5. the mean dispatch exceeds the mean queueing: **generator-bound** (ops started
//!    late with a worker free: sleep overshoot, CPU starvation);
//! 6. the rate was kept (the lateness is a backlog being paid off): **system-bound**;
//! 7. the rate fell short, the ops alone at the target rate keep at least 90 %
//!    of the threads busy (target x mean service >= 0.9 x threads), and ops take
//!    at least as long on average as the generator spends on each (mean
//!    dispatch): **system-bound** (too few threads for the op latency);
//! 8. the rate fell short and the longest op is at least half the queueing p99 (a
//!    stall built the backlog): **system-bound**;
//! 9. the rate fell short and ops take at least as long on average as the
//!    generator spends on each (mean dispatch): **system-bound** (slow ops, with
//!    the others queued behind them);
//! 10. otherwise: **generator-bound** (each op costs the generator more than the
//!     op itself: the engine cannot issue the rate on these threads).

use super::cpu::{MIN_CPU_WINDOW, machine_cores};
use crate::metrics::{Event, Latencies, Snapshot, Throttling, TimelineEntry};
use crate::nanos::{NANOS_PER_SEC, Nanos};
use std::fmt;

/// The smallest wait p99 bound of an on-schedule run: 1 ms.
pub const MIN_WAIT_BOUND: Nanos = NANOS_PER_SEC / 1000;

/// Share of the machine's cores at which the generator counts as CPU-bound.
const CPU_SATURATED: f64 = 0.9;

/// Share of the threads the ops alone keep busy at the target rate from which
/// a run that falls short is short of threads.
const CAPACITY_USED: f64 = 0.9;

/// The generator's scheduling delay per op from which it is blamed, at least:
/// 50 µs (a VM's wake-up jitter is tens of µs), and a tenth of the ops' times.
const SCHED_FLOOR: f64 = 50_000.0;
const SCHED_SHARE: f64 = 0.1;

/// How many times the mean service time the longest op may take and still be
/// ordinary variation rather than a stall (the cap rule).
const STALL_FACTOR: f64 = 4.0;

/// Headroom the thread advice leaves: threads for 1.25 x the concurrency needed.
const THREAD_HEADROOM: f64 = 1.25;

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
    /// Ops per second achieved over the window.
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
    /// Cores the process used over the window; `None` when unknown.
    pub cpu_cores: Option<f64>,
    /// Cores the machine offers the process.
    pub machine_cores: usize,
    /// The async runner's cap on ops in flight (`concurrency`); `None` on the
    /// sync runner.
    pub concurrency: Option<u64>,
    /// The share of the window the async workers had their share of the cap in
    /// flight, 0 to 1; `None` on the sync runner.
    pub cap_full_share: Option<f64>,
    /// The generator's run-queue delay over the window, summed over its threads
    /// ([`process_run_queue_nanos`](crate::process_run_queue_nanos)); `None` when
    /// not measured.
    pub run_queue_nanos: Option<Nanos>,
    /// How long the shared schedule's store did not answer over the window (no
    /// slot could be leased); `None` on a local pacer.
    pub source_outage_nanos: Option<Nanos>,
    /// The CPU throttling of the generator's cgroup over the window (its CPU limit
    /// held its threads); `None` when not read.
    pub throttling: Option<Throttling>,
}

impl Figures {
    /// The figures of `snap`, for a run at `target_rate` on `threads` threads
    /// that used `cpu_cores` (see [`CpuMeter`](crate::CpuMeter)).
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
            machine_cores,
            concurrency: snap.concurrency_cap(),
            cap_full_share: snap.cap_full_share(),
            run_queue_nanos: snap.run_queue_nanos(),
            source_outage_nanos: snap.source_outage_nanos(),
            throttling: snap.throttling(),
        }
    }

    /// The generator's scheduling delay per op: the run-queue delay over the
    /// window, times the ops each thread held in flight on average (a delayed
    /// thread delays all of them; at least 1), over the ops. `None` when not
    /// measured or no op finished.
    ///
    /// ```
    /// let f = paceline::Figures { ops: 100, threads: 2, run_queue_nanos: Some(1_000_000), ..Default::default() };
    /// assert_eq!(f.scheduling_delay_per_op(), Some(10_000.0));
    /// ```
    pub fn scheduling_delay_per_op(&self) -> Option<f64> {
        let rq = self.run_queue_nanos?;
        if self.ops == 0 {
            return None;
        }
        let per_thread = (self.concurrency_needed() / self.threads.max(1) as f64).max(1.0);
        Some(rq as f64 * per_thread / self.ops as f64)
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

/// The wait p99 under which a run at `target_rate` ops/s counts as on schedule:
/// one slot interval (1 / rate), or [`MIN_WAIT_BOUND`] (1 ms) if that is longer.
/// An op starting within one slot of its time, or within a millisecond (well
/// past a sleep's usual overshoot of tens of microseconds), is on time.
///
/// ```
/// assert_eq!(paceline::wait_bound(1000.0), 1_000_000);  // 1 ms
/// assert_eq!(paceline::wait_bound(100.0), 10_000_000);  // one slot, 10 ms
/// assert_eq!(paceline::wait_bound(1e6), 1_000_000);     // at least 1 ms
/// ```
pub fn wait_bound(target_rate: f64) -> Nanos {
    if target_rate > 0.0 {
        ((NANOS_PER_SEC as f64 / target_rate) as Nanos).max(MIN_WAIT_BOUND)
    } else {
        MIN_WAIT_BOUND
    }
}

/// How far the achieved rate may be from the target and still count as met: 1 %
/// of the target, or `threads + 1` ops over the window if that is more. A
/// window counts the ops that finish in it: up to one op per thread is still in
/// flight at either edge, and the schedule's phase moves the count by one more.
///
/// ```
/// assert_eq!(paceline::rate_tolerance(1000.0, 10_000_000_000, 1), 10.0);  // 1 %
/// assert_eq!(paceline::rate_tolerance(50.0, 1_000_000_000, 1), 2.0);      // 2 ops in 1 s
/// assert_eq!(paceline::rate_tolerance(1000.0, 500_000_000, 4), 10.0);     // 5 ops in 0.5 s
/// ```
pub fn rate_tolerance(target_rate: f64, elapsed_nanos: Nanos, threads: usize) -> f64 {
    let edge = if elapsed_nanos > 0 {
        (threads as f64 + 1.0) * NANOS_PER_SEC as f64 / elapsed_nanos as f64
    } else {
        f64::INFINITY
    };
    (0.01 * target_rate).max(edge)
}

/// The achieved rate of a paced run over the span of its schedule: `ops` over
/// the run's time, or over the slots it took (`ops / mean_target`) when that is
/// longer. A run of n ops at rate r takes n slots, the first at its start and the
/// last (n - 1) / r later; its last op finishes long before the n-th slot's
/// share of the schedule ends, so ops over the run's time alone reads n / (n - 1)
/// times the rate (5 ops at 50/s: 58.6/s). Over the schedule's span a run that
/// held its schedule never reports more than its rate. Unpaced (`None`) or
/// paused (`Some(0)`): ops over the run's time. 0 for an empty window.
///
/// ```
/// const S: u64 = 1_000_000_000;
/// // 5 ops at 50/s: the last started 80 ms in and finished 85 ms in.
/// assert_eq!(paceline::achieved_rate(5, 85_000_000, Some(50.0)), 50.0);
/// assert_eq!(paceline::achieved_rate(500, 20 * S, Some(50.0)), 25.0); // fell short
/// assert_eq!(paceline::achieved_rate(500, 2 * S, None), 250.0);
/// ```
pub fn achieved_rate(ops: u64, elapsed_nanos: Nanos, mean_target: Option<f64>) -> f64 {
    let secs = elapsed_nanos as f64 / NANOS_PER_SEC as f64;
    let span = match mean_target {
        Some(t) if t > 0.0 && t.is_finite() => secs.max(ops as f64 / t),
        _ => secs,
    };
    if span > 0.0 { ops as f64 / span } else { 0.0 }
}

/// Decides the verdict on `f`: the kind, and one sentence with the numbers and
/// what to do. A pure function; the rules, in order, are in the module's docs
/// and in `docs/engine.md` ("The verdict").
///
/// See [`Figures`] for an example.
pub fn judge(f: &Figures) -> (VerdictKind, String) {
    let threads = f.threads.max(1);
    let s = f.service_mean;
    let Some(target) = f.target_rate else {
        return (
            VerdictKind::Unpaced,
            format!(
                "{} from {threads} thread{}; ops take {} on average, {:.1} busy at once",
                rate(f.achieved_rate),
                plural(threads),
                ns(s),
                f.concurrency_needed()
            ),
        );
    };
    if let Some(v) = held_by_the_store(f, target) {
        return v;
    }
    if target <= 0.0 {
        return (VerdictKind::OnSchedule, "paused: no op was due".to_string());
    }
    let bound = wait_bound(target);
    let tolerance = rate_tolerance(target, f.elapsed_nanos, threads);
    let short = f.achieved_rate < target - tolerance;
    let kept = (f.achieved_rate - target).abs() <= tolerance;
    let needed = target * s / NANOS_PER_SEC as f64;
    let achieved = format!("achieved {} of {}", rate(f.achieved_rate), rate(target));
    if kept && f.wait_p99 <= bound {
        return (
            VerdictKind::OnSchedule,
            format!(
                "{achieved}; wait p99 {} is under the {} bound; ops take {} on average, \
                 {needed:.1} of {threads} thread{} busy",
                ns(f.wait_p99 as f64),
                ns(bound as f64),
                ns(s),
                plural(threads)
            ),
        );
    }
    if let Some(v) = throttled(f, &achieved) {
        return v;
    }
    if f.ops == 0 {
        return (
            VerdictKind::SystemBound,
            format!(
                "no op finished in {}: the ops in flight took longer than that \
                 (the system under test stalled)",
                ns(f.elapsed_nanos as f64)
            ),
        );
    }
    // Two decimals, as the figures line beside it prints them (issue 24, item 9:
    // "it used 0.0 of 2 cores" beside "generator cpu 0.03").
    let cpu = match f.cpu_cores {
        Some(c) => format!("{c:.2} of {} cores", f.machine_cores),
        None if f.elapsed_nanos < MIN_CPU_WINDOW => format!(
            "a share of the cores that {} is too short to judge",
            ns(f.elapsed_nanos as f64)
        ),
        None => "an unknown share of the machine's cores".to_string(),
    };
    if let Some(c) = f.cpu_cores
        && f.machine_cores > 0
        && c >= CPU_SATURATED * f.machine_cores as f64
    {
        return (
            VerdictKind::GeneratorBound,
            format!(
                "the generator used {cpu}: run fewer threads or more processes \
                 ({achieved}, wait p99 {})",
                ns(f.wait_p99 as f64)
            ),
        );
    }
    // The generator's own scheduling delays, measured (run-queue delay): when
    // they are a tenth of the ops' times or more, the ops' waits and service
    // times hold the generator's stalls, and no later rule may blame the system
    // under test for them.
    if let Some(d) = f.scheduling_delay_per_op()
        && d >= SCHED_FLOOR
        && d >= SCHED_SHARE * (s + f.queue_mean)
    {
        return (
            VerdictKind::GeneratorBound,
            format!(
                "the generator's threads waited {} per op for a CPU (run-queue delay; it \
                 used {cpu}): its own scheduling delays are in the ops' times, not the \
                 system under test's; run fewer threads (`concurrency` keeps the ops in \
                 flight on a few) or give it more cores ({achieved}, wait p99 {})",
                ns(d),
                ns(f.wait_p99 as f64)
            ),
        );
    }
    if f.dispatch_mean > f.queue_mean {
        return (
            VerdictKind::GeneratorBound,
            format!(
                "ops started late with a worker free (dispatch {} on average, queueing {}): \
                 the generator's sleeps overshoot or it is short of CPU (it used {cpu}); free \
                 CPU on this machine or try `--waiting spin_sleep` ({achieved})",
                ns(f.dispatch_mean),
                ns(f.queue_mean)
            ),
        );
    }
    // The async runner's cap. A worker under its cap takes a slot as soon as it
    // comes, so every queueing there is waiting for room at the cap. The cap was
    // the limit when the ops at the target rate need about as many in flight on
    // average, or when it cannot hold them at their slowest while the slowest
    // is no stall (within `STALL_FACTOR` of the mean): then raise it.
    if let Some(cap) = f.concurrency
        && s >= f.dispatch_mean
    {
        let at_max = target * f.service_max as f64 / NANOS_PER_SEC as f64;
        let mean_bound = needed >= CAPACITY_USED * cap as f64;
        let spread_bound = f.queue_mean > 0.0
            && at_max >= cap as f64
            && (f.service_max as f64) <= STALL_FACTOR * s;
        if mean_bound || spread_bound {
            let want = if mean_bound { needed } else { at_max };
            let advice = ((THREAD_HEADROOM * want).ceil() as u64).max(cap + 1);
            let full = f.cap_full_share.map_or(String::new(), |x| {
                format!(", at the cap {:.0} % of the time", x * 100.0)
            });
            let need = if mean_bound {
                format!("{} needs {needed:.0} in flight", rate(target))
            } else {
                format!(
                    "{} needs {needed:.0} in flight on average and {at_max:.0} at the slowest",
                    rate(target)
                )
            };
            return (
                VerdictKind::ConcurrencyBound,
                format!(
                    "the in-flight cap was the limit: ops take {} on average (up to {}); {need}, \
                     the cap was {cap}{full}: raise concurrency to {advice} ({achieved}, \
                     queueing p99 {})",
                    ns(s),
                    ns(f.service_max as f64),
                    ns(f.queue_p99 as f64)
                ),
            );
        }
    }
    let stall = format!(
        "ops took up to {} and the ops behind them queued (queueing p99 {}): the system \
         under test stalled, not the generator",
        ns(f.service_max as f64),
        ns(f.queue_p99 as f64)
    );
    // More threads (or a higher cap) only help when the ops at the target rate
    // need more than the run had; "raise threads to 2001" for a run whose own
    // figures said 1183 of 2000 were busy was advice against its numbers.
    let units = f.concurrency.map_or(threads as f64, |c| c as f64);
    let what = if f.concurrency.is_some() {
        "concurrency"
    } else {
        "threads"
    };
    let slow_ops = || {
        let fix = if THREAD_HEADROOM * needed > units {
            let to = ((THREAD_HEADROOM * needed).ceil() as usize).max(units as usize + 1);
            format!("raise {what} to {to} to absorb them")
        } else {
            // Enough on average: the slow ops' bursts need more, by a quarter.
            let to = units as usize + (units as usize).div_ceil(4).max(1);
            format!(
                "raise {what} to {to} to absorb them ({needed:.0} of {units:.0} were busy on \
                 average: the bursts of slow ops, not the mean, need more)"
            )
        };
        format!(
            "ops take {} on average but up to {}, and the ops behind the slow ones queued \
             (queueing p99 {}): {fix} ({achieved})",
            ns(s),
            ns(f.service_max as f64),
            ns(f.queue_p99 as f64)
        )
    };
    if !short {
        if f.service_max as f64 * 2.0 >= f.queue_p99 as f64 {
            return (VerdictKind::SystemBound, format!("{achieved}, but {stall}"));
        }
        if s >= f.dispatch_mean {
            return (VerdictKind::SystemBound, slow_ops());
        }
        // No op was slow enough to queue the others, and ops cost the generator
        // more than they took: the queueing came from its own late starts (one
        // stall of the process, and the catch-up behind it).
        return (
            VerdictKind::GeneratorBound,
            format!(
                "{achieved}, but ops queued behind late starts (queueing p99 {}) while no op \
                 took more than {}: the generator fell behind (a sleep that overshot, the \
                 process descheduled; it used {cpu}) and the ops behind it caught up",
                ns(f.queue_p99 as f64),
                ns(f.service_max as f64)
            ),
        );
    }
    if f.concurrency.is_none() && needed >= CAPACITY_USED * threads as f64 && s >= f.dispatch_mean {
        let advice = ((THREAD_HEADROOM * needed).ceil() as usize).max(threads + 1);
        return (
            VerdictKind::SystemBound,
            format!(
                "ops take {} on average; {} needs {needed:.1} threads, the run had {threads}: \
                 raise threads to {advice} ({achieved}, queueing p99 {})",
                ns(s),
                rate(target),
                ns(f.queue_p99 as f64)
            ),
        );
    }
    if f.service_max as f64 * 2.0 >= f.queue_p99 as f64 {
        return (VerdictKind::SystemBound, format!("{achieved}: {stall}"));
    }
    if s >= f.dispatch_mean {
        return (VerdictKind::SystemBound, slow_ops());
    }
    let capacity = threads as f64 * NANOS_PER_SEC as f64 / (s + f.dispatch_mean).max(1.0);
    // A debug build's engine is many times slower; the release binary is not told
    // to build itself (issue 24, item 9).
    let build = if cfg!(debug_assertions) {
        ", or a release build"
    } else {
        ""
    };
    if capacity < target {
        return (
            VerdictKind::GeneratorBound,
            format!(
                "each op costs the generator {} (its pacing, sleeps and recording) beside the \
                 op's own {}: at that cost {threads} thread{} can issue about {} ({achieved}); \
                 run more threads or more processes{build}",
                ns(f.dispatch_mean),
                ns(s),
                plural(threads),
                rate(capacity)
            ),
        );
    }
    // The threads could issue the rate at the cost each op had, yet the run fell
    // short: the generator lost time between ops (issue 24, item 9: "8 threads
    // can issue about 83.6K/s" at a 35.5K/s target, then generator-bound).
    (
        VerdictKind::GeneratorBound,
        format!(
            "ops take {} and cost the generator {} each, so {threads} thread{} could issue \
             about {}, yet the run fell short ({achieved}): the generator lost time between \
             ops (descheduled, or short of CPU: it used {cpu}); free CPU on this machine or \
             run more processes{build}",
            ns(s),
            ns(f.dispatch_mean),
            plural(threads),
            rate(capacity)
        ),
    )
}

/// The shared schedule's store rule (issue 23, item 2): a window in which the
/// store did not answer, and that did not keep its schedule, is the store's, not
/// the system under test's. (During an outage no op runs and no slot is counted
/// missed, so the window read as paused: "no op was due".)
fn held_by_the_store(f: &Figures, target: f64) -> Option<(VerdictKind, String)> {
    let out = f.source_outage_nanos.filter(|&n| n > 0)?;
    let window = f.elapsed_nanos.max(1);
    // A tenth of the window or more is a hole in the schedule whatever the other
    // figures say: a process on a shared schedule is judged on its own tickets,
    // and it leases none while the store is out.
    let large = out.saturating_mul(10) >= window;
    if target > 0.0 && !large {
        let tolerance = rate_tolerance(target, f.elapsed_nanos, f.threads.max(1));
        let kept = (f.achieved_rate - target).abs() <= tolerance;
        if kept && f.wait_p99 <= wait_bound(target) {
            return None;
        }
    }
    Some((
        VerdictKind::GeneratorBound,
        format!(
            "the shared schedule's store did not answer for {} of this {} window: no slot \
             could be leased meanwhile, so ops waited for the store, not for the system under \
             test ({} op{} finished, wait p99 {}); see the store's message and \
             docs/scale-out.md on faults",
            ns(out.min(window) as f64),
            ns(window as f64),
            f.ops,
            if f.ops == 1 { "" } else { "s" },
            ns(f.wait_p99 as f64)
        ),
    ))
}

/// The smallest throttled time in a window that the throttling rule blames: 1 ms.
const THROTTLED_FLOOR: Nanos = NANOS_PER_SEC / 1000;

/// The cgroup throttling rule (issue 23): a late window in which the generator's
/// cgroup used up its CPU quota is the generator's, however idle the machine: the
/// kernel held its threads until the next period.
fn throttled(f: &Figures, achieved: &str) -> Option<(VerdictKind, String)> {
    let t = f.throttling?;
    if t.throttled == 0 || t.throttled_nanos < THROTTLED_FLOOR {
        return None;
    }
    Some((
        VerdictKind::GeneratorBound,
        format!(
            "the generator was throttled by its cgroup's CPU limit in {} of {} periods \
             ({} held in all, cpu.stat): its threads were stopped by the kernel, so ops \
             started late because of the generator, not the system under test; run it \
             without a CPU limit (on Kubernetes a CPU request and no limit) or raise the \
             limit ({achieved}, wait p99 {})",
            t.throttled,
            t.periods,
            ns(t.throttled_nanos as f64),
            ns(f.wait_p99 as f64)
        ),
    ))
}

/// Four figures of a distribution, in nanoseconds.
///
/// ```
/// let mut l = paceline::Latencies::new();
/// [1, 2, 3].iter().for_each(|&v| l.record(v));
/// let s = paceline::Spread::of(&l);
/// assert_eq!((s.min, s.p50, s.max), (1, 2, 3));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spread {
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
    /// Cores the generator process used over the window; `None` when unknown.
    pub generator_cpu_cores: Option<f64>,
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
            machine_cores: f.machine_cores,
            concurrency_needed: f.concurrency_needed(),
            threads: f.threads,
            wait_bound: f.target_rate.map_or(0, wait_bound),
            concurrency: f.concurrency,
            scheduling_delay_per_op: f.scheduling_delay_per_op(),
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.reason)
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A rate as the reasons write it: `1000/s`, `2.5/s`, `1.20M/s`.
fn rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2}M/s", r / 1e6)
    } else if r >= 1e4 {
        format!("{:.1}K/s", r / 1e3)
    } else if r >= 10.0 {
        format!("{r:.0}/s")
    } else {
        format!("{r:.1}/s")
    }
}

/// A duration in nanoseconds as the reasons write it, three significant digits:
/// `850 ns`, `45.0 µs`, `2.00 ms`, `1.00 s`.
fn ns(v: f64) -> String {
    let (value, unit) = if v >= 1e9 {
        (v / 1e9, "s")
    } else if v >= 1e6 {
        (v / 1e6, "ms")
    } else if v >= 1e3 {
        (v / 1e3, "µs")
    } else {
        return format!("{v:.0} ns");
    };
    if value >= 100.0 {
        format!("{value:.0} {unit}")
    } else if value >= 10.0 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.2} {unit}")
    }
}

#[cfg(all(test, not(loom)))]
#[path = "verdict_tests.rs"]
mod tests;

/// The mean rate a schedule asked for over `[start, end]`: `initial` at `start`, then
/// each rate change, ramp and pause of `timeline` (a rate of 0 is a pause), weighted by
/// how long it lasted. The verdict on a whole run compares the achieved rate with this,
/// not with the rate in force at the end (a run that ramped from 2K to 4K ops/s and
/// paused 2 s is not short of 4K/s).
///
/// ```
/// use paceline::{Event, TimelineEntry, mean_target_rate};
/// const S: u64 = 1_000_000_000;
/// let pause = [
///     TimelineEntry { at: 10 * S, event: Event::Rate { from: 1000.0, to: 0.0 } },
///     TimelineEntry { at: 12 * S, event: Event::Rate { from: 0.0, to: 1000.0 } },
/// ];
/// assert_eq!(mean_target_rate(1000.0, &pause, 0, 20 * S), 900.0);
/// // A ramp from 1000 to 3000 over 2 s, then 2 s at 3000.
/// let ramp = [TimelineEntry { at: 0, event: Event::Ramp { to: 3000.0, over: 2 * S } }];
/// assert_eq!(mean_target_rate(1000.0, &ramp, 0, 4 * S), 2500.0);
/// ```
pub fn mean_target_rate(initial: f64, timeline: &[TimelineEntry], start: Nanos, end: Nanos) -> f64 {
    if end <= start {
        return initial;
    }
    // The rate from `from` at time `since`: constant, or a ramp to `to` over `over`.
    let mut rate = initial;
    let mut ramp: Option<(Nanos, f64, f64, Nanos)> = None;
    let at = |ramp: &Option<(Nanos, f64, f64, Nanos)>, rate: f64, t: Nanos| match ramp {
        Some((t0, r0, r1, d)) if *d > 0 => {
            let f = (t.saturating_sub(*t0) as f64 / *d as f64).min(1.0);
            r0 + (r1 - r0) * f
        }
        Some((_, _, r1, _)) => *r1,
        None => rate,
    };
    // The area under the rate over [a, b] (rate x nanoseconds).
    let area = |ramp: &Option<(Nanos, f64, f64, Nanos)>, rate: f64, a: Nanos, b: Nanos| {
        if b <= a {
            return 0.0;
        }
        match ramp {
            Some((t0, _, r1, d)) => {
                let knee = t0.saturating_add(*d).clamp(a, b);
                let linear = (at(ramp, rate, a) + at(ramp, rate, knee)) / 2.0 * (knee - a) as f64;
                linear + r1 * (b - knee) as f64
            }
            None => rate * (b - a) as f64,
        }
    };
    let mut total = 0.0;
    let mut t = start;
    for e in timeline {
        let when = e.at.clamp(start, end);
        match e.event {
            Event::Rate { to, .. } => {
                total += area(&ramp, rate, t, when);
                t = when;
                rate = to;
                ramp = None;
            }
            Event::Ramp { to, over } => {
                total += area(&ramp, rate, t, when);
                t = when;
                let from = at(&ramp, rate, when);
                ramp = Some((e.at, from, to, over));
                rate = from;
            }
            _ => {}
        }
    }
    total += area(&ramp, rate, t, end);
    total / (end - start) as f64
}
