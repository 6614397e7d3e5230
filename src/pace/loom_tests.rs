//! Loom models: concurrent acquires, and acquire racing a rate change and a stop.
//! Run with `RUSTFLAGS="--cfg loom" cargo test --release --lib loom_tests`.
use super::schedule::{Schedule, Shared};
use super::{Grant, RateSpec};
use crate::clock::{Clock, ManualClock, Waiting};
use loom::sync::Arc;

const MS: u64 = 1_000_000;

type Model = Arc<(Schedule, Shared<ManualClock>)>;

/// A schedule for `spec` on a manual clock at 0, anchored by one acquire outside
/// the model's races.
fn anchored(spec: &str, fast_path_limit: u64, waiting: Waiting) -> Model {
    let sched = Schedule::new(
        RateSpec::parse(spec).unwrap(),
        true,
        super::Arrivals::Uniform,
    );
    let sh = Shared::new(ManualClock::new(), waiting, fast_path_limit);
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
        assert!(a.start_nanos() >= a.scheduled_nanos() && b.start_nanos() >= b.scheduled_nanos());
    });
}

/// An acquire racing a raise from 1000/s to 2000/s, under the cut rule
/// (docs/pacing.md, "Rate raised from far ahead"): the schedule is cut at
/// `now + max(new slice, window) + 1` when its cursor is at or past that, slots at or
/// after the cut are given back, and the new epoch starts at `max(now, last kept slot
/// + new slice)`. Slot 0 is taken (cursor 1 ms, window 0). If the change reads the
/// clock at 0 (before the racing op's wait moved it), the cut is at 0.5 ms + 1: the
/// op either takes the new epoch's first ticket or gives back ticket 1 (slot 1 ms)
/// and takes it, so it runs at 0.5 ms and the next at 1 ms. If the op's wait moved
/// the clock to 1 ms first, the cut is at 1.5 ms + 1, ticket 1 is kept, and the next
/// slot is 1.5 ms. (A third outcome, 1 ms then 0.5 ms, is the race of review p17 M3:
/// the op granted its old slot between the change's reading and its publish.)
#[test]
fn loom_tests_acquire_racing_a_rate_change_keeps_the_cursor() {
    loom::model(|| {
        let s = setup("1000,0");
        let t = spawn_acquire(&s);
        s.0.set_spec(&s.1, RateSpec::parse("2000,0").unwrap(), true);
        let a = t.join().unwrap().scheduled_nanos();
        let next = s.0.acquire(&s.1, 1).scheduled_nanos();
        assert!(
            (a, next) == (MS / 2, MS) || (a, next) == (MS, 3 * MS / 2),
            "a {a} next {next}"
        );
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
                s.0.set_spec(&s.1, RateSpec::parse("1000,0,restart").unwrap(), true)
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

/// Reserved slots handed out after a stall pay the burst allowance at the thread's
/// next reading (`Schedule::pay_unread`), racing another thread's acquire. 1000/s,
/// s = 64 (spacing 15.625 us), 1 s behind: the main thread reserves tickets 3..=6
/// (all due within the 1 ms slack), stalls 10 ms, hands out the 3 reserved slots
/// without a reading and then reads the clock. Whatever the interleaving: no slot
/// twice, the main thread's slots rise, its paying grant's slot starts no earlier
/// than the stall's end less the slack plus the 3 reserved spacings (the anchor only
/// moves forward, so the other thread's restart cannot undo the payment), and the
/// other thread is never held back past the stall's end (only the 3 slots are paid,
/// not the tickets it took).
#[test]
fn loom_tests_reserved_slots_after_a_stall_pay_the_allowance() {
    loom::model(|| {
        let s = anchored("1000,64", 4, Waiting::exact());
        s.1.clock.set(1_000 * MS);
        s.0.acquire(&s.1, 1); // first reading behind: pace unknown
        s.0.acquire(&s.1, 1); // same instant: the next reservation is 4
        let t = spawn_acquire(&s);
        let mut mine = vec![s.0.acquire(&s.1, 1)]; // the reservation
        s.1.clock.set(1_010 * MS);
        for _ in 0..4 {
            mine.push(s.0.acquire(&s.1, 1)); // 3 unread hand-outs, then a reading
        }
        let theirs = t.join().unwrap();
        let slots: Vec<u64> = mine.iter().map(|g| g.scheduled_nanos()).collect();
        assert!(slots.windows(2).all(|w| w[0] < w[1]), "{slots:?}");
        let mut all: Vec<(u64, u64)> = slots.iter().map(|&x| (x, 1)).collect();
        all.push((theirs.scheduled_nanos(), 1));
        distinct_slots(&all, MS);
        let (_, _, ep) = s.0.current();
        let paid = *slots.last().unwrap();
        let line = s.0.burst_floor(&ep, paid);
        let spacings = ep.over_s(3 * MS);
        assert!(line + 1 >= 1_009 * MS + spacings, "{line} for {paid}");
        assert!(theirs.start_nanos() <= 1_010 * MS, "{theirs:?}");
    });
}

/// Issue 12, bug 4: a late op of a burst epoch racing a change of burst ratio (s = 2
/// to 1.1) an hour into a run. Whatever the interleaving, the op's re-anchor cannot
/// plant an anchor computed for the old ratio under the new one: the next late op
/// starts within the old allowance's spacing of now, not minutes ahead.
#[test]
fn loom_tests_acquire_racing_a_ratio_change_keeps_the_allowance() {
    loom::model(|| {
        let s = setup("1000,0");
        s.1.clock.set(3_600_000 * MS);
        for _ in 0..4 {
            s.0.acquire(&s.1, 899_750);
        }
        s.0.set_spec(&s.1, RateSpec::parse("1000,2").unwrap(), true);
        let t = spawn_acquire(&s);
        s.1.clock.advance_nanos(10_000);
        s.0.set_spec(&s.1, RateSpec::parse("1000,1.1").unwrap(), true);
        t.join().unwrap();
        let now = s.1.clock.now();
        let g = s.0.acquire(&s.1, 1);
        assert!(g.start_nanos() <= now + MS, "{g:?} at {now}");
    });
}

type Limiter = Arc<crate::RateLimiter<ManualClock>>;

fn limiter(spec: &str) -> (ManualClock, Limiter) {
    let clock = ManualClock::new();
    let l = crate::RateLimiter::with_clock(RateSpec::parse(spec).unwrap(), clock.clone());
    (clock, Arc::new(l))
}

/// Issue 12, bug 6: an acquire racing a switch to thread scope, then a second of the
/// thread scope and a switch back: the shared schedule's unused second is forfeited,
/// so at most one grant is released at once, whichever schedule the racing acquire
/// took its slot from.
#[test]
fn loom_tests_acquire_racing_a_scope_change_releases_no_backlog() {
    loom::model(|| {
        let (clock, l) = limiter("1000,0");
        l.acquire();
        let t = {
            let l = Arc::clone(&l);
            loom::thread::spawn(move || l.acquire())
        };
        l.set_spec(RateSpec::parse("1000,0,thread").unwrap());
        assert!(!t.join().unwrap().is_stopped());
        clock.set(1_000 * MS);
        l.set_spec(RateSpec::parse("1000,0").unwrap());
        let at = l.now();
        let a = l.acquire();
        let b = l.acquire();
        assert!(
            b.start_nanos() > at,
            "{a:?} {b:?}: a backlog released at {at}"
        );
    });
}

/// Issue 12, bug 8: a thread's own schedule (thread scope) created while the rate
/// changes: the change reaches it whichever comes first.
#[test]
fn loom_tests_a_new_thread_schedule_never_misses_a_rate_change() {
    loom::model(|| {
        let (_clock, l) = limiter("1000,0,thread");
        let t = {
            let l = Arc::clone(&l);
            loom::thread::spawn(move || l.set_spec(RateSpec::parse("2000,0,thread").unwrap()))
        };
        l.acquire();
        t.join().unwrap();
        let b = l.acquire().scheduled_nanos();
        let c = l.acquire().scheduled_nanos();
        assert_eq!(c - b, MS / 2, "the new rate's slice");
    });
}

/// A thread's own schedule created while the limiter stops: every acquire after the
/// stop is stopped, whichever comes first.
#[test]
fn loom_tests_a_new_thread_schedule_racing_stop_is_stopped() {
    loom::model(|| {
        let (_clock, l) = limiter("1000,0,thread");
        let t = {
            let l = Arc::clone(&l);
            loom::thread::spawn(move || l.stop())
        };
        let g = l.acquire();
        t.join().unwrap();
        assert!(g.is_stopped() || g.scheduled_nanos() == 0, "{g:?}");
        assert!(l.acquire().is_stopped());
    });
}

/// The async acquire's first poll (its slot ahead of the clock: a held ticket) and its
/// drop (the ticket back to the word if it is still the last, void otherwise) racing
/// another thread's acquire: never a slot twice, never a slot lost uncounted.
#[test]
fn loom_tests_async_acquire_dropped_racing_an_acquire() {
    use super::future::Step;
    loom::model(|| {
        let s = setup("1000,0");
        let t = spawn_acquire(&s);
        match s.0.take_nowait(&s.1, 1) {
            Step::Wait(held) => s.0.forfeit_held(&held),
            Step::Granted(g) => panic!("ahead of the clock, yet granted: {g:?}"),
            Step::Paused(_) => panic!("not paused"),
        }
        let other = t.join().unwrap().scheduled_nanos();
        let st = s.0.stats(&s.1);
        // the other acquire's slot is 1 ms, or 2 ms if the dropped ticket (1 ms)
        // could not go back and was counted missed
        assert_eq!(st.grants, 2, "{st:?}");
        assert_eq!(other, MS + st.missed as u64 * MS, "{st:?}");
        assert_eq!(st.allocated + st.idle, st.cursor, "{st:?}");
    });
}

/// A waker that records that it was woken (loom runs one thread at a time, and the
/// check comes after a join).
struct Flag(crate::sync::threads::AtomicBool);

impl std::task::Wake for Flag {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.store(true, crate::sync::threads::Ordering::Relaxed);
    }
}

/// The async acquire's timer on the manual clock racing a move of the clock by
/// another thread's acquire: a future whose deadline the clock passed has been woken
/// (no lost wake-up between its registration and the move), and completes.
#[test]
fn loom_tests_async_timer_racing_a_clock_move() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    loom::model(|| {
        let (clock, l) = limiter("1000,0");
        l.acquire();
        let t = {
            let l = Arc::clone(&l);
            loom::thread::spawn(move || l.acquire().scheduled_nanos())
        };
        let flag = std::sync::Arc::new(Flag(false.into()));
        let waker = Waker::from(std::sync::Arc::clone(&flag));
        let mut cx = Context::from_waker(&waker);
        let mut fut = Box::pin(l.acquire_async());
        let first = fut.as_mut().poll(&mut cx);
        let other = t.join().unwrap();
        let mine = match first {
            Poll::Ready(g) => g.scheduled_nanos(),
            Poll::Pending => {
                let woken = flag.0.load(crate::sync::threads::Ordering::Relaxed);
                // the other acquire moved the clock to its own slot: if that is 2 ms,
                // this future holds 1 ms, which the clock has passed
                if other == 2 * MS {
                    assert!(woken, "the clock passed the slot without waking it");
                }
                if !woken {
                    clock.advance_nanos(2 * MS);
                    assert!(flag.0.load(crate::sync::threads::Ordering::Relaxed));
                }
                match fut.as_mut().poll(&mut cx) {
                    Poll::Ready(g) => g.scheduled_nanos(),
                    Poll::Pending => panic!("woken yet not due"),
                }
            }
        };
        let mut slots = [mine, other];
        slots.sort();
        assert_eq!(slots, [MS, 2 * MS]);
    });
}

/// Two held async ops made due by one stall and polled at the same instant on two
/// threads: the gate lets exactly one start then, turns the other away to its turn
/// (a burst spacing later).
#[test]
fn loom_tests_async_gate_lets_one_of_two_due_ops_start() {
    use super::future::Step;
    loom::model(|| {
        let s = setup("1000,2");
        let mut held = Vec::new();
        for _ in 0..2 {
            match s.0.take_nowait(&s.1, 1) {
                Step::Wait(h) => held.push(h),
                _ => panic!("slots ahead of the clock are held"),
            }
        }
        s.1.clock.advance_nanos(10 * MS); // the stall: both due
        let mut b = held.pop().unwrap();
        let mut a = held.pop().unwrap();
        let t = {
            let s = Arc::clone(&s);
            loom::thread::spawn(move || {
                let r = s.0.finish_held(&s.1, &mut a, 10 * MS);
                (r.map(|g| g.start_nanos()), a)
            })
        };
        let mine =
            s.0.finish_held(&s.1, &mut b, 10 * MS)
                .map(|g| g.start_nanos());
        let (theirs, a) = t.join().unwrap();
        let (turn, mut late) = match (mine, theirs) {
            (Ok(start), Err(turn)) => (turn, {
                assert_eq!(start, 10 * MS);
                a
            }),
            (Err(turn), Ok(start)) => (turn, {
                assert_eq!(start, 10 * MS);
                b
            }),
            other => panic!("exactly one starts at once: {other:?}"),
        };
        assert_eq!(turn, 10 * MS + MS / 2, "half a slice later at s = 2");
        assert!(
            s.0.finish_held(&s.1, &mut late, turn - 1).is_err(),
            "not before"
        );
        let g = s.0.finish_held(&s.1, &mut late, turn).unwrap();
        assert_eq!(g.start_nanos(), turn);
    });
}

/// Issue 23, item 5: a pause racing a caller waiting toward its slot (1 ms ahead;
/// the manual clock jumps there). The caller's ticket is either granted (the pause
/// came after its slot was reached) or void (it gives up on the pause): never both,
/// never lost, so the grants are the anchoring op plus the caller's, if it got one.
#[test]
fn loom_tests_a_pause_racing_a_sleeper_voids_its_slot_or_comes_after_it() {
    loom::model(|| {
        let s = anchored("1000,1.1", 0, Waiting::exact());
        let t = {
            let s = Arc::clone(&s);
            loom::thread::spawn(move || s.0.acquire_unless(&s.1, 1, &|| true))
        };
        let paused = s.0.spec().with_rate(0.0).unwrap();
        s.0.set_spec(&s.1, paused, true);
        let got = t.join().unwrap();
        let st = s.0.stats(&s.1);
        assert_eq!(st.grants, 1 + u64::from(got.is_some()), "{got:?} {st:?}");
        if let Some(g) = got {
            assert_eq!(g.scheduled_nanos(), MS, "{g:?}");
        }
    });
}

/// Poisson arrivals: two threads racing for random slots take the stream's slots in
/// order, each once (the thread-local prefix-sum memo shares nothing).
#[test]
fn loom_tests_concurrent_poisson_acquires_take_the_stream_in_order() {
    let spec = RateSpec::parse("1000,0").unwrap();
    loom::model(move || {
        // The stream's first three slots, taken by one thread (a schedule is
        // built of loom atomics, so only inside the model).
        let raw: Vec<u64> = {
            let sched = Schedule::new(spec, true, super::Arrivals::Poisson { seed: 5 });
            let sh = Shared::new(ManualClock::new(), Waiting::exact(), 0);
            (0..3)
                .map(|_| sched.acquire(&sh, 1).scheduled_nanos())
                .collect()
        };
        let sched = Schedule::new(spec, true, super::Arrivals::Poisson { seed: 5 });
        let sh = Shared::new(ManualClock::new(), Waiting::exact(), 0);
        sched.acquire(&sh, 1);
        let s: Model = Arc::new((sched, sh));
        let t = spawn_acquire(&s);
        let mine = s.0.acquire(&s.1, 1).scheduled_nanos();
        let theirs = t.join().unwrap().scheduled_nanos();
        let mut got = vec![mine, theirs];
        got.sort();
        assert_eq!(got, raw[1..], "{mine} {theirs}");
    });
}

/// Audit p16, H1: a raise that cuts the schedule racing a caller asleep toward a slot
/// of the low rate (100 s ahead; the manual clock jumps there). The caller keeps its
/// slot (the cut came after its wake-up read the clock, or kept it) or gives it back
/// and takes one of the new rate: either way no slot is handed out twice, the next
/// op's slot is after it, and the given-back ticket is no grant.
#[test]
fn loom_tests_a_cut_racing_a_sleeper_keeps_or_gives_back_its_slot() {
    loom::model(|| {
        let s = anchored("0.01,0", 0, Waiting::exact());
        let t = spawn_acquire(&s);
        s.0.set_spec(&s.1, RateSpec::parse("1000,0").unwrap(), true);
        let a = t.join().unwrap().scheduled_nanos();
        let b = s.0.acquire(&s.1, 1).scheduled_nanos();
        assert!(b > a, "{a} then {b}");
        // ticket 1's slot at 0.01/s: 1e9 / 0.01 ns in floating point, rounded down
        assert!(a == 100_000 * MS - 1 || a == MS, "{a}");
        assert_eq!(s.0.stats(&s.1).grants, 3);
    });
}

/// Review p17 M3, the due path: a taker whose ticket of the low rate (100 s) becomes
/// due at its reading (its thread moved the manual clock there first) racing a raise
/// that may read the clock before that move. If the change read 0, it cuts at 1 ms + 1
/// and the new epoch starts at 1 ms, so the taker must give its ticket back even when
/// its due decision came before the cut was published (it sees the change's mark and
/// waits for it); if the change read 100 s, the ticket is kept and the new epoch
/// starts one new slice after it. Either way the next op's slot is one new slice
/// after the taker's, and the given-back ticket is no grant.
#[test]
fn loom_tests_a_cut_racing_a_due_grant_keeps_or_gives_back_its_slot() {
    loom::model(|| {
        let s = anchored("0.01,0", 0, Waiting::exact());
        let t = {
            let s = Arc::clone(&s);
            loom::thread::spawn(move || {
                s.1.clock.set(100_000 * MS);
                s.0.acquire(&s.1, 1)
            })
        };
        s.0.set_spec(&s.1, RateSpec::parse("1000,0").unwrap(), true);
        let a = t.join().unwrap().scheduled_nanos();
        let b = s.0.acquire(&s.1, 1).scheduled_nanos();
        assert_eq!(b, a + MS, "{a} then {b}");
        assert_eq!(s.0.stats(&s.1).grants, 3);
    });
}

/// Review p17 M2 (the async half): a raise that cuts the slot an async acquire holds
/// (100 s at 0.01/s; the cut is at 1 ms + 1) racing the future's first poll, whose
/// checks and waker registration the cut may fall between. A future left pending
/// after the cut was either woken (registered before the cut's interruption, or it
/// found the cut after registering) or holds a slot of the new rate, whose timer the
/// clock then fires: never pending until the old slot's timer at 100 s.
#[test]
fn loom_tests_a_cut_racing_an_async_registration_wakes_the_future() {
    use std::future::Future;
    use std::task::{Context, Waker};
    loom::model(|| {
        let (clock, l) = limiter("0.01,0");
        l.acquire();
        let t = {
            let l = Arc::clone(&l);
            loom::thread::spawn(move || l.set_spec(RateSpec::parse("1000,0").unwrap()))
        };
        let flag = std::sync::Arc::new(Flag(false.into()));
        let waker = Waker::from(std::sync::Arc::clone(&flag));
        let mut cx = Context::from_waker(&waker);
        let mut fut = Box::pin(l.acquire_async());
        let first = fut.as_mut().poll(&mut cx);
        t.join().unwrap();
        let woken = || flag.0.load(crate::sync::threads::Ordering::Relaxed);
        if first.is_pending() && !woken() {
            clock.set(2 * MS);
            assert!(
                woken(),
                "pending on the slot the cut gave back, never woken"
            );
        }
    });
}
