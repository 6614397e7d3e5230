//! [`Snapshot`]: one interval's (or the totals') counts and latency histograms.

use super::recorder::{Interval, add_histogram, add_split, new_histogram, record_into};
use crate::nanos::{NANOS_PER_SEC, Nanos};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::fmt;

/// A latency distribution in nanoseconds: an HdrHistogram with 3 significant
/// digits (values are exact to 0.1 %), with percentile helpers.
///
/// Every helper returns 0 on an empty distribution.
///
/// ```
/// use paceline::Latencies;
/// let mut l = Latencies::new();
/// for v in 1..=10_000 {
///     l.record(v);
/// }
/// assert_eq!(l.count(), 10_000);
/// assert!((4_995..=5_005).contains(&l.p50())); // within 0.1 % of 5_000
/// assert!((9_890..=9_910).contains(&l.p99()));
/// assert_eq!(l.min(), 1);
/// let s = l.summary();
/// assert_eq!(s.max, l.max());
/// ```
#[derive(Clone)]
pub struct Latencies {
    hist: Histogram<u64>,
}

impl Default for Latencies {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Latencies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.summary(), f)
    }
}

impl PartialEq for Latencies {
    fn eq(&self, other: &Self) -> bool {
        self.hist == other.hist
    }
}

impl Latencies {
    /// An empty distribution.
    ///
    /// ```
    /// assert_eq!(paceline::Latencies::new().count(), 0);
    /// ```
    pub fn new() -> Self {
        Self {
            hist: new_histogram(),
        }
    }

    /// Records one value in nanoseconds (values past 2^61 are clamped).
    ///
    /// ```
    /// let mut l = paceline::Latencies::new();
    /// l.record(42);
    /// assert_eq!(l.max(), 42);
    /// ```
    pub fn record(&mut self, nanos: Nanos) {
        record_into(&mut self.hist, nanos);
    }

    /// Adds every value of `other` into `self`.
    ///
    /// ```
    /// let (mut a, mut b) = (paceline::Latencies::new(), paceline::Latencies::new());
    /// a.record(1);
    /// b.record(3);
    /// a.merge(&b);
    /// assert_eq!((a.count(), a.min(), a.max()), (2, 1, 3));
    /// ```
    pub fn merge(&mut self, other: &Latencies) {
        add_histogram(&mut self.hist, &other.hist);
    }

    /// How many values were recorded.
    ///
    /// ```
    /// assert_eq!(paceline::Latencies::new().count(), 0);
    /// ```
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// The value at quantile `q` (0.0 to 1.0), to 3 significant digits; 0 if empty.
    ///
    /// ```
    /// let mut l = paceline::Latencies::new();
    /// (1..=100).for_each(|v| l.record(v));
    /// assert_eq!(l.quantile(0.25), 25);
    /// ```
    pub fn quantile(&self, q: f64) -> Nanos {
        if self.hist.is_empty() {
            0
        } else {
            self.hist.value_at_quantile(q.clamp(0.0, 1.0))
        }
    }

    /// The median.
    ///
    /// ```
    /// let mut l = paceline::Latencies::new();
    /// [1, 2, 3].iter().for_each(|&v| l.record(v));
    /// assert_eq!(l.p50(), 2);
    /// ```
    pub fn p50(&self) -> Nanos {
        self.quantile(0.5)
    }

    /// The 90th percentile.
    ///
    /// ```
    /// let mut l = paceline::Latencies::new();
    /// (1..=10).for_each(|v| l.record(v));
    /// assert_eq!(l.p90(), 9);
    /// ```
    pub fn p90(&self) -> Nanos {
        self.quantile(0.9)
    }

    /// The 99th percentile.
    ///
    /// ```
    /// let mut l = paceline::Latencies::new();
    /// (1..=100).for_each(|v| l.record(v));
    /// assert_eq!(l.p99(), 99);
    /// ```
    pub fn p99(&self) -> Nanos {
        self.quantile(0.99)
    }

    /// The 99.9th percentile.
    ///
    /// ```
    /// let mut l = paceline::Latencies::new();
    /// (1..=1000).for_each(|v| l.record(v));
    /// assert_eq!(l.p999(), 999);
    /// ```
    pub fn p999(&self) -> Nanos {
        self.quantile(0.999)
    }

    /// The 99.99th percentile.
    ///
    /// ```
    /// let mut l = paceline::Latencies::new();
    /// (1..=2000).for_each(|v| l.record(v));
    /// assert_eq!(l.p9999(), 2000);
    /// ```
    pub fn p9999(&self) -> Nanos {
        self.quantile(0.9999)
    }

    /// The smallest value (to 3 significant digits); 0 if empty.
    ///
    /// ```
    /// let mut l = paceline::Latencies::new();
    /// l.record(7);
    /// assert_eq!(l.min(), 7);
    /// ```
    pub fn min(&self) -> Nanos {
        if self.hist.is_empty() {
            0
        } else {
            self.hist.min()
        }
    }

    /// The largest value (to 3 significant digits, rounded up within its bucket); 0
    /// if empty.
    ///
    /// ```
    /// let mut l = paceline::Latencies::new();
    /// l.record(7);
    /// assert_eq!(l.max(), 7);
    /// ```
    pub fn max(&self) -> Nanos {
        if self.hist.is_empty() {
            0
        } else {
            self.hist.max()
        }
    }

    /// The mean; 0.0 if empty.
    ///
    /// ```
    /// let mut l = paceline::Latencies::new();
    /// l.record(2);
    /// l.record(4);
    /// assert_eq!(l.mean(), 3.0);
    /// ```
    pub fn mean(&self) -> f64 {
        if self.hist.is_empty() {
            0.0
        } else {
            self.hist.mean()
        }
    }

    /// All the usual figures at once.
    ///
    /// ```
    /// let mut l = paceline::Latencies::new();
    /// l.record(5);
    /// let s = l.summary();
    /// assert_eq!((s.count, s.min, s.p50, s.p9999, s.max), (1, 5, 5, 5, 5));
    /// ```
    pub fn summary(&self) -> Summary {
        Summary {
            count: self.count(),
            min: self.min(),
            p50: self.p50(),
            p90: self.p90(),
            p99: self.p99(),
            p999: self.p999(),
            p9999: self.p9999(),
            max: self.max(),
            mean: self.mean(),
        }
    }

    /// The underlying HdrHistogram, for iteration or serialization.
    ///
    /// ```
    /// let mut l = paceline::Latencies::new();
    /// l.record(10);
    /// assert_eq!(l.histogram().len(), 1);
    /// ```
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }
}

/// The usual figures of a [`Latencies`], in nanoseconds.
///
/// ```
/// let s = paceline::Latencies::new().summary();
/// assert_eq!((s.count, s.max, s.mean), (0, 0, 0.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Summary {
    /// How many values.
    pub count: u64,
    /// The smallest.
    pub min: Nanos,
    /// The median.
    pub p50: Nanos,
    /// The 90th percentile.
    pub p90: Nanos,
    /// The 99th percentile.
    pub p99: Nanos,
    /// The 99.9th percentile.
    pub p999: Nanos,
    /// The 99.99th percentile.
    pub p9999: Nanos,
    /// The largest.
    pub max: Nanos,
    /// The mean.
    pub mean: f64,
}

/// One interval of an activity (or the totals, a merge of intervals): counts and
/// service, wait and response distributions.
///
/// ```
/// let metrics = paceline::Metrics::new(0);
/// let mut rec = metrics.recorder();
/// rec.record(100, 1_000);
/// rec.error_named("timeout");
/// let snap = metrics.snapshot(500_000_000);
/// assert_eq!(snap.elapsed_nanos(), 500_000_000);
/// assert_eq!(snap.rate(), 2.0);
/// assert_eq!(snap.errors().collect::<Vec<_>>(), vec![("timeout", 1)]);
/// assert_eq!(snap.wait().max(), 100);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    start: Nanos,
    end: Nanos,
    ops: u64,
    retries: u64,
    missed: u64,
    paused: Nanos,
    errors: BTreeMap<String, u64>,
    service: Latencies,
    wait: Latencies,
    response: Latencies,
    queue: Latencies,
    dispatch: Latencies,
    /// The async runner's cap (`concurrency`); 0 on the sync runner.
    in_flight_cap: u64,
    /// The most ops in flight at once.
    in_flight_max: u64,
    /// Worker-time spent at the worker's share of the cap, and worker-time in
    /// all, in ns (their ratio is the share of time the cap was full).
    cap_full_nanos: u64,
    worker_nanos: u64,
    /// The generator's worker threads' run-queue delay in the interval, if
    /// measured, and how many times they ran (each run after a wait).
    run_queue: Option<Nanos>,
    run_queue_runs: u64,
    /// The CPU throttling of the generator's cgroup in the interval, if read.
    throttling: Option<super::Throttling>,
    /// How long the shared schedule's store did not answer in the interval (a
    /// slot source that cannot be out: `None`).
    source_outage: Option<Nanos>,
}

impl Snapshot {
    /// An empty interval from `start` to `end` (swapped if given backwards).
    ///
    /// ```
    /// let s = paceline::Snapshot::empty(10, 20);
    /// assert_eq!((s.start(), s.end(), s.ops()), (10, 20, 0));
    /// ```
    pub fn empty(start: Nanos, end: Nanos) -> Self {
        Self {
            start: start.min(end),
            end: end.max(start),
            ops: 0,
            retries: 0,
            missed: 0,
            paused: 0,
            errors: BTreeMap::new(),
            service: Latencies::new(),
            wait: Latencies::new(),
            response: Latencies::new(),
            queue: Latencies::new(),
            dispatch: Latencies::new(),
            in_flight_cap: 0,
            in_flight_max: 0,
            cap_full_nanos: 0,
            worker_nanos: 0,
            run_queue: None,
            run_queue_runs: 0,
            throttling: None,
            source_outage: None,
        }
    }

    /// Sets the CPU throttling of the generator's cgroup over the interval.
    pub(crate) fn set_throttling(&mut self, t: Option<super::Throttling>) {
        self.throttling = t;
    }

    /// The CPU throttling of the generator's cgroup in the interval (its CPU limit
    /// held its threads: [`ThrottleMeter`](crate::ThrottleMeter)); `None` when not
    /// read (no limit's counts, a clock that is not real).
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).throttling(), None);
    /// ```
    pub fn throttling(&self) -> Option<super::Throttling> {
        self.throttling
    }

    /// Sets how long the slot source (a shared schedule's store) did not answer
    /// over the interval.
    pub(crate) fn set_source_outage(&mut self, nanos: Option<Nanos>) {
        self.source_outage = nanos;
    }

    /// How long the shared schedule's store did not answer in the interval (no
    /// slot could be leased meanwhile); `None` on a local pacer.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).source_outage_nanos(), None);
    /// ```
    pub fn source_outage_nanos(&self) -> Option<Nanos> {
        self.source_outage
    }

    /// Sets the generator's worker threads' run-queue delay over the interval
    /// and how many times they ran.
    pub(crate) fn set_run_queue(&mut self, nanos: Option<Nanos>, runs: u64) {
        self.run_queue = nanos;
        self.run_queue_runs = runs;
    }

    /// How long the generator's worker threads waited for a CPU in the interval
    /// (run-queue delay summed over the threads that start ops and read their
    /// ends, `/proc/self/task/TID/schedstat`); `None` when not measured (a clock
    /// that is not real, or no `/proc`).
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).run_queue_nanos(), None);
    /// ```
    pub fn run_queue_nanos(&self) -> Option<Nanos> {
        self.run_queue
    }

    /// How many times the worker threads ran in the interval (each run follows
    /// a wait on a run queue; `schedstat`'s third field): the run-queue delay
    /// over it is the mean wait for a CPU. 0 when not measured.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).run_queue_runs(), 0);
    /// ```
    pub fn run_queue_runs(&self) -> u64 {
        self.run_queue_runs
    }

    /// Sets the async runner's figures for this interval: its cap, the most ops
    /// in flight, the worker-time at the cap and the worker-time in all.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn set_in_flight(&mut self, cap: u64, max: u64, full: u64, workers: u64) {
        self.in_flight_cap = cap;
        self.in_flight_max = max;
        self.worker_nanos = workers;
        self.cap_full_nanos = full.min(workers);
    }

    /// The async runner's cap on ops in flight (`concurrency`) at the end of the
    /// interval; `None` on the sync runner.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).concurrency_cap(), None);
    /// ```
    pub fn concurrency_cap(&self) -> Option<u64> {
        (self.in_flight_cap > 0).then_some(self.in_flight_cap)
    }

    /// The most ops in flight at once in the interval (async runner; 0 on the
    /// sync runner).
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).in_flight_max(), 0);
    /// ```
    pub fn in_flight_max(&self) -> u64 {
        self.in_flight_max
    }

    /// The share of the interval, 0 to 1, that the workers had their share of
    /// the cap in flight (averaged over workers; async runner only): near 1,
    /// `concurrency` limited the run.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).cap_full_share(), None);
    /// ```
    pub fn cap_full_share(&self) -> Option<f64> {
        (self.in_flight_cap > 0 && self.worker_nanos > 0)
            .then(|| self.cap_full_nanos as f64 / self.worker_nanos as f64)
    }

    pub(crate) fn from_interval(
        start: Nanos,
        end: Nanos,
        data: &Interval,
        kinds: &[String],
    ) -> Self {
        let mut s = Self::empty(start, end);
        s.ops = data.ops;
        s.retries = data.retries;
        s.missed = data.missed;
        s.paused = data.paused;
        for (i, &n) in data.errors.iter().enumerate() {
            if n > 0 {
                let name = kinds
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| "unknown".to_string());
                *s.errors.entry(name).or_insert(0) += n;
            }
        }
        add_histogram(&mut s.service.hist, &data.service);
        add_histogram(&mut s.wait.hist, &data.wait);
        add_histogram(&mut s.response.hist, &data.response);
        add_split(&mut s.queue.hist, &mut s.dispatch.hist, data);
        s
    }

    /// Adds `other` into `self`: counts and distributions add; the interval becomes
    /// the smallest one covering both.
    ///
    /// ```
    /// let mut a = paceline::Snapshot::empty(0, 10);
    /// let b = paceline::Snapshot::empty(10, 30);
    /// a.merge(&b);
    /// assert_eq!((a.start(), a.end()), (0, 30));
    /// ```
    pub fn merge(&mut self, other: &Snapshot) {
        self.start = self.start.min(other.start);
        self.end = self.end.max(other.end);
        self.ops += other.ops;
        self.retries += other.retries;
        self.missed += other.missed;
        self.paused += other.paused;
        for (k, n) in &other.errors {
            *self.errors.entry(k.clone()).or_insert(0) += n;
        }
        self.service.merge(&other.service);
        self.wait.merge(&other.wait);
        self.response.merge(&other.response);
        self.queue.merge(&other.queue);
        self.dispatch.merge(&other.dispatch);
        if other.in_flight_cap > 0 {
            self.in_flight_cap = other.in_flight_cap;
        }
        self.in_flight_max = self.in_flight_max.max(other.in_flight_max);
        self.cap_full_nanos += other.cap_full_nanos;
        self.worker_nanos += other.worker_nanos;
        self.run_queue = match (self.run_queue, other.run_queue) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.run_queue_runs += other.run_queue_runs;
        self.throttling = match (self.throttling, other.throttling) {
            (Some(a), Some(b)) => Some(a.plus(&b)),
            (a, b) => a.or(b),
        };
        self.source_outage = match (self.source_outage, other.source_outage) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
    }

    /// When the interval began, in nanoseconds on the activity's clock.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(3, 4).start(), 3);
    /// ```
    pub fn start(&self) -> Nanos {
        self.start
    }

    /// When the interval ended.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(3, 4).end(), 4);
    /// ```
    pub fn end(&self) -> Nanos {
        self.end
    }

    /// `end - start`.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(3, 10).elapsed_nanos(), 7);
    /// ```
    pub fn elapsed_nanos(&self) -> Nanos {
        self.end - self.start
    }

    /// Ops completed in the interval.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).ops(), 0);
    /// ```
    pub fn ops(&self) -> u64 {
        self.ops
    }

    /// The achieved rate: ops per second over the interval; 0.0 for an empty interval.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 0).rate(), 0.0);
    /// ```
    pub fn rate(&self) -> f64 {
        match self.elapsed_nanos() {
            0 => 0.0,
            e => self.ops as f64 * NANOS_PER_SEC as f64 / e as f64,
        }
    }

    /// Errors counted, all kinds together.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).error_count(), 0);
    /// ```
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Errors of the kind named `name`.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).errors_of("timeout"), 0);
    /// ```
    pub fn errors_of(&self, name: &str) -> u64 {
        self.errors.get(name).copied().unwrap_or(0)
    }

    /// Error counts by kind name, in name order; kinds with no errors are left out.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).errors().count(), 0);
    /// ```
    pub fn errors(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.errors.iter().map(|(k, &n)| (k.as_str(), n))
    }

    /// Retries counted.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).retries(), 0);
    /// ```
    pub fn retries(&self) -> u64 {
        self.retries
    }

    /// Missed slots counted: schedule time forfeited while running, in slots.
    /// Time spent paused is not missed; see [`paused_nanos`](Self::paused_nanos).
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).missed(), 0);
    /// ```
    pub fn missed(&self) -> u64 {
        self.missed
    }

    /// Time the activity spent paused during the interval, in nanoseconds.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// rec.paused(2_500_000_000);
    /// assert_eq!(metrics.snapshot(3_000_000_000).paused_nanos(), 2_500_000_000);
    /// ```
    pub fn paused_nanos(&self) -> Nanos {
        self.paused
    }

    /// Service times: how long the ops themselves ran.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).service().count(), 0);
    /// ```
    pub fn service(&self) -> &Latencies {
        &self.service
    }

    /// Wait times: how late each op started against its slot.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).wait().count(), 0);
    /// ```
    pub fn wait(&self) -> &Latencies {
        &self.wait
    }

    /// Response times: wait + service, what a user would have felt.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).response().count(), 0);
    /// ```
    pub fn response(&self) -> &Latencies {
        &self.response
    }

    /// Queueing times: the part of each paced op's wait spent because its worker
    /// was still busy with earlier ops when the slot came (see
    /// [`Recorder::record_split`](crate::Recorder::record_split)). Only ops
    /// recorded with the split count here: an unpaced run has none.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// rec.record_split(5, 2, 10);
    /// rec.record(7, 10); // no split: not in queue or dispatch
    /// let s = metrics.snapshot(1);
    /// assert_eq!((s.queue().count(), s.queue().max(), s.wait().count()), (1, 5, 2));
    /// ```
    pub fn queue(&self) -> &Latencies {
        &self.queue
    }

    /// Dispatch times: the part of each paced op's wait after its worker was
    /// free, the generator's own lateness (sleep overshoot, CPU starvation, the
    /// pacer's cost).
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// rec.record_split(5, 2, 10);
    /// assert_eq!(metrics.snapshot(1).dispatch().max(), 2);
    /// ```
    pub fn dispatch(&self) -> &Latencies {
        &self.dispatch
    }
}
