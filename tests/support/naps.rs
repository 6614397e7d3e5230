//! An async workload on the engine's clock, for the async runner's tests:
//! each op logs (cycle, start), calls a hook, then sleeps a latency of its
//! cycle on the worker's timer (`WorkerContext::sleep_async`), so that on the
//! manual clock every start and end is exact. The tests that include it
//! (`#[path = "support/naps.rs"] mod naps;`) add what their own ops do through
//! the hook and the set-up.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use paceline::{AsyncOpRunner, LocalFuture, OpError, OpRunner, WorkerContext, Workload};

/// Async-only ops that sleep `latency(cycle)` on the engine's clock (a
/// workload with no sync runner: the engine must pick the async one).
#[derive(Clone)]
pub struct Naps {
    latency: Arc<dyn Fn(u64) -> Duration + Send + Sync>,
    /// What an op does when it starts, on the worker thread, given its cycle.
    hook: Arc<dyn Fn(u64) + Send + Sync>,
    /// Each worker's set-up (its connections), before its first op.
    setup: Arc<dyn Fn() + Send + Sync>,
    /// (cycle, the engine clock's time at the start) of every op, in the order
    /// they started.
    log: Arc<Mutex<Vec<(u64, u64)>>>,
}

impl Naps {
    /// Ops of cycle `c` that take `latency(c)`; no hook, no set-up.
    pub fn new(latency: impl Fn(u64) -> Duration + Send + Sync + 'static) -> Self {
        Self {
            latency: Arc::new(latency),
            hook: Arc::new(|_| {}),
            setup: Arc::new(|| {}),
            log: Arc::default(),
        }
    }

    /// Calls `h(cycle)` at each op's start, after the log and before its
    /// sleep. By default nothing.
    pub fn hook(mut self, h: impl Fn(u64) + Send + Sync + 'static) -> Self {
        self.hook = Arc::new(h);
        self
    }

    /// Calls `f` in each worker's set-up, before its first op. By default
    /// nothing.
    pub fn setup(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        self.setup = Arc::new(f);
        self
    }

    /// The (cycle, start) log so far, in the order the ops started.
    pub fn starts(&self) -> Vec<(u64, u64)> {
        self.log.lock().unwrap().clone()
    }
}

struct NapsRun(Naps, WorkerContext);

impl AsyncOpRunner for NapsRun {
    fn start(&self, cycle: u64) -> LocalFuture<Result<(), OpError>> {
        self.0.log.lock().unwrap().push((cycle, self.1.now()));
        (self.0.hook)(cycle);
        let sleep = self.1.sleep_async((self.0.latency)(cycle));
        Box::pin(async move {
            sleep.await;
            Ok(())
        })
    }
}

impl Workload for Naps {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Err(OpError::new("async-only", "runs on the async runner"))
    }
    fn async_runner(
        &self,
        ctx: &WorkerContext,
        _: usize,
    ) -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>> {
        let r = NapsRun(self.clone(), ctx.clone());
        let setup = self.setup.clone();
        Some(Box::pin(async move {
            setup();
            Ok(Box::new(r) as Box<dyn AsyncOpRunner>)
        }))
    }
}
