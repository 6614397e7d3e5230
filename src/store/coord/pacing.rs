//! The pacing side of a shared schedule: leased tickets, paced locally.
//!
//! A worker takes the next leased ticket (forfeiting late ones first in strict and
//! compensating modes, as the local pacer does), and waits on its own clock until
//! the ticket's earliest start mapped through the time base. When fewer than one
//! lease's worth of tickets is left, the worker that noticed leases the next batch
//! before it waits, so the round trip (which then has about 1 ms to come back)
//! overlaps a wait instead of delaying a start. One lease is in flight
//! at a time; the others wait for it (`refill`).
//!
//! On an async worker none of this holds the thread: a lease's round trip runs
//! on the worker's helper thread and every wait here (for a lease in flight, a pause,
//! the far part of the wait toward a slot) drives the worker's ops in flight
//! (`engine::worker_wait`), so their IO and their ends are not stalled by the
//! store; the last stretch toward a slot is the clock's, which drives them
//! too.
//!
//! The slot a grant reports is the ticket's slot on the worker's own clock; the
//! engine's wait is its own start reading minus that slot (exact to within the
//! time base's error, never computed from another process's reading).

use super::session::{Coordination, POLL};
use super::slots::{Epoch, lease_size};
use super::starts::start_at;
use crate::engine::{Slot, TicketLedger, worker_wait};
use crate::nanos::Nanos;
use crate::sync::threads::{self, AtomicU64, Ordering};
use std::collections::VecDeque;
use std::ops::Range;
use std::time::Duration;

/// A lease asks for about this much of this process's share of the schedule, ns.
const LEASE_SPAN: Nanos = 1_000_000;
/// When a backlog is due (average and compensating modes), a lease takes the due
/// tickets, up to this many leases' worth...
const CATCH_UP_LEASES: u64 = 64;
/// ...and never more than this many tickets.
const MAX_LEASE: u64 = 4096;

/// A wait toward a slot sleeps on the signal (which a pause wakes) until this close
/// to the slot, then on the clock's precise wait.
const WAKE_SLACK: Nanos = 2_000_000;

/// What became of this process's leased tickets (`TicketLedger`): `Relaxed`
/// counters, as the others here (only their values matter). Every ticket leased
/// ends in exactly one of them, or is still held.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    pub(super) granted: AtomicU64,
    pub(super) missed: AtomicU64,
    pub(super) given_back: AtomicU64,
    pub(super) voided: AtomicU64,
}

impl Ledger {
    pub(super) fn add(field: &AtomicU64, n: u64) {
        if n > 0 {
            field.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The counts, for reports.
    pub(super) fn read(&self) -> TicketLedger {
        TicketLedger {
            granted: self.granted.load(Ordering::Relaxed),
            missed: self.missed.load(Ordering::Relaxed),
            given_back: self.given_back.load(Ordering::Relaxed),
            voided: self.voided.load(Ordering::Relaxed),
        }
    }
}

/// Why the store leased nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Block {
    Paused,
    Unpaced,
    Stopped,
    /// This member's membership expired (frozen past its TTL): it comes back
    /// through the heartbeat.
    Pruned,
}

/// The tickets this process holds.
#[derive(Debug, Default)]
pub(crate) struct Tickets {
    /// Leases in the order taken: their epoch, next ticket and end.
    leases: VecDeque<(Epoch, u64, u64)>,
    /// A lease is in flight.
    refilling: bool,
    /// The store's last refusal and the spec version it was at.
    blocked: Option<(u64, Block)>,
    /// The size of the last lease.
    last: u64,
    /// Bumped when this process comes back after being pruned: a ticket taken
    /// before is void (the prune counted it missed).
    pub(super) era: u64,
}

impl Tickets {
    fn remaining(&self) -> u64 {
        self.leases.iter().map(|(_, n, e)| e - n).sum()
    }

    /// The next ticket at schedule time `t` (`None` before the time base has a
    /// sample), after forfeiting the late ones its epoch's strictness gives up;
    /// returns it and how many were forfeited.
    fn take(&mut self, t: Option<Nanos>) -> Option<(Epoch, u64, u64)> {
        loop {
            let (epoch, next, end) = self.leases.front_mut()?;
            if *next >= *end {
                self.leases.pop_front();
                continue;
            }
            let skip = t.map_or(0, |t| epoch.forfeit_at(*next, *end, t));
            *next += skip;
            let k = *next;
            *next += 1;
            return Some((*epoch, k, skip));
        }
    }

    /// Puts ticket `k` of `epoch`, taken and not used, back in front: it is held
    /// again (given back on leaving, or void when the schedule is over).
    fn untake(&mut self, epoch: Epoch, k: u64) {
        match self.leases.front_mut() {
            Some((e, next, _)) if e.ver == epoch.ver && *next == k + 1 => *next = k,
            _ => self.leases.push_front((epoch, k, k + 1)),
        }
    }

    /// Drops the tickets of epochs older than version `ver` (a pause's); returns
    /// how many were dropped.
    fn void_before(&mut self, ver: u64) -> u64 {
        let mut n = 0;
        self.leases.retain(|(e, next, end)| {
            let old = e.ver < ver;
            if old {
                n += end.saturating_sub(*next);
            }
            !old
        });
        n
    }

    /// This process came back after being pruned: every ticket held or taken is
    /// void (the prune counted them missed). Returns how many were held.
    pub(super) fn void_all(&mut self) -> u64 {
        let n = self.remaining();
        self.leases.clear();
        self.blocked = None;
        self.era += 1;
        n
    }

    /// The tickets held and not used, the last leased first (for giving back).
    pub(super) fn drain_unused(&mut self) -> Vec<Range<u64>> {
        let mut v: Vec<Range<u64>> = self
            .leases
            .drain(..)
            .filter(|(_, n, e)| n < e)
            .map(|(_, n, e)| n..e)
            .collect();
        v.sort_by_key(|r| std::cmp::Reverse(r.end));
        v
    }
}

/// What a lease brought.
enum Leased {
    /// The epoch, the first ticket, the end, and the lease size asked for (a lease
    /// that caught up a backlog is larger).
    Tickets(Epoch, u64, u64, u64),
    Blocked(u64, Block),
}

impl Coordination {
    fn sched_now(&self) -> Option<Nanos> {
        threads::lock(&self.timebase).to_schedule(self.clock.now())
    }

    /// Leases the next batch of tickets.
    fn lease(&self) -> Result<Leased, String> {
        let (spec, _) = self.spec();
        let live = self.status().processes_live.max(1);
        // A backlog under burst allowance goes at `s x rate`: a lease covers 1 ms of
        // that pace.
        let pace = spec.rate() * spec.strictness_value().max(1.0);
        let n = lease_size(pace, live, LEASE_SPAN);
        let cap = (n * CATCH_UP_LEASES).min(MAX_LEASE);
        let used = self.used.load(Ordering::Relaxed);
        let args = self.gen_args([
            n.to_string(),
            cap.to_string(),
            self.member().to_string(),
            used.to_string(),
        ]);
        let r = self.call(self.lease_script(), Some("lease"), &args, Some(11))?;
        let num = |i: usize| r.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        let float = |i: usize| r.get(i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
        let block = match r.first().map(String::as_str) {
            Some("ok") => None,
            Some("paused") => Some(Block::Paused),
            Some("pruned") => Some(Block::Pruned),
            Some("unpaced") => Some(Block::Unpaced),
            _ => Some(Block::Stopped),
        };
        if let Some(b) = block {
            return Ok(Leased::Blocked(num(1), b));
        }
        let epoch = Epoch {
            ver: num(1),
            first: num(4),
            base: num(5),
            slice: float(6),
            strict: float(7),
            frac: float(8),
            anchor: r.get(9).and_then(|s| s.parse::<i64>().ok()),
        };
        let (k0, got) = (num(2), num(3));
        // Forfeited by the script, which counted them in the store already.
        self.missed.fetch_add(num(10), Ordering::Relaxed);
        self.leased.fetch_add(got, Ordering::Relaxed);
        if epoch.ver > threads::lock(&self.known).ver {
            // A change this process has not heard of yet: read it now.
            self.nudge_heartbeat();
        }
        Ok(Leased::Tickets(epoch, k0, k0 + got, n))
    }

    /// Stores what a lease brought, under the tickets lock.
    fn store_lease(t: &mut Tickets, got: Leased) {
        match got {
            Leased::Tickets(e, k0, end, asked) => {
                // The low-water mark follows the lease size asked for, not a
                // backlog's catch-up lease.
                t.last = (end - k0).min(asked);
                t.leases.push_back((e, k0, end));
                t.blocked = None;
            }
            Leased::Blocked(ver, b) => t.blocked = Some((ver, b)),
        }
    }

    /// Waits for the next slot of the shared schedule. While the schedule is paused
    /// it waits for the resume, and gives up (no slot) when `give_up` holds. A
    /// ticket leased before a pause is void once the pause is known here: one held
    /// is dropped, and a worker waiting toward one is woken and takes another after
    /// the resume (it never starts during the pause, nor on the old slot after it).
    pub(crate) fn acquire_unless(&self, give_up: &dyn Fn() -> bool) -> Slot {
        loop {
            if let Some(s) = self.try_acquire(give_up) {
                return s;
            }
        }
    }

    /// The version of the latest pause known here: tickets of older epochs are void.
    fn paused_at(&self) -> u64 {
        threads::lock(&self.known).pause_ver
    }

    /// One ticket, waited for; `None` when it was voided by a pause on the way.
    fn try_acquire(&self, give_up: &dyn Fn() -> bool) -> Option<Slot> {
        let mut tk = threads::lock(&self.tickets);
        let (epoch, k, prefetch, era) = loop {
            if let Some(why) = self.lost() {
                return Some(Slot::Lost(why));
            }
            if self.signal.is_stopped() {
                return Some(Slot::Stopped);
            }
            if self.in_doubt() {
                // Maybe pruned while frozen: no ticket is used (granted or
                // forfeited) until a heartbeat answers, so the count it carries
                // is settled.
                drop(tk);
                self.await_heartbeat();
                tk = threads::lock(&self.tickets);
                continue;
            }
            let void = tk.void_before(self.paused_at());
            if void > 0 {
                // Leased before a pause: nobody runs them; the ledger counts them
                // used, so they are not counted missed when this member goes.
                self.used.fetch_add(void, Ordering::Relaxed);
                Ledger::add(&self.ledger.voided, void);
            }
            if let Some((e, k, skipped)) = tk.take(self.sched_now()) {
                if skipped > 0 {
                    Ledger::add(&self.ledger.missed, skipped);
                    self.missed.fetch_add(skipped, Ordering::Relaxed);
                    // The store has not counted these: the heartbeat adds them.
                    self.missed_here.fetch_add(skipped, Ordering::Relaxed);
                }
                // The ticket itself counts as used when it is granted (or given
                // up: stopped, paused), not if a return from a prune voids it.
                self.used.fetch_add(skipped, Ordering::Relaxed);
                let low = tk.last.max(1);
                let prefetch = !tk.refilling && tk.blocked.is_none() && tk.remaining() < low;
                tk.refilling |= prefetch;
                break (e, k, prefetch, tk.era);
            }
            if tk.refilling {
                // Another worker's lease is in flight. The generation is read
                // under the tickets lock, under which the lease's end bumps it.
                let g = self.refill.generation();
                drop(tk);
                worker_wait::wait_change_for(&self.refill, g, POLL);
                tk = threads::lock(&self.tickets);
                continue;
            }
            if let Some((ver, block)) = tk.blocked {
                if block == Block::Stopped {
                    return Some(Slot::Stopped);
                }
                if block == Block::Pruned {
                    drop(tk);
                    self.await_heartbeat();
                    tk = threads::lock(&self.tickets);
                    tk.blocked = None;
                    continue;
                }
                if give_up() {
                    return Some(Slot::GaveUp);
                }
                if threads::lock(&self.known).ver <= ver {
                    // Paused (or not paced): wait for a change, and look again at
                    // least every POLL in case a nudge was lost.
                    let g = self.signal.generation();
                    drop(tk);
                    worker_wait::wait_change_for(&self.signal, g, POLL);
                    tk = threads::lock(&self.tickets);
                    if let Some((v, _)) = tk.blocked {
                        if v == ver {
                            tk.blocked = None;
                        }
                    }
                    continue;
                }
                tk.blocked = None;
            }
            tk.refilling = true;
            drop(tk);
            let got = {
                let me = self.arc();
                worker_wait::call_blocking(move || me.lease())
            };
            tk = threads::lock(&self.tickets);
            tk.refilling = false;
            self.refill.notify();
            match got {
                Ok(l) => Self::store_lease(&mut tk, l),
                Err(why) => return Some(Slot::Lost(why)),
            }
        };
        drop(tk);
        if prefetch {
            let got = {
                let me = self.arc();
                worker_wait::call_blocking(move || me.lease())
            };
            let mut tk = threads::lock(&self.tickets);
            tk.refilling = false;
            self.refill.notify();
            match got {
                Ok(l) => Self::store_lease(&mut tk, l),
                Err(why) => return Some(Slot::Lost(why)),
            }
        }
        let (earliest, slot) = {
            let tb = threads::lock(&self.timebase);
            (tb.to_local(epoch.earliest(k)), tb.to_local(epoch.slot(k)))
        };
        let earliest = earliest.max(0) as Nanos;
        let spent = || {
            self.used.fetch_add(1, Ordering::Relaxed);
        };
        loop {
            // A pause wakes the wait (`signal`): look at the phase again, before
            // the slot is reached and once it is.
            let g = self.signal.generation();
            if let Some(why) = self.lost() {
                // The store is gone: nothing can be given back or counted.
                spent();
                Ledger::add(&self.ledger.voided, 1);
                return Some(Slot::Lost(why));
            }
            if self.signal.is_stopped() {
                // Stopped while it waited toward its slot: the ticket is held
                // again, and goes back (or is void) as the others held when this
                // process leaves; unless a prune counted it missed meanwhile.
                let mut tk = threads::lock(&self.tickets);
                if tk.era == era {
                    tk.untake(epoch, k);
                } else {
                    drop(tk);
                    self.missed.fetch_add(1, Ordering::Relaxed);
                    Ledger::add(&self.ledger.missed, 1);
                }
                return Some(Slot::Stopped);
            }
            if self.paused_at() > epoch.ver {
                spent();
                Ledger::add(&self.ledger.voided, 1);
                return None;
            }
            let now = self.clock.now();
            if now >= earliest {
                // Granted under the tickets lock, as the heartbeat reads the count
                // of tickets used: never after a return from a prune voided it,
                // nor while a prune may have counted it missed.
                let tk = threads::lock(&self.tickets);
                if tk.era != era {
                    drop(tk);
                    self.missed.fetch_add(1, Ordering::Relaxed);
                    Ledger::add(&self.ledger.missed, 1);
                    return None;
                }
                if self.in_doubt() {
                    drop(tk);
                    self.await_heartbeat();
                    continue;
                }
                spent();
                Ledger::add(&self.ledger.granted, 1);
                return Some(Slot::At(slot));
            }
            let left = earliest - now;
            if left > WAKE_SLACK {
                // Far from the slot: sleep on the signal, which a pause bumps.
                worker_wait::wait_change_for(
                    &self.signal,
                    g,
                    Duration::from_nanos(left - WAKE_SLACK),
                );
            } else {
                // The last stretch on the clock's precise wait.
                self.clock.wait_until(earliest, &self.waiting, &self.signal);
            }
        }
    }

    /// Asks for a heartbeat now and waits (at most [`POLL`]) for it or another
    /// change: a process in doubt of its membership learns whether it was pruned.
    fn await_heartbeat(&self) {
        let g = self.signal.generation();
        self.nudge_heartbeat();
        if self.in_doubt() {
            self.signal.wait_change_for(g, POLL);
        }
    }

    /// A slot granted here was not used (`SlotSource::slot_not_used`): a worker
    /// that retired before its op let its slot pass, a slot missed (counted in the
    /// store by the next heartbeat); one granted after the run's duration ended
    /// is void, as the tickets left over at the end.
    pub(crate) fn slot_not_used(&self, retired: bool) {
        self.ledger.granted.fetch_sub(1, Ordering::Relaxed);
        if retired {
            Ledger::add(&self.ledger.missed, 1);
            self.missed.fetch_add(1, Ordering::Relaxed);
            self.missed_here.fetch_add(1, Ordering::Relaxed);
        } else {
            Ledger::add(&self.ledger.voided, 1);
        }
    }

    /// The op on `slot` (this process's clock) started at `now`
    /// (`SlotSource::slot_used`): a start for the global start rate, on the
    /// schedule's time base (see `starts.rs`).
    pub(crate) fn slot_used(&self, slot: i64, now: Nanos) {
        let at = start_at(
            threads::lock(&self.timebase).to_schedule_signed(slot),
            slot,
            now,
        );
        self.starts.started(at);
    }

    /// Wakes the waits on the pacer (a change of thread count or phase).
    pub(crate) fn wake(&self) {
        self.signal.notify();
        self.refill.notify();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::store::coord::slots::forfeit_fraction;

    fn epoch(strict: f64) -> Epoch {
        Epoch {
            ver: 1,
            first: 0,
            base: 0,
            slice: 1_000_000.0,
            strict,
            frac: forfeit_fraction(strict),
            anchor: None,
        }
    }

    #[test]
    fn tickets_are_taken_in_lease_order_and_late_ones_forfeited_in_strict_mode() {
        let mut t = Tickets::default();
        assert_eq!(t.take(Some(0)), None);
        t.leases.push_back((epoch(1.0), 0, 3));
        t.leases.push_back((epoch(1.0), 10, 20));
        assert_eq!(t.take(Some(0)).map(|x| (x.1, x.2)), Some((0, 0)));
        // At 2.5 ms ticket 1 is late and 2 is due: 1 is forfeited, 2 keeps its slot.
        assert_eq!(t.take(Some(2_500_000)).map(|x| (x.1, x.2)), Some((2, 1)));
        assert_eq!(t.take(Some(2_500_000)).map(|x| (x.1, x.2)), Some((10, 0)));
        assert_eq!(t.remaining(), 9);
        assert_eq!(t.drain_unused(), vec![Range { start: 11, end: 20 }]);
        assert_eq!(t.take(None), None);
    }

    #[test]
    fn average_mode_keeps_every_late_ticket() {
        let mut t = Tickets::default();
        t.leases.push_back((epoch(0.0), 0, 5));
        let got: Vec<u64> = (0..5)
            .filter_map(|_| t.take(Some(100_000_000)).map(|x| x.1))
            .collect();
        assert_eq!(got, [0, 1, 2, 3, 4]);
    }

    /// Issue 23 (review): a ticket taken by a worker that then stopped was
    /// counted used and was neither granted, missed nor given back. It goes back
    /// in front, joined to its lease when it was the last taken from it.
    #[test]
    // A list of ranges that happens to hold one here.
    #[allow(clippy::single_range_in_vec_init)]
    fn a_ticket_taken_and_not_used_is_held_again() {
        let mut t = Tickets::default();
        t.leases.push_back((epoch(0.0), 0, 4));
        let (e, k, _) = t.take(Some(0)).unwrap_or_else(|| panic!("a ticket"));
        assert_eq!((k, t.remaining()), (0, 3));
        t.untake(e, k);
        assert_eq!(t.remaining(), 4);
        assert_eq!(t.drain_unused(), [0..4]);
        // Its lease used up (and dropped): a lease of one.
        t.leases.push_back((epoch(0.0), 0, 1));
        let (e, k, _) = t.take(Some(0)).unwrap_or_else(|| panic!("a ticket"));
        t.leases.push_back((epoch(0.0), 8, 12));
        t.untake(e, k);
        assert_eq!(t.drain_unused(), [8..12, 0..1]);
    }

    #[test]
    fn unused_tickets_are_given_back_last_leased_first() {
        let mut t = Tickets::default();
        t.leases.push_back((epoch(0.0), 0, 4));
        t.leases.push_back((epoch(0.0), 8, 12));
        t.leases.push_back((epoch(0.0), 20, 20));
        assert_eq!(t.drain_unused(), [8..12, 0..4]);
    }
}
