//! The worker's own set of ops in flight: each op's future in a slot of a
//! slab, with a waker of its slot's own and a ready queue the wakers fill,
//! polled by the worker's drives, starts and passes ([`super::idle`]), not a
//! tokio task per op.
//!
//! A task per op (`spawn_local`) cost a task cell (`posix_memalign`: tokio
//! aligns its header past what `malloc` gives, so glibc's per-thread cache
//! never serves it), its binding to the `LocalSet`'s owned list, a
//! `JoinHandle`, and a second poll at its start (the first, the start's own,
//! had no waker of the task's). Here an op's first poll, in its start, is
//! made with its slot's waker, once; the slot and its waker are reused by the
//! next op (a slab grows to the most ops this worker had in flight at once).
//!
//! - **The engine's op keeps its box**: an op is any boxed future, or the
//!   engine's own (`flight::RunOp`), which the set gives back as it ends
//!   ([`OpFuture::release`]) to its worker's spares; the worker's next op
//!   reuses it, with the runner's [`OpSlot`](crate::OpSlot) in it (the
//!   runner's op written over in place). No allocation per op from the engine
//!   or the interface once the worker had its most ops in flight at once
//!   (`tests/async_opbox_slots.rs`,
//!   `a_slot_is_asked_for_once_per_op_in_flight_at_once_and_serves_every_op_after`;
//!   the count per transaction is `benches/pg_callgrind_mallocs.py`'s).
//! - **Ready queue**: a woken op's slot index, pushed once until it is polled
//!   again (its slot's `queued` flag); a pass takes the queue as it is and
//!   polls each op in it; an op woken during the pass is polled by the next.
//!   A wake of a slot whose op ended (a waker kept by a timer or a socket)
//!   polls the slot's next op once for nothing (allowed of any future), or
//!   nothing at all when the slot is free.
//! - **The poller's waker**: whoever polls the set (a drive's `block_on`, a
//!   start's tick) registers its waker; a wake that finds the queue empty wakes
//!   it. Inside the runtime's scheduler (the reactor's dispatch of IO) tokio's
//!   `block_on` waker only sets a flag; from another thread it unparks the
//!   reactor (its eventfd), as a `LocalSet` task woken from there did.
//! - **Budget**: each op is polled outside tokio's cooperative budget
//!   ([`tokio::task::coop::unconstrained`]): the whole set is polled inside one
//!   poll of the `block_on` future, whose budget (128 units) would otherwise be
//!   shared by every op woken at once, and the ops past it would return pending
//!   and wake themselves for nothing. A task of its own had a budget of its
//!   own (128 units per poll); an op has none: tokio has no public way to poll
//!   a future with a fresh budget, so an op that keeps finding its resources
//!   ready (a read loop that never meets `WouldBlock`) runs in one poll until
//!   it yields on its own, holding the worker meanwhile. An op must yield on
//!   its own (the engine's ops wait for their answers);
//!   `an_op_that_finds_its_resources_ready_runs_in_one_poll_without_a_budget`
//!   pins this.
//! - **Wakes tokio defers** (an op's `tokio::task::yield_now()`; a spent
//!   budget) are woken by the runtime only as it parks. Every poll of an
//!   entry's (`block_on`'s) future but the first follows a park; the wakes
//!   deferred in its last poll (the one that returned ready: a start without a
//!   pass, a drive ending on `done` or `until` right after its pass) are
//!   dropped unwoken as the entry returns. Each wake deferred holds a clone of
//!   the op's slot waker, so the set reads, after each poll that leaves an op
//!   pending, the count of its waker's references, and, as the entry returns,
//!   queues each such op whose count fell ([`OpSet::rescue`]): no system call,
//!   and a spurious poll at most when the count fell otherwise (a clone
//!   dropped without a wake, or one whose wake queued it already). Residual
//!   case: a clone made in between by someone who holds no wake of the op's
//!   own (another thread cloning a waker it kept, as the deferred clone drops)
//!   hides the drop, and that op waits for its next wake.
//! - **A panic** in an op's poll (outside the runner's future, which
//!   `Caught` already contains) ends that op: its future is dropped (counted
//!   `cancelled` by its guard), as tokio drops a task that panicked.
//!
//! Ground rules for the atomics: a slot's `queued` flag is set by a waker
//! (any thread) with `swap(true, AcqRel)` and cleared by the worker with
//! `swap(false, AcqRel)` just before it polls the op. A waker that finds it
//! set pushes nothing: its swap is then ordered before the worker's clear in
//! the flag's modification order, so the worker's Acquire on the clear sees
//! everything the waker wrote before waking (the op's answer), and the poll
//! that follows reads it. The queue itself is under a mutex.

use crate::nanos::Nanos;
use crate::sync::ParkingMutex as Mutex;
use crate::sync::threads::{Arc, AtomicBool, Ordering};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};
use tokio::task::coop::unconstrained;

/// An op as the worker polls it: any `Future<Output = ()>` boxed (tests,
/// one-off ops), or the engine's own reusable op (`flight::RunOp`), whose box
/// goes back to its worker as the op ends.
pub(crate) type Op = Pin<Box<dyn OpFuture>>;

/// What the set does with an op: poll it, and let it go once it ended.
pub(crate) trait OpFuture {
    /// Polls the op, as `Future::poll`.
    fn poll_op(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()>;

    /// The op ended (ready, or its poll panicked): its slot lets go of it.
    /// By default it is dropped; the engine's op keeps its box for the
    /// worker's next op.
    fn release(self: Pin<Box<Self>>) {}
}

impl<F: Future<Output = ()>> OpFuture for F {
    fn poll_op(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.poll(cx)
    }
}

/// What the wakers of one set share.
#[derive(Default)]
struct Ready {
    inner: Mutex<ReadyInner>,
}

#[derive(Default)]
struct ReadyInner {
    /// Slot indices of ops woken and not yet polled, in the order woken.
    queue: VecDeque<usize>,
    /// The waker of the set's latest poller.
    poller: Option<Waker>,
}

/// One slot's waker: queues the slot's index once until the op is polled.
struct SlotWaker {
    index: usize,
    queued: AtomicBool,
    ready: Arc<Ready>,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut r = self.ready.inner.lock();
        r.queue.push_back(self.index);
        // A queue that held entries already woke its poller (or a poller
        // takes them first thing): one wake per batch. Woken after the lock
        // is released: from another thread the wake writes the reactor's
        // eventfd, which the worker's `poll_ready` need not wait behind.
        let poller = if r.queue.len() == 1 {
            r.poller.clone()
        } else {
            None
        };
        drop(r);
        if let Some(p) = poller {
            p.wake();
        }
    }
}

struct Slot {
    op: Option<Op>,
    flag: Arc<SlotWaker>,
    waker: Waker,
    /// The count of `flag`'s references right after the op's latest poll in
    /// this poll of the entry's future (0: not watched; see [`OpSet::rescue`]).
    seen: usize,
}

/// When a pass stops before the queue is empty.
pub(crate) struct Stops<'a> {
    /// Before each op: the wait for a slot whose time has come (`Nanos::MAX`:
    /// none) on `clock`: the start goes first, the rest after it.
    pub(crate) due: Nanos,
    pub(crate) now: &'a dyn Fn() -> Nanos,
    /// After an op ended: the poller's condition (room at the cap) holds.
    pub(crate) done: Option<&'a dyn Fn() -> bool>,
}

/// The ops in flight on one worker (see the module doc).
#[derive(Default)]
pub(crate) struct OpSet {
    slots: RefCell<Vec<Slot>>,
    free: RefCell<Vec<usize>>,
    ready: Arc<Ready>,
    /// The entries a pass took and has not polled yet.
    pass: RefCell<VecDeque<usize>>,
    live: Cell<usize>,
    /// Polls of ops so far.
    polls: Cell<u64>,
    /// Slots whose op returned pending in this poll of the entry's future.
    watch: RefCell<Vec<usize>>,
}

impl OpSet {
    /// Ops in the set (started, not ended).
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        self.live.get()
    }

    /// Polls of ops so far (the discrete-event loop settles on them).
    pub(crate) fn polls(&self) -> u64 {
        self.polls.get()
    }

    /// Puts `op` in a slot and polls it for the first time, with the slot's
    /// waker; an op ready at once leaves the slot free again.
    pub(crate) fn start(&self, op: Op) {
        let index = {
            let mut slots = self.slots.borrow_mut();
            let index = match self.free.borrow_mut().pop() {
                Some(i) => i,
                None => {
                    let index = slots.len();
                    let flag = Arc::new(SlotWaker {
                        index,
                        queued: AtomicBool::new(false),
                        ready: self.ready.clone(),
                    });
                    let waker = Waker::from(flag.clone());
                    slots.push(Slot {
                        op: None,
                        flag,
                        waker,
                        seen: 0,
                    });
                    index
                }
            };
            slots[index].op = Some(op);
            index
        };
        self.live.set(self.live.get() + 1);
        self.poll_slot(index);
    }

    /// Polls the op in slot `index`, if any; returns whether it ended.
    fn poll_slot(&self, index: usize) -> bool {
        let (mut op, waker) = {
            let mut slots = self.slots.borrow_mut();
            let slot = &mut slots[index];
            match slot.op.take() {
                Some(op) => (op, slot.waker.clone()),
                None => return false,
            }
        };
        self.polls.set(self.polls.get() + 1);
        let mut cx = Context::from_waker(&waker);
        let polled = catch_unwind(AssertUnwindSafe(|| {
            let mut op = unconstrained(std::future::poll_fn(|cx| op.as_mut().poll_op(cx)));
            Pin::new(&mut op).poll(&mut cx)
        }));
        let ended = match polled {
            Ok(Poll::Pending) => {
                // The count is read with this poll's own clone dropped: what
                // it holds then is the slot's two and the clones the op gave
                // out (a timer, a socket, tokio's deferred wakes).
                drop(waker);
                let mut slots = self.slots.borrow_mut();
                let slot = &mut slots[index];
                slot.op = Some(op);
                if slot.seen == 0 {
                    self.watch.borrow_mut().push(index);
                }
                slot.seen = Arc::strong_count(&slot.flag);
                return false;
            }
            Ok(Poll::Ready(())) => true,
            // Its guard counts it cancelled as it drops.
            Err(_) => true,
        };
        // Let go of before the slot is free: its guard's accounting may look
        // at the worker, never at this set. A panic there (a hand-written
        // op's `Drop`) is contained as one in its poll: the slot is freed all
        // the same.
        let _ = catch_unwind(AssertUnwindSafe(|| op.release()));
        self.slots.borrow_mut()[index].seen = 0;
        self.free.borrow_mut().push(index);
        self.live.set(self.live.get() - 1);
        ended
    }

    /// Polls the ops woken so far (one pass: those woken during it wait for
    /// the next), registering `cx`'s waker for the next wake. Stops early as
    /// `stops` says; whatever it leaves goes back to the front of the queue
    /// and `cx` is woken for it. Returns the polls made.
    pub(crate) fn poll_ready(&self, cx: &Context<'_>, stops: &Stops<'_>) -> u64 {
        let mut pass = self.pass.borrow_mut();
        {
            let mut r = self.ready.inner.lock();
            if !r.poller.as_ref().is_some_and(|p| p.will_wake(cx.waker())) {
                r.poller = Some(cx.waker().clone());
            }
            if r.queue.is_empty() {
                return 0;
            }
            std::mem::swap(&mut *pass, &mut r.queue);
        }
        drop(pass);
        let before = self.polls.get();
        loop {
            if stops.due != Nanos::MAX && (stops.now)() >= stops.due {
                break;
            }
            let Some(index) = self.pass.borrow_mut().pop_front() else {
                break;
            };
            let flag = self.slots.borrow()[index].flag.clone();
            flag.queued.swap(false, Ordering::AcqRel);
            if self.poll_slot(index) && stops.done.is_some_and(|d| d()) {
                break;
            }
        }
        let mut pass = self.pass.borrow_mut();
        if !pass.is_empty() {
            let mut r = self.ready.inner.lock();
            while let Some(i) = pass.pop_back() {
                r.queue.push_front(i);
            }
            drop(r);
            cx.waker().wake_by_ref();
        }
        self.polls.get() - before
    }

    /// Forgets the ops watched so far: called as each poll of an entry's
    /// future begins (the runtime parked before it, which woke every wake
    /// deferred until then).
    pub(crate) fn watch_from_here(&self) {
        let mut slots = self.slots.borrow_mut();
        for i in self.watch.borrow_mut().drain(..) {
            slots[i].seen = 0;
        }
    }

    /// Right after an entry (`block_on`) returns: queues each op polled in the
    /// entry's last poll whose waker lost a reference since that poll (the
    /// wakes tokio deferred, dropped unwoken with the entry; see the module
    /// doc). Returns how many it queued. The queue is not the poller's to be
    /// woken for: the worker's next entry polls it first thing.
    pub(crate) fn rescue(&self) -> usize {
        let mut slots = self.slots.borrow_mut();
        let mut watch = self.watch.borrow_mut();
        let mut queued = 0;
        for i in watch.drain(..) {
            let slot = &mut slots[i];
            let seen = std::mem::replace(&mut slot.seen, 0);
            if seen == 0 || slot.op.is_none() || Arc::strong_count(&slot.flag) >= seen {
                continue;
            }
            if !slot.flag.queued.swap(true, Ordering::AcqRel) {
                self.ready.inner.lock().queue.push_back(i);
                queued += 1;
            }
        }
        queued
    }

    /// Takes every op out of the set, to be dropped by the caller (outside
    /// the set's borrows: an op's guard reports its stride as it drops).
    pub(crate) fn take_all(&self) -> Vec<Op> {
        let mut out = Vec::with_capacity(self.live.get());
        let mut slots = self.slots.borrow_mut();
        let mut free = self.free.borrow_mut();
        for (i, s) in slots.iter_mut().enumerate() {
            if let Some(op) = s.op.take() {
                out.push(op);
                free.push(i);
            }
        }
        self.live.set(0);
        out
    }
}
