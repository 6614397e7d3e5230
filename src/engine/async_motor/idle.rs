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
//!   earliest of: the slot less the waiting strategy's spin tail and the ops'
//!   timers; a stop or a pause wakes it through the signal), with the thread's timer slack
//!   lowered as the strategy says; then it spins the tail on the engine's clock.
//!   tokio's own timers (1 ms grain) are never used for pacing.
//! - **Any other clock** (the [`ManualClock`](crate::ManualClock)): a discrete-event
//!   loop. It polls every ready op until none is left, then moves the clock to the
//!   earliest of the deadline and the ops' timers and fires those due, and so on:
//!   an op that sleeps 50 ms through [`sleep_until`] ends exactly 50 ms after its
//!   first poll, deterministically.
//!
//! The fast paths of a real-clock worker (the system calls they save are in
//! `benches/README.md`), each with what holds and the test that pins it:
//!
//! | path | what holds | test (`idle_tests.rs`, `opset_tests.rs`) |
//! |---|---|---|
//! | ops polled in the worker's own set ([`super::opset`]), not a tokio task each | an op's first poll is its start's, with its own waker, once (no task cell, no second poll); a wake from anywhere has the next pass poll it once (from another thread it wakes the parked drive); an op's timer set in a drive's pass is armed by that drive; a wake tokio deferred in an entry's last poll (`yield_now`) is not lost | `an_op_is_polled_once_at_its_start_with_a_waker_of_its_own`, `a_stale_wake_of_a_reused_slot_loses_none_of_the_new_ops_wakes`, `a_timer_set_by_an_op_woken_from_elsewhere_wakes_the_drive`, `deferred_tests.rs` |
//! | each op polled outside tokio's budget; a pass takes the queue as it is | every op woken at once is polled in one pass; an op that wakes itself holds neither the drive nor the others | `ops_woken_together_are_not_held_back_by_tokios_budget`, `an_op_that_wakes_itself_holds_neither_the_drive_nor_the_others` |
//! | a start that fills the worker's cap drives for room in its own `block_on` ([`Driver::start_then_drive`]) | one runtime entry per op at the cap, not two; room that came by the start's own pass is no drive (and no queueing); the reactor is polled as often as before (the drive parks in it; a pass due is made); without a drive or a pass due the `LocalSet` is not ticked (its tasks the op woke run at the next entry) | `a_start_that_fills_the_cap_drives_for_room_in_the_same_entry`, `a_start_then_drive_makes_its_pass_due_only_when_it_did_not_park` |
//! | a drive's pass stops once its `done` holds after an op's end | at the cap the start comes at the first end that makes room; the ops woken with it are polled right after the start's first poll | `a_drive_for_room_ends_at_the_first_end_and_the_start_goes_first` |
//! | `cancel_all` empties the set and replaces the `LocalSet` | every op in flight is dropped (its guard counts it `cancelled`) and every task spawned; a panicking op ends alone | `cancel_all_drops_every_op_and_every_spawned_task`, `a_panicking_op_ends_alone_and_its_slot_serves_the_next` |
//! | a start without a pass: one poll of the set and the `LocalSet` outside the reactor | the op and the ops already woken are polled before the start returns; the reactor at least every [`PASS_EVERY`] | `back_to_back_starts_poll_the_reactor_once_per_pass_every`, `an_op_started_without_a_pass_ends_exactly_on_its_own_timer`, `ops_woken_as_a_drive_ends_are_polled_by_the_next_start` |
//! | a start without a pass, with no runtime task alive and no op timer due, enters no runtime (no `block_on`): the op's first poll and the ops woken run in the runtime's and the `LocalSet`'s context | the op's first poll is still the start's, with its own waker; IO and `spawn_local` work in it; a local task it wakes runs at the next entry (within [`PASS_EVERY`]); with a runtime task alive (one an op could wake only through the eventfd from here) or a timer due, the start ticks as below | `a_start_without_a_pass_enters_no_runtime_while_it_has_no_task`, `an_op_that_yields_in_a_start_without_a_pass_ends` |
//! | that tick inside the runtime's scheduler | a runtime task the op wakes is queued there (no eventfd `write`) and runs at the next drive | `a_runtime_task_an_op_wakes_without_a_pass_runs_at_the_next_drive` |
//! | every pass outside a drive (a start's, a spin's) and a start's tick fire the ops' timers due first | a spinning worker fires an op's timer (a postgres op timeout, a `latency` sleep) at its deadline, not at its next drive; one compare when none is due | `a_spinning_slot_wait_fires_an_ops_timer_at_its_deadline`, `a_start_fires_the_timers_due_and_runs_their_ops` |
//! | a wait under [`SHORT_WAIT`] spins (with passes) | never returns before its deadline; no timerfd | `a_short_wait_spins_without_the_timerfd_and_is_never_early` |
//! | a slot wait woken within [`SHORT_WAIT`] of its slot ends its drive | the rest is spun (with passes), not slept again in the reactor; never early | `a_slot_wait_woken_just_before_the_slot_spins_the_rest` |
//! | the timerfd kept armed | an exact deadline wakes exactly; the stop check within [`STOP_POLL`] | `the_timerfd_is_armed_again_only_when_its_wake_must_move` |
//! | a stale fire's readiness cleared when arming | no `read` that finds `EAGAIN` | `a_fire_is_read_once_and_leaves_no_readiness_behind` |
//! | a drive parked on its signal with nothing due disarms the timerfd | a deadline an earlier drive left armed wakes no one | `a_drive_parked_on_its_signal_disarms_a_deadline_left_armed` |
//! | a pass stops before an op once the slot waited for is due | the start does not queue behind other ops' ends; they are polled right after its op's first poll | `a_due_start_does_not_queue_behind_other_ops_ends`, `ops_woken_as_a_drive_ends_are_polled_by_the_next_start` |
//! | no stop poll where the signal wakes ([`Wake::On`]) | a long wait arms once; a stop, a pause, a change of `done` the signal announces end it | `a_long_wait_arms_the_timerfd_once_and_a_stop_ends_it_at_once`, `a_pause_cuts_a_slot_wait_short_and_a_change_does_not`, `a_drive_woken_by_its_signal_arms_nothing_and_ends_on_the_change` |
//!
//! Ops wait on time through [`sleep_until`]
//! ([`WorkerContext::sleep_async`](crate::WorkerContext::sleep_async)), which
//! queues on the worker's own timer heap (and so on its timerfd) when it runs on
//! an async worker, and on the clock's timer (`Clock::wake_at`) elsewhere.

use crate::clock::{Clock, Signal, Waiting, apply_timer_slack};
use crate::nanos::Nanos;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

#[cfg(target_os = "linux")]
use super::timerfd::TimerFd;

#[path = "drive.rs"]
mod drive;
#[path = "ops.rs"]
mod ops;
use super::opset::{Op, OpSet, Stops};
use ops::{StartDue, Timers, start_due};
pub(crate) use ops::{reactor_age, sleep_until};
// The drive (`drive.rs`) reaches these through this module.
use drive::Drive;
pub(crate) use drive::Wake;
#[cfg(test)]
use drive::keeps_armed;
use ops::{drive_parked, drive_unparked, earliest_timer, fire_due, timer_due};

#[cfg(test)]
pub(crate) use super::call::helpers_started;
pub(crate) use super::call::{call_blocking, wait_change_for};

/// The longest a real-clock drive that nothing wakes on a change
/// ([`Wake::Poll`]: waiting for the activity's cap, which another worker's op
/// end frees) goes without looking at its `done`. A wait for a slot, a pause's
/// drain, and a wait at the worker's own share are woken by the run's signal
/// instead ([`Wake::On`]) and have no such poll.
pub(crate) const STOP_POLL: Nanos = 2_000_000;

/// The longest back-to-back starts and short waits go without polling the
/// reactor (a pass: new IO, the runtime's tasks): it bounds how long an op's
/// reply can sit unread, and so what it adds to its service time.
pub(crate) const PASS_EVERY: Nanos = 20_000;

/// A real-clock wait this short (to the strategy's spin tail) spins, with a
/// pass every [`PASS_EVERY`], instead of sleeping in the reactor: arming the
/// timerfd, `epoll_wait` and the wake-up cost more CPU than the spin.
pub(crate) const SHORT_WAIT: Nanos = 10_000;

thread_local! {
    /// The worker's driver, while its motor runs.
    static DRIVER: RefCell<Option<Rc<Driver>>> = const { RefCell::new(None) };
    /// The ops' timers on this thread (active while a driver is installed).
    static TIMERS: RefCell<Timers> = RefCell::new(Timers::default());
    /// The deadline of the wait for a slot under way (`Nanos::MAX`: none):
    /// once the clock reads it, a pass of the ops stops and leaves the rest
    /// for after the start ([`Driver::poll_ops`]).
    static START_DUE: Cell<Nanos> = const { Cell::new(Nanos::MAX) };
    /// The drive parked in the reactor and when it wakes on time (`Nanos::MAX`:
    /// only on its signal, an op's wake-up or IO): a timer set for earlier by a
    /// `LocalSet` task (a driver's watchdog, run by the `LocalSet` after the
    /// drive chose its deadline) wakes it to choose again ([`Sleep`]).
    static PARKED_DRIVE: RefCell<Option<(Nanos, Waker)>> = const { RefCell::new(None) };
}

/// One worker thread's executor: its ops in flight (its own set), a tokio
/// `current_thread` runtime with IO, a `LocalSet` for the tasks drivers spawn,
/// and (on Linux, on the real clock) the timerfd its waits sleep on.
pub(crate) struct Driver {
    /// The ops in flight (dropped first, while the runtime stands).
    ops: OpSet,
    rt: tokio::runtime::Runtime,
    /// The runtime's task count (a start without a pass enters no runtime
    /// while it is 0).
    tasks: tokio::runtime::RuntimeMetrics,
    local: RefCell<tokio::task::LocalSet>,
    pub(super) clock: Arc<dyn Clock>,
    real: bool,
    #[cfg(target_os = "linux")]
    timer: Option<TimerFd>,
    /// The deadline (on `clock`) the timerfd is armed at, until it is read fired.
    armed: Cell<Option<Nanos>>,
    /// When the reactor was last polled (a drive that slept in it, or a pass).
    last_pass: Cell<Nanos>,
    /// Passes made outside a drive: by a start, or in a short wait.
    passes: Cell<u64>,
    /// Entries into the runtime (`block_on`) so far.
    entries: Cell<u64>,
    /// Inside `block_on`: a wait asked for there (never by the engine) falls back
    /// to the clock's own.
    busy: Cell<bool>,
}

/// Takes the driver out of this thread when dropped.
pub(crate) struct Installed(Rc<Driver>);

impl Drop for Installed {
    fn drop(&mut self) {
        DRIVER.with(|d| d.borrow_mut().take());
        TIMERS.with(|t| t.borrow_mut().set_active(false));
        super::call::drop_helper();
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
            Some(TimerFd::new()?)
        } else {
            None
        };
        let d = Rc::new(Driver {
            ops: OpSet::default(),
            tasks: rt.metrics(),
            rt,
            local: RefCell::new(tokio::task::LocalSet::new()),
            clock,
            real,
            #[cfg(target_os = "linux")]
            timer,
            armed: Cell::new(None),
            last_pass: Cell::new(0),
            passes: Cell::new(0),
            entries: Cell::new(0),
            busy: Cell::new(false),
        });
        DRIVER.with(|slot| *slot.borrow_mut() = Some(d.clone()));
        TIMERS.with(|t| t.borrow_mut().set_active(true));
        Ok(Installed(d))
    }

    /// Runs `f` to completion on this worker's runtime, inside its `LocalSet`.
    pub(crate) fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.busy.set(true);
        self.entries.set(self.entries.get() + 1);
        let out = {
            let local = self.local.borrow();
            let mut fut = std::pin::pin!(local.run_until(f));
            // Each poll of the entry's future follows a park, which woke the
            // wakes tokio deferred; those of the last poll are dropped unwoken
            // as the entry returns, and `rescue` queues their ops.
            self.rt.block_on(std::future::poll_fn(|cx| {
                self.ops.watch_from_here();
                fut.as_mut().poll(cx)
            }))
        };
        self.ops.rescue();
        self.busy.set(false);
        out
    }

    /// Cancels every op in flight on this worker and every task its driver
    /// spawned: their futures are dropped here (each op counted `cancelled` by
    /// its guard).
    pub(crate) fn cancel_all(&self) {
        let _g = self.rt.enter();
        drop(self.ops.take_all());
        let old = self.local.replace(tokio::task::LocalSet::new());
        drop(old);
    }

    /// Ops in flight in this worker's set.
    #[cfg(test)]
    pub(crate) fn ops_in_flight(&self) -> usize {
        self.ops.live()
    }

    /// Polls of ops so far.
    #[cfg(test)]
    pub(crate) fn op_polls(&self) -> u64 {
        self.ops.polls()
    }

    /// A pass over the ops woken so far, with `cx`'s waker registered for the
    /// next wake-up; it stops before an op once the slot a wait is for is due
    /// (the start goes first: a start never queues behind other ops' work),
    /// and after an op's end once `done` holds. Returns the polls made.
    pub(super) fn poll_ops(&self, cx: &Context<'_>, done: Option<&dyn Fn() -> bool>) -> u64 {
        let now = || self.clock.now();
        self.ops.poll_ready(
            cx,
            &Stops {
                due: start_due(),
                now: &now,
                done,
            },
        )
    }

    /// One pass outside a drive: the ops' timers due at `now` fire, the ops
    /// woken run (until `done` holds after an op's end), then the runtime polls its reactor and runs its tasks and the
    /// `LocalSet`'s (a yield).
    async fn pass(&self, now: Nanos, done: Option<&dyn Fn() -> bool>) {
        fire_due(now);
        std::future::poll_fn(|cx| {
            self.poll_ops(cx, done);
            Poll::Ready(())
        })
        .await;
        tokio::task::yield_now().await;
    }

    /// Puts `op` in this worker's set and polls it once now (its first poll,
    /// with its own waker), then polls the ops already woken (those the last
    /// drive woke read their ends now, not at the next wait) and the ops whose
    /// timers are due at this start.
    ///
    /// The reactor is polled as well (a pass: new IO, the runtime's own tasks
    /// such as a multiplexed connection's writer) only when the last pass is
    /// [`PASS_EVERY`] old: back-to-back starts (slots already due, or within
    /// the release window) then cost no `epoll_wait` each, and their writes
    /// coalesce in the next pass.
    pub(crate) fn start(&self, op: Op) {
        let now = self.clock.now();
        let pass_due = now.saturating_sub(self.last_pass.get()) >= PASS_EVERY;
        if !pass_due && self.tasks.num_alive_tasks() == 0 && !timer_due(now) {
            // No runtime entry: the runtime has no task an op could wake
            // (a multiplexed connection's writer would be queued remotely
            // from here, through the reactor's eventfd) and no op timer is
            // due (a `LocalSet` task it woke, a deadline watchdog, would wake
            // the entry's waker: an eventfd write). The op's first poll and
            // the ops woken run in the runtime's and the `LocalSet`'s context
            // (IO, `spawn_local` work), with the no-op waker as the tick's;
            // a local task they wake runs at the next entry, which comes
            // within `PASS_EVERY` (the next start's pass, a wait's drive or
            // its spin's pass), as their IO does.
            let _rt = self.rt.enter();
            let local = self.local.borrow();
            let _local = local.enter();
            self.busy.set(true);
            self.ops.start(op);
            self.poll_ops(&Context::from_waker(Waker::noop()), None);
            self.busy.set(false);
            return;
        }
        let mut op = Some(op);
        let first = std::future::poll_fn(move |cx| {
            if let Some(op) = op.take() {
                self.ops.start(op);
                // The ops' timers due now fire after the op's first poll, inside
                // the runtime's context (queued locally, no eventfd): their ops
                // run in this tick, not at the next drive. One compare with the
                // earliest timer when none is due.
                fire_due(now);
                self.poll_ops(cx, None);
            }
            Poll::Ready(())
        });
        if pass_due {
            self.block_on(async move {
                first.await;
                tokio::task::yield_now().await;
            });
            self.passed();
            return;
        }
        // One poll of the `LocalSet`: the op's first poll and the ops woken,
        // then a tick of the local tasks; no reactor. Nothing is lost by the
        // no-op waker: the next `block_on` polls the set and the `LocalSet`
        // first thing. It runs inside the runtime's scheduler (a `block_on`
        // whose future is ready at its first poll never reaches the reactor),
        // so a runtime task the op wakes (a multiplexed connection's writer) is
        // queued there for the next drive; woken from outside, tokio would
        // queue it remotely and write the reactor's eventfd, and the next
        // `epoll_wait` would return at once for it.
        self.busy.set(true);
        self.entries.set(self.entries.get() + 1);
        {
            let local = self.local.borrow();
            let mut tick = std::pin::pin!(local.run_until(async move {
                first.await;
                std::future::pending::<()>().await;
            }));
            self.rt.block_on(std::future::poll_fn(|_| {
                self.ops.watch_from_here();
                let _ = tick.as_mut().poll(&mut Context::from_waker(Waker::noop()));
                Poll::Ready(())
            }));
        }
        self.ops.rescue();
        self.busy.set(false);
    }

    /// [`start`](Self::start)s `op`, then, unless `done` holds after the
    /// start's pass, drives the ops until it does, in the same runtime entry
    /// (one `block_on`, where a start and the drive that followed it took
    /// two): a start that fills the worker's cap. Returns whether it drove.
    /// The reactor is polled as often as by the two: the drive parks in it,
    /// and a start whose pass was due and that did not park makes its pass.
    pub(crate) fn start_then_drive(&self, op: Op, wake: Wake<'_>, done: &dyn Fn() -> bool) -> bool {
        if !self.real {
            self.start(op);
            if done() {
                return false;
            }
            self.simulate(None, done);
            return true;
        }
        let now = self.clock.now();
        let pass_due = now.saturating_sub(self.last_pass.get()) >= PASS_EVERY;
        let mut op = Some(op);
        self.block_on(async {
            std::future::poll_fn(|cx| {
                if let Some(op) = op.take() {
                    self.ops.start(op);
                    fire_due(now);
                    self.poll_ops(cx, None);
                }
                Poll::Ready(())
            })
            .await;
            let drove = !done();
            let last = self.last_pass.get();
            if drove {
                Drive::new(self, None, done, wake).await;
            }
            if pass_due && self.last_pass.get() == last {
                tokio::task::yield_now().await;
                self.passed();
            }
            drove
        })
    }

    /// Tasks queued on the runtime from outside its scheduler (each woke the
    /// reactor through its eventfd), not yet run.
    #[cfg(test)]
    pub(crate) fn queued_remotely(&self) -> usize {
        self.rt.metrics().global_queue_depth()
    }

    /// Notes a pass (the reactor polled just now, outside a drive).
    fn passed(&self) {
        self.passes.set(self.passes.get() + 1);
        self.last_pass.set(self.clock.now());
    }

    /// Entries into the runtime (`block_on`) so far.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> u64 {
        self.entries.get()
    }

    /// Passes made outside a drive so far (a start's or a short wait's).
    #[cfg(test)]
    pub(crate) fn passes(&self) -> u64 {
        self.passes.get()
    }

    /// The timerfd's `timerfd_settime` calls and its reads that found it not
    /// fired, so far.
    #[cfg(all(test, target_os = "linux"))]
    pub(crate) fn timer_counts(&self) -> (u64, u64) {
        self.timer
            .as_ref()
            .map_or((0, 0), |t| (t.arms.get(), t.empty_reads.get()))
    }

    /// Whether the kernel holds a deadline on the timerfd, and how many times
    /// a drive disarmed it.
    #[cfg(all(test, target_os = "linux"))]
    pub(crate) fn timer_in_kernel(&self) -> (bool, u64) {
        self.timer
            .as_ref()
            .map_or((false, 0), |t| (t.armed_in_kernel(), t.disarms.get()))
    }

    /// Drives the ops in flight until `done()` holds or the clock reads `until`;
    /// returns the clock's reading then.
    pub(crate) fn drive(&self, until: Option<Nanos>, done: &dyn Fn() -> bool) -> Nanos {
        self.drive_woken(until, Wake::Poll, done)
    }

    /// [`drive`](Self::drive), looking at `done` again when `wake` says (see
    /// [`Wake`]) instead of every [`STOP_POLL`].
    pub(crate) fn drive_woken(
        &self,
        until: Option<Nanos>,
        wake: Wake<'_>,
        done: &dyn Fn() -> bool,
    ) -> Nanos {
        if self.real {
            self.block_on(Drive::new(self, until, done, wake))
        } else {
            self.simulate(until, done)
        }
    }

    /// Drives the ops in flight (real clock) until `fut` is ready or the clock
    /// reads `until`: `fut`'s output, or `None` at `until`.
    pub(super) fn drive_on<T>(
        &self,
        until: Option<Nanos>,
        mut fut: Pin<&mut impl Future<Output = T>>,
    ) -> Option<T> {
        let mut drive = Drive::new(self, until, &|| false, Wake::Poll);
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
    pub(super) fn drive_until_ready<T>(&self, fut: Pin<&mut impl Future<Output = T>>) -> T {
        match self.drive_on(None, fut) {
            Some(v) => v,
            None => unreachable!("a drive without a deadline ends only when its future is ready"),
        }
    }

    /// The discrete-event loop of a clock that is not real (see the module doc).
    fn simulate(&self, until: Option<Nanos>, done: &dyn Fn() -> bool) -> Nanos {
        loop {
            self.settle(done);
            let now = self.clock.now();
            if done() || until.is_some_and(|u| now >= u) {
                // `settle` just polled the reactor.
                self.last_pass.set(now);
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

    /// Passes until one polls no op or `done` holds (the rest are polled by
    /// the next start or drive, as on the real clock).
    fn settle(&self, done: &dyn Fn() -> bool) {
        loop {
            let before = self.ops.polls();
            self.block_on(self.pass(self.clock.now(), Some(done)));
            if self.ops.polls() == before || done() {
                return;
            }
        }
    }

    /// Waits until `deadline` as `waiting` says, driving the ops meanwhile (see the
    /// module doc), or until `signal` stops.
    pub(crate) fn wait_until(&self, deadline: Nanos, waiting: &Waiting, signal: &Signal) -> Nanos {
        // Ops woken once the deadline has come wait for the start
        // (`poll_ops`).
        let _due = StartDue::set(deadline);
        if !self.real {
            let now = self.drive(Some(deadline), &|| signal.is_stopped());
            if now < deadline && !signal.is_stopped() {
                return self.clock.wait_until(deadline, waiting, signal);
            }
            return now;
        }
        apply_timer_slack(waiting.timer_slack_nanos());
        let coarse = deadline.saturating_sub(waiting.spin_tail_nanos());
        // As the real clock's own wait: a stop or a pause (an interruption)
        // cuts it short, a mere change does not.
        let seen = signal.interruptions();
        loop {
            let now = self.clock.now();
            if now >= deadline || signal.cut_short(seen) {
                return now;
            }
            if now < coarse && coarse - now > SHORT_WAIT {
                // Waiting for a slot, not for an op to end: an op's end does
                // not wake this drive (its `done` does not depend on it). Woken
                // by IO within SHORT_WAIT of the slot, it ends: the rest is
                // spun below, not slept in the reactor again.
                self.block_on(
                    Drive::new(
                        self,
                        Some(coarse),
                        &|| signal.cut_short(seen),
                        Wake::On(signal),
                    )
                    .spinning_within(SHORT_WAIT),
                );
            } else {
                // The spin tail, or a wait too short to sleep in the reactor
                // for: a pass whenever the last is `PASS_EVERY` old, or an
                // op's timer is due (fired first, so its op runs in the pass:
                // a spinning worker fires its ops' timers on time, not at its
                // next drive). One compare with the earliest timer when none is.
                if now.saturating_sub(self.last_pass.get()) >= PASS_EVERY || timer_due(now) {
                    self.block_on(self.pass(now, None));
                    self.passed();
                }
                std::hint::spin_loop();
            }
        }
    }
}

/// This thread's driver, when it is an async worker on the real clock and not
/// inside a `block_on` already.
pub(super) fn driving_here() -> Option<Rc<Driver>> {
    DRIVER
        .with(|d| d.borrow().clone())
        .filter(|d| d.real && !d.busy.get())
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

#[cfg(all(test, not(loom), target_os = "linux"))]
#[path = "idle_tests.rs"]
mod tests;

#[cfg(all(test, not(loom), target_os = "linux"))]
#[path = "opset_tests.rs"]
mod opset_tests;

#[cfg(all(test, not(loom), target_os = "linux"))]
#[path = "deferred_tests.rs"]
mod deferred_tests;
