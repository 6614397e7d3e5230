//! The burst-allowance anchor, tagged with the allowance it belongs to.
//!
//! Under burst allowance (s > 1) the earliest start of slot `σ` is `anchor + σ / s`:
//! the anchor means something only together with the ratio `s` it was computed for. A
//! late op of an old epoch that moves the anchor after a change of ratio installed a
//! new one would plant a value computed for the old ratio under the new one (an hour
//! into a run, going from s = 2 to s = 1.1, that put the earliest start about 24
//! minutes ahead). So the anchor word carries the tag of its allowance, and every
//! access names the tag it expects:
//!
//! ```text
//!  63  60 59                                                          0
//! +------+-------------------------------------------------------------+
//! |tag(4)|          value + 2^59 (60 bits, ns, signed, saturated)      |
//! +------+-------------------------------------------------------------+
//! ```
//!
//! - **tag**: the allowance generation ([`ModeBits::tag`](super::epoch::ModeBits)),
//!   bumped under the control lock whenever the anchor's meaning changes (a change of
//!   kind or ratio, a restart). Each epoch carries the tag of its allowance.
//! - **value**: the anchor in ns since the limiter's origin, biased so that it orders
//!   as unsigned; saturated at ±2^59 ns (about 18 years either way, beyond any start a
//!   year-long run can see).
//!
//! A read for another tag finds no anchor (the op has no burst floor: it belongs to
//! an allowance that just ended, and only ops in flight across the change see that,
//! at most one per thread). A raise or spend for another tag does nothing. The tag
//! wraps after 16 generations: a thread preempted across exactly a multiple of 16
//! changes of ratio (or restarts) between reading its epoch and moving the anchor
//! would move the current one; nothing else can.
//!
//! # Ground rules
//!
//! The anchor is a hint that publishes no memory: Relaxed everywhere. `install` is
//! called under the control lock *before* the epoch of the new allowance is installed
//! in the hot word, so a taker of that epoch (whose Acquire RMW on the word
//! synchronises with the install) sees the new anchor or a later raise of it.

use crate::sync::{AtomicU64, Ordering};

const TAG_SHIFT: u32 = 60;
/// The tags there are: a generation is kept modulo this.
const TAGS: u8 = 1 << (64 - TAG_SHIFT);
const VALUE_MASK: u64 = (1 << TAG_SHIFT) - 1;
const VALUE_BIAS: i64 = 1 << 59;
/// The largest value a word holds; values beyond saturate.
const VALUE_MAX: i64 = VALUE_BIAS - 1;

/// The tag of the allowance after the one tagged `tag`.
pub(super) fn next_tag(tag: u8) -> u8 {
    (tag + 1) % TAGS
}

#[inline]
fn pack(tag: u8, value: i64) -> u64 {
    debug_assert!(tag < TAGS);
    let v = value.clamp(-VALUE_BIAS, VALUE_MAX) + VALUE_BIAS;
    (u64::from(tag) << TAG_SHIFT) | v as u64
}

#[inline]
fn unpack(w: u64) -> (u8, i64) {
    ((w >> TAG_SHIFT) as u8, (w & VALUE_MASK) as i64 - VALUE_BIAS)
}

/// The anchor word.
#[derive(Debug)]
pub(super) struct Anchor(AtomicU64);

impl Anchor {
    pub(super) fn new() -> Self {
        Self(AtomicU64::new(pack(0, 0)))
    }

    /// The anchor of allowance `tag`, or `None` if another allowance holds the word.
    #[inline]
    pub(super) fn get(&self, tag: u8) -> Option<i64> {
        let (t, v) = unpack(self.0.load(Ordering::Relaxed));
        (t == tag).then_some(v)
    }

    /// Installs `value` for allowance `tag` (control lock held).
    pub(super) fn install(&self, tag: u8, value: i64) {
        self.0.store(pack(tag, value), Ordering::Relaxed);
    }

    /// Moves the anchor of allowance `tag` forward to `value` if it is behind it.
    #[inline]
    pub(super) fn raise(&self, tag: u8, value: i64) {
        self.update(tag, |v| (value > v).then_some(value));
    }

    /// Moves the anchor of allowance `tag` forward by `by` ns.
    #[inline]
    pub(super) fn spend(&self, tag: u8, by: u64) {
        let by = i64::try_from(by).unwrap_or(i64::MAX);
        self.update(tag, |v| Some(v.saturating_add(by)));
    }

    fn update(&self, tag: u8, f: impl Fn(i64) -> Option<i64>) {
        let mut w = self.0.load(Ordering::Relaxed);
        loop {
            let (t, v) = unpack(w);
            if t != tag {
                return;
            }
            let Some(next) = f(v) else { return };
            let next = pack(tag, next);
            if next == w {
                return;
            }
            match self
                .0
                .compare_exchange_weak(w, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(cur) => w = cur,
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn pack_unpack_round_trips_and_saturates() {
        for (tag, v) in [
            (0, 0),
            (15, -1),
            (7, VALUE_MAX),
            (9, -VALUE_BIAS),
            (1, 12_345),
        ] {
            assert_eq!(unpack(pack(tag, v)), (tag, v));
        }
        assert_eq!(unpack(pack(3, i64::MAX)), (3, VALUE_MAX));
        assert_eq!(unpack(pack(3, i64::MIN)), (3, -VALUE_BIAS));
        assert_eq!(pack(15, VALUE_MAX), u64::MAX);
        assert_eq!(next_tag(15), 0);
    }

    #[test]
    fn an_access_for_another_allowance_finds_nothing_and_moves_nothing() {
        let a = Anchor::new();
        a.install(2, -500);
        assert_eq!(a.get(2), Some(-500));
        assert_eq!(a.get(1), None);
        a.raise(1, 1_000_000);
        a.spend(1, 1_000_000);
        assert_eq!(a.get(2), Some(-500), "a late op of the old allowance");
        a.raise(2, -600);
        assert_eq!(a.get(2), Some(-500), "never backwards");
        a.raise(2, 100);
        a.spend(2, 50);
        assert_eq!(a.get(2), Some(150));
    }
}
