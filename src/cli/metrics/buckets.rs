//! The latency histograms' buckets: which bounds (`--metrics-buckets`), and
//! how the run's HdrHistograms are sorted into them.
//!
//! # The choice
//!
//! A quantile that Prometheus computes from buckets (`histogram_quantile`) is
//! found by linear interpolation inside the bucket the quantile falls in, so
//! its error is bounded by that bucket's width, not by the data:
//!
//! - `fine` (the default): 10 bounds per decade, the R10 preferred numbers
//!   1, 1.25, 1.6, 2, 2.5, 3.15, 4, 5, 6.3, 8, from 1 µs to 10 s (71 bounds and
//!   `+Inf`). Neighbours differ by a factor of about 1.26, so an interpolated
//!   quantile is off by less than 26 % at worst and a few percent on smooth
//!   data. The coarse bounds are among them, so a query that sums the fine
//!   buckets into the coarse ones gives the coarse answer.
//! - `coarse`: 1, 2.5, 5 per decade (22 bounds and `+Inf`), a factor of 2 to
//!   2.5 between neighbours: a third of the series, and a quantile that can be
//!   off by more than half (issue 24 saw a service p90 of 8.27 ms for a true
//!   5.03 ms).
//!
//! - `native`: Prometheus's native (sparse, exponential) histograms, schema 2
//!   (4 buckets per power of two, 1.19 apart: see [`super::native`]), in the
//!   protobuf exposition, which a scraper gets when it asks for it (Prometheus
//!   does with `--enable-feature=native-histograms`); the fine buckets go
//!   beside them in the same message, and alone in the text exposition, which
//!   has no native histograms (OpenMetrics 1.0).

use paceline::Latencies;
use std::sync::OnceLock;

/// The coarse bounds in seconds, 1 µs to 10 s in 1-2.5-5 steps; `+Inf` follows.
pub const BUCKETS: [f64; 22] = [
    1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2,
    5e-2, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The R10 preferred numbers: 10 per decade, each about 1.26 times the one before.
const R10: [&str; 10] = ["1", "1.25", "1.6", "2", "2.5", "3.15", "4", "5", "6.3", "8"];

/// The fine bounds in seconds: R10 steps from 1 µs to 10 s, each the double
/// nearest its decimal (`1.25e-3`, not `0.0012500000000000002`).
pub fn fine_buckets() -> &'static [f64] {
    static FINE: OnceLock<Vec<f64>> = OnceLock::new();
    FINE.get_or_init(|| {
        let mut out: Vec<f64> = (-6..=0)
            .flat_map(|exp| {
                R10.iter()
                    .filter_map(move |m| format!("{m}e{exp}").parse::<f64>().ok())
            })
            .collect();
        out.push(10.0);
        out
    })
}

/// Which bounds the latency histograms of `/metrics` use (`--metrics-buckets`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BucketScheme {
    /// 10 per decade (R10), 1 µs to 10 s: the default.
    #[default]
    Fine,
    /// 1-2.5-5 per decade, 1 µs to 10 s.
    Coarse,
    /// Native histograms (schema 2) in the protobuf exposition, with the
    /// fine buckets beside them (and alone in the text exposition).
    Native,
}

impl BucketScheme {
    /// The scheme named `s` (`fine`, `coarse` or `native`), or a message
    /// saying what is accepted.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fine" | "10" => Ok(Self::Fine),
            "coarse" | "3" => Ok(Self::Coarse),
            "native" | "sparse" => Ok(Self::Native),
            other => Err(format!(
                "`{other}` is not a bucket scheme; use `fine` (10 per decade, the \
                 default), `coarse` (1, 2.5, 5 per decade) or `native` (Prometheus \
                 native histograms, for a scraper that asks for protobuf)"
            )),
        }
    }

    /// The upper bounds in seconds of its classic buckets, ascending,
    /// without `+Inf` (`native`'s are the fine ones).
    pub fn bounds(self) -> &'static [f64] {
        match self {
            Self::Fine | Self::Native => fine_buckets(),
            Self::Coarse => &BUCKETS,
        }
    }

    /// The scheme of its classic buckets: itself, or `fine` for `native`.
    pub fn classic(self) -> Self {
        match self {
            Self::Native => Self::Fine,
            other => other,
        }
    }
}

/// A latency distribution in a scheme's buckets: per-bucket counts (not
/// cumulative: the encoder adds them up), `+Inf` last.
#[derive(Debug, Clone, PartialEq)]
pub struct Buckets {
    /// Sum of every value, in seconds.
    pub sum: f64,
    /// How many values.
    pub count: u64,
    /// `(upper bound in seconds, values in this bucket only)`.
    pub buckets: Vec<(f64, u64)>,
}

impl Buckets {
    /// Sorts the recorded values of `latencies` into the coarse [`BUCKETS`].
    #[cfg(test)]
    pub fn of(latencies: &Latencies) -> Self {
        Self::in_scheme(latencies, BucketScheme::Coarse)
    }

    /// Sorts the recorded values of `latencies` into `scheme`'s buckets. A value
    /// goes to the first bucket whose bound is at least the value's
    /// HdrHistogram equivalent (its 3 significant digits).
    pub fn in_scheme(latencies: &Latencies, scheme: BucketScheme) -> Self {
        let mut buckets: Vec<(f64, u64)> = scheme
            .bounds()
            .iter()
            .chain(std::iter::once(&f64::INFINITY))
            .map(|&b| (b, 0))
            .collect();
        let mut sum = 0.0;
        let mut count = 0;
        for v in latencies.histogram().iter_recorded() {
            let n = v.count_at_value();
            let secs = v.value_iterated_to() as f64 / 1e9;
            sum += secs * n as f64;
            count += n;
            // Bounds ascend and the last is +Inf: a binary search finds the first
            // bound at or above the value.
            let i = buckets.partition_point(|(bound, _)| *bound < secs);
            if let Some(b) = buckets.get_mut(i) {
                b.1 += n;
            }
        }
        Self {
            sum,
            count,
            buckets,
        }
    }

    /// The `q` quantile (0 to 1) as Prometheus's `histogram_quantile` computes
    /// it from these buckets: linear interpolation inside the bucket the rank
    /// falls in, the first bucket starting at 0, and the highest finite bound
    /// when the rank falls in `+Inf`. `None` without values. (The tests
    /// measure the buckets' error with it.)
    #[cfg(test)]
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * self.count as f64;
        let mut below = 0u64;
        let mut lower = 0.0;
        for &(upper, n) in &self.buckets {
            let cumulative = below + n;
            if cumulative as f64 >= rank && n > 0 {
                if upper.is_infinite() {
                    return Some(lower);
                }
                let into = (rank - below as f64) / n as f64;
                return Some(lower + (upper - lower) * into);
            }
            below = cumulative;
            lower = if upper.is_infinite() { lower } else { upper };
        }
        Some(lower)
    }
}
