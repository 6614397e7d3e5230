//! A run's `duration` (issue 27): the activity ends by itself once its time is up,
//! as `Outcome::Elapsed`, exactly at its deadline on the manual clock; cycles that
//! end first end it as completed; a pause or a ramp does not stop the clock.

use paceline::{
    ActivityConfig, Clock, Engine, Event, MAX_CYCLE, ManualClock, OpError, OpRunner, Outcome,
    RateSpec, WorkerContext, Workload,
};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[path = "support/takes.rs"]
mod takes;
use takes::Takes;

const MS: u64 = 1_000_000;

fn unbounded(alias: &str) -> ActivityConfig {
    ActivityConfig::new(alias).cycles(0..MAX_CYCLE)
}

#[test]
fn a_paced_run_ends_at_its_deadline_with_every_slot_before_it() {
    let clock = ManualClock::new();
    let engine = Engine::with_clock(clock.clone());
    let run = engine
        .start(
            unbounded("a")
                .rate(RateSpec::new(1000.0))
                .duration(Duration::from_secs(1)),
            Takes(Duration::from_micros(300)),
        )
        .unwrap();
    assert_eq!(run.wait(), Outcome::Elapsed);
    let t = run.snapshot();
    // Slots at 0, 1 ms, ..., 999 ms ran; the slot at 1 s is the deadline's.
    assert_eq!(t.ops(), 1000);
    assert_eq!(t.wait().max(), 0);
    assert_eq!(clock.now(), 1000 * MS);
    let notes: Vec<String> = run
        .timeline()
        .iter()
        .filter_map(|e| match &e.event {
            Event::Note(n) => Some(format!("{} {n}", e.at)),
            _ => None,
        })
        .collect();
    assert_eq!(notes, [format!("{} ran its duration (1s)", 1000 * MS)]);
}

/// Each worker's set-up (opening its connections) takes `0` of the engine's clock;
/// its ops take none.
struct SetUp(Duration);

impl Workload for SetUp {
    fn runner(&self, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        ctx.sleep(self.0);
        Takes(Duration::ZERO).runner(ctx)
    }
}

/// Regression (session 12): the duration counted from before set-up, so a 10 s run
/// whose connections took 300 ms ran 9.7 s of schedule. It counts from the schedule's
/// first slot, where the metrics' window starts: 1 s at 1000/s after 300 ms of set-up
/// is the slots at 300 ms, 301 ms, ..., 1299 ms, and the run ends at 1.3 s.
#[test]
fn the_duration_counts_from_the_first_slot_not_from_before_set_up() {
    let clock = ManualClock::new();
    let engine = Engine::with_clock(clock.clone());
    let run = engine
        .start(
            unbounded("s")
                .rate(RateSpec::new(1000.0))
                .duration(Duration::from_secs(1)),
            SetUp(Duration::from_millis(300)),
        )
        .unwrap();
    assert_eq!(run.wait(), Outcome::Elapsed);
    assert_eq!(run.snapshot().ops(), 1000);
    let t = run.metrics().totals();
    assert_eq!(t.setup_nanos(), 300 * MS);
    assert_eq!((t.start(), t.end()), (300 * MS, 1300 * MS));
    assert_eq!(clock.now(), 1300 * MS);
    let notes: Vec<String> = run
        .timeline()
        .iter()
        .filter_map(|e| match &e.event {
            Event::Note(n) => Some(format!("{} {n}", e.at)),
            _ => None,
        })
        .collect();
    assert_eq!(notes, [format!("{} ran its duration (1s)", 1300 * MS)]);
}

/// A run whose schedule never begins within its duration (here a set-up longer than
/// it) still ends at its duration after the launch, with no op run.
#[test]
fn a_run_whose_schedule_never_began_ends_at_its_duration() {
    let clock = ManualClock::new();
    let engine = Engine::with_clock(clock.clone());
    let run = engine
        .start(
            unbounded("n")
                .rate(RateSpec::new(1000.0))
                .duration(Duration::from_millis(200)),
            SetUp(Duration::from_millis(300)),
        )
        .unwrap();
    assert_eq!(
        run.wait_timeout(Duration::from_secs(30)),
        Some(Outcome::Elapsed)
    );
    assert_eq!(run.snapshot().ops(), 0);
}

#[test]
fn an_unpaced_run_finishes_the_op_in_flight_at_its_deadline() {
    let clock = ManualClock::new();
    let engine = Engine::with_clock(clock.clone());
    let run = engine
        .start(
            unbounded("u").duration(Duration::from_secs(1)),
            Takes(Duration::from_micros(300)),
        )
        .unwrap();
    assert_eq!(run.wait(), Outcome::Elapsed);
    // 3333 ops end at 999.9 ms; the 3334th, under way at the deadline, finishes.
    assert_eq!(run.snapshot().ops(), 3334);
    assert_eq!(clock.now(), 1_000_200_000);
}

#[test]
fn cycles_that_end_first_complete_the_run() {
    let engine = Engine::with_clock(ManualClock::new());
    let run = engine
        .start(
            ActivityConfig::new("c")
                .cycles(0..100)
                .rate(RateSpec::new(1000.0))
                .duration(Duration::from_secs(1)),
            Takes(Duration::from_micros(300)),
        )
        .unwrap();
    assert_eq!(run.wait(), Outcome::Completed);
    assert_eq!(run.snapshot().ops(), 100);
}

#[test]
fn the_deadline_counts_paused_time_and_ends_a_paused_run() {
    let clock = ManualClock::new();
    let engine = Engine::with_clock(clock.clone());
    let (reached_tx, reached) = channel();
    let (go, go_rx) = channel();
    let gate = Gate(Arc::new(Mutex::new(Some((reached_tx, go_rx)))));
    let run = engine
        .start(unbounded("p").duration(Duration::from_secs(10)), gate)
        .unwrap();
    // The op of cycle 3 holds the worker until the run is paused.
    reached.recv().unwrap();
    run.pause().unwrap();
    go.send(()).unwrap();
    while run.status().completed < 4 {
        std::thread::yield_now();
    }
    // Paused, nothing moves the clock; the test does.
    clock.set(10_000 * MS);
    assert_eq!(
        run.wait_timeout(Duration::from_secs(30)),
        Some(Outcome::Elapsed)
    );
    assert_eq!(run.snapshot().ops(), 4);
}

/// Ops take no time; the op of cycle 3 tells the test it is there and waits for
/// its go.
struct Gate(Hook);
struct GateRunner(Hook);

/// The hook's two ends, as the op sees them: (tell the test, wait for go).
type Hook = Arc<Mutex<Option<(Sender<()>, Receiver<()>)>>>;

impl Workload for Gate {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(GateRunner(self.0.clone())))
    }
}

impl OpRunner for GateRunner {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        if cycle == 3 {
            let hook = self.0.lock().unwrap().take();
            if let Some((reached, go)) = hook {
                reached.send(()).unwrap();
                go.recv().unwrap();
            }
        }
        Ok(())
    }
}

#[test]
fn expire_ends_a_running_activity_as_elapsed() {
    let engine = Engine::new();
    let run = engine
        .start(
            unbounded("e").rate(RateSpec::new(100.0)),
            Takes(Duration::ZERO),
        )
        .unwrap();
    run.expire();
    assert_eq!(
        run.wait_timeout(Duration::from_secs(30)),
        Some(Outcome::Elapsed)
    );
    // Nothing changes a finished run.
    run.expire();
    assert_eq!(run.outcome(), Some(Outcome::Elapsed));
}

#[test]
fn a_real_clock_run_ends_near_its_deadline() {
    let engine = Engine::new();
    let begun = std::time::Instant::now();
    let run = engine
        .start(
            // One slot a minute: the deadline must not wait for the next slot.
            unbounded("r")
                .rate(RateSpec::new(1.0 / 60.0))
                .duration(Duration::from_millis(300)),
            Takes(Duration::ZERO),
        )
        .unwrap();
    assert_eq!(
        run.wait_timeout(Duration::from_secs(30)),
        Some(Outcome::Elapsed)
    );
    let took = begun.elapsed();
    assert!(took >= Duration::from_millis(290), "{took:?}");
    assert!(took < Duration::from_secs(20), "{took:?}");
}

#[test]
fn a_zero_duration_is_refused_with_a_fix() {
    let err = Engine::new()
        .start(
            unbounded("z").duration(Duration::ZERO),
            Takes(Duration::ZERO),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("duration"), "{err}");
    assert!(err.contains("30s"), "{err}");
}
