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
                    drop(st);
                    let g = self.signal.generation();
                    let left = num(&r, 1);
                    let us = left.clamp(1_000, POLL.as_micros() as u64);
                    // Others hold every cycle left. A claim not renewed for
                    // `CLAIM_STALE_US` is a lost member's (one alive renews it at
                    // each heartbeat): the wait until it expires is that member's,
                    // not this process's generator falling behind, and the verdict
                    // names it (audit p16, M8). A wait for a live member to end its
                    // last chunk is no lateness and is not counted. One worker
                    // claims at a time, so the sum is this process's.
                    let lost = left.saturating_add(CLAIM_STALE_US) < CLAIM_LEASE_US;
                    let since = self.clock.now();
                    worker_wait::wait_change_for(&self.signal, g, Duration::from_micros(us));
                    if lost {
                        let waited = self.clock.now().saturating_sub(since);
                        self.claim_wait.fetch_add(waited, Ordering::Relaxed);
                    }
                    st = threads::lock(&self.chunks);
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

    /// How long, in all, a worker here waited for cycles others' claims held.
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
