//! The sliding-window log with bounded memory (seed 002).

use super::{Decision, Limit, LimitError, Limiter};
use crate::clock::{Clock, MonotonicClock};
use crate::nanos::Nanos;
use crate::sync::ParkingMutex;
use std::collections::VecDeque;
use std::fmt;

/// The most permits a log may allow per window: each admitted permit may cost an entry.
const MAX_PERMITS: u64 = 1 << 20;

/// The sliding-window log: the times of the admissions still inside the window, and
/// a request passes if they and it fit `permits`.
///
/// Exact: for every admission at `t`, the window `(t - W, t]` holds at most `permits`
/// admissions. Seed 002's version logged refused requests too, so its log grew without
/// bound under overload (and its driver never finished). This one logs only
/// admissions, merging those at the same instant, so it never holds more than
/// `permits` entries: memory is bounded by the limit, allocated once.
///
/// **Bound**: at most `permits` admissions in any window of width `W`, exactly.
///
/// **Trade-offs**: memory grows with the limit (16 bytes per entry, up to `permits`
/// entries; at most 2^20 permits), and every request takes a lock and drops expired
/// entries. A clock stepping back logs the request at the latest time seen, which
/// only keeps it longer.
///
/// ```
/// use paceline::{Limit, Limiter, ManualClock, SlidingWindowLog};
/// use std::time::Duration;
/// let clock = ManualClock::new();
/// let log = SlidingWindowLog::with_clock(Limit::new(2, Duration::from_secs(60))?, clock.clone())?;
/// clock.set(58_000_000_000);
/// assert!(log.try_acquire(1).is_admitted());
/// clock.set(59_000_000_000);
/// assert!(log.try_acquire(1).is_admitted());
/// clock.set(61_000_000_000);
/// // The fixed window would admit here; the log waits until :58 leaves the window.
/// assert_eq!(log.try_acquire(1).earliest(), Some(118_000_000_000));
/// # Ok::<(), paceline::LimitError>(())
/// ```
pub struct SlidingWindowLog<C: Clock = MonotonicClock> {
    limit: Limit,
    log: ParkingMutex<Log>,
    clock: C,
}

#[derive(Debug)]
struct Log {
    /// (time, permits admitted at that time), oldest first.
    entries: VecDeque<(Nanos, u32)>,
    /// The sum of the permits in `entries`.
    total: u64,
}

impl SlidingWindowLog {
    /// An empty log on the real clock; fails if `permits` exceeds 2^20.
    ///
    /// ```
    /// use paceline::{Limit, Limiter, SlidingWindowLog};
    /// let log = SlidingWindowLog::new(Limit::per_second(5)?)?;
    /// assert!(log.try_acquire(5).is_admitted());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn new(limit: Limit) -> Result<Self, LimitError> {
        Self::with_clock(limit, MonotonicClock::new())
    }
}

impl<C: Clock> SlidingWindowLog<C> {
    /// An empty log on `clock`; fails if `permits` exceeds 2^20.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, SlidingWindowLog};
    /// let log = SlidingWindowLog::with_clock(Limit::per_second(5)?, ManualClock::new())?;
    /// assert_eq!(log.len(), 0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn with_clock(limit: Limit, clock: C) -> Result<Self, LimitError> {
        let limit = limit.check_permits("permits in SlidingWindowLog", MAX_PERMITS)?;
        let entries = VecDeque::with_capacity(limit.permits() as usize);
        Ok(Self {
            limit,
            log: ParkingMutex::new(Log { entries, total: 0 }),
            clock,
        })
    }

    /// Permits admitted in the window ending now.
    ///
    /// ```
    /// use paceline::{Limit, Limiter, ManualClock, SlidingWindowLog};
    /// let log = SlidingWindowLog::with_clock(Limit::per_second(5)?, ManualClock::new())?;
    /// let _ = log.try_acquire(2);
    /// assert_eq!(log.len(), 2);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn len(&self) -> u64 {
        let mut log = self.log.lock();
        log.expire(self.clock.now(), self.limit.window_nanos());
        log.total
    }

    /// Whether no permit was admitted in the window ending now.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, SlidingWindowLog};
    /// let log = SlidingWindowLog::with_clock(Limit::per_second(5)?, ManualClock::new())?;
    /// assert!(log.is_empty());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The limit it was built with.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, SlidingWindowLog};
    /// let limit = Limit::per_second(5)?;
    /// assert_eq!(SlidingWindowLog::with_clock(limit, ManualClock::new())?.limit(), limit);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn limit(&self) -> Limit {
        self.limit
    }
}

impl Log {
    /// Drops the entries that left the window `(now - width, now]`.
    fn expire(&mut self, now: Nanos, width: Nanos) {
        while let Some(&(t, n)) = self.entries.front() {
            if t.saturating_add(width) > now {
                break;
            }
            self.entries.pop_front();
            self.total -= u64::from(n);
        }
    }

    /// The time by which `excess` permits will have left the window.
    fn freed_by(&self, excess: u64, width: Nanos) -> Nanos {
        let mut freed = 0;
        for &(t, n) in &self.entries {
            freed += u64::from(n);
            if freed >= excess {
                return t.saturating_add(width);
            }
        }
        unreachable!("excess never exceeds the permits in the log")
    }
}

impl<C: Clock> Limiter for SlidingWindowLog<C> {
    fn try_acquire(&self, n: u32) -> Decision {
        if n == 0 {
            return Decision::Admitted;
        }
        let permits = u64::from(self.limit.permits());
        if u64::from(n) > permits {
            return Decision::refused(None);
        }
        let width = self.limit.window_nanos();
        let mut log = self.log.lock();
        // Never log before the newest entry: a clock stepping back logs at the latest
        // time seen, keeping the log sorted and the request in it longer, not shorter.
        let now = match log.entries.back() {
            Some(&(last, _)) => self.clock.now().max(last),
            None => self.clock.now(),
        };
        log.expire(now, width);
        if log.total + u64::from(n) > permits {
            let excess = log.total + u64::from(n) - permits;
            return Decision::Refused {
                earliest: log.freed_by(excess, width),
            };
        }
        match log.entries.back_mut() {
            Some((t, m)) if *t == now => *m += n,
            _ => log.entries.push_back((now, n)),
        }
        log.total += u64::from(n);
        Decision::Admitted
    }
}

impl<C: Clock> fmt::Debug for SlidingWindowLog<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlidingWindowLog")
            .field("limit", &self.limit)
            .field("len", &self.len())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::limiters::tests_support::StepClock;

    #[test]
    fn memory_stays_within_the_limit_under_overload() {
        let clock = ManualClock::new();
        let log =
            SlidingWindowLog::with_clock(Limit::per_second(5).unwrap(), clock.clone()).unwrap();
        for _ in 0..10_000 {
            clock.advance_nanos(10_000);
            let _ = log.try_acquire(1);
            assert!(log.log.lock().entries.len() <= 5);
        }
        assert_eq!(log.log.lock().entries.capacity(), 5, "allocated once");
    }

    #[test]
    fn earliest_frees_enough_entries() {
        let clock = ManualClock::new();
        let log =
            SlidingWindowLog::with_clock(Limit::per_second(4).unwrap(), clock.clone()).unwrap();
        assert!(log.try_acquire(2).is_admitted());
        clock.set(100);
        assert!(log.try_acquire(2).is_admitted());
        assert_eq!(log.try_acquire(1).earliest(), Some(1_000_000_000));
        assert_eq!(log.try_acquire(3).earliest(), Some(1_000_000_100));
        clock.set(1_000_000_099);
        assert!(log.try_acquire(2).is_admitted());
        assert!(!log.try_acquire(1).is_admitted());
        assert_eq!(log.try_acquire(5), Decision::refused(None));
    }

    #[test]
    fn a_clock_stepping_back_logs_at_the_latest_time() {
        let clock = StepClock::new(5_000);
        let log = SlidingWindowLog::with_clock(
            Limit::new(1, std::time::Duration::from_nanos(100)).unwrap(),
            clock.clone(),
        )
        .unwrap();
        assert!(log.try_acquire(1).is_admitted());
        clock.set(5_100);
        assert!(log.try_acquire(1).is_admitted()); // logged at 5_100
        clock.set(5_050);
        assert_eq!(log.try_acquire(1).earliest(), Some(5_200));
    }
}
