//! The cycles this process holds: chunks claimed from the store, handed to workers
//! in strides, and how far each chunk has run without a gap (its watermark, which
//! the heartbeat writes into the claim so a take-over re-runs only the rest).

use std::collections::BTreeMap;
use std::ops::Range;

/// One claimed chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Chunk {
    /// The claim's key in the store (the chunk's first cycle when first claimed).
    key: u64,
    /// The next cycle to hand out.
    next: u64,
    end: u64,
    /// Every cycle before this has run.
    upto: u64,
    /// Finished ranges past `upto`, start → end.
    done: BTreeMap<u64, u64>,
}

/// The chunks, the strides given back, and whether the store has no more cycles.
#[derive(Debug, Default)]
pub(super) struct Chunks {
    list: Vec<Chunk>,
    returned: Vec<Range<u64>>,
}

impl Chunks {
    /// A claim on `from..end` (key `key`) arrived. A key already held is not
    /// added again (two overlapping chunks under one key would run its cycles
    /// twice): CLAIM never hands the caller a key it says it holds
    /// (`twice_tests::a_claim_the_caller_holds_is_never_handed_back_to_it`), and
    /// this keeps it so here too.
    pub(super) fn add(&mut self, key: u64, from: u64, end: u64) {
        if from < end && !self.list.iter().any(|c| c.key == key) {
            self.list.push(Chunk {
                key,
                next: from,
                end,
                upto: from,
                done: BTreeMap::new(),
            });
        }
    }

    /// The next stride of at most `stride` cycles held here: given-back ones first,
    /// then the oldest chunk with cycles left.
    pub(super) fn take(&mut self, stride: u64) -> Option<Range<u64>> {
        if let Some(r) = self.returned.pop() {
            if r.end - r.start > stride {
                self.returned.push(r.start + stride..r.end);
                return Some(r.start..r.start + stride);
            }
            return Some(r);
        }
        let c = self.list.iter_mut().find(|c| c.next < c.end)?;
        let start = c.next;
        c.next = (start + stride).min(c.end);
        Some(start..c.next)
    }

    /// A worker will not run `r` (it took it and is leaving): the next taker will.
    pub(super) fn give_back(&mut self, r: Range<u64>) {
        if !r.is_empty() {
            self.returned.push(r);
        }
    }

    /// Every cycle of `r` has run.
    pub(super) fn finished(&mut self, r: Range<u64>) {
        if r.is_empty() {
            return;
        }
        let Some(c) = self
            .list
            .iter_mut()
            .find(|c| c.upto <= r.start && r.end <= c.end)
        else {
            return;
        };
        c.done.insert(r.start, r.end);
        while let Some(e) = c.done.remove(&c.upto) {
            c.upto = e;
        }
    }

    /// Each chunk's claim key and watermark, for the heartbeat.
    pub(super) fn progress(&self) -> Vec<(u64, u64)> {
        self.list.iter().map(|c| (c.key, c.upto)).collect()
    }

    /// Each chunk's cycles not run: `upto..end` less the finished ranges past the
    /// watermark, as (claim key, the unrun ranges). A process that leaves cleanly
    /// releases these pieces, not `upto..end`: another worker of it may have run
    /// strides past a gap (a stride cut short by the stop), and the next taker
    /// must not run them again.
    pub(super) fn unrun(&self) -> Vec<(u64, Vec<Range<u64>>)> {
        self.list
            .iter()
            .map(|c| {
                let mut pieces = Vec::new();
                let mut at = c.upto;
                for (&start, &end) in &c.done {
                    if start > at {
                        pieces.push(at..start);
                    }
                    at = at.max(end);
                }
                if at < c.end {
                    pieces.push(at..c.end);
                }
                (c.key, pieces)
            })
            .collect()
    }

    /// The heartbeat wrote `reported`: chunks it reported complete are gone from the
    /// store, and from here.
    pub(super) fn reported(&mut self, reported: &[(u64, u64)]) {
        self.list
            .retain(|c| !(c.upto == c.end && reported.contains(&(c.key, c.end))));
    }

    /// The claims with these keys are no longer this process's (others took them
    /// over while it was frozen): their cycles not handed out yet, given-back
    /// strides included, are left to the new owners. Returns how many cycles were
    /// left.
    pub(super) fn drop_keys(&mut self, keys: &[u64]) -> u64 {
        let mut left = 0;
        let (gone, kept): (Vec<Chunk>, Vec<Chunk>) = std::mem::take(&mut self.list)
            .into_iter()
            .partition(|c| keys.contains(&c.key));
        self.list = kept;
        for c in &gone {
            left += c.end - c.next;
            self.returned.retain(|r| {
                let inside = c.key <= r.start && r.end <= c.end;
                if inside {
                    left += r.end - r.start;
                }
                !inside
            });
        }
        left
    }

    /// Whether nothing is left to hand out here.
    pub(super) fn exhausted(&self) -> bool {
        self.returned.is_empty() && self.list.iter().all(|c| c.next >= c.end)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn strides_come_from_chunks_in_order_and_given_back_ones_first() {
        let mut c = Chunks::default();
        assert_eq!(c.take(4), None);
        c.add(0, 0, 10);
        c.add(50, 50, 53);
        assert_eq!(c.take(4), Some(0..4));
        assert_eq!(c.take(4), Some(4..8));
        c.give_back(5..8);
        assert_eq!(c.take(2), Some(5..7));
        assert_eq!(c.take(2), Some(7..8));
        assert_eq!(c.take(4), Some(8..10));
        assert_eq!(c.take(4), Some(50..53));
        assert!(c.exhausted());
        assert_eq!(c.take(4), None);
    }

    #[test]
    fn the_watermark_moves_over_contiguous_finished_ranges_only() {
        let mut c = Chunks::default();
        c.add(0, 0, 10);
        c.finished(4..6);
        assert_eq!(c.progress(), [(0, 0)]);
        c.finished(0..4);
        assert_eq!(c.progress(), [(0, 6)]);
        c.finished(6..10);
        assert_eq!(c.progress(), [(0, 10)]);
        // Reported complete: gone.
        c.reported(&[(0, 10)]);
        assert!(c.progress().is_empty());
    }

    /// A clean leave released each claim from its watermark, so strides other
    /// workers finished past a stride cut short by the stop ran twice (seen as 1
    /// and 8 cycles run twice in `claims_released_by_a_clean_leave_are_not_counted_rerun`
    /// on a busy machine). Only the unrun pieces are released now.
    #[test]
    // A list of ranges per claim that happens to hold one here.
    #[allow(clippy::single_range_in_vec_init)]
    fn a_leave_releases_only_the_cycles_not_run() {
        let mut c = Chunks::default();
        c.add(0, 0, 20);
        c.add(20, 20, 30);
        assert_eq!(c.take(4), Some(0..4));
        assert_eq!(c.take(4), Some(4..8));
        assert_eq!(c.take(4), Some(8..12));
        c.finished(0..2); // cut short at 2 by the stop
        c.finished(4..8);
        c.finished(8..12);
        assert_eq!(c.progress(), [(0, 2), (20, 20)]);
        assert_eq!(c.unrun(), [(0, vec![2..4, 12..20]), (20, vec![20..30])]);
        c.finished(2..4);
        assert_eq!(c.unrun(), [(0, vec![12..20]), (20, vec![20..30])]);
    }

    /// Issue 23, item 8: a process pruned while frozen came back and ran on in
    /// the chunks others had taken over. It drops them, given-back strides too.
    #[test]
    fn chunks_taken_over_while_frozen_are_dropped_with_their_given_back_strides() {
        let mut c = Chunks::default();
        c.add(0, 0, 10);
        c.add(10, 10, 20);
        assert_eq!(c.take(4), Some(0..4));
        assert_eq!(c.take(4), Some(4..8));
        c.give_back(4..8);
        assert_eq!(c.drop_keys(&[0, 99]), 6);
        assert_eq!(c.progress(), [(10, 10)]);
        assert_eq!(c.take(4), Some(10..14));
    }

    #[test]
    fn a_key_already_held_is_not_added_twice() {
        let mut c = Chunks::default();
        c.add(0, 0, 10);
        assert_eq!(c.take(4), Some(0..4));
        c.add(0, 0, 10);
        assert_eq!(c.take(100), Some(4..10));
        assert_eq!(c.take(100), None);
    }

    #[test]
    fn a_taken_over_claim_keeps_its_key_and_starts_at_its_watermark() {
        let mut c = Chunks::default();
        c.add(100, 140, 200);
        assert_eq!(c.take(100), Some(140..200));
        c.finished(140..200);
        assert_eq!(c.progress(), [(100, 200)]);
        // A report of an older watermark does not drop it.
        c.reported(&[(100, 150)]);
        assert_eq!(c.progress(), [(100, 200)]);
    }
}
