//! The cycle input: one atomic cursor handing out strides, and a hand-back list for
//! the unrun rest of a stride whose worker left early.
//!
//! # Ground rules
//!
//! - `next` is the first cycle not yet handed out. Takers `fetch_add` a stride
//!   (Relaxed: the cycle numbers are the only data, and each taker owns the range
//!   its own RMW returned; RMWs on one word are totally ordered, so no two takers
//!   get overlapping ranges). `next` may run past `end`; takers clamp.
//! - `returned` holds ranges given back by workers that left mid-stride. It sits
//!   behind a mutex; `has_returned` is a hint read before taking the lock so the
//!   common path never locks. A giver sets the hint (Release) after pushing under
//!   the lock; a taker that sees it (Acquire) takes the lock and re-checks. A taker
//!   that misses a just-set hint is not a loss: the range stays in the list, and
//!   [`CycleInput::take`] checks the list again before reporting the input dry, so
//!   no returned cycle is ever dropped.

use crate::sync::{self, AtomicBool, AtomicU64, Mutex, Ordering};
use std::ops::Range;

/// Hands out cycles in strides, each cycle exactly once.
#[derive(Debug)]
pub(crate) struct CycleInput {
    next: AtomicU64,
    end: u64,
    has_returned: AtomicBool,
    returned: Mutex<Vec<Range<u64>>>,
}

impl CycleInput {
    /// The cycles `range`. `range.end` must leave room for the cursor to overshoot
    /// by a stride per taker (the engine caps `end` at 2^62).
    pub(crate) fn new(range: Range<u64>) -> Self {
        Self {
            next: AtomicU64::new(range.start),
            end: range.end.max(range.start),
            has_returned: AtomicBool::new(false),
            returned: Mutex::new(Vec::new()),
        }
    }

    /// The next stride of at most `stride` cycles (fewer only for the last one, or
    /// for a returned range), or `None` when every cycle has been handed out.
    #[inline]
    pub(crate) fn take(&self, stride: u64) -> Option<Range<u64>> {
        if self.has_returned.load(Ordering::Acquire) {
            if let Some(r) = self.take_returned(stride) {
                return Some(r);
            }
        }
        let start = self.next.fetch_add(stride, Ordering::Relaxed);
        if start < self.end {
            return Some(start..start.saturating_add(stride).min(self.end));
        }
        // Dry: a range may have been returned after the hint check above.
        self.take_returned(stride)
    }

    fn take_returned(&self, stride: u64) -> Option<Range<u64>> {
        let mut list = sync::lock(&self.returned);
        let r = list.pop()?;
        let out = if r.end - r.start > stride {
            let cut = r.start + stride;
            list.push(cut..r.end);
            r.start..cut
        } else {
            r
        };
        if list.is_empty() {
            self.has_returned.store(false, Ordering::Relaxed);
        }
        Some(out)
    }

    /// Gives back cycles a worker took but will not run; the next taker runs them.
    pub(crate) fn give_back(&self, range: Range<u64>) {
        if range.is_empty() {
            return;
        }
        let mut list = sync::lock(&self.returned);
        list.push(range);
        self.has_returned.store(true, Ordering::Release);
    }

    /// Whether every cycle has been handed out and none is waiting to be retaken.
    pub(crate) fn is_dry(&self) -> bool {
        self.next.load(Ordering::Relaxed) >= self.end && sync::lock(&self.returned).is_empty()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn strides_cover_the_range_once_with_a_partial_last() {
        let input = CycleInput::new(10..33);
        let mut got = Vec::new();
        while let Some(r) = input.take(5) {
            got.push(r);
        }
        assert_eq!(got, [10..15, 15..20, 20..25, 25..30, 30..33]);
        assert!(input.is_dry());
        assert_eq!(input.take(5), None);
    }

    #[test]
    fn returned_ranges_are_retaken_in_strides_before_new_cycles() {
        let input = CycleInput::new(0..100);
        assert_eq!(input.take(10), Some(0..10));
        input.give_back(3..10);
        assert!(!input.is_dry());
        assert_eq!(input.take(4), Some(3..7));
        assert_eq!(input.take(4), Some(7..10));
        assert_eq!(input.take(4), Some(10..14));
    }

    #[test]
    fn a_range_returned_after_the_input_ran_dry_is_still_taken() {
        let input = CycleInput::new(0..4);
        assert_eq!(input.take(4), Some(0..4));
        assert_eq!(input.take(4), None);
        input.give_back(2..4);
        assert_eq!(input.take(4), Some(2..4));
        assert_eq!(input.take(4), None);
        assert!(input.is_dry());
    }

    #[test]
    fn empty_range_is_dry_at_once() {
        let input = CycleInput::new(5..5);
        assert_eq!(input.take(1), None);
        input.give_back(7..7);
        assert!(input.is_dry());
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// Two takers race while one of them gives back the rest of its stride: every
    /// cycle is taken exactly once.
    #[test]
    fn input_hands_out_each_cycle_once_with_give_back() {
        loom::model(|| {
            let input = Arc::new(CycleInput::new(0..6));
            let other = {
                let input = input.clone();
                loom::thread::spawn(move || {
                    let mut got = Vec::new();
                    while let Some(r) = input.take(2) {
                        got.extend(r);
                    }
                    got
                })
            };
            let mut mine = Vec::new();
            if let Some(r) = input.take(2) {
                // Run the first cycle, give the rest back, as a retiring worker does.
                mine.push(r.start);
                input.give_back(r.start + 1..r.end);
            }
            while let Some(r) = input.take(2) {
                mine.extend(r);
            }
            let mut all = other.join().unwrap();
            all.extend(mine);
            all.sort_unstable();
            // A range given back after the other taker saw the input dry is taken by
            // this thread's own loop, so nothing is lost.
            assert_eq!(all, (0..6).collect::<Vec<_>>());
        });
    }
}
