//! Membership and the spec: the heartbeat (membership, claims' watermarks, counts,
//! the spec's version), the listener of the pub/sub nudge, reading the spec and
//! telling the engine what changed, and changing it for every process.

use super::calls::{float, num};
use super::session::{
    BEAT_EVERY, CLAIM_LEASE_US, Coordination, HORIZON, Known, LISTEN_TIMEOUT, MEMBER_TTL_US, POLL,
};
use super::slots::{exact, forfeit_fraction};
use crate::engine::Remote;
use crate::pace::{RateSpec, Verb};
use crate::sync::threads::{self, Arc, Ordering};
use std::ops::Range;

impl Coordination {
    /// Reads the spec in force; tells the engine what changed when `tell`.
    pub(super) fn refresh_spec(&self, tell: bool) -> Result<(), String> {
        let r = self.call(&self.scripts.spec, None, &self.args([]), Some(9))?;
        let marked = r.get(10).is_none_or(|m| m != "0");
        let ver = num(&r, 1);
        let mut k = threads::lock(&self.known);
        if ver <= k.ver {
            return Ok(());
        }
        let rate = float(&r, 5);
        let strict = float(&r, 7);
        let spec = RateSpec::try_new(rate)
            .ok()
            .and_then(|s| s.try_strictness(strict).ok())
            .unwrap_or(k.spec);
        let paused = r.get(3).is_some_and(|s| s == "1");
        let new = Known {
            ver,
            pause_ver: if paused && !k.paused {
                ver
            } else {
                k.pause_ver
            },
            paced: r.get(2).is_some_and(|s| s == "1"),
            paused: r.get(3).is_some_and(|s| s == "1"),
            stopped: r.get(4).is_some_and(|s| s == "1"),
            spec,
        };
        let old = std::mem::replace(&mut *k, new);
        drop(k);
        if tell {
            let event = if new.stopped && !old.stopped {
                Some(Remote::Stop)
            } else if new.paused && !old.paused {
                Some(Remote::Pause)
            } else if !new.paused && old.paused {
                Some(Remote::Resume(spec))
            } else if new.paced
                && (!old.paced
                    || old.spec.rate() != spec.rate()
                    || old.spec.strictness_value() != spec.strictness_value())
            {
                Some(Remote::Spec(spec, marked))
            } else {
                None
            };
            if let Some(e) = event {
                self.events.send(e);
            }
        }
        // Paused workers look again; a worker waiting for a slot keeps its ticket.
        self.signal.notify();
        self.refill.notify_all();
        Ok(())
    }

    /// The spec in force, as last read, and whether the schedule is paced.
    pub(crate) fn spec(&self) -> (RateSpec, bool) {
        let k = threads::lock(&self.known);
        (k.spec, k.paced)
    }

    /// Changes the schedule's spec for every process: a rate of 0 pauses, a
    /// positive rate after a pause resumes. A spec already in force changes nothing.
    pub(crate) fn set_spec(&self, spec: RateSpec, marked: bool) {
        let kind = {
            let k = threads::lock(&self.known);
            if k.stopped {
                return;
            }
            if spec.rate() == 0.0 {
                if k.paused {
                    return;
                }
                "pause"
            } else if spec.verb_value() == Verb::Restart {
                "restart"
            } else if k.paced
                && !k.paused
                && k.spec.rate() == spec.rate()
                && k.spec.strictness_value() == spec.strictness_value()
            {
                return;
            } else {
                "spec"
            }
        };
        self.change(kind, spec, marked);
    }

    /// Stops the schedule for every process.
    pub(crate) fn stop_everywhere(&self) {
        let spec = threads::lock(&self.known).spec;
        self.change("stop", spec, true);
    }

    pub(super) fn change(&self, kind: &str, spec: RateSpec, marked: bool) {
        let rate = spec.rate().max(f64::MIN_POSITIVE);
        let args = self.args([
            kind.to_string(),
            exact(spec.rate()),
            exact(1e9 / rate),
            exact(spec.strictness_value()),
            exact(forfeit_fraction(spec.strictness_value())),
            HORIZON.to_string(),
            self.channel.clone(),
            u8::from(marked).to_string(),
        ]);
        let one = threads::lock(&self.changing);
        let got = self.call(&self.scripts.change, Some("change"), &args, None);
        drop(one);
        if let Ok(r) = got {
            let ver = num(&r, 1);
            let mut k = threads::lock(&self.known);
            if r.first().is_some_and(|s| s == "ok") && ver > k.ver {
                k.ver = ver;
                match kind {
                    "stop" => k.stopped = true,
                    "pause" => {
                        k.paused = true;
                        k.pause_ver = ver;
                    }
                    _ => {
                        k.paused = false;
                        k.paced = true;
                        k.spec = spec.verb(Verb::Start);
                    }
                }
            }
            drop(k);
            self.signal.notify();
            self.refill.notify_all();
        }
    }

    pub(super) fn beat_loop(self: Arc<Self>) {
        while !self.halt.load(Ordering::Relaxed) {
            let g = self.beat.generation();
            self.beat.wait_change_for(g, BEAT_EVERY);
            if self.halt.load(Ordering::Relaxed) || self.lost().is_some() {
                return;
            }
            self.heartbeat(false);
        }
    }

    pub(super) fn listen_loop(self: Arc<Self>) {
        while !self.halt.load(Ordering::Relaxed) && self.lost().is_none() {
            let Ok(mut conn) = self.pool.dedicated(LISTEN_TIMEOUT) else {
                std::thread::sleep(POLL);
                continue;
            };
            let mut sub = conn.as_pubsub();
            if sub.subscribe(&self.channel).is_err() {
                std::thread::sleep(POLL);
                continue;
            }
            // A nudge missed while (re)subscribing is found here.
            let _ = self.refresh_spec(true);
            loop {
                if self.halt.load(Ordering::Relaxed) || self.lost().is_some() {
                    return;
                }
                match sub.get_message() {
                    Ok(_) => {
                        let _ = self.refresh_spec(true);
                    }
                    Err(e) if e.is_timeout() => {}
                    Err(_) => break,
                }
            }
        }
    }

    /// One heartbeat: renews the membership and claims (or releases them when
    /// `leaving`, with the unused tickets), adds this process's counts, and reads the
    /// global ones and the spec's version.
    pub(super) fn heartbeat(&self, leaving: bool) {
        let progress = threads::lock(&self.chunks).chunks.progress();
        // Tickets left over when the cycles ran out, or when the schedule was
        // stopped everywhere, are not slots anyone missed: the schedule has no op
        // left for them. Left over while others go on (an interrupt here), they go
        // back, or count as missed when others leased after.
        let over = self.is_cycles_done() || threads::lock(&self.known).stopped;
        let unused = if leaving && !over {
            threads::lock(&self.tickets).drain_unused()
        } else {
            Vec::new()
        };
        let done = self.done.load(Ordering::Relaxed);
        let missed = self.missed_here.load(Ordering::Relaxed);
        let mut reported = threads::lock(&self.reported);
        let mut args = vec![
            self.id.to_string(),
            MEMBER_TTL_US.to_string(),
            CLAIM_LEASE_US.to_string(),
            (done - reported.0).to_string(),
            (missed - reported.1).to_string(),
            u8::from(leaving).to_string(),
            self.last_end().to_string(),
            self.used.load(Ordering::Relaxed).to_string(),
            progress.len().to_string(),
        ];
        for (key, upto) in &progress {
            args.extend([key.to_string(), upto.to_string()]);
        }
        args.push(unused.len().to_string());
        for r in &unused {
            args.extend([r.start.to_string(), r.end.to_string()]);
        }
        // Leaving: each claim goes back as the pieces not run (see `Chunks::unrun`).
        let pieces: Vec<(u64, Range<u64>)> = if leaving {
            let unrun = threads::lock(&self.chunks).chunks.unrun();
            unrun
                .into_iter()
                .flat_map(|(key, rs)| rs.into_iter().map(move |r| (key, r)))
                .collect()
        } else {
            Vec::new()
        };
        args.push(pieces.len().to_string());
        for (key, r) in &pieces {
            args.extend([key.to_string(), r.start.to_string(), r.end.to_string()]);
        }
        let Ok(r) = self.call(&self.scripts.beat, Some("beat"), &self.args(args), Some(7)) else {
            return;
        };
        *reported = (done, missed);
        drop(reported);
        threads::lock(&self.chunks).chunks.reported(&progress);
        let ver = num(&r, 1);
        let last = num(&r, 9);
        {
            let mut s = threads::lock(&self.status);
            s.processes_live = num(&r, 2);
            s.processes_seen = num(&r, 3);
            s.global_completed = num(&r, 4);
            s.global_missed = num(&r, 5);
            s.rerun_cycles = num(&r, 6);
            // From the first slot (the schedule's origin) to the latest op end
            // any process reported with its counts.
            s.global_achieved = if last > 0 {
                s.global_completed as f64 * 1e9 / last as f64
            } else {
                0.0
            };
        }
        if !leaving && ver > threads::lock(&self.known).ver {
            let _ = self.refresh_spec(true);
        }
    }
}
