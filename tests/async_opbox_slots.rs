//! The async runner's ops started in each op slot's own place
//! (`AsyncOpRunner::op_slot`): a slot is asked for once per op the worker
//! has in flight at once (not per op), `start` is then never called, and the
//! results, retries and panics are those of ops from `start`. (The allocator
//! calls per op that this saves are counted under callgrind:
//! `benches/pg_callgrind_mallocs.py`.)

use paceline::{
    ActivityConfig, AsyncOpRunner, Engine, ErrorPolicy, LocalFuture, ManualClock, OpError,
    OpRunner, OpSlot, Outcome, Snapshot, WorkerContext, Workload,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What an op of a cycle does: `Ok`, an error of kind `e` (`fail`), or a
/// panic (`boom`), after yielding once to the worker (`pending` once).
#[derive(Clone)]
struct Ops {
    /// Whether the runner gives op slots (else every op is `start`'s box).
    slots: bool,
    fail: Arc<dyn Fn(u64, u32) -> Option<&'static str> + Send + Sync>,
    attempts: Arc<Mutex<Vec<u64>>>,
    /// Op slots asked for, and ops `start`ed, so far.
    made: Arc<AtomicU64>,
    started: Arc<AtomicU64>,
}

struct OpsRun {
    ops: Ops,
}

/// One op: pending once (its waker woken at once), then the outcome.
async fn op(
    fail: Arc<dyn Fn(u64, u32) -> Option<&'static str> + Send + Sync>,
    attempt: u32,
    cycle: u64,
) -> Result<(), OpError> {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            std::task::Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await;
    match fail(cycle, attempt) {
        Some("boom") => panic!("boom at cycle {cycle}"),
        Some(kind) => Err(OpError::new(kind, format!("cycle {cycle}")).retryable(true)),
        None => Ok(()),
    }
}

impl OpsRun {
    fn attempt(&self, cycle: u64) -> u32 {
        if (self.ops.fail)(cycle, 0).is_none() {
            return 0;
        }
        let mut a = self.ops.attempts.lock().unwrap();
        a.push(cycle);
        (a.iter().filter(|&&c| c == cycle).count() - 1) as u32
    }
}

impl AsyncOpRunner for OpsRun {
    fn start(&self, cycle: u64) -> LocalFuture<Result<(), OpError>> {
        self.ops.started.fetch_add(1, Ordering::Relaxed);
        let attempt = self.attempt(cycle);
        Box::pin(op(self.ops.fail.clone(), attempt, cycle))
    }

    fn op_slot(&self) -> Option<OpSlot> {
        if !self.ops.slots {
            return None;
        }
        self.ops.made.fetch_add(1, Ordering::Relaxed);
        let me = OpsRun {
            ops: self.ops.clone(),
        };
        Some(OpSlot::new(move |cycle| {
            let attempt = me.attempt(cycle);
            op(me.ops.fail.clone(), attempt, cycle)
        }))
    }
}

impl Workload for Ops {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Err(OpError::new("async-only", "runs on the async runner"))
    }
    fn async_runner(
        &self,
        _: &WorkerContext,
        _: usize,
    ) -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>> {
        let r = OpsRun { ops: self.clone() };
        Some(Box::pin(async move {
            Ok(Box::new(r) as Box<dyn AsyncOpRunner>)
        }))
    }
}

fn ops(
    slots: bool,
    fail: impl Fn(u64, u32) -> Option<&'static str> + Send + Sync + 'static,
) -> Ops {
    Ops {
        slots,
        fail: Arc::new(fail),
        attempts: Arc::default(),
        made: Arc::default(),
        started: Arc::default(),
    }
}

/// `cycles` ops of `w`, one thread, 4 in flight, unpaced, on the manual clock.
fn run(w: &Ops, cycles: u64, policy: &str) -> (Outcome, Snapshot) {
    let run = Engine::with_clock(ManualClock::new())
        .start(
            ActivityConfig::new("a")
                .cycles(0..cycles)
                .concurrency(4)
                .errors(ErrorPolicy::parse(policy).unwrap()),
            w.clone(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(run.is_async());
    let outcome = run.wait();
    (outcome, run.snapshot())
}

#[test]
fn a_slot_is_asked_for_once_per_op_in_flight_at_once_and_serves_every_op_after() {
    let w = ops(true, |_, _| None);
    let (outcome, t) = run(&w, 1_000, "count");
    assert_eq!((outcome, t.ops()), (Outcome::Completed, 1_000));
    let made = w.made.load(Ordering::Relaxed);
    assert!(
        (1..=4).contains(&made),
        "{made} op slots for 1,000 ops, at most 4 in flight"
    );
    assert_eq!(w.started.load(Ordering::Relaxed), 0, "no op from `start`");
    // Without slots, every op is `start`'s.
    let w = ops(false, |_, _| None);
    let (_, t) = run(&w, 1_000, "count");
    assert_eq!(t.ops(), 1_000);
    assert_eq!(w.started.load(Ordering::Relaxed), 1_000);
}

#[test]
fn ops_in_slots_are_retried_counted_and_contained_as_boxed_ops_are() {
    let fail = |cycle: u64, attempt: u32| match cycle % 10 {
        3 => Some("flaky").filter(|_| attempt < 2),
        5 => Some("broken"),
        7 => Some("boom"),
        _ => None,
    };
    let mut seen = Vec::new();
    for slots in [true, false] {
        let w = ops(slots, fail);
        let (outcome, t) = run(&w, 100, "flaky:retry:3; count");
        assert_eq!(outcome, Outcome::Completed, "slots {slots}");
        seen.push((
            t.ops(),
            t.retries(),
            t.errors_of("flaky"),
            t.errors_of("broken"),
            t.errors_of("panic"),
        ));
    }
    // 10 flaky cycles, each retried twice and then passing; 10 broken; 10
    // panics (each ends its op, the slot serves the next).
    assert_eq!(seen[0], (100, 20, 0, 10, 10));
    assert_eq!(seen[0], seen[1], "with slots and without");
}
