//! Ops in flight on one async worker: the per-worker state its op tasks share,
//! the op itself (first-poll and end readings, retries, the error policy,
//! recording: [`RunOp`], a hand-written future reused op after op, with the
//! runner's [`OpSlot`] in it), and the activity-wide in-flight gauge.

use super::opset::{Op, OpFuture};
use crate::engine::async_op::{AsyncOpRunner, LocalFuture, OpSlot};
use crate::engine::motor::since;
use crate::engine::phase::{PAUSED, RUNNING};
use crate::engine::policy::ErrorAction;
use crate::engine::runtime::Shared;
use crate::engine::source::Input;
use crate::engine::workload::{OpError, WorkerContext};
use crate::metrics::Recorder;
use crate::nanos::Nanos;
use crate::sync::threads::{Arc, AtomicBool, AtomicU64, Ordering};
use crossbeam_utils::CachePadded;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll};

/// The activity's ops in flight, for the cap and the reports.
///
/// Ground rules: every field is a counter or a gauge; no field publishes other
/// memory, so every access is `Relaxed`. `now` is raised by a compare-and-swap
/// that never passes `limit` (the activity's cap is exact) and lowered by the
/// worker whose op ended (or whose reserved unit went unused). `running` is
/// raised by the worker whose op started and lowered as it ends; the maxima
/// follow it, not `now`. `interval_max` is swapped to `running` by the reader
/// of an interval (the one reporting loop); `run_max` only grows. The time workers
/// spent at their share of the cap ("full") is `full_closed` for periods that
/// ended, plus, for the `open` periods under way, `open x now - open_since`
/// (the sum of their starts): a reader sees a period while it lasts, not only
/// once it ends. The three words are read one after the other, so a reading that
/// races a period's start or end may be off by that one period's part; it is
/// clamped to the window.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    /// The activity's cap (`concurrency`).
    pub(crate) limit: AtomicU64,
    /// The thread count asked for (each worker's share is limit / threads,
    /// rounded up).
    pub(crate) threads: AtomicU64,
    /// No `concurrency` was given: the cap is the thread count.
    follows_threads: AtomicBool,
    /// Units of the cap taken: ops started and not ended, and units reserved
    /// for an op that waits for its slot.
    pub(crate) now: AtomicU64,
    /// Ops started and not ended (what the maxima count).
    running: AtomicU64,
    interval_max: AtomicU64,
    run_max: AtomicU64,
    full_closed: AtomicU64,
    open: AtomicU64,
    open_since: AtomicU64,
    /// The full time already handed to an interval.
    full_taken: AtomicU64,
}

/// What a reader of the gauge gets.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct FlightReading {
    /// The cap.
    pub(crate) limit: u64,
    /// The most ops in flight at once.
    pub(crate) max: u64,
    /// Worker-time at the worker's share of the cap, in ns.
    pub(crate) full_nanos: u64,
}

impl InFlight {
    /// A gauge for a cap of `limit` over `threads`; without a `concurrency` the
    /// cap follows the thread count (`follows`).
    pub(crate) fn new(limit: u64, threads: u64, follows: bool) -> Self {
        let f = Self::default();
        f.limit.store(limit, Ordering::Relaxed);
        f.threads.store(threads, Ordering::Relaxed);
        f.follows_threads.store(follows, Ordering::Relaxed);
        f
    }

    /// The thread count changed.
    pub(crate) fn set_threads(&self, n: u64) {
        self.threads.store(n, Ordering::Relaxed);
        if self.follows_threads.load(Ordering::Relaxed) {
            self.limit.store(n, Ordering::Relaxed);
        }
    }

    /// The cap, when it was given (`concurrency`, or a change of it) rather than
    /// following the thread count.
    pub(crate) fn given_limit(&self) -> Option<u64> {
        (!self.follows_threads.load(Ordering::Relaxed)).then(|| self.limit.load(Ordering::Relaxed))
    }

    /// Sets the cap; returns the one before.
    pub(crate) fn set_limit(&self, n: u64) -> u64 {
        self.follows_threads.store(false, Ordering::Relaxed);
        self.limit.swap(n, Ordering::Relaxed)
    }

    /// One worker's share of the cap: limit / threads, rounded up, at least 1.
    pub(crate) fn share(&self) -> u64 {
        let limit = self.limit.load(Ordering::Relaxed).max(1);
        let threads = self.threads.load(Ordering::Relaxed).max(1);
        limit.div_ceil(threads).max(1)
    }

    /// Takes one unit of the activity's cap; false when it is all in use.
    fn reserve(&self) -> bool {
        let limit = self.limit.load(Ordering::Relaxed).max(1);
        let mut cur = self.now.load(Ordering::Relaxed);
        loop {
            if cur >= limit {
                return false;
            }
            match self
                .now
                .compare_exchange_weak(cur, cur + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(v) => cur = v,
            }
        }
    }

    fn release(&self) {
        self.now.fetch_sub(1, Ordering::Relaxed);
    }

    /// An op started on a unit [`reserve`](Self::reserve) took: the maxima
    /// count ops started, never a unit held for an op still waiting for its
    /// slot (regression, session 17's audit M10: "at most 3 of 3" when 2 ran
    /// at once).
    fn began(&self) {
        let n = self.running.fetch_add(1, Ordering::Relaxed) + 1;
        self.interval_max.fetch_max(n, Ordering::Relaxed);
        self.run_max.fetch_max(n, Ordering::Relaxed);
    }

    /// An op counted by [`began`](Self::began) ended (or was cancelled).
    fn ended(&self) {
        self.running.fetch_sub(1, Ordering::Relaxed);
    }

    fn full_began(&self, at: Nanos) {
        self.open_since.fetch_add(at, Ordering::Relaxed);
        self.open.fetch_add(1, Ordering::Relaxed);
    }

    fn full_ended(&self, since: Nanos, at: Nanos) {
        self.open.fetch_sub(1, Ordering::Relaxed);
        self.open_since.fetch_sub(since, Ordering::Relaxed);
        self.full_closed
            .fetch_add(at.saturating_sub(since), Ordering::Relaxed);
    }

    /// Full worker-time up to `now` (pacer time).
    fn full_at(&self, now: Nanos) -> u64 {
        let closed = self.full_closed.load(Ordering::Relaxed) as u128;
        let open = self.open.load(Ordering::Relaxed) as u128;
        let since = self.open_since.load(Ordering::Relaxed) as u128;
        (closed + (open * now as u128).saturating_sub(since)).min(u64::MAX as u128) as u64
    }

    /// The interval's figures at `now` (pacer time); the next interval's maximum
    /// starts from the ops in flight now.
    pub(crate) fn take_interval(&self, now: Nanos) -> FlightReading {
        let full = self.full_at(now);
        let before = self.full_taken.fetch_max(full, Ordering::Relaxed);
        FlightReading {
            limit: self.limit.load(Ordering::Relaxed),
            max: self
                .interval_max
                .swap(self.running.load(Ordering::Relaxed), Ordering::Relaxed),
            full_nanos: full.saturating_sub(before),
        }
    }
}

/// The cycles of one stride and how many of its ops are still in flight: the
/// stride is reported finished to the input once none is.
pub(crate) struct StrideBook {
    pub(crate) start: u64,
    /// The first cycle not started.
    pub(crate) dispatched_to: Cell<u64>,
    pub(crate) outstanding: Cell<u64>,
    /// The lowest cycle whose op was cancelled, if any.
    pub(crate) first_cancelled: Cell<Option<u64>>,
    /// No more cycles of it will be started.
    pub(crate) closed: Cell<bool>,
    /// Its cycles that ran were reported to the input.
    reported: Cell<bool>,
}

impl StrideBook {
    pub(crate) fn new(start: u64) -> Rc<Self> {
        Rc::new(Self::fresh(start))
    }

    /// `book`, forgotten (reported, and held by no op), as a new book of a
    /// stride from `start`; a new one when something still holds it.
    pub(crate) fn reuse(mut book: Rc<Self>, start: u64) -> Rc<Self> {
        match Rc::get_mut(&mut book) {
            Some(b) => {
                *b = Self::fresh(start);
                book
            }
            None => Self::new(start),
        }
    }

    fn fresh(start: u64) -> Self {
        Self {
            start,
            dispatched_to: Cell::new(start),
            outstanding: Cell::new(0),
            first_cancelled: Cell::new(None),
            closed: Cell::new(false),
            reported: Cell::new(false),
        }
    }

    /// Reports the cycles that ran to `input` (a shared schedule records them),
    /// once, as soon as the stride is settled: when its last op ends (or is
    /// cancelled), wherever the worker is then. Waiting for the worker's loop
    /// would hold a shared schedule's claim open while the worker waits in the
    /// input for more cycles (the store answers "wait" to everyone until the
    /// claim is finished): a deadlock. Returns whether it is reported.
    pub(crate) fn report(&self, input: &Input) -> bool {
        if self.reported.get() {
            return true;
        }
        match self.settled() {
            Some(ran) => {
                self.reported.set(true);
                input.finished(ran);
                true
            }
            None => false,
        }
    }

    /// The cycles that ran, once the stride is settled.
    pub(crate) fn settled(&self) -> Option<std::ops::Range<u64>> {
        (self.closed.get() && self.outstanding.get() == 0).then(|| {
            let end = self
                .first_cancelled
                .get()
                .unwrap_or(self.dispatched_to.get());
            self.start..end
        })
    }
}

/// What one async worker's op tasks share.
pub(crate) struct Worker {
    pub(crate) shared: Arc<Shared>,
    pub(crate) ctx: WorkerContext,
    pub(crate) runner: Box<dyn AsyncOpRunner>,
    pub(crate) rec: RefCell<Recorder>,
    pub(crate) in_flight: Cell<u64>,
    /// When this worker's in-flight count reached its share, while it is there.
    full_since: Cell<Option<Nanos>>,
    /// The latest op's first-poll reading, and the latest end reading.
    pub(crate) last_start: Cell<Nanos>,
    pub(crate) last_end: Cell<Nanos>,
    done: Arc<CachePadded<AtomicU64>>,
    count: Cell<u64>,
    /// Ops that ended, for the next ones (see [`Worker::op`]): boxed, since
    /// the box itself is what the worker's set holds and gives back.
    #[allow(clippy::vec_box)]
    spare: RefCell<Vec<Box<RunOp>>>,
}

impl Worker {
    pub(crate) fn new(
        shared: Arc<Shared>,
        ctx: WorkerContext,
        runner: Box<dyn AsyncOpRunner>,
        rec: Recorder,
        done: Arc<CachePadded<AtomicU64>>,
    ) -> Rc<Self> {
        let now = shared.pacer.now();
        Rc::new(Self {
            count: Cell::new(done.load(Ordering::Relaxed)),
            shared,
            ctx,
            runner,
            rec: RefCell::new(rec),
            in_flight: Cell::new(0),
            full_since: Cell::new(None),
            last_start: Cell::new(now),
            last_end: Cell::new(now),
            done,
            spare: RefCell::new(Vec::new()),
        })
    }

    /// Whether this worker may start another op: under its share and under the
    /// activity's cap.
    pub(crate) fn has_room(&self) -> bool {
        self.in_flight.get() < self.shared.flight.share()
            && self.shared.flight.now.load(Ordering::Relaxed)
                < self.shared.flight.limit.load(Ordering::Relaxed)
    }

    /// Whether this worker is at its share of the cap.
    pub(crate) fn at_share(&self) -> bool {
        self.in_flight.get() >= self.shared.flight.share()
    }

    /// Whether a drive for room at the cap ends: room came, a retire, a
    /// change of the run's state, or (a drive begun at the worker's share,
    /// `at_share`) the worker is under its share again: another worker may
    /// have taken the unit its op's end freed, and only a drive that polls
    /// sees the activity's cap free again.
    pub(crate) fn room_wait_ends(&self, at_share: bool, retire: &AtomicBool) -> bool {
        self.has_room()
            || (at_share && self.in_flight.get() < self.shared.flight.share())
            || retire.load(Ordering::Relaxed)
            || self.shared.state.load(Ordering::Relaxed) != RUNNING
    }

    /// Takes a unit of the cap for an op about to start; false when none is free.
    pub(crate) fn reserve(&self) -> bool {
        self.in_flight.get() < self.shared.flight.share() && self.shared.flight.reserve()
    }

    /// Gives back a unit taken by [`reserve`](Self::reserve) for an op that did
    /// not start.
    pub(crate) fn unreserve(&self) {
        self.shared.flight.release();
    }

    fn op_began(&self) {
        self.shared.flight.began();
        let n = self.in_flight.get() + 1;
        self.in_flight.set(n);
        if n >= self.shared.flight.share() && self.full_since.get().is_none() {
            let now = self.shared.pacer.now();
            self.full_since.set(Some(now));
            self.shared.flight.full_began(now);
        }
    }

    fn op_ended(&self, at: Nanos) {
        self.in_flight.set(self.in_flight.get() - 1);
        self.shared.flight.ended();
        self.shared.flight.release();
        if let Some(since) = self.full_since.take() {
            self.shared.flight.full_ended(since, at);
        }
        self.last_end.set(at);
    }

    /// The op of `cycle`, counted in flight, for the driver to start (its
    /// first poll reads its start). `slot` is its slot (`None` unpaced),
    /// `call` when room last came at the cap (or the worker last went on after
    /// a checkpoint): the slot's lateness up to then is queueing, the rest
    /// dispatch. A unit of the cap must have been reserved.
    ///
    /// The op is one of the worker's [`RunOp`]s, reused: its box (and the
    /// runner's [`OpSlot`] in it) came back from an op that ended, or is made
    /// here when every one is in flight (the worker has as many as it had
    /// ops in flight at once).
    pub(crate) fn op(
        self: &Rc<Self>,
        cycle: u64,
        slot: Option<i64>,
        call: Nanos,
        book: &Rc<StrideBook>,
    ) -> Op {
        self.op_began();
        book.outstanding.set(book.outstanding.get() + 1);
        let guard = OpGuard {
            w: self.clone(),
            book: book.clone(),
            cycle,
            ended: false,
            start: None,
        };
        let mut op = self.spare.borrow_mut().pop().unwrap_or_else(|| {
            Box::new(RunOp {
                w: Rc::downgrade(self),
                runner: RunnerOp::of(&*self.runner),
                live: None,
            })
        });
        op.live = Some(Live {
            g: guard,
            slot,
            call,
            tries: 0,
            held: 0,
            hold: None,
        });
        Box::into_pin(op)
    }
}

/// Accounts for an op when it ends or is dropped unfinished (cancelled).
struct OpGuard {
    w: Rc<Worker>,
    book: Rc<StrideBook>,
    cycle: u64,
    ended: bool,
    /// The op's first-poll reading once taken: a cancelled op did start.
    start: Option<Nanos>,
}

impl Drop for OpGuard {
    fn drop(&mut self) {
        self.book.outstanding.set(self.book.outstanding.get() - 1);
        if !self.ended {
            let first = self.book.first_cancelled.get();
            self.book
                .first_cancelled
                .set(Some(first.map_or(self.cycle, |c| c.min(self.cycle))));
            let mut rec = self.w.rec.borrow_mut();
            rec.set_op(self.w.shared.op_of(self.cycle));
            rec.error_named("cancelled");
            if let Some(s) = self.start {
                rec.set_start(s.saturating_add(self.w.shared.pacer_offset));
                rec.started_unrecorded();
            }
            drop(rec);
            let now = self.w.shared.pacer.now();
            self.w.op_ended(now);
        }
        // The last op of a closed stride reports it (after a cancelled cycle is
        // marked: it and the ones after it did not run).
        self.book.report(&self.w.shared.input);
    }
}

/// The runner's side of one op slot: its own [`OpSlot`] (no allocation per
/// op), or, for a runner without one, the future
/// [`start`](AsyncOpRunner::start) boxes per op.
enum RunnerOp {
    Slot(OpSlot),
    Boxed(Option<LocalFuture<Result<(), OpError>>>),
}

impl RunnerOp {
    /// The runner's slot, if it gives one (a panic in `op_slot` is taken as
    /// none: its `start` meets the same fault and counts it).
    fn of(runner: &dyn AsyncOpRunner) -> Self {
        match catch_unwind(AssertUnwindSafe(|| runner.op_slot())) {
            Ok(Some(s)) => RunnerOp::Slot(s),
            _ => RunnerOp::Boxed(None),
        }
    }

    /// Starts the op of `cycle`; a panic in the runner's code is an error of
    /// kind `panic`, the op's result.
    fn start(&mut self, runner: &dyn AsyncOpRunner, cycle: u64) -> Result<(), OpError> {
        let started = catch_unwind(AssertUnwindSafe(|| match self {
            RunnerOp::Slot(s) => s.start(cycle),
            RunnerOp::Boxed(f) => *f = Some(runner.start(cycle)),
        }));
        started.map_err(|p| panicked(&*p))
    }

    /// Polls the op started last, a panic in it contained as an error of kind
    /// `panic` (the op is dropped).
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), OpError>> {
        let polled = catch_unwind(AssertUnwindSafe(|| match self {
            RunnerOp::Slot(s) => s.poll(cx),
            RunnerOp::Boxed(Some(f)) => {
                let out = f.as_mut().poll(cx);
                if out.is_ready() {
                    *self = RunnerOp::Boxed(None);
                }
                out
            }
            RunnerOp::Boxed(None) => Poll::Ready(Err(OpError::new(
                "no op",
                "an op was polled before it started",
            ))),
        }));
        match polled {
            Ok(p) => p,
            Err(p) => {
                self.clear();
                Poll::Ready(Err(panicked(&*p)))
            }
        }
    }

    /// Drops the op under way, if any (a panic in its drop is contained).
    fn clear(&mut self) {
        let _ = catch_unwind(AssertUnwindSafe(|| match self {
            RunnerOp::Slot(s) => s.clear(),
            RunnerOp::Boxed(f) => drop(f.take()),
        }));
    }
}

/// One op slot of a worker: the engine's op (the first-poll reading, its
/// attempts, the end reading, the record) around the runner's, polled by the
/// worker's set as a hand-written future, so that its box and the runner's
/// [`OpSlot`] serve the slot's next op: as it ends, the set gives it back
/// ([`OpFuture::release`]) to its worker's spares. It holds its worker only
/// weakly once it ended (a spare holds no worker).
pub(crate) struct RunOp {
    w: Weak<Worker>,
    runner: RunnerOp,
    /// The op under way.
    live: Option<Live>,
}

/// The op under way in a [`RunOp`].
struct Live {
    g: OpGuard,
    slot: Option<i64>,
    call: Nanos,
    /// Retries made.
    tries: u32,
    /// Time held while paused before a retry (not service).
    held: Nanos,
    /// A retry waiting while the run is paused, with the error it retries.
    hold: Option<Hold>,
}

/// A retry's wait while the run is paused (see [`Live::hold`]).
struct Hold {
    since: Nanos,
    error: OpError,
    /// The 1 ms nap under way, if any.
    nap: Option<LocalFuture<Nanos>>,
}

impl OpFuture for RunOp {
    fn poll_op(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let Some(live) = this.live.as_mut() else {
            return Poll::Ready(());
        };
        let w = live.g.w.clone();
        let shared = &w.shared;
        let cycle = live.g.cycle;
        if live.g.start.is_none() {
            // The first poll: the op's start.
            let start = shared.pacer.now();
            w.last_start.set(start);
            live.g.start = Some(start);
            if let Some(s) = live.slot {
                shared.pacer.slot_used(s, start);
            }
            if let Err(e) = this.runner.start(&*w.runner, cycle) {
                // As a failed attempt: the policy looks at it.
                if this.failed(&w, e) {
                    return Poll::Ready(());
                }
            }
        }
        loop {
            let live = this.live.as_mut().expect("an op under way");
            if let Some(hold) = live.hold.as_mut() {
                if let Some(nap) = hold.nap.as_mut() {
                    if nap.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    hold.nap = None;
                }
                match shared.state.load(Ordering::Relaxed) {
                    RUNNING => {
                        live.held += shared.pacer.now().saturating_sub(hold.since);
                        live.hold = None;
                        live.tries += 1;
                        w.rec.borrow_mut().retry();
                        if let Err(e) = this.runner.start(&*w.runner, cycle) {
                            // As a failed attempt: the policy looks at it below.
                            if this.failed(&w, e) {
                                return Poll::Ready(());
                            }
                        }
                        continue;
                    }
                    PAUSED => {
                        let now = w.ctx.now();
                        hold.nap = Some(w.ctx.sleep_until_async(now + 1_000_000));
                        continue;
                    }
                    _ => {
                        // Stopping: the error stands, and stops nothing more.
                        let e = live.hold.take().expect("a hold").error;
                        {
                            let mut rec = w.rec.borrow_mut();
                            rec.set_op(shared.op_of(cycle));
                            rec.error_with(e.kind(), e.message());
                        }
                        return this.ended(&w, Err(e), true);
                    }
                }
            }
            match this.runner.poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) => return this.ended(&w, Ok(()), false),
                Poll::Ready(Err(e)) => {
                    if this.failed(&w, e) {
                        return Poll::Ready(());
                    }
                }
            }
        }
    }

    fn release(self: Pin<Box<Self>>) {
        let mut op = Pin::into_inner(self);
        // Ended, or its poll panicked: then its guard counts it cancelled
        // here, and the runner's op (if any) is dropped.
        op.live = None;
        op.runner.clear();
        if let Some(w) = op.w.upgrade() {
            w.spare.borrow_mut().push(op);
        }
    }
}

impl RunOp {
    /// An attempt failed with `e`: the policy retries it (after a hold while
    /// paused: returns false, the caller polls on) or not (the op ended:
    /// returns true).
    fn failed(&mut self, w: &Rc<Worker>, e: OpError) -> bool {
        let live = self.live.as_mut().expect("an op under way");
        if !w.shared.config.errors.retries_again(&e, live.tries) {
            {
                let mut rec = w.rec.borrow_mut();
                rec.set_op(w.shared.op_of(live.g.cycle));
                rec.error_with(e.kind(), e.message());
            }
            let _ = self.ended(w, Err(e), false);
            return true;
        }
        live.hold = Some(Hold {
            since: w.shared.pacer.now(),
            error: e,
            nap: None,
        });
        false
    }

    /// The op ended with `result` (`cut_short`: a retry the run's stop cut
    /// short, which stops nothing): the end reading, the record, the error
    /// policy.
    fn ended(&mut self, w: &Rc<Worker>, result: Result<(), OpError>, cut_short: bool) -> Poll<()> {
        let Some(mut live) = self.live.take() else {
            return Poll::Ready(());
        };
        let shared = &w.shared;
        let start = live.g.start.unwrap_or_else(|| shared.pacer.now());
        let end = shared.pacer.now();
        let service = end.saturating_sub(start).saturating_sub(live.held);
        {
            let mut rec = w.rec.borrow_mut();
            rec.set_op(shared.op_of(live.g.cycle));
            rec.set_start(start.saturating_add(shared.pacer_offset));
            match live.slot {
                Some(s) => {
                    let wait = since(start, s);
                    let queue = since(live.call, s).min(wait);
                    rec.record_split(queue, wait - queue, service);
                }
                None => rec.record(0, service),
            }
        }
        let n = w.count.get() + 1;
        w.count.set(n);
        w.done.store(n, Ordering::Relaxed);
        live.g.ended = true;
        w.op_ended(end);
        if let Err(e) = result {
            if !cut_short && shared.config.errors.action(&e) == ErrorAction::Stop {
                shared.fail(format!("cycle {}: {e}", live.g.cycle), Some(e.kind()));
            }
        }
        drop(live);
        Poll::Ready(())
    }
}

fn panicked(p: &(dyn std::any::Any + Send)) -> OpError {
    OpError::new(
        "panic",
        format!("op panicked: {}", crate::engine::motor::panic_message(p)),
    )
}

/// Polls an op's future, turning a panic into an error of kind `panic`.
pub(crate) struct Caught<T>(pub(crate) LocalFuture<Result<T, OpError>>);

impl<T> Future for Caught<T> {
    type Output = Result<T, OpError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx))) {
            Ok(p) => p,
            Err(p) => Poll::Ready(Err(panicked(&*p))),
        }
    }
}
