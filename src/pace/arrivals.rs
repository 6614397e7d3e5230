//! Arrivals: how a schedule's slots are spaced. Uniform slots are a slice apart;
//! Poisson slots are exponentially distributed gaps whose mean is the slice.
//!
//! # Poisson slots, exactly
//!
//! Ticket `k` of an epoch has the slot `base + T(k) + idle`, where
//! `T(k) = frac + gap(d) + gap(d + 1) + ... + gap(d + k - 1)` and `d` is the epoch's
//! first draw (the tickets of the schedule's earlier epochs: the draws continue
//! across rate changes, pauses and rollovers, so a rate change rescales the gaps to
//! come without redrawing them). Draw `j` is a unit exponential from the inverse CDF,
//! `E_j = -ln(U_j)`, with `U_j` in (0, 1] from the 53 high bits of SplitMix64's
//! `j`-th output for the seed; it is kept in 32.32 fixed point, and its gap,
//! `E_j x slice`, in 64.64 fixed point (the slice's own format). All sums are
//! integer sums, so `T(k)` is the same number whichever thread computes it and from
//! which earlier `T(j)` it starts: a fixed seed gives the same slots every time.
//!
//! `T(k)` is a prefix sum, so it is computed from the nearest earlier one this
//! thread knows: a thread-local memo of its last `(epoch sequence, k, T(k))`. With
//! `t` threads taking tickets in turn, each op adds about `t` gaps (a hash, a
//! logarithm and a multiply each); a thread that comes to an epoch cold adds up to
//! [`POISSON_SOFT_LIMIT`] of them, since Poisson epochs roll over that often. The
//! hot word, the epoch ring and every acquire path are the uniform ones: only the
//! map from ticket to slot differs. Nothing here is shared, so nothing here needs
//! an ordering or a lock.
//!
//! The exponential is cut at `-ln(2^-53)`, 36.7 mean gaps (probability 1e-16), and
//! quantized to 2^-32 of a mean gap; `ln` is the platform's (the same binary gives
//! the same slots; another libm may differ in the last bit of a rare draw).

use super::slice::Slice;
use std::cell::Cell;

/// Tickets per Poisson epoch before it rolls over (a cold thread's prefix sum is at
/// most this long: about half a millisecond).
pub(crate) const POISSON_SOFT_LIMIT: u64 = 1 << 16;

/// How a schedule's slots are spaced over time.
///
/// ```
/// use paceline::{Arrivals, ManualClock, RateLimiter, RateSpec};
/// let limiter = RateLimiter::builder(RateSpec::new(1000.0))
///     .arrivals(Arrivals::Poisson { seed: 7 })
///     .build_with_clock(ManualClock::new());
/// let a = limiter.acquire().scheduled_nanos();
/// let b = limiter.acquire().scheduled_nanos();
/// assert!(b >= a); // an exponential gap with a mean of 1 ms
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Arrivals {
    /// Slots exactly a slice (1e9 / rate ns) apart (the default).
    #[default]
    Uniform,
    /// Slots at exponentially distributed gaps whose mean is the slice: a Poisson
    /// process at the rate, the same for the same seed.
    Poisson {
        /// The random stream's seed.
        seed: u64,
    },
}

impl Arrivals {
    /// The arrivals of the `n`-th schedule a thread-scoped limiter creates: Poisson
    /// streams get their own seed, so threads' arrivals are independent.
    ///
    /// ```
    /// use paceline::Arrivals;
    /// assert_eq!(Arrivals::Uniform.for_thread(3), Arrivals::Uniform);
    /// assert_ne!(Arrivals::Poisson { seed: 1 }.for_thread(1), Arrivals::Poisson { seed: 1 });
    /// ```
    pub fn for_thread(self, n: u64) -> Self {
        match self {
            Arrivals::Uniform => Arrivals::Uniform,
            Arrivals::Poisson { seed } => Arrivals::Poisson {
                seed: splitmix(seed ^ splitmix(n.wrapping_add(1))),
            },
        }
    }

    /// The name used in parameters: `uniform` or `poisson`.
    ///
    /// ```
    /// assert_eq!(paceline::Arrivals::Poisson { seed: 0 }.name(), "poisson");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Arrivals::Uniform => "uniform",
            Arrivals::Poisson { .. } => "poisson",
        }
    }
}

const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's finalizer.
#[inline]
fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Draw `j` of stream `seed`: a unit exponential in units of 2^-32.
#[inline]
pub(crate) fn unit_gap(seed: u64, j: u64) -> u64 {
    let h = splitmix(seed.wrapping_add(j.wrapping_add(1).wrapping_mul(GAMMA)));
    // U in (0, 1]: never 0, so the logarithm is finite.
    let u = ((h >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64);
    (-u.ln() * 4_294_967_296.0) as u64
}

/// `e` (2^-32 units) mean gaps of `slice`, in 2^-64 ns.
#[inline]
fn scaled(slice: Slice, e: u64) -> u128 {
    ((u128::from(slice.hi) * u128::from(e)) << 32) + ((u128::from(slice.lo) * u128::from(e)) >> 32)
}

/// One Poisson epoch's sequence: what its prefix sums depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stream {
    pub(crate) seed: u64,
    /// The draw of ticket 0.
    pub(crate) draws: u64,
    pub(crate) slice: Slice,
    /// The base's fraction of a nanosecond (2^-64 ns).
    pub(crate) frac: u64,
}

#[derive(Clone, Copy)]
struct Memo {
    stream: Stream,
    k: u64,
    whole: u64,
    frac: u64,
}

std::thread_local! {
    static MEMO: Cell<Option<Memo>> = const { Cell::new(None) };
}

impl Stream {
    /// `T(k)` as whole nanoseconds and fraction (see the module doc).
    #[inline]
    pub(crate) fn offset(&self, k: u64) -> (u64, u64) {
        let start = MEMO
            .try_with(Cell::get)
            .ok()
            .flatten()
            .filter(|m| m.stream == *self && m.k <= k)
            .map_or((0, 0, self.frac), |m| (m.k, m.whole, m.frac));
        let (whole, frac) = self.sum(start, k);
        let _ = MEMO.try_with(|m| {
            m.set(Some(Memo {
                stream: *self,
                k,
                whole,
                frac,
            }))
        });
        (whole, frac)
    }

    /// Adds the gaps of draws `from..k` to `(whole, frac)`.
    fn sum(&self, (from, mut whole, mut frac): (u64, u64, u64), k: u64) -> (u64, u64) {
        for j in from..k {
            let g = scaled(self.slice, unit_gap(self.seed, self.draws.wrapping_add(j)));
            let (f, carry) = frac.overflowing_add(g as u64);
            frac = f;
            whole = whole
                .saturating_add((g >> 64) as u64)
                .saturating_add(u64::from(carry));
        }
        (whole, frac)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn draws_are_unit_exponentials_in_fixed_point() {
        // U = 1 (the largest) gives 0; the mean over many draws is 1.
        let n = 200_000u64;
        let mean = (0..n).map(|j| unit_gap(42, j) as f64).sum::<f64>() / n as f64 / 4_294_967_296.0;
        assert!((mean - 1.0).abs() < 0.01, "{mean}");
        assert!((0..n).all(|j| unit_gap(42, j) < 37 << 32));
    }

    #[test]
    fn a_prefix_sum_is_the_same_from_any_start() {
        let s = Stream {
            seed: 9,
            draws: 1000,
            slice: Slice::of_rate(3e5),
            frac: 1 << 63,
        };
        MEMO.with(|m| m.set(None));
        let direct = s.sum((0, 0, s.frac), 500);
        let step = s.sum((0, 0, s.frac), 123);
        assert_eq!(s.sum((123, step.0, step.1), 500), direct);
        // the memo, forwards and backwards
        assert_eq!(s.offset(123), step);
        assert_eq!(s.offset(500), direct);
        assert_eq!(s.offset(123), step, "an earlier k starts from 0");
    }

    #[test]
    fn the_gap_scales_with_the_slice_exactly() {
        let e = 3u64 << 31; // 1.5 mean gaps
        assert_eq!(scaled(Slice { hi: 1000, lo: 0 }, e), 1500u128 << 64);
        assert_eq!(scaled(Slice { hi: 0, lo: 1 << 63 }, e), 3u128 << 62); // 0.75 ns
    }
}
