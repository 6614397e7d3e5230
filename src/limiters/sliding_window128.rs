//! The approximated sliding window in a 128-bit word: 64-bit window index and two
//! 32-bit counts, through `portable_atomic::AtomicU128` (seed 000's wider variant).
//!
//! Ground rules: `state` is the whole state. Writers replace it by a compare-and-swap
//! from the value they read; refusals only load it. Nothing else is published through
//! it, so every access is `Relaxed`: the word's modification order makes each admission
//! count on top of the previous one, and a failed CAS returns the newer value to retry
//! from. Where the CPU has no 128-bit CAS, portable-atomic falls back to a lock; see
//! [`atomic_u128_is_native`]. Under loom the word is a documented stand-in (a loom mutex
//! around a `u128`, in `crate::sync`), which checks the CAS loop's logic.

use super::cas::{apply, decide};
use super::sliding_window::{Step, View};
use super::windows::Windows;
use super::{Decision, Limit, LimitError, Limiter};
use crate::clock::{Clock, MonotonicClock};
use crate::nanos::Nanos;
use crate::sync::{AtomicU128, Ordering};
use std::fmt;

/// Bits of each count field.
const COUNT_BITS: u32 = 32;
/// Mask of one count field, once shifted down; also the count a field saturates at.
const COUNT_MASK: u128 = (1 << COUNT_BITS) - 1;
/// Where the current count starts (bits 0..32).
const CURR_SHIFT: u32 = 0;
/// Where the previous count starts (bits 32..64).
const PREV_SHIFT: u32 = COUNT_BITS;
/// Where the window index starts (bits 64..128, the full index).
const WINDOW_SHIFT: u32 = 2 * COUNT_BITS;

#[inline]
const fn pack(window: u64, prev: u64, curr: u64) -> u128 {
    ((window as u128) << WINDOW_SHIFT)
        | (((prev as u128) & COUNT_MASK) << PREV_SHIFT)
        | (((curr as u128) & COUNT_MASK) << CURR_SHIFT)
}

#[inline]
const fn unpack(word: u128) -> (u64, u64, u64) {
    (
        (word >> WINDOW_SHIFT) as u64,
        ((word >> PREV_SHIFT) & COUNT_MASK) as u64,
        ((word >> CURR_SHIFT) & COUNT_MASK) as u64,
    )
}

/// Whether this machine updates a 128-bit atomic word natively (x86-64 `CMPXCHG16B`,
/// AArch64 `LDXP`/`STXP` or `CASP`), so that [`PackedSlidingWindow128`] is lock-free.
/// Where it is `false`, portable-atomic guards the word with a lock.
///
/// ```
/// // On x86-64 since about 2008, and on AArch64, this is true.
/// let native: bool = paceline::atomic_u128_is_native();
/// # let _ = native;
/// ```
pub fn atomic_u128_is_native() -> bool {
    AtomicU128::is_lock_free()
}

/// The approximated sliding window of seed 000 in a 128-bit word: a full 64-bit window
/// index and two 32-bit counts, updated together by one compare-and-swap.
///
/// The same estimate as [`SlidingWindowCounter`](crate::SlidingWindowCounter) and
/// [`PackedSlidingWindow`](crate::PackedSlidingWindow), without the 64-bit word's
/// limits: counts up to 4 294 967 295 per window, and a window index that never wraps.
///
/// **Bound**: at most `permits` per aligned window and up to `2 × permits` in a window
/// of width `W`.
///
/// **Trade-offs**: a 128-bit CAS costs more than a 64-bit one on most CPUs, and is
/// only lock-free where [`atomic_u128_is_native`] says so. [`record`](Self::record)
/// saturates at `u32::MAX`. A clock stepping back counts against the newest window
/// seen, its previous window weighing fully.
///
/// Word layout:
///
/// ```text
///  127                          64 63                32 31                 0
/// +-------------------------------+--------------------+-------------------+
/// | window index                  | previous count     | current count     |
/// +-------------------------------+--------------------+-------------------+
/// ```
///
/// ```
/// use paceline::{Limit, Limiter, ManualClock, PackedSlidingWindow128};
/// let clock = ManualClock::new();
/// let w = PackedSlidingWindow128::with_clock(Limit::per_second(100_000)?, clock.clone())?;
/// assert!(w.try_acquire(100_000).is_admitted()); // past the 64-bit word's 65 535
/// assert!(!w.try_acquire(1).is_admitted());
/// # Ok::<(), paceline::LimitError>(())
/// ```
pub struct PackedSlidingWindow128<C: Clock = MonotonicClock> {
    limit: Limit,
    windows: Windows,
    /// The packed state: `window` (bits 64..128, [`WINDOW_SHIFT`]), `prev` (bits
    /// 32..64, [`PREV_SHIFT`]) and `curr` (bits 0..32, [`CURR_SHIFT`]); layout in the
    /// type's docs.
    state: AtomicU128,
    clock: C,
}

impl PackedSlidingWindow128 {
    /// A counter on the real clock. Cannot fail today (any `u32` permits fits a count
    /// field); the `Result` keeps the packed types' constructors alike.
    ///
    /// ```
    /// use paceline::{Limit, PackedSlidingWindow128};
    /// assert!(PackedSlidingWindow128::new(Limit::per_second(u32::MAX)?).is_ok());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn new(limit: Limit) -> Result<Self, LimitError> {
        Self::with_clock(limit, MonotonicClock::new())
    }
}

impl<C: Clock> PackedSlidingWindow128<C> {
    /// A counter on `clock`.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, PackedSlidingWindow128};
    /// let w = PackedSlidingWindow128::with_clock(Limit::per_second(5)?, ManualClock::new())?;
    /// assert_eq!(w.estimate(), 0.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn with_clock(limit: Limit, clock: C) -> Result<Self, LimitError> {
        let limit = limit.check_permits("permits in PackedSlidingWindow128", COUNT_MASK as u64)?;
        let windows = Windows::new(limit.window_nanos());
        Ok(Self {
            limit,
            windows,
            state: AtomicU128::new(pack(windows.index(clock.now()), 0, 0)),
            clock,
        })
    }

    /// The estimate now: `prev × (1 - f) + curr`.
    ///
    /// ```
    /// use paceline::{Limit, Limiter, ManualClock, PackedSlidingWindow128};
    /// let w = PackedSlidingWindow128::with_clock(Limit::per_second(5)?, ManualClock::new())?;
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
    /// saturates at `u32::MAX` instead of wrapping.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, PackedSlidingWindow128};
    /// let w = PackedSlidingWindow128::with_clock(Limit::per_second(5)?, ManualClock::new())?;
    /// w.record(70_000);
    /// assert_eq!(w.estimate(), 70_000.0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn record(&self, n: u64) {
        let at = self.windows.split(self.clock.now());
        apply(&self.state, |word| {
            let v = self.view(word, at);
            let curr = v.curr.saturating_add(n).min(COUNT_MASK as u64);
            pack(v.window, v.prev, curr)
        });
    }

    /// The limit it was built with.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, PackedSlidingWindow128};
    /// let limit = Limit::per_second(5)?;
    /// assert_eq!(PackedSlidingWindow128::with_clock(limit, ManualClock::new())?.limit(), limit);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn limit(&self) -> Limit {
        self.limit
    }

    #[inline]
    fn view(&self, word: u128, (now, offset): (u64, Nanos)) -> View {
        let (stored, prev, curr) = unpack(word);
        View::rotate(Step::full(stored, now), now, offset, prev, curr)
    }
}

impl<C: Clock> Limiter for PackedSlidingWindow128<C> {
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
            Ok(pack(v.window, v.prev, v.curr + n))
        })
    }
}

impl<C: Clock> fmt::Debug for PackedSlidingWindow128<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PackedSlidingWindow128")
            .field("limit", &self.limit)
            .field("estimate", &self.estimate())
            .field("native", &atomic_u128_is_native())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn pack_unpack_round_trips_and_fields_do_not_bleed() {
        let m = COUNT_MASK as u64;
        for (w, p, c) in [(0, 0, 0), (u64::MAX, 0, 0), (0, m, 0), (0, 0, m), (9, 8, 7)] {
            assert_eq!(unpack(pack(w, p, c)), (w, p, c));
        }
        assert_eq!(pack(u64::MAX, 0, 0), u128::from(u64::MAX) << 64);
        assert_eq!(pack(0, m, 0), u128::from(m) << 32);
        assert_eq!(pack(0, 0, m), u128::from(m));
    }

    #[test]
    fn record_saturates_at_u32_max() {
        let w =
            PackedSlidingWindow128::with_clock(Limit::per_second(10).unwrap(), ManualClock::new())
                .unwrap();
        w.record(u64::from(u32::MAX) - 1);
        w.record(5);
        assert_eq!(w.estimate(), f64::from(u32::MAX));
    }

    #[test]
    fn this_machine_reports_its_128_bit_support() {
        // x86-64 CPUs since ~2008 have CMPXCHG16B and AArch64 has LDXP/STXP; elsewhere
        // the answer may be false, which is still a valid report.
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            assert!(atomic_u128_is_native());
        }
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
            let w =
                Arc::new(PackedSlidingWindow128::with_clock(limit, ManualClock::new()).unwrap());
            let w2 = w.clone();
            let t = loom::thread::spawn(move || w2.try_acquire(1).is_admitted());
            let here = w.try_acquire(1).is_admitted();
            assert!(here ^ t.join().unwrap());
        });
    }
}
