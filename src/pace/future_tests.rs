//! The async acquire on the manual clock: every path of `super::future` with its
//! timer, cancel and stop behaviour, deterministic (no thread, no real time).

use super::{Acquire, Grant, RateLimiter, RateSpec};
use crate::clock::{Clock, ManualClock, Waiting};
use crate::sync::threads::{AtomicU64, Ordering};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

const MS: u64 = 1_000_000;

/// A waker that counts its wakes.
#[derive(Default)]
struct Count(AtomicU64);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A future under test with its own counting waker.
struct Task<'a> {
    fut: Pin<Box<Acquire<'a, ManualClock>>>,
    wakes: Arc<Count>,
}

impl<'a> Task<'a> {
    fn new(fut: Acquire<'a, ManualClock>) -> Self {
        Self {
            fut: Box::pin(fut),
            wakes: Arc::default(),
        }
    }

    fn poll(&mut self) -> Option<Grant> {
        let waker = Waker::from(self.wakes.clone());
        match self.fut.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(g) => Some(g),
            Poll::Pending => None,
        }
    }

    fn woken(&self) -> u64 {
        self.wakes.0.load(Ordering::Relaxed)
    }
}

fn limiter(spec: &str) -> (ManualClock, RateLimiter<ManualClock>) {
    let clock = ManualClock::new();
    let limiter = RateLimiter::with_clock(RateSpec::parse(spec).unwrap(), clock.clone());
    (clock, limiter)
}

/// `n` futures, each polled once: held for the slots after the one `acquire` took.
fn held_tasks(limiter: &RateLimiter<ManualClock>, n: usize) -> Vec<Option<Task<'_>>> {
    let mut tasks: Vec<Option<Task>> = (0..n)
        .map(|_| Some(Task::new(limiter.acquire_async())))
        .collect();
    for t in tasks.iter_mut().flatten() {
        assert_eq!(t.poll(), None, "held");
    }
    tasks
}

/// Polls every task still waiting, moving the clock a quarter slice (of 1000/s)
/// between rounds, for 40 rounds; adds the starts of those that complete.
fn poll_rounds(clock: &ManualClock, tasks: &mut [Option<Task>], starts: &mut Vec<u64>) {
    for _ in 0..40 {
        for slot in tasks.iter_mut() {
            if let Some(g) = slot.as_mut().and_then(Task::poll) {
                assert!(g.start_nanos() >= g.scheduled_nanos());
                starts.push(g.start_nanos());
                *slot = None;
            }
        }
        clock.advance_nanos(MS / 4);
    }
}

#[test]
fn futures_complete_when_the_manual_clock_passes_their_slots() {
    let (clock, limiter) = limiter("1000,0");
    let mut first = Task::new(limiter.acquire_async());
    let g = first.poll().expect("slot 0 is due at once");
    assert_eq!((g.scheduled_nanos(), g.wait_nanos()), (0, 0));
    let mut second = Task::new(limiter.acquire_async());
    let mut third = Task::new(limiter.acquire_async());
    assert_eq!(second.poll(), None);
    assert_eq!(third.poll(), None);
    assert_eq!(clock.queued_timers(), 2);
    clock.advance_nanos(MS / 2);
    assert_eq!((second.woken(), third.woken()), (0, 0));
    clock.advance_nanos(MS / 2);
    assert_eq!(
        (second.woken(), third.woken()),
        (1, 0),
        "woken by the advance"
    );
    let g = second.poll().expect("due at 1 ms");
    assert_eq!((g.scheduled_nanos(), g.start_nanos()), (MS, MS));
    assert_eq!(
        third.poll(),
        None,
        "a spurious poll before its slot waits on"
    );
    clock.advance_nanos(3 * MS / 2);
    assert!(third.woken() >= 1); // once per registration: the spurious poll asked again
    let g = third.poll().expect("due at 2 ms");
    // woken late (the clock jumped past the slot): the wait is the lateness
    assert_eq!((g.scheduled_nanos(), g.start_nanos()), (2 * MS, 5 * MS / 2));
    assert_eq!(g.wait_nanos(), MS / 2);
    assert_eq!(limiter.stats().grants, 3);
}

#[test]
fn a_due_slot_completes_without_a_timer() {
    let (clock, limiter) = limiter("1000,0");
    limiter.acquire();
    clock.advance_nanos(10 * MS); // ten slots behind
    for k in 1..=5u64 {
        let g = Task::new(limiter.acquire_async()).poll().expect("due");
        assert_eq!((g.scheduled_nanos(), g.start_nanos()), (k * MS, 10 * MS));
    }
    assert_eq!(clock.queued_timers(), 0);
}

#[test]
fn the_start_is_the_first_poll_never_the_call() {
    let (clock, limiter) = limiter("1000,0");
    limiter.acquire();
    let mut t = Task::new(limiter.acquire_async());
    clock.advance_nanos(7 * MS); // the future sat unpolled for 7 ms
    let g = t.poll().expect("due");
    assert_eq!((g.scheduled_nanos(), g.start_nanos()), (MS, 7 * MS));
}

#[test]
fn the_release_window_applies_to_the_timer_deadline() {
    let clock = ManualClock::new();
    let waiting = Waiting::builder()
        .release_window(Duration::from_millis(2))
        .build();
    let limiter = RateLimiter::builder(RateSpec::new(100.0))
        .waiting(waiting)
        .build_with_clock(clock.clone());
    limiter.acquire();
    clock.advance_nanos(7 * MS);
    // 3 ms ahead, beyond the 2 ms window: waits until 8 ms
    let mut t = Task::new(limiter.acquire_async());
    assert_eq!(t.poll(), None);
    clock.advance_nanos(MS - 1);
    assert_eq!(t.woken(), 0);
    clock.advance_nanos(1);
    assert_eq!(t.woken(), 1);
    let g = t.poll().expect("released at slot - window");
    assert_eq!(
        (g.scheduled_nanos(), g.start_nanos(), g.wait_nanos()),
        (10 * MS, 8 * MS, 0)
    );
    // within the window: at once
    clock.advance_nanos(11 * MS);
    let g = Task::new(limiter.acquire_async())
        .poll()
        .expect("within the window");
    assert_eq!(g.scheduled_nanos(), 20 * MS);
}

#[test]
fn a_dropped_future_gives_back_its_slot() {
    let (_clock, limiter) = limiter("100,0");
    limiter.acquire();
    let mut t = Task::new(limiter.acquire_async());
    assert_eq!(t.poll(), None); // holds slot 10 ms
    assert_eq!(limiter.stats().grants, 2);
    drop(t);
    let s = limiter.stats();
    assert_eq!((s.grants, s.missed_slots, s.idle_nanos), (1, 0.0, 0));
    assert_eq!(
        limiter.acquire().scheduled_nanos(),
        10 * MS,
        "the slot is reused"
    );
}

#[test]
fn a_dropped_future_behind_another_forfeits_its_slot() {
    let (clock, limiter) = limiter("100,0");
    limiter.acquire();
    let mut a = Task::new(limiter.acquire_async()); // slot 10 ms
    let mut b = Task::new(limiter.acquire_async()); // slot 20 ms
    assert_eq!((a.poll(), b.poll()), (None, None));
    drop(a); // not the last ticket: cannot go back
    let s = limiter.stats();
    assert_eq!((s.grants, s.missed_slots, s.idle_nanos), (2, 1.0, 10 * MS));
    clock.advance_nanos(20 * MS);
    assert_eq!(b.poll().expect("due").scheduled_nanos(), 20 * MS);
    assert_eq!(limiter.acquire().scheduled_nanos(), 30 * MS);
    // the accounting adds up: every slot up to the cursor is a grant or missed
    let s = limiter.stats();
    assert_eq!(s.allocated_nanos + s.idle_nanos, s.cursor_nanos);
}

#[test]
fn a_dropped_future_in_strict_mode_gives_back_or_forfeits_the_same_way() {
    let (_clock, limiter) = limiter("100,1.0");
    limiter.acquire();
    let mut a = Task::new(limiter.acquire_async());
    let mut b = Task::new(limiter.acquire_async());
    assert_eq!((a.poll(), b.poll()), (None, None));
    drop(b); // the last ticket: back
    assert_eq!(limiter.stats().missed_slots, 0.0);
    drop(a); // now the last one too
    let s = limiter.stats();
    assert_eq!((s.grants, s.missed_slots), (1, 0.0));
    assert_eq!(limiter.acquire().scheduled_nanos(), 10 * MS);
}

#[test]
fn strict_async_slots_keep_a_slice_apart() {
    let (clock, limiter) = limiter("100,1.0");
    limiter.acquire();
    let mut t = Task::new(limiter.acquire_async());
    assert_eq!(t.poll(), None); // slot 10 ms
    clock.advance_nanos(13 * MS); // woken 3 ms late
    let g = t.poll().expect("due");
    assert_eq!((g.scheduled_nanos(), g.wait_nanos()), (10 * MS, 3 * MS));
    // the overshoot moved the schedule, as for a sync strict op
    let mut next = Task::new(limiter.acquire_async());
    assert_eq!(next.poll(), None);
    clock.advance_nanos(10 * MS);
    assert_eq!(next.poll().expect("due").scheduled_nanos(), 23 * MS);
}

#[test]
fn a_batch_takes_n_slots_and_waits_for_the_first() {
    let (clock, limiter) = limiter("1000,0");
    limiter.acquire();
    let mut t = Task::new(limiter.acquire_n_async(4));
    assert_eq!(t.poll(), None);
    clock.advance_nanos(MS);
    let g = t.poll().expect("due");
    assert_eq!((g.scheduled_nanos(), g.count()), (MS, 4));
    assert_eq!(limiter.acquire().scheduled_nanos(), 5 * MS);
}

#[test]
fn a_paused_future_completes_when_resumed() {
    let (clock, limiter) = limiter("1000,0");
    limiter.acquire();
    limiter.set_spec(RateSpec::new(0.0));
    let mut t = Task::new(limiter.acquire_async());
    assert_eq!(t.poll(), None);
    assert_eq!(
        clock.queued_timers(),
        0,
        "a pause waits on the signal, not a timer"
    );
    clock.advance_nanos(50 * MS);
    assert_eq!(t.poll(), None, "still paused");
    limiter.set_spec(RateSpec::new(1000.0));
    assert!(t.woken() >= 1, "the change wakes it");
    // resumed: it takes the slot a sync acquire would (the pause is forfeited, the
    // slot after it is the one the schedule was on), and waits for it on the timer
    assert_eq!(t.poll(), None);
    assert_eq!(clock.queued_timers(), 1);
    clock.advance_nanos(MS);
    let g = t.poll().expect("due");
    assert_eq!((g.scheduled_nanos(), g.start_nanos()), (51 * MS, 51 * MS));
}

#[test]
fn a_stop_wakes_a_paused_future() {
    let (_clock, limiter) = limiter("0,0");
    let mut t = Task::new(limiter.acquire_async());
    assert_eq!(t.poll(), None);
    limiter.stop();
    assert!(t.woken() >= 1);
    assert!(t.poll().expect("stopped").is_stopped());
}

#[test]
fn a_stop_wakes_a_future_waiting_for_a_far_slot() {
    let (_clock, limiter) = limiter("1,0");
    limiter.acquire();
    let mut t = Task::new(limiter.acquire_async()); // slot 1 s
    assert_eq!(t.poll(), None);
    limiter.stop();
    assert!(t.woken() >= 1, "the stop wakes it, not the slot");
    assert!(t.poll().expect("stopped").is_stopped());
    // the held slot was forfeited: one grant, the rest is not counted as started
    assert_eq!(limiter.stats().grants, 1);
    assert!(
        Task::new(limiter.acquire_async())
            .poll()
            .unwrap()
            .is_stopped()
    );
}

#[test]
fn thread_scope_takes_the_polling_threads_schedule() {
    let (clock, limiter) = limiter("1000,0,thread");
    let g = Task::new(limiter.acquire_async()).poll().expect("slot 0");
    assert_eq!(g.scheduled_nanos(), 0);
    std::thread::scope(|s| {
        s.spawn(|| {
            // another thread has its own schedule at the same rate
            let g = Task::new(limiter.acquire_async())
                .poll()
                .expect("its slot 0");
            assert_eq!(g.scheduled_nanos(), 0);
        });
    });
    let mut t = Task::new(limiter.acquire_async());
    assert_eq!(t.poll(), None);
    clock.advance_nanos(MS);
    assert_eq!(t.poll().expect("due").scheduled_nanos(), MS);
    assert_eq!(limiter.stats().grants, 3);
}

#[test]
fn sync_and_async_acquires_share_one_schedule() {
    let (clock, limiter) = limiter("1000,0");
    let mut slots = Vec::new();
    let mut pending = Vec::new();
    for k in 0..6 {
        if k % 2 == 0 {
            let mut t = Task::new(limiter.acquire_async());
            match t.poll() {
                Some(g) => slots.push(g.scheduled_nanos()),
                None => pending.push(t),
            }
        } else {
            // a sync acquire on the manual clock moves the clock to its slot, which
            // fires the timers of the earlier async slots
            slots.push(limiter.acquire().scheduled_nanos());
        }
    }
    for mut t in pending {
        assert!(t.woken() >= 1);
        slots.push(t.poll().expect("the clock passed it").scheduled_nanos());
    }
    slots.sort();
    assert_eq!(slots, (0..6).map(|k| k * MS).collect::<Vec<_>>());
    assert_eq!(clock.now(), 5 * MS);
}

/// Regression (found by `examples/async_pace.rs`): thousands of tasks each hold a slot
/// ahead; a stall of the process made all the held slots due at once and they all
/// started in the same instant (1,418 ops in one millisecond at 100K ops/s against a
/// burst bound of 110). Held ops woken late now start no faster than s x rate.
#[test]
fn held_ops_after_a_stall_start_no_faster_than_the_burst_allowance() {
    // s = 2: late ops at most 2 x rate, one per half slice
    let (clock, limiter) = limiter("1000,2");
    limiter.acquire();
    let mut tasks = held_tasks(&limiter, 10); // slots 1..=10 ms
    clock.advance_nanos(20 * MS); // the stall: every held slot is due
    let mut starts = Vec::new();
    poll_rounds(&clock, &mut tasks, &mut starts);
    starts.sort();
    assert_eq!(starts.len(), 10, "{starts:?}");
    assert!(
        starts.windows(2).all(|w| w[1] - w[0] >= MS / 2),
        "late held ops half a slice apart at s = 2: {starts:?}"
    );
}

/// The same stall in strict mode: the held slots it made due start a slice apart.
#[test]
fn held_strict_ops_after_a_stall_start_a_slice_apart() {
    let (clock, limiter) = limiter("1000,1.0");
    limiter.acquire();
    let mut tasks = held_tasks(&limiter, 5); // slots 1..=5 ms
    clock.advance_nanos(20 * MS);
    let mut starts = Vec::new();
    poll_rounds(&clock, &mut tasks, &mut starts);
    starts.sort();
    assert_eq!(starts, [20 * MS, 21 * MS, 22 * MS, 23 * MS, 24 * MS]);
    // Regression (session 17, 10,000 tasks at 1M ops/s on 16 cores reached 14 % of the
    // rate): each held op forfeited its own overshoot, 19 ms each, though the ones
    // after it already held later slots; the next slot came at 101 ms (95 missed).
    // Lateness is forfeited once: the next slot is a slice after the last start, and
    // the missed slots are the 19 the stall left unused (6..=24 ms).
    assert_eq!(limiter.stats().missed_slots, 19.0);
    let mut next = Task::new(limiter.acquire_async());
    assert_eq!(next.poll().expect("due").scheduled_nanos(), 25 * MS);
}

/// Regression (`examples/async_pace.rs`, 550-780 ops in one millisecond at 100K
/// ops/s against a bound of 110): a held op claimed its start from the gate when it
/// was first due, and a second stall before it was polled again let every op that
/// had claimed start in the same instant. The gate now decides at the start itself:
/// ops polled together after the second stall still start half a slice apart.
#[test]
fn held_ops_polled_late_after_their_claim_still_start_apart() {
    let (clock, limiter) = limiter("1000,2");
    limiter.acquire();
    let mut tasks = held_tasks(&limiter, 10); // slots 1..=10 ms
    clock.advance_nanos(20 * MS); // the first stall: every held slot is due
    let mut starts = Vec::new();
    for slot in &mut tasks {
        if let Some(g) = slot.as_mut().and_then(Task::poll) {
            starts.push(g.start_nanos());
            *slot = None;
        }
    }
    assert_eq!(
        starts,
        [20 * MS],
        "one starts at once, the rest wait for the gate"
    );
    clock.advance_nanos(10 * MS); // the second stall, before any is polled again
    poll_rounds(&clock, &mut tasks, &mut starts);
    starts.sort();
    assert_eq!(starts.len(), 10, "{starts:?}");
    assert!(
        starts.windows(2).all(|w| w[1] - w[0] >= MS / 2),
        "late held ops half a slice apart at s = 2, however late they are polled: {starts:?}"
    );
    // Nothing is lost: the gate only delays.
    assert_eq!(limiter.stats().missed_slots, 0.0);
}

/// The gate does not herd: ops waiting for it are woken in turn, about once each
/// per start, not all of them at every start.
#[test]
fn ops_waiting_at_the_gate_are_woken_in_turn() {
    let (clock, limiter) = limiter("1000,2");
    limiter.acquire();
    let mut tasks: Vec<Option<(Task, u64)>> = (0..20)
        .map(|_| Some((Task::new(limiter.acquire_async()), 0)))
        .collect();
    for (t, _) in tasks.iter_mut().flatten() {
        assert_eq!(t.poll(), None);
    }
    clock.advance_nanos(40 * MS); // a stall: all 20 are due
    let (mut polls, mut done, mut first) = (0, 0, true);
    for _ in 0..200 {
        for slot in &mut tasks {
            // An executor polls a task once it has been woken since its last poll.
            let Some((t, seen)) = slot.as_mut() else {
                continue;
            };
            if first || t.woken() > *seen {
                *seen = t.woken();
                polls += 1;
                if t.poll().is_some() {
                    *slot = None;
                    done += 1;
                }
            }
        }
        first = false;
        clock.advance_nanos(MS / 4);
    }
    assert_eq!(done, 20);
    assert!(polls <= 3 * 20, "{polls} polls for 20 ops");
}

/// An op the gate turned away (polled in a crowd after a second stall) claims
/// again; its new claim is no earlier than the gate's next start allows, so an
/// executor that polls it again at once does not start it beside the op that
/// took the gate.
#[test]
fn an_op_turned_away_does_not_start_beside_the_one_that_passed() {
    let (clock, limiter) = limiter("1000,2");
    limiter.acquire();
    let mut a = Task::new(limiter.acquire_async());
    let mut b = Task::new(limiter.acquire_async());
    let mut c = Task::new(limiter.acquire_async());
    for t in [&mut a, &mut b, &mut c] {
        assert_eq!(t.poll(), None); // slots 1, 2, 3 ms
    }
    clock.advance_nanos(20 * MS); // the first stall
    assert_eq!(a.poll().map(|g| g.start_nanos()), Some(20 * MS));
    assert_eq!(b.poll(), None, "claims 20.5 ms");
    assert_eq!(c.poll(), None, "claims 21 ms");
    clock.advance_nanos(10 * MS); // the second stall, before b and c are polled
    let b_start = b
        .poll()
        .expect("the first of the crowd passes")
        .start_nanos();
    assert_eq!(b_start, 30 * MS);
    let mut c_start = None;
    for _ in 0..2_000 {
        // An executor that polls c as soon as it is woken.
        if let Some(g) = c.poll() {
            c_start = Some(g.start_nanos());
            break;
        }
        clock.advance_nanos(1_000);
    }
    let c_start = c_start.expect("c starts");
    assert!(
        c_start >= b_start + MS / 2 - super::future::GATE_TOLERANCE,
        "b at {b_start}, c at {c_start}"
    );
}
