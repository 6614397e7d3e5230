//! The approximated sliding window bit-packed in one `u64`: 32-bit window index,
//! 16-bit previous count, 16-bit current count, updated by a CAS loop (seed 000).
//!
//! Ground rules: `state` is the whole state. Writers replace it by a compare-and-swap
//! from the value they read; refusals only load it. Nothing else is published through
//! it, so every access is `Relaxed`: the word's modification order makes each admission
//! count on top of the previous one (no lost update), and a failed CAS returns the
//! newer value to retry from. A refusal decided on a stale value is safe: a newer value
//! for the same window only holds larger counts.

use super::cas::{apply, decide};
use super::sliding_window::{Step, View};
use super::windows::Windows;
use super::{Decision, Limit, LimitError, Limiter};
use crate::clock::{Clock, MonotonicClock};
use crate::nanos::Nanos;
use crate::sync::{AtomicU64, Ordering};
use std::fmt;

/// Bits of each count field.
const COUNT_BITS: u32 = 16;
/// Mask of one count field, once shifted down; also the count a field saturates at.
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// Where the current count starts (bits 0..16).
const CURR_SHIFT: u32 = 0;
/// Where the previous count starts (bits 16..32).
const PREV_SHIFT: u32 = COUNT_BITS;
/// Where the window index starts (bits 32..64, the index modulo 2^32).
const WINDOW_SHIFT: u32 = 2 * COUNT_BITS;
/// How many windows back a reading may step and still count against the stored
/// window, rather than being taken for a wrap after a long idle spell.
const BACKWARD_WINDOWS: u32 = 1 << 16;

#[inline]
const fn pack(window: u32, prev: u64, curr: u64) -> u64 {
    ((window as u64) << WINDOW_SHIFT)
        | ((prev & COUNT_MASK) << PREV_SHIFT)
        | ((curr & COUNT_MASK) << CURR_SHIFT)
}

#[inline]
const fn unpack(word: u64) -> (u32, u64, u64) {
    (
        (word >> WINDOW_SHIFT) as u32,
        (word >> PREV_SHIFT) & COUNT_MASK,
        (word >> CURR_SHIFT) & COUNT_MASK,
    )
}

/// The approximated sliding window of seed 000, lock-free in one 64-bit word: the
/// same estimate as [`SlidingWindowCounter`](crate::SlidingWindowCounter),
/// `prev × (1 - f) + curr + n ≤ permits`, with the window index and both counts
/// updated together by one compare-and-swap.
///
/// **Bound**: as its mutex twin, at most `permits` per aligned window and up to
/// `2 × permits` in a window of width `W`. `permits` is at most 65 535 (16-bit
/// counts); [`PackedSlidingWindow128`](crate::PackedSlidingWindow128) holds 32-bit
/// counts.
///
/// **Trade-offs**: one word, so no lock and a refusal is one load; contention backs
/// off exponentially rather than retrying hot. [`record`](Self::record), seed 000's
/// plain counter, saturates at 65 535 instead of wrapping (a wrapped count would read
/// as a nearly empty window and release a burst). The window index is kept modulo 2^32:
/// after an idle spell of an exact multiple of 2^32 windows the stale counts may be read
/// again for a window, which only refuses more; a clock stepping back (up to 2^16
/// windows) counts against the newest window seen, its previous window weighing fully.
///
/// Word layout:
///
/// ```text
///  63                           32 31            16 15             0
/// +-------------------------------+----------------+----------------+
/// | window index mod 2^32         | previous count | current count  |
/// +-------------------------------+----------------+----------------+
/// ```
///
/// ```
/// use paceline::{Limit, Limiter, ManualClock, PackedSlidingWindow};
/// use std::time::Duration;
/// let clock = ManualClock::new();
/// let w = PackedSlidingWindow::with_clock(Limit::per_second(10)?, clock.clone())?;
/// assert!(w.try_acquire(10).is_admitted());
/// clock.advance(Duration::from_millis(1_500));
/// assert_eq!(w.estimate(), 5.0);
/// assert!(w.try_acquire(5).is_admitted());
/// assert!(!w.try_acquire(1).is_admitted());
/// # Ok::<(), paceline::LimitError>(())
/// ```
pub struct PackedSlidingWindow<C: Clock = MonotonicClock> {
    limit: Limit,
    windows: Windows,
    /// The packed state: `window` (bits 32..64, [`WINDOW_SHIFT`]), `prev` (bits 16..32,
    /// [`PREV_SHIFT`]) and `curr` (bits 0..16, [`CURR_SHIFT`]); layout in the type's docs.
    state: AtomicU64,
    clock: C,
}

impl PackedSlidingWindow {
    /// A counter on the real clock; fails if `permits` exceeds 65 535.
    ///
    /// ```
    /// use paceline::{Limit, PackedSlidingWindow};
    /// assert!(PackedSlidingWindow::new(Limit::per_second(65_535)?).is_ok());
    /// assert!(PackedSlidingWindow::new(Limit::per_second(65_536)?).is_err());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn new(limit: Limit) -> Result<Self, LimitError> {
        Self::with_clock(limit, MonotonicClock::new())
    }
}

impl<C: Clock> PackedSlidingWindow<C> {
    /// A counter on `clock`; fails if `permits` exceeds 65 535.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, PackedSlidingWindow};
    /// let w = PackedSlidingWindow::with_clock(Limit::per_second(5)?, ManualClock::new())?;
    /// assert_eq!(w.estimate(), 0.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn with_clock(limit: Limit, clock: C) -> Result<Self, LimitError> {
        let limit = limit.check_permits(
            "permits in PackedSlidingWindow (use PackedSlidingWindow128)",
            COUNT_MASK,
        )?;
        let windows = Windows::new(limit.window_nanos());
        Ok(Self {
            limit,
            windows,
            state: AtomicU64::new(pack(windows.index(clock.now()) as u32, 0, 0)),
            clock,
        })
    }

    /// The estimate now: `prev × (1 - f) + curr`.
    ///
    /// ```
    /// use paceline::{Limit, Limiter, ManualClock, PackedSlidingWindow};
    /// let w = PackedSlidingWindow::with_clock(Limit::per_second(5)?, ManualClock::new())?;
    /// let _ = w.try_acquire(3);
    /// assert_eq!(w.estimate(), 3.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn estimate(&self) -> f64 {
        let width = self.limit.window_nanos();
        let at = self.windows.split(self.clock.now());
        self.view(self.state.load(Ordering::Relaxed), at)
            .estimate(width)
    }

    /// Counts `n` requests without asking (seed 000's counter); the current count
    /// saturates at 65 535 instead of wrapping.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, PackedSlidingWindow};
    /// let w = PackedSlidingWindow::with_clock(Limit::per_second(5)?, ManualClock::new())?;
    /// w.record(70_000);
    /// assert_eq!(w.estimate(), 65_535.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn record(&self, n: u64) {
        let at = self.windows.split(self.clock.now());
        apply(&self.state, |word| {
            let v = self.view(word, at);
            let curr = v.curr.saturating_add(n).min(COUNT_MASK);
            pack(v.window as u32, v.prev, curr)
        });
    }

    /// The limit it was built with.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, PackedSlidingWindow};
    /// let limit = Limit::per_second(5)?;
    /// assert_eq!(PackedSlidingWindow::with_clock(limit, ManualClock::new())?.limit(), limit);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn limit(&self) -> Limit {
        self.limit
    }

    #[inline]
    fn view(&self, word: u64, (now, offset): (u64, Nanos)) -> View {
        let (stored, prev, curr) = unpack(word);
        let step = Step::wrapped32(stored, now, BACKWARD_WINDOWS);
        View::rotate(step, now, offset, prev, curr)
    }
}

impl<C: Clock> Limiter for PackedSlidingWindow<C> {
    fn try_acquire(&self, n: u32) -> Decision {
        if n == 0 {
            return Decision::Admitted;
        }
        let n = u64::from(n);
        let width = self.limit.window_nanos();
        let permits = u64::from(self.limit.permits());
        let at = self.windows.split(self.clock.now());
        decide(&self.state, |word| {
            let v = self.view(word, at);
            v.decide(n, permits, width).map_err(Decision::refused)?;
            // decide() admitted, so curr + n <= permits <= 65 535: no saturation here.
            Ok(pack(v.window as u32, v.prev, v.curr + n))
        })
    }
}

impl<C: Clock> fmt::Debug for PackedSlidingWindow<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PackedSlidingWindow")
            .field("limit", &self.limit)
            .field("estimate", &self.estimate())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn pack_unpack_round_trips_and_fields_do_not_bleed() {
        for (w, p, c) in [
            (0, 0, 0),
            (u32::MAX, 0, 0),
            (0, COUNT_MASK, 0),
            (0, 0, COUNT_MASK),
            (9, 8, 7),
        ] {
            assert_eq!(unpack(pack(w, p, c)), (w, p, c));
        }
        assert_eq!(pack(u32::MAX, 0, 0), 0xFFFF_FFFF_0000_0000);
        assert_eq!(pack(0, COUNT_MASK, 0), 0x0000_0000_FFFF_0000);
        assert_eq!(pack(0, 0, COUNT_MASK), 0x0000_0000_0000_FFFF);
    }

    #[test]
    fn record_saturates_and_rotates() {
        let clock = ManualClock::new();
        let w =
            PackedSlidingWindow::with_clock(Limit::per_second(10).unwrap(), clock.clone()).unwrap();
        w.record(60_000);
        w.record(60_000);
        assert_eq!(w.estimate(), 65_535.0, "saturated, not wrapped to 54 464");
        clock.advance_nanos(1_000_000_000);
        w.record(1);
        assert_eq!(
            w.estimate(),
            65_536.0,
            "the saturated count is now the previous one"
        );
        assert!(!w.try_acquire(1).is_admitted());
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
            let limit = Limit::per_second(1).unwrap();
            let w = Arc::new(PackedSlidingWindow::with_clock(limit, ManualClock::new()).unwrap());
            let w2 = w.clone();
            let t = loom::thread::spawn(move || w2.try_acquire(1).is_admitted());
            let here = w.try_acquire(1).is_admitted();
            assert!(here ^ t.join().unwrap());
        });
    }

    #[test]
    fn a_record_and_an_admission_both_count() {
        loom::model(|| {
            let limit = Limit::per_second(5).unwrap();
            let w = Arc::new(PackedSlidingWindow::with_clock(limit, ManualClock::new()).unwrap());
            let w2 = w.clone();
            let t = loom::thread::spawn(move || w2.record(2));
            assert!(w.try_acquire(3).is_admitted());
            t.join().unwrap();
            assert_eq!(w.estimate(), 5.0);
        });
    }
}
