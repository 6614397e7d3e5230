//! The token pool of seed 003 ("Terms"): an active pool, a waiting pool, and a
//! backfill rate.

use super::{Decision, Limit, LimitError, Limiter};
use crate::clock::{Clock, MonotonicClock};
use crate::nanos::Nanos;
use crate::sync::ParkingMutex;
use std::fmt;

/// Fractional bits of the backfill rate: it is kept as a multiple of 2^-20.
const BACKFILL_BITS: u32 = 20;
/// The largest backfill rate accepted.
const MAX_BACKFILL: f64 = 16.0;

/// A token pool with an active pool, a waiting pool and a backfill rate (seed 003).
///
/// Tokens enter only by refill: time refills `permits` per `window`, and
/// [`refill_permits`](Self::refill_permits) adds more by hand. Each refill
///
/// 1. fills the active pool up to `burst` (the *pool size*);
/// 2. puts what does not fit in the waiting pool (no token is ever destroyed);
/// 3. moves tokens from waiting to active, at most `backfill × refill` of them
///    (pro rata to the refill), and never past `burst × (1 + backfill)`.
///
/// Consumers take only from the active pool. So a pool whose consumers fell behind
/// catches up at up to `1 + backfill` times the rate until the waiting pool is empty:
/// with a backfill of 0.25, "25 % faster". Seed 003's worked example (pool 1000,
/// backfill 0.25, refills of 500: each refill may backfill 125, two of them the full
/// 25 %) is a test in `tests/limiters_seeds.rs`. The seed also mentions 62.5 per
/// refill, which contradicts its own `0.5 × (1250 - 1000) = 125` and "two refills of
/// 500 give the full 25 %"; paceline takes 125.
///
/// **Bound**: at most `(1 + backfill) × (burst + permits)` admissions in any window of
/// width `W`. Over a long run the total admitted never exceeds the total refilled.
///
/// **Trade-offs**: it remembers every token not taken, so after an idle spell of `D`
/// it runs at `1 + backfill` times the rate for `D / backfill` (that is the seed's
/// catch-up semantics; give a backfill of 0 for a plain token bucket that keeps its
/// overflow). Tokens are counted exactly (one permit is `window` units, time adds
/// `permits` units per nanosecond), under one lock.
///
/// ```
/// use paceline::{Limit, Limiter, ManualClock, TokenPool};
/// let clock = ManualClock::new();
/// let limit = Limit::per_second(1000)?;
/// let pool = TokenPool::with_clock(limit, 0.25, clock.clone())?;
/// assert_eq!(pool.active(), 1000.0); // starts full
/// pool.refill_permits(500);            // nobody consumed: it waits...
/// assert_eq!((pool.active(), pool.waiting()), (1125.0, 375.0)); // ...125 backfilled
/// assert!(pool.try_acquire(1125).is_admitted());
/// # Ok::<(), paceline::LimitError>(())
/// ```
pub struct TokenPool<C: Clock = MonotonicClock> {
    limit: Limit,
    backfill: f64,
    /// The backfill rate in 2^-20.
    backfill_fixed: u128,
    /// The pool size (`burst`) in units.
    pool: u128,
    /// The active pool's ceiling, `pool × (1 + backfill)`, in units.
    ceiling: u128,
    state: ParkingMutex<Pools>,
    clock: C,
}

/// The pools, in units (a permit is `window` units).
#[derive(Debug, Clone, Copy)]
struct Pools {
    active: u128,
    waiting: u128,
    /// The clock reading time has been refilled up to.
    refilled_to: Nanos,
}

impl TokenPool {
    /// A full pool on the real clock.
    ///
    /// Rejects a backfill rate that is negative, NaN, infinite or above 16
    /// ([`LimitError::BadBackfill`]).
    ///
    /// ```
    /// use paceline::{Limit, Limiter, TokenPool};
    /// let pool = TokenPool::new(Limit::per_second(10)?, 0.25)?;
    /// assert!(pool.try_acquire(10).is_admitted());
    /// assert!(TokenPool::new(Limit::per_second(10)?, -1.0).is_err());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn new(limit: Limit, backfill: f64) -> Result<Self, LimitError> {
        Self::with_clock(limit, backfill, MonotonicClock::new())
    }
}

impl<C: Clock> TokenPool<C> {
    /// A full pool on `clock`; the backfill rate must be from 0 to 16.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, TokenPool};
    /// let pool = TokenPool::with_clock(Limit::per_second(10)?, 0.5, ManualClock::new())?;
    /// assert_eq!(pool.active(), 10.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn with_clock(limit: Limit, backfill: f64, clock: C) -> Result<Self, LimitError> {
        if !(0.0..=MAX_BACKFILL).contains(&backfill) {
            return Err(LimitError::BadBackfill { rate: backfill });
        }
        let backfill_fixed = (backfill * f64::from(1u32 << BACKFILL_BITS)).round() as u128;
        let pool = u128::from(limit.burst()) * u128::from(limit.window_nanos());
        let ceiling = pool + ((pool * backfill_fixed) >> BACKFILL_BITS);
        let pools = Pools {
            active: pool,
            waiting: 0,
            refilled_to: clock.now(),
        };
        Ok(Self {
            limit,
            backfill,
            backfill_fixed,
            pool,
            ceiling,
            state: ParkingMutex::new(pools),
            clock,
        })
    }

    /// Adds `permits` tokens by hand, as seed 003's `refill(tokens)`; time keeps
    /// refilling as well.
    ///
    /// ```
    /// use paceline::{Limit, Limiter, ManualClock, TokenPool};
    /// let pool = TokenPool::with_clock(Limit::per_second(10)?, 0.0, ManualClock::new())?;
    /// assert!(pool.try_acquire(10).is_admitted());
    /// pool.refill_permits(4);
    /// assert_eq!(pool.active(), 4.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn refill_permits(&self, permits: u64) {
        let units = u128::from(permits) * u128::from(self.limit.window_nanos());
        let now = self.clock.now();
        let mut s = self.state.lock();
        *s = self.refill(self.catch_up(*s, now), units);
    }

    /// Permits in the active pool now (consumers take from here).
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, TokenPool};
    /// let pool = TokenPool::with_clock(Limit::per_second(10)?, 0.25, ManualClock::new())?;
    /// assert_eq!(pool.active(), 10.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn active(&self) -> f64 {
        self.permits(self.current().active)
    }

    /// Permits in the waiting pool now (held back, moved to active by backfill).
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, TokenPool};
    /// let pool = TokenPool::with_clock(Limit::per_second(10)?, 0.25, ManualClock::new())?;
    /// assert_eq!(pool.waiting(), 0.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn waiting(&self) -> f64 {
        self.permits(self.current().waiting)
    }

    /// The backfill rate it was built with.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, TokenPool};
    /// let pool = TokenPool::with_clock(Limit::per_second(10)?, 0.25, ManualClock::new())?;
    /// assert_eq!(pool.backfill(), 0.25);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn backfill(&self) -> f64 {
        self.backfill
    }

    /// The limit it was built with.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, TokenPool};
    /// let limit = Limit::per_second(10)?;
    /// assert_eq!(TokenPool::with_clock(limit, 0.0, ManualClock::new())?.limit(), limit);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn limit(&self) -> Limit {
        self.limit
    }

    fn permits(&self, units: u128) -> f64 {
        units as f64 / self.limit.window_nanos() as f64
    }

    /// The pools with time refilled up to now (without storing them).
    fn current(&self) -> Pools {
        let s = *self.state.lock();
        self.catch_up(s, self.clock.now())
    }

    /// Refills the time from `s.refilled_to` to `now` (never backwards).
    fn catch_up(&self, s: Pools, now: Nanos) -> Pools {
        if now <= s.refilled_to {
            return s;
        }
        let units = u128::from(now - s.refilled_to) * u128::from(self.limit.permits());
        Pools {
            refilled_to: now,
            ..self.refill(s, units)
        }
    }

    /// One refill of `units`: fill active, spill to waiting, backfill pro rata.
    fn refill(&self, s: Pools, units: u128) -> Pools {
        let fill = units.min(self.pool.saturating_sub(s.active));
        let active = s.active + fill;
        let waiting = s.waiting.saturating_add(units - fill);
        let backfill = ((units * self.backfill_fixed) >> BACKFILL_BITS)
            .min(waiting)
            .min(self.ceiling.saturating_sub(active));
        Pools {
            active: active + backfill,
            waiting: waiting - backfill,
            refilled_to: s.refilled_to,
        }
    }

    /// The first reading at which the active pool holds `need`, given the stored
    /// pools `s` and that it does not at `now`. It refills from `s` in one step, as
    /// the next request will: backfill rounds down per refill, so two steps may give a
    /// unit less than one.
    fn earliest(&self, s: Pools, need: u128, now: Nanos) -> Nanos {
        // Refill is monotone in time: find a span long enough (doubling; `need` is at
        // most the ceiling, which a long enough refill always reaches), then search
        // for the shortest.
        let permits = u128::from(self.limit.permits());
        let suffices = |span: u128| self.refill(s, span * permits).active >= need;
        let mut lo = u128::from(now - s.refilled_to); // too short
        let mut hi = lo + need.div_ceil(permits).max(1);
        while !suffices(hi) {
            lo = hi;
            hi *= 2;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if suffices(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        u64::try_from(u128::from(s.refilled_to) + hi).unwrap_or(Decision::NEVER)
    }
}

impl<C: Clock> Limiter for TokenPool<C> {
    fn try_acquire(&self, n: u32) -> Decision {
        if n == 0 {
            return Decision::Admitted;
        }
        let need = u128::from(n) * u128::from(self.limit.window_nanos());
        if need > self.ceiling {
            return Decision::refused(None);
        }
        let mut s = self.state.lock();
        // Never refill backwards: a reading older than the last refill counts as it.
        let now = self.clock.now().max(s.refilled_to);
        let pools = self.catch_up(*s, now);
        if pools.active >= need {
            *s = Pools {
                active: pools.active - need,
                ..pools
            };
            Decision::Admitted
        } else {
            Decision::Refused {
                earliest: self.earliest(*s, need, now),
            }
        }
    }
}

impl<C: Clock> fmt::Debug for TokenPool<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.current();
        f.debug_struct("TokenPool")
            .field("limit", &self.limit)
            .field("backfill", &self.backfill)
            .field("active", &self.permits(p.active))
            .field("waiting", &self.permits(p.waiting))
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn rejects_bad_backfill_rates() {
        for rate in [-0.1, f64::NAN, f64::INFINITY, 16.5] {
            let r = TokenPool::with_clock(Limit::per_second(1).unwrap(), rate, ManualClock::new());
            assert!(matches!(r, Err(LimitError::BadBackfill { .. })), "{rate}");
        }
    }

    #[test]
    fn earliest_is_the_first_reading_that_suffices() {
        let clock = ManualClock::new();
        let pool =
            TokenPool::with_clock(Limit::per_second(4).unwrap(), 0.5, clock.clone()).unwrap();
        assert!(pool.try_acquire(4).is_admitted());
        let e = pool.try_acquire(1).earliest().unwrap();
        assert_eq!(e, 250_000_000);
        clock.set(e - 1);
        assert!(!pool.try_acquire(1).is_admitted());
        clock.set(e);
        assert!(pool.try_acquire(1).is_admitted());
        assert_eq!(pool.try_acquire(7), Decision::refused(None)); // ceiling is 6
    }

    /// Regression (proptest `earliest_is_exact_when_alone`, pool 1 per 624 ms): the
    /// earliest time was searched from pools already refilled to now, a two-step
    /// refill that rounds the backfill down once more than the one step the next
    /// request takes, so the request passed a nanosecond before its `earliest`.
    #[test]
    fn earliest_matches_the_single_step_refill_of_the_next_request() {
        let limit = Limit::new(1, std::time::Duration::from_millis(624)).unwrap();
        let probe = |t: Nanos| {
            let clock = ManualClock::new();
            let pool = TokenPool::with_clock(limit, 0.25, clock.clone()).unwrap();
            clock.set(177_419_821);
            assert!(pool.try_acquire(1).is_admitted());
            clock.set(177_419_821 + 33_202_657);
            let at = pool.try_acquire(1).earliest().unwrap();
            clock.set(t.min(at - 1));
            (at, pool.try_acquire(1).is_admitted())
        };
        let (at, early) = probe(0);
        assert!(!early);
        let clock = ManualClock::new();
        let pool = TokenPool::with_clock(limit, 0.25, clock.clone()).unwrap();
        clock.set(177_419_821);
        assert!(pool.try_acquire(1).is_admitted());
        clock.set(at);
        assert!(pool.try_acquire(1).is_admitted());
    }

    #[test]
    fn a_backlog_is_caught_up_at_one_and_a_quarter_times_the_rate() {
        let clock = ManualClock::new();
        let pool =
            TokenPool::with_clock(Limit::per_second(100).unwrap(), 0.25, clock.clone()).unwrap();
        // Ten idle seconds: 1000 permits wait.
        clock.advance_nanos(10_000_000_000);
        assert_eq!(pool.waiting(), 1000.0 - 25.0);
        // Then consumers take all they can, every millisecond, for 4 s: 125/s.
        assert!(pool.try_acquire(125).is_admitted());
        let mut admitted = 125;
        for _ in 0..4_000 {
            clock.advance_nanos(1_000_000);
            while pool.try_acquire(1).is_admitted() {
                admitted += 1;
            }
        }
        assert_eq!(admitted, 125 + 500);
    }
}
