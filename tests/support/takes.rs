//! An op that takes a set time on the engine's clock (on a manual clock, its
//! sleep advances the clock), for the engine's tests.
#![allow(dead_code)]

use std::time::Duration;

use paceline::{OpError, OpRunner, WorkerContext, Workload};

/// Each op takes `.0` on the engine's clock.
pub struct Takes(pub Duration);

struct TakesRunner(WorkerContext, Duration);

impl Workload for Takes {
    fn runner(&self, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(TakesRunner(ctx.clone(), self.0)))
    }
}

impl OpRunner for TakesRunner {
    fn run(&mut self, _: u64) -> Result<(), OpError> {
        self.0.sleep(self.1);
        Ok(())
    }
}
