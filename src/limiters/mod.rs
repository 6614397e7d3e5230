//! The classic rate-limiting algorithms of the seed documents, behind one small trait.
//!
//! Every limiter answers one question, [`Limiter::try_acquire`]: may `n` permits pass
//! now? The answer is a [`Decision`]: admitted, or refused with the earliest time (in
//! nanoseconds on the limiter's own clock) at which the same request could pass if
//! nothing else happened in between. Nothing here blocks; a caller that wants to wait
//! sleeps until `earliest` itself.
//!
//! Every type holds a [`Clock`](crate::Clock) (by default the real
//! [`MonotonicClock`](crate::MonotonicClock)) so that a [`ManualClock`](crate::ManualClock)
//! drives it in tests, exactly and deterministically.
//!
//! | type | seed | state | bound in any window of width `W` |
//! |---|---|---|---|
//! | [`TokenBucket`] | 001, 002 | mutex | `burst + permits` |
//! | [`AtomicTokenBucket`] | 001 | one packed `u64` | `burst + permits` |
//! | [`RefillTokenBucket`] | 002 | mutex + refill thread | `burst + permits` |
//! | [`LeakyBucket`] | 002 | one `u64` | `burst + permits` |
//! | [`FixedWindow`] | 002 | one packed `u64` | `permits` per aligned window, `2 × permits` |
//! | [`SlidingWindowLog`] | 002 | mutex, ring of `permits` stamps | `permits` |
//! | [`SlidingWindowCounter`] | 002, 000 | mutex | `2 × permits` |
//! | [`PackedSlidingWindow`] | 000 | one packed `u64` | `2 × permits` |
//! | [`PackedSlidingWindow128`] | 000 | one packed `u128` | `2 × permits` |
//! | [`TokenPool`] | 003 | mutex | `(1 + backfill) × (burst + permits)` |
//! | [`KeyedLimiter`] | 004 | sharded mutexes | `capacity` per key in `W - granularity` |
//!
//! `docs/algorithms.md` compares them: memory, trade-offs, seed 002's experiment
//! rerun on each, and their speed against their mutex twins and `governor`.
//!
//! ```
//! use paceline::{Decision, Limit, Limiter, ManualClock, TokenBucket};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let bucket = TokenBucket::with_clock(Limit::per_second(10)?, clock.clone());
//! for _ in 0..10 {
//!     assert!(bucket.try_acquire(1).is_admitted()); // the full bucket: a burst of 10
//! }
//! // Empty: the next token arrives 100 ms from now.
//! assert_eq!(bucket.try_acquire(1), Decision::Refused { earliest: 100_000_000 });
//! clock.advance(Duration::from_millis(100));
//! assert!(bucket.try_acquire(1).is_admitted());
//! # Ok::<(), paceline::LimitError>(())
//! ```

mod atomic_token_bucket;
mod cas;
mod error;
mod fixed_window;
mod keyed;
mod leaky_bucket;
mod refill_bucket;
mod sliding_log;
mod sliding_window;
mod sliding_window128;
mod sliding_window64;
mod token_bucket;
mod token_pool;
mod windows;

pub use atomic_token_bucket::AtomicTokenBucket;
pub use error::LimitError;
pub use fixed_window::FixedWindow;
pub use keyed::{KeyConfig, KeyedLimiter, KeyedLimiterBuilder};
pub use leaky_bucket::LeakyBucket;
pub use refill_bucket::RefillTokenBucket;
pub use sliding_log::SlidingWindowLog;
pub use sliding_window::SlidingWindowCounter;
pub use sliding_window64::PackedSlidingWindow;
pub use sliding_window128::{PackedSlidingWindow128, atomic_u128_is_native};
pub use token_bucket::TokenBucket;
pub use token_pool::TokenPool;

use crate::nanos::{self, Nanos};
use std::time::Duration;

/// The answer of [`Limiter::try_acquire`]: admitted, or not before `earliest`.
///
/// Refusal is a value, not an error: "not yet" is the normal answer of a busy limiter.
/// A request that can never pass (more permits than the limiter ever holds at once)
/// is refused with `earliest` = [`Decision::NEVER`].
///
/// ```
/// use paceline::Decision;
/// let d = Decision::Refused { earliest: 5_000 };
/// assert!(!d.is_admitted());
/// assert_eq!(d.earliest(), Some(5_000));
/// assert_eq!(Decision::Admitted.earliest(), None);
/// ```
#[must_use = "a refused request must not go ahead"]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// The permits were taken: go ahead.
    Admitted,
    /// The permits were not taken. Nothing changed in the limiter.
    Refused {
        /// The earliest reading of the limiter's clock at which the same request could
        /// pass if no other request came first; [`Decision::NEVER`] if it never can.
        earliest: Nanos,
    },
}

impl Decision {
    /// The `earliest` of a request that can never pass: it asks for more permits than
    /// the limiter holds at once.
    ///
    /// ```
    /// use paceline::{Decision, Limit, Limiter, ManualClock, TokenBucket};
    /// let bucket = TokenBucket::with_clock(Limit::per_second(10)?, ManualClock::new());
    /// assert_eq!(bucket.try_acquire(11), Decision::Refused { earliest: Decision::NEVER });
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub const NEVER: Nanos = Nanos::MAX;

    /// Whether the permits were taken.
    ///
    /// ```
    /// assert!(paceline::Decision::Admitted.is_admitted());
    /// ```
    #[inline]
    pub const fn is_admitted(self) -> bool {
        matches!(self, Self::Admitted)
    }

    /// When refused, the earliest time the request could pass; `None` when admitted.
    ///
    /// ```
    /// assert_eq!(paceline::Decision::Refused { earliest: 7 }.earliest(), Some(7));
    /// ```
    #[inline]
    pub const fn earliest(self) -> Option<Nanos> {
        match self {
            Self::Admitted => None,
            Self::Refused { earliest } => Some(earliest),
        }
    }

    /// Refused with `earliest`, where `None` means never.
    pub(crate) const fn refused(earliest: Option<Nanos>) -> Self {
        match earliest {
            Some(earliest) => Self::Refused { earliest },
            None => Self::Refused {
                earliest: Self::NEVER,
            },
        }
    }
}

/// A rate limiter: may `n` permits pass now?
///
/// Implemented by every limiter in this module except [`KeyedLimiter`] (which asks the
/// same question per key). `n = 0` is always admitted and changes nothing. A refused
/// request changes nothing either, so a caller may retry at `earliest`.
///
/// ```
/// use paceline::{Limit, Limiter, ManualClock, FixedWindow, SlidingWindowLog};
///
/// fn drain(l: &dyn Limiter) -> u32 {
///     (0..100).filter(|_| l.try_acquire(1).is_admitted()).count() as u32
/// }
/// let limit = Limit::per_second(3)?;
/// assert_eq!(drain(&FixedWindow::with_clock(limit, ManualClock::new())?), 3);
/// assert_eq!(drain(&SlidingWindowLog::with_clock(limit, ManualClock::new())?), 3);
/// # Ok::<(), paceline::LimitError>(())
/// ```
pub trait Limiter: Send + Sync {
    /// Takes `n` permits if they are available now; otherwise takes nothing and says
    /// when they could be.
    fn try_acquire(&self, n: u32) -> Decision;
}

/// A shared limiter is a limiter: threads hold it in an `Arc`.
///
/// ```
/// use paceline::{Limit, Limiter, ManualClock, TokenBucket};
/// use std::sync::Arc;
/// let shared: Arc<dyn Limiter> =
///     Arc::new(TokenBucket::with_clock(Limit::per_second(1)?, ManualClock::new()));
/// assert!(shared.try_acquire(1).is_admitted());
/// # Ok::<(), paceline::LimitError>(())
/// ```
impl<L: Limiter + ?Sized> Limiter for std::sync::Arc<L> {
    #[inline]
    fn try_acquire(&self, n: u32) -> Decision {
        (**self).try_acquire(n)
    }
}

/// A borrowed limiter is a limiter.
///
/// ```
/// use paceline::{Limit, Limiter, ManualClock, TokenBucket};
/// fn one(l: impl Limiter) -> bool {
///     l.try_acquire(1).is_admitted()
/// }
/// let bucket = TokenBucket::with_clock(Limit::per_second(1)?, ManualClock::new());
/// assert!(one(&bucket));
/// # Ok::<(), paceline::LimitError>(())
/// ```
impl<L: Limiter + ?Sized> Limiter for &L {
    #[inline]
    fn try_acquire(&self, n: u32) -> Decision {
        (**self).try_acquire(n)
    }
}

/// How many permits per window, and how many may pass at once: the configuration of
/// every limiter except the keyed one.
///
/// The rate is `permits / window`, kept exact (never rounded to whole nanoseconds per
/// permit). `burst` is the most the buckets hold at once: the token buckets' capacity,
/// the leaky bucket's depth, the token pool's active pool. The window counters admit
/// `permits` per window and do not use `burst`.
///
/// ```
/// use paceline::Limit;
/// use std::time::Duration;
/// let limit = Limit::new(500, Duration::from_secs(60))?.with_burst(50)?;
/// assert_eq!(limit.permits(), 500);
/// assert_eq!(limit.window(), Duration::from_secs(60));
/// assert_eq!(limit.burst(), 50);
/// # Ok::<(), paceline::LimitError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limit {
    permits: u32,
    window: Nanos,
    burst: u32,
}

impl Limit {
    /// `permits` per `window`, with a burst of `permits`.
    ///
    /// Rejects zero permits ([`LimitError::ZeroPermits`]) and a window shorter than a
    /// nanosecond ([`LimitError::ZeroWindow`]).
    ///
    /// ```
    /// use paceline::{Limit, LimitError};
    /// use std::time::Duration;
    /// assert!(Limit::new(10, Duration::from_millis(250)).is_ok());
    /// assert_eq!(Limit::new(0, Duration::from_secs(1)), Err(LimitError::ZeroPermits));
    /// assert_eq!(Limit::new(1, Duration::ZERO), Err(LimitError::ZeroWindow));
    /// ```
    pub fn new(permits: u32, window: Duration) -> Result<Self, LimitError> {
        if permits == 0 {
            return Err(LimitError::ZeroPermits);
        }
        let window = nanos::from_duration(window);
        if window == 0 {
            return Err(LimitError::ZeroWindow);
        }
        Ok(Self {
            permits,
            window,
            burst: permits,
        })
    }

    /// `permits` per second, with a burst of `permits`.
    ///
    /// ```
    /// use paceline::Limit;
    /// assert_eq!(Limit::per_second(10)?.window_nanos(), 1_000_000_000);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn per_second(permits: u32) -> Result<Self, LimitError> {
        Self::new(permits, Duration::from_secs(1))
    }

    /// Sets how many permits may pass at once after an idle spell: the buckets'
    /// capacity. Rejects 0 ([`LimitError::ZeroBurst`]).
    ///
    /// By default, the burst equals `permits` (one window's worth).
    ///
    /// ```
    /// use paceline::Limit;
    /// assert_eq!(Limit::per_second(10)?.with_burst(1)?.burst(), 1);
    /// assert!(Limit::per_second(10)?.with_burst(0).is_err());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn with_burst(self, burst: u32) -> Result<Self, LimitError> {
        if burst == 0 {
            return Err(LimitError::ZeroBurst);
        }
        Ok(Self { burst, ..self })
    }

    /// Permits per window.
    ///
    /// ```
    /// assert_eq!(paceline::Limit::per_second(7)?.permits(), 7);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// The window.
    ///
    /// ```
    /// assert_eq!(paceline::Limit::per_second(7)?.window().as_secs(), 1);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn window(&self) -> Duration {
        nanos::to_duration(self.window)
    }

    /// The window in nanoseconds.
    ///
    /// ```
    /// assert_eq!(paceline::Limit::per_second(7)?.window_nanos(), 1_000_000_000);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn window_nanos(&self) -> Nanos {
        self.window
    }

    /// The most permits that may pass at once.
    ///
    /// ```
    /// assert_eq!(paceline::Limit::per_second(7)?.burst(), 7);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// Checks that `permits` fits a packed field of at most `max`.
    pub(crate) fn check_permits(self, what: &'static str, max: u64) -> Result<Self, LimitError> {
        check_max(what, u64::from(self.permits), max).map(|()| self)
    }

    /// Checks that `burst` fits a packed field of at most `max`.
    pub(crate) fn check_burst(self, what: &'static str, max: u64) -> Result<Self, LimitError> {
        check_max(what, u64::from(self.burst), max).map(|()| self)
    }
}

fn check_max(what: &'static str, given: u64, max: u64) -> Result<(), LimitError> {
    if given > max {
        Err(LimitError::TooMany { what, given, max })
    } else {
        Ok(())
    }
}

/// `ceil(a * b / c)` without overflow in the product, saturating at `u64::MAX`.
#[inline]
pub(crate) fn mul_div_ceil(a: u64, b: u64, c: u64) -> u64 {
    u64::try_from((u128::from(a) * u128::from(b)).div_ceil(u128::from(c))).unwrap_or(u64::MAX)
}

/// Test helpers shared by the limiters' unit tests.
#[cfg(all(test, not(loom)))]
pub(crate) mod tests_support {
    use crate::clock::{Clock, Signal, Waiting};
    use crate::nanos::Nanos;
    use crate::sync::{Arc, AtomicU64, Ordering};

    /// A clock a test may move backwards (a [`ManualClock`](crate::ManualClock) never
    /// does), as a machine whose cores disagree would.
    #[derive(Debug, Clone)]
    pub(crate) struct StepClock(Arc<AtomicU64>);

    impl StepClock {
        pub(crate) fn new(t: Nanos) -> Self {
            Self(Arc::new(AtomicU64::new(t)))
        }

        pub(crate) fn set(&self, t: Nanos) {
            self.0.store(t, Ordering::Relaxed);
        }
    }

    impl Clock for StepClock {
        fn now(&self) -> Nanos {
            self.0.load(Ordering::Relaxed)
        }

        fn wait_until(&self, deadline: Nanos, _: &Waiting, _: &Signal) -> Nanos {
            self.0.fetch_max(deadline, Ordering::Relaxed).max(deadline)
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn mul_div_ceil_rounds_up_and_saturates() {
        assert_eq!(mul_div_ceil(10, 3, 4), 8);
        assert_eq!(mul_div_ceil(8, 3, 4), 6);
        assert_eq!(mul_div_ceil(u64::MAX, 4, 2), u64::MAX);
        assert_eq!(mul_div_ceil(u64::MAX, 4, 4), u64::MAX);
    }

    #[test]
    fn limit_checks_packed_fields() {
        let l = Limit::per_second(70_000).unwrap();
        assert_eq!(
            l.check_permits("x", 65_535),
            Err(LimitError::TooMany {
                what: "x",
                given: 70_000,
                max: 65_535
            })
        );
        assert!(l.with_burst(3).unwrap().check_burst("x", 3).is_ok());
    }

    #[test]
    fn decision_never() {
        assert_eq!(Decision::refused(None).earliest(), Some(Decision::NEVER));
        assert_eq!(Decision::refused(Some(3)).earliest(), Some(3));
    }
}
