//! What the engine-seam tests (`tests/seam.rs` and `tests/seam/ticketed.rs`)
//! share: the cycles a fake coordinator hands out, a workload that holds ops
//! until the test lets them go, and a generous real-time wait.
#![allow(dead_code)]

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use paceline::{OpError, OpRunner, WorkerContext, Workload};

/// The cycles `0..end`, handed out in order a stride at a time (a
/// `CycleSource`'s `take` and `is_dry`).
pub struct Cycles(Mutex<Range<u64>>);

impl Cycles {
    /// The cycles `0..end`, none taken.
    pub fn new(end: u64) -> Self {
        Self(Mutex::new(0..end))
    }

    /// The next `stride` cycles (fewer at the end), or `None` when all are taken.
    pub fn take(&self, stride: u64) -> Option<Range<u64>> {
        let mut n = self.0.lock().unwrap();
        if n.start >= n.end {
            return None;
        }
        let r = n.start..(n.start + stride).min(n.end);
        n.start = r.end;
        Some(r)
    }

    /// Whether every cycle has been taken.
    pub fn is_dry(&self) -> bool {
        let n = self.0.lock().unwrap();
        n.start >= n.end
    }
}

/// Cycles below `slow` hold until the test opens the gate (`open`); the rest
/// take no time. Counts the ops started and ended.
#[derive(Clone)]
pub struct Held {
    pub slow: u64,
    pub open: Arc<AtomicBool>,
    pub started: Arc<AtomicU64>,
    pub ended: Arc<AtomicU64>,
}

impl Held {
    /// Holds the cycles below `slow` (`u64::MAX`: every op).
    pub fn new(slow: u64) -> Self {
        Self {
            slow,
            open: Default::default(),
            started: Default::default(),
            ended: Default::default(),
        }
    }
}

impl Workload for Held {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(self.clone()))
    }
}

impl OpRunner for Held {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        if cycle < self.slow {
            while !self.open.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        self.ended.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Waits (real time, generous: 30 s) until `f` holds.
pub fn until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}
