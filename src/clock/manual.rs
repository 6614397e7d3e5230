//! The manual clock: time moves when a test says so, or when something waits on it.

use super::{Clock, Signal, Waiting};
use crate::nanos::{self, Nanos};
use crate::sync::{Arc, AtomicU64, Ordering};
use std::time::Duration;

// Ground rules: `now` is a single AtomicU64 written by `advance`/`set`/`wait_until`
// (fetch_add / fetch_max, so concurrent movers never lose each other's time) and
// read by `now`. It publishes no other memory, so Relaxed is enough everywhere:
// callers synchronise their own data themselves.

/// A clock that moves only when told to; waiting on it jumps it to the deadline.
///
/// It starts at 0 ns. Clones share the same time, so a test keeps one clone and
/// hands another to the limiter.
///
/// ```
/// use paceline::{ManualClock, RateLimiter, RateSpec};
/// use std::time::Duration;
/// let clock = ManualClock::new();
/// let limiter = RateLimiter::with_clock(RateSpec::new(1000.0), clock.clone());
/// limiter.acquire(); // slot 0, now 0
/// limiter.acquire(); // slot 1 ms: waiting advances the clock
/// assert_eq!(clock.now_duration(), Duration::from_millis(1));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
}

impl ManualClock {
    /// A new clock reading 0 ns.
    ///
    /// ```
    /// use paceline::{Clock, ManualClock};
    /// assert_eq!(ManualClock::new().now(), 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// A new clock reading `start` ns.
    ///
    /// ```
    /// use paceline::{Clock, ManualClock};
    /// assert_eq!(ManualClock::starting_at(42).now(), 42);
    /// ```
    pub fn starting_at(start: Nanos) -> Self {
        Self {
            now: Arc::new(AtomicU64::new(start)),
        }
    }

    /// Moves the clock forward by `d`.
    ///
    /// ```
    /// use paceline::{Clock, ManualClock};
    /// use std::time::Duration;
    /// let c = ManualClock::new();
    /// c.advance(Duration::from_micros(3));
    /// assert_eq!(c.now(), 3_000);
    /// ```
    pub fn advance(&self, d: Duration) {
        self.advance_nanos(nanos::from_duration(d));
    }

    /// Moves the clock forward by `n` nanoseconds.
    ///
    /// ```
    /// use paceline::{Clock, ManualClock};
    /// let c = ManualClock::new();
    /// c.advance_nanos(7);
    /// assert_eq!(c.now(), 7);
    /// ```
    pub fn advance_nanos(&self, n: Nanos) {
        self.now.fetch_add(n, Ordering::Relaxed);
    }

    /// Moves the clock to `t` if `t` is later than now; never moves it back.
    ///
    /// ```
    /// use paceline::{Clock, ManualClock};
    /// let c = ManualClock::new();
    /// c.set(10);
    /// c.set(5);
    /// assert_eq!(c.now(), 10);
    /// ```
    pub fn set(&self, t: Nanos) {
        self.now.fetch_max(t, Ordering::Relaxed);
    }

    /// The current reading as a [`Duration`] since the clock's origin.
    ///
    /// ```
    /// use paceline::ManualClock;
    /// assert_eq!(ManualClock::starting_at(1_000).now_duration().as_micros(), 1);
    /// ```
    pub fn now_duration(&self) -> Duration {
        nanos::to_duration(self.now.load(Ordering::Relaxed))
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Nanos {
        self.now.load(Ordering::Relaxed)
    }

    fn wait_until(&self, deadline: Nanos, _waiting: &Waiting, _signal: &Signal) -> Nanos {
        let before = self.now.fetch_max(deadline, Ordering::Relaxed);
        before.max(deadline)
    }

    fn default_waiting(&self) -> Waiting {
        Waiting::exact()
    }
}
