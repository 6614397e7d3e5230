//! A timerfd in the worker's reactor, armed at absolute `CLOCK_MONOTONIC`
//! deadlines: the wake is the kernel's hrtimer, not tokio's 1 ms wheel.
//!
//! tokio registers a raw fd safely only through its `unsafe`
//! `AsyncFd::register` (its safe constructors are deprecated, tokio#8587),
//! and this crate has no `unsafe`. A timerfd reads like the read end of a
//! pipe (readable when it fired, 8 bytes a read, `EAGAIN` before), so it is
//! registered as one: `pipe::Receiver::from_owned_fd_unchecked` takes the
//! `OwnedFd` (its owner from then on: it closes it after deregistering it)
//! and makes no pipe-only call on it.
//!
//! A drive that reaches its deadline returns without reading the fire; arming
//! again clears the fire in the kernel, and the readiness tokio kept from it
//! is cleared with it (no system call), so the next wait goes straight to the
//! reactor instead of first reading `EAGAIN`. A fire that is read is read with
//! one `read(2)` into a buffer larger than the 8 bytes a timerfd gives: the
//! short read tells tokio the fd is drained
//! (`a_fire_is_read_once_and_leaves_no_readiness_behind`).

use crate::nanos::Nanos;
use rustix::time::{
    ClockId, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec, clock_gettime,
    timerfd_create, timerfd_settime,
};
use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::unix::pipe;

pub(crate) struct TimerFd {
    rx: RefCell<pipe::Receiver>,
    /// `timerfd_settime` calls so far.
    pub(crate) arms: Cell<u64>,
    /// Reads that found the timer not fired (`EAGAIN`).
    pub(crate) empty_reads: Cell<u64>,
    /// `timerfd_settime` calls that disarmed it.
    pub(crate) disarms: Cell<u64>,
}

impl TimerFd {
    /// A timerfd registered in the current runtime's reactor.
    pub(crate) fn new() -> Result<Self, String> {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )
        .map_err(|e| format!("could not create the worker's timerfd: {e}"))?;
        let rx = pipe::Receiver::from_owned_fd_unchecked(fd)
            .map_err(|e| format!("could not register the worker's timerfd: {e}"))?;
        Ok(Self {
            rx: RefCell::new(rx),
            arms: Cell::new(0),
            empty_reads: Cell::new(0),
            disarms: Cell::new(0),
        })
    }

    /// Arms it to fire `after` ns from now, as an absolute monotonic deadline
    /// (a preemption between the reading and the arming does not move it).
    pub(crate) fn arm(&self, after: Nanos) {
        let now = clock_gettime(ClockId::Monotonic);
        let at = now.tv_sec as i128 * 1_000_000_000 + now.tv_nsec as i128 + after.max(1) as i128;
        let spec = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: Timespec {
                tv_sec: (at / 1_000_000_000) as i64,
                tv_nsec: (at % 1_000_000_000) as i64,
            },
        };
        self.arms.set(self.arms.get() + 1);
        // Cannot fail for a valid fd and a normalized time; if it did, the
        // drive would look again after its next wake-up.
        let rx = self.rx.borrow();
        let _ = timerfd_settime(rx.as_fd(), TimerfdTimerFlags::ABSTIME, &spec);
        // Setting the time clears the count of a fire nobody read (a drive
        // that reached its deadline returns without reading it): tokio's
        // readiness from that fire is stale. Cleared without a system call
        // (tokio clears it when the closure says `WouldBlock`); a fire from
        // now on is a new edge, which the reactor reports again.
        let _ = rx.try_io(|| Err::<(), _>(io::ErrorKind::WouldBlock.into()));
    }

    /// Disarms it: a deadline nobody waits for any more does not wake the
    /// reactor.
    pub(crate) fn disarm(&self) {
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let spec = Itimerspec {
            it_interval: zero,
            it_value: zero,
        };
        self.disarms.set(self.disarms.get() + 1);
        let rx = self.rx.borrow();
        // As in `arm`: cannot fail for a valid fd; a fire it missed would wake
        // the reactor once, as before.
        let _ = timerfd_settime(rx.as_fd(), TimerfdTimerFlags::empty(), &spec);
    }

    /// Whether the kernel holds a deadline on it (for tests).
    #[cfg(test)]
    pub(crate) fn armed_in_kernel(&self) -> bool {
        let rx = self.rx.borrow();
        rustix::time::timerfd_gettime(rx.as_fd())
            .map(|t| t.it_value.tv_sec != 0 || t.it_value.tv_nsec != 0)
            .unwrap_or(false)
    }

    /// Ready once the timer fired (its count is read and cleared).
    pub(crate) fn poll_fired(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut rx = self.rx.borrow_mut();
        match rx.poll_read_ready(cx) {
            Poll::Ready(Ok(())) => {}
            // The reactor is gone (the runtime is shutting down).
            Poll::Ready(Err(_)) => return Poll::Ready(()),
            Poll::Pending => return Poll::Pending,
        }
        // 16 bytes for the 8 a fire gives: the short read clears tokio's
        // readiness (see the module doc); `EAGAIN` clears it too.
        let mut bytes = [0u8; 16];
        let mut buf = ReadBuf::new(&mut bytes);
        match Pin::new(&mut *rx).poll_read(cx, &mut buf) {
            Poll::Ready(_) => Poll::Ready(()),
            Poll::Pending => {
                // Readable said tokio, `EAGAIN` said the read.
                self.empty_reads.set(self.empty_reads.get() + 1);
                Poll::Pending
            }
        }
    }
}
