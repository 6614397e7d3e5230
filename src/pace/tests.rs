//! Unit tests of the pacer's internals: regressions that need a taker stopped between
//! two of its steps (issue 12), and the real clock's deferred starts.

use super::schedule::{Schedule, Shared};
use super::word::Word;
use crate::sync::Ordering;
use crate::{Clock, ManualClock, RateLimiter, RateSpec, Waiting};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MS: u64 = 1_000_000;

/// A schedule for `spec` on a manual clock, anchored at 0 by one acquire.
fn anchored(spec: &str) -> (Schedule, Shared<ManualClock>) {
    let sched = Schedule::new(
        RateSpec::parse(spec).unwrap(),
        true,
        super::Arrivals::Uniform,
    );
    let sh = Shared::new(ManualClock::new(), Waiting::exact(), 32);
    sched.acquire(&sh, 1);
    (sched, sh)
}

/// Regression (issue 12, bug 4): a late op of a burst epoch that re-anchors after a
/// change of burst ratio planted an anchor computed for the old ratio. An hour into a
/// run, going from s = 2 to s = 1.1, the next late op's earliest start was about 24
/// minutes ahead.
#[test]
fn a_late_op_of_an_old_ratio_leaves_the_new_anchor_alone() {
    // an hour into a run at s = 2, the schedule a second behind
    let (sched, sh) = anchored("1000,0");
    sh.clock.set(3_600_000 * MS);
    for _ in 0..4 {
        sched.acquire(&sh, 899_750);
    }
    sched.set_spec(&sh, RateSpec::parse("1000,2").unwrap(), true);
    // an op of the s = 2 epoch takes its ticket ...
    let (_, wd, old) = sched.current();
    sched
        .hot
        .word
        .fetch_add(Word::tickets(1), Ordering::Acquire);
    let slot = old.slot(wd.ticket, wd.idle);
    let mapped = sched.burst_floor(&old, slot);
    // ... the ratio changes before it re-anchors, a few microseconds later ...
    sched.set_spec(&sh, RateSpec::parse("1000,1.1").unwrap(), true);
    sh.clock.advance_nanos(10_000);
    let now = sh.now();
    assert!(now > slot && now > mapped, "the op is late");
    sched.reanchor_if_behind(&old, slot, mapped, now);
    // ... and the next late op starts where the old allowance put it (slice / 2
    // after the racing op's slot mapping, 0.5 ms), not minutes ahead.
    let g = sched.acquire(&sh, 1);
    assert!(g.start_nanos() <= now + MS, "{g:?}");
    // the new allowance holds: late ops start slice / 1.1 apart
    let h = sched.acquire(&sh, 1);
    let gap = h.start_nanos() - g.start_nanos();
    assert!((909_090..=909_091).contains(&gap), "{h:?}");
}

/// Regression (issue 12, bug 7): a taker that read the gate before a change to strict
/// mode was published took a ticket by `fetch_add` in the strict epoch and was
/// granted it without forfeiting its lateness; the next strict op then started at the
/// same instant.
#[test]
fn a_fetch_add_ticket_in_a_strict_epoch_is_given_back() {
    let (sched, sh) = anchored("1000,0");
    sh.clock.set(10 * MS);
    sched.set_spec(&sh, RateSpec::parse("1000,1").unwrap(), true);
    assert!(sched.take_adding(&sh, 1).is_none(), "given back");
    assert_eq!(sched.stats(&sh).grants, 1);
    let a = sched.acquire(&sh, 1);
    let b = sched.acquire(&sh, 1);
    assert_eq!(a.start_nanos(), 10 * MS);
    assert!(b.start_nanos() - a.start_nanos() >= MS, "{a:?} {b:?}");
}

/// When a ticket was taken after it, a `fetch_add` ticket in a strict epoch cannot go
/// back: it is void, never granted, its slot a missed one.
#[test]
fn a_strict_ticket_that_cannot_go_back_is_void_and_missed() {
    let (sched, sh) = anchored("1000,1");
    let ticket = Word::unpack(
        sched
            .hot
            .word
            .fetch_add(Word::tickets(1), Ordering::Acquire),
    );
    let (_, _, ep) = sched.current();
    let before = sched.stats(&sh);
    sched.acquire(&sh, 1); // a later ticket
    sched.give_up(&ep, ticket.ticket, 1);
    let after = sched.stats(&sh);
    assert_eq!(after.grants, before.grants, "the void one is not a grant");
    assert_eq!(after.missed, before.missed + 1.0);
    assert_eq!(after.idle, before.idle + MS);
}

/// Regression (issue 12, bug 10): tickets taken from a stopped epoch (by a taker that
/// read the gate before the stop) were counted as grants.
#[test]
fn tickets_of_a_stopped_epoch_are_not_grants() {
    let (sched, sh) = anchored("1000,0");
    sh.clock.set(10 * MS);
    sched.acquire(&sh, 1);
    let before = sched.stats(&sh).grants;
    sched.stop(&sh);
    assert!(sched.take_adding(&sh, 1).is_none());
    assert!(sched.take_adding(&sh, 5).is_none());
    let after = sched.stats(&sh);
    assert_eq!(after.grants, before);
    assert_eq!(after.cursor, sched.stats(&sh).cursor);
}

/// On the real clock, a grant handed out without a reading reads its start when asked:
/// never before the call, never after the question.
#[test]
fn real_clock_grants_without_a_reading_read_their_start_when_asked() {
    let l = RateLimiter::new(RateSpec::new(1e9).strictness(0.0));
    let mut deferred = 0;
    for i in 0..20_000 {
        if i % 5_000 == 4_999 {
            std::thread::sleep(Duration::from_millis(2));
        }
        let before = l.now();
        let g = l.acquire();
        let start = g.start_nanos();
        let after = l.now();
        assert!(before <= start && start <= after, "{before} {g:?} {after}");
        deferred += usize::from(g.is_deferred());
    }
    assert!(deferred > 10_000, "only {deferred} of 20000 deferred");
    // asked later, a deferred start is later: it is read, not remembered
    let g = loop {
        let g = l.acquire();
        if g.is_deferred() {
            break g;
        }
    };
    let first = g.start_nanos();
    std::thread::sleep(Duration::from_millis(1));
    assert!(g.start_nanos() >= first + MS);
    // a caller with its own reading passes it in
    let now = l.now();
    assert_eq!(g.wait_at(now), now - g.scheduled_nanos());
}

/// On any clock but the real one, every grant carries its reading.
#[test]
fn manual_clock_grants_always_carry_their_reading() {
    let clock = ManualClock::new();
    let l = RateLimiter::with_clock(RateSpec::new(1e9).strictness(0.0), clock.clone());
    for _ in 0..1_000 {
        clock.advance_nanos(3);
        assert!(!l.acquire().is_deferred());
    }
    assert_eq!(clock.timeline_origin(), None);
}

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

/// Issue 18, item 9: a caller blocked by a pause leaves, holding no slot, when its
/// `give_up` holds and the waiters are woken; the others wait on until the resume.
#[test]
fn a_paused_caller_told_to_leave_leaves_and_the_others_wait_for_the_resume() {
    use crate::sync::AtomicBool;
    let clock = ManualClock::new();
    let l = Arc::new(RateLimiter::with_clock(RateSpec::new(1000.0), clock));
    l.acquire();
    l.set_spec(RateSpec::paused());
    let leave = Arc::new(AtomicBool::new(false));
    let waiter = |give_up: bool| {
        let (l, leave) = (Arc::clone(&l), Arc::clone(&leave));
        std::thread::spawn(move || l.acquire_unless(|| give_up && leave.load(Ordering::Relaxed)))
    };
    let (told, stays) = (waiter(true), waiter(false));
    std::thread::sleep(Duration::from_millis(20));
    leave.store(true, Ordering::Relaxed);
    l.wake();
    assert_eq!(told.join().unwrap(), None);
    std::thread::sleep(Duration::from_millis(20));
    assert!(!stays.is_finished(), "woken, but still paused");
    l.set_spec(RateSpec::new(1000.0));
    let g = stays.join().unwrap().expect("a slot after the resume");
    assert!(!g.is_stopped());
    assert_eq!(l.stats().grants, 2, "the one that left took no slot");
}

/// Session 14 (missed slots at a pause's edges): of the missed slots, those
/// forfeited while the spec was at rate 0 (a pause) are `paused_slots`,
/// counted where the schedules know them: at the rate before the pause
/// whatever rate follows, per thread schedule in thread scope, and none before
/// the first acquire (an unanchored schedule forfeits nothing). The engine took
/// them out by its own estimate, which read 100 paused slots where the thread
/// scope's two schedules forfeited 200 (100 missed slots invented).
#[test]
fn paused_slots_are_the_missed_slots_of_the_pauses() {
    use crate::pace::{Scope, Verb};
    let clock = ManualClock::new();
    let spec = RateSpec::new(100.0).strictness(1.0);
    let paused = RateSpec::paused().strictness(1.0);
    let l = RateLimiter::with_clock(spec, clock.clone());
    // Paused before the first acquire: nothing forfeited.
    l.set_spec(paused);
    clock.advance(Duration::from_secs(1));
    l.set_spec(spec.verb(Verb::Configure));
    l.acquire();
    let s = l.stats();
    assert_eq!((s.missed_slots, s.paused_slots), (0.0, 0.0));
    // 1 s paused, resumed at another rate: 100 slots of the rate before it.
    l.set_spec(paused);
    clock.advance(Duration::from_secs(1));
    l.set_spec(spec.with_rate(1000.0).unwrap_or(spec));
    l.acquire();
    let s = l.stats();
    assert_eq!((s.missed_slots, s.paused_slots), (100.0, 100.0));
    // A real miss is not a paused slot: 50 ms late at 1000/s.
    clock.advance(Duration::from_millis(50));
    l.acquire();
    let s = l.stats();
    assert_eq!((s.missed_slots, s.paused_slots), (149.0, 100.0));
    // Paused now: counted as it goes.
    l.set_spec(paused);
    clock.advance(Duration::from_millis(100));
    assert_eq!(l.stats().paused_slots, 200.0);

    // Thread scope: each thread's schedule forfeits the pause's slots.
    let clock = ManualClock::new();
    let spec = spec.scope(Scope::Thread);
    let l = Arc::new(RateLimiter::with_clock(spec, clock.clone()));
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (ready_tx, ready) = std::sync::mpsc::channel::<()>();
    let other = {
        let l = l.clone();
        std::thread::spawn(move || {
            l.acquire();
            ready_tx.send(()).ok();
            rx.recv().ok();
            l.acquire();
        })
    };
    ready.recv().ok();
    l.acquire();
    l.set_spec(spec.with_rate(0.0).unwrap_or(spec));
    clock.advance(Duration::from_secs(1));
    l.set_spec(spec.verb(Verb::Configure));
    tx.send(()).ok();
    other.join().ok();
    l.acquire();
    let s = l.stats();
    assert_eq!((s.missed_slots, s.paused_slots), (200.0, 200.0));
}
