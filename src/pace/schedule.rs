//! One schedule: the hot word, the epoch ring, and the paths that take tickets.
//!
//! The schedule is split by what runs where: this file holds its state and the
//! shared paths every acquire may take; `super::reserve` holds the per-thread
//! reservations; `super::forfeit` the strict and compensating modes' CAS path;
//! `super::control` everything under the control lock (changes of epoch, `set_spec`,
//! stop, anchoring, rollover, stats); `super::wait` the waits toward a slot and
//! what a pause, a stop or a stale epoch makes of them, and `try_acquire`;
//! `super::park` the opt-in parking. `docs/pacing.md`, "Acquire paths", lists every path with the invariant it
//! keeps and the test that pins it.
//!
//! # Ground rules
//!
//! - `hot.word` ([`super::word`]) is the only contended word. Tickets are taken with
//!   `fetch_add` (Acquire: the taker must see the epoch slot installed before its
//!   ticket, see [`super::epoch`]) or, in forfeiting modes, with a CAS (AcqRel on
//!   success for the same reason; the success write publishes nothing else).
//! - Epoch changes happen only under `control` and install the next epoch with an
//!   AcqRel CAS after writing its ring slot, then store its full number in
//!   `gate.epoch` (Release). A taker loads `gate.epoch` (Acquire) before its RMW on
//!   the word: the RMW then lands in that epoch or a later one, and the ring read
//!   accepts only the one epoch at or after that floor with the word's 10 epoch bits
//!   ([`Ring::read_from`]).
//! - `hot.seen` (last-seen time, shifted left one bit, low bit = "hot") is a hint
//!   that moves forward with `fetch_max`; it publishes no memory, Relaxed. It decides
//!   whether a slot is certainly due; it is never anyone's start.
//! - `hot.anchor` is the burst allowance's tagged anchor ([`super::anchor`]):
//!   Relaxed, installed under `control` before the epoch of its allowance.
//! - `gate.slow` and `gate.era` are written under `control` at epoch changes; `slow`
//!   is a hint (a taker that missed it finds the epoch's mode after its RMW and gives
//!   the ticket back or voids it), `era` is read Acquire by reservations (see
//!   `super::reserve`).
//! - `voided` counts tickets taken from a live epoch and never granted (a `fetch_add`
//!   that landed in a forfeiting epoch); Relaxed, read by `stats`.
//! - `control` guards the accounting of finished epochs and the spec; it is taken
//!   only on reconfiguration, rollover (every 64 Mi tickets), first anchoring, idle
//!   overflow (134 ms forfeited in one epoch), pause waits and `stats`.

use super::anchor::Anchor;
use super::control::Control;
use super::epoch::{Epoch, Kind, Ring};
use super::grant::Grant;
use super::reserve::{HOT_GAP, NO_SLOT, RESERVATION};
use super::wait::NotLive;

/// Burst allowance: how far behind its place on the allowance's line a late
/// caller may be before the allowance restarts from it (see
/// [`Schedule::reanchor_if_behind`]). Twenty times a quiet machine's wake-up
/// overshoot; a caller that slow may, once it is fast again, start this much
/// of schedule at once before the line holds it to slice / s.
pub(crate) const BURST_SLACK: Nanos = 1_000_000;
use super::word::Word;
use crate::clock::{Clock, Signal, Waiting};
use crate::nanos::Nanos;
use crate::sync::{self, AtomicBool, AtomicU64, Mutex, Ordering};
use crossbeam_utils::CachePadded;

/// What [`Schedule::fetch_tickets`] took.
pub(super) enum Fetched {
    /// Tickets of this epoch, from this word.
    Taken(Epoch, Word),
    /// Their epoch was overwritten before it could be read: granted at once.
    Stale(Grant),
    /// Void or given up: start over.
    Void,
}

/// The tickets a caller waits toward: void if a pause comes before their slot.
#[derive(Debug, Clone, Copy)]
pub(super) struct Toward {
    /// Their epoch.
    pub(super) ep: Epoch,
    /// The first ticket.
    pub(super) ticket: u64,
    /// The first ticket's slot.
    pub(super) slot: Nanos,
    pub(super) n: u64,
    /// Whether they may go back to the word (not taken under the lock).
    pub(super) back: bool,
}

impl Toward {
    /// `n` tickets from `ticket` (at `slot`) of epoch `ep`; `back`: whether they may
    /// go back to the word.
    #[inline]
    pub(super) fn new(ep: &Epoch, ticket: u64, slot: Nanos, n: u64, back: bool) -> Self {
        Self {
            ep: *ep,
            ticket,
            slot,
            n,
            back,
        }
    }
}

/// What every schedule of one limiter shares.
#[derive(Debug)]
pub(crate) struct Shared<C> {
    pub(crate) clock: C,
    pub(crate) origin: Nanos,
    pub(crate) signal: Signal,
    pub(crate) waiting: Waiting,
    /// Every this many tickets the clock is read even on the fast path; 0 disables the
    /// fast path (a power of two).
    pub(crate) fast_path_limit: u64,
    /// The limiter's origin on the process-wide timeline, when its clock reads that
    /// timeline: grants handed out without a reading then read their start when asked.
    pub(crate) timeline_origin: Option<Nanos>,
}

impl<C: Clock> Shared<C> {
    pub(crate) fn new(clock: C, waiting: Waiting, fast_path_limit: u64) -> Self {
        let origin = clock.now();
        let timeline_origin = clock.timeline_origin().map(|o| o.saturating_add(origin));
        Self {
            clock,
            origin,
            signal: Signal::new(),
            waiting,
            fast_path_limit,
            timeline_origin,
        }
    }

    /// Nanoseconds since the limiter's origin.
    #[inline]
    pub(crate) fn now(&self) -> Nanos {
        self.clock.now().saturating_sub(self.origin)
    }

    /// A grant of `n` slots from `slot` on a path that took no clock reading of its
    /// own: its start is read when asked for (on the timeline), or read now.
    #[inline]
    pub(super) fn unread(&self, slot: Nanos, n: u64) -> Grant {
        match self.timeline_origin {
            Some(origin) => Grant::deferred(slot, origin, n as u32),
            None => Grant::new(slot, self.now(), n as u32),
        }
    }

    /// Waits until limiter time `t`, or until the signal stops or is interrupted
    /// after its count `seen` (see [`Clock::wait_until_seen`]); returns limiter time
    /// after.
    pub(super) fn wait_until_seen(&self, t: Nanos, seen: u64) -> Nanos {
        self.clock
            .wait_until_seen(
                t.saturating_add(self.origin),
                &self.waiting,
                &self.signal,
                seen,
            )
            .saturating_sub(self.origin)
    }
}

/// Callers waiting on the schedule (hints for parking; see `super::park`).
#[derive(Debug)]
pub(super) struct Waiters {
    pub(super) sleepers: AtomicU64,
    pub(super) parked: AtomicU64,
}

#[derive(Debug)]
pub(super) struct Hot {
    pub(super) word: AtomicU64,
    pub(super) seen: AtomicU64,
    pub(super) anchor: Anchor,
}

/// Read-mostly state the fast paths consult instead of the contended word.
#[derive(Debug)]
pub(super) struct Gate {
    /// Whether the current epoch takes tickets by CAS (strict, compensating) or is not
    /// live: a hint that lets the fast path `fetch_add` without first loading the
    /// contended word.
    pub(super) slow: AtomicBool,
    /// Bumped (Release, after the new epoch is installed) by every restart and every
    /// change into a slow epoch or of burst kind or ratio: reservations taken in an
    /// earlier era are void.
    pub(super) era: AtomicU64,
    /// The full number of the installed epoch (stored after the install): the floor
    /// a taker reads its ticket's epoch from.
    pub(super) epoch: AtomicU64,
    /// The full number of the latest paused epoch installed (0: none): a caller that
    /// waited toward a slot of an earlier epoch finds it void (issue 23, item 5).
    /// Stored (Release) after the install, before the signal is interrupted.
    pub(super) paused: AtomicU64,
    /// The full number of the latest epoch installed with a cut (0: none): a taker
    /// of an earlier epoch reads the cuts since its own from the ring (see
    /// [`Schedule::cut_since`]). Stored (Release) after the install, before the
    /// signal is interrupted. While a change that may cut is under way, the number
    /// of the epoch it will install (SeqCst, before its clock reading; put back if
    /// it cuts nothing): a taker that finds a number above the installed epoch
    /// waits for the change under `control` (review p17 M3).
    pub(super) cut: AtomicU64,
    /// This schedule's identity in thread-local reservations.
    pub(super) id: u64,
}

/// The schedule.
#[derive(Debug)]
pub(crate) struct Schedule {
    pub(super) hot: CachePadded<Hot>,
    pub(super) gate: CachePadded<Gate>,
    pub(super) ring: Ring,
    pub(super) control: Mutex<Control>,
    pub(super) stale: AtomicU64,
    /// Tickets of live epochs that were never granted, and their schedule time.
    pub(super) voided: AtomicU64,
    pub(super) voided_nanos: AtomicU64,
    pub(super) waiters: CachePadded<Waiters>,
    /// The async acquire's gate: the earliest start of the next held op (see
    /// `super::future`). Relaxed: a time, it publishes no memory.
    pub(super) async_gate: CachePadded<AtomicU64>,
    /// The async acquire's bound on starts: the earliest next start, a GCRA (see
    /// `super::future`). Relaxed, as the gate.
    pub(super) async_starts: CachePadded<AtomicU64>,
}

impl Schedule {
    /// The earliest start burst allowance permits for `slot` (0 outside burst mode,
    /// and for a ticket of an allowance that has just ended).
    #[inline]
    pub(super) fn burst_floor(&self, ep: &Epoch, slot: Nanos) -> Nanos {
        if ep.mode.kind != Kind::Burst {
            return 0;
        }
        match self.hot.anchor.get(ep.mode.tag) {
            Some(anchor) => ep.burst_start(slot, anchor),
            None => 0,
        }
    }

    /// The earliest start of ticket `t` with idle `idle` (its slot, or later under
    /// the burst allowance).
    #[inline]
    pub(super) fn earliest_of(&self, ep: &Epoch, t: u64, idle: u64) -> Nanos {
        let slot = ep.slot(t, idle);
        slot.max(self.burst_floor(ep, slot))
    }

    /// Reads the clock and publishes it as last-seen; returns the later of the reading
    /// and what was already published.
    #[inline]
    pub(super) fn observe<C: Clock>(&self, sh: &Shared<C>) -> Nanos {
        let prev = self.hot.seen.load(Ordering::Relaxed);
        let prev_t = prev >> 1;
        let t = sh.now();
        if t > prev_t {
            let hot = u64::from(t - prev_t <= HOT_GAP);
            self.hot.seen.fetch_max((t << 1) | hot, Ordering::Relaxed);
            t
        } else {
            prev_t
        }
    }

    /// The floor for reading a ticket's epoch: load it before the RMW on the word.
    #[inline]
    pub(super) fn floor(&self) -> u64 {
        self.gate.epoch.load(Ordering::Acquire)
    }

    /// The current epoch and word, re-read until consistent.
    pub(super) fn current(&self) -> (u64, Word, Epoch) {
        loop {
            let floor = self.floor();
            let w = self.hot.word.load(Ordering::Acquire);
            let wd = Word::unpack(w);
            if let Some(ep) = self.ring.read_from(wd.epoch, floor) {
                return (w, wd, ep);
            }
            sync::spin_hint();
        }
    }

    /// Takes `n` slots, waiting as needed. The reserved hand-out is inlined into the
    /// caller; everything else is behind one call, so that the hand-out pays no large
    /// stack frame.
    #[inline]
    pub(crate) fn acquire<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Grant {
        match self.reserved_slot(sh, n) {
            NO_SLOT => self
                .acquire_shared(sh, n, &|| false)
                .expect("an acquire that never gives up returns a grant"),
            // Due at the reservation's reading, so due now; the start is this op's.
            slot => sh.unread(slot, 1),
        }
    }

    /// The slot of this thread's next due reserved ticket for a single acquire, or
    /// [`NO_SLOT`].
    #[inline(always)]
    fn reserved_slot<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Nanos {
        if n == 1 && sh.fast_path_limit > 1 {
            RESERVATION.with(|r| self.next_reserved(r))
        } else {
            NO_SLOT
        }
    }

    /// [`acquire`](Self::acquire), or `None` when `give_up` held while the schedule
    /// was paused (see `RateLimiter::acquire_unless`).
    #[inline]
    pub(crate) fn acquire_unless<C: Clock>(
        &self,
        sh: &Shared<C>,
        n: u64,
        give_up: &dyn Fn() -> bool,
    ) -> Option<Grant> {
        match self.reserved_slot(sh, n) {
            NO_SLOT => self.acquire_shared(sh, n, give_up),
            slot => Some(sh.unread(slot, 1)),
        }
    }

    /// Every path but the reserved hand-out. `None` only when `give_up` held while
    /// the schedule was paused.
    #[inline(never)]
    fn acquire_shared<C: Clock>(
        &self,
        sh: &Shared<C>,
        n: u64,
        give_up: &dyn Fn() -> bool,
    ) -> Option<Grant> {
        if n == 1 && sh.fast_path_limit > 1 {
            if let Some(g) = RESERVATION.with(|r| self.take_reserved(sh, r)) {
                return Some(g);
            }
        } else if n > 1 {
            self.give_back_reservation();
        }
        if sh.waiting.parks_when_ahead() && self.waiters.sleepers.load(Ordering::Relaxed) > 0 {
            self.park_while_ahead(sh);
        }
        if !self.gate.slow.load(Ordering::Relaxed) {
            if let Some(g) = self.take_adding(sh, n) {
                return Some(g);
            }
        }
        loop {
            let (_, _, ep) = self.current();
            if !ep.mode.live() {
                match self.not_live(sh, ep, give_up) {
                    NotLive::Stopped(g) => return Some(g),
                    NotLive::GaveUp => return None,
                    NotLive::Again => continue,
                }
            }
            let result = if ep.mode.forfeits() {
                self.take_forfeiting(sh, n)
            } else {
                self.take_adding(sh, n)
            };
            if result.is_some() {
                return result;
            }
        }
    }

    /// Average and burst modes: one `fetch_add`. `None` if the ticket was void (the
    /// epoch is not live) or given up (the epoch forfeits: see [`Self::give_up`]).
    #[inline]
    pub(super) fn take_adding<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Option<Grant> {
        let (ep, wd) = match self.fetch_tickets(sh, n) {
            Fetched::Taken(ep, wd) => (ep, wd),
            Fetched::Stale(g) => return Some(g),
            Fetched::Void => return None,
        };
        let slot = ep.slot(wd.ticket, wd.idle);
        let mapped = self.burst_floor(&ep, slot);
        let earliest = slot.max(mapped);
        // Fast path (average mode): last-seen already shows the slot due (time only
        // moves forward), so the decision needs no clock; the start is read when asked
        // for. Not under burst allowance: an op that starts long after last-seen (the
        // caller stalled) must restart the allowance from its start, or the ops after
        // it would all pass at once, and that needs the reading.
        let seen = self.hot.seen.load(Ordering::Relaxed);
        let k = sh.fast_path_limit;
        if seen & 1 == 1
            && k != 0
            && wd.ticket & (k - 1) != 0
            && ep.mode.kind == Kind::Average
            && earliest <= seen >> 1
            && !self.cut_since(ep.number, slot)
        {
            return Some(sh.unread(slot, n));
        }
        let now = self.observe(sh);
        let (mapped, earliest) = if ep.mode.kind == Kind::Burst
            && k > 1
            && RESERVATION.with(|r| self.pay_unread(r, &ep, slot, now))
        {
            let mapped = self.burst_floor(&ep, slot);
            (mapped, slot.max(mapped))
        } else {
            (mapped, earliest)
        };
        if self.cut_since(ep.number, slot) {
            // Taken before a cut, decided after it (the taker was held up between).
            self.give_back_cut(&Toward::new(&ep, wd.ticket, slot, n, true));
            return None;
        }
        if earliest <= now {
            self.help_if_late(sh, slot, now);
            self.reanchor_if_behind(&ep, slot, mapped, now);
            if n == 1 && k > 1 {
                let more = self.due_after(&ep, slot, now);
                self.note_reading(now, more, k);
            }
            return Some(Grant::new(slot, now, n as u32));
        }
        let window = sh.waiting.release_window_nanos();
        let toward = Toward::new(&ep, wd.ticket, slot, n, true);
        let start = self.wait_from(sh, now, earliest, window, toward)?;
        if n == 1 && k > 1 {
            self.note_wait(now, start, &ep, window, k);
        }
        Some(Grant::new(slot, start, n as u32))
    }

    /// Takes `n` tickets with one `fetch_add` and reads their epoch (from the floor
    /// loaded before it). Tickets of an epoch that is not live are void; tickets of a
    /// forfeiting epoch are given up ([`Self::give_up`]); a ticket near the field's
    /// limit rolls the epoch over.
    #[inline]
    pub(super) fn fetch_tickets<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Fetched {
        let floor = self.floor();
        let w = self.hot.word.fetch_add(Word::tickets(n), Ordering::Acquire);
        let wd = Word::unpack(w);
        let Some(ep) = self.ring.read_from(wd.epoch, floor) else {
            return Fetched::Stale(self.stale_grant(sh, n));
        };
        if !ep.mode.live() {
            return Fetched::Void;
        }
        if ep.mode.forfeits() {
            self.give_up(&ep, wd.ticket, n);
            return Fetched::Void;
        }
        if wd.ticket + n >= ep.soft_limit() {
            self.roll_over(ep.number);
        }
        Fetched::Taken(ep, wd)
    }

    /// Tickets `[ticket, ticket + n)` taken by `fetch_add` from an epoch that forfeits
    /// lateness per op (the taker read the gate before a change to strict or
    /// compensating mode was published): granting them without the forfeit would let
    /// two late strict ops start at one instant. They go back to the word if nobody
    /// took a ticket since; otherwise they are void: never granted, their slots
    /// counted as missed.
    #[cold]
    pub(super) fn give_up(&self, ep: &Epoch, ticket: u64, n: u64) {
        if !self.return_tickets(ep.number, ticket + n, ticket) {
            self.voided.fetch_add(n, Ordering::Relaxed);
            self.voided_nanos
                .fetch_add(ep.span(ticket, n), Ordering::Relaxed);
        }
    }

    /// Moves the word's ticket back from `end` to `to` if it is still at `end` in epoch
    /// `ep_number` (nobody took a ticket since). Returns whether it did.
    ///
    /// The word holds only the epoch's low bits, so the full number is checked in the
    /// ring: after 1024 epoch changes the same low bits name another epoch, whose
    /// ticket `end` would be another thread's.
    pub(super) fn return_tickets(&self, ep_number: u64, end: u64, to: u64) -> bool {
        let w = self.hot.word.load(Ordering::Acquire);
        let wd = Word::unpack(w);
        wd.epoch == ep_number & super::word::EPOCH_MASK
            && wd.ticket == end
            && self
                .ring
                .read(wd.epoch)
                .is_some_and(|e| e.number == ep_number)
            && self
                .hot
                .word
                .compare_exchange(
                    w,
                    w - Word::tickets(end - to),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
    }

    /// How many slots after `slot` are certainly due at `now`: an undercount by up to
    /// one slot per nanosecond of slice fraction (burst: by the allowance too).
    #[inline]
    pub(super) fn due_after(&self, ep: &Epoch, slot: Nanos, now: Nanos) -> u64 {
        if ep.mode.poisson {
            // Random slots: how many are due needs their sums; reservations (the only
            // use) are off for Poisson arrivals.
            return 0;
        }
        let by_slot = now.saturating_sub(slot) / (ep.slice.hi + 1);
        if ep.mode.kind != Kind::Burst {
            return by_slot;
        }
        // one more than the spacing of slices one nanosecond longer: an undercount
        let spacing = ep.over_s(ep.slice.hi + 1) + 1;
        by_slot.min(now.saturating_sub(self.burst_floor(ep, slot)) / spacing)
    }

    /// Burst mode: an op that started more than [`BURST_SLACK`] after even the burst
    /// allowance's start restarts the allowance from `BURST_SLACK` before itself
    /// (see `take_adding`).
    #[inline]
    pub(super) fn reanchor_if_behind(&self, ep: &Epoch, slot: Nanos, mapped: Nanos, now: Nanos) {
        if ep.mode.kind == Kind::Burst && now > slot && now > mapped.saturating_add(BURST_SLACK) {
            // The caller arrived well after the burst allowance's start: callers are
            // slower than s x rate, so the allowance restarts from this op, less the
            // slack, and the ops after it start no sooner than slice / s apart once
            // the slack is spent. Only the allowance this epoch belongs to moves: a
            // late op of an old ratio leaves a new anchor alone.
            //
            // The slack is what makes "an op that had to wait and woke late does not
            // re-anchor: its overshoot is absorbed by the ops after it" true: the
            // overshoot makes the *next* caller late to its place on the line, and
            // re-anchoring at that caller's start forfeited it from the catch-up,
            // every time. Once behind, a caller then needed slice / s plus its
            // wake-up's overshoot per op: with 56 us of overshoot at 10K/s (s = 1.1,
            // 9 us of catch-up per op) it never caught up, and one stall of 50 ms
            // stayed in the waits (issue 21's done-when run: wait p99 51 ms on a
            // quiet machine). It also keeps a hot schedule's next ops, arriving
            // nanoseconds later, on the fast path.
            let at = now - BURST_SLACK;
            self.hot
                .anchor
                .raise(ep.mode.tag, ep.anchor_for(slot, at.max(mapped)));
        }
    }
}
