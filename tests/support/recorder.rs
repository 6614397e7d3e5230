//! A driver named `recorder` whose ops log when they start, for the tests that
//! pin where an activity's ops start (its arrivals, its scope) through
//! `Drivers::start` on a manual-clock engine.
#![allow(dead_code)]

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use paceline::{
    Control, Driver, DriverError, Drivers, Engine, ManualClock, OpError, OpPlan, OpRunner, Outcome,
    ParamOverrides, WorkerContext, Workload,
};

/// A gate an op waits at until the test opens it (`true`, then `notify_all`).
pub type Gate = Arc<(Mutex<bool>, Condvar)>;

/// The `recorder` driver: each op logs (cycle, the engine clock's time at the
/// op's start); the op of cycle `stall.0`, if any, then takes `stall.1`, the
/// others no time; cycle 0's op waits at `gate`, if any, until it opens.
#[derive(Clone, Default)]
pub struct Recorder {
    /// (cycle, start) of every op, in the order they started.
    pub log: Arc<Mutex<Vec<(u64, u64)>>>,
    pub stall: Option<(u64, Duration)>,
    pub gate: Option<Gate>,
}

impl Recorder {
    /// One whose op of `cycle` takes `took` on the engine's clock.
    pub fn stalling(cycle: u64, took: Duration) -> Self {
        Self {
            stall: Some((cycle, took)),
            ..Self::default()
        }
    }

    /// One whose op of cycle 0 waits until `gate` opens.
    pub fn gated(gate: Gate) -> Self {
        Self {
            gate: Some(gate),
            ..Self::default()
        }
    }

    /// The (cycle, start) log so far, in cycle order.
    pub fn sorted_log(&self) -> Vec<(u64, u64)> {
        let mut log = self.log.lock().unwrap().clone();
        log.sort();
        log
    }
}

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
        self.0.log.lock().unwrap().push((cycle, self.1.now()));
        if let (Some(g), 0) = (&self.0.gate, cycle) {
            let mut open = g.0.lock().unwrap();
            while !*open {
                open = g.1.wait(open).unwrap();
            }
        }
        if let Some((at, d)) = self.0.stall
            && at == cycle
        {
            self.1.sleep(d);
        }
        Ok(())
    }
}

/// Starts `yaml` (read as `name`, with the command line's `pairs` over it)
/// with `rec` registered, on a manual-clock engine; the run, under way.
pub fn start(name: &str, yaml: &str, pairs: &[(&str, &str)], rec: &Recorder) -> Control {
    let mut drivers = Drivers::builtin();
    drivers.register(rec.clone());
    let loader = drivers.loader();
    let activity = loader.from_str(yaml, name).expect("valid");
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
    drivers
        .start(
            &Engine::with_clock(ManualClock::new()),
            &activity,
            &overrides,
        )
        .expect("starts")
}

/// Runs `yaml` (read as `name`, with `pairs` over it) with `rec` to its end on
/// a manual-clock engine: the (cycle, start) log in cycle order, and the run's
/// control.
pub fn run_with(
    name: &str,
    yaml: &str,
    pairs: &[(&str, &str)],
    rec: Recorder,
) -> (Vec<(u64, u64)>, Control) {
    let run = start(name, yaml, pairs, &rec);
    assert_eq!(run.wait(), Outcome::Completed);
    (rec.sorted_log(), run)
}
