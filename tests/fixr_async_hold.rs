//! Review p18, F1: the async runner's retry held while paused (`RunOp`'s
//! hold branch, written by hand when ops moved into reused slots), on the
//! slot path (`AsyncOpRunner::op_slot`) and the boxed path (`start`), on the
//! manual clock: no retry is made while paused, the time held is not the op's
//! service, and a stop while held records the error once and stops (it does
//! not fail the activity).

use paceline::{
    ActivityConfig, AsyncOpRunner, Control, Engine, ErrorPolicy, LocalFuture, ManualClock, OpError,
    OpRunner, OpSlot, Outcome, WorkerContext, Workload,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Cycle 0's first attempt spins (waking itself) until `release`, then fails
/// `down`, retryably; every later attempt passes.
#[derive(Clone, Default)]
struct Held {
    slots: bool,
    release: Arc<AtomicBool>,
    attempts: Arc<AtomicU32>,
}

async fn attempt(h: Held) -> Result<(), OpError> {
    let n = h.attempts.fetch_add(1, Ordering::SeqCst);
    if n > 0 {
        return Ok(());
    }
    std::future::poll_fn(|cx| {
        if h.release.load(Ordering::SeqCst) {
            std::task::Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await;
    Err(OpError::new("down", "still down").retryable(true))
}

struct HeldRun(Held);

impl AsyncOpRunner for HeldRun {
    fn start(&self, _cycle: u64) -> LocalFuture<Result<(), OpError>> {
        Box::pin(attempt(self.0.clone()))
    }
    fn op_slot(&self) -> Option<OpSlot> {
        let h = self.0.clone();
        h.slots
            .then(|| OpSlot::new(move |_cycle| attempt(h.clone())))
    }
}

impl Workload for Held {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Err(OpError::new("async-only", "runs on the async runner"))
    }
    fn async_runner(
        &self,
        _: &WorkerContext,
        _: usize,
    ) -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>> {
        let r = HeldRun(self.clone());
        Some(Box::pin(async move {
            Ok(Box::new(r) as Box<dyn AsyncOpRunner>)
        }))
    }
}

fn until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Cycle 0 of `h` under `policy`, paused once its first attempt is under
/// way, then failed there: the run and the clock, once the retry is held (a
/// clock advanced before the failure would be the attempt's service).
fn held(h: &Held, policy: &str) -> (Control, ManualClock) {
    let clock = ManualClock::new();
    let run = Engine::with_clock(clock.clone())
        .start(
            ActivityConfig::new("held")
                .cycles(0..1)
                .concurrency(1)
                .errors(ErrorPolicy::parse(policy).unwrap()),
            h.clone(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(run.is_async());
    until("the first attempt", || {
        h.attempts.load(Ordering::SeqCst) == 1
    });
    run.pause().unwrap();
    let at = clock.now_duration();
    h.release.store(true, Ordering::SeqCst);
    // Held: the hold's 1 ms naps run on the manual clock, which each advances.
    until("the hold", || {
        clock.now_duration() >= at + Duration::from_millis(2)
    });
    (run, clock)
}

#[test]
fn a_retry_waits_while_paused_and_its_hold_is_not_service() {
    for slots in [true, false] {
        let h = Held {
            slots,
            ..Held::default()
        };
        let (run, clock) = held(&h, "down:retry:3; stop");
        // Held: 50 ms of the clock and some real time pass, and no retry.
        clock.advance(Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(50));
        let t = run.snapshot();
        assert_eq!(t.retries(), 0, "slots {slots}: a retry while paused");
        assert_eq!(h.attempts.load(Ordering::SeqCst), 1, "slots {slots}");
        run.resume().unwrap();
        assert_eq!(run.wait(), Outcome::Completed, "slots {slots}");
        let t = run.snapshot();
        assert_eq!((t.ops(), t.retries()), (1, 1), "slots {slots}");
        assert_eq!(h.attempts.load(Ordering::SeqCst), 2, "slots {slots}");
        assert_eq!(t.errors_of("down"), 0, "slots {slots}: a retried error");
        // The attempts take no clock time: all of the op's span was held.
        assert!(
            t.service().max() < 1_000_000,
            "slots {slots}: service {} ns holds the pause",
            t.service().max()
        );
    }
}

#[test]
fn a_stop_while_a_retry_is_held_records_the_error_once_and_stops() {
    for slots in [true, false] {
        let h = Held {
            slots,
            ..Held::default()
        };
        let (run, clock) = held(&h, "down:retry:3; stop");
        clock.advance(Duration::from_millis(5));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(run.snapshot().retries(), 0, "slots {slots}");
        run.stop();
        assert_eq!(run.wait(), Outcome::Stopped, "slots {slots}");
        let t = run.snapshot();
        assert_eq!(t.errors_of("down"), 1, "slots {slots}");
        assert_eq!(t.retries(), 0, "slots {slots}");
        assert_eq!(h.attempts.load(Ordering::SeqCst), 1, "slots {slots}");
    }
}
