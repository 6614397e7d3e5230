//! What an acquire returns.

use crate::nanos::Nanos;
use std::fmt;

/// One granted op (or batch of ops): its slot on the schedule, when it started, and
/// its wait.
///
/// All times are nanoseconds since the limiter's origin. `wait = start - slot`, never
/// negative: an op released a little early (inside the release window) has wait 0.
/// For a batch of `n` slots, the slot is the first one's; the rest follow one slice
/// apart.
///
/// ```
/// use paceline::{ManualClock, RateLimiter, RateSpec};
/// use std::time::Duration;
/// let clock = ManualClock::new();
/// let limiter = RateLimiter::with_clock(RateSpec::new(100.0), clock.clone());
/// limiter.acquire();
/// clock.advance(Duration::from_millis(25));
/// let g = limiter.acquire();
/// assert_eq!(g.scheduled_nanos(), 10_000_000);
/// assert_eq!(g.start_nanos(), 25_000_000);
/// assert_eq!(g.wait_nanos(), 15_000_000);
/// assert!(!g.is_stopped());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grant {
    pub(crate) slot: Nanos,
    pub(crate) start: Nanos,
    pub(crate) count: u32,
    pub(crate) stopped: bool,
}

impl Grant {
    pub(crate) fn new(slot: Nanos, start: Nanos, count: u32) -> Self {
        Self {
            slot,
            start,
            count,
            stopped: false,
        }
    }

    pub(crate) fn stopped(now: Nanos) -> Self {
        Self {
            slot: now,
            start: now,
            count: 0,
            stopped: true,
        }
    }

    /// The slot: when the op was scheduled to start, in ns since the limiter's origin.
    ///
    /// ```
    /// let limiter = paceline::RateLimiter::with_clock(paceline::RateSpec::new(10.0), paceline::ManualClock::new());
    /// assert_eq!(limiter.acquire().scheduled_nanos(), 0);
    /// ```
    pub fn scheduled_nanos(&self) -> Nanos {
        self.slot
    }

    /// When `acquire` returned, in ns since the limiter's origin.
    ///
    /// ```
    /// let limiter = paceline::RateLimiter::with_clock(paceline::RateSpec::new(10.0), paceline::ManualClock::new());
    /// limiter.acquire();
    /// assert_eq!(limiter.acquire().start_nanos(), 100_000_000);
    /// ```
    pub fn start_nanos(&self) -> Nanos {
        self.start
    }

    /// How late the op started against its slot: `start - slot`, or 0 if it started
    /// on time or early.
    ///
    /// ```
    /// let limiter = paceline::RateLimiter::with_clock(paceline::RateSpec::new(10.0), paceline::ManualClock::new());
    /// assert_eq!(limiter.acquire().wait_nanos(), 0);
    /// ```
    pub fn wait_nanos(&self) -> Nanos {
        self.start.saturating_sub(self.slot)
    }

    /// How many slots this grant holds (1 for `acquire`, `n` for `acquire_n`, 0 when
    /// stopped).
    ///
    /// ```
    /// let limiter = paceline::RateLimiter::with_clock(paceline::RateSpec::new(10.0), paceline::ManualClock::new());
    /// assert_eq!(limiter.acquire_n(4).count(), 4);
    /// ```
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Whether the limiter was stopped: no slot was granted and the caller should end.
    ///
    /// ```
    /// let limiter = paceline::RateLimiter::with_clock(paceline::RateSpec::new(10.0), paceline::ManualClock::new());
    /// limiter.stop();
    /// assert!(limiter.acquire().is_stopped());
    /// ```
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.stopped {
            return f.write_str("Grant(stopped)");
        }
        f.debug_struct("Grant")
            .field("slot", &self.slot)
            .field("start", &self.start)
            .field("wait", &self.wait_nanos())
            .field("count", &self.count)
            .finish()
    }
}

/// Why [`try_acquire`](crate::RateLimiter::try_acquire) granted nothing now. Not an
/// error: the caller may try again later.
///
/// ```
/// use paceline::{ManualClock, RateLimiter, RateSpec, Refused};
/// let limiter = RateLimiter::with_clock(RateSpec::new(1000.0), ManualClock::new());
/// assert!(limiter.try_acquire().is_ok());
/// assert_eq!(limiter.try_acquire(), Err(Refused::NotUntil(1_000_000)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The next slot is not due yet; it may be taken at this time (ns since the
    /// limiter's origin).
    NotUntil(Nanos),
    /// The rate is 0; no slot is due until it is raised.
    Paused,
}

impl Refused {
    /// The earliest time a slot could be granted, if any is scheduled.
    ///
    /// ```
    /// assert_eq!(paceline::Refused::NotUntil(5).earliest_nanos(), Some(5));
    /// assert_eq!(paceline::Refused::Paused.earliest_nanos(), None);
    /// ```
    pub fn earliest_nanos(&self) -> Option<Nanos> {
        match self {
            Self::NotUntil(t) => Some(*t),
            Self::Paused => None,
        }
    }
}
