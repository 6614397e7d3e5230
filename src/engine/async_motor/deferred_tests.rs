//! Regression (review of `ownset`, H1): a wake tokio defers (an op's
//! `tokio::task::yield_now()`, a budget spent) is woken only when the runtime
//! parks; an entry (`block_on`) whose future is ready at the poll that polled
//! the op drops it unwoken, and the op hung until the stop grace cancelled it.
//! `OpSet::rescue` queues such an op as the entry returns: each test below
//! ends an op that yields (once, and three times) on one path that returns
//! without parking, and fails (its op never ends) with the rescue removed.

use super::*;
use crate::clock::{ManualClock, MonotonicClock};

/// Yields `k` times, then ends.
fn yielding(k: u32, ended: Rc<Cell<bool>>) -> Op {
    Box::pin(async move {
        for _ in 0..k {
            tokio::task::yield_now().await;
        }
        ended.set(true);
    })
}

/// Waits for `rx`, then yields `k` times, then ends.
fn gated(k: u32, rx: tokio::sync::oneshot::Receiver<()>, ended: Rc<Cell<bool>>) -> Op {
    Box::pin(async move {
        let _ = rx.await;
        for _ in 0..k {
            tokio::task::yield_now().await;
        }
        ended.set(true);
    })
}

/// A drive that only the op's end or a 5 s deadline ends (its signal never
/// changes): the op ends in it, long before the deadline.
fn ends_in_the_next_drive(
    driver: &Driver,
    clock: &Arc<dyn Clock>,
    ended: &Rc<Cell<bool>>,
    path: &str,
) {
    let signal = Signal::new();
    let t = clock.now();
    let e = ended.clone();
    let at = driver.drive_woken(Some(t + 5_000_000_000), Wake::On(&signal), &|| e.get());
    assert!(ended.get(), "{path}: the op's deferred wake was lost");
    assert!(
        at - t < 2_000_000_000,
        "{path}: the op ended only {} ns later",
        at - t
    );
    assert_eq!(driver.ops_in_flight(), 0, "{path}");
}

/// On both of its paths: with a runtime task alive the start enters the
/// runtime (a tick), where tokio defers the wake; with none it enters no
/// runtime, where tokio wakes at once and the start's own pass polls the op
/// again (a wake never deferred).
#[test]
fn an_op_that_yields_in_a_start_without_a_pass_ends() {
    for (k, with_task) in [(1, true), (3, true), (1, false), (3, false)] {
        let manual = Arc::new(ManualClock::new());
        let clock: Arc<dyn Clock> = manual.clone();
        let driver = Driver::install(clock.clone()).unwrap();
        if with_task {
            driver.block_on(async { drop(tokio::spawn(std::future::pending::<()>())) });
        }
        driver.start(Box::pin(async {}));
        let passes = driver.passes();
        let entries = driver.entries();
        let ended = Rc::new(Cell::new(false));
        driver.start(yielding(k, ended.clone()));
        assert_eq!(driver.passes(), passes, "a start without a pass");
        assert_eq!(driver.entries() - entries, u64::from(with_task));
        if with_task {
            assert!(!ended.get());
        }
        let t0 = clock.now();
        let e = ended.clone();
        let at = driver.drive(Some(t0 + 1_000_000), &|| e.get());
        assert!(
            ended.get(),
            "k={k}: the wake deferred in the start was lost"
        );
        assert_eq!(at, t0, "k={k}: it ended at once");
        assert_eq!(driver.ops_in_flight(), 0);
    }
}

#[test]
fn an_op_that_yields_in_a_start_with_a_pass_ends() {
    for k in [1, 3] {
        let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
        let driver = Driver::install(clock.clone()).unwrap();
        let ended = Rc::new(Cell::new(false));
        driver.start(yielding(k, ended.clone()));
        ends_in_the_next_drive(&driver, &clock, &ended, &format!("start, k={k}"));
    }
}

/// Without a drive and without a pass due (the real clock: tried until a
/// start lands within [`PASS_EVERY`] of the last pass; a try with a pass due
/// checks that path too).
#[test]
fn an_op_that_yields_in_a_start_then_drive_without_a_drive_ends() {
    for k in [1, 3] {
        let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
        let driver = Driver::install(clock.clone()).unwrap();
        let mut without_a_pass = 0;
        for _ in 0..2000 {
            driver.start(Box::pin(async {}));
            let passes = driver.passes();
            let ended = Rc::new(Cell::new(false));
            let drove = driver.start_then_drive(yielding(k, ended.clone()), Wake::Poll, &|| true);
            assert!(!drove);
            assert!(!ended.get());
            if driver.passes() == passes {
                without_a_pass += 1;
            }
            ends_in_the_next_drive(&driver, &clock, &ended, &format!("start_then_drive, k={k}"));
            if without_a_pass >= 3 {
                break;
            }
        }
        assert!(
            without_a_pass >= 3,
            "k={k}: no start_then_drive without a pass due"
        );
    }
}

/// The review's scenario: X's answer, then Y's; the drive for room polls X
/// (it yields), then Y (it ends, room came) and returns in the same poll.
#[test]
fn an_op_that_yields_in_a_drive_ending_on_done_ends() {
    for k in [1, 3] {
        let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
        let driver = Driver::install(clock.clone()).unwrap();
        let (x, y) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(false)));
        let (tx_x, rx_x) = tokio::sync::oneshot::channel();
        let (tx_y, rx_y) = tokio::sync::oneshot::channel();
        driver.start(gated(k, rx_x, x.clone()));
        driver.start(gated(0, rx_y, y.clone()));
        tx_x.send(()).unwrap();
        tx_y.send(()).unwrap();
        let signal = Signal::new();
        let yy = y.clone();
        driver.drive_woken(None, Wake::On(&signal), &|| yy.get());
        assert!(y.get());
        ends_in_the_next_drive(&driver, &clock, &x, &format!("drive on done, k={k}"));
    }
}

/// A slot wait's drive whose `until` has come once its pass is made.
#[test]
fn an_op_that_yields_in_a_drive_reaching_until_ends() {
    for k in [1, 3] {
        let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
        let driver = Driver::install(clock.clone()).unwrap();
        let x = Rc::new(Cell::new(false));
        let (tx_x, rx_x) = tokio::sync::oneshot::channel();
        driver.start(gated(k, rx_x, x.clone()));
        tx_x.send(()).unwrap();
        let polls = driver.op_polls();
        driver.drive(Some(clock.now()), &|| false);
        assert_eq!(driver.op_polls(), polls + 1, "the drive's pass polled it");
        assert!(!x.get());
        ends_in_the_next_drive(&driver, &clock, &x, &format!("drive to until, k={k}"));
    }
}

/// The manual clock's discrete-event loop: its passes end in a yield (they
/// park), so an op that yields ends in the same `simulate`.
#[test]
fn an_op_that_yields_ends_in_the_manual_clocks_simulate() {
    for k in [1, 3] {
        let manual = Arc::new(ManualClock::new());
        let clock: Arc<dyn Clock> = manual.clone();
        let driver = Driver::install(clock.clone()).unwrap();
        let x = Rc::new(Cell::new(false));
        let (tx_x, rx_x) = tokio::sync::oneshot::channel();
        driver.start(gated(k, rx_x, x.clone()));
        tx_x.send(()).unwrap();
        let t0 = clock.now();
        let e = x.clone();
        let at = driver.drive(Some(t0 + 1_000_000), &|| e.get());
        assert!(x.get(), "k={k}");
        assert_eq!(at, t0, "k={k}");
    }
}
