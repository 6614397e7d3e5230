//! The leaky bucket as a meter, lock-free in one `u64` (seed 002).
//!
//! Ground rules: `drained_at` is the whole state. Writers replace it by a
//! compare-and-swap from the value they read; refusals only load it. Nothing else is
//! published through it, so every access is `Relaxed`: the word's modification order
//! chains each admission to the previous one, and a failed CAS returns the newer value
//! to retry from. A refusal decided on a stale value is safe: newer values are only
//! later (fuller) emptying times.

use super::cas::decide;
use super::{Decision, Limit, Limiter};
use crate::clock::{Clock, MonotonicClock};
use crate::nanos::Nanos;
use crate::sync::{AtomicU64, Ordering};
use std::fmt;

/// Sub-drip units per permit: the bucket's level is kept in 1/256 of a permit.
const UNIT: u64 = 256;

/// A leaky bucket: each admitted permit pours one unit of water in; the bucket leaks
/// `permits` units per `window`, steadily; a request that would overflow `burst`
/// units is refused.
///
/// With `burst = 1` it is seed 002's leaky bucket: one permit per `window / permits`,
/// never two closer together, which smooths any burst into a steady stream. A larger
/// burst lets that many pass at once after an idle spell (the meter form, also known
/// as GCRA, which `governor` implements).
///
/// The state is the time at which the bucket will be empty, in 1/256 of a leak
/// interval, in one atomic word: exact at any rate (the interval is never rounded to
/// whole nanoseconds), lock-free, and a refusal only reads it.
///
/// **Bound**: at most `burst + permits` admissions in any window of width `window`;
/// `burst = 1` spaces admissions at least one leak interval apart, up to 1/256 of an
/// interval.
///
/// **Trade-offs**: one word, no lock, no thread. The word counts 1/256 intervals
/// modulo 2^64 and compares with wrapping arithmetic, so after an idle spell of 2^55
/// intervals (a year at a billion permits a second, far longer at real rates) it may
/// refuse for up to that long. A clock that steps back only makes the bucket look
/// fuller: nothing is given twice.
///
/// ```
/// use paceline::{LeakyBucket, Limit, Limiter, ManualClock};
/// use std::time::Duration;
/// let clock = ManualClock::new();
/// let seed = Limit::per_second(10)?.with_burst(1)?; // seed 002: one per 100 ms
/// let bucket = LeakyBucket::with_clock(seed, clock.clone());
/// assert!(bucket.try_acquire(1).is_admitted());
/// assert_eq!(bucket.try_acquire(1).earliest(), Some(100_000_000));
/// clock.advance(Duration::from_millis(100));
/// assert!(bucket.try_acquire(1).is_admitted());
/// # Ok::<(), paceline::LimitError>(())
/// ```
pub struct LeakyBucket<C: Clock = MonotonicClock> {
    limit: Limit,
    /// Units leaked per nanosecond, as `num / den`: `permits × 256 / window`.
    num: u128,
    den: u128,
    /// The bucket's capacity in units.
    cap: u64,
    /// When the bucket will be empty, in units since the clock's origin, modulo 2^64.
    drained_at: AtomicU64,
    clock: C,
}

impl LeakyBucket {
    /// An empty bucket on the real clock.
    ///
    /// ```
    /// use paceline::{LeakyBucket, Limit, Limiter};
    /// let bucket = LeakyBucket::new(Limit::per_second(100)?);
    /// assert!(bucket.try_acquire(100).is_admitted());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn new(limit: Limit) -> Self {
        Self::with_clock(limit, MonotonicClock::new())
    }
}

impl<C: Clock> LeakyBucket<C> {
    /// An empty bucket on `clock`.
    ///
    /// ```
    /// use paceline::{LeakyBucket, Limit, ManualClock};
    /// let bucket = LeakyBucket::with_clock(Limit::per_second(3)?, ManualClock::new());
    /// assert_eq!(bucket.level(), 0.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn with_clock(limit: Limit, clock: C) -> Self {
        let num = u128::from(limit.permits()) * u128::from(UNIT);
        let den = u128::from(limit.window_nanos());
        let bucket = Self {
            limit,
            num,
            den,
            cap: u64::from(limit.burst()) * UNIT,
            drained_at: AtomicU64::new(0),
            clock,
        };
        let now = bucket.units(bucket.clock.now());
        bucket.drained_at.store(now as u64, Ordering::Relaxed);
        bucket
    }

    /// How full the bucket is now, in permits (with their fraction).
    ///
    /// ```
    /// use paceline::{LeakyBucket, Limit, Limiter, ManualClock};
    /// use std::time::Duration;
    /// let clock = ManualClock::new();
    /// let bucket = LeakyBucket::with_clock(Limit::per_second(4)?, clock.clone());
    /// let _ = bucket.try_acquire(2);
    /// clock.advance(Duration::from_millis(125)); // half a permit leaked
    /// assert_eq!(bucket.level(), 1.5);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn level(&self) -> f64 {
        let now = self.units(self.clock.now()) as u64;
        level(self.drained_at.load(Ordering::Relaxed), now) as f64 / UNIT as f64
    }

    /// The limit it was built with.
    ///
    /// ```
    /// use paceline::{LeakyBucket, Limit, ManualClock};
    /// let limit = Limit::per_second(3)?;
    /// assert_eq!(LeakyBucket::with_clock(limit, ManualClock::new()).limit(), limit);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// Units leaked by clock reading `t`, at full width.
    #[inline]
    fn units(&self, t: Nanos) -> u128 {
        u128::from(t) * self.num / self.den
    }

    /// The first clock reading by which `units` have leaked.
    #[inline]
    fn time_of(&self, units: u128) -> Nanos {
        u64::try_from((units * self.den).div_ceil(self.num)).unwrap_or(Decision::NEVER)
    }
}

/// The water in the bucket: how far `drained_at` is ahead of `now`, or 0.
#[inline]
fn level(drained_at: u64, now: u64) -> u64 {
    let ahead = drained_at.wrapping_sub(now) as i64;
    ahead.max(0) as u64
}

impl<C: Clock> Limiter for LeakyBucket<C> {
    fn try_acquire(&self, n: u32) -> Decision {
        if n == 0 {
            return Decision::Admitted;
        }
        let pour = u64::from(n) * UNIT;
        if pour > self.cap {
            return Decision::refused(None);
        }
        let now_full = self.units(self.clock.now());
        let now = now_full as u64; // modulo 2^64, like the word
        decide(&self.drained_at, |drained_at| {
            let level = level(drained_at, now);
            if level + pour > self.cap {
                let overflow = level + pour - self.cap;
                return Err(Decision::Refused {
                    earliest: self.time_of(now_full + u128::from(overflow)),
                });
            }
            Ok(now.wrapping_add(level + pour))
        })
    }
}

impl<C: Clock> fmt::Debug for LeakyBucket<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeakyBucket")
            .field("limit", &self.limit)
            .field("level", &self.level())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn level_reads_wrapping_distance() {
        assert_eq!(level(10, 4), 6);
        assert_eq!(level(4, 10), 0);
        assert_eq!(level(3, u64::MAX - 2), 6); // across the wrap
    }

    #[test]
    fn a_burst_passes_then_one_per_interval() {
        let clock = ManualClock::new();
        let limit = Limit::per_second(3).unwrap().with_burst(2).unwrap();
        let b = LeakyBucket::with_clock(limit, clock.clone());
        assert!(b.try_acquire(2).is_admitted());
        // 1/3 s per permit, never rounded: the third passes at 333_333_334 ns.
        let e = b.try_acquire(1).earliest().unwrap();
        assert_eq!(e, 333_333_334);
        clock.set(e - 1);
        assert!(!b.try_acquire(1).is_admitted());
        clock.set(e);
        assert!(b.try_acquire(1).is_admitted());
        assert_eq!(b.try_acquire(3), Decision::refused(None));
    }

    #[test]
    fn a_clock_stepping_back_gives_nothing_twice() {
        let clock = crate::limiters::tests_support::StepClock::new(1_000_000_000);
        let b = LeakyBucket::with_clock(
            Limit::per_second(1).unwrap().with_burst(1).unwrap(),
            clock.clone(),
        );
        assert!(b.try_acquire(1).is_admitted());
        clock.set(500_000_000);
        assert!(!b.try_acquire(1).is_admitted());
        clock.set(1_999_999_999);
        assert!(!b.try_acquire(1).is_admitted());
        clock.set(2_000_000_000);
        assert!(b.try_acquire(1).is_admitted());
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::sync::Arc;

    #[test]
    fn a_one_permit_bucket_admits_exactly_one_of_two() {
        loom::model(|| {
            let limit = Limit::per_second(1).unwrap().with_burst(1).unwrap();
            let b = Arc::new(LeakyBucket::with_clock(limit, ManualClock::new()));
            let b2 = b.clone();
            let t = loom::thread::spawn(move || b2.try_acquire(1).is_admitted());
            let here = b.try_acquire(1).is_admitted();
            assert!(here ^ t.join().unwrap());
            assert_eq!(b.level(), 1.0);
        });
    }
}
