//! The async runner's "in flight: at most N" counts ops that ran at once, on
//! the manual clock (regression, session 17's audit M10: the unit a worker
//! reserved for its next op while it waited for the slot was counted in
//! flight, so the maximum read one more than ever ran at once).

use paceline::{
    ActivityConfig, AsyncOpRunner, Engine, LocalFuture, ManualClock, OpError, OpRunner, RateSpec,
    WorkerContext, Workload,
};
use std::time::Duration;

/// Async ops that each sleep `latency` on the engine's clock.
#[derive(Clone)]
struct Naps(Duration);

struct NapsRun(Duration, WorkerContext);

impl AsyncOpRunner for NapsRun {
    fn start(&self, _: u64) -> LocalFuture<Result<(), OpError>> {
        let sleep = self.1.sleep_async(self.0);
        Box::pin(async move {
            sleep.await;
            Ok(())
        })
    }
}

impl Workload for Naps {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Err(OpError::new("async-only", "runs on the async runner"))
    }
    fn async_runner(
        &self,
        ctx: &WorkerContext,
        _: usize,
    ) -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>> {
        let r = NapsRun(self.0, ctx.clone());
        Some(Box::pin(async move {
            Ok(Box::new(r) as Box<dyn AsyncOpRunner>)
        }))
    }
}

/// The most ops in flight at once over `cycles` ops of `latency`, one thread
/// at `rate`/s (strict slots), under a cap of `cap`.
fn max_in_flight(rate: f64, latency: Duration, cap: usize, cycles: u64) -> (u64, u64) {
    let clock = ManualClock::new();
    let engine = Engine::with_clock(clock.clone());
    let run = engine
        .start(
            ActivityConfig::new("a")
                .cycles(0..cycles)
                .rate(RateSpec::new(rate).strictness(0.0))
                .concurrency(cap),
            Naps(latency),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(run.is_async());
    run.wait();
    let t = run.snapshot();
    (t.in_flight_max(), t.ops())
}

#[test]
fn regression_m10_in_flight_max_counts_ops_that_ran_not_the_unit_held_for_the_next_slot() {
    // 1 ms ops every 200 ms: never two at once (the old count: 2, the op
    // that ran and the unit reserved while the worker slept to the next slot).
    assert_eq!(max_in_flight(5.0, Duration::from_millis(1), 2, 10), (1, 10));
    // 190 ms ops every 100 ms: two at once at most (the old count: 3 of 3,
    // "the cap reached" though it never was).
    assert_eq!(
        max_in_flight(10.0, Duration::from_millis(190), 3, 20),
        (2, 20)
    );
}

#[test]
fn in_flight_max_still_reaches_the_cap_when_the_ops_fill_it() {
    // 300 ms ops every 100 ms under a cap of 2: the cap is full (the rest
    // wait for room), and the maximum says so.
    assert_eq!(
        max_in_flight(10.0, Duration::from_millis(300), 2, 10),
        (2, 10)
    );
}
