//! Timers for async waits: wake a task when a clock reaches a deadline.
//!
//! An async acquire ([`RateLimiter::acquire_async`](crate::RateLimiter::acquire_async))
//! that must wait for its slot asks its clock to wake it at the slot
//! ([`Clock::wake_at`](super::Clock::wake_at)). Two timers answer:
//!
//! - [`TimerQueue`] is the queue itself: deadlines and wakers, earliest first. It has no
//!   thread; whoever moves time fires it. [`ManualClock`](super::ManualClock) holds one
//!   and fires it whenever the clock moves (`advance`, `set`, a wait on it), so a test
//!   that advances the clock past a slot has woken that slot's task when `advance`
//!   returns: deterministic, with no thread and no real time.
//! - The real timer ([`wake_at_real`]): one process-wide thread on the monotonic
//!   timeline that sleeps until the earliest deadline minus its spin tail (with the
//!   thread's timer slack at 1 ns, as the sync waiting strategy does), spins the rest,
//!   and wakes every task whose deadline has come. The release window is applied by
//!   the caller (the deadline is the slot minus the window), exactly as a sync waiter
//!   sleeps until `slot - window`. A registration earlier than the one the thread
//!   sleeps for wakes it (a condvar), so the thread always sleeps for the earliest.
//!
//! The thread never runs a task: it only calls `Waker::wake`, and the executor polls
//! the task. A dropped future's entry stays queued until its deadline and then wakes
//! nothing useful (a waker of a finished task is a no-op for every executor).
//!
//! # Ground rules
//!
//! Each queue is one mutex; no atomics. Wakers are called after the lock is released
//! (a waker may run arbitrary executor code, which may register again).

use crate::nanos::{self, Nanos};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::OnceLock;
use std::task::Waker;

/// One registration: wake `waker` once the clock reads `at`.
#[derive(Debug)]
struct Entry {
    at: Nanos,
    seq: u64,
    /// How much of the wait the real timer spins instead of sleeping.
    spin_tail: Nanos,
    waker: Waker,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// Deadlines and the wakers to call at them, earliest first (ties in registration
/// order).
///
/// A queue has no thread of its own: [`take_due`](Self::take_due) hands over the due
/// entries, and the owner calls it when time moves. [`ManualClock`](super::ManualClock)
/// fires its queue every time it moves.
#[derive(Debug, Default)]
pub(crate) struct TimerQueue {
    heap: BinaryHeap<Reverse<Entry>>,
    seq: u64,
}

impl TimerQueue {
    /// Queues `waker` for `at`; returns whether it is now the earliest entry.
    pub(crate) fn push(&mut self, at: Nanos, spin_tail: Nanos, waker: &Waker) -> bool {
        self.seq = self.seq.wrapping_add(1);
        let earliest = self.heap.peek().is_none_or(|Reverse(e)| at < e.at);
        self.heap.push(Reverse(Entry {
            at,
            seq: self.seq,
            spin_tail,
            waker: waker.clone(),
        }));
        earliest
    }

    /// Removes the entries due at `now` and returns their wakers (to be woken after
    /// the lock is released).
    pub(crate) fn take_due(&mut self, now: Nanos) -> Vec<Waker> {
        let mut due = Vec::new();
        while self.heap.peek().is_some_and(|Reverse(e)| e.at <= now) {
            if let Some(Reverse(e)) = self.heap.pop() {
                due.push(e.waker);
            }
        }
        due
    }

    /// The earliest deadline and its spin tail.
    fn next(&self) -> Option<(Nanos, Nanos)> {
        self.heap.peek().map(|Reverse(e)| (e.at, e.spin_tail))
    }

    /// How many registrations are queued.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}

/// Wakes every waker in `due`.
pub(crate) fn wake_all(due: Vec<Waker>) {
    for w in due {
        w.wake();
    }
}

/// The process-wide real timer: a queue on the monotonic timeline and the thread
/// that serves it. Not loom-modelled (the loom models run on the manual clock), so
/// it uses parking_lot's primitives directly.
struct RealTimer {
    queue: parking_lot::Mutex<TimerQueue>,
    /// Notified when a registration becomes the earliest.
    earlier: parking_lot::Condvar,
}

fn real_timer() -> &'static RealTimer {
    static TIMER: OnceLock<&'static RealTimer> = OnceLock::new();
    TIMER.get_or_init(|| {
        let timer: &'static RealTimer = Box::leak(Box::new(RealTimer {
            queue: parking_lot::Mutex::new(TimerQueue::default()),
            earlier: parking_lot::Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("paceline-timer".into())
            .spawn(move || timer.run())
            .expect("paceline: could not spawn the async timer thread");
        timer
    })
}

/// Spinning longer than this yields the CPU between spins (as the sync strategy does).
const SPIN_YIELD_AFTER: Nanos = 20_000;

impl RealTimer {
    fn run(&self) {
        super::waiting::apply_timer_slack(Some(1));
        let mut queue = self.queue.lock();
        let mut spun_since: Option<Nanos> = None;
        loop {
            let now = super::timeline_now();
            let due = queue.take_due(now);
            if !due.is_empty() {
                drop(queue);
                wake_all(due);
                spun_since = None;
                queue = self.queue.lock();
                continue;
            }
            match queue.next() {
                None => {
                    self.earlier.wait(&mut queue);
                    spun_since = None;
                }
                Some((at, spin_tail)) => {
                    let left = at - now;
                    if left > spin_tail {
                        let _ = self
                            .earlier
                            .wait_for(&mut queue, nanos::to_duration(left - spin_tail));
                        spun_since = None;
                    } else {
                        // The spin tail: spin (without the lock, so that tasks can
                        // register), yielding after a while.
                        drop(queue);
                        let since = *spun_since.get_or_insert(now);
                        if now - since > SPIN_YIELD_AFTER {
                            std::thread::yield_now();
                        } else {
                            std::hint::spin_loop();
                        }
                        queue = self.queue.lock();
                    }
                }
            }
        }
    }
}

/// Wakes `waker` once the process-wide monotonic timeline reads `at` (see
/// [`timeline_now`](super::timeline_now)), from the real timer's thread. A deadline
/// already passed wakes at once, on the caller's thread.
pub(crate) fn wake_at_real(at: Nanos, spin_tail: Nanos, waker: &Waker) {
    if at <= super::timeline_now() {
        waker.wake_by_ref();
        return;
    }
    let timer = real_timer();
    let earliest = timer.queue.lock().push(at, spin_tail, waker);
    if earliest {
        timer.earlier.notify_one();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    // std's atomics even under loom: these tests are not loom models
    use crate::sync::threads::{AtomicU64, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicU64);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_queue_fires_only_the_due_entries_earliest_first() {
        let counts: Vec<Arc<Count>> = (0..3).map(|_| Arc::new(Count(0.into()))).collect();
        let wakers: Vec<Waker> = counts.iter().map(|c| Waker::from(c.clone())).collect();
        let mut q = TimerQueue::default();
        assert!(q.push(30, 0, &wakers[0]));
        assert!(q.push(10, 0, &wakers[1]));
        assert!(!q.push(20, 0, &wakers[2]));
        assert_eq!(q.next(), Some((10, 0)));
        wake_all(q.take_due(20));
        let fired: Vec<u64> = counts.iter().map(|c| c.0.load(Ordering::Relaxed)).collect();
        assert_eq!(fired, [0, 1, 1]);
        assert_eq!(q.len(), 1);
        wake_all(q.take_due(30));
        assert_eq!(counts[0].0.load(Ordering::Relaxed), 1);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn the_real_timer_wakes_at_the_deadline_not_before() {
        let count = Arc::new(Count(0.into()));
        let waker = Waker::from(count.clone());
        let start = super::super::timeline_now();
        let at = start + 3_000_000;
        wake_at_real(at, 0, &waker);
        // A later registration does not hold up the earlier one, and an earlier one
        // registered after a later one still fires first.
        wake_at_real(start + 1_000_000_000, 0, &waker);
        while count.0.load(Ordering::Relaxed) == 0 {
            assert!(
                super::super::timeline_now() < start + 2_000_000_000,
                "the timer never fired"
            );
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        assert!(super::super::timeline_now() >= at);
        assert_eq!(count.0.load(Ordering::Relaxed), 1);
    }
}
