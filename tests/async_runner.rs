//! The async runner on the manual clock: exact waits, the cap keeping late
//! slots in order, pause and stop with ops in flight, exactly-once through live
//! changes of `concurrency` and `threads`.

#[path = "support/naps.rs"]
mod naps;

use naps::Naps;
use paceline::{
    ActivityConfig, Control, Engine, EngineError, ErrorAction, ErrorPolicy, ManualClock, OpError,
    OpRunner, RateSpec, WorkerContext, Workload,
};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// [`Naps`] whose hook is handed the run's control, and whose workers wait
/// for it before their set-up: the test hands the control in after `start`
/// returns; on the manual clock the run would be over by then.
#[derive(Clone)]
struct Sleeper {
    naps: Naps,
    control: Arc<OnceLock<Control>>,
}

impl Sleeper {
    /// Ops that sleep `latency(cycle)` on the engine's clock and log (cycle, start).
    fn new(latency: impl Fn(u64) -> Duration + Send + Sync + 'static) -> Self {
        Self {
            naps: Naps::new(latency),
            control: Arc::default(),
        }
        .setup(|| {})
    }

    /// Each worker's set-up (its connections), before its first op, once the
    /// control is in.
    fn setup(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        let control = self.control.clone();
        self.naps = self.naps.setup(move || {
            while control.get().is_none() {
                std::thread::yield_now();
            }
            f();
        });
        self
    }

    /// What an op does at its cycle, on the worker thread.
    fn hook(mut self, h: impl Fn(u64, &Control) + Send + Sync + 'static) -> Self {
        let control = self.control.clone();
        self.naps = self.naps.hook(move |cycle| {
            if let Some(c) = control.get() {
                h(cycle, c);
            }
        });
        self
    }

    fn starts(&self) -> Vec<(u64, u64)> {
        self.naps.starts()
    }
}

fn start(engine: &Engine, config: ActivityConfig, w: &Sleeper) -> Control {
    let c = engine.start(config, w.naps.clone()).unwrap();
    let _ = w.control.set(c.clone());
    c
}

#[test]
fn ops_in_flight_start_exactly_at_their_slots() {
    // 1000/s, 5 ms ops, up to 10 in flight on one thread: about 5 in flight, every
    // op starts at its slot and takes exactly 5 ms.
    let engine = Engine::with_clock(ManualClock::new());
    let w = Sleeper::new(|_| Duration::from_millis(5));
    let run = start(
        &engine,
        ActivityConfig::new("a")
            .cycles(0..100)
            .rate(RateSpec::new(1000.0))
            .concurrency(10),
        &w,
    );
    assert!(run.is_async());
    run.wait();
    let t = run.snapshot();
    assert_eq!(t.ops(), 100);
    assert_eq!(t.wait().max(), 0, "every op starts at its slot");
    assert!((4_995_000..5_005_000).contains(&t.service().min()));
    assert!((4_995_000..5_005_000).contains(&t.service().max()));
    // The last slot at 99 ms, plus its 5 ms.
    assert_eq!(t.elapsed_nanos(), 104_000_000);
    let starts = w.starts();
    for (i, (cycle, at)) in starts.iter().enumerate() {
        assert_eq!(*cycle, i as u64);
        assert_eq!(
            *at,
            i as u64 * 1_000_000,
            "cycle {cycle} starts at its slot"
        );
    }
}

#[test]
fn at_the_cap_late_slots_keep_their_order_and_their_waits_grow() {
    // 1000/s asked, 5 ms ops, at most 2 in flight: 400/s can run. No slot is
    // dropped: op k starts when room comes, its wait is that minus its slot.
    let engine = Engine::with_clock(ManualClock::new());
    let w = Sleeper::new(|_| Duration::from_millis(5));
    let run = start(
        &engine,
        ActivityConfig::new("a")
            .cycles(0..40)
            .rate(RateSpec::new(1000.0).strictness(0.0))
            .concurrency(2),
        &w,
    );
    run.wait();
    let starts = w.starts();
    assert_eq!(starts.len(), 40);
    for (i, (cycle, at)) in starts.iter().enumerate() {
        assert_eq!(*cycle, i as u64, "cycles start in order");
        // Two start at 0 and 1 ms, then each pair 5 ms after the one before.
        let expect = (i as u64 / 2) * 5_000_000
            + if i < 2 {
                i as u64 * 1_000_000
            } else {
                (i as u64 % 2) * 1_000_000
            };
        assert_eq!(*at, expect, "cycle {cycle}");
    }
    let t = run.snapshot();
    assert_eq!(t.ops(), 40);
    // The last op's slot is 39 ms; it starts at 96 ms: a wait of 57 ms, all of
    // it queueing (the worker was at its cap from its slot on).
    assert!(
        (56_900_000..57_100_000).contains(&t.wait().max()),
        "{}",
        t.wait().max()
    );
    assert_eq!(t.dispatch().max(), 0);
}

#[test]
fn a_pause_lets_the_ops_in_flight_end_and_starts_none() {
    let engine = Engine::with_clock(ManualClock::new());
    let paused_at = Arc::new(Mutex::new(None));
    let p = paused_at.clone();
    let w = Sleeper::new(|_| Duration::from_millis(20)).hook(move |cycle, c| {
        if cycle == 10 {
            c.pause().unwrap();
            *p.lock().unwrap() = Some(());
        }
    });
    let run = start(
        &engine,
        ActivityConfig::new("a")
            .cycles(0..30)
            .rate(RateSpec::new(1000.0))
            .concurrency(100),
        &w,
    );
    // Wait until the pause took and the ops in flight ended.
    while paused_at.lock().unwrap().is_none() || run.snapshot_ops_so_far() < 11 {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    let starts = w.starts();
    assert_eq!(starts.len(), 11, "nothing new starts while paused");
    run.resume().unwrap();
    run.wait();
    let starts = w.starts();
    assert_eq!(starts.len(), 30);
    let mut cycles: Vec<u64> = starts.iter().map(|s| s.0).collect();
    cycles.sort_unstable();
    assert_eq!(cycles, (0..30).collect::<Vec<_>>());
    // The 11 ops in flight at the pause took their 20 ms, no more: the pause
    // did not hold them.
    assert!(run.totals_and_last().service().max() < 20_100_000);
}

#[test]
fn a_stop_cancels_the_ops_still_in_flight_after_its_grace_and_counts_them() {
    let engine = Engine::with_clock(ManualClock::new());
    // Even cycles take 1 ms, odd ones 1 s; the stop comes at cycle 20's start,
    // with a 10 ms grace: the 1 ms ops end, the 1 s ones in flight are cancelled.
    let w = Sleeper::new(|c| Duration::from_millis(if c % 2 == 0 { 1 } else { 1000 })).hook(
        |cycle, c| {
            if cycle == 20 {
                c.stop();
            }
        },
    );
    let run = start(
        &engine,
        ActivityConfig::new("a")
            .cycles(0..100)
            .rate(RateSpec::new(1000.0))
            .concurrency(1000)
            .stop_grace(Duration::from_millis(10))
            .errors(ErrorPolicy::new(0, ErrorAction::Count)),
        &w,
    );
    run.wait();
    let t = run.totals_and_last();
    assert_eq!(w.starts().len(), 21);
    // Odd cycles 1..19 were in flight: 10 cancelled; the 11 even ones ran.
    assert_eq!(t.errors_of("cancelled"), 10);
    assert_eq!(t.ops(), 11);
}

#[test]
fn every_cycle_runs_once_through_live_changes_of_concurrency_and_threads() {
    let engine = Engine::with_clock(ManualClock::new());
    let w =
        Sleeper::new(|c| Duration::from_micros(100 + (c % 7) * 300)).hook(|cycle, c| match cycle {
            50 => drop(c.set_concurrency(3)),
            120 => drop(c.set_threads(3)),
            200 => drop(c.set_concurrency(50)),
            300 => drop(c.set_threads(1)),
            400 => drop(c.set_concurrency(1)),
            _ => {}
        });
    let run = start(
        &engine,
        ActivityConfig::new("a")
            .threads(2)
            .cycles(0..600)
            .stride(7)
            .rate(RateSpec::new(10_000.0))
            .concurrency(20),
        &w,
    );
    run.wait();
    let mut cycles: Vec<u64> = w.starts().iter().map(|s| s.0).collect();
    cycles.sort_unstable();
    assert_eq!(cycles, (0..600).collect::<Vec<_>>());
    assert_eq!(run.totals_and_last().ops(), 600);
}

#[test]
fn concurrency_is_refused_for_a_workload_without_an_async_runner() {
    struct Sync;
    struct Run;
    impl OpRunner for Run {
        fn run(&mut self, _: u64) -> Result<(), OpError> {
            Ok(())
        }
    }
    impl Workload for Sync {
        fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
            Ok(Box::new(Run))
        }
    }
    let engine = Engine::with_clock(ManualClock::new());
    let err = engine
        .start(ActivityConfig::new("a").driver("x").concurrency(10), Sync)
        .unwrap_err();
    assert!(matches!(err, EngineError::BadConfig { .. }));
    assert_eq!(
        err.to_string(),
        "activity `a`: bad concurrency: driver `x` has no async runner, so it runs one op per \
         thread: drop concurrency= and raise threads= to the ops in flight you need"
    );
    for (c, threads, says) in [
        (0, 1, "concurrency 0"),
        (paceline::MAX_CONCURRENCY + 1, 1, "above the cap"),
        (2, 4, "below threads=4"),
    ] {
        let e = ActivityConfig::new("a")
            .threads(threads)
            .concurrency(c)
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains(says), "{e}");
    }
}

/// Snapshot helpers: the run's totals with the last interval merged in.
trait Totals {
    fn totals_and_last(&self) -> paceline::Snapshot;
    fn snapshot_ops_so_far(&self) -> u64;
}

impl Totals for Control {
    fn totals_and_last(&self) -> paceline::Snapshot {
        let mut t = self.totals();
        t.merge(&self.snapshot());
        t
    }
    fn snapshot_ops_so_far(&self) -> u64 {
        self.status().completed
    }
}

/// Issue 21: a scenario changes `concurrency` as it changes `threads` and
/// `rate` (a `concurrency` step). Real clock, tolerant: 500/s of 20 ms ops need
/// 10 in flight; the run starts capped at 2 and the step lifts the cap.
#[test]
fn a_scenario_step_changes_concurrency() {
    use paceline::{Drivers, Outcome, Signal, run_scenario};
    let drivers = Drivers::builtin();
    let a = drivers
        .loader()
        .from_str(
            "params: {driver: diag, cycles: 400, rate: 500, latency: 20ms, concurrency: 2}\n\
             ops: {o: x}\n\
             scenarios:\n  s:\n    - start\n    - wait: 300ms\n    - concurrency: 20\n    - await\n",
            "c.yaml",
        )
        .unwrap();
    let engine = Engine::new();
    run_scenario(
        &drivers,
        &engine,
        &a,
        a.scenario("s").unwrap(),
        &Default::default(),
        &Signal::new(),
    )
    .unwrap();
    assert_eq!(engine.wait_all(), [("c".to_string(), Outcome::Completed)]);
    let run = engine.get("c").unwrap();
    let t = run.snapshot();
    assert_eq!(t.ops(), 400);
    // Capped at 2 until the step; then as many as the rate needs.
    assert!(t.in_flight_max() >= 5, "{}", t.in_flight_max());
    // A step on an activity without the async runner is refused with the fix.
    let b = drivers
        .loader()
        .from_str(
            "params: {driver: diag, cycles: 1000000, rate: 100}\nops: {o: x}\n\
             scenarios:\n  s: [start, {concurrency: 20}]\n",
            "b.yaml",
        )
        .unwrap();
    let engine = Engine::new();
    let err = run_scenario(
        &drivers,
        &engine,
        &b,
        b.scenario("s").unwrap(),
        &Default::default(),
        &Signal::new(),
    )
    .unwrap_err();
    engine.stop_all();
    assert!(err.to_string().contains("change threads instead"), "{err}");
}

/// A bad `concurrency` step is refused at load, with its place.
#[test]
fn a_bad_concurrency_step_is_refused_with_its_place() {
    let e = paceline::Drivers::builtin()
        .loader()
        .from_str(
            "params: {driver: diag}\nops: {o: x}\nscenarios:\n  s: [start, {concurrency: 0}]\n",
            "bad.yaml",
        )
        .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("bad.yaml:4:"), "{text}");
    assert!(
        text.contains("`concurrency` must be a whole number from 1"),
        "{text}"
    );
}

/// Issue 24 item 11 on the async runner: ops in flight end out of order, and
/// each is still recorded under the op its own cycle runs.
#[test]
fn issue24_item11_ops_in_flight_are_recorded_under_their_own_op() {
    let engine = Engine::with_clock(ManualClock::new());
    // `write` (every third cycle) takes 3 ms, `read` 1 ms: with 10 in flight a
    // read started after a write ends before it.
    let w = Sleeper::new(|c| Duration::from_millis(if c % 3 == 2 { 3 } else { 1 }));
    let table = paceline::OpTable::new(["read", "write"], &[0, 0, 1]).unwrap();
    let run = start(
        &engine,
        ActivityConfig::new("a")
            .cycles(0..90)
            .rate(RateSpec::new(2000.0))
            .concurrency(10)
            .ops(table),
        &w,
    );
    run.wait();
    let t = run.snapshot();
    let (read, write) = (t.op("read").unwrap(), t.op("write").unwrap());
    assert_eq!((read.ops(), write.ops(), t.ops()), (60, 30, 90));
    let near = |v: u64, to: u64| v.abs_diff(to) <= to / 100; // 2 digits per op
    assert!(
        near(read.service().max(), 1_000_000),
        "{:?}",
        read.service()
    );
    assert!(
        near(write.service().min(), 3_000_000),
        "{:?}",
        write.service()
    );
    assert!(
        t.service().max().abs_diff(3_000_000) <= 3_000,
        "{:?}",
        t.service()
    );
}

#[test]
fn regression_issue21_a_late_worker_under_its_cap_is_dispatch_not_queueing() {
    // 1000/s, 5 ms ops, up to 10 in flight: never at the cap. Starting cycle 10
    // keeps the worker busy 3 ms (its own work: other ops' completions, a late
    // wake-up), so cycles 11 and 12 start 2 ms and 1 ms late. Nothing held
    // those slots back but the worker itself: their lateness is dispatch, and
    // no op queued. (It read cycle 12's 1 ms as queueing: the worker's "free"
    // time was cycle 11's late start, and the verdict blamed the server.)
    let clock = ManualClock::new();
    let engine = Engine::with_clock(clock.clone());
    let busy = clock.clone();
    let w = Sleeper::new(|_| Duration::from_millis(5)).hook(move |cycle, _| {
        if cycle == 10 {
            busy.advance(Duration::from_millis(3));
        }
    });
    let run = start(
        &engine,
        ActivityConfig::new("a")
            .cycles(0..40)
            .rate(RateSpec::new(1000.0).strictness(0.0))
            .concurrency(10),
        &w,
    );
    run.wait();
    let starts = w.starts();
    assert_eq!(
        starts[11],
        (11, 13_000_000),
        "cycle 11 waits for the busy worker"
    );
    assert_eq!(starts[12], (12, 13_000_000), "cycle 12 too");
    assert_eq!(starts[13], (13, 13_000_000), "and cycle 13, due then");
    let t = run.snapshot();
    assert_eq!(t.ops(), 40);
    assert!(t.in_flight_max() < 10, "never at the cap");
    assert_eq!(t.queue().max(), 0, "no op queued: the worker had room");
    assert!(
        (1_990_000..2_010_000).contains(&t.dispatch().max()),
        "cycle 11's 2 ms are the worker's: {}",
        t.dispatch().max()
    );
}

#[test]
fn regression_issue21_the_window_starts_at_the_schedules_first_slot_not_before_set_up() {
    // Each worker opens its connections for 30 ms before its first op. The
    // schedule starts at its first slot, after them, and so does every rate:
    // set-up is shown apart, never counted as time the schedule ran. (The run's
    // window started before the connections: issue 21's done-when run read
    // 9.86K/s of 10.0K/s with 74 ms of connecting in its 10.137 s.)
    let clock = ManualClock::new();
    let engine = Engine::with_clock(clock.clone());
    let w = Sleeper::new(|_| Duration::from_millis(5))
        .setup(move || clock.advance(Duration::from_millis(30)));
    let run = start(
        &engine,
        ActivityConfig::new("a")
            .cycles(0..100)
            .rate(RateSpec::new(1000.0))
            .concurrency(10),
        &w,
    );
    run.wait();
    let starts = w.starts();
    assert_eq!(
        starts[0],
        (0, 30_000_000),
        "the first slot comes after set-up"
    );
    assert_eq!(starts[99], (99, 129_000_000));
    let t = run.snapshot();
    assert_eq!(t.ops(), 100);
    assert_eq!(t.wait().max(), 0);
    assert_eq!((t.start(), t.end()), (30_000_000, 134_000_000));
    let totals = run.metrics().totals();
    assert_eq!(totals.setup_nanos(), 30_000_000, "set-up is shown apart");
    assert_eq!(totals.elapsed_nanos(), 104_000_000);
    // From the first slot to the last op's end: 100 slots and the last op's
    // 5 ms, which is an edge, not a shortfall: the achieved rate counts the
    // starts from the first slot to the last start.
    assert_eq!(t.elapsed_nanos(), 104_000_000);
    assert_eq!(t.last_start(), Some(129_000_000));
    assert_eq!(paceline::achieved_rate(&t, Some(1000.0)), 1000.0);
    let v = paceline::Verdict::of(&t, Some(1000.0), 1, None);
    assert_eq!(v.kind, paceline::VerdictKind::OnSchedule, "{v}");
}

/// Regression (session 12's review): a worker at its own share of the cap
/// waited for room woken only by its own op ends and the run's signal. When
/// another worker took the unit its op end freed, it parked again under its
/// share with nothing to wake it (another worker's op end wakes no one), and a
/// run bounded by cycles hung once the others left. Real clock, 4 threads
/// sharing 5 in flight (a share of 2 each: three workers can hold the whole
/// cap), ops of 0.1-0.8 ms, unpaced: every cycle runs once and the run ends.
#[test]
fn regression_a_worker_under_its_share_after_a_cap_wait_is_not_left_asleep() {
    for round in 0..3 {
        let engine = Engine::new();
        let w = Sleeper::new(|c| Duration::from_micros(100 + (c * 37 % 8) * 100));
        let run = start(
            &engine,
            ActivityConfig::new("a")
                .threads(4)
                .cycles(0..6000)
                .stride(10)
                .concurrency(5),
            &w,
        );
        if run.wait_timeout(Duration::from_secs(60)).is_none() {
            run.stop();
            panic!(
                "round {round}: the run hung with {} of 6000 ops started",
                w.starts().len()
            );
        }
        let mut cycles: Vec<u64> = w.starts().iter().map(|s| s.0).collect();
        cycles.sort_unstable();
        assert_eq!(cycles, (0..6000).collect::<Vec<_>>(), "round {round}");
    }
}
