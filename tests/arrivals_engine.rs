//! `arrivals: poisson` reaches the engine (audit of issue 22, gap 5): an
//! activity's params, or the command line's pairs, run through
//! [`Drivers::start`] on the manual clock, and the ops start at the pinned
//! seed's slots, which are not the uniform ones.
//!
//! tests/pace_poisson.rs pins the limiter's slots; this file pins the wiring
//! from the param to the engine's pacer, so a run that silently paced a
//! Poisson activity uniformly fails here.

use paceline::{
    Driver, DriverError, Drivers, Engine, ManualClock, OpError, OpPlan, OpRunner, Outcome,
    ParamOverrides, WorkerContext, Workload,
};
use std::sync::{Arc, Mutex};

/// Seed 42 at 1000/s, as tests/pace_poisson.rs pins it (`PINNED_SEED_42`).
const PINNED_SEED_42: [u64; 8] = [
    0, 1_977_466, 3_339_983, 4_918_277, 5_744_188, 8_597_478, 8_778_002, 11_007_010,
];

/// A driver whose ops log (cycle, the engine clock's time at the op's start).
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(u64, u64)>>>);

struct RecorderRun(Recorder, WorkerContext);

impl Driver for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn workload(&self, _: Arc<OpPlan>) -> Result<Box<dyn Workload>, DriverError> {
        Ok(Box::new(self.clone()))
    }
}

impl Workload for Recorder {
    fn runner(&self, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(RecorderRun(self.clone(), ctx.clone())))
    }
}

impl OpRunner for RecorderRun {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        self.0.0.lock().unwrap().push((cycle, self.1.now()));
        Ok(())
    }
}

/// Runs `yaml` with the command line's `pairs` over it through the drivers'
/// start, on one thread of a manual-clock engine; the start time of each
/// cycle, in cycle order.
fn starts(yaml: &str, pairs: &[(&str, &str)]) -> Vec<u64> {
    let rec = Recorder::default();
    let mut drivers = Drivers::builtin();
    drivers.register(rec.clone());
    let loader = drivers.loader();
    let activity = loader.from_str(yaml, "arrivals.yaml").expect("valid");
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let overrides = if pairs.is_empty() {
        ParamOverrides::default()
    } else {
        loader
            .overrides(&pairs, Some("recorder"))
            .expect("valid pairs")
    };
    let run = drivers
        .start(
            &Engine::with_clock(ManualClock::new()),
            &activity,
            &overrides,
        )
        .expect("starts");
    assert_eq!(run.wait(), Outcome::Completed);
    let mut log = rec.0.lock().unwrap().clone();
    log.sort();
    assert_eq!(
        log.iter().map(|&(c, _)| c).collect::<Vec<_>>(),
        (0..8).collect::<Vec<u64>>()
    );
    log.into_iter().map(|(_, at)| at).collect()
}

const UNIFORM: [u64; 8] = [
    0, 1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000, 6_000_000, 7_000_000,
];

#[test]
fn poisson_arrivals_in_the_params_start_the_ops_at_the_seeds_slots() {
    let yaml = "params: {driver: recorder, threads: 1, cycles: 8, rate: 1000, \
                arrivals: poisson, seed: 42}\nops: {a: x}\n";
    assert_eq!(starts(yaml, &[]), PINNED_SEED_42);
    // Another seed, other slots.
    let other = starts(&yaml.replace("seed: 42", "seed: 43"), &[]);
    assert_ne!(other, PINNED_SEED_42);
    assert_eq!(other[0], 0);
}

#[test]
fn poisson_arrivals_from_the_command_line_start_the_ops_at_the_seeds_slots() {
    let yaml = "params: {driver: recorder, threads: 1, cycles: 8, rate: 1000}\nops: {a: x}\n";
    // Without arrivals, the slots are a millisecond apart.
    assert_eq!(starts(yaml, &[]), UNIFORM);
    assert_eq!(
        starts(yaml, &[("arrivals", "poisson"), ("seed", "42")]),
        PINNED_SEED_42
    );
    // The command line's `uniform` wins over the params' `poisson`.
    let poisson = yaml.replace("rate: 1000", "rate: 1000, arrivals: poisson, seed: 42");
    assert_eq!(starts(&poisson, &[("arrivals", "uniform")]), UNIFORM);
}
