//! The verdict's generator CPU is one activity's: its own worker threads'
//! CPU over its own window (audit p16, M4), on the real clock (the per-thread
//! readings are the machine's).

use paceline::{
    ActivityConfig, CpuMeter, Engine, Figures, MAX_CYCLE, OpError, OpRunner, WorkerContext,
    Workload,
};
use std::time::{Duration, Instant};

/// Each op spins for 2 ms of wall time.
struct Spin;
struct SpinRun;
impl Workload for Spin {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(SpinRun))
    }
}
impl OpRunner for SpinRun {
    fn run(&mut self, _: u64) -> Result<(), OpError> {
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(2) {
            std::hint::spin_loop();
        }
        Ok(())
    }
}

/// Each op sleeps 5 ms (the OS's sleep: no CPU).
struct Nap;
struct NapRun;
impl Workload for Nap {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(NapRun))
    }
}
impl OpRunner for NapRun {
    fn run(&mut self, _: u64) -> Result<(), OpError> {
        std::thread::sleep(Duration::from_millis(5));
        Ok(())
    }
}

/// Regression (audit p16, M4): two activities side by side, one spinning and
/// one sleeping, both read the whole process's CPU over the whole run
/// ("generator cpu 0.34 of 2 cores" for each). Each now reads its own worker
/// threads' CPU: the sleeping one far below the spinning one, and below the
/// process's. Counts, not timings: whatever the load, a thread that sleeps
/// between 5 ms ops uses a small part of what a spinning one gets.
#[test]
#[cfg(target_os = "linux")]
fn each_activity_reads_its_own_worker_threads_cpu() {
    let engine = Engine::new();
    let process = CpuMeter::start();
    let heavy = engine
        .start(
            ActivityConfig::new("heavy").threads(1).cycles(0..MAX_CYCLE),
            Spin,
        )
        .unwrap();
    let light = engine
        .start(
            ActivityConfig::new("light").threads(1).cycles(0..MAX_CYCLE),
            Nap,
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    heavy.stop();
    light.stop();
    heavy.wait();
    light.wait();
    let process_cores = process.cores();
    let (h, l) = (heavy.snapshot(), light.snapshot());
    let (hc, lc) = (h.worker_cpu_nanos().unwrap(), l.worker_cpu_nanos().unwrap());
    assert!(hc > 4 * lc, "heavy {hc} ns, light {lc} ns");
    let fh = Figures::of(&h, None, 1, process_cores, 2);
    let fl = Figures::of(&l, None, 1, process_cores, 2);
    assert!(fh.cpu_of_workers && fl.cpu_of_workers);
    let (hcores, lcores) = (fh.cpu_cores.unwrap(), fl.cpu_cores.unwrap());
    assert!(lcores < hcores, "light {lcores} cores, heavy {hcores}");
    assert!(lcores < 0.2, "light {lcores} cores");
    // The totals (what the final verdict reads) say the same.
    let t = light.totals();
    let lt = Figures::of(&t, None, 1, process_cores, 2);
    assert!(lt.cpu_cores.unwrap() < 0.2, "{lt:?}");
}
