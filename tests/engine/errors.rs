//! Error policies and failures: retries, counted errors, the stop policy, fatal
//! errors, panics in an op, in `finish` or in `Drop`, a worker that cannot
//! start, and a stop during retries.

use crate::workloads::{LONG, Script, flaky};
use paceline::{
    ActivityConfig, Engine, ErrorAction, ErrorPolicy, ManualClock, OpError, OpRunner, Outcome,
    WorkerContext, Workload,
};
use std::time::Duration;

#[test]
fn a_failed_attempt_that_a_retry_fixes_is_a_retry_not_an_error() {
    // Each cycle fails twice and succeeds on its third attempt: two retries,
    // and no error, since no op finally failed (issue 18, `errors=retry:1`).
    let run = Engine::with_clock(ManualClock::new())
        .start(
            ActivityConfig::new("retry")
                .cycles(0..50)
                .errors(ErrorPolicy::parse("retry:3").unwrap()),
            flaky(2, None, None),
        )
        .unwrap();
    assert_eq!(run.wait(), Outcome::Completed);
    let t = run.snapshot();
    assert_eq!((t.ops(), t.errors_of("flaky"), t.retries()), (50, 0, 100));
}

#[test]
fn count_goes_on_after_spent_retries() {
    let run = Engine::with_clock(ManualClock::new())
        .start(
            ActivityConfig::new("count")
                .cycles(0..50)
                .errors(ErrorPolicy::parse("retry:1").unwrap()),
            flaky(5, None, None),
        )
        .unwrap();
    assert_eq!(run.wait(), Outcome::Completed);
    let t = run.snapshot();
    // Each op fails, is retried once, fails again: one retry and one error.
    assert_eq!((t.ops(), t.errors_of("flaky"), t.retries()), (50, 50, 50));
}

#[test]
fn stop_policy_fails_the_run_naming_the_cycle() {
    let run = Engine::new()
        .start(
            ActivityConfig::new("stop").cycles(0..1_000_000).threads(2),
            flaky(0, Some(1234), None),
        )
        .unwrap();
    let outcome = run.wait();
    assert_eq!(
        outcome,
        Outcome::Failed("cycle 1234: fatal: this cycle always fails".into())
    );
    assert!(run.status().completed < 1_000_000);
    assert_eq!(run.snapshot().errors_of("fatal"), 1);
}

#[test]
fn a_panicking_op_is_contained_counted_and_its_runner_replaced() {
    let work = flaky(0, None, Some(10));
    let runners = work.runners.clone();
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {})); // keep the test output quiet
    let run = Engine::with_clock(ManualClock::new())
        .start(
            ActivityConfig::new("panic")
                .cycles(0..100)
                .errors(ErrorPolicy::parse("count").unwrap()),
            work,
        )
        .unwrap();
    let outcome = run.wait();
    std::panic::set_hook(prev);
    assert_eq!(outcome, Outcome::Completed);
    let t = run.snapshot();
    assert_eq!((t.ops(), t.errors_of("panic")), (100, 10));
    assert_eq!(*runners.lock().unwrap(), 11);
}

#[test]
fn a_worker_that_cannot_start_fails_the_run() {
    struct NoStart;
    impl Workload for NoStart {
        fn runner(&self, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
            Err(OpError::new(
                "setup",
                format!("worker {} has no file", ctx.index()),
            ))
        }
    }
    let run = Engine::new()
        .start(ActivityConfig::new("nostart").cycles(0..10), NoStart)
        .unwrap();
    assert_eq!(
        run.wait(),
        Outcome::Failed("worker 0 could not start: setup: worker 0 has no file".into())
    );
}

#[test]
fn a_fatal_error_stops_the_run_whatever_the_policy() {
    struct Closes;
    struct ClosesRunner;
    impl Workload for Closes {
        fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
            Ok(Box::new(ClosesRunner))
        }
    }
    impl OpRunner for ClosesRunner {
        fn run(&mut self, cycle: u64) -> Result<(), OpError> {
            if cycle == 7 {
                return Err(OpError::new("closed", "the reader left").fatal());
            }
            Ok(())
        }
    }
    let run = Engine::with_clock(ManualClock::new())
        .start(
            ActivityConfig::new("f")
                .cycles(0..100)
                .errors(ErrorPolicy::parse("retry:5").unwrap()),
            Closes,
        )
        .unwrap();
    assert_eq!(
        run.wait(),
        Outcome::Failed("cycle 7: closed: the reader left".into())
    );
    let t = run.snapshot();
    assert_eq!((t.ops(), t.retries(), t.errors_of("closed")), (8, 0, 1));
}

/// Issue 18.3: a panic in `finish` or in a runner's `Drop` still ends the run.
#[test]
fn a_panic_in_finish_or_drop_still_ends_the_run() {
    for (finish_panics, drop_panics) in [(true, false), (false, true), (true, true)] {
        let mut work = Script::new(|_, _| Ok(()));
        work.finish_panics = finish_panics;
        work.drop_panics = drop_panics;
        let run = Engine::new()
            .start(ActivityConfig::new("p").cycles(0..100).threads(2), work)
            .unwrap();
        assert_eq!(
            run.wait_timeout(Duration::from_secs(10)),
            Some(Outcome::Completed),
            "finish panics {finish_panics}, drop panics {drop_panics}"
        );
        let t = run.snapshot();
        assert_eq!(t.ops(), 100);
        let panics = u64::from(finish_panics) + u64::from(drop_panics);
        assert_eq!(t.errors_of("panic"), 2 * panics);
    }
}

/// Issue 18.6: a stop while an op is being retried is a stop, not a failure.
#[test]
fn a_stop_during_retries_is_a_stop() {
    let work = Script::new(|ctx, _| {
        ctx.sleep(Duration::from_millis(1));
        Err(OpError::new("down", "still down"))
    });
    let run = Engine::new()
        .start(
            ActivityConfig::new("retrying")
                .cycles(0..10)
                .errors(ErrorPolicy::new(1_000_000, ErrorAction::Stop)),
            work,
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(30));
    run.stop();
    assert_eq!(run.wait_timeout(LONG), Some(Outcome::Stopped));
    assert_eq!(run.failure_kind(), None);
}
