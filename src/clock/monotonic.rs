//! The real clock.

use super::{Clock, Signal, Waiting};
use crate::nanos::Nanos;
use std::fmt;

/// The real monotonic clock: nanoseconds since the clock was created.
///
/// It reads the CPU's invariant time-stamp counter through `quanta` where the CPU has
/// one (about 7-20 ns a reading), and the OS monotonic clock otherwise. Waiting sleeps
/// and spins as the given [`Waiting`] strategy says, and returns early on a stopped
/// [`Signal`].
///
/// ```
/// use paceline::{Clock, MonotonicClock};
/// let clock = MonotonicClock::new();
/// let a = clock.now();
/// let b = clock.now();
/// assert!(b >= a);
/// ```
#[derive(Clone)]
pub struct MonotonicClock {
    source: quanta::Clock,
    origin: u64,
}

impl fmt::Debug for MonotonicClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MonotonicClock")
            .field("now", &self.now())
            .finish()
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl MonotonicClock {
    /// A clock whose origin is now. The first call in a process calibrates the
    /// counter against the OS clock (a few milliseconds, once).
    ///
    /// ```
    /// use paceline::{Clock, MonotonicClock};
    /// assert!(MonotonicClock::new().now() < 1_000_000_000);
    /// ```
    pub fn new() -> Self {
        let source = quanta::Clock::new();
        let origin = source.raw();
        Self { source, origin }
    }
}

impl Clock for MonotonicClock {
    #[inline]
    fn now(&self) -> Nanos {
        self.source.delta_as_nanos(self.origin, self.source.raw())
    }

    fn wait_until(&self, deadline: Nanos, waiting: &Waiting, signal: &Signal) -> Nanos {
        waiting.wait_real(self, deadline, signal)
    }
}
