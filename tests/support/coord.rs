//! What the shared-schedule tests share: a schedule's `Coordinate` on a test
//! server (or the fault proxy in front of one), and a workload that counts the
//! runs of every cycle.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use paceline::{Coordinate, OpError, OpRunner, WorkerContext, Workload};

/// The schedule `name` on the store at `url` (`redis://127.0.0.1:PORT`).
pub fn at(url: &str, name: &str) -> Coordinate {
    format!("{url}/{name}").parse().expect("a valid URL")
}

/// Counts the runs of every cycle (`0..n`); as a workload, ops that take no
/// time.
#[derive(Clone)]
pub struct Count(Arc<Mutex<Vec<u32>>>);

impl Count {
    pub fn new(n: u64) -> Self {
        Self(Arc::new(Mutex::new(vec![0; n as usize])))
    }

    /// Counts one run of `cycle`.
    pub fn add(&self, cycle: u64) {
        self.0.lock().unwrap()[cycle as usize] += 1;
    }

    /// Cycles not run once: (never run, run more than once).
    pub fn wrong(&self) -> (usize, usize) {
        let v = self.0.lock().unwrap();
        (
            v.iter().filter(|&&n| n == 0).count(),
            v.iter().filter(|&&n| n > 1).count(),
        )
    }
}

impl Workload for Count {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(self.clone()))
    }
}

impl OpRunner for Count {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        self.add(cycle);
        Ok(())
    }
}
