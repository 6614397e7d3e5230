//! The async sibling of [`OpRunner`](super::OpRunner): ops that wait on IO
//! without holding a thread, many in flight on one worker thread.
//!
//! The traits need no executor; the engine's async runner polls them on each
//! worker thread's own tokio `current_thread` runtime inside a `LocalSet`
//! (`docs/engine.md`, "The async runner").

use super::workload::OpError;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future polled on one worker thread's own single-threaded executor (a tokio
/// `current_thread` runtime and its `LocalSet`): not `Send`, never moved across
/// threads, so it may hold `Rc`s and `RefCell`s of the worker's state.
///
/// ```
/// use paceline::{LocalFuture, OpError};
/// use std::rc::Rc;
/// let shared = Rc::new(5u64);
/// let f: LocalFuture<Result<u64, OpError>> = Box::pin(async move { Ok(*shared) });
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// assert_eq!(rt.block_on(f), Ok(5));
/// ```
pub type LocalFuture<T> = Pin<Box<dyn Future<Output = T> + 'static>>;

/// Starts ops on one worker thread; up to the worker's share of the activity's
/// `concurrency` are in flight at once, so [`start`](Self::start) takes `&self`
/// (keep per-worker state such as a connection pool in `Rc`, `RefCell`, `Cell`).
///
/// The engine starts each op at its slot: it calls `start` (or, for a runner
/// that gives op slots, [`op_slot`](Self::op_slot), starts it in its slot's
/// own place: no allocation per op) and polls the future for the first time
/// at once, reading the clock there (the op's wait is that
/// reading minus the slot) and again when the future completes (its service is
/// the end reading minus the first-poll reading). While ops are in flight the
/// worker thread keeps driving their IO and still wakes at the next slot.
///
/// Inside the future, `tokio::net` and `tokio::task::spawn_local` work. Never
/// pace or time anything the engine measures with tokio's timers (they have a
/// 1 ms grain); `tokio::time::timeout` for a driver's own `timeout=` is fine.
///
/// ```
/// use paceline::{AsyncOpRunner, LocalFuture, OpError};
/// use std::cell::Cell;
/// use std::rc::Rc;
///
/// /// Counts its ops; every tenth fails.
/// struct Counting(Rc<Cell<u64>>);
/// impl AsyncOpRunner for Counting {
///     fn start(&self, cycle: u64) -> LocalFuture<Result<(), OpError>> {
///         let count = self.0.clone();
///         Box::pin(async move {
///             count.set(count.get() + 1);
///             if cycle % 10 == 9 { Err(OpError::new("tenth", format!("cycle {cycle}"))) } else { Ok(()) }
///         })
///     }
/// }
///
/// let runner = Counting(Rc::new(Cell::new(0)));
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// assert!(rt.block_on(runner.start(3)).is_ok());
/// assert!(rt.block_on(runner.start(9)).is_err());
/// assert!(rt.block_on(runner.finish()).is_ok());
/// assert_eq!(runner.0.get(), 2);
/// ```
pub trait AsyncOpRunner: 'static {
    /// The op of `cycle`. The engine reads the clock at the future's first poll
    /// (wait = first poll - slot) and when it completes (service = end - first
    /// poll). A future dropped before it completes (a stop's deadline passed) is
    /// counted as cancelled.
    fn start(&self, cycle: u64) -> LocalFuture<Result<(), OpError>>;

    /// A place of its own for the ops that one op slot of the worker runs one
    /// after another (the worker has as many as it had ops in flight at
    /// once): the engine asks for it once per slot, then starts each op of
    /// that slot in it ([`OpSlot::start`]) instead of calling
    /// [`start`](Self::start), and so allocates nothing per op. The ops it
    /// starts must be the ones `start` gives (the engine measures them the
    /// same way). By default, `None`: every op is the future `start` boxes.
    ///
    /// ```
    /// use paceline::{AsyncOpRunner, LocalFuture, OpError, OpSlot};
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    ///
    /// struct Counting(Rc<Cell<u64>>);
    /// impl Counting {
    ///     async fn op(count: Rc<Cell<u64>>, _cycle: u64) -> Result<(), OpError> {
    ///         count.set(count.get() + 1);
    ///         Ok(())
    ///     }
    /// }
    /// impl AsyncOpRunner for Counting {
    ///     fn start(&self, cycle: u64) -> LocalFuture<Result<(), OpError>> {
    ///         Box::pin(Self::op(self.0.clone(), cycle))
    ///     }
    ///     fn op_slot(&self) -> Option<OpSlot> {
    ///         let count = self.0.clone();
    ///         Some(OpSlot::new(move |cycle| Self::op(count.clone(), cycle)))
    ///     }
    /// }
    ///
    /// let runner = Counting(Rc::new(Cell::new(0)));
    /// let mut slot = runner.op_slot().unwrap();
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// for cycle in 0..3 {
    ///     slot.start(cycle);
    ///     assert_eq!(rt.block_on(std::future::poll_fn(|cx| slot.poll(cx))), Ok(()));
    /// }
    /// assert_eq!(runner.0.get(), 3);
    /// ```
    fn op_slot(&self) -> Option<OpSlot> {
        None
    }

    /// Called once when the worker leaves, after its ops in flight ended or were
    /// cancelled: flush, close connections. An error is counted under its kind.
    /// By default, nothing.
    ///
    /// ```
    /// use paceline::{AsyncOpRunner, LocalFuture, OpError};
    /// struct Nop;
    /// impl AsyncOpRunner for Nop {
    ///     fn start(&self, _: u64) -> LocalFuture<Result<(), OpError>> { Box::pin(async { Ok(()) }) }
    /// }
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// assert!(rt.block_on(Nop.finish()).is_ok());
    /// ```
    fn finish(&self) -> LocalFuture<Result<(), OpError>> {
        Box::pin(async { Ok(()) })
    }
}

impl<R: AsyncOpRunner + ?Sized> AsyncOpRunner for Box<R> {
    fn start(&self, cycle: u64) -> LocalFuture<Result<(), OpError>> {
        (**self).start(cycle)
    }
    fn op_slot(&self) -> Option<OpSlot> {
        (**self).op_slot()
    }
    fn finish(&self) -> LocalFuture<Result<(), OpError>> {
        (**self).finish()
    }
}

/// One op slot's place for its ops ([`AsyncOpRunner::op_slot`]): a pinned
/// future of one concrete type, allocated once with the slot and written over
/// in place by each op it starts (`Pin::set`), so that an op costs no
/// allocation. [`new`](Self::new) takes what makes the op of a cycle (an
/// `async fn`'s call, a closure returning an `async` block).
///
/// An op's future is dropped in place as soon as it completes, and by
/// [`clear`](Self::clear) or the next [`start`](Self::start) if it did not.
///
/// ```
/// use paceline::{OpError, OpSlot};
/// let mut slot = OpSlot::new(|cycle| async move {
///     if cycle % 2 == 1 { Err(OpError::new("odd", format!("cycle {cycle}"))) } else { Ok(()) }
/// });
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// slot.start(4);
/// assert!(slot.is_busy());
/// assert_eq!(rt.block_on(std::future::poll_fn(|cx| slot.poll(cx))), Ok(()));
/// assert!(!slot.is_busy());
/// slot.start(5);
/// assert!(rt.block_on(std::future::poll_fn(|cx| slot.poll(cx))).is_err());
/// ```
pub struct OpSlot(Box<dyn SlotOps>);

impl OpSlot {
    /// A slot whose ops are `make(cycle)`. The future's memory is allocated
    /// here, once (empty until the first [`start`](Self::start)).
    ///
    /// ```
    /// let slot = paceline::OpSlot::new(|_cycle| async { Ok(()) });
    /// assert!(!slot.is_busy());
    /// ```
    pub fn new<M, F>(make: M) -> Self
    where
        M: FnMut(u64) -> F + 'static,
        F: Future<Output = Result<(), OpError>> + 'static,
    {
        OpSlot(Box::new(Reuse {
            make,
            op: Box::pin(None),
        }))
    }

    /// Makes the op of `cycle` in place of the slot's last (dropping that
    /// one first if it did not complete). It is not polled here.
    ///
    /// ```
    /// let mut slot = paceline::OpSlot::new(|_cycle| async { Ok(()) });
    /// slot.start(7);
    /// assert!(slot.is_busy());
    /// ```
    pub fn start(&mut self, cycle: u64) {
        self.0.start(cycle)
    }

    /// Polls the op started last. A slot with no op under way (none started,
    /// or it completed, or its `poll` panicked: the panic goes on to the
    /// caller and the op is dropped) answers an error of kind `no op`.
    ///
    /// ```
    /// let mut slot = paceline::OpSlot::new(|_cycle| async { Ok(()) });
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let idle = rt.block_on(std::future::poll_fn(|cx| slot.poll(cx)));
    /// assert_eq!(idle.unwrap_err().kind(), "no op");
    /// ```
    pub fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), OpError>> {
        self.0.poll(cx)
    }

    /// Drops the op under way, if any, in place (it was cancelled).
    ///
    /// ```
    /// let mut slot = paceline::OpSlot::new(|_cycle| std::future::pending());
    /// slot.start(1);
    /// slot.clear();
    /// assert!(!slot.is_busy());
    /// ```
    pub fn clear(&mut self) {
        self.0.clear()
    }

    /// Whether an op is under way (started, not completed nor cleared).
    ///
    /// ```
    /// assert!(!paceline::OpSlot::new(|_cycle| async { Ok(()) }).is_busy());
    /// ```
    pub fn is_busy(&self) -> bool {
        self.0.is_busy()
    }
}

impl std::fmt::Debug for OpSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpSlot")
            .field("busy", &self.is_busy())
            .finish()
    }
}

/// What [`OpSlot`] does, without its op's type.
trait SlotOps {
    fn start(&mut self, cycle: u64);
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), OpError>>;
    fn clear(&mut self);
    fn is_busy(&self) -> bool;
}

/// The ops `make` gives, one at a time in `op`'s memory.
struct Reuse<M, F> {
    make: M,
    op: Pin<Box<Option<F>>>,
}

impl<M, F> SlotOps for Reuse<M, F>
where
    M: FnMut(u64) -> F,
    F: Future<Output = Result<(), OpError>>,
{
    fn start(&mut self, cycle: u64) {
        // The last op goes first: a driver's resource it held (a pooled
        // connection) is back before the next op is made.
        self.op.set(None);
        let op = (self.make)(cycle);
        self.op.set(Some(op));
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), OpError>> {
        let Some(op) = self.op.as_mut().as_pin_mut() else {
            return Poll::Ready(Err(OpError::new(
                "no op",
                "an op slot was polled with no op under way: start one first",
            )));
        };
        // An op that panicked is dropped before the panic goes on, so the
        // slot answers `no op` after it, as its doc says, instead of polling
        // a panicked future again (review p18, F3; pinned by
        // tests/fixr_opslot.rs).
        let out = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| op.poll(cx))) {
            Ok(out) => out,
            Err(panic) => {
                self.op.set(None);
                std::panic::resume_unwind(panic)
            }
        };
        if out.is_ready() {
            self.op.set(None);
        }
        out
    }

    fn clear(&mut self) {
        self.op.set(None);
    }

    fn is_busy(&self) -> bool {
        self.op.is_some()
    }
}
