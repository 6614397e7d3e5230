//! The sliding-window counter: the weighted previous + current estimate (seed 002,
//! seed 000), behind a mutex, and the arithmetic its packed twins share.

use super::windows::Windows;
use super::{Decision, Limit, Limiter};
use crate::clock::{Clock, MonotonicClock};
use crate::nanos::Nanos;
use crate::sync::ParkingMutex;
use std::fmt;

/// How the request's window relates to the stored one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The same window.
    Same,
    /// The next window: the current count becomes the previous one.
    Next,
    /// Two or more windows later: both counts are stale.
    Later,
    /// This many windows before the stored one: the clock stepped back.
    Behind(u64),
}

impl Step {
    /// The step from a stored full-width window index to the request's.
    #[inline]
    pub(crate) fn full(stored: u64, now: u64) -> Self {
        match now.checked_sub(stored) {
            Some(0) => Self::Same,
            Some(1) => Self::Next,
            Some(_) => Self::Later,
            None => Self::Behind(stored - now),
        }
    }

    /// The step from a stored window index kept modulo 2^32; up to `back` windows
    /// behind is a clock stepping back, further is a long idle spell that wrapped.
    #[inline]
    pub(crate) fn wrapped32(stored: u32, now: u64, back: u32) -> Self {
        match (now as u32).wrapping_sub(stored) {
            0 => Self::Same,
            1 => Self::Next,
            d if d > u32::MAX - back => Self::Behind(u64::from(d.wrapping_neg())),
            _ => Self::Later,
        }
    }
}

/// The counts that weigh on a request, rotated to its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct View {
    /// The window the request counts in (full width).
    pub(crate) window: u64,
    /// Admissions in the window before it.
    pub(crate) prev: u64,
    /// Admissions in it so far.
    pub(crate) curr: u64,
    /// Nanoseconds into it (0 if the clock stepped back: the previous window weighs
    /// fully, the most conservative reading).
    pub(crate) offset: Nanos,
}

impl View {
    /// Rotates stored counts to the request at window `now`, `offset` ns into it.
    #[inline]
    pub(crate) fn rotate(step: Step, now: u64, offset: Nanos, prev: u64, curr: u64) -> Self {
        match step {
            Step::Same => Self {
                window: now,
                prev,
                curr,
                offset,
            },
            Step::Next => Self {
                window: now,
                prev: curr,
                curr: 0,
                offset,
            },
            Step::Later => Self {
                window: now,
                prev: 0,
                curr: 0,
                offset,
            },
            Step::Behind(by) => Self {
                window: now + by,
                prev,
                curr,
                offset: 0,
            },
        }
    }

    /// The estimate `prev × (1 - offset / width) + curr`.
    pub(crate) fn estimate(&self, width: Nanos) -> f64 {
        self.prev as f64 * (width - self.offset) as f64 / width as f64 + self.curr as f64
    }

    /// Admits `n` if `prev × (W - offset) + (curr + n) × W ≤ permits × W`; otherwise
    /// the earliest time it could (`None`: `n` exceeds `permits`, never).
    pub(crate) fn decide(&self, n: u64, permits: u64, width: Nanos) -> Result<(), Option<Nanos>> {
        if n > permits {
            return Err(None);
        }
        let w = u128::from(width);
        let weighed =
            u128::from(self.prev) * (w - u128::from(self.offset)) + u128::from(self.curr + n) * w;
        if weighed <= u128::from(permits) * w {
            return Ok(());
        }
        let start = self.window.saturating_mul(width);
        // Later in this window, as the previous one's weight fades.
        if self.curr + n <= permits {
            let room = u128::from(permits - self.curr - n) * w;
            let at = w - room / u128::from(self.prev);
            if at < w {
                return Err(Some(start.saturating_add(at as u64)));
            }
        }
        // In the next window, where this one's count is the previous.
        let room = u128::from(permits - n) * w;
        let at = if self.curr == 0 {
            0
        } else {
            w.saturating_sub(room / u128::from(self.curr))
        };
        let next = start.saturating_add(width);
        if at < w {
            Err(Some(next.saturating_add(at as u64)))
        } else {
            Err(Some(next.saturating_add(width)))
        }
    }
}

/// The sliding-window counter of seed 002 behind a mutex: the count of the previous
/// window, weighted by how much of it the sliding window still covers, plus the
/// count of the current one.
///
/// A request for `n` at offset `f` (a fraction) into the current window passes if
/// `prev × (1 - f) + curr + n ≤ permits`. Seed 002's example: limit 10 per minute,
/// 9 in the previous minute, 5 in this one, a request a quarter in:
/// `9 × 0.75 + 5 = 11.75`, so it is refused (a test in `tests/limiters_seeds.rs`).
/// Unlike seed 002, a refused request is not counted.
///
/// **Bound**: at most `permits` in each aligned window, and the estimate keeps the
/// rate smooth across edges, but a previous window whose requests all came at its very
/// end can still let up to `2 × permits` through in a window of width `W` (the
/// estimate assumes they were spread evenly). Exactly `permits` needs the
/// [`SlidingWindowLog`](crate::SlidingWindowLog).
///
/// **Trade-offs**: three numbers of state, O(1) per request, one lock. Its lock-free
/// twins are [`PackedSlidingWindow`](crate::PackedSlidingWindow) (16-bit counts) and
/// [`PackedSlidingWindow128`](crate::PackedSlidingWindow128) (32-bit counts).
///
/// ```
/// use paceline::{Limit, Limiter, ManualClock, SlidingWindowCounter};
/// use std::time::Duration;
/// let clock = ManualClock::new();
/// let w = SlidingWindowCounter::with_clock(Limit::per_second(10)?, clock.clone());
/// assert!(w.try_acquire(10).is_admitted());
/// clock.advance(Duration::from_millis(1_500)); // half-way into the next window
/// assert_eq!(w.estimate(), 5.0);
/// assert!(w.try_acquire(5).is_admitted());
/// assert!(!w.try_acquire(1).is_admitted());
/// # Ok::<(), paceline::LimitError>(())
/// ```
pub struct SlidingWindowCounter<C: Clock = MonotonicClock> {
    limit: Limit,
    windows: Windows,
    state: ParkingMutex<Counts>,
    clock: C,
}

#[derive(Debug, Clone, Copy)]
struct Counts {
    window: u64,
    prev: u64,
    curr: u64,
}

impl Counts {
    /// These counts seen from window `now` at `offset` into it.
    fn view(self, (now, offset): (u64, u64)) -> View {
        View::rotate(
            Step::full(self.window, now),
            now,
            offset,
            self.prev,
            self.curr,
        )
    }

    /// The counts of `v` with `curr` counted so far in its window.
    fn after(v: &View, curr: u64) -> Self {
        Counts {
            window: v.window,
            prev: v.prev,
            curr,
        }
    }
}

impl SlidingWindowCounter {
    /// A counter on the real clock.
    ///
    /// ```
    /// use paceline::{Limit, Limiter, SlidingWindowCounter};
    /// let w = SlidingWindowCounter::new(Limit::per_second(5)?);
    /// assert!(w.try_acquire(5).is_admitted());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn new(limit: Limit) -> Self {
        Self::with_clock(limit, MonotonicClock::new())
    }
}

impl<C: Clock> SlidingWindowCounter<C> {
    /// A counter on `clock`.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, SlidingWindowCounter};
    /// let w = SlidingWindowCounter::with_clock(Limit::per_second(5)?, ManualClock::new());
    /// assert_eq!(w.estimate(), 0.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn with_clock(limit: Limit, clock: C) -> Self {
        let windows = Windows::new(limit.window_nanos());
        let counts = Counts {
            window: windows.index(clock.now()),
            prev: 0,
            curr: 0,
        };
        Self {
            limit,
            windows,
            state: ParkingMutex::new(counts),
            clock,
        }
    }

    /// The estimate now: `prev × (1 - f) + curr`.
    ///
    /// ```
    /// use paceline::{Limit, Limiter, ManualClock, SlidingWindowCounter};
    /// let w = SlidingWindowCounter::with_clock(Limit::per_second(5)?, ManualClock::new());
    /// let _ = w.try_acquire(2);
    /// assert_eq!(w.estimate(), 2.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn estimate(&self) -> f64 {
        self.view().estimate(self.limit.window_nanos())
    }

    /// Counts `n` requests without asking: traffic that bypassed the limit, or seed
    /// 000's plain rate counter. Saturates instead of wrapping.
    ///
    /// ```
    /// use paceline::{Limit, Limiter, ManualClock, SlidingWindowCounter};
    /// let w = SlidingWindowCounter::with_clock(Limit::per_second(5)?, ManualClock::new());
    /// w.record(7);
    /// assert_eq!(w.estimate(), 7.0);
    /// assert!(!w.try_acquire(1).is_admitted());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn record(&self, n: u64) {
        let at = self.windows.split(self.clock.now());
        let mut s = self.state.lock();
        let v = s.view(at);
        *s = Counts::after(&v, v.curr.saturating_add(n));
    }

    /// The limit it was built with.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, SlidingWindowCounter};
    /// let limit = Limit::per_second(5)?;
    /// assert_eq!(SlidingWindowCounter::with_clock(limit, ManualClock::new()).limit(), limit);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn limit(&self) -> Limit {
        self.limit
    }

    fn view(&self) -> View {
        let at = self.windows.split(self.clock.now());
        self.state.lock().view(at)
    }
}

impl<C: Clock> Limiter for SlidingWindowCounter<C> {
    fn try_acquire(&self, n: u32) -> Decision {
        if n == 0 {
            return Decision::Admitted;
        }
        let n = u64::from(n);
        let at = self.windows.split(self.clock.now());
        let mut s = self.state.lock();
        let v = s.view(at);
        match v.decide(
            n,
            u64::from(self.limit.permits()),
            self.limit.window_nanos(),
        ) {
            Ok(()) => {
                *s = Counts::after(&v, v.curr + n);
                Decision::Admitted
            }
            Err(at) => Decision::refused(at),
        }
    }
}

impl<C: Clock> fmt::Debug for SlidingWindowCounter<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlidingWindowCounter")
            .field("limit", &self.limit)
            .field("estimate", &self.estimate())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::limiters::tests_support::StepClock;

    #[test]
    fn steps() {
        assert_eq!(Step::full(5, 5), Step::Same);
        assert_eq!(Step::full(5, 6), Step::Next);
        assert_eq!(Step::full(5, 9), Step::Later);
        assert_eq!(Step::full(5, 3), Step::Behind(2));
        assert_eq!(Step::wrapped32(u32::MAX, 1 << 32, 16), Step::Next);
        assert_eq!(Step::wrapped32(3, 1, 16), Step::Behind(2));
        assert_eq!(Step::wrapped32(3, 1 << 20, 16), Step::Later);
    }

    #[test]
    fn earliest_is_exact_in_this_window_and_the_next() {
        let w = 60_000_000_000;
        // Seed 002: 9 before, 5 now, at 25 %; fits once 9 × (1 - f) ≤ 4.
        let v = View {
            window: 1,
            prev: 9,
            curr: 5,
            offset: w / 4,
        };
        let at = v.decide(1, 10, w).unwrap_err().unwrap();
        assert_eq!(at, w + w - 4 * w / 9);
        let fits = View {
            offset: at - w,
            ..v
        };
        assert_eq!(fits.decide(1, 10, w), Ok(()));
        let early = View {
            offset: at - w - 1,
            ..v
        };
        assert!(early.decide(1, 10, w).is_err());
        // Full now: 10 in this window; 3 more fit 30 % into the next.
        let full = View {
            window: 1,
            prev: 0,
            curr: 10,
            offset: 5,
        };
        assert_eq!(full.decide(3, 10, w), Err(Some(2 * w + 3 * w / 10)));
        // Asking for the whole limit needs an empty previous window.
        assert_eq!(full.decide(10, 10, w), Err(Some(3 * w)));
        assert_eq!(full.decide(11, 10, w), Err(None));
    }

    #[test]
    fn a_clock_stepping_back_weighs_the_previous_window_fully() {
        let clock = StepClock::new(1_500_000_000);
        let w = SlidingWindowCounter::with_clock(Limit::per_second(4).unwrap(), clock.clone());
        w.record(4);
        clock.set(2_500_000_000);
        assert!(w.try_acquire(2).is_admitted()); // 4 × 0.5 + 2 = 4
        clock.set(1_900_000_000); // back into the previous window
        assert!(!w.try_acquire(1).is_admitted());
        assert_eq!(w.estimate(), 6.0);
    }

    #[test]
    fn refused_requests_are_not_counted() {
        let clock = ManualClock::new();
        let w = SlidingWindowCounter::with_clock(Limit::per_second(2).unwrap(), clock.clone());
        for _ in 0..10 {
            let _ = w.try_acquire(1);
        }
        assert_eq!(w.estimate(), 2.0);
    }
}
