//! The async acquire: [`Acquire`], the future [`RateLimiter::acquire_async`] returns.
//!
//! It takes its slot as the sync acquire does and then, instead of blocking the
//! thread until the slot, asks the clock's timer to wake the task
//! ([`Clock::wake_at`]). The paths:
//!
//! | step | what | pinned by |
//! |---|---|---|
//! | first poll, slot due (within the release window) | granted at once with this poll's reading; no timer | `a_due_slot_completes_without_a_timer` |
//! | first poll, slot ahead | the ticket is taken (the same `fetch_add` or forfeiting CAS as `acquire`), the timer asked for `earliest - window` | `futures_complete_when_the_manual_clock_passes_their_slots` |
//! | woken, clock at the deadline | the start is this poll's reading; a strict op that starts late forfeits only how far its start lies past the latest slot handed out (`forfeit_overshoot`), as a sync one does | `strict_async_slots_keep_a_slice_apart` |
//! | due, burst or strict mode | passes the gate (two words per schedule, CAS): it claims a start a spacing (slice / s; strict: a slice) after the previous claim, no earlier than the starts allow, and is woken then; polled within [`GATE_TOLERANCE`] of its claim it starts; polled later (a stall between claim and poll) it starts only if the starts so far allow it (a GCRA on starts), otherwise it claims again | `held_ops_after_a_stall_start_no_faster_than_the_burst_allowance`, `held_strict_ops_after_a_stall_start_a_slice_apart`, `held_ops_polled_late_after_their_claim_still_start_apart`, `an_op_turned_away_does_not_start_beside_the_one_that_passed`, `ops_waiting_at_the_gate_are_woken_in_turn`, loom `async_gate_lets_one_of_two_due_ops_start` |
//! | paused | no ticket; waits for the next change of spec (or the stop) on the signal | `a_paused_future_completes_when_resumed` |
//! | stopped (first poll or while waiting) | a stopped grant; a held slot is forfeited as on drop | `a_stop_wakes_a_future_waiting_for_a_far_slot` |
//! | dropped while waiting | the ticket goes back to the word if it is still the last one taken; otherwise it is void (a missed slot, idle time, not a grant) | `a_dropped_future_gives_back_its_slot`, `a_dropped_future_behind_another_forfeits_its_slot`, loom `async_acquire_dropped_racing_an_acquire` |
//!
//! The async path never uses reservations (they live in thread-local storage, and a
//! task moves between threads); it gives back this thread's reservation first, as a
//! batch does, and reads the clock on every first poll (no fast path: an async caller
//! is not on a 15 ns budget). In thread scope the slot comes from the schedule of the
//! thread that polls first.
//!
//! # Ground rules
//!
//! The future's ticket is taken and given back with the schedule's own RMWs (see
//! `super::schedule`). Its shared words of its own are the schedule's `async_gate` (the
//! claims) and `async_starts` (the GCRA on starts), times moved by Relaxed CAS: they
//! publish no memory, and a CAS that loses retries from the value it read, so no two
//! claims get the same start. Its waker sits in the clock's
//! timer queue and, for waits longer than [`STOP_LATENCY`] and pauses, in the
//! limiter's [`Signal`](crate::Signal), whose locks order a registration against a
//! stop or change (see `crate::clock`).

use super::epoch::{Epoch, Kind};
use super::grant::Grant;
use super::limiter::RateLimiter;
use super::schedule::{Fetched, Schedule, Shared, Toward};
use super::word::{IDLE_MAX, Word};
use crate::clock::{Clock, MonotonicClock};
use crate::nanos::Nanos;
use crate::sync::{Backoff, Ordering};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll};

/// How late after its claimed start an async op may be polled and still start on
/// its claim, and how far ahead of the next start a later one may start (see
/// [`Schedule::finish_held`]). An executor polls woken tasks a little late and
/// unevenly; up to this much passes without a second wait. It adds about
/// `GATE_TOLERANCE / spacing` ops to a burst (11 at 100K ops/s, s = 1.1).
pub(crate) const GATE_TOLERANCE: Nanos = 100_000;

/// A wait shorter than this does not register for the stop: it ends (and sees the
/// stop) within this long anyway, as a sync sleeper's short sleep does.
pub(crate) const STOP_LATENCY: Nanos = 1_000_000;

/// The schedule an async acquire takes its slot from.
pub(crate) enum Target<'a> {
    Main(&'a Schedule),
    Local(StdArc<Schedule>),
}

impl Target<'_> {
    fn get(&self) -> &Schedule {
        match self {
            Target::Main(s) => s,
            Target::Local(s) => s,
        }
    }
}

/// A slot taken and not yet due.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Held {
    slot: Nanos,
    /// When to start: the earliest start minus the release window.
    at: Nanos,
    /// The first ticket, if it can be given back (not taken under the lock).
    ticket: Option<u64>,
    n: u64,
    epoch: u64,
    /// The first ticket (whether or not it can go back).
    first: u64,
    /// A strict op that starts late forfeits how far its start lies past the latest
    /// slot handed out (`forfeit_overshoot`).
    strict: bool,
    /// The epoch the slot was taken in.
    ep: Epoch,
    /// Lateness before this time is already forfeited (a strict op turned away by
    /// the gate at its first poll); the slot otherwise.
    paid: Nanos,
    /// The start it claimed from the gate (see [`Schedule::finish_held`]), once it
    /// has one.
    claim: Option<Nanos>,
}

impl Held {
    /// `n` slots from `slot` taken in epoch `ep`, to start at `at`; strict if the
    /// epoch is.
    fn new(ep: Epoch, slot: Nanos, at: Nanos, ticket: Option<u64>, first: u64, n: u64) -> Self {
        Self {
            slot,
            at,
            ticket,
            n,
            epoch: ep.number,
            first,
            strict: ep.mode.kind == Kind::Strict,
            paid: slot,
            ep,
            claim: None,
        }
    }
}

/// The spacing the gate keeps between held ops of epoch `ep` (see
/// [`Schedule::finish_held`]): slice / s in burst mode, a slice (its whole
/// nanoseconds) in strict mode; none in average and compensating modes, whose late ops
/// catch up at once by design.
fn gate_spacing(ep: &Epoch) -> Option<Nanos> {
    match ep.mode.kind {
        Kind::Burst => Some(ep.burst_spacing()),
        Kind::Strict => Some(ep.slice.hi),
        Kind::Average | Kind::Compensate => None,
    }
}

/// What a first poll found.
pub(crate) enum Step {
    Granted(Grant),
    Wait(Held),
    /// Paused at this signal generation: no slot taken.
    Paused(u64),
}

impl Schedule {
    /// Takes `n` slots without waiting for them.
    pub(crate) fn take_nowait<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Step {
        self.give_back_reservation();
        loop {
            let (_, _, ep) = self.current();
            if !ep.mode.live() {
                if ep.mode.stopped || sh.signal.is_stopped() {
                    return Step::Granted(Grant::stopped(sh.now()));
                }
                if ep.mode.unanchored {
                    self.anchor_first(sh, ep.number);
                    continue;
                }
                let generation = sh.signal.generation();
                let (_, _, cur) = self.current();
                if cur.number == ep.number {
                    return Step::Paused(generation);
                }
                continue;
            }
            let step = if ep.mode.forfeits() {
                self.forfeiting_nowait(sh, n)
            } else {
                self.adding_nowait(sh, n)
            };
            if let Some(step) = step {
                return step;
            }
        }
    }

    /// Average and burst modes: [`Schedule::take_adding`] without the wait (and
    /// without the fast path and reservation hints). `None`: start over.
    fn adding_nowait<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Option<Step> {
        let (ep, wd) = match self.fetch_tickets(sh, n) {
            Fetched::Taken(ep, wd) => (ep, wd),
            Fetched::Stale(g) => return Some(Step::Granted(g)),
            Fetched::Void => return None,
        };
        let slot = ep.slot(wd.ticket, wd.idle);
        // Late async ops are spaced by the gate at their start, not by the burst
        // anchor at their take (two spacings in series, out of phase, lose rate).
        let earliest = slot;
        let now = self.observe(sh);
        if self.cut_since(ep.number, slot) {
            // Taken before a cut, decided after it: given back, start over.
            self.give_back_cut(&Toward::new(&ep, wd.ticket, slot, n, false));
            return None;
        }
        let window = sh.waiting.release_window_nanos();
        let held = Held::new(
            ep,
            slot,
            earliest.saturating_sub(window),
            Some(wd.ticket),
            wd.ticket,
            n,
        );
        if earliest <= now {
            self.help_if_late(sh, slot, now);
            return Some(self.start_or_hold(sh, held, now));
        }
        if earliest <= now.saturating_add(window) {
            return Some(self.start_or_hold(sh, held, now));
        }
        Some(Step::Wait(held))
    }

    /// A first poll's due op: granted at `now` if the gate lets it start, otherwise
    /// held until its turn (its lateness so far already paid, in strict mode, by
    /// the take).
    fn start_or_hold<C: Clock>(&self, sh: &Shared<C>, mut held: Held, now: Nanos) -> Step {
        match self.gate(sh, &mut held, now) {
            Ok(()) => Step::Granted(Grant::new(held.slot, now, held.n as u32)),
            Err(turn) => {
                held.at = turn;
                held.paid = now.max(held.slot);
                Step::Wait(held)
            }
        }
    }

    /// Strict and compensating modes: [`Schedule::take_forfeiting`] without the wait.
    /// `None`: start over.
    fn forfeiting_nowait<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Option<Step> {
        let backoff = Backoff::new();
        let (slot, now, ticket, ep) = loop {
            let (w, wd, ep) = self.current();
            if !ep.mode.live() || !ep.mode.forfeits() {
                return None;
            }
            let slot = ep.slot(wd.ticket, wd.idle);
            let now = self.observe(sh);
            let forfeit = ep.forfeit(now.saturating_sub(slot));
            if wd.idle + forfeit > IDLE_MAX || wd.ticket + n >= ep.soft_limit() {
                // The forfeit moves into a fresh epoch's base, under the lock: that
                // ticket cannot go back to the word (its epoch has ended).
                let (slot, now, ep, first) = match self.forfeit_under_lock(sh, n, None)? {
                    Ok(taken) => taken,
                    Err(_) => unreachable!("a blocking take is never refused"),
                };
                let mut held = Held::new(ep, slot, slot, None, first, n);
                held.strict = false;
                if slot <= now {
                    return Some(self.start_or_hold(sh, held, now));
                }
                return Some(Step::Wait(held));
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
                break (slot, now, wd.ticket, ep);
            }
            backoff.spin();
        };
        let strict = ep.mode.kind == Kind::Strict;
        // A strict schedule releases nothing early.
        let window = if strict {
            0
        } else {
            sh.waiting.release_window_nanos()
        };
        let held = Held::new(
            ep,
            slot,
            slot.saturating_sub(window),
            Some(ticket),
            ticket,
            n,
        );
        if slot <= now {
            self.help_if_late(sh, slot, now);
            return Some(self.start_or_hold(sh, held, now));
        }
        if slot <= now.saturating_add(window) {
            return Some(self.start_or_hold(sh, held, now));
        }
        Some(Step::Wait(held))
    }

    /// The grant of a held slot whose time has come, starting at `now`; or the later
    /// time to try again (limiter time, release window applied).
    ///
    /// The gate: in burst and strict modes, held ops start no closer than slice / s
    /// (strict: a slice) to each other. Thousands of tasks hold the next 100 ms of
    /// slots at 100K ops/s; a stall of the process makes every held slot it covers
    /// due at once, and without the gate they all started together (1,418 ops in one
    /// millisecond against a bound of 110). Each op claims a start from the gate, one
    /// spacing after the previous claim. A claim is good for [`GATE_TOLERANCE`]: an
    /// op polled later than that (a second stall, after its claim) claims again,
    /// since otherwise every op that claimed before the stall started together after
    /// it (550-1,050 in one millisecond). On-time ops are slices apart and pass at
    /// once; ops a stall made due wait for their turn, each woken at its own claim,
    /// so a crowd is never woken together.
    pub(super) fn finish_held<C: Clock>(
        &self,
        sh: &Shared<C>,
        held: &mut Held,
        now: Nanos,
    ) -> Result<Grant, Nanos> {
        self.gate(sh, held, now)?;
        self.hot.seen.fetch_max(now << 1, Ordering::Relaxed);
        if held.strict && now > held.paid {
            self.forfeit_overshoot(&held.ep, now);
        }
        Ok(Grant::new(held.slot, now, held.n as u32))
    }

    /// The gate for the async op `held` starting at `now`: `Ok` to start, or the
    /// time (release window applied) to try again, with the start it claimed in
    /// `held.claim`.
    ///
    /// Two words. The claims: an op claims the first start at or after `now` that
    /// is a spacing past the previous claim, and is woken then. An op polled no
    /// later than [`GATE_TOLERANCE`] after its claim starts. The starts: every
    /// start moves the next start a spacing past `max(next, now)` (a GCRA), and an
    /// op polled later than that after its claim (a stall came between its claim
    /// and its poll, and every op the stall held back is polled in one crowd)
    /// starts only if the next start is no later than `now` plus the tolerance;
    /// otherwise it claims again.
    fn gate<C: Clock>(&self, sh: &Shared<C>, held: &mut Held, now: Nanos) -> Result<(), Nanos> {
        let Some(spacing) = gate_spacing(&held.ep) else {
            return Ok(());
        };
        // Random slots may be closer than the spacing (a mean): an op on time passes;
        // only late ops (a stall's backlog) are spaced.
        if held.ep.mode.poisson && now <= held.slot.saturating_add(GATE_TOLERANCE) {
            return Ok(());
        }
        // A strict schedule releases nothing early.
        let window = if held.strict {
            0
        } else {
            sh.waiting.release_window_nanos()
        };
        let claim = match held.claim {
            Some(c) => c,
            None => {
                let c = self.claim_gate(now, spacing);
                held.claim = Some(c);
                c
            }
        };
        if now.saturating_add(window) < claim {
            return Err(claim - window);
        }
        let stale = now > claim.saturating_add(GATE_TOLERANCE);
        if self.take_start(
            now,
            spacing,
            if stale { GATE_TOLERANCE } else { Nanos::MAX },
        ) {
            return Ok(());
        }

        let c = self.claim_gate(now, spacing);
        held.claim = Some(c);
        Err(c.saturating_sub(window).max(now + 1))
    }

    /// Takes a start at `now` if the next start is no later than `now + tolerance`,
    /// and moves it a spacing past `max(next, now)`.
    fn take_start(&self, now: Nanos, spacing: Nanos, tolerance: Nanos) -> bool {
        let starts = &self.async_starts;
        let mut next = starts.load(Ordering::Relaxed);
        loop {
            if next > now.saturating_add(tolerance) {
                return false;
            }
            match starts.compare_exchange_weak(
                next,
                next.max(now).saturating_add(spacing),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(cur) => next = cur,
            }
        }
    }

    /// Claims the first start at or after `now` that is at least `spacing` after the
    /// previous claim, and no earlier than the next start allows (less
    /// [`GATE_TOLERANCE`]), and returns it: an op that starts on its claim never
    /// starts beside one that passed the starts' check.
    fn claim_gate(&self, now: Nanos, spacing: Nanos) -> Nanos {
        let gate = &self.async_gate;
        let floor = now.max(
            self.async_starts
                .load(Ordering::Relaxed)
                .saturating_sub(GATE_TOLERANCE),
        );
        let mut g = gate.load(Ordering::Relaxed);
        loop {
            let at = floor.max(g);
            match gate.compare_exchange_weak(
                g,
                at.saturating_add(spacing),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return at,
                Err(cur) => g = cur,
            }
        }
    }

    /// A held slot a cut gave back (see [`Schedule::cut_since`]).
    pub(crate) fn give_back_held(&self, held: &Held) {
        self.give_back_cut(&Toward::new(&held.ep, held.first, held.slot, held.n, false));
    }

    /// A held slot that will not be started: back to the word if nobody took a ticket
    /// since, otherwise void (a missed slot, never a grant).
    pub(crate) fn forfeit_held(&self, held: &Held) {
        self.void_tickets(&Toward::new(
            &held.ep,
            held.first,
            held.slot,
            held.n,
            held.ticket.is_some(),
        ));
    }
}

enum State<'a> {
    /// Not polled yet: no slot taken.
    Start,
    /// Paused at this signal generation: no slot taken.
    Paused(u64),
    /// A slot held on this schedule, not yet due.
    Waiting(Target<'a>, Held),
    Done,
}

/// The future of [`RateLimiter::acquire_async`] and
/// [`acquire_n_async`](RateLimiter::acquire_n_async): completes with the [`Grant`]
/// when its slot is due.
///
/// Lazy: nothing is taken until the first poll. Dropping it before it completes gives
/// its slot back when no later slot was taken since, and otherwise forfeits it (a
/// missed slot in [`LimiterStats`](crate::LimiterStats), not a grant). Polling it
/// after it completed panics.
///
/// ```
/// use paceline::{ManualClock, RateLimiter, RateSpec};
/// use std::future::Future;
/// use std::pin::pin;
/// use std::task::{Context, Waker};
/// let limiter = RateLimiter::with_clock(RateSpec::new(100.0), ManualClock::new());
/// limiter.acquire(); // slot 0
/// {
///     let mut f = pin!(limiter.acquire_async());
///     assert!(f.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
/// } // dropped while waiting for slot 10 ms: given back
/// assert_eq!(limiter.acquire().scheduled_nanos(), 10_000_000);
/// assert_eq!(limiter.stats().missed_slots, 0.0);
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Acquire<'a, C: Clock = MonotonicClock> {
    limiter: &'a RateLimiter<C>,
    n: u32,
    state: State<'a>,
    /// This future's slot among the signal's wakers (pauses, long waits).
    signal_key: Option<usize>,
}

impl<'a, C: Clock> Acquire<'a, C> {
    pub(super) fn new(limiter: &'a RateLimiter<C>, n: u32) -> Self {
        Self {
            limiter,
            n,
            state: State::Start,
            signal_key: None,
        }
    }

    fn done(&mut self, g: Grant) -> Poll<Grant> {
        self.state = State::Done;
        self.limiter
            .shared()
            .signal
            .deregister_waker(&mut self.signal_key);
        Poll::Ready(g)
    }
}

impl<C: Clock> Future for Acquire<'_, C> {
    type Output = Grant;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Grant> {
        let this = self.get_mut();
        let limiter = this.limiter;
        let sh = limiter.shared();
        loop {
            match &mut this.state {
                State::Start => {
                    let target = limiter.target();
                    match target.get().take_nowait(sh, u64::from(this.n)) {
                        Step::Granted(g) => return this.done(g),
                        Step::Paused(generation) => this.state = State::Paused(generation),
                        Step::Wait(held) => this.state = State::Waiting(target, held),
                    }
                }
                State::Paused(generation) => {
                    let generation = *generation;
                    let changed = |sh: &Shared<C>| {
                        sh.signal.generation() != generation || sh.signal.is_stopped()
                    };
                    if changed(sh) {
                        this.state = State::Start;
                        continue;
                    }
                    sh.signal.register_waker(&mut this.signal_key, cx.waker());
                    if changed(sh) {
                        this.state = State::Start;
                        continue;
                    }
                    return Poll::Pending;
                }
                State::Waiting(target, held) => {
                    let now = sh.now();
                    if sh.signal.is_stopped() {
                        target.get().forfeit_held(held);
                        return this.done(Grant::stopped(now));
                    }
                    if target.get().paused_since(held.epoch) {
                        // A pause came before the slot: the slot is void, and the op
                        // waits out the pause and takes a new one (issue 23, item 5).
                        target.get().forfeit_held(held);
                        this.state = State::Start;
                        continue;
                    }
                    if target.get().cut_since(held.epoch, held.slot) {
                        // A raise cut the schedule before this slot (audit p16,
                        // H1): the slot is given back, not missed, and the op takes
                        // one of the new rate; its wait counts from that slot.
                        target.get().give_back_held(held);
                        this.state = State::Start;
                        continue;
                    }
                    if now >= held.at {
                        match target.get().finish_held(sh, held, now) {
                            Ok(g) => return this.done(g),
                            Err(later) => held.at = later,
                        }
                    }
                    let at = held.at;
                    if at - now > STOP_LATENCY {
                        sh.signal.register_waker(&mut this.signal_key, cx.waker());
                        // A stop, pause or cut made between the checks above and
                        // this registration woke only the wakers registered then:
                        // re-check after registering. The setter stores its mark
                        // before it interrupts, and the wake and the registration
                        // take one mutex, so a registration after the wake sees
                        // the mark (review p17 M2).
                        let t = target.get();
                        if sh.signal.is_stopped()
                            || t.paused_since(held.epoch)
                            || t.cut_since(held.epoch, held.slot)
                        {
                            continue;
                        }
                    }
                    // Every pending poll asks again: a wake-up may have consumed the
                    // last registration (a timer reading a hair ahead of this one's
                    // clock); a spurious poll leaves one extra entry, fired once.
                    sh.clock
                        .wake_at(at.saturating_add(sh.origin), &sh.waiting, cx.waker());
                    return Poll::Pending;
                }
                State::Done => panic!("paceline: Acquire polled after it completed"),
            }
        }
    }
}

impl<C: Clock> Drop for Acquire<'_, C> {
    fn drop(&mut self) {
        if let State::Waiting(target, held) = &self.state {
            target.get().forfeit_held(held);
        }
        self.limiter
            .shared()
            .signal
            .deregister_waker(&mut self.signal_key);
    }
}

impl<C: Clock> fmt::Debug for Acquire<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Start => "start",
            State::Paused(_) => "paused",
            State::Waiting(..) => "waiting",
            State::Done => "done",
        };
        f.debug_struct("Acquire")
            .field("n", &self.n)
            .field("state", &state)
            .finish()
    }
}
