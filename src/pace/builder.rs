//! [`RateLimiterBuilder`]: a limiter with non-default waiting or fast-path settings.

use super::arrivals::Arrivals;
use super::limiter::{DEFAULT_FAST_PATH_LIMIT, RateLimiter};
use super::spec::RateSpec;
use crate::clock::{Clock, MonotonicClock, Waiting};

/// Builds a [`RateLimiter`] with non-default settings.
///
/// ```
/// use paceline::{ManualClock, RateLimiter, RateSpec};
/// let limiter = RateLimiter::builder(RateSpec::new(10.0))
///     .fast_path_limit(0)
///     .build_with_clock(ManualClock::new());
/// assert!(!limiter.is_stopped());
/// ```
#[derive(Debug, Clone)]
pub struct RateLimiterBuilder {
    spec: RateSpec,
    waiting: Option<Waiting>,
    fast_path_limit: u64,
    arrivals: Arrivals,
}

impl RateLimiterBuilder {
    pub(super) fn new(spec: RateSpec) -> Self {
        Self {
            spec,
            waiting: None,
            fast_path_limit: DEFAULT_FAST_PATH_LIMIT,
            arrivals: Arrivals::Uniform,
        }
    }

    /// How slots are spaced: a slice apart, or at exponentially distributed gaps whose
    /// mean is the slice ([`Arrivals::Poisson`], the same slots for the same seed).
    /// Every other rule (strictness, pause, rate changes, waits) is the same for
    /// both. By default, [`Arrivals::Uniform`].
    ///
    /// ```
    /// use paceline::{Arrivals, ManualClock, RateLimiter, RateSpec};
    /// let l = RateLimiter::builder(RateSpec::new(10.0))
    ///     .arrivals(Arrivals::Poisson { seed: 1 })
    ///     .build_with_clock(ManualClock::new());
    /// assert_eq!(l.arrivals(), Arrivals::Poisson { seed: 1 });
    /// ```
    pub fn arrivals(mut self, arrivals: Arrivals) -> Self {
        self.arrivals = arrivals;
        self
    }

    /// How early callers wait for their slots. By default, the clock's
    /// [`default_waiting`](Clock::default_waiting): [`Waiting::adaptive()`] on the real
    /// clock, [`Waiting::exact()`] on [`ManualClock`](crate::ManualClock).
    ///
    /// ```
    /// use paceline::{RateLimiter, RateSpec, Waiting};
    /// let l = RateLimiter::builder(RateSpec::new(1.0)).waiting(Waiting::spin_sleep()).build();
    /// assert_eq!(l.waiting(), Waiting::spin_sleep());
    /// ```
    pub fn waiting(mut self, waiting: Waiting) -> Self {
        self.waiting = Some(waiting);
        self
    }

    /// Grants between forced clock readings while the fast path (no clock reading when
    /// last-seen already shows the op is due) is in use, and the most slots one thread
    /// reserves at once, behind or ahead of the schedule, which is also never more
    /// than 64 (see `docs/pacing.md`, "Reservations"); rounded up to a power of two; 0
    /// reads the clock on every acquire and never reserves. By default, 32
    /// ([`DEFAULT_FAST_PATH_LIMIT`]).
    ///
    /// ```
    /// let b = paceline::RateLimiter::builder(paceline::RateSpec::new(1.0)).fast_path_limit(10);
    /// # let _ = b;
    /// ```
    pub fn fast_path_limit(mut self, grants: u64) -> Self {
        self.fast_path_limit = if grants == 0 {
            0
        } else {
            grants.next_power_of_two()
        };
        self
    }

    /// The limiter, on the real monotonic clock.
    ///
    /// ```
    /// let l = paceline::RateLimiter::builder(paceline::RateSpec::new(1.0)).build();
    /// assert!(!l.is_stopped());
    /// ```
    pub fn build(self) -> RateLimiter<MonotonicClock> {
        self.build_with_clock(MonotonicClock::new())
    }

    /// The limiter, on the given clock.
    ///
    /// ```
    /// use paceline::{ManualClock, RateLimiter, RateSpec};
    /// let l = RateLimiter::builder(RateSpec::new(1.0)).build_with_clock(ManualClock::new());
    /// assert_eq!(l.now(), 0);
    /// ```
    pub fn build_with_clock<C: Clock>(self, clock: C) -> RateLimiter<C> {
        let waiting = self.waiting.unwrap_or_else(|| clock.default_waiting());
        RateLimiter::build(
            self.spec,
            clock,
            waiting,
            self.fast_path_limit,
            self.arrivals,
        )
    }
}
