//! The token bucket topped up by a background thread (seed 002's first bucket).

use super::{Decision, Limit, Limiter};
use crate::clock::{Clock, MonotonicClock, Signal};
use crate::nanos::Nanos;
use crate::sync::{Arc, ParkingMutex};
use std::fmt;
use std::thread::JoinHandle;
use std::time::Duration;

/// The longest the refill thread sleeps before it reads the clock again. It bounds how
/// late a refill is on a clock that is not real time (a [`ManualClock`](crate::ManualClock)
/// jumping ahead), at the cost of at most 1000 wake-ups a second.
const POLL: Duration = Duration::from_millis(1);

/// A token bucket whose tokens are added by a dedicated thread: `permits` tokens every
/// `window`, up to `burst`, as in seed 002.
///
/// Requests take whole tokens under a mutex; the refill thread takes the same mutex
/// once a window. Refills are due at `start + k × window` on the limiter's clock; the
/// thread catches up every refill that is due when it wakes. It stops, and is joined,
/// when the bucket is dropped.
///
/// **Bound**: at most `burst + permits` admissions in any window of width `window`,
/// as long as the refill thread keeps up; a thread held off the CPU for longer than
/// a window releases what it owes (capped at `burst`) when it runs again.
///
/// **Trade-offs**: a thread per limiter and a wake-up per millisecond at most (the
/// thread sleeps until the next refill, re-reading the clock at least every
/// millisecond so that a jumping manual clock is followed); refills come in steps of a
/// whole window, so permits arrive in bursts at window edges. The lazy
/// [`TokenBucket`](crate::TokenBucket) has neither cost and refills continuously.
///
/// Tests on a [`ManualClock`](crate::ManualClock) advance the clock and then wait for
/// [`caught_up`](Self::caught_up) before asking, since the refill is asynchronous.
///
/// ```
/// use paceline::{Limit, Limiter, ManualClock, RefillTokenBucket};
/// use std::time::Duration;
/// let clock = ManualClock::new();
/// let bucket = RefillTokenBucket::with_clock(Limit::per_second(10)?, clock.clone());
/// assert!(bucket.try_acquire(10).is_admitted());
/// assert_eq!(bucket.try_acquire(1).earliest(), Some(1_000_000_000)); // the next refill
/// clock.advance(Duration::from_secs(1));
/// while !bucket.caught_up() {
///     std::thread::yield_now();
/// }
/// assert!(bucket.try_acquire(10).is_admitted());
/// # Ok::<(), paceline::LimitError>(())
/// ```
pub struct RefillTokenBucket<C: Clock = MonotonicClock> {
    shared: Arc<Shared<C>>,
    thread: Option<JoinHandle<()>>,
}

struct Shared<C> {
    limit: Limit,
    state: ParkingMutex<State>,
    clock: C,
    signal: Signal,
}

#[derive(Debug, Clone, Copy)]
struct State {
    /// Whole tokens in the bucket.
    tokens: u64,
    /// When the next refill is due.
    next_refill: Nanos,
    /// Refills applied so far.
    refills: u64,
}

impl RefillTokenBucket {
    /// A full bucket on the real clock, with its refill thread started.
    ///
    /// # Panics
    ///
    /// If the operating system cannot start a thread.
    ///
    /// ```
    /// use paceline::{Limit, Limiter, RefillTokenBucket};
    /// let bucket = RefillTokenBucket::new(Limit::per_second(5)?);
    /// assert!(bucket.try_acquire(5).is_admitted());
    /// drop(bucket); // stops and joins the refill thread
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn new(limit: Limit) -> Self {
        Self::with_clock(limit, MonotonicClock::new())
    }
}

impl<C: Clock> RefillTokenBucket<C> {
    /// A full bucket on `clock`, with its refill thread started.
    ///
    /// # Panics
    ///
    /// If the operating system cannot start a thread.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, RefillTokenBucket};
    /// let bucket = RefillTokenBucket::with_clock(Limit::per_second(5)?, ManualClock::new());
    /// assert_eq!(bucket.available(), 5);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn with_clock(limit: Limit, clock: C) -> Self {
        let state = State {
            tokens: u64::from(limit.burst()),
            next_refill: clock.now().saturating_add(limit.window_nanos()),
            refills: 0,
        };
        let shared = Arc::new(Shared {
            limit,
            state: ParkingMutex::new(state),
            clock,
            signal: Signal::new(),
        });
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name("paceline-refill".into())
            .spawn(move || worker.run())
            .expect("the OS could not start the refill thread");
        Self {
            shared,
            thread: Some(thread),
        }
    }

    /// Whole tokens in the bucket now.
    ///
    /// ```
    /// use paceline::{Limit, Limiter, ManualClock, RefillTokenBucket};
    /// let bucket = RefillTokenBucket::with_clock(Limit::per_second(5)?, ManualClock::new());
    /// let _ = bucket.try_acquire(2);
    /// assert_eq!(bucket.available(), 3);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn available(&self) -> u64 {
        self.shared.state.lock().tokens
    }

    /// Whether every refill due by the clock's current reading has been applied.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, RefillTokenBucket};
    /// let bucket = RefillTokenBucket::with_clock(Limit::per_second(5)?, ManualClock::new());
    /// assert!(bucket.caught_up()); // nothing is due before one second
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn caught_up(&self) -> bool {
        self.shared.state.lock().next_refill > self.shared.clock.now()
    }

    /// How many refills have been applied.
    ///
    /// ```
    /// use paceline::{Limit, ManualClock, RefillTokenBucket};
    /// let bucket = RefillTokenBucket::with_clock(Limit::per_second(5)?, ManualClock::new());
    /// assert_eq!(bucket.refills(), 0);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn refills(&self) -> u64 {
        self.shared.state.lock().refills
    }
}

impl<C: Clock> Shared<C> {
    /// The refill thread: apply what is due, sleep until the next refill (at most
    /// [`POLL`]), until stopped.
    fn run(&self) {
        let window = self.limit.window_nanos();
        let permits = u64::from(self.limit.permits());
        let burst = u64::from(self.limit.burst());
        while !self.signal.is_stopped() {
            let now = self.clock.now();
            let next = {
                let mut s = self.state.lock();
                if s.next_refill <= now {
                    let due = (now - s.next_refill) / window + 1;
                    s.tokens = s
                        .tokens
                        .saturating_add(due.saturating_mul(permits))
                        .min(burst);
                    s.next_refill = s.next_refill.saturating_add(due.saturating_mul(window));
                    s.refills += due;
                }
                s.next_refill
            };
            let seen = self.signal.interruptions();
            self.signal
                .sleep(Duration::from_nanos(next - now).min(POLL), seen);
        }
    }
}

impl<C: Clock> Limiter for RefillTokenBucket<C> {
    fn try_acquire(&self, n: u32) -> Decision {
        let n = u64::from(n);
        let limit = self.shared.limit;
        if n > u64::from(limit.burst()) {
            return Decision::refused(None);
        }
        let mut s = self.shared.state.lock();
        if s.tokens >= n {
            s.tokens -= n;
            return Decision::Admitted;
        }
        // Enough whole refills to cover what is missing; the first is `next_refill`.
        let refills = (n - s.tokens).div_ceil(u64::from(limit.permits()));
        let due = s
            .next_refill
            .saturating_add((refills - 1).saturating_mul(limit.window_nanos()));
        drop(s);
        Decision::Refused {
            earliest: due.max(self.shared.clock.now()),
        }
    }
}

impl<C: Clock> Drop for RefillTokenBucket<C> {
    fn drop(&mut self) {
        self.shared.signal.stop();
        if let Some(t) = self.thread.take() {
            // The thread only sleeps and refills; it cannot panic short of a bug, and a
            // panic there must not become a second panic in drop.
            let _ = t.join();
        }
    }
}

impl<C: Clock> fmt::Debug for RefillTokenBucket<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = *self.shared.state.lock();
        f.debug_struct("RefillTokenBucket")
            .field("limit", &self.shared.limit)
            .field("tokens", &s.tokens)
            .field("next_refill", &s.next_refill)
            .field("refills", &s.refills)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    fn wait(b: &RefillTokenBucket<ManualClock>) {
        while !b.caught_up() {
            std::thread::yield_now();
        }
    }

    #[test]
    fn refills_whole_windows_capped_at_the_burst() {
        let clock = ManualClock::new();
        let limit = Limit::per_second(3).unwrap().with_burst(5).unwrap();
        let b = RefillTokenBucket::with_clock(limit, clock.clone());
        assert!(b.try_acquire(5).is_admitted());
        clock.advance(Duration::from_millis(999));
        wait(&b);
        assert_eq!(b.available(), 0);
        clock.advance(Duration::from_millis(1));
        wait(&b);
        assert_eq!(b.available(), 3);
        // Three windows at once: capped at the burst, and all three counted.
        clock.advance(Duration::from_secs(3));
        wait(&b);
        assert_eq!(b.available(), 5);
        assert_eq!(b.refills(), 4);
        assert_eq!(b.try_acquire(6), Decision::refused(None));
    }

    #[test]
    fn earliest_counts_the_refills_needed() {
        let clock = ManualClock::new();
        let limit = Limit::per_second(2).unwrap().with_burst(4).unwrap();
        let b = RefillTokenBucket::with_clock(limit, clock.clone());
        assert!(b.try_acquire(4).is_admitted());
        assert_eq!(b.try_acquire(3).earliest(), Some(2_000_000_000));
        assert_eq!(b.try_acquire(2).earliest(), Some(1_000_000_000));
    }

    #[test]
    fn the_thread_stops_when_dropped() {
        let b = RefillTokenBucket::new(Limit::per_second(1).unwrap());
        let signal = b.shared.signal.clone();
        let shared = Arc::downgrade(&b.shared);
        drop(b);
        assert!(signal.is_stopped());
        assert!(
            shared.upgrade().is_none(),
            "the thread let go of the state: it ended"
        );
    }
}
