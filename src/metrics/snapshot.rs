//! [`Snapshot`]: one interval's (or the totals') counts and latency histograms.

use super::by_op::{OpStats, merge_ops, named_errors, op_stats};
use super::latencies::Latencies;
use super::recorder::{Interval, new_histogram};
use crate::nanos::{NANOS_PER_SEC, Nanos};
use crate::sync::threads::Arc;
use std::collections::BTreeMap;

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
    /// Per-op figures, in the hub's op order (empty when it has no op names).
    by_op: Vec<OpStats>,
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
    /// The CPU time of the activity's worker threads in the interval, if
    /// measured (audit p16, M4).
    worker_cpu: Option<Nanos>,
    /// The CPU throttling of the generator's cgroup in the interval, if read.
    throttling: Option<super::Throttling>,
    /// How long the shared schedule's store did not answer in the interval (a
    /// slot source that cannot be out: `None`).
    source_outage: Option<Nanos>,
    /// How long the process waited for cycles others' claims held in the
    /// interval (a shared schedule's lost member: audit p16, M8).
    claim_wait: Option<Nanos>,
    /// The set-up before the schedule's first slot (the run's connections
    /// opened), left out of the window; 0 when none.
    setup: Nanos,
    /// An interval taken before the schedule's first slot (a set-up row).
    set_up: bool,
    /// Ops that started but were never recorded (cancelled in flight), and
    /// the latest start of the ops counted ([`Snapshot::last_start`]).
    unrecorded_starts: u64,
    last_start: Option<Nanos>,
    /// When the schedule stopped handing out slots with cycles left (its
    /// duration's end, a stop, an error): [`Snapshot::schedule_end`].
    schedule_end: Option<Nanos>,
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
            by_op: Vec::new(),
            in_flight_cap: 0,
            in_flight_max: 0,
            cap_full_nanos: 0,
            worker_nanos: 0,
            run_queue: None,
            run_queue_runs: 0,
            worker_cpu: None,
            throttling: None,
            source_outage: None,
            claim_wait: None,
            setup: 0,
            set_up: false,
            unrecorded_starts: 0,
            last_start: None,
            schedule_end: None,
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

    /// Sets how long the process waited for cycles others' claims held over
    /// the interval.
    pub(crate) fn set_claim_wait(&mut self, nanos: Option<Nanos>) {
        self.claim_wait = nanos;
    }

    /// How long this process waited in the interval for cycles that other
    /// processes' claims held on a shared schedule (the claims of a member that
    /// died, until their lease expired); `None` on a local pacer.
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).claim_wait_nanos(), None);
    /// ```
    pub fn claim_wait_nanos(&self) -> Option<Nanos> {
        self.claim_wait
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

    /// Sets the CPU time of the activity's worker threads over the interval.
    pub(crate) fn set_worker_cpu(&mut self, nanos: Option<Nanos>) {
        self.worker_cpu = nanos;
    }

    /// The CPU time (user + system) of this activity's worker threads in the
    /// interval, to the nanosecond (`/proc/self/task/TID/schedstat`'s first
    /// field, read with the run-queue delay; a thread that left keeps its
    /// part); `None` when not measured (a clock that is not real, or no
    /// `/proc`). Over the whole run ([`Metrics::totals`](crate::Metrics::totals))
    /// it is the CPU of the run's window: the set-up rows' CPU leaves it with
    /// their time. Another activity's threads, a reporter or the store's
    /// helper threads are not in it: the verdict's `generator_cpu_cores` of
    /// one activity ([`Figures::of`](crate::Figures::of)).
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).worker_cpu_nanos(), None);
    /// ```
    pub fn worker_cpu_nanos(&self) -> Option<Nanos> {
        self.worker_cpu
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

    /// The interval `data` holds, which it leaves empty: its bucket counts
    /// are moved into the snapshot's histograms, each with its figures read in
    /// the same pass ([`Latencies`]'s module doc).
    pub(crate) fn take_interval(
        start: Nanos,
        end: Nanos,
        data: &mut Interval,
        kinds: &[String],
        op_names: &[Arc<str>],
    ) -> Self {
        let mut s = Self::empty(start, end);
        s.ops = data.ops;
        s.retries = data.retries;
        s.missed = data.missed;
        s.paused = data.paused;
        s.errors = named_errors(&data.errors, kinds);
        if data.on_time > 0 {
            data.queue.add_zeros(data.on_time);
            data.dispatch.add_zeros(data.on_time);
        }
        s.service = Latencies::from_buckets(new_histogram(), &mut data.service);
        s.wait = Latencies::from_buckets(new_histogram(), &mut data.wait);
        s.response = Latencies::from_buckets(new_histogram(), &mut data.response);
        s.queue = Latencies::from_buckets(new_histogram(), &mut data.queue);
        s.dispatch = Latencies::from_buckets(new_histogram(), &mut data.dispatch);
        s.by_op = op_stats(data, op_names, kinds);
        s.unrecorded_starts = data.unrecorded_starts;
        s.last_start = data.last_start;
        data.reset_counts();
        s
    }

    /// Each op's figures, in the order of the op names the hub was made with
    /// ([`Metrics::with_ops`](crate::Metrics::with_ops)); empty when it has
    /// none. Their ops and errors add up to the snapshot's; their
    /// distributions hold the same values to 2 significant digits.
    ///
    /// ```
    /// let metrics = paceline::Metrics::with_ops(0, &["a", "b"]);
    /// let mut rec = metrics.recorder();
    /// for i in 0..3 {
    ///     rec.set_op(i % 2);
    ///     rec.record(0, 10 * (i as u64 + 1));
    /// }
    /// let s = metrics.snapshot(1);
    /// assert_eq!((s.by_op()[0].ops(), s.by_op()[1].ops(), s.ops()), (2, 1, 3));
    /// assert_eq!((s.by_op()[0].service().max(), s.service().max()), (30, 30));
    /// ```
    pub fn by_op(&self) -> &[OpStats] {
        &self.by_op
    }

    /// The figures of the op named `name`, if the hub has that op.
    ///
    /// ```
    /// let metrics = paceline::Metrics::with_ops(0, &["a"]);
    /// assert!(metrics.snapshot(1).op("a").is_some());
    /// assert!(metrics.snapshot(2).op("z").is_none());
    /// ```
    pub fn op(&self, name: &str) -> Option<&OpStats> {
        self.by_op.iter().find(|o| o.name() == name)
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
        self.setup = self.setup.max(other.setup);
        self.start = self.start.min(other.start);
        self.end = self.end.max(other.end);
        self.ops += other.ops;
        self.retries += other.retries;
        self.missed += other.missed;
        self.paused += other.paused;
        self.unrecorded_starts += other.unrecorded_starts;
        self.last_start = self.last_start.max(other.last_start);
        self.schedule_end = self.schedule_end.max(other.schedule_end);
        for (k, n) in &other.errors {
            *self.errors.entry(k.clone()).or_insert(0) += n;
        }
        self.service.merge(&other.service);
        self.wait.merge(&other.wait);
        self.response.merge(&other.response);
        self.queue.merge(&other.queue);
        self.dispatch.merge(&other.dispatch);
        merge_ops(&mut self.by_op, &other.by_op);
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
        self.worker_cpu = match (self.worker_cpu, other.worker_cpu) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        self.throttling = match (self.throttling, other.throttling) {
            (Some(a), Some(b)) => Some(a.plus(&b)),
            (a, b) => a.or(b),
        };
        self.source_outage = match (self.source_outage, other.source_outage) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        self.claim_wait = match (self.claim_wait, other.claim_wait) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
    }

    /// How long the run's set-up took before its schedule's first slot (the
    /// workers opening their connections): the run's window, and every rate
    /// over it, starts at that slot, so set-up is not counted as if the schedule
    /// ran. 0 for an interval, and for a run whose schedule started at once.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// assert_eq!(metrics.totals().setup_nanos(), 0);
    /// ```
    pub fn setup_nanos(&self) -> Nanos {
        self.setup
    }

    /// These totals, of a run whose schedule never began (stopped during its
    /// set-up, before its first slot), as set-up: the whole window, from the
    /// launch to the stop, is [`setup_nanos`](Self::setup_nanos), and the
    /// window left (where every rate is read) is empty at the stop, as
    /// [`Metrics::schedule_started`](crate::Metrics::schedule_started) would
    /// have moved it had a first slot come then. Its paused time (a launch at
    /// rate 0) is set-up too. Before (audit p16, H9) such a run read 0 s of
    /// set-up and its whole set-up as the run's time.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(100);
    /// metrics.snapshot(1_500_000_100);
    /// let t = metrics.totals().before_first_slot();
    /// assert_eq!((t.setup_nanos(), t.elapsed_nanos(), t.start()), (1_500_000_000, 0, 1_500_000_100));
    /// ```
    #[must_use]
    pub fn before_first_slot(&self) -> Self {
        let mut s = self.clone();
        let setup = s.setup.saturating_add(s.end.saturating_sub(s.start));
        s.start_at(s.end, setup);
        s
    }

    /// Whether this interval was taken before the schedule's first slot
    /// ([`Metrics::schedule_started`](crate::Metrics::schedule_started)): a
    /// set-up row, whose paused time the totals leave out, counted from the
    /// activity's start rather than from its first slot. Decided under the
    /// same lock as the interval's counts, so a first slot that comes while a
    /// report is being built cannot mislabel it. `false` for the totals.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// assert!(metrics.snapshot(10).is_set_up());
    /// metrics.schedule_started(20);
    /// assert!(!metrics.snapshot(30).is_set_up());
    /// ```
    pub fn is_set_up(&self) -> bool {
        self.set_up
    }

    /// Marks an interval taken before the schedule's first slot ([`is_set_up`](Self::is_set_up)).
    pub(crate) fn set_set_up(&mut self, set_up: bool) {
        self.set_up = set_up;
    }

    /// The window moves to start at `at`, after `setup` of set-up (the hub's
    /// [`schedule_started`](crate::Metrics::schedule_started)); the paused time
    /// the set-up rows showed is set-up, and leaves the totals.
    pub(crate) fn start_at(&mut self, at: Nanos, setup: Nanos) {
        // The set-up rows' paused time is set-up, not the window's; so is the
        // CPU their workers used (connecting), which the window's CPU leaves out.
        self.paused = 0;
        self.worker_cpu = self.worker_cpu.map(|_| 0);
        self.start = at;
        self.end = self.end.max(at);
        self.setup = setup;
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

    /// Ops that started in the interval: the ops recorded ([`ops`](Self::ops)),
    /// errors included, and those cancelled in flight at a stop (counted as
    /// errors of kind `cancelled`, never recorded as ops).
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).starts(), 0);
    /// ```
    pub fn starts(&self) -> u64 {
        self.ops + self.unrecorded_starts
    }

    /// The latest start, on the metrics' clock, of the ops counted in
    /// [`starts`](Self::starts) (the engine's workers give every op's start:
    /// [`Recorder::set_start`](crate::Recorder::set_start)); `None` when no op
    /// gave one. A paced run's achieved rate is its starts over the span from
    /// its first slot to this ([`achieved_rate`](crate::achieved_rate)).
    ///
    /// ```
    /// assert_eq!(paceline::Snapshot::empty(0, 1).last_start(), None);
    /// ```
    pub fn last_start(&self) -> Option<Nanos> {
        self.last_start
    }

    /// When the schedule ended with cycles left: its duration's end, or the
    /// moment a stop or an error ended it (not the drain of the ops in flight
    /// after it); `None` while it runs, and for a run that ran out of cycles.
    /// A paced run's achieved rate counts its span to here at least
    /// ([`achieved_rate`](crate::achieved_rate)): a schedule whose ops stopped
    /// starting before its end did not keep its rate. Set on the totals
    /// ([`Metrics::schedule_ended`](crate::Metrics::schedule_ended)).
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// assert_eq!(metrics.totals().schedule_end(), None);
    /// metrics.schedule_ended(5_000_000_000);
    /// assert_eq!(metrics.totals().schedule_end(), Some(5_000_000_000));
    /// ```
    pub fn schedule_end(&self) -> Option<Nanos> {
        self.schedule_end
    }

    /// Sets [`schedule_end`](Self::schedule_end) unless already set.
    pub(crate) fn set_schedule_end(&mut self, at: Nanos) {
        self.schedule_end.get_or_insert(at);
    }

    /// The achieved rate: ops per second over the interval; 0.0 for an empty interval.
    /// Ops are counted as they complete, so for an interval this is its
    /// completions per second; the whole run's achieved rate is
    /// [`achieved_rate`](crate::achieved_rate).
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

    /// Time the activity spent paused during the interval, in nanoseconds: time
    /// under a control pause or at rate 0, as the engine reports it, each moment
    /// once. An interval before the
    /// first slot (a launch at rate 0 raised later) shows the paused time it
    /// held too, but over the totals that time is set-up ([`setup_nanos`]), not
    /// paused time; a run launched at rate 0 and never raised has its window
    /// from its start, and all of it paused. Over the totals, never more than
    /// [`elapsed_nanos`].
    ///
    /// [`setup_nanos`]: Self::setup_nanos
    /// [`elapsed_nanos`]: Self::elapsed_nanos
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
