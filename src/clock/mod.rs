//! Clocks and waiting.
//!
//! A [`Clock`] gives monotone nanoseconds since its own origin and knows how to wait
//! for a deadline. Two ship with paceline:
//!
//! - [`MonotonicClock`]: the real clock (the CPU's invariant TSC through `quanta`
//!   where available, the OS monotonic clock otherwise). Waiting sleeps and spins
//!   according to a [`Waiting`] strategy and is cut short by a [`Signal`].
//! - [`ManualClock`]: time that moves only when told to. Waiting on it advances it to
//!   the deadline at once, so a ten-second run at a million ops per second takes
//!   milliseconds and gives the same numbers every time.
//!
//! ```
//! use paceline::{Clock, ManualClock};
//! use std::time::Duration;
//! let clock = ManualClock::new();
//! clock.advance(Duration::from_millis(5));
//! assert_eq!(clock.now(), 5_000_000);
//! ```

mod manual;
mod monotonic;
mod signal;
mod timer;
mod waiting;

pub use manual::ManualClock;
pub use monotonic::MonotonicClock;
pub(crate) use monotonic::timeline_now;
pub use signal::Signal;
pub(crate) use waiting::PARK_MAX;
#[cfg(not(loom))]
pub(crate) use waiting::apply_timer_slack;
pub use waiting::{Waiting, WaitingBuilder};

use crate::nanos::Nanos;
use std::fmt;
use std::task::Waker;

/// A source of monotone nanoseconds that can wait for a deadline.
///
/// Implement it to drive paceline from your own notion of time (a simulation, a
/// replay). Readings must never go backwards for one caller; paceline also keeps
/// the latest reading it saw, so a clock whose cores disagree slightly is tolerated.
///
/// ```
/// use paceline::{Clock, ManualClock, Signal, Waiting};
/// let clock = ManualClock::new();
/// let after = clock.wait_until(1_000, &Waiting::exact(), &Signal::new());
/// assert_eq!(after, 1_000); // waiting on a manual clock moves it
/// ```
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current reading, in nanoseconds since this clock's origin.
    fn now(&self) -> Nanos;

    /// Blocks until the clock reads at least `deadline`, or until `signal` is stopped,
    /// and returns the reading when it returns. `waiting` says how to spend the time
    /// (sleep, spin); a clock that is not real may ignore it. paceline's real clock
    /// also returns early when the limiter pauses (the caller's slot is void then);
    /// a clock that waits out the deadline instead is still correct: the pacer looks
    /// at the schedule again when the wait ends, and an op whose slot a pause voided
    /// never starts.
    fn wait_until(&self, deadline: Nanos, waiting: &Waiting, signal: &Signal) -> Nanos;

    /// As [`wait_until`](Self::wait_until), for a caller that read the signal's
    /// interruption count, `seen`, before it last looked at the schedule: the wait
    /// also ends if the signal was interrupted since then (an interruption between
    /// that look and the wait would otherwise be lost, and the caller would sleep
    /// to a slot the change gave back). paceline's real clock overrides it.
    ///
    /// By default, calls [`wait_until`](Self::wait_until) (a clock whose wait
    /// ignores interruptions loses nothing by it).
    #[doc(hidden)]
    fn wait_until_seen(
        &self,
        deadline: Nanos,
        waiting: &Waiting,
        signal: &Signal,
        seen: u64,
    ) -> Nanos {
        let _ = seen;
        self.wait_until(deadline, waiting, signal)
    }

    /// The waiting strategy a limiter on this clock uses unless told otherwise.
    ///
    /// By default, [`Waiting::default()`]. [`ManualClock`] answers [`Waiting::exact()`]
    /// so that tests see ops start exactly at their slots.
    fn default_waiting(&self) -> Waiting {
        Waiting::default()
    }

    /// This clock's origin on the process-wide monotonic timeline, if its readings are
    /// that timeline's minus a fixed origin (as [`MonotonicClock`]'s are).
    ///
    /// A limiter on such a clock hands out some grants without reading the clock (a
    /// slot already due by an earlier reading, or reserved by this thread): their
    /// start is read from the timeline when it is asked for (see [`Grant`]). On any
    /// other clock every grant reads the clock when it is handed out.
    ///
    /// By default, `None`. Answer `Some` only for a clock that reads the timeline.
    ///
    /// [`Grant`]: crate::Grant
    ///
    /// ```
    /// use paceline::{Clock, ManualClock, MonotonicClock};
    /// assert!(MonotonicClock::new().timeline_origin().is_some());
    /// assert_eq!(ManualClock::new().timeline_origin(), None);
    /// ```
    fn timeline_origin(&self) -> Option<Nanos> {
        None
    }

    /// Arranges for `waker` to be woken once the clock reads at least `deadline`: how
    /// an async acquire ([`RateLimiter::acquire_async`]) waits for its slot without
    /// blocking a thread. A deadline already passed may wake at once, on the caller's
    /// thread. Waking early is allowed (the caller checks the clock again and asks
    /// again); never waking is not.
    ///
    /// [`MonotonicClock`] queues it on paceline's timer thread, which sleeps and spins
    /// as `waiting` says; [`ManualClock`] queues it and wakes it when the clock is moved
    /// past `deadline`, so tests are deterministic.
    ///
    /// By default, wakes `waker` at once: an async acquire on a clock of your own then
    /// re-polls until its slot is due, which is correct but keeps a core busy.
    /// Override it to wake at the deadline.
    ///
    /// [`RateLimiter::acquire_async`]: crate::RateLimiter::acquire_async
    ///
    /// ```
    /// use paceline::{Clock, ManualClock, Waiting};
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::task::{Wake, Waker};
    /// struct Flag(AtomicBool);
    /// impl Wake for Flag {
    ///     fn wake(self: Arc<Self>) { self.0.store(true, Ordering::Relaxed) }
    /// }
    /// let flag = Arc::new(Flag(AtomicBool::new(false)));
    /// let clock = ManualClock::new();
    /// clock.wake_at(1_000, &Waiting::exact(), &Waker::from(flag.clone()));
    /// assert!(!flag.0.load(Ordering::Relaxed));
    /// clock.advance_nanos(1_000);
    /// assert!(flag.0.load(Ordering::Relaxed));
    /// ```
    fn wake_at(&self, deadline: Nanos, waiting: &Waiting, waker: &Waker) {
        let _ = (deadline, waiting);
        waker.wake_by_ref();
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now(&self) -> Nanos {
        (**self).now()
    }
    fn wait_until(&self, deadline: Nanos, waiting: &Waiting, signal: &Signal) -> Nanos {
        (**self).wait_until(deadline, waiting, signal)
    }
    fn default_waiting(&self) -> Waiting {
        (**self).default_waiting()
    }
    fn timeline_origin(&self) -> Option<Nanos> {
        (**self).timeline_origin()
    }
    fn wake_at(&self, deadline: Nanos, waiting: &Waiting, waker: &Waker) {
        (**self).wake_at(deadline, waiting, waker)
    }
}
