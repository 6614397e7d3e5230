//! [`Latencies`]: one latency distribution (an HdrHistogram) and its
//! [`Summary`] figures.
//!
//! A distribution a snapshot makes from a recorder's bucket counts carries
//! its [`Summary`], read off the counts in the pass that makes the histogram
//! (`buckets::Figures`): its percentiles and mean are then read in constant
//! time, where HdrHistogram scans its counts for each percentile and walks
//! them with its iterator for the mean. The figures are HdrHistogram's own,
//! bit for bit (`tests/metrics_figures.rs`); a `record` or `merge` drops them, and the
//! histogram is read as before.

use super::buckets::{Buckets, SUMMARY_QUANTILES};
use super::recorder::{add_histogram, new_histogram, record_into};
use crate::nanos::Nanos;
use hdrhistogram::Histogram;
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
    /// `hist`'s summary, when it was made with it ([`from_buckets`](Self::from_buckets));
    /// `None` once `hist` changed since.
    figures: Option<Summary>,
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
            figures: None,
        }
    }

    /// A distribution of the values counted in `buckets` (which it leaves
    /// empty), with its summary read in the same pass; `hist` is a fresh
    /// histogram of the buckets' digits.
    pub(crate) fn from_buckets<const D: u8>(
        mut hist: Histogram<u64>,
        buckets: &mut Buckets<D>,
    ) -> Self {
        let figures = buckets.drain_into(&mut hist);
        Self {
            hist,
            figures: Some(figures),
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
        self.figures = None;
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
        if !other.hist.is_empty() {
            self.figures = None;
        }
        add_histogram(&mut self.hist, &other.hist);
    }

    /// A distribution over `hist` (another precision than [`new`](Self::new)'s).
    pub(crate) fn from_histogram(hist: Histogram<u64>) -> Self {
        Self {
            hist,
            figures: None,
        }
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
            return 0;
        }
        let q = q.clamp(0.0, 1.0);
        if let Some(f) = &self.figures {
            let held = [f.p50, f.p90, f.p99, f.p999, f.p9999];
            if let Some(i) = SUMMARY_QUANTILES.iter().position(|&k| k == q) {
                return held[i];
            }
        }
        self.hist.value_at_quantile(q)
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
        match &self.figures {
            Some(f) => f.mean,
            None if self.hist.is_empty() => 0.0,
            None => self.hist.mean(),
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
        if let Some(f) = self.figures {
            return f;
        }
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
