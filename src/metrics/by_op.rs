//! Per-op figures: an activity's numbers split by the op each cycle ran.
//!
//! A hub made with [`Metrics::with_ops`](crate::Metrics::with_ops) knows its
//! op names, a small fixed table made once when the activity starts. A
//! recorder told which op it is recording ([`Recorder::set_op`](crate::Recorder::set_op))
//! records that op's service, wait and response times into the op's own
//! bucket counts as well as the all-ops histograms (one set per op index, allocated
//! with the recorder: nothing is looked up, allocated or locked per op on the
//! hot path), and counts its ops and errors.
//!
//! # Precision and memory
//!
//! The per-op histograms keep [`OP_DIGITS`] (2) significant digits: values
//! exact to 1 %, where the all-ops ones keep 3 (0.1 %), which every verdict,
//! threshold and report reads. Each worker holds, per op, three of them twice
//! (the buffer it records into and the spare a snapshot swaps in), and an
//! HdrHistogram's size grows with the range it covers: at 2 digits about
//! 17 KB each for ops up to 10 ms, against 115 KB at 3 digits, so 20 ops on
//! 16 threads take about 33 MB rather than 220 MB. An op costs three more
//! bucket counts under the recorder's own lock: an index and an increment
//! each, the per-op cell keeping bare counts in the histograms' layout
//! (`buckets.rs`) that a snapshot makes into histograms equal to recorded ones.

use super::buckets::OpBuckets;
use super::latencies::Latencies;
use super::recorder::Interval;
use crate::sync::threads::Arc;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// The significant digits of the per-op histograms (see the module docs).
pub const OP_DIGITS: u8 = 2;

/// A fresh auto-resizing histogram with [`OP_DIGITS`] significant digits.
pub(crate) fn new_op_histogram() -> Histogram<u64> {
    match Histogram::new(OP_DIGITS) {
        Ok(h) => h,
        // 2 significant digits is always a valid configuration.
        Err(e) => unreachable!("a 2-digit histogram is valid: {e}"),
    }
}

/// One op's part of a recorder's buffer. Its times are bare bucket counts
/// ([`OpBuckets`]: no total, minimum or maximum kept per record), made into
/// [`OP_DIGITS`] histograms when a snapshot reads them.
pub(crate) struct OpCell {
    pub(crate) ops: u64,
    /// Error counts indexed by error-kind id; grows on first use of a kind.
    pub(crate) errors: Vec<u64>,
    pub(crate) service: OpBuckets,
    pub(crate) wait: OpBuckets,
    pub(crate) response: OpBuckets,
}

impl OpCell {
    pub(crate) fn new() -> Self {
        Self {
            ops: 0,
            errors: Vec::new(),
            service: OpBuckets::new(),
            wait: OpBuckets::new(),
            response: OpBuckets::new(),
        }
    }

    /// Moves `other`'s counts into these, leaving its bucket counts zero (its
    /// ops and errors are left to the caller's `reset_counts`).
    pub(crate) fn take_from(&mut self, other: &mut OpCell) {
        add_counts(&mut self.errors, &other.errors);
        if other.ops > 0 {
            self.ops += other.ops;
            self.service.take_from(&mut other.service);
            self.wait.take_from(&mut other.wait);
            self.response.take_from(&mut other.response);
        }
    }

    pub(crate) fn absorb(&mut self, other: &OpCell) {
        add_counts(&mut self.errors, &other.errors);
        if other.ops > 0 {
            self.ops += other.ops;
            self.service.absorb(&other.service);
            self.wait.absorb(&other.wait);
            self.response.absorb(&other.response);
        }
    }
}

/// Adds `src`'s counts into `dst`, growing it to fit.
pub(crate) fn add_counts(dst: &mut Vec<u64>, src: &[u64]) {
    if dst.len() < src.len() {
        dst.resize(src.len(), 0);
    }
    for (mine, theirs) in dst.iter_mut().zip(src) {
        *mine += theirs;
    }
}

/// Adds the per-op cells of `src` into `dst`'s, growing `dst` to fit (off the
/// hot path: a snapshot's sum, a leaving recorder's hand-over).
pub(crate) fn absorb_ops(dst: &mut Vec<OpCell>, src: &[OpCell]) {
    while dst.len() < src.len() {
        dst.push(OpCell::new());
    }
    for (mine, theirs) in dst.iter_mut().zip(src) {
        mine.absorb(theirs);
    }
}

/// Moves the per-op cells of `src` into `dst`'s ([`OpCell::take_from`]),
/// growing `dst` to fit.
pub(crate) fn take_ops(dst: &mut Vec<OpCell>, src: &mut [OpCell]) {
    while dst.len() < src.len() {
        dst.push(OpCell::new());
    }
    for (mine, theirs) in dst.iter_mut().zip(src.iter_mut()) {
        mine.take_from(theirs);
    }
}

/// One op's figures in a [`Snapshot`](crate::Snapshot): its name, ops, errors
/// by kind, and service, wait and response distributions (to [`OP_DIGITS`]
/// significant digits: 1 %).
///
/// ```
/// let metrics = paceline::Metrics::with_ops(0, &["read", "write"]);
/// let mut rec = metrics.recorder();
/// rec.set_op(1);
/// rec.record(0, 70);
/// rec.error_named("timeout");
/// let snap = metrics.snapshot(1);
/// let write = snap.op("write").unwrap();
/// assert_eq!((write.name(), write.ops(), write.errors_of("timeout")), ("write", 1, 1));
/// assert_eq!(write.service().max(), 70); // exact below 256; 1 % above
/// assert_eq!(snap.op("read").unwrap().ops(), 0);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct OpStats {
    pub(crate) name: Arc<str>,
    pub(crate) ops: u64,
    pub(crate) errors: BTreeMap<String, u64>,
    pub(crate) service: Latencies,
    pub(crate) wait: Latencies,
    pub(crate) response: Latencies,
}

impl OpStats {
    pub(crate) fn empty(name: Arc<str>) -> Self {
        Self {
            name,
            ops: 0,
            errors: BTreeMap::new(),
            service: Latencies::from_histogram(new_op_histogram()),
            wait: Latencies::from_histogram(new_op_histogram()),
            response: Latencies::from_histogram(new_op_histogram()),
        }
    }

    /// The op's figures from a buffer's cell, error kinds named from `kinds`;
    /// the cell's bucket counts are moved out (left zero).
    pub(crate) fn from_cell(name: Arc<str>, cell: &mut OpCell, kinds: &[String]) -> Self {
        let made =
            |b: &mut super::buckets::OpBuckets| Latencies::from_buckets(new_op_histogram(), b);
        Self {
            name,
            ops: cell.ops,
            errors: named_errors(&cell.errors, kinds),
            service: made(&mut cell.service),
            wait: made(&mut cell.wait),
            response: made(&mut cell.response),
        }
    }

    pub(crate) fn merge(&mut self, other: &OpStats) {
        self.ops += other.ops;
        for (k, n) in &other.errors {
            *self.errors.entry(k.clone()).or_insert(0) += n;
        }
        self.service.merge(&other.service);
        self.wait.merge(&other.wait);
        self.response.merge(&other.response);
    }

    /// The op's name, as the activity file gives it (`BLOCK__OP` for an op of
    /// a named block).
    ///
    /// See [`OpStats`] for an example.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Ops of this kind done (errors included).
    ///
    /// See [`OpStats`] for an example.
    pub fn ops(&self) -> u64 {
        self.ops
    }

    /// Errors of this op, all kinds together.
    ///
    /// ```
    /// let metrics = paceline::Metrics::with_ops(0, &["o"]);
    /// let mut rec = metrics.recorder();
    /// rec.set_op(0);
    /// rec.error_named("a");
    /// rec.error_named("b");
    /// assert_eq!(metrics.snapshot(1).by_op()[0].error_count(), 2);
    /// ```
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Errors of this op of the kind named `name`.
    ///
    /// See [`OpStats`] for an example.
    pub fn errors_of(&self, name: &str) -> u64 {
        self.errors.get(name).copied().unwrap_or(0)
    }

    /// Error counts by kind name, in name order; kinds with none left out.
    ///
    /// ```
    /// let metrics = paceline::Metrics::with_ops(0, &["o"]);
    /// let mut rec = metrics.recorder();
    /// rec.set_op(0);
    /// rec.error_named("refused");
    /// assert_eq!(metrics.snapshot(1).by_op()[0].errors().collect::<Vec<_>>(), [("refused", 1)]);
    /// ```
    pub fn errors(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.errors.iter().map(|(k, &n)| (k.as_str(), n))
    }

    /// This op's service times (exact to 1 %).
    ///
    /// See [`OpStats`] for an example.
    pub fn service(&self) -> &Latencies {
        &self.service
    }

    /// This op's wait times.
    ///
    /// ```
    /// let metrics = paceline::Metrics::with_ops(0, &["o"]);
    /// let mut rec = metrics.recorder();
    /// rec.set_op(0);
    /// rec.record(40, 10);
    /// assert_eq!(metrics.snapshot(1).by_op()[0].wait().max(), 40);
    /// ```
    pub fn wait(&self) -> &Latencies {
        &self.wait
    }

    /// This op's response times (wait + service).
    ///
    /// ```
    /// let metrics = paceline::Metrics::with_ops(0, &["o"]);
    /// let mut rec = metrics.recorder();
    /// rec.set_op(0);
    /// rec.record(40, 10);
    /// assert_eq!(metrics.snapshot(1).by_op()[0].response().max(), 50);
    /// ```
    pub fn response(&self) -> &Latencies {
        &self.response
    }
}

/// Error counts by id as counts by kind name (kinds with none left out).
pub(crate) fn named_errors(counts: &[u64], kinds: &[String]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (i, &n) in counts.iter().enumerate() {
        if n > 0 {
            let name = kinds
                .get(i)
                .cloned()
                .unwrap_or_else(|| "unknown".to_string());
            *out.entry(name).or_insert(0) += n;
        }
    }
    out
}

/// The per-op figures of `data` under `names` (cells past the names are not
/// named and count in the all-ops figures only).
pub(crate) fn op_stats(data: &mut Interval, names: &[Arc<str>], kinds: &[String]) -> Vec<OpStats> {
    names
        .iter()
        .enumerate()
        .map(|(i, name)| match data.per_op.get_mut(i) {
            Some(cell) => OpStats::from_cell(name.clone(), cell, kinds),
            None => OpStats::empty(name.clone()),
        })
        .collect()
}

/// Merges `other`'s per-op figures into `mine`, op by name (the same hub's
/// snapshots have them in the same order; others are matched by name).
pub(crate) fn merge_ops(mine: &mut Vec<OpStats>, other: &[OpStats]) {
    for (i, theirs) in other.iter().enumerate() {
        let at = match mine.get(i) {
            Some(m) if m.name == theirs.name => Some(i),
            _ => mine.iter().position(|m| m.name == theirs.name),
        };
        match at {
            Some(j) => mine[j].merge(theirs),
            None => mine.push(theirs.clone()),
        }
    }
}
