//! What an async worker does while a call blocks a thread (a shared
//! schedule's lease or claim round trip) or while it waits on a [`Signal`]:
//! it keeps driving its ops in flight (see [`super::idle`]).

use super::idle::driving_here;
use crate::clock::Signal;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A job for a worker's helper thread.
type Job = Box<dyn FnOnce() + Send>;

/// One async worker's helper thread: it runs the calls that block a thread (a
/// shared schedule's lease or claim round trip) one at a time, while the worker
/// drives its ops in flight. Started at the worker's first such call, it lives
/// as long as the worker's driver (one thread per worker, not one per call).
struct Helper {
    jobs: Option<crossbeam_channel::Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Helper {
    fn start() -> Option<Self> {
        let (tx, rx) = crossbeam_channel::unbounded::<Job>();
        let thread = std::thread::Builder::new()
            .name("paceline-call".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .ok()?;
        Some(Self {
            jobs: Some(tx),
            thread: Some(thread),
        })
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        // The channel closes: the thread ends after the job under way, if any.
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

thread_local! {
    /// This worker's helper thread, once started (dropped with the driver).
    static HELPER: RefCell<Option<Helper>> = const { RefCell::new(None) };
    /// Helper threads started on this thread (what tests count).
    static HELPERS_STARTED: Cell<u64> = const { Cell::new(0) };
}

/// Helper threads started on this thread so far.
#[cfg(test)]
pub(crate) fn helpers_started() -> u64 {
    HELPERS_STARTED.with(Cell::get)
}

/// Runs `f`, a call that blocks its thread (a store's round trip), to its end.
/// On an async worker thread it runs on the worker's helper thread while the
/// worker drives its ops in flight, so their IO and timers do not stall behind
/// the call; anywhere else (a sync worker, the manual clock), right here. A
/// panic in `f` is raised again here.
pub(crate) fn call_blocking<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    let Some(d) = driving_here() else {
        return f();
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
    });
    let sent = HELPER.with(|h| {
        let mut h = h.borrow_mut();
        if h.is_none() {
            *h = Helper::start();
            if h.is_some() {
                HELPERS_STARTED.with(|n| n.set(n.get() + 1));
            }
        }
        match h.as_ref().and_then(|h| h.jobs.as_ref()) {
            Some(jobs) => jobs.send(job).map_err(|e| e.into_inner()),
            None => Err(job),
        }
    });
    if let Err(job) = sent {
        // No thread to be had: block here, as a sync worker does.
        job();
    }
    let mut rx = std::pin::pin!(rx);
    match d.drive_until_ready(rx.as_mut()) {
        Ok(Ok(r)) => r,
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => unreachable!("the helper answers every job it takes"),
    }
}

/// Waits until `signal` changes from generation `seen` or stops, or `d` passes
/// (or spuriously: the caller looks again). On an async worker thread the worker
/// drives its ops in flight meanwhile; anywhere else the thread sleeps on the
/// signal ([`Signal::wait_change_for`]).
pub(crate) fn wait_change_for(signal: &Signal, seen: u64, d: std::time::Duration) {
    let Some(driver) = driving_here() else {
        signal.wait_change_for(seen, d);
        return;
    };
    let until = driver
        .clock
        .now()
        .saturating_add(crate::nanos::from_duration(d));
    let changed = std::pin::pin!(Changed {
        signal,
        seen,
        key: None,
    });
    driver.drive_on(Some(until), changed);
}

/// Ready once `signal`'s generation is not `seen`, or it stopped; woken by the
/// signal's `notify` and `stop` through a registered waker.
struct Changed<'a> {
    signal: &'a Signal,
    seen: u64,
    key: Option<usize>,
}

impl Future for Changed<'_> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        this.signal.register_waker(&mut this.key, cx.waker());
        if this.signal.generation() != this.seen || this.signal.is_stopped() {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

impl Drop for Changed<'_> {
    fn drop(&mut self) {
        self.signal.deregister_waker(&mut self.key);
    }
}

/// Ends this worker's helper thread, if it has one (its driver is leaving).
pub(super) fn drop_helper() {
    HELPER.with(|h| h.borrow_mut().take());
}
