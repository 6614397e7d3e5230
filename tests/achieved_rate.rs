//! The achieved rate of a paced run is its START rate over the schedule: the
//! ops started minus one over the span from the first slot to the last start,
//! on both runners, on the manual clock. Regression (session 14, found by the
//! lead): `driver=diag latency=200ms rate=1000 cycles=1000 concurrency=400`
//! printed "834/s of 1.00K/s" and "concurrency needed 167.02" though every op
//! started at its slot: the rate divided the ops by the window to the END of
//! the run, so the last ops' service (the drain) read as a schedule that slowed.

use paceline::{
    ActivityConfig, AsyncOpRunner, Control, Engine, ErrorAction, ErrorPolicy, LocalFuture,
    ManualClock, OpError, OpRunner, RateSpec, Snapshot, WorkerContext, Workload, achieved_rate,
};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

const MS: u64 = 1_000_000;

/// Ops that take `latency(cycle)` on the engine's clock and log (cycle, start);
/// `stop_at` stops the run as that cycle starts. On the sync runner or the
/// async one.
#[derive(Clone)]
struct Takes {
    latency: Arc<dyn Fn(u64) -> Duration + Send + Sync>,
    log: Arc<Mutex<Vec<(u64, u64)>>>,
    control: Arc<OnceLock<Control>>,
    stop_at: Option<u64>,
    is_async: bool,
}

impl Takes {
    fn new(is_async: bool, latency: impl Fn(u64) -> Duration + Send + Sync + 'static) -> Self {
        Self {
            latency: Arc::new(latency),
            log: Arc::default(),
            control: Arc::default(),
            stop_at: None,
            is_async,
        }
    }

    /// The start of the last op to start.
    fn last_start(&self) -> u64 {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|&(_, at)| at)
            .max()
            .unwrap()
    }

    fn begin(&self, cycle: u64, now: u64) {
        self.log.lock().unwrap().push((cycle, now));
        if Some(cycle) == self.stop_at {
            if let Some(c) = self.control.get() {
                c.stop();
            }
        }
    }
}

struct SyncRun(Takes, WorkerContext);

impl OpRunner for SyncRun {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        self.0.begin(cycle, self.1.now());
        self.1.sleep((self.0.latency)(cycle));
        Ok(())
    }
}

struct AsyncRun(Takes, WorkerContext);

impl AsyncOpRunner for AsyncRun {
    fn start(&self, cycle: u64) -> LocalFuture<Result<(), OpError>> {
        self.0.begin(cycle, self.1.now());
        let sleep = self.1.sleep_async((self.0.latency)(cycle));
        Box::pin(async move {
            sleep.await;
            Ok(())
        })
    }
}

impl Workload for Takes {
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
        let r = AsyncRun(self.clone(), ctx.clone());
        let control = self.control.clone();
        Some(Box::pin(async move {
            // The control is handed in after `start` returns; on the manual
            // clock the run could be over before.
            while control.get().is_none() {
                std::thread::yield_now();
            }
            Ok(Box::new(r) as Box<dyn AsyncOpRunner>)
        }))
    }
}

/// Runs `config` with `w` on a fresh manual clock to its end; the totals.
fn run(config: ActivityConfig, w: &Takes) -> Snapshot {
    let engine = Engine::with_clock(ManualClock::new());
    let c = engine.start(config, w.clone()).unwrap();
    let _ = w.control.set(c.clone());
    assert_eq!(c.is_async(), w.is_async);
    c.wait();
    let _ = c.snapshot(); // the last interval joins the totals
    c.totals()
}

/// (n - 1) starts over `span` nanoseconds, as `achieved_rate` computes it.
fn start_rate(n: u64, span: u64) -> f64 {
    (n - 1) as f64 * 1e9 / span as f64
}

#[test]
fn regression_async_ops_at_their_slots_achieve_the_rate_exactly_whatever_their_service() {
    // 1000 ops at 1000/s on one thread, up to 400 in flight: every op starts
    // at its slot (0, 1 ms, ..., 999 ms) whatever it takes. At 200 ms the run
    // ends at 1.199 s; its completions over that read 834/s, the drain.
    for latency in [1, 50, 200] {
        let w = Takes::new(true, move |_| Duration::from_millis(latency));
        let t = run(
            ActivityConfig::new("a")
                .cycles(0..1000)
                .rate(RateSpec::new(1000.0))
                .concurrency(400),
            &w,
        );
        assert_eq!(t.ops(), 1000, "{latency} ms");
        assert_eq!(t.wait().max(), 0, "{latency} ms: every op at its slot");
        assert_eq!((t.starts(), t.last_start()), (1000, Some(999 * MS)));
        assert_eq!(t.elapsed_nanos(), (999 + latency) * MS);
        assert_eq!(achieved_rate(&t, Some(1000.0)), 1000.0, "{latency} ms");
        // The completions over the run's time keep the drain.
        assert_eq!(t.rate(), 1000.0 * 1e9 / ((999 + latency) * MS) as f64);
    }
}

#[test]
fn regression_sync_ops_at_their_slots_achieve_the_rate_exactly_whatever_the_last_ones_take() {
    // 50 ops at 100/s on one sync thread: each takes 5 ms and starts at its
    // slot; the last one, whose service is all the drain there is on one
    // thread, takes `last` ms. Before, 200 ms read 50 / 0.69 s = 72.5/s.
    for last in [0, 5, 200, 2000] {
        let w = Takes::new(false, move |c| {
            Duration::from_millis(if c == 49 { last } else { 5 })
        });
        let t = run(
            ActivityConfig::new("s")
                .cycles(0..50)
                .rate(RateSpec::new(100.0)),
            &w,
        );
        assert_eq!(t.ops(), 50);
        assert_eq!(t.wait().max(), 0, "{last} ms: every op at its slot");
        assert_eq!((t.starts(), t.last_start()), (50, Some(490 * MS)));
        assert_eq!(t.elapsed_nanos(), (490 + last) * MS);
        assert_eq!(achieved_rate(&t, Some(100.0)), 100.0, "{last} ms");
    }
}

#[test]
fn a_late_last_start_shows_in_the_achieved_rate_by_its_lateness_on_the_sync_runner() {
    // 50 ops at 100/s, 5 ms each on one thread, but cycle 48 takes 50 ms: the
    // last op starts at 530 ms, 40 ms after its slot. 49 starts over 530 ms.
    let w = Takes::new(false, |c| {
        Duration::from_millis(if c == 48 { 50 } else { 5 })
    });
    let t = run(
        ActivityConfig::new("s")
            .cycles(0..50)
            .rate(RateSpec::new(100.0)),
        &w,
    );
    assert_eq!(w.last_start(), 530 * MS);
    // The histogram keeps 3 significant digits.
    assert!(t.wait().max().abs_diff(40 * MS) < 40 * MS / 1000);
    assert_eq!(achieved_rate(&t, Some(100.0)), start_rate(50, 530 * MS));
    assert!(achieved_rate(&t, Some(100.0)) < 92.5);
}

#[test]
fn a_generator_held_by_its_cap_shows_its_late_starts_on_the_async_runner() {
    // 100 ops at 1000/s of 20 ms each need 20 in flight; the cap is 10, so op
    // k >= 10 starts when op k - 10 ends: the last at 189 ms, 90 ms late.
    let w = Takes::new(true, |_| Duration::from_millis(20));
    let t = run(
        ActivityConfig::new("a")
            .cycles(0..100)
            .rate(RateSpec::new(1000.0))
            .concurrency(10),
        &w,
    );
    assert_eq!(t.ops(), 100);
    let last = w.last_start();
    assert_eq!(last, 189 * MS);
    assert_eq!(t.last_start(), Some(last));
    assert_eq!(achieved_rate(&t, Some(1000.0)), start_rate(100, last));
    assert!(achieved_rate(&t, Some(1000.0)) < 530.0);
}

#[test]
fn ops_cancelled_in_flight_count_as_started() {
    // Even cycles take 1 ms, odd ones 1 s; the stop comes as cycle 20 starts,
    // with a 10 ms grace: the 10 odd ops in flight are cancelled. 21 ops
    // started at their slots 0..20 ms: 1000/s. Counting only the 11 recorded
    // ones up to the last start would read 500/s.
    let mut w = Takes::new(true, |c| {
        Duration::from_millis(if c % 2 == 0 { 1 } else { 1000 })
    });
    w.stop_at = Some(20);
    let t = run(
        ActivityConfig::new("a")
            .cycles(0..100)
            .rate(RateSpec::new(1000.0))
            .concurrency(1000)
            .stop_grace(Duration::from_millis(10))
            .errors(ErrorPolicy::new(0, ErrorAction::Count)),
        &w,
    );
    assert_eq!((t.ops(), t.errors_of("cancelled")), (11, 10));
    assert_eq!((t.starts(), t.last_start()), (21, Some(20 * MS)));
    assert_eq!(achieved_rate(&t, Some(1000.0)), 1000.0);
}

#[test]
fn unpaced_runs_keep_ops_over_the_runs_time() {
    for is_async in [false, true] {
        let w = Takes::new(is_async, |_| Duration::from_millis(2));
        let mut config = ActivityConfig::new("u").cycles(0..100);
        if is_async {
            config = config.concurrency(4);
        }
        let t = run(config, &w);
        assert_eq!(t.ops(), 100);
        assert_eq!(achieved_rate(&t, None), t.rate(), "async {is_async}");
        assert_eq!(
            achieved_rate(&t, None),
            100.0 * 1e9 / t.elapsed_nanos() as f64
        );
    }
}

#[test]
fn one_start_falls_back_to_ops_over_the_slots_they_took() {
    let w = Takes::new(false, |_| Duration::from_millis(300));
    let t = run(
        ActivityConfig::new("one")
            .cycles(0..1)
            .rate(RateSpec::new(10.0)),
        &w,
    );
    assert_eq!((t.starts(), t.elapsed_nanos()), (1, 300 * MS));
    // 1 op over 0.3 s, not over the 0.1 s slot it took.
    assert_eq!(achieved_rate(&t, Some(10.0)), 1.0 / 0.3);
}
