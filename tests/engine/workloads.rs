//! The workloads the engine tests drive: ops that record the cycles they ran
//! and stop at "hook" cycles until the test says go, ops that take a set time
//! on the engine's clock, ops that fail or panic by rule, and scripted ops.

use paceline::{OpError, OpRunner, WorkerContext, Workload};
use std::collections::HashMap;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Records every cycle each runner ran; ops at "hook" cycles tell the test and
/// wait until it says go.
#[derive(Clone, Default)]
pub(crate) struct Recording {
    pub(crate) seen: Arc<Mutex<Vec<u64>>>,
    pub(crate) hooks: Arc<Mutex<HashMap<u64, Hook>>>,
}

impl Workload for Recording {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(RecordingRunner {
            mine: Vec::new(),
            all: self.clone(),
        }))
    }
}

impl Recording {
    /// Makes the op of `cycle` stop and wait; returns (reached, go).
    pub(crate) fn hook(&self, cycle: u64) -> (Receiver<()>, Sender<()>) {
        let (reached_tx, reached_rx) = channel();
        let (go_tx, go_rx) = channel();
        self.hooks
            .lock()
            .unwrap()
            .insert(cycle, (reached_tx, go_rx));
        (reached_rx, go_tx)
    }

    pub(crate) fn sorted(&self) -> Vec<u64> {
        let mut v = self.seen.lock().unwrap().clone();
        v.sort_unstable();
        v
    }
}

struct RecordingRunner {
    mine: Vec<u64>,
    all: Recording,
}

impl OpRunner for RecordingRunner {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        self.mine.push(cycle);
        let hook = self.all.hooks.lock().unwrap().remove(&cycle);
        if let Some((reached, go)) = hook {
            reached.send(()).unwrap();
            go.recv().unwrap();
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), OpError> {
        self.all.seen.lock().unwrap().append(&mut self.mine);
        Ok(())
    }
}

/// A hook's two ends, as the op sees them: (tell the test, wait for go).
type Hook = (Sender<()>, Receiver<()>);

pub(crate) const LONG: Duration = Duration::from_secs(30);

/// An op that takes `service` on the engine's clock.
pub(crate) use crate::takes::Takes;

/// Fails according to a rule; panics at cycles divisible by `panic_every`.
pub(crate) struct Flaky {
    pub(crate) fail_first: u32,
    pub(crate) fail_cycle: Option<u64>,
    pub(crate) panic_every: Option<u64>,
    pub(crate) runners: Arc<Mutex<u32>>,
}
struct FlakyRunner {
    attempts: HashMap<u64, u32>,
    fail_first: u32,
    fail_cycle: Option<u64>,
    panic_every: Option<u64>,
}
impl Workload for Flaky {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        *self.runners.lock().unwrap() += 1;
        Ok(Box::new(FlakyRunner {
            attempts: HashMap::new(),
            fail_first: self.fail_first,
            fail_cycle: self.fail_cycle,
            panic_every: self.panic_every,
        }))
    }
}
impl OpRunner for FlakyRunner {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        if let Some(p) = self.panic_every {
            if cycle % p == p - 1 {
                panic!("test panic at {cycle}");
            }
        }
        if Some(cycle) == self.fail_cycle {
            return Err(OpError::new("fatal", "this cycle always fails"));
        }
        let a = self.attempts.entry(cycle).or_default();
        *a += 1;
        if *a <= self.fail_first {
            return Err(OpError::new("flaky", format!("attempt {a}")));
        }
        Ok(())
    }
}

pub(crate) fn flaky(fail_first: u32, fail_cycle: Option<u64>, panic_every: Option<u64>) -> Flaky {
    Flaky {
        fail_first,
        fail_cycle,
        panic_every,
        runners: Arc::default(),
    }
}

/// A scripted op: what it does for a cycle on a worker.
type ScriptOp = Arc<dyn Fn(&WorkerContext, u64) -> Result<(), OpError> + Send + Sync>;

/// An op per cycle given as a closure over the worker's context; ops at "hook"
/// cycles tell the test and wait until it says go (before running the closure).
/// Counts runners made and runners finished.
#[derive(Clone)]
pub(crate) struct Script {
    pub(crate) op: ScriptOp,
    pub(crate) hooks: Recording,
    pub(crate) made: Arc<Mutex<u32>>,
    pub(crate) finished: Arc<Mutex<u32>>,
    pub(crate) finish_panics: bool,
    pub(crate) drop_panics: bool,
}

impl Script {
    pub(crate) fn new(
        op: impl Fn(&WorkerContext, u64) -> Result<(), OpError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            op: Arc::new(op),
            hooks: Recording::default(),
            made: Arc::default(),
            finished: Arc::default(),
            finish_panics: false,
            drop_panics: false,
        }
    }
}

impl Workload for Script {
    fn runner(&self, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        *self.made.lock().unwrap() += 1;
        Ok(Box::new(ScriptRunner {
            ctx: ctx.clone(),
            script: self.clone(),
        }))
    }
}

struct ScriptRunner {
    ctx: WorkerContext,
    script: Script,
}

impl OpRunner for ScriptRunner {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        let hook = self.script.hooks.hooks.lock().unwrap().remove(&cycle);
        if let Some((reached, go)) = hook {
            reached.send(()).unwrap();
            go.recv().unwrap();
        }
        (self.script.op)(&self.ctx, cycle)
    }

    fn finish(&mut self) -> Result<(), OpError> {
        *self.script.finished.lock().unwrap() += 1;
        if self.script.finish_panics {
            panic!("finish panics");
        }
        Ok(())
    }
}

impl Drop for ScriptRunner {
    fn drop(&mut self) {
        if self.script.drop_panics && !std::thread::panicking() {
            panic!("drop panics");
        }
    }
}
