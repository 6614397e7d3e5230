//! The cycles of a shared schedule as this process runs them: claims taken in
//! chunks (the caller's own it does not hold, another's expired one, or a new
//! one), strides handed to workers, and what ran, for the heartbeat.

use super::calls::num;
use super::session::{CLAIM_LEASE_US, Coordination, POLL};

/// How long a claim goes without renewal before its member counts as lost or
/// stalled, µs: four heartbeats (a live member renews its claims at each).
const CLAIM_STALE_US: u64 = 1_000_000;
use crate::engine::worker_wait;
use crate::nanos::Nanos;
use crate::sync::threads::{self, Ordering};
use std::ops::Range;
use std::time::Duration;

impl Coordination {
    /// How many cycles one claim takes: about 100 ms of this process's share of the
    /// rate (64 strides unpaced), a whole number of strides.
    pub(super) fn chunk_size(&self) -> u64 {
        let (spec, paced) = self.spec();
        let live = threads::lock(&self.status).processes_live.max(1);
        let strides = if paced && spec.rate() > 0.0 {
            (spec.rate() / live as f64 * 0.1 / self.stride as f64).ceil()
        } else {
            64.0
        };
        strides.clamp(1.0, (1u64 << 20) as f64) as u64 * self.stride
    }

    /// The next stride of at most `stride` cycles: from the chunks held, else from a
    /// new claim (an expired claim of another process first). Waits while others
    /// hold the last claims (they may still expire); `None` once no cycle is
    /// left anywhere, or the schedule stopped or was lost.
    pub(crate) fn take(&self, stride: u64) -> Option<Range<u64>> {
        let mut st = threads::lock(&self.chunks);
        loop {
            if self.lost().is_some() || self.halt.load(Ordering::Relaxed) {
                return None;
            }
            if let Some(r) = st.chunks.take(stride) {
                return Some(r);
            }
            if st.dry {
                return None;
            }
            if st.claiming {
                // Another worker's claim is in flight; its end bumps `claimed`
                // under the chunks lock, under which the generation is read.
                let g = self.claimed.generation();
                drop(st);
                worker_wait::wait_change_for(&self.claimed, g, POLL);
                st = threads::lock(&self.chunks);
                continue;
            }
            st.claiming = true;
            let held = st.chunks.progress();
            drop(st);
            let mut args = vec![
                self.id.to_string(),
                self.chunk_size().to_string(),
                CLAIM_LEASE_US.to_string(),
                held.len().to_string(),
            ];
            args.extend(held.iter().map(|(key, _)| key.to_string()));
            let args = self.args(args);
            // On an async worker the round trip runs off its thread, which
            // drives the ops in flight meanwhile.
            let me = self.arc();
            let got = worker_wait::call_blocking(move || {
                me.call(&me.scripts.claim, Some("claim"), &args, None)
            });
            st = threads::lock(&self.chunks);
            st.claiming = false;
            self.claimed.notify();
            let Ok(r) = got else {
                return None;
            };
            match r.first().map(String::as_str) {
                Some("new" | "own" | "released" | "rerun") => {
                    st.chunks.add(num(&r, 1), num(&r, 2), num(&r, 3))
                }
                Some("wait") => {
                    let g = self.signal.generation();
                    let left = num(&r, 1);
                    let us = left.clamp(1_000, POLL.as_micros() as u64);
                    // Others hold every cycle left. A claim not renewed for
                    // `CLAIM_STALE_US` is a lost member's (one alive renews it at
                    // each heartbeat): the wait until it expires is that member's,
                    // not this process's generator falling behind, and the verdict
                    // names it (audit p16, M8). A wait for a live member to end its
                    // last chunk is no lateness and is not counted. The workers
                    // that wait together wait once: the span opens and closes
                    // under the chunks lock (`LostWait`; review p17, M4).
                    let lost = left.saturating_add(CLAIM_STALE_US) < CLAIM_LEASE_US;
                    if lost {
                        st.lost_wait.enter(self.clock.now());
                    }
                    drop(st);
                    worker_wait::wait_change_for(&self.signal, g, Duration::from_micros(us));
                    st = threads::lock(&self.chunks);
                    if lost {
                        let waited = st.lost_wait.leave(self.clock.now());
                        self.claim_wait.fetch_add(waited, Ordering::Relaxed);
                    }
                }
                Some("dry") => st.dry = true,
                _ => {
                    // Stopped everywhere: the engine hears of it from the listener or
                    // the heartbeat (read now) and stops here, which ends this wait.
                    drop(st);
                    self.nudge_heartbeat();
                    let g = self.signal.generation();
                    worker_wait::wait_change_for(&self.signal, g, POLL);
                    st = threads::lock(&self.chunks);
                }
            }
        }
    }

    /// How long this process waited for cycles a lost member's claims held:
    /// wall time, counted once however many workers waited together.
    pub(super) fn claim_wait_nanos(&self) -> Nanos {
        self.claim_wait.load(Ordering::Relaxed)
    }

    /// A worker will not run `r`: another worker of this process will.
    pub(crate) fn give_back(&self, r: Range<u64>) {
        threads::lock(&self.chunks).chunks.give_back(r);
    }

    /// Every cycle of `r` ran (the heartbeat writes the claim's watermark).
    pub(crate) fn finished(&self, r: Range<u64>) {
        let n = r.end - r.start;
        if n == 0 {
            return;
        }
        threads::lock(&self.chunks).chunks.finished(r);
        self.done.fetch_add(n, Ordering::Relaxed);
        self.last_end.fetch_max(self.clock.now(), Ordering::Relaxed);
    }

    /// The end of this process's latest op on the schedule's time base (0 if none).
    pub(super) fn last_end(&self) -> Nanos {
        match self.last_end.load(Ordering::Relaxed) {
            0 => 0,
            t => threads::lock(&self.timebase).to_schedule(t).unwrap_or(0),
        }
    }

    /// Whether no cycle is left for this process: none anywhere, or the schedule
    /// stopped or was lost.
    pub(crate) fn is_dry(&self) -> bool {
        if self.lost().is_some() || self.halt.load(Ordering::Relaxed) {
            return true;
        }
        let st = threads::lock(&self.chunks);
        st.dry && st.chunks.exhausted()
    }

    /// Whether the store said no cycle is left and every one held here ran.
    pub(super) fn is_cycles_done(&self) -> bool {
        let st = threads::lock(&self.chunks);
        st.dry && st.chunks.exhausted()
    }
}

/// The spans in which this process's workers wait for a lost member's claims,
/// counted once whatever the number of workers waiting together: the first
/// waiter opens the span, the last to stop closes it and counts its length
/// (an interval union). Kept under the chunks lock.
#[derive(Debug, Default)]
pub(super) struct LostWait {
    waiters: u32,
    since: Nanos,
}

impl LostWait {
    /// A worker begins to wait at `now`.
    pub(super) fn enter(&mut self, now: Nanos) {
        if self.waiters == 0 {
            self.since = now;
        }
        self.waiters += 1;
    }

    /// A worker stops waiting at `now`: the span's length if it was the last
    /// one waiting, else 0 (the span stays open for the others).
    pub(super) fn leave(&mut self, now: Nanos) -> Nanos {
        self.waiters = self.waiters.saturating_sub(1);
        if self.waiters == 0 {
            now.saturating_sub(self.since)
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::LostWait;

    /// Regression (review p17, M4): four workers waiting over the same 4 s
    /// count 4 s, not 16 s; spans apart add up, and one worker alone counts
    /// its own wait.
    #[test]
    fn workers_waiting_together_count_the_wall_time_once() {
        let mut w = LostWait::default();
        for (i, t) in [0, 10, 20, 30].into_iter().enumerate() {
            w.enter(1_000 + t);
            assert_eq!(w.waiters as usize, i + 1);
        }
        for t in [4_000, 4_010, 4_020] {
            assert_eq!(w.leave(1_000 + t), 0);
        }
        assert_eq!(w.leave(1_000 + 4_030), 4_030);
        // Overlapping, not nested: A 0..50, B 40..90 is 90, not 100.
        w.enter(10_000);
        w.enter(10_040);
        assert_eq!(w.leave(10_050), 0);
        assert_eq!(w.leave(10_090), 90);
        // A lone waiter, later.
        w.enter(20_000);
        assert_eq!(w.leave(20_007), 7);
    }
}
