//! The driver's tests: its waits, starts and timerfd, on the manual clock
//! where the behaviour is exact, on the real one where only the kernel has it.

use super::*;
use crate::clock::MonotonicClock;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Regression (issue 21, the shared schedule at 10K/s): every lease or claim
/// round trip an async worker made started a thread of its own, about 1000
/// threads a second. The round trips of one worker share one helper thread,
/// which ends with the worker's driver; a panic in a call is raised again on
/// the worker, and the helper goes on serving.
#[test]
fn the_round_trips_of_one_worker_share_one_helper_thread() {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Driver::install(clock).unwrap();
    let before = helpers_started();
    let main = std::thread::current().id();
    let mut helpers = std::collections::HashSet::new();
    for i in 0..5u64 {
        let (id, v) = call_blocking(move || (std::thread::current().id(), i * 2));
        assert_eq!(v, i * 2);
        assert_ne!(id, main, "the call ran on the worker's own thread");
        helpers.insert(id);
    }
    assert_eq!(helpers.len(), 1, "one helper thread for every round trip");
    assert_eq!(helpers_started() - before, 1);
    let p = catch_unwind(AssertUnwindSafe(|| {
        call_blocking(|| -> u8 { panic!("lost store") })
    }));
    assert!(p.is_err(), "the call's panic comes back to the worker");
    assert_eq!(call_blocking(|| 7), 7, "the helper still serves");
    assert_eq!(helpers_started() - before, 1);
    drop(driver);
    // Off an async worker, a call runs right here.
    assert_eq!(call_blocking(|| std::thread::current().id()), main);
}

/// While a round trip is slow, the worker goes on driving its ops: a timer
/// of an op in flight fires on time during the call.
#[test]
fn ops_keep_moving_while_a_round_trip_is_slow() {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    let fired = Rc::new(Cell::new(None));
    let (f, c) = (fired.clone(), clock.clone());
    let due = clock.now() + 20_000_000;
    driver.start(Box::pin(async move {
        let at = sleep_until(c, Waiting::exact(), due).await;
        f.set(Some(at));
    }));
    call_blocking(|| std::thread::sleep(std::time::Duration::from_millis(200)));
    let at = fired.get().expect("the op's timer fired during the call");
    assert!(
        at >= due && at < due + 150_000_000,
        "fired {} ns late",
        at - due
    );
    drop(driver);
}

/// Regression (issue 21, the per-op cost): every start went through the
/// runtime with a yield, an `epoll_wait` per op. Starts at one instant now
/// poll the `LocalSet` without the reactor; a start polls it once the last
/// pass is `PASS_EVERY` old. On the manual clock, exactly.
#[test]
fn back_to_back_starts_poll_the_reactor_once_per_pass_every() {
    let manual = Arc::new(crate::clock::ManualClock::new());
    let clock: Arc<dyn Clock> = manual.clone();
    let driver = Driver::install(clock.clone()).unwrap();
    manual.advance_nanos(1_000_000);
    // A drive that returns has polled the reactor (the simulation settles).
    driver.drive(Some(clock.now()), &|| false);
    let before = driver.passes();
    let ended = Rc::new(Cell::new(0u32));
    for _ in 0..10 {
        let e = ended.clone();
        driver.start(Box::pin(async move { e.set(e.get() + 1) }));
    }
    assert_eq!(ended.get(), 10, "each op ran at its start");
    assert_eq!(driver.passes(), before, "no pass at one instant");
    manual.advance_nanos(PASS_EVERY - 1);
    driver.start(Box::pin(async {}));
    assert_eq!(driver.passes(), before, "no pass before PASS_EVERY");
    manual.advance_nanos(1);
    driver.start(Box::pin(async {}));
    assert_eq!(driver.passes(), before + 1, "a pass once PASS_EVERY passed");
    driver.start(Box::pin(async {}));
    assert_eq!(driver.passes(), before + 1);
}

/// A start without a pass polls the op with its slot's own waker (not the
/// start's no-op one), so the op's timer wakes the op: an op that sleeps 5 ms
/// ends 5 ms after its first poll, exactly.
#[test]
fn an_op_started_without_a_pass_ends_exactly_on_its_own_timer() {
    let manual = Arc::new(crate::clock::ManualClock::new());
    let clock: Arc<dyn Clock> = manual.clone();
    let driver = Driver::install(clock.clone()).unwrap();
    manual.advance_nanos(1_000_000);
    driver.drive(Some(clock.now()), &|| false);
    let t0 = clock.now();
    let passes = driver.passes();
    let times = Rc::new(RefCell::new(Vec::new()));
    for i in 0..3u64 {
        let (t, c) = (times.clone(), clock.clone());
        driver.start(Box::pin(async move {
            let first = c.now();
            let end = sleep_until(c.clone(), Waiting::exact(), first + 5_000_000 + i).await;
            t.borrow_mut().push((first, end));
        }));
    }
    assert_eq!(driver.passes(), passes, "started without a pass");
    let t = times.clone();
    let at = driver.drive(Some(t0 + 50_000_000), &|| t.borrow().len() == 3);
    assert_eq!(at, t0 + 5_000_002, "ended on the last op's timer");
    let times = times.borrow();
    for (i, &(first, end)) in times.iter().enumerate() {
        assert_eq!(first, t0);
        assert_eq!(end, t0 + 5_000_000 + i as u64);
    }
}

/// The ops woken as a wait for a slot reaches its slot (a pass stops once
/// the slot is due: they are left for after the start) read their ends in
/// the next start, right after its op's first poll, not at the next wait;
/// with or without a pass. On the manual clock, exactly.
#[test]
fn ops_woken_as_a_drive_ends_are_polled_by_the_next_start() {
    let manual = Arc::new(crate::clock::ManualClock::new());
    let clock: Arc<dyn Clock> = manual.clone();
    let driver = Driver::install(clock.clone()).unwrap();
    manual.advance_nanos(1_000_000);
    driver.drive(Some(clock.now()), &|| false);
    for with_pass in [false, true] {
        let t0 = clock.now();
        let order = Rc::new(RefCell::new(Vec::new()));
        let ended = Rc::new(Cell::new(None));
        let (o, e, c) = (order.clone(), ended.clone(), clock.clone());
        driver.start(Box::pin(async move {
            let at = sleep_until(c.clone(), Waiting::exact(), t0 + 100_000).await;
            o.borrow_mut().push("woken");
            e.set(Some((at, c.now())));
        }));
        let at = driver.wait_until(t0 + 100_000, &Waiting::exact(), &Signal::new());
        assert_eq!(at, t0 + 100_000);
        assert_eq!(ended.get(), None, "polled before the start");
        if with_pass {
            manual.advance_nanos(PASS_EVERY);
        }
        let passes = driver.passes();
        let o = order.clone();
        driver.start(Box::pin(async move { o.borrow_mut().push("started") }));
        assert_eq!(driver.passes() - passes, u64::from(with_pass));
        assert_eq!(*order.borrow(), ["started", "woken"]);
        let (woke, read) = ended.get().expect("the woken op was polled by the start");
        // (With a pass the clock moved PASS_EVERY on before the start.)
        let start_at = t0 + 100_000 + if with_pass { PASS_EVERY } else { 0 };
        assert_eq!(
            (woke, read),
            (start_at, start_at),
            "its end read in the start"
        );
    }
}

/// Regression (issue 21, the per-op cost): each fire of the timerfd was
/// read with an 8-byte read, which left tokio's readiness set, so the next
/// wait read `EAGAIN` first: one wasted `read(2)` per wait. Now none, and
/// one `timerfd_settime` per wait.
#[test]
fn a_fire_is_read_once_and_leaves_no_readiness_behind() {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    let waiting = Waiting::sleep();
    for _ in 0..40 {
        let deadline = clock.now() + 300_000;
        let at = driver.wait_until(deadline, &waiting, &Signal::new());
        assert!(at >= deadline);
    }
    let (arms, empty) = driver.timer_counts();
    assert_eq!(empty, 0, "reads that found the timer not fired");
    // At most two per wait (a timerfd that fires a hair before the engine's
    // clock reads the deadline is armed once more). Fewer than one per wait
    // when the thread was descheduled between reading the clock and waiting,
    // so that the wait began within SHORT_WAIT of its deadline and spun: CI
    // under load saw 36 of 40.
    assert!((20..=80).contains(&arms), "{arms} arms for 40 waits");
}

/// A wait shorter than SHORT_WAIT spins (with passes) instead of arming
/// the timerfd, and still never returns before its deadline.
#[test]
fn a_short_wait_spins_without_the_timerfd_and_is_never_early() {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    let waiting = Waiting::sleep();
    for _ in 0..100 {
        let deadline = clock.now() + SHORT_WAIT / 2;
        let at = driver.wait_until(deadline, &waiting, &Signal::new());
        assert!(at >= deadline, "returned {} ns early", deadline - at);
    }
    assert_eq!(driver.timer_counts().0, 0, "the timerfd was armed");
}

/// The timerfd is armed again only when the drive's wake must move: the
/// same exact deadline keeps it; a stop check alone takes any wake due
/// within STOP_POLL.
#[test]
fn the_timerfd_is_armed_again_only_when_its_wake_must_move() {
    let (now, by) = (1_000, 1_000 + STOP_POLL);
    assert!(!keeps_armed(None, 5_000, now, by), "not armed");
    assert!(keeps_armed(Some(5_000), 5_000, now, by), "same deadline");
    assert!(
        !keeps_armed(Some(4_000), 5_000, now, by),
        "would wake early"
    );
    assert!(!keeps_armed(Some(6_000), 5_000, now, by), "would wake late");
    assert!(
        keeps_armed(Some(5_000), by, now, by),
        "a stop check: any wake within"
    );
    assert!(
        !keeps_armed(Some(by + 1), by, now, by),
        "past the stop check"
    );
    assert!(!keeps_armed(Some(now), by, now, by), "already due (fired)");
}

/// Regression (issue 21, the idle worker): a worker waiting for a slot far
/// off woke every STOP_POLL (2 ms) to look at its stop flag, arming the
/// timerfd again each time: about ten wake-ups per op at 100/s. The wait now
/// sleeps to its deadline on one arming, and the signal's stop wakes it.
#[test]
fn a_long_wait_arms_the_timerfd_once_and_a_stop_ends_it_at_once() {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    let signal = Signal::new();
    let stopper = signal.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(50));
        stopper.stop();
    });
    let t0 = clock.now();
    let at = driver.wait_until(t0 + 30_000_000_000, &Waiting::sleep(), &signal);
    t.join().unwrap();
    assert!(at - t0 >= 45_000_000, "returned before the stop");
    assert!(at - t0 < 10_000_000_000, "the stop did not wake the wait");
    assert_eq!(driver.timer_counts().0, 1, "one arming for the whole wait");
}

/// A pause (the signal interrupted) cuts an async worker's wait for its slot
/// short, as it does the real clock's own wait; a mere change (`notify`)
/// does not, and a wait never returns early for it.
#[test]
fn a_pause_cuts_a_slot_wait_short_and_a_change_does_not() {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    let signal = Signal::new();
    let other = signal.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(20));
        other.notify();
        std::thread::sleep(std::time::Duration::from_millis(30));
        other.interrupt();
    });
    let t0 = clock.now();
    let at = driver.wait_until(t0 + 30_000_000_000, &Waiting::sleep(), &signal);
    t.join().unwrap();
    assert!(at - t0 >= 45_000_000, "a notify cut the wait short");
    assert!(at - t0 < 10_000_000_000, "the interruption did not end it");
    // Not interrupted: a notify leaves the wait to its deadline.
    let deadline = clock.now() + 40_000_000;
    let notifier = signal.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(5));
        notifier.notify();
    });
    let at = driver.wait_until(deadline, &Waiting::sleep(), &signal);
    t.join().unwrap();
    assert!(at >= deadline, "returned {} ns early", deadline - at);
}

/// A drive that the signal wakes (`Wake::On`) arms no timer when nothing is
/// due on time, and ends when a change the signal announces makes `done`
/// hold (a resume, a stop, a new concurrency), not at a poll.
#[test]
fn a_drive_woken_by_its_signal_arms_nothing_and_ends_on_the_change() {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    let signal = Signal::new();
    let flag = Arc::new(crate::sync::threads::AtomicBool::new(false));
    let (s, f) = (signal.clone(), flag.clone());
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(30));
        f.store(true, crate::sync::threads::Ordering::Relaxed);
        s.notify();
    });
    let t0 = clock.now();
    let at = driver.drive_woken(None, Wake::On(&signal), &|| {
        flag.load(crate::sync::threads::Ordering::Relaxed)
    });
    t.join().unwrap();
    // (The engine's clock and the sleep's may differ by a hair.)
    assert!(at - t0 >= 25_000_000, "ended {} ns in", at - t0);
    assert_eq!(driver.timer_counts().0, 0, "no timer armed");
}

/// Regression (issue 22, the paced redis worker's system calls): a start
/// without a pass polled the op outside the runtime's scheduler, so a
/// runtime task the op woke (the multiplexed connection's writer) was queued
/// remotely through the reactor's eventfd: a `write(2)` for 0.12 of every op
/// at 40K/s, and an `epoll_wait` that returned at once for it. The op is now
/// polled inside the scheduler; the task it wakes still runs at the next
/// drive, exactly when the manual clock says.
#[test]
fn a_runtime_task_an_op_wakes_without_a_pass_runs_at_the_next_drive() {
    let manual = Arc::new(crate::clock::ManualClock::new());
    let clock: Arc<dyn Clock> = manual.clone();
    let driver = Driver::install(clock.clone()).unwrap();
    manual.advance_nanos(1_000_000);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Nanos>();
    let got = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let g = got.clone();
    // The writer: a task on the runtime (not the `LocalSet`), as a
    // multiplexed connection's is.
    driver.block_on(async move {
        drop(tokio::spawn(async move {
            while let Some(v) = rx.recv().await {
                g.lock().push(v);
            }
        }));
    });
    driver.drive(Some(clock.now()), &|| false);
    let passes = driver.passes();
    let t0 = clock.now();
    for _ in 0..3 {
        let (tx, c) = (tx.clone(), clock.clone());
        driver.start(Box::pin(async move {
            let _ = tx.send(c.now());
        }));
    }
    assert_eq!(driver.passes(), passes, "started without a pass");
    assert_eq!(driver.queued_remotely(), 0, "woken through the eventfd");
    assert!(got.lock().is_empty(), "the writer runs at the next drive");
    let at = driver.drive(Some(t0 + 10_000), &|| got.lock().len() == 3);
    assert_eq!(at, t0, "the next drive ran the writer at once");
    assert_eq!(*got.lock(), vec![t0; 3]);
}

/// Regression (session 13): a drive the signal wakes (`Wake::On`) that parks
/// with nothing due on time left the timerfd armed at the deadline of an
/// earlier drive (a slot wait a pause cut short): one wake-up of the reactor
/// for nothing. It is disarmed; the drive still ends on the change.
#[test]
fn a_drive_parked_on_its_signal_disarms_a_deadline_left_armed() {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    let signal = Signal::new();
    let s = signal.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        s.interrupt();
    });
    let t0 = clock.now();
    let at = driver.wait_until(t0 + 30_000_000_000, &Waiting::sleep(), &signal);
    t.join().unwrap();
    assert!(at - t0 < 10_000_000_000, "the interruption did not end it");
    assert_eq!(
        driver.timer_in_kernel(),
        (true, 0),
        "the cut-short wait leaves its deadline armed"
    );
    let flag = Arc::new(crate::sync::threads::AtomicBool::new(false));
    let (s, f) = (signal.clone(), flag.clone());
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        f.store(true, crate::sync::threads::Ordering::Relaxed);
        s.notify();
    });
    driver.drive_woken(None, Wake::On(&signal), &|| {
        flag.load(crate::sync::threads::Ordering::Relaxed)
    });
    t.join().unwrap();
    assert_eq!(
        driver.timer_in_kernel(),
        (false, 1),
        "the parked drive disarmed it, once"
    );
    assert_eq!(driver.timer_counts().0, 1, "armed once, by the slot wait");
}

/// Regression (issue 21, session 13: the wait at 20K/s): a wait for a slot
/// whose time came while ops' ends were being settled returned only once
/// tokio's `LocalSet` had run up to 61 ready ops: the start queued behind
/// other ops' work. An op woken once the slot is due now yields to the start
/// and ends right after it. Each op here costs 50 µs of the manual clock.
#[test]
fn a_due_start_does_not_queue_behind_other_ops_ends() {
    let manual = Arc::new(crate::clock::ManualClock::new());
    let clock: Arc<dyn Clock> = manual.clone();
    let driver = Driver::install(clock.clone()).unwrap();
    let t0 = clock.now();
    let ended = Rc::new(Cell::new(0u32));
    for _ in 0..20 {
        let (m, c, e) = (manual.clone(), clock.clone(), ended.clone());
        driver.start(Box::pin(async move {
            sleep_until(c, Waiting::exact(), t0 + 100_000).await;
            m.advance_nanos(50_000);
            e.set(e.get() + 1);
        }));
    }
    let at = driver.wait_until(t0 + 300_000, &Waiting::exact(), &Signal::new());
    assert_eq!(at, t0 + 300_000, "the slot's start came late");
    assert_eq!(ended.get(), 4, "ops ended before the start");
    let end = driver.drive(None, &|| ended.get() == 20);
    assert_eq!(end, t0 + 300_000 + 16 * 50_000, "the rest ended after it");
}

/// A wait for a slot woken (by IO, by an op's timer) within SHORT_WAIT of the
/// slot spins the rest instead of arming the timerfd and sleeping again (a
/// wake-up costs more than the spin), and is still never early. The drive's
/// margin is widened here so that a late wake-up on a busy machine still
/// lands in it.
#[test]
fn a_slot_wait_woken_just_before_the_slot_spins_the_rest() {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    let t0 = clock.now();
    // The drive may end from t0 + 200 ms on; the op's timer (t0 + 300 ms) is
    // its first wake-up: a stall of up to 200 ms before the first poll (a busy
    // machine) changes nothing. Woken by its signal, it has no stop poll.
    let (until, within) = (t0 + 4_000_000_000, 3_800_000_000);
    let c = clock.clone();
    driver.start(Box::pin(async move {
        sleep_until(c, Waiting::exact(), t0 + 300_000_000).await;
    }));
    let signal = Signal::new();
    let at = driver.block_on(
        Drive::new(&driver, Some(until), &|| false, Wake::On(&signal)).spinning_within(within),
    );
    assert!(
        at >= t0 + 300_000_000 && at < until,
        "ended at {} ns",
        at - t0
    );
    assert_eq!(
        driver.timer_counts().0,
        1,
        "armed for the op's timer only, not again for the rest"
    );
    // Through the wait itself: never early.
    for _ in 0..20 {
        let deadline = clock.now() + 300_000;
        let c = clock.clone();
        driver.start(Box::pin(async move {
            sleep_until(c, Waiting::exact(), deadline - SHORT_WAIT / 2).await;
        }));
        let at = driver.wait_until(deadline, &Waiting::sleep(), &Signal::new());
        assert!(at >= deadline, "returned {} ns early", deadline - at);
    }
}

/// Regression (session 13, review): a timer set by an op that something
/// other than the drive woke (IO, another thread) was never armed. The
/// runtime polled the drive first when the wake-up came (nothing due: it
/// parks on its signal alone, as at the cap), then the `LocalSet` ran the
/// op, which set its timer: nothing woke the drive for it, so the op's end
/// waited for the next signal. An op now runs inside the drive's own poll,
/// before it chooses its deadline; a `LocalSet` task (a driver's watchdog)
/// still runs after it, and the drive is woken to choose again: each ends
/// at its timer.
#[test]
fn a_timer_set_by_an_op_woken_from_elsewhere_wakes_the_drive() {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    for in_task in [false, true] {
        let signal = Signal::new();
        let t0 = clock.now();
        let ended = Rc::new(Cell::new(None));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (c, e, s) = (clock.clone(), ended.clone(), signal.clone());
        let body = async move {
            let _ = rx.await;
            let at = sleep_until(c, Waiting::exact(), t0 + 40_000_000).await;
            e.set(Some(at));
            // A task's end wakes no drive (an op's is seen by the drive that
            // polls it): announced as the engine's changes are.
            if in_task {
                s.notify();
            }
        };
        if in_task {
            driver.block_on(async move { drop(tokio::task::spawn_local(body)) });
        } else {
            driver.start(Box::pin(body));
        }
        let sender = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(10));
            let _ = tx.send(());
        });
        // Without the wake, only this watchdog's notification ends the drive.
        let s = signal.clone();
        let _watchdog = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(10));
            s.notify();
        });
        let e = ended.clone();
        let at = driver.drive_woken(None, Wake::On(&signal), &|| e.get().is_some());
        sender.join().unwrap();
        let end = ended.get().unwrap_or(Nanos::MAX);
        assert!(end >= t0 + 40_000_000, "the timer ended early");
        assert!(
            at - t0 < 5_000_000_000,
            "the drive slept past the timer (in a task: {in_task}): ended after {} ms",
            (at - t0) / 1_000_000
        );
    }
}

/// Regression (review 3, finding 1: a spinning worker's op timers fired only
/// at its next drive): with `Waiting::spin()` a slot wait never drives, only
/// spins with passes, and those passes did not fire the ops' timers; an op
/// sleeping 1 ms was still pending when a 20 ms wait returned (a postgres op
/// timeout's watchdog, a `latency` sleep, late by up to the whole run). The
/// spin's passes fire the timers due first: the op ends at its deadline.
#[test]
fn a_spinning_slot_wait_fires_an_ops_timer_at_its_deadline() {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    let fired = Rc::new(Cell::new(None));
    let (f, c) = (fired.clone(), clock.clone());
    let due = clock.now() + 1_000_000;
    driver.start(Box::pin(async move {
        let at = sleep_until(c.clone(), Waiting::exact(), due).await;
        f.set(Some((at, c.now())));
    }));
    let end = clock.now() + 200_000_000;
    let at = driver.wait_until(end, &Waiting::spin(), &Signal::new());
    assert!(at >= end);
    let (woke, ran) = fired.get().expect("the op's timer fired during the spin");
    assert!(woke >= due, "woke {} ns early", due - woke);
    // A margin a busy machine's stall cannot break: the bug ran it at the
    // wait's end, 199 ms late.
    assert!(ran < due + 100_000_000, "ran {} ns late", ran - due);
    drop(driver);
}

/// Regression (review 3, finding 1, the start's side): a start with or
/// without a pass fires the ops' timers due at it first, and their ops run in
/// its tick; before, only a drive fired them. On the manual clock, exactly:
/// a timer due `PASS_EVERY / 2` after the last pass fires at a start then,
/// with no pass.
#[test]
fn a_start_fires_the_timers_due_and_runs_their_ops() {
    let manual = Arc::new(crate::clock::ManualClock::new());
    let clock: Arc<dyn Clock> = manual.clone();
    let driver = Driver::install(clock.clone()).unwrap();
    manual.advance_nanos(1_000_000);
    driver.drive(Some(clock.now()), &|| false);
    let t0 = clock.now();
    let passes = driver.passes();
    let ended = Rc::new(Cell::new(None));
    let (e, c) = (ended.clone(), clock.clone());
    driver.start(Box::pin(async move {
        e.set(Some(
            sleep_until(c, Waiting::exact(), t0 + PASS_EVERY / 2).await,
        ));
    }));
    manual.advance_nanos(PASS_EVERY / 2);
    driver.start(Box::pin(async {}));
    assert_eq!(ended.get(), Some(t0 + PASS_EVERY / 2), "fired at the start");
    assert_eq!(driver.passes(), passes, "without a pass");
    // With a pass, the same.
    let ended = Rc::new(Cell::new(None));
    let (e, c) = (ended.clone(), clock.clone());
    let due = clock.now() + 3 * PASS_EVERY;
    driver.start(Box::pin(async move {
        e.set(Some(sleep_until(c, Waiting::exact(), due).await));
    }));
    manual.advance_nanos(3 * PASS_EVERY);
    driver.start(Box::pin(async {}));
    assert_eq!(ended.get(), Some(due), "fired at the start's pass");
    assert_eq!(driver.passes(), passes + 1);
}

/// Session 17 (issue 22, a runtime entry per start): a start without a pass
/// entered the runtime (a `block_on` and a `LocalSet` tick, about 900
/// instructions of tokio's) only to poll the op once. With no runtime task
/// (none the op could wake there) and no op timer due it enters none; the
/// op still runs in the runtime's and the `LocalSet`'s context (a socket
/// registers with the reactor, `spawn_local` works), and the local task it
/// spawns runs at the next drive. A start that finds an op timer due, or a
/// runtime task alive, enters as before. On the manual clock, exactly.
#[test]
fn a_start_without_a_pass_enters_no_runtime_while_it_has_no_task() {
    let manual = Arc::new(crate::clock::ManualClock::new());
    let clock: Arc<dyn Clock> = manual.clone();
    let driver = Driver::install(clock.clone()).unwrap();
    manual.advance_nanos(1_000_000);
    driver.drive(Some(clock.now()), &|| false);
    let (entries, passes) = (driver.entries(), driver.passes());
    let t0 = clock.now();
    let first = Rc::new(Cell::new(None));
    let spawned = Rc::new(Cell::new(None));
    let (f, s, c) = (first.clone(), spawned.clone(), clock.clone());
    driver.start(Box::pin(async move {
        f.set(Some(c.now()));
        let std = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        std.set_nonblocking(true).unwrap();
        let sock = tokio::net::UdpSocket::from_std(std).expect("in the runtime's context");
        drop(tokio::task::spawn_local(async move {
            drop(sock);
            s.set(Some(c.now()));
        }));
    }));
    assert_eq!(first.get(), Some(t0), "the op's first poll is the start's");
    assert_eq!(driver.entries(), entries, "no runtime entry");
    assert_eq!(driver.passes(), passes, "no pass");
    assert_eq!(
        spawned.get(),
        None,
        "its local task waits for the next entry"
    );
    manual.advance_nanos(1_000);
    let t1 = clock.now();
    let sp = spawned.clone();
    let at = driver.drive(Some(t1 + 10_000), &|| sp.get().is_some());
    assert_eq!((at, spawned.get()), (t1, Some(t1)), "run by the next drive");

    // An op timer due at the start: its op runs in the start's entry.
    let woke = Rc::new(Cell::new(None));
    let (w, c) = (woke.clone(), clock.clone());
    let due = t1 + 5_000;
    driver.start(Box::pin(async move {
        w.set(Some(sleep_until(c.clone(), Waiting::exact(), due).await));
    }));
    manual.advance_nanos(5_000);
    let entries = driver.entries();
    driver.start(Box::pin(async {}));
    assert_eq!(driver.entries(), entries + 1, "a timer due: one entry");
    assert_eq!(woke.get(), Some(due), "its op ran in the start");

    // A runtime task alive: the start enters (the task it wakes is queued
    // locally, `a_runtime_task_an_op_wakes_without_a_pass_runs_at_the_next_drive`).
    driver.block_on(async { drop(tokio::spawn(std::future::pending::<()>())) });
    driver.drive(Some(clock.now()), &|| false);
    let entries = driver.entries();
    driver.start(Box::pin(async {}));
    assert_eq!(driver.entries(), entries + 1, "a runtime task: one entry");
}
