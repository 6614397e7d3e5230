//! Waiting strategies: how an early caller spends the time until its slot.
//!
//! Sleeping is costly in a virtual machine: each OS sleep burns 12-25 us of CPU and
//! wakes 15-70 us late depending on the thread's timer slack. Spinning is exact but
//! burns a core. Releasing an op slightly early costs nothing and leaves the long-run
//! rate untouched, because slots still come from the schedule. A [`Waiting`] picks a
//! point in that trade-off; `docs/pacing.md` and `benches/README.md` hold the
//! measured costs of each preset.

use super::{Clock, Signal};
use crate::nanos::{self, Nanos};
use std::cell::Cell;
use std::time::Duration;

/// How an early caller waits for its slot.
///
/// Three knobs, applied in order to the time left until the deadline:
///
/// 1. **release window**: if at most this much is left, return now (the op starts a
///    little early; its wait is 0 and the schedule is unchanged).
/// 2. **spin tail**: sleep until this much is left, then spin to the deadline.
/// 3. **timer slack**: the kernel timer slack to set on a thread before it sleeps
///    (Linux only); lower slack wakes closer to the deadline.
///
/// ```
/// use paceline::Waiting;
/// use std::time::Duration;
/// let w = Waiting::builder()
///     .release_window(Duration::from_micros(20))
///     .spin_tail(Duration::from_micros(50))
///     .build();
/// assert_eq!(w.release_window_nanos(), 20_000);
/// assert_eq!(w.spin_tail_nanos(), 50_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    release_window: Nanos,
    spin_tail: Nanos,
    timer_slack: Option<Nanos>,
    park: bool,
}

impl Default for Waiting {
    /// The adaptive strategy, [`Waiting::adaptive()`].
    fn default() -> Self {
        Self::adaptive()
    }
}

/// The longest a parked caller waits before it looks at the schedule again (see
/// [`WaitingBuilder::park_when_ahead`]).
pub(crate) const PARK_MAX: Duration = Duration::from_millis(5);

/// Spinning longer than this with no sleep in between yields the CPU between spins.
const SPIN_YIELD_AFTER: Nanos = 20_000;

impl Waiting {
    /// No early release, no spinning, the thread's timer slack left alone: ops start
    /// at their slots or later. The strategy of [`ManualClock`](crate::ManualClock).
    ///
    /// ```
    /// let w = paceline::Waiting::exact();
    /// assert_eq!(w.release_window_nanos(), 0);
    /// ```
    pub const fn exact() -> Self {
        Self {
            release_window: 0,
            spin_tail: 0,
            timer_slack: None,
            park: false,
        }
    }

    /// Sleep only, with the timer slack lowered to 1 ns: cheapest in CPU for waits
    /// longer than a sleep's cost, late by the OS's wake-up latency.
    ///
    /// ```
    /// assert_eq!(paceline::Waiting::sleep().spin_tail_nanos(), 0);
    /// ```
    pub const fn sleep() -> Self {
        Self {
            release_window: 0,
            spin_tail: 0,
            timer_slack: Some(1),
            park: false,
        }
    }

    /// Sleep, then spin the last 100 us (as the `spin_sleep` crate does by default):
    /// ops start within a microsecond of their slot, at up to a core of CPU at fine
    /// spacings.
    ///
    /// ```
    /// assert_eq!(paceline::Waiting::spin_sleep().spin_tail_nanos(), 100_000);
    /// ```
    pub const fn spin_sleep() -> Self {
        Self {
            release_window: 0,
            spin_tail: 100_000,
            timer_slack: Some(1),
            park: false,
        }
    }

    /// Spin (yielding the CPU between spins) for the whole wait: the most exact and the
    /// most costly; for rates so high that every wait is a few microseconds.
    ///
    /// ```
    /// assert_eq!(paceline::Waiting::spin().spin_tail_nanos(), u64::MAX);
    /// ```
    pub const fn spin() -> Self {
        Self {
            release_window: 0,
            spin_tail: u64::MAX,
            timer_slack: None,
            park: false,
        }
    }

    /// The default: sleep with 1 ns timer slack, no spin, release ops whose slot is at
    /// most 50 us away at once. Bursts stay within 50 us of schedule, and waits at
    /// low rates are the OS wake-up latency (15-35 us here).
    ///
    /// At fine spacings a thread ahead of the schedule reserves the few slots half
    /// the window holds and sleeps once for them (`docs/pacing.md`,
    /// "Reservations"): 100K ops/s on 8 threads costs 36-39 % of a core here.
    ///
    /// Parking ([`WaitingBuilder::park_when_ahead`]) is off: before reservations it
    /// cut that case from 166 % to 97 % of a core, but a parked thread is not there
    /// when the threads serving the schedule are busy in their ops, so real
    /// workloads lost throughput (HTTP against nginx, 4 threads: 53K requests/s held
    /// within 1 % with parking, 79K without); with reservations it no longer saves
    /// CPU (55 % of a core, p50 wait 109 us, at 100K on 8 threads).
    ///
    /// ```
    /// let w = paceline::Waiting::adaptive();
    /// assert_eq!(w.release_window_nanos(), 50_000);
    /// assert!(!w.parks_when_ahead());
    /// ```
    pub const fn adaptive() -> Self {
        Self {
            release_window: 50_000,
            spin_tail: 0,
            timer_slack: Some(1),
            park: false,
        }
    }

    /// A builder starting from [`Waiting::exact()`].
    ///
    /// ```
    /// let w = paceline::Waiting::builder().build();
    /// assert_eq!(w, paceline::Waiting::exact());
    /// ```
    pub fn builder() -> WaitingBuilder {
        WaitingBuilder {
            inner: Self::exact(),
        }
    }

    /// Ops whose slot is at most this many nanoseconds away are released at once.
    ///
    /// ```
    /// assert_eq!(paceline::Waiting::sleep().release_window_nanos(), 0);
    /// ```
    pub const fn release_window_nanos(&self) -> Nanos {
        self.release_window
    }

    /// The final part of a wait that is spun instead of slept, in nanoseconds.
    ///
    /// ```
    /// assert_eq!(paceline::Waiting::exact().spin_tail_nanos(), 0);
    /// ```
    pub const fn spin_tail_nanos(&self) -> Nanos {
        self.spin_tail
    }

    /// Whether a caller parks, without taking a slot, while the schedule is far ahead
    /// and another caller already sleeps on an earlier slot; see
    /// [`WaitingBuilder::park_when_ahead`].
    ///
    /// ```
    /// assert!(!paceline::Waiting::sleep().parks_when_ahead());
    /// ```
    pub const fn parks_when_ahead(&self) -> bool {
        self.park
    }

    /// The timer slack set on a thread before it sleeps, if any.
    ///
    /// ```
    /// assert_eq!(paceline::Waiting::sleep().timer_slack_nanos(), Some(1));
    /// ```
    pub const fn timer_slack_nanos(&self) -> Option<Nanos> {
        self.timer_slack
    }

    /// Waits on a real clock until `deadline`, or until `signal` stops or is
    /// interrupted (a pause).
    pub(crate) fn wait_real<C: Clock + ?Sized>(
        &self,
        clock: &C,
        deadline: Nanos,
        signal: &Signal,
    ) -> Nanos {
        self.wait_real_seen(clock, deadline, signal, signal.interruptions())
    }

    /// As [`wait_real`](Self::wait_real), also ended by an interruption after the
    /// count `seen` (read by the caller before it decided to wait).
    pub(crate) fn wait_real_seen<C: Clock + ?Sized>(
        &self,
        clock: &C,
        deadline: Nanos,
        signal: &Signal,
        seen: u64,
    ) -> Nanos {
        let mut spun_since: Option<Nanos> = None;
        loop {
            let now = clock.now();
            if now >= deadline || signal.cut_short(seen) {
                return now;
            }
            let left = deadline - now;
            if left > self.spin_tail {
                apply_timer_slack(self.timer_slack);
                signal.sleep(nanos::to_duration(left - self.spin_tail), seen);
                spun_since = None;
            } else {
                let since = *spun_since.get_or_insert(now);
                if now - since > SPIN_YIELD_AFTER {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
    }
}

/// Builds a custom [`Waiting`]; see the knobs there.
///
/// ```
/// use paceline::Waiting;
/// use std::time::Duration;
/// let w = Waiting::builder().timer_slack(Duration::from_micros(5)).build();
/// assert_eq!(w.timer_slack_nanos(), Some(5_000));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct WaitingBuilder {
    inner: Waiting,
}

impl WaitingBuilder {
    /// Release ops whose slot is at most `d` away at once. By default, 0: never early.
    ///
    /// ```
    /// use std::time::Duration;
    /// let w = paceline::Waiting::builder().release_window(Duration::from_micros(7)).build();
    /// assert_eq!(w.release_window_nanos(), 7_000);
    /// ```
    pub fn release_window(mut self, d: Duration) -> Self {
        self.inner.release_window = nanos::from_duration(d);
        self
    }

    /// Spin the last `d` of each wait instead of sleeping it. By default, 0: never spin.
    ///
    /// ```
    /// use std::time::Duration;
    /// let w = paceline::Waiting::builder().spin_tail(Duration::from_micros(9)).build();
    /// assert_eq!(w.spin_tail_nanos(), 9_000);
    /// ```
    pub fn spin_tail(mut self, d: Duration) -> Self {
        self.inner.spin_tail = nanos::from_duration(d);
        self
    }

    /// Set the thread's timer slack to `d` (at least 1 ns) before sleeping; Linux only,
    /// ignored elsewhere. By default, the thread's slack is left alone.
    ///
    /// ```
    /// use std::time::Duration;
    /// let w = paceline::Waiting::builder().timer_slack(Duration::ZERO).build();
    /// assert_eq!(w.timer_slack_nanos(), Some(1));
    /// ```
    pub fn timer_slack(mut self, d: Duration) -> Self {
        self.inner.timer_slack = Some(nanos::from_duration(d).max(1));
        self
    }

    /// Park callers the schedule does not need yet. When the next slot is further away
    /// than the release window and another caller already sleeps on an earlier slot,
    /// a caller waits without taking a slot (on a condition the limiter signals when an
    /// op starts late, when its spec changes or it stops, and at most 5 ms at a time)
    /// instead of taking the next slot
    /// and sleeping for it. At high rates with many threads, a few threads then serve
    /// the schedule, each releasing several ops per wake-up, instead of every thread
    /// sleeping once per op. Slots, starts and waits keep their meaning: a parked
    /// caller holds no slot. The cost: if the callers serving the schedule stop calling
    /// `acquire` while the others are parked, the schedule waits up to one park (5 ms)
    /// for a parked caller to notice, and then catches up as the strictness allows.
    /// By default, off (also in [`Waiting::adaptive()`]).
    ///
    /// ```
    /// let w = paceline::Waiting::builder().park_when_ahead(true).build();
    /// assert!(w.parks_when_ahead());
    /// ```
    pub fn park_when_ahead(mut self, park: bool) -> Self {
        self.inner.park = park;
        self
    }

    /// The strategy.
    ///
    /// ```
    /// let w = paceline::Waiting::builder().build();
    /// assert_eq!(w.spin_tail_nanos(), 0);
    /// ```
    pub fn build(self) -> Waiting {
        self.inner
    }
}

thread_local! {
    static SLACK: Cell<Nanos> = const { Cell::new(0) };
}

/// Sets this thread's timer slack once per distinct value (a syscall only on change).
pub(crate) fn apply_timer_slack(slack: Option<Nanos>) {
    let Some(slack) = slack else { return };
    SLACK.with(|cur| {
        if cur.get() != slack {
            cur.set(slack);
            set_thread_timer_slack(slack);
        }
    });
}

#[cfg(target_os = "linux")]
fn set_thread_timer_slack(slack: Nanos) {
    let value = std::num::NonZeroU64::new(slack.max(1));
    if let Err(e) = rustix::thread::set_current_timer_slack(value) {
        tracing::debug!("could not set timer slack to {slack} ns: {e}");
    }
}

#[cfg(not(target_os = "linux"))]
fn set_thread_timer_slack(_slack: Nanos) {}
