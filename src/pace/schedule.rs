//! One schedule: the hot word, the epoch ring, and the control state behind a mutex.
//!
//! # Ground rules
//!
//! - `hot.word` ([`super::word`]) is the only contended word. Tickets are taken with
//!   `fetch_add` (Acquire: the taker must see the epoch slot installed before its
//!   ticket, see [`super::epoch`]) or, in forfeiting modes, with a CAS (AcqRel on
//!   success for the same reason; the success write publishes nothing else).
//! - Epoch changes happen only under `control` and install the next epoch with an
//!   AcqRel CAS after writing its ring slot, so a taker that sees the new epoch number
//!   sees its parameters.
//! - `hot.seen` (last-seen time, shifted left one bit, low bit = "hot") and
//!   `hot.anchor` (the burst-allowance anchor, biased by 2^63) are hints that move
//!   forward with `fetch_max` (and the anchor also by `fetch_add` when a held-up
//!   reserved op spends the allowance; adding to the biased value keeps its order).
//!   They publish no memory; Relaxed everywhere.
//! - `waiters.sleepers` (callers sleeping on a slot) and `waiters.parked` (callers
//!   parked without a slot, see [`Waiting::parks_when_ahead`]) are counts that only
//!   decide whether to park or to wake parked callers; they publish no memory, Relaxed.
//!   Both are kept only when the limiter's waiting parks (fixed at construction).
//!   A wake-up lost to a race (a late op that reads `parked` just before a caller
//!   parks) is bounded by the park's timeout, `PARK_MAX`, and costs no slot or wait.
//! - `control` guards the accounting of finished epochs and the spec; it is taken
//!   only on reconfiguration, rollover (every 64 Mi tickets), first anchoring, idle
//!   overflow (134 ms forfeited in one epoch), pause waits and `stats`.

use super::epoch::{Epoch, Kind, ModeBits, Ring};
use super::grant::{Grant, Refused};
use super::reserve::{HOT_GAP, Reservation};
use super::slice::Slice;
use super::spec::{Mode, RateSpec, Verb};
use super::word::{IDLE_MAX, TICKET_SOFT_LIMIT, Word};
use crate::clock::{Clock, PARK_MAX, Signal, Waiting};
use crate::nanos::Nanos;
use crate::sync::Backoff;
use crate::sync::{self, AtomicBool, AtomicU64, Mutex, Ordering};
use crossbeam_utils::CachePadded;

/// The burst anchor is stored biased by this, so that `fetch_max` orders it as signed.
const ANCHOR_BIAS: u64 = 1 << 63;

/// Schedule ids for thread-local reservations (0 is "none").
static NEXT_SCHEDULE: sync::unmodeled::AtomicU64 = sync::unmodeled::AtomicU64::new(1);

#[cfg(not(loom))]
sync::thread_local! {
    /// This thread's reservation (see `super::reserve`).
    static RESERVATION: Reservation = const { Reservation::empty() };
}
// loom's macro takes a plain initializer.
#[cfg(loom)]
sync::thread_local! {
    static RESERVATION: Reservation = Reservation::empty();
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
}

impl<C: Clock> Shared<C> {
    /// Nanoseconds since the limiter's origin.
    #[inline]
    pub(crate) fn now(&self) -> Nanos {
        self.clock.now().saturating_sub(self.origin)
    }

    /// Waits until limiter time `t`; returns limiter time after.
    fn wait_until(&self, t: Nanos) -> Nanos {
        self.clock
            .wait_until(t.saturating_add(self.origin), &self.waiting, &self.signal)
            .saturating_sub(self.origin)
    }
}

/// Callers waiting on the schedule (hints for parking; see the ground rules).
#[derive(Debug)]
struct Waiters {
    sleepers: AtomicU64,
    parked: AtomicU64,
}

#[derive(Debug)]
struct Hot {
    word: AtomicU64,
    seen: AtomicU64,
    anchor: AtomicU64,
}

/// Accounting of what finished epochs did, and the spec in force.
#[derive(Debug)]
struct Control {
    epoch: Epoch,
    spec: RateSpec,
    /// When the schedule was anchored (first acquire or restart); `None` before.
    origin: Option<Nanos>,
    grants_before: u64,
    idle_before: u64,
    missed_before: f64,
    /// While paused: when the pause began and the slice before it.
    paused_at: Option<(Nanos, Slice)>,
    epochs: u64,
}

/// Statistics of one schedule; see [`LimiterStats`](crate::LimiterStats).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ScheduleStats {
    pub(crate) grants: u64,
    pub(crate) allocated: u64,
    pub(crate) idle: u64,
    pub(crate) missed: f64,
    pub(crate) cursor: u64,
    pub(crate) last_seen: u64,
    pub(crate) epochs: u64,
    pub(crate) stale: u64,
    pub(crate) anchored: bool,
}

/// A change of epoch, computed under the control mutex from the current word.
struct Change {
    next: Epoch,
    /// Tickets of the old epoch the change itself grants (an op's own ticket).
    consumed: u64,
    /// Idle forfeited at the change (strict overflow, pause length).
    extra_idle: u64,
}

/// Read-mostly state the fast paths consult instead of the contended word.
#[derive(Debug)]
struct Gate {
    /// Whether the current epoch takes tickets by CAS (strict, compensating) or is not
    /// live: a hint (written under `control` at each epoch change) that lets the fast
    /// path `fetch_add` without first loading the contended word.
    slow: AtomicBool,
    /// Bumped (Release, after the new epoch is installed) by every restart and every
    /// change into a slow epoch: reservations taken in an earlier era are void.
    era: AtomicU64,
    /// This schedule's identity in thread-local reservations.
    id: u64,
}

/// The schedule.
#[derive(Debug)]
pub(crate) struct Schedule {
    hot: CachePadded<Hot>,
    gate: CachePadded<Gate>,
    ring: Ring,
    control: Mutex<Control>,
    stale: AtomicU64,
    waiters: CachePadded<Waiters>,
}

fn mode_bits(spec: &RateSpec) -> ModeBits {
    let (kind, shift, inv_s) = match spec.mode() {
        Mode::Average => (Kind::Average, 0, 0),
        Mode::Compensate { shift } => (Kind::Compensate, shift, 0),
        Mode::Strict => (Kind::Strict, 0, 0),
        Mode::Burst { ratio } => (
            Kind::Burst,
            0,
            ((1u64 << 32) as f64 / ratio).floor().min(u32::MAX as f64) as u32,
        ),
    };
    ModeBits {
        kind,
        shift,
        inv_s,
        paused: spec.is_paused(),
        unanchored: false,
        stopped: false,
    }
}

fn slice_of(spec: &RateSpec) -> Option<Slice> {
    (!spec.is_paused()).then(|| Slice::of_rate(spec.rate()))
}

#[inline]
fn unbias(a: u64) -> i64 {
    a.wrapping_sub(ANCHOR_BIAS) as i64
}

#[inline]
fn bias(a: i64) -> u64 {
    (a as u64).wrapping_add(ANCHOR_BIAS)
}

impl Schedule {
    /// A schedule for `spec`, not anchored: the first acquire anchors it.
    pub(crate) fn new(spec: RateSpec) -> Self {
        let mut mode = mode_bits(&spec);
        mode.unanchored = true;
        let epoch = Epoch {
            number: 0,
            base: 0,
            frac: 0,
            slice: slice_of(&spec).unwrap_or_default(),
            mode,
        };
        let ring = Ring::new();
        ring.write(&epoch);
        Self {
            hot: CachePadded::new(Hot {
                word: AtomicU64::new(
                    Word {
                        epoch: 0,
                        ticket: 0,
                        idle: 0,
                    }
                    .pack(),
                ),
                seen: AtomicU64::new(0),
                anchor: AtomicU64::new(0),
            }),
            gate: CachePadded::new(Gate {
                slow: AtomicBool::new(true),
                era: AtomicU64::new(0),
                id: NEXT_SCHEDULE.fetch_add(1, Ordering::Relaxed),
            }),
            ring,
            control: Mutex::new(Control {
                epoch,
                spec,
                origin: None,
                grants_before: 0,
                idle_before: 0,
                missed_before: 0.0,
                paused_at: None,
                epochs: 0,
            }),
            stale: AtomicU64::new(0),
            waiters: CachePadded::new(Waiters {
                sleepers: AtomicU64::new(0),
                parked: AtomicU64::new(0),
            }),
        }
    }

    /// The earliest start burst allowance permits for `slot` (0 outside burst mode).
    #[inline]
    fn burst_floor(&self, ep: &Epoch, slot: Nanos) -> Nanos {
        if ep.mode.kind == Kind::Burst {
            ep.burst_start(slot, unbias(self.hot.anchor.load(Ordering::Relaxed)))
        } else {
            0
        }
    }

    /// Reads the clock and publishes it as last-seen; returns the later of the reading
    /// and what was already published.
    #[inline]
    fn observe<C: Clock>(&self, sh: &Shared<C>) -> Nanos {
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

    /// The current epoch and word, re-read until consistent.
    fn current(&self) -> (u64, Word, Epoch) {
        loop {
            let w = self.hot.word.load(Ordering::Acquire);
            let wd = Word::unpack(w);
            if let Some(ep) = self.ring.read(wd.epoch) {
                return (w, wd, ep);
            }
            sync::spin_hint();
        }
    }

    /// Takes `n` slots, waiting as needed.
    pub(crate) fn acquire<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Grant {
        if n == 1 && sh.fast_path_limit > 1 {
            if let Some(g) = RESERVATION.with(|r| self.take_reserved(sh, r)) {
                return g;
            }
        } else if n > 1 {
            self.give_back_reservation();
        }
        if sh.waiting.parks_when_ahead() && self.waiters.sleepers.load(Ordering::Relaxed) > 0 {
            self.park_while_ahead(sh);
        }
        if !self.gate.slow.load(Ordering::Relaxed) {
            if let Some(g) = self.take_adding(sh, n) {
                return g;
            }
        }
        loop {
            let (_, _, ep) = self.current();
            if !ep.mode.live() {
                if let Some(g) = self.not_live(sh, ep) {
                    return g;
                }
                continue;
            }
            let result = if ep.mode.forfeits() {
                self.take_forfeiting(sh, n)
            } else {
                self.take_adding(sh, n)
            };
            if let Some(g) = result {
                return g;
            }
        }
    }

    /// One slot from this thread's reservation, or a new reservation when the thread's
    /// last reading found enough slots due; `None` sends the caller down the shared
    /// path. See `super::reserve` for the rules.
    #[inline(always)]
    fn take_reserved<C: Clock>(&self, sh: &Shared<C>, r: &Reservation) -> Option<Grant> {
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

        if let Some((ticket, ep, idle, at)) = r.next_due(id, era) {
            return Some(Grant::new(ep.slot(ticket, idle), at, 1));
        }
        if let Some((ticket, ep, idle)) = r.next_pending(id, era) {
            return self.serve_pending(sh, r, ticket, &ep, idle);
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
    fn give_back_reservation(&self) {
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

    /// Moves the word's ticket back from `end` to `to` if it is still at `end` in epoch
    /// `ep_number` (nobody took a ticket since). Returns whether it did.
    ///
    /// The word holds only the epoch's low bits, so the full number is checked in the
    /// ring: after 1024 epoch changes the same low bits name another epoch, whose
    /// ticket `end` would be another thread's.
    fn return_tickets(&self, ep_number: u64, end: u64, to: u64) -> bool {
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

    /// A reserved ticket that was not yet due when reserved: waits for it like any slot.
    /// `None` if the limiter stopped meanwhile.
    #[cold]
    fn serve_pending<C: Clock>(
        &self,
        sh: &Shared<C>,
        r: &Reservation,
        ticket: u64,
        ep: &Epoch,
        idle: u64,
    ) -> Option<Grant> {
        let slot = ep.slot(ticket, idle);
        let earliest = self.earliest_of(ep, ticket, idle);
        let now = self.observe(sh);
        let window = sh.waiting.release_window_nanos();
        let start = if earliest <= now {
            // Late: the thread was held up. No restart of the burst allowance from
            // here: other threads have served the slots after this one, and an
            // allowance restarted from this old slot would hold them all back. But
            // a held-up op spends one op of the allowance (slice / s): the anchor
            // moves on by that much, so that the ops held up in every thread's
            // reservation and the schedule's late ops together still start no
            // faster than s x rate.
            if now > earliest.saturating_add(window / 2) && ep.mode.kind == Kind::Burst {
                self.hot
                    .anchor
                    .fetch_add(ep.burst_spacing(), Ordering::Relaxed);
            }
            self.help_if_late(sh, slot, now);
            now
        } else {
            self.wait_from(sh, now, earliest, window)?
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
        let w = self.hot.word.fetch_add(Word::tickets(k), Ordering::Acquire);
        let wd = Word::unpack(w);
        r.since.set(r.since.get() + 1);
        let Some(ep) = self.ring.read(wd.epoch) else {
            r.want.set(1);
            return Some(self.stale_grant(sh, 1));
        };
        if !ep.mode.live() {
            r.want.set(1);
            return None;
        }
        if wd.ticket + k >= TICKET_SOFT_LIMIT {
            self.roll_over(ep.number);
        }
        let ticket = wd.ticket;
        let first = ep.slot(ticket, wd.idle);
        let mapped = self.burst_floor(&ep, first);
        let earliest = first.max(mapped);
        let now = self.observe(sh);
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
        r.epoch.set(ep);
        r.idle.set(wd.idle);
        r.next.set(ticket + 1);
        r.due.set(if late { ticket + keep } else { ticket + 1 });
        r.end.set(end);
        r.at.set(now);
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
            self.wait_from(sh, now, earliest, half)?
        };
        r.last_start.set(start);
        Some(Grant::new(first, start, 1))
    }

    /// The earliest start of ticket `t` with idle `idle` (its slot, or later under
    /// the burst allowance).
    #[inline]
    fn earliest_of(&self, ep: &Epoch, t: u64, idle: u64) -> Nanos {
        let slot = ep.slot(t, idle);
        slot.max(self.burst_floor(ep, slot))
    }

    /// How many slots one reservation ahead of the schedule takes: those half a release
    /// window holds, so that one wait releases them all (see `take_reservation`).
    #[inline]
    fn fit_ahead(&self, ep: &Epoch, window: Nanos) -> u64 {
        1 + window / 2 / (ep.slice.hi + 1)
    }

    /// How many slots after `slot` are certainly due at `now`: an undercount by up to
    /// one slot per nanosecond of slice fraction (burst: by the allowance too).
    #[inline]
    fn due_after(&self, ep: &Epoch, slot: Nanos, now: Nanos) -> u64 {
        let by_slot = now.saturating_sub(slot) / (ep.slice.hi + 1);
        if ep.mode.kind != Kind::Burst {
            return by_slot;
        }
        // one more than the spacing of slices one nanosecond longer: an undercount
        let spacing = ep.over_s(ep.slice.hi + 1) + 1;
        by_slot.min(now.saturating_sub(self.burst_floor(ep, slot)) / spacing)
    }

    /// Burst mode: an op that started after even the burst allowance's start restarts
    /// the allowance from itself (see `take_adding`).
    #[inline]
    fn reanchor_if_behind(&self, ep: &Epoch, slot: Nanos, mapped: Nanos, now: Nanos) {
        if ep.mode.kind == Kind::Burst && now > slot && now > mapped {
            // When hot, anchor a little behind now so that the next ops, arriving
            // nanoseconds later, still pass on the fast path (a bounded burst of at
            // most HOT_GAP of schedule).
            let hot = self.hot.seen.load(Ordering::Relaxed) & 1 == 1;
            let at = if hot {
                now.saturating_sub(HOT_GAP)
            } else {
                now
            };
            // The caller arrived after even the burst allowance's start: callers are
            // slower than s x rate, so the allowance restarts from this op and the
            // next late op starts no sooner than slice / s after it. (An op that had to
            // wait and woke late does not re-anchor: its overshoot is the waiting's
            // error, absorbed by the ops after it.)
            self.hot
                .anchor
                .fetch_max(bias(ep.anchor_for(slot, at.max(mapped))), Ordering::Relaxed);
        }
    }

    /// Parks the caller, holding no slot, while the next slot is further away than the
    /// release window and another caller already sleeps on an earlier slot: that caller
    /// comes back for the next slots, so taking one now would only add a thread that
    /// sleeps once per op. Returns when a slot is near, nobody sleeps on one, an op
    /// started late ([`help_if_late`](Self::help_if_late)), the spec changed, the
    /// limiter stopped, or after `PARK_MAX`, whichever is first; the caller then takes
    /// its slot as usual.
    #[cold]
    fn park_while_ahead<C: Clock>(&self, sh: &Shared<C>) {
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
    fn help_if_late<C: Clock>(&self, sh: &Shared<C>, slot: Nanos, now: Nanos) {
        if sh.waiting.parks_when_ahead()
            && now > slot.saturating_add(sh.waiting.release_window_nanos())
            && self.waiters.parked.load(Ordering::Relaxed) > 0
        {
            sh.signal.notify();
        }
    }

    /// Average and burst modes: one `fetch_add`. `None` if the ticket was void.
    #[inline]
    fn take_adding<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Option<Grant> {
        let w = self.hot.word.fetch_add(Word::tickets(n), Ordering::Acquire);
        let wd = Word::unpack(w);
        let Some(ep) = self.ring.read(wd.epoch) else {
            return Some(self.stale_grant(sh, n));
        };
        if !ep.mode.live() {
            return None;
        }
        if wd.ticket + n >= TICKET_SOFT_LIMIT {
            self.roll_over(ep.number);
        }
        let slot = ep.slot(wd.ticket, wd.idle);
        let mapped = self.burst_floor(&ep, slot);
        let earliest = slot.max(mapped);
        let seen = self.hot.seen.load(Ordering::Relaxed);
        let k = sh.fast_path_limit;
        if seen & 1 == 1 && k != 0 && wd.ticket & (k - 1) != 0 && earliest <= seen >> 1 {
            return Some(Grant::new(slot, seen >> 1, n as u32));
        }
        let now = self.observe(sh);
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
        let start = self.wait_from(sh, now, earliest, window)?;
        if n == 1 && k > 1 {
            let fit = self.fit_ahead(&ep, window);
            RESERVATION.with(|r| {
                if r.owner.get() == self.gate.id {
                    r.note_ahead(now, fit, ep.slice.hi, k);
                    r.last_start.set(start);
                }
            });
        }
        Some(Grant::new(slot, start, n as u32))
    }

    /// Tells this thread's reservation about a clock reading on a single-slot grant.
    #[inline]
    fn note_reading(&self, now: Nanos, more: u64, limit: u64) {
        RESERVATION.with(|r| {
            if r.owner.get() == self.gate.id {
                r.note(now, more, limit);
                r.last_start.set(now);
            }
        });
    }

    /// Strict and compensating modes: a CAS that takes the ticket and forfeits the
    /// lateness in one step. `None` if the epoch changed kind under us.
    fn take_forfeiting<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Option<Grant> {
        let backoff = Backoff::new();
        let (slot, now, strict, ep_number) = loop {
            let (w, wd, ep) = self.current();
            if !ep.mode.live() || !ep.mode.forfeits() {
                return None;
            }
            let slot = ep.slot(wd.ticket, wd.idle);
            let now = self.observe(sh);
            let strict = ep.mode.kind == Kind::Strict;
            let forfeit = ep.forfeit(now.saturating_sub(slot));
            if wd.idle + forfeit > IDLE_MAX || wd.ticket + n >= TICKET_SOFT_LIMIT {
                return self.take_under_lock(sh, n);
            }
            let next = Word {
                epoch: wd.epoch,
                ticket: wd.ticket + n,
                idle: wd.idle + forfeit,
            };
            if self
                .hot
                .word
                .compare_exchange_weak(w, next.pack(), Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                break (slot, now, strict, ep.number);
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
        let start = self.wait_from(sh, now, slot, window)?;
        if strict && start > slot {
            self.forfeit_overshoot(ep_number, start - slot);
        }
        Some(Grant::new(slot, start, n as u32))
    }

    /// A strict op that woke late moves the schedule by its overshoot, so the next
    /// slot stays one slice after this op's actual start. Skipped if the epoch moved on
    /// or the idle field would overflow (the next op then forfeits its own lateness).
    fn forfeit_overshoot(&self, ep_number: u64, overshoot: Nanos) {
        let mut w = self.hot.word.load(Ordering::Relaxed);
        loop {
            let wd = Word::unpack(w);
            if wd.epoch != ep_number & super::word::EPOCH_MASK || wd.idle + overshoot > IDLE_MAX {
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

    /// Takes a ticket through an epoch change (strict idle overflow, rollover race).
    fn take_under_lock<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Option<Grant> {
        let (slot, now) = match self.forfeit_under_lock(sh, n, None)? {
            Ok(taken) => taken,
            Err(_) => unreachable!("a blocking take is never refused"),
        };
        let start = self.wait_from(sh, now, slot, 0)?;
        Some(Grant::new(slot, start, n as u32))
    }

    /// Takes `n` tickets in a forfeiting epoch under the control lock, moving the
    /// forfeit into the next epoch's base instead of the idle field (for a forfeit the
    /// field cannot hold, or tickets near the rollover). With `try_window`
    /// (`try_acquire`), takes nothing if the slot is more than that window ahead of
    /// now and says when it is due. Returns the slot and the clock reading; `None` if
    /// the epoch no longer forfeits (the caller starts over).
    fn forfeit_under_lock<C: Clock>(
        &self,
        sh: &Shared<C>,
        n: u64,
        try_window: Option<Nanos>,
    ) -> Option<Result<(Nanos, Nanos), Refused>> {
        let mut ctl = sync::lock(&self.control);
        if !ctl.epoch.mode.live() || !ctl.epoch.mode.forfeits() {
            return None;
        }
        let mut taken = Ok((0, 0));
        self.change_if(&mut ctl, |cur, wd| {
            let slot = cur.slot(wd.ticket, wd.idle);
            let now = self.observe(sh);
            if let Some(window) = try_window {
                if slot > now.saturating_add(window) {
                    taken = Err(Refused::NotUntil(slot - window));
                    return None;
                }
            }
            let forfeit = cur.forfeit(now.saturating_sub(slot));
            taken = Ok((slot, now));
            let (base, frac) = cur.cursor(wd.ticket + n, wd.idle);
            Some(Change {
                next: Epoch {
                    number: cur.number + 1,
                    base: base.saturating_add(forfeit),
                    frac,
                    ..*cur
                },
                consumed: n,
                extra_idle: forfeit,
            })
        });
        Some(taken)
    }

    /// Waits, from clock reading `now`, until `earliest` (releasing up to `window`
    /// early); `None` if stopped.
    #[inline]
    fn wait_from<C: Clock>(
        &self,
        sh: &Shared<C>,
        now: Nanos,
        earliest: Nanos,
        window: Nanos,
    ) -> Option<Nanos> {
        if earliest <= now.saturating_add(window) {
            return Some(now);
        }
        // Only parking reads the count: without it, a sleep touches no shared line.
        let parks = sh.waiting.parks_when_ahead();
        let sleepers = &self.waiters.sleepers;
        if parks {
            sleepers.fetch_add(1, Ordering::Relaxed);
        }
        let after = sh.wait_until(earliest - window);
        if parks {
            sleepers.fetch_sub(1, Ordering::Relaxed);
        }
        if sh.signal.is_stopped() {
            return None;
        }
        self.hot.seen.fetch_max(after << 1, Ordering::Relaxed);
        Some(after)
    }

    /// A ticket whose epoch slot was overwritten before it could be read.
    #[cold]
    fn stale_grant<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Grant {
        self.stale.fetch_add(1, Ordering::Relaxed);
        let now = self.observe(sh);
        Grant::new(now, now, n as u32)
    }

    /// Handles an epoch whose tickets are void: anchors, waits out a pause, or
    /// reports the stop. Returns a grant only when stopped.
    #[cold]
    fn not_live<C: Clock>(&self, sh: &Shared<C>, ep: Epoch) -> Option<Grant> {
        if ep.mode.stopped || sh.signal.is_stopped() {
            return Some(Grant::stopped(sh.now()));
        }
        if ep.mode.unanchored {
            let mut ctl = sync::lock(&self.control);
            if ctl.epoch.number == ep.number {
                let now = self.observe(sh);
                self.anchor_at(&mut ctl, now);
            }
            return None;
        }
        // Paused: block until the epoch changes or the limiter stops.
        let generation = sh.signal.generation();
        let (_, _, cur) = self.current();
        if cur.number == ep.number {
            sh.signal.wait_change(generation);
        }
        None
    }

    /// Anchors (or re-anchors) the schedule at `now`: a fresh origin, no lag, no idle.
    fn anchor_at(&self, ctl: &mut Control, now: Nanos) {
        let spec = ctl.spec;
        self.change(ctl, |cur, _| {
            let mut mode = mode_bits(&spec);
            mode.unanchored = false;
            Change {
                next: Epoch {
                    number: cur.number + 1,
                    base: now,
                    frac: 0,
                    slice: slice_of(&spec).unwrap_or(cur.slice),
                    mode,
                },
                consumed: 0,
                extra_idle: 0,
            }
        });
        // A restart: reservations of the old schedule are void.
        self.gate.era.fetch_add(1, Ordering::Release);
        ctl.origin = Some(now);
        ctl.grants_before = 0;
        ctl.idle_before = 0;
        ctl.missed_before = 0.0;
        ctl.paused_at = spec.is_paused().then_some((now, ctl.epoch.slice));
        let anchor = ctl.epoch.anchor_for(now, now);
        self.hot.anchor.store(bias(anchor), Ordering::Relaxed);
    }

    /// Installs the next epoch computed by `make` from the current word, retrying until
    /// no ticket slipped in between. Accounts the finished epoch.
    fn change(&self, ctl: &mut Control, mut make: impl FnMut(&Epoch, Word) -> Change) -> Word {
        self.change_if(ctl, |cur, wd| Some(make(cur, wd)))
            .expect("an unconditional change is always installed")
    }

    /// [`change`](Self::change), unless `make` returns `None` for the current word: then
    /// nothing changes and `None` is returned.
    fn change_if(
        &self,
        ctl: &mut Control,
        mut make: impl FnMut(&Epoch, Word) -> Option<Change>,
    ) -> Option<Word> {
        let backoff = Backoff::new();
        loop {
            let w = self.hot.word.load(Ordering::Acquire);
            let wd = Word::unpack(w);
            let cur = ctl.epoch;
            debug_assert_eq!(wd.epoch, cur.number & super::word::EPOCH_MASK);
            let change = make(&cur, wd)?;
            self.ring.write(&change.next);
            let installed = Word {
                epoch: change.next.number,
                ticket: 0,
                idle: 0,
            };
            if self
                .hot
                .word
                .compare_exchange(w, installed.pack(), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                if cur.mode.live() {
                    let idle = wd.idle + change.extra_idle;
                    ctl.grants_before += wd.ticket + change.consumed;
                    ctl.idle_before += idle;
                    ctl.missed_before += idle as f64 / cur.slice.as_f64().max(f64::MIN_POSITIVE);
                }
                ctl.epoch = change.next;
                ctl.epochs += 1;
                let slow = change.next.mode.forfeits() || !change.next.mode.live();
                self.gate.slow.store(slow, Ordering::Relaxed);
                // Reserved tickets are mapped by their own epoch's burst ratio against
                // the one shared anchor: a change of kind or ratio voids them too.
                let remapped = change.next.mode.kind != cur.mode.kind
                    || change.next.mode.inv_s != cur.mode.inv_s;
                if slow || remapped {
                    self.gate.era.fetch_add(1, Ordering::Release);
                }
                return Some(wd);
            }
            backoff.spin();
        }
    }

    /// Starts a new epoch with the same parameters (tickets near the field's limit, or
    /// idle about to overflow), unless `seen_epoch` already ended.
    #[cold]
    fn roll_over(&self, seen_epoch: u64) {
        let mut ctl = sync::lock(&self.control);
        if ctl.epoch.number != seen_epoch {
            return; // someone else rolled it over already
        }
        self.change(&mut ctl, |cur, wd| {
            let (base, frac) = cur.cursor(wd.ticket, wd.idle);
            Change {
                next: Epoch {
                    number: cur.number + 1,
                    base,
                    frac,
                    ..*cur
                },
                consumed: 0,
                extra_idle: 0,
            }
        });
    }

    /// Applies a new spec (scope is the caller's business).
    pub(crate) fn set_spec<C: Clock>(&self, sh: &Shared<C>, spec: RateSpec) {
        let mut ctl = sync::lock(&self.control);
        if ctl.epoch.mode.stopped {
            ctl.spec = spec;
            return;
        }
        let old = ctl.spec;
        ctl.spec = spec;
        if ctl.origin.is_none() {
            // Not started: keep waiting for the first acquire, with the new parameters.
            let mut mode = mode_bits(&spec);
            mode.unanchored = true;
            self.change(&mut ctl, |cur, _| Change {
                next: Epoch {
                    number: cur.number + 1,
                    base: 0,
                    frac: 0,
                    slice: slice_of(&spec).unwrap_or(cur.slice),
                    mode,
                },
                consumed: 0,
                extra_idle: 0,
            });
            sh.signal.notify();
            return;
        }
        let now = self.observe(sh);
        if spec.verb_value() == Verb::Restart {
            self.anchor_at(&mut ctl, now);
            sh.signal.notify();
            return;
        }
        let paused_at = ctl.paused_at;
        let anchor = unbias(self.hot.anchor.load(Ordering::Relaxed));
        let mut next_anchor = None;
        self.change(&mut ctl, |cur, wd| {
            let (mut base, frac) = cur.end(wd.ticket, wd.idle);
            if let Some((at, _)) = paused_at {
                if !spec.is_paused() {
                    // The pause's length is forfeited: the schedule moves by it.
                    base = base.saturating_add(now.saturating_sub(at));
                }
            }
            let mode = mode_bits(&spec);
            let next = Epoch {
                number: cur.number + 1,
                base,
                frac,
                slice: slice_of(&spec).unwrap_or(cur.slice),
                mode,
            };
            if mode.kind == Kind::Burst && !spec.is_paused() {
                // The next late op may start at now (or where the old allowance put
                // it, if later): a change never releases more burst than s allows.
                let was = if cur.mode.kind == Kind::Burst && cur.mode.live() {
                    cur.burst_start(base, anchor)
                } else {
                    0
                };
                next_anchor = Some(next.anchor_for(base, now.max(was)));
            }
            Change {
                next,
                consumed: 0,
                extra_idle: 0,
            }
        });
        if let Some(a) = next_anchor {
            self.hot.anchor.store(bias(a), Ordering::Relaxed);
        }
        match (paused_at, spec.is_paused()) {
            (None, true) => {
                ctl.paused_at = Some((now, slice_of(&old).unwrap_or_default()));
            }
            (Some((at, slice)), false) => {
                // Resumed: the paused epoch was not live, so `change` accounted
                // nothing for it; its length is idle.
                let paused_for = now.saturating_sub(at);
                ctl.idle_before += paused_for;
                ctl.missed_before += paused_for as f64 / slice.as_f64().max(f64::MIN_POSITIVE);
                ctl.paused_at = None;
            }
            _ => {}
        }
        drop(ctl);
        sh.signal.notify();
    }

    /// Marks the schedule stopped: every later acquire returns a stopped grant.
    pub(crate) fn stop<C: Clock>(&self, _sh: &Shared<C>) {
        let mut ctl = sync::lock(&self.control);
        if ctl.epoch.mode.stopped {
            return;
        }
        self.change(&mut ctl, |cur, wd| {
            let (base, frac) = cur.end(wd.ticket, wd.idle);
            let mut mode = cur.mode;
            mode.stopped = true;
            Change {
                next: Epoch {
                    number: cur.number + 1,
                    base,
                    frac,
                    slice: cur.slice,
                    mode,
                },
                consumed: 0,
                extra_idle: 0,
            }
        });
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
                self.not_live(sh, ep);
                continue;
            }
            let slot = ep.slot(wd.ticket, wd.idle);
            let mapped = self.burst_floor(&ep, slot);
            let earliest = slot.max(mapped);
            let now = self.observe(sh);
            let window = if ep.mode.kind == Kind::Strict {
                0
            } else {
                sh.waiting.release_window_nanos()
            };
            if earliest > now.saturating_add(window) {
                return Err(Refused::NotUntil(earliest - window));
            }
            let forfeit = ep.forfeit(now.saturating_sub(slot));
            if wd.idle + forfeit > IDLE_MAX || wd.ticket + n >= TICKET_SOFT_LIMIT {
                if ep.mode.forfeits() {
                    // The forfeit goes into a fresh epoch's base, under the lock (a
                    // rollover alone would leave it too large for the idle field).
                    match self.forfeit_under_lock(sh, n, Some(window)) {
                        None => continue,
                        Some(Ok((slot, now))) => return Ok(Grant::new(slot, now, n as u32)),
                        Some(Err(refused)) => return Err(refused),
                    }
                }
                // A fresh epoch makes room; then try again.
                self.roll_over(ep.number);
                continue;
            }
            let next = Word {
                epoch: wd.epoch,
                ticket: wd.ticket + n,
                idle: wd.idle + forfeit,
            };
            if self
                .hot
                .word
                .compare_exchange_weak(w, next.pack(), Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                if ep.mode.kind == Kind::Burst && now > slot && now > mapped {
                    self.hot
                        .anchor
                        .fetch_max(bias(ep.anchor_for(slot, now)), Ordering::Relaxed);
                }
                return Ok(Grant::new(slot, now, n as u32));
            }
            backoff.spin();
        }
    }

    /// The spec in force.
    pub(crate) fn spec(&self) -> RateSpec {
        sync::lock(&self.control).spec
    }

    /// A consistent view of the accounting.
    pub(crate) fn stats<C: Clock>(&self, sh: &Shared<C>) -> ScheduleStats {
        let ctl = sync::lock(&self.control);
        let wd = Word::unpack(self.hot.word.load(Ordering::Acquire));
        let ep = ctl.epoch;
        let live = ep.mode.live() || ep.mode.stopped;
        let now = sh.now();
        let (mut cursor, _) = ep.cursor(wd.ticket, wd.idle);
        let mut idle = ctl.idle_before;
        let mut missed = ctl.missed_before;
        let mut grants = ctl.grants_before;
        if live && !ep.mode.unanchored {
            idle += wd.idle;
            missed += wd.idle as f64 / ep.slice.as_f64().max(f64::MIN_POSITIVE);
            grants += wd.ticket;
        }
        if let Some((at, slice)) = ctl.paused_at {
            let paused_for = now.saturating_sub(at);
            idle += paused_for;
            missed += paused_for as f64 / slice.as_f64().max(f64::MIN_POSITIVE);
            cursor = ep.base.saturating_add(paused_for);
        }
        let origin = ctl.origin.unwrap_or(0);
        ScheduleStats {
            grants,
            allocated: cursor.saturating_sub(origin).saturating_sub(idle),
            idle,
            missed,
            cursor,
            last_seen: self.hot.seen.load(Ordering::Relaxed) >> 1,
            epochs: ctl.epochs,
            stale: self.stale.load(Ordering::Relaxed),
            anchored: ctl.origin.is_some(),
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! Loom models: concurrent acquires, and acquire racing a rate change and a stop.
    //! Run with `RUSTFLAGS="--cfg loom" cargo test --release --lib loom_tests`.
    use super::*;
    use crate::clock::ManualClock;
    use loom::sync::Arc;

    const MS: u64 = 1_000_000;

    type Model = Arc<(Schedule, Shared<ManualClock>)>;

    /// A schedule for `spec` on a manual clock at 0, anchored by one acquire outside
    /// the model's races.
    fn anchored(spec: &str, fast_path_limit: u64, waiting: Waiting) -> Model {
        let sched = Schedule::new(RateSpec::parse(spec).unwrap());
        let sh = Shared {
            clock: ManualClock::new(),
            origin: 0,
            signal: Signal::new(),
            waiting,
            fast_path_limit,
        };
        sched.acquire(&sh, 1);
        Arc::new((sched, sh))
    }

    /// Another thread's single acquire.
    fn spawn_acquire(s: &Model) -> loom::thread::JoinHandle<Grant> {
        let s = Arc::clone(s);
        loom::thread::spawn(move || s.0.acquire(&s.1, 1))
    }

    /// What `RateLimiter::stop` does.
    fn stop(s: &Model) {
        s.0.stop(&s.1);
        s.1.signal.stop();
    }

    /// The slots `(first, count)` grants cover, in `unit`s, sorted; asserts none twice.
    fn distinct_slots(grants: &[(u64, u64)], unit: u64) -> Vec<u64> {
        let mut slots: Vec<u64> = grants
            .iter()
            .flat_map(|&(slot, n)| (0..n).map(move |i| slot / unit + i))
            .collect();
        slots.sort();
        let handed = slots.len();
        slots.dedup();
        assert_eq!(slots.len(), handed, "a slot handed out twice: {grants:?}");
        slots
    }

    /// 100K/s (10 us slots) with a 50 us release window: the main thread's second
    /// acquire (slot 10 us, released at once) sizes a reservation of the 3 slots half
    /// the window holds, which its next acquire takes ahead of the schedule.
    fn ahead_with_reservation_sized(spec: &str) -> Model {
        let waiting = Waiting::builder()
            .release_window(std::time::Duration::from_micros(50))
            .build();
        let s = anchored(spec, 32, waiting);
        s.0.acquire(&s.1, 1);
        s
    }

    /// A reservation taken ahead of the schedule (one `fetch_add` of 3 and a wait),
    /// its pending hand-outs and its give-back racing another thread's acquires: no
    /// slot twice, none more than the window early, each thread's slots rising.
    #[test]
    fn loom_tests_reservation_ahead_racing_other_acquires() {
        loom::model(|| {
            let s = ahead_with_reservation_sized("100K,0");
            let t = {
                let s = Arc::clone(&s);
                loom::thread::spawn(move || {
                    let g = s.0.acquire(&s.1, 1);
                    assert!(g.start_nanos() + 50_000 >= g.scheduled_nanos(), "{g:?}");
                    vec![(g.scheduled_nanos(), 1)]
                })
            };
            let mut mine = Vec::new();
            for n in [1, 1, 2] {
                let g = s.0.acquire(&s.1, n);
                assert!(g.start_nanos() + 50_000 >= g.scheduled_nanos(), "{g:?}");
                mine.push((g.scheduled_nanos(), n));
            }
            assert!(mine.windows(2).all(|w| w[0].0 < w[1].0), "{mine:?}");
            mine.extend(t.join().unwrap());
            distinct_slots(&mine, 10_000);
        });
    }

    /// A thread holding slots reserved ahead racing a stop: its acquires end stopped
    /// or with one of its slots, and every acquire after the stop is stopped.
    #[test]
    fn loom_tests_reservation_ahead_racing_stop() {
        loom::model(|| {
            let s = ahead_with_reservation_sized("100K,1.1");
            let first = s.0.acquire(&s.1, 1); // takes 3 ahead
            assert_eq!(first.scheduled_nanos(), 20_000);
            assert_eq!(s.0.stats(&s.1).grants, 5, "tickets 2..=4 reserved at once");
            let t = {
                let s = Arc::clone(&s);
                loom::thread::spawn(move || stop(&s))
            };
            let g = s.0.acquire(&s.1, 1);
            assert!(g.is_stopped() || g.scheduled_nanos() == 30_000, "{g:?}");
            t.join().unwrap();
            assert!(s.0.acquire(&s.1, 1).is_stopped());
        });
    }

    fn setup(spec: &str) -> Model {
        anchored(spec, 32, Waiting::exact())
    }

    #[test]
    fn loom_tests_concurrent_acquires_get_distinct_slots() {
        loom::model(|| {
            let s = setup("1000,0");
            let t = spawn_acquire(&s);
            let a = s.0.acquire(&s.1, 1).scheduled_nanos();
            let b = t.join().unwrap().scheduled_nanos();
            let mut slots = [a, b];
            slots.sort();
            assert_eq!(slots, [MS, 2 * MS]);
            assert_eq!(s.0.stats(&s.1).grants, 3);
        });
    }

    #[test]
    fn loom_tests_strict_acquires_never_share_a_slot() {
        loom::model(|| {
            let s = setup("1000,1");
            let t = spawn_acquire(&s);
            let a = s.0.acquire(&s.1, 1);
            let b = t.join().unwrap();
            // Slots are a slice apart and nobody starts before its slot. (Starts can
            // coincide: a thread delayed between taking its slot and starting, here by
            // the other thread moving the shared manual clock, cannot give it back.)
            let (lo, hi) = if a.scheduled_nanos() <= b.scheduled_nanos() {
                (a, b)
            } else {
                (b, a)
            };
            assert!(
                hi.scheduled_nanos() - lo.scheduled_nanos() >= MS,
                "{lo:?} {hi:?}"
            );
            assert!(
                a.start_nanos() >= a.scheduled_nanos() && b.start_nanos() >= b.scheduled_nanos()
            );
        });
    }

    #[test]
    fn loom_tests_acquire_racing_a_rate_change_keeps_the_cursor() {
        loom::model(|| {
            let s = setup("1000,0");
            let t = spawn_acquire(&s);
            s.0.set_spec(&s.1, RateSpec::parse("2000,0").unwrap());
            let a = t.join().unwrap().scheduled_nanos();
            assert_eq!(a, MS, "the slot after the anchor is 1 ms either way");
            let next = s.0.acquire(&s.1, 1).scheduled_nanos();
            // the racing op took its ticket in the old epoch (next at 2 ms) or the new
            // (next at 1.5 ms)
            assert!(next == 2 * MS || next == 3 * MS / 2, "next {next}");
            assert_eq!(s.0.stats(&s.1).grants, 3);
        });
    }

    #[test]
    fn loom_tests_acquire_racing_stop_returns() {
        loom::model(|| {
            let s = setup("1000,0");
            let t = spawn_acquire(&s);
            stop(&s);
            let g = t.join().unwrap();
            assert!(g.is_stopped() || g.scheduled_nanos() == MS);
            assert!(s.0.acquire(&s.1, 1).is_stopped());
        });
    }

    /// A schedule 1 s behind whose main thread has sized a reservation of 4 (limit 4):
    /// its next single acquire takes tickets 3..=6 at once.
    fn behind_with_reservation_sized() -> Model {
        let s = anchored("1000,0", 4, Waiting::exact());
        s.1.clock.set(1_000 * MS);
        s.0.acquire(&s.1, 1); // first reading behind: pace unknown
        s.0.acquire(&s.1, 1); // same instant: the next reservation is 4
        s
    }

    /// A reservation (one `fetch_add` of 4), its hand-outs and its give-back (a batch
    /// after it) racing another thread's single and batch acquires: no slot is handed
    /// out twice, each thread's slots rise, and the tickets taken are exactly those
    /// handed out plus the reservation's rest when the give-back lost its race.
    #[test]
    fn loom_tests_reservation_racing_other_acquires() {
        loom::model(|| {
            let s = behind_with_reservation_sized();
            let t = {
                let s = Arc::clone(&s);
                loom::thread::spawn(move || {
                    let a = s.0.acquire(&s.1, 1);
                    let b = s.0.acquire(&s.1, 2);
                    vec![(a.scheduled_nanos(), 1), (b.scheduled_nanos(), 2)]
                })
            };
            let mut mine = Vec::new();
            for n in [1, 1, 2] {
                let g = s.0.acquire(&s.1, n);
                mine.push((g.scheduled_nanos(), n));
            }
            assert!(mine.windows(2).all(|w| w[0].0 < w[1].0), "{mine:?}");
            let theirs = t.join().unwrap();
            let all: Vec<(u64, u64)> = mine.iter().chain(&theirs).copied().collect();
            let slots = distinct_slots(&all, MS);
            let handed = slots.len() as u64;
            let grants = s.0.stats(&s.1).grants;
            // 3 before the model, 7 handed out in it, plus 2 if the give-back lost
            assert!(grants == 3 + handed || grants == 3 + handed + 2, "{grants}");
            if grants == 3 + handed {
                assert_eq!(slots, (3..10).collect::<Vec<_>>());
            }
        });
    }

    /// A reservation's hand-out racing a restart: the op gets either its reserved slot
    /// (the acquire came first) or a slot of the new schedule, never a reserved slot
    /// after the restart's bump is visible.
    #[test]
    fn loom_tests_reservation_racing_a_restart() {
        loom::model(|| {
            let s = behind_with_reservation_sized();
            let first = s.0.acquire(&s.1, 1); // tickets 3..=6 reserved, 3 handed out
            assert_eq!(first.scheduled_nanos(), 3 * MS);
            let t = {
                let s = Arc::clone(&s);
                loom::thread::spawn(move || {
                    s.0.set_spec(&s.1, RateSpec::parse("1000,0,restart").unwrap())
                })
            };
            let g = s.0.acquire(&s.1, 1);
            t.join().unwrap();
            assert!(
                g.scheduled_nanos() == 4 * MS || g.scheduled_nanos() == 1_000 * MS,
                "{g:?}"
            );
            // after the restart, never a pre-restart slot
            let after = s.0.acquire(&s.1, 1).scheduled_nanos();
            assert!(after >= 1_000 * MS, "{after}");
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::{ManualClock, RateLimiter, RateSpec, Waiting};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// Parking on the real clock (adaptive waiting, slots 5 us apart, 4 threads): every
    /// slot is granted exactly once, in order, and stop reaches parked callers at once.
    #[test]
    fn parked_callers_take_every_slot_once_and_wake_on_stop() {
        let l = Arc::new(
            RateLimiter::builder(RateSpec::new(200_000.0))
                .waiting(
                    Waiting::builder()
                        .release_window(std::time::Duration::from_micros(50))
                        .timer_slack(std::time::Duration::from_nanos(1))
                        .park_when_ahead(true)
                        .build(),
                )
                .build(),
        );
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let l = Arc::clone(&l);
                std::thread::spawn(move || {
                    let mut slots = Vec::new();
                    loop {
                        let g = l.acquire();
                        if g.is_stopped() {
                            return slots;
                        }
                        assert!(g.start_nanos() + 50_000 >= g.scheduled_nanos());
                        slots.push(g.scheduled_nanos());
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        let stopping = Instant::now();
        l.stop();
        let mut slots: Vec<u64> = handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker"))
            .collect();
        assert!(
            stopping.elapsed() < Duration::from_millis(100),
            "stop took {:?}",
            stopping.elapsed()
        );
        let n = slots.len();
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), n, "a slot was granted twice");
        // a caller still sleeping on its slot when stopped gives it up (it returns
        // stopped), with the rest of its reservation: at most the slots half a
        // release window holds (1 + 25 us / 5 us, undercounted to 5) per thread are
        // taken and not used
        let tickets = l.stats().grants as usize;
        assert!(
            (n..=n + 4 * 5).contains(&tickets),
            "{n} used, {tickets} taken"
        );
        // slots 5 us apart from the anchor, all within the tickets taken
        assert!(slots.iter().all(|s| (s - slots[0]) % 5_000 == 0));
        assert!(((slots[n - 1] - slots[0]) / 5_000) < tickets as u64);
        assert!(n > 1_000, "only {n} ops in 50 ms at 200K/s");
    }

    /// Regression (found by `tests/pace_props.rs`): a `try_acquire` in a forfeiting mode
    /// late by more than the idle field holds (134 ms of forfeit) rolled the epoch over
    /// and retried forever, because a rollover frees the field but the forfeit still did
    /// not fit.
    #[test]
    fn try_acquire_late_past_the_idle_field_forfeits_instead_of_spinning() {
        // strict: 1.1875 s late at 1/s forfeits all of it
        let clock = ManualClock::new();
        let l = RateLimiter::with_clock(RateSpec::new(1.0).strictness(1.0), clock.clone());
        l.acquire();
        clock.advance_nanos(2_187_500_000);
        let g = l.try_acquire().expect("due");
        assert_eq!(
            (g.scheduled_nanos(), g.wait_nanos()),
            (1_000_000_000, 1_187_500_000)
        );
        assert_eq!(l.stats().idle_nanos, 1_187_500_000);
        assert_eq!(l.acquire().scheduled_nanos(), 3_187_500_000);
        // compensating (s = 0.125): 1.125 s late forfeits 140.625 ms
        let clock = ManualClock::new();
        let l = RateLimiter::with_clock(RateSpec::new(1.0).strictness(0.125), clock.clone());
        l.acquire();
        clock.advance_nanos(2_125_000_000);
        let g = l.try_acquire().expect("due");
        assert_eq!(g.wait_nanos(), 1_125_000_000);
        assert_eq!(l.stats().idle_nanos, 140_625_000);
        assert_eq!(
            l.try_acquire(),
            Err(crate::Refused::NotUntil(2_140_625_000)),
            "the next slot moved by the forfeit"
        );
    }
}
