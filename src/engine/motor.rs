//! One worker thread ("motor"): take cycles, wait for a slot, run the op, record.
//!
//! Times come from the pacer's time base (`RateLimiter::now`, nanoseconds since
//! the pacer's origin), the same base as a grant's slot. The motor reads the clock
//! once when the op starts: the op's wait is that reading minus the slot, exact
//! whatever the grant's own start says, and its service is the next reading minus
//! it. A pacer that hands a grant out with an old start, or a thread that stalls
//! between the grant and the op, cannot make a wait look shorter than it was.

use super::policy::ErrorAction;
use super::runtime::{Next, Shared};
use super::workload::{OpError, OpRunner, WorkerContext, Workload};
use crate::metrics::Recorder;
use crate::sync::threads::{Arc, AtomicBool, AtomicU64, Ordering};
use crossbeam_utils::CachePadded;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::phase::RUNNING;

/// One worker thread's loop.
pub(crate) struct Motor {
    shared: Arc<Shared>,
    ctx: WorkerContext,
    runner: Box<dyn OpRunner>,
    rec: Recorder,
}

/// Accounts for a leaving motor when dropped, so a panic anywhere on the motor's
/// way out (a runner's `finish` or `Drop`, the engine itself) still ends the run
/// and never leaves `wait` hanging.
struct Departure {
    shared: Arc<Shared>,
    index: usize,
}

impl Drop for Departure {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.fail(
                format!("worker {} panicked outside an op", self.index),
                Some("panic"),
            );
        }
        self.shared.depart(self.index);
    }
}

impl Motor {
    pub(crate) fn run(
        shared: Arc<Shared>,
        index: usize,
        retire: Arc<AtomicBool>,
        done: Arc<CachePadded<AtomicU64>>,
    ) {
        let _departure = Departure {
            shared: shared.clone(),
            index,
        };
        let ctx = WorkerContext::with_signal(
            index,
            shared.alias.clone(),
            shared.clock.clone(),
            shared.signal.clone(),
            shared.limiter.waiting(),
        );
        let runner = match guarded_runner(&*shared.workload, &ctx) {
            Ok(r) => r,
            Err(e) => {
                shared.fail(format!("worker {index} could not start: {e}"), None);
                return;
            }
        };
        let rec = shared.metrics.recorder();
        let mut motor = Motor {
            shared: shared.clone(),
            ctx,
            runner,
            rec,
        };
        motor.drive(&retire, &done);
        let Motor {
            mut runner,
            mut rec,
            ..
        } = motor;
        match catch_unwind(AssertUnwindSafe(|| runner.finish())) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => rec.error_named(e.kind()),
            Err(_) => rec.error_named("panic"),
        }
        if catch_unwind(AssertUnwindSafe(move || drop(runner))).is_err() {
            rec.error_named("panic");
        }
        // The recorder hands its data to the hub before the run can finish.
        drop(rec);
    }

    /// Runs strides until the input is dry, the motor retires, or the activity
    /// stops; a failure that stops the activity is recorded through `Shared::fail`.
    fn drive(&mut self, retire: &AtomicBool, done: &AtomicU64) {
        let shared = self.shared.clone();
        let stride = shared.config.stride;
        let policy = shared.config.errors;
        let limiter = &shared.limiter;
        let mut count = done.load(Ordering::Relaxed);
        loop {
            let Some(range) = shared.input.take(stride) else {
                if shared.leave_dry(self.ctx.index()) {
                    return;
                }
                continue;
            };
            let mut cycle = range.start;
            while cycle < range.end {
                if retire.load(Ordering::Relaxed) || shared.state.load(Ordering::Relaxed) != RUNNING
                {
                    match shared.checkpoint(self.ctx.index(), retire, cycle..range.end) {
                        Next::Go => {}
                        Next::Leave => return,
                    }
                }
                let slot = if shared.paced.load(Ordering::Relaxed) {
                    let grant = limiter.acquire();
                    if grant.is_stopped() {
                        return;
                    }
                    // Retired while it waited for the slot (a long wait, or a
                    // pause): it leaves without running one more op, and the
                    // cycle goes back to the input with the rest of the stride.
                    if retire.load(Ordering::Relaxed) {
                        match shared.checkpoint(self.ctx.index(), retire, cycle..range.end) {
                            Next::Go => {}
                            Next::Leave => return,
                        }
                    }
                    Some(grant.scheduled_nanos())
                } else {
                    None
                };
                let start = limiter.now();
                let mut result = self.attempt(cycle);
                let mut tries = 0;
                let mut held = 0;
                let mut cut_short = false;
                while let Err(e) = &result {
                    self.rec.error_named(e.kind());
                    if e.is_fatal() || tries >= policy.retries() {
                        break;
                    }
                    match shared.hold_while_paused() {
                        Some(h) => held += h,
                        None => {
                            // Stopping: the op ends here, and a stop is not a failure.
                            cut_short = true;
                            break;
                        }
                    }
                    tries += 1;
                    self.rec.retry();
                    result = self.attempt(cycle);
                }
                let end = limiter.now();
                let wait = slot.map_or(0, |s| start.saturating_sub(s));
                self.rec
                    .record(wait, end.saturating_sub(start).saturating_sub(held));
                count += 1;
                done.store(count, Ordering::Relaxed);
                if let Err(e) = result {
                    if cut_short {
                        return;
                    }
                    if e.is_fatal() || policy.then() == ErrorAction::Stop {
                        shared.fail(format!("cycle {cycle}: {e}"), Some(e.kind()));
                        return;
                    }
                }
                cycle += 1;
            }
        }
    }

    /// Runs one attempt, containing a panic: the panic becomes an error of kind
    /// `panic` and the runner is replaced by a fresh one (a panic in the old one's
    /// `Drop` is contained too).
    #[inline]
    fn attempt(&mut self, cycle: u64) -> Result<(), OpError> {
        match catch_unwind(AssertUnwindSafe(|| self.runner.run(cycle))) {
            Ok(r) => r,
            Err(payload) => {
                let msg = panic_message(&*payload);
                match guarded_runner(&*self.shared.workload, &self.ctx) {
                    Ok(r) => {
                        let old = std::mem::replace(&mut self.runner, r);
                        if catch_unwind(AssertUnwindSafe(move || drop(old))).is_err() {
                            self.rec.error_named("panic");
                        }
                    }
                    Err(e) => {
                        return Err(OpError::new(
                            "panic",
                            format!("op panicked: {msg}; and the worker could not restart: {e}"),
                        ));
                    }
                }
                Err(OpError::new("panic", format!("op panicked: {msg}")))
            }
        }
    }
}

/// Builds a runner, containing a panic in the workload's factory.
fn guarded_runner(w: &dyn Workload, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
    match catch_unwind(AssertUnwindSafe(|| w.runner(ctx))) {
        Ok(r) => r,
        Err(p) => Err(OpError::new(
            "panic",
            format!(
                "the workload panicked while starting a worker: {}",
                panic_message(&*p)
            ),
        )),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}
