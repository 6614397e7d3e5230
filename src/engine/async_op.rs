//! The async sibling of [`OpRunner`](super::OpRunner): ops that wait on IO
//! without holding a thread, many in flight on one worker thread.
//!
//! The traits need no executor; the engine's async runner polls them on each
//! worker thread's own tokio `current_thread` runtime inside a `LocalSet`
//! (`docs/engine.md`, "The async runner").

use super::workload::OpError;
use std::future::Future;
use std::pin::Pin;

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
/// The engine starts each op at its slot: it calls `start` and polls the future
/// for the first time at once, reading the clock there (the op's wait is that
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
    fn finish(&self) -> LocalFuture<Result<(), OpError>> {
        (**self).finish()
    }
}
