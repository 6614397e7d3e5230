//! A worker's set-up (its runner: the connections it opens before its first
//! slot) races the run's stop.
//!
//! The rule: a stop (Ctrl-C, `--stop-timeout`'s stop, the control API's, a
//! scenario's stop step, the duration's end, a failure elsewhere) ends a
//! worker's set-up at once, wherever it is. On the async runner the set-up is a
//! future, polled by [`UnlessStopped`] beside the engine's signal: at the stop
//! the future is dropped where it waits, which abandons a connect in progress
//! and closes the connections it already opened (a driver's loop over its
//! connections needs no stop check of its own: it is dropped between two of
//! them as surely as inside one). The worker then leaves without a runner,
//! without a failure: a run stopped during set-up ends `stopped`, as one
//! stopped later, and what the other workers recorded is kept (each hands its
//! recorder to the hub as it leaves). A sync runner's set-up is a plain call:
//! the engine does not start it once the run is stopping, and a driver's
//! connect loop checks [`WorkerContext::is_stopping`](crate::WorkerContext::is_stopping)
//! between connections.
//!
//! Pinned by `tests/stop_setup.rs` (a set-up that never ends, a stop while
//! connecting to a slow postgres) and this file's tests.

use crate::clock::Signal;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// How a worker's set-up ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SetUp<T> {
    /// It ran to its end (with the set-up's own result, a failure included).
    Done(T),
    /// The run stopped first: the set-up was dropped unfinished.
    Stopped,
}

/// `fut`, unless `signal` stops first: [`SetUp::Stopped`] as soon as it does
/// (checked before each poll of `fut`, so a set-up never starts on a stopped
/// run), and `fut` is dropped with this.
pub(crate) struct UnlessStopped<'a, F> {
    signal: &'a Signal,
    fut: F,
    key: Option<usize>,
}

impl<'a, F: Future + Unpin> UnlessStopped<'a, F> {
    pub(crate) fn new(signal: &'a Signal, fut: F) -> Self {
        Self {
            signal,
            fut,
            key: None,
        }
    }
}

impl<F: Future + Unpin> Future for UnlessStopped<'_, F> {
    type Output = SetUp<F::Output>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        // Registered before the flag is read: a stop after the read wakes this.
        this.signal.register_waker(&mut this.key, cx.waker());
        if this.signal.is_stopped() {
            return Poll::Ready(SetUp::Stopped);
        }
        Pin::new(&mut this.fut).poll(cx).map(SetUp::Done)
    }
}

impl<F> Drop for UnlessStopped<'_, F> {
    fn drop(&mut self) {
        self.signal.deregister_waker(&mut self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// Dropped: says so (a connection the set-up opened, closed with it).
    struct Conn(Rc<Cell<u32>>);
    impl Drop for Conn {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_set_up_that_ends_first_gives_its_output() {
        let s = Signal::new();
        let out = rt().block_on(UnlessStopped::new(&s, Box::pin(async { 7 })));
        assert_eq!(out, SetUp::Done(7));
    }

    #[test]
    fn a_stopped_run_never_starts_a_set_up() {
        let s = Signal::new();
        s.stop();
        let started = Cell::new(false);
        let out = rt().block_on(UnlessStopped::new(
            &s,
            Box::pin(async { started.set(true) }),
        ));
        assert_eq!(out, SetUp::Stopped);
        assert!(!started.get());
    }

    /// Audit p17 L6: a stop from another thread ends a set-up waiting inside a
    /// "connect" that never answers, and the connections it opened are closed.
    #[test]
    fn a_stop_abandons_a_connect_in_progress_and_closes_those_opened() {
        let s = Signal::new();
        let closed = Rc::new(Cell::new(0));
        let c = closed.clone();
        let set_up = async move {
            let _opened = [Conn(c.clone()), Conn(c.clone())];
            std::future::pending::<()>().await;
        };
        let stopper = {
            let s = s.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                s.stop();
            })
        };
        let out = rt().block_on(UnlessStopped::new(&s, Box::pin(set_up)));
        stopper.join().unwrap();
        assert_eq!(out, SetUp::Stopped);
        assert_eq!(closed.get(), 2, "the connections opened are closed");
    }
}
