//! The per-thread [`Recorder`] and the buffer it fills.

use super::buckets::AllBuckets;
use super::by_op::{OpCell, absorb_ops, add_counts, take_ops};
use super::hub::{ErrorKind, Hub};
use crate::nanos::Nanos;
use crate::sync::{self, Arc, Mutex};
use hdrhistogram::Histogram;
use std::fmt;

/// Values above this are clamped: 2^61 ns is 73 years, far past anything an op takes,
/// and below the largest value an auto-resizing histogram can track.
pub(crate) const MAX_TRACKED: u64 = 1 << 61;

/// The significant digits of the all-ops histograms.
pub(crate) const ALL_DIGITS: u8 = 3;

/// A fresh auto-resizing histogram with 3 significant digits.
pub(crate) fn new_histogram() -> Histogram<u64> {
    match Histogram::new(ALL_DIGITS) {
        Ok(h) => h,
        // 3 significant digits is always a valid configuration.
        Err(e) => unreachable!("a 3-digit histogram is valid: {e}"),
    }
}

/// Records `v` (clamped) into `h`; never fails.
#[inline]
pub(crate) fn record_into(h: &mut Histogram<u64>, v: Nanos) {
    if h.record(v.min(MAX_TRACKED)).is_err() {
        h.saturating_record(v);
    }
}

/// Adds `src` into `dst`; both auto-resize, so `add` succeeds, but a failure falls
/// back to value-by-value saturating records rather than losing counts.
pub(crate) fn add_histogram(dst: &mut Histogram<u64>, src: &Histogram<u64>) {
    if src.is_empty() {
        return;
    }
    if dst.add(src).is_err() {
        for v in src.iter_recorded() {
            dst.saturating_record_n(v.value_iterated_to(), v.count_at_value());
        }
    }
}

/// What one recorder gathered since the last swap.
pub(crate) struct Interval {
    pub(crate) ops: u64,
    pub(crate) retries: u64,
    pub(crate) missed: u64,
    /// Nanoseconds paused.
    pub(crate) paused: Nanos,
    /// Error counts indexed by [`ErrorKind`] id; grows on first use of a kind.
    pub(crate) errors: Vec<u64>,
    /// Service, wait and response times as bare bucket counts ([`AllBuckets`]),
    /// made into histograms when a snapshot reads them.
    pub(crate) service: AllBuckets,
    pub(crate) wait: AllBuckets,
    pub(crate) response: AllBuckets,
    /// The queueing part of paced ops' waits (see [`Recorder::record_split`]),
    /// as bare bucket counts.
    pub(crate) queue: AllBuckets,
    /// The dispatch part of paced ops' waits.
    pub(crate) dispatch: AllBuckets,
    /// Split ops that started on time (no queue, no dispatch), not yet in `queue`
    /// and `dispatch`: counted, and added to both as zeros when the interval is
    /// read ([`Snapshot::take_interval`](super::Snapshot)), so that an on-time
    /// op costs no bucket count.
    pub(crate) on_time: u64,
    /// Per-op ops, errors and service, wait and response histograms, by op
    /// index (`by_op.rs`); an op recorded under an index is in these and in
    /// `service`, `wait` and `response`.
    pub(crate) per_op: Vec<OpCell>,
    /// The latest start, on the metrics' clock, of the ops this buffer counts
    /// as started ([`Recorder::set_start`]); `None` when none was given.
    pub(crate) last_start: Option<Nanos>,
    /// Ops that started and will never be recorded (cancelled in flight):
    /// starts beside `ops` ([`Recorder::started_unrecorded`]).
    pub(crate) unrecorded_starts: u64,
}

impl Interval {
    pub(crate) fn new() -> Self {
        Self::with_ops(0)
    }

    /// An empty buffer with a cell for each of `ops` ops.
    pub(crate) fn with_ops(ops: usize) -> Self {
        Self {
            ops: 0,
            retries: 0,
            missed: 0,
            paused: 0,
            errors: Vec::new(),
            service: AllBuckets::new(),
            wait: AllBuckets::new(),
            response: AllBuckets::new(),
            queue: AllBuckets::new(),
            dispatch: AllBuckets::new(),
            on_time: 0,
            per_op: (0..ops).map(|_| OpCell::new()).collect(),
            last_start: None,
            unrecorded_starts: 0,
        }
    }

    /// Zeroes the counts that are not bucket counts (the ops, the errors, the
    /// on-time split ops...), for a buffer whose buckets were drained
    /// ([`take_from`](Self::take_from), a snapshot's read).
    pub(crate) fn reset_counts(&mut self) {
        self.ops = 0;
        self.retries = 0;
        self.missed = 0;
        self.paused = 0;
        self.on_time = 0;
        self.last_start = None;
        self.unrecorded_starts = 0;
        self.errors.iter_mut().for_each(|c| *c = 0);
        for cell in &mut self.per_op {
            cell.ops = 0;
            cell.errors.iter_mut().for_each(|c| *c = 0);
        }
    }

    /// Moves everything `other` holds into `self`, leaving `other` empty: as
    /// [`absorb`](Self::absorb) then emptying `other`, but each bucket count is
    /// added and zeroed in one pass (no `memset` over the buffer after it).
    pub(crate) fn take_from(&mut self, other: &mut Interval) {
        self.ops += other.ops;
        self.retries += other.retries;
        self.missed += other.missed;
        self.paused += other.paused;
        self.on_time += other.on_time;
        self.last_start = self.last_start.max(other.last_start);
        self.unrecorded_starts += other.unrecorded_starts;
        add_counts(&mut self.errors, &other.errors);
        // Every record counts an op, and a split op is one: no ops, no counts.
        if other.ops > 0 {
            self.service.take_from(&mut other.service);
            self.wait.take_from(&mut other.wait);
            self.response.take_from(&mut other.response);
            self.queue.take_from(&mut other.queue);
            self.dispatch.take_from(&mut other.dispatch);
        }
        take_ops(&mut self.per_op, &mut other.per_op);
        other.reset_counts();
    }

    /// Adds `other` into `self`.
    pub(crate) fn absorb(&mut self, other: &Interval) {
        self.ops += other.ops;
        self.retries += other.retries;
        self.missed += other.missed;
        self.paused += other.paused;
        self.last_start = self.last_start.max(other.last_start);
        self.unrecorded_starts += other.unrecorded_starts;
        add_counts(&mut self.errors, &other.errors);
        self.on_time += other.on_time;
        if other.ops > 0 {
            self.service.absorb(&other.service);
            self.wait.absorb(&other.wait);
            self.response.absorb(&other.response);
            self.queue.absorb(&other.queue);
            self.dispatch.absorb(&other.dispatch);
        }
        absorb_ops(&mut self.per_op, &other.per_op);
    }
}

/// One recorder's live buffer, shared only with the snapshot reader.
pub(crate) struct Slot {
    pub(crate) live: Mutex<Box<Interval>>,
}

/// A per-thread recorder: one per worker thread, owned by it.
///
/// Every method takes only this recorder's own lock, which nobody but a snapshot
/// swap ever contends, so recording costs tens of nanoseconds and shares nothing
/// with other workers. Dropping the recorder hands its unread data to the hub:
/// the next snapshot still counts it.
///
/// ```
/// use paceline::Metrics;
/// let metrics = Metrics::new(0);
/// let timeout = metrics.error_kind("timeout");
/// let worker = {
///     let mut rec = metrics.recorder();
///     std::thread::spawn(move || {
///         for i in 0..100 {
///             rec.record(10, 1_000 + i);
///         }
///         rec.error(timeout);
///         rec.retry();
///     })
/// };
/// worker.join().unwrap(); // the recorder left with the thread; its data did not
/// let snap = metrics.snapshot(1_000_000);
/// assert_eq!((snap.ops(), snap.error_count(), snap.retries()), (100, 1, 1));
/// assert_eq!(snap.errors_of("timeout"), 1);
/// ```
pub struct Recorder {
    slot: Arc<Slot>,
    hub: Arc<Hub>,
    /// Kinds this recorder has named, so that naming one again takes no lock (ids
    /// are stable for the hub's life).
    named: Vec<(Box<str>, ErrorKind)>,
    /// The op index the next records and errors count under ([`set_op`](Self::set_op));
    /// `usize::MAX` for none.
    op: usize,
    /// The start of the op recorded next ([`set_start`](Self::set_start)),
    /// carried into the buffer by that record.
    start: Option<Nanos>,
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder").finish_non_exhaustive()
    }
}

impl Recorder {
    pub(crate) fn new(slot: Arc<Slot>, hub: Arc<Hub>) -> Self {
        Self {
            slot,
            hub,
            named: Vec::new(),
            op: usize::MAX,
            start: None,
        }
    }

    /// Says which op the next records and errors are of: `index` into the op
    /// names the hub was made with ([`Metrics::with_ops`](crate::Metrics::with_ops)).
    /// It holds until the next call. Their times then go to that op's own
    /// histograms (and the all-ops ones, added up at each snapshot), their ops
    /// and errors to its counts. An index past the names, or a hub without
    /// names, counts in the all-ops figures only. Costs one store: the cells
    /// were made with the recorder.
    ///
    /// ```
    /// let metrics = paceline::Metrics::with_ops(0, &["get", "put"]);
    /// let mut rec = metrics.recorder();
    /// rec.set_op(0);
    /// rec.record(0, 100);
    /// rec.set_op(1);
    /// rec.record(0, 900);
    /// let s = metrics.snapshot(1);
    /// assert_eq!((s.op("get").unwrap().service().max(), s.op("put").unwrap().ops()), (100, 1));
    /// assert_eq!((s.service().count(), s.service().max()), (2, 900));
    /// ```
    #[inline]
    pub fn set_op(&mut self, index: usize) {
        self.op = index;
    }

    /// Says when the op recorded next ([`record`](Self::record),
    /// [`record_split`](Self::record_split) or
    /// [`started_unrecorded`](Self::started_unrecorded)) started, on the
    /// metrics' clock: that record carries it into the buffer, where the
    /// latest start is kept ([`Snapshot::last_start`](crate::Snapshot::last_start),
    /// from which a paced run's achieved rate is read). Costs one store here
    /// and one compare under the lock the record takes anyway. An op recorded
    /// without it counts no start time.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// rec.set_start(900);
    /// rec.record(0, 50);
    /// rec.set_start(400); // ops may end out of order
    /// rec.record(0, 5);
    /// rec.record(0, 5); // no start given
    /// let s = metrics.snapshot(1_000);
    /// assert_eq!((s.starts(), s.last_start()), (3, Some(900)));
    /// ```
    #[inline]
    pub fn set_start(&mut self, at: Nanos) {
        self.start = Some(at);
    }

    /// Counts one op that started (at the time given to
    /// [`set_start`](Self::set_start)) and will never be recorded: an op
    /// cancelled in flight at a stop. It counts among the snapshot's
    /// [`starts`](crate::Snapshot::starts), not its ops.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// rec.set_start(10);
    /// rec.record(0, 5);
    /// rec.set_start(20);
    /// rec.started_unrecorded();
    /// let s = metrics.snapshot(100);
    /// assert_eq!((s.ops(), s.starts(), s.last_start()), (1, 2, Some(20)));
    /// ```
    pub fn started_unrecorded(&mut self) {
        let start = self.start.take();
        let mut b = sync::lock(&self.slot.live);
        b.unrecorded_starts += 1;
        b.last_start = b.last_start.max(start);
    }

    /// Records one completed op: its `wait` (start minus slot, from the grant) and
    /// its `service` (how long the op itself ran). The response time, `wait +
    /// service`, is recorded too, and the op is counted.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// rec.record(100, 900);
    /// assert_eq!(metrics.snapshot(1).response().max(), 1_000);
    /// ```
    #[inline]
    pub fn record(&mut self, wait: Nanos, service: Nanos) {
        let start = self.start.take();
        let mut b = sync::lock(&self.slot.live);
        b.ops += 1;
        b.last_start = b.last_start.max(start);
        record_times(&mut b, self.op, wait, service);
    }

    /// Records one completed paced op whose wait is split in two: `queue`, the
    /// part spent because the worker was still busy with earlier ops when the
    /// slot came, and `dispatch`, the part after the worker was free (the
    /// generator's own lateness: sleep overshoot, CPU starvation, the pacer's
    /// cost). The wait recorded is `queue + dispatch`; the response is wait +
    /// `service`, as for [`record`](Self::record). The engine's workers record
    /// this way; `docs/engine.md` ("Queueing and dispatch") defines the split.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// rec.record_split(300, 20, 1_000);
    /// let s = metrics.snapshot(1);
    /// assert_eq!((s.wait().max(), s.queue().max(), s.dispatch().max()), (320, 300, 20));
    /// assert_eq!(s.response().max(), 1_320);
    /// ```
    #[inline]
    pub fn record_split(&mut self, queue: Nanos, dispatch: Nanos, service: Nanos) {
        let wait = queue.saturating_add(dispatch);
        let start = self.start.take();
        let mut b = sync::lock(&self.slot.live);
        b.ops += 1;
        b.last_start = b.last_start.max(start);
        record_times(&mut b, self.op, wait, service);
        if wait == 0 {
            b.on_time += 1;
        } else {
            b.queue.record(queue);
            b.dispatch.record(dispatch);
        }
    }

    /// Counts one error of `kind`. Whether the failed op's times are also recorded
    /// is the caller's choice (call [`record`](Self::record) as well to count it as
    /// an op).
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let refused = metrics.error_kind("refused");
    /// let mut rec = metrics.recorder();
    /// rec.error(refused);
    /// rec.error(refused);
    /// assert_eq!(metrics.snapshot(1).errors_of("refused"), 2);
    /// ```
    #[inline]
    pub fn error(&mut self, kind: ErrorKind) {
        let mut b = sync::lock(&self.slot.live);
        let i = kind.id() as usize;
        count_at(&mut b.errors, i);
        if let Some(cell) = b.per_op.get_mut(self.op) {
            count_at(&mut cell.errors, i);
        }
    }

    /// Counts one error of the kind named `name`. The first time a recorder meets a
    /// name it interns it (under the hub's kinds lock); later it finds it in its own
    /// short list of names, lock-free.  [`error`](Self::error) with a kind interned
    /// once by [`Metrics::error_kind`](crate::Metrics::error_kind) skips even that.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// rec.error_named("http 503");
    /// assert_eq!(metrics.snapshot(1).errors_of("http 503"), 1);
    /// ```
    pub fn error_named(&mut self, name: &str) {
        let kind = match self.named.iter().find(|(n, _)| &**n == name) {
            Some(&(_, kind)) => kind,
            None => {
                let kind = self.hub.intern(name);
                self.named.push((name.into(), kind));
                kind
            }
        };
        self.error(kind);
    }

    /// Counts one error of the kind named `name`, as
    /// [`error_named`](Self::error_named) does, and keeps `message` as the
    /// kind's first message ([`Metrics::first_errors`](crate::Metrics::first_errors))
    /// unless one is kept. Only the first time this recorder meets the kind does
    /// that (under the kinds lock it takes then anyway); later it costs what
    /// `error_named` costs.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// rec.error_with("timeout", "no answer within 2s");
    /// assert_eq!(metrics.snapshot(1).errors_of("timeout"), 1);
    /// assert_eq!(metrics.first_errors()[0].1, "no answer within 2s");
    /// ```
    pub fn error_with(&mut self, name: &str, message: &str) {
        if !self.named.iter().any(|(n, _)| &**n == name) {
            self.hub.note_first(name, message);
        }
        self.error_named(name);
    }

    /// Counts one retry.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// rec.retry();
    /// assert_eq!(metrics.snapshot(1).retries(), 1);
    /// ```
    #[inline]
    pub fn retry(&mut self) {
        sync::lock(&self.slot.live).retries += 1;
    }

    /// Counts `n` missed slots (schedule time forfeited, in slots, as the pacer
    /// reports it).
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// rec.missed(3);
    /// assert_eq!(metrics.snapshot(1).missed(), 3);
    /// ```
    #[inline]
    pub fn missed(&mut self, n: u64) {
        sync::lock(&self.slot.live).missed += n;
    }

    /// Counts `nanos` of time paused (kept apart from missed slots: a pause is
    /// not overload).
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// rec.paused(40);
    /// assert_eq!(metrics.snapshot(100).paused_nanos(), 40);
    /// ```
    #[inline]
    pub fn paused(&mut self, nanos: Nanos) {
        sync::lock(&self.slot.live).paused += nanos;
    }
}

/// Records one op's times into the all-ops histograms, and into its op's
/// cell when `op` names one.
#[inline]
fn record_times(b: &mut Interval, op: usize, wait: Nanos, service: Nanos) {
    let response = wait.saturating_add(service);
    b.service.record(service);
    b.wait.record(wait);
    b.response.record(response);
    if let Some(cell) = b.per_op.get_mut(op) {
        cell.ops += 1;
        cell.service.record(service);
        cell.wait.record(wait);
        cell.response.record(response);
    }
}

/// Adds one to `counts[i]`, growing `counts` on the first count of `i`.
#[inline]
fn count_at(counts: &mut Vec<u64>, i: usize) {
    if counts.len() <= i {
        counts.resize(i + 1, 0);
    }
    counts[i] += 1;
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.hub.retire(&self.slot);
    }
}
