//! The async runner: one worker thread with many ops in flight.
//!
//! Each worker thread owns a tokio `current_thread` runtime, a `LocalSet` for
//! the tasks its drivers spawn, and its own set of ops in flight (`opset`: a
//! slab of op futures with a ready queue, polled by the worker's drives and
//! starts, no tokio task per op) ([`idle::Driver`]), and its
//! [`AsyncOpRunner`](crate::AsyncOpRunner), with its connections: nothing moves
//! between threads, so an op runs on the thread that took its slot. The loop is the sync motor's, with "run the op" replaced by
//! "start the op":
//!
//! ```text
//! take a cycle ─► check flags ─► room under the cap? ─► acquire a slot ─► first poll ─► (next cycle)
//!                 (retire,       no: drive the ops      (the pacer waits     (start)
//!                  paused,       until one ends         through the driver:     │
//!                  stopping)     (its end = `call`)     IO keeps moving)        ▼
//!                                                                 … op ends: read (end), record
//!                                                                   wait = start - slot
//!                                                                   service = end - start
//! ```
//!
//! - **At the slot, exactly**: the pacer (local or the shared schedule) waits for
//!   the slot through [`idle::DrivingClock`], which drives the worker's runtime
//!   (timerfd deadline, then the strategy's spin tail) instead of sleeping the
//!   thread; the op's future is polled for the first time in the same call that
//!   got the slot, and its start is the reading taken at that first poll.
//! - **The cap keeps late slots in order**: with its share of `concurrency` in
//!   flight the worker takes no slot until an op ends; the pacer then hands the
//!   late slots out in order (the same rule as a sync worker busy with its op),
//!   so their waits grow and show the backlog (`queue` = the time from the slot
//!   to when room came). Under the cap nothing holds a slot back: whatever
//!   lateness it has is the worker's own (`dispatch`), never queueing.
//! - **Pause**: nothing new starts; the worker drives its ops in flight to their
//!   end, then waits at the checkpoint. **Retire** (fewer threads): it gives the
//!   rest of its stride back, lets its ops end and leaves. **Stop**: it starts
//!   nothing more, lets its ops run until the stop grace passes
//!   ([`ActivityConfig::stop_grace`](crate::ActivityConfig::stop_grace)), then
//!   cancels the rest, each counted as an error of kind `cancelled`.
//! - A stride is reported finished to the input (a shared schedule records it)
//!   as soon as its ops have all ended, by its last op's end (not at the
//!   worker's next turn: a worker waiting in a shared schedule's input for more
//!   cycles would hold its own claim open); a cancelled op's cycle and the ones
//!   after it in its stride are not.

mod call;
mod flight;
pub(crate) mod idle;
mod opset;
#[cfg(target_os = "linux")]
mod timerfd;

pub(crate) use flight::InFlight;

use super::motor;
use super::phase::{PAUSED, RUNNING, STOPPING};
use super::runtime::setup::{SetUp, UnlessStopped};
use super::runtime::{Next, Shared};
use super::seam::Slot;
use super::workload::WorkerContext;
use crate::nanos::{self, Nanos};
use crate::sync::threads::{Arc, AtomicBool, AtomicU64, Ordering};
use crossbeam_utils::CachePadded;
use flight::{Caught, StrideBook, Worker};
use idle::{Driver, Wake};
use std::collections::VecDeque;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

/// One async worker thread.
pub(crate) struct AsyncMotor {
    w: Rc<Worker>,
    driver: idle::Installed,
    /// The strides not yet forgotten, oldest first.
    books: VecDeque<Rc<StrideBook>>,
    /// How many books the last look at all of them kept.
    books_kept: usize,
    /// Books forgotten, for the next strides (no allocation per stride).
    spare_books: Vec<Rc<StrideBook>>,
    /// When this worker first saw the run stopping.
    stop_seen: Option<Nanos>,
}

impl AsyncMotor {
    pub(crate) fn run(
        shared: Arc<Shared>,
        index: usize,
        retire: Arc<AtomicBool>,
        done: Arc<CachePadded<AtomicU64>>,
    ) {
        let (_departure, ctx) = motor::begin(&shared, index);
        let driver = match Driver::install(shared.clock.clone()) {
            Ok(d) => d,
            Err(e) => return shared.could_not_start(index, e),
        };
        let share = shared.flight.share() as usize;
        let runner = match motor::guarded("while starting a worker", || {
            shared.workload.async_runner(&ctx, share)
        }) {
            // A stop abandons the set-up where it waits (`runtime::setup`).
            Ok(Some(f)) => match driver.block_on(UnlessStopped::new(&shared.signal, Caught(f))) {
                SetUp::Done(r) => r,
                SetUp::Stopped => {
                    // Whatever the set-up spawned ends here too.
                    driver.cancel_all();
                    return;
                }
            },
            Ok(None) => {
                return shared.could_not_start(
                    index,
                    "the workload has no async runner (drop `concurrency`)",
                );
            }
            Err(e) => Err(e),
        };
        let runner = match runner {
            Ok(r) => r,
            Err(e) => return shared.could_not_start(index, e),
        };
        let rec = shared.metrics.recorder();
        let w = Worker::new(shared.clone(), ctx, runner, rec, done);
        let mut motor = AsyncMotor {
            w,
            driver,
            books: VecDeque::new(),
            books_kept: 0,
            spare_books: Vec::new(),
            stop_seen: None,
        };
        motor.drive(&retire);
        motor.land();
        let fin = match motor::guarded("in its runner's finish", || motor.w.runner.finish()) {
            Ok(f) => motor.driver.block_on(Caught(f)),
            Err(e) => Err(e),
        };
        motor::finished(&shared, index, &mut motor.w.rec.borrow_mut(), fin);
        // Whatever the runner's finish spawned and left behind ends here.
        motor.driver.cancel_all();
        motor.settle_all_books();
        // The recorder (in the worker) hands its data to the hub as it drops,
        // before the departure can end the run.
        drop(motor);
    }

    /// Runs strides until the input is dry, the worker retires, or the run stops.
    fn drive(&mut self, retire: &AtomicBool) {
        let shared = self.w.shared.clone();
        let stride = shared.config.stride;
        let mut call = shared.pacer.now();
        loop {
            self.settle_books();
            let Some(range) = shared.input.take(stride) else {
                if shared.leave_dry(self.w.ctx.index()) {
                    return;
                }
                continue;
            };
            let book = match self.spare_books.pop() {
                Some(b) => StrideBook::reuse(b, range.start),
                None => StrideBook::new(range.start),
            };
            self.books.push_back(book.clone());
            let go_on = self.stride(range, &book, retire, &mut call);
            book.closed.set(true);
            book.report(&shared.input);
            if !go_on {
                return;
            }
        }
    }

    /// Starts the ops of `range`; returns whether the worker goes on.
    fn stride(
        &mut self,
        range: Range<u64>,
        book: &Rc<StrideBook>,
        retire: &AtomicBool,
        call: &mut Nanos,
    ) -> bool {
        let shared = self.w.shared.clone();
        let pacer = &shared.pacer;
        let mut cycle = range.start;
        while cycle < range.end {
            if retire.load(Ordering::Relaxed) || shared.state.load(Ordering::Relaxed) != RUNNING {
                match self.checkpoint(retire, cycle..range.end) {
                    Next::Go => {}
                    Next::Leave => return false,
                }
                *call = pacer.now();
            }
            if !self.w.reserve() {
                // At the cap: drive the ops until one ends (or something changes);
                // room came when it ended.
                let before = pacer.now();
                let w = self.w.clone();
                let at_share = self.w.at_share();
                let wake = room_wake(&shared, at_share);
                self.driver
                    .drive_woken(None, wake, &|| w.room_wait_ends(at_share, retire));
                self.room_came(before, call);
                continue;
            }
            let slot = if shared.paced.load(Ordering::Relaxed) {
                let w = self.w.clone();
                let got = pacer.acquire_unless(|| {
                    // Paused with ops in flight: give up, so that the checkpoint
                    // drives them to their end instead of holding them.
                    retire.load(Ordering::Relaxed) || w.in_flight.get() > 0
                });
                match got {
                    Slot::At(s) => {
                        if retire.load(Ordering::Relaxed) {
                            pacer.slot_not_used(true);
                            self.w.unreserve();
                            match self.checkpoint(retire, cycle..range.end) {
                                Next::Go => {
                                    *call = pacer.now();
                                    continue;
                                }
                                Next::Leave => return false,
                            }
                        }
                        Some(s)
                    }
                    Slot::GaveUp => {
                        self.w.unreserve();
                        self.drain_while(&|| shared.state.load(Ordering::Relaxed) == PAUSED);
                        match self.checkpoint(retire, cycle..range.end) {
                            Next::Go => {
                                *call = pacer.now();
                                continue;
                            }
                            Next::Leave => return false,
                        }
                    }
                    Slot::Stopped => {
                        self.w.unreserve();
                        shared.abandon(cycle..range.end);
                        return false;
                    }
                    Slot::Lost(why) => {
                        self.w.unreserve();
                        shared.fail(why, Some("shared-schedule"));
                        return false;
                    }
                }
            } else {
                None
            };
            // No op starts once the run's duration is over (as on the sync
            // motor): the run elapses, and the checkpoint above hands the rest
            // of the stride back on the next turn.
            if shared.pacer_deadline().is_some_and(|d| pacer.now() >= d)
                || shared.time_up_before_begun()
            {
                if slot.is_some() {
                    pacer.slot_not_used(false);
                }
                self.w.unreserve();
                shared.elapse();
                continue;
            }
            shared.schedule_began(slot);
            let op = self.w.op(cycle, slot, *call, book);
            cycle += 1;
            book.dispatched_to.set(cycle);
            // `call` stays when room last came (or the worker last went on after
            // a checkpoint), for every op after this one too: a slot already due
            // then waited for room, and its lateness up to then is queueing, the
            // rest dispatch; a slot due after it gets no queueing (`since` is 0),
            // so under its cap the worker's own lateness (busy with other ops'
            // completions, a late wake-up) is dispatch, never queueing.
            // (It was this op's start: a worker late to one slot made the next
            // slot's lateness "queueing", and the verdict blamed the server;
            // issue 21's done-when run. It was then zeroed here: the rest of a
            // backlog started when room came read as dispatch, and the verdict
            // blamed the generator; session 16's audit, H2.)
            if self.w.has_room() {
                self.driver.start(op);
            } else {
                // This start fills the cap: the drive for room that the loop's
                // next turn would begin follows in the same runtime entry (one
                // `block_on` per op at the cap, not two). Room that came by the
                // start's own pass (an op's end) is no wait, as at the loop's top.
                let before = pacer.now();
                let w = self.w.clone();
                let at_share = self.w.at_share();
                let wake = room_wake(&shared, at_share);
                if self
                    .driver
                    .start_then_drive(op, wake, &|| w.room_wait_ends(at_share, retire))
                {
                    self.room_came(before, call);
                }
            }
        }
        true
    }

    /// A drive for room ended: room came at this worker's op end, or (the
    /// activity's cap freed by another worker) when the drive saw it.
    fn room_came(&mut self, before: Nanos, call: &mut Nanos) {
        let end = self.w.last_end.get();
        let pacer = &self.w.shared.pacer;
        *call = (*call).max(if end >= before { end } else { pacer.now() });
        self.settle_books();
    }

    /// The sync motor's checkpoint, after driving the ops in flight to their end
    /// while paused.
    fn checkpoint(&mut self, retire: &AtomicBool, rest: Range<u64>) -> Next {
        let shared = self.w.shared.clone();
        if !retire.load(Ordering::Relaxed) {
            self.drain_while(&|| shared.state.load(Ordering::Relaxed) == PAUSED);
        }
        shared.checkpoint(self.w.ctx.index(), retire, rest)
    }

    /// Drives the ops in flight until none is left or `cond` no longer holds.
    fn drain_while(&mut self, cond: &dyn Fn() -> bool) {
        let w = self.w.clone();
        let signal = self.w.shared.signal.clone();
        while self.w.in_flight.get() > 0 && cond() {
            // `cond` is the run's state: its changes come with the signal.
            self.driver.drive_woken(None, Wake::On(&signal), &|| {
                w.in_flight.get() == 0 || !cond()
            });
            self.settle_books();
        }
    }

    /// The worker is leaving: its ops in flight run to their end; once the run is
    /// stopping, until the stop grace has passed, then the rest are cancelled.
    fn land(&mut self) {
        let shared = self.w.shared.clone();
        let grace = nanos::from_duration(shared.config.stop_grace_period());
        let w = self.w.clone();
        while self.w.in_flight.get() > 0 {
            if shared.state.load(Ordering::Relaxed) == STOPPING {
                // On the engine's clock, as the driver's deadlines are.
                let seen = *self.stop_seen.get_or_insert_with(|| shared.clock.now());
                let deadline = seen.saturating_add(grace);
                let now = self
                    .driver
                    .drive(Some(deadline), &|| w.in_flight.get() == 0);
                if now >= deadline && self.w.in_flight.get() > 0 {
                    self.driver.cancel_all();
                }
            } else {
                // A stop comes with the signal's `stop`.
                self.driver
                    .drive_woken(None, Wake::On(&shared.signal), &|| {
                        w.in_flight.get() == 0 || shared.state.load(Ordering::Relaxed) == STOPPING
                    });
            }
            self.settle_books();
        }
        self.settle_all_books();
    }

    /// Reports the strides whose ops have all ended to the input (each is
    /// reported once, by its last op's end or here), and forgets them, from
    /// the oldest on: strides settle about in the order they began, so this
    /// costs O(1) per stride where a look at every book cost O(in flight) per
    /// op (with stride 1, a book per op in flight). A stride still in flight
    /// keeps the ones behind it until it settles (none is reported late for
    /// it: its last op's end reports each); once they are twice as many as
    /// the last look at all of them left, all are looked at again, so a slow
    /// op holds no more than that.
    fn settle_books(&mut self) {
        let w = self.w.clone();
        let input = &w.shared.input;
        while self.books.front().is_some_and(|b| b.report(input)) {
            if let Some(b) = self.books.pop_front() {
                self.spare_book(b);
            }
        }
        if self.books.len() > 2 * self.books_kept + 64 {
            self.settle_all_books();
        }
    }

    /// [`settle_books`](Self::settle_books) over every stride (and as the
    /// worker leaves).
    fn settle_all_books(&mut self) {
        let w = self.w.clone();
        let input = &w.shared.input;
        let mut kept = VecDeque::with_capacity(self.books.len());
        while let Some(b) = self.books.pop_front() {
            if b.report(input) {
                self.spare_book(b);
            } else {
                kept.push_back(b);
            }
        }
        self.books = kept;
        self.books_kept = self.books.len();
    }

    /// Keeps a forgotten book for a later stride, when no op holds it any
    /// more (its last op's guard is gone), up to as many as a look at all
    /// books lets pile up.
    fn spare_book(&mut self, b: Rc<StrideBook>) {
        if Rc::strong_count(&b) == 1 && self.spare_books.len() < 2 * self.books_kept + 64 {
            self.spare_books.push(b);
        }
    }
}

/// What wakes a drive for room at the cap. At its own share (`at_share`),
/// room comes with its own op's end (which the drive sees) or a change the
/// run's signal announces; under it, the activity's cap frees when another
/// worker's op ends, which wakes no one here: the drive looks every
/// STOP_POLL.
fn room_wake(shared: &Shared, at_share: bool) -> Wake<'_> {
    if at_share {
        Wake::On(&shared.signal)
    } else {
        Wake::Poll
    }
}

/// Whether `workload` has an async runner. Asked once when a run starts, on the
/// starting thread inside a throwaway runtime (so a driver that touches tokio
/// while building the future does not panic); the future is dropped unpolled.
pub(crate) fn has_async_runner(
    workload: &dyn super::workload::Workload,
    alias: &str,
    clock: &Arc<dyn crate::clock::Clock>,
) -> bool {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
    else {
        return false;
    };
    let _g = rt.enter();
    let ctx = WorkerContext::new(0, alias, clock.clone());
    catch_unwind(AssertUnwindSafe(|| {
        workload.async_runner(&ctx, 1).is_some()
    }))
    .unwrap_or(false)
}
