//! Parking (opt-in, [`Waiting::parks_when_ahead`]): callers the schedule does not need
//! yet wait without a slot while another caller sleeps on an earlier one.
//! `docs/pacing.md`, "Parking", has the design and its measured costs.
//!
//! `waiters.sleepers` (callers sleeping on a slot) and `waiters.parked` (callers
//! parked without a slot) are counts that only decide whether to park or to wake
//! parked callers; they publish no memory, Relaxed. Both are kept only when the
//! limiter's waiting parks (fixed at construction). A wake-up lost to a race (a late
//! op that reads `parked` just before a caller parks) is bounded by the park's
//! timeout, `PARK_MAX`, and costs no slot or wait.
//!
//! [`Waiting::parks_when_ahead`]: crate::Waiting::parks_when_ahead

use super::schedule::{Schedule, Shared};
use crate::clock::{Clock, PARK_MAX};
use crate::nanos::Nanos;
use crate::sync::Ordering;

impl Schedule {
    /// Parks the caller, holding no slot, while the next slot is further away than the
    /// release window and another caller already sleeps on an earlier slot: that caller
    /// comes back for the next slots, so taking one now would only add a thread that
    /// sleeps once per op. Returns when a slot is near, nobody sleeps on one, an op
    /// started late ([`help_if_late`](Self::help_if_late)), the spec changed, the
    /// limiter stopped, or after `PARK_MAX`, whichever is first; the caller then takes
    /// its slot as usual.
    #[cold]
    pub(super) fn park_while_ahead<C: Clock>(&self, sh: &Shared<C>) {
        let window = sh.waiting.release_window_nanos();
        let parked = &self.waiters.parked;
        loop {
            let generation = sh.signal.generation();
            parked.fetch_add(1, Ordering::Relaxed);
            let (_, wd, ep) = self.current();
            // Only where one caller can release several ops per wake-up (slots closer
            // than the window); at coarser spacings every op costs a wake-up anyway.
            let ahead = ep.mode.live() && ep.slice.hi < window && !sh.signal.is_stopped() && {
                self.earliest_of(&ep, wd.ticket, wd.idle) > self.observe(sh).saturating_add(window)
            };
            if !ahead || self.waiters.sleepers.load(Ordering::Relaxed) == 0 {
                parked.fetch_sub(1, Ordering::Relaxed);
                return;
            }
            sh.signal.wait_change_for(generation, PARK_MAX);
            parked.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// An op that starts more than the release window late (the callers serving the
    /// schedule cannot keep up) wakes the parked callers to help.
    #[inline]
    pub(super) fn help_if_late<C: Clock>(&self, sh: &Shared<C>, slot: Nanos, now: Nanos) {
        if sh.waiting.parks_when_ahead()
            && now > slot.saturating_add(sh.waiting.release_window_nanos())
            && self.waiters.parked.load(Ordering::Relaxed) > 0
        {
            sh.signal.notify();
        }
    }
}
