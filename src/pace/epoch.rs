//! Epochs: the parameters a ticket's slot is computed from, in a ring of seqlocked slots.
//!
//! An epoch is immutable once published. A reconfiguration (rate, strictness, pause,
//! restart), an idle overflow or a ticket rollover writes the next epoch into the ring
//! and then installs its number in the hot word; a reader that got epoch `e` from the
//! hot word reads slot `e % RING`.
//!
//! # Ground rules
//!
//! - Only the holder of the schedule's control mutex writes slots, and it writes slot
//!   `e + 1` *before* installing `e + 1` in the hot word with a Release RMW.
//! - A reader obtains `e` from an Acquire RMW or load of the hot word. The install and
//!   every later RMW on the hot word form a release sequence, so the reader sees the
//!   slot's stamp and fields as written for `e` (or a later overwrite).
//! - Slots are a seqlock over atomics: the writer stores the stamp `WRITING`, a Release
//!   fence, the fields (Relaxed), then the stamp `e` (Release); the reader loads the
//!   stamp (Acquire), the fields (Relaxed), an Acquire fence, and the stamp again. Equal
//!   stamps naming `e` prove the fields belong to `e`.
//! - A slot is overwritten only after `RING` more epochs. A reader preempted across
//!   that many reconfigurations between taking its ticket and reading the slot sees a
//!   mismatched stamp; it is then granted at once with wait 0 and counted in
//!   `LimiterStats::stale_epochs`.

use super::arrivals::{POISSON_SOFT_LIMIT, Stream};
use super::slice::Slice;
use super::word::{EPOCH_MASK, TICKET_SOFT_LIMIT};
use crate::sync::{AtomicU64, Ordering, fence};

/// Slots in the ring.
pub(crate) const RING: usize = 32;
const WRITING: u64 = u64::MAX;

/// How late ops are treated in an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// s = 0.
    Average,
    /// 0 < s < 1: forfeit `lateness >> shift`.
    Compensate,
    /// s = 1: forfeit all lateness.
    Strict,
    /// s > 1: starts no closer than slice / s while late.
    Burst,
}

/// The mode of an epoch, packed into one word for the ring.
///
/// ```text
///  63              32 31   24 23     16 15   11    10         9         8      7     2 1    0
/// +------------------+-------+---------+-------+---------+------------+--------+-------+------+
/// | inv_s (2^-32 units)| unused | tag (4) | unused| stopped | unanchored | paused | shift | kind |
/// +------------------+-------+---------+-------+---------+------------+--------+-------+------+
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ModeBits {
    pub(crate) kind: Kind,
    /// Compensation shift (1..=63).
    pub(crate) shift: u32,
    /// 1 / s in units of 2^-32 (burst only).
    pub(crate) inv_s: u32,
    /// Rate 0: tickets of this epoch are void; acquirers wait for a change.
    pub(crate) paused: bool,
    /// Not started: the first acquire anchors the schedule at its clock reading.
    pub(crate) unanchored: bool,
    /// Stopped: every acquire returns a stopped grant.
    pub(crate) stopped: bool,
    /// The burst allowance this epoch belongs to: the tag its anchor carries (see
    /// [`super::anchor`]).
    pub(crate) tag: u8,
    /// Poisson arrivals: slots at random gaps (see [`super::arrivals`]).
    pub(crate) poisson: bool,
}

const KIND_MASK: u64 = 0b11;
const SHIFT_POS: u32 = 2;
const SHIFT_MASK: u64 = 0b11_1111;
const PAUSED_BIT: u64 = 1 << 8;
const UNANCHORED_BIT: u64 = 1 << 9;
const STOPPED_BIT: u64 = 1 << 10;
const POISSON_BIT: u64 = 1 << 11;
const TAG_POS: u32 = 16;
const INV_POS: u32 = 32;

impl ModeBits {
    pub(crate) fn pack(self) -> u64 {
        let kind = match self.kind {
            Kind::Average => 0,
            Kind::Compensate => 1,
            Kind::Strict => 2,
            Kind::Burst => 3,
        };
        kind | ((self.shift as u64 & SHIFT_MASK) << SHIFT_POS)
            | if self.paused { PAUSED_BIT } else { 0 }
            | if self.unanchored { UNANCHORED_BIT } else { 0 }
            | if self.stopped { STOPPED_BIT } else { 0 }
            | if self.poisson { POISSON_BIT } else { 0 }
            | (u64::from(self.tag) << TAG_POS)
            | ((self.inv_s as u64) << INV_POS)
    }

    pub(crate) fn unpack(w: u64) -> Self {
        Self {
            kind: match w & KIND_MASK {
                0 => Kind::Average,
                1 => Kind::Compensate,
                2 => Kind::Strict,
                _ => Kind::Burst,
            },
            shift: ((w >> SHIFT_POS) & SHIFT_MASK) as u32,
            inv_s: (w >> INV_POS) as u32,
            paused: w & PAUSED_BIT != 0,
            unanchored: w & UNANCHORED_BIT != 0,
            stopped: w & STOPPED_BIT != 0,
            poisson: w & POISSON_BIT != 0,
            tag: (w >> TAG_POS) as u8,
        }
    }

    /// Whether tickets of this epoch are taken with a CAS (they may forfeit idle).
    #[inline]
    pub(crate) fn forfeits(self) -> bool {
        matches!(self.kind, Kind::Strict | Kind::Compensate)
    }

    /// Whether tickets of this epoch name real slots.
    #[inline]
    pub(crate) fn live(self) -> bool {
        !self.paused && !self.unanchored && !self.stopped
    }
}

/// The parameters of one epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Epoch {
    /// The full epoch number (the hot word holds its low bits).
    pub(crate) number: u64,
    /// Whole nanoseconds (since the limiter's origin) of ticket 0 with no idle.
    pub(crate) base: u64,
    /// Fraction of a nanosecond of the base, in 2^-64 ns.
    pub(crate) frac: u64,
    /// The slice.
    pub(crate) slice: Slice,
    /// The mode.
    pub(crate) mode: ModeBits,
    /// Poisson arrivals: the stream's seed.
    pub(crate) seed: u64,
    /// Poisson arrivals: the draw of ticket 0 (the tickets of earlier epochs).
    pub(crate) draws: u64,
    /// The cut this epoch began with ([`NO_CUT`] if none): tickets of earlier epochs
    /// whose slot lies at or after it are given back by their takers, never granted
    /// (a rate raised while the cursor was far ahead; see `docs/pacing.md`, "Rate
    /// raised from far ahead").
    pub(crate) cut: u64,
}

/// [`Epoch::cut`] of an epoch that cut nothing.
pub(crate) const NO_CUT: u64 = u64::MAX;

impl Epoch {
    /// A placeholder (unanchored, average, zero slice) for storage that holds no epoch yet.
    pub(crate) const ZERO: Self = Self {
        number: 0,
        base: 0,
        frac: 0,
        slice: Slice { hi: 0, lo: 0 },
        mode: ModeBits {
            kind: Kind::Average,
            shift: 0,
            inv_s: 0,
            paused: false,
            unanchored: true,
            stopped: false,
            tag: 0,
            poisson: false,
        },
        seed: 0,
        draws: 0,
        cut: NO_CUT,
    };

    /// `k` tickets' schedule time from the base's fraction: `k` slices, or the sum of
    /// `k` random gaps (Poisson), as whole nanoseconds and fraction.
    #[inline]
    pub(crate) fn offset(&self, k: u64) -> (u64, u64) {
        if self.mode.poisson {
            Stream {
                seed: self.seed,
                draws: self.draws,
                slice: self.slice,
                frac: self.frac,
            }
            .offset(k)
        } else {
            self.slice.advance(self.frac, k)
        }
    }

    /// The slot of ticket `k` with idle `i`.
    #[inline]
    pub(crate) fn slot(&self, k: u64, i: u64) -> u64 {
        self.base.saturating_add(self.offset(k).0).saturating_add(i)
    }

    /// The schedule time of tickets `k..k + n`, whole nanoseconds (what voiding them
    /// forfeits).
    pub(crate) fn span(&self, k: u64, n: u64) -> u64 {
        if self.mode.poisson {
            // In this order: the prefix-sum memo moves forwards.
            let from = self.offset(k).0;
            self.offset(k + n).0.saturating_sub(from)
        } else {
            self.slice.whole(0, n)
        }
    }

    /// A ticket at or past this rolls the epoch over: Poisson epochs are short, so
    /// that a thread new to one sums few gaps (see [`super::arrivals`]).
    #[inline]
    pub(crate) fn soft_limit(&self) -> u64 {
        if self.mode.poisson {
            POISSON_SOFT_LIMIT
        } else {
            TICKET_SOFT_LIMIT
        }
    }

    /// The part of `late` nanoseconds of lateness a late op forfeits to idle: all of it
    /// (strict), `late >> shift` (compensating), nothing (average, burst).
    #[inline]
    pub(crate) fn forfeit(&self, late: u64) -> u64 {
        match self.mode.kind {
            Kind::Strict => late,
            Kind::Compensate => late >> self.mode.shift,
            Kind::Average | Kind::Burst => 0,
        }
    }

    /// Where the next epoch starts when this one ends at ticket `k` with idle `i`: the
    /// cursor if its tickets were live, else (paused, unanchored) its own base.
    pub(crate) fn end(&self, k: u64, i: u64) -> (u64, u64) {
        if self.mode.live() {
            self.cursor(k, i)
        } else {
            (self.base, self.frac)
        }
    }

    /// The cursor after `k` tickets and idle `i`, with its fraction.
    pub(crate) fn cursor(&self, k: u64, i: u64) -> (u64, u64) {
        let (whole, frac) = self.offset(k);
        (self.base.saturating_add(whole).saturating_add(i), frac)
    }

    /// The earliest start burst allowance permits for slot `slot`, given the anchor.
    #[inline]
    pub(crate) fn burst_start(&self, slot: u64, anchor: i64) -> u64 {
        anchor.saturating_add(self.over_s(slot) as i64).max(0) as u64
    }

    /// The burst allowance's spacing of late ops, slice / s, in whole nanoseconds.
    #[inline]
    pub(crate) fn burst_spacing(&self) -> u64 {
        self.over_s(self.slice.hi)
    }

    /// `x` divided by s, rounded down (a multiply by the fixed-point 1/s).
    #[inline]
    pub(crate) fn over_s(&self, x: u64) -> u64 {
        ((u128::from(x) * u128::from(self.mode.inv_s)) >> 32) as u64
    }

    /// The anchor that maps `slot` to `start` under burst allowance.
    #[inline]
    pub(crate) fn anchor_for(&self, slot: u64, start: u64) -> i64 {
        (start as i64).saturating_sub(self.over_s(slot) as i64)
    }
}

/// One seqlocked ring slot.
#[derive(Debug)]
struct Slot {
    stamp: AtomicU64,
    base: AtomicU64,
    frac: AtomicU64,
    slice_hi: AtomicU64,
    slice_lo: AtomicU64,
    mode: AtomicU64,
    seed: AtomicU64,
    draws: AtomicU64,
    cut: AtomicU64,
}

impl Slot {
    fn empty() -> Self {
        Self {
            stamp: AtomicU64::new(WRITING),
            base: AtomicU64::new(0),
            frac: AtomicU64::new(0),
            slice_hi: AtomicU64::new(0),
            slice_lo: AtomicU64::new(0),
            mode: AtomicU64::new(0),
            seed: AtomicU64::new(0),
            draws: AtomicU64::new(0),
            cut: AtomicU64::new(NO_CUT),
        }
    }
}

/// The ring of epoch slots.
#[derive(Debug)]
pub(crate) struct Ring {
    slots: Box<[Slot]>,
}

impl Ring {
    pub(crate) fn new() -> Self {
        Self {
            slots: (0..RING).map(|_| Slot::empty()).collect(),
        }
    }

    /// Writes `epoch` into its slot. Caller holds the control mutex and has not yet
    /// installed the epoch in the hot word.
    pub(crate) fn write(&self, epoch: &Epoch) {
        let slot = &self.slots[epoch.number as usize % RING];
        slot.stamp.store(WRITING, Ordering::Relaxed);
        fence(Ordering::Release);
        slot.base.store(epoch.base, Ordering::Relaxed);
        slot.frac.store(epoch.frac, Ordering::Relaxed);
        slot.slice_hi.store(epoch.slice.hi, Ordering::Relaxed);
        slot.slice_lo.store(epoch.slice.lo, Ordering::Relaxed);
        slot.mode.store(epoch.mode.pack(), Ordering::Relaxed);
        slot.seed.store(epoch.seed, Ordering::Relaxed);
        slot.draws.store(epoch.draws, Ordering::Relaxed);
        slot.cut.store(epoch.cut, Ordering::Relaxed);
        slot.stamp.store(epoch.number, Ordering::Release);
    }

    /// Reads the epoch a ticket with epoch bits `e` belongs to, given `floor`, the
    /// full number of an epoch installed before the ticket was taken (see
    /// `Gate::epoch`): the one epoch at or after `floor` with those low bits. `None`
    /// if its slot was overwritten, or if its number is 1024 or more past `floor`
    /// (the word's 10 bits repeat: a later epoch with the same low bits is not the
    /// ticket's, and taking it for the ticket's would hand out one slot twice).
    #[inline]
    pub(crate) fn read_from(&self, e: u64, floor: u64) -> Option<Epoch> {
        self.read(e)
            .filter(|ep| ep.number >= floor && ep.number - floor <= EPOCH_MASK)
    }

    /// Reads the latest epoch whose low bits are `e`, or `None` if its slot is being
    /// written. Only under the control lock is that certainly the current one.
    #[inline]
    pub(crate) fn read(&self, e: u64) -> Option<Epoch> {
        let slot = &self.slots[e as usize % RING];
        let s1 = slot.stamp.load(Ordering::Acquire);
        if s1 == WRITING || s1 & EPOCH_MASK != e {
            return None;
        }
        let epoch = Epoch {
            number: s1,
            base: slot.base.load(Ordering::Relaxed),
            frac: slot.frac.load(Ordering::Relaxed),
            slice: Slice {
                hi: slot.slice_hi.load(Ordering::Relaxed),
                lo: slot.slice_lo.load(Ordering::Relaxed),
            },
            mode: ModeBits::unpack(slot.mode.load(Ordering::Relaxed)),
            seed: slot.seed.load(Ordering::Relaxed),
            draws: slot.draws.load(Ordering::Relaxed),
            cut: slot.cut.load(Ordering::Relaxed),
        };
        fence(Ordering::Acquire);
        (slot.stamp.load(Ordering::Relaxed) == s1).then_some(epoch)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn mode_bits_round_trip() {
        for kind in [Kind::Average, Kind::Compensate, Kind::Strict, Kind::Burst] {
            for (paused, unanchored) in [(false, false), (true, false), (false, true), (true, true)]
            {
                let m = ModeBits {
                    kind,
                    shift: 63,
                    inv_s: u32::MAX,
                    paused,
                    unanchored,
                    stopped: paused,
                    tag: 0xa5,
                    poisson: unanchored,
                };
                assert_eq!(ModeBits::unpack(m.pack()), m);
            }
        }
    }

    #[test]
    fn ring_returns_what_was_written_and_detects_overwrite() {
        let ring = Ring::new();
        let mut e = Epoch {
            number: 7,
            base: 100,
            frac: 5,
            slice: Slice { hi: 3, lo: 9 },
            mode: ModeBits {
                kind: Kind::Burst,
                shift: 0,
                inv_s: 123,
                paused: false,
                unanchored: false,
                stopped: false,
                tag: 0,
                poisson: false,
            },
            seed: 3,
            draws: 4,
            cut: 9,
        };
        ring.write(&e);
        assert_eq!(ring.read(7), Some(e));
        e.number = 7 + RING as u64;
        ring.write(&e);
        assert_eq!(ring.read(7), None, "slot reused by a later epoch");
        assert_eq!(ring.read((7 + RING as u64) & EPOCH_MASK), Some(e));
    }

    /// Regression (issue 12, bug 9): the word holds 10 bits of the epoch number, and
    /// the ring took any epoch with those bits for the ticket's: a ticket taken in
    /// epoch 5 and read after epoch 5 + 1024 was installed mapped into the later one.
    #[test]
    fn a_ticket_is_read_only_in_an_epoch_less_than_1024_past_its_floor() {
        let ring = Ring::new();
        let mut e = Epoch::ZERO;
        e.number = 5;
        ring.write(&e);
        assert_eq!(ring.read_from(5, 5).map(|x| x.number), Some(5));
        assert_eq!(ring.read_from(5, 3).map(|x| x.number), Some(5));
        e.number = 5 + 1024;
        ring.write(&e);
        assert_eq!(
            ring.read(5).map(|x| x.number),
            Some(1029),
            "the low bits alias"
        );
        assert_eq!(ring.read_from(5, 5), None, "taken at or after 5: not 1029");
        assert_eq!(ring.read_from(5, 1000).map(|x| x.number), Some(1029));
        assert_eq!(ring.read_from(5, 1030), None, "before the floor");
    }

    #[test]
    fn burst_mapping_is_slice_over_s() {
        let e = Epoch {
            number: 0,
            base: 0,
            frac: 0,
            slice: Slice { hi: 1000, lo: 0 },
            mode: ModeBits {
                kind: Kind::Burst,
                shift: 0,
                inv_s: (1u64 << 31) as u32,
                paused: false,
                unanchored: false,
                stopped: false,
                tag: 0,
                poisson: false,
            },
            seed: 3,
            draws: 4,
            cut: 9,
        };
        // s = 2: mapping slope 1/2
        let a = e.anchor_for(10_000, 50_000);
        assert_eq!(e.burst_start(10_000, a), 50_000);
        assert_eq!(e.burst_start(12_000, a), 51_000);
    }
}
