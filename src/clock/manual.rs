//! The manual clock: time moves when a test says so, or when something waits on it.

use super::timer::{self, TimerQueue};
use super::{Clock, Signal, Waiting};
use crate::nanos::{self, Nanos};
use crate::sync::{self, Arc, AtomicU64, Mutex, Ordering};
use std::sync::OnceLock;
use std::task::Waker;
use std::time::Duration;

// Ground rules: `now` is a single AtomicU64 written by `advance`/`set`/`wait_until`
// (fetch_add / fetch_max, so concurrent movers never lose each other's time) and
// read by `now`. For readers it publishes no other memory: `now` is Relaxed.
//
// The timer queue (async waits, `wake_at`) is created on the first registration and
// fired by every move of the clock. A registration pushes its entry under the queue's
// lock and then reads the clock with an RMW (`fetch_add(0)`, AcqRel); every mover
// moves the clock with an AcqRel RMW and then looks for the queue. RMWs on `now` are
// totally ordered: if the registration's RMW comes first, the mover's RMW reads from
// it (a release sequence), so the mover sees the queue and, taking its lock after
// the push, fires the entry; if the mover's comes first, the registration reads the
// moved time and fires the entry itself. Either way no wake-up is lost.

/// A clock that moves only when told to; waiting on it jumps it to the deadline.
///
/// It starts at 0 ns. Clones share the same time, so a test keeps one clone and
/// hands another to the limiter.
///
/// ```
/// use paceline::{ManualClock, RateLimiter, RateSpec};
/// use std::time::Duration;
/// let clock = ManualClock::new();
/// let limiter = RateLimiter::with_clock(RateSpec::new(1000.0), clock.clone());
/// limiter.acquire(); // slot 0, now 0
/// limiter.acquire(); // slot 1 ms: waiting advances the clock
/// assert_eq!(clock.now_duration(), Duration::from_millis(1));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
    timers: Arc<OnceLock<Mutex<TimerQueue>>>,
}

impl ManualClock {
    /// A new clock reading 0 ns.
    ///
    /// ```
    /// use paceline::{Clock, ManualClock};
    /// assert_eq!(ManualClock::new().now(), 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// A new clock reading `start` ns.
    ///
    /// ```
    /// use paceline::{Clock, ManualClock};
    /// assert_eq!(ManualClock::starting_at(42).now(), 42);
    /// ```
    pub fn starting_at(start: Nanos) -> Self {
        Self {
            now: Arc::new(AtomicU64::new(start)),
            timers: Arc::default(),
        }
    }

    /// Moves the clock forward by `d`.
    ///
    /// ```
    /// use paceline::{Clock, ManualClock};
    /// use std::time::Duration;
    /// let c = ManualClock::new();
    /// c.advance(Duration::from_micros(3));
    /// assert_eq!(c.now(), 3_000);
    /// ```
    pub fn advance(&self, d: Duration) {
        self.advance_nanos(nanos::from_duration(d));
    }

    /// Moves the clock forward by `n` nanoseconds.
    ///
    /// ```
    /// use paceline::{Clock, ManualClock};
    /// let c = ManualClock::new();
    /// c.advance_nanos(7);
    /// assert_eq!(c.now(), 7);
    /// ```
    pub fn advance_nanos(&self, n: Nanos) {
        let before = self.now.fetch_add(n, Ordering::AcqRel);
        self.fire(before.saturating_add(n));
    }

    /// Moves the clock to `t` if `t` is later than now; never moves it back.
    ///
    /// ```
    /// use paceline::{Clock, ManualClock};
    /// let c = ManualClock::new();
    /// c.set(10);
    /// c.set(5);
    /// assert_eq!(c.now(), 10);
    /// ```
    pub fn set(&self, t: Nanos) {
        let before = self.now.fetch_max(t, Ordering::AcqRel);
        self.fire(before.max(t));
    }

    /// Wakes the async waits due at `now` (see [`Clock::wake_at`]).
    fn fire(&self, now: Nanos) {
        if let Some(queue) = self.timers.get() {
            let due = sync::lock(queue).take_due(now);
            timer::wake_all(due);
        }
    }

    /// Async waits queued and not yet woken.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn queued_timers(&self) -> usize {
        self.timers.get().map_or(0, |q| sync::lock(q).len())
    }

    /// The current reading as a [`Duration`] since the clock's origin.
    ///
    /// ```
    /// use paceline::ManualClock;
    /// assert_eq!(ManualClock::starting_at(1_000).now_duration().as_micros(), 1);
    /// ```
    pub fn now_duration(&self) -> Duration {
        nanos::to_duration(self.now.load(Ordering::Relaxed))
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Nanos {
        self.now.load(Ordering::Relaxed)
    }

    fn wait_until(&self, deadline: Nanos, _waiting: &Waiting, _signal: &Signal) -> Nanos {
        let before = self.now.fetch_max(deadline, Ordering::AcqRel);
        let after = before.max(deadline);
        if after > before {
            self.fire(after);
        }
        after
    }

    fn wake_at(&self, deadline: Nanos, _waiting: &Waiting, waker: &Waker) {
        let queue = self
            .timers
            .get_or_init(|| Mutex::new(TimerQueue::default()));
        let mut q = sync::lock(queue);
        q.push(deadline, 0, waker);
        // See the ground rules: an RMW, so that a move this registration's push was
        // too late for is read here.
        let now = self.now.fetch_add(0, Ordering::AcqRel);
        let due = q.take_due(now);
        drop(q);
        timer::wake_all(due);
    }

    fn default_waiting(&self) -> Waiting {
        Waiting::exact()
    }
}
