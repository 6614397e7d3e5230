//! Waiting on an async worker thread: the thread keeps driving its ops in flight
//! (their IO, their timers) while it waits for the next slot, and still wakes at
//! the slot with the engine's precision.
//!
//! The pacer waits for a slot through its clock's `wait_until`. An async run
//! gives its pacer a [`DrivingClock`]: on a worker thread that has a [`Driver`]
//! installed, `wait_until` runs the worker's tokio runtime until the deadline
//! instead of sleeping the thread; elsewhere it is the engine's clock. The same
//! pacer, local or the shared schedule, with every mode it has, paces the async
//! runner as it paces the sync one; only the way the thread spends the wait
//! differs.
//!
//! - **Real clock** (one with a timeline origin): the worker's runtime waits in
//!   its reactor on a timerfd armed at an absolute `CLOCK_MONOTONIC` deadline (the
//!   earliest of: the slot less the waiting strategy's spin tail, the ops'
//!   timers, and a stop check every [`STOP_POLL`]), with the thread's timer slack
//!   lowered as the strategy says; then it spins the tail on the engine's clock.
//!   tokio's own timers (1 ms grain) are never used for pacing.
//! - **Any other clock** (the [`ManualClock`](crate::ManualClock)): a discrete-event
//!   loop. It polls every ready op until none is left, then moves the clock to the
//!   earliest of the deadline and the ops' timers and fires those due, and so on:
//!   an op that sleeps 50 ms through [`sleep_until`] ends exactly 50 ms after its
//!   first poll, deterministically.
//!
//! Ops wait on time through [`sleep_until`]
//! ([`WorkerContext::sleep_async`](crate::WorkerContext::sleep_async)), which
//! queues on the worker's own timer heap (and so on its timerfd) when it runs on
//! an async worker, and on the clock's timer (`Clock::wake_at`) elsewhere.

use crate::clock::{Clock, Signal, Waiting, apply_timer_slack};
use crate::nanos::Nanos;
use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// The longest a real-clock wait goes without looking at its stop flag and the
/// run's state (a stop, a pause, a retire land within this long).
pub(crate) const STOP_POLL: Nanos = 2_000_000;

thread_local! {
    /// The worker's driver, while its motor runs.
    static DRIVER: RefCell<Option<Rc<Driver>>> = const { RefCell::new(None) };
    /// The ops' timers on this thread (active while a driver is installed).
    static TIMERS: RefCell<Timers> = RefCell::new(Timers::default());
    /// Polls of ops so far: the discrete-event loop runs ticks until none polls.
    static POLLS: Cell<u64> = const { Cell::new(0) };
    /// The waker of the drive under way, woken when an op ends.
    static DRIVE_WAKER: RefCell<Option<Waker>> = const { RefCell::new(None) };
}

/// One op timer: wake `waker` once the clock reads `at`.
struct Entry {
    at: Nanos,
    seq: u64,
    waker: Waker,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

#[derive(Default)]
struct Timers {
    heap: BinaryHeap<Reverse<Entry>>,
    seq: u64,
    active: bool,
}

impl Timers {
    fn earliest(&self) -> Option<Nanos> {
        self.heap.peek().map(|e| e.0.at)
    }
}

/// Wakes the op timers due at `now`.
fn fire_due(now: Nanos) {
    let due: Vec<Waker> = TIMERS.with(|t| {
        let mut t = t.borrow_mut();
        let mut due = Vec::new();
        while t.heap.peek().is_some_and(|e| e.0.at <= now) {
            if let Some(Reverse(e)) = t.heap.pop() {
                due.push(e.waker);
            }
        }
        due
    });
    for w in due {
        w.wake();
    }
}

fn earliest_timer() -> Option<Nanos> {
    TIMERS.with(|t| t.borrow().earliest())
}

/// Counts one poll of an op (see [`POLLS`]).
fn note_poll() {
    POLLS.with(|p| p.set(p.get() + 1));
}

/// An op's future, counting its polls (the discrete-event loop settles on them).
struct Counted(Pin<Box<dyn Future<Output = ()>>>);

impl Future for Counted {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        note_poll();
        self.0.as_mut().poll(cx)
    }
}

/// Wakes the drive under way (an op ended: a wait for capacity may be over).
pub(crate) fn wake_drive() {
    if let Some(w) = DRIVE_WAKER.with(|d| d.borrow_mut().take()) {
        w.wake();
    }
}

/// A future that completes once `clock` reads `deadline`, with the reading.
pub(crate) struct Sleep {
    clock: Arc<dyn Clock>,
    waiting: Waiting,
    deadline: Nanos,
}

/// Sleeps until `clock` reads `deadline` without holding the thread: on an async
/// worker on the worker's own timers, elsewhere on the clock's (`wake_at`).
pub(crate) fn sleep_until(clock: Arc<dyn Clock>, waiting: Waiting, deadline: Nanos) -> Sleep {
    Sleep {
        clock,
        waiting,
        deadline,
    }
}

impl Future for Sleep {
    type Output = Nanos;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Nanos> {
        let now = self.clock.now();
        if now >= self.deadline {
            return Poll::Ready(now);
        }
        let queued = TIMERS.with(|t| {
            let mut t = t.borrow_mut();
            if !t.active {
                return false;
            }
            t.seq += 1;
            let seq = t.seq;
            t.heap.push(Reverse(Entry {
                at: self.deadline,
                seq,
                waker: cx.waker().clone(),
            }));
            true
        });
        if !queued {
            self.clock.wake_at(self.deadline, &self.waiting, cx.waker());
        }
        Poll::Pending
    }
}

/// One worker thread's executor: a tokio `current_thread` runtime with IO, a
/// `LocalSet`, and (on Linux, on the real clock) the timerfd its waits sleep on.
pub(crate) struct Driver {
    rt: tokio::runtime::Runtime,
    local: RefCell<tokio::task::LocalSet>,
    clock: Arc<dyn Clock>,
    real: bool,
    #[cfg(target_os = "linux")]
    timer: Option<timerfd::TimerFd>,
    /// Inside `block_on`: a wait asked for there (never by the engine) falls back
    /// to the clock's own.
    busy: Cell<bool>,
}

/// Takes the driver out of this thread when dropped.
pub(crate) struct Installed(Rc<Driver>);

impl Drop for Installed {
    fn drop(&mut self) {
        DRIVER.with(|d| d.borrow_mut().take());
        TIMERS.with(|t| {
            let mut t = t.borrow_mut();
            t.active = false;
            t.heap.clear();
        });
        DRIVE_WAKER.with(|d| d.borrow_mut().take());
        HELPER.with(|h| h.borrow_mut().take());
    }
}

impl std::ops::Deref for Installed {
    type Target = Driver;
    fn deref(&self) -> &Driver {
        &self.0
    }
}

impl Driver {
    /// Builds this thread's driver on `clock` and installs it.
    pub(crate) fn install(clock: Arc<dyn Clock>) -> Result<Installed, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| format!("could not build the worker's runtime: {e}"))?;
        let real = clock.timeline_origin().is_some();
        #[cfg(target_os = "linux")]
        let timer = if real {
            let _g = rt.enter();
            Some(timerfd::TimerFd::new()?)
        } else {
            None
        };
        let d = Rc::new(Driver {
            rt,
            local: RefCell::new(tokio::task::LocalSet::new()),
            clock,
            real,
            #[cfg(target_os = "linux")]
            timer,
            busy: Cell::new(false),
        });
        DRIVER.with(|slot| *slot.borrow_mut() = Some(d.clone()));
        TIMERS.with(|t| t.borrow_mut().active = true);
        Ok(Installed(d))
    }

    /// Runs `f` to completion on this worker's runtime, inside its `LocalSet`.
    pub(crate) fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.busy.set(true);
        let local = self.local.borrow();
        let out = self.rt.block_on(local.run_until(f));
        drop(local);
        self.busy.set(false);
        out
    }

    /// Cancels every task on this worker (its ops in flight and whatever its
    /// driver spawned): their futures are dropped here.
    pub(crate) fn cancel_all(&self) {
        let old = self.local.replace(tokio::task::LocalSet::new());
        let _g = self.rt.enter();
        drop(old);
    }

    /// Polls `op` once now (its first poll) and, if it is not done, hands it to
    /// the `LocalSet`, which polls it from then on.
    pub(crate) fn start(&self, op: Pin<Box<dyn Future<Output = ()>>>) {
        let mut op = Counted(op);
        self.block_on(async move {
            let first = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut op).poll(cx))).await;
            if first.is_pending() {
                drop(tokio::task::spawn_local(op));
            }
            // One tick for the ops a drive woke just before it returned (a timer
            // due with the slot): they read their ends now, not at the next wait.
            tokio::task::yield_now().await;
        });
    }

    /// Drives the ops in flight until `done()` holds or the clock reads `until`;
    /// returns the clock's reading then.
    pub(crate) fn drive(&self, until: Option<Nanos>, done: &dyn Fn() -> bool) -> Nanos {
        if self.real {
            self.block_on(Drive {
                driver: self,
                until,
                done,
                armed: None,
            })
        } else {
            self.simulate(until, done)
        }
    }

    /// Drives the ops in flight (real clock) until `fut` is ready or the clock
    /// reads `until`: `fut`'s output, or `None` at `until`.
    fn drive_on<T>(
        &self,
        until: Option<Nanos>,
        mut fut: Pin<&mut impl Future<Output = T>>,
    ) -> Option<T> {
        let mut drive = Drive {
            driver: self,
            until,
            done: &|| false,
            armed: None,
        };
        self.block_on(std::future::poll_fn(|cx| {
            if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                return Poll::Ready(Some(v));
            }
            match Pin::new(&mut drive).poll(cx) {
                Poll::Ready(_) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            }
        }))
    }

    /// [`drive_on`](Self::drive_on) with no deadline.
    fn drive_until_ready<T>(&self, fut: Pin<&mut impl Future<Output = T>>) -> T {
        match self.drive_on(None, fut) {
            Some(v) => v,
            None => unreachable!("a drive without a deadline ends only when its future is ready"),
        }
    }

    /// The discrete-event loop of a clock that is not real (see the module doc).
    fn simulate(&self, until: Option<Nanos>, done: &dyn Fn() -> bool) -> Nanos {
        loop {
            self.settle();
            let now = self.clock.now();
            if done() || until.is_some_and(|u| now >= u) {
                return now;
            }
            let next = match (earliest_timer(), until) {
                (Some(t), Some(u)) => Some(t.min(u)),
                (t, u) => t.or(u),
            };
            match next {
                Some(t) => {
                    self.clock.wait_until(t, &Waiting::exact(), &Signal::new());
                    fire_due(self.clock.now());
                }
                // Ops waiting on something other than time (real IO under a
                // manual clock): let the reactor run a little.
                None => self.block_on(async {
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await
                }),
            }
        }
    }

    /// Polls ready ops until a round polls none.
    fn settle(&self) {
        loop {
            let before = POLLS.with(Cell::get);
            self.block_on(tokio::task::yield_now());
            if POLLS.with(Cell::get) == before {
                return;
            }
        }
    }

    /// Waits until `deadline` as `waiting` says, driving the ops meanwhile (see the
    /// module doc), or until `signal` stops.
    fn wait_until(&self, deadline: Nanos, waiting: &Waiting, signal: &Signal) -> Nanos {
        if !self.real {
            let now = self.drive(Some(deadline), &|| signal.is_stopped());
            if now < deadline && !signal.is_stopped() {
                return self.clock.wait_until(deadline, waiting, signal);
            }
            return now;
        }
        apply_timer_slack(waiting.timer_slack_nanos());
        let coarse = deadline.saturating_sub(waiting.spin_tail_nanos());
        loop {
            let now = self.clock.now();
            if now >= deadline || signal.is_stopped() {
                return now;
            }
            if now < coarse {
                self.drive(Some(coarse), &|| signal.is_stopped());
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

/// The future a real-clock drive runs: fires the ops' timers, and sleeps in the
/// reactor on the timerfd until the next timer, `until`, or a stop check.
struct Drive<'a> {
    driver: &'a Driver,
    until: Option<Nanos>,
    done: &'a dyn Fn() -> bool,
    armed: Option<Nanos>,
}

impl Future for Drive<'_> {
    type Output = Nanos;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Nanos> {
        DRIVE_WAKER.with(|d| *d.borrow_mut() = Some(cx.waker().clone()));
        loop {
            let now = self.driver.clock.now();
            fire_due(now);
            if (self.done)() || self.until.is_some_and(|u| now >= u) {
                return Poll::Ready(now);
            }
            let mut next = now + STOP_POLL;
            if let Some(u) = self.until {
                next = next.min(u);
            }
            if let Some(t) = earliest_timer() {
                next = next.min(t);
            }
            #[cfg(target_os = "linux")]
            if let Some(tfd) = &self.driver.timer {
                if self.armed != Some(next) {
                    tfd.arm(next - now);
                    self.armed = Some(next);
                }
                match tfd.poll_fired(cx) {
                    Poll::Ready(()) => {
                        self.armed = None;
                        continue;
                    }
                    Poll::Pending => return Poll::Pending,
                }
            }
            #[cfg(not(target_os = "linux"))]
            {
                // No timerfd: tokio's timer for the coarse part (1 ms grain); the
                // pacer's spin tail, if any, does the rest.
                let _ = &mut self.armed;
                let mut s = Box::pin(tokio::time::sleep(std::time::Duration::from_nanos(
                    next - now,
                )));
                match s.as_mut().poll(cx) {
                    Poll::Ready(()) => continue,
                    Poll::Pending => return Poll::Pending,
                }
            }
        }
    }
}

/// This thread's driver, when it is an async worker on the real clock and not
/// inside a `block_on` already.
fn driving_here() -> Option<Rc<Driver>> {
    DRIVER
        .with(|d| d.borrow().clone())
        .filter(|d| d.real && !d.busy.get())
}

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

/// A clock whose waits, on an async worker thread, drive that worker's ops (see
/// the module doc); the engine gives it to an async run's pacer.
#[derive(Debug)]
pub(crate) struct DrivingClock(pub(crate) Arc<dyn Clock>);

impl Clock for DrivingClock {
    #[inline]
    fn now(&self) -> Nanos {
        self.0.now()
    }

    fn wait_until(&self, deadline: Nanos, waiting: &Waiting, signal: &Signal) -> Nanos {
        let driver = DRIVER.with(|d| d.borrow().clone());
        match driver {
            Some(d) if !d.busy.get() => d.wait_until(deadline, waiting, signal),
            _ => self.0.wait_until(deadline, waiting, signal),
        }
    }

    fn default_waiting(&self) -> Waiting {
        self.0.default_waiting()
    }

    fn timeline_origin(&self) -> Option<Nanos> {
        self.0.timeline_origin()
    }

    fn wake_at(&self, deadline: Nanos, waiting: &Waiting, waker: &Waker) {
        self.0.wake_at(deadline, waiting, waker)
    }
}

#[cfg(target_os = "linux")]
mod timerfd {
    //! A timerfd in the worker's reactor, armed at absolute `CLOCK_MONOTONIC`
    //! deadlines: the wake is the kernel's hrtimer, not tokio's 1 ms wheel.
    //!
    //! tokio registers a raw fd safely only through its `unsafe`
    //! `AsyncFd::register` (its safe constructors are deprecated, tokio#8587),
    //! and this crate has no `unsafe`. A timerfd reads like the read end of a
    //! pipe (readable when it fired, 8 bytes a read, `EAGAIN` before), so it is
    //! registered as one: `pipe::Receiver::from_owned_fd_unchecked` takes the
    //! `OwnedFd` (its owner from then on: it closes it after deregistering it)
    //! and makes no pipe-only call on it.

    use crate::nanos::Nanos;
    use rustix::time::{
        ClockId, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec,
        clock_gettime, timerfd_create, timerfd_settime,
    };
    use std::os::fd::AsFd;
    use std::task::{Context, Poll};
    use tokio::net::unix::pipe;

    pub(crate) struct TimerFd(pipe::Receiver);

    impl TimerFd {
        /// A timerfd registered in the current runtime's reactor.
        pub(crate) fn new() -> Result<Self, String> {
            let fd = timerfd_create(
                TimerfdClockId::Monotonic,
                TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
            )
            .map_err(|e| format!("could not create the worker's timerfd: {e}"))?;
            pipe::Receiver::from_owned_fd_unchecked(fd)
                .map(Self)
                .map_err(|e| format!("could not register the worker's timerfd: {e}"))
        }

        /// Arms it to fire `after` ns from now, as an absolute monotonic deadline
        /// (a preemption between the reading and the arming does not move it).
        pub(crate) fn arm(&self, after: Nanos) {
            let now = clock_gettime(ClockId::Monotonic);
            let at =
                now.tv_sec as i128 * 1_000_000_000 + now.tv_nsec as i128 + after.max(1) as i128;
            let spec = Itimerspec {
                it_interval: Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: Timespec {
                    tv_sec: (at / 1_000_000_000) as i64,
                    tv_nsec: (at % 1_000_000_000) as i64,
                },
            };
            // Cannot fail for a valid fd and a normalized time; if it did, the
            // drive would look again after its next wake-up.
            let _ = timerfd_settime(self.0.as_fd(), TimerfdTimerFlags::ABSTIME, &spec);
        }

        /// Ready once the timer fired (its count is read and cleared).
        pub(crate) fn poll_fired(&self, cx: &mut Context<'_>) -> Poll<()> {
            loop {
                match self.0.poll_read_ready(cx) {
                    Poll::Ready(Ok(())) => {}
                    // The reactor is gone (the runtime is shutting down).
                    Poll::Ready(Err(_)) => return Poll::Ready(()),
                    Poll::Pending => return Poll::Pending,
                }
                let mut buf = [0u8; 8];
                // `try_read` clears the readiness on `WouldBlock` (not fired yet).
                match self.0.try_read(&mut buf) {
                    Ok(_) => return Poll::Ready(()),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => return Poll::Ready(()),
                }
            }
        }
    }
}

#[cfg(all(test, not(loom), target_os = "linux"))]
mod tests {
    use super::*;
    use crate::clock::MonotonicClock;

    /// Regression (issue 21, the shared schedule at 10K/s): every lease or claim
    /// round trip an async worker made started a thread of its own, about 1000
    /// threads a second. The round trips of one worker share one helper thread,
    /// which ends with the worker's driver; a panic in a call is raised again on
    /// the worker, and the helper goes on serving.
    #[test]
    fn the_round_trips_of_one_worker_share_one_helper_thread() {
        let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
        let driver = Driver::install(clock).unwrap();
        let before = helpers_started();
        let main = std::thread::current().id();
        let mut helpers = std::collections::HashSet::new();
        for i in 0..5u64 {
            let (id, v) = call_blocking(move || (std::thread::current().id(), i * 2));
            assert_eq!(v, i * 2);
            assert_ne!(id, main, "the call ran on the worker's own thread");
            helpers.insert(id);
        }
        assert_eq!(helpers.len(), 1, "one helper thread for every round trip");
        assert_eq!(helpers_started() - before, 1);
        let p = catch_unwind(AssertUnwindSafe(|| {
            call_blocking(|| -> u8 { panic!("lost store") })
        }));
        assert!(p.is_err(), "the call's panic comes back to the worker");
        assert_eq!(call_blocking(|| 7), 7, "the helper still serves");
        assert_eq!(helpers_started() - before, 1);
        drop(driver);
        // Off an async worker, a call runs right here.
        assert_eq!(call_blocking(|| std::thread::current().id()), main);
    }

    /// While a round trip is slow, the worker goes on driving its ops: a timer
    /// of an op in flight fires on time during the call.
    #[test]
    fn ops_keep_moving_while_a_round_trip_is_slow() {
        let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
        let driver = Driver::install(clock.clone()).unwrap();
        let fired = Rc::new(Cell::new(None));
        let (f, c) = (fired.clone(), clock.clone());
        let due = clock.now() + 20_000_000;
        driver.start(Box::pin(async move {
            let at = sleep_until(c, Waiting::exact(), due).await;
            f.set(Some(at));
        }));
        call_blocking(|| std::thread::sleep(std::time::Duration::from_millis(200)));
        let at = fired.get().expect("the op's timer fired during the call");
        assert!(
            at >= due && at < due + 150_000_000,
            "fired {} ns late",
            at - due
        );
        drop(driver);
    }
}
