//! A run's HdrHistogram as a Prometheus native histogram: sparse buckets
//! whose bounds grow by a fixed factor, `2^(2^-schema)`, around 1 second.
//!
//! # The schema
//!
//! [`SCHEMA`] is 2: bucket `i` holds the values in `(2^((i-1)/4), 2^(i/4)]`
//! seconds, each bound 1.189 times the one before, about 13 per decade. The
//! fine classic buckets are 10 per decade (R10, 1.26 apart); schema 2 is the
//! coarsest schema at least as fine as they are (schema 1 is 1.41 apart), so a
//! quantile Prometheus interpolates inside one bucket is off by less than
//! 18.9 % of the true value at worst, where the fine buckets allow 26 %. A
//! finer schema costs a native histogram little (only buckets that hold
//! values are sent), but each step doubles the buckets a wide distribution
//! spreads over, and the point of the choice is the same accuracy as the
//! text exposition, not more.
//!
//! # The mapping
//!
//! Each HdrHistogram bucket (3 significant digits: at most 0.1 % wide) goes
//! whole to the native bucket of its highest equivalent value, as it goes to a
//! classic bucket ([`super::Buckets`]): the count, sum and bucket populations
//! are those of the classic buckets, in other bounds. Zeros (an on-time op's
//! queue and dispatch) go to the zero bucket, whose threshold is
//! [`ZERO_THRESHOLD`] (2^-128 s, Prometheus's own default): the smallest
//! value that is not zero is 1 ns. The populated buckets are written as
//! spans of consecutive buckets and the deltas of their counts, each from the
//! one before (the first from 0), as the protobuf format asks for integer
//! histograms.

use paceline::Latencies;

/// The native histograms' schema: 4 buckets per power of two.
pub(crate) const SCHEMA: i32 = 2;

/// The zero bucket's width, in seconds: 2^-128, as Prometheus's Go client
/// sets it by default. Greater than 0, it also marks the histogram as a
/// native one to every Prometheus version that reads them.
pub(crate) const ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;

/// The lower bounds of the 4 buckets in each power of two, as fractions in
/// `[0.5, 1)`: 2^(k/4) / 2 for k = 0..4 (the doubles nearest 0.5, 2^-3/4,
/// 2^-1/2 and 2^-1/4, the table Prometheus itself uses for schema 2).
const BOUNDS: [f64; 4] = [
    0.5,
    0.594_603_557_501_360_5,
    std::f64::consts::FRAC_1_SQRT_2,
    0.840_896_415_253_714_5,
];

/// A native histogram of positive values, ready to encode.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Native {
    /// How many values, the zero bucket's included.
    pub(crate) count: u64,
    /// Their sum, in seconds.
    pub(crate) sum: f64,
    /// How many values are zero.
    pub(crate) zero_count: u64,
    /// `(offset, length)`: the first span's offset is its first bucket's
    /// index; each later one's is the number of empty buckets before it.
    pub(crate) spans: Vec<(i32, u32)>,
    /// Each populated bucket's count minus the one before it (the first's
    /// minus 0), in bucket order.
    pub(crate) deltas: Vec<i64>,
}

/// `(mantissa, exponent)` with `v = mantissa * 2^exponent` and the mantissa in
/// `[0.5, 1)`, for a positive finite `v` (C's `frexp`).
fn frexp(v: f64) -> (f64, i32) {
    let bits = v.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    if exp_bits == 0 {
        // A subnormal: scale it into the normal range first.
        let (m, e) = frexp(v * 2f64.powi(64));
        return (m, e - 64);
    }
    let mantissa = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (mantissa, exp_bits - 1022)
}

/// The index of the schema-2 bucket holding `seconds` (positive, finite):
/// bucket `i` is `(2^((i-1)/4), 2^(i/4)]`, so 1 s is the top of bucket 0.
pub(crate) fn bucket_index(seconds: f64) -> i32 {
    let (frac, exp) = frexp(seconds);
    // The first bound at or above the fraction (a bound is the top of the
    // bucket below it: upper bounds are inclusive).
    let k = BOUNDS.partition_point(|&b| b < frac) as i32;
    k + (exp - 1) * 4
}

/// The upper bound of bucket `index`, in seconds.
#[cfg(test)]
pub(crate) fn upper_bound(index: i32) -> f64 {
    let k = index.rem_euclid(4);
    let exp = index.div_euclid(4);
    2f64.powi(exp) * BOUNDS[k as usize] * 2.0
}

impl Native {
    /// `latencies` (nanoseconds) as a native histogram of seconds.
    pub(crate) fn of(latencies: &Latencies) -> Self {
        let mut out = Self {
            count: 0,
            sum: 0.0,
            zero_count: 0,
            spans: Vec::new(),
            deltas: Vec::new(),
        };
        // (index, count) of the populated buckets, ascending: the recorded
        // values come in ascending order, so their indexes never go down.
        let mut buckets: Vec<(i32, u64)> = Vec::new();
        for v in latencies.histogram().iter_recorded() {
            let n = v.count_at_value();
            let nanos = v.value_iterated_to();
            out.count += n;
            if nanos == 0 {
                out.zero_count += n;
                continue;
            }
            let secs = nanos as f64 / 1e9;
            out.sum += secs * n as f64;
            let i = bucket_index(secs);
            match buckets.last_mut() {
                Some((last, c)) if *last == i => *c += n,
                _ => buckets.push((i, n)),
            }
        }
        let mut previous: Option<i32> = None;
        let mut count_before = 0u64;
        for (i, n) in buckets {
            match previous {
                Some(p) if i == p + 1 => {
                    if let Some(span) = out.spans.last_mut() {
                        span.1 += 1;
                    }
                }
                Some(p) => out.spans.push((i - p - 1, 1)),
                None => out.spans.push((i, 1)),
            }
            out.deltas.push(n as i64 - count_before as i64);
            count_before = n;
            previous = Some(i);
        }
        out
    }

    /// The `q` quantile (0 to 1) as Prometheus 2.42's `histogram_quantile`
    /// computes it from a native histogram: the bucket the rank falls in,
    /// and linear interpolation inside it (zero bucket first). For tests.
    #[cfg(test)]
    pub(crate) fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = q * self.count as f64;
        let mut below = self.zero_count as f64;
        if rank <= below {
            return Some(0.0);
        }
        let mut index = 0;
        let mut count = 0i64;
        let mut d = self.deltas.iter();
        for (n, &(offset, len)) in self.spans.iter().enumerate() {
            index = if n == 0 { offset } else { index + offset + 1 };
            for j in 0..len {
                if j > 0 {
                    index += 1;
                }
                count += d.next().copied().unwrap_or(0);
                let c = count as f64;
                if below + c >= rank {
                    let (lo, hi) = (upper_bound(index - 1), upper_bound(index));
                    return Some(lo + (hi - lo) * (rank - below) / c);
                }
                below += c;
            }
        }
        None
    }
}
