//! The worker's own set of ops ([`super::super::opset`]): an op's single
//! first poll with its own waker, the passes, cancelling, a panic, tokio's
//! budget, and a slot reused.

use super::*;
use crate::clock::{ManualClock, MonotonicClock};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Counts its polls and keeps the waker of the latest; pending until `go`.
fn waiting_op(
    polls: Rc<Cell<u32>>,
    waker: Rc<RefCell<Option<Waker>>>,
    go: Arc<crate::sync::threads::AtomicBool>,
    ended: Rc<Cell<bool>>,
) -> Op {
    Box::pin(std::future::poll_fn(move |cx| {
        polls.set(polls.get() + 1);
        *waker.borrow_mut() = Some(cx.waker().clone());
        if go.load(crate::sync::threads::Ordering::Acquire) {
            ended.set(true);
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }))
}

/// Regression (issue 22, the scheduler's share of a transaction): a start
/// polled its op once with a no-op waker, then spawned a tokio task for it
/// (a task cell from `posix_memalign`) whose first poll polled it again to
/// register the task's waker: two polls and a task per op. Now the start's
/// poll is the op's only first poll, with its own slot's waker: a wake from
/// another thread has the next drive poll it, once.
#[test]
fn an_op_is_polled_once_at_its_start_with_a_waker_of_its_own() {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    let polls = Rc::new(Cell::new(0));
    let waker = Rc::new(RefCell::new(None));
    let go = Arc::new(crate::sync::threads::AtomicBool::new(false));
    let ended = Rc::new(Cell::new(false));
    driver.start(waiting_op(
        polls.clone(),
        waker.clone(),
        go.clone(),
        ended.clone(),
    ));
    assert_eq!(polls.get(), 1, "polled once by its start");
    assert_eq!(driver.ops_in_flight(), 1);
    // Another start (a pass or not) does not poll it again: it was not woken.
    driver.start(Box::pin(async {}));
    assert_eq!(polls.get(), 1);
    let w = waker.borrow_mut().take().expect("its waker");
    let g = go.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(5));
        g.store(true, crate::sync::threads::Ordering::Release);
        w.wake();
    });
    let e = ended.clone();
    let at = driver.drive(Some(clock.now() + 5_000_000_000), &|| e.get());
    t.join().unwrap();
    assert!(ended.get(), "the wake from the other thread was lost");
    assert_eq!(polls.get(), 2, "polled once more, for its one wake");
    assert_eq!(driver.ops_in_flight(), 0);
    assert!(at < clock.now() + 1, "the drive ended at the op's end");
}

/// `cancel_all` drops every op in flight (each op's guard counts it
/// cancelled as it drops) and every task the ops or the driver spawned on
/// the `LocalSet` (`spawn_local` works inside an op polled by the set); the
/// freed slots serve the next ops.
#[test]
fn cancel_all_drops_every_op_and_every_spawned_task() {
    struct Flag(Rc<Cell<u32>>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    let dropped = Rc::new(Cell::new(0));
    for _ in 0..3 {
        let flag = Flag(dropped.clone());
        let task_flag = Flag(dropped.clone());
        driver.start(Box::pin(async move {
            let _flag = flag;
            drop(tokio::task::spawn_local(async move {
                let _flag = task_flag;
                std::future::pending::<()>().await;
            }));
            std::future::pending::<()>().await;
        }));
    }
    // The spawned tasks run at the next drive.
    driver.drive(Some(clock.now() + 1_000_000), &|| false);
    assert_eq!(driver.ops_in_flight(), 3);
    assert_eq!(dropped.get(), 0);
    driver.cancel_all();
    assert_eq!(dropped.get(), 6, "three ops and their three tasks dropped");
    assert_eq!(driver.ops_in_flight(), 0);
    let ran = Rc::new(Cell::new(false));
    let r = ran.clone();
    driver.start(Box::pin(async move { r.set(true) }));
    assert!(ran.get(), "a start after the cancel runs");
}

/// A panic in an op's poll (outside the runner's future, which the op's
/// `Caught` already contains) ends that op alone, as tokio ends a task that
/// panicked: its future is dropped (its guard counts it), the other ops and
/// the worker go on, and its slot serves the next op.
#[test]
fn a_panicking_op_ends_alone_and_its_slot_serves_the_next() {
    let manual = Arc::new(ManualClock::new());
    let clock: Arc<dyn Clock> = manual.clone();
    let driver = Driver::install(clock.clone()).unwrap();
    let t0 = clock.now();
    let ended = Rc::new(Cell::new(0u32));
    let c = clock.clone();
    driver.start(Box::pin(async move {
        sleep_until(c, Waiting::exact(), t0 + 1_000).await;
        panic!("an op's bug");
    }));
    for _ in 0..2 {
        let (c, e) = (clock.clone(), ended.clone());
        driver.start(Box::pin(async move {
            sleep_until(c, Waiting::exact(), t0 + 2_000).await;
            e.set(e.get() + 1);
        }));
    }
    assert_eq!(driver.ops_in_flight(), 3);
    let r = catch_unwind(AssertUnwindSafe(|| {
        driver.drive(None, &|| ended.get() == 2)
    }));
    assert_eq!(r.ok(), Some(t0 + 2_000), "the panic left the drive");
    assert_eq!(driver.ops_in_flight(), 0);
    let e = ended.clone();
    driver.start(Box::pin(async move { e.set(e.get() + 1) }));
    assert_eq!(ended.get(), 3);
}

/// Every op woken at once is polled in one pass, however many: each is
/// polled outside tokio's cooperative budget, as a task of its own was. With
/// the set's one poll sharing the `block_on` future's budget (128 units),
/// the ops past it found their channels "not ready", woke themselves and
/// were polled twice.
#[test]
fn ops_woken_together_are_not_held_back_by_tokios_budget() {
    let manual = Arc::new(ManualClock::new());
    let clock: Arc<dyn Clock> = manual.clone();
    let driver = Driver::install(clock.clone()).unwrap();
    let ended = Rc::new(Cell::new(0u32));
    let mut senders = Vec::new();
    for _ in 0..300 {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        senders.push(tx);
        let e = ended.clone();
        driver.start(Box::pin(async move {
            let _ = rx.await;
            e.set(e.get() + 1);
        }));
    }
    let before = driver.op_polls();
    for tx in senders {
        let _ = tx.send(());
    }
    let at = driver.drive(None, &|| ended.get() == 300);
    assert_eq!(at, clock.now());
    assert_eq!(driver.op_polls() - before, 300, "each op polled once");
}

/// An op that wakes itself at every poll (a yield loop) holds neither the
/// drive nor the other ops: a pass polls it once (its wake queues it for the
/// next), the drive still ends at its deadline and another op's timer fires.
#[test]
fn an_op_that_wakes_itself_holds_neither_the_drive_nor_the_others() {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    let spins = Rc::new(Cell::new(0u64));
    let s = spins.clone();
    driver.start(Box::pin(std::future::poll_fn(move |cx| {
        s.set(s.get() + 1);
        cx.waker().wake_by_ref();
        Poll::<()>::Pending
    })));
    let fired = Rc::new(Cell::new(None));
    let (f, c) = (fired.clone(), clock.clone());
    let t0 = clock.now();
    driver.start(Box::pin(async move {
        f.set(Some(sleep_until(c, Waiting::exact(), t0 + 2_000_000).await));
    }));
    let until = t0 + 20_000_000;
    let at = driver.drive(Some(until), &|| false);
    assert!(at >= until, "ended {} ns early", until - at);
    assert!(fired.get().is_some_and(|t| t >= t0 + 2_000_000));
    assert!(spins.get() > 1, "the self-waking op was polled again");
    driver.cancel_all();
}

/// A slot is reused by the next op while the waker of the op that ended in
/// it may still be held (by a timer, a socket): a wake through it polls the
/// new op once for nothing (allowed of any future) and loses none of its own
/// wakes.
#[test]
fn a_stale_wake_of_a_reused_slot_loses_none_of_the_new_ops_wakes() {
    let manual = Arc::new(ManualClock::new());
    let clock: Arc<dyn Clock> = manual.clone();
    let driver = Driver::install(clock.clone()).unwrap();
    let kept = Rc::new(RefCell::new(None::<Waker>));
    let k = kept.clone();
    driver.start(Box::pin(std::future::poll_fn(move |cx| {
        *k.borrow_mut() = Some(cx.waker().clone());
        Poll::Ready(())
    })));
    assert_eq!(driver.ops_in_flight(), 0);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let polls = Rc::new(Cell::new(0u32));
    let ended = Rc::new(Cell::new(false));
    let (p, e) = (polls.clone(), ended.clone());
    let mut rx = Box::pin(rx);
    driver.start(Box::pin(std::future::poll_fn(move |cx| {
        p.set(p.get() + 1);
        match rx.as_mut().poll(cx) {
            Poll::Ready(_) => {
                e.set(true);
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    })));
    assert_eq!(polls.get(), 1);
    kept.borrow_mut()
        .take()
        .expect("the ended op's waker")
        .wake();
    driver.drive(Some(clock.now()), &|| false);
    assert_eq!(polls.get(), 2, "the stale wake polled the slot's new op");
    assert!(!ended.get());
    let _ = tx.send(());
    let e = ended.clone();
    driver.drive(None, &|| e.get());
    assert!(ended.get());
    assert_eq!(polls.get(), 3);
}

/// A drive waiting for room at the cap ends at the first op's end that makes
/// room, even with more ops woken at the same instant: the next start goes
/// first and polls them right after its op's first poll. On the manual
/// clock, each op's end costs 10 µs.
#[test]
fn a_drive_for_room_ends_at_the_first_end_and_the_start_goes_first() {
    let manual = Arc::new(ManualClock::new());
    let clock: Arc<dyn Clock> = manual.clone();
    let driver = Driver::install(clock.clone()).unwrap();
    let t0 = clock.now();
    let ended = Rc::new(RefCell::new(Vec::new()));
    for i in 0..5u32 {
        let (m, c, e) = (manual.clone(), clock.clone(), ended.clone());
        driver.start(Box::pin(async move {
            sleep_until(c, Waiting::exact(), t0 + 1_000_000).await;
            m.advance_nanos(10_000);
            e.borrow_mut().push(i);
        }));
    }
    let e = ended.clone();
    let at = driver.drive(None, &|| !e.borrow().is_empty());
    assert_eq!(at, t0 + 1_010_000, "room came at the first end");
    assert_eq!(ended.borrow().len(), 1);
    let e = ended.clone();
    driver.start(Box::pin(async move { e.borrow_mut().push(99) }));
    assert_eq!(*ended.borrow(), [0, 99, 1, 2, 3, 4]);
}

/// Regression (issue 22, the scheduler's share of a transaction): at the cap
/// every op cost two runtime entries (`block_on`: its start's, and the drive
/// for room the loop's next turn began). A start that fills the cap now
/// drives for room in its own entry; room that came by the start's own pass
/// (an op that ended at once) is no drive.
#[test]
fn a_start_that_fills_the_cap_drives_for_room_in_the_same_entry() {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    let ended = Rc::new(Cell::new(0u32));
    let t0 = clock.now();
    for ms in [2, 60_000] {
        let (c, e) = (clock.clone(), ended.clone());
        let op: Op = Box::pin(async move {
            sleep_until(c, Waiting::exact(), t0 + ms * 1_000_000).await;
            e.set(e.get() + 1);
        });
        let before = driver.entries();
        let e = ended.clone();
        if ms == 2 {
            driver.start(op);
        } else {
            let drove = driver.start_then_drive(op, Wake::Poll, &|| e.get() >= 1);
            assert!(drove);
            assert_eq!(
                driver.entries() - before,
                1,
                "one entry for the start and the drive"
            );
        }
    }
    assert_eq!(ended.get(), 1, "room came at the first op's end");
    assert!(clock.now() >= t0 + 2_000_000);
    let e = ended.clone();
    let before = driver.entries();
    let drove = driver.start_then_drive(
        Box::pin(async move { e.set(e.get() + 1) }),
        Wake::Poll,
        &|| ended.get() >= 2,
    );
    assert!(!drove, "room came by the start's own pass");
    assert_eq!(driver.entries() - before, 1);
    driver.cancel_all();
}
