//! The lock-free token bucket: tick and tokens bit-packed in one `u64` (seed 001).
//!
//! Ground rules: `state` is the whole state of the bucket. Every writer replaces it by
//! a compare-and-swap from the value it read; readers only load it. No other memory is
//! published through it (callers order their own data), so every access is `Relaxed`:
//! the modification order of the one word already makes each admission a step from the
//! state the previous admission left, and a failed CAS hands back the newer value to
//! retry from. A refusal does not write; it may decide on a slightly stale value, which
//! is safe because a newer value holds no more tokens at the same time (later writes
//! only take tokens, and the refill owed is the same function of time).

use super::cas::decide;
use super::token_bucket::{BucketMath, FRAC_BITS, quanta_to_permits};
use super::{Decision, Limit, LimitError, Limiter};
use crate::clock::{Clock, MonotonicClock};
use crate::sync::{AtomicU64, Ordering};
use std::fmt;

/// Bits of the token field (low bits): tokens in 1/256 permit, so up to 65 535 permits.
const TOKEN_BITS: u32 = 24;
/// Mask of the token field.
const TOKEN_MASK: u64 = (1 << TOKEN_BITS) - 1;
/// Where the tick field starts.
const TICK_SHIFT: u32 = TOKEN_BITS;
/// Bits of the tick field (high bits): the tick count modulo 2^40.
const TICK_BITS: u32 = 64 - TOKEN_BITS;
/// Mask of the tick field, once shifted down.
const TICK_MASK: u64 = (1 << TICK_BITS) - 1;
/// How far back (in ticks, 16.7 s at 1 us ticks) a reading may step and still be
/// taken for a clock going backwards rather than for a wrap after a long idle spell.
const BACKWARD_TICKS: u64 = 1 << 24;
/// The largest burst the token field holds.
const MAX_BURST: u64 = TOKEN_MASK >> FRAC_BITS;

#[inline]
const fn pack(tick: u64, tokens: u64) -> u64 {
    ((tick & TICK_MASK) << TICK_SHIFT) | (tokens & TOKEN_MASK)
}

#[inline]
const fn unpack(word: u64) -> (u64, u64) {
    (word >> TICK_SHIFT, word & TOKEN_MASK)
}

/// A lock-free token bucket: the same bucket as [`TokenBucket`](crate::TokenBucket),
/// with its tick and tokens packed in one atomic word updated by a CAS loop.
///
/// It fixes the trade-offs seed 001 lists for its 40/24-bit word:
///
/// - **fractional tokens**: the token field is fixed point (16.8 bits), and time is
///   counted in ticks that each add an exact number of 1/256-permit quanta, so no
///   refill is lost to rounding however often it is asked;
/// - **wrap-around**: the 40-bit tick wraps (after 12.7 days at the shortest, 1 us
///   tick); elapsed time is taken modulo 2^40, and a gap of at least one bucket's refill
///   time fills it, so a wrap never stalls the bucket or over-fills it;
/// - **clock going backwards**: a reading up to 2^24 ticks behind the stored tick
///   refills nothing and leaves the tick where it was, so no time is counted twice;
/// - **contention**: a lost CAS backs off exponentially (spin, then yield) instead of
///   retrying hot, and a refusal only reads the word.
///
/// **Bound**: at most `burst + permits` admissions in any window of width `window`.
/// The burst is at most 65 535 (the token field's 16 integer bits); use
/// [`TokenBucket`](crate::TokenBucket) for more. One rare, conservative corner: after
/// an idle spell of a whole multiple of 2^40 ticks (plus less than one refill time),
/// the bucket refills only the remainder.
///
/// Word layout:
///
/// ```text
///  63                                  24 23                 8 7        0
/// +--------------------------------------+--------------------+----------+
/// | tick mod 2^40                        | whole tokens       | fraction |
/// +--------------------------------------+--------------------+----------+
/// ```
///
/// ```
/// use paceline::{AtomicTokenBucket, Limit, Limiter, ManualClock};
/// use std::time::Duration;
/// let clock = ManualClock::new();
/// let bucket = AtomicTokenBucket::with_clock(Limit::per_second(4)?, clock.clone())?;
/// assert!(bucket.try_acquire(4).is_admitted());
/// clock.advance(Duration::from_millis(125));
/// assert_eq!(bucket.available(), 0.5); // the fraction is kept
/// assert_eq!(bucket.try_acquire(1).earliest(), Some(250_000_000));
/// # Ok::<(), paceline::LimitError>(())
/// ```
pub struct AtomicTokenBucket<C: Clock = MonotonicClock> {
    math: BucketMath,
    limit: Limit,
    /// The packed state; layout in the type's docs: `tick` (40 bits, [`TICK_SHIFT`]..)
    /// above `tokens` (24 bits, [`TOKEN_MASK`], 8 of them fraction).
    state: AtomicU64,
    clock: C,
}

impl AtomicTokenBucket {
    /// A full bucket on the real clock; fails if the burst exceeds 65 535.
    ///
    /// ```
    /// use paceline::{AtomicTokenBucket, Limit};
    /// assert!(AtomicTokenBucket::new(Limit::per_second(1000)?).is_ok());
    /// assert!(AtomicTokenBucket::new(Limit::per_second(100_000)?).is_err());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn new(limit: Limit) -> Result<Self, LimitError> {
        Self::with_clock(limit, MonotonicClock::new())
    }
}

impl<C: Clock> AtomicTokenBucket<C> {
    /// A full bucket on `clock`; fails if the burst exceeds 65 535.
    ///
    /// ```
    /// use paceline::{AtomicTokenBucket, Limit, ManualClock};
    /// let b = AtomicTokenBucket::with_clock(Limit::per_second(3)?, ManualClock::new())?;
    /// assert_eq!(b.available(), 3.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn with_clock(limit: Limit, clock: C) -> Result<Self, LimitError> {
        let limit = limit.check_burst("burst in AtomicTokenBucket (use TokenBucket)", MAX_BURST)?;
        let math = BucketMath::new(limit);
        let state = pack(math.ticks(clock.now()), math.capacity());
        Ok(Self {
            math,
            limit,
            state: AtomicU64::new(state),
            clock,
        })
    }

    /// The tokens available now, with their fraction.
    ///
    /// ```
    /// use paceline::{AtomicTokenBucket, Limit, Limiter, ManualClock};
    /// let b = AtomicTokenBucket::with_clock(Limit::per_second(3)?, ManualClock::new())?;
    /// let _ = b.try_acquire(1);
    /// assert_eq!(b.available(), 2.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn available(&self) -> f64 {
        let now = self.math.ticks(self.clock.now());
        let (tick, tokens) = unpack(self.state.load(Ordering::Relaxed));
        let (elapsed, _) = elapsed(tick, now);
        quanta_to_permits(self.math.refill(tokens, elapsed))
    }

    /// The limit it was built with.
    ///
    /// ```
    /// use paceline::{AtomicTokenBucket, Limit, ManualClock};
    /// let limit = Limit::per_second(3)?;
    /// assert_eq!(AtomicTokenBucket::with_clock(limit, ManualClock::new())?.limit(), limit);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn limit(&self) -> Limit {
        self.limit
    }
}

/// Ticks elapsed from the stored 40-bit `tick` to the full reading `now`, and how far
/// `now` is behind the stored tick (0 unless the clock stepped back).
#[inline]
fn elapsed(tick: u64, now: u64) -> (u64, u64) {
    let delta = now.wrapping_sub(tick) & TICK_MASK;
    if delta > TICK_MASK - BACKWARD_TICKS {
        (0, TICK_MASK + 1 - delta)
    } else {
        (delta, 0)
    }
}

impl<C: Clock> Limiter for AtomicTokenBucket<C> {
    fn try_acquire(&self, n: u32) -> Decision {
        if n == 0 {
            return Decision::Admitted;
        }
        let now = self.math.ticks(self.clock.now());
        decide(&self.state, |word| {
            let (tick, tokens) = unpack(word);
            let (elapsed, behind) = elapsed(tick, now);
            match self.math.take(tokens, elapsed, n) {
                // Behind: keep the stored tick, so time never moves back.
                Ok(left) => Ok(pack(if behind > 0 { tick } else { now }, left)),
                Err(wait) => {
                    let base = now.saturating_add(behind);
                    Err(Decision::refused(
                        wait.map(|t| self.math.time_of_tick(base.saturating_add(t))),
                    ))
                }
            }
        })
    }
}

impl<C: Clock> fmt::Debug for AtomicTokenBucket<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AtomicTokenBucket")
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

    #[test]
    fn pack_unpack_round_trips_and_fields_do_not_bleed() {
        for (tick, tokens) in [
            (0, 0),
            (1, TOKEN_MASK),
            (TICK_MASK, 0),
            (TICK_MASK, TOKEN_MASK),
        ] {
            assert_eq!(unpack(pack(tick, tokens)), (tick, tokens));
        }
        assert_eq!(pack(TICK_MASK, 0), !TOKEN_MASK);
        assert_eq!(pack(0, TOKEN_MASK), TOKEN_MASK);
        // A tick beyond 40 bits keeps only its low 40.
        assert_eq!(unpack(pack((1 << 40) + 5, 1)), (5, 1));
        assert_eq!(MAX_BURST, 65_535);
    }

    #[test]
    fn elapsed_handles_wrap_and_backwards() {
        assert_eq!(elapsed(10, 15), (5, 0));
        // The reading wrapped past 2^40: still 6 ticks forward.
        assert_eq!(elapsed(TICK_MASK - 2, (1 << 40) + 3), (6, 0));
        // 4 ticks back.
        assert_eq!(elapsed(100, 96), (0, 4));
        // Far "back" is a long idle spell that wrapped: forward.
        assert_eq!(elapsed(100, 100 + (1 << 30)), (1 << 30, 0));
    }

    #[test]
    fn rejects_a_burst_the_field_cannot_hold() {
        let limit = Limit::per_second(10).unwrap().with_burst(65_536).unwrap();
        assert!(matches!(
            AtomicTokenBucket::with_clock(limit, ManualClock::new()),
            Err(LimitError::TooMany { max: 65_535, .. })
        ));
    }

    #[test]
    fn survives_the_tick_wrapping() {
        // 10/s: one tick is 390.625 us; start 1 s before the 40-bit tick wraps.
        let tick_ns = 390_625;
        let wrap_ns = (1u64 << 40) * tick_ns;
        let clock = ManualClock::starting_at(wrap_ns - 1_000_000_000);
        let b =
            AtomicTokenBucket::with_clock(Limit::per_second(10).unwrap(), clock.clone()).unwrap();
        assert!(b.try_acquire(10).is_admitted());
        let mut admitted = 0;
        for _ in 0..2_000 {
            clock.advance(Duration::from_millis(1));
            admitted += u32::from(b.try_acquire(1).is_admitted());
        }
        assert_eq!(admitted, 20, "two seconds across the wrap refill 20 tokens");
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::sync::Arc;

    #[test]
    fn one_token_goes_to_exactly_one_of_two_threads() {
        loom::model(|| {
            let limit = Limit::per_second(1).unwrap();
            let b = Arc::new(AtomicTokenBucket::with_clock(limit, ManualClock::new()).unwrap());
            let b2 = b.clone();
            let t = loom::thread::spawn(move || b2.try_acquire(1).is_admitted());
            let here = b.try_acquire(1).is_admitted();
            let there = t.join().unwrap();
            assert!(here ^ there);
        });
    }

    #[test]
    fn two_tokens_go_to_two_threads_and_none_is_lost() {
        loom::model(|| {
            let limit = Limit::per_second(2).unwrap();
            let b = Arc::new(AtomicTokenBucket::with_clock(limit, ManualClock::new()).unwrap());
            let b2 = b.clone();
            let t = loom::thread::spawn(move || b2.try_acquire(1).is_admitted());
            assert!(b.try_acquire(1).is_admitted());
            assert!(t.join().unwrap());
            assert_eq!(b.available(), 0.0);
        });
    }
}
