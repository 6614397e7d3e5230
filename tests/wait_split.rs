//! The engine's split of each op's wait into queueing and dispatch, and the
//! verdict on it, on the manual clock: exact numbers, no wall clock.

use paceline::{
    ActivityConfig, Engine, ManualClock, OpError, OpRunner, RateSpec, Snapshot, Verdict,
    VerdictKind, WorkerContext, Workload,
};
use std::time::Duration;

/// Ops that take a fixed time on the engine's clock.
struct Nap(Duration);
struct NapRunner(WorkerContext, Duration);

impl Workload for Nap {
    fn runner(&self, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(NapRunner(ctx.clone(), self.0)))
    }
}

impl OpRunner for NapRunner {
    fn run(&mut self, _: u64) -> Result<(), OpError> {
        self.0.sleep(self.1);
        Ok(())
    }
}

/// One thread at 1000/s (slots 1 ms apart) running `cycles` ops of `op` each.
fn run(op: Duration, cycles: u64) -> Snapshot {
    let engine = Engine::with_clock(ManualClock::new());
    let run = engine
        .start(
            ActivityConfig::new("a")
                .cycles(0..cycles)
                .rate(RateSpec::new(1000.0)),
            Nap(op),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    run.wait();
    run.snapshot()
}

/// Within HdrHistogram's 3 significant digits of `want`.
fn near(got: u64, want: u64) -> bool {
    got.abs_diff(want) <= want / 1000 + 1
}

#[test]
fn a_worker_busy_past_its_slots_queues_and_dispatches_nothing() {
    // 2.5 ms ops, slots 1 ms apart: op k starts at 2.5k ms (its worker's previous
    // end), 1.5k ms late, all of it queueing: the worker was busy when the slot came.
    let t = run(Duration::from_micros(2500), 10);
    assert_eq!(
        (t.ops(), t.queue().count(), t.dispatch().count()),
        (10, 10, 10)
    );
    assert_eq!(t.dispatch().max(), 0);
    assert!(near(t.queue().max(), 13_500_000), "{}", t.queue().max());
    assert_eq!(t.queue().max(), t.wait().max());
    assert!(
        near(t.queue().mean() as u64, 6_750_000),
        "{}",
        t.queue().mean()
    );
    // 400/s of 1000/s; 2.5 ms ops need 2.5 threads. Judged on 50 ops (125 ms):
    // the 10 above (25 ms) are too few slots to judge (the `too-short` verdict).
    let v = Verdict::of(&t, Some(1000.0), 1, None);
    assert_eq!(v.kind, VerdictKind::TooShort);
    let t = run(Duration::from_micros(2500), 50);
    let v = Verdict::of(&t, Some(1000.0), 1, None);
    assert_eq!(v.kind, VerdictKind::SystemBound);
    assert!(
        v.reason
            .starts_with("ops take 2.50 ms on average; 1000/s needs 2.5 threads, the run had 1: raise threads to 4 (achieved 400/s of 1000/s"),
        "{}",
        v.reason
    );
    assert!((v.concurrency_needed - 1.0).abs() < 0.01, "{v:?}");
}

#[test]
fn a_worker_free_before_its_slots_starts_on_them() {
    // 0.5 ms ops: the worker is free half a slot early, sleeps to the slot (the
    // manual clock wakes exactly) and starts on it: no queueing, no dispatch.
    let t = run(Duration::from_micros(500), 100);
    assert_eq!(
        (t.queue().max(), t.dispatch().max(), t.wait().max()),
        (0, 0, 0)
    );
    assert_eq!(t.queue().count(), 100);
    let v = Verdict::of(&t, Some(1000.0), 1, None);
    assert_eq!(v.kind, VerdictKind::OnSchedule, "{}", v.reason);
    assert!((v.concurrency_needed - 0.5).abs() < 0.01, "{v:?}");
}

#[test]
fn an_unpaced_run_records_no_split() {
    let engine = Engine::with_clock(ManualClock::new());
    let run = engine
        .start(
            ActivityConfig::new("a").cycles(0..20),
            Nap(Duration::from_millis(1)),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    run.wait();
    let t = run.snapshot();
    assert_eq!(
        (t.ops(), t.queue().count(), t.dispatch().count()),
        (20, 0, 0)
    );
    assert_eq!(Verdict::of(&t, None, 1, None).kind, VerdictKind::Unpaced);
}
