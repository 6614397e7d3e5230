//! One worker thread ("motor"): take cycles, wait for a slot, run the op, record.
//!
//! Times come from the pacer's time base (`Pacer::now`: nanoseconds since the
//! local pacer's origin, or the engine's clock for a shared schedule), the same
//! base as a grant's slot. The motor reads the clock
//! once when the op starts: the op's wait is that reading minus the slot, exact
//! whatever the grant's own start says, and its service is the next reading minus
//! it. A pacer that hands a grant out with an old start, or a thread that stalls
//! between the grant and the op, cannot make a wait look shorter than it was.
//!
//! The wait is split in two without another reading: the motor became free to
//! call the pacer at its previous op's end reading (`call`; at its first op, and
//! after a checkpoint, a reading taken there). `queue = min(call - slot, wait)`
//! (0 if the worker was free before the slot) is the lateness spent busy with
//! earlier ops; `dispatch = wait - queue` is the generator's own lateness after
//! the worker was free. `docs/engine.md` ("Queueing and dispatch") has the picture.

use super::phase::{PAUSED, STOPPING};
use super::policy::ErrorAction;
use super::runtime::{Motors, Next, Shared, join_all};
use super::seam::Slot;
use super::workload::{OpError, OpRunner, WorkerContext, Workload};
use crate::metrics::Recorder;
use crate::nanos::Nanos;
use crate::sync::threads::{self, Arc, AtomicBool, AtomicU64, Ordering};
use crossbeam_utils::CachePadded;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::phase::RUNNING;

/// The error kind of an op a stop cut short (one of the engine's own,
/// [`ENGINE_ERROR_KINDS`](super::ENGINE_ERROR_KINDS)).
const CANCELLED: &str = "cancelled";

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
pub(crate) struct Departure {
    pub(crate) shared: Arc<Shared>,
    pub(crate) index: usize,
}

impl Drop for Departure {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.fail(
                format!("worker {} panicked outside an op", self.index),
                Some("panic"),
            );
        }
        self.shared.worker_left();
        self.shared.depart(self.index);
    }
}

/// What every worker does first, sync or async: its departure, accounted for
/// however it leaves (a panic included), and its context.
pub(crate) fn begin(shared: &Arc<Shared>, index: usize) -> (Departure, WorkerContext) {
    shared.worker_joined();
    let departure = Departure {
        shared: shared.clone(),
        index,
    };
    let ctx = WorkerContext::with_signal(
        index,
        shared.alias.clone(),
        shared.clock.clone(),
        shared.signal.clone(),
        shared.pacer.waiting(),
    );
    (departure, ctx)
}

/// Runs `f`, a call into the workload `while` doing something (`"while
/// starting a worker"`), containing a panic: it becomes an error of kind
/// `panic`.
pub(crate) fn guarded<T>(while_: &str, f: impl FnOnce() -> T) -> Result<T, OpError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        OpError::new(
            "panic",
            format!("the workload panicked {while_}: {}", panic_message(&*p)),
        )
    })
}

/// The end of a runner's `finish`, on either runner: a failure is counted, and
/// the error policy decides whether it fails the run, as for an op (issue 25,
/// item 7: a failed final flush). A panic (kind `panic`) is only counted: the
/// run still ends as its ops did (issue 18.3).
pub(crate) fn finished(shared: &Shared, index: usize, rec: &mut Recorder, r: Result<(), OpError>) {
    if let Err(e) = r {
        rec.error_with(e.kind(), e.message());
        let stops = shared.config.errors.action(&e) == ErrorAction::Stop;
        if stops && e.kind() != "panic" {
            shared.fail(format!("worker {index} finishing: {e}"), Some(e.kind()));
        }
    }
}

impl Shared {
    /// The op index cycle `cycle` runs ([`OpTable::op_of`](super::ops::OpTable::op_of)),
    /// or `usize::MAX` (no op) when the activity has no op table.
    #[inline]
    pub(crate) fn op_of(&self, cycle: u64) -> usize {
        self.config
            .ops
            .as_ref()
            .map_or(usize::MAX, |t| t.op_of(cycle))
    }

    /// A worker could not start: the run fails, saying which and why.
    pub(crate) fn could_not_start(&self, index: usize, why: impl std::fmt::Display) {
        self.fail(format!("worker {index} could not start: {why}"), None);
    }
}

impl Motor {
    pub(crate) fn run(
        shared: Arc<Shared>,
        index: usize,
        retire: Arc<AtomicBool>,
        done: Arc<CachePadded<AtomicU64>>,
    ) {
        let (_departure, ctx) = begin(&shared, index);
        // No set-up starts once the run is stopping (`runtime::setup`): a
        // worker started late (a thread change) leaves at once.
        if ctx.is_stopping() {
            return;
        }
        let runner = match guarded_runner(&*shared.workload, &ctx) {
            Ok(r) => r,
            Err(e) => return shared.could_not_start(index, e),
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
        let fin = guarded("in its runner's finish", || runner.finish()).and_then(|r| r);
        finished(&shared, index, &mut rec, fin);
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
        let mut count = done.load(Ordering::Relaxed);
        // When this worker became free to call the pacer: the previous op's end
        // reading, or a fresh reading where it waited outside an op.
        let mut call = shared.pacer.now();
        loop {
            let Some(range) = shared.input.take(stride) else {
                if shared.leave_dry(self.ctx.index()) {
                    return;
                }
                continue;
            };
            let (ran_to, go_on) = self.stride(range.clone(), retire, done, &mut count, &mut call);
            // The cycles before `ran_to` ran (a shared schedule records them; the
            // rest, if any, was given back or is abandoned by a stop).
            shared.input.finished(range.start..ran_to);
            if !go_on {
                return;
            }
        }
    }

    /// Runs the cycles of `range`; returns the first cycle not run and whether the
    /// motor goes on to another stride.
    fn stride(
        &mut self,
        range: Range<u64>,
        retire: &AtomicBool,
        done: &AtomicU64,
        count: &mut u64,
        call: &mut Nanos,
    ) -> (u64, bool) {
        let shared = self.shared.clone();
        let policy = &shared.config.errors;
        let pacer = &shared.pacer;
        let mut cycle = range.start;
        while cycle < range.end {
            if retire.load(Ordering::Relaxed) || shared.state.load(Ordering::Relaxed) != RUNNING {
                match shared.checkpoint(self.ctx.index(), retire, cycle..range.end) {
                    Next::Go => {}
                    Next::Leave => return (cycle, false),
                }
                // A checkpoint may have waited (a pause): free from now on.
                *call = pacer.now();
            }
            let slot = if shared.paced.load(Ordering::Relaxed) {
                // A worker retired while it is blocked by a pause leaves at once
                // (`set_threads` wakes the pacer's waiters), holding no slot.
                match pacer.acquire_unless(|| retire.load(Ordering::Relaxed)) {
                    Slot::At(s) => {
                        // Retired while it waited for the slot (a long wait, or a
                        // pause): it leaves without running one more op, and the
                        // cycle goes back to the input with the rest of the stride;
                        // its slot passes unused. Unless no active worker is left:
                        // then it takes over and runs the op on this slot, which is
                        // used, not missed (a checkpoint of a retired worker never
                        // waits, so the slot is as fresh as it was). Session 15's
                        // review, H1: it gave the slot back first and then ran on it.
                        if retire.load(Ordering::Relaxed) {
                            match shared.checkpoint(self.ctx.index(), retire, cycle..range.end) {
                                Next::Go => {}
                                Next::Leave => {
                                    pacer.slot_not_used(true);
                                    return (cycle, false);
                                }
                            }
                        }
                        Some(s)
                    }
                    Slot::GaveUp => {
                        match shared.checkpoint(self.ctx.index(), retire, cycle..range.end) {
                            Next::Go => {
                                *call = pacer.now();
                                continue;
                            }
                            Next::Leave => return (cycle, false),
                        }
                    }
                    Slot::Stopped => {
                        shared.abandon(cycle..range.end);
                        return (cycle, false);
                    }
                    Slot::Lost(why) => {
                        shared.fail(why, Some("shared-schedule"));
                        return (cycle, false);
                    }
                }
            } else {
                None
            };
            let start = pacer.now();
            // No op starts once the run's duration is over (the clock's wake-up
            // may come a little after the deadline on a busy machine).
            if shared.pacer_deadline().is_some_and(|d| start >= d) || shared.time_up_before_begun()
            {
                if slot.is_some() {
                    pacer.slot_not_used(false);
                }
                shared.elapse();
                return (cycle, false);
            }
            shared.schedule_began(slot);
            if let Some(s) = slot {
                pacer.slot_used(s, start);
            }
            self.rec.set_op(shared.op_of(cycle));
            let mut result = self.attempt(cycle);
            let mut tries = 0;
            let mut held = 0;
            let mut cut_short = false;
            // A failed attempt that is tried again counts as a retry; only the
            // op's last failure counts as an error.
            while let Err(e) = &result {
                if !policy.retries_again(e, tries) {
                    self.rec.error_with(e.kind(), e.message());
                    break;
                }
                match shared.hold_while_paused() {
                    Some(h) => held += h,
                    None => {
                        // Stopping: the op ends here with its failure, and a stop
                        // is not a failure of the run.
                        self.rec.error_with(e.kind(), e.message());
                        cut_short = true;
                        break;
                    }
                }
                tries += 1;
                self.rec.retry();
                result = self.attempt(cycle);
            }
            let end = pacer.now();
            self.rec
                .set_start(start.saturating_add(shared.pacer_offset));
            // An op a stop cut short (its error is `cancelled`, counted above)
            // started but never finished: no times, no success, and its cycle
            // did not run; the stop is no failure of the run. The async runner
            // books an op it drops at a stop so (audit p16, M5). The duration's
            // end is a stop like any other here: an op it cuts short (a `diag`
            // latency the end woke) is cancelled too, never a completed op with
            // the truncated time (`diag`'s
            // `the_duration_s_end_during_the_latency_cancels_the_op_on_the_sync_runner`).
            if let Err(e) = &result
                && e.kind() == CANCELLED
                && self.ctx.is_stopping()
            {
                self.rec.started_unrecorded();
                *call = end;
                return (cycle, false);
            }
            let service = end.saturating_sub(start).saturating_sub(held);
            match slot {
                Some(s) => {
                    // The slot is signed: a shared schedule's slot may be before
                    // this clock's zero, and the wait is then longer than it.
                    let wait = since(start, s);
                    let queue = since(*call, s).min(wait);
                    self.rec.record_split(queue, wait - queue, service);
                }
                None => self.rec.record(0, service),
            }
            *call = end;
            *count += 1;
            done.store(*count, Ordering::Relaxed);
            if let Err(e) = result {
                if cut_short {
                    return (cycle + 1, false);
                }
                if policy.action(&e) == ErrorAction::Stop {
                    shared.fail(format!("cycle {cycle}: {e}"), Some(e.kind()));
                    return (cycle + 1, false);
                }
            }
            cycle += 1;
        }
        (cycle, true)
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

/// What only motors call: checkpoints, leaving, departing (decided under the
/// motors lock; see `runtime/mod.rs`'s ground rules).
impl Shared {
    /// A motor leaves on a stopped slot source with `rest` unrun and not given
    /// back: unless the activity itself is stopping, the stop came from
    /// elsewhere, and the run must not read as completed.
    pub(crate) fn abandon(&self, rest: Range<u64>) {
        if !rest.is_empty() {
            self.abandoned.store(true, Ordering::Relaxed);
        }
    }

    /// Called when a motor's flags say something changed. Returns whether it goes
    /// on; `rest` is the unrun part of its stride, given back if it retires.
    pub(crate) fn checkpoint(&self, index: usize, retire: &AtomicBool, rest: Range<u64>) -> Next {
        loop {
            let generation = self.signal.generation();
            match self.state.load(Ordering::Relaxed) {
                STOPPING => return Next::Leave,
                PAUSED if !retire.load(Ordering::Relaxed) => {
                    self.signal.wait_change(generation);
                    continue;
                }
                _ => {}
            }
            if retire.load(Ordering::Relaxed) {
                let mut m = threads::lock(&self.motors);
                if m.active == 0 {
                    // Nobody else is left to run the rest (the others all left
                    // dry): this motor takes the place of an active one and runs
                    // on until the input is dry.
                    retire.store(false, Ordering::Relaxed);
                    m.active += 1;
                    return Next::Go;
                }
                self.input.give_back(rest);
                Self::mark_leaving(&mut m, index);
                return Next::Leave;
            }
            return Next::Go;
        }
    }

    /// Waits while the run is paused (a retry waits for resume like a new op);
    /// returns how long it waited on the engine's clock, or `None` if the run is
    /// stopping.
    pub(crate) fn hold_while_paused(&self) -> Option<Nanos> {
        let t0 = self.clock.now();
        loop {
            let generation = self.signal.generation();
            match self.state.load(Ordering::Relaxed) {
                RUNNING => return Some(self.clock.now().saturating_sub(t0)),
                PAUSED => self.signal.wait_change(generation),
                _ => return None,
            }
        }
    }

    /// A motor found the input dry: it leaves unless a stride was given back
    /// meanwhile (decided under the motors lock; see the ground rules).
    pub(crate) fn leave_dry(&self, index: usize) -> bool {
        let mut m = threads::lock(&self.motors);
        if !self.input.is_dry() {
            return false;
        }
        Self::mark_leaving(&mut m, index);
        true
    }

    /// Marks motor `index` as leaving, taking it out of the active count.
    fn mark_leaving(m: &mut Motors, index: usize) {
        if let Some(e) = m.list.iter_mut().find(|e| e.index == index) {
            if e.is_active() {
                m.active -= 1;
            }
            e.leaving = true;
        }
    }

    /// A motor is leaving: account for it, end the run if it was the last (in the
    /// same critical section, so no control verb lands in between), and join the
    /// threads of motors that left before it.
    pub(crate) fn depart(&self, index: usize) {
        let mut m = threads::lock(&self.motors);
        if let Some(pos) = m.list.iter().position(|e| e.index == index) {
            let mut e = m.list.swap_remove(pos);
            self.departed
                .fetch_add(e.done.load(Ordering::Relaxed), Ordering::Relaxed);
            if e.is_active() {
                m.active -= 1;
            }
            if let Some(h) = e.handle.take() {
                m.finished.push(h);
            }
        }
        self.drained_if_empty(&mut m);
        let exited = Self::take_exited(&mut m);
        drop(m);
        join_all(exited);
    }
}

/// Builds a runner, containing a panic in the workload's factory.
fn guarded_runner(w: &dyn Workload, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
    guarded("while starting a worker", || w.runner(ctx)).and_then(|r| r)
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

/// Nanoseconds from signed slot `slot` to reading `t` (0 if `t` is before it).
#[inline]
pub(crate) fn since(t: Nanos, slot: i64) -> Nanos {
    let d = i128::from(t) - i128::from(slot);
    d.clamp(0, i128::from(u64::MAX)) as Nanos
}
