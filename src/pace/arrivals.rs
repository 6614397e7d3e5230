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
//! `E_j = -ln(U_j)`, kept in 32.32 fixed point, and its gap, `E_j x slice`, in
//! 64.64 fixed point (the slice's own format). All sums are integer sums, so `T(k)`
//! is the same number whichever thread computes it and from which earlier `T(j)` it
//! starts: a fixed seed gives the same slots every time.
//!
//! # Stratified uniforms
//!
//! The uniforms are stratified in blocks of [`BLOCK`] (1024) draws: draw `j` of
//! block `b = j / 1024` takes the stratum `s = perm_b(j mod 1024)`, where `perm_b`
//! is a pseudo-random permutation of `0..1024` keyed by `(seed, b)` (a 4-round
//! Feistel network on two 5-bit halves, then a keyed XOR), and
//! `U_j = (s + v_j) / 1024` with `v_j` in (0, 1] from the 53 high bits of
//! SplitMix64's `j`-th output for the seed (the jitter inside the stratum).
//!
//! - Each `U_j` alone is uniform on (0, 1] (the keyed XOR makes its stratum
//!   uniform, the jitter fills the stratum), so each gap alone is exactly
//!   exponential with the slice as its mean, as in a Poisson process.
//! - Each full block takes every stratum once, so its 1024 gaps sum to 1024 mean
//!   gaps with a standard deviation of about 1.07 (the stratum next to 0 holds an
//!   exponential tail, variance 1; the others add about pi^2 / 72), where 1024
//!   independent exponentials have 32. Over 100K draws the mean gap is off by about
//!   0.02 % (independent draws: 0.32 %), so the mean rate holds to well within
//!   0.5 % for every seed.
//! - Draws of one block are drawn without replacement from the strata: two of
//!   them are correlated by -1/1023, and draws of different blocks are independent.
//!   A count of slots over a window of `W` mean gaps varies by about 20 (sigma)
//!   whatever `W` (a Poisson process's varies by `sqrt(W)`).
//! - A draw is still a pure function of `(seed, j)`: random access by index, so the
//!   prefix sums, the memo below and the loom models work as before.
//!
//! `T(k)` is a prefix sum, so it is computed from the nearest earlier one known:
//! this thread's last point (a thread-local memo of its last `(stream, k, T(k))`)
//! or the newest point any thread of the process priced for the stream (a
//! seqlocked entry per seed's hash, see [`newest`]). A thread that prices ticket
//! `k` past the newest sums on from it and publishes its own point; one that is
//! behind sums from the nearest it has. With `t` threads taking tickets in turn,
//! each ticket adds about one gap for the whole process (six hashes, a logarithm
//! and a multiply), not `t`; a stream that no thread has priced yet is summed
//! from ticket 0, at most [`POISSON_SOFT_LIMIT`] gaps, since Poisson epochs roll
//! over that often. The hot word, the epoch ring and every acquire path are the
//! uniform ones: only the map from ticket to slot differs.
//!
//! The end-of-run sums start from the same points: a schedule's cursor
//! (`Schedule::stats`, a rollover, a rate change) is `T(k)` for the newest
//! ticket, one gap or none past the newest point; [`Arrivals::span`] (the
//! verdict's drawn rate) is the seed's unit sum `U(n)` of draws `0..n`, which
//! each point carries (`base + unit`: the sum before its stream, carried from the
//! seed's previous stream's last point, and its own stream's), summed forwards
//! or backwards from the nearest point when that is shorter than from 0.
//!
//! | fast path | invariant | pinned by |
//! |---|---|---|
//! | start from the shared or own point | a point is a pure function of its stream and `k`: the same integers from any start, by any thread | `the_shared_path_gives_the_plain_sum_for_any_access_order` (proptest), `four_threads_taking_tickets_get_the_one_thread_slots` (tests/pace_poisson.rs) |
//! | one draw per ticket for the process | a thread publishes each point it priced past the newest | `two_threads_taking_tickets_in_turn_make_one_draw_per_ticket` |
//! | the cursor from the newest point | as the first row | `the_stats_cursor_is_the_plain_sum_and_costs_at_most_one_draw` |
//! | `U(n)` from a point's `base + unit` | `base` is `U(draws)` or unknown, never a guess; integer sums backwards and forwards | `the_span_from_a_point_is_the_plain_sum_across_epochs` |
//! | the seqlocked entry | a read is one writer's whole point | `loom_tests_a_read_point_is_one_writers_whole_point` (loom), `newest::tests` |
//!
//! The exponential is cut at `-ln(2^-63)`, 43.7 mean gaps (probability 1e-19), and
//! quantized to 2^-32 of a mean gap; `ln` is the platform's (the same binary gives
//! the same slots; another libm may differ in the last bit of a rare draw).

use super::slice::Slice;
use newest::{Point, UNKNOWN};
use std::cell::Cell;

mod newest;

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

    /// The span of the first `n + 1` slots at a constant rate, in slices (mean
    /// gaps): `n` for uniform slots; for Poisson slots the sum of the stream's
    /// first `n` draws, whose mean is `n`. A constant rate's schedule asked for
    /// `n / span(n)` times its rate over its first `n + 1` slots: what a run that
    /// kept every slot achieves ([`drawn_rate`](crate::drawn_rate)). Exact up to
    /// 2^20 gaps; past that each further full block of 1024 draws counts as 1024
    /// mean gaps (it is off by about one: under 1e-4 of the span).
    ///
    /// ```
    /// use paceline::{Arrivals, ManualClock, RateLimiter, RateSpec};
    /// assert_eq!(Arrivals::Uniform.span(10), 10.0);
    /// let poisson = Arrivals::Poisson { seed: 7 };
    /// let limiter = RateLimiter::builder(RateSpec::new(1000.0))
    ///     .arrivals(poisson)
    ///     .build_with_clock(ManualClock::new());
    /// let slots: Vec<u64> = (0..11).map(|_| limiter.acquire().scheduled_nanos()).collect();
    /// // slot 10 is 10 draws of 1 ms each after slot 0, to the nanosecond
    /// assert!((poisson.span(10) * 1e6 - slots[10] as f64).abs() < 1.0);
    /// ```
    pub fn span(&self, n: u64) -> f64 {
        match self {
            Arrivals::Uniform => n as f64,
            Arrivals::Poisson { seed } => unit_span(*seed, n),
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

/// Draws per stratified block: each block of 1024 draws takes each of 1024
/// strata of (0, 1] once (see the module doc).
pub(crate) const BLOCK: u64 = 1 << 10;

/// The stratum of draw `i` (`0..1024`) of the block keyed `key`: a permutation of
/// `0..1024` for each key (a Feistel network is a bijection whatever its round
/// function), whose last XOR makes each draw's stratum uniform over the keys.
#[inline]
fn stratum(key: u64, i: u64) -> u64 {
    let (mut l, mut r) = (i >> 5, i & 31);
    for round in 0..4u64 {
        let f = splitmix(key.wrapping_add((round << 5 | r).wrapping_mul(GAMMA))) >> 59;
        (l, r) = (r, l ^ f);
    }
    ((l << 5) | r) ^ (key >> 54)
}

/// Draw `j` of stream `seed`: a unit exponential in units of 2^-32.
#[inline]
pub(crate) fn unit_gap(seed: u64, j: u64) -> u64 {
    let h = splitmix(seed.wrapping_add(j.wrapping_add(1).wrapping_mul(GAMMA)));
    // The block's key: another SplitMix64 stream of the seed, one output a block.
    let key = splitmix((seed ^ BLOCK_SALT).wrapping_add((j / BLOCK).wrapping_mul(GAMMA)));
    // U = (stratum + jitter) / 1024 in (0, 1], in units of 2^-63: never 0, so the
    // logarithm is finite, and exactly 1 at most.
    let v = (stratum(key, j % BLOCK) << 53) + (h >> 11) + 1;
    let u = v as f64 * (1.0 / (1u64 << 63) as f64);
    (-u.ln() * 4_294_967_296.0) as u64
}

/// Sets the block keys' stream apart from the jitter's.
const BLOCK_SALT: u64 = 0x5851_F42D_4C95_7F2D;

/// The sum of draws `0..n` of stream `seed`, in mean gaps: the span of a constant
/// rate's first `n + 1` slots, in slices. Exact for `n` up to 2^20; past that,
/// each further full block counts as its expectation, 1024 (off by about 1.07
/// each, 1e-4 of 2^20 draws at most), and the last partial block exactly.
pub(crate) fn unit_span(seed: u64, n: u64) -> f64 {
    const EXACT: u64 = 1 << 20;
    let head = n.min(EXACT);
    let tail = n.saturating_sub(EXACT);
    let last = tail % BLOCK;
    let exact = seed_prefix(seed, head) + plain_units(seed, n - last..n);
    exact as f64 / 4_294_967_296.0 + ((tail - last) as f64)
}

/// The sum of draws `r` of stream `seed`, in 2^-32 mean gaps.
fn plain_units(seed: u64, r: std::ops::Range<u64>) -> u128 {
    #[cfg(all(test, not(loom)))]
    tests::DRAWS.with(|d| d.set(d.get() + (r.end - r.start)));
    r.map(|j| u128::from(unit_gap(seed, j))).sum()
}

/// The sum of draws `0..m` of stream `seed`, in 2^-32 mean gaps: from the
/// nearest known prefix of the seed (the shared entry's newest point, or this
/// thread's) forwards or backwards when that is shorter than from 0. Integer
/// sums: the same number from any start.
fn seed_prefix(seed: u64, m: u64) -> u128 {
    let shared = newest::entry(seed).and_then(newest::Entry::read);
    let own = MEMO.try_with(Cell::get).ok().flatten();
    let near = [shared, own]
        .into_iter()
        .flatten()
        .filter(|p| p.stream.seed == seed)
        .filter_map(|p| p.seed_prefix())
        .min_by_key(|&(at, _)| at.abs_diff(m))
        .filter(|&(at, _)| at.abs_diff(m) < m);
    match near {
        Some((at, sum)) if at <= m => sum + plain_units(seed, at..m),
        Some((at, sum)) => sum - plain_units(seed, m..at),
        None => plain_units(seed, 0..m),
    }
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

std::thread_local! {
    /// This thread's last point.
    static MEMO: Cell<Option<Point>> = const { Cell::new(None) };
}

impl Stream {
    /// `T(k)` as whole nanoseconds and fraction (see the module doc): summed on
    /// from the nearest point at or before `k` of this stream that this thread
    /// or the shared entry holds, then kept as this thread's point and offered to
    /// the shared entry (under the stamp it was read with).
    #[inline]
    pub(crate) fn offset(&self, k: u64) -> (u64, u64) {
        let entry = newest::entry(self.seed);
        let seen = entry.and_then(newest::Entry::read_stamped);
        let shared = seen.map(|(_, p)| p);
        let own = MEMO.try_with(Cell::get).ok().flatten();
        let from = self.start(k, &own, &shared);
        let p = self.sum(from, k);
        let _ = MEMO.try_with(|m| m.set(Some(p)));
        if let Some(e) = entry {
            e.offer(seen, &p);
        }
        (p.whole, p.frac)
    }

    /// Where `T(k)` is summed from: the nearest of `own` and `shared` that is a
    /// point of this stream at or before `k`, else ticket 0. The point's base (the
    /// seed's unit sum before this stream) is the first known of: the start's,
    /// the other point's of this stream, and a point of the seed that ends where
    /// this stream begins (the last epoch's cursor).
    #[inline]
    fn start(&self, k: u64, own: &Option<Point>, shared: &Option<Point>) -> Point {
        let usable = |p: &Option<Point>| p.filter(|p| p.k <= k && p.stream == *self);
        let from = match (usable(own), usable(shared)) {
            (Some(a), Some(b)) => {
                if (b.k, b.base != UNKNOWN) > (a.k, a.base != UNKNOWN) {
                    b
                } else {
                    a
                }
            }
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => Point {
                stream: *self,
                k: 0,
                whole: 0,
                frac: self.frac,
                unit: 0,
                base: if self.draws == 0 { 0 } else { UNKNOWN },
            },
        };
        if from.base == UNKNOWN {
            self.with_base(from, own, shared)
        } else {
            from
        }
    }

    /// `from` with the first known base of: a point of this stream, and a point of
    /// the seed that ends where this stream begins (see [`start`](Self::start)).
    #[cold]
    fn with_base(&self, mut from: Point, own: &Option<Point>, shared: &Option<Point>) -> Point {
        from.base = [own, shared]
            .into_iter()
            .flatten()
            .filter(|p| p.stream.seed == self.seed)
            .find_map(|p| {
                if p.stream == *self {
                    Some(p.base).filter(|&b| b != UNKNOWN)
                } else {
                    p.seed_prefix()
                        .filter(|&(at, _)| at == self.draws)
                        .and_then(|(_, sum)| u64::try_from(sum).ok())
                        .filter(|&b| b != UNKNOWN)
                }
            })
            .unwrap_or(UNKNOWN);
        from
    }

    /// Sums the gaps of draws `from.k..k` onto `from`.
    fn sum(&self, from: Point, k: u64) -> Point {
        let (mut whole, mut frac, mut unit) = (from.whole, from.frac, from.unit);
        for j in from.k..k {
            let e = unit_gap(self.seed, self.draws.wrapping_add(j));
            #[cfg(all(test, not(loom)))]
            tests::DRAWS.with(|d| d.set(d.get() + 1));
            let g = scaled(self.slice, e);
            let (f, carry) = frac.overflowing_add(g as u64);
            frac = f;
            whole = whole
                .saturating_add((g >> 64) as u64)
                .saturating_add(u64::from(carry));
            unit = unit.wrapping_add(e);
        }
        Point {
            k,
            whole,
            frac,
            unit,
            ..from
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    std::thread_local! {
        /// Draws [`Stream::sum`] made on this thread.
        pub(super) static DRAWS: Cell<u64> = const { Cell::new(0) };
    }

    #[test]
    fn draws_are_unit_exponentials_in_fixed_point() {
        // U = 1 (the largest) gives 0; the mean over many draws is 1.
        let n = 200_000u64;
        let mean = (0..n).map(|j| unit_gap(42, j) as f64).sum::<f64>() / n as f64 / 4_294_967_296.0;
        assert!((mean - 1.0).abs() < 0.01, "{mean}");
        assert!((0..n).all(|j| unit_gap(42, j) < 44 << 32));
    }

    /// Audit of issue 22, M5: with independent draws the mean of 100K gaps has a
    /// sigma of 0.32 %, and seeds 8, 24, 28, 36, 39 and 51 of 0-59 missed the
    /// issue's 0.5 %. Stratified, every seed of a sweep holds it by far.
    #[test]
    fn issue22_m5_the_mean_of_100k_gaps_is_within_half_a_percent_for_every_seed() {
        let mut worst = (0, 0.0f64);
        for seed in (0..100).chain([8, 24, 28, 36, 39, 51, u64::MAX, 1 << 63]) {
            let off = unit_span(seed, 100_000) / 100_000.0 - 1.0;
            if off.abs() > worst.1.abs() {
                worst = (seed, off);
            }
        }
        // The worst of these is seed 8, -0.076 %: the 672 draws of its last,
        // partial block (sd 16.6 mean gaps) run 58 short. The issue asks 0.5 %.
        assert!(
            worst.1.abs() < 0.002,
            "worst: seed {} off by {:+.4} %",
            worst.0,
            worst.1 * 100.0
        );
    }

    #[test]
    fn each_block_takes_every_stratum_once_and_sums_to_about_1024_mean_gaps() {
        for seed in [0, 42, u64::MAX] {
            for b in 0..200u64 {
                let j0 = b * BLOCK;
                let key = splitmix((seed ^ BLOCK_SALT).wrapping_add(b.wrapping_mul(GAMMA)));
                let mut seen = vec![false; BLOCK as usize];
                for i in 0..BLOCK {
                    let s = stratum(key, i) as usize;
                    assert!(!seen[s], "seed {seed} block {b}: stratum {s} twice");
                    seen[s] = true;
                    // U_j lies in its stratum: E_j between -ln((s+1)/1024) and -ln(s/1024).
                    let e = unit_gap(seed, j0 + i) as f64 / 4_294_967_296.0;
                    let hi = if s == 0 {
                        44.0
                    } else {
                        -(s as f64 / 1024.0).ln() + 1e-9
                    };
                    assert!(
                        e >= -((s + 1) as f64 / 1024.0).ln() - 1e-9 && e <= hi,
                        "{e} {s}"
                    );
                }
                let sum = (j0..j0 + BLOCK)
                    .map(|j| unit_gap(seed, j) as f64)
                    .sum::<f64>()
                    / 4_294_967_296.0;
                // 1024 + (an exponential tail's excess - 1) + tiny: the largest of
                // 600 unit exponentials is about ln 600 = 6.4.
                assert!((sum - 1024.0).abs() < 12.0, "seed {seed} block {b}: {sum}");
            }
        }
    }

    /// Each draw alone is uniform over the strata (so exactly exponential): draw
    /// `i` of 20,480 blocks, chi-square over 32 groups of strata against the
    /// 1 %-level critical value for 31 degrees of freedom (52.19).
    #[test]
    fn a_draw_s_stratum_is_uniform_over_the_blocks() {
        for i in [0, 1, 511, 1023] {
            let mut counts = [0u64; 32];
            let blocks = 20_480u64;
            for b in 0..blocks {
                let key = splitmix((7 ^ BLOCK_SALT).wrapping_add(b.wrapping_mul(GAMMA)));
                counts[(stratum(key, i) >> 5) as usize] += 1;
            }
            let expect = blocks as f64 / 32.0;
            let chi2 = counts
                .iter()
                .map(|&c| (c as f64 - expect).powi(2) / expect)
                .sum::<f64>();
            assert!(chi2 < 52.19, "draw {i}: chi-square {chi2}");
        }
    }

    /// Neighbouring draws are uncorrelated within a few 1/1024 (within a block two
    /// draws are correlated by -1/1023; the estimate's own noise over 1M draws is
    /// about 0.001), at lags 1 to 3 and 1023 to 1025 (across a block's edge).
    #[test]
    fn neighbouring_draws_are_uncorrelated_within_a_few_1024ths() {
        let n = 1u64 << 20;
        let e: Vec<f64> = (0..n)
            .map(|j| unit_gap(2026, j) as f64 / 4_294_967_296.0)
            .collect();
        let m = e.iter().sum::<f64>() / n as f64;
        let var = e.iter().map(|x| (x - m).powi(2)).sum::<f64>();
        for lag in [1, 2, 3, 1023, 1024, 1025] {
            let c = e
                .windows(lag + 1)
                .map(|w| (w[0] - m) * (w[lag] - m))
                .sum::<f64>()
                / var;
            assert!(c.abs() < 4.0 / 1024.0, "lag {lag}: {c}");
        }
    }

    #[test]
    fn the_span_is_the_sum_of_the_draws_and_past_2_20_within_1e_4() {
        let exact = |n: u64| {
            (0..n).map(|j| u128::from(unit_gap(5, j))).sum::<u128>() as f64 / 4_294_967_296.0
        };
        assert_eq!(unit_span(5, 3000), exact(3000));
        assert_eq!(Arrivals::Poisson { seed: 5 }.span(3000), exact(3000));
        let n = (1 << 20) + 5 * BLOCK + 300;
        let (got, want) = (unit_span(5, n), exact(n));
        assert!((got / want - 1.0).abs() < 1e-4, "{got} {want}");
    }

    /// The point of ticket 0 of `s`, its base unknown.
    fn zero(s: &Stream) -> Point {
        Point {
            stream: *s,
            k: 0,
            whole: 0,
            frac: s.frac,
            unit: 0,
            base: UNKNOWN,
        }
    }

    /// `T(k)` summed from ticket 0, with no memo: what every start must give.
    fn plain(s: &Stream, k: u64) -> (u64, u64) {
        let p = s.sum(zero(s), k);
        (p.whole, p.frac)
    }

    /// This thread's draws while `f` runs.
    fn draws_in<T>(f: impl FnOnce() -> T) -> (T, u64) {
        let before = DRAWS.with(Cell::get);
        let t = f();
        (t, DRAWS.with(Cell::get) - before)
    }

    fn forget() {
        MEMO.with(|m| m.set(None));
    }

    #[test]
    fn a_prefix_sum_is_the_same_from_any_start() {
        let s = Stream {
            seed: 9,
            draws: 1000,
            slice: Slice::of_rate(3e5),
            frac: 1 << 63,
        };
        forget();
        let direct = plain(&s, 500);
        let step = s.sum(zero(&s), 123);
        let on = s.sum(step, 500);
        assert_eq!((on.whole, on.frac), direct);
        // the memo, forwards and backwards
        assert_eq!(s.offset(123), (step.whole, step.frac));
        assert_eq!(s.offset(500), direct);
        forget();
        assert_eq!(s.offset(123), (step.whole, step.frac), "an earlier k");
    }

    fn stream(seed: u64, draws: u64, rate: f64) -> Stream {
        Stream {
            seed,
            draws,
            slice: Slice::of_rate(rate),
            frac: 3 << 60,
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// The shared path (each thread's memo, the shared entry, published and
        /// overwritten by the others) gives every thread `T(k)` equal to the plain
        /// sum, whatever order the threads ask for which `k`. Seeds 1-3 share
        /// entries with other tests, and streams of one seed differ by draws and
        /// rate: points of other streams must be passed over, never used.
        #[test]
        fn the_shared_path_gives_the_plain_sum_for_any_access_order(
            seed in 1u64..4,
            draws in proptest::sample::select(vec![0u64, 700]),
            rate in proptest::sample::select(vec![1e3, 3e5]),
            orders in proptest::collection::vec(
                proptest::collection::vec(0u64..1500, 1..40), 2..5),
        ) {
            let s = stream(seed, draws, rate);
            let mut want = vec![(0, 0); 1500];
            let mut p = zero(&s);
            for (k, w) in want.iter_mut().enumerate() {
                p = s.sum(p, k as u64);
                *w = (p.whole, p.frac);
            }
            let want = std::sync::Arc::new(want);
            let threads: Vec<_> = orders
                .into_iter()
                .map(|ks| {
                    let want = want.clone();
                    std::thread::spawn(move || {
                        for k in ks {
                            assert_eq!(s.offset(k), want[k as usize], "k {k}");
                        }
                    })
                })
                .collect();
            for t in threads {
                proptest::prop_assert!(t.join().is_ok());
            }
        }
    }

    /// Two threads taking tickets in turn: each sums only the gap since the other's
    /// ticket (the old memo, each thread's own only, made two draws a ticket).
    #[test]
    fn two_threads_taking_tickets_in_turn_make_one_draw_per_ticket() {
        use std::sync::mpsc::channel;
        let s = stream(0xD4A3_0001, 0, 1e3);
        let n = 2000u64;
        let want: Vec<(u64, u64)> = (0..n).map(|k| plain(&s, k)).collect();
        let (to_b, b_rx) = channel::<u64>();
        let (to_a, a_rx) = channel::<u64>();
        let want_b = want.clone();
        let b = std::thread::spawn(move || {
            let mut draws = 0;
            while let Ok(k) = b_rx.recv() {
                let (t, d) = draws_in(|| s.offset(k));
                assert_eq!(t, want_b[k as usize], "k {k}");
                draws += d;
                if to_a.send(k + 1).is_err() {
                    break;
                }
            }
            draws
        });
        let mut draws = 0;
        let mut k = 0;
        while k < n {
            let (t, d) = draws_in(|| s.offset(k));
            assert_eq!(t, want[k as usize], "k {k}");
            draws += d;
            if k + 1 == n {
                break;
            }
            to_b.send(k + 1).unwrap();
            k = a_rx.recv().unwrap() + 1;
        }
        drop(to_b);
        draws += b.join().unwrap();
        // n - 1 draws for tickets 0..n; a point lost to a colliding seed of a
        // test running at once costs a draw or two.
        assert!(draws < n + n / 10, "{draws} draws for {n} tickets");
    }

    /// `Schedule::stats`' cursor, on a thread that priced no ticket: the plain sum
    /// of the run's tickets (what the old code summed from 0, a draw per ticket),
    /// from the newest point for at most one draw.
    #[test]
    fn the_stats_cursor_is_the_plain_sum_and_costs_at_most_one_draw() {
        use crate::{ManualClock, RateLimiter, RateSpec};
        let seed = 0xD4A3_0002;
        let clock = ManualClock::new();
        let l = std::sync::Arc::new(
            RateLimiter::builder(RateSpec::new(1000.0).strictness(0.0))
                .arrivals(Arrivals::Poisson { seed })
                .build_with_clock(clock.clone()),
        );
        assert_eq!(l.acquire().scheduled_nanos(), 0);
        let s = stream(seed, 0, 1000.0);
        let s = Stream { frac: 0, ..s };
        clock.set(plain(&s, 3000).0);
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        l.acquire();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        forget();
        let (stats, draws) = draws_in(|| l.stats());
        assert_eq!(stats.grants, 2001);
        assert_eq!(stats.cursor_nanos, plain(&s, 2001).0);
        assert_eq!(stats.allocated_nanos, plain(&s, 2001).0);
        assert!(draws <= 1, "{draws} draws");
    }

    /// [`unit_span`] from the newest points of a seed whose schedule rolled over to
    /// a second stream (another rate, the draws carried on) equals the plain sum
    /// of the draws, forwards and backwards from the point, and costs the draws
    /// between them only.
    #[test]
    fn the_span_from_a_point_is_the_plain_sum_across_epochs() {
        let seed = 0xD4A3_0003;
        let old = |n: u64| {
            (0..n).map(|j| u128::from(unit_gap(seed, j))).sum::<u128>() as f64 / 4_294_967_296.0
        };
        let first = stream(seed, 0, 1e3);
        let second = stream(seed, 3000, 2e3);
        std::thread::spawn(move || first.offset(3000))
            .join()
            .unwrap();
        std::thread::spawn(move || second.offset(500))
            .join()
            .unwrap();
        forget();
        for n in [0, 1, 10, 2000, 2999, 3000, 3001, 3400, 3500, 3600, 9000] {
            assert_eq!(unit_span(seed, n), old(n), "n {n}");
        }
        let (span, draws) = draws_in(|| unit_span(seed, 3400));
        assert_eq!(span, old(3400));
        assert!(draws <= 100, "{draws} draws from 3500 back to 3400");
    }

    #[test]
    fn the_gap_scales_with_the_slice_exactly() {
        let e = 3u64 << 31; // 1.5 mean gaps
        assert_eq!(scaled(Slice { hi: 1000, lo: 0 }, e), 1500u128 << 64);
        assert_eq!(scaled(Slice { hi: 0, lo: 1 << 63 }, e), 3u128 << 62); // 0.75 ns
    }
}
