//! [`RateLimiter`]: the public face of the pacer.

use super::arrivals::Arrivals;
use super::builder::RateLimiterBuilder;
use super::control::ScheduleStats;
use super::future::{Acquire, Target};
use super::grant::{Grant, Refused};
use super::schedule::{Schedule, Shared};
use super::spec::{RateSpec, Scope};
use super::word::MAX_BATCH;
use crate::clock::{Clock, MonotonicClock, Waiting};
use crate::nanos::Nanos;
use crate::sync::{self, AtomicBool, Mutex, Ordering};
use std::cell::RefCell;
use std::fmt;
// Per-thread schedules are shared through std's Arc/Weak: reference counts only, no
// ordering this crate relies on, so they stay outside `crate::sync`.
use std::sync::{Arc as StdArc, Weak as StdWeak};

static NEXT_ID: sync::unmodeled::AtomicU64 = sync::unmodeled::AtomicU64::new(1);

#[cfg(not(loom))]
sync::thread_local! {
    /// This thread's schedules, one per thread-scoped limiter it has acquired from.
    static LOCAL: RefCell<Vec<(u64, StdWeak<Schedule>)>> = const { RefCell::new(Vec::new()) };
}
// loom's macro takes a plain initializer.
#[cfg(loom)]
sync::thread_local! {
    static LOCAL: RefCell<Vec<(u64, StdWeak<Schedule>)>> = RefCell::new(Vec::new());
}

/// The threads' schedules (thread scope), and what the schedules of threads that have
/// ended did.
#[derive(Debug, Default)]
struct Threads {
    list: Vec<StdArc<Schedule>>,
    ended: ScheduleStats,
    /// Thread schedules created so far (each gets its own Poisson stream).
    created: u64,
}

impl Threads {
    /// Drops the schedules of threads that have ended (no thread-local reference is
    /// left), keeping what they did in `ended`: a long run with threads coming and
    /// going keeps only the live threads' schedules, and a ramp step walks only those.
    fn prune<C: Clock>(&mut self, sh: &Shared<C>) {
        let ended = &mut self.ended;
        self.list.retain(|s| {
            if StdArc::weak_count(s) > 0 {
                return true;
            }
            ended.add_counts(&s.stats(sh));
            false
        });
    }
}

/// The pacer: an exact nanosecond time-slice scheduler shared by any number of threads.
///
/// Each [`acquire`](Self::acquire) takes the next slot on the schedule (slots are
/// exactly 1e9 / rate ns apart), waits until it is due, and returns a [`Grant`] that
/// says the slot, the start and the **wait** (how late the op started against its slot).
/// The [strictness](RateSpec::strictness) decides what lateness does; see
/// `docs/pacing.md` for timelines of each regime.
///
/// - The schedule is anchored at the first acquire, not at construction.
/// - [`set_spec`](Self::set_spec) changes rate, strictness and scope while running;
///   slots already granted keep their times; verb `restart` re-anchors.
/// - Rate 0 pauses: acquires block until the rate is positive or the limiter stops.
/// - [`stop`](Self::stop) wakes every blocked acquire; they return a stopped grant.
///
/// `RateLimiter` is `Send + Sync`; share it by reference or in an `Arc`.
///
/// ```
/// use paceline::{ManualClock, RateLimiter, RateSpec};
/// let clock = ManualClock::new();
/// let limiter = RateLimiter::with_clock(RateSpec::new(1000.0).strictness(1.5), clock.clone());
/// let g = limiter.acquire();
/// assert_eq!((g.scheduled_nanos(), g.wait_nanos()), (0, 0));
/// limiter.set_spec(RateSpec::parse("2000,0.0,restart")?);
/// let stats = limiter.stats();
/// assert_eq!(stats.grants, 0); // restart begins a new schedule
/// limiter.stop();
/// assert!(limiter.acquire().is_stopped());
/// # Ok::<(), paceline::RateSpecError>(())
/// ```
pub struct RateLimiter<C: Clock = MonotonicClock> {
    shared: Shared<C>,
    main: Schedule,
    thread_scope: AtomicBool,
    /// Taken first by every change of spec, stop and creation of a thread's schedule,
    /// so that none of them misses another.
    threads: Mutex<Threads>,
    id: u64,
    arrivals: Arrivals,
}

impl RateLimiter<MonotonicClock> {
    /// A limiter on the real monotonic clock.
    ///
    /// ```
    /// let limiter = paceline::RateLimiter::new(paceline::RateSpec::new(50_000.0));
    /// let g = limiter.acquire();
    /// assert!(!g.is_stopped());
    /// ```
    pub fn new(spec: RateSpec) -> Self {
        Self::with_clock(spec, MonotonicClock::new())
    }

    /// A builder for a limiter with non-default waiting or fast-path settings.
    ///
    /// ```
    /// use paceline::{RateLimiter, RateSpec, Waiting};
    /// let limiter = RateLimiter::builder(RateSpec::new(100.0)).waiting(Waiting::sleep()).build();
    /// assert_eq!(limiter.waiting(), Waiting::sleep());
    /// ```
    pub fn builder(spec: RateSpec) -> RateLimiterBuilder {
        RateLimiterBuilder::new(spec)
    }
}

/// Grants between forced clock readings on the fast path, by default.
pub const DEFAULT_FAST_PATH_LIMIT: u64 = 32;

impl<C: Clock> RateLimiter<C> {
    /// A limiter on the given clock, with that clock's default waiting strategy.
    ///
    /// ```
    /// use paceline::{ManualClock, RateLimiter, RateSpec};
    /// let clock = ManualClock::new();
    /// let limiter = RateLimiter::with_clock(RateSpec::new(10.0), clock.clone());
    /// limiter.acquire();
    /// assert_eq!(limiter.acquire().start_nanos(), 100_000_000);
    /// ```
    pub fn with_clock(spec: RateSpec, clock: C) -> Self {
        let waiting = clock.default_waiting();
        Self::build(
            spec,
            clock,
            waiting,
            DEFAULT_FAST_PATH_LIMIT,
            Arrivals::Uniform,
        )
    }

    pub(super) fn build(
        spec: RateSpec,
        clock: C,
        waiting: Waiting,
        fast_path_limit: u64,
        arrivals: Arrivals,
    ) -> Self {
        let thread_scope = spec.scope_value() == Scope::Thread;
        Self {
            shared: Shared::new(clock, waiting, fast_path_limit),
            main: Schedule::new(spec, !thread_scope, arrivals),
            arrivals,
            thread_scope: AtomicBool::new(thread_scope),
            threads: Mutex::new(Threads::default()),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Takes the next slot, waiting until it is due; see [`Grant`].
    ///
    /// Returns a stopped grant (and takes no slot) once the limiter is stopped.
    ///
    /// ```
    /// use paceline::{ManualClock, RateLimiter, RateSpec};
    /// let limiter = RateLimiter::with_clock(RateSpec::new(4.0), ManualClock::new());
    /// let slots: Vec<u64> = (0..3).map(|_| limiter.acquire().scheduled_nanos()).collect();
    /// assert_eq!(slots, [0, 250_000_000, 500_000_000]);
    /// ```
    #[inline]
    pub fn acquire(&self) -> Grant {
        self.acquire_n(1)
    }

    /// Takes `n` consecutive slots at once (a stride), waiting until the first is due.
    /// The grant's slot is the first one's; the others follow a slice apart.
    ///
    /// # Panics
    ///
    /// If `n` is 0 or more than 2^20.
    ///
    /// ```
    /// use paceline::{ManualClock, RateLimiter, RateSpec};
    /// let limiter = RateLimiter::with_clock(RateSpec::new(1000.0), ManualClock::new());
    /// assert_eq!(limiter.acquire_n(10).scheduled_nanos(), 0);
    /// assert_eq!(limiter.acquire().scheduled_nanos(), 10_000_000);
    /// ```
    #[inline]
    pub fn acquire_n(&self, n: u32) -> Grant {
        assert!(
            n >= 1 && u64::from(n) <= MAX_BATCH,
            "acquire_n: n must be 1..=2^20, got {n}"
        );
        if self.thread_scope.load(Ordering::Relaxed) {
            self.local().acquire(&self.shared, u64::from(n))
        } else {
            self.main.acquire(&self.shared, u64::from(n))
        }
    }

    /// Like [`acquire`](Self::acquire) (and as cheap), for a caller that may be told to leave while
    /// the limiter is paused: a caller blocked by a pause returns `None`, holding no
    /// slot, once `give_up()` holds. It is asked when the caller meets the pause and
    /// each time [`wake`](Self::wake) is called; make it hold, then call `wake`. It is
    /// not asked while the limiter runs: a caller waiting for its slot holds that slot
    /// and returns with it. The engine retires workers this way while a run is
    /// paused.
    ///
    /// ```
    /// use paceline::{ManualClock, RateLimiter, RateSpec};
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// let limiter = Arc::new(RateLimiter::with_clock(RateSpec::paused(), ManualClock::new()));
    /// let leave = Arc::new(AtomicBool::new(false));
    /// let waiter = {
    ///     let (limiter, leave) = (Arc::clone(&limiter), Arc::clone(&leave));
    ///     std::thread::spawn(move || limiter.acquire_unless(|| leave.load(Ordering::Relaxed)))
    /// };
    /// leave.store(true, Ordering::Relaxed);
    /// limiter.wake();
    /// assert_eq!(waiter.join().unwrap(), None);
    /// ```
    pub fn acquire_unless(&self, give_up: impl Fn() -> bool) -> Option<Grant> {
        if self.thread_scope.load(Ordering::Relaxed) {
            self.local().acquire_unless(&self.shared, 1, &give_up)
        } else {
            self.main.acquire_unless(&self.shared, 1, &give_up)
        }
    }

    /// Wakes the callers blocked by a pause so that they ask their `give_up` again
    /// (see [`acquire_unless`](Self::acquire_unless)); the others go back to waiting
    /// for the pause to end.
    ///
    /// ```
    /// let limiter = paceline::RateLimiter::new(paceline::RateSpec::paused());
    /// limiter.wake(); // nobody waits: nothing happens
    /// ```
    pub fn wake(&self) {
        self.shared.signal.notify();
    }

    /// Takes the next slot without blocking a thread: the returned future completes
    /// with the [`Grant`] when the slot is due. The same contract as
    /// [`acquire`](Self::acquire): the same slots, strictness and release window, a
    /// start never earlier than the first poll and read when the future completes, a
    /// stopped grant once stopped, and a pause waited out. Any executor can drive it;
    /// the wait is a wake-up from the clock's timer ([`Clock::wake_at`]), and a slot
    /// already due completes on the first poll without one.
    ///
    /// The slot is taken at the first poll. **Cancel-safe**: dropping the future before
    /// it completes gives its slot back if no later slot was taken since; otherwise
    /// the slot is forfeited, never started by anyone, and counted in
    /// [`LimiterStats::missed_slots`] and `idle_nanos`, not in `grants`. See
    /// `docs/embedding.md`.
    ///
    /// ```
    /// use paceline::{ManualClock, RateLimiter, RateSpec};
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::task::{Context, Poll, Waker};
    /// let clock = ManualClock::new();
    /// let limiter = RateLimiter::with_clock(RateSpec::new(1000.0), clock.clone());
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let mut first = pin!(limiter.acquire_async());
    /// let Poll::Ready(g) = first.as_mut().poll(&mut cx) else { panic!("slot 0 is due") };
    /// assert_eq!(g.scheduled_nanos(), 0);
    /// let mut second = pin!(limiter.acquire_async());
    /// assert!(second.as_mut().poll(&mut cx).is_pending()); // slot 1 ms
    /// clock.advance_nanos(1_000_000);
    /// let Poll::Ready(g) = second.as_mut().poll(&mut cx) else { panic!("due now") };
    /// assert_eq!((g.scheduled_nanos(), g.start_nanos()), (1_000_000, 1_000_000));
    /// ```
    #[inline]
    pub fn acquire_async(&self) -> Acquire<'_, C> {
        self.acquire_n_async(1)
    }

    /// Takes `n` consecutive slots at once, as [`acquire_n`](Self::acquire_n), without
    /// blocking a thread; see [`acquire_async`](Self::acquire_async).
    ///
    /// # Panics
    ///
    /// If `n` is 0 or more than 2^20.
    ///
    /// ```
    /// use paceline::{ManualClock, RateLimiter, RateSpec};
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::task::{Context, Poll, Waker};
    /// let limiter = RateLimiter::with_clock(RateSpec::new(1000.0), ManualClock::new());
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let Poll::Ready(g) = pin!(limiter.acquire_n_async(10)).poll(&mut cx) else { panic!() };
    /// assert_eq!((g.scheduled_nanos(), g.count()), (0, 10));
    /// assert_eq!(limiter.acquire().scheduled_nanos(), 10_000_000);
    /// ```
    pub fn acquire_n_async(&self, n: u32) -> Acquire<'_, C> {
        assert!(
            n >= 1 && u64::from(n) <= MAX_BATCH,
            "acquire_n_async: n must be 1..=2^20, got {n}"
        );
        Acquire::new(self, n)
    }

    /// What every schedule shares (for the async acquire).
    pub(super) fn shared(&self) -> &Shared<C> {
        &self.shared
    }

    /// The schedule an acquire on this thread takes its slot from.
    pub(super) fn target(&self) -> Target<'_> {
        if self.thread_scope.load(Ordering::Relaxed) {
            Target::Local(self.local())
        } else {
            Target::Main(&self.main)
        }
    }

    /// Takes the next slot only if it is due now; otherwise says when it will be.
    /// Never blocks.
    ///
    /// ```
    /// use paceline::{ManualClock, RateLimiter, RateSpec, Refused};
    /// use std::time::Duration;
    /// let clock = ManualClock::new();
    /// let limiter = RateLimiter::with_clock(RateSpec::new(100.0), clock.clone());
    /// assert!(limiter.try_acquire().is_ok());
    /// assert_eq!(limiter.try_acquire(), Err(Refused::NotUntil(10_000_000)));
    /// clock.advance(Duration::from_millis(10));
    /// assert!(limiter.try_acquire().is_ok());
    /// ```
    pub fn try_acquire(&self) -> Result<Grant, Refused> {
        if self.thread_scope.load(Ordering::Relaxed) {
            self.local().try_acquire(&self.shared, 1)
        } else {
            self.main.try_acquire(&self.shared, 1)
        }
    }

    /// Applies a new spec. Slots already granted keep their times; verbs `start` and
    /// `configure` keep lag and idle, `restart` re-anchors at now. Rate 0 pauses. The
    /// change is visible to the next acquire.
    ///
    /// A raise while the schedule runs more than one new slice ahead of now cuts it:
    /// the next slot is one new slice after the latest slot due before the cut (and
    /// not before now), and a caller waiting toward a later slot gives it back (not a
    /// grant, not missed) and takes one of the new rate. See `docs/pacing.md`, "Rate
    /// raised from far ahead".
    ///
    /// ```
    /// use paceline::{ManualClock, RateLimiter, RateSpec};
    /// let clock = ManualClock::new();
    /// let limiter = RateLimiter::with_clock(RateSpec::new(10.0), clock.clone());
    /// limiter.acquire(); // slot 0; the next at 100 ms
    /// clock.set(50_000_000);
    /// limiter.set_spec(RateSpec::new(20.0)); // the cursor is one new slice ahead
    /// assert_eq!(limiter.acquire().scheduled_nanos(), 100_000_000);
    /// limiter.set_spec(RateSpec::new(0.01)); // lowered: the next slot 150 ms, then 100 s on
    /// assert_eq!(limiter.acquire().scheduled_nanos(), 150_000_000);
    /// limiter.set_spec(RateSpec::new(1000.0)); // raised from far ahead: cut
    /// assert_eq!(limiter.acquire().scheduled_nanos(), 151_000_000);
    /// ```
    pub fn set_spec(&self, spec: RateSpec) {
        let mut threads = sync::lock(&self.threads);
        threads.prune(&self.shared);
        let thread_scope = spec.scope_value() == Scope::Thread;
        // The schedules the new scope does not use stand aside: their time until they
        // are used again is forfeited, never released as a backlog.
        self.main.set_spec(&self.shared, spec, !thread_scope);
        for s in threads.list.iter() {
            s.set_spec(&self.shared, spec, thread_scope);
        }
        self.thread_scope.store(thread_scope, Ordering::Relaxed);
    }

    /// How this limiter's slots are spaced (see [`RateLimiterBuilder::arrivals`]).
    ///
    /// ```
    /// use paceline::{Arrivals, RateLimiter, RateSpec};
    /// assert_eq!(RateLimiter::new(RateSpec::new(1.0)).arrivals(), Arrivals::Uniform);
    /// ```
    pub fn arrivals(&self) -> Arrivals {
        self.arrivals
    }

    /// The spec in force.
    ///
    /// ```
    /// use paceline::{ManualClock, RateLimiter, RateSpec};
    /// let limiter = RateLimiter::with_clock(RateSpec::new(10.0), ManualClock::new());
    /// assert_eq!(limiter.spec(), RateSpec::new(10.0));
    /// ```
    pub fn spec(&self) -> RateSpec {
        self.main.spec()
    }

    /// Stops: every blocked acquire returns promptly with a stopped grant, and so does
    /// every later one. Stopping is final.
    ///
    /// ```
    /// use paceline::{ManualClock, RateLimiter, RateSpec};
    /// let limiter = RateLimiter::with_clock(RateSpec::new(10.0), ManualClock::new());
    /// limiter.stop();
    /// assert!(limiter.is_stopped());
    /// assert!(limiter.try_acquire().unwrap().is_stopped());
    /// ```
    pub fn stop(&self) {
        let threads = sync::lock(&self.threads);
        self.main.stop(&self.shared);
        for s in threads.list.iter() {
            s.stop(&self.shared);
        }
        drop(threads);
        self.shared.signal.stop();
    }

    /// Whether [`stop`](Self::stop) was called.
    ///
    /// ```
    /// let limiter = paceline::RateLimiter::new(paceline::RateSpec::new(1.0));
    /// assert!(!limiter.is_stopped());
    /// ```
    pub fn is_stopped(&self) -> bool {
        self.shared.signal.is_stopped()
    }

    /// Nanoseconds since the limiter's origin (its construction), on its clock.
    ///
    /// ```
    /// use paceline::{ManualClock, RateLimiter, RateSpec};
    /// let clock = ManualClock::starting_at(500);
    /// let limiter = RateLimiter::with_clock(RateSpec::new(1.0), clock.clone());
    /// clock.advance_nanos(20);
    /// assert_eq!(limiter.now(), 20);
    /// ```
    pub fn now(&self) -> Nanos {
        self.shared.now()
    }

    /// The clock.
    ///
    /// ```
    /// use paceline::{Clock, ManualClock, RateLimiter, RateSpec};
    /// let limiter = RateLimiter::with_clock(RateSpec::new(1.0), ManualClock::starting_at(9));
    /// assert_eq!(limiter.clock().now(), 9);
    /// ```
    pub fn clock(&self) -> &C {
        &self.shared.clock
    }

    /// The waiting strategy.
    ///
    /// ```
    /// use paceline::{ManualClock, RateLimiter, RateSpec, Waiting};
    /// let limiter = RateLimiter::with_clock(RateSpec::new(1.0), ManualClock::new());
    /// assert_eq!(limiter.waiting(), Waiting::exact());
    /// ```
    pub fn waiting(&self) -> Waiting {
        self.shared.waiting
    }

    /// The accounting so far: grants, allocated and idle time, missed slots, lag. In
    /// thread scope, the sum over the threads' schedules (lag: the largest).
    ///
    /// ```
    /// use paceline::{ManualClock, RateLimiter, RateSpec};
    /// use std::time::Duration;
    /// let clock = ManualClock::new();
    /// let limiter = RateLimiter::with_clock(RateSpec::new(1000.0).strictness(1.0), clock.clone());
    /// limiter.acquire();
    /// clock.advance(Duration::from_millis(5));
    /// limiter.acquire(); // 4 ms late: strict forfeits it
    /// let s = limiter.stats();
    /// assert_eq!((s.grants, s.idle_nanos, s.allocated_nanos), (2, 4_000_000, 2_000_000));
    /// assert_eq!(s.missed_slots, 4.0);
    /// ```
    pub fn stats(&self) -> LimiterStats {
        let spec = self.spec();
        let thread_scope = self.thread_scope.load(Ordering::Relaxed);
        let mut ended = None;
        let all: Vec<ScheduleStats> = if thread_scope {
            let threads = sync::lock(&self.threads);
            ended = Some(threads.ended);
            threads.list.iter().map(|s| s.stats(&self.shared)).collect()
        } else {
            vec![self.main.stats(&self.shared)]
        };
        // The schedules of threads that ended add their counts, nothing else.
        let mut total = ended.unwrap_or_default();
        let (mut cursor, mut last_seen, mut lag) = (0, 0, None::<i64>);
        for s in &all {
            total.add_counts(s);
            cursor = cursor.max(s.cursor);
            last_seen = last_seen.max(s.last_seen);
            if s.anchored {
                let l = s.last_seen as i64 - s.cursor as i64;
                lag = Some(lag.map_or(l, |m| m.max(l)));
            }
        }
        LimiterStats {
            spec,
            grants: total.grants,
            allocated_nanos: total.allocated,
            idle_nanos: total.idle,
            missed_slots: total.missed,
            paused_slots: total.paused,
            lag_nanos: lag.unwrap_or(0),
            cursor_nanos: cursor,
            last_seen_nanos: last_seen,
            epochs: total.epochs,
            stale_epochs: total.stale,
            stopped: self.is_stopped(),
            schedules: all.len(),
        }
    }

    /// This thread's schedule (thread scope), created on first use.
    fn local(&self) -> StdArc<Schedule> {
        LOCAL.with(|local| {
            let mut local = local.borrow_mut();
            if let Some(s) = local
                .iter()
                .find(|(id, _)| *id == self.id)
                .and_then(|(_, w)| w.upgrade())
            {
                return s;
            }
            local.retain(|(id, w)| *id != self.id && w.strong_count() > 0);
            // Under the threads lock from reading the spec to joining the list: a
            // change of spec or a stop either comes first and is read here, or comes
            // after and finds this schedule in the list.
            let mut threads = sync::lock(&self.threads);
            threads.prune(&self.shared);
            threads.created += 1;
            let arrivals = self.arrivals.for_thread(threads.created);
            let s = StdArc::new(Schedule::new(self.main.spec(), true, arrivals));
            if self.main.is_stopped() {
                s.stop(&self.shared);
            }
            threads.list.push(StdArc::clone(&s));
            local.push((self.id, StdArc::downgrade(&s)));
            s
        })
    }
}

impl<C: Clock> fmt::Debug for RateLimiter<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiter")
            .field("spec", &self.spec())
            .field("clock", &self.shared.clock)
            .field("stopped", &self.is_stopped())
            .finish()
    }
}

/// Accounting of a limiter; see [`RateLimiter::stats`].
///
/// ```
/// let limiter = paceline::RateLimiter::with_clock(paceline::RateSpec::new(10.0), paceline::ManualClock::new());
/// assert_eq!(limiter.stats().grants, 0);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LimiterStats {
    /// The spec in force.
    pub spec: RateSpec,
    /// Slots granted (a batch of n counts n). A thread may take several consecutive
    /// slots at once (while the schedule is behind, or ahead at fine spacings) and
    /// hand them out on its next acquires; they count here when taken, so this may run
    /// ahead of the ops started, by at most 63 per thread for each thread that stops,
    /// each reconfiguration that voids reservations, and each move of a thread to
    /// another limiter, which a thread makes at most once per 4096 acquires while
    /// reserving (see `docs/pacing.md`, "Reservations").
    pub grants: u64,
    /// Schedule time handed to ops: the sum of their slices.
    pub allocated_nanos: u64,
    /// Schedule time forfeited: never used, never owed again (strict modes, pauses).
    pub idle_nanos: u64,
    /// Idle time in slices: the slots that will never be granted.
    pub missed_slots: f64,
    /// Of `missed_slots`, those forfeited while away: paused (the spec at rate
    /// 0) or out of use (a schedule the scope in force does not use), a
    /// length in slices of the rate before it, per schedule; nothing before
    /// the first acquire. `missed_slots - paused_slots` is what the schedule
    /// missed while it ran.
    pub paused_slots: f64,
    /// Last-seen time minus the cursor: positive when the schedule is behind the clock.
    pub lag_nanos: i64,
    /// The slot of the next op.
    pub cursor_nanos: Nanos,
    /// The latest clock reading any caller published.
    pub last_seen_nanos: Nanos,
    /// Epochs started: reconfigurations, pauses, rollovers.
    pub epochs: u64,
    /// Grants whose epoch was overwritten before the taker could read it (granted at
    /// once with wait 0); should stay 0 outside pathological reconfiguration storms.
    pub stale_epochs: u64,
    /// Whether the limiter is stopped.
    pub stopped: bool,
    /// Schedules summed: 1, or the number of threads in thread scope.
    pub schedules: usize,
}
