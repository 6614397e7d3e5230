//! Bare bucket counts in the layout of an HdrHistogram: what a recorder's
//! buffer records op times into (3 significant digits for all ops,
//! [`OP_DIGITS`] for each op's own).
//!
//! Recording into an HdrHistogram finds the value's bucket, adds one to it, and
//! also keeps the histogram's total, minimum and maximum. A recorder takes
//! three values per op, six with per-op figures, on the hot path, so it keeps
//! only the counts, in exactly the layout `Histogram::new(digits)` gives them
//! (lowest discernible value 1, half-buckets of 2^(m-1) where 2^m is the first
//! power of two past 2 × 10^digits), and makes the histogram when a snapshot
//! reads the buffer ([`Buckets::add_into`]).
//!
//! The histogram so made is equal to one that recorded the same values one by
//! one (`==` on HdrHistogram: the same counts in the same layout, total,
//! minimum and maximum): a minimum or maximum is only ever read to its
//! bucket's resolution, and the bucket is what the counts keep.
//! `tests::made_histograms_equal_recorded_ones` (proptest, at 2 and 3 digits)
//! pins that.

use super::by_op::OP_DIGITS;
use super::latencies::Summary;
use super::recorder::{ALL_DIGITS, MAX_TRACKED};
use crate::nanos::Nanos;
use hdrhistogram::Histogram;

/// The quantiles a [`Summary`] holds, in its order (p50 to p99.99).
pub(crate) const SUMMARY_QUANTILES: [f64; 5] = [0.5, 0.9, 0.99, 0.999, 0.9999];

/// A [`Summary`] read off a histogram's non-zero counts, visited in index
/// order, in one pass: each quantile is the highest value equivalent to the
/// first count at which the running total reaches `ceil(q × total)` (at least
/// 1), as `Histogram::value_at_quantile` finds it, and the mean is the same
/// fold, term by term in the same order and the same `f64` operations, as
/// `Histogram::mean` (each count's median-equivalent value times its count
/// over the total), so that every figure is bit for bit HdrHistogram's.
/// `tests/metrics_figures.rs` pins it.
pub(crate) struct Figures {
    total: u64,
    targets: [u64; 5],
    quantiles: [u64; 5],
    next: usize,
    running: u64,
    mean: f64,
}

impl Figures {
    pub(crate) fn new(total: u64) -> Self {
        Self {
            total,
            targets: SUMMARY_QUANTILES.map(|q| ((q * total as f64).ceil() as u64).max(1)),
            quantiles: [0; 5],
            next: 0,
            running: 0,
            mean: 0.0,
        }
    }

    /// Visits the next non-zero count: `n` values equivalent to `v`, the
    /// lowest of the `range` values its count holds (so the highest
    /// equivalent is `v + range - 1`, the median equivalent `v + range / 2`,
    /// as HdrHistogram computes them; `v` is at most 2^61 plus its range, so
    /// neither overflows).
    #[inline]
    pub(crate) fn add(&mut self, v: u64, range: u64, n: u64) {
        self.running = self.running.saturating_add(n);
        let top = v + (range - 1);
        while self.next < 5 && self.running >= self.targets[self.next] {
            self.quantiles[self.next] = top;
            self.next += 1;
        }
        let median = v + (range >> 1);
        self.mean += median as f64 * n as f64 / self.total as f64;
    }

    /// The summary, with `h`'s own count, minimum and maximum.
    pub(crate) fn summary(&self, h: &Histogram<u64>) -> Summary {
        if h.is_empty() {
            return Summary::default();
        }
        let [p50, p90, p99, p999, p9999] = self.quantiles;
        Summary {
            count: h.len(),
            min: h.min(),
            p50,
            p90,
            p99,
            p999,
            p9999,
            max: h.max(),
            mean: self.mean,
        }
    }
}

/// Counts by bucket, in the layout of a `DIGITS`-significant-digit
/// HdrHistogram, growing to the largest value recorded.
#[derive(Debug, Clone)]
pub(crate) struct Buckets<const DIGITS: u8> {
    counts: Vec<u64>,
}

/// A per-op cell's times.
pub(crate) type OpBuckets = Buckets<OP_DIGITS>;
/// A recorder's all-ops times.
pub(crate) type AllBuckets = Buckets<ALL_DIGITS>;

impl<const DIGITS: u8> Buckets<DIGITS> {
    /// log2 of the sub-buckets per bucket: the smallest power of two that holds
    /// 2 × 10^DIGITS values at unit resolution (HdrHistogram's own rule).
    const SUB_MAGNITUDE: u32 = {
        let largest = 2 * 10u64.pow(DIGITS as u32);
        64 - (largest - 1).leading_zeros()
    };
    /// log2 of the half-bucket: every bucket past the first uses only its top half.
    const HALF_MAGNITUDE: u32 = Self::SUB_MAGNITUDE - 1;
    const HALF: u64 = 1 << Self::HALF_MAGNITUDE;
    /// Values below this all fall in bucket 0, at unit resolution.
    const SUB_MASK: u64 = (1 << Self::SUB_MAGNITUDE) - 1;
    const LEADING_ZERO_BASE: u32 = 64 - Self::SUB_MAGNITUDE;

    /// The index of `v`'s count (HdrHistogram's `index_for`, its lowest
    /// discernible value 1).
    #[inline]
    fn index_of(v: u64) -> usize {
        let bucket = Self::LEADING_ZERO_BASE - (v | Self::SUB_MASK).leading_zeros();
        let sub = v >> bucket;
        (((u64::from(bucket) + 1) << Self::HALF_MAGNITUDE) + sub - Self::HALF) as usize
    }

    /// The lowest value whose count is at `index` (HdrHistogram's `value_for`).
    fn value_at(index: usize) -> u64 {
        let i = index as u64;
        match i >> Self::HALF_MAGNITUDE {
            0 | 1 => i,
            b => ((i & (Self::HALF - 1)) + Self::HALF) << (b - 1),
        }
    }

    /// Empty, sized for bucket 0 (as a fresh HdrHistogram is).
    pub(crate) fn new() -> Self {
        Self {
            counts: vec![0; (Self::SUB_MASK + 1) as usize],
        }
    }

    /// Counts `v` (clamped to [`MAX_TRACKED`], as the all-ops histograms are).
    #[inline]
    pub(crate) fn record(&mut self, v: Nanos) {
        let i = Self::index_of(v.min(MAX_TRACKED));
        match self.counts.get_mut(i) {
            Some(c) => *c += 1,
            None => self.grow_and_count(i, 1),
        }
    }

    /// Grows to the end of index `i`'s bucket and adds `n` there (off the hot
    /// path: once per new largest bucket).
    #[cold]
    fn grow_and_count(&mut self, i: usize, n: u64) {
        let end = ((i >> Self::HALF_MAGNITUDE) + 1) << Self::HALF_MAGNITUDE;
        self.counts.resize(end, 0);
        self.counts[i] += n;
    }

    /// Zeroes every count, keeping the allocation.
    #[cfg(test)]
    pub(crate) fn reset(&mut self) {
        self.counts.fill(0);
    }

    /// Counts `n` zeros (a split op on time, counted apart until read).
    pub(crate) fn add_zeros(&mut self, n: u64) {
        self.counts[0] += n;
    }

    /// Moves `other`'s counts into these, leaving `other`'s all zero: the add
    /// and the reset in one pass, so that no separate `memset` follows.
    pub(crate) fn take_from(&mut self, other: &mut Self) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts.iter_mut()) {
            *mine += std::mem::take(theirs);
        }
    }

    /// Moves these counts into `h` (a histogram of `DIGITS` significant
    /// digits, empty) and returns the [`Summary`] of what `h` then holds,
    /// read off the counts in the same pass, exactly as HdrHistogram's own
    /// `value_at_quantile` and `mean` read them (see [`Figures`]). Leaves
    /// every count zero.
    pub(crate) fn drain_into(&mut self, h: &mut Histogram<u64>) -> Summary {
        let total = self.counts.iter().fold(0u64, |a, &c| a.saturating_add(c));
        let mut figures = Figures::new(total);
        let Some(last) = self.counts.iter().rposition(|&c| c > 0) else {
            return figures.summary(h);
        };
        // The largest value first: `h` grows once, to the size its largest
        // value sets (the same size, whatever the order of the records).
        let record = |h: &mut Histogram<u64>, i: usize, n: u64| {
            let v = Self::value_at(i);
            if h.record_n(v, n).is_err() {
                h.saturating_record_n(v, n);
            }
        };
        record(h, last, self.counts[last]);
        for (i, c) in self.counts[..=last].iter_mut().enumerate() {
            if *c > 0 {
                let n = std::mem::take(c);
                if i < last {
                    record(h, i, n);
                }
                figures.add(Self::value_at(i), Self::range_at(i), n);
            }
        }
        figures.summary(h)
    }

    /// How many values share index `i`'s count (HdrHistogram's
    /// `equivalent_range` of its values): 1 in the first bucket, doubling with
    /// each bucket after it.
    #[inline]
    fn range_at(index: usize) -> u64 {
        match (index as u64) >> Self::HALF_MAGNITUDE {
            0 | 1 => 1,
            b => 1 << (b - 1),
        }
    }

    /// Adds `other`'s counts.
    pub(crate) fn absorb(&mut self, other: &Self) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (mine, &theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
    }

    /// Adds these counts into `h`, a histogram of `DIGITS` significant digits.
    #[cfg(test)]
    pub(crate) fn add_into(&self, h: &mut Histogram<u64>) {
        for (i, &n) in self.counts.iter().enumerate() {
            if n > 0 {
                let v = Self::value_at(i);
                if h.record_n(v, n).is_err() {
                    h.saturating_record_n(v, n);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::recorder::{MAX_TRACKED, record_into};
    use super::{AllBuckets, Buckets, OpBuckets};
    use hdrhistogram::Histogram;
    use proptest::prelude::*;

    /// The layout the constants claim, read off HdrHistogram itself.
    #[test]
    fn the_layout_is_hdrhistograms() {
        assert_eq!(
            (OpBuckets::SUB_MAGNITUDE, AllBuckets::SUB_MAGNITUDE),
            (8, 11)
        );
        let values = [
            0,
            1,
            255,
            256,
            257,
            511,
            512,
            2_047,
            2_048,
            2_049,
            123_456_789,
        ];
        for v in values.into_iter().chain([MAX_TRACKED]) {
            let two = Histogram::<u64>::new(2).unwrap();
            let three = Histogram::<u64>::new(3).unwrap();
            assert_eq!(
                OpBuckets::value_at(OpBuckets::index_of(v)),
                two.lowest_equivalent(v)
            );
            assert_eq!(
                AllBuckets::value_at(AllBuckets::index_of(v)),
                three.lowest_equivalent(v)
            );
        }
    }

    fn made<const D: u8>(values: &[u64]) -> Histogram<u64> {
        let mut b = Buckets::<D>::new();
        values.iter().for_each(|&v| b.record(v));
        let mut h = Histogram::new(D).unwrap();
        b.add_into(&mut h);
        h
    }

    fn recorded(digits: u8, values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new(digits).unwrap();
        values.iter().for_each(|&v| record_into(&mut h, v));
        h
    }

    fn value() -> impl Strategy<Value = u64> {
        prop_oneof![
            0..300u64,
            0..5_000u64,
            0..2_000_000u64,
            any::<u64>(),
            Just(u64::MAX)
        ]
    }

    /// Made from counts, equal to recorded value by value: `==` (the same
    /// counts, total, min, max), as long, and the figures read off it.
    fn same(mine: &Histogram<u64>, direct: &Histogram<u64>) -> Result<(), TestCaseError> {
        prop_assert!(mine == direct);
        prop_assert_eq!(mine.distinct_values(), direct.distinct_values());
        prop_assert_eq!(
            (mine.len(), mine.min(), mine.max(), mine.high()),
            (direct.len(), direct.min(), direct.max(), direct.high())
        );
        prop_assert_eq!(mine.value_at_quantile(0.99), direct.value_at_quantile(0.99));
        prop_assert_eq!(mine.mean(), direct.mean());
        Ok(())
    }

    fn check<const D: u8>(a: &[u64], b: &[u64]) -> Result<(), TestCaseError> {
        same(&made::<D>(a), &recorded(D, a))?;
        // Absorbing one buffer into another is recording both.
        let mut sum = Buckets::<D>::new();
        a.iter().for_each(|&v| sum.record(v));
        let mut other = Buckets::<D>::new();
        b.iter().for_each(|&v| other.record(v));
        sum.absorb(&other);
        let mut h = Histogram::new(D).unwrap();
        sum.add_into(&mut h);
        let both: Vec<u64> = a.iter().chain(b).copied().collect();
        same(&h, &recorded(D, &both))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(100))]
        #[test]
        fn made_histograms_equal_recorded_ones(
            a in prop::collection::vec(value(), 0..40),
            b in prop::collection::vec(value(), 0..40),
        ) {
            check::<2>(&a, &b)?;
            check::<3>(&a, &b)?;
        }
    }

    /// The range the figures use is HdrHistogram's, at every index.
    #[test]
    fn the_ranges_are_hdrhistograms() {
        let three = Histogram::<u64>::new(3).unwrap();
        for v in [0, 1, 2_047, 2_048, 4_095, 4_096, 1 << 40, MAX_TRACKED] {
            let i = AllBuckets::index_of(v);
            assert_eq!(AllBuckets::range_at(i), three.equivalent_range(v), "{v}");
            let lowest = AllBuckets::value_at(i);
            let range = AllBuckets::range_at(i);
            assert_eq!(lowest + range - 1, three.highest_equivalent(v));
            assert_eq!(
                lowest + (range >> 1),
                three.median_equivalent(three.highest_equivalent(v))
            );
        }
    }

    #[test]
    fn reset_forgets_the_counts_and_keeps_the_room() {
        let mut b = AllBuckets::new();
        b.record(5_000_000);
        let room = b.counts.len();
        b.reset();
        assert_eq!(b.counts.len(), room);
        let mut h = Histogram::new(3).unwrap();
        b.add_into(&mut h);
        assert!(h.is_empty());
    }
}
