//! The fixed-window counter, lock-free: window index and count packed in one `u64`
//! (seed 002).
//!
//! Ground rules: `state` is the whole state. Writers replace it by a compare-and-swap
//! from the value they read; refusals only load it. Nothing else is published through
//! it, so every access is `Relaxed`: the word's modification order makes each admission
//! count on top of the previous one, and a failed CAS returns the newer value to retry
//! from. A refusal decided on a stale value is safe: a newer value in the same window
//! only holds a larger count.

use super::cas::decide;
use super::windows::Windows;
use super::{Decision, Limit, LimitError, Limiter};
use crate::clock::{Clock, MonotonicClock};
use crate::sync::{AtomicU64, Ordering};
use std::fmt;

/// Bits of the count field (low bits).
const COUNT_BITS: u32 = 32;
/// Mask of the count field.
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// Where the window field starts (high 32 bits: the window index modulo 2^32).
const WINDOW_SHIFT: u32 = COUNT_BITS;
/// How many windows back a reading may step and still count against the stored
/// window, rather than being taken for a wrap after a long idle spell.
const BACKWARD_WINDOWS: u32 = 1 << 16;

#[inline]
const fn pack(window: u32, count: u64) -> u64 {
    ((window as u64) << WINDOW_SHIFT) | (count & COUNT_MASK)
}

#[inline]
const fn unpack(word: u64) -> (u32, u64) {
    ((word >> WINDOW_SHIFT) as u32, word & COUNT_MASK)
}

/// A fixed-window counter: time is cut into windows `[k·W, (k+1)·W)`; each admits
/// `permits`, counted in one atomic word.
///
/// Seed 002 kept one counter per window in a map and left the cleanup of old windows
/// as a TODO. Here the word holds only the current window's index and count; the first
/// request of a new window replaces both in the same CAS, so a stale window is gone
/// the moment a new one starts and memory is one word forever.
///
/// **Bound**: at most `permits` admissions in each aligned window, but up to
/// `2 × permits` in a window of width `W` that straddles two (seed 002's
/// `:58, :59, 1:01, 1:02` burst, a test in `tests/limiters_seeds.rs`).
///
/// **Trade-offs**: the cheapest limiter here (a refusal is one load; an admission one
/// CAS), at the price of the edge burst above. The window index is kept modulo 2^32, so
/// an idle spell of an exact multiple of 2^32 windows (136 years of 1 s windows) may
/// resume against a stale count, which only refuses more, for one window. A clock that
/// steps back (up to 2^16 windows) counts against the newest window seen.
///
/// Word layout:
///
/// ```text
///  63                           32 31                            0
/// +-------------------------------+-------------------------------+
/// | window index mod 2^32         | admitted in that window       |
/// +-------------------------------+-------------------------------+
/// ```
///
/// ```
/// use paceline::{FixedWindow, Limit, Limiter, ManualClock};
/// use std::time::Duration;
/// let clock = ManualClock::new();
/// let w = FixedWindow::with_clock(Limit::per_second(2)?, clock.clone())?;
/// assert!(w.try_acquire(2).is_admitted());
/// assert_eq!(w.try_acquire(1).earliest(), Some(1_000_000_000)); // the next window
/// clock.advance(Duration::from_secs(1));
/// assert!(w.try_acquire(1).is_admitted());
/// assert_eq!(w.count(), 1);
/// # Ok::<(), paceline::LimitError>(())
/// ```
pub struct FixedWindow<C: Clock = MonotonicClock> {
    limit: Limit,
    windows: Windows,
    /// The packed state: `window` (high 32 bits, [`WINDOW_SHIFT`]) and `count` (low
    /// 32 bits, [`COUNT_MASK`]); layout in the type's docs.
    state: AtomicU64,
    clock: C,
}

impl FixedWindow {
    /// A counter on the real clock. Cannot fail today (any `u32` permits fits the
    /// count field); the `Result` keeps the packed types' constructors alike.
    ///
    /// ```
    /// use paceline::{FixedWindow, Limit, Limiter};
    /// let w = FixedWindow::new(Limit::per_second(5)?)?;
    /// assert!(w.try_acquire(5).is_admitted());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn new(limit: Limit) -> Result<Self, LimitError> {
        Self::with_clock(limit, MonotonicClock::new())
    }
}

impl<C: Clock> FixedWindow<C> {
    /// A counter on `clock`.
    ///
    /// ```
    /// use paceline::{FixedWindow, Limit, ManualClock};
    /// let w = FixedWindow::with_clock(Limit::per_second(5)?, ManualClock::new())?;
    /// assert_eq!(w.count(), 0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn with_clock(limit: Limit, clock: C) -> Result<Self, LimitError> {
        let limit = limit.check_permits("permits in FixedWindow", COUNT_MASK)?;
        let windows = Windows::new(limit.window_nanos());
        let window = windows.index(clock.now());
        Ok(Self {
            limit,
            windows,
            state: AtomicU64::new(pack(window as u32, 0)),
            clock,
        })
    }

    /// Admissions so far in the window the clock is in now.
    ///
    /// ```
    /// use paceline::{FixedWindow, Limit, Limiter, ManualClock};
    /// let w = FixedWindow::with_clock(Limit::per_second(5)?, ManualClock::new())?;
    /// let _ = w.try_acquire(3);
    /// assert_eq!(w.count(), 3);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn count(&self) -> u64 {
        let now = self.windows.index(self.clock.now());
        view(self.state.load(Ordering::Relaxed), now).1
    }

    /// The limit it was built with.
    ///
    /// ```
    /// use paceline::{FixedWindow, Limit, ManualClock};
    /// let limit = Limit::per_second(5)?;
    /// assert_eq!(FixedWindow::with_clock(limit, ManualClock::new())?.limit(), limit);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn limit(&self) -> Limit {
        self.limit
    }
}

/// The window that counts for a request in window `now` (the stored one if the clock
/// stepped back), and the count so far in it.
#[inline]
fn view(word: u64, now: u64) -> (u64, u64) {
    let (stored, count) = unpack(word);
    let delta = (now as u32).wrapping_sub(stored);
    if delta == 0 {
        (now, count)
    } else if delta > u32::MAX - BACKWARD_WINDOWS {
        (now + u64::from(delta.wrapping_neg()), count)
    } else {
        (now, 0)
    }
}

impl<C: Clock> Limiter for FixedWindow<C> {
    fn try_acquire(&self, n: u32) -> Decision {
        if n == 0 {
            return Decision::Admitted;
        }
        let n = u64::from(n);
        let permits = u64::from(self.limit.permits());
        if n > permits {
            return Decision::refused(None);
        }
        let width = self.limit.window_nanos();
        let now = self.windows.index(self.clock.now());
        decide(&self.state, |word| {
            let (window, count) = view(word, now);
            if count + n > permits {
                let next = window.saturating_add(1).saturating_mul(width);
                return Err(Decision::Refused { earliest: next });
            }
            Ok(pack(window as u32, count + n))
        })
    }
}

impl<C: Clock> fmt::Debug for FixedWindow<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FixedWindow")
            .field("limit", &self.limit)
            .field("count", &self.count())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::limiters::tests_support::StepClock;

    #[test]
    fn pack_unpack_round_trips_and_fields_do_not_bleed() {
        for (w, c) in [(0, 0), (u32::MAX, 0), (0, COUNT_MASK), (7, 9)] {
            assert_eq!(unpack(pack(w, c)), (w, c));
        }
        assert_eq!(pack(u32::MAX, 0), !COUNT_MASK);
        assert_eq!(pack(0, COUNT_MASK), COUNT_MASK);
    }

    #[test]
    fn view_handles_new_windows_wrap_and_backwards() {
        let w = pack(5, 3);
        assert_eq!(view(w, 5), (5, 3));
        assert_eq!(view(w, 6), (6, 0));
        assert_eq!(view(w, 4), (5, 3), "a step back counts against window 5");
        assert_eq!(
            view(pack(u32::MAX, 2), 1 << 32),
            (1 << 32, 0),
            "wrapped forward"
        );
        assert_eq!(
            view(pack(u32::MAX, 2), u64::from(u32::MAX) + (1 << 32)),
            (u64::from(u32::MAX) + (1 << 32), 2)
        );
    }

    #[test]
    fn a_clock_stepping_back_does_not_reopen_a_window() {
        let clock = StepClock::new(1_500_000_000);
        let w = FixedWindow::with_clock(Limit::per_second(1).unwrap(), clock.clone()).unwrap();
        assert!(w.try_acquire(1).is_admitted());
        clock.set(900_000_000);
        assert_eq!(w.try_acquire(1).earliest(), Some(2_000_000_000));
    }

    #[test]
    fn refuses_what_can_never_fit() {
        let w = FixedWindow::with_clock(Limit::per_second(3).unwrap(), ManualClock::new()).unwrap();
        assert_eq!(w.try_acquire(4), Decision::refused(None));
        assert!(w.try_acquire(3).is_admitted());
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::sync::Arc;

    #[test]
    fn the_last_permit_goes_to_exactly_one_of_two() {
        loom::model(|| {
            let w = Arc::new(
                FixedWindow::with_clock(Limit::per_second(1).unwrap(), ManualClock::new()).unwrap(),
            );
            let w2 = w.clone();
            let t = loom::thread::spawn(move || w2.try_acquire(1).is_admitted());
            let here = w.try_acquire(1).is_admitted();
            assert!(here ^ t.join().unwrap());
        });
    }

    #[test]
    fn a_new_window_and_a_count_race_without_losing_either() {
        loom::model(|| {
            let clock = ManualClock::new();
            let w = Arc::new(
                FixedWindow::with_clock(Limit::per_second(2).unwrap(), clock.clone()).unwrap(),
            );
            assert!(w.try_acquire(2).is_admitted());
            let w2 = w.clone();
            let c2 = clock.clone();
            let t = loom::thread::spawn(move || {
                c2.advance_nanos(1_000_000_000);
                w2.try_acquire(1).is_admitted()
            });
            let here = w.try_acquire(1).is_admitted();
            assert!(t.join().unwrap(), "the new window has room");
            // Either this thread ran in the old, full window (refused) or in the new one.
            assert_eq!(w.count(), if here { 2 } else { 1 });
        });
    }
}
