//! The mean target across `threads` and scope changes, on the manual clock.

use super::*;
use paceline::{
    ActivityConfig, Engine, MAX_CYCLE, ManualClock, OpError, OpRunner, RateSpec, WorkerContext,
    Workload,
};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Ops of no time; the one at cycle `at` applies `change` to the run.
#[derive(Clone)]
struct ChangeAt {
    at: u64,
    change: fn(&Control),
    control: Arc<OnceLock<Control>>,
}

struct Runner(ChangeAt);

impl OpRunner for Runner {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        if cycle == self.0.at {
            while self.0.control.get().is_none() {
                std::thread::yield_now();
            }
            (self.0.change)(self.0.control.get().unwrap());
        }
        Ok(())
    }
}

impl Workload for ChangeAt {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(Runner(self.clone())))
    }
}

/// Runs `config` for 4 s on the manual clock with `change` at cycle `at`; the
/// mean target the reports judge the whole run against.
fn mean_target_of(config: ActivityConfig, at: u64, change: fn(&Control)) -> f64 {
    let engine = Engine::with_clock(ManualClock::new());
    let w = ChangeAt {
        at,
        change,
        control: Arc::default(),
    };
    let config = config.cycles(0..MAX_CYCLE).duration(Duration::from_secs(4));
    let c = engine.start(config, w.clone()).unwrap();
    let _ = w.control.set(c.clone());
    c.wait();
    let _ = c.snapshot();
    let t = c.totals();
    let info = info_of(&c);
    mean_target(&c, &info, t.start(), t.end()).unwrap()
}

#[test]
fn regression_h7_threads_raised_mid_run_in_thread_scope_weigh_by_their_time() {
    // 500/s a thread, 1 thread, then 3 from cycle 510 (1.02 s): 500/s for
    // 1.02 s and 1500/s for 2.98 s, a mean of 1245/s. Before, the end's 3
    // threads counted for the whole run: 1500/s, a false FAIL at 83 %.
    let m = mean_target_of(
        ActivityConfig::new("t")
            .threads(1)
            .rate(RateSpec::parse("500,1.1,thread").unwrap()),
        510,
        |c| c.set_threads(3).unwrap(),
    );
    assert!((m / 1245.0 - 1.0).abs() < 0.001, "{m}");
}

#[test]
fn regression_h7_a_scope_change_mid_run_weighs_by_its_time() {
    // 1000/s on 2 threads in activity scope, then `1000,1.1,thread` at cycle
    // 1000 (1 s): 1000/s for 1 s and 2000/s for 3 s, a mean of 1750/s.
    // Before: 2000/s, a false FAIL at 87 %.
    let m = mean_target_of(
        ActivityConfig::new("s")
            .threads(2)
            .rate(RateSpec::new(1000.0)),
        1000,
        |c| {
            c.set_rate(RateSpec::parse("1000,1.1,thread").unwrap())
                .unwrap()
        },
    );
    assert!((m / 1750.0 - 1.0).abs() < 0.001, "{m}");
}
