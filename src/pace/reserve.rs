//! Per-thread reservations: slots a thread takes in one `fetch_add` and hands out one
//! per acquire without touching the shared word. `docs/pacing.md`, "Reservations", has
//! the whole design.
//!
//! A schedule that is behind (its next slots are already due) costs one contended RMW
//! per op only because every op takes its ticket from the shared word. A thread that
//! finds the schedule behind takes the next several tickets at once instead, and its
//! next acquires hand them out from thread-local storage: no shared write, no clock
//! reading (on the real clock their start is read when asked for; on any other clock
//! each hand-out reads it). A thread ahead of a fine-grained schedule takes the few
//! slots half a release window holds and waits once for all of them instead of once
//! per op (each reads the clock). The rules, behind:
//!
//! - only average and burst modes (strict and compensating modes forfeit lateness per
//!   op, which needs the word), only single-slot acquires;
//! - only as many slots as were already due at this thread's last clock reading, no
//!   more than the fast-path limit and [`MAX_RESERVE`];
//! - only as many as this thread hands out within [`HOT_GAP`] of that reading at its
//!   recent pace: a reservation holds slots that other threads would otherwise serve,
//!   so a slow thread holding many would serve them late, out of order;
//! - the due slots handed out without a reading are paid to the burst allowance at
//!   the thread's next reading, as if they had started then
//!   ([`Schedule::pay_unread`]): a stall between the reservation and its hand-outs
//!   would otherwise let them start on top of the allowance's slack;
//! - a restart, pause, stop, change to a forfeiting mode, change between average and
//!   burst modes or change of burst ratio voids every reservation taken before it (the
//!   schedule's `era`); so does a raise that cuts the schedule (docs/pacing.md, "Rate
//!   raised from far ahead"), kept slots included: they stay counted as grants (the
//!   overcount below). A change that does not cut does not void them, since the
//!   change accounted the reserved tickets as granted in their epoch.
//!
//! (A thread that took tickets and then found their epoch's ring slot overwritten,
//! having been preempted across 32 reconfigurations, is granted one and leaves the
//! rest unused as well.)
//!
//! Reserved slots a thread never hands out (it stopped acquiring, moved to another
//! limiter, or its reservation was voided) stay counted in
//! [`LimiterStats::grants`](crate::LimiterStats::grants), at most `MAX_RESERVE - 1` per
//! thread per such event; a thread that moved to another limiter while holding
//! reserved slots reserves again only after [`COOLDOWN`] consecutive acquires on one.

use super::epoch::{Epoch, Kind};
use super::grant::Grant;
use super::schedule::{BURST_SLACK, Schedule, Shared, Toward};
use super::word::Word;
use crate::clock::Clock;
use crate::nanos::Nanos;
use crate::sync::{self, Ordering};
use std::cell::Cell;

#[cfg(not(loom))]
sync::thread_local! {
    /// This thread's reservation.
    pub(super) static RESERVATION: Reservation = const { Reservation::empty() };
}
// loom's macro takes a plain initializer.
#[cfg(loom)]
sync::thread_local! {
    pub(super) static RESERVATION: Reservation = Reservation::empty();
}

/// Readings at most this far apart make a schedule "hot": ops arrive fast enough
/// that a slot last-seen shows due may be granted without a reading. Also the span
/// of a thread's own time a reservation behind the schedule may cover.
pub(crate) const HOT_GAP: Nanos = 2_000;

/// `mark` before the thread's first reading on its schedule.
const UNKNOWN: Nanos = Nanos::MAX;

/// The most slots one reservation takes, whatever the fast-path limit: far below the
/// hot word's headroom past its soft limit (2^26 tickets) for any number of threads.
pub(crate) const MAX_RESERVE: u64 = 64;

/// After moving to another schedule while holding reserved slots (which are lost to
/// their schedule), a thread reserves again only after this many consecutive acquires
/// on one schedule: a thread that uses limiters in turn loses at most `MAX_RESERVE - 1`
/// slots per this many acquires, and none if it switches more often.
pub(crate) const COOLDOWN: u64 = 4096;

/// One thread's reservation on one schedule.
#[derive(Debug)]
pub(crate) struct Reservation {
    /// The schedule it belongs to (its id); 0 for none.
    pub(crate) owner: Cell<u64>,
    /// The schedule's era when taken.
    pub(crate) era: Cell<u64>,
    /// The epoch the tickets belong to.
    pub(crate) epoch: Cell<Epoch>,
    /// The word's idle when taken.
    pub(crate) idle: Cell<u64>,
    /// The next ticket to hand out.
    pub(crate) next: Cell<u64>,
    /// The slot of ticket `next` without idle (whole ns) and its fraction (2^-64 ns):
    /// each hand-out adds the slice to it, exactly what `Epoch::slot` computes with a
    /// multiply.
    pub(crate) pos: Cell<u64>,
    pub(crate) pos_frac: Cell<u64>,
    /// Tickets below this were due at the reservation's reading.
    pub(crate) due: Cell<u64>,
    /// The first due ticket handed out since this thread's last clock reading: the due
    /// tickets from here to `min(next, due)` were handed out without one and are not yet
    /// paid to the burst allowance (see [`Schedule::pay_unread`]).
    pub(crate) unpaid: Cell<u64>,
    /// One past the last ticket.
    pub(crate) end: Cell<u64>,
    /// How many tickets the next reservation takes (1: none).
    pub(crate) want: Cell<u64>,
    /// This thread's last clock reading on the owner's behalf.
    pub(crate) mark: Cell<Nanos>,
    /// Grants this thread took from the owner since `mark`.
    pub(crate) since: Cell<u64>,
    /// The start of this thread's last grant that read the clock; `UNKNOWN` before.
    pub(crate) last_start: Cell<Nanos>,
    /// Acquires on this schedule still to go before this thread reserves again (see
    /// [`COOLDOWN`]).
    pub(crate) cooldown: Cell<u64>,
}

impl Reservation {
    /// No reservation (a `const fn` rather than a constant: the fields are cells).
    pub(crate) const fn empty() -> Self {
        Self {
            owner: Cell::new(0),
            era: Cell::new(0),
            epoch: Cell::new(Epoch::ZERO),
            idle: Cell::new(0),
            next: Cell::new(0),
            pos: Cell::new(0),
            pos_frac: Cell::new(0),
            due: Cell::new(0),
            unpaid: Cell::new(0),
            end: Cell::new(0),
            want: Cell::new(1),
            mark: Cell::new(UNKNOWN),
            since: Cell::new(0),
            last_start: Cell::new(UNKNOWN),
            cooldown: Cell::new(0),
        }
    }

    /// Makes `owner` this thread's schedule, dropping a reservation on another one.
    /// The thread's pace is unknown until its next clock reading.
    #[inline]
    pub(crate) fn claim(&self, owner: u64) {
        if self.owner.get() != owner {
            if self.next.get() < self.end.get() || self.cooldown.get() > 0 {
                self.cooldown.set(COOLDOWN);
            }
            self.owner.set(owner);
            self.next.set(0);
            self.due.set(0);
            self.unpaid.set(0);
            self.end.set(0);
            self.want.set(1);
            self.mark.set(UNKNOWN);
            self.since.set(0);
            self.last_start.set(UNKNOWN);
        }
    }

    /// Starts handing out tickets from `next` of epoch `ep` with idle `idle`.
    pub(crate) fn start_at(&self, ep: &Epoch, idle: u64, next: u64) {
        let (whole, frac) = ep.slice.advance(ep.frac, next);
        self.epoch.set(*ep);
        self.idle.set(idle);
        self.next.set(next);
        self.pos.set(ep.base.saturating_add(whole));
        self.pos_frac.set(frac);
    }

    /// Moves on to the next ticket; returns the slot of the one handed out.
    #[inline(always)]
    fn step(&self, next: u64) -> Nanos {
        let slot = self.pos.get().saturating_add(self.idle.get());
        let slice = self.epoch.get().slice;
        let (frac, carry) = self.pos_frac.get().overflowing_add(slice.lo);
        self.pos_frac.set(frac);
        self.pos
            .set(self.pos.get().saturating_add(slice.hi + u64::from(carry)));
        self.next.set(next + 1);
        self.since.set(self.since.get() + 1);
        slot
    }

    /// Hands out the next ticket if it was due when the reservation was taken and the
    /// reservation is still valid in `era`; returns its slot.
    #[inline(always)]
    pub(crate) fn next_due(&self, owner: u64, era: u64) -> Option<Nanos> {
        let next = self.next.get();
        if self.owner.get() != owner || next >= self.due.get() || self.era.get() != era {
            return None;
        }
        Some(self.step(next))
    }

    /// Hands out the next reserved ticket that was not yet due when taken, if any;
    /// returns `(ticket, slot)`.
    #[inline]
    pub(crate) fn next_pending(&self, owner: u64, era: u64) -> Option<(u64, Nanos)> {
        let next = self.next.get();
        if self.owner.get() != owner || next >= self.end.get() || self.era.get() != era {
            return None;
        }
        Some((next, self.step(next)))
    }

    /// Drops whatever is left (a void reservation). The due tickets already handed out
    /// stay unpaid until the thread's next reading.
    #[inline]
    pub(crate) fn drop_rest(&self) {
        self.due.set(self.next.get().min(self.due.get()));
        self.next.set(self.end.get());
    }

    /// Takes the count of due tickets handed out since the last reading, from ticket
    /// [`unpaid`](Self::unpaid) on, and marks them paid.
    #[inline]
    pub(crate) fn take_unpaid(&self) -> (u64, u64) {
        let from = self.unpaid.get();
        let to = self.next.get().min(self.due.get());
        self.unpaid.set(to.max(from));
        (from, to.saturating_sub(from))
    }

    /// Records a clock reading `now` at which this thread had to wait (the schedule is
    /// ahead of it) and sizes the next reservation: the `fit` slots half a release
    /// window holds, so that one wait releases them all, but only if this thread's last op
    /// (from its start to `now`) took at most half a slice of `slice` ns, so that it
    /// runs them back to back without falling behind; at most `limit` and
    /// [`MAX_RESERVE`], and none during a [`COOLDOWN`].
    #[inline]
    pub(crate) fn note_ahead(&self, now: Nanos, fit: u64, slice: Nanos, limit: u64) {
        let last = self.last_start.get();
        let short = last != UNKNOWN && now.saturating_sub(last).saturating_mul(2) <= slice;
        self.want.set(if short && self.cooldown.get() == 0 {
            fit.min(limit).clamp(1, MAX_RESERVE)
        } else {
            1
        });
        self.mark.set(now);
        self.since.set(0);
    }

    /// Records a clock reading `now` on the owner's behalf at which `more` slots after
    /// the one just granted were already due, and sizes the next reservation: at most
    /// `more`, at most `limit` and [`MAX_RESERVE`], none during a [`COOLDOWN`], and at
    /// most what this thread hands out within
    /// [`HOT_GAP`] at its pace since the previous reading.
    #[inline]
    pub(crate) fn note(&self, now: Nanos, more: u64, limit: u64) {
        let since = self.since.get().max(1);
        let by_pace = match self.mark.get() {
            UNKNOWN => 1,
            mark if now <= mark => limit,
            mark => HOT_GAP.saturating_mul(since) / (now - mark),
        };
        self.want.set(if self.cooldown.get() > 0 {
            1
        } else {
            more.min(by_pace).min(limit).clamp(1, MAX_RESERVE)
        });
        self.mark.set(now);
        self.since.set(0);
    }
}

/// What [`Schedule::next_reserved`] returns when it has no slot (no slot is this late).
pub(super) const NO_SLOT: Nanos = Nanos::MAX;

impl Schedule {
    /// The slot of this thread's next reserved ticket that was due at its reservation's
    /// reading, or [`NO_SLOT`]. The hand-out path: a few thread-local cells and the
    /// read-mostly gate line, no shared write and no clock; it returns a bare number so
    /// that nothing but a register leaves the thread-local access.
    #[inline(always)]
    pub(super) fn next_reserved(&self, r: &Reservation) -> Nanos {
        let id = self.gate.id;
        if r.owner.get() != id || self.gate.slow.load(Ordering::Relaxed) {
            return NO_SLOT;
        }
        r.next_due(id, self.gate.era.load(Ordering::Relaxed))
            .unwrap_or(NO_SLOT)
    }

    /// When [`next_reserved`](Self::next_reserved) had nothing: a pending reserved slot,
    /// or a new reservation when the thread's last reading found enough slots due;
    /// `None` sends the caller down the shared path. See `super::reserve` for the
    /// rules.
    pub(super) fn take_reserved<C: Clock>(&self, sh: &Shared<C>, r: &Reservation) -> Option<Grant> {
        let id = self.gate.id;
        if r.owner.get() != id {
            r.claim(id);
            return None;
        }
        if self.gate.slow.load(Ordering::Relaxed) {
            r.drop_rest();
            return None;
        }
        let era = self.gate.era.load(Ordering::Relaxed);
        if let Some(slot) = r.next_due(id, era) {
            return Some(sh.unread(slot, 1));
        }
        if let Some((ticket, slot)) = r.next_pending(id, era) {
            return self.serve_pending(sh, r, ticket, slot);
        }
        if r.want.get() > 1 {
            return self.take_reservation(sh, r);
        }
        r.since.set(r.since.get() + 1);
        r.cooldown.set(r.cooldown.get().saturating_sub(1));
        None
    }

    /// Returns what is left of this thread's reservation to the schedule if no ticket
    /// was taken after it (always so for a single thread), so that a batch or a
    /// `try_acquire` after single acquires takes the next slots in order. Otherwise
    /// the rest stays unused (see `super::reserve`).
    #[cold]
    pub(super) fn give_back_reservation(&self) {
        RESERVATION.with(|r| {
            let (next, end) = (r.next.get(), r.end.get());
            if r.owner.get() != self.gate.id || next >= end {
                return;
            }
            r.drop_rest();
            if r.era.get() == self.gate.era.load(Ordering::Acquire) {
                self.return_tickets(r.epoch.get().number, end, next);
            }
        });
    }

    /// A reserved ticket that was not yet due when reserved: waits for it like any slot.
    /// `None` if the limiter stopped meanwhile.
    #[cold]
    fn serve_pending<C: Clock>(
        &self,
        sh: &Shared<C>,
        r: &Reservation,
        ticket: u64,
        slot: Nanos,
    ) -> Option<Grant> {
        let ep = r.epoch.get();
        let now = self.observe(sh);
        self.pay_unread(r, &ep, slot, now);
        let earliest = self.earliest_of(&ep, ticket, r.idle.get());
        let window = sh.waiting.release_window_nanos();
        let rest = r.end.get().max(ticket + 1) - ticket;
        if self.cut_since(ep.number, slot) {
            // Reserved before a cut, decided after it: this slot and the rest (later
            // slots) are given back (review p17 M3).
            self.give_back_cut(&Toward::new(&ep, ticket, slot, rest, true));
            r.drop_rest();
            return None;
        }
        let start = if earliest <= now {
            // Late: the thread was held up. No restart of the burst allowance from
            // here: other threads have served the slots after this one, and an
            // allowance restarted from this old slot would hold them all back. But
            // a held-up op spends one op of the allowance (slice / s): the anchor
            // moves on by that much, so that the ops held up in every thread's
            // reservation and the schedule's late ops together still start no
            // faster than s x rate.
            if now > earliest.saturating_add(window / 2) && ep.mode.kind == Kind::Burst {
                self.hot.anchor.spend(ep.mode.tag, ep.burst_spacing());
            }
            self.help_if_late(sh, slot, now);
            now
        } else {
            // A pause voids this slot and the reservation's rest.
            let toward = Toward::new(&ep, ticket, slot, rest, true);
            let Some(start) = self.wait_from(sh, now, earliest, window, toward) else {
                r.drop_rest();
                return None;
            };
            start
        };
        r.last_start.set(start);
        Some(Grant::new(slot, start, 1))
    }

    /// Takes `r.want` tickets in one `fetch_add`, grants the first and keeps the rest
    /// in `r`. `None` if the tickets were void (the caller starts over).
    #[inline(never)]
    fn take_reservation<C: Clock>(&self, sh: &Shared<C>, r: &Reservation) -> Option<Grant> {
        let k = r.want.get();
        // Before the tickets: an era read here that a restart already bumped implies
        // the tickets come from the new epoch (the bump follows the install).
        let era = self.gate.era.load(Ordering::Acquire);
        let floor = self.floor();
        let w = self.hot.word.fetch_add(Word::tickets(k), Ordering::Acquire);
        let wd = Word::unpack(w);
        r.since.set(r.since.get() + 1);
        let Some(ep) = self.ring.read_from(wd.epoch, floor) else {
            r.want.set(1);
            return Some(self.stale_grant(sh, 1));
        };
        if !ep.mode.live() {
            r.want.set(1);
            return None;
        }
        if ep.mode.forfeits() {
            r.want.set(1);
            self.give_up(&ep, wd.ticket, k);
            return None;
        }
        if wd.ticket + k >= ep.soft_limit() {
            self.roll_over(ep.number);
        }
        let ticket = wd.ticket;
        let first = ep.slot(ticket, wd.idle);
        let now = self.observe(sh);
        // Before the new reservation replaces the old one's count.
        self.pay_unread(r, &ep, first, now);
        if self.cut_since(ep.number, first) {
            // Taken before a cut, decided after it: every ticket's slot is at or
            // after the first's, so all are given back (review p17 M3).
            r.want.set(1);
            self.give_back_cut(&Toward::new(&ep, ticket, first, k, true));
            return None;
        }
        let mapped = self.burst_floor(&ep, first);
        let earliest = first.max(mapped);
        let window = sh.waiting.release_window_nanos();
        let late = earliest <= now;
        if late {
            self.help_if_late(sh, first, now);
            self.reanchor_if_behind(&ep, first, mapped, now);
        }
        // Late: tickets [ticket, ticket + keep) are due now. Early: those whose
        // earliest start is within half the release window of the first one's.
        let half = window / 2;
        let limit_of_keep = if late {
            now
        } else {
            earliest.saturating_add(half)
        };
        let mut keep = (1 + self.due_after(&ep, first, limit_of_keep)).min(k);
        if keep > 1 && self.earliest_of(&ep, ticket + keep - 1, wd.idle) > limit_of_keep {
            keep = 1; // an anchor moved meanwhile; serve the rest one by one
        }
        if keep > 1 && self.cut_since(ep.number, ep.slot(ticket + keep - 1, wd.idle)) {
            // A cut gave back the last of them: serve the rest one by one (each
            // checks the cut; the cut's era bump voids them).
            keep = 1;
        }
        if self.gate.era.load(Ordering::Acquire) != era {
            // A restart, pause or mode change landed between the era read and the
            // tickets: they may be the new schedule's, labelled with the old era.
            keep = 1;
        }
        let mut end = ticket + k;
        if keep < k && self.return_tickets(ep.number, end, ticket + keep) {
            end = ticket + keep;
        }
        r.era.set(era);
        r.start_at(&ep, wd.idle, ticket + 1);
        r.due.set(if late { ticket + keep } else { ticket + 1 });
        r.unpaid.set(ticket + 1);
        r.end.set(end);
        let start = if late {
            let more = if keep == k {
                self.due_after(&ep, ep.slot(end - 1, wd.idle), now)
            } else {
                0
            };
            r.note(now, more, sh.fast_path_limit);
            now
        } else {
            r.note_ahead(
                now,
                self.fit_ahead(&ep, window),
                ep.slice.hi,
                sh.fast_path_limit,
            );
            // One wait, until half a window before the first: a wake-up up to half a
            // window late still starts the first on time, and the last, at most half
            // a window after the first, is then within the window of its slot.
            // A pause voids the whole reservation.
            let toward = Toward::new(&ep, ticket, first, end - ticket, true);
            let Some(start) = self.wait_from(sh, now, earliest, half, toward) else {
                r.drop_rest();
                return None;
            };
            start
        };
        r.last_start.set(start);
        Some(Grant::new(first, start, 1))
    }

    /// Pays the burst allowance for the due reserved slots this thread handed out since
    /// its last reading, at its next reading `now` (for the grant of `slot` in `ep`).
    ///
    /// Those hand-outs read no clock (on the real clock their start is read when asked
    /// for), so a stall between the reservation and them goes unseen: had each read the
    /// clock, the first after the stall would have restarted the allowance from itself
    /// (`reanchor_if_behind`), and the ones after it, this grant included, would start
    /// a spacing apart. The hand-outs may have started as late as `now`, so the
    /// allowance is restarted as if they all had: `slot` starts no earlier than
    /// `now - BURST_SLACK` plus the spacings of those `u` slots. Only this thread's own
    /// slots count, never the tickets other threads took meanwhile (restarting from the
    /// first unpaid slot would hold their on-time slots back by their own number), and
    /// the raise is the same monotone CAS as a late op's restart. Returns whether the
    /// slots were paid (the caller reads `slot`'s earliest start again).
    #[inline]
    pub(super) fn pay_unread(&self, r: &Reservation, ep: &Epoch, slot: Nanos, now: Nanos) -> bool {
        if r.owner.get() != self.gate.id {
            return false;
        }
        let (from, u) = r.take_unpaid();
        let theirs = r.epoch.get();
        if u == 0
            || ep.mode.kind != Kind::Burst
            || theirs.mode.kind != Kind::Burst
            || theirs.mode.tag != ep.mode.tag
        {
            return false; // nothing handed out, or another allowance's slots
        }
        let at = now
            .saturating_sub(BURST_SLACK)
            .saturating_add(ep.over_s(theirs.span(from, u)));
        self.hot.anchor.raise(ep.mode.tag, ep.anchor_for(slot, at));
        true
    }

    /// How many slots one reservation ahead of the schedule takes: those half a release
    /// window holds, so that one wait releases them all (see `take_reservation`).
    #[inline]
    pub(super) fn fit_ahead(&self, ep: &Epoch, window: Nanos) -> u64 {
        if ep.mode.poisson {
            return 1; // reservations are off for random slots (see `due_after`)
        }
        1 + window / 2 / (ep.slice.hi + 1)
    }

    /// Tells this thread's reservation about a clock reading on a single-slot grant.
    #[inline]
    pub(super) fn note_reading(&self, now: Nanos, more: u64, limit: u64) {
        RESERVATION.with(|r| {
            if r.owner.get() == self.gate.id {
                r.note(now, more, limit);
                r.last_start.set(now);
            }
        });
    }

    /// Tells this thread's reservation about a single-slot grant that had to wait
    /// (from reading `now` until `start`): the next reservation is sized ahead.
    #[inline]
    pub(super) fn note_wait(
        &self,
        now: Nanos,
        start: Nanos,
        ep: &Epoch,
        window: Nanos,
        limit: u64,
    ) {
        let fit = self.fit_ahead(ep, window);
        RESERVATION.with(|r| {
            if r.owner.get() == self.gate.id {
                r.note_ahead(now, fit, ep.slice.hi, limit);
                r.last_start.set(start);
            }
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_next_reservation_is_bounded_by_backlog_pace_and_limit() {
        let r = Reservation::empty();
        r.claim(7);
        // the first reading: the thread's pace is unknown, so no reservation yet
        r.note(1_000, 100, 32);
        assert_eq!(r.want.get(), 1);
        // 100 due, 4 grants in 400 ns: 100 ns each, so 20 fit in the 2 us gap.
        r.since.set(4);
        r.note(1_400, 100, 32);
        assert_eq!(r.want.get(), 20);
        // a static clock: the pace says nothing, the limit and backlog decide
        r.note(1_400, 100, 32);
        assert_eq!(r.want.get(), 32);
        r.note(1_400, 5, 32);
        assert_eq!(r.want.get(), 5);
        // nothing more due: no reservation
        r.note(1_400, 0, 32);
        assert_eq!(r.want.get(), 1);
        // a slow thread (one grant per 10 us) reserves nothing even far behind
        r.note(11_400, 1_000, 32);
        assert_eq!(r.want.get(), 1);
    }

    #[test]
    fn a_reservation_hands_out_due_tickets_then_pending_ones_in_its_era_only() {
        let r = Reservation::empty();
        r.claim(3);
        r.era.set(1);
        // 1000/s from 5 ms, 2 ns of idle: ticket k's slot is 5 ms + k ms + 2
        let mut ep = Epoch::ZERO;
        ep.base = 5_000_000;
        ep.slice = super::super::slice::Slice::of_rate(1000.0);
        r.start_at(&ep, 2, 10);
        r.due.set(12);
        r.end.set(14);
        assert_eq!(r.next_due(3, 1), Some(15_000_002));
        assert_eq!(r.next_due(4, 1), None, "another schedule");
        assert_eq!(r.next_due(3, 2), None, "another era");
        assert_eq!(r.next_due(3, 1), Some(16_000_002));
        assert_eq!(r.next_due(3, 1), None, "12 and 13 were not due");
        assert_eq!(r.next_pending(3, 1), Some((12, 17_000_002)));
        r.drop_rest();
        assert_eq!(r.next_pending(3, 1), None);
        // claiming for another schedule forgets everything
        r.claim(4);
        assert_eq!((r.next.get(), r.end.get(), r.want.get()), (0, 0, 1));
    }
}
