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
/// **The start is never earlier than the call to `acquire`.** A grant that read the
/// clock carries that reading. On the real clock ([`MonotonicClock`]) some grants are
/// handed out without a reading (a slot an earlier reading already showed due, or one
/// this thread reserved): their start is read from the clock when
/// [`start_nanos`](Self::start_nanos) or [`wait_nanos`](Self::wait_nanos) is called,
/// so that pacing alone pays no clock reading. Ask right after `acquire` returns, once;
/// a caller that reads its own clock when the op starts passes that reading to
/// [`wait_at`](Self::wait_at) instead (the engine does). On every other clock, the
/// manual clock included, every grant carries its reading.
///
/// [`MonotonicClock`]: crate::MonotonicClock
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
    /// The start, or (when deferred) the limiter's origin on the process-wide
    /// timeline, from which the start is read when asked for.
    start: Nanos,
    pub(crate) count: u32,
    state: State,
}

/// What a grant's `start` holds. Four bytes, so that a grant is three aligned words:
/// grants are returned through the hot path, and a 22-byte grant was copied with
/// overlapping unaligned stores that cost more than the rest of a reserved grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
enum State {
    /// The start, read when the grant was handed out.
    Read,
    /// The limiter's origin on the timeline: the start is read when asked for.
    Deferred,
    /// No slot: the limiter stopped.
    Stopped,
}

impl Grant {
    pub(crate) fn new(slot: Nanos, start: Nanos, count: u32) -> Self {
        Self {
            slot,
            start,
            count,
            state: State::Read,
        }
    }

    /// A grant whose start is read from the process-wide timeline when asked for;
    /// `origin` is the limiter's origin on it.
    pub(crate) fn deferred(slot: Nanos, origin: Nanos, count: u32) -> Self {
        Self {
            slot,
            start: origin,
            count,
            state: State::Deferred,
        }
    }

    pub(crate) fn stopped(now: Nanos) -> Self {
        Self {
            slot: now,
            start: now,
            count: 0,
            state: State::Stopped,
        }
    }

    /// Whether the start is read when asked for (no reading was taken at the grant).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_deferred(&self) -> bool {
        self.state == State::Deferred
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

    /// When the op started, in ns since the limiter's origin: the clock when `acquire`
    /// returned, or, for a grant handed out without a reading on the real clock, the
    /// clock now (see [`Grant`]). Never earlier than the call to `acquire`.
    ///
    /// ```
    /// let limiter = paceline::RateLimiter::with_clock(paceline::RateSpec::new(10.0), paceline::ManualClock::new());
    /// limiter.acquire();
    /// assert_eq!(limiter.acquire().start_nanos(), 100_000_000);
    /// ```
    #[inline]
    pub fn start_nanos(&self) -> Nanos {
        if self.state == State::Deferred {
            crate::clock::timeline_now().saturating_sub(self.start)
        } else {
            self.start
        }
    }

    /// How late the op started against its slot: `start - slot`, or 0 if it started
    /// on time or early. For a grant handed out without a reading on the real clock,
    /// this reads the clock (see [`Grant`]).
    ///
    /// ```
    /// let limiter = paceline::RateLimiter::with_clock(paceline::RateSpec::new(10.0), paceline::ManualClock::new());
    /// assert_eq!(limiter.acquire().wait_nanos(), 0);
    /// ```
    #[inline]
    pub fn wait_nanos(&self) -> Nanos {
        self.start_nanos().saturating_sub(self.slot)
    }

    /// The wait of an op that started at `start`, a reading the caller took itself on
    /// the limiter's time base ([`RateLimiter::now`](crate::RateLimiter::now)): `start
    /// - slot`, or 0. Reads no clock.
    ///
    /// ```
    /// use paceline::{ManualClock, RateLimiter, RateSpec};
    /// let clock = ManualClock::new();
    /// let limiter = RateLimiter::with_clock(RateSpec::new(10.0), clock.clone());
    /// limiter.acquire();
    /// let g = limiter.acquire(); // slot 100 ms
    /// clock.advance_nanos(5_000_000);
    /// assert_eq!(g.wait_at(limiter.now()), 5_000_000);
    /// ```
    #[inline]
    pub fn wait_at(&self, start: Nanos) -> Nanos {
        start.saturating_sub(self.slot)
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
        self.state == State::Stopped
    }
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_stopped() {
            return f.write_str("Grant(stopped)");
        }
        let start = self.start_nanos();
        f.debug_struct("Grant")
            .field("slot", &self.slot)
            .field("start", &start)
            .field("wait", &self.wait_at(start))
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
