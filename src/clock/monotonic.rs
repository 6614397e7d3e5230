//! The real clock.

use super::{Clock, Signal, Waiting};
use crate::nanos::Nanos;
use std::fmt;
use std::sync::OnceLock;

/// The process-wide timeline every [`MonotonicClock`] reads: one calibrated `quanta`
/// source and the raw counter value that is its zero.
struct Timeline {
    source: quanta::Clock,
    zero: u64,
}

fn timeline() -> &'static Timeline {
    static TIMELINE: OnceLock<Timeline> = OnceLock::new();
    TIMELINE.get_or_init(|| {
        let source = quanta::Clock::new();
        let zero = source.raw();
        Timeline { source, zero }
    })
}

/// Nanoseconds on the process-wide monotonic timeline (since its first use).
///
/// Every [`MonotonicClock`] reads `timeline_now() - its origin`, so a reading can be
/// taken without a reference to the clock: a grant handed out without reading the
/// clock reads its start this way when asked (see [`Grant`](crate::Grant)).
#[inline]
pub(crate) fn timeline_now() -> Nanos {
    let t = timeline();
    t.source.delta_as_nanos(t.zero, t.source.raw())
}

/// The real monotonic clock: nanoseconds since the clock was created.
///
/// It reads the CPU's invariant time-stamp counter through `quanta` where the CPU has
/// one (about 7-20 ns a reading), and the OS monotonic clock otherwise. Waiting sleeps
/// and spins as the given [`Waiting`] strategy says, and returns early on a stopped
/// [`Signal`]. Every `MonotonicClock` in a process reads one timeline, each from its
/// own origin.
///
/// ```
/// use paceline::{Clock, MonotonicClock};
/// let clock = MonotonicClock::new();
/// let a = clock.now();
/// let b = clock.now();
/// assert!(b >= a);
/// ```
#[derive(Clone)]
pub struct MonotonicClock {
    /// A handle on the timeline's source (clones share its calibration).
    source: quanta::Clock,
    /// The timeline's raw zero.
    zero: u64,
    /// This clock's origin on the timeline, in ns.
    origin: Nanos,
}

impl fmt::Debug for MonotonicClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MonotonicClock")
            .field("now", &self.now())
            .finish()
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl MonotonicClock {
    /// A clock whose origin is now. The first call in a process calibrates the
    /// counter against the OS clock (a few milliseconds, once).
    ///
    /// ```
    /// use paceline::{Clock, MonotonicClock};
    /// assert!(MonotonicClock::new().now() < 1_000_000_000);
    /// ```
    pub fn new() -> Self {
        let t = timeline();
        Self {
            source: t.source.clone(),
            zero: t.zero,
            origin: timeline_now(),
        }
    }
}

impl Clock for MonotonicClock {
    #[inline]
    fn now(&self) -> Nanos {
        self.source
            .delta_as_nanos(self.zero, self.source.raw())
            .saturating_sub(self.origin)
    }

    fn wait_until(&self, deadline: Nanos, waiting: &Waiting, signal: &Signal) -> Nanos {
        waiting.wait_real(self, deadline, signal)
    }

    fn wait_until_seen(
        &self,
        deadline: Nanos,
        waiting: &Waiting,
        signal: &Signal,
        seen: u64,
    ) -> Nanos {
        waiting.wait_real_seen(self, deadline, signal, seen)
    }

    fn timeline_origin(&self) -> Option<Nanos> {
        Some(self.origin)
    }

    fn wake_at(&self, deadline: Nanos, waiting: &Waiting, waker: &std::task::Waker) {
        super::timer::wake_at_real(
            deadline.saturating_add(self.origin),
            waiting.spin_tail_nanos(),
            waker,
        );
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn every_clock_reads_the_one_timeline_from_its_origin() {
        let a = MonotonicClock::new();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = MonotonicClock::new();
        let (ta, tb, t) = (a.now(), b.now(), timeline_now());
        assert!(ta >= tb + 2_000_000, "{ta} {tb}");
        let origin = a.timeline_origin().unwrap();
        assert!(t >= origin + ta && t - (origin + ta) < 50_000_000);
    }
}
