//! The generator's own scheduling delays: how long its worker threads waited on
//! a CPU run queue (runnable, not running), from `/proc/self/task/TID/schedstat`
//! (its second field, in ns, and its third, the number of times the thread ran,
//! each run after a wait on a run queue; Linux with schedstats, which every
//! distribution kernel has). Its first field, the thread's CPU time in ns, is
//! read with them: the verdict's generator CPU of one activity (audit p16, M4).
//!
//! A worker thread that waits for a CPU delays the ops it starts and the ends it
//! reads: that time lands in the ops' waits and service times. The verdict
//! compares it with the ops' times so that the generator's stalls are never
//! blamed on the system under test (`docs/engine.md`, "The verdict").
//!
//! Only the worker threads count (the threads that start ops and read their
//! ends): a reporter or a store's helper thread waiting for a CPU delays no op.
//! Each worker joins the [`WorkerSched`] book when it starts and leaves it when
//! it ends, taking its last counts with it, so a thread that ends between two
//! readings loses nothing (a sum over `/proc/self/task` loses the counts of every
//! thread that exited, and can fall).

use crate::nanos::Nanos;

/// Run-queue delay summed over this process's live threads, in ns; `None` where
/// `/proc/self/task` cannot be read. Threads that exited take their counts with
/// them, so the sum can fall: take differences with `saturating_sub`.
///
/// ```
/// if cfg!(target_os = "linux") {
///     assert!(paceline::process_run_queue_nanos().is_some());
/// }
/// ```
pub fn process_run_queue_nanos() -> Option<Nanos> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    let mut sum: Nanos = 0;
    let mut any = false;
    for t in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(t.path().join("schedstat")) else {
            continue;
        };
        if let Some(n) = parse_schedstat(&text) {
            sum = sum.saturating_add(n.run_queue);
            any = true;
        }
    }
    any.then_some(sum)
}

/// A thread's scheduler counts: its time on a CPU and its run-queue delay in
/// ns, and how many times it ran (each run follows a wait on a run queue,
/// however short).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SchedCounts {
    /// CPU time (user + system), to the nanosecond: the verdict's
    /// `generator_cpu_cores` of one activity (audit p16, M4).
    pub(crate) on_cpu: Nanos,
    pub(crate) run_queue: Nanos,
    pub(crate) runs: u64,
}

impl SchedCounts {
    fn since(self, before: Self) -> Self {
        Self {
            on_cpu: self.on_cpu.saturating_sub(before.on_cpu),
            run_queue: self.run_queue.saturating_sub(before.run_queue),
            runs: self.runs.saturating_sub(before.runs),
        }
    }

    fn plus(self, o: Self) -> Self {
        Self {
            on_cpu: self.on_cpu.saturating_add(o.on_cpu),
            run_queue: self.run_queue.saturating_add(o.run_queue),
            runs: self.runs.saturating_add(o.runs),
        }
    }
}

/// The counts of a `schedstat` line: `on-CPU-ns run-queue-ns runs`.
fn parse_schedstat(text: &str) -> Option<SchedCounts> {
    let mut w = text.split_ascii_whitespace();
    let on_cpu = w.next()?.parse().ok()?;
    let run_queue = w.next()?.parse().ok()?;
    let runs = w.next().and_then(|r| r.parse().ok()).unwrap_or(0);
    Some(SchedCounts {
        on_cpu,
        run_queue,
        runs,
    })
}

/// The calling thread's id.
fn this_tid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

fn read_tid(tid: i32) -> Option<SchedCounts> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    parse_schedstat(&text)
}

/// The run's worker threads and their counts at the last reading.
#[derive(Debug, Default)]
pub(crate) struct WorkerSched {
    /// Live workers: thread id and counts at the last reading.
    live: Vec<(i32, SchedCounts)>,
    /// What workers that left since the last reading ran up after it.
    gone: SchedCounts,
    /// Whether any reading succeeded (a `/proc` that cannot be read: `None`).
    readable: bool,
}

impl WorkerSched {
    /// The calling thread is a worker from now on.
    pub(crate) fn join(&mut self) {
        let tid = this_tid();
        if let Some(c) = read_tid(tid) {
            self.readable = true;
            self.live.push((tid, c));
        }
    }

    /// The calling thread stops being a worker: what it ran up since the last
    /// reading goes to the next one.
    pub(crate) fn leave(&mut self) {
        let tid = this_tid();
        let Some(i) = self.live.iter().position(|(t, _)| *t == tid) else {
            return;
        };
        let (_, last) = self.live.swap_remove(i);
        if let Some(now) = read_tid(tid) {
            self.gone = self.gone.plus(now.since(last));
        }
    }

    /// The workers' counts since the last call; `None` when none could be read.
    pub(crate) fn take(&mut self) -> Option<SchedCounts> {
        let mut sum = std::mem::take(&mut self.gone);
        for (tid, last) in &mut self.live {
            if let Some(now) = read_tid(*tid) {
                sum = sum.plus(now.since(*last));
                *last = now;
            }
        }
        self.readable.then_some(sum)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_fields_are_the_cpu_time_the_run_queue_delay_and_the_runs() {
        assert_eq!(
            parse_schedstat("123 456 7\n"),
            Some(SchedCounts {
                on_cpu: 123,
                run_queue: 456,
                runs: 7
            })
        );
        assert_eq!(parse_schedstat("123"), None);
    }

    /// Regression (issue 21's done-when run): the run-queue delay was summed
    /// over every thread of the process read at each snapshot, so each thread
    /// that exited between two readings (a lease's short-lived thread, a
    /// retired worker) made the sum fall and the interval read 0. A worker that
    /// leaves hands its counts since the last reading to the next one.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_worker_that_leaves_between_readings_keeps_its_counts() {
        let book = std::sync::Arc::new(std::sync::Mutex::new(WorkerSched::default()));
        let b = book.clone();
        let t = std::thread::spawn(move || {
            b.lock().unwrap().join();
            // Run more than once: each sleep blocks, so the thread is put on
            // its CPU again after it (a `yield_now` with nothing else
            // runnable there returns without a switch: the test once read
            // one run under load).
            for _ in 0..5 {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            b.lock().unwrap().leave();
        });
        t.join().unwrap();
        let got = book.lock().unwrap().take().expect("readable");
        assert!(got.runs > 1, "{got:?}");
        assert!(book.lock().unwrap().live.is_empty());
        // Nothing is counted twice.
        assert_eq!(book.lock().unwrap().take(), Some(SchedCounts::default()));
    }
}
