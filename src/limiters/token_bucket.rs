//! The token bucket behind a mutex (seed 001's baseline, seed 002's lazy refill), and
//! the exact refill arithmetic it shares with [`AtomicTokenBucket`](super::AtomicTokenBucket).

use super::{Decision, Limit, Limiter, mul_div_ceil};
use crate::clock::{Clock, MonotonicClock};
use crate::nanos::Nanos;
use crate::sync::ParkingMutex;
use std::fmt;

/// Fractional bits of a token count: tokens are kept in 1/256 of a permit.
pub(crate) const FRAC_BITS: u32 = 8;
/// One permit in quanta (1/256 permit).
pub(crate) const ONE: u64 = 1 << FRAC_BITS;
/// The shortest tick the buckets use, so a 40-bit tick field spans at least 12.7 days.
const MIN_TICK_NANOS: u64 = 1_000;

/// The refill arithmetic of both token buckets, exact in integers.
///
/// Time is counted in *ticks*; each tick adds exactly `k` quanta (1/256 permit), so
/// refilling in many small steps gives exactly what one big step gives and nothing is
/// lost to rounding. `ticks(t) = floor(t * P * 256 / (W * k))`. `k` is the smallest
/// number of quanta whose time is at least 1 us, capped at one permit, so a tick never
/// exceeds one permit's worth of time.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BucketMath {
    /// Capacity (the burst) in quanta.
    cap: u64,
    /// Quanta per tick.
    k: u64,
    /// `P * 256`.
    num: u128,
    /// `W * k`.
    den: u128,
}

impl BucketMath {
    pub(crate) fn new(limit: Limit) -> Self {
        let per_window = u64::from(limit.permits()) * ONE;
        let k = mul_div_ceil(MIN_TICK_NANOS, per_window, limit.window_nanos()).clamp(1, ONE);
        Self {
            cap: u64::from(limit.burst()) * ONE,
            k,
            num: u128::from(per_window),
            den: u128::from(limit.window_nanos()) * u128::from(k),
        }
    }

    /// The tick count at clock reading `now`.
    #[inline]
    pub(crate) fn ticks(&self, now: Nanos) -> u64 {
        u64::try_from(u128::from(now) * self.num / self.den).unwrap_or(u64::MAX)
    }

    /// The earliest clock reading whose tick count is at least `tick`.
    #[inline]
    pub(crate) fn time_of_tick(&self, tick: u64) -> Nanos {
        u64::try_from((u128::from(tick) * self.den).div_ceil(self.num)).unwrap_or(Decision::NEVER)
    }

    /// Tokens (in quanta) after `elapsed` ticks of refill, capped at the capacity.
    #[inline]
    pub(crate) fn refill(&self, tokens: u64, elapsed: u64) -> u64 {
        tokens
            .saturating_add(elapsed.saturating_mul(self.k))
            .min(self.cap)
    }

    /// Takes `n` permits from `tokens` after `elapsed` ticks of refill: the tokens
    /// left, or the ticks still to wait (`None`: never, `n` exceeds the capacity).
    #[inline]
    pub(crate) fn take(&self, tokens: u64, elapsed: u64, n: u32) -> Result<u64, Option<u64>> {
        let need = u64::from(n) * ONE;
        if need > self.cap {
            return Err(None);
        }
        let have = self.refill(tokens, elapsed);
        if have >= need {
            Ok(have - need)
        } else {
            Err(Some((need - have).div_ceil(self.k)))
        }
    }

    /// The capacity in quanta.
    pub(crate) fn capacity(&self) -> u64 {
        self.cap
    }
}

/// Converts quanta to permits.
pub(crate) fn quanta_to_permits(q: u64) -> f64 {
    q as f64 / ONE as f64
}

/// A token bucket behind a mutex, refilled lazily: the baseline of seed 001 and the
/// "lazy refill" of seed 002.
///
/// It holds up to `burst` tokens and gains `permits` per `window`, continuously; a
/// request for `n` permits takes `n` tokens or is refused. Tokens are kept in 1/256 of
/// a permit and refilled by exact integer arithmetic, so a bucket asked every
/// microsecond refills as fast as one asked every second (seed 002's lazy refill
/// truncated to whole tokens and lost the rest).
///
/// **Bound**: at most `burst + permits` admissions in any window of width `window`
/// (a full bucket plus one window of refill); over a long run, `permits` per window.
///
/// **Trade-offs**: every call takes the lock, so threads serialize on it; the state is
/// a full 64-bit tick and token count, so it never wraps and holds any `u32` burst.
/// [`AtomicTokenBucket`](crate::AtomicTokenBucket) is its lock-free twin.
///
/// A clock that steps backwards refills nothing until it passes its latest reading
/// again: the bucket never gives a token twice for the same time.
///
/// ```
/// use paceline::{Limit, Limiter, ManualClock, TokenBucket};
/// use std::time::Duration;
/// let clock = ManualClock::new();
/// let bucket = TokenBucket::with_clock(Limit::per_second(4)?, clock.clone());
/// assert!(bucket.try_acquire(4).is_admitted());
/// clock.advance(Duration::from_millis(125)); // half a token
/// assert_eq!(bucket.available(), 0.5);
/// assert_eq!(bucket.try_acquire(1).earliest(), Some(250_000_000));
/// # Ok::<(), paceline::LimitError>(())
/// ```
pub struct TokenBucket<C: Clock = MonotonicClock> {
    math: BucketMath,
    limit: Limit,
    state: ParkingMutex<State>,
    clock: C,
}

/// The bucket's state: tokens (quanta) as of tick `tick`.
#[derive(Debug, Clone, Copy)]
struct State {
    tick: u64,
    tokens: u64,
}

impl TokenBucket {
    /// A full bucket on the real clock.
    ///
    /// ```
    /// use paceline::{Limit, Limiter, TokenBucket};
    /// let bucket = TokenBucket::new(Limit::per_second(100)?);
    /// assert!(bucket.try_acquire(100).is_admitted());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn new(limit: Limit) -> Self {
        Self::with_clock(limit, MonotonicClock::new())
    }
}

impl<C: Clock> TokenBucket<C> {
    /// A full bucket on `clock`.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, TokenBucket};
    /// let bucket = TokenBucket::with_clock(Limit::per_second(3)?, ManualClock::new());
    /// assert_eq!(bucket.available(), 3.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn with_clock(limit: Limit, clock: C) -> Self {
        let math = BucketMath::new(limit);
        let state = State {
            tick: math.ticks(clock.now()),
            tokens: math.capacity(),
        };
        Self {
            math,
            limit,
            state: ParkingMutex::new(state),
            clock,
        }
    }

    /// The tokens available now, with their fraction.
    ///
    /// ```
    /// use paceline::{Limit, Limiter, ManualClock, TokenBucket};
    /// let bucket = TokenBucket::with_clock(Limit::per_second(3)?, ManualClock::new());
    /// let _ = bucket.try_acquire(2);
    /// assert_eq!(bucket.available(), 1.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn available(&self) -> f64 {
        let now = self.math.ticks(self.clock.now());
        let s = *self.state.lock();
        quanta_to_permits(self.math.refill(s.tokens, now.saturating_sub(s.tick)))
    }

    /// The limit it was built with.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, TokenBucket};
    /// let limit = Limit::per_second(3)?;
    /// assert_eq!(TokenBucket::with_clock(limit, ManualClock::new()).limit(), limit);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn limit(&self) -> Limit {
        self.limit
    }
}

impl<C: Clock> Limiter for TokenBucket<C> {
    fn try_acquire(&self, n: u32) -> Decision {
        if n == 0 {
            return Decision::Admitted;
        }
        let now = self.math.ticks(self.clock.now());
        let mut s = self.state.lock();
        // A reading older than the state's (a clock stepping back, or a thread that
        // read the clock before another took the lock) refills nothing.
        let base = s.tick.max(now);
        match self.math.take(s.tokens, now.saturating_sub(s.tick), n) {
            Ok(left) => {
                *s = State {
                    tick: base,
                    tokens: left,
                };
                Decision::Admitted
            }
            Err(wait) => {
                Decision::refused(wait.map(|t| self.math.time_of_tick(base.saturating_add(t))))
            }
        }
    }
}

impl<C: Clock> fmt::Debug for TokenBucket<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenBucket")
            .field("limit", &self.limit)
            .field("available", &self.available())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::time::Duration;

    fn bucket(permits: u32, window: Duration) -> (TokenBucket<ManualClock>, ManualClock) {
        let clock = ManualClock::new();
        let limit = Limit::new(permits, window).unwrap();
        (TokenBucket::with_clock(limit, clock.clone()), clock)
    }

    #[test]
    fn math_ticks_are_at_least_a_microsecond_and_at_most_a_permit() {
        // 10/s: a quantum is 390.625 us, so one quantum per tick.
        let m = BucketMath::new(Limit::per_second(10).unwrap());
        assert_eq!(m.k, 1);
        // 10M/s: a permit is 100 ns; a tick is capped at one permit.
        let m = BucketMath::new(Limit::per_second(10_000_000).unwrap());
        assert_eq!(m.k, ONE);
        // 100k/s: a quantum is 39 ns; 26 quanta make the first tick >= 1 us.
        let m = BucketMath::new(Limit::per_second(100_000).unwrap());
        assert_eq!(m.k, 26);
        assert!(m.time_of_tick(1) >= 1_000);
    }

    #[test]
    fn time_of_tick_is_the_first_reading_with_that_tick() {
        let m = BucketMath::new(Limit::new(3, Duration::from_nanos(1_000_007)).unwrap());
        for tick in [1u64, 2, 17, 1_000, 123_457] {
            let t = m.time_of_tick(tick);
            assert!(m.ticks(t) >= tick);
            assert!(m.ticks(t - 1) < tick);
        }
    }

    #[test]
    fn refill_in_small_steps_equals_one_big_step() {
        let (b, clock) = bucket(7, Duration::from_secs(1));
        assert!(b.try_acquire(7).is_admitted());
        // 1000 calls one millisecond apart: exactly 7 tokens come back.
        let mut admitted = 0;
        for _ in 0..1000 {
            clock.advance(Duration::from_millis(1));
            if b.try_acquire(1).is_admitted() {
                admitted += 1;
            }
        }
        assert_eq!(admitted, 7);
    }

    #[test]
    fn refused_says_when_and_is_right() {
        let (b, clock) = bucket(10, Duration::from_secs(1));
        assert!(b.try_acquire(10).is_admitted());
        let earliest = b.try_acquire(3).earliest().unwrap();
        assert_eq!(earliest, 300_000_000);
        clock.set(earliest - 1);
        assert!(!b.try_acquire(3).is_admitted());
        clock.set(earliest);
        assert!(b.try_acquire(3).is_admitted());
        assert_eq!(b.try_acquire(11), Decision::refused(None));
        assert!(b.try_acquire(0).is_admitted());
    }
}
