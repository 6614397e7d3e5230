//! The forfeiting modes' path (strict, s = 1, and burst compensation, 0 < s < 1): each
//! ticket is taken by a CAS that adds the op's forfeited lateness to the word's idle
//! in the same step, and a strict op that wakes late forfeits its overshoot too. See
//! `super::schedule` for the ground rules and `docs/pacing.md` for the regimes.

use super::epoch::{Epoch, Kind};
use super::grant::Grant;
use super::schedule::{Schedule, Shared, Toward};
use super::word::{IDLE_MAX, Word};
use crate::clock::Clock;
use crate::nanos::Nanos;
use crate::sync::{Backoff, Ordering};

impl Schedule {
    /// Takes `n` tickets from the word `w` (unpacked: `wd`) and adds `forfeit` to its
    /// idle, in one CAS (AcqRel on success: see the ground rules); false if the word
    /// moved meanwhile.
    #[inline]
    pub(super) fn take_forfeit(&self, w: u64, wd: Word, n: u64, forfeit: u64) -> bool {
        let next = Word {
            epoch: wd.epoch,
            ticket: wd.ticket + n,
            idle: wd.idle + forfeit,
        };
        self.hot
            .word
            .compare_exchange_weak(w, next.pack(), Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Strict and compensating modes: a CAS that takes the ticket and forfeits the
    /// lateness in one step. `None` if the epoch changed kind under us.
    pub(super) fn take_forfeiting<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Option<Grant> {
        let backoff = Backoff::new();
        let (slot, now, strict, toward) = loop {
            let (w, wd, ep) = self.current();
            if !ep.mode.live() || !ep.mode.forfeits() {
                return None;
            }
            let slot = ep.slot(wd.ticket, wd.idle);
            let now = self.observe(sh);
            let strict = ep.mode.kind == Kind::Strict;
            let forfeit = ep.forfeit(now.saturating_sub(slot));
            if wd.idle + forfeit > IDLE_MAX || wd.ticket + n >= ep.soft_limit() {
                return self.take_under_lock(sh, n);
            }
            if self.take_forfeit(w, wd, n, forfeit) {
                break (
                    slot,
                    now,
                    strict,
                    Toward::new(&ep, wd.ticket, slot, n, true),
                );
            }
            backoff.spin();
        };
        if slot <= now {
            self.help_if_late(sh, slot, now);
            return Some(Grant::new(slot, now, n as u32));
        }
        // Early: wait for the slot exactly (a strict schedule releases nothing early).
        let window = if strict {
            0
        } else {
            sh.waiting.release_window_nanos()
        };
        let start = self.wait_from(sh, now, slot, window, toward)?;
        if strict && start > slot {
            self.forfeit_overshoot(&toward.ep, start);
        }
        Some(Grant::new(slot, start, n as u32))
    }

    /// A strict op of epoch `ep` that started late, at `start`, moves the schedule so
    /// that the next slot not yet taken is no earlier than one slice after `start`: it
    /// forfeits how far `start` lies past the latest slot handed out (`ep.slot(ticket -
    /// 1, idle)`), and nothing when that slot is at or after `start`. Alone on the
    /// schedule the latest slot is the op's own, so it forfeits its whole overshoot;
    /// with ops holding slots after its own (the schedule ahead of the clock: no lag),
    /// it forfeits only what keeps the next slot a slice after its start. Forfeiting
    /// each op's own overshoot whatever was held after it summed the overshoots of ops
    /// in flight together: 5 held ops started a slice apart after a 20 ms stall at
    /// 1000/s forfeited 95 ms (95 missed slots, the next slot at 101 ms) instead of
    /// 19 (REFERENCE section 2: lateness is forfeited once callers fall behind, a
    /// positive lag), and 10,000 async tasks at 1M ops/s reached 14 % of the rate. Skipped if
    /// the epoch moved on or the idle field would overflow (the next op then forfeits
    /// its own lateness).
    pub(super) fn forfeit_overshoot(&self, ep: &Epoch, start: Nanos) {
        let mut w = self.hot.word.load(Ordering::Relaxed);
        loop {
            let wd = Word::unpack(w);
            if wd.epoch != ep.number & super::word::EPOCH_MASK || wd.ticket == 0 {
                return;
            }
            let latest = ep.slot(wd.ticket - 1, wd.idle);
            let overshoot = start.saturating_sub(latest);
            if overshoot == 0 || wd.idle + overshoot > IDLE_MAX {
                return;
            }
            let next = Word {
                idle: wd.idle + overshoot,
                ..wd
            };
            match self.hot.word.compare_exchange_weak(
                w,
                next.pack(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(cur) => w = cur,
            }
        }
    }
}
