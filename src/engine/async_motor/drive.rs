//! The future a real-clock drive runs: how an async worker sleeps in its
//! reactor (on the timerfd, or tokio's timer off Linux) until its deadline,
//! its ops' next timer, an op's end, or a change its signal announces, and
//! what wakes it ([`Wake`]).

use super::{Driver, STOP_POLL, drive_parked, drive_unparked, earliest_timer, fire_due, timer_due};
use crate::clock::Signal;
use crate::nanos::Nanos;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// What wakes a real-clock drive to look at its `done` again, besides its
/// deadline, the ops' timers and an op's end (the drive polls the worker's
/// ops itself and looks at `done` after each pass).
#[derive(Clone, Copy)]
pub(crate) enum Wake<'a> {
    /// `done` changes only with this signal (its `notify`, `interrupt` or
    /// `stop`; the run's pause, resume, retire, concurrency and stop all go
    /// through one) or with an op's end: the drive sleeps until one of them,
    /// with no timer of its own. An idle worker then costs no wake-up.
    On(&'a Signal),
    /// `done` may change with nothing that wakes the drive (another worker's op
    /// ending frees the activity's cap): it looks every [`STOP_POLL`].
    Poll,
}

/// The future a real-clock drive runs: fires the ops' timers, polls the ops
/// woken (the worker's own set: each poll of the drive is a pass over them),
/// and sleeps in the reactor on the timerfd until the next timer, `until`, an
/// op's wake-up, or (see [`Wake`]) a stop check or the signal.
pub(super) struct Drive<'a> {
    driver: &'a Driver,
    until: Option<Nanos>,
    done: &'a dyn Fn() -> bool,
    wake: Wake<'a>,
    /// The slot of its waker in `wake`'s signal, once registered.
    key: Option<usize>,
    /// It returned pending (slept in the reactor) at least once.
    parked: bool,
    /// It ends this much before `until` (a wait for a slot: woken by IO that
    /// close to the slot, it spins the rest instead of sleeping again).
    spin_within: Nanos,
}

impl<'a> Drive<'a> {
    pub(super) fn new(
        driver: &'a Driver,
        until: Option<Nanos>,
        done: &'a dyn Fn() -> bool,
        wake: Wake<'a>,
    ) -> Self {
        Self {
            driver,
            until,
            done,
            wake,
            key: None,
            parked: false,
            spin_within: 0,
        }
    }

    /// Ends the drive once `until` is `within` away: a wake-up (IO, an op's
    /// end) that close to it does not sleep again in the reactor.
    pub(super) fn spinning_within(mut self, within: Nanos) -> Self {
        self.spin_within = within;
        self
    }
}

impl Future for Drive<'_> {
    type Output = Nanos;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Nanos> {
        drive_unparked();
        let d = self.driver;
        loop {
            let t = d.clock.now();
            fire_due(t);
            // The ops woken (by IO, by the timers just fired) run now; a pass
            // stops once `done` holds after an op's end (room came: the start
            // goes first) or a slot waited for is due.
            let now = if d.poll_ops(cx, Some(self.done)) > 0 {
                let now = d.clock.now();
                if timer_due(now) {
                    continue;
                }
                now
            } else {
                t
            };
            if (self.done)()
                || self
                    .until
                    .is_some_and(|u| now >= u.saturating_sub(self.spin_within))
            {
                if self.parked {
                    d.last_pass.set(now);
                }
                return Poll::Ready(now);
            }
            // The exact deadline (the drive's end, the ops' earliest timer),
            // and the stop check's, which any wake within STOP_POLL meets
            // (none when the signal wakes it: `Nanos::MAX`).
            let exact = match (self.until, earliest_timer()) {
                (Some(u), Some(t)) => Some(u.min(t)),
                (u, t) => u.or(t),
            };
            let poll_by = match self.wake {
                Wake::Poll => now + STOP_POLL,
                Wake::On(signal) => {
                    // Registered before `done` is read again: a change made
                    // before it is seen there, one made after wakes this.
                    let this = &mut *self;
                    signal.register_waker(&mut this.key, cx.waker());
                    if (this.done)() {
                        continue;
                    }
                    Nanos::MAX
                }
            };
            #[cfg(target_os = "linux")]
            if let Some(tfd) = &d.timer {
                let target = exact.filter(|&x| x <= poll_by).unwrap_or(poll_by);
                if target == Nanos::MAX {
                    // Nothing due on time: the signal, an op's end or IO wakes it.
                    // A deadline an earlier drive armed and left (a slot wait a
                    // pause cut short) would wake the reactor for nothing.
                    if d.armed.get().is_some_and(|a| a > now) {
                        tfd.disarm();
                        d.armed.set(None);
                    }
                    self.parked = true;
                    drive_parked(Nanos::MAX, cx.waker());
                    return Poll::Pending;
                }
                if !keeps_armed(d.armed.get(), target, now, poll_by) {
                    tfd.arm(target - now);
                    d.armed.set(Some(target));
                }
                match tfd.poll_fired(cx) {
                    Poll::Ready(()) => {
                        d.armed.set(None);
                        continue;
                    }
                    Poll::Pending => {
                        self.parked = true;
                        drive_parked(target, cx.waker());
                        return Poll::Pending;
                    }
                }
            }
            #[cfg(not(target_os = "linux"))]
            {
                // No timerfd: tokio's timer for the coarse part (1 ms grain); the
                // pacer's spin tail, if any, does the rest.
                let next = exact
                    .map_or(poll_by, |x| x.min(poll_by))
                    .min(now + STOP_POLL);
                let mut s = Box::pin(tokio::time::sleep(std::time::Duration::from_nanos(
                    next - now,
                )));
                match s.as_mut().poll(cx) {
                    Poll::Ready(()) => continue,
                    Poll::Pending => {
                        self.parked = true;
                        drive_parked(next, cx.waker());
                        return Poll::Pending;
                    }
                }
            }
        }
    }
}

impl Drop for Drive<'_> {
    fn drop(&mut self) {
        if let Wake::On(signal) = self.wake {
            signal.deregister_waker(&mut self.key);
        }
        // A timer set after this drive wakes no one (a stale waker would
        // unpark the reactor: an `eventfd` write for nothing).
        drive_unparked();
    }
}

/// Whether a timerfd armed at `armed` (not yet read fired) serves a drive that
/// must wake at `target` (`poll_by` when only the stop check is due) at `now`:
/// at exactly `target`, or, for the stop check alone, anywhere in
/// `(now, poll_by]`. Otherwise it is armed again (`timerfd_settime`).
pub(super) fn keeps_armed(armed: Option<Nanos>, target: Nanos, now: Nanos, poll_by: Nanos) -> bool {
    match armed {
        Some(a) if a == target => true,
        Some(a) => target == poll_by && a > now && a <= poll_by,
        None => false,
    }
}
