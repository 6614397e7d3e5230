//! The signal that cuts waits short: stop, and "the schedule changed".

use crate::sync::{self, Arc, AtomicBool, AtomicU64, Condvar, Mutex, Ordering};
use std::fmt;
use std::task::Waker;
use std::time::Duration;

// Ground rules: `stopped` is written once (false -> true) by `stop` with Release
// and read with Acquire by waiters, so whatever the stopper wrote before stopping
// is visible to a waiter that sees the flag. The generation counter lives under the
// mutex; every change to it (`notify`, `stop`) is followed by `notify_all` on
// `changed`, and every waiter re-checks its condition under the same mutex, so no
// wake-up is lost. Sleepers (`sleep`) wait on `stopping`, which only `stop` wakes
// (after setting the flag under the mutex): a change of spec does not wake every
// thread sleeping on its slot. A pause does (`interrupt`): it bumps `interrupts`
// (Release, under the mutex) before `notify_all` on `stopping`, and a sleeper
// re-checks the count it saw at the start of its wait under the same mutex, so no
// interruption is lost either. A sleep shorter than `SHORT_SLEEP` touches neither the
// mutex nor a condvar; it ends at most that long after a stop or an interruption.
//
// Async waiters (`register_waker`) put their waker in `wakers` and then re-check their
// condition; `notify` and `stop` bump the generation first and then wake every
// registered waker. A waiter that registered after the waking found the new
// generation (or the stop) in its re-check, since both locks order it after the bump.

/// A stop flag and change notifier shared by a limiter and everything waiting on it.
///
/// Clones share the same signal. Once stopped it stays stopped; every blocked
/// [`Clock::wait_until`](super::Clock::wait_until) that was given it returns promptly.
///
/// ```
/// use paceline::Signal;
/// let s = Signal::new();
/// let t = s.clone();
/// assert!(!t.is_stopped());
/// s.stop();
/// assert!(t.is_stopped());
/// ```
#[derive(Clone, Default)]
pub struct Signal {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    stopped: AtomicBool,
    /// Interruptions so far (pauses): sleepers on a slot wake and look again.
    interrupts: AtomicU64,
    generation: Mutex<u64>,
    changed: Condvar,
    stopping: Condvar,
    wakers: Mutex<WakerSet>,
}

/// The wakers of async waiters, each in a slot its waiter owns until it deregisters.
#[derive(Default)]
struct WakerSet {
    slots: Vec<Option<Waker>>,
    free: Vec<usize>,
}

/// Sleeps shorter than this are plain OS sleeps (no shared lock): the most a stop
/// waits for such a sleeper, within the "stop wakes every waiter within a
/// millisecond" promise.
const SHORT_SLEEP: Duration = Duration::from_millis(1);

impl fmt::Debug for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal")
            .field("stopped", &self.is_stopped())
            .finish()
    }
}

impl Signal {
    /// A new signal, not stopped.
    ///
    /// ```
    /// assert!(!paceline::Signal::new().is_stopped());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops: wakes every waiter now and makes every later wait return at once.
    ///
    /// ```
    /// let s = paceline::Signal::new();
    /// s.stop();
    /// s.stop(); // idempotent
    /// assert!(s.is_stopped());
    /// ```
    pub fn stop(&self) {
        let mut g = sync::lock(&self.inner.generation);
        self.inner.stopped.store(true, Ordering::Release);
        *g = g.wrapping_add(1);
        drop(g);
        self.inner.changed.notify_all();
        self.inner.stopping.notify_all();
        self.wake_registered();
    }

    /// Whether [`stop`](Self::stop) has been called.
    ///
    /// ```
    /// assert!(!paceline::Signal::new().is_stopped());
    /// ```
    #[inline]
    pub fn is_stopped(&self) -> bool {
        self.inner.stopped.load(Ordering::Acquire)
    }

    /// Bumps the generation and wakes every waiter so it re-checks its condition.
    pub(crate) fn notify(&self) {
        let mut g = sync::lock(&self.inner.generation);
        *g = g.wrapping_add(1);
        drop(g);
        self.inner.changed.notify_all();
        self.wake_registered();
    }

    /// Interrupts: what [`notify`](Self::notify) does, and every sleeper (a caller
    /// waiting toward its slot, [`sleep`](Self::sleep)) wakes too and looks at the
    /// schedule again. A pause does this: an op must not start on a slot the pause
    /// has voided (issue 23, item 5).
    pub(crate) fn interrupt(&self) {
        let mut g = sync::lock(&self.inner.generation);
        self.inner.interrupts.fetch_add(1, Ordering::Release);
        *g = g.wrapping_add(1);
        drop(g);
        self.inner.changed.notify_all();
        self.inner.stopping.notify_all();
        self.wake_registered();
    }

    /// Interruptions so far: a wait that began at this count ends when it moves
    /// (see [`interrupt`](Self::interrupt)).
    #[inline]
    pub(crate) fn interruptions(&self) -> u64 {
        self.inner.interrupts.load(Ordering::Acquire)
    }

    /// Whether the signal stopped or was interrupted since `seen` was read from
    /// [`interruptions`](Self::interruptions).
    #[inline]
    pub(crate) fn cut_short(&self, seen: u64) -> bool {
        self.is_stopped() || self.interruptions() != seen
    }

    /// Registers `waker` to be woken by the next [`notify`](Self::notify) or
    /// [`stop`](Self::stop), in the slot `key` names (a new one if `None`). The slot
    /// stays the caller's until [`deregister_waker`](Self::deregister_waker); a wake
    /// empties it. The caller re-checks its condition after registering.
    pub(crate) fn register_waker(&self, key: &mut Option<usize>, waker: &Waker) {
        let mut set = sync::lock(&self.inner.wakers);
        match *key {
            Some(k) => match &mut set.slots[k] {
                Some(w) if w.will_wake(waker) => {}
                slot => *slot = Some(waker.clone()),
            },
            None => {
                let k = match set.free.pop() {
                    Some(k) => {
                        set.slots[k] = Some(waker.clone());
                        k
                    }
                    None => {
                        set.slots.push(Some(waker.clone()));
                        set.slots.len() - 1
                    }
                };
                *key = Some(k);
            }
        }
    }

    /// Gives back the slot `key` names, if any.
    pub(crate) fn deregister_waker(&self, key: &mut Option<usize>) {
        if let Some(k) = key.take() {
            let mut set = sync::lock(&self.inner.wakers);
            set.slots[k] = None;
            set.free.push(k);
        }
    }

    /// Wakes (and empties the slots of) every registered waker.
    fn wake_registered(&self) {
        let due: Vec<Waker> = {
            let mut set = sync::lock(&self.inner.wakers);
            set.slots.iter_mut().filter_map(Option::take).collect()
        };
        for w in due {
            w.wake();
        }
    }

    /// The current generation, to pass to [`wait_change`](Self::wait_change).
    pub(crate) fn generation(&self) -> u64 {
        *sync::lock(&self.inner.generation)
    }

    /// Blocks until the generation differs from `seen` or the signal is stopped.
    pub(crate) fn wait_change(&self, seen: u64) {
        let mut g = sync::lock(&self.inner.generation);
        while *g == seen && !self.is_stopped() {
            g = match self.inner.changed.wait(g) {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
        }
    }

    /// Blocks until the generation differs from `seen`, the signal is stopped, or `d`
    /// has passed (or spuriously: the caller re-checks its condition).
    pub(crate) fn wait_change_for(&self, seen: u64, d: Duration) {
        let g = sync::lock(&self.inner.generation);
        if *g != seen || self.is_stopped() {
            return;
        }
        let _ = self.inner.changed.wait_timeout(g, d);
    }

    /// Sleeps for at most `d`, returning early if the signal is stopped or
    /// interrupted since `seen` (see [`cut_short`](Self::cut_short); a sleep shorter
    /// than a millisecond may finish first). It may also return early spuriously: the
    /// caller re-checks the clock.
    pub(crate) fn sleep(&self, d: Duration, seen: u64) {
        if d < SHORT_SLEEP {
            if !self.cut_short(seen) {
                std::thread::sleep(d);
            }
            return;
        }
        let g = sync::lock(&self.inner.generation);
        if self.cut_short(seen) {
            return;
        }
        let _ = self.inner.stopping.wait_timeout(g, d);
    }
}
