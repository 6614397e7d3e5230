//! The schedule's waits and the paths off the hot one: waiting from a clock
//! reading toward a slot (and a pause or a stop that comes first), tickets that
//! will never start (void, stale), a schedule that is not live (unanchored,
//! paused, stopped), and `try_acquire`, which never waits for its slot.
//!
//! The ground rules of [`super::schedule`] hold here: `gate.paused` is read
//! Acquire (a pause installed after an epoch voids its slots not yet started),
//! `hot.seen` moves forward Relaxed (a hint), `voided`, `voided_nanos` and
//! `stale` are Relaxed counters read by `stats`.

use super::epoch::{Epoch, Kind, RING};
use super::grant::{Grant, Refused};
use super::reserve::RESERVATION;
use super::schedule::{BURST_SLACK, Schedule, Shared, Toward};
use super::word::EPOCH_MASK;
use super::word::IDLE_MAX;
use crate::clock::Clock;
use crate::nanos::Nanos;
use crate::sync::{self, Backoff, Ordering};

/// Orders a taker's clock reading (or its load of last-seen) before its load of
/// `gate.cut` in [`Schedule::cut_since`]: the taker's half of the store-buffering
/// pair whose other half is the setter's SeqCst store and SeqCst fence before its
/// reading. On x86 the CPU keeps a load after earlier loads and locked RMWs (a manual
/// clock's moves), so only the compiler is held; elsewhere, and under loom (which
/// models a SeqCst load as an Acquire one), a SeqCst fence. A real clock's reading
/// is an instant: the CPU may still read the counter a few nanoseconds after the
/// load, within the cut's margin (see docs/pacing.md, "Rate raised from far ahead").
#[inline(always)]
fn order_reading_before_mark() {
    #[cfg(any(loom, not(any(target_arch = "x86", target_arch = "x86_64"))))]
    sync::fence(Ordering::SeqCst);
    #[cfg(all(not(loom), any(target_arch = "x86", target_arch = "x86_64")))]
    sync::compiler_fence(Ordering::SeqCst);
}

/// What a caller that found the schedule not live does next.
pub(super) enum NotLive {
    /// The limiter stopped: this grant.
    Stopped(Grant),
    /// The caller's `give_up` held while paused: no slot.
    GaveUp,
    /// Look at the schedule again (anchored, or the pause may have ended).
    Again,
}

impl Schedule {
    /// Waits, from clock reading `now`, until `earliest` (releasing up to `window`
    /// early); `None` if stopped, or if a pause came before the slot: then the
    /// tickets `toward` are void (the caller starts over and waits out the pause).
    ///
    /// A pause interrupts the wait (`Signal::interrupt`), and the schedule is looked
    /// at again when the slot is reached, so an op never starts during a pause on a
    /// slot taken before it (issue 23, item 5: at 2 ops/s, an op started 350 ms
    /// into a 1 s pause).
    #[inline]
    pub(super) fn wait_from<C: Clock>(
        &self,
        sh: &Shared<C>,
        now: Nanos,
        earliest: Nanos,
        window: Nanos,
        toward: Toward,
    ) -> Option<Nanos> {
        if earliest <= now.saturating_add(window) {
            return Some(now);
        }
        // The interruption count is read before the schedule is looked at, and the
        // sleep ends if it moved since: a pause or cut stored after the checks below
        // interrupts after its store, so either a check sees it or the sleep is cut
        // short (review p17 M1: read inside the sleep, after the checks, the count
        // already included the cut's interruption, and the caller slept to its old
        // slot).
        let mut seen = sh.signal.interruptions();
        if self.paused_since(toward.ep.number) {
            self.void_tickets(&toward);
            return None;
        }
        if self.cut_since(toward.ep.number, toward.slot) {
            self.give_back_cut(&toward);
            return None;
        }
        // Only parking reads the count.
        let parks = sh.waiting.parks_when_ahead();
        let sleepers = &self.waiters.sleepers;
        loop {
            if parks {
                sleepers.fetch_add(1, Ordering::Relaxed);
            }
            let after = sh.wait_until_seen(earliest - window, seen);
            if parks {
                sleepers.fetch_sub(1, Ordering::Relaxed);
            }
            if sh.signal.is_stopped() {
                return None;
            }
            seen = sh.signal.interruptions();
            if self.paused_since(toward.ep.number) {
                self.void_tickets(&toward);
                return None;
            }
            if self.cut_since(toward.ep.number, toward.slot) {
                self.give_back_cut(&toward);
                return None;
            }
            if after.saturating_add(window) >= earliest {
                self.hot.seen.fetch_max(after << 1, Ordering::Relaxed);
                return Some(after);
            }
            // Interrupted by a cut that kept this slot: it is still ahead.
        }
    }

    /// Whether a cut installed after epoch `number` gave back the slot `slot` of a
    /// ticket of that epoch (see [`Epoch::cut`]). One load while no cut came after the
    /// epoch and none is under way; the ring is read only when one did, and the control
    /// lock is taken only when a change that may cut is under way.
    ///
    /// Every final decision (a due grant, the seen fast path, a sleeper's wake-up
    /// check, an async finish) calls this AFTER the clock reading (or last-seen load)
    /// it decides on. A change that may cut stores its pending epoch number in
    /// `gate.cut` (SeqCst, then a SeqCst fence) before it reads the clock (see
    /// `Schedule::set_spec`); here the reading is ordered before the load
    /// ([`order_reading_before_mark`]). So either this load sees the mark (and
    /// [`cut_between`](Self::cut_between) waits for the change under the control lock,
    /// then re-checks), or this taker's reading came before the change's, its slot
    /// is at most that reading plus the release window, and that lies before the cut
    /// (`reading + max(new slice, window) + 1`): no slot at or after a cut is granted
    /// by a decision the cut did not see (review p17 M3).
    #[inline]
    pub(super) fn cut_since(&self, number: u64, slot: Nanos) -> bool {
        order_reading_before_mark();
        let latest = self.gate.cut.load(Ordering::SeqCst);
        latest > number && self.cut_between(number, latest, slot)
    }

    /// Whether any epoch after `number` up to `latest` cut at or before `slot`. An
    /// epoch whose ring slot was overwritten (32 epochs on) counts as a cut: the taker
    /// gives back a slot the schedule may have kept, which skips that slot and never
    /// hands one out twice. A `latest` above the installed epoch is a change under way
    /// (its pending mark): the taker waits for it under the control lock and looks
    /// again; a change begun after that lock came after this taker's reading, so its
    /// mark is not waited for.
    #[cold]
    fn cut_between(&self, number: u64, latest: u64, slot: Nanos) -> bool {
        // Acquire: an installed epoch's ring slot was written before this store.
        let installed = self.gate.epoch.load(Ordering::Acquire);
        let latest = if latest > installed {
            drop(sync::lock(&self.control));
            let installed = self.gate.epoch.load(Ordering::Acquire);
            self.gate.cut.load(Ordering::Acquire).min(installed)
        } else {
            latest
        };
        if latest <= number {
            return false;
        }
        if latest - number >= RING as u64 {
            return true;
        }
        (number + 1..=latest).any(|e| match self.ring.read(e & EPOCH_MASK) {
            Some(ep) if ep.number == e => ep.cut <= slot,
            _ => true,
        })
    }

    /// Tickets whose slot a cut gave back: never granted, not missed (their time is
    /// the new epoch's). They cannot go back to the word: their epoch has ended.
    #[cold]
    pub(super) fn give_back_cut(&self, t: &Toward) {
        self.returned_at_cut(t.ep.number, t.n);
    }

    /// Whether a pause was installed after epoch `number`: its slots not yet started
    /// are void.
    #[inline]
    pub(super) fn paused_since(&self, number: u64) -> bool {
        self.gate.paused.load(Ordering::Acquire) > number
    }

    /// Tickets that will never start (a pause came first, a future was dropped):
    /// back to the word if nobody took a ticket since, otherwise void (missed slots,
    /// idle time, never grants).
    #[cold]
    pub(super) fn void_tickets(&self, t: &Toward) {
        let returned = t.back && self.return_tickets(t.ep.number, t.ticket + t.n, t.ticket);
        if !returned {
            self.voided.fetch_add(t.n, Ordering::Relaxed);
            self.voided_nanos
                .fetch_add(t.ep.span(t.ticket, t.n), Ordering::Relaxed);
        }
    }

    /// A ticket whose epoch slot was overwritten before it could be read.
    #[cold]
    pub(super) fn stale_grant<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Grant {
        self.stale.fetch_add(1, Ordering::Relaxed);
        let now = self.observe(sh);
        Grant::new(now, now, n as u32)
    }

    /// Handles an epoch whose tickets are void: anchors, waits out a pause (unless
    /// `give_up` holds), or reports the stop.
    #[cold]
    pub(super) fn not_live<C: Clock>(
        &self,
        sh: &Shared<C>,
        ep: Epoch,
        give_up: &dyn Fn() -> bool,
    ) -> NotLive {
        if ep.mode.stopped || sh.signal.is_stopped() {
            return NotLive::Stopped(Grant::stopped(sh.now()));
        }
        if ep.mode.unanchored {
            self.anchor_first(sh, ep.number);
            return NotLive::Again;
        }
        // Paused: block until the epoch changes, the limiter stops or someone wakes
        // the waiters. The generation is read before `give_up` is asked: a caller
        // that makes `give_up` hold and then wakes the waiters is seen either way.
        let generation = sh.signal.generation();
        if give_up() {
            return NotLive::GaveUp;
        }
        let (_, _, cur) = self.current();
        if cur.number == ep.number {
            sh.signal.wait_change(generation);
        }
        NotLive::Again
    }

    /// Takes one slot only if it is due now (within the release window).
    pub(crate) fn try_acquire<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Result<Grant, Refused> {
        self.give_back_reservation();
        let backoff = Backoff::new();
        loop {
            let (w, wd, ep) = self.current();
            if ep.mode.stopped || sh.signal.is_stopped() {
                return Ok(Grant::stopped(sh.now()));
            }
            if ep.mode.paused {
                return Err(Refused::Paused);
            }
            if ep.mode.unanchored {
                self.anchor_first(sh, ep.number);
                continue;
            }
            let slot = ep.slot(wd.ticket, wd.idle);
            let now = self.observe(sh);
            if ep.mode.kind == Kind::Burst && sh.fast_path_limit > 1 {
                RESERVATION.with(|r| self.pay_unread(r, &ep, slot, now));
            }
            let mapped = self.burst_floor(&ep, slot);
            let earliest = slot.max(mapped);
            let window = if ep.mode.kind == Kind::Strict {
                0
            } else {
                sh.waiting.release_window_nanos()
            };
            if earliest > now.saturating_add(window) {
                return Err(Refused::NotUntil(earliest - window));
            }
            let forfeit = ep.forfeit(now.saturating_sub(slot));
            if wd.idle + forfeit > IDLE_MAX || wd.ticket + n >= ep.soft_limit() {
                if ep.mode.forfeits() {
                    // The forfeit goes into a fresh epoch's base, under the lock (a
                    // rollover alone would leave it too large for the idle field).
                    match self.forfeit_under_lock(sh, n, Some(window)) {
                        None => continue,
                        Some(Ok((slot, now, _, _))) => return Ok(Grant::new(slot, now, n as u32)),
                        Some(Err(refused)) => return Err(refused),
                    }
                }
                // A fresh epoch makes room; then try again.
                self.roll_over(ep.number);
                continue;
            }
            if self.take_forfeit(w, wd, n, forfeit) {
                if ep.mode.kind == Kind::Burst
                    && now > slot
                    && now > mapped.saturating_add(BURST_SLACK)
                {
                    let at = now - BURST_SLACK;
                    self.hot.anchor.raise(ep.mode.tag, ep.anchor_for(slot, at));
                }
                return Ok(Grant::new(slot, now, n as u32));
            }
            backoff.spin();
        }
    }
}
