//! A stop during a worker's set-up (audit p17 L6: "Ctrl-C during set-up is
//! honoured only when every connection is open"): the set-up is abandoned
//! where it waits, the run ends `stopped`, and what the other workers recorded
//! is kept. Wall-clock tests with wide margins (a set-up of 20 s, a stop
//! asked for within a second of the launch, answered within 8 s).

use paceline::{
    ActivityConfig, AsyncOpRunner, Engine, LocalFuture, OpError, OpRunner, Outcome, RateSpec,
    WorkerContext, Workload,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A workload whose worker `slow` opens `conns` connections one at a time, each
/// taking `connect` (a server that accepts slowly); the others open at once.
/// Counts the connections opened and those closed.
#[derive(Clone)]
struct SlowSetUp {
    slow: usize,
    conns: u32,
    connect: Duration,
    opened: Arc<AtomicU64>,
    closed: Arc<AtomicU64>,
}

/// One open "connection": counted closed when dropped.
struct Conn(Arc<AtomicU64>);

impl Drop for Conn {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

struct Ops(#[allow(dead_code)] Vec<Conn>);

impl AsyncOpRunner for Ops {
    fn start(&self, _: u64) -> LocalFuture<Result<(), OpError>> {
        Box::pin(async { Ok(()) })
    }
}

impl Workload for SlowSetUp {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Err(OpError::new("async-only", "runs on the async runner"))
    }
    fn async_runner(
        &self,
        ctx: &WorkerContext,
        _: usize,
    ) -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>> {
        let me = self.clone();
        let ctx = ctx.clone();
        Some(Box::pin(async move {
            let mut conns = Vec::new();
            if ctx.index() == me.slow {
                for _ in 0..me.conns {
                    // A connect in progress: it does not look at the stop.
                    ctx.sleep_async(me.connect).await;
                    me.opened.fetch_add(1, Ordering::Relaxed);
                    conns.push(Conn(me.closed.clone()));
                }
            }
            Ok(Box::new(Ops(conns)) as Box<dyn AsyncOpRunner>)
        }))
    }
}

impl SlowSetUp {
    fn new(slow: usize, conns: u32, connect: Duration) -> Self {
        Self {
            slow,
            conns,
            connect,
            opened: Arc::default(),
            closed: Arc::default(),
        }
    }
}

/// Audit p17 L6: 100 connections of 200 ms each (20 s of set-up); a stop
/// 300 ms after the launch ends the run within 8 s (before the fix: after all
/// 100 were open, 20 s), `stopped`, never started, and the connections it had
/// opened are closed.
#[test]
fn audit_p17_l6_a_stop_abandons_a_set_up_still_opening_connections() {
    let engine = Engine::new();
    let w = SlowSetUp::new(0, 100, Duration::from_millis(200));
    let t0 = Instant::now();
    let run = engine
        .start(
            ActivityConfig::new("slow")
                .cycles(0..1_000)
                .rate(RateSpec::new(100.0))
                .concurrency(100),
            w.clone(),
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    run.stop();
    let outcome = run.wait_timeout(Duration::from_secs(30));
    let took = t0.elapsed();
    assert_eq!(outcome, Some(Outcome::Stopped), "after {took:?}");
    assert!(
        took < Duration::from_secs(8),
        "the stop waited {took:?} for the set-up ({} of 100 connections open)",
        w.opened.load(Ordering::Relaxed)
    );
    let opened = w.opened.load(Ordering::Relaxed);
    assert!(opened < 100, "every connection was opened: {opened}");
    assert_eq!(
        w.closed.load(Ordering::Relaxed),
        opened,
        "the opened ones are closed"
    );
    run.snapshot();
    assert_eq!(run.totals().ops(), 0);
}

/// A stop while one worker is still in its set-up and another runs ops: the
/// run ends `stopped` within 8 s, and the ops the running worker recorded
/// are all in the totals.
#[test]
fn audit_p17_l6_a_stop_during_one_worker_s_set_up_keeps_the_others_ops() {
    let engine = Engine::new();
    let w = SlowSetUp::new(1, 100, Duration::from_millis(200));
    let t0 = Instant::now();
    let run = engine
        .start(
            ActivityConfig::new("half")
                .cycles(0..1_000_000)
                .rate(RateSpec::new(200.0))
                .threads(2),
            w.clone(),
        )
        .unwrap();
    // Until worker 0 has run some ops.
    let deadline = Instant::now() + Duration::from_secs(20);
    while {
        run.snapshot();
        run.totals().ops() < 20
    } && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    run.stop();
    let outcome = run.wait_timeout(Duration::from_secs(30));
    let took = t0.elapsed();
    assert_eq!(outcome, Some(Outcome::Stopped), "after {took:?}");
    assert!(took < Duration::from_secs(8), "the stop waited {took:?}");
    run.snapshot();
    let totals = run.totals();
    assert!(totals.ops() >= 20, "{} ops kept", totals.ops());
    assert_eq!(
        totals.errors().count(),
        0,
        "{:?}",
        totals.errors().collect::<Vec<_>>()
    );
}

/// The duration's end during a set-up that outlasts it ends the run as
/// `ran its duration` (the set-up window: the duration counts from the first
/// slot, a set-up that never reaches one ends at the duration after the
/// launch), without waiting for the set-up.
#[test]
fn a_duration_that_ends_during_the_set_up_does_not_wait_for_it() {
    let engine = Engine::new();
    let w = SlowSetUp::new(0, 100, Duration::from_millis(200));
    let t0 = Instant::now();
    let run = engine
        .start(
            ActivityConfig::new("short")
                .cycles(0..1_000)
                .rate(RateSpec::new(100.0))
                .duration(Duration::from_millis(500)),
            w.clone(),
        )
        .unwrap();
    let outcome = run.wait_timeout(Duration::from_secs(30));
    let took = t0.elapsed();
    assert_eq!(outcome, Some(Outcome::Elapsed), "after {took:?}");
    assert!(took < Duration::from_secs(8), "the end waited {took:?}");
}
