//! "A retry takes no new slot" (docs/drivers.md, "Retries"), pinned on the
//! manual clock on both runners (audit of issue 22, L3): a retried op's wait is
//! measured from its one slot, its retries' time is in its service time, the
//! next ops keep their slots (their waits show the backlog the retries built),
//! and no slot is counted missed because of a retry.

use paceline::{
    ActivityConfig, AsyncOpRunner, Engine, ErrorPolicy, LocalFuture, ManualClock, OpError,
    OpRunner, Outcome, RateSpec, Snapshot, WorkerContext, Workload,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MS: u64 = 1_000_000;
const CYCLES: u64 = 20;

/// Each cycle's first attempt takes 2 ms and fails with a retryable error; its
/// second takes 2 ms and passes. Every attempt logs (cycle, its start).
#[derive(Clone)]
struct FailsOnce {
    log: Arc<Mutex<Vec<(u64, u64)>>>,
    is_async: bool,
}

impl FailsOnce {
    fn attempt(&self, cycle: u64, now: u64) -> Result<(), OpError> {
        let mut log = self.log.lock().unwrap();
        let before = log.iter().filter(|&&(c, _)| c == cycle).count();
        log.push((cycle, now));
        if before == 0 {
            Err(OpError::new("sql 40", "could not serialize access").retryable(true))
        } else {
            Ok(())
        }
    }
}

struct SyncRun(FailsOnce, WorkerContext);

impl OpRunner for SyncRun {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        let now = self.1.now();
        self.1.sleep(Duration::from_millis(2));
        self.0.attempt(cycle, now)
    }
}

struct AsyncRun(FailsOnce, WorkerContext);

impl AsyncOpRunner for AsyncRun {
    fn start(&self, cycle: u64) -> LocalFuture<Result<(), OpError>> {
        let (me, now) = (self.0.clone(), self.1.now());
        let sleep = self.1.sleep_async(Duration::from_millis(2));
        Box::pin(async move {
            sleep.await;
            me.attempt(cycle, now)
        })
    }
}

impl Workload for FailsOnce {
    fn runner(&self, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(SyncRun(self.clone(), ctx.clone())))
    }

    fn async_runner(
        &self,
        ctx: &WorkerContext,
        _: usize,
    ) -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>> {
        if !self.is_async {
            return None;
        }
        let run = AsyncRun(self.clone(), ctx.clone());
        Some(Box::pin(async move {
            Ok(Box::new(run) as Box<dyn AsyncOpRunner>)
        }))
    }
}

/// Runs 20 cycles at 1000/s (average mode: no slot is ever forfeited, so the
/// waits carry the whole backlog) with `errors=retry:1`, one op at a time.
fn run(is_async: bool) -> (Vec<(u64, u64)>, Snapshot) {
    let w = FailsOnce {
        log: Arc::default(),
        is_async,
    };
    let mut config = ActivityConfig::new("r")
        .cycles(0..CYCLES)
        .rate(RateSpec::new(1000.0).strictness(0.0))
        .errors(ErrorPolicy::parse("retry:1").unwrap());
    if is_async {
        config = config.concurrency(1);
    }
    let run = Engine::with_clock(ManualClock::new())
        .start(config, w.clone())
        .unwrap();
    assert_eq!(run.wait(), Outcome::Completed);
    run.snapshot();
    let log = w.log.lock().unwrap().clone();
    (log, run.totals())
}

#[test]
fn issue22_l3_a_retry_takes_no_new_slot() {
    for is_async in [false, true] {
        let (log, t) = run(is_async);
        let first = log[0].1;
        let mut attempts: Vec<(u64, u64)> = log.iter().map(|&(c, at)| (c, at - first)).collect();
        attempts.sort();
        for k in 0..CYCLES {
            // Cycle k's slot is k ms; one op at a time, each cycle takes 4 ms
            // (a failed 2 ms try, then a passing 2 ms retry at once): it
            // starts 4k ms in, 3k ms behind its slot, and retries 2 ms later,
            // not at a slot of its own.
            let tries: Vec<u64> = attempts
                .iter()
                .filter(|&&(c, _)| c == k)
                .map(|&(_, at)| at)
                .collect();
            assert_eq!(
                tries,
                [4 * k * MS, (4 * k + 2) * MS],
                "cycle {k} (async {is_async})"
            );
        }
        assert_eq!(t.ops(), CYCLES, "each cycle is one op, however many tries");
        assert_eq!(t.retries(), CYCLES);
        assert_eq!(t.error_count(), 0, "every retry passed");
        assert_eq!(t.missed(), 0, "no slot missed: retries take none");
        // Service holds both tries: 4 ms each op. The waits are from each op's
        // one slot: 0, 3, 6, ... 57 ms (the backlog), mean 28.5 ms.
        let close = |got: u64, want: u64| got.abs_diff(want) <= want / 500;
        assert!(close(t.service().min(), 4 * MS), "{}", t.service().min());
        assert!(close(t.service().max(), 4 * MS), "{}", t.service().max());
        assert_eq!(t.wait().min(), 0);
        assert!(close(t.wait().max(), 57 * MS), "{}", t.wait().max());
        assert!(
            (t.wait().mean() - 28.5e6).abs() < 0.01 * 28.5e6,
            "{}",
            t.wait().mean()
        );
    }
}
