//! The newest prefix sum of each Poisson stream, shared by every thread of the
//! process: a table of [`TABLE`] seqlocked entries, one per seed's hash.
//!
//! An entry holds one [`Point`]: a stream, a ticket `k`, `T(k)` and the unit sum
//! of the stream's draws. A thread that prices ticket `k` starts from this point
//! when it is the nearest at or before `k` (rather than from its own last ticket),
//! sums on, and publishes its point if it is newer. With `t` threads taking
//! tickets in turn each ticket then costs one draw for the whole process, not `t`.
//!
//! The entry is a cache: a point is a pure function of its stream and `k` (the
//! sums are integer sums), so whichever thread wrote it, and from whichever
//! start, it holds the same numbers. A reader that finds the entry being written,
//! or written over while it read, does without it; a writer that finds another
//! writing gives up. Neither ever waits.
//!
//! # Ground rules
//!
//! - Any thread may write an entry. Writers exclude each other with a
//!   compare-and-swap of the stamp from an even `s` to `s + 1` (Acquire: it reads
//!   the Release store of `s` by the previous writer, so this writer's field
//!   stores come after that writer's). Then a Release fence, the fields
//!   (Relaxed), and the stamp `s + 2` (Release).
//! - A reader loads the stamp (Acquire; odd or 0: nothing to read), the fields
//!   (Relaxed), an Acquire fence, and the stamp again (Relaxed). A field store it
//!   read was preceded by its writer's Release fence, which synchronizes with the
//!   reader's Acquire fence, so the second load sees at least that writer's
//!   `s + 1`: equal stamps prove every field belongs to the one write that
//!   stored the first stamp.
//! - A writer replaces a point only with one that [`supersedes`] it, judged on a
//!   read under the same stamp its compare-and-swap then holds.
//!
//! The loom model `loom_tests_a_read_point_is_one_writers_whole_point` checks
//! these rules with two writers and a reader. Under `--cfg loom` the process-wide
//! table is left out (loom's atomics cannot live in a `static`): every thread
//! then sums from its own memo, as before the table.

use super::super::slice::Slice;
use super::Stream;
use crate::sync::{AtomicU64, Ordering, fence};

/// Entries in the process-wide table.
pub(super) const TABLE: usize = 64;

/// A unit sum not known (see [`Point::base`]).
pub(super) const UNKNOWN: u64 = u64::MAX;

/// A stream's prefix sum at ticket `k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Point {
    pub(crate) stream: Stream,
    /// The ticket.
    pub(crate) k: u64,
    /// `T(k)`, whole nanoseconds.
    pub(crate) whole: u64,
    /// `T(k)`'s fraction (2^-64 ns).
    pub(crate) frac: u64,
    /// The sum of the stream's draws `draws..draws + k` (2^-32 mean gaps).
    pub(crate) unit: u64,
    /// The sum of the seed's draws `0..draws` (2^-32 mean gaps), or [`UNKNOWN`]: 0
    /// for a schedule's first stream, carried from the previous stream's last
    /// point otherwise. `base + unit` is the seed's unit sum up to draw
    /// `draws + k`, which [`super::unit_span`] starts from.
    pub(crate) base: u64,
}

/// Words of a packed point: `seed, draws, slice.hi, slice.lo, frac` (the stream),
/// then `k, whole, frac, unit, base`.
const WORDS: usize = 10;

impl Point {
    fn pack(&self) -> [u64; WORDS] {
        let s = &self.stream;
        [
            s.seed, s.draws, s.slice.hi, s.slice.lo, s.frac, self.k, self.whole, self.frac,
            self.unit, self.base,
        ]
    }

    fn unpack(w: [u64; WORDS]) -> Self {
        Self {
            stream: Stream {
                seed: w[0],
                draws: w[1],
                slice: Slice { hi: w[2], lo: w[3] },
                frac: w[4],
            },
            k: w[5],
            whole: w[6],
            frac: w[7],
            unit: w[8],
            base: w[9],
        }
    }

    /// The seed's draw this point reaches, and the unit sum of draws `0..` it, if
    /// known.
    pub(crate) fn seed_prefix(&self) -> Option<(u64, u128)> {
        let at = self.stream.draws.checked_add(self.k)?;
        (self.base != UNKNOWN).then(|| (at, u128::from(self.base) + u128::from(self.unit)))
    }
}

/// Whether `new` may replace `old` in an entry: a later ticket of the same
/// stream; of the same seed, a later draw (a later epoch of the same schedule);
/// of another seed, always (the entry's seeds collide: the newest user keeps it).
pub(crate) fn supersedes(new: &Point, old: &Point) -> bool {
    if new.stream.seed != old.stream.seed {
        return true;
    }
    if new.stream == old.stream {
        return new.k > old.k || (new.k == old.k && old.base == UNKNOWN && new.base != UNKNOWN);
    }
    (new.stream.draws, new.k) > (old.stream.draws, old.k)
}

/// One seqlocked point.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Entry {
    /// Even: stable (0: never written); odd: being written.
    stamp: AtomicU64,
    words: [AtomicU64; WORDS],
}

impl Entry {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        Self {
            stamp: AtomicU64::new(0),
            words: [const { AtomicU64::new(0) }; WORDS],
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        Self {
            stamp: AtomicU64::new(0),
            words: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// The point, with the stamp it was read under; `None` if none was written or
    /// one is being written.
    #[inline]
    pub(crate) fn read_stamped(&self) -> Option<(u64, Point)> {
        let s = self.stamp.load(Ordering::Acquire);
        if s & 1 == 1 || s == 0 {
            return None;
        }
        let w: [u64; WORDS] = std::array::from_fn(|i| self.words[i].load(Ordering::Relaxed));
        fence(Ordering::Acquire);
        (self.stamp.load(Ordering::Relaxed) == s).then(|| (s, Point::unpack(w)))
    }

    /// The point, if one is written and none is being written.
    #[inline]
    pub(crate) fn read(&self) -> Option<Point> {
        self.read_stamped().map(|(_, p)| p)
    }

    /// Stores `p` if it [`supersedes`] the point held (or none is held), unless
    /// another thread is writing. Returns whether it stored.
    #[inline]
    pub(crate) fn publish(&self, p: &Point) -> bool {
        let seen = self.read_stamped();
        if seen.is_none() && self.stamp.load(Ordering::Relaxed) != 0 {
            return false; // being written
        }
        self.store_over(seen.map_or(0, |(s, _)| s), seen.map(|(_, old)| old), p)
    }

    /// [`publish`](Self::publish), given `seen`, a read of this entry shortly
    /// before: stores over it if the stamp is still the one read, else reads
    /// again (a thread that published in between may have left an older point).
    #[inline]
    pub(crate) fn offer(&self, seen: Option<(u64, Point)>, p: &Point) -> bool {
        match seen {
            Some((s, old)) => {
                if !supersedes(p, &old) {
                    return false;
                }
                self.store_over(s, Some(old), p) || self.publish(p)
            }
            None => self.publish(p),
        }
    }

    /// Stores `p` if the stamp is still `s` (even), under which `old` was read.
    #[inline]
    fn store_over(&self, s: u64, old: Option<Point>, p: &Point) -> bool {
        if old.is_some_and(|old| !supersedes(p, &old))
            || self
                .stamp
                .compare_exchange(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return false;
        }
        fence(Ordering::Release);
        for (a, v) in self.words.iter().zip(p.pack()) {
            a.store(v, Ordering::Relaxed);
        }
        self.stamp.store(s + 2, Ordering::Release);
        true
    }
}

#[cfg(not(loom))]
static ENTRIES: [Entry; TABLE] = [const { Entry::new() }; TABLE];

/// The entry of `seed`'s streams (`None` under loom: see the module doc).
#[inline]
pub(crate) fn entry(seed: u64) -> Option<&'static Entry> {
    #[cfg(not(loom))]
    {
        // The multiply's high bits: a seed's own streams share an entry, so the
        // next epoch finds the last one's point (its unit sum carries on).
        let i = (seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize % TABLE;
        Some(&ENTRIES[i])
    }
    #[cfg(loom)]
    {
        let _ = seed;
        None
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn point(seed: u64, draws: u64, k: u64) -> Point {
        Point {
            stream: Stream {
                seed,
                draws,
                slice: Slice { hi: 1000, lo: 5 },
                frac: 7,
            },
            k,
            whole: k * 1000,
            frac: k,
            unit: k * 3,
            base: 0,
        }
    }

    #[test]
    fn a_point_packs_and_unpacks() {
        let mut p = point(u64::MAX, 3, 9);
        p.base = UNKNOWN;
        assert_eq!(Point::unpack(p.pack()), p);
    }

    #[test]
    fn an_entry_keeps_the_newest_point_of_a_seed() {
        let e = Entry::new();
        assert_eq!(e.read(), None, "never written");
        assert!(e.publish(&point(1, 0, 5)));
        assert!(!e.publish(&point(1, 0, 4)), "an earlier ticket");
        assert!(!e.publish(&point(1, 0, 5)), "the same point");
        assert!(e.publish(&point(1, 0, 6)));
        assert!(e.publish(&point(1, 6, 0)), "the next epoch");
        assert!(!e.publish(&point(1, 0, 7)), "the last epoch's");
        assert!(e.publish(&point(2, 0, 1)), "another seed");
        assert_eq!(e.read(), Some(point(2, 0, 1)));
        let mut known = point(2, 0, 1);
        let mut unknown = known;
        unknown.base = UNKNOWN;
        let e = Entry::new();
        assert!(e.publish(&unknown));
        assert!(e.publish(&known), "the same point, its base known");
        assert!(!e.publish(&unknown));
        known.k = 2;
        assert!(e.publish(&known));
    }

    #[test]
    fn a_seed_prefix_is_base_plus_unit_at_draws_plus_k() {
        let mut p = point(1, 10, 4);
        p.base = 100;
        assert_eq!(p.seed_prefix(), Some((14, 112)));
        p.base = UNKNOWN;
        assert_eq!(p.seed_prefix(), None);
    }

    #[test]
    fn a_writer_in_progress_leaves_readers_and_writers_without_it() {
        let e = Entry::new();
        assert!(e.publish(&point(1, 0, 1)));
        let s = e.stamp.load(Ordering::Relaxed);
        e.stamp.store(s + 1, Ordering::Relaxed); // a writer mid-way
        assert_eq!(e.read(), None);
        assert!(!e.publish(&point(1, 0, 2)));
        e.stamp.store(s + 2, Ordering::Relaxed);
        assert_eq!(e.read(), Some(point(1, 0, 1)));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    fn point(k: u64) -> Point {
        Point {
            stream: Stream {
                seed: 3,
                draws: 0,
                slice: Slice { hi: 10, lo: 0 },
                frac: 0,
            },
            k,
            whole: k * 10,
            frac: k + 1,
            unit: k * 3,
            base: k + 2,
        }
    }

    /// Two writers publish points 1 and 2 of one stream while a reader reads: a
    /// read is never a mixture of two writes, and at the end the entry holds one
    /// of them (point 2 unless its writer gave up to the other).
    #[test]
    fn loom_tests_a_read_point_is_one_writers_whole_point() {
        loom::model(|| {
            let e = Arc::new(Entry::new());
            let writers: Vec<_> = [1, 2]
                .into_iter()
                .map(|k| {
                    let e = e.clone();
                    loom::thread::spawn(move || e.publish(&point(k)))
                })
                .collect();
            if let Some(p) = e.read() {
                assert!(p == point(1) || p == point(2), "{p:?}");
            }
            let stored: Vec<bool> = writers.into_iter().map(|w| w.join().unwrap()).collect();
            let p = e.read().expect("written");
            assert!(p == point(1) || p == point(2), "{p:?}");
            if stored[1] {
                assert_eq!(p, point(2), "2 supersedes 1");
            }
        });
    }
}
