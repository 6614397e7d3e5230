//! Window arithmetic shared by the window limiters.

use crate::nanos::Nanos;
use strength_reduce::StrengthReducedU64;

/// Splits clock readings into a window index and the offset into that window.
///
/// The width is fixed when a limiter is built, so the division is done by a
/// precomputed multiply-and-shift (`strength_reduce`) instead of a hardware divide: a
/// divide costs 20-90 cycles, and in a lock-free limiter it sits on the path to the
/// compare-and-swap, whose value depends on it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Windows {
    width: StrengthReducedU64,
}

impl Windows {
    /// Windows of `width` ns (non-zero, as every `Limit` guarantees).
    pub(crate) fn new(width: Nanos) -> Self {
        Self {
            width: StrengthReducedU64::new(width),
        }
    }

    /// The index of the window `now` falls in.
    #[inline]
    pub(crate) fn index(self, now: Nanos) -> u64 {
        now / self.width
    }

    /// The index of the window `now` falls in, and how far into it `now` is.
    #[inline]
    pub(crate) fn split(self, now: Nanos) -> (u64, Nanos) {
        StrengthReducedU64::div_rem(now, self.width)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn split_agrees_with_division_at_the_edges() {
        for width in [1, 3, 1_000, 999_999_937, 3_600_000_000_000, u64::MAX / 3] {
            let w = Windows::new(width);
            for now in [0, 1, width - 1, width, width + 1, u64::MAX - 1, u64::MAX] {
                assert_eq!(w.split(now), (now / width, now % width), "{now} / {width}");
                assert_eq!(w.index(now), now / width);
            }
        }
    }
}
